/* lib/io/io_util.c — arena, name hash index and row conversions used by lib/io/. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_internal.h"
#include "model/model_internal.h"
#include "quanta/num.h"

/* ---- arena ---------------------------------------------------------------- */
struct qt__arena_block {
    qt__arena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *qt__arena_alloc(qt__arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    qt__arena_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > (size_t)1 << 16 ? n : (size_t)1 << 16;
        b = calloc(1, sizeof *b + cap);
        if (!b) return NULL;
        b->cap = cap;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
}

char *qt__arena_strndup(qt__arena *a, const void *s, size_t n) {
    if (n == SIZE_MAX) return NULL;
    char *p = qt__arena_alloc(a, n + 1);
    if (p) {
        if (n) memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

void qt__arena_free(qt__arena *a) {
    qt__arena_block *b = a->head;
    while (b) {
        qt__arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
}

/* ---- name index (open addressing, FNV-1a) -------------------------------- */
static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

qt_status qt__name_index_build(qt__name_index *ix, int64_t n, const char *(*get)(const void *ctx, int64_t i),
                               const void *ctx, int64_t *dup) {
    *dup = -1;
    uint64_t cap = 16;
    while (cap < (uint64_t)n * 2) cap *= 2;
    ix->slots = calloc(cap, sizeof *ix->slots);
    ix->cap = cap;
    if (!ix->slots) return QT_ERR_NOMEM;
    for (int64_t i = 0; i < n; i++) {
        const char *name = get(ctx, i);
        uint64_t s = fnv1a(name) & (cap - 1);
        for (;;) {
            int64_t at = ix->slots[s];
            if (at == 0) { ix->slots[s] = i + 1; break; }
            if (!strcmp(get(ctx, at - 1), name)) { if (*dup < 0) *dup = i; break; }
            s = (s + 1) & (cap - 1);
        }
    }
    return QT_OK;
}

int64_t qt__name_index_find(const qt__name_index *ix, const char *name,
                            const char *(*get)(const void *ctx, int64_t i), const void *ctx) {
    if (!ix->slots) return -1;
    uint64_t s = fnv1a(name) & (ix->cap - 1);
    for (;;) {
        int64_t at = ix->slots[s];
        if (at == 0) return -1;
        if (!strcmp(get(ctx, at - 1), name)) return at - 1;
        s = (s + 1) & (ix->cap - 1);
    }
}

void qt__name_index_free(qt__name_index *ix) {
    free(ix->slots);
    ix->slots = NULL;
    ix->cap = 0;
}

/* ---- row conversions ------------------------------------------------------ */
/* Plain float types (f32, f16, bf16) through the traits table's row codecs at
 * any length; block types through the checked wrappers (whole blocks only). */
qt_status qt__row_to_f32(qt_type type, const void *src, float *dst, int64_t n) {
    const qt_type_traits *tr = qt_type_get(type);
    if (tr && !tr->is_quantized && tr->to_float) {
        tr->to_float(src, dst, n);
        return QT_OK;
    }
    return qt_dequantize_rows(type, src, dst, 1, n);
}

qt_status qt__row_from_f32(qt_type type, const float *src, void *dst, int64_t n) {
    const qt_type_traits *tr = qt_type_get(type);
    if (tr && !tr->is_quantized && tr->from_float) {
        tr->from_float(src, dst, n, NULL);
        return QT_OK;
    }
    return qt_quantize_rows(type, src, dst, 1, n, NULL);
}

/* ---- outputs never overwrite their inputs --------------------------------- */
static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* An HF checkpoint is read from its directory's *.safetensors and *.json
 * (config, tokenizer, shard index): out is one of them when it is such a
 * name in the same directory. */
static bool in_hf_input(const char *out, const char *dir) {
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return false;
    if (!ends_with(out, ".safetensors") && !ends_with(out, ".json")) return false;
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", out);
    char *slash = strrchr(parent, '/');
    if (slash == parent) parent[1] = '\0';
    else if (slash) *slash = '\0';
    else snprintf(parent, sizeof parent, ".");
    bool same = false;
    qt_same_file(parent, dir, &same);
    return same && access(out, F_OK) == 0;
}

qt_status qt__refuse_input(const qt_model *m, const char *out) {
    bool same = false;
    qt_same_file(out, m->path, &same);
    for (int32_t i = 0; !same && i < m->n_maps; i++) qt_same_file(out, m->maps[i].path, &same);
    if (same || in_hf_input(out, m->path))
        return qt_error(QT_ERR_ARG, "%s: is the input (%s); write the output somewhere else", out, m->path);
    return QT_OK;
}

qt_status qt__json_write_atomic(const char *path, const struct json_t *j, size_t flags) {
    char *text = json_dumps(j, flags);
    if (!text) return qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
    qt_afile *f = NULL;
    qt_status s = qt_afile_open(path, &f);
    if (s == QT_OK) s = qt_afile_write(f, text, strlen(text));
    if (s == QT_OK) s = qt_afile_write(f, "\n", 1);
    if (s == QT_OK) s = qt_afile_commit(f);
    else if (f) qt_afile_abort(f);
    free(text);
    return s;
}
