/* eval: the held-out check on real TinyStories / WikiText slices, against
 * calibration fingerprints (lib/quantize/calib.c, tested in test_quantize_calib). */
#include "qtest.h"
#include "quanta.h"

/* Offset of the first story boundary ("\n\n") at or after `at`. */
static size_t boundary(const char *t, size_t n, size_t at) {
    for (size_t i = at; i + 1 < n; i++)
        if (t[i] == '\n' && t[i + 1] == '\n') return i + 2;
    return n;
}

static void test_heldout_tinystories(void) {
    size_t n, nw;
    char *t = qt_test_read(qt_test_shared("data/tinystories-valid-first1000.txt"), &n);
    char *w = qt_test_read(qt_test_shared("data/wiki.test.raw"), &nw);
    size_t cut = boundary(t, n, n / 2);

    /* calibration = the second half of the file */
    uint64_t second[1][2] = {{cut, n}};
    qt_calib_fingerprint fp;
    CHECK_OK(qt_calib_fingerprint_make(t, n, second, 1, &fp)); /* its own checks: test_quantize_calib */

    /* evaluating the first quarter of the same file: held out, by bytes and by shingles */
    qt_heldout_result h;
    CHECK_OK(qt_heldout_check(&fp, t, n, n / 4, &h));
    CHECK(h.same_file);
    CHECK_EQ_INT(h.overlap_bytes, 0);
    CHECK(!h.overlaps);
    CHECK(h.overlap == 0.0);

    /* evaluating the whole file: the second half overlaps, exactly */
    CHECK_OK(qt_heldout_check(&fp, t, n, n, &h));
    CHECK(h.same_file);
    CHECK_EQ_INT(h.overlap_bytes, n - cut);
    CHECK(h.overlaps);
    CHECK_NEAR(h.overlap, (double)(n - cut) / n, 1e-12);

    /* a different file holding a copy of the calibration text: only shingles can tell */
    size_t len2 = n - cut;
    char *copy = malloc(len2 + 20);
    memcpy(copy, "Some other preface. ", 20);
    memcpy(copy + 20, t + cut, len2);
    CHECK_OK(qt_heldout_check(&fp, copy, len2 + 20, len2 + 20, &h));
    CHECK(!h.same_file);
    CHECK(h.n_sampled > 1000);
    CHECK_MSG(h.overlap > 0.99, "copy overlap %.4f", h.overlap);
    CHECK(h.overlaps);

    /* the first half, as another file: formulaic stories share a few 13-grams, well under the warning share */
    char *first = malloc(cut);
    memcpy(first, t, cut);
    CHECK_OK(qt_heldout_check(&fp, first, cut, cut, &h));
    CHECK(!h.same_file);
    CHECK(h.n_sampled > 1000);
    CHECK_MSG(h.overlap < QT_HELDOUT_WARN_SHARE / 2, "disjoint overlap %.4f", h.overlap);
    CHECK(!h.overlaps);

    /* a different domain: nothing in common */
    CHECK_OK(qt_heldout_check(&fp, w, nw, nw, &h));
    CHECK_EQ_INT(h.n_matched, 0);
    CHECK(!h.overlaps);

    /* half of the evaluated text comes from calibration: the estimate is near one half */
    size_t q = (n - cut) / 2;
    char *mix = malloc(2 * q);
    memcpy(mix, t, q);
    memcpy(mix + q, t + cut, q);
    CHECK_OK(qt_heldout_check(&fp, mix, 2 * q, 2 * q, &h));
    CHECK_MSG(fabs(h.overlap - 0.5) < 0.06, "mixed overlap %.4f", h.overlap);
    qt_calib_fingerprint_free(&fp);

    /* the whole file as calibration (no ranges) */
    CHECK_OK(qt_calib_fingerprint_make(t, n, NULL, 0, &fp));
    CHECK_OK(qt_heldout_check(&fp, t, n, 1000, &h));
    CHECK_EQ_INT(h.overlap_bytes, 1000);
    CHECK(h.overlaps);
    qt_calib_fingerprint_free(&fp);

    free(mix); free(first); free(copy); free(t); free(w);
}

int main(void) {
    QT_RUN(test_heldout_tinystories);
    return qt_test_finish("test_eval_heldout");
}
