/* lib/io/safetensors.c — safetensors reader, sharded checkpoints, writer
 * (docs/formats.md §1; reference: huggingface/safetensors tensor.rs `read_metadata`,
 * `Metadata::validate`, `prepare`).
 *
 * Every check the reference reader makes is made here, in the same order, and
 * each failure names the file, the field and the problem.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_internal.h"
#include "quanta/safetensors.h"

/* ---- dtypes ------------------------------------------------------------------ */

static const struct {
    const char *name;
    int bits;
    int qt;  /* qt_type, or -1 when quanta has no element type for it */
} dtype_table[QT_ST_DTYPE_COUNT] = {
    [QT_ST_BOOL] = {"BOOL", 8, -1},
    [QT_ST_F4] = {"F4", 4, -1},
    [QT_ST_F6_E2M3] = {"F6_E2M3", 6, -1},
    [QT_ST_F6_E3M2] = {"F6_E3M2", 6, -1},
    [QT_ST_U8] = {"U8", 8, -1},
    [QT_ST_I8] = {"I8", 8, QT_TYPE_I8},
    [QT_ST_F8_E5M2] = {"F8_E5M2", 8, -1},
    [QT_ST_F8_E4M3] = {"F8_E4M3", 8, -1},
    [QT_ST_F8_E8M0] = {"F8_E8M0", 8, -1},
    [QT_ST_F8_E4M3FNUZ] = {"F8_E4M3FNUZ", 8, -1},
    [QT_ST_F8_E5M2FNUZ] = {"F8_E5M2FNUZ", 8, -1},
    [QT_ST_I16] = {"I16", 16, QT_TYPE_I16},
    [QT_ST_U16] = {"U16", 16, -1},
    [QT_ST_F16] = {"F16", 16, QT_TYPE_F16},
    [QT_ST_BF16] = {"BF16", 16, QT_TYPE_BF16},
    [QT_ST_I32] = {"I32", 32, QT_TYPE_I32},
    [QT_ST_U32] = {"U32", 32, -1},
    [QT_ST_F32] = {"F32", 32, QT_TYPE_F32},
    [QT_ST_C64] = {"C64", 64, -1},
    [QT_ST_F64] = {"F64", 64, QT_TYPE_F64},
    [QT_ST_I64] = {"I64", 64, QT_TYPE_I64},
    [QT_ST_U64] = {"U64", 64, -1},
};

const char *qt_st_dtype_name(qt_st_dtype d) {
    return ((unsigned)d < QT_ST_DTYPE_COUNT) ? dtype_table[d].name : NULL;
}

bool qt_st_dtype_from_name(const char *name, qt_st_dtype *out) {
    for (int d = 0; d < QT_ST_DTYPE_COUNT; d++)
        if (!strcmp(dtype_table[d].name, name)) { *out = (qt_st_dtype)d; return true; }
    return false;
}

int qt_st_dtype_bits(qt_st_dtype d) { return ((unsigned)d < QT_ST_DTYPE_COUNT) ? dtype_table[d].bits : 0; }

qt_status qt_st_dtype_to_type(qt_st_dtype d, qt_type *out) {
    if ((unsigned)d >= QT_ST_DTYPE_COUNT) return qt_error(QT_ERR_ARG, "safetensors dtype %d out of range", (int)d);
    if (dtype_table[d].qt < 0)
        return qt_error(QT_ERR_UNSUPPORTED, "safetensors dtype %s has no quanta tensor type", dtype_table[d].name);
    *out = (qt_type)dtype_table[d].qt;
    return QT_OK;
}

qt_status qt_st_dtype_from_type(qt_type t, qt_st_dtype *out) {
    for (int d = 0; d < QT_ST_DTYPE_COUNT; d++)
        if (dtype_table[d].qt == (int)t) { *out = (qt_st_dtype)d; return QT_OK; }
    const qt_type_traits *tr = qt_type_get(t);
    return qt_error(QT_ERR_UNSUPPORTED, "type %s cannot be stored in safetensors (no matching dtype)",
                    tr ? tr->name : "unknown");
}

/* prod(shape) * bits / 8 with the reference's overflow and alignment rules.
 * Returns 0 on success, 1 on overflow, 2 when the bit count is not a multiple of 8. */
static int span_bytes(const int64_t *shape, int32_t n_dims, qt_st_dtype d, uint64_t *bytes) {
    uint64_t n = 1;
    for (int32_t i = 0; i < n_dims; i++)
        if (__builtin_mul_overflow(n, (uint64_t)shape[i], &n)) return 1;
    uint64_t bits;
    if (__builtin_mul_overflow(n, (uint64_t)qt_st_dtype_bits(d), &bits)) return 1;
    if (bits % 8) return 2;
    *bytes = bits / 8;
    return 0;
}

uint64_t qt_st_entry_nbytes(const qt_st_entry *e) {
    uint64_t b = 0;
    if (e->n_dims < 0 || e->n_dims > QT_ST_MAX_DIMS) return 0;
    for (int32_t i = 0; i < e->n_dims; i++)
        if (e->shape[i] < 0) return 0;
    return span_bytes(e->shape, e->n_dims, e->dtype, &b) ? 0 : b;
}

/* ---- reader -------------------------------------------------------------------- */

struct qt_safetensors {
    char *path;
    qt_mmap map;            /* owned mapping (qt_st_open), else empty */
    uint64_t header_len;
    json_t *root;           /* owns the name strings */
    qt_st_tensor *tensors;  /* (n) in data order */
    int32_t *by_name;       /* (n) indices sorted by name */
    int32_t n;
    const char **meta_keys, **meta_values; /* (n_meta) sorted by key */
    int32_t n_meta;
};

static void st_free(qt_safetensors *st) {
    if (!st) return;
    if (st->root) json_decref(st->root);
    qt_mmap_close(&st->map);
    free(st->tensors);
    free(st->by_name);
    free(st->meta_keys);
    free(st->meta_values);
    free(st->path);
    free(st);
}

void qt_st_close(qt_safetensors *st) { st_free(st); }

/* Position of the first invalid UTF-8 byte, or -1 (RFC 3629: no overlongs,
 * no surrogates, nothing above U+10FFFF). */
static int64_t utf8_invalid_at(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) { i++; continue; }
        size_t len;
        uint32_t cp, min;
        if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; min = 0x80; }
        else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; min = 0x800; }
        else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; min = 0x10000; }
        else return (int64_t)i;
        if (i + len > n) return (int64_t)i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return (int64_t)i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return (int64_t)i;
        i += len;
    }
    return -1;
}

static int cmp_offsets(const void *a, const void *b) {
    const qt_st_tensor *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name); /* deterministic order for equal offsets */
}

static int cmp_by_name(const void *a, const void *b, void *base) {
    const qt_st_tensor *t = base;
    return strcmp(t[*(const int32_t *)a].name, t[*(const int32_t *)b].name);
}

static int cmp_str_ptr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A JSON integer in [0, INT64_MAX]: the reference deserializes shapes and
 * offsets as usize, so negatives and non-integers are schema errors. */
static bool json_u64(const json_t *v, uint64_t *out) {
    if (!json_is_integer(v) || json_integer_value(v) < 0) return false;
    *out = (uint64_t)json_integer_value(v);
    return true;
}

static qt_status parse_metadata(qt_safetensors *st, json_t *meta) {
    const char *p = st->path;
    if (!json_is_object(meta))
        return qt_error(QT_ERR_FORMAT, "%s: field '__metadata__': must be an object of strings", p);
    size_t n = json_object_size(meta);
    st->meta_keys = calloc(n ? n : 1, sizeof *st->meta_keys);
    st->meta_values = calloc(n ? n : 1, sizeof *st->meta_values);
    if (!st->meta_keys || !st->meta_values) return qt_error(QT_ERR_NOMEM, "%s: out of memory", p);
    const char *key;
    json_t *val;
    json_object_foreach(meta, key, val) {
        if (!json_is_string(val))
            return qt_error(QT_ERR_FORMAT, "%s: field '__metadata__.%s': value must be a string "
                            "(the metadata is a flat string-to-string map)", p, key);
        st->meta_keys[st->n_meta++] = key;
    }
    qsort(st->meta_keys, (size_t)st->n_meta, sizeof *st->meta_keys, cmp_str_ptr);
    for (int32_t i = 0; i < st->n_meta; i++)
        st->meta_values[i] = json_string_value(json_object_get(meta, st->meta_keys[i]));
    return QT_OK;
}

static qt_status parse_tensor_info(qt_safetensors *st, const char *name, json_t *info, qt_st_tensor *t) {
    const char *p = st->path;
    if (!json_is_object(info))
        return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': entry must be an object with dtype, shape and data_offsets", p, name);
    t->name = name;
    json_t *dt = json_object_get(info, "dtype");
    if (!dt) return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': field 'dtype' missing", p, name);
    if (!json_is_string(dt)) return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': field 'dtype' must be a string", p, name);
    if (!qt_st_dtype_from_name(json_string_value(dt), &t->dtype))
        return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': field 'dtype': unknown dtype \"%s\"", p, name, json_string_value(dt));

    json_t *shape = json_object_get(info, "shape");
    if (!shape) return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': field 'shape' missing", p, name);
    if (!json_is_array(shape))
        return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': field 'shape' must be an array of non-negative integers", p, name);
    if (json_array_size(shape) > QT_ST_MAX_DIMS)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: tensor '%s': field 'shape': %zu dimensions (at most %d supported)",
                        p, name, json_array_size(shape), QT_ST_MAX_DIMS);
    t->n_dims = (int32_t)json_array_size(shape);
    for (int32_t d = 0; d < t->n_dims; d++) {
        uint64_t v;
        if (!json_u64(json_array_get(shape, (size_t)d), &v))
            return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': field 'shape'[%d]: not a non-negative integer", p, name, d);
        t->shape[d] = (int64_t)v;
    }

    json_t *offs = json_object_get(info, "data_offsets");
    if (!offs) return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': field 'data_offsets' missing", p, name);
    if (!json_is_array(offs) || json_array_size(offs) != 2 ||
        !json_u64(json_array_get(offs, 0), &t->begin) || !json_u64(json_array_get(offs, 1), &t->end))
        return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': field 'data_offsets' must be [BEGIN, END], two non-negative integers", p, name);
    return QT_OK;
}

/* Metadata::validate: walk in offset order; contiguous from 0, END >= BEGIN,
 * span == prod(shape) * bits / 8. Returns the end of the last tensor. */
static qt_status validate_offsets(qt_safetensors *st, uint64_t *data_end) {
    const char *p = st->path;
    uint64_t start = 0;
    for (int32_t i = 0; i < st->n; i++) {
        const qt_st_tensor *t = &st->tensors[i];
        if (t->begin != start || t->end < t->begin) {
            if (t->end < t->begin)
                return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': field 'data_offsets': END %llu is before BEGIN %llu",
                                p, t->name, (unsigned long long)t->end, (unsigned long long)t->begin);
            if (t->begin < start)
                return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': field 'data_offsets': [%llu, %llu] overlaps the previous "
                                "tensor, which ends at %llu", p, t->name, (unsigned long long)t->begin,
                                (unsigned long long)t->end, (unsigned long long)start);
            return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': field 'data_offsets': begins at %llu but the previous tensor "
                            "ends at %llu (a hole; tensors must be contiguous from 0)", p, t->name,
                            (unsigned long long)t->begin, (unsigned long long)start);
        }
        start = t->end;
        uint64_t bytes;
        int r = span_bytes(t->shape, t->n_dims, t->dtype, &bytes);
        if (r == 1)
            return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': field 'shape': element count times dtype size overflows", p, t->name);
        if (r == 2)
            return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': field 'shape': %s elements do not fill whole bytes", p,
                            t->name, qt_st_dtype_name(t->dtype));
        if (t->end - t->begin != bytes)
            return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': field 'data_offsets': spans %llu bytes but shape and dtype %s "
                            "need %llu", p, t->name, (unsigned long long)(t->end - t->begin), qt_st_dtype_name(t->dtype),
                            (unsigned long long)bytes);
    }
    *data_end = start;
    return QT_OK;
}

static qt_status st_parse(qt_safetensors *st, const uint8_t *buf, size_t size) {
    const char *p = st->path;
    if (size < 8)
        return qt_error(QT_ERR_FORMAT, "%s: field 'header length': file is %zu bytes, shorter than the 8-byte length field", p, size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | buf[i];
    if (n > QT_ST_MAX_HEADER)
        return qt_error(QT_ERR_FORMAT, "%s: field 'header length': %llu bytes exceeds the limit of %u", p,
                        (unsigned long long)n, QT_ST_MAX_HEADER);
    if (n + 8 > size)
        return qt_error(QT_ERR_FORMAT, "%s: field 'header length': header of %llu bytes runs past the end of the file "
                        "(%zu bytes): truncated", p, (unsigned long long)n, size);
    st->header_len = n;
    const uint8_t *hdr = buf + 8;
    int64_t bad = utf8_invalid_at(hdr, (size_t)n);
    if (bad >= 0)
        return qt_error(QT_ERR_FORMAT, "%s: header: invalid UTF-8 at header byte %lld", p, (long long)bad);

    json_error_t jerr;
    st->root = json_loadb((const char *)hdr, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
    if (!st->root)
        return qt_error(QT_ERR_FORMAT, "%s: header: invalid JSON at line %d column %d: %s", p, jerr.line, jerr.column, jerr.text);
    if (!json_is_object(st->root))
        return qt_error(QT_ERR_FORMAT, "%s: header: must be a JSON object mapping tensor names to entries", p);

    size_t cap = json_object_size(st->root);
    st->tensors = calloc(cap ? cap : 1, sizeof *st->tensors);
    st->by_name = calloc(cap ? cap : 1, sizeof *st->by_name);
    if (!st->tensors || !st->by_name) return qt_error(QT_ERR_NOMEM, "%s: out of memory", p);
    const char *key;
    json_t *val;
    qt_status s;
    json_object_foreach(st->root, key, val) {
        if (!strcmp(key, "__metadata__")) {
            if ((s = parse_metadata(st, val)) != QT_OK) return s;
            continue;
        }
        if ((s = parse_tensor_info(st, key, val, &st->tensors[st->n])) != QT_OK) return s;
        st->n++;
    }
    qsort(st->tensors, (size_t)st->n, sizeof *st->tensors, cmp_offsets);

    uint64_t data_end = 0;
    if ((s = validate_offsets(st, &data_end)) != QT_OK) return s;
    uint64_t avail = (uint64_t)size - 8 - n;
    if (data_end != avail) {
        if (data_end > avail)
            return qt_error(QT_ERR_FORMAT, "%s: data: tensors need %llu bytes after the header but the file has %llu: truncated",
                            p, (unsigned long long)data_end, (unsigned long long)avail);
        return qt_error(QT_ERR_FORMAT, "%s: data: %llu bytes after the header but the tensors cover %llu: %llu trailing bytes",
                        p, (unsigned long long)avail, (unsigned long long)data_end, (unsigned long long)(avail - data_end));
    }
    for (int32_t i = 0; i < st->n; i++) {
        qt_st_tensor *t = &st->tensors[i];
        t->file_offset = 8 + n + t->begin;
        t->data = (t->end > t->begin) ? buf + t->file_offset : NULL;
        st->by_name[i] = i;
    }
    qsort_r(st->by_name, (size_t)st->n, sizeof *st->by_name, cmp_by_name, st->tensors);
    return QT_OK;
}

qt_status qt_st_parse(const void *buf, size_t size, const char *label, qt_safetensors **out) {
    *out = NULL;
    qt_safetensors *st = calloc(1, sizeof *st);
    if (!st || !(st->path = strdup(label ? label : "(buffer)"))) {
        free(st);
        return qt_error(QT_ERR_NOMEM, "%s: out of memory", label ? label : "(buffer)");
    }
    qt_status s = st_parse(st, buf, size);
    if (s != QT_OK) { st_free(st); return s; }
    *out = st;
    return QT_OK;
}

qt_status qt_st_open(const char *path, qt_safetensors **out) {
    *out = NULL;
    qt_safetensors *st = calloc(1, sizeof *st);
    if (!st || !(st->path = strdup(path))) {
        free(st);
        return qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
    }
    qt_status s = qt_mmap_open(path, &st->map);
    if (s == QT_OK) s = st_parse(st, st->map.data, st->map.size);
    if (s != QT_OK) { st_free(st); return s; }
    *out = st;
    return QT_OK;
}

const char *qt_st_path(const qt_safetensors *st) { return st->path; }
uint64_t qt_st_header_len(const qt_safetensors *st) { return st->header_len; }
int32_t qt_st_n_tensors(const qt_safetensors *st) { return st->n; }
const qt_st_tensor *qt_st_tensor_at(const qt_safetensors *st, int32_t i) {
    return (i >= 0 && i < st->n) ? &st->tensors[i] : NULL;
}

const qt_st_tensor *qt_st_find(const qt_safetensors *st, const char *name) {
    int32_t lo = 0, hi = st->n - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        const qt_st_tensor *t = &st->tensors[st->by_name[mid]];
        int c = strcmp(name, t->name);
        if (!c) return t;
        if (c < 0) hi = mid - 1; else lo = mid + 1;
    }
    return NULL;
}

int32_t qt_st_n_metadata(const qt_safetensors *st) { return st->n_meta; }
const char *qt_st_metadata_key(const qt_safetensors *st, int32_t i) {
    return (i >= 0 && i < st->n_meta) ? st->meta_keys[i] : NULL;
}
const char *qt_st_metadata_value(const qt_safetensors *st, int32_t i) {
    return (i >= 0 && i < st->n_meta) ? st->meta_values[i] : NULL;
}
const char *qt_st_metadata_get(const qt_safetensors *st, const char *key) {
    for (int32_t i = 0; i < st->n_meta; i++)
        if (!strcmp(st->meta_keys[i], key)) return st->meta_values[i];
    return NULL;
}

/* ---- checkpoints ------------------------------------------------------------------ */

typedef struct ck_entry {
    const qt_st_tensor *t;
    int32_t file;
} ck_entry;

struct qt_st_checkpoint {
    char *path;
    bool sharded;
    qt_safetensors **files;  /* (n_files) */
    int32_t n_files;
    ck_entry *all;           /* (n_all) sorted by name */
    int32_t n_all;
};

void qt_st_checkpoint_close(qt_st_checkpoint *c) {
    if (!c) return;
    for (int32_t i = 0; i < c->n_files; i++) st_free(c->files[i]);
    free(c->files);
    free(c->all);
    free(c->path);
    free(c);
}

static int cmp_entry(const void *a, const void *b) {
    const ck_entry *x = a, *y = b;
    int c = strcmp(x->t->name, y->t->name);
    return c ? c : (x->file - y->file);
}

/* The merged, name-sorted table; refuses a name present in two files. */
static qt_status ck_build_table(qt_st_checkpoint *c) {
    int64_t total = 0;
    for (int32_t f = 0; f < c->n_files; f++) total += qt_st_n_tensors(c->files[f]);
    c->all = calloc(total ? (size_t)total : 1, sizeof *c->all);
    if (!c->all) return qt_error(QT_ERR_NOMEM, "%s: out of memory", c->path);
    for (int32_t f = 0; f < c->n_files; f++)
        for (int32_t i = 0; i < qt_st_n_tensors(c->files[f]); i++)
            c->all[c->n_all++] = (ck_entry){qt_st_tensor_at(c->files[f], i), f};
    qsort(c->all, (size_t)c->n_all, sizeof *c->all, cmp_entry);
    for (int32_t i = 1; i < c->n_all; i++)
        if (!strcmp(c->all[i].t->name, c->all[i - 1].t->name))
            return qt_error(QT_ERR_FORMAT, "%s: duplicate tensor '%s': present in shard '%s' and in shard '%s'", c->path,
                            c->all[i].t->name, qt_st_path(c->files[c->all[i - 1].file]), qt_st_path(c->files[c->all[i].file]));
    return QT_OK;
}

static bool plain_file_name(const char *s) {
    return s[0] && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '/');
}

static char *path_join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* Opens every shard the index names, in order of first mention. */
static qt_status ck_open_shards(qt_st_checkpoint *c, json_t *wmap, const char *dir, const char ***names_out) {
    const char *ip = c->path;
    size_t n = json_object_size(wmap);
    const char **names = calloc(n ? n : 1, sizeof *names);
    c->files = calloc(n ? n : 1, sizeof *c->files);
    *names_out = names;
    if (!names || !c->files) return qt_error(QT_ERR_NOMEM, "%s: out of memory", ip);
    const char *tname;
    json_t *v;
    json_object_foreach(wmap, tname, v) {
        if (!json_is_string(v))
            return qt_error(QT_ERR_FORMAT, "%s: field 'weight_map.%s': shard file name must be a string", ip, tname);
        const char *shard = json_string_value(v);
        if (!plain_file_name(shard))
            return qt_error(QT_ERR_FORMAT, "%s: field 'weight_map.%s': shard \"%s\" is not a plain file name in the "
                            "index's directory", ip, tname, shard);
        bool seen = false;
        for (int32_t i = 0; i < c->n_files && !seen; i++) seen = !strcmp(names[i], shard);
        if (seen) continue;
        char *sp = path_join(dir, shard);
        if (!sp) return qt_error(QT_ERR_NOMEM, "%s: out of memory", ip);
        struct stat sb;
        if (stat(sp, &sb) != 0) {
            qt_status s = qt_error(QT_ERR_NOT_FOUND, "%s: field 'weight_map.%s': shard '%s' is missing: %s", ip, tname,
                                   sp, strerror(errno));
            free(sp);
            return s;
        }
        qt_status s = qt_st_open(sp, &c->files[c->n_files]);
        free(sp);
        if (s != QT_OK) return s;
        names[c->n_files++] = shard;
    }
    return QT_OK;
}

/* Coverage: every index entry is in the shard it names; every shard tensor is listed. */
static qt_status ck_check_coverage(qt_st_checkpoint *c, json_t *wmap, const char **names) {
    const char *ip = c->path;
    const char *tname;
    json_t *v;
    json_object_foreach(wmap, tname, v) {
        const char *shard = json_string_value(v);
        int32_t f = 0;
        while (strcmp(names[f], shard)) f++;
        if (!qt_st_find(c->files[f], tname))
            return qt_error(QT_ERR_FORMAT, "%s: field 'weight_map.%s': tensor is listed in shard '%s' but that file does "
                            "not contain it", ip, tname, qt_st_path(c->files[f]));
    }
    for (int32_t i = 0; i < c->n_all; i++) {
        json_t *e = json_object_get(wmap, c->all[i].t->name);
        if (!e)
            return qt_error(QT_ERR_FORMAT, "%s: field 'weight_map': tensor '%s' of shard '%s' is not listed in the index", ip,
                            c->all[i].t->name, qt_st_path(c->files[c->all[i].file]));
    }
    return QT_OK;
}

static qt_status ck_open_index(qt_st_checkpoint *c) {
    const char *ip = c->path;
    char *text = NULL;
    size_t len;
    qt_status s = qt_read_file(ip, &text, &len);
    if (s != QT_OK) return s;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (!root)
        return qt_error(QT_ERR_FORMAT, "%s: invalid JSON at line %d column %d: %s", ip, jerr.line, jerr.column, jerr.text);
    const char **names = NULL;
    json_t *wmap = json_object_get(root, "weight_map");
    if (!json_is_object(root)) s = qt_error(QT_ERR_FORMAT, "%s: must be a JSON object", ip);
    else if (!wmap) s = qt_error(QT_ERR_FORMAT, "%s: field 'weight_map' missing", ip);
    else if (!json_is_object(wmap)) s = qt_error(QT_ERR_FORMAT, "%s: field 'weight_map' must be an object", ip);
    else if (json_object_size(wmap) == 0) s = qt_error(QT_ERR_FORMAT, "%s: field 'weight_map' is empty", ip);
    if (s == QT_OK) {
        char *dcopy = strdup(ip);
        if (!dcopy) s = qt_error(QT_ERR_NOMEM, "%s: out of memory", ip);
        else {
            s = ck_open_shards(c, wmap, dirname(dcopy), &names);
            free(dcopy);
        }
    }
    if (s == QT_OK) s = ck_build_table(c);
    if (s == QT_OK) s = ck_check_coverage(c, wmap, names);
    free(names);
    json_decref(root);
    return s;
}

static bool is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

qt_status qt_st_checkpoint_open(const char *path, qt_st_checkpoint **out) {
    *out = NULL;
    qt_st_checkpoint *c = calloc(1, sizeof *c);
    if (!c) return qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
    if (is_dir(path)) {
        char *single = path_join(path, QT_ST_SINGLE_NAME), *index = path_join(path, QT_ST_INDEX_NAME);
        if (!single || !index) { free(single); free(index); free(c); return qt_error(QT_ERR_NOMEM, "%s: out of memory", path); }
        if (exists(single)) { c->path = single; free(index); }
        else if (exists(index)) { c->path = index; free(single); c->sharded = true; }
        else {
            free(single); free(index); free(c);
            return qt_error(QT_ERR_NOT_FOUND, "%s: no %s or %s in this directory", path, QT_ST_SINGLE_NAME, QT_ST_INDEX_NAME);
        }
    } else {
        c->path = strdup(path);
        if (!c->path) { free(c); return qt_error(QT_ERR_NOMEM, "%s: out of memory", path); }
        c->sharded = ends_with(path, ".json");
    }
    qt_status s;
    if (c->sharded) {
        s = ck_open_index(c);
    } else {
        c->files = calloc(1, sizeof *c->files);
        s = c->files ? qt_st_open(c->path, &c->files[0]) : qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
        if (s == QT_OK) c->n_files = 1;
        if (s == QT_OK) s = ck_build_table(c);
    }
    if (s != QT_OK) { qt_st_checkpoint_close(c); return s; }
    *out = c;
    return QT_OK;
}

bool qt_st_checkpoint_sharded(const qt_st_checkpoint *c) { return c->sharded; }
int32_t qt_st_checkpoint_n_files(const qt_st_checkpoint *c) { return c->n_files; }
const qt_safetensors *qt_st_checkpoint_file(const qt_st_checkpoint *c, int32_t i) {
    return (i >= 0 && i < c->n_files) ? c->files[i] : NULL;
}
int32_t qt_st_checkpoint_n_tensors(const qt_st_checkpoint *c) { return c->n_all; }

const qt_st_tensor *qt_st_checkpoint_tensor(const qt_st_checkpoint *c, int32_t i, int32_t *file_index) {
    if (i < 0 || i >= c->n_all) return NULL;
    if (file_index) *file_index = c->all[i].file;
    return c->all[i].t;
}

const qt_st_tensor *qt_st_checkpoint_find(const qt_st_checkpoint *c, const char *name, int32_t *file_index) {
    int32_t lo = 0, hi = c->n_all - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int r = strcmp(name, c->all[mid].t->name);
        if (!r) {
            if (file_index) *file_index = c->all[mid].file;
            return c->all[mid].t;
        }
        if (r < 0) hi = mid - 1; else lo = mid + 1;
    }
    return NULL;
}

/* ---- writer ------------------------------------------------------------------------ */

struct qt_st_writer {
    qt_afile *f;
    char *path;
    int32_t n;
    int32_t *order;     /* (n) caller indices in file order */
    uint64_t total;     /* data bytes declared */
    uint64_t written;   /* data bytes received */
};

/* The reference writer's order: dtype descending, then name ascending. */
static int cmp_write_order(const void *a, const void *b, void *base) {
    const qt_st_entry *e = base;
    const qt_st_entry *x = &e[*(const int32_t *)a], *y = &e[*(const int32_t *)b];
    if (x->dtype != y->dtype) return x->dtype > y->dtype ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_entry_name(const void *a, const void *b, void *base) {
    const qt_st_entry *e = base;
    return strcmp(e[*(const int32_t *)a].name, e[*(const int32_t *)b].name);
}

static qt_status check_entries(const char *path, const qt_st_entry *e, int32_t n, const int32_t *order) {
    for (int32_t i = 0; i < n; i++) {
        if (!e[i].name) return qt_error(QT_ERR_ARG, "%s: tensor %d has no name", path, i);
        if ((unsigned)e[i].dtype >= QT_ST_DTYPE_COUNT)
            return qt_error(QT_ERR_ARG, "%s: tensor '%s': dtype %d out of range", path, e[i].name, (int)e[i].dtype);
        if (e[i].n_dims < 0 || e[i].n_dims > QT_ST_MAX_DIMS)
            return qt_error(QT_ERR_ARG, "%s: tensor '%s': %d dimensions (0..%d allowed)", path, e[i].name, e[i].n_dims, QT_ST_MAX_DIMS);
        for (int32_t d = 0; d < e[i].n_dims; d++)
            if (e[i].shape[d] < 0) return qt_error(QT_ERR_ARG, "%s: tensor '%s': negative dimension", path, e[i].name);
        uint64_t b;
        int r = span_bytes(e[i].shape, e[i].n_dims, e[i].dtype, &b);
        if (r) return qt_error(QT_ERR_ARG, "%s: tensor '%s': %s", path, e[i].name,
                               r == 1 ? "size overflows" : "elements do not fill whole bytes");
        if (!strcmp(e[i].name, "__metadata__"))
            return qt_error(QT_ERR_ARG, "%s: tensor name '__metadata__' is reserved", path);
        if (utf8_invalid_at((const uint8_t *)e[i].name, strlen(e[i].name)) >= 0)
            return qt_error(QT_ERR_ARG, "%s: tensor name '%s' is not valid UTF-8", path, e[i].name);
    }
    /* Duplicates: sort a scratch copy of the order by name, compare neighbours. */
    int32_t *by_name = malloc((size_t)(n ? n : 1) * sizeof *by_name);
    if (!by_name) return qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
    memcpy(by_name, order, (size_t)n * sizeof *by_name);
    qsort_r(by_name, (size_t)n, sizeof *by_name, cmp_entry_name, (void *)e);
    qt_status s = QT_OK;
    for (int32_t k = 1; k < n && s == QT_OK; k++)
        if (!strcmp(e[by_name[k]].name, e[by_name[k - 1]].name))
            s = qt_error(QT_ERR_ARG, "%s: duplicate tensor name '%s'", path, e[by_name[k]].name);
    free(by_name);
    return s;
}

static json_t *build_header(const qt_st_entry *e, int32_t n, const int32_t *order, const qt_st_kv *meta, int32_t n_meta,
                            uint64_t *total) {
    json_t *root = json_object();
    if (!root) return NULL;
    if (meta && n_meta > 0) {
        /* Sorted keys: the reference's HashMap order is arbitrary; ours is deterministic. */
        const qt_st_kv **sorted = malloc((size_t)n_meta * sizeof *sorted);
        json_t *m = json_object();
        if (!sorted || !m) { free(sorted); json_decref(m); json_decref(root); return NULL; }
        for (int32_t i = 0; i < n_meta; i++) sorted[i] = &meta[i];
        for (int32_t i = 1; i < n_meta; i++)
            for (int32_t j = i; j > 0 && strcmp(sorted[j - 1]->key, sorted[j]->key) > 0; j--) {
                const qt_st_kv *t = sorted[j]; sorted[j] = sorted[j - 1]; sorted[j - 1] = t;
            }
        bool ok = true;
        for (int32_t i = 0; i < n_meta && ok; i++)
            ok = json_object_set_new(m, sorted[i]->key, json_string(sorted[i]->value)) == 0;
        free(sorted);
        if (!ok || json_object_set_new(root, "__metadata__", m) != 0) { json_decref(root); return NULL; }
    }
    uint64_t off = 0;
    for (int32_t k = 0; k < n; k++) {
        const qt_st_entry *t = &e[order[k]];
        uint64_t b = qt_st_entry_nbytes(t);
        json_t *info = json_object(), *shape = json_array(), *offs = json_array();
        bool ok = info && shape && offs;
        for (int32_t d = 0; d < t->n_dims && ok; d++) ok = json_array_append_new(shape, json_integer(t->shape[d])) == 0;
        ok = ok && json_array_append_new(offs, json_integer((json_int_t)off)) == 0 &&
             json_array_append_new(offs, json_integer((json_int_t)(off + b))) == 0;
        /* Field order as the reference serializes TensorInfo: dtype, shape, data_offsets. */
        ok = ok && json_object_set_new(info, "dtype", json_string(qt_st_dtype_name(t->dtype))) == 0 &&
             json_object_set(info, "shape", shape) == 0 && json_object_set(info, "data_offsets", offs) == 0 &&
             json_object_set(root, t->name, info) == 0;
        json_decref(shape);
        json_decref(offs);
        json_decref(info);
        if (!ok) { json_decref(root); return NULL; }
        off += b;
    }
    *total = off;
    return root;
}

qt_status qt_st_writer_open(const char *path, const qt_st_entry *entries, int32_t n, const qt_st_kv *meta, int32_t n_meta,
                            qt_st_writer **out) {
    return qt_st_writer_open_staged(path, entries, n, meta, n_meta, NULL, out);
}

/* A resumed staging file must start with the header this run writes: else it is another run's. */
static qt_status same_header(qt_st_writer *w, const uint8_t *lenbuf, const char *text, size_t len, size_t padded) {
    uint8_t *have = malloc(8 + padded);
    if (!have) return qt_error(QT_ERR_NOMEM, "%s: out of memory", w->path);
    qt_status s = qt_afile_read_at(w->f, 0, have, 8 + padded);
    bool same = s == QT_OK && !memcmp(have, lenbuf, 8) && !memcmp(have + 8, text, len);
    for (size_t i = len; same && i < padded; i++) same = have[8 + i] == ' ';
    free(have);
    if (s == QT_OK && !same)
        s = qt_error(QT_ERR_FORMAT, "%s: the partial file's header differs from the one this run writes: it is not this "
                     "run's (run without --resume to start again)", w->path);
    return s;
}

qt_status qt_st_writer_open_staged(const char *path, const qt_st_entry *entries, int32_t n, const qt_st_kv *meta,
                                   int32_t n_meta, const qt_afile_stage *stage, qt_st_writer **out) {
    *out = NULL;
    if (n < 0 || n_meta < 0) return qt_error(QT_ERR_ARG, "%s: negative tensor or metadata count", path);
    for (int32_t i = 0; i < n_meta; i++)
        if (!meta[i].key || !meta[i].value) return qt_error(QT_ERR_ARG, "%s: metadata entry %d has no key or value", path, i);
    qt_st_writer *w = calloc(1, sizeof *w);
    if (!w) return qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
    w->n = n;
    w->order = malloc((size_t)(n ? n : 1) * sizeof *w->order);
    w->path = strdup(path);
    if (!w->order || !w->path) { qt_st_writer_abort(w); return qt_error(QT_ERR_NOMEM, "%s: out of memory", path); }
    for (int32_t i = 0; i < n; i++) w->order[i] = i;
    qt_status s = check_entries(path, entries, n, w->order);
    if (s != QT_OK) { qt_st_writer_abort(w); return s; }
    qsort_r(w->order, (size_t)n, sizeof *w->order, cmp_write_order, (void *)entries);

    json_t *root = build_header(entries, n, w->order, meta, n_meta, &w->total);
    char *text = root ? json_dumps(root, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(root);
    if (!text) { qt_st_writer_abort(w); return qt_error(QT_ERR_ARG, "%s: cannot encode the header (invalid UTF-8 in metadata?)", path); }
    size_t len = strlen(text);
    size_t padded = (len + 7) / 8 * 8; /* spaces up to a multiple of 8 (§1.4) */
    uint8_t lenbuf[8];
    for (int i = 0; i < 8; i++) lenbuf[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    const uint64_t head = 8 + (uint64_t)padded, at = stage ? stage->resume_at : 0;
    if (at && (at < head || at > head + w->total)) {
        free(text);
        const qt_status e = qt_error(QT_ERR_FORMAT, "%s: %llu bytes recorded as complete, outside this file's %llu header "
                                     "and %llu data bytes", path, (unsigned long long)at, (unsigned long long)head,
                                     (unsigned long long)w->total);
        qt_st_writer_abort(w); /* frees w: the message is made first */
        return e;
    }
    s = stage ? qt_afile_open_staged(path, stage, &w->f) : qt_afile_open(path, &w->f);
    if (s == QT_OK && at) {
        s = same_header(w, lenbuf, text, len, padded);
        w->written = at - head;
    } else {
        if (s == QT_OK) s = qt_afile_write(w->f, lenbuf, 8);
        if (s == QT_OK) s = qt_afile_write(w->f, text, len);
        if (s == QT_OK) s = qt_afile_pad(w->f, padded - len, ' ');
    }
    free(text);
    if (s != QT_OK) { qt_st_writer_abort(w); return s; }
    *out = w;
    return QT_OK;
}

int32_t qt_st_writer_order(const qt_st_writer *w, int32_t k) { return (k >= 0 && k < w->n) ? w->order[k] : -1; }

uint64_t qt_st_writer_tell(const qt_st_writer *w) { return qt_afile_tell(w->f); }
uint64_t qt_st_writer_data_written(const qt_st_writer *w) { return w->written; }
qt_status qt_st_writer_sync(qt_st_writer *w) { return qt_afile_sync(w->f); }

qt_status qt_st_writer_write(qt_st_writer *w, const void *buf, size_t n) {
    if (w->written + n > w->total)
        return qt_error(QT_ERR_ARG, "%s: more tensor data than the header declares (%llu bytes)", w->path,
                        (unsigned long long)w->total);
    qt_status s = qt_afile_write(w->f, buf, n);
    if (s == QT_OK) w->written += n;
    return s;
}

static void writer_free(qt_st_writer *w) {
    free(w->order);
    free(w->path);
    free(w);
}

void qt_st_writer_abort(qt_st_writer *w) {
    if (!w) return;
    qt_afile_abort(w->f);
    writer_free(w);
}

qt_status qt_st_writer_finish(qt_st_writer *w, qt_afile **file_out) {
    *file_out = NULL;
    if (w->written != w->total) {
        qt_status s = qt_error(QT_ERR_ARG, "%s: %llu bytes of tensor data written, header declares %llu", w->path,
                               (unsigned long long)w->written, (unsigned long long)w->total);
        qt_st_writer_abort(w);
        return s;
    }
    *file_out = w->f;
    writer_free(w);
    return QT_OK;
}

qt_status qt_st_writer_commit(qt_st_writer *w) {
    qt_afile *f;
    qt_status s = qt_st_writer_finish(w, &f);
    return s == QT_OK ? qt_afile_commit(f) : s;
}

qt_status qt_st_write(const char *path, const qt_st_entry *entries, int32_t n, const qt_st_kv *meta, int32_t n_meta) {
    qt_st_writer *w;
    qt_status s = qt_st_writer_open(path, entries, n, meta, n_meta, &w);
    for (int32_t k = 0; s == QT_OK && k < n; k++) {
        const qt_st_entry *e = &entries[qt_st_writer_order(w, k)];
        uint64_t b = qt_st_entry_nbytes(e);
        if (b && !e->data) s = qt_error(QT_ERR_ARG, "%s: tensor '%s' has no data", path, e->name);
        else if (b) s = qt_st_writer_write(w, e->data, (size_t)b);
    }
    if (s != QT_OK) { qt_st_writer_abort(w); return s; }
    return qt_st_writer_commit(w);
}

void qt__st_checkpoint_drop_pages(const qt_st_checkpoint *c, const qt_st_tensor *t) {
    const long pg = sysconf(_SC_PAGESIZE);
    if (!c || !t || pg <= 0) return;
    const uint8_t *p = t->data;
    const size_t n = (size_t)(t->end - t->begin);
    for (int32_t i = 0; i < c->n_files; i++) {
        const qt_mmap *mp = &c->files[i]->map;
        if (!mp->data || p < (const uint8_t *)mp->data || n > mp->size ||
            (size_t)(p - (const uint8_t *)mp->data) > mp->size - n)
            continue;
        const uintptr_t a = ((uintptr_t)p + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
        const uintptr_t b = ((uintptr_t)p + n) & ~((uintptr_t)pg - 1);
        if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
        return;
    }
}
