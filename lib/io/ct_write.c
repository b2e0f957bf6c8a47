/* lib/io/ct_write.c — a model -> a compressed-tensors checkpoint directory for
 * vLLM, laid out as llm-compressor saves one (quanta/quantize_ct.h;
 * formats.md §4.1-§4.7).
 *
 * The schemes are data (the table below): a weight format row of
 * lib/quant/schemes.c (its tensor codec does int and per-channel fp8), the
 * llm-compressor preset whose QuantizationArgs config.json carries, the input
 * activations and the vLLM kernel whose shape rules apply.
 *
 * Tensors. The safetensors writer orders tensors as the reference writer does
 * (wider dtypes first), so the pieces of one quantized linear (weight_shape
 * I64, weight_packed I32, weight_scale BF16 ...) are far apart in the file.
 * A piece is computed when the writer asks for it: the small pieces (scales,
 * zero points) of a quantized tensor are kept until written, its codes only
 * for the most recent tensor, so a tensor is quantized at most twice and
 * memory stays at one f32 matrix plus the scales.
 */
#define _GNU_SOURCE
#define PCRE2_CODE_UNIT_WIDTH 8
#include <jansson.h>
#include <math.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ct_resume.h"
#include "hf_internal.h"
#include "io_internal.h"
#include "model/model_internal.h"
#include "model/tensor_names.h"
#include "quant/ct_internal.h"
#include "quanta/engine.h"
#include "quanta/formats.h"
#include "quanta/gptq.h"
#include "quanta/num.h"
#include "quanta/quantize.h"
#include "quanta/quantize_ct.h"
#include "quanta/safetensors.h"

/* ---- schemes ------------------------------------------------------------------ */

typedef enum wkind { W_INT = 0, W_FP8, W_FP8_BLOCK, W_NVFP4, W_MXFP4 } wkind;
typedef enum akind { A_NONE = 0, A_INT8_TOKEN, A_FP8_TOKEN, A_FP8_TENSOR_STATIC, A_FP8_GROUP128, A_NVFP4_LOCAL } akind;
/* vLLM kernels whose shape rules we check (vllm/model_executor/layers/quantization/utils/). */
typedef enum kkind { K_MARLIN = 0, K_CUTLASS_INT8, K_FP8, K_FP8_BLOCK, K_FP4 } kkind;

typedef struct ct_scheme {
    const char *key, *aliases;
    const char *format_row;      /* lib/quant/schemes.c row (NULL: fp8 block, coded here) */
    const char *preset;          /* llm-compressor preset name (recipe.yaml) */
    const char *ct_format;       /* compressed-tensors "format" */
    wkind w;
    akind a;
    kkind k;
    /* weights QuantizationArgs */
    int bits;
    const char *type;            /* "int" / "float" */
    bool symmetric;
    const char *strategy;
    int group_size;              /* 0: null */
    const char *scale_dtype;     /* NULL: null */
    bool needs_amax;             /* static activations: refused without input_amax */
} ct_scheme;

/* compressed_tensors/quantization/quant_scheme.py PRESET_SCHEMES. */
static const ct_scheme schemes[] = {
    {"w4a16", "int4,w4a16-sym", "w4a16-g128", "W4A16", "pack-quantized", W_INT, A_NONE, K_MARLIN, 4, "int", true, "group", 128, NULL, false},
    {"w4a16-asym", "int4-asym", "w4a16-g128-asym", "W4A16_ASYM", "pack-quantized", W_INT, A_NONE, K_MARLIN, 4, "int", false, "group", 128, NULL, false},
    {"w8a16", "int8-weight-only", "w8a16-g128", "W8A16", "pack-quantized", W_INT, A_NONE, K_MARLIN, 8, "int", true, "group", 128, NULL, false},
    {"w8a8-int8", "int8,w8a8,int8-w8a8", "w8a8-int8", "W8A8", "int-quantized", W_INT, A_INT8_TOKEN, K_CUTLASS_INT8, 8, "int", true, "channel", 0, NULL, false},
    {"fp8-dynamic", "fp8,fp8-w8a8,w8a8-fp8", "w8a8-fp8", "FP8_DYNAMIC", "float-quantized", W_FP8, A_FP8_TOKEN, K_FP8, 8, "float", true, "channel", 0, NULL, false},
    {"fp8-static", "fp8-tensor", "fp8-e4m3-tensor", "FP8", "float-quantized", W_FP8, A_FP8_TENSOR_STATIC, K_FP8, 8, "float", true, "tensor", 0, NULL, true},
    {"fp8-block", "fp8-blockwise", NULL, "FP8_BLOCK", "float-quantized", W_FP8_BLOCK, A_FP8_GROUP128, K_FP8_BLOCK, 8, "float", true, "block", 0, NULL, false},
    {"nvfp4", "nvfp4-w4a4,nvfp4a16", "nvfp4", "NVFP4A16", "nvfp4-pack-quantized", W_NVFP4, A_NONE, K_FP4, 4, "float", true, "tensor_group", 16, "torch.float8_e4m3fn", false},
    {"mxfp4", "mxfp4-w4a16,mxfp4a16", "mxfp4-ct", "MXFP4A16", "mxfp4-pack-quantized", W_MXFP4, A_NONE, K_FP4, 4, "float", true, "group", 32, "torch.uint8", false},
};
#define N_SCHEMES ((int)(sizeof schemes / sizeof schemes[0]))
#define FP8_BLOCK 128 /* FP8_BLOCK block_structure [128, 128] */
/* quantization_config.version: the compressed-tensors release line whose
 * serialisation this follows (QuantizationArgs with scale_dtype / zp_dtype,
 * transform_config). vLLM does not read it. */
#define CT_VERSION "0.12.2"

static bool in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncasecmp(p, name, n)) return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

static const ct_scheme *scheme_find(const char *name) {
    for (int i = 0; name && i < N_SCHEMES; i++)
        if (!strcasecmp(schemes[i].key, name) || in_list(schemes[i].aliases, name)) return &schemes[i];
    return NULL;
}

const char *qt_ct_scheme_canonical(const char *name) {
    const ct_scheme *s = scheme_find(name);
    return s ? s->key : NULL;
}
bool qt_ct_scheme_uses_act_stats(const char *name) {
    const ct_scheme *s = scheme_find(name);
    return s && (s->needs_amax || s->w == W_NVFP4);
}
int qt_ct_scheme_count(void) { return N_SCHEMES; }
const char *qt_ct_scheme_key(int i) { return i >= 0 && i < N_SCHEMES ? schemes[i].key : NULL; }

/* ---- the plan ------------------------------------------------------------------- */

typedef enum piece { P_WEIGHT = 0, P_SCALE, P_ZP, P_SHAPE, P_GSCALE, P_INPUT_SCALE, P_INPUT_GSCALE, P_DENSE } piece;

typedef struct qres {            /* one quantized tensor's outputs */
    void *weight;                /* codes / packed words */
    void *scale;                 /* stored bytes of weight_scale */
    void *zp;                    /* stored bytes of weight_zero_point */
    bool small_valid, weight_valid;
    int32_t pending_small;       /* small pieces not yet written */
} qres;

typedef struct ptensor {
    const qt_tensor *src;
    const qt_tn_info *ti;
    int32_t layer;
    char hf[QT_MAX_NAME + 32];   /* HF name (dense) or module prefix (quantized) */
    int64_t rows, cols;          /* [out, in] */
    bool quant, permute;
    int fuse;                    /* 0 none, 1 q/k/v, 2 gate/up */
    float amax;                  /* weight amax (fp8-static, nvfp4) */
    float shared;                /* fp8-static: shared weight scale; nvfp4: shared global scale */
    float in_amax;               /* input activations' absmax (static schemes), shared over fused shards */
    int64_t group;               /* integer schemes: the group size, 0 for one scale per channel (the
                                    fallback of a per-group scheme for rows no group divides) */
    qres r;
    uint64_t bytes;
} ptensor;

typedef struct pentry {
    int32_t t;                   /* ptensor index */
    piece p;
    char name[QT_MAX_NAME + 64];
} pentry;

typedef struct ct_writer {
    const qt_model *m;
    const ct_scheme *sc;
    const qt_format_info *fmt;   /* NULL for fp8 block */
    qt_ct_export_opts o;
    qt_ct_int_args ia;           /* integer schemes: the scheme's arguments, group size resolved */
    int32_t n_fallback;          /* linears of a per-group scheme that fell back to one scale per channel */
    const char *dir;
    qt_type dtype;               /* BF16 or F16: the model dtype */
    qt_ct_dtype cdt;
    qt_st_dtype sdt;
    ptensor *t;
    int32_t n_t;
    pentry *pe;
    qt_st_entry *entries;
    int32_t n_e, cap_e;
    int32_t last_weight;         /* ptensor whose codes are cached, -1 */
    float *fbuf;                 /* one f32 matrix */
    qt_threadpool *pool;         /* NULL: one thread */
    int32_t n_warn;
    int32_t n_quant, n_kept;
    int32_t n_done;              /* quantized tensors written (progress) */
    int32_t n_written;           /* stored tensors written (o.tensor_written), unless resumable */
    qt_afile **files;
    int32_t n_files, cap_files;
    qt_tensor *kv_t;             /* (2 * n_layer) the KV scales as tensors, data in o.kv_*_scale */
    qt__ct_resume *res;          /* resumable run: its state; NULL otherwise */
} ct_writer;

static bool is_linear(const qt_tn_info *ti, int *fuse) {
    static const char *const qkv[] = {"attn_q.weight", "attn_k.weight", "attn_v.weight"};
    static const char *const gu[] = {"ffn_gate.weight", "ffn_up.weight"};
    *fuse = 0;
    if (ti->place != QT_TN_PER_LAYER || ti->n_dims != 2) return false;
    for (int i = 0; i < 3; i++) if (!strcmp(ti->gguf, qkv[i])) { *fuse = 1; return true; }
    for (int i = 0; i < 2; i++) if (!strcmp(ti->gguf, gu[i])) { *fuse = 2; return true; }
    return !strcmp(ti->gguf, "attn_output.weight") || !strcmp(ti->gguf, "ffn_down.weight");
}

static qt_status keep_match(const ct_writer *w, const char *name, bool *keep) {
    *keep = false;
    for (const char *const *k = w->o.keep; k && *k && !*keep; k++) {
        int err;
        PCRE2_SIZE off;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)*k, PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
        if (!re) {
            PCRE2_UCHAR msg[128];
            pcre2_get_error_message(err, msg, sizeof msg);
            return qt_error(QT_ERR_ARG, "--keep '%s': bad regular expression at offset %zu: %s", *k, (size_t)off, (char *)msg);
        }
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
        *keep = md && pcre2_match(re, (PCRE2_SPTR)name, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL) >= 0;
        pcre2_match_data_free(md);
        pcre2_code_free(re);
    }
    return QT_OK;
}

static void warn(ct_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(ct_writer *w, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    w->n_warn++;
    if (w->o.warn) w->o.warn(w->o.warn_ctx, msg);
}

/* The per-channel fallback, said per tensor (not a kernel shape problem: not counted in n_warn). */
static void note_fallback(ct_writer *w, const ptensor *p) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s: input width %lld is not a multiple of the group size %lld: one scale per output "
             "channel (strategy \"channel\")", p->hf, (long long)p->cols, (long long)w->ia.group_size);
    if (w->o.warn) w->o.warn(w->o.warn_ctx, msg);
}

/* vLLM's shape rules for the kernel that would run this layer (per shard, tensor parallel 1). */
static void check_kernel(ct_writer *w, const ptensor *p) {
    const int64_t n = p->rows, k = p->cols;
    switch (w->sc->k) {
    case K_MARLIN: /* marlin_utils.py check_marlin_supports_shape: MIN_THREAD_N 64, MIN_THREAD_K 128 */
        if (n % 64) warn(w, "%s: output size %lld is not divisible by 64; vLLM's Marlin (gptq_marlin) kernel will refuse it", p->hf, (long long)n);
        if (k % 128) warn(w, "%s: input size %lld is not divisible by 128; vLLM's Marlin (gptq_marlin) kernel will refuse it", p->hf, (long long)k);
        /* marlin_utils.py MARLIN_SUPPORTED_GROUP_SIZES: -1 (channel), 32, 64, 128 */
        if (p->group && p->group != 32 && p->group != 64 && p->group != 128)
            warn(w, "%s: group size %lld is not one Marlin supports (32, 64, 128 or per channel); vLLM will refuse it", p->hf,
                 (long long)p->group);
        break;
    case K_CUTLASS_INT8: /* csrc/quantization/cutlass_w8a8/scaled_mm_entry.cu: c.stride(0) % 16 (N) and
                          * b.stride(1) % 16 (K), "16 Byte Alignment" */
    case K_FP8:
        if (n % 16 || k % 16) warn(w, "%s: shape [%lld, %lld] is not a multiple of 16; vLLM's CUTLASS scaled_mm kernel will refuse it", p->hf, (long long)n, (long long)k);
        break;
    case K_FP8_BLOCK: /* fp8_utils.py validate_fp8_block_shape: fused shards whole blocks */
        if (n % FP8_BLOCK || k % FP8_BLOCK) warn(w, "%s: shape [%lld, %lld] is not a multiple of the 128x128 block; vLLM's block FP8 kernel will refuse it", p->hf, (long long)n, (long long)k);
        break;
    case K_FP4: /* off Blackwell vLLM runs FP4 weights through Marlin (marlin_utils_fp4.py calls
                 * check_marlin_supports_shape): Marlin's N % 64, K % 128 */
        if (n % 64 || k % 128) warn(w, "%s: shape [%lld, %lld]: output not divisible by 64 or input by 128; vLLM's Marlin FP4 kernel will refuse it", p->hf, (long long)n, (long long)k);
        break;
    }
}

static qt_status push_entry(ct_writer *w, int32_t t, piece p, const char *suffix, qt_st_dtype dt, int32_t nd, int64_t d0, int64_t d1) {
    if (w->n_e == w->cap_e) {
        int32_t cap = w->cap_e ? 2 * w->cap_e : 64;
        pentry *np = realloc(w->pe, (size_t)cap * sizeof *np);
        if (np) w->pe = np;
        qt_st_entry *ne = realloc(w->entries, (size_t)cap * sizeof *ne);
        if (ne) w->entries = ne;
        if (!np || !ne) return qt_error(QT_ERR_NOMEM, "%s: out of memory", w->dir);
        w->cap_e = cap;
    }
    pentry *e = &w->pe[w->n_e];
    e->t = t;
    e->p = p;
    snprintf(e->name, sizeof e->name, "%s%s", w->t[t].hf, suffix);
    qt_st_entry *se = &w->entries[w->n_e++];
    memset(se, 0, sizeof *se);
    se->dtype = dt;
    se->n_dims = nd;
    se->shape[0] = d0;
    se->shape[1] = d1;
    w->t[t].bytes += qt_st_entry_nbytes(se);
    if (p != P_WEIGHT && p != P_DENSE && p != P_SHAPE && p != P_GSCALE && p != P_INPUT_SCALE && p != P_INPUT_GSCALE)
        w->t[t].r.pending_small++;
    return QT_OK;
}

/* The stored tensors of one quantized linear (formats.md §4.3). */
static qt_status quant_entries(ct_writer *w, int32_t i) {
    const ptensor *p = &w->t[i];
    const ct_scheme *sc = w->sc;
    const int64_t R = p->rows, C = p->cols;
    qt_status s = QT_OK;
    qt_ct_tensor_sizes z = {0};
    if (w->fmt && sc->w != W_INT && (s = qt_format_tensor_sizes(w->fmt, R, C, &z)) != QT_OK)
        return qt_error(s, "%s (%s): %s (scheme %s; --keep '%s' leaves it 16-bit)", p->hf, p->src->name, qt_last_error(),
                        sc->key, p->src->name);
    if (sc->w == W_FP8_BLOCK) {
        const int64_t br = (R + FP8_BLOCK - 1) / FP8_BLOCK, bc = (C + FP8_BLOCK - 1) / FP8_BLOCK;
        if ((s = push_entry(w, i, P_WEIGHT, ".weight", QT_ST_F8_E4M3, 2, R, C)) == QT_OK)
            s = push_entry(w, i, P_SCALE, ".weight_scale", w->sdt, 2, br, bc);
        return s;
    }
    if (sc->w == W_INT && !strcmp(sc->ct_format, "pack-quantized")) {
        const int64_t per_row = p->group ? C / p->group : 1;
        s = push_entry(w, i, P_WEIGHT, ".weight_packed", QT_ST_I32, 2, R, qt_ct_packed_len(C, sc->bits));
        if (s == QT_OK) s = push_entry(w, i, P_SCALE, ".weight_scale", w->sdt, 2, R, per_row);
        if (s == QT_OK) s = push_entry(w, i, P_SHAPE, ".weight_shape", QT_ST_I64, 1, 2, 0);
        if (s == QT_OK && !sc->symmetric)
            s = push_entry(w, i, P_ZP, ".weight_zero_point", QT_ST_I32, 2, qt_ct_packed_len(R, sc->bits), per_row);
        return s;
    }
    if (sc->w == W_INT || sc->w == W_FP8) {
        const bool tensor = !strcmp(sc->strategy, "tensor");
        s = push_entry(w, i, P_WEIGHT, ".weight", sc->w == W_INT ? QT_ST_I8 : QT_ST_F8_E4M3, 2, R, C);
        if (s == QT_OK) s = tensor ? push_entry(w, i, P_SCALE, ".weight_scale", w->sdt, 1, 1, 0)
                                   : push_entry(w, i, P_SCALE, ".weight_scale", w->sdt, 2, R, 1);
        if (s == QT_OK && sc->a == A_FP8_TENSOR_STATIC) s = push_entry(w, i, P_INPUT_SCALE, ".input_scale", w->sdt, 1, 1, 0);
        return s;
    }
    /* nvfp4 / mxfp4 */
    s = push_entry(w, i, P_WEIGHT, ".weight_packed", QT_ST_U8, 2, R, C / 2);
    if (s == QT_OK) s = push_entry(w, i, P_SCALE, ".weight_scale", sc->w == W_NVFP4 ? QT_ST_F8_E4M3 : QT_ST_U8, 2, R, C / sc->group_size);
    if (s == QT_OK && sc->w == W_NVFP4) s = push_entry(w, i, P_GSCALE, ".weight_global_scale", QT_ST_F32, 1, 1, 0);
    if (s == QT_OK && sc->w == W_NVFP4 && w->o.input_amax)
        s = push_entry(w, i, P_INPUT_GSCALE, ".input_global_scale", QT_ST_F32, 1, 1, 0);
    return s;
}

/* Source rows -> f32 [rows, cols] in HF row order. */
static qt_status load_f32(ct_writer *w, const ptensor *p, float *out) {
    const qt_tensor *t = p->src;
    const size_t rb = qt_row_size(t->type, p->cols);
    for (int64_t r = 0; r < p->rows; r++) {
        int64_t src = p->permute ? qt__tn_permuted_row(r, w->m->hp.head_dim, false) : r;
        qt_status s = qt__row_to_f32(t->type, (const uint8_t *)t->data + (size_t)src * rb, out + r * p->cols, p->cols);
        if (s != QT_OK) return qt_error(s, "%s: tensor '%s': %s", w->m->path, t->name, qt_last_error());
    }
    qt__model_drop_pages(w->m, t->data, t->nbytes); /* read once: residency stays far below the model's size */
    return QT_OK;
}

/* Weight amax per tensor and the scales fused shards share (formats.md §4.6-4.7). */
static qt_status shared_scales(ct_writer *w) {
    const bool fp8t = w->sc->a == A_FP8_TENSOR_STATIC, nv = w->sc->w == W_NVFP4;
    for (int32_t i = 0; i < w->n_t; i++) {
        ptensor *p = &w->t[i];
        if (!p->quant) continue;
        if (w->o.input_amax) {
            p->in_amax = w->o.input_amax(w->o.input_amax_ctx, p->src->name);
            if (!(p->in_amax >= 0.0f) || !isfinite(p->in_amax))
                return qt_error(QT_ERR_RANGE, "%s: input activation amax %g is not a finite non-negative number", p->src->name, p->in_amax);
        }
        if (!fp8t && !nv) continue;
        qt_status s = load_f32(w, p, w->fbuf);
        if (s != QT_OK) return s;
        p->amax = qt_ct_amax(w->fbuf, p->rows * p->cols, w->cdt);
    }
    for (int32_t i = 0; i < w->n_t; i++) {
        ptensor *p = &w->t[i];
        if (!p->quant) continue;
        float amax = p->amax, in_amax = p->in_amax;
        for (int32_t j = 0; j < w->n_t; j++) {
            const ptensor *q = &w->t[j];
            if (j == i || !q->quant || !p->fuse || q->fuse != p->fuse || q->layer != p->layer) continue;
            if (q->amax > amax) amax = q->amax;
            if (q->in_amax > in_amax) in_amax = q->in_amax;
        }
        /* fp8: the largest shard's scale; nvfp4: the smallest global scale (of the largest amax) */
        if (fp8t) { float sc = qt_ct_round_dtype(amax / 448.0f, w->cdt); p->shared = sc == 0.0f ? qt_ct_dtype_eps(w->cdt) : sc; }
        if (nv) p->shared = qt_ct_nvfp4_global_scale(amax, w->cdt);
        p->in_amax = in_amax;
    }
    return QT_OK;
}

static bool is_kv_scale(const qt_tn_info *ti) {
    return !strcmp(ti->gguf, "attn_k_scale") || !strcmp(ti->gguf, "attn_v_scale");
}

/* The fitted KV scales as 1-D tensors (blk.N.attn_k_scale / attn_v_scale), kept dense. */
static qt_status add_kv_scales(ct_writer *w) {
    const int32_t nl = w->m->hp.n_layer, per = w->o.kv_per_layer;
    if (per != 1 && per != w->m->hp.n_head_kv)
        return qt_error(QT_ERR_ARG, "KV scales: %d per layer (1 or n_head_kv %d)", per, w->m->hp.n_head_kv);
    if (!(w->kv_t = calloc((size_t)(2 * nl + 1), sizeof *w->kv_t))) return qt_error(QT_ERR_NOMEM, "%s: out of memory", w->dir);
    for (int32_t il = 0; il < nl; il++)
        for (int k = 0; k < 2; k++) {
            qt_tensor *t = &w->kv_t[2 * il + k];
            snprintf(t->name, sizeof t->name, k ? QT_KV_V_SCALE_FMT : QT_KV_K_SCALE_FMT, il);
            t->type = QT_TYPE_F32;
            t->n_dims = 1;
            t->ne[0] = per;
            for (int d = 1; d < QT_MAX_DIMS; d++) t->ne[d] = 1;
            t->nbytes = (size_t)per * sizeof(float);
            t->data = (k ? w->o.kv_v_scale : w->o.kv_k_scale) + (size_t)il * per;
            ptensor *p = &w->t[w->n_t++];
            p->src = t;
            p->ti = qt__tn_from_gguf(t->name, &p->layer);
            if (!p->ti) return qt_error(QT_ERR_INTERNAL, "%s: no name for %s", w->dir, t->name);
            qt__tn_hf_name(p->ti, p->layer, p->hf, sizeof p->hf);
            p->cols = per;
            p->rows = 1;
            w->n_kept++;
        }
    return QT_OK;
}

static qt_status plan(ct_writer *w) {
    const qt_model *m = w->m;
    const qt_tensor *emb = qt_model_find_tensor(m, "token_embd.weight");
    w->dtype = emb && emb->type == QT_TYPE_F16 ? QT_TYPE_F16 : QT_TYPE_BF16;
    w->cdt = w->dtype == QT_TYPE_F16 ? QT_CT_F16 : QT_CT_BF16;
    w->sdt = w->dtype == QT_TYPE_F16 ? QT_ST_F16 : QT_ST_BF16;
    w->t = calloc((size_t)(m->n_tensors + 2 * m->hp.n_layer + 1), sizeof *w->t);
    if (!w->t) return qt_error(QT_ERR_NOMEM, "%s: out of memory", w->dir);
    int64_t max_elems = 1;
    qt_status s0;
    for (int32_t i = 0; i < m->n_tensors; i++) {
        const qt_tensor *t = &m->tensors[i];
        ptensor *p = &w->t[w->n_t];
        int32_t layer;
        const qt_tn_info *ti = qt__tn_from_gguf(t->name, &layer);
        if (ti && !strcmp(ti->gguf, "rope_freqs.weight")) continue; /* regenerated from config.json's rope_scaling */
        if (ti && w->o.kv_k_scale && is_kv_scale(ti)) continue; /* replaced by the fitted ones */
        if (!ti || !ti->hf) return qt_error(QT_ERR_UNSUPPORTED, "%s: tensor '%s' has no Hugging Face name", m->path, t->name);
        const qt_type_traits *tr = qt_type_get(t->type);
        if (!tr || (tr->is_quantized && !tr->to_float))
            return qt_error(QT_ERR_UNSUPPORTED, "%s: tensor '%s': no dequantizer for its type", m->path, t->name);
        p->src = t;
        p->ti = ti;
        p->layer = layer;
        qt__tn_hf_name(ti, layer, p->hf, sizeof p->hf);
        p->cols = t->ne[0];
        p->rows = t->n_dims > 1 ? t->ne[1] : 1;
        p->permute = !m->hp.rope_neox && ti->rows != QT_TN_ROWS_PLAIN;
        bool keep;
        qt_status s = keep_match(w, t->name, &keep);
        if (s != QT_OK) return s;
        p->quant = t->n_dims == 2 && is_linear(ti, &p->fuse) && !keep;
        if (p->quant) {
            char *dot = strrchr(p->hf, '.');
            if (dot && !strcmp(dot, ".weight")) *dot = 0; /* module prefix */
            if (p->rows * p->cols > max_elems) max_elems = p->rows * p->cols;
            w->n_quant++;
        } else {
            w->n_kept++;
        }
        if (p->quant && w->sc->w == W_INT) {
            const qt_ct_int_args a = qt_ct_int_args_for(&w->ia, p->cols);
            p->group = a.strategy == QT_CT_GROUP ? a.group_size : 0;
            if (w->ia.strategy == QT_CT_GROUP && !p->group) {
                w->n_fallback++;
                note_fallback(w, p);
            }
        }
        w->n_t++;
    }
    if (w->o.kv_k_scale && (s0 = add_kv_scales(w)) != QT_OK) return s0;
    if (!w->n_quant) return qt_error(QT_ERR_ARG, "%s: no linear weight is left to quantize (scheme %s)", m->path, w->sc->key);
    if (w->sc->needs_amax && !w->o.input_amax)
        return qt_error(QT_ERR_UNSUPPORTED, "scheme %s (llm-compressor FP8) stores static per-tensor input_scale values, which need "
                        "activation statistics from calibration; none were given (use fp8-dynamic, which needs none)", w->sc->key);
    for (int32_t i = 0; i < w->n_t; i++) {
        ptensor *p = &w->t[i];
        qt_status s;
        if (!p->quant) {
            s = p->src->n_dims == 1 ? push_entry(w, i, P_DENSE, "", w->sdt, 1, p->cols, 0)
                                    : push_entry(w, i, P_DENSE, "", w->sdt, 2, p->rows, p->cols);
        } else {
            s = quant_entries(w, i);
            if (s == QT_OK) check_kernel(w, p);
        }
        if (s != QT_OK) return s;
    }
    w->fbuf = malloc((size_t)max_elems * sizeof *w->fbuf);
    if (!w->fbuf) return qt_error(QT_ERR_NOMEM, "%s: out of memory", w->dir);
    for (int32_t k = 0; k < w->n_e; k++) w->entries[k].name = w->pe[k].name;
    return QT_OK;
}

/* ---- quantizing one tensor --------------------------------------------------------- */

static void store_scales(const ct_writer *w, const float *f, int64_t n, void *dst) {
    uint16_t *o = dst;
    for (int64_t i = 0; i < n; i++) o[i] = w->dtype == QT_TYPE_F16 ? qt_f32_to_fp16(f[i]) : qt_f32_to_bf16(f[i]);
}

static void qres_free_small(qres *r) {
    free(r->scale);
    free(r->zp);
    r->scale = r->zp = NULL;
    r->small_valid = false;
}

/* Row chunks quantized in parallel: every scheme's scales are per row, per
 * 128-row block or shared (given), so chunks of 128 rows are independent and
 * the bytes do not depend on the thread count. */
#define CHUNK_ROWS 128

typedef struct qjob {
    const ct_writer *w;
    const ptensor *p;
    int64_t per_row;              /* scales per row (int, fp8 channel, fp4); 0 for tensor/block */
    int8_t *q, *zp;               /* int: codes, zero points (unpacked) */
    const float *imp;             /* int: importance weights (cols) or NULL (minmax) */
    float *fs;                    /* float scales */
    uint8_t *out8, *codes8;       /* fp8 codes / fp4 packed, fp4 scale codes */
    qt_status *status;            /* per chunk */
} qjob;

static qt_status quantize_chunk(const qjob *j, int64_t r0, int64_t r1) {
    const ct_writer *w = j->w;
    const ct_scheme *sc = w->sc;
    const int64_t C = j->p->cols, n = r1 - r0;
    const float *x = w->fbuf + r0 * C;
    switch (sc->w) {
    case W_INT: {
        const qt_ct_int_args a = qt_ct_int_args_for(&w->ia, C);
        return qt__ct_int_quantize_weighted(x, n, C, &a, j->imp, j->q + r0 * C, j->fs + r0 * j->per_row, j->zp ? j->zp + r0 * j->per_row : NULL);
    }
    case W_FP8:
        if (sc->a == A_FP8_TENSOR_STATIC) return qt_ct_fp8_quantize_scaled(x, n, C, j->p->shared, w->cdt, j->out8 + r0 * C);
        return qt_ct_fp8_quantize(x, n, C, QT_CT_CHANNEL, w->cdt, j->out8 + r0 * C, j->fs + r0);
    case W_FP8_BLOCK:
        return qt_ct_fp8_block_quantize(x, n, C, FP8_BLOCK, FP8_BLOCK, w->cdt, j->out8 + r0 * C,
                                        j->fs + (r0 / FP8_BLOCK) * ((C + FP8_BLOCK - 1) / FP8_BLOCK));
    case W_NVFP4:
        return qt_ct_nvfp4_quantize_gs(x, n, C, w->cdt, j->p->shared, j->out8 + r0 * C / 2, j->codes8 + r0 * j->per_row);
    case W_MXFP4: return qt_ct_mxfp4_quantize(x, n, C, j->out8 + r0 * C / 2, j->codes8 + r0 * j->per_row);
    }
    return QT_OK;
}

static void quantize_range(void *ctx, int64_t begin, int64_t end, int thread_index) {
    (void)thread_index;
    const qjob *j = ctx;
    for (int64_t k = begin; k < end; k++) {
        const int64_t r0 = k * CHUNK_ROWS, r1 = r0 + CHUNK_ROWS < j->p->rows ? r0 + CHUNK_ROWS : j->p->rows;
        j->status[k] = quantize_chunk(j, r0, r1);
    }
}

/* Codes an algorithm computed (qt_ct_export_opts.int_codes, GPTQ), in the
 * model's row order: moved to HF row order as load_f32 moves weights. */
static bool given_int_codes(const ct_writer *w, const ptensor *p, const qjob *j) {
    const int8_t *q, *zp;
    const float *fs;
    if (!w->o.int_codes || !w->o.int_codes(w->o.int_codes_ctx, p->src->name, p->rows, p->cols, &q, &fs, &zp))
        return false;
    for (int64_t r = 0; r < p->rows; r++) {
        const int64_t src = p->permute ? qt__tn_permuted_row(r, w->m->hp.head_dim, false) : r;
        memcpy(j->q + r * p->cols, q + src * p->cols, (size_t)p->cols);
        memcpy(j->fs + r * j->per_row, fs + src * j->per_row, (size_t)j->per_row * sizeof *fs);
        if (j->zp) memcpy(j->zp + r * j->per_row, zp + src * j->per_row, (size_t)j->per_row);
    }
    return true;
}

/* Float codes (qt_ct_export_opts.float_codes), the same way. A scale shared by
 * fused shards must be the writer's own (shared_scales). The q/k row order
 * permutes rows within a head, so a 128-row fp8 block keeps its rows only
 * when heads tile it. */
static qt_status given_float_codes(const ct_writer *w, const ptensor *p, const qjob *j, bool *used) {
    const uint8_t *q, *sc8;
    const float *fs;
    float shared = 0.0f;
    const int64_t R = p->rows, C = p->cols, hd = w->m->hp.head_dim;
    *used = false;
    if (!w->o.float_codes || !w->o.float_codes(w->o.float_codes_ctx, p->src->name, R, C, &q, &fs, &sc8, &shared))
        return QT_OK;
    const bool fp4 = w->sc->w == W_NVFP4 || w->sc->w == W_MXFP4;
    const bool uses_shared = w->sc->w == W_NVFP4 || (w->sc->w == W_FP8 && w->sc->a == A_FP8_TENSOR_STATIC);
    if (uses_shared && shared != p->shared)
        return qt_error(QT_ERR_INTERNAL, "%s: the algorithm's shared scale %.9g is not the writer's %.9g", p->src->name,
                        shared, p->shared);
    if (w->sc->w == W_FP8_BLOCK && p->permute && FP8_BLOCK % hd != 0 && hd % FP8_BLOCK != 0)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: heads of %lld rows do not tile fp8's 128-row blocks, so GPTQ's block "
                        "scales cannot follow the HF row order", p->src->name, (long long)hd);
    for (int64_t r = 0; r < R; r++) {
        const int64_t src = p->permute ? qt__tn_permuted_row(r, hd, false) : r;
        if (fp4) {
            qt_ct_pack_fp4(q + src * C, C, j->out8 + r * C / 2);
            memcpy(j->codes8 + r * j->per_row, sc8 + src * j->per_row, (size_t)j->per_row);
        } else {
            memcpy(j->out8 + r * C, q + src * C, (size_t)C);
            if (w->sc->w == W_FP8 && w->sc->a != A_FP8_TENSOR_STATIC) j->fs[r] = fs[src];
        }
    }
    if (w->sc->w == W_FP8_BLOCK) /* heads tile the blocks: the same rows, the same scales */
        memcpy(j->fs, fs, (size_t)(((R + FP8_BLOCK - 1) / FP8_BLOCK) * ((C + FP8_BLOCK - 1) / FP8_BLOCK)) * sizeof *fs);
    *used = true;
    return QT_OK;
}

static qt_status given_codes(const ct_writer *w, const ptensor *p, const qjob *j, bool *used) {
    if (w->sc->w == W_INT) {
        *used = given_int_codes(w, p, j);
        return QT_OK;
    }
    return given_float_codes(w, p, j, used);
}

static qt_status quantize_tensor(ct_writer *w, int32_t i) {
    ptensor *p = &w->t[i];
    qres *r = &p->r;
    const int64_t R = p->rows, C = p->cols;
    qt_status s = load_f32(w, p, w->fbuf);
    if (s != QT_OK) return s;
    if (w->last_weight >= 0) { /* codes are kept for the most recent tensor only */
        free(w->t[w->last_weight].r.weight);
        w->t[w->last_weight].r.weight = NULL;
        w->t[w->last_weight].r.weight_valid = false;
    }
    free(r->weight);
    qres_free_small(r);
    r->weight = NULL;
    const ct_scheme *sc = w->sc;
    const bool fp4 = sc->w == W_NVFP4 || sc->w == W_MXFP4, packed = sc->w == W_INT && !strcmp(sc->ct_format, "pack-quantized");
    int64_t n_scales = 0, weight_bytes = R * C, per_row = 0;
    if (sc->w == W_FP8_BLOCK) n_scales = ((R + FP8_BLOCK - 1) / FP8_BLOCK) * ((C + FP8_BLOCK - 1) / FP8_BLOCK);
    else if (sc->w == W_FP8) n_scales = sc->a == A_FP8_TENSOR_STATIC ? 1 : R, per_row = 1;
    else if (sc->w == W_INT) per_row = p->group ? C / p->group : 1, n_scales = R * per_row;
    else per_row = C / sc->group_size, weight_bytes = R * C / 2;
    if (packed) weight_bytes = R * qt_ct_packed_len(C, sc->bits) * 4;
    const int64_t n_chunks = (R + CHUNK_ROWS - 1) / CHUNK_ROWS;
    qjob j = {.w = w, .p = p, .per_row = per_row};
    j.fs = malloc((size_t)(n_scales ? n_scales : 1) * sizeof *j.fs);
    j.status = calloc((size_t)n_chunks, sizeof *j.status);
    r->weight = malloc((size_t)weight_bytes);
    r->scale = malloc((size_t)(fp4 ? R * per_row : n_scales * 2) + 1);
    if (sc->w == W_INT) {
        j.q = packed ? malloc((size_t)(R * C)) : r->weight;
        if (!sc->symmetric) j.zp = malloc((size_t)n_scales);
    }
    j.out8 = r->weight;
    j.codes8 = r->scale;
    bool ok = j.fs && j.status && r->weight && r->scale && (sc->w != W_INT || (j.q && (sc->symmetric || j.zp)));
    if (!ok) s = qt_error(QT_ERR_NOMEM, "%s: out of memory quantizing %s", w->dir, p->hf);
    bool given = false;
    if (s == QT_OK) s = given_codes(w, p, &j, &given);
    if (s == QT_OK && !given) {
        if (sc->w == W_INT && w->o.importance) j.imp = w->o.importance(w->o.importance_ctx, p->src->name, C);
        qt_parallel_for(w->pool, n_chunks, quantize_range, &j);
        for (int64_t k = 0; k < n_chunks && s == QT_OK; k++) {
            if (j.status[k] == QT_OK) continue;
            /* the first failing chunk, in order, again on this thread: its message is thread-local */
            const int64_t r0 = k * CHUNK_ROWS;
            s = quantize_chunk(&j, r0, r0 + CHUNK_ROWS < R ? r0 + CHUNK_ROWS : R);
            if (s == QT_OK) s = j.status[k];
            s = qt_error(s, "%s (%s): %s", p->hf, p->src->name, qt_last_error());
        }
    }
    if (s == QT_OK && sc->w == W_FP8 && sc->a == A_FP8_TENSOR_STATIC) j.fs[0] = p->shared;
    if (s == QT_OK && packed) s = qt_ct_pack_rows(j.q, R, C, sc->bits, r->weight);
    if (s == QT_OK && packed && j.zp) {
        if (!(r->zp = malloc((size_t)(qt_ct_packed_len(R, sc->bits) * per_row * 4)))) s = qt_error(QT_ERR_NOMEM, "%s: out of memory", w->dir);
        else s = qt_ct_pack_cols(j.zp, R, per_row, sc->bits, r->zp);
    } else if (s == QT_OK && j.zp) {
        r->zp = j.zp; /* int-quantized: int8 zero points as they are */
        j.zp = NULL;
    }
    if (s == QT_OK && !fp4) store_scales(w, j.fs, n_scales, r->scale);
    if (packed) free(j.q);
    free(j.zp);
    free(j.fs);
    free(j.status);
    if (s != QT_OK) return s;
    r->weight_valid = r->small_valid = true;
    w->last_weight = i;
    return QT_OK;
}

/* ---- writing ------------------------------------------------------------------------ */

static qt_status write_dense(ct_writer *w, qt_st_writer *sw, const ptensor *p) {
    const qt_tensor *t = p->src;
    const int64_t row_len = t->n_dims == 1 ? t->ne[0] : p->cols;
    int64_t rows = t->n_dims == 1 ? 1 : p->rows;
    const size_t in_b = qt_row_size(t->type, row_len), out_b = qt_row_size(w->dtype, row_len);
    float *f = malloc((size_t)row_len * sizeof *f);
    uint8_t *o = malloc(out_b);
    qt_status s = f && o ? QT_OK : qt_error(QT_ERR_NOMEM, "%s: out of memory", w->dir);
    const float *given = t->n_dims == 1 && w->o.vector_values ? w->o.vector_values(w->o.vector_values_ctx, t->name, row_len) : NULL;
    if (given && s == QT_OK) {
        if ((s = qt__row_from_f32(w->dtype, given, o, row_len)) == QT_OK) s = qt_st_writer_write(sw, o, out_b);
        rows = 0;
    }
    for (int64_t r = 0; r < rows && s == QT_OK; r++) {
        int64_t src = p->permute ? qt__tn_permuted_row(r, w->m->hp.head_dim, false) : r;
        if ((s = qt__row_to_f32(t->type, (const uint8_t *)t->data + (size_t)src * in_b, f, row_len)) == QT_OK &&
            (s = qt__row_from_f32(w->dtype, f, o, row_len)) == QT_OK)
            s = qt_st_writer_write(sw, o, out_b);
    }
    qt__model_drop_pages(w->m, t->data, t->nbytes);
    free(f);
    free(o);
    return s;
}

static qt_status write_piece(ct_writer *w, qt_st_writer *sw, int32_t k) {
    const pentry *e = &w->pe[k];
    ptensor *p = &w->t[e->t];
    qres *r = &p->r;
    const uint64_t nb = qt_st_entry_nbytes(&w->entries[k]);
    qt_status s = QT_OK;
    switch (e->p) {
    case P_DENSE: return write_dense(w, sw, p);
    case P_SHAPE: { const int64_t shp[2] = {p->rows, p->cols}; return qt_st_writer_write(sw, shp, sizeof shp); }
    case P_GSCALE: return qt_st_writer_write(sw, &p->shared, 4);
    case P_INPUT_GSCALE: { const float g = qt_ct_nvfp4_global_scale(p->in_amax, QT_CT_F32); return qt_st_writer_write(sw, &g, 4); }
    case P_INPUT_SCALE: { /* static_minmax over calibration: amax / 448 in the dtype */
        float sc = qt_ct_round_dtype(p->in_amax / 448.0f, w->cdt);
        if (sc == 0.0f) sc = qt_ct_dtype_eps(w->cdt);
        uint16_t h;
        store_scales(w, &sc, 1, &h);
        return qt_st_writer_write(sw, &h, 2);
    }
    case P_WEIGHT:
        if (!(r->weight_valid && w->last_weight == e->t) && (s = quantize_tensor(w, e->t)) != QT_OK) return s;
        s = qt_st_writer_write(sw, r->weight, nb);
        if (r->pending_small == 0) qres_free_small(r);
        qt_progress_report(&w->o.progress, "quantizing", ++w->n_done, w->n_quant);
        return s;
    case P_SCALE:
    case P_ZP:
        if (!r->small_valid && (s = quantize_tensor(w, e->t)) != QT_OK) return s;
        s = qt_st_writer_write(sw, e->p == P_SCALE ? r->scale : r->zp, nb);
        if (--r->pending_small == 0) qres_free_small(r);
        return s;
    }
    return QT_OK;
}

static qt_status push_file(ct_writer *w, qt_afile *f) {
    if (w->n_files == w->cap_files) {
        int32_t cap = w->cap_files ? 2 * w->cap_files : 8;
        qt_afile **nf = realloc(w->files, (size_t)cap * sizeof *nf);
        if (!nf) { qt_afile_abort(f); return qt_error(QT_ERR_NOMEM, "%s: out of memory", w->dir); }
        w->files = nf;
        w->cap_files = cap;
    }
    w->files[w->n_files++] = f;
    return QT_OK;
}

static const qt_st_kv st_meta[] = {{"format", "pt"}};

static qt_status write_st(ct_writer *w, const char *path, int32_t first, int32_t count) {
    qt_st_writer *sw;
    qt_status s = qt__refuse_input(w->m, path);
    if (s == QT_OK) s = qt_st_writer_open(path, w->entries + first, count, st_meta, 1, &sw);
    if (s != QT_OK) return s;
    for (int32_t k = 0; k < count && s == QT_OK; k++) {
        if (qt_cancelled()) s = qt_error(QT_ERR_INTERRUPTED, "%s: cancelled", w->dir);
        else s = write_piece(w, sw, first + qt_st_writer_order(sw, k));
        if (s == QT_OK && w->o.tensor_written) w->o.tensor_written(w->o.tensor_written_ctx, ++w->n_written);
    }
    if (s != QT_OK) { qt_st_writer_abort(sw); return s; }
    qt_afile *f;
    s = qt_st_writer_finish(sw, &f);
    return s == QT_OK ? push_file(w, f) : s;
}

/* A piece an earlier run wrote: its bookkeeping as if written now. */
static void skip_piece(ct_writer *w, int32_t k) {
    const pentry *e = &w->pe[k];
    if (e->p == P_WEIGHT) qt_progress_report(&w->o.progress, "quantizing", ++w->n_done, w->n_quant);
    if (e->p == P_SCALE || e->p == P_ZP) w->t[e->t].r.pending_small--;
}

/* tensor: a stored tensor was completed (the callback hears of it); else a shard was renamed. */
static qt_status checkpoint(ct_writer *w, bool tensor) {
    qt_status s = qt__ct_resume_checkpoint(w->res);
    if (s == QT_OK && tensor && w->o.tensor_written) w->o.tensor_written(w->o.tensor_written_ctx, w->res->at.tensors_done);
    return s;
}

/* A resumable run's shard: written through PATH.partial (kept on failure),
 * synced and recorded after every stored tensor, renamed to PATH when
 * complete; a shard an earlier run completed is kept, one it began is
 * continued after its last complete tensor. */
static qt_status write_st_resumable(ct_writer *w, const char *path, int32_t shard, int32_t first, int32_t count) {
    qt__ct_progress *at = &w->res->at;
    struct stat sb;
    if (shard < at->shards_done) {
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size != at->shard_bytes[shard])
            return qt_error(QT_ERR_FORMAT, "--resume: %s: missing, or not the %llu bytes the state file records: run "
                            "without --resume to start again", path, (unsigned long long)at->shard_bytes[shard]);
        for (int32_t k = 0; k < count; k++) skip_piece(w, first + k);
        return QT_OK;
    }
    char part[4200];
    snprintf(part, sizeof part, "%s%s", path, QT_CT_PARTIAL_SUFFIX);
    const int32_t k0 = shard == at->shards_done ? at->shard_tensors : 0;
    if (k0 > count)
        return qt_error(QT_ERR_FORMAT, "%s: field 'shard_tensors': %d, but %s holds %d tensors", w->res->state_path, k0,
                        path, count);
    qt_afile_stage st = {.path = part, .keep = true, .resume_at = k0 ? at->shard_at : 0};
    qt_st_writer *sw;
    qt_status s = qt__refuse_input(w->m, path);
    if (s == QT_OK) s = qt_st_writer_open_staged(path, w->entries + first, count, st_meta, 1, &st, &sw);
    if (s != QT_OK) return s;
    for (int32_t k = 0; k < k0; k++) skip_piece(w, first + qt_st_writer_order(sw, k));
    for (int32_t k = k0; k < count && s == QT_OK; k++) {
        if (qt_cancelled()) s = qt_error(QT_ERR_INTERRUPTED, "%s: cancelled", w->dir);
        if (s == QT_OK) s = write_piece(w, sw, first + qt_st_writer_order(sw, k));
        if (s == QT_OK) s = qt_st_writer_sync(sw);
        if (s != QT_OK) break;
        at->shard_tensors = k + 1;
        at->shard_at = qt_st_writer_tell(sw);
        at->tensors_done++;
        s = checkpoint(w, true);
    }
    if (s != QT_OK) { qt_st_writer_abort(sw); return s; }
    const uint64_t bytes = qt_st_writer_tell(sw);
    if ((s = qt_st_writer_commit(sw)) != QT_OK) return s;
    at->shard_bytes[shard] = bytes;
    at->shards_done = shard + 1;
    at->shard_tensors = 0;
    at->shard_at = 0;
    return checkpoint(w, false);
}

static qt_status stage_text(ct_writer *w, const char *name, const char *text, size_t len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", w->dir, name);
    qt_afile *f = NULL;
    qt_status s = qt__refuse_input(w->m, path);
    if (s == QT_OK) s = qt_afile_open(path, &f);
    if (s == QT_OK) s = qt_afile_write(f, text, len);
    if (s != QT_OK) { qt_afile_abort(f); return s; }
    return push_file(w, f);
}

/* Shards: consecutive entries (a quantized tensor's pieces together) up to max bytes. */
static int32_t shard_plan(const ct_writer *w, int32_t *shard_of, uint64_t *total) {
    uint64_t max = w->o.max_shard_bytes ? w->o.max_shard_bytes : QT_CT_DEFAULT_SHARD_BYTES, cur = 0;
    int32_t n = 1;
    *total = 0;
    for (int32_t k = 0; k < w->n_e; k++) {
        uint64_t b = qt_st_entry_nbytes(&w->entries[k]);
        bool same_tensor = k > 0 && w->pe[k].t == w->pe[k - 1].t;
        if (cur > 0 && cur + b > max && !same_tensor) { n++; cur = 0; }
        if (shard_of) shard_of[k] = n - 1;
        cur += b;
        *total += b;
    }
    return n;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The file name of shard k of n (transformers' names). */
static void shard_name(char *buf, size_t size, int32_t k, int32_t n) {
    if (n == 1) snprintf(buf, size, "%s", QT_ST_SINGLE_NAME);
    else snprintf(buf, size, "model-%05d-of-%05d.safetensors", k + 1, n);
}

static qt_status write_weights(ct_writer *w) {
    int32_t *shard_of = calloc((size_t)w->n_e, sizeof *shard_of);
    if (!shard_of) return qt_error(QT_ERR_NOMEM, "%s: out of memory", w->dir);
    uint64_t total;
    const int32_t n = shard_plan(w, shard_of, &total);
    char path[4096];
    qt_status s = QT_OK;
    if (n == 1) {
        snprintf(path, sizeof path, "%s/%s", w->dir, QT_ST_SINGLE_NAME);
        s = w->res ? write_st_resumable(w, path, 0, 0, w->n_e) : write_st(w, path, 0, w->n_e);
    } else {
        json_t *map = json_object();
        for (int32_t k = 0, first = 0; s == QT_OK && k < n; k++) {
            int32_t count = 0;
            while (first + count < w->n_e && shard_of[first + count] == k) count++;
            char file[64];
            shard_name(file, sizeof file, k, n);
            snprintf(path, sizeof path, "%s/%s", w->dir, file);
            s = w->res ? write_st_resumable(w, path, k, first, count) : write_st(w, path, first, count);
            for (int32_t j = first; s == QT_OK && j < first + count; j++) json_object_set_new(map, w->pe[j].name, json_string(file));
            first += count;
        }
        /* transformers writes the weight_map sorted by name */
        const char **keys = malloc((size_t)w->n_e * sizeof *keys);
        json_t *sorted = json_object();
        for (int32_t k = 0; keys && k < w->n_e; k++) keys[k] = w->pe[k].name;
        if (keys) qsort(keys, (size_t)w->n_e, sizeof *keys, cmp_str);
        for (int32_t k = 0; keys && k < w->n_e; k++) json_object_set(sorted, keys[k], json_object_get(map, keys[k]));
        free(keys);
        json_decref(map);
        json_t *idx = json_pack("{s:{s:I}, s:o}", "metadata", "total_size", (json_int_t)total, "weight_map", sorted);
        char *text = idx ? json_dumps(idx, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        json_decref(idx);
        if (s == QT_OK) s = text ? stage_text(w, QT_ST_INDEX_NAME, text, strlen(text)) : qt_error(QT_ERR_NOMEM, "%s: out of memory", w->dir);
        free(text);
    }
    free(shard_of);
    return s;
}

/* ---- config.json and recipe.yaml ------------------------------------------------------ */

/* The weights' QuantizationArgs; group: the integer group size (0: the scheme's
 * strategy and group), -1: one scale per channel (the per-group fallback). */
static json_t *weight_args(const ct_writer *w, int64_t group) {
    const ct_scheme *sc = w->sc;
    if (sc->w == W_INT && !group) group = sc->group_size ? w->ia.group_size : -1;
    const char *strategy = sc->w != W_INT ? sc->strategy : group > 0 ? "group" : "channel";
    json_t *a = json_pack("{s:i, s:s, s:b, s:s, s:n, s:b, s:n, s:s, s:{}}", "num_bits", sc->bits, "type", sc->type,
                          "symmetric", sc->symmetric, "strategy", strategy, "block_structure", "dynamic", 0,
                          "actorder", "observer", "minmax", "observer_kwargs");
    json_object_set_new(a, "group_size", sc->w == W_INT ? (group > 0 ? json_integer(group) : json_null())
                                         : sc->group_size ? json_integer(sc->group_size) : json_null());
    if (sc->w == W_FP8_BLOCK) json_object_set_new(a, "block_structure", json_pack("[i, i]", FP8_BLOCK, FP8_BLOCK));
    json_object_set_new(a, "scale_dtype", sc->scale_dtype ? json_string(sc->scale_dtype) : json_null());
    json_object_set_new(a, "zp_dtype", sc->scale_dtype ? json_string(sc->scale_dtype) : !sc->symmetric ? json_string("torch.int8") : json_null());
    return a;
}

static json_t *act_args(const ct_writer *w) {
    akind a = w->sc->a;
    if (w->sc->w == W_NVFP4 && w->o.input_amax) a = A_NVFP4_LOCAL;
    if (a == A_NONE) return json_null();
    const bool fl = a != A_INT8_TOKEN;
    const int bits = a == A_NVFP4_LOCAL ? 4 : 8;
    const char *strategy = a == A_INT8_TOKEN || a == A_FP8_TOKEN ? "token" : a == A_FP8_TENSOR_STATIC ? "tensor"
                           : a == A_FP8_GROUP128 ? "group" : "tensor_group";
    json_t *o = json_pack("{s:i, s:s, s:b, s:s, s:n, s:n, s:{}}", "num_bits", bits, "type", fl ? "float" : "int",
                          "symmetric", 1, "strategy", strategy, "block_structure", "actorder", "observer_kwargs");
    json_object_set_new(o, "group_size", a == A_FP8_GROUP128 ? json_integer(128) : a == A_NVFP4_LOCAL ? json_integer(16) : json_null());
    json_object_set_new(o, "dynamic", a == A_FP8_TENSOR_STATIC ? json_false() : a == A_NVFP4_LOCAL ? json_string("local") : json_true());
    json_object_set_new(o, "observer", a == A_FP8_TENSOR_STATIC || a == A_NVFP4_LOCAL ? json_string("static_minmax") : json_null());
    json_object_set_new(o, "scale_dtype", a == A_NVFP4_LOCAL ? json_string("torch.float8_e4m3fn") : json_null());
    json_object_set_new(o, "zp_dtype", a == A_NVFP4_LOCAL ? json_string("torch.float8_e4m3fn") : json_null());
    return o;
}

static const char *preset_name(const ct_writer *w) { return w->sc->w == W_NVFP4 && w->o.input_amax ? "NVFP4" : w->sc->preset; }

/* ignore: lm_head always (kept 16-bit, as llm-compressor's recipes say), plus kept linears. */
static json_t *ignore_list(const ct_writer *w) {
    json_t *ig = json_array();
    json_array_append_new(ig, json_string("lm_head"));
    for (int32_t i = 0; i < w->n_t; i++) {
        const ptensor *p = &w->t[i];
        int fuse;
        if (p->quant || p->src->n_dims != 2 || !is_linear(p->ti, &fuse)) continue;
        char mod[QT_MAX_NAME + 32];
        snprintf(mod, sizeof mod, "%s", p->hf);
        char *dot = strrchr(mod, '.');
        if (dot) *dot = 0;
        json_array_append_new(ig, json_string(mod));
    }
    return ig;
}

/* A GGUF metadata value as JSON: strings, integers, and arrays of uint64 as
 * 16-hex-digit strings (the bottom-k shingle hashes exceed JSON's int64). */
static json_t *kv_json(const qt_gguf_value *v) {
    char hex[17];
    switch (v->type) {
    case QT_GGUF_STRING: return json_stringn(v->str.ptr, (size_t)v->str.len);
    case QT_GGUF_UINT8: case QT_GGUF_UINT16: case QT_GGUF_UINT32: case QT_GGUF_UINT64:
        return v->u64 <= (uint64_t)INT64_MAX ? json_integer((json_int_t)v->u64) : (snprintf(hex, sizeof hex, "%016llx", (unsigned long long)v->u64), json_string(hex));
    case QT_GGUF_INT8: case QT_GGUF_INT16: case QT_GGUF_INT32: case QT_GGUF_INT64: return json_integer((json_int_t)v->i64);
    case QT_GGUF_ARRAY:
        if (v->arr.type == QT_GGUF_UINT64) {
            json_t *a = json_array();
            for (uint64_t i = 0; i < v->arr.n; i++) {
                uint64_t x;
                memcpy(&x, (const uint8_t *)v->arr.raw + 8 * i, 8);
                snprintf(hex, sizeof hex, "%016llx", (unsigned long long)x);
                json_array_append_new(a, json_string(hex));
            }
            return a;
        }
        return json_null();
    default: return json_null();
    }
}

static json_t *calibration_json(const ct_writer *w) {
    static const char prefix[] = "quanta.calibration.";
    json_t *c = json_object();
    for (int32_t i = 0; i < w->o.n_calibration; i++) {
        const char *k = w->o.calibration[i].key;
        if (!strncmp(k, prefix, sizeof prefix - 1)) k += sizeof prefix - 1;
        json_object_set_new(c, k, kv_json(&w->o.calibration[i].value));
    }
    return c;
}

/* kv_cache_scheme: QuantizationArgs of the key/value states, static minmax
 * (llm-compressor's kv_cache_scheme; "attn_head" is compressed-tensors' per-head strategy). */
static json_t *kv_args(const ct_writer *w) {
    return json_pack("{s:i, s:s, s:b, s:n, s:s, s:n, s:b, s:n, s:s, s:{}, s:n, s:n}", "num_bits", 8, "type",
                     w->o.kv_type ? w->o.kv_type : "float", "symmetric", 1, "group_size", "strategy",
                     w->o.kv_per_layer > 1 ? "attn_head" : "tensor", "block_structure", "dynamic", 0, "actorder",
                     "observer", "minmax", "observer_kwargs", "scale_dtype", "zp_dtype");
}

/* The last component of a module name ("model.layers.0.mlp.down_proj" -> "down_proj"). */
static const char *module_kind(const ptensor *p) {
    const char *dot = strrchr(p->hf, '.');
    return dot ? dot + 1 : p->hf;
}

/* Whether every quantized linear of kind `kind` has the per-channel fallback (want true) or none does. */
static bool kind_all(const ct_writer *w, const char *kind, bool want) {
    for (int32_t i = 0; i < w->n_t; i++)
        if (w->t[i].quant && !strcmp(module_kind(&w->t[i]), kind) && (w->t[i].group == 0) != want) return false;
    return true;
}

/* targets of a config group when a per-group scheme falls back for some linears: the linears
 * with (channel) or without the fallback, one anchored regex per projection kind ("re:.*\.down_proj$")
 * when the kind is uniform over the layers, else their module names. The two lists are disjoint,
 * so no tool's precedence between name, regex and class matches decides anything. */
static json_t *group_targets(const ct_writer *w, bool channel) {
    json_t *t = json_array();
    for (int32_t i = 0; i < w->n_t; i++) {
        const ptensor *p = &w->t[i];
        if (!p->quant || (p->group == 0) != channel) continue;
        const char *kind = module_kind(p);
        bool first = true;
        for (int32_t j = 0; j < i && first; j++) first = !(w->t[j].quant && !strcmp(module_kind(&w->t[j]), kind));
        if (kind_all(w, kind, channel)) {
            if (!first) continue;
            char re[sizeof p->hf + 8];
            snprintf(re, sizeof re, "re:.*\\.%s$", kind);
            json_array_append_new(t, json_string(re));
        } else {
            json_array_append_new(t, json_string(p->hf));
        }
    }
    return t;
}

static json_t *config_group(const ct_writer *w, json_t *targets, int64_t group) {
    return json_pack("{s:o, s:o, s:o, s:n, s:s}", "targets", targets, "weights", weight_args(w, group),
                     "input_activations", act_args(w), "output_activations", "format", w->sc->ct_format);
}

static json_t *config_groups(const ct_writer *w) {
    if (!w->n_fallback || w->n_fallback == w->n_quant) /* one strategy for every linear */
        return json_pack("{s:o}", "group_0", config_group(w, json_pack("[s]", "Linear"), w->n_fallback ? -1 : 0));
    return json_pack("{s:o, s:o}", "group_0", config_group(w, group_targets(w, false), 0), "group_1",
                     config_group(w, group_targets(w, true), -1));
}

static json_t *quant_config(const ct_writer *w) {
    json_t *prov = json_pack("{s:s, s:s, s:s, s:s}", "version", qt_version(), "scheme", w->sc->key, "preset", preset_name(w),
                             "method", w->o.method ? w->o.method : "rtn");
    if (w->o.calibration && w->o.n_calibration > 0) json_object_set_new(prov, "calibration", calibration_json(w));
    json_object_set_new(prov, "command", w->o.command ? json_string(w->o.command) : json_null());
    if (w->o.kv_k_scale && w->o.kv_calib) json_object_set_new(prov, "kv_calib", json_string(w->o.kv_calib));
    json_t *qc = json_pack("{s:s, s:s, s:s, s:n, s:o, s:o, s:n, s:{}, s:{}, s:s, s:o}", "quant_method", "compressed-tensors",
                     "format", w->sc->ct_format, "quantization_status", "compressed", "global_compression_ratio",
                     "config_groups", config_groups(w), "ignore", ignore_list(w), "kv_cache_scheme", "sparsity_config",
                     "transform_config", "version", CT_VERSION, "quanta", prov);
    if (qc && w->o.kv_k_scale) json_object_set_new(qc, "kv_cache_scheme", kv_args(w));
    return qc;
}

/* config.json = the HF writer's text (sorted keys, 2-space indent, as
 * transformers writes it) with "quantization_config" inserted in key order. */
static qt_status config_json(ct_writer *w, char **out) {
    char *base;
    qt_status s = qt__hf_config_text(w->m, w->dtype, &base);
    if (s != QT_OK) return s;
    json_t *qc = quant_config(w);
    char *qtext = qc ? json_dumps(qc, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    json_decref(qc);
    size_t cap = strlen(base) + (qtext ? 2 * strlen(qtext) : 0) + 64;
    char *text = malloc(cap);
    if (!qtext || !text) { free(base); free(qtext); free(text); return qt_error(QT_ERR_NOMEM, "%s: out of memory", w->dir); }
    /* find the first top-level key sorting after "quantization_config" */
    char *at = base;
    for (char *p = strstr(base, "\n  \""); p; p = strstr(p + 1, "\n  \"")) {
        at = p + 1;
        if (strncmp(p + 4, "quantization_config\"", 20) > 0) break;
        at = NULL;
    }
    size_t off = 0;
    if (!at) at = strrchr(base, '}'); /* last key: insert before the closing brace */
    memcpy(text, base, (size_t)(at - base));
    off = (size_t)(at - base);
    if (at[0] == '}' && off >= 2 && text[off - 2] != ',') { text[off - 1] = ','; text[off++] = '\n'; }
    off += (size_t)snprintf(text + off, cap - off, "  \"quantization_config\": ");
    for (const char *q = qtext; *q; q++) {
        text[off++] = *q;
        if (*q == '\n') { text[off++] = ' '; text[off++] = ' '; }
    }
    off += (size_t)snprintf(text + off, cap - off, at[0] == '}' ? "\n" : ",\n");
    snprintf(text + off, cap - off, "%s", at);
    free(base);
    free(qtext);
    *out = text;
    return QT_OK;
}

static char *recipe_yaml(const ct_writer *w) {
    const size_t cap = 4096;
    char *y = malloc(cap);
    if (!y) return NULL;
    size_t off = (size_t)snprintf(y, cap,
        "default_stage:\n  default_modifiers:\n    QuantizationModifier:\n      targets: [Linear]\n      ignore: [lm_head");
    for (int32_t i = 0; i < w->n_t && off < cap - 256; i++) {
        const ptensor *p = &w->t[i];
        int fuse;
        if (p->quant || p->src->n_dims != 2 || !is_linear(p->ti, &fuse)) continue;
        char mod[QT_MAX_NAME + 32];
        snprintf(mod, sizeof mod, "%s", p->hf);
        char *dot = strrchr(mod, '.');
        if (dot) *dot = 0;
        off += (size_t)snprintf(y + off, cap - off, ", %s", mod);
    }
    /* a group size other than the preset's, or the per-channel fallback: the config groups
     * themselves (JSON is YAML's flow style) instead of the preset's name */
    char *groups = NULL;
    if (w->sc->w == W_INT && (w->n_fallback || w->ia.group_size != w->sc->group_size)) {
        json_t *g = config_groups(w);
        groups = g ? json_dumps(g, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        json_decref(g);
        if (!groups) { free(y); return NULL; }
    }
    const size_t need = off + (groups ? strlen(groups) : 0) + 256;
    char *ny = need > cap ? realloc(y, need) : y;
    if (!ny) { free(y); free(groups); return NULL; }
    y = ny;
    if (groups)
        snprintf(y + off, need - off, "]\n      config_groups: %s\n# written by quanta %s (round-to-nearest, scheme %s)\n",
                 groups, qt_version(), w->sc->key);
    else
        snprintf(y + off, (need > cap ? need : cap) - off, "]\n      scheme: %s\n# written by quanta %s (round-to-nearest, scheme %s)\n",
                 preset_name(w), qt_version(), w->sc->key);
    free(groups);
    return y;
}

/* Tokenizer files and generation_config.json of an HF input, byte for byte. */
static const char *const copied[] = {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model",
                                     "vocab.json", "merges.txt", "generation_config.json", "chat_template.jinja", "chat_template.json"};

static qt_status stage_side_files(ct_writer *w) {
    const char *src = w->m->path;
    struct stat sb;
    bool hf_dir = stat(src, &sb) == 0 && S_ISDIR(sb.st_mode);
    bool have_tok = false;
    for (size_t i = 0; hf_dir && i < sizeof copied / sizeof copied[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", src, copied[i]);
        if (access(path, F_OK) != 0) continue;
        char *data;
        size_t n;
        qt_status s = qt_read_file(path, &data, &n);
        if (s == QT_OK) s = stage_text(w, copied[i], data, n);
        if (s == QT_OK) free(data);
        if (s != QT_OK) return s;
        if (!strcmp(copied[i], "tokenizer.json")) have_tok = true;
    }
    if (have_tok) return QT_OK;
    char *tok, *cfg;
    qt_status s = qt__hf_tokenizer_texts(w->m, &tok, &cfg);
    if (s == QT_OK && tok) s = stage_text(w, "tokenizer.json", tok, strlen(tok));
    if (s == QT_OK && cfg) s = stage_text(w, "tokenizer_config.json", cfg, strlen(cfg));
    free(tok);
    free(cfg);
    return s;
}

/* ---- entry points --------------------------------------------------------------------- */

static void writer_free(ct_writer *w) {
    for (int32_t i = 0; w->t && i < w->n_t; i++) {
        free(w->t[i].r.weight);
        qres_free_small(&w->t[i].r);
    }
    free(w->t);
    free(w->pe);
    free(w->entries);
    free(w->fbuf);
    free(w->files);
    free(w->kv_t);
    qt_threadpool_free(w->pool);
}

static qt_status writer_init(ct_writer *w, const qt_model *m, const char *scheme, const char *dir, const qt_ct_export_opts *o) {
    memset(w, 0, sizeof *w);
    w->m = m;
    w->dir = dir ? dir : "(estimate)";
    w->last_weight = -1;
    if (o) w->o = *o;
    w->sc = scheme_find(scheme);
    if (!w->sc) {
        char list[256] = "";
        for (int i = 0; i < N_SCHEMES; i++) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", schemes[i].key);
        return qt_error(QT_ERR_ARG, "--scheme '%s': not a compressed-tensors scheme (%s)", scheme ? scheme : "(null)", list);
    }
    if (w->sc->format_row && !(w->fmt = qt_format_find(w->sc->format_row)))
        return qt_error(QT_ERR_UNSUPPORTED, "scheme %s: format row '%s' missing", w->sc->key, w->sc->format_row);
    if (w->o.group_size && !(w->sc->w == W_INT && w->sc->group_size))
        return qt_error(QT_ERR_ARG, "--group-size applies to the per-group integer schemes (w4a16, w4a16-asym, w8a16), "
                        "not %s", w->sc->key);
    if (w->o.group_size < 0 || w->o.group_size % 8)
        return qt_error(QT_ERR_ARG, "--group-size %lld: expected a positive multiple of 8 (vLLM's Marlin takes 32, 64, 128)",
                        (long long)w->o.group_size);
    if (w->sc->w == W_INT) {
        qt_status s = qt_ct_int_scheme(m, w->sc->key, &w->ia);
        if (s != QT_OK) return s;
        if (w->o.group_size) w->ia.group_size = w->o.group_size;
    }
    return plan(w);
}

static qt_status writer_threads(ct_writer *w) {
    const int n = w->o.n_threads > 0 ? w->o.n_threads : qt_default_threads();
    return n > 1 ? qt_threadpool_create(n, &w->pool) : QT_OK;
}

static qt_status fill_estimate(const ct_writer *w, qt_ct_export_estimate *e) {
    memset(e, 0, sizeof *e);
    e->scheme = w->sc->key;
    e->preset = preset_name(w);
    e->format = w->sc->ct_format;
    e->n_shards = shard_plan(w, NULL, &e->tensor_bytes);
    e->n_quantized = w->n_quant;
    e->n_kept = w->n_kept;
    e->n_warnings = w->n_warn;
    e->n_fallback = w->n_fallback;
    e->tensors = calloc((size_t)w->n_t, sizeof *e->tensors);
    if (!e->tensors) return qt_error(QT_ERR_NOMEM, "out of memory");
    e->n_tensors = w->n_t;
    uint64_t elems = 0;
    for (int32_t i = 0; i < w->n_t; i++) {
        const ptensor *p = &w->t[i];
        qt_ct_export_tensor *t = &e->tensors[i];
        snprintf(t->name, sizeof t->name, "%s", p->src->name);
        snprintf(t->hf_name, sizeof t->hf_name, "%s", p->hf);
        t->kind = p->quant ? (w->fmt ? w->fmt->name : "fp8-e4m3-block128") : w->dtype == QT_TYPE_F16 ? "f16" : "bf16";
        if (p->quant && w->sc->w == W_INT) {
            t->strategy = p->group ? "group" : "channel";
            t->group_size = p->group;
        }
        t->bytes = p->bytes;
        t->n_elements = qt__tensor_nelements(p->src);
        elems += (uint64_t)t->n_elements;
    }
    e->bits_per_weight = elems ? (double)e->tensor_bytes * 8.0 / (double)elems : 0;
    return QT_OK;
}

void qt_ct_export_estimate_free(qt_ct_export_estimate *e) {
    if (!e) return;
    free(e->tensors);
    e->tensors = NULL;
    e->n_tensors = 0;
}

qt_status qt_ct_export_estimate_plan(const qt_model *m, const char *scheme, const qt_ct_export_opts *o, qt_ct_export_estimate *out) {
    ct_writer w;
    qt_status s = writer_init(&w, m, scheme, NULL, o);
    if (s == QT_OK) s = fill_estimate(&w, out);
    writer_free(&w);
    return s;
}

qt_status qt_ct_int_scheme(const qt_model *m, const char *scheme, qt_ct_int_args *out) {
    const ct_scheme *sc = scheme_find(scheme);
    if (!sc) return qt_error(QT_ERR_ARG, "unknown compressed-tensors scheme '%s'", scheme);
    if (sc->w != W_INT) return qt_error(QT_ERR_UNSUPPORTED, "scheme %s is not an integer weight scheme", sc->key);
    const qt_tensor *emb = qt_model_find_tensor(m, "token_embd.weight");
    *out = (qt_ct_int_args){.bits = sc->bits, .symmetric = sc->symmetric,
                            .strategy = sc->group_size ? QT_CT_GROUP : QT_CT_CHANNEL, .group_size = sc->group_size,
                            .dtype = emb && emb->type == QT_TYPE_F16 ? QT_CT_F16 : QT_CT_BF16};
    return QT_OK;
}

qt_status qt_ct_float_scheme(const qt_model *m, const char *scheme, int *kind, qt_ct_dtype *dtype) {
    const ct_scheme *sc = scheme_find(scheme);
    if (!sc) return qt_error(QT_ERR_ARG, "unknown compressed-tensors scheme '%s'", scheme);
    switch (sc->w) {
    case W_INT: return qt_error(QT_ERR_UNSUPPORTED, "scheme %s is not a float weight scheme", sc->key);
    case W_FP8: *kind = sc->a == A_FP8_TENSOR_STATIC ? QT_GPTQ_FP8_TENSOR : QT_GPTQ_FP8_CHANNEL; break;
    case W_FP8_BLOCK: *kind = QT_GPTQ_FP8_BLOCK; break;
    case W_NVFP4: *kind = QT_GPTQ_NVFP4; break;
    case W_MXFP4: *kind = QT_GPTQ_MXFP4; break;
    }
    const qt_tensor *emb = qt_model_find_tensor(m, "token_embd.weight");
    *dtype = emb && emb->type == QT_TYPE_F16 ? QT_CT_F16 : QT_CT_BF16;
    return QT_OK;
}

/* ---- staging: OUT.partial ------------------------------------------------------------ */

/* dir/name into buf (n bytes); false when it does not fit. */
static bool join_path(char *buf, size_t n, const char *dir, const char *name) {
    const int k = snprintf(buf, n, "%s/%s", dir, name);
    return k >= 0 && (size_t)k < n;
}

qt_status qt__remove_stage_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? QT_OK : qt_error(QT_ERR_IO, "%s: cannot read directory: %s", dir, strerror(errno));
    char path[4096];
    const struct dirent *e;
    qt_status s = QT_OK;
    while (s == QT_OK && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        struct stat sb;
        if (!join_path(path, sizeof path, dir, e->d_name) || lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
            s = qt_error(QT_ERR_IO, "%s: holds %s, which is not a file quanta stages: remove the directory yourself", dir,
                         e->d_name);
        else if (unlink(path) != 0)
            s = qt_error(QT_ERR_IO, "%s: cannot remove: %s", path, strerror(errno));
    }
    closedir(d);
    if (s == QT_OK && rmdir(dir) != 0) s = qt_error(QT_ERR_IO, "%s: cannot remove: %s", dir, strerror(errno));
    return s;
}

/* OUT is checked (an existing one must be an empty directory, or --force), then every file is
 * written in a new directory OUT.partial beside it. */
static qt_status stage_open(const ct_writer *w, const char *out, char *stage, size_t n, bool *existed, bool resume) {
    struct stat sb;
    bool created = false;
    *existed = stat(out, &sb) == 0;
    qt_status s = *existed ? qt__hf_prepare_dir(w->m, out, w->o.force, &created) : qt__refuse_input(w->m, out);
    if (s != QT_OK) return s;
    if ((size_t)snprintf(stage, n, "%s%s", out, QT_CT_PARTIAL_SUFFIX) >= n) return qt_error(QT_ERR_ARG, "%s: path too long", out);
    if (resume)
        return stat(stage, &sb) == 0 && S_ISDIR(sb.st_mode)
                   ? QT_OK
                   : qt_error(QT_ERR_ARG, "--resume: %s: missing, so nothing to resume (run without --resume to start "
                              "again)", stage);
    if (mkdir(stage, 0755) == 0) return QT_OK;
    if (errno == EEXIST)
        return qt_error(QT_ERR_IO, "%s: exists (left by an interrupted run? `quanta quantize` removes it, with a message)",
                        stage);
    return qt_error(QT_ERR_IO, "%s: cannot create directory: %s", stage, strerror(errno));
}

/* Every file complete: OUT.partial becomes OUT (one rename), or, into an existing OUT (--force),
 * its files move there one by one (each one rename) and OUT.partial goes. */
static qt_status stage_publish(const qt_model *m, const char *stage, const char *out, bool existed) {
    if (!existed) {
        if (rename(stage, out) == 0) return QT_OK;
        return qt_error(QT_ERR_IO, "%s: cannot rename to %s: %s", stage, out, strerror(errno));
    }
    DIR *d = opendir(stage);
    if (!d) return qt_error(QT_ERR_IO, "%s: cannot read directory: %s", stage, strerror(errno));
    char from[4096], to[4096];
    const struct dirent *e;
    qt_status s = QT_OK;
    while (s == QT_OK && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (!join_path(from, sizeof from, stage, e->d_name) || !join_path(to, sizeof to, out, e->d_name)) {
            s = qt_error(QT_ERR_ARG, "%s/%s: path too long", out, e->d_name);
            break;
        }
        if ((s = qt__refuse_input(m, to)) != QT_OK) break;
        if (rename(from, to) != 0) s = qt_error(QT_ERR_IO, "%s: cannot rename to %s: %s", from, to, strerror(errno));
    }
    closedir(d);
    if (s == QT_OK && rmdir(stage) != 0) s = qt_error(QT_ERR_IO, "%s: cannot remove: %s", stage, strerror(errno));
    return s;
}

/* ---- resumable runs (ct_resume.c) ------------------------------------------------------- */

static json_t *sha_json(const void *data, size_t n) {
    char hex[65];
    if (!data) return json_null();
    qt_sha256_hex(data, n, hex);
    return json_string(hex);
}

/* Every option that shapes the directory's bytes: by name where the command
 * line has one, and the hashes of what calibration decided and of the text files. */
static json_t *resume_options(const ct_writer *w, const char *config, const char *recipe) {
    json_t *keep = json_array();
    for (const char *const *k = w->o.keep; k && *k; k++) json_array_append_new(keep, json_string(*k));
    float *amax = w->o.input_amax ? calloc((size_t)w->n_t + 1, sizeof *amax) : NULL;
    for (int32_t i = 0; amax && i < w->n_t; i++) amax[i] = w->t[i].quant ? w->t[i].in_amax : 0.0f;
    const size_t n_kv = (size_t)w->m->hp.n_layer * (size_t)w->o.kv_per_layer * sizeof(float);
    json_t *o = json_pack("{s:s, s:o, s:I, s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "scheme", w->sc->key, "keep", keep,
                          "max-shard-size", (json_int_t)(w->o.max_shard_bytes ? w->o.max_shard_bytes : QT_CT_DEFAULT_SHARD_BYTES),
                          "algo", w->o.method ? w->o.method : "rtn", "command_line", w->o.command ? w->o.command : "",
                          "input activation absmax (sha256)", sha_json(amax, (size_t)w->n_t * sizeof *amax),
                          "KV-cache k_scale (sha256)", sha_json(w->o.kv_k_scale, n_kv),
                          "KV-cache v_scale (sha256)", sha_json(w->o.kv_v_scale, n_kv),
                          "config.json (sha256)", sha_json(config, strlen(config)),
                          "recipe.yaml (sha256)", sha_json(recipe, strlen(recipe)));
    free(amax);
    return o;
}

/* A resumed OUT.partial keeps the shards the state records and the staging
 * file of the one it began; anything else (a text file or temporary a kill
 * left) goes, so that only this run's files are published. */
static qt_status resume_clean(const ct_writer *w, const char *stage) {
    const qt__ct_progress *at = &w->res->at;
    DIR *d = opendir(stage);
    if (!d) return qt_error(QT_ERR_IO, "%s: cannot read directory: %s", stage, strerror(errno));
    const struct dirent *e;
    qt_status s = QT_OK;
    while (s == QT_OK && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        bool keep = false;
        for (int32_t k = 0; k <= at->shards_done && k < w->res->n_shards && !keep; k++) {
            char name[80];
            shard_name(name, sizeof name, k, w->res->n_shards);
            if (k < at->shards_done) keep = !strcmp(e->d_name, name);
            else keep = at->shard_tensors > 0 && !strncmp(e->d_name, name, strlen(name)) &&
                        !strcmp(e->d_name + strlen(name), QT_CT_PARTIAL_SUFFIX);
        }
        char path[4096];
        if (!keep && join_path(path, sizeof path, stage, e->d_name) && unlink(path) != 0)
            s = qt_error(QT_ERR_IO, "%s: cannot remove: %s", path, strerror(errno));
    }
    closedir(d);
    return s;
}

static qt_status resume_begin(ct_writer *w, const char *out, const char *config, const char *recipe, qt__ct_resume *res) {
    /* codes an algorithm computed (o.int_codes ...) come from its own kept layers: the same bytes again */
    uint64_t total;
    const int32_t n = shard_plan(w, NULL, &total);
    qt_status s = qt__ct_resume_begin(res, w->m, out, w->o.resume, resume_options(w, config, recipe), total, n, w->n_e);
    if (s == QT_OK) w->res = res;
    return s;
}

static void resume_report(const ct_writer *w, qt_ct_export_estimate *est, bool kept) {
    if (!est) return;
    est->n_stored = w->n_e;
    est->n_stored_done = w->res ? w->res->at.tensors_done : 0;
    est->n_resumed = w->res ? w->res->resumed : 0;
    est->partial_kept = kept;
}

qt_status qt_ct_export(const qt_model *m, const char *scheme, const char *out_dir, const qt_ct_export_opts *o,
                       qt_ct_export_estimate *est) {
    ct_writer w;
    if (!out_dir || !*out_dir) return qt_error(QT_ERR_ARG, "output directory name is empty");
    qt_status s = writer_init(&w, m, scheme, out_dir, o);
    char *config = NULL, *recipe = NULL, stage[4096];
    bool existed = false, staged = false;
    if (s == QT_OK) s = config_json(&w, &config);
    if (s == QT_OK && !(recipe = recipe_yaml(&w))) s = qt_error(QT_ERR_NOMEM, "%s: out of memory", out_dir);
    if (s == QT_OK) s = writer_threads(&w);
    if (s == QT_OK) s = shared_scales(&w);
    qt__ct_resume res = {0};
    const bool resumable = s == QT_OK && (w.o.resumable || w.o.resume);
    if (resumable) s = resume_begin(&w, out_dir, config, recipe, &res);
    if (s == QT_OK) s = stage_open(&w, out_dir, stage, sizeof stage, &existed, w.o.resume);
    if (s == QT_OK) {
        staged = true;
        w.dir = stage;
    }
    if (s == QT_OK && w.o.resume) s = resume_clean(&w, stage);
    if (s == QT_OK) s = write_weights(&w);
    if (s == QT_OK) s = stage_text(&w, "config.json", config, strlen(config));
    if (s == QT_OK) s = stage_text(&w, "recipe.yaml", recipe, strlen(recipe));
    if (s == QT_OK) s = stage_side_files(&w);
    for (int32_t i = 0; i < w.n_files; i++) {
        if (s == QT_OK) s = qt_afile_commit(w.files[i]);
        else qt_afile_abort(w.files[i]);
    }
    if (s == QT_OK && qt_cancelled()) s = qt_error(QT_ERR_INTERRUPTED, "%s: cancelled", out_dir);
    if (s == QT_OK) s = stage_publish(m, stage, out_dir, existed);
    bool kept = false;
    if (s != QT_OK && est) memset(est, 0, sizeof *est);
    resume_report(&w, est, false);
    if (w.res) qt__ct_resume_end(&res, s, &kept);
    if (s != QT_OK && staged && !kept) qt__remove_stage_dir(stage); /* what was committed there, then the directory */
    if (est) est->partial_kept = kept;
    w.dir = out_dir;
    if (s == QT_OK && est) {
        qt_ct_export_estimate r = *est;
        s = fill_estimate(&w, est);
        est->n_stored = r.n_stored;
        est->n_stored_done = r.n_stored_done;
        est->n_resumed = r.n_resumed;
    }
    free(config);
    free(recipe);
    writer_free(&w);
    return s;
}
