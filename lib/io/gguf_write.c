/* lib/io/gguf_write.c — qt_model -> GGUF v3, the way llama.cpp writes and
 * reads it (docs/formats.md §2).
 *
 * Layout rules (§2.1-§2.2): header, metadata, tensor infos, zero padding to
 * the alignment, then tensor data in info order, each tensor padded to the
 * alignment (the last one too), offsets cumulative from 0.
 * Metadata (§2.5-§2.8): a model read from GGUF keeps its key/value pairs
 * verbatim and in order; other models get keys generated from hparams and
 * vocab with the value types llama.cpp's loader insists on (UINT32 counts,
 * FLOAT32 eps/freq base, BOOL flags).
 * Tensor types (§2.9): --outtype converts 2-D weights; 1-D tensors, norms
 * and biases are F32 (F16/BF16 ones widened), as llama.cpp's converter does.
 * Q/K rows (§2.10): llama-architecture models held in HF rotate-half order
 * are permuted to llama.cpp's adjacent-pairs order while writing.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "io_internal.h"
#include "quanta/formats.h"
#include "model/arch.h"

#define WBUF_CAP ((size_t)1 << 20)

/* ---- buffered output over qt_afile ---------------------------------------------- */
typedef struct wbuf {
    qt_afile *f;          /* NULL: count only (qt_gguf_write_opts.size_only) */
    uint8_t *buf;
    size_t n;
    uint64_t counted;     /* bytes a count-only or comparing writer has taken */
    bool compare;         /* resuming: bytes are compared with the staging file's (at `counted`), not written */
    uint8_t *cmp;         /* (WBUF_CAP) the file's bytes, when comparing */
} wbuf;

/* n bytes at the writer's position: counted, compared or written. */
static qt_status wb_emit(wbuf *w, const uint8_t *p, size_t n) {
    if (!w->f) { w->counted += n; return QT_OK; }
    if (!w->compare) return qt_afile_write(w->f, p, n);
    while (n > 0) {
        const size_t k = n < WBUF_CAP ? n : WBUF_CAP;
        qt_status s = qt_afile_read_at(w->f, w->counted, w->cmp, k);
        if (s != QT_OK) return s;
        if (memcmp(w->cmp, p, k) != 0)
            return qt_error(QT_ERR_FORMAT, "the partial file's header differs from the one this run writes (at byte %llu): "
                            "another input or other options", (unsigned long long)w->counted);
        w->counted += k;
        p += k;
        n -= k;
    }
    return QT_OK;
}

static qt_status wb_flush(wbuf *w) {
    qt_status s = w->n ? wb_emit(w, w->buf, w->n) : QT_OK;
    w->n = 0;
    return s;
}

static qt_status wb_put(wbuf *w, const void *p, size_t n) {
    if (n >= WBUF_CAP) {
        qt_status s = wb_flush(w);
        return s != QT_OK ? s : wb_emit(w, p, n);
    }
    if (WBUF_CAP - w->n < n) {
        qt_status s = wb_flush(w);
        if (s != QT_OK) return s;
    }
    memcpy(w->buf + w->n, p, n);
    w->n += n;
    return QT_OK;
}

static qt_status wb_u32(wbuf *w, uint32_t v) { return wb_put(w, &v, 4); }
static qt_status wb_u64(wbuf *w, uint64_t v) { return wb_put(w, &v, 8); }

static qt_status wb_str(wbuf *w, const char *s, uint64_t len) {
    qt_status st = wb_u64(w, len);
    return st != QT_OK ? st : wb_put(w, s, (size_t)len);
}

static qt_status wb_zeros(wbuf *w, size_t n) {
    static const uint8_t zeros[256];
    while (n) {
        size_t k = n < sizeof zeros ? n : sizeof zeros;
        qt_status s = wb_put(w, zeros, k);
        if (s != QT_OK) return s;
        n -= k;
    }
    return QT_OK;
}

static uint64_t written(const wbuf *w) { return (w->f && !w->compare ? qt_afile_tell(w->f) : w->counted) + w->n; }

/* The buffer and an atomic file at `path` (w zeroed first): staged when
 * `stage` is given, and then comparing first when it resumes. */
static qt_status wb_open(wbuf *w, const char *path, const qt_afile_stage *stage) {
    memset(w, 0, sizeof *w);
    w->compare = stage && stage->resume_at > 0;
    if (!(w->buf = malloc(WBUF_CAP)) || (w->compare && !(w->cmp = malloc(WBUF_CAP))))
        return qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
    return stage ? qt_afile_open_staged(path, stage, &w->f) : qt_afile_open(path, &w->f);
}

/* After writing with status s: flush and commit when s is QT_OK, else remove
 * the temporary file; frees the buffer. Returns the final status. A zeroed w
 * (nothing opened) is fine. */
static qt_status wb_close(wbuf *w, qt_status s) {
    if (s == QT_OK) s = wb_flush(w);
    if (s == QT_OK) {
        s = qt_afile_commit(w->f); /* frees it, also on failure */
        w->f = NULL;
    }
    if (w->f) qt_afile_abort(w->f);
    free(w->buf);
    free(w->cmp);
    w->buf = w->cmp = NULL;
    return s;
}

/* ---- metadata list ---------------------------------------------------------------- */
typedef struct kvlist {
    qt_gguf_kv *kv;
    int64_t n, cap;
    qt__arena arena;   /* generated keys, strings and arrays */
} kvlist;

static qt_status kv_set(kvlist *l, const char *key, qt_gguf_value v) {
    for (int64_t i = 0; i < l->n; i++)
        if (!strcmp(l->kv[i].key, key)) { l->kv[i].value = v; return QT_OK; }
    if (l->n == l->cap) {
        int64_t cap = l->cap ? l->cap * 2 : 64;
        qt_gguf_kv *nk = realloc(l->kv, (size_t)cap * sizeof *nk);
        if (!nk) return qt_error(QT_ERR_NOMEM, "out of memory");
        l->kv = nk;
        l->cap = cap;
    }
    char *k = qt__arena_strndup(&l->arena, key, strlen(key));
    if (!k) return qt_error(QT_ERR_NOMEM, "out of memory");
    l->kv[l->n].key = k;
    l->kv[l->n].value = v;
    l->n++;
    return QT_OK;
}

static bool kv_has(const kvlist *l, const char *key) {
    for (int64_t i = 0; i < l->n; i++)
        if (!strcmp(l->kv[i].key, key)) return true;
    return false;
}

static qt_status kv_u32(kvlist *l, const char *key, uint32_t x) {
    qt_gguf_value v = {.type = QT_GGUF_UINT32, .u64 = x};
    return kv_set(l, key, v);
}
static qt_status kv_f32(kvlist *l, const char *key, float x) {
    qt_gguf_value v = {.type = QT_GGUF_FLOAT32, .f64 = x};
    return kv_set(l, key, v);
}
static qt_status kv_bool(kvlist *l, const char *key, bool x) {
    qt_gguf_value v = {.type = QT_GGUF_BOOL, .b = x};
    return kv_set(l, key, v);
}
static qt_status kv_str(kvlist *l, const char *key, const char *s) {
    qt_gguf_value v = {.type = QT_GGUF_STRING, .str = {s, strlen(s)}};
    return kv_set(l, key, v);
}
static qt_status kv_raw_array(kvlist *l, const char *key, qt_gguf_type et, uint64_t n, const void *raw) {
    qt_gguf_value v = {.type = QT_GGUF_ARRAY};
    v.arr.type = et;
    v.arr.n = n;
    v.arr.raw = raw;
    return kv_set(l, key, v);
}
/* An array of n strings from a C string array (NULL entries -> generated by name_of). */
static qt_status kv_str_array(kvlist *l, const char *key, int64_t n, char *const *strs) {
    qt_gguf_value *items = qt__arena_alloc(&l->arena, (size_t)(n ? n : 1) * sizeof *items);
    if (!items) return qt_error(QT_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        items[i].type = QT_GGUF_STRING;
        items[i].str.ptr = strs[i];
        items[i].str.len = strlen(strs[i]);
    }
    qt_gguf_value v = {.type = QT_GGUF_ARRAY};
    v.arr.type = QT_GGUF_STRING;
    v.arr.n = (uint64_t)n;
    v.arr.items = items;
    return kv_set(l, key, v);
}

/* ---- value serialization ------------------------------------------------------------ */
static qt_status write_scalar(wbuf *w, qt_gguf_type t, const qt_gguf_value *v) {
    uint8_t b[8];
    switch (t) {
    case QT_GGUF_UINT8: case QT_GGUF_UINT16: case QT_GGUF_UINT32: case QT_GGUF_UINT64:
        memcpy(b, &v->u64, 8); break;
    case QT_GGUF_INT8: case QT_GGUF_INT16: case QT_GGUF_INT32: case QT_GGUF_INT64:
        memcpy(b, &v->i64, 8); break;
    case QT_GGUF_FLOAT32: { float f = (float)v->f64; memcpy(b, &f, 4); break; }
    case QT_GGUF_FLOAT64: memcpy(b, &v->f64, 8); break;
    case QT_GGUF_BOOL: b[0] = v->b ? 1 : 0; break;
    default: return qt_error(QT_ERR_INTERNAL, "GGUF writer: type %d is not a scalar", (int)t);
    }
    return wb_put(w, b, qt_gguf_type_size(t)); /* little-endian host: the low bytes */
}

static qt_status write_value(wbuf *w, const qt_gguf_value *v) {
    if (v->type == QT_GGUF_STRING) return wb_str(w, v->str.ptr, v->str.len);
    if (v->type != QT_GGUF_ARRAY) return write_scalar(w, v->type, v);
    qt_status s = wb_u32(w, (uint32_t)v->arr.type);
    if (s == QT_OK) s = wb_u64(w, v->arr.n);
    if (s != QT_OK) return s;
    size_t es = qt_gguf_type_size(v->arr.type);
    if (es) return v->arr.n ? wb_put(w, v->arr.raw, (size_t)v->arr.n * es) : QT_OK;
    for (uint64_t i = 0; i < v->arr.n && s == QT_OK; i++) s = write_value(w, &v->arr.items[i]);
    return s;
}

/* ---- tensor plan ----------------------------------------------------------------------- */
typedef struct plan_tensor {
    const qt_tensor *src;
    qt_tensor gen;         /* generated tensors (rope_freqs) live here; src points at it */
    qt_type type;          /* output type */
    size_t nbytes;         /* output bytes */
    uint64_t offset;       /* in the data section */
    int64_t perm_heads;    /* > 0: Q/K rows go from HF order to pairs order, in this many heads */
    bool perm_is_bias;     /* the permuted units are single elements */
} plan_tensor;

typedef struct plan {
    plan_tensor *t;
    int32_t n;
    uint64_t data_bytes;
    bool types_changed, any_quantized;
    int32_t file_type;
} plan;

/* The one place output tensor types are chosen. A per-tensor choice
 * (tensor_type) wins, else --outtype for the tensors llama.cpp's converter
 * converts, else the stored type; then the converter's F32 rule for 1-D
 * tensors, norms and biases (qt__gguf_wants_f32, docs/formats.md §2.9) widens an
 * F16/BF16 choice to F32 -- exactly, and quantized or F32 tensors are kept. */
static qt_type default_out_type(const qt_gguf_write_opts *o, const qt_tensor *t) {
    const bool wants_f32 = qt__gguf_wants_f32(t->name, t->n_dims);
    qt_type ty = o->tensor_type ? o->tensor_type(o->user, t) : QT_TYPE_COUNT;
    if (ty == QT_TYPE_COUNT) ty = o->outtype != QT_TYPE_COUNT && !wants_f32 ? o->outtype : t->type;
    const qt_type_traits *tr = qt_type_get(ty);
    if (tr && tr->engine_only) ty = QT_TYPE_F32; /* packed compressed-tensors rows: llama.cpp has no such type */
    return wants_f32 && (ty == QT_TYPE_F16 || ty == QT_TYPE_BF16) ? QT_TYPE_F32 : ty;
}

/* Which Q/K tensors need the HF -> pairs permutation, and in how many heads. */
static int64_t permute_heads(const qt_model *m, const qt_arch_info *ai, const qt_tensor *t, bool *is_bias) {
    if (!ai || !ai->permute_qk_for_gguf || !m->hp.rope_neox) return 0;
    int layer, end = 0;
    char which[16];
    if (sscanf(t->name, "blk.%d.attn_%1[qk].%n", &layer, which, &end) != 2 || end == 0) return 0;
    const char *rest = t->name + end;
    if (strcmp(rest, "weight") != 0 && strcmp(rest, "bias") != 0) return 0;
    *is_bias = !strcmp(rest, "bias");
    return which[0] == 'q' ? m->hp.n_head : m->hp.n_head_kv;
}

/* Llama 3.1 rope scaling is written as the tensor rope_freqs.weight (docs/formats.md §7.3). */
static qt_status make_rope_freqs(const qt_model *m, qt__arena *arena, qt_tensor *t) {
    const qt_hparams *hp = &m->hp;
    int64_t n = hp->n_rot / 2;
    float *f = qt__arena_alloc(arena, (size_t)(n ? n : 1) * sizeof *f);
    if (!f) return qt_error(QT_ERR_NOMEM, "out of memory");
    if (!(hp->rope_factor > 0 && hp->rope_low_freq_factor > 0 && hp->rope_high_freq_factor > hp->rope_low_freq_factor &&
          hp->rope_orig_ctx > 0))
        return qt_error(QT_ERR_FORMAT, "%s: llama3 rope scaling: factor %g, low_freq_factor %g, high_freq_factor %g, "
                        "original context %d are not a valid set", m->path, (double)hp->rope_factor,
                        (double)hp->rope_low_freq_factor, (double)hp->rope_high_freq_factor, hp->rope_orig_ctx);
    const double lo = hp->rope_low_freq_factor, hi = hp->rope_high_freq_factor, factor = hp->rope_factor;
    const double L_low = hp->rope_orig_ctx / lo, L_high = hp->rope_orig_ctx / hi;
    for (int64_t i = 0; i < n; i++) {
        double freq = 1.0 / pow((double)hp->rope_theta, (double)(2 * i) / (double)hp->n_rot);
        double wavelen = 2.0 * M_PI / freq;
        if (wavelen < L_high) f[i] = 1.0f;
        else if (wavelen > L_low) f[i] = (float)factor;
        else {
            double smooth = (hp->rope_orig_ctx / wavelen - lo) / (hi - lo);
            f[i] = (float)(1.0 / ((1.0 - smooth) / factor + smooth));
        }
    }
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "rope_freqs.weight");
    t->type = QT_TYPE_F32;
    t->n_dims = 1;
    t->ne[0] = n;
    t->ne[1] = t->ne[2] = t->ne[3] = 1;
    t->nbytes = (size_t)n * sizeof(float);
    t->data = f;
    return QT_OK;
}

/* KV cache scales (blk.N.attn_k_scale / attn_v_scale, read from vLLM /
 * compressed-tensors checkpoints) are for quanta's engine only: llama.cpp
 * refuses a file with tensors it does not consume (docs/formats.md §2.9). */
bool qt_gguf_write_drops(const char *name) {
    int layer, end = 0;
    char which[2];
    if (sscanf(name, "blk.%d.attn_%1[kv]_scale%n", &layer, which, &end) != 2 || end == 0) return false;
    return name[end] == '\0' && layer >= 0;
}

static qt_status plan_one(const qt_model *m, const qt_arch_info *ai, const qt_gguf_write_opts *o, plan_tensor *p) {
    const qt_tensor *t = p->src;
    p->type = default_out_type(o, t);
    const qt_type_traits *tr = qt_type_get(p->type);
    if (!tr) return qt_error(QT_ERR_ARG, "%s: tensor '%s': unknown output type id %d", m->path, t->name, (int)p->type);
    if (strlen(t->name) > 63)
        return qt_error(QT_ERR_ARG, "%s: tensor '%s': name longer than GGUF's 63-byte limit", m->path, t->name);
    int64_t nel = qt__tensor_nelements(t);
    if (t->ne[0] % tr->block_elems != 0)
        return qt_error(QT_ERR_SHAPE, "%s: tensor '%s': row length %" PRId64 " is not a multiple of %s's block size %" PRId64,
                        m->path, t->name, t->ne[0], tr->name, tr->block_elems);
    p->nbytes = nel == 0 ? 0 : (size_t)(nel / t->ne[0]) * ((size_t)(t->ne[0] / tr->block_elems) * tr->block_bytes);
    p->perm_heads = permute_heads(m, ai, t, &p->perm_is_bias);
    if (p->perm_heads > 0) {
        int64_t units = p->perm_is_bias ? t->ne[0] : nel / t->ne[0];
        if (units % p->perm_heads != 0 || (units / p->perm_heads) % 2 != 0)
            return qt_error(QT_ERR_SHAPE, "%s: tensor '%s': %" PRId64 " rows do not split into %" PRId64 " heads of even size",
                            m->path, t->name, units, p->perm_heads);
        if (p->perm_is_bias && (qt_type_get(t->type)->block_elems != 1 || tr->block_elems != 1))
            return qt_error(QT_ERR_UNSUPPORTED, "%s: tensor '%s': cannot permute a block-quantized bias", m->path, t->name);
    }
    return QT_OK;
}

static qt_status build_plan(const qt_model *m, const qt_gguf_write_opts *o, uint32_t align, qt__arena *arena, plan *pl) {
    const qt_arch_info *ai = qt__arch_info(m->hp.arch);
    if (ai && m->hp.rope_neox != ai->rope_neox && !ai->permute_qk_for_gguf)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: Q/K rows in %s order cannot be written for architecture '%s'", m->path,
                        m->hp.rope_neox ? "rotate-half" : "pairs", ai->gguf_name);
    bool gen_rope = m->hp.rope_scaling == QT_ROPE_SCALING_LLAMA3 && !qt_model_find_tensor(m, "rope_freqs.weight") &&
                    qt_model_gguf(m) == NULL;
    pl->t = calloc((size_t)m->n_tensors + 1, sizeof *pl->t);
    if (!pl->t) return qt_error(QT_ERR_NOMEM, "out of memory");
    pl->n = 0;
    for (int32_t i = 0; i < m->n_tensors; i++)
        if (!qt_gguf_write_drops(m->tensors[i].name)) pl->t[pl->n++].src = &m->tensors[i];
    const int32_t n_src = pl->n;
    if (gen_rope) pl->n++;
    /* Count output elements per type to name the file type after the dominant weight type. */
    uint64_t per_type[QT_TYPE_COUNT] = {0};
    int32_t k = 0;
    for (int32_t i = 0; i < pl->n; i++) {
        plan_tensor *p = &pl->t[i];
        if (i >= n_src) {
            qt_status s = make_rope_freqs(m, arena, &p->gen);
            if (s != QT_OK) return s;
            p->src = &p->gen;
        }
        qt_status s = plan_one(m, ai, o, p);
        if (s != QT_OK) return s;
        p->offset = pl->data_bytes;
        uint64_t padded = (uint64_t)p->nbytes + (align - p->nbytes % align) % align;
        pl->data_bytes += padded;
        pl->types_changed |= p->type != p->src->type;
        pl->any_quantized |= qt_type_get(p->type)->is_quantized;
        if (p->src->n_dims >= 2) per_type[p->type] += (uint64_t)qt__tensor_nelements(p->src);
        k++;
    }
    qt_type dominant = QT_TYPE_F32;
    for (int t = 0; t < QT_TYPE_COUNT; t++)
        if (per_type[t] > per_type[dominant]) dominant = (qt_type)t;
    pl->file_type = o->file_type >= 0 ? o->file_type : qt_gguf_ftype_of_type(dominant) /* the GGUF file-type rows of lib/quant/schemes.c */;
    return QT_OK;
}

/* ---- metadata generation ------------------------------------------------------------------ */
static const char *model_name(const qt_model *m, qt__arena *a) {
    const char *p = m->path;
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') n--;
    size_t start = n;
    while (start > 0 && p[start - 1] != '/') start--;
    size_t end = n;
    for (size_t i = n; i > start; i--)
        if (p[i - 1] == '.') { end = i - 1; break; }
    if (end == start) end = n;
    char *s = qt__arena_strndup(a, p + start, end - start);
    return s ? s : "model";
}

static qt_status gen_arch_keys(kvlist *l, const qt_model *m, const char *arch) {
    const qt_hparams *hp = &m->hp;
    char key[96];
    qt_status s = QT_OK;
#define U32(suffix, val)                                                   \
    do {                                                                   \
        snprintf(key, sizeof key, "%s." suffix, arch);                     \
        if ((s = kv_u32(l, key, (uint32_t)(val))) != QT_OK) return s;       \
    } while (0)
#define F32(suffix, val)                                                   \
    do {                                                                   \
        snprintf(key, sizeof key, "%s." suffix, arch);                     \
        if ((s = kv_f32(l, key, (val))) != QT_OK) return s;                 \
    } while (0)
    if (m->vocab.n_tokens == 0) U32("vocab_size", hp->n_vocab);
    U32("context_length", hp->n_ctx_train);
    U32("embedding_length", hp->n_embd);
    U32("block_count", hp->n_layer);
    U32("feed_forward_length", hp->n_ff);
    U32("attention.head_count", hp->n_head);
    U32("attention.head_count_kv", hp->n_head_kv);
    if (hp->rope_theta != 10000.0f) F32("rope.freq_base", hp->rope_theta);
    F32("attention.layer_norm_rms_epsilon", hp->rms_eps);
    U32("rope.dimension_count", hp->n_rot);
    if (hp->n_head > 0 && hp->head_dim != hp->n_embd / hp->n_head) {
        U32("attention.key_length", hp->head_dim);
        U32("attention.value_length", hp->head_dim);
    }
    if (hp->rope_scaling == QT_ROPE_SCALING_LINEAR) {
        snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
        if ((s = kv_str(l, key, "linear")) != QT_OK) return s;
        F32("rope.scaling.factor", hp->rope_factor);
    }
#undef U32
#undef F32
    return s;
}

/* Token types when the vocabulary has none: what a SentencePiece converter assigns. */
static int32_t guess_token_type(const qt_vocab *v, int32_t id) {
    const char *t = v->tokens[id];
    if (id == v->unk_id) return QT_TOKEN_UNKNOWN;
    if (id == v->bos_id || id == v->eos_id) return QT_TOKEN_CONTROL;
    if (strlen(t) == 6 && !strncmp(t, "<0x", 3) && t[5] == '>') return QT_TOKEN_BYTE;
    return QT_TOKEN_NORMAL;
}

static qt_status gen_vocab_keys(kvlist *l, const qt_model *m) {
    const qt_vocab *v = &m->vocab;
    if (v->kind == QT_VOCAB_NONE || v->n_tokens == 0) return QT_OK;
    bool spm = v->kind == QT_VOCAB_SPM;
    int32_t n = m->hp.n_vocab > v->n_tokens ? m->hp.n_vocab : v->n_tokens;
    if (v->n_tokens > m->hp.n_vocab && m->hp.n_vocab > 0)
        return qt_error(QT_ERR_FORMAT, "%s: the vocabulary has %d tokens but the embedding has %d rows", m->path,
                        v->n_tokens, m->hp.n_vocab);
    if (spm && !v->scores)
        return qt_error(QT_ERR_FORMAT, "%s: SentencePiece vocabulary without scores cannot be written to GGUF", m->path);
    /* Missing ids up to the embedding size become "[PAD<id>]", UNUSED, score -10000 (docs/formats.md §8.1-§8.2). */
    char **tokens = qt__arena_alloc(&l->arena, (size_t)n * sizeof *tokens);
    float *scores = qt__arena_alloc(&l->arena, (size_t)n * sizeof *scores);
    int32_t *types = qt__arena_alloc(&l->arena, (size_t)n * sizeof *types);
    if (!tokens || !scores || !types) return qt_error(QT_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; i < n; i++) {
        if (i < v->n_tokens) {
            tokens[i] = v->tokens[i];
            scores[i] = v->scores ? v->scores[i] : 0.0f;
            types[i] = v->token_types ? v->token_types[i] : guess_token_type(v, i);
        } else {
            char buf[32];
            snprintf(buf, sizeof buf, "[PAD%d]", i);
            if (!(tokens[i] = qt__arena_strndup(&l->arena, buf, strlen(buf)))) return qt_error(QT_ERR_NOMEM, "out of memory");
            scores[i] = -10000.0f;
            types[i] = QT_TOKEN_UNUSED;
        }
    }
    qt_status s;
    if ((s = kv_str(l, "tokenizer.ggml.model", spm ? "llama" : "gpt2")) != QT_OK) return s;
    if (!spm && v->pre[0] && (s = kv_str(l, "tokenizer.ggml.pre", v->pre)) != QT_OK) return s;
    if ((s = kv_str_array(l, "tokenizer.ggml.tokens", n, tokens)) != QT_OK) return s;
    if ((spm || v->scores) && (s = kv_raw_array(l, "tokenizer.ggml.scores", QT_GGUF_FLOAT32, (uint64_t)n, scores)) != QT_OK) return s;
    if ((s = kv_raw_array(l, "tokenizer.ggml.token_type", QT_GGUF_INT32, (uint64_t)n, types)) != QT_OK) return s;
    if (v->n_merges > 0 && (s = kv_str_array(l, "tokenizer.ggml.merges", v->n_merges, v->merges)) != QT_OK) return s;
    const struct { const char *key; int32_t id; } ids[] = {
        {"tokenizer.ggml.bos_token_id", v->bos_id}, {"tokenizer.ggml.eos_token_id", v->eos_id},
        {"tokenizer.ggml.unknown_token_id", v->unk_id}, {"tokenizer.ggml.padding_token_id", v->pad_id},
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (ids[i].id >= 0 && (s = kv_u32(l, ids[i].key, (uint32_t)ids[i].id)) != QT_OK) return s;
    /* Flags: SentencePiece defaults are add_bos, no add_eos, add_space_prefix
     * (written only when different); BPE files always state add_bos/add_eos. */
    if ((!spm || !v->add_bos) && (s = kv_bool(l, "tokenizer.ggml.add_bos_token", v->add_bos)) != QT_OK) return s;
    if ((!spm || v->add_eos) && (s = kv_bool(l, "tokenizer.ggml.add_eos_token", v->add_eos)) != QT_OK) return s;
    if (v->add_space_prefix != spm && (s = kv_bool(l, "tokenizer.ggml.add_space_prefix", v->add_space_prefix)) != QT_OK) return s;
    if (v->chat_template && (s = kv_str(l, "tokenizer.chat_template", v->chat_template)) != QT_OK) return s;
    return QT_OK;
}

static qt_status build_metadata(kvlist *l, const qt_model *m, const qt_gguf_write_opts *o, const plan *pl, uint32_t align) {
    const qt_gguf *src = qt_model_gguf(m);
    qt_status s;
    if (src) {
        /* Verbatim, in order: the values point into the source file's parse. */
        for (int64_t i = 0; i < qt_gguf_n_kv(src); i++) {
            const qt_gguf_kv *kv = qt_gguf_kv_at(src, i);
            if ((s = kv_set(l, kv->key, kv->value)) != QT_OK) return s;
        }
        if ((pl->types_changed || o->file_type >= 0) && (s = kv_u32(l, "general.file_type", (uint32_t)pl->file_type)) != QT_OK)
            return s;
    } else {
        const qt_arch_info *ai = qt__arch_info(m->hp.arch);
        const char *arch = ai ? ai->gguf_name : m->hp.arch_name;
        if (!arch[0]) return qt_error(QT_ERR_UNSUPPORTED, "%s: model has no architecture name", m->path);
        if ((s = kv_str(l, "general.architecture", arch)) != QT_OK) return s;
        if ((s = kv_str(l, "general.name", model_name(m, &l->arena))) != QT_OK) return s;
        if ((s = kv_u32(l, "general.file_type", (uint32_t)pl->file_type)) != QT_OK) return s;
        if ((s = gen_arch_keys(l, m, arch)) != QT_OK) return s;
        if ((s = gen_vocab_keys(l, m)) != QT_OK) return s;
    }
    if (pl->any_quantized && !kv_has(l, "general.quantization_version") &&
        (s = kv_u32(l, "general.quantization_version", 2)) != QT_OK) /* GGML_QNT_VERSION */
        return s;
    if ((align != 32 || kv_has(l, "general.alignment")) && (s = kv_u32(l, "general.alignment", align)) != QT_OK) return s;
    for (int32_t i = 0; i < o->n_extra_kv; i++) {
        if (!o->extra_kv[i].key || !o->extra_kv[i].key[0])
            return qt_error(QT_ERR_ARG, "GGUF writer: extra metadata #%d has an empty key", i);
        if ((s = kv_set(l, o->extra_kv[i].key, o->extra_kv[i].value)) != QT_OK) return s;
    }
    return QT_OK;
}

/* ---- tensor data ------------------------------------------------------------------------------ */
typedef struct convert_ctx {
    float *scratch;       /* one unit as f32 */
    uint8_t *out;         /* output staging */
    size_t out_cap;
} convert_ctx;

/* Units are rows (or single elements for a permuted bias). Destination unit
 * r takes source unit perm(r); each is converted through f32 when the types
 * differ. */
static qt_status write_tensor_data(wbuf *w, const qt_model *m, const plan_tensor *p, const qt_gguf_write_opts *o,
                                   convert_ctx *cx) {
    const qt_tensor *t = p->src;
    if (p->nbytes == 0) return QT_OK;
    const uint8_t *src = t->data;
    void *hooked = NULL;
    qt_type src_type = t->type;
    qt_status s = QT_OK;
    if (o->tensor_data) {
        /* The hook produces the whole tensor in the output type; we only reorder rows. */
        if (!(hooked = malloc(p->nbytes))) return qt_error(QT_ERR_NOMEM, "%s: tensor '%s': out of memory", m->path, t->name);
        if ((s = o->tensor_data(o->user, t, p->type, hooked, p->nbytes)) != QT_OK) { free(hooked); return s; }
        src = hooked;
        src_type = p->type;
    }
    if (!src) { free(hooked); return qt_error(QT_ERR_INTERNAL, "%s: tensor '%s': no data", m->path, t->name); }
    if (src_type == p->type && p->perm_heads == 0) {
        s = wb_put(w, src, p->nbytes);
        free(hooked);
        return s;
    }
    const int64_t nel = qt__tensor_nelements(t);
    const int64_t unit_elems = (p->perm_heads > 0 && p->perm_is_bias) ? 1 : t->ne[0];
    const int64_t n_units = nel / unit_elems;
    const int64_t head = p->perm_heads > 0 ? n_units / p->perm_heads : 0;
    const size_t src_unit = qt_row_size(src_type, unit_elems), dst_unit = qt_row_size(p->type, unit_elems);
    if (!src_unit || !dst_unit) { free(hooked); return QT_ERR_SHAPE; }
    size_t staged = 0;
    for (int64_t r = 0; r < n_units && s == QT_OK; r++) {
        int64_t from = head ? qt__qk_hf_row_for_gguf_row(r, head) : r;
        const uint8_t *su = src + (size_t)from * src_unit;
        if (staged + dst_unit > cx->out_cap) {
            s = wb_put(w, cx->out, staged);
            staged = 0;
            if (s != QT_OK) break;
        }
        uint8_t *du = cx->out + staged;
        if (dst_unit > cx->out_cap) { /* a row larger than the staging buffer */
            s = qt_error(QT_ERR_INTERNAL, "%s: tensor '%s': row too large", m->path, t->name);
            break;
        }
        if (src_type == p->type) memcpy(du, su, dst_unit);
        else if ((s = qt__row_to_f32(src_type, su, cx->scratch, unit_elems)) == QT_OK)
            s = qt__row_from_f32(p->type, cx->scratch, du, unit_elems);
        if (s != QT_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", qt_last_error());
            s = qt_error(s, "%s: tensor '%s': converting %s to %s: %s", m->path, t->name, qt_type_get(src_type)->name,
                         qt_type_get(p->type)->name, why);
            break;
        }
        staged += dst_unit;
        if ((r & 1023) == 0 && qt_cancelled()) s = qt_error(QT_ERR_INTERRUPTED, "%s: interrupted", m->path);
    }
    if (s == QT_OK && staged) s = wb_put(w, cx->out, staged);
    free(hooked);
    return s;
}

/* A point a resumed run can restart from: everything so far flushed (and
 * synced when the staging file is kept), then the caller told. */
static qt_status checkpoint(wbuf *w, const qt_gguf_write_opts *o, int32_t n_done) {
    if (!o->checkpoint) return QT_OK;
    qt_status s = wb_flush(w);
    if (s == QT_OK && o->stage && o->stage->keep) s = qt_afile_sync(w->f);
    return s == QT_OK ? o->checkpoint(o->user, n_done, written(w)) : s;
}

/* After the header: a fresh run records its first checkpoint; a resumed one
 * has compared the header and checks that the staging file ends exactly where
 * tensor resume_tensors starts, then writes from there (*first). */
static qt_status resume_point(wbuf *w, const qt_gguf_write_opts *o, const plan *pl, int32_t *first) {
    *first = 0;
    if (!w->compare) return checkpoint(w, o, 0);
    qt_status s = wb_flush(w);
    if (s != QT_OK) return s;
    const int32_t k = o->resume_tensors;
    if (k < 0 || k > pl->n)
        return qt_error(QT_ERR_FORMAT, "resume point: %d tensors complete, the file has %d", k, pl->n);
    const uint64_t at = w->counted + (k < pl->n ? pl->t[k].offset : pl->data_bytes);
    if (at != qt_afile_tell(w->f))
        return qt_error(QT_ERR_FORMAT, "resume point: %d tensors complete should end at byte %llu, not %llu", k,
                        (unsigned long long)at, (unsigned long long)qt_afile_tell(w->f));
    w->compare = false;
    *first = k;
    return QT_OK;
}

static qt_status write_all(wbuf *w, const qt_model *m, const kvlist *kv, const plan *pl, uint32_t align,
                           const qt_gguf_write_opts *o) {
    qt_status s = wb_put(w, "GGUF", 4);
    if (s == QT_OK) s = wb_u32(w, 3);
    if (s == QT_OK) s = wb_u64(w, (uint64_t)pl->n);
    if (s == QT_OK) s = wb_u64(w, (uint64_t)kv->n);
    for (int64_t i = 0; i < kv->n && s == QT_OK; i++) {
        s = wb_str(w, kv->kv[i].key, strlen(kv->kv[i].key));
        if (s == QT_OK) s = wb_u32(w, (uint32_t)kv->kv[i].value.type);
        if (s == QT_OK) s = write_value(w, &kv->kv[i].value);
    }
    for (int32_t i = 0; i < pl->n && s == QT_OK; i++) {
        const plan_tensor *p = &pl->t[i];
        int32_t nd = p->src->n_dims;
        s = wb_str(w, p->src->name, strlen(p->src->name));
        if (s == QT_OK) s = wb_u32(w, (uint32_t)nd);
        for (int32_t d = 0; d < nd && s == QT_OK; d++) s = wb_u64(w, (uint64_t)p->src->ne[d]);
        if (s == QT_OK) s = wb_u32(w, (uint32_t)p->type);
        if (s == QT_OK) s = wb_u64(w, p->offset);
    }
    if (s != QT_OK) return s;
    if ((s = wb_zeros(w, (align - written(w) % align) % align)) != QT_OK) return s;
    if (o->size_only) { /* the data section is planned exactly: no need to produce it */
        *o->size_only = written(w) + pl->data_bytes;
        return QT_OK;
    }

    /* Scratch sized for the longest unit. */
    int64_t max_row = 1;
    for (int32_t i = 0; i < pl->n; i++)
        if (pl->t[i].src->ne[0] > max_row) max_row = pl->t[i].src->ne[0];
    int32_t first = 0;
    if ((s = resume_point(w, o, pl, &first)) != QT_OK) return s;
    convert_ctx cx = {0};
    cx.scratch = malloc((size_t)max_row * sizeof(float));
    cx.out_cap = (size_t)max_row * sizeof(float) * 2 > WBUF_CAP ? (size_t)max_row * sizeof(float) * 2 : WBUF_CAP;
    cx.out = malloc(cx.out_cap);
    if (!cx.scratch || !cx.out) s = qt_error(QT_ERR_NOMEM, "%s: out of memory", m->path);
    uint64_t done = first < pl->n ? pl->t[first].offset : pl->data_bytes;
    for (int32_t i = first; i < pl->n && s == QT_OK; i++) {
        const plan_tensor *p = &pl->t[i];
        qt_progress_report(&o->progress, "write gguf", (int64_t)done, (int64_t)pl->data_bytes);
        s = write_tensor_data(w, m, p, o, &cx);
        if (s == QT_OK) s = wb_zeros(w, (align - p->nbytes % align) % align);
        if (s == QT_OK) s = checkpoint(w, o, i + 1);
        done += (uint64_t)p->nbytes + (align - p->nbytes % align) % align;
    }
    if (s == QT_OK) qt_progress_report(&o->progress, "write gguf", (int64_t)done, (int64_t)pl->data_bytes);
    free(cx.scratch);
    free(cx.out);
    return s;
}

qt_gguf_write_opts qt_gguf_write_opts_default(void) {
    qt_gguf_write_opts o;
    memset(&o, 0, sizeof o);
    o.outtype = QT_TYPE_COUNT;
    o.file_type = -1;
    return o;
}

qt_status qt_gguf_write(const qt_model *m, const char *path, const qt_gguf_write_opts *opts) {
    qt_gguf_write_opts o = opts ? *opts : qt_gguf_write_opts_default();
    if (o.outtype != QT_TYPE_COUNT && !qt_type_get(o.outtype))
        return qt_error(QT_ERR_ARG, "GGUF writer: unknown output type id %d", (int)o.outtype);
    const qt_gguf *src = qt_model_gguf(m);
    uint32_t align = o.alignment ? o.alignment : (src ? qt_gguf_alignment(src) : 32);
    if (align == 0 || (align & (align - 1)) != 0)
        return qt_error(QT_ERR_ARG, "GGUF writer: alignment %u is not a power of two", align);

    qt__arena arena = {0};
    plan pl = {0};
    kvlist kv = {0};
    wbuf w = {0};
    qt_status s = build_plan(m, &o, align, &arena, &pl);
    if (s == QT_OK) s = build_metadata(&kv, m, &o, &pl, align);
    if (s == QT_OK && !o.size_only && strcmp(path, "-")) s = qt__refuse_input(m, path);
    if (s == QT_OK && o.size_only) {
        if (!(w.buf = malloc(WBUF_CAP))) s = qt_error(QT_ERR_NOMEM, "out of memory");
        if (s == QT_OK) s = write_all(&w, m, &kv, &pl, align, &o);
        free(w.buf);
    } else {
        if (s == QT_OK) s = wb_open(&w, path, o.stage);
        if (s == QT_OK) s = write_all(&w, m, &kv, &pl, align, &o);
        s = wb_close(&w, s);
    }
    free(kv.kv);
    qt__arena_free(&kv.arena);
    qt__arena_free(&arena);
    free(pl.t);
    return s;
}

/* ---- raw files: given metadata and tensors (imatrix files) ------------------------------- */

/* ggml_n_dims: dimensions up to the last one above 1 (at least 1), which is
 * what ggml's writer records for a tensor. */
static uint32_t raw_n_dims(const int64_t *ne) {
    uint32_t n = QT_MAX_DIMS;
    while (n > 1 && ne[n - 1] == 1) n--;
    return n;
}

static size_t raw_nbytes(const qt__gguf_raw_tensor *t) {
    return qt_row_size(t->type, t->ne[0]) * (size_t)(t->ne[1] * t->ne[2] * t->ne[3]);
}

static qt_status write_raw_all(wbuf *w, const qt_gguf_kv *kv, int64_t n_kv, const qt__gguf_raw_tensor *t, int64_t n_t) {
    const uint32_t align = 32;
    qt_status s = wb_put(w, "GGUF", 4);
    if (s == QT_OK) s = wb_u32(w, 3);
    if (s == QT_OK) s = wb_u64(w, (uint64_t)n_t);
    if (s == QT_OK) s = wb_u64(w, (uint64_t)n_kv);
    for (int64_t i = 0; i < n_kv && s == QT_OK; i++) {
        s = wb_str(w, kv[i].key, strlen(kv[i].key));
        if (s == QT_OK) s = wb_u32(w, (uint32_t)kv[i].value.type);
        if (s == QT_OK) s = write_value(w, &kv[i].value);
    }
    uint64_t offset = 0;
    for (int64_t i = 0; i < n_t && s == QT_OK; i++) {
        const uint32_t nd = raw_n_dims(t[i].ne);
        s = wb_str(w, t[i].name, strlen(t[i].name));
        if (s == QT_OK) s = wb_u32(w, nd);
        for (uint32_t d = 0; d < nd && s == QT_OK; d++) s = wb_u64(w, (uint64_t)t[i].ne[d]);
        if (s == QT_OK) s = wb_u32(w, (uint32_t)t[i].type);
        if (s == QT_OK) s = wb_u64(w, offset);
        const size_t nb = raw_nbytes(&t[i]);
        offset += nb + (align - nb % align) % align;
    }
    if (s == QT_OK) s = wb_zeros(w, (align - written(w) % align) % align);
    for (int64_t i = 0; i < n_t && s == QT_OK; i++) {
        const size_t nb = raw_nbytes(&t[i]);
        s = wb_put(w, t[i].data, nb);
        if (s == QT_OK) s = wb_zeros(w, (align - nb % align) % align);
    }
    return s;
}

qt_status qt__gguf_write_raw(const char *path, const qt_gguf_kv *kv, int64_t n_kv, const qt__gguf_raw_tensor *t,
                             int64_t n_t) {
    for (int64_t i = 0; i < n_t; i++)
        if (!qt_row_size(t[i].type, t[i].ne[0]))
            return qt_error(QT_ERR_SHAPE, "%s: tensor '%s': %s", path, t[i].name, qt_last_error());
    wbuf w;
    qt_status s = wb_open(&w, path, NULL);
    if (s == QT_OK) s = write_raw_all(&w, kv, n_kv, t, n_t);
    return wb_close(&w, s);
}
