/* quantize: the calibration text's fingerprint (lib/quantize/calib.c): SHA-256
 * (FIPS 180-2 appendix vectors), byte ranges, and the bottom-k shingle sample
 * on the shared TinyStories slice. The held-out check that reads fingerprints
 * is eval's (test_eval_heldout). */
#include "qtest.h"
#include "quanta.h"

static void test_sha256_vectors(void) {
    char hex[65];
    qt_sha256_hex("", 0, hex);
    CHECK_EQ_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    qt_sha256_hex("abc", 3, hex);
    CHECK_EQ_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes: padding spills into a 2nd block */
    qt_sha256_hex(two, strlen(two), hex);
    CHECK_EQ_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char *a = malloc(1000000);
    memset(a, 'a', 1000000);
    qt_sha256_hex(a, 1000000, hex);
    CHECK_EQ_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(a);
    /* the published sha256 of the shared TinyStories file (its README) */
    size_t n;
    void *t = qt_test_read(qt_test_shared("data/tinystories-valid-first1000.txt"), &n);
    qt_sha256_hex(t, n, hex);
    CHECK_EQ_STR(hex, "5fc1fb0113df62b567fb271806cd645ce8d75f59c58ca0b764c03d3b6ff34ca6");
    free(t);
}

static void test_ranges(void) {
    qt_calib_fingerprint fp;
    memset(&fp, 0, sizeof fp);
    CHECK_OK(qt_calib_parse_ranges("0-4096,8192-16384", &fp));
    CHECK_EQ_INT(fp.n_ranges, 2);
    CHECK_EQ_INT(fp.ranges[1][0], 8192);
    CHECK_EQ_INT(fp.ranges[1][1], 16384);
    char buf[128];
    qt_calib_format_ranges(&fp, buf, sizeof buf);
    CHECK_EQ_STR(buf, "0-4096,8192-16384");
    CHECK_OK(qt_calib_parse_ranges("", &fp));
    CHECK_EQ_INT(fp.n_ranges, 0);
    const char *bad[] = {"x", "1-", "-5", "5-3", "1-2,", "1-2;3-4", "1 - 2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_MSG(qt_calib_parse_ranges(bad[i], &fp) == QT_ERR_FORMAT, "\"%s\" accepted", bad[i]);
        CHECK(strstr(qt_last_error(), QT_CALIB_KEY_RANGES) != NULL);
    }
}

/* The second half of TinyStories as calibration: a full sample of shingle
 * hashes, sorted and distinct; ranges past the end of the file are refused. */
static void test_fingerprint_tinystories(void) {
    size_t n;
    char *t = qt_test_read(qt_test_shared("data/tinystories-valid-first1000.txt"), &n);
    uint64_t second[1][2] = {{n / 2, n}};
    qt_calib_fingerprint fp;
    CHECK_OK(qt_calib_fingerprint_make(t, n, second, 1, &fp));
    CHECK_EQ_INT(fp.n_shingles, QT_CALIB_MAX_SHINGLES);
    for (int i = 1; i < fp.n_shingles; i++) CHECK(fp.shingles[i - 1] < fp.shingles[i]);
    qt_calib_fingerprint_free(&fp);
    uint64_t past[1][2] = {{10, n + 1}};
    CHECK_STATUS(qt_calib_fingerprint_make(t, n, past, 1, &fp), QT_ERR_ARG);
    free(t);
}

static void test_shingles_ignore_whitespace_layout(void) {
    const char *a = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen";
    const char *b = "one  two\nthree four five six seven\n\neight nine ten eleven twelve thirteen\tfourteen";
    uint64_t *ha, *hb;
    int32_t na, nb;
    CHECK_OK(qt_calib_shingles(a, strlen(a), UINT64_MAX, 100, &ha, &na));
    CHECK_OK(qt_calib_shingles(b, strlen(b), UINT64_MAX, 100, &hb, &nb));
    CHECK_EQ_INT(na, 2); /* 14 words: two 13-word windows */
    CHECK_EQ_INT(nb, 2);
    CHECK(na == nb && memcmp(ha, hb, sizeof *ha * (size_t)na) == 0);
    free(ha); free(hb);
    CHECK_OK(qt_calib_shingles("too few words", 13, UINT64_MAX, 100, &ha, &na));
    CHECK_EQ_INT(na, 0);
    free(ha);
}

int main(void) {
    QT_RUN(test_sha256_vectors);
    QT_RUN(test_ranges);
    QT_RUN(test_fingerprint_tinystories);
    QT_RUN(test_shingles_ignore_whitespace_layout);
    return qt_test_finish("test_quantize_calib");
}
