/* quantize: staged output (qt_afile_open_staged, lib/core/file.c) and resume
 * (lib/quantize/resume.c, lib/io/gguf_write.c): a staging file kept or
 * removed as asked and cut back to a resume point; a run cancelled after N
 * tensors keeps OUT.partial + state only when resumable, and a resume writes
 * the bytes of an uninterrupted run; a resume with other options is refused
 * naming the option. The CLI side is tests/cli/quantize_resume.sh. */
#include <sys/stat.h>
#include <unistd.h>

#include "qtest.h"
#include "quanta.h"

static char *path_in(const char *name) {
    static char buf[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", qt_test_tmpdir(), name);
    return buf[k];
}

static bool exists(const char *p) { return access(p, F_OK) == 0; }

static long long size_of(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

static void test_staged_file(void) {
    char out[1024], stage_path[1100];
    snprintf(out, sizeof out, "%s", path_in("staged.bin"));
    snprintf(stage_path, sizeof stage_path, "%s.partial", out);
    /* not kept: an abort removes the staging file, which is a live temporary meanwhile */
    qt_afile_stage st = {stage_path, false, 0};
    qt_afile *f;
    const int temps = qt_afile_live_temps();
    CHECK_OK(qt_afile_open_staged(out, &st, &f));
    CHECK(exists(stage_path));
    CHECK_EQ_INT(qt_afile_live_temps(), temps + 1);
    CHECK_OK(qt_afile_write(f, "hello", 5));
    qt_afile_abort(f);
    CHECK(!exists(stage_path));
    CHECK(!exists(out));
    /* kept: an abort leaves it; a reopen at 3 cuts what followed and writes after it */
    st.keep = true;
    CHECK_OK(qt_afile_open_staged(out, &st, &f));
    CHECK_EQ_INT(qt_afile_live_temps(), temps);
    CHECK_OK(qt_afile_write(f, "abcdef", 6));
    CHECK_OK(qt_afile_sync(f));
    qt_afile_abort(f);
    CHECK_EQ_INT(size_of(stage_path), 6);
    st.resume_at = 3;
    CHECK_OK(qt_afile_open_staged(out, &st, &f));
    CHECK_EQ_INT(qt_afile_tell(f), 3);
    char back[3];
    CHECK_OK(qt_afile_read_at(f, 0, back, 3));
    CHECK(memcmp(back, "abc", 3) == 0);
    CHECK_STATUS(qt_afile_read_at(f, 2, back, 3), QT_ERR_IO); /* past the end */
    CHECK_OK(qt_afile_write(f, "XY", 2));
    CHECK_OK(qt_afile_commit(f));
    CHECK(!exists(stage_path));
    size_t n;
    char *got = qt_test_read(out, &n);
    CHECK(n == 5 && memcmp(got, "abcXY", 5) == 0);
    free(got);
    /* a resume point beyond the file is refused and leaves the file alone */
    FILE *p = fopen(stage_path, "wb");
    fputs("12", p);
    fclose(p);
    st.resume_at = 10;
    CHECK_STATUS(qt_afile_open_staged(out, &st, &f), QT_ERR_IO);
    CHECK(strstr(qt_last_error(), "fewer than the 10 recorded") != NULL);
    CHECK_EQ_INT(size_of(stage_path), 2);
    /* a device is no file to stage */
    st.resume_at = 0;
    CHECK_STATUS(qt_afile_open_staged("/dev/null", &st, &f), QT_ERR_ARG);
    unlink(stage_path);
    unlink(out);
}

typedef struct stop_at {
    int32_t n;
    int32_t calls;
} stop_at;

static void stop_hook(void *ctx, int32_t n_done) {
    stop_at *s = ctx;
    s->calls++;
    if (n_done == s->n) qt_request_cancel();
}

/* One run of tiny256 to `out` (q4_k_m with the shared imatrix), cancelled
 * after stop tensors (0: never). */
static qt_status run(const qt_model *m, const char *out, const char *scheme, int threads, bool resumable, bool resume,
                     int32_t stop, qt_quantize_plan **plan_out) {
    qt_quantize_opts o = qt_quantize_opts_default();
    o.scheme = scheme;
    o.imatrix = qt_test_shared("reference/llamacpp-quantize/imatrix-tiny256.gguf");
    o.command_line = "test";
    o.threads = threads;
    o.resumable = resumable;
    o.resume = resume;
    stop_at s = {stop, 0};
    o.tensor_written = stop_hook;
    o.tensor_written_ctx = &s;
    qt_quantize_plan *p;
    if (plan_out) *plan_out = NULL;
    qt_status st = qt_quantize_plan_make(m, &o, &p);
    if (st != QT_OK) return st;
    st = qt_quantize_run(m, out, &o, p);
    qt_cancel_reset();
    if (plan_out) *plan_out = p;
    else qt_quantize_plan_free(p);
    return st;
}

static void test_resume_bytes(void) {
    qt_model *m;
    CHECK_OK(qt_model_open(qt_test_shared("models/tiny256-random.gguf"), &m));
    char ref[1024], out[1024], partial[1100], state[1100];
    snprintf(ref, sizeof ref, "%s", path_in("ref.gguf"));
    snprintf(out, sizeof out, "%s", path_in("res.gguf"));
    snprintf(partial, sizeof partial, "%s%s", out, QT_QUANTIZE_PARTIAL_SUFFIX);
    snprintf(state, sizeof state, "%s%s", out, QT_QUANTIZE_STATE_SUFFIX);
    qt_quantize_plan *pr = NULL;
    CHECK_OK(run(m, ref, "q4_k_m", 2, false, false, 0, &pr));
    if (!pr) return;
    CHECK_EQ_INT(pr->n_done, pr->n_tensors);

    /* not resumable: a cancel leaves nothing */
    CHECK_STATUS(run(m, out, "q4_k_m", 1, false, false, 4, NULL), QT_ERR_INTERRUPTED);
    CHECK(!exists(out) && !exists(partial) && !exists(state));

    /* resumable: cancelled after 4, the partial ends where the state says */
    qt_quantize_plan *p1 = NULL;
    CHECK_STATUS(run(m, out, "q4_k_m", 1, true, false, 4, &p1), QT_ERR_INTERRUPTED);
    if (!p1) return;
    CHECK(p1->partial_kept);
    CHECK_EQ_INT(p1->n_done, 4);
    qt_quantize_plan_free(p1);
    CHECK(!exists(out) && exists(partial) && exists(state));
    const long long kept = size_of(partial);

    /* other options: refused, naming the option; the partial untouched */
    CHECK_STATUS(run(m, out, "q5_k_m", 1, false, true, 0, NULL), QT_ERR_ARG);
    CHECK(strstr(qt_last_error(), "scheme was \"Q4_K_M\"") != NULL);
    CHECK_EQ_INT(size_of(partial), kept);

    /* resumed (with another thread count): the reference's bytes, and the earlier errors restored */
    qt_quantize_plan *p2 = NULL;
    CHECK_OK(run(m, out, "q4_k_m", 2, false, true, 0, &p2));
    if (!p2) return;
    CHECK_EQ_INT(p2->n_resumed, 4);
    CHECK_EQ_INT(p2->n_done, p2->n_tensors);
    for (int32_t i = 0; i < p2->n_tensors; i++) {
        CHECK_MSG(p2->tensors[i].measured == pr->tensors[i].measured, "tensor %d", i);
        CHECK_MSG(p2->tensors[i].rmse == pr->tensors[i].rmse, "tensor %d: rmse %.17g vs %.17g", i, p2->tensors[i].rmse,
                  pr->tensors[i].rmse);
    }
    qt_quantize_plan_free(p2);
    CHECK(!exists(partial) && !exists(state));
    size_t na, nb;
    char *a = qt_test_read(ref, &na), *b = qt_test_read(out, &nb);
    CHECK(na == nb && memcmp(a, b, na) == 0);
    free(a);
    free(b);
    qt_quantize_plan_free(pr);

    /* nothing to resume */
    unlink(out);
    CHECK_STATUS(run(m, out, "q4_k_m", 1, false, true, 0, NULL), QT_ERR_ARG);
    CHECK(strstr(qt_last_error(), "nothing to resume") != NULL);
    CHECK(!exists(out));
    unlink(ref);
    qt_model_free(m);
}

int main(void) {
    QT_RUN(test_staged_file);
    QT_RUN(test_resume_bytes);
    return qt_test_finish("test_quantize_resume");
}
