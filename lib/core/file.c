/* lib/core/file.c — read-only mmap, whole-file reads, atomic writes.
 *
 * Atomic writes follow the classic recipe: create "<dir>/.<name>.XXXXXX" in the
 * destination directory (so rename(2) never crosses a filesystem), write,
 * fsync the file, rename over the target, fsync the directory. Any failure
 * unlinks the temporary file, so a full disk or Ctrl-C never leaves a
 * half-written output under the real name, and the temporary-file table lets
 * a signal handler remove what a process killed mid-write would leave.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quanta/core.h"

qt_status qt_mmap_open(const char *path, qt_mmap *out) {
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return qt_error(QT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return qt_error(QT_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return qt_error(QT_ERR_IO, "%s: not a regular file", path);
    }
    out->path = strdup(path);
    if (!out->path) { close(fd); return qt_error(QT_ERR_NOMEM, "%s: out of memory", path); }
    out->size = (size_t)st.st_size;
    if (out->size > 0) {
        void *p = mmap(NULL, out->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            free(out->path);
            memset(out, 0, sizeof *out);
            return qt_error(QT_ERR_IO, "%s: cannot mmap: %s", path, strerror(e));
        }
        out->data = p;
    }
    close(fd);
    return QT_OK;
}

void qt_mmap_close(qt_mmap *m) {
    if (!m) return;
    if (m->data) munmap((void *)m->data, m->size);
    free(m->path);
    memset(m, 0, sizeof *m);
}

qt_status qt_read_file(const char *path, char **out, size_t *size) {
    *out = NULL;
    if (size) *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return qt_error(QT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) { fclose(f); return qt_error(QT_ERR_NOMEM, "%s: out of memory", path); }
    for (;;) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        char *nb = realloc(buf, cap * 2 + 1);
        if (!nb) { free(buf); fclose(f); return qt_error(QT_ERR_NOMEM, "%s: out of memory", path); }
        buf = nb;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (err) { free(buf); return qt_error(QT_ERR_IO, "%s: read error", path); }
    buf[n] = '\0';
    *out = buf;
    if (size) *size = n;
    return QT_OK;
}

/* ---- the output rule -------------------------------------------------------
 * Every writer (GGUF, safetensors/HF directories, SVG, HTML, JSON) opens its
 * output here, so one rule holds everywhere (docs/architecture.md):
 *   "-"                      standard output, written in place;
 *   a missing or regular file a temporary "<dir>/.<name>.XXXXXX" beside it,
 *                            fsynced and renamed over it (its mode is kept);
 *   a symlink                resolved; its target is what gets replaced;
 *   a device, FIFO, socket   opened and written in place, never replaced;
 *   a directory              refused (HF output is a directory: hf_write.c).
 * Live temporaries sit in a fixed table that qt_afile_cleanup() empties with
 * unlink(2) only, so a signal handler or atexit can run it. */

enum { AFILE_SLOTS = 64 };
static struct {
    volatile sig_atomic_t used;
    char path[PATH_MAX];
} temp_slots[AFILE_SLOTS];
static pthread_mutex_t temp_lock = PTHREAD_MUTEX_INITIALIZER;

static int temp_register(const char *path) {
    if (strlen(path) >= PATH_MAX) return -1;
    pthread_mutex_lock(&temp_lock);
    int slot = -1;
    for (int i = 0; i < AFILE_SLOTS && slot < 0; i++)
        if (!temp_slots[i].used) slot = i;
    if (slot >= 0) {
        memcpy(temp_slots[slot].path, path, strlen(path) + 1);
        __atomic_store_n(&temp_slots[slot].used, 1, __ATOMIC_SEQ_CST); /* published after the name */
    }
    pthread_mutex_unlock(&temp_lock);
    return slot;
}

/* Frees slot if it still holds tmp (qt_afile_cleanup may have emptied it and
 * another file taken it since). */
static void temp_release(int slot, const char *tmp) {
    if (slot < 0 || !tmp) return;
    pthread_mutex_lock(&temp_lock);
    if (temp_slots[slot].used && !strcmp(temp_slots[slot].path, tmp))
        __atomic_store_n(&temp_slots[slot].used, 0, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&temp_lock);
}

void qt_afile_cleanup(void) {
    for (int i = 0; i < AFILE_SLOTS; i++)
        if (__atomic_load_n(&temp_slots[i].used, __ATOMIC_SEQ_CST)) {
            unlink(temp_slots[i].path);
            temp_slots[i].used = 0;
        }
}

int qt_afile_live_temps(void) {
    int n = 0;
    for (int i = 0; i < AFILE_SLOTS; i++) n += temp_slots[i].used != 0;
    return n;
}

typedef enum { AFILE_REPLACE, AFILE_IN_PLACE, AFILE_STDOUT } afile_mode;

struct qt_afile {
    int fd;
    afile_mode mode;
    int slot;        /* temp_slots index of tmp; -1 when none */
    uint64_t written;
    char *path;      /* the name the caller gave, for messages */
    char *target;    /* what gets replaced: path with symlinks resolved */
    char *tmp;       /* temporary name in target's directory (AFILE_REPLACE) */
    bool staged;     /* tmp is the caller's staging name (qt_afile_open_staged): messages name it */
};

static void afile_free(qt_afile *f) {
    free(f->tmp);
    free(f->target);
    free(f->path);
    free(f);
}

/* The file a name stands for once symlinks are followed, also when the last
 * link dangles (its target is then created). Heap string, or NULL with errno. */
static char *resolve_target(const char *path) {
    char *real = realpath(path, NULL);
    if (real) return real;
    if (errno != ENOENT) return NULL;
    char cur[PATH_MAX];
    snprintf(cur, sizeof cur, "%s", path);
    for (int hops = 0; hops < 40; hops++) {
        struct stat ls;
        if (lstat(cur, &ls) != 0 || !S_ISLNK(ls.st_mode)) return strdup(cur); /* a new file */
        char link[PATH_MAX];
        ssize_t n = readlink(cur, link, sizeof link - 1);
        if (n < 0) return NULL;
        link[n] = '\0';
        if (link[0] == '/') {
            snprintf(cur, sizeof cur, "%s", link);
        } else {
            char dir[PATH_MAX], *slash;
            snprintf(dir, sizeof dir, "%s", cur);
            slash = strrchr(dir, '/');
            if (slash) slash[1] = '\0';
            else dir[0] = '\0';
            if ((size_t)snprintf(cur, sizeof cur, "%s%s", dir, link) >= sizeof cur) { errno = ENAMETOOLONG; return NULL; }
        }
    }
    errno = ELOOP;
    return NULL;
}

static qt_status open_in_place(qt_afile *f) {
    f->fd = open(f->path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (f->fd < 0) return qt_error(QT_ERR_IO, "%s: cannot open for writing: %s", f->path, strerror(errno));
    return QT_OK;
}

static qt_status open_temp(qt_afile *f, mode_t mode) {
    char *dcopy = strdup(f->target), *bcopy = strdup(f->target);
    if (!dcopy || !bcopy) { free(dcopy); free(bcopy); return qt_error(QT_ERR_NOMEM, "%s: out of memory", f->path); }
    const char *dir = dirname(dcopy), *base = basename(bcopy);
    size_t len = strlen(dir) + strlen(base) + 16;
    if ((f->tmp = malloc(len))) snprintf(f->tmp, len, "%s/.%s.XXXXXX", dir, base);
    free(dcopy);
    free(bcopy);
    if (!f->tmp) return qt_error(QT_ERR_NOMEM, "%s: out of memory", f->path);
    /* Created and registered with signals blocked: no handler can run between
     * the two and miss the file. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    f->fd = mkostemp(f->tmp, O_CLOEXEC);
    int e = errno;
    if (f->fd >= 0 && (f->slot = temp_register(f->tmp)) < 0) {
        unlink(f->tmp);
        close(f->fd);
        f->fd = -1;
        e = EMFILE;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (f->fd < 0) {
        free(f->tmp);
        f->tmp = NULL;
        if (e == EMFILE) return qt_error(QT_ERR_IO, "%s: too many outputs open at once (at most %d)", f->path, AFILE_SLOTS);
        return qt_error(QT_ERR_IO, "%s: cannot create temporary file: %s", f->path, strerror(e));
    }
    fchmod(f->fd, mode);
    return QT_OK;
}

/* A new handle for `path`, nothing opened yet. */
static qt_status afile_new(const char *path, qt_afile **out) {
    *out = NULL;
    if (!path || !*path) return qt_error(QT_ERR_ARG, "output path is empty");
    qt_afile *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
    }
    f->fd = -1;
    f->slot = -1;
    *out = f;
    return QT_OK;
}

qt_status qt_afile_open(const char *path, qt_afile **out) {
    qt_afile *f;
    qt_status s = afile_new(path, &f);
    *out = NULL;
    if (s != QT_OK) return s;
    struct stat st;
    const bool exists = stat(path, &st) == 0;
    if (!strcmp(path, "-")) {
        fflush(stdout); /* keep the order of anything the caller printed before */
        f->mode = AFILE_STDOUT;
        f->fd = STDOUT_FILENO;
    } else if (exists && S_ISDIR(st.st_mode)) {
        s = qt_error(QT_ERR_IO, "%s: is a directory", path);
    } else if (exists && !S_ISREG(st.st_mode)) {
        f->mode = AFILE_IN_PLACE; /* /dev/null, a FIFO, /dev/stdout: written, never replaced */
        s = open_in_place(f);
    } else if (!(f->target = resolve_target(path))) {
        s = qt_error(QT_ERR_IO, "%s: cannot resolve: %s", path, strerror(errno));
    } else {
        f->mode = AFILE_REPLACE;
        mode_t mode = exists ? (st.st_mode & 07777) : 0644;
        s = open_temp(f, mode);
    }
    if (s != QT_OK) {
        qt_afile_abort(f);
        return s;
    }
    *out = f;
    return QT_OK;
}

/* The staging file of qt_afile_open_staged: created (or reopened and cut to
 * resume_at) and, unless kept, registered, with signals blocked as in
 * open_temp. */
static qt_status open_stage(qt_afile *f, const qt_afile_stage *st, mode_t mode) {
    if (!(f->tmp = strdup(st->path))) return qt_error(QT_ERR_NOMEM, "%s: out of memory", f->path);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    f->fd = open(f->tmp, O_RDWR | O_CLOEXEC | O_NOCTTY | (st->resume_at ? 0 : O_CREAT | O_TRUNC), 0600);
    int e = errno;
    if (f->fd >= 0 && !st->keep && (f->slot = temp_register(f->tmp)) < 0) {
        if (!st->resume_at) unlink(f->tmp);
        close(f->fd);
        f->fd = -1;
        e = EMFILE;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (f->fd < 0) {
        if (e == EMFILE) return qt_error(QT_ERR_IO, "%s: too many outputs open at once (at most %d)", f->path, AFILE_SLOTS);
        return qt_error(QT_ERR_IO, "%s: cannot %s: %s", f->tmp, st->resume_at ? "reopen to resume" : "create", strerror(e));
    }
    if (!st->resume_at) { fchmod(f->fd, mode); return QT_OK; }
    struct stat sb;
    if (fstat(f->fd, &sb) != 0) return qt_error(QT_ERR_IO, "%s: cannot stat: %s", f->tmp, strerror(errno));
    if ((uint64_t)sb.st_size < st->resume_at)
        return qt_error(QT_ERR_IO, "%s: has %llu bytes, fewer than the %llu recorded as complete", f->tmp,
                        (unsigned long long)sb.st_size, (unsigned long long)st->resume_at);
    /* What was written after the last complete piece (a kill -9 mid-tensor) is cut off and redone. */
    if (ftruncate(f->fd, (off_t)st->resume_at) != 0 || lseek(f->fd, (off_t)st->resume_at, SEEK_SET) < 0)
        return qt_error(QT_ERR_IO, "%s: cannot cut to %llu bytes: %s", f->tmp, (unsigned long long)st->resume_at,
                        strerror(errno));
    f->written = st->resume_at;
    return QT_OK;
}

qt_status qt_afile_open_staged(const char *path, const qt_afile_stage *st, qt_afile **out) {
    *out = NULL;
    if (!st || !st->path || !*st->path) return qt_error(QT_ERR_ARG, "%s: no staging path", path ? path : "");
    struct stat sb;
    const bool exists = path && stat(path, &sb) == 0;
    if (path && (!strcmp(path, "-") || (exists && !S_ISREG(sb.st_mode))))
        return qt_error(QT_ERR_ARG, "%s: a staged (resumable) output must be a regular file", path);
    qt_afile *f;
    qt_status s = afile_new(path, &f);
    if (s != QT_OK) return s;
    f->mode = AFILE_REPLACE;
    f->staged = true;
    if (!(f->target = resolve_target(path))) s = qt_error(QT_ERR_IO, "%s: cannot resolve: %s", path, strerror(errno));
    else s = open_stage(f, st, exists ? (sb.st_mode & 07777) : 0644);
    if (s != QT_OK) {
        if (st->keep || st->resume_at) { /* never remove what an earlier run left: it may be resumed yet */
            if (f->fd >= 0) close(f->fd);
            afile_free(f);
        } else {
            qt_afile_abort(f);
        }
        return s;
    }
    *out = f;
    return QT_OK;
}

qt_status qt_afile_sync(qt_afile *f) {
    if (f->mode == AFILE_STDOUT) return QT_OK;
    if (fdatasync(f->fd) != 0) return qt_error(QT_ERR_IO, "%s: fdatasync failed: %s", f->staged ? f->tmp : f->path, strerror(errno));
    return QT_OK;
}

qt_status qt_afile_read_at(qt_afile *f, uint64_t off, void *buf, size_t n) {
    if (f->mode != AFILE_REPLACE) return qt_error(QT_ERR_IO, "%s: cannot read back what was written", f->path);
    uint8_t *p = buf;
    while (n > 0) {
        ssize_t r = pread(f->fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return qt_error(QT_ERR_IO, "%s: read failed: %s", f->tmp, strerror(errno));
        if (r == 0) return qt_error(QT_ERR_IO, "%s: shorter than expected (%llu bytes)", f->tmp, (unsigned long long)off);
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return QT_OK;
}

/* A write error, with what a full disk or a file-size limit means in words. */
static qt_status write_error(const qt_afile *f, int e) {
    const char *name = f->staged ? f->tmp : f->path;
    if (e == ENOSPC || e == EDQUOT)
        return qt_error(QT_ERR_IO, "%s: write failed after %llu bytes: %s (the file system is full: free space or "
                        "choose another output directory)", name, (unsigned long long)f->written, strerror(e));
    if (e == EFBIG)
        return qt_error(QT_ERR_IO, "%s: write failed after %llu bytes: %s (a file-size limit: ulimit -f, or the file "
                        "system's largest file)", name, (unsigned long long)f->written, strerror(e));
    return qt_error(QT_ERR_IO, "%s: write failed: %s", name, strerror(e));
}

qt_status qt_afile_write(qt_afile *f, const void *buf, size_t n) {
    const uint8_t *p = buf;
    while (n > 0) {
        if (qt_cancelled()) return qt_error(QT_ERR_INTERRUPTED, "%s: interrupted", f->path);
        /* 64 MiB per call: a cancel is seen within one such write */
        ssize_t w = write(f->fd, p, n > (64u << 20) ? (64u << 20) : n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return write_error(f, errno);
        }
        p += w;
        n -= (size_t)w;
        f->written += (uint64_t)w;
    }
    return QT_OK;
}

qt_status qt_afile_pad(qt_afile *f, size_t n, uint8_t byte) {
    uint8_t buf[256];
    memset(buf, byte, sizeof buf);
    while (n > 0) {
        size_t k = n < sizeof buf ? n : sizeof buf;
        qt_status s = qt_afile_write(f, buf, k);
        if (s != QT_OK) return s;
        n -= k;
    }
    return QT_OK;
}

uint64_t qt_afile_tell(const qt_afile *f) { return f->written; }

void qt_afile_abort(qt_afile *f) {
    if (!f) return;
    if (f->fd >= 0 && f->mode != AFILE_STDOUT) close(f->fd);
    if (f->tmp && f->slot >= 0) unlink(f->tmp);
    temp_release(f->slot, f->tmp);
    afile_free(f);
}

static qt_status commit_fail(qt_afile *f, qt_status s) {
    qt_afile_abort(f);
    return s;
}

qt_status qt_afile_commit(qt_afile *f) {
    if (f->mode != AFILE_REPLACE) {
        /* stdout, a device or a FIFO: the bytes are already there */
        int rc = f->mode == AFILE_IN_PLACE ? close(f->fd) : 0;
        f->fd = -1;
        if (rc != 0) return commit_fail(f, qt_error(QT_ERR_IO, "%s: close failed: %s", f->path, strerror(errno)));
        afile_free(f);
        return QT_OK;
    }
    if (qt_cancelled()) return commit_fail(f, qt_error(QT_ERR_INTERRUPTED, "%s: interrupted", f->path));
    if (fsync(f->fd) != 0) return commit_fail(f, qt_error(QT_ERR_IO, "%s: fsync failed: %s", f->path, strerror(errno)));
    /* fsync of a large file takes seconds: a Ctrl-C during it still means "leave nothing" */
    if (qt_cancelled()) return commit_fail(f, qt_error(QT_ERR_INTERRUPTED, "%s: interrupted", f->path));
    int rc = close(f->fd);
    f->fd = -1;
    if (rc != 0) return commit_fail(f, qt_error(QT_ERR_IO, "%s: close failed: %s", f->path, strerror(errno)));
    if (rename(f->tmp, f->target) != 0)
        return commit_fail(f, qt_error(QT_ERR_IO, "%s: rename from temporary file failed: %s", f->path, strerror(errno)));
    /* Released after the rename: a signal in between unlinks a name that no longer exists. */
    temp_release(f->slot, f->tmp);
    f->slot = -1;
    /* Make the rename itself durable. */
    char *dcopy = strdup(f->target);
    if (dcopy) {
        int dfd = open(dirname(dcopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) { fsync(dfd); close(dfd); }
        free(dcopy);
    }
    afile_free(f);
    return QT_OK;
}

qt_status qt_same_file(const char *a, const char *b, bool *same) {
    *same = false;
    struct stat sa, sb;
    if (stat(a, &sa) != 0 || stat(b, &sb) != 0) return QT_OK; /* a missing file is no other file */
    *same = sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    return QT_OK;
}
