/* lib/quantize/gptq_state.c — what lets an interrupted GPTQ run continue from
 * its last finished layer (docs/gptq.md "--resume").
 *
 * GPTQ's output is known only layer by layer, so the GGUF file cannot be
 * streamed in its own order (token_embd comes first, and the header holds
 * offsets of every tensor). Each finished layer's quantized tensors are
 * appended instead to OUT.partial.layers and synced; then OUT.partial.layers.state
 * (JSON, rewritten atomically) records the layer, which tensors, how many
 * bytes, the KV-cache maxima observed so far and the report counters. A kill -9
 * at any point leaves a state that never claims more than the disk holds.
 * A resumed run checks the input's identity and the options (the same rule as
 * OUT.partial.state, resume.c), reads the finished layers back, runs them
 * forward through the engine with those bytes bound (their outputs are the
 * next layer's inputs, as in the first run: the same bits), and goes on. The
 * final file is then written through OUT.partial as before, itself resumable.
 *
 * Every GPTQ run onto GGUF spills its layers this way, resumable or not, so
 * that its memory does not grow with depth: a layer's bytes leave memory once
 * they are on disk, and the final write reads each tensor back when the
 * writer reaches it (qt__gptq_state_read). Without --resumable both files are
 * removed however the run ends.
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

#define LAYERS_FORMAT 1

struct qt__gptq_state {
    char *data_path, *state_path;
    int fd;                   /* OUT.partial.layers, written at bytes_done */
    json_t *state;            /* identity + progress */
    int32_t layers_done;
    uint64_t bytes_done;
    bool owned;               /* the files are this run's (opened and checked): close may remove them */
    bool keep;                /* --resumable / --resume: kept on failure */
};

static char *cat(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 1;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s", a, b);
    return s;
}

static qt_status fresh_state(const qt_model *m, const qt_quantize_opts *o, const qt_quantize_plan *p, json_t **out) {
    json_t *id;
    qt_status s = qt__resume_identity(m, o, p, &id);
    if (s != QT_OK) return s;
    *out = json_pack("{s:i, s:o, s:s, s:i, s:I, s:[], s:{s:[], s:[], s:I}, s:{}}", "quanta_gptq_layers", LAYERS_FORMAT,
                     "identity", id, "calibration_sha256", o->calib ? o->calib->fp.sha256 : "", "layers_done", 0,
                     "bytes_done", (json_int_t)0, "tensors", "kv_amax", "k", "v", "tokens", (json_int_t)0, "report");
    return *out ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
}

/* The entries of 'tensors': [plan index, bytes] of this plan, each once, adding up to bytes_done. */
static qt_status check_tensors(const char *path, const json_t *ts, const qt_quantize_plan *p, uint64_t bytes_done) {
    uint8_t *seen = calloc((size_t)p->n_tensors + 1, 1);
    if (!seen) return qt_error(QT_ERR_NOMEM, "out of memory");
    uint64_t sum = 0;
    qt_status s = QT_OK;
    for (size_t i = 0; s == QT_OK && i < json_array_size(ts); i++) {
        const json_t *e = json_array_get(ts, i), *k = json_array_get(e, 0), *nb = json_array_get(e, 1);
        const json_int_t ki = json_integer_value(k);
        if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_integer(k) || !json_is_integer(nb) || ki < 0 ||
            ki >= p->n_tensors || seen[ki] || (uint64_t)json_integer_value(nb) != p->tensors[ki].bytes)
            s = qt_error(QT_ERR_FORMAT, "%s: field 'tensors[%zu]': not [plan index, bytes] of a tensor of this plan", path, i);
        else {
            seen[ki] = 1;
            sum += p->tensors[ki].bytes;
        }
    }
    if (s == QT_OK && sum != bytes_done)
        s = qt_error(QT_ERR_FORMAT, "%s: fields 'tensors', 'bytes_done': %llu bytes of tensors, %llu recorded", path,
                     (unsigned long long)sum, (unsigned long long)bytes_done);
    free(seen);
    return s;
}

/* 'kv_amax' {k: [...], v: [...], tokens} of equal lengths, at most n_amax numbers each. */
qt_status qt__gptq_kv_check(const char *path, const json_t *kv, int32_t n_amax) {
    const json_t *k = json_object_get(kv, "k"), *v = json_object_get(kv, "v"), *t = json_object_get(kv, "tokens");
    bool ok = json_is_array(k) && json_is_array(v) && json_array_size(k) == json_array_size(v) &&
              json_array_size(k) <= (size_t)n_amax && json_is_integer(t) && json_integer_value(t) >= 0;
    for (size_t i = 0; ok && i < json_array_size(k); i++)
        ok = json_is_number(json_array_get(k, i)) && json_is_number(json_array_get(v, i));
    return ok ? QT_OK : qt_error(QT_ERR_FORMAT, "%s: field 'kv_amax': not this run's KV maxima", path);
}

json_t *qt__gptq_kv_json(const float *k_amax, const float *v_amax, int32_t n_amax, int64_t kv_tokens) {
    json_t *ka = json_array(), *va = json_array();
    for (int32_t i = 0; i < n_amax; i++) {
        json_array_append_new(ka, json_real(k_amax[i]));
        json_array_append_new(va, json_real(v_amax[i]));
    }
    return json_pack("{s:o, s:o, s:I}", "k", ka, "v", va, "tokens", (json_int_t)kv_tokens);
}

void qt__gptq_kv_read(const json_t *kv, float *k_amax, float *v_amax, int32_t n_amax, int64_t *kv_tokens) {
    const json_t *ka = json_object_get(kv, "k"), *va = json_object_get(kv, "v");
    for (size_t i = 0; i < json_array_size(ka) && i < (size_t)n_amax; i++) {
        k_amax[i] = (float)json_number_value(json_array_get(ka, i));
        v_amax[i] = (float)json_number_value(json_array_get(va, i));
    }
    if (kv_tokens) *kv_tokens = json_integer_value(json_object_get(kv, "tokens"));
}

/* The report's counters (smoothing's too), so that a resumed run reports the whole run. */
json_t *qt__gptq_report_json(const qt_gptq_report *r, int32_t n_rtn) {
    return json_pack("{s:i, s:i, s:i, s:I, s:f, s:i, s:i, s:I, s:f, s:f}", "n_gptq", r->n_gptq, "n_rtn", n_rtn,
                     "n_retries", r->n_retries, "n_dead_cols", (json_int_t)r->n_dead_cols, "loss", r->loss, "n_smoothed",
                     r->n_smoothed, "n_awq_identity", r->n_awq_identity, "n_dead_channels",
                     (json_int_t)r->n_dead_channels, "awq_loss", r->awq_loss, "awq_loss_rtn", r->awq_loss_rtn);
}

void qt__gptq_report_read(const json_t *rp, qt_gptq_report *r, int32_t *n_rtn) {
    r->n_gptq = (int32_t)json_integer_value(json_object_get(rp, "n_gptq"));
    r->n_retries = (int32_t)json_integer_value(json_object_get(rp, "n_retries"));
    r->n_dead_cols = json_integer_value(json_object_get(rp, "n_dead_cols"));
    r->loss = json_number_value(json_object_get(rp, "loss"));
    r->n_smoothed = (int32_t)json_integer_value(json_object_get(rp, "n_smoothed"));
    r->n_awq_identity = (int32_t)json_integer_value(json_object_get(rp, "n_awq_identity"));
    r->n_dead_channels = json_integer_value(json_object_get(rp, "n_dead_channels"));
    r->awq_loss = json_number_value(json_object_get(rp, "awq_loss"));
    r->awq_loss_rtn = json_number_value(json_object_get(rp, "awq_loss_rtn"));
    *n_rtn = (int32_t)json_integer_value(json_object_get(rp, "n_rtn"));
    r->n_rtn = *n_rtn;
}

qt_status qt__gptq_state_check(const char *path, const char *text, size_t len, json_t *now, const qt_quantize_plan *p,
                               int32_t n_amax, json_t **out, int32_t *layers, uint64_t *bytes) {
    *out = NULL;
    json_error_t err;
    json_t *st = json_loadb(text, len, 0, &err);
    if (!st) return qt_error(QT_ERR_FORMAT, "%s: line %d: %s", path, err.line, err.text);
    json_t *fmt = json_object_get(st, "quanta_gptq_layers"), *ld = json_object_get(st, "layers_done");
    json_t *bd = json_object_get(st, "bytes_done"), *ts = json_object_get(st, "tensors");
    json_t *rp = json_object_get(st, "report");
    qt_status s = QT_OK;
    if (!json_is_object(st) || !json_is_integer(fmt) || json_integer_value(fmt) != LAYERS_FORMAT)
        s = qt_error(QT_ERR_FORMAT, "%s: field 'quanta_gptq_layers': not a GPTQ layer state (format %d)", path,
                     LAYERS_FORMAT);
    else if ((s = qt__resume_match(path, json_object_get(st, "identity"), json_object_get(now, "identity"))) != QT_OK)
        ;
    else if (!json_equal(json_object_get(st, "calibration_sha256"), json_object_get(now, "calibration_sha256")))
        s = qt_error(QT_ERR_ARG, "--resume: %s: the calibration text is not the interrupted run's (its SHA-256 "
                     "changed): run without --resume to start again", path);
    else if (!json_is_integer(ld) || !json_is_integer(bd) || !json_is_array(ts) || !json_is_object(rp) ||
             json_integer_value(ld) < 0 || json_integer_value(ld) > (1 << 20) || json_integer_value(bd) < 0)
        s = qt_error(QT_ERR_FORMAT, "%s: fields 'layers_done', 'bytes_done', 'tensors', 'report': missing or out of "
                     "range", path);
    else if ((s = check_tensors(path, ts, p, (uint64_t)json_integer_value(bd))) == QT_OK)
        s = qt__gptq_kv_check(path, json_object_get(st, "kv_amax"), n_amax);
    if (s != QT_OK) {
        json_decref(st);
        return s;
    }
    *layers = (int32_t)json_integer_value(ld);
    *bytes = (uint64_t)json_integer_value(bd);
    *out = st;
    return QT_OK;
}

/* A saved state against this run's (qt__gptq_state_check). */
static qt_status load_state(qt__gptq_state *g, json_t *now, const qt_quantize_plan *p, int32_t n_amax) {
    char *text = NULL;
    size_t len = 0;
    qt_status s = qt_read_file(g->state_path, &text, &len);
    if (s != QT_OK) return s;
    json_t *st;
    s = qt__gptq_state_check(g->state_path, text, len, now, p, n_amax, &st, &g->layers_done, &g->bytes_done);
    free(text);
    if (s != QT_OK) return s;
    json_decref(g->state);
    g->state = st;
    return QT_OK;
}

qt_status qt__gptq_state_open(const qt_model *m, const char *out, const qt_quantize_opts *o, const qt_quantize_plan *p,
                              int32_t n_amax, qt__gptq_state **res) {
    *res = NULL;
    qt__gptq_state *g = calloc(1, sizeof *g);
    if (!g) return qt_error(QT_ERR_NOMEM, "out of memory");
    g->fd = -1;
    g->keep = o->resumable || o->resume;
    g->data_path = cat(out, QT_QUANTIZE_LAYERS_SUFFIX);
    g->state_path = cat(out, QT_QUANTIZE_LAYERS_STATE_SUFFIX);
    qt_status s = g->data_path && g->state_path ? fresh_state(m, o, p, &g->state) : qt_error(QT_ERR_NOMEM, "out of memory");
    const bool have = s == QT_OK && access(g->state_path, F_OK) == 0;
    if (s == QT_OK && o->resume && !have) {
        char *final_state = cat(out, QT_QUANTIZE_STATE_SUFFIX);
        if (!final_state || access(final_state, F_OK) != 0)
            s = qt_error(QT_ERR_ARG, "--resume: %s: no state file, so nothing to resume (run without --resume to start "
                         "again)", g->state_path);
        free(final_state);
    } else if (s == QT_OK && o->resume) {
        json_t *now = json_incref(g->state);
        s = load_state(g, now, p, n_amax);
        json_decref(now);
    } else if (s == QT_OK && unlink(g->state_path) != 0 && errno != ENOENT) {
        s = qt_error(QT_ERR_IO, "%s: cannot remove: %s", g->state_path, strerror(errno));
    }
    if (s == QT_OK) {
        g->fd = open(g->data_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        struct stat st;
        if (g->fd < 0) s = qt_error(QT_ERR_IO, "%s: cannot open: %s", g->data_path, strerror(errno));
        else if (fstat(g->fd, &st) != 0 || (uint64_t)st.st_size < g->bytes_done)
            s = qt_error(QT_ERR_FORMAT, "--resume: %s: shorter than its state says (%llu bytes): run without --resume",
                         g->data_path, (unsigned long long)g->bytes_done);
        else if (ftruncate(g->fd, (off_t)g->bytes_done) != 0) /* bytes after the last state update are redone */
            s = qt_error(QT_ERR_IO, "%s: cannot truncate: %s", g->data_path, strerror(errno));
    }
    if (s != QT_OK) { /* a refused resume leaves the interrupted run's files as they were */
        qt__gptq_state_close(g, s, NULL);
        return s;
    }
    g->owned = true;
    *res = g;
    return QT_OK;
}

int32_t qt__gptq_state_layers_done(const qt__gptq_state *g) { return g ? g->layers_done : 0; }

static qt_status pread_all(int fd, void *dst, size_t n, uint64_t off, const char *path) {
    for (size_t got = 0; got < n;) {
        ssize_t r = pread(fd, (uint8_t *)dst + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return qt_error(QT_ERR_IO, "%s: cannot read %zu bytes at %llu", path, n, (unsigned long long)off);
        got += (size_t)r;
    }
    return QT_OK;
}

bool qt__gptq_state_has(const qt__gptq_state *g, int32_t i) {
    json_t *ts = g ? json_object_get(g->state, "tensors") : NULL, *e;
    size_t k;
    json_array_foreach(ts, k, e) if (json_integer_value(json_array_get(e, 0)) == i) return true;
    return false;
}

qt_status qt__gptq_state_read(qt__gptq_state *g, int32_t i, uint8_t **data) {
    *data = NULL;
    json_t *ts = g ? json_object_get(g->state, "tensors") : NULL, *e;
    size_t k;
    uint64_t off = 0;
    json_array_foreach(ts, k, e) {
        const json_int_t nb = json_integer_value(json_array_get(e, 1));
        if (json_integer_value(json_array_get(e, 0)) == i) {
            if (!(*data = malloc((size_t)nb + 1))) return qt_error(QT_ERR_NOMEM, "out of memory");
            qt_status s = pread_all(g->fd, *data, (size_t)nb, off, g->data_path);
            if (s != QT_OK) { free(*data); *data = NULL; }
            return s;
        }
        off += (uint64_t)nb;
    }
    return QT_OK;
}

qt_status qt__gptq_state_restore(qt__gptq_state *g, float *k_amax, float *v_amax, int32_t n_amax, int64_t *kv_tokens,
                                 qt_gptq_report *r, int32_t *n_rtn) {
    qt__gptq_kv_read(json_object_get(g->state, "kv_amax"), k_amax, v_amax, n_amax, kv_tokens);
    qt__gptq_report_read(json_object_get(g->state, "report"), r, n_rtn);
    return QT_OK;
}

static qt_status write_all(int fd, const void *src, size_t n, const char *path) {
    for (size_t put = 0; put < n;) {
        ssize_t w = write(fd, (const uint8_t *)src + put, n - put);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return qt_error(QT_ERR_IO, "%s: write failed: %s", path, strerror(errno));
        put += (size_t)w;
    }
    return QT_OK;
}

/* One finished layer into a layer state file (this one's and gptq_ct_state.c's): the KV maxima,
 * the report's counters, the layer and byte counts, written atomically; the counts advance only
 * once the file holds them. */
qt_status qt__layer_state_commit(json_t *state, const char *state_path, const qt__layer_commit *c,
                                 int32_t *layers_done, uint64_t *bytes_done, uint64_t bytes) {
    json_object_set_new(state, "kv_amax", qt__gptq_kv_json(c->k_amax, c->v_amax, c->n_amax, c->kv_tokens));
    json_object_set_new(state, "report", qt__gptq_report_json(c->report, c->n_rtn));
    json_object_set_new(state, "layers_done", json_integer(*layers_done + 1));
    json_object_set_new(state, "bytes_done", json_integer((json_int_t)bytes));
    qt_status s = qt__json_write_atomic(state_path, state, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    if (s == QT_OK) {
        (*layers_done)++;
        *bytes_done = bytes;
    }
    return s;
}

qt_status qt__gptq_state_save_layer(qt__gptq_state *g, const qt_quantize_plan *p, const int32_t *idx, int32_t n,
                                    uint8_t *const *given, const float *k_amax, const float *v_amax, int32_t n_amax,
                                    int64_t kv_tokens, const qt_gptq_report *r, int32_t n_rtn) {
    if (!g) return QT_OK;
    qt_status s = QT_OK;
    if (lseek(g->fd, (off_t)g->bytes_done, SEEK_SET) < 0) return qt_error(QT_ERR_IO, "%s: cannot seek", g->data_path);
    json_t *ts = json_object_get(g->state, "tensors");
    uint64_t bytes = g->bytes_done;
    for (int32_t i = 0; i < n && s == QT_OK; i++) {
        s = write_all(g->fd, given[idx[i]], (size_t)p->tensors[idx[i]].bytes, g->data_path);
        json_array_append_new(ts, json_pack("[i, I]", idx[i], (json_int_t)p->tensors[idx[i]].bytes));
        bytes += p->tensors[idx[i]].bytes;
    }
    if (s == QT_OK && fdatasync(g->fd) != 0) s = qt_error(QT_ERR_IO, "%s: cannot sync: %s", g->data_path, strerror(errno));
    if (s != QT_OK) return s;
    const qt__layer_commit c = {k_amax, v_amax, n_amax, kv_tokens, r, n_rtn};
    return qt__layer_state_commit(g->state, g->state_path, &c, &g->layers_done, &g->bytes_done, bytes);
}

void qt__gptq_state_close(qt__gptq_state *g, qt_status s, bool *kept) {
    if (kept) *kept = false;
    if (!g) return;
    if (g->fd >= 0) close(g->fd);
    const bool keep = g->keep && s != QT_OK && g->layers_done > 0;
    if (!keep && g->owned) {
        if (g->state_path) unlink(g->state_path);
        if (g->data_path) unlink(g->data_path);
    }
    if (kept) *kept = keep;
    json_decref(g->state);
    free(g->data_path);
    free(g->state_path);
    free(g);
}
