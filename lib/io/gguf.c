/* lib/io/gguf.c — GGUF v2/v3 container: validating parser and metadata API.
 *
 * Layout and the rules ggml's own reader enforces: docs/formats.md §2.1-§2.2.
 * Nothing read from the file is trusted before it is checked against the
 * bytes that remain: counts are bounded by the smallest encoding of one
 * element, lengths by what is left, products by INT64_MAX, offsets by the
 * cumulative layout ggml requires and by the file size. Every failure is one
 * QT_ERR_FORMAT (or QT_ERR_UNSUPPORTED) message "<file>: <field>: <problem>".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "io_internal.h"
#include "model/model_internal.h"

#define GGUF_DEFAULT_ALIGNMENT 32u
#define GGUF_MAX_STRING ((uint64_t)1 << 30) /* ggml refuses longer strings */
#define GGUF_MAX_NAME 63u                    /* GGML_MAX_NAME (64) minus the NUL */
#define GGUF_MAX_DEPTH 8                     /* arrays of arrays: the spec allows them, ggml refuses them */

struct qt_gguf {
    char *name;
    qt_mmap map;            /* owned when opened from a path */
    const uint8_t *data;
    size_t size;
    uint32_t version, alignment;
    uint64_t data_offset;
    int64_t n_kv;
    qt_gguf_kv *kv;         /* (n_kv) */
    int64_t n_tensors;
    qt_gguf_tensor *tensors; /* (n_tensors) */
    qt__name_index kv_index, tensor_index;
    qt__arena arena;        /* keys, strings, array items */
};

typedef struct cursor {
    const uint8_t *base;
    size_t size, pos;
    const char *name;
} cursor;

static const char *const type_names[QT_GGUF_TYPE_COUNT] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
    "bool", "string", "array", "uint64", "int64", "float64",
};
static const size_t type_sizes[QT_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

const char *qt_gguf_type_name(qt_gguf_type t) {
    return ((unsigned)t < QT_GGUF_TYPE_COUNT) ? type_names[t] : "?";
}

size_t qt_gguf_type_size(qt_gguf_type t) {
    return ((unsigned)t < QT_GGUF_TYPE_COUNT) ? type_sizes[t] : 0;
}

/* ---- cursor ------------------------------------------------------------- */
static size_t left(const cursor *c) { return c->size - c->pos; }

static qt_status truncated(const cursor *c, const char *field, uint64_t need) {
    return qt_error(QT_ERR_FORMAT, "%s: %s: truncated at offset %zu (needs %" PRIu64 " bytes, %zu left in the file)",
                    c->name, field, c->pos, need, left(c));
}

static qt_status take(cursor *c, size_t n, const char *field, const uint8_t **out) {
    *out = c->base;
    if (left(c) < n) return truncated(c, field, n);
    *out = c->base + c->pos;
    c->pos += n;
    return QT_OK;
}

static qt_status rd_u32(cursor *c, const char *field, uint32_t *v) {
    const uint8_t *p;
    *v = 0;
    qt_status s = take(c, 4, field, &p);
    if (s == QT_OK) *v = qt__ld_u32(p);
    return s;
}

static qt_status rd_u64(cursor *c, const char *field, uint64_t *v) {
    const uint8_t *p;
    *v = 0;
    qt_status s = take(c, 8, field, &p);
    if (s == QT_OK) *v = qt__ld_u64(p);
    return s;
}

/* A GGUF string: u64 length + bytes, copied NUL-terminated into the arena. */
static qt_status rd_string(qt_gguf *g, cursor *c, const char *field, const char **out, uint64_t *len) {
    uint64_t n;
    *out = "";
    *len = 0;
    qt_status s = rd_u64(c, field, &n);
    if (s != QT_OK) return s;
    if (n > left(c))
        return qt_error(QT_ERR_FORMAT, "%s: %s: string length %" PRIu64 " at offset %zu exceeds the %zu bytes left in the file",
                        c->name, field, n, c->pos - 8, left(c));
    if (n > GGUF_MAX_STRING)
        return qt_error(QT_ERR_FORMAT, "%s: %s: string length %" PRIu64 " exceeds 1 GiB", c->name, field, n);
    char *p = qt__arena_strndup(&g->arena, c->base + c->pos, (size_t)n);
    if (!p) return qt_error(QT_ERR_NOMEM, "%s: %s: out of memory", c->name, field);
    c->pos += (size_t)n;
    *out = p;
    *len = n;
    return QT_OK;
}

/* ---- values ------------------------------------------------------------- */
static qt_status check_bool(const cursor *c, const char *field, uint8_t b) {
    if (b > 1) return qt_error(QT_ERR_FORMAT, "%s: %s: boolean value %u is not 0 or 1", c->name, field, b);
    return QT_OK;
}

static void load_scalar(qt_gguf_type t, const uint8_t *p, qt_gguf_value *v) {
    switch (t) {
    case QT_GGUF_UINT8: v->u64 = p[0]; break;
    case QT_GGUF_INT8: v->i64 = (int8_t)p[0]; break;
    case QT_GGUF_UINT16: v->u64 = qt__ld_u16(p); break;
    case QT_GGUF_INT16: v->i64 = (int16_t)qt__ld_u16(p); break;
    case QT_GGUF_UINT32: v->u64 = qt__ld_u32(p); break;
    case QT_GGUF_INT32: v->i64 = (int32_t)qt__ld_u32(p); break;
    case QT_GGUF_FLOAT32: { float f; memcpy(&f, p, 4); v->f64 = f; break; }
    case QT_GGUF_BOOL: v->b = p[0] != 0; break;
    case QT_GGUF_UINT64: v->u64 = qt__ld_u64(p); break;
    case QT_GGUF_INT64: v->i64 = (int64_t)qt__ld_u64(p); break;
    case QT_GGUF_FLOAT64: memcpy(&v->f64, p, 8); break;
    default: break;
    }
}

static qt_status rd_value(qt_gguf *g, cursor *c, qt_gguf_type type, int depth, const char *field, qt_gguf_value *v);

static qt_status rd_array(qt_gguf *g, cursor *c, int depth, const char *field, qt_gguf_value *v) {
    uint32_t et;
    uint64_t n;
    qt_status s = rd_u32(c, field, &et);
    if (s == QT_OK) s = rd_u64(c, field, &n);
    if (s != QT_OK) return s;
    if (et >= QT_GGUF_TYPE_COUNT)
        return qt_error(QT_ERR_FORMAT, "%s: %s: unknown array element type %" PRIu32, c->name, field, et);
    if (et == QT_GGUF_ARRAY && depth + 1 >= GGUF_MAX_DEPTH)
        return qt_error(QT_ERR_FORMAT, "%s: %s: arrays nested deeper than %d levels", c->name, field, GGUF_MAX_DEPTH);
    v->arr.type = (qt_gguf_type)et;
    v->arr.n = n;
    size_t esize = type_sizes[et];
    if (esize) {
        if (n > left(c) / esize)
            return qt_error(QT_ERR_FORMAT, "%s: %s: array of %" PRIu64 " %s values exceeds the %zu bytes left in the file",
                            c->name, field, n, type_names[et], left(c));
        const uint8_t *p;
        take(c, (size_t)n * esize, field, &p);
        if (et == QT_GGUF_BOOL)
            for (uint64_t i = 0; i < n; i++)
                if ((s = check_bool(c, field, p[i])) != QT_OK) return s;
        v->arr.raw = p;
        return QT_OK;
    }
    /* Strings take at least 8 bytes each, nested arrays 12: bound n before allocating. */
    size_t min_elem = et == QT_GGUF_STRING ? 8 : 12;
    if (n > left(c) / min_elem)
        return qt_error(QT_ERR_FORMAT, "%s: %s: array of %" PRIu64 " %s values cannot fit in the %zu bytes left in the file",
                        c->name, field, n, type_names[et], left(c));
    qt_gguf_value *items = qt__arena_alloc(&g->arena, (size_t)n * sizeof *items);
    if (!items) return qt_error(QT_ERR_NOMEM, "%s: %s: out of memory", c->name, field);
    for (uint64_t i = 0; i < n; i++) {
        items[i].type = (qt_gguf_type)et;
        if ((s = rd_value(g, c, (qt_gguf_type)et, depth + 1, field, &items[i])) != QT_OK) return s;
    }
    v->arr.items = items;
    return QT_OK;
}

static qt_status rd_value(qt_gguf *g, cursor *c, qt_gguf_type type, int depth, const char *field, qt_gguf_value *v) {
    v->type = type;
    if (type == QT_GGUF_STRING) return rd_string(g, c, field, &v->str.ptr, &v->str.len);
    if (type == QT_GGUF_ARRAY) return rd_array(g, c, depth, field, v);
    const uint8_t *p;
    qt_status s = take(c, type_sizes[type], field, &p);
    if (s != QT_OK) return s;
    if (type == QT_GGUF_BOOL && (s = check_bool(c, field, p[0])) != QT_OK) return s;
    load_scalar(type, p, v);
    return QT_OK;
}

/* ---- header, metadata, tensor infos -------------------------------------- */
static qt_status parse_header(cursor *c, uint32_t *version, uint64_t *n_tensors, uint64_t *n_kv) {
    if (c->size < 4 || memcmp(c->base, "GGUF", 4) != 0) {
        uint8_t m[4] = {0};
        memcpy(m, c->base, c->size < 4 ? c->size : 4);
        return qt_error(QT_ERR_FORMAT, "%s: magic: not a GGUF file (starts with %02x %02x %02x %02x, expected 'GGUF')",
                        c->name, m[0], m[1], m[2], m[3]);
    }
    c->pos = 4;
    qt_status s = rd_u32(c, "header: version", version);
    if (s == QT_OK) s = rd_u64(c, "header: tensor_count", n_tensors);
    if (s == QT_OK) s = rd_u64(c, "header: metadata_kv_count", n_kv);
    if (s != QT_OK) return s;
    uint32_t v = *version;
    if (v == 0 || (v & 0xFFFF) == 0)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: header: version field 0x%08" PRIx32 " is invalid or byte-swapped "
                        "(big-endian GGUF files are not supported)", c->name, v);
    if (v == 1)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: header: GGUF v1 (32-bit counts) is not supported; re-convert it with a current llama.cpp", c->name);
    if (v > 3)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: header: GGUF version %" PRIu32 " is not supported (2 and 3 are)", c->name, v);
    /* Smallest encodings: a KV is key(8+1) + type(4) + a 1-byte value; a
     * tensor info is name(8+1) + n_dims(4) + type(4) + offset(8). */
    if (*n_kv > left(c) / 14)
        return qt_error(QT_ERR_FORMAT, "%s: header: metadata_kv_count %" PRIu64 " cannot fit in a file of %zu bytes",
                        c->name, *n_kv, c->size);
    if (*n_tensors > left(c) / 25)
        return qt_error(QT_ERR_FORMAT, "%s: header: tensor_count %" PRIu64 " cannot fit in a file of %zu bytes",
                        c->name, *n_tensors, c->size);
    return QT_OK;
}

static const char *kv_key(const void *ctx, int64_t i) { return ((const qt_gguf *)ctx)->kv[i].key; }
static const char *tensor_name(const void *ctx, int64_t i) { return ((const qt_gguf *)ctx)->tensors[i].name; }

static qt_status parse_kvs(qt_gguf *g, cursor *c) {
    char field[160];
    for (int64_t i = 0; i < g->n_kv; i++) {
        qt_gguf_kv *kv = &g->kv[i];
        uint64_t klen;
        snprintf(field, sizeof field, "metadata key #%" PRId64, i);
        qt_status s = rd_string(g, c, field, &kv->key, &klen);
        if (s != QT_OK) return s;
        if (klen == 0) return qt_error(QT_ERR_FORMAT, "%s: %s: empty key", g->name, field);
        if (strlen(kv->key) != klen) return qt_error(QT_ERR_FORMAT, "%s: %s: key contains a NUL byte", g->name, field);
        snprintf(field, sizeof field, "key '%.120s'", kv->key);
        uint32_t type;
        if ((s = rd_u32(c, field, &type)) != QT_OK) return s;
        if (type >= QT_GGUF_TYPE_COUNT)
            return qt_error(QT_ERR_FORMAT, "%s: %s: unknown value type %" PRIu32, g->name, field, type);
        if ((s = rd_value(g, c, (qt_gguf_type)type, 0, field, &kv->value)) != QT_OK) return s;
    }
    int64_t dup;
    if (qt__name_index_build(&g->kv_index, g->n_kv, kv_key, g, &dup) != QT_OK)
        return qt_error(QT_ERR_NOMEM, "%s: out of memory", g->name);
    if (dup >= 0) return qt_error(QT_ERR_FORMAT, "%s: key '%s': duplicate metadata key", g->name, g->kv[dup].key);
    return QT_OK;
}

static qt_status parse_alignment(qt_gguf *g) {
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    const qt_gguf_value *v = qt_gguf_find(g, "general.alignment");
    if (!v) return QT_OK;
    if (v->type != QT_GGUF_UINT32)
        return qt_error(QT_ERR_FORMAT, "%s: key 'general.alignment': type %s, must be uint32", g->name,
                        type_names[v->type]);
    if (v->u64 == 0 || (v->u64 & (v->u64 - 1)) != 0)
        return qt_error(QT_ERR_FORMAT, "%s: key 'general.alignment': %" PRIu64 " is not a power of two", g->name, v->u64);
    g->alignment = (uint32_t)v->u64;
    return QT_OK;
}

static qt_status parse_tensor_info(qt_gguf *g, cursor *c, int64_t i) {
    qt_gguf_tensor *t = &g->tensors[i];
    char field[160];
    snprintf(field, sizeof field, "tensor info #%" PRId64, i);
    uint64_t nlen;
    qt_status s = rd_string(g, c, field, &t->name, &nlen);
    if (s != QT_OK) return s;
    if (nlen == 0) return qt_error(QT_ERR_FORMAT, "%s: %s: empty tensor name", g->name, field);
    if (nlen > GGUF_MAX_NAME)
        return qt_error(QT_ERR_FORMAT, "%s: %s: tensor name '%.40s...' is %" PRIu64 " bytes long (ggml's limit is %u)",
                        g->name, field, t->name, nlen, GGUF_MAX_NAME);
    if (strlen(t->name) != nlen) return qt_error(QT_ERR_FORMAT, "%s: %s: tensor name contains a NUL byte", g->name, field);
    snprintf(field, sizeof field, "tensor '%s'", t->name);
    if ((s = rd_u32(c, field, &t->n_dims)) != QT_OK) return s;
    if (t->n_dims > QT_MAX_DIMS)
        return qt_error(QT_ERR_FORMAT, "%s: %s: %" PRIu32 " dimensions (at most %d)", g->name, field, t->n_dims, QT_MAX_DIMS);
    for (int d = 0; d < QT_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        uint64_t ne;
        if ((s = rd_u64(c, field, &ne)) != QT_OK) return s;
        if (ne > (uint64_t)INT64_MAX)
            return qt_error(QT_ERR_FORMAT, "%s: %s: dimension %" PRIu32 " is %" PRIu64 " (negative as int64)", g->name, field, d, ne);
        t->ne[d] = (int64_t)ne;
    }
    uint32_t type;
    if ((s = rd_u32(c, field, &type)) != QT_OK) return s;
    if ((s = rd_u64(c, field, &t->offset)) != QT_OK) return s;
    const qt_type_traits *tr = qt_type_get((qt_type)type);
    if (!tr || tr->engine_only) return qt_error(QT_ERR_FORMAT, "%s: %s: unknown type id %" PRIu32, g->name, field, type);
    t->type = (qt_type)type;
    /* Element count must fit int64 (ggml checks the same products). */
    int64_t nel = 1;
    for (int d = 0; d < QT_MAX_DIMS; d++) {
        if (t->ne[d] != 0 && nel > INT64_MAX / t->ne[d])
            return qt_error(QT_ERR_FORMAT, "%s: %s: element count overflows int64 (shape %" PRId64 " x %" PRId64 " x %" PRId64 " x %" PRId64 ")",
                            g->name, field, t->ne[0], t->ne[1], t->ne[2], t->ne[3]);
        nel *= t->ne[d];
    }
    if (t->ne[0] % tr->block_elems != 0)
        return qt_error(QT_ERR_FORMAT, "%s: %s: row length %" PRId64 " is not a multiple of %s's block size %" PRId64,
                        g->name, field, t->ne[0], tr->name, tr->block_elems);
    const uint64_t blocks = (uint64_t)(t->ne[0] / tr->block_elems);
    if (blocks > (uint64_t)INT64_MAX / (uint64_t)tr->block_bytes) /* ne0 near 2^62 (F32) wraps the byte count */
        return qt_error(QT_ERR_FORMAT, "%s: %s: byte size overflows (row length %" PRId64 ")", g->name, field, t->ne[0]);
    uint64_t bytes = blocks * (uint64_t)tr->block_bytes;
    uint64_t rows = nel == 0 ? 0 : (uint64_t)(nel / t->ne[0]);
    if (rows != 0 && bytes > (uint64_t)INT64_MAX / rows)
        return qt_error(QT_ERR_FORMAT, "%s: %s: byte size overflows", g->name, field);
    bytes *= rows;
    if (nel == 0) bytes = 0;
    if (bytes > SIZE_MAX) return qt_error(QT_ERR_FORMAT, "%s: %s: byte size overflows", g->name, field);
    t->nbytes = (size_t)bytes;
    return QT_OK;
}

/* ggml requires tensor i's offset to be exactly the sum of the padded sizes
 * of tensors 0..i-1 (docs/formats.md §2.2), and llama.cpp that data lies in the file. */
static qt_status check_offsets(qt_gguf *g, size_t infos_end) {
    uint64_t a = g->alignment;
    uint64_t pad = (a - infos_end % a) % a;
    g->data_offset = (uint64_t)infos_end + pad;
    uint64_t expect = 0;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        qt_gguf_tensor *t = &g->tensors[i];
        if (t->offset % a != 0)
            return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': data offset %" PRIu64 " is not a multiple of the alignment %" PRIu64,
                            g->name, t->name, t->offset, a);
        if (t->offset != expect)
            return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': data offset %" PRIu64 ", expected %" PRIu64
                            " (tensor data must follow the info order, each padded to %" PRIu64 " bytes)",
                            g->name, t->name, t->offset, expect, a);
        uint64_t end = g->data_offset + t->offset;
        if (end < g->data_offset || end > g->size || t->nbytes > g->size - end)
            return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': data (%zu bytes at file offset %" PRIu64 ") runs past the end of the file (%zu bytes)",
                            g->name, t->name, t->nbytes, end, g->size);
        t->data = g->data + end;
        uint64_t padded = (uint64_t)t->nbytes + (a - t->nbytes % a) % a;
        expect += padded; /* bounded by the file size checked above */
    }
    return QT_OK;
}

static qt_status parse_all(qt_gguf *g) {
    cursor c = {.base = g->data, .size = g->size, .pos = 0, .name = g->name};
    uint64_t n_tensors = 0, n_kv = 0;
    qt_status s = parse_header(&c, &g->version, &n_tensors, &n_kv);
    if (s != QT_OK) return s;
    g->n_kv = (int64_t)n_kv;
    g->n_tensors = (int64_t)n_tensors;
    g->kv = calloc(n_kv ? n_kv : 1, sizeof *g->kv);
    g->tensors = calloc(n_tensors ? n_tensors : 1, sizeof *g->tensors);
    if (!g->kv || !g->tensors) return qt_error(QT_ERR_NOMEM, "%s: out of memory", g->name);
    if ((s = parse_kvs(g, &c)) != QT_OK) return s;
    if ((s = parse_alignment(g)) != QT_OK) return s;
    for (int64_t i = 0; i < g->n_tensors; i++)
        if ((s = parse_tensor_info(g, &c, i)) != QT_OK) return s;
    int64_t dup;
    if (qt__name_index_build(&g->tensor_index, g->n_tensors, tensor_name, g, &dup) != QT_OK)
        return qt_error(QT_ERR_NOMEM, "%s: out of memory", g->name);
    if (dup >= 0) return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': duplicate tensor name", g->name, g->tensors[dup].name);
    return check_offsets(g, c.pos);
}

static qt_status gguf_new(const char *name, qt_gguf **out) {
    *out = NULL;
    qt_gguf *g = calloc(1, sizeof *g);
    if (!g || !(g->name = strdup(name))) {
        free(g);
        return qt_error(QT_ERR_NOMEM, "%s: out of memory", name);
    }
    *out = g;
    return QT_OK;
}

qt_status qt_gguf_parse(const void *data, size_t size, const char *name, qt_gguf **out) {
    qt_gguf *g;
    qt_status s = gguf_new(name, &g);
    if (s != QT_OK) return s;
    static const uint8_t empty[1];
    g->data = data ? data : empty;
    g->size = data ? size : 0;
    if ((s = parse_all(g)) != QT_OK) {
        qt_gguf_close(g);
        return s;
    }
    *out = g;
    return QT_OK;
}

qt_status qt_gguf_open(const char *path, qt_gguf **out) {
    *out = NULL;
    qt_mmap map;
    qt_status s = qt_mmap_open(path, &map);
    if (s != QT_OK) return s;
    qt_gguf *g;
    if ((s = qt_gguf_parse(map.data, map.size, path, &g)) != QT_OK) {
        qt_mmap_close(&map);
        return s;
    }
    g->map = map;
    *out = g;
    return QT_OK;
}

void qt_gguf_close(qt_gguf *g) {
    if (!g) return;
    qt_mmap_close(&g->map);
    qt__name_index_free(&g->kv_index);
    qt__name_index_free(&g->tensor_index);
    qt__arena_free(&g->arena);
    free(g->kv);
    free(g->tensors);
    free(g->name);
    free(g);
}

/* ---- accessors ------------------------------------------------------------ */
const char *qt_gguf_name(const qt_gguf *g) { return g->name; }
uint32_t qt_gguf_version(const qt_gguf *g) { return g->version; }
uint32_t qt_gguf_alignment(const qt_gguf *g) { return g->alignment; }
uint64_t qt_gguf_data_offset(const qt_gguf *g) { return g->data_offset; }
uint64_t qt_gguf_file_size(const qt_gguf *g) { return g->size; }
int64_t qt_gguf_n_kv(const qt_gguf *g) { return g->n_kv; }
int64_t qt_gguf_n_tensors(const qt_gguf *g) { return g->n_tensors; }

const qt_gguf_kv *qt_gguf_kv_at(const qt_gguf *g, int64_t i) {
    return (i >= 0 && i < g->n_kv) ? &g->kv[i] : NULL;
}

const qt_gguf_tensor *qt_gguf_tensor_at(const qt_gguf *g, int64_t i) {
    return (i >= 0 && i < g->n_tensors) ? &g->tensors[i] : NULL;
}

const qt_gguf_value *qt_gguf_find(const qt_gguf *g, const char *key) {
    int64_t i = qt__name_index_find(&g->kv_index, key, kv_key, g);
    return i < 0 ? NULL : &g->kv[i].value;
}

const qt_gguf_tensor *qt_gguf_find_tensor(const qt_gguf *g, const char *name) {
    int64_t i = qt__name_index_find(&g->tensor_index, name, tensor_name, g);
    return i < 0 ? NULL : &g->tensors[i];
}

static bool is_unsigned(qt_gguf_type t) {
    return t == QT_GGUF_UINT8 || t == QT_GGUF_UINT16 || t == QT_GGUF_UINT32 || t == QT_GGUF_UINT64;
}
static bool is_signed(qt_gguf_type t) {
    return t == QT_GGUF_INT8 || t == QT_GGUF_INT16 || t == QT_GGUF_INT32 || t == QT_GGUF_INT64;
}

static qt_status wrong_type(const qt_gguf *g, const char *key, const qt_gguf_value *v, const char *want) {
    return qt_error(QT_ERR_FORMAT, "%s: key '%s': has type %s, expected %s", g->name, key, qt_gguf_type_name(v->type), want);
}

static qt_status get_int(const qt_gguf *g, const char *key, int64_t lo, uint64_t hi, bool *neg, uint64_t *mag) {
    const qt_gguf_value *v = qt_gguf_find(g, key);
    *neg = false;
    *mag = 0;
    if (!v) return QT_ERR_NOT_FOUND;
    if (is_unsigned(v->type)) {
        *neg = false;
        *mag = v->u64;
    } else if (is_signed(v->type)) {
        *neg = v->i64 < 0;
        *mag = *neg ? (uint64_t)0 - (uint64_t)v->i64 : (uint64_t)v->i64;
    } else {
        return wrong_type(g, key, v, "an integer");
    }
    if ((*neg && *mag > (uint64_t)0 - (uint64_t)lo) || (!*neg && *mag > hi)) {
        if (*neg)
            return qt_error(QT_ERR_FORMAT, "%s: key '%s': value -%" PRIu64 " out of range [%" PRId64 ", %" PRIu64 "]",
                            g->name, key, *mag, lo, hi);
        return qt_error(QT_ERR_FORMAT, "%s: key '%s': value %" PRIu64 " out of range [%" PRId64 ", %" PRIu64 "]",
                        g->name, key, *mag, lo, hi);
    }
    return QT_OK;
}

qt_status qt_gguf_get_i64(const qt_gguf *g, const char *key, int64_t *out) {
    bool neg;
    uint64_t mag;
    qt_status s = get_int(g, key, INT64_MIN, INT64_MAX, &neg, &mag);
    if (s == QT_OK) *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return s;
}

qt_status qt_gguf_get_u64(const qt_gguf *g, const char *key, uint64_t *out) {
    bool neg;
    uint64_t mag;
    qt_status s = get_int(g, key, 0, UINT64_MAX, &neg, &mag);
    if (s == QT_OK) *out = mag;
    return s;
}

qt_status qt_gguf_get_i32(const qt_gguf *g, const char *key, int32_t *out) {
    bool neg;
    uint64_t mag;
    qt_status s = get_int(g, key, INT32_MIN, INT32_MAX, &neg, &mag);
    if (s == QT_OK) *out = neg ? (int32_t)(0 - (int64_t)mag) : (int32_t)mag;
    return s;
}

qt_status qt_gguf_get_u32(const qt_gguf *g, const char *key, uint32_t *out) {
    bool neg;
    uint64_t mag;
    qt_status s = get_int(g, key, 0, UINT32_MAX, &neg, &mag);
    if (s == QT_OK) *out = (uint32_t)mag;
    return s;
}

qt_status qt_gguf_get_f64(const qt_gguf *g, const char *key, double *out) {
    const qt_gguf_value *v = qt_gguf_find(g, key);
    if (!v) return QT_ERR_NOT_FOUND;
    if (v->type != QT_GGUF_FLOAT32 && v->type != QT_GGUF_FLOAT64) return wrong_type(g, key, v, "float32");
    *out = v->f64;
    return QT_OK;
}

qt_status qt_gguf_get_f32(const qt_gguf *g, const char *key, float *out) {
    double d;
    qt_status s = qt_gguf_get_f64(g, key, &d);
    if (s == QT_OK) *out = (float)d;
    return s;
}

qt_status qt_gguf_get_bool(const qt_gguf *g, const char *key, bool *out) {
    const qt_gguf_value *v = qt_gguf_find(g, key);
    if (!v) return QT_ERR_NOT_FOUND;
    if (v->type != QT_GGUF_BOOL) return wrong_type(g, key, v, "bool");
    *out = v->b;
    return QT_OK;
}

qt_status qt_gguf_get_str(const qt_gguf *g, const char *key, const char **out) {
    const qt_gguf_value *v = qt_gguf_find(g, key);
    if (!v) return QT_ERR_NOT_FOUND;
    if (v->type != QT_GGUF_STRING) return wrong_type(g, key, v, "string");
    *out = v->str.ptr;
    return QT_OK;
}

qt_status qt_gguf_get_arr(const qt_gguf *g, const char *key, qt_gguf_type elem_type, const qt_gguf_value **out) {
    const qt_gguf_value *v = qt_gguf_find(g, key);
    if (!v) return QT_ERR_NOT_FOUND;
    if (v->type != QT_GGUF_ARRAY) return wrong_type(g, key, v, "array");
    if (elem_type != QT_GGUF_TYPE_COUNT && v->arr.type != elem_type)
        return qt_error(QT_ERR_FORMAT, "%s: key '%s': array of %s, expected array of %s", g->name, key,
                        qt_gguf_type_name(v->arr.type), qt_gguf_type_name(elem_type));
    *out = v;
    return QT_OK;
}

int64_t qt_gguf_arr_i64(const qt_gguf_value *arr, uint64_t i) {
    qt_gguf_value v = {0};
    size_t es = qt_gguf_type_size(arr->arr.type);
    if (!es || i >= arr->arr.n) return 0;
    load_scalar(arr->arr.type, (const uint8_t *)arr->arr.raw + i * es, &v);
    switch (arr->arr.type) {
    case QT_GGUF_FLOAT32: case QT_GGUF_FLOAT64: return (int64_t)v.f64;
    case QT_GGUF_BOOL: return v.b;
    default: return is_signed(arr->arr.type) ? v.i64 : (int64_t)v.u64;
    }
}

uint64_t qt_gguf_arr_u64(const qt_gguf_value *arr, uint64_t i) {
    if (is_unsigned(arr->arr.type)) {
        qt_gguf_value v = {0};
        if (i >= arr->arr.n) return 0;
        load_scalar(arr->arr.type, (const uint8_t *)arr->arr.raw + i * qt_gguf_type_size(arr->arr.type), &v);
        return v.u64;
    }
    return (uint64_t)qt_gguf_arr_i64(arr, i);
}

double qt_gguf_arr_f64(const qt_gguf_value *arr, uint64_t i) {
    qt_gguf_value v = {0};
    size_t es = qt_gguf_type_size(arr->arr.type);
    if (!es || i >= arr->arr.n) return 0;
    load_scalar(arr->arr.type, (const uint8_t *)arr->arr.raw + i * es, &v);
    switch (arr->arr.type) {
    case QT_GGUF_FLOAT32: case QT_GGUF_FLOAT64: return v.f64;
    case QT_GGUF_BOOL: return v.b;
    default: return is_signed(arr->arr.type) ? (double)v.i64 : (double)v.u64;
    }
}

const qt_gguf *qt_model_gguf(const qt_model *m) {
    if (!m || !m->source_format || strcmp(m->source_format, "gguf") != 0) return NULL;
    return (const qt_gguf *)m->reader_state;
}
