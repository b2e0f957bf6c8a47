/* lib/quantize/resume.c — OUT.partial and its state file: what lets an
 * interrupted `quanta quantize` continue (docs/quantize.md, "Staging and
 * resume").
 *
 * The GGUF layout is fixed before the first byte is written (the plan gives
 * every tensor's offset), so a run can restart at any tensor boundary: keep
 * the bytes of the tensors complete, cut the rest, write on. The state file
 * OUT.partial.state (JSON) says how far the staging file is complete and for
 * what: the input's identity, every option that shapes the bytes, the file
 * size the plan predicts, tensors and bytes complete, and the error measured
 * for each tensor so far. It is rewritten atomically after each tensor, and
 * only once that tensor's bytes are synced: whatever a kill -9 leaves, the
 * state never claims more than the disk holds (a tensor written after the
 * last update is simply redone). A resumed run also compares the header it
 * would write with the staging file's, so a partial that is not this run's
 * is refused even if its state file looks right.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/strbuf.h"
#include "io/io_internal.h"
#include "quantize_internal.h"

#define STATE_FORMAT 1
#define HEAD_BYTES ((size_t)1 << 20) /* the input's first MiB is hashed: its header, and more */

static char *cat(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 1;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s", a, b);
    return s;
}

static json_int_t mtime_ns(const struct stat *st) {
    return (json_int_t)st->st_mtim.tv_sec * 1000000000 + (json_int_t)st->st_mtim.tv_nsec;
}

/* SHA-256 of a file's first HEAD_BYTES bytes. */
static qt_status head_sha256(const char *path, char hex[65]) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return qt_error(QT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    uint8_t *buf = malloc(HEAD_BYTES);
    size_t n = 0;
    while (buf && n < HEAD_BYTES) {
        ssize_t r = read(fd, buf + n, HEAD_BYTES - n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
    }
    close(fd);
    if (!buf) return qt_error(QT_ERR_NOMEM, "out of memory");
    qt_sha256_hex(buf, n, hex);
    free(buf);
    return QT_OK;
}

/* A directory input (Hugging Face): every regular file's name, size and mtime. */
static qt_status dir_listing_sha256(const char *dir, json_int_t *bytes, char hex[65]) {
    struct dirent **ents;
    int n = scandir(dir, &ents, NULL, alphasort);
    if (n < 0) return qt_error(QT_ERR_IO, "%s: cannot list: %s", dir, strerror(errno));
    qt__sbuf b = {0};
    *bytes = 0;
    for (int i = 0; i < n; i++) {
        char *p = cat(dir, "/");
        char *full = p ? cat(p, ents[i]->d_name) : NULL;
        struct stat st;
        if (full && stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
            qt__sb_printf(&b, "%s\t%lld\t%lld\n", ents[i]->d_name, (long long)st.st_size, (long long)mtime_ns(&st));
            *bytes += (json_int_t)st.st_size;
        }
        free(full);
        free(p);
        free(ents[i]);
    }
    free(ents);
    char *text;
    qt_status s = qt__sb_finish(&b, &text, dir);
    if (s != QT_OK) return s;
    qt_sha256_hex(text, strlen(text), hex);
    free(text);
    return QT_OK;
}

/* What the input is: a changed file (size, time or first MiB) is another input. */
qt_status qt__resume_input(const char *path, json_t **out) {
    struct stat st;
    if (stat(path, &st) != 0) return qt_error(QT_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    char hex[65];
    json_int_t bytes = (json_int_t)st.st_size;
    qt_status s = S_ISDIR(st.st_mode) ? dir_listing_sha256(path, &bytes, hex) : head_sha256(path, hex);
    if (s != QT_OK) return s;
    char *real = realpath(path, NULL);
    *out = json_pack("{s:s, s:I, s:I, s:s}", "path", real ? real : path, "bytes", bytes, "mtime_ns", mtime_ns(&st),
                     S_ISDIR(st.st_mode) ? "listing_sha256" : "head_sha256", hex);
    free(real);
    return *out ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
}

static json_t *type_or_null(qt_type t) { return t == QT_TYPE_COUNT ? json_null() : json_string(qt_type_get(t)->name); }

/* Every option that shapes the output's bytes, by its CLI name. */
static json_t *options_json(const qt_quantize_opts *o, const qt_quantize_plan *p) {
    json_t *tt = json_array(), *keep = json_array();
    for (int32_t i = 0; i < o->n_overrides; i++) {
        char *x = cat(o->overrides[i].pattern, "=");
        char *y = x ? cat(x, qt_type_get(o->overrides[i].type)->name) : NULL;
        json_array_append_new(tt, json_string(y ? y : ""));
        free(x);
        free(y);
    }
    for (int32_t i = 0; i < o->n_keep; i++) json_array_append_new(keep, json_string(o->keep[i]));
    return json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:b, s:b, s:b, s:s}", "scheme", p->ftype->name, "imatrix_sha256",
                     p->imatrix_sha256, "tensor-type", tt, "keep", keep, "output-tensor-type", type_or_null(o->output_type),
                     "token-embedding-type", type_or_null(o->embd_type), "pure", o->pure, "leave-output-tensor",
                     o->leave_output, "allow-requantize", o->allow_requantize, "command_line",
                     o->command_line ? o->command_line : "");
}

/* The state of a run before any progress: what a resume must match. */
qt_status qt__resume_identity(const qt_model *m, const qt_quantize_opts *o, const qt_quantize_plan *p, json_t **out) {
    json_t *in;
    qt_status s = qt__resume_input(qt_model_path(m), &in);
    if (s != QT_OK) return s;
    *out = json_pack("{s:i, s:s, s:o, s:o, s:I, s:i, s:I, s:[]}", "quanta_quantize_state", STATE_FORMAT, "quanta_version",
                     qt_version(), "input", in, "options", options_json(o, p), "output_bytes",
                     (json_int_t)p->output_bytes, "tensors_done", 0, "bytes_done", (json_int_t)0, "measured");
    return *out ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
}

static qt_status state_format(const char *path, const json_t *st) {
    json_t *v = json_object_get(st, "quanta_quantize_state");
    if (!json_is_integer(v) || json_integer_value(v) != STATE_FORMAT)
        return qt_error(QT_ERR_FORMAT, "%s: field 'quanta_quantize_state': not a quanta quantize state file (format %d)",
                        path, STATE_FORMAT);
    return QT_OK;
}

/* The first difference between the saved run and this one, as a message. */
qt_status qt__resume_match(const char *path, json_t *saved, json_t *now) {
    json_t *si = json_object_get(saved, "input"), *ni = json_object_get(now, "input");
    if (!json_equal(si, ni))
        return qt_error(QT_ERR_ARG, "--resume: %s: the input is not the interrupted run's (%s, %lld bytes, its size, time "
                        "or content changed): run without --resume to start again", path,
                        json_is_string(json_object_get(si, "path")) ? json_string_value(json_object_get(si, "path")) : "?",
                        (long long)json_integer_value(json_object_get(si, "bytes")));
    json_t *so = json_object_get(saved, "options"), *no = json_object_get(now, "options");
    const char *key;
    json_t *nv;
    json_object_foreach(no, key, nv) {
        json_t *sv = json_object_get(so, key);
        if (sv && json_equal(sv, nv)) continue;
        char *a = sv ? json_dumps(sv, JSON_ENCODE_ANY | JSON_COMPACT) : NULL, *b = json_dumps(nv, JSON_ENCODE_ANY | JSON_COMPACT);
        qt_status s = qt_error(QT_ERR_ARG, "--resume: %s: %s was %.200s in the interrupted run, %.200s now: resume with "
                               "the same options, or run without --resume to start again", path,
                               !strcmp(key, "command_line") ? "the command line" : key, a ? a : "absent", b ? b : "?");
        free(a);
        free(b);
        return s;
    }
    json_t *sb = json_object_get(saved, "output_bytes"), *nb = json_object_get(now, "output_bytes");
    if (!json_equal(sb, nb))
        return qt_error(QT_ERR_ARG, "--resume: %s: the output would have %lld bytes, the interrupted run's %lld (another "
                        "quanta version?): run without --resume", path, (long long)json_integer_value(nb),
                        (long long)json_integer_value(sb));
    return QT_OK;
}

/* One entry of 'measured': null (copied as stored) or [rmse, snr_db or null]. */
static bool measured_entry(const json_t *e, qt_quantize_tensor *q) {
    if (json_is_null(e)) return true;
    json_t *r = json_array_get(e, 0), *snr = json_array_get(e, 1);
    if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_number(r) || !(json_is_number(snr) || json_is_null(snr)))
        return false;
    q->measured = true;
    q->rmse = json_number_value(r);
    q->snr_db = json_is_number(snr) ? json_number_value(snr) : INFINITY;
    return true;
}

/* The tensors_done / bytes_done / measured of a saved state, checked. */
static qt_status state_progress(const char *path, json_t *st, qt_quantize_plan *p, int32_t *tensors, uint64_t *bytes) {
    json_t *td = json_object_get(st, "tensors_done"), *bd = json_object_get(st, "bytes_done");
    json_t *ms = json_object_get(st, "measured");
    if (!json_is_integer(td) || !json_is_integer(bd) || !json_is_array(ms) || json_integer_value(td) < 0 ||
        json_integer_value(bd) <= 0 || json_integer_value(bd) > (json_int_t)p->output_bytes ||
        json_integer_value(td) > p->n_tensors + 1 ||
        json_array_size(ms) != (size_t)(json_integer_value(td) < p->n_tensors ? json_integer_value(td) : p->n_tensors))
        return qt_error(QT_ERR_FORMAT, "%s: fields 'tensors_done', 'bytes_done', 'measured': missing, inconsistent or out "
                        "of range", path);
    for (size_t i = 0; i < json_array_size(ms); i++)
        if (!measured_entry(json_array_get(ms, i), &p->tensors[i]))
            return qt_error(QT_ERR_FORMAT, "%s: field 'measured[%zu]': not null nor [rmse, snr_db]", path, i);
    *tensors = (int32_t)json_integer_value(td);
    *bytes = (uint64_t)json_integer_value(bd);
    return QT_OK;
}

qt_status qt__resume_state_check(const char *path, const char *text, size_t len, json_t *now, qt_quantize_plan *p,
                                 int32_t *tensors, uint64_t *bytes) {
    json_error_t err;
    json_t *st = json_loadb(text, len, 0, &err);
    if (!st) return qt_error(QT_ERR_FORMAT, "%s: line %d: %s", path, err.line, err.text);
    qt_status s = json_is_object(st) ? state_format(path, st) : qt_error(QT_ERR_FORMAT, "%s: not a JSON object", path);
    if (s == QT_OK) s = qt__resume_match(path, st, now);
    if (s == QT_OK) s = state_progress(path, st, p, tensors, bytes);
    json_decref(st);
    return s;
}

static qt_status resume_load(qt__resume *r, const qt_model *m, const qt_quantize_opts *o, qt_quantize_plan *p) {
    if (access(r->state_path, F_OK) != 0)
        return qt_error(QT_ERR_ARG, "--resume: %s: no state file, so nothing to resume (run without --resume to start "
                        "again)", r->state_path);
    if (access(r->stage.path, F_OK) != 0)
        return qt_error(QT_ERR_ARG, "--resume: %s: missing, so nothing to resume (run without --resume to start again)",
                        r->stage.path);
    char *text = NULL;
    size_t len = 0;
    qt_status s = qt_read_file(r->state_path, &text, &len);
    if (s == QT_OK) s = qt__resume_identity(m, o, p, &r->state);
    if (s == QT_OK) s = qt__resume_state_check(r->state_path, text, len, r->state, p, &r->resume_tensors, &r->stage.resume_at);
    free(text);
    if (s == QT_OK) p->n_resumed = r->n_done = r->resume_tensors;
    return s;
}

qt_status qt__resume_begin(qt__resume *r, const qt_model *m, const char *out, const qt_quantize_opts *o,
                           qt_quantize_plan *p) {
    memset(r, 0, sizeof *r);
    struct stat st;
    r->staged = strcmp(out, "-") != 0 && (stat(out, &st) != 0 || S_ISREG(st.st_mode));
    const bool keep = o->resumable || o->resume;
    if (!r->staged)
        return keep ? qt_error(QT_ERR_ARG, "%s: --resumable and --resume need OUT to be a file", out) : QT_OK;
    char *partial = cat(out, QT_QUANTIZE_PARTIAL_SUFFIX);
    r->state_path = cat(out, QT_QUANTIZE_STATE_SUFFIX);
    r->stage.path = partial;
    r->stage.keep = keep;
    if (!partial || !r->state_path) return qt_error(QT_ERR_NOMEM, "out of memory");
    qt_status s = QT_OK;
    if (o->resume) {
        s = resume_load(r, m, o, p);
    } else if (unlink(r->state_path) != 0 && errno != ENOENT) { /* a stale state must never describe a new partial */
        s = qt_error(QT_ERR_IO, "%s: cannot remove: %s", r->state_path, strerror(errno));
    } else if (keep) {
        s = qt__resume_identity(m, o, p, &r->state);
    }
    r->started = s == QT_OK;
    return s;
}

/* Rewritten atomically, after the staging file's first `bytes` are synced. */
qt_status qt__resume_checkpoint(qt__resume *r, const qt_quantize_plan *p, int32_t n_done, uint64_t bytes) {
    r->n_done = n_done;
    if (!r->state) return QT_OK;
    json_t *ms = json_array();
    for (int32_t i = 0; i < n_done && i < p->n_tensors; i++) {
        const qt_quantize_tensor *q = &p->tensors[i];
        json_array_append_new(ms, !q->measured ? json_null()
                                               : json_pack("[f, o]", q->rmse, isfinite(q->snr_db) ? json_real(q->snr_db)
                                                                                                   : json_null()));
    }
    json_object_set_new(r->state, "tensors_done", json_integer(n_done));
    json_object_set_new(r->state, "bytes_done", json_integer((json_int_t)bytes));
    json_object_set_new(r->state, "measured", ms);
    const qt_status s = qt__json_write_atomic(r->state_path, r->state, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (s == QT_OK) r->state_written = true;
    return s;
}

void qt__resume_end(qt__resume *r, qt_status s, qt_quantize_plan *p) {
    p->n_done = r->n_done;
    if (r->staged && s == QT_OK) {
        unlink(r->state_path);
    } else if (r->started && r->stage.keep) {
        /* Kept only when a state says what it holds; a partial without one cannot be resumed. */
        const bool state = r->state_written || access(r->state_path, F_OK) == 0;
        if (!state) unlink(r->stage.path);
        p->partial_kept = state && access(r->stage.path, F_OK) == 0;
    }
    json_decref(r->state);
    free((char *)r->stage.path);
    free(r->state_path);
    memset(r, 0, sizeof *r);
}

static qt_status clear_one(const char *path, bool *removed) {
    struct stat st;
    if (lstat(path, &st) != 0) return QT_OK;
    if (S_ISDIR(st.st_mode)) { /* a compressed-tensors run's staging directory */
        qt_status s = qt__remove_stage_dir(path);
        if (s == QT_OK) *removed = true;
        return s;
    }
    if (unlink(path) != 0) return qt_error(QT_ERR_IO, "%s: cannot remove: %s", path, strerror(errno));
    *removed = true;
    return QT_OK;
}

qt_status qt_quantize_clear_partial(const char *out_path, bool *removed) {
    *removed = false;
    static const char *const suffixes[] = {QT_QUANTIZE_PARTIAL_SUFFIX, QT_QUANTIZE_STATE_SUFFIX, QT_QUANTIZE_LAYERS_SUFFIX,
                                           QT_QUANTIZE_LAYERS_STATE_SUFFIX};
    qt_status s = QT_OK;
    for (size_t i = 0; s == QT_OK && i < sizeof suffixes / sizeof suffixes[0]; i++) {
        char *path = cat(out_path, suffixes[i]);
        s = path ? clear_one(path, removed) : qt_error(QT_ERR_NOMEM, "out of memory");
        free(path);
    }
    return s;
}

/* ---- one writer per OUT -------------------------------------------------------------- */

struct qt_quantize_lock {
    int fd;
    char *path;
};

/* Locked, and still the file at `path`: a run that unlocked and removed it
 * between our open and our flock leaves us holding a removed inode; then
 * open again. */
static qt_status lock_open(const char *path, int *fd_out) {
    for (int tries = 0; tries < 100; tries++) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0) return qt_error(QT_ERR_IO, "%s: cannot create the lock file: %s", path, strerror(errno));
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            const int e = errno;
            close(fd);
            if (e == EWOULDBLOCK)
                return qt_error(QT_ERR_IO, "%s is locked: another quanta quantize is writing the same output now; wait "
                                "for it to finish or stop it (two runs would overwrite each other's staging files)", path);
            return qt_error(QT_ERR_IO, "%s: cannot lock: %s", path, strerror(e));
        }
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
            *fd_out = fd;
            return QT_OK;
        }
        close(fd);
    }
    return qt_error(QT_ERR_IO, "%s: cannot lock: the file keeps being replaced", path);
}

qt_status qt_quantize_lock_take(const char *out_path, qt_quantize_lock **out) {
    *out = NULL;
    qt_quantize_lock *l = calloc(1, sizeof *l);
    if (!l || !(l->path = cat(out_path, QT_QUANTIZE_LOCK_SUFFIX))) {
        free(l);
        return qt_error(QT_ERR_NOMEM, "out of memory");
    }
    qt_status s = lock_open(l->path, &l->fd);
    if (s != QT_OK) {
        free(l->path);
        free(l);
        return s;
    }
    *out = l;
    return QT_OK;
}

void qt_quantize_unlock(qt_quantize_lock *l) {
    if (!l) return;
    unlink(l->path); /* while still locked: a waiting run then finds a removed inode and reopens */
    close(l->fd);
    free(l->path);
    free(l);
}
