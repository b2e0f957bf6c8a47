/* lib/quantize/gptq_ct_state.c — the finished layers of a calibrated run onto
 * a compressed-tensors scheme (GPTQ, AWQ, SmoothQuant; docs/gptq.md "--resume").
 *
 * Every such run writes each finished layer's codes and scales to
 * OUT.partial.layers and lets them leave memory; the writer's callbacks read
 * them back (gptq_run.c). Without --resumable that file is unlinked at once
 * (nothing is left however the run ends). With --resumable it is kept, each
 * layer also appends the f32 values the engine ran on (so that a resumed run
 * replays the finished layers with the same bits) and the norms and biases
 * that absorbed smoothing scales, is synced, and then
 * OUT.partial.layers.state (JSON, rewritten atomically) records the layer:
 * one entry per record ({name, rows, cols, int|float, off, f32} for a linear,
 * {vector, n, off} for a smoothed vector), the KV-cache maxima so far and the
 * report counters, under an identity (the input's, the scheme, the algorithm,
 * the recorded command line, the calibration's fingerprint). A kill -9 at any
 * point leaves a state that never claims more than the disk holds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io_internal.h"
#include "quantize_internal.h"

#define CT_LAYERS_FORMAT 1

struct qt__ct_layers {
    char *data_path, *state_path;
    int fd;
    bool keep;                /* --resumable / --resume: the files persist (kept on failure) */
    bool owned;               /* the files are this run's: close may remove them */
    json_t *state;
    int32_t layers_done;
    uint64_t bytes_done;
};

static char *cat(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 1;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s", a, b);
    return s;
}

/* One entry of 'records', checked against the bytes recorded. */
static bool record_ok(const json_t *e, uint64_t bytes_done) {
    const json_t *off = json_object_get(e, "off");
    if (!json_is_object(e) || !json_is_integer(off) || json_integer_value(off) < 0 ||
        (uint64_t)json_integer_value(off) > bytes_done)
        return false;
    if (json_is_string(json_object_get(e, "vector"))) {
        const json_t *n = json_object_get(e, "n");
        return json_is_integer(n) && json_integer_value(n) > 0 && (uint64_t)json_integer_value(n) <= bytes_done / 4 &&
               (uint64_t)json_integer_value(off) + 4 * (uint64_t)json_integer_value(n) <= bytes_done;
    }
    const json_t *rows = json_object_get(e, "rows"), *cols = json_object_get(e, "cols"), *f32 = json_object_get(e, "f32");
    const json_t *g = json_object_get(e, "int") ? json_object_get(e, "int") : json_object_get(e, "float");
    if (!json_is_string(json_object_get(e, "name")) || !json_is_integer(rows) || !json_is_integer(cols) ||
        !json_is_integer(f32) || !json_is_array(g) || json_array_size(g) != 4)
        return false;
    const json_int_t r = json_integer_value(rows), c = json_integer_value(cols);
    if (r < 1 || c < 1 || r > (1 << 24) || c > (1 << 24) || json_integer_value(f32) < 0 ||
        (uint64_t)json_integer_value(f32) > bytes_done)
        return false;
    for (size_t i = 0; i < 4; i++) /* int: [bits, symmetric, dtype, group]; float: [kind, dtype, group, shared] */
        if (!json_is_number(json_array_get(g, i)) && !json_is_boolean(json_array_get(g, i))) return false;
    const json_int_t group = json_integer_value(json_array_get(g, json_object_get(e, "int") ? 3 : 2));
    return group >= 1 && group <= c && c % group == 0 &&
           (uint64_t)json_integer_value(f32) + 4 * (uint64_t)r * (uint64_t)c <= bytes_done;
}

qt_status qt__ct_layers_check(const char *path, const char *text, size_t len, const json_t *identity, int32_t n_amax,
                              json_t **out) {
    *out = NULL;
    json_error_t err;
    json_t *st = json_loadb(text, len, 0, &err);
    if (!st) return qt_error(QT_ERR_FORMAT, "%s: line %d: %s", path, err.line, err.text);
    json_t *fmt = json_object_get(st, "quanta_ct_layers"), *ld = json_object_get(st, "layers_done");
    json_t *bd = json_object_get(st, "bytes_done"), *rec = json_object_get(st, "records");
    qt_status s = QT_OK;
    if (!json_is_object(st) || !json_is_integer(fmt) || json_integer_value(fmt) != CT_LAYERS_FORMAT)
        s = qt_error(QT_ERR_FORMAT, "%s: field 'quanta_ct_layers': not a compressed-tensors layer state (format %d)", path,
                     CT_LAYERS_FORMAT);
    else if ((s = qt__resume_match(path, json_object_get(st, "identity"), (json_t *)identity)) != QT_OK)
        ;
    else if (!json_is_integer(ld) || !json_is_integer(bd) || !json_is_array(rec) ||
             !json_is_object(json_object_get(st, "report")) || json_integer_value(ld) < 0 ||
             json_integer_value(ld) > (1 << 20) || json_integer_value(bd) < 0)
        s = qt_error(QT_ERR_FORMAT, "%s: fields 'layers_done', 'bytes_done', 'records', 'report': missing or out of range",
                     path);
    for (size_t i = 0; s == QT_OK && i < json_array_size(rec); i++)
        if (!record_ok(json_array_get(rec, i), (uint64_t)json_integer_value(bd)))
            s = qt_error(QT_ERR_FORMAT, "%s: field 'records[%zu]': not a linear or a vector within the recorded bytes", path,
                         i);
    if (s == QT_OK) s = qt__gptq_kv_check(path, json_object_get(st, "kv_amax"), n_amax);
    if (s != QT_OK) {
        json_decref(st);
        return s;
    }
    *out = st;
    return QT_OK;
}

static qt_status load_state(qt__ct_layers *g, const json_t *identity, int32_t n_amax) {
    char *text = NULL;
    size_t len = 0;
    qt_status s = qt_read_file(g->state_path, &text, &len);
    if (s != QT_OK) return s;
    json_t *st;
    s = qt__ct_layers_check(g->state_path, text, len, identity, n_amax, &st);
    free(text);
    if (s != QT_OK) return s;
    json_decref(g->state);
    g->state = st;
    g->layers_done = (int32_t)json_integer_value(json_object_get(st, "layers_done"));
    g->bytes_done = (uint64_t)json_integer_value(json_object_get(st, "bytes_done"));
    return QT_OK;
}

/* The data file: unlinked at once (not kept), fresh, or the interrupted run's cut to its state. */
static qt_status open_data(qt__ct_layers *g, bool resume) {
    if (!g->keep) {
        g->fd = open(g->data_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (g->fd < 0)
            return qt_error(QT_ERR_IO, "%s: cannot create (the spill file of the finished layers): %s", g->data_path,
                            strerror(errno));
        unlink(g->data_path);
        return QT_OK;
    }
    g->fd = open(g->data_path, O_RDWR | O_CREAT | O_CLOEXEC | (resume ? 0 : O_TRUNC), 0644);
    struct stat sb;
    if (g->fd < 0) return qt_error(QT_ERR_IO, "%s: cannot open: %s", g->data_path, strerror(errno));
    if (fstat(g->fd, &sb) != 0 || (uint64_t)sb.st_size < g->bytes_done)
        return qt_error(QT_ERR_FORMAT, "--resume: %s: shorter than its state says (%llu bytes): run without --resume",
                        g->data_path, (unsigned long long)g->bytes_done);
    if (ftruncate(g->fd, (off_t)g->bytes_done) != 0) /* bytes after the last state update are redone */
        return qt_error(QT_ERR_IO, "%s: cannot truncate: %s", g->data_path, strerror(errno));
    return QT_OK;
}

qt_status qt__ct_layers_open(const char *out_dir, bool keep, bool resume, json_t *identity, int32_t n_amax,
                             qt__ct_layers **res) {
    *res = NULL;
    qt__ct_layers *g = calloc(1, sizeof *g);
    if (!g) {
        json_decref(identity);
        return qt_error(QT_ERR_NOMEM, "out of memory");
    }
    g->fd = -1;
    g->keep = keep || resume;
    g->data_path = cat(out_dir, QT_QUANTIZE_LAYERS_SUFFIX);
    g->state_path = cat(out_dir, QT_QUANTIZE_LAYERS_STATE_SUFFIX);
    g->state = identity ? json_pack("{s:i, s:o, s:i, s:I, s:[], s:{s:[], s:[], s:I}, s:{}}", "quanta_ct_layers",
                                    CT_LAYERS_FORMAT, "identity", identity, "layers_done", 0, "bytes_done", (json_int_t)0,
                                    "records", "kv_amax", "k", "v", "tokens", (json_int_t)0, "report")
                        : NULL;
    qt_status s = g->data_path && g->state_path && g->state ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
    const bool have = s == QT_OK && access(g->state_path, F_OK) == 0;
    if (s == QT_OK && resume && !have) {
        char *final_state = cat(out_dir, QT_QUANTIZE_STATE_SUFFIX);
        if (!final_state || access(final_state, F_OK) != 0)
            s = qt_error(QT_ERR_ARG, "--resume: %s: no state file, so nothing to resume (run without --resume to start "
                         "again)", g->state_path);
        free(final_state);
    }
    if (s == QT_OK && resume && have) s = load_state(g, json_object_get(g->state, "identity"), n_amax);
    else if (s == QT_OK && g->keep && unlink(g->state_path) != 0 && errno != ENOENT)
        s = qt_error(QT_ERR_IO, "%s: cannot remove: %s", g->state_path, strerror(errno));
    /* --resume without a layer state: the layers were never recorded, or the run was already in its write */
    if (s == QT_OK) s = open_data(g, resume && have);
    if (s != QT_OK) { /* a refused resume leaves the interrupted run's files as they were */
        qt__ct_layers_close(g, s, NULL);
        return s;
    }
    g->owned = true;
    *res = g;
    return QT_OK;
}

int qt__ct_layers_fd(const qt__ct_layers *g) { return g->fd; }
bool qt__ct_layers_kept(const qt__ct_layers *g) { return g->keep; }
int32_t qt__ct_layers_done(const qt__ct_layers *g) { return g->layers_done; }
uint64_t qt__ct_layers_bytes(const qt__ct_layers *g) { return g->bytes_done; }
const json_t *qt__ct_layers_records(const qt__ct_layers *g) { return json_object_get(g->state, "records"); }

void qt__ct_layers_restore(const qt__ct_layers *g, float *k_amax, float *v_amax, int32_t n_amax, int64_t *kv_tokens,
                           qt_gptq_report *r) {
    int32_t n_rtn;
    qt__gptq_kv_read(json_object_get(g->state, "kv_amax"), k_amax, v_amax, n_amax, kv_tokens);
    qt__gptq_report_read(json_object_get(g->state, "report"), r, &n_rtn);
}

qt_status qt__ct_layers_commit(qt__ct_layers *g, json_t *records, uint64_t bytes, const float *k_amax,
                               const float *v_amax, int32_t n_amax, int64_t kv_tokens, const qt_gptq_report *r) {
    if (!g->keep) {
        json_decref(records);
        return QT_OK;
    }
    qt_status s = fdatasync(g->fd) == 0 ? QT_OK : qt_error(QT_ERR_IO, "%s: cannot sync: %s", g->data_path, strerror(errno));
    json_array_extend(json_object_get(g->state, "records"), records);
    json_decref(records);
    if (s != QT_OK) return s;
    const qt__layer_commit c = {k_amax, v_amax, n_amax, kv_tokens, r, r->n_rtn};
    return qt__layer_state_commit(g->state, g->state_path, &c, &g->layers_done, &g->bytes_done, bytes);
}

void qt__ct_layers_close(qt__ct_layers *g, qt_status s, bool *kept) {
    if (kept) *kept = false;
    if (!g) return;
    if (g->fd >= 0) close(g->fd);
    const bool keep = g->keep && s != QT_OK && g->layers_done > 0;
    if (!keep && g->owned && g->keep) {
        unlink(g->state_path);
        unlink(g->data_path);
    }
    if (kept) *kept = keep;
    json_decref(g->state);
    free(g->data_path);
    free(g->state_path);
    free(g);
}
