/* lib/io/imatrix_dat.c — llama.cpp's legacy imatrix format (`llama-imatrix
 * --output-format dat`), read only.
 *
 * Layout (IMatrixCollector::save_imatrix_legacy and
 * common_imatrix_load_legacy at llama.cpp 3f545bec), little-endian:
 *   int32 n_entries (>= 1)
 *   n_entries x { int32 len; len bytes name; int32 ncall; int32 nval (>= 1);
 *                 nval x float32 }       value = sum / count * ncall
 *   optional: int32 chunk_count, then optional int32 len + len bytes dataset
 * llama.cpp's loader tolerates a torn trailer; quanta accepts the trailer
 * absent, the chunk count alone, or the chunk count and a whole dataset name,
 * and calls anything else (a torn field, bytes after the name) corrupt.
 */
#include <inttypes.h>
#include <stdio.h>

#include "imatrix_internal.h"

typedef struct dat_cursor {
    const uint8_t *p;
    size_t size, pos;
    const char *file;
} dat_cursor;

static qt_status need(const dat_cursor *c, uint64_t n, const char *what) {
    if (n <= c->size - c->pos) return QT_OK;
    return qt_error(QT_ERR_FORMAT, "%s: %s: truncated (needs %" PRIu64 " bytes at offset %zu, the file has %zu left)",
                    c->file, what, n, c->pos, c->size - c->pos);
}

static qt_status read_i32(dat_cursor *c, const char *what, int32_t *out) {
    qt_status s = need(c, 4, what);
    if (s != QT_OK) return s;
    *out = (int32_t)qt__ld_u32(c->p + c->pos);
    c->pos += 4;
    return QT_OK;
}

static qt_status read_entry(qt_imatrix *im, dat_cursor *c, int32_t i) {
    char what[96];
    int32_t len, ncall, nval;
    snprintf(what, sizeof what, "entry %d: name length", i);
    qt_status s = read_i32(c, what, &len);
    if (s != QT_OK) return s;
    if (len < 1) return qt_error(QT_ERR_FORMAT, "%s: %s: %d (a tensor name is not empty)", c->file, what, len);
    snprintf(what, sizeof what, "entry %d: name", i);
    if ((s = need(c, (uint64_t)len, what)) != QT_OK) return s;
    const char *name = (const char *)c->p + c->pos;
    if (memchr(name, '\0', (size_t)len))
        return qt_error(QT_ERR_FORMAT, "%s: %s: contains a NUL byte", c->file, what);
    c->pos += (size_t)len;
    snprintf(what, sizeof what, "entry %d ('%.*s')", i, len > 48 ? 48 : len, name);
    char field[160];
    snprintf(field, sizeof field, "%s: ncall", what);
    if ((s = read_i32(c, field, &ncall)) != QT_OK) return s;
    if (ncall < 0) return qt_error(QT_ERR_FORMAT, "%s: %s: %d (negative)", c->file, field, ncall);
    snprintf(field, sizeof field, "%s: nval", what);
    if ((s = read_i32(c, field, &nval)) != QT_OK) return s;
    if (nval < 1) return qt_error(QT_ERR_FORMAT, "%s: %s: %d (an entry has at least one value)", c->file, field, nval);
    snprintf(field, sizeof field, "%s: values", what);
    if ((s = need(c, 4 * (uint64_t)nval, field)) != QT_OK) return s;
    const uint8_t *values = c->p + c->pos;
    c->pos += 4 * (size_t)nval;
    const int64_t count = ncall;
    return qt__imatrix_add(im, what, name, (size_t)len, nval, 0, 1, &count, values);
}

static qt_status read_trailer(qt_imatrix *im, dat_cursor *c) {
    if (c->pos == c->size) return QT_OK;
    int32_t chunks, len;
    qt_status s = read_i32(c, "chunk count (after the entries)", &chunks);
    if (s != QT_OK) return s;
    if (chunks < 0) return qt_error(QT_ERR_FORMAT, "%s: chunk count: %d (negative)", c->file, chunks);
    im->chunk_count = chunks;
    if (c->pos == c->size) return QT_OK;
    if ((s = read_i32(c, "dataset name length", &len)) != QT_OK) return s;
    if (len < 0) return qt_error(QT_ERR_FORMAT, "%s: dataset name length: %d (negative)", c->file, len);
    if ((s = need(c, (uint64_t)len, "dataset name")) != QT_OK) return s;
    if (len > 0) {
        const char *ds = qt__arena_strndup(&im->arena, c->p + c->pos, (size_t)len);
        im->datasets = qt__arena_alloc(&im->arena, sizeof *im->datasets);
        if (!ds || !im->datasets) return qt_error(QT_ERR_NOMEM, "%s: out of memory", c->file);
        im->datasets[0] = ds;
        im->n_datasets = 1;
    }
    c->pos += (size_t)len;
    if (c->pos != c->size)
        return qt_error(QT_ERR_FORMAT, "%s: %zu bytes after the dataset name (expected the end of the file)", c->file,
                        c->size - c->pos);
    return QT_OK;
}

qt_status qt__imatrix_parse_dat(qt_imatrix *im, const uint8_t *data, size_t size) {
    dat_cursor c = {data, size, 0, im->name};
    int32_t n;
    qt_status s = read_i32(&c, "entry count", &n);
    if (s != QT_OK) return s;
    /* the smallest entry is 4 + 1 + 4 + 4 + 4 bytes */
    if (n < 1 || (uint64_t)n > (size - 4) / 17)
        return qt_error(QT_ERR_FORMAT, "%s: entry count: %d (not an imatrix file, or truncated: %zu bytes)", im->name, n,
                        size);
    for (int32_t i = 0; i < n && s == QT_OK; i++) s = read_entry(im, &c, i);
    return s == QT_OK ? read_trailer(im, &c) : s;
}
