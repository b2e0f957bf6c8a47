/* lib/io/imatrix.c — importance matrices (quanta/imatrix.h): the object, the
 * GGUF reader and the GGUF writer. The legacy .dat reader is imatrix_dat.c.
 *
 * What llama.cpp does, and what this follows (tools/imatrix/imatrix.cpp,
 * common/imatrix-loader.cpp and tools/quantize/quantize.cpp at llama.cpp
 * 3f545bec):
 * - llama-imatrix writes general.type, imatrix.datasets, imatrix.chunk_count,
 *   imatrix.chunk_size, then per weight (sorted by name) NAME.in_sum2
 *   [n_cols, n_experts] and NAME.counts [1, n_experts], both F32;
 * - the loader pairs tensors by those suffixes, ignores other tensors, rounds
 *   counts to integers (lround), and llama-quantize refuses a GGUF imatrix
 *   without the three imatrix.* keys;
 * - llama-quantize's weights are in_sum2 / count per expert, and 1 for an
 *   expert with count 0.
 * quanta is stricter where a file can only be damaged: a sum that is negative
 * or not finite, a count that is negative, not finite or not an integer
 * count, sums without counts (or the reverse), counts that do not match the
 * sums' expert dimension, and general.type naming something else are
 * errors naming the file and the field.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "imatrix_internal.h"

#define SUFFIX_SUMS ".in_sum2"
#define SUFFIX_COUNTS ".counts"
#define GGML_MAX_NAME_LEN 63 /* GGML_MAX_NAME (64) minus the NUL */

static float ld_f32(const uint8_t *p) {
    float f;
    memcpy(&f, p, 4);
    return f;
}

/* ---- the object ----------------------------------------------------------------- */

static qt_status imatrix_new(const char *name, qt_imatrix **out) {
    qt_imatrix *im = calloc(1, sizeof *im);
    if (!im || !(im->name = strdup(name))) {
        free(im);
        return qt_error(QT_ERR_NOMEM, "%s: out of memory", name);
    }
    *out = im;
    return QT_OK;
}

void qt_imatrix_close(qt_imatrix *im) {
    if (!im) return;
    qt_gguf_close(im->gguf);
    qt_mmap_close(&im->map);
    qt__name_index_free(&im->index);
    qt__arena_free(&im->arena);
    free(im->entries);
    free(im->values);
    free(im->name);
    free(im);
}

qt_status qt__imatrix_add(qt_imatrix *im, const char *what, const char *name, size_t name_len, int64_t n_values,
                          int64_t n_cols, int64_t n_counts, const int64_t *counts, const uint8_t *values) {
    for (int64_t i = 0; i < n_values; i++) {
        const float v = ld_f32(values + 4 * i);
        if (!(v >= 0.0f) || isinf(v))
            return qt_error(QT_ERR_FORMAT, "%s: %s: value %" PRId64 " is %g (sums of squares are finite and >= 0)",
                            im->name, what, i, (double)v);
    }
    for (int64_t j = 0; j < n_counts; j++)
        if (counts[j] < 0)
            return qt_error(QT_ERR_FORMAT, "%s: %s: count %" PRId64 " is %" PRId64 " (negative)", im->name, what, j, counts[j]);
    if (im->n == im->cap) {
        int64_t cap = im->cap ? im->cap * 2 : 64;
        qt_imatrix_entry *ne = realloc(im->entries, (size_t)cap * sizeof *ne);
        if (ne) im->entries = ne;
        const uint8_t **nv = ne ? realloc(im->values, (size_t)cap * sizeof *nv) : NULL;
        if (!nv) return qt_error(QT_ERR_NOMEM, "%s: out of memory", im->name);
        im->values = nv;
        im->cap = cap;
    }
    char *nm = qt__arena_strndup(&im->arena, name, name_len);
    int64_t *cp = qt__arena_alloc(&im->arena, (size_t)n_counts * sizeof *cp + 1);
    if (!nm || !cp) return qt_error(QT_ERR_NOMEM, "%s: out of memory", im->name);
    memcpy(cp, counts, (size_t)n_counts * sizeof *cp);
    im->entries[im->n] = (qt_imatrix_entry){nm, n_values, n_cols, n_counts, cp};
    im->values[im->n] = values;
    im->n++;
    return QT_OK;
}

static const char *entry_name(const void *ctx, int64_t i) { return ((const qt_imatrix *)ctx)->entries[i].name; }

/* Every format: at least one entry, names unique, then the name index. */
static qt_status finish(qt_imatrix *im) {
    if (im->n == 0) return qt_error(QT_ERR_FORMAT, "%s: no entries (an importance matrix needs at least one)", im->name);
    int64_t dup = -1;
    qt_status s = qt__name_index_build(&im->index, im->n, entry_name, im, &dup);
    if (s != QT_OK) return qt_error(s, "%s: out of memory", im->name);
    if (dup >= 0) return qt_error(QT_ERR_FORMAT, "%s: entry '%s' appears twice", im->name, im->entries[dup].name);
    return QT_OK;
}

/* ---- GGUF reader ------------------------------------------------------------------ */

static bool ends_with(const char *s, const char *suffix, size_t *stem) {
    size_t n = strlen(s), k = strlen(suffix);
    if (n <= k || strcmp(s + n - k, suffix)) return false;
    *stem = n - k;
    return true;
}

static qt_status gguf_metadata(qt_imatrix *im) {
    const qt_gguf *g = im->gguf;
    const char *type = NULL;
    qt_status s = qt_gguf_get_str(g, "general.type", &type);
    if (s == QT_ERR_FORMAT) return s;
    if (s == QT_OK && strcmp(type, "imatrix"))
        return qt_error(QT_ERR_FORMAT, "%s: key 'general.type': '%s', not 'imatrix' (not an importance matrix)", im->name, type);
    static const char *const count_keys[2] = {"imatrix.chunk_count", "imatrix.chunk_size"};
    int64_t *dst[2] = {&im->chunk_count, &im->chunk_size};
    for (int k = 0; k < 2; k++) {
        uint32_t v;
        if ((s = qt_gguf_get_u32(g, count_keys[k], &v)) == QT_ERR_NOT_FOUND)
            return qt_error(QT_ERR_FORMAT, "%s: key '%s': missing (llama-quantize refuses an imatrix without it)", im->name,
                            count_keys[k]);
        if (s != QT_OK) return s;
        *dst[k] = v;
    }
    const qt_gguf_value *ds;
    if ((s = qt_gguf_get_arr(g, "imatrix.datasets", QT_GGUF_STRING, &ds)) == QT_ERR_NOT_FOUND)
        return qt_error(QT_ERR_FORMAT, "%s: key 'imatrix.datasets': missing (llama-quantize refuses an imatrix without it)",
                        im->name);
    if (s != QT_OK) return s;
    im->datasets = qt__arena_alloc(&im->arena, (size_t)ds->arr.n * sizeof *im->datasets + 1);
    if (!im->datasets) return qt_error(QT_ERR_NOMEM, "%s: out of memory", im->name);
    for (uint64_t i = 0; i < ds->arr.n; i++) im->datasets[i] = ds->arr.items[i].str.ptr;
    im->n_datasets = (int64_t)ds->arr.n;
    return QT_OK;
}

/* Counts are stored as F32; llama.cpp rounds them (lround). Bounded so the
 * rounding is defined. */
static qt_status read_counts(qt_imatrix *im, const qt_gguf_tensor *t, int64_t n, int64_t *out) {
    for (int64_t j = 0; j < n; j++) {
        const float c = ld_f32((const uint8_t *)t->data + 4 * j);
        if (!(c >= 0.0f && c <= 0x1p62f))
            return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': count %" PRId64 " is %g (a token count is >= 0)", im->name,
                            t->name, j, (double)c);
        out[j] = (int64_t)lroundf(c);
    }
    return QT_OK;
}

static qt_status gguf_entry(qt_imatrix *im, const qt_gguf_tensor *sums, size_t stem, int64_t **scratch, int64_t *cap) {
    char cname[GGML_MAX_NAME_LEN + 16];
    snprintf(cname, sizeof cname, "%.*s%s", (int)stem, sums->name, SUFFIX_COUNTS);
    const qt_gguf_tensor *counts = qt_gguf_find_tensor(im->gguf, cname);
    if (!counts)
        return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': no '%s' beside it (every in_sum2 needs its counts)", im->name,
                        sums->name, cname);
    const qt_gguf_tensor *ts[2] = {sums, counts};
    for (int k = 0; k < 2; k++)
        if (ts[k]->type != QT_TYPE_F32)
            return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': type %s, must be f32", im->name, ts[k]->name,
                            qt_type_get(ts[k]->type) ? qt_type_get(ts[k]->type)->name : "?");
    const int64_t n_cols = sums->ne[0], n_exp = sums->ne[1] * sums->ne[2] * sums->ne[3];
    const int64_t n_counts = counts->ne[0] * counts->ne[1] * counts->ne[2] * counts->ne[3];
    if (n_cols < 1 || n_exp < 1)
        return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': empty", im->name, sums->name);
    if (n_counts != n_exp)
        return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': %" PRId64 " counts, but '%s' has %" PRId64 " expert%s of %" PRId64
                        " columns", im->name, cname, n_counts, sums->name, n_exp, n_exp == 1 ? "" : "s", n_cols);
    if (n_counts > *cap) {
        int64_t *p = realloc(*scratch, (size_t)n_counts * sizeof *p);
        if (!p) return qt_error(QT_ERR_NOMEM, "%s: out of memory", im->name);
        *scratch = p;
        *cap = n_counts;
    }
    qt_status s = read_counts(im, counts, n_counts, *scratch);
    if (s != QT_OK) return s;
    char what[GGML_MAX_NAME_LEN + 16];
    snprintf(what, sizeof what, "tensor '%s'", sums->name);
    return qt__imatrix_add(im, what, sums->name, stem, n_cols * n_exp, n_cols, n_exp, *scratch, sums->data);
}

static qt_status parse_gguf(qt_imatrix *im, const void *data, size_t size) {
    qt_status s = qt_gguf_parse(data, size, im->name, &im->gguf);
    if (s == QT_OK) s = gguf_metadata(im);
    int64_t *scratch = NULL, cap = 0;
    for (int64_t i = 0; s == QT_OK && i < qt_gguf_n_tensors(im->gguf); i++) {
        const qt_gguf_tensor *t = qt_gguf_tensor_at(im->gguf, i);
        size_t stem;
        if (ends_with(t->name, SUFFIX_SUMS, &stem)) {
            s = gguf_entry(im, t, stem, &scratch, &cap);
        } else if (ends_with(t->name, SUFFIX_COUNTS, &stem)) {
            char sname[GGML_MAX_NAME_LEN + 16];
            snprintf(sname, sizeof sname, "%.*s%s", (int)stem, t->name, SUFFIX_SUMS);
            if (!qt_gguf_find_tensor(im->gguf, sname))
                s = qt_error(QT_ERR_FORMAT, "%s: tensor '%s': no '%s' beside it (counts without sums)", im->name, t->name,
                             sname);
        } /* other tensors: ignored, as llama.cpp's loader does */
    }
    free(scratch);
    return s;
}

/* ---- API ------------------------------------------------------------------------------- */

qt_status qt_imatrix_parse(const void *data, size_t size, const char *name, qt_imatrix **out) {
    *out = NULL;
    qt_imatrix *im = NULL;
    qt_status s = imatrix_new(name, &im);
    if (s != QT_OK) return s;
    static const uint8_t empty[1];
    const uint8_t *p = data ? data : empty;
    if (!data) size = 0;
    if (size >= 4 && !memcmp(p, "GGUF", 4)) {
        im->format = QT_IMATRIX_GGUF;
        s = parse_gguf(im, p, size);
    } else {
        im->format = QT_IMATRIX_LEGACY;
        s = qt__imatrix_parse_dat(im, p, size);
    }
    if (s == QT_OK) s = finish(im);
    if (s != QT_OK) {
        qt_imatrix_close(im);
        return s;
    }
    *out = im;
    return QT_OK;
}

qt_status qt_imatrix_open(const char *path, qt_imatrix **out) {
    *out = NULL;
    qt_mmap map;
    qt_status s = qt_mmap_open(path, &map);
    if (s != QT_OK) return s;
    if ((s = qt_imatrix_parse(map.data, map.size, path, out)) != QT_OK) {
        qt_mmap_close(&map);
        return s;
    }
    (*out)->map = map;
    return QT_OK;
}

const char *qt_imatrix_name(const qt_imatrix *im) { return im->name; }
qt_imatrix_format qt_imatrix_format_of(const qt_imatrix *im) { return im->format; }
int64_t qt_imatrix_chunk_count(const qt_imatrix *im) { return im->chunk_count; }
int64_t qt_imatrix_chunk_size(const qt_imatrix *im) { return im->chunk_size; }
int64_t qt_imatrix_n_datasets(const qt_imatrix *im) { return im->n_datasets; }
const char *qt_imatrix_dataset(const qt_imatrix *im, int64_t i) {
    return i >= 0 && i < im->n_datasets ? im->datasets[i] : NULL;
}
int64_t qt_imatrix_n_entries(const qt_imatrix *im) { return im->n; }
const qt_imatrix_entry *qt_imatrix_entry_at(const qt_imatrix *im, int64_t i) {
    return i >= 0 && i < im->n ? &im->entries[i] : NULL;
}
const qt_imatrix_entry *qt_imatrix_find(const qt_imatrix *im, const char *name) {
    int64_t i = qt__name_index_find(&im->index, name, entry_name, im);
    return i < 0 ? NULL : &im->entries[i];
}

void qt_imatrix_values(const qt_imatrix *im, const qt_imatrix_entry *e, float *out) {
    memcpy(out, im->values[e - im->entries], (size_t)e->n_values * sizeof(float));
}

qt_status qt_imatrix_get(const qt_imatrix *im, const char *name, int64_t n_cols, int64_t n_experts, float *w) {
    const qt_imatrix_entry *e = qt_imatrix_find(im, name);
    if (!e) return QT_ERR_NOT_FOUND;
    if (n_cols < 1 || n_experts < 1 || n_cols > INT64_MAX / n_experts)
        return qt_error(QT_ERR_ARG, "%s: tensor '%s': %" PRId64 " columns x %" PRId64 " experts is not a shape", im->name,
                        name, n_cols, n_experts);
    const bool gguf = im->format == QT_IMATRIX_GGUF;
    if (gguf ? (e->n_cols != n_cols || e->n_counts != n_experts) : e->n_values != n_cols * n_experts) {
        char have[96];
        if (gguf) snprintf(have, sizeof have, "%" PRId64 " columns x %" PRId64 " expert(s)", e->n_cols, e->n_counts);
        else snprintf(have, sizeof have, "%" PRId64 " values", e->n_values);
        return qt_error(QT_ERR_SHAPE, "%s: tensor '%s': the imatrix entry has %s, the tensor has rows of %" PRId64
                        " columns x %" PRId64 " expert(s) (an imatrix made for another model?)", im->name, name, have,
                        n_cols, n_experts);
    }
    qt_imatrix_values(im, e, w);
    if (!gguf) {
        /* legacy: values are sum / count * ncall; llama-quantize divides by ncall
         * (as float), and leaves them as they are when ncall is 0 */
        const float ncall = (float)e->counts[0];
        if (e->counts[0] > 0)
            for (int64_t i = 0; i < e->n_values; i++) w[i] = w[i] / ncall;
        return QT_OK;
    }
    for (int64_t j = 0; j < n_experts; j++) {
        const float count = (float)e->counts[j];
        for (int64_t i = 0; i < n_cols; i++) w[j * n_cols + i] = count > 0.0f ? w[j * n_cols + i] / count : 1.0f;
    }
    return QT_OK;
}

/* ---- GGUF writer ----------------------------------------------------------------------- */

static int cmp_stat_name(const void *a, const void *b) {
    return strcmp((*(const qt_imatrix_stat *const *)a)->name, (*(const qt_imatrix_stat *const *)b)->name);
}

static qt_status check_stat(const char *path, const qt_imatrix_stat *st) {
    if (!st->name || !st->name[0]) return qt_error(QT_ERR_ARG, "%s: an imatrix entry without a name", path);
    if (strlen(st->name) + strlen(SUFFIX_SUMS) > GGML_MAX_NAME_LEN)
        return qt_error(QT_ERR_ARG, "%s: entry '%s': name too long for GGUF (ggml allows %d bytes with '%s')", path,
                        st->name, GGML_MAX_NAME_LEN, SUFFIX_SUMS);
    if (st->n_cols < 1 || st->n_experts < 1 || st->n_cols > INT64_MAX / 4 / st->n_experts || !st->sums || !st->counts)
        return qt_error(QT_ERR_ARG, "%s: entry '%s': %" PRId64 " columns x %" PRId64 " experts is not a shape", path,
                        st->name, st->n_cols, st->n_experts);
    for (int64_t j = 0; j < st->n_experts; j++)
        if (st->counts[j] < 0)
            return qt_error(QT_ERR_ARG, "%s: entry '%s': count %" PRId64 " is negative", path, st->name, j);
    return QT_OK;
}

/* Tensor infos and data for the sorted stats; counts converted to F32 (as
 * llama-imatrix stores them) in the arena. */
static qt_status build_tensors(const char *path, const qt_imatrix_stat *const *sorted, int64_t n, qt__arena *a,
                               qt__gguf_raw_tensor *t) {
    for (int64_t i = 0; i < n; i++) {
        const qt_imatrix_stat *st = sorted[i];
        if (i > 0 && !strcmp(sorted[i - 1]->name, st->name))
            return qt_error(QT_ERR_ARG, "%s: entry '%s' given twice", path, st->name);
        float *fc = qt__arena_alloc(a, (size_t)st->n_experts * sizeof *fc);
        char *sn = qt__arena_alloc(a, strlen(st->name) + 16), *cn = qt__arena_alloc(a, strlen(st->name) + 16);
        if (!fc || !sn || !cn) return qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
        for (int64_t j = 0; j < st->n_experts; j++) fc[j] = (float)st->counts[j];
        sprintf(sn, "%s%s", st->name, SUFFIX_SUMS);
        sprintf(cn, "%s%s", st->name, SUFFIX_COUNTS);
        t[2 * i] = (qt__gguf_raw_tensor){sn, {st->n_cols, st->n_experts, 1, 1}, QT_TYPE_F32, st->sums};
        t[2 * i + 1] = (qt__gguf_raw_tensor){cn, {1, st->n_experts, 1, 1}, QT_TYPE_F32, fc};
    }
    return QT_OK;
}

qt_status qt_imatrix_write(const char *path, const qt_imatrix_stat *stats, int64_t n, const qt_imatrix_info *info) {
    if (n < 1 || !stats) return qt_error(QT_ERR_ARG, "%s: no imatrix entries to write", path);
    if (info->chunk_count < 0 || info->chunk_count > UINT32_MAX || info->chunk_size < 0 || info->chunk_size > UINT32_MAX)
        return qt_error(QT_ERR_ARG, "%s: chunk count %" PRId64 " / chunk size %" PRId64 " out of range (uint32)", path,
                        info->chunk_count, info->chunk_size);
    for (int64_t i = 0; i < n; i++) {
        qt_status s = check_stat(path, &stats[i]);
        if (s != QT_OK) return s;
    }
    qt__arena a = {0};
    const qt_imatrix_stat **sorted = malloc((size_t)n * sizeof *sorted);
    qt__gguf_raw_tensor *t = malloc((size_t)n * 2 * sizeof *t);
    qt_gguf_value *ds = qt__arena_alloc(&a, (size_t)info->n_datasets * sizeof *ds + 1);
    qt_status s = sorted && t && ds ? QT_OK : qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
    if (s == QT_OK) {
        for (int64_t i = 0; i < n; i++) sorted[i] = &stats[i];
        qsort(sorted, (size_t)n, sizeof *sorted, cmp_stat_name); /* llama-imatrix's std::sort of the names */
        s = build_tensors(path, sorted, n, &a, t);
    }
    if (s == QT_OK) {
        for (int64_t i = 0; i < info->n_datasets; i++)
            ds[i] = (qt_gguf_value){.type = QT_GGUF_STRING, .str = {info->datasets[i], strlen(info->datasets[i])}};
        qt_gguf_kv kv[4] = {
            {"general.type", {.type = QT_GGUF_STRING, .str = {"imatrix", 7}}},
            {"imatrix.datasets", {.type = QT_GGUF_ARRAY}},
            {"imatrix.chunk_count", {.type = QT_GGUF_UINT32, .u64 = (uint64_t)info->chunk_count}},
            {"imatrix.chunk_size", {.type = QT_GGUF_UINT32, .u64 = (uint64_t)info->chunk_size}},
        };
        kv[1].value.arr.type = QT_GGUF_STRING;
        kv[1].value.arr.n = (uint64_t)info->n_datasets;
        kv[1].value.arr.items = ds;
        s = qt__gguf_write_raw(path, kv, 4, t, 2 * n);
    }
    free(sorted);
    free(t);
    qt__arena_free(&a);
    return s;
}
