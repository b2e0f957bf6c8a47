/* lib/io/ct_resume.c — OUT.partial.state of a resumable compressed-tensors run
 * (ct_resume.h; docs/quantize.md "Staging and resume").
 *
 * A compressed-tensors output is a directory of shards and small text files.
 * Its layout is fixed before the first byte (the shard plan and every
 * shard's safetensors header), so a run can restart at any stored tensor:
 * shards already complete are kept as they are, the shard being written is
 * cut back to its last complete tensor and continued, and the text files are
 * written again at the end. The state says how far the staging directory is
 * complete and for what (the same input identity as a GGUF run's state, and
 * every option that shapes the bytes); it is rewritten atomically after each
 * stored tensor, once that tensor's bytes are synced, so it never claims more
 * than the disk holds. */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct_resume.h"
#include "io_internal.h"
#include "quanta/quantize.h"
#include "quantize/quantize_internal.h"

#define CT_STATE_FORMAT 1

static qt_status bad(const char *path, const char *what) {
    return qt_error(QT_ERR_FORMAT, "%s: field '%s': missing, inconsistent or out of range", path, what);
}

static qt_status state_format(const char *path, json_t *st) {
    json_t *f = json_object_get(st, "quanta_quantize_state"), *out = json_object_get(st, "output");
    if (!json_is_integer(f) || json_integer_value(f) != CT_STATE_FORMAT || !json_is_string(out) ||
        strcmp(json_string_value(out), "compressed-tensors"))
        return qt_error(QT_ERR_FORMAT, "%s: field 'quanta_quantize_state': not the state file of a compressed-tensors "
                        "quanta quantize run (format %d)", path, CT_STATE_FORMAT);
    return QT_OK;
}

/* The progress of a saved state (one that matched this run's identity), checked. */
static qt_status progress_load(const char *path, json_t *st, int32_t n_shards, qt__ct_progress *at) {
    json_t *sd = json_object_get(st, "shards_done"), *sb = json_object_get(st, "shard_bytes");
    json_t *stt = json_object_get(st, "shard_tensors"), *sa = json_object_get(st, "shard_at");
    json_t *td = json_object_get(st, "tensors_done");
    if (!json_is_integer(sd) || json_integer_value(sd) < 0 || json_integer_value(sd) > n_shards) return bad(path, "shards_done");
    if (!json_is_array(sb) || json_array_size(sb) != (size_t)json_integer_value(sd)) return bad(path, "shard_bytes");
    json_t *ns = json_object_get(st, "stored_tensors");
    if (!json_is_integer(ns) || json_integer_value(ns) < 1 || json_integer_value(ns) > INT32_MAX) return bad(path, "stored_tensors");
    if (!json_is_integer(stt) || json_integer_value(stt) < 0 || json_integer_value(stt) > json_integer_value(ns) ||
        (json_integer_value(sd) == n_shards && json_integer_value(stt) != 0))
        return bad(path, "shard_tensors");
    if (!json_is_integer(sa) || json_integer_value(sa) < 0 || (json_integer_value(sa) == 0) != (json_integer_value(stt) == 0))
        return bad(path, "shard_at");
    if (!json_is_integer(td) || json_integer_value(td) < json_integer_value(stt) || !json_is_integer(ns) ||
        json_integer_value(td) > json_integer_value(ns))
        return bad(path, "tensors_done");
    at->shards_done = (int32_t)json_integer_value(sd);
    for (size_t i = 0; i < json_array_size(sb); i++) {
        json_t *b = json_array_get(sb, i);
        if (!json_is_integer(b) || json_integer_value(b) <= 0) return bad(path, "shard_bytes");
        at->shard_bytes[i] = (uint64_t)json_integer_value(b);
    }
    at->shard_tensors = (int32_t)json_integer_value(stt);
    at->shard_at = (uint64_t)json_integer_value(sa);
    at->tensors_done = (int32_t)json_integer_value(td);
    return QT_OK;
}

qt_status qt__ct_resume_state_check(const char *path, const char *text, size_t len, json_t *now, int32_t n_shards,
                                    qt__ct_progress *at) {
    json_error_t err;
    json_t *st = json_loadb(text, len, 0, &err);
    if (!st) return qt_error(QT_ERR_FORMAT, "%s: line %d: %s", path, err.line, err.text);
    qt_status s = json_is_object(st) ? state_format(path, st) : qt_error(QT_ERR_FORMAT, "%s: not a JSON object", path);
    if (s == QT_OK) s = qt__resume_match(path, st, now);
    if (s == QT_OK && (!json_equal(json_object_get(st, "shards"), json_object_get(now, "shards")) ||
                       !json_equal(json_object_get(st, "stored_tensors"), json_object_get(now, "stored_tensors"))))
        s = qt_error(QT_ERR_ARG, "--resume: %s: the interrupted run planned other shards or stored tensors (another "
                     "quanta version?): run without --resume to start again", path);
    if (s == QT_OK) s = progress_load(path, st, n_shards, at);
    json_decref(st);
    return s;
}

static qt_status load(qt__ct_resume *r, json_t *now) {
    if (access(r->state_path, F_OK) != 0)
        return qt_error(QT_ERR_ARG, "--resume: %s: no state file, so nothing to resume (run without --resume to start "
                        "again)", r->state_path);
    char *text = NULL;
    size_t len = 0;
    qt_status s = qt_read_file(r->state_path, &text, &len);
    if (s == QT_OK) s = qt__ct_resume_state_check(r->state_path, text, len, now, r->n_shards, &r->at);
    free(text);
    return s;
}

qt_status qt__ct_resume_begin(qt__ct_resume *r, const qt_model *m, const char *out, bool resume, json_t *options,
                              uint64_t output_bytes, int32_t n_shards, int32_t n_stored) {
    memset(r, 0, sizeof *r);
    r->n_shards = n_shards;
    r->resume = resume;
    r->at.shard_bytes = calloc((size_t)n_shards + 1, sizeof *r->at.shard_bytes);
    r->state_path = malloc(strlen(out) + sizeof QT_QUANTIZE_STATE_SUFFIX);
    if (!r->at.shard_bytes || !r->state_path) {
        json_decref(options);
        return qt_error(QT_ERR_NOMEM, "out of memory");
    }
    sprintf(r->state_path, "%s%s", out, QT_QUANTIZE_STATE_SUFFIX);
    json_t *in;
    qt_status s = qt__resume_input(qt_model_path(m), &in);
    if (s != QT_OK) {
        json_decref(options);
        return s;
    }
    r->state = json_pack("{s:i, s:s, s:s, s:o, s:o, s:I, s:i, s:i}", "quanta_quantize_state", CT_STATE_FORMAT, "output",
                         "compressed-tensors", "quanta_version", qt_version(), "input", in, "options", options,
                         "output_bytes", (json_int_t)output_bytes, "shards", n_shards, "stored_tensors", n_stored);
    if (!r->state) return qt_error(QT_ERR_NOMEM, "out of memory");
    if (resume) {
        s = load(r, r->state);
        r->resumed = r->at.tensors_done;
    } else if (unlink(r->state_path) != 0 && errno != ENOENT) { /* a stale state must never describe a new partial */
        s = qt_error(QT_ERR_IO, "%s: cannot remove: %s", r->state_path, strerror(errno));
    }
    return s;
}

qt_status qt__ct_resume_checkpoint(qt__ct_resume *r) {
    json_t *sb = json_array();
    for (int32_t i = 0; i < r->at.shards_done; i++) json_array_append_new(sb, json_integer((json_int_t)r->at.shard_bytes[i]));
    json_object_set_new(r->state, "shards_done", json_integer(r->at.shards_done));
    json_object_set_new(r->state, "shard_bytes", sb);
    json_object_set_new(r->state, "shard_tensors", json_integer(r->at.shard_tensors));
    json_object_set_new(r->state, "shard_at", json_integer((json_int_t)r->at.shard_at));
    json_object_set_new(r->state, "tensors_done", json_integer(r->at.tensors_done));
    const qt_status s = qt__json_write_atomic(r->state_path, r->state, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (s == QT_OK) r->state_written = true;
    return s;
}

void qt__ct_resume_end(qt__ct_resume *r, qt_status s, bool *kept) {
    *kept = false;
    if (s == QT_OK) unlink(r->state_path);
    else *kept = r->state_written || r->resume; /* a refused resume touches nothing */
    json_decref(r->state);
    free(r->state_path);
    free(r->at.shard_bytes);
    memset(r, 0, sizeof *r);
}
