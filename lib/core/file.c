/* lib/core/file.c — read-only mmap, whole-file reads, atomic writes.
 *
 * Atomic writes follow the classic recipe: create "<dir>/.<name>.XXXXXX" in the
 * destination directory (so rename(2) never crosses a filesystem), write,
 * fsync the file, rename over the target, fsync the directory. Any failure
 * unlinks the temporary file, so a crash, a full disk or Ctrl-C never leaves
 * a half-written output under the real name.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
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

struct qt_afile {
    int fd;
    uint64_t written;
    char *path;  /* final name */
    char *tmp;   /* temporary name in the same directory */
};

qt_status qt_afile_open(const char *path, qt_afile **out) {
    *out = NULL;
    qt_afile *f = calloc(1, sizeof *f);
    char *dcopy = strdup(path), *bcopy = strdup(path);
    if (!f || !dcopy || !bcopy) {
        free(f); free(dcopy); free(bcopy);
        return qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
    }
    const char *dir = dirname(dcopy), *base = basename(bcopy);
    size_t len = strlen(dir) + strlen(base) + 16;
    f->tmp = malloc(len);
    f->path = strdup(path);
    if (!f->tmp || !f->path) {
        free(f->tmp); free(f->path); free(f); free(dcopy); free(bcopy);
        return qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
    }
    snprintf(f->tmp, len, "%s/.%s.XXXXXX", dir, base);
    free(dcopy);
    free(bcopy);
    f->fd = mkostemp(f->tmp, O_CLOEXEC);
    if (f->fd < 0) {
        int e = errno;
        free(f->tmp); free(f->path); free(f);
        return qt_error(QT_ERR_IO, "%s: cannot create temporary file: %s", path, strerror(e));
    }
    fchmod(f->fd, 0644);
    *out = f;
    return QT_OK;
}

qt_status qt_afile_write(qt_afile *f, const void *buf, size_t n) {
    const uint8_t *p = buf;
    while (n > 0) {
        if (qt_cancelled()) return qt_error(QT_ERR_INTERRUPTED, "%s: interrupted", f->path);
        ssize_t w = write(f->fd, p, n > (1u << 30) ? (1u << 30) : n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return qt_error(QT_ERR_IO, "%s: write failed: %s", f->path, strerror(errno));
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

static void afile_free(qt_afile *f) {
    free(f->tmp);
    free(f->path);
    free(f);
}

void qt_afile_abort(qt_afile *f) {
    if (!f) return;
    if (f->fd >= 0) close(f->fd);
    unlink(f->tmp);
    afile_free(f);
}

qt_status qt_afile_commit(qt_afile *f) {
    if (fsync(f->fd) != 0) {
        qt_status s = qt_error(QT_ERR_IO, "%s: fsync failed: %s", f->path, strerror(errno));
        qt_afile_abort(f);
        return s;
    }
    if (close(f->fd) != 0) {
        f->fd = -1;
        qt_status s = qt_error(QT_ERR_IO, "%s: close failed: %s", f->path, strerror(errno));
        qt_afile_abort(f);
        return s;
    }
    f->fd = -1;
    if (rename(f->tmp, f->path) != 0) {
        qt_status s = qt_error(QT_ERR_IO, "%s: rename from temporary file failed: %s", f->path, strerror(errno));
        qt_afile_abort(f);
        return s;
    }
    /* Make the rename itself durable. */
    char *dcopy = strdup(f->path);
    if (dcopy) {
        int dfd = open(dirname(dcopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) { fsync(dfd); close(dfd); }
        free(dcopy);
    }
    afile_free(f);
    return QT_OK;
}
