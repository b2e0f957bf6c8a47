/* tools/quanta/quantize_calib.c — `quanta quantize --calib FILE`: the samples
 * are cut by the one rule (qt_calib_load) and turned into what the scheme
 * needs, through the library only. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quantize_calib.h"

int qcalib_samples(const qt_model *m, const cli_calib *c, qcalib *q) {
    memset(q, 0, sizeof *q);
    const qt_calib_opts co = cli_calib_lib(c);
    qt_status s = qt_calib_load(m, &co, &q->set);
    if (s != QT_OK) return cli_fail(s);
    if (q->set.n_requested > q->set.n_samples)
        fprintf(stderr, "quanta: warning: %s: %lld tokens hold %d windows of %d; using those %d of the %d samples asked "
                        "for (--allow-short-calib)\n", c->file, (long long)q->set.file_tokens, q->set.n_samples,
                q->set.seq_len, q->set.n_samples, q->set.n_requested);
    return CLI_OK;
}

static int load(const qt_model *m, const cli_calib *c, int threads, qcalib *q, qt_engine_ctx **e) {
    int rc = qcalib_samples(m, c, q);
    if (rc != CLI_OK) return rc;
    qt_status s;
    qt_engine_opts eo;
    qt_engine_opts_default(&eo);
    eo.n_ctx = eo.n_batch = q->set.seq_len; /* one sample per batch, as `quanta imatrix` runs */
    eo.n_threads = threads;
    if ((s = qt_engine_new(m, &eo, e)) != QT_OK) return cli_fail(s);
    return CLI_OK;
}

int qcalib_imatrix(const qt_model *m, const cli_calib *c, int threads, int quiet, qcalib *q) {
    qt_engine_ctx *e = NULL;
    int rc = load(m, c, threads, q, &e);
    if (rc != CLI_OK) return rc;
    const qt_vocab *v = qt_model_vocab(m);
    qt_imatrix_calc_opts o = {.n_ctx = q->set.seq_len, .bos_id = v->add_bos ? v->bos_id : -1,
                              .progress = cli_progress(quiet)};
    qt_imatrix_result r;
    qt_status s = qt_imatrix_compute(m, e, q->set.tokens, (int64_t)q->set.n_samples * q->set.seq_len, &o, &r);
    cli_progress_end();
    qt_engine_free(e);
    if (s != QT_OK) return cli_fail(s);
    const char *tmp = getenv("TMPDIR");
    snprintf(q->imatrix_path, sizeof q->imatrix_path, "%s/quanta-calib-imatrix-%ld.gguf", tmp && *tmp ? tmp : "/tmp",
             (long)getpid());
    const char *datasets[1] = {c->file}; /* as `quanta imatrix --calib FILE` records it */
    qt_imatrix_info info = {datasets, 1, r.chunk_count, r.chunk_size};
    s = qt_imatrix_write(q->imatrix_path, r.stats, r.n_stats, &info);
    qt_imatrix_result_free(&r);
    if (s != QT_OK) {
        q->imatrix_path[0] = '\0';
        return cli_fail(s);
    }
    return CLI_OK;
}

int qcalib_amax(const qt_model *m, const cli_calib *c, int threads, int quiet, qcalib *q) {
    qt_engine_ctx *e = NULL;
    int rc = load(m, c, threads, q, &e);
    if (rc != CLI_OK) return rc;
    qt_status s = qt_calib_act_amax(m, e, &q->set, cli_progress(quiet), &q->amax);
    cli_progress_end();
    qt_engine_free(e);
    return s == QT_OK ? CLI_OK : cli_fail(s);
}

float qcalib_amax_cb(void *q, const char *name) { return qt_act_amax_get(&((qcalib *)q)->amax, name); }

void qcalib_drop_file(qcalib *q) {
    if (q->imatrix_path[0]) unlink(q->imatrix_path);
    q->imatrix_path[0] = '\0';
}

void qcalib_free(qcalib *q) {
    qcalib_drop_file(q);
    qt_calib_set_free(&q->set);
    qt_act_amax_free(&q->amax);
}
