/* lib/model/model.c — the one in-memory model: lifetime, tensor table, lookups.
 * Readers (lib/io/) fill it through the qt__model_* builders. */
#define _DEFAULT_SOURCE /* madvise */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/bigalloc.h"
#include "model_internal.h"

qt_status qt__model_new(const char *path, const char *source_format, qt_model **out) {
    qt_model *m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path))) {
        free(m);
        return qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
    }
    m->source_format = source_format;
    m->vocab.bos_id = m->vocab.eos_id = m->vocab.unk_id = m->vocab.pad_id = -1;
    *out = m;
    return QT_OK;
}

void qt_model_free(qt_model *m) {
    if (!m) return;
    if (m->reader_free) m->reader_free(m->reader_state);
    for (int32_t i = 0; i < m->n_maps; i++) qt_mmap_close(&m->maps[i]);
    for (int32_t i = 0; i < m->n_owned; i++) qt__weights_free(m->owned[i]);
    free(m->maps);
    free(m->owned);
    free(m->tensors);
    free(m->path);
    free(m);
}

int64_t qt__tensor_nelements(const qt_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->n_dims; d++) n *= t->ne[d];
    return n;
}

qt_status qt__model_add_tensor(qt_model *m, const qt_tensor *t) {
    if (qt_model_find_tensor(m, t->name))
        return qt_error(QT_ERR_FORMAT, "%s: duplicate tensor name '%s'", m->path, t->name);
    if (m->n_tensors == m->cap_tensors) {
        int32_t cap = m->cap_tensors ? m->cap_tensors * 2 : 64;
        qt_tensor *nt = realloc(m->tensors, (size_t)cap * sizeof *nt);
        if (!nt) return qt_error(QT_ERR_NOMEM, "%s: out of memory", m->path);
        m->tensors = nt;
        m->cap_tensors = cap;
    }
    m->tensors[m->n_tensors++] = *t;
    return QT_OK;
}

int32_t qt__model_add_map(qt_model *m, qt_mmap *map) {
    qt_mmap *nm = realloc(m->maps, (size_t)(m->n_maps + 1) * sizeof *nm);
    if (!nm) { qt_error(QT_ERR_NOMEM, "%s: out of memory", m->path); return -1; }
    m->maps = nm;
    m->maps[m->n_maps] = *map;
    memset(map, 0, sizeof *map);
    return m->n_maps++;
}

bool qt__model_in_map(const qt_model *m, const void *p, size_t n) {
    const uint8_t *b = p;
    for (int32_t i = 0; i < m->n_maps; i++)
        if (b >= m->maps[i].data && n <= m->maps[i].size && b - m->maps[i].data <= (ptrdiff_t)(m->maps[i].size - n))
            return true;
    return false;
}

void qt__model_drop_pages(const qt_model *m, const void *p, size_t n) {
    const long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0 || !p || n < (size_t)pg || !qt__model_in_map(m, p, n)) return;
    const uintptr_t a = ((uintptr_t)p + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    const uintptr_t b = ((uintptr_t)p + n) & ~((uintptr_t)pg - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

void qt__model_drop_window(const qt_model *m, const void *p, size_t n, const void *lo, size_t lo_n, size_t window) {
    const long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0 || !p || !lo || !qt__model_in_map(m, lo, lo_n)) return;
    const uintptr_t w = window > (size_t)pg ? (uintptr_t)window : (uintptr_t)pg, g = (uintptr_t)pg;
    uintptr_t a = (uintptr_t)p & ~(w - 1), b = ((uintptr_t)p + n + w - 1) & ~(w - 1);
    const uintptr_t la = ((uintptr_t)lo + g - 1) & ~(g - 1), lb = ((uintptr_t)lo + lo_n) & ~(g - 1);
    if (a < la) a = la;
    if (b > lb) b = lb;
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

void *qt__model_alloc(qt_model *m, size_t n) {
    if (m->n_owned == m->cap_owned) {
        int32_t cap = m->cap_owned ? m->cap_owned * 2 : 16;
        void **no = realloc(m->owned, (size_t)cap * sizeof *no);
        if (!no) { qt_error(QT_ERR_NOMEM, "%s: out of memory", m->path); return NULL; }
        m->owned = no;
        m->cap_owned = cap;
    }
    /* tensor data converted at load (compressed-tensors rows, HF conversions) is streamed every
     * token like the packed copies: huge pages where large, each its own mapping (core/bigalloc.h),
     * zeroed as calloc; small ones too, so qt_model_free frees every one the same way */
    void *p = qt__weights_alloc(n ? n : 1);
    if (p) memset(p, 0, n);
    if (!p) { qt_error(QT_ERR_NOMEM, "%s: out of memory (%zu bytes)", m->path, n); return NULL; }
    m->owned[m->n_owned++] = p;
    return p;
}

char *qt__model_strdup(qt_model *m, const char *s) {
    size_t n = strlen(s) + 1;
    char *p = qt__model_alloc(m, n);
    if (p) memcpy(p, s, n);
    return p;
}

const char *qt_model_path(const qt_model *m) { return m->path; }
const char *qt_model_source_format(const qt_model *m) { return m->source_format; }
const qt_hparams *qt_model_hparams(const qt_model *m) { return &m->hp; }
const qt_vocab *qt_model_vocab(const qt_model *m) { return &m->vocab; }
int32_t qt_model_n_tensors(const qt_model *m) { return m->n_tensors; }

const qt_tensor *qt_model_tensor(const qt_model *m, int32_t i) {
    return (i >= 0 && i < m->n_tensors) ? &m->tensors[i] : NULL;
}

const qt_tensor *qt_model_find_tensor(const qt_model *m, const char *name) {
    for (int32_t i = 0; i < m->n_tensors; i++)
        if (!strcmp(m->tensors[i].name, name)) return &m->tensors[i];
    return NULL;
}

uint64_t qt_model_n_params(const qt_model *m) {
    uint64_t n = 0;
    for (int32_t i = 0; i < m->n_tensors; i++) n += (uint64_t)qt__tensor_nelements(&m->tensors[i]);
    return n;
}
