/* lib/engine/kv.c — KV cache storage formats and their scales.
 *
 * Layout per layer: (n_ctx, n_head_kv, head_dim) elements for K and for V,
 * position-major, so appending a token writes one contiguous row.
 *
 * Scaled formats (fp8 E4M3 / E5M2, int8) store q = cast(x / scale) and read
 * x = q * scale (vLLM's k_scale/v_scale convention, docs/formats.md §4.8), with
 * saturation at the format's largest finite value. Scales are per tensor
 * (one per layer for K, one for V) or per KV head, and come from
 *   - the model file (blk.N.attn_k_scale / attn_v_scale: GGUF, or a vLLM /
 *     compressed-tensors checkpoint's self_attn.k_scale / v_scale, renamed by
 *     the HF reader; f32, f16 or bf16),
 *   - 1.0 (vLLM's behaviour when a checkpoint has none: "FP8 KV cache without
 *     calibration"), or
 *   - the first batch the engine evaluates: absmax / max_value, then fixed
 *     (vLLM's calculate_kv_scales computes them from the first forward pass too).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine_internal.h"
#include "quant/kernels.h"
#include "quanta/gguf.h"
#include "quanta/num.h"

/* Unscaled formats are the traits table's plain row codecs (lib/quant/q_plain.c). */
#define PLAIN_KV(t)                                                                 \
    static void store_##t(const float *x, void *dst, int64_t n, float scale) {      \
        (void)scale;                                                                \
        qt__quantize_##t(x, dst, n, NULL);                                          \
    }                                                                               \
    static void load_##t(const void *src, float *dst, int64_t n, float scale) {     \
        (void)scale;                                                                \
        qt__dequantize_##t(src, dst, n);                                            \
    }
PLAIN_KV(f32)
PLAIN_KV(f16)
PLAIN_KV(bf16)
static void store_e4m3(const float *x, void *dst, int64_t n, float scale) {
    uint8_t *q = dst;
    for (int64_t i = 0; i < n; i++) q[i] = qt_f32_to_e4m3_sat(x[i] / scale);
}
static void load_e4m3(const void *src, float *dst, int64_t n, float scale) {
    const uint8_t *q = src;
    for (int64_t i = 0; i < n; i++) dst[i] = qt_e4m3_to_f32(q[i]) * scale;
}
static void store_e5m2(const float *x, void *dst, int64_t n, float scale) {
    uint8_t *q = dst;
    for (int64_t i = 0; i < n; i++) q[i] = qt_f32_to_e5m2_sat(x[i] / scale);
}
static void load_e5m2(const void *src, float *dst, int64_t n, float scale) {
    const uint8_t *q = src;
    for (int64_t i = 0; i < n; i++) dst[i] = qt_e5m2_to_f32(q[i]) * scale;
}
/* Symmetric int8, round half to even, saturating at +-127. */
static void store_i8(const float *x, void *dst, int64_t n, float scale) {
    int8_t *q = dst;
    for (int64_t i = 0; i < n; i++) {
        float v = nearbyintf(x[i] / scale);
        if (!(v <= 127.0f)) v = v != v ? 0.0f : 127.0f;
        if (v < -127.0f) v = -127.0f;
        q[i] = (int8_t)v;
    }
}
static void load_i8(const void *src, float *dst, int64_t n, float scale) {
    const int8_t *q = src;
    for (int64_t i = 0; i < n; i++) dst[i] = (float)q[i] * scale;
}

static const qt__kv_format kv_formats[QT_KV_TYPE_COUNT] = {
    [QT_KV_TYPE_F32] = {"f32", QT_KV_TYPE_F32, 4, false, 0.0f, QT_TYPE_F32, store_f32, load_f32},
    [QT_KV_TYPE_F16] = {"f16", QT_KV_TYPE_F16, 2, false, 0.0f, QT_TYPE_F16, store_f16, load_f16},
    [QT_KV_TYPE_BF16] = {"bf16", QT_KV_TYPE_BF16, 2, false, 0.0f, QT_TYPE_BF16, store_bf16, load_bf16},
    [QT_KV_TYPE_FP8_E4M3] = {"fp8-e4m3", QT_KV_TYPE_FP8_E4M3, 1, true, 448.0f, QT_TYPE_COUNT, store_e4m3, load_e4m3},
    [QT_KV_TYPE_FP8_E5M2] = {"fp8-e5m2", QT_KV_TYPE_FP8_E5M2, 1, true, 57344.0f, QT_TYPE_COUNT, store_e5m2, load_e5m2},
    [QT_KV_TYPE_INT8] = {"int8", QT_KV_TYPE_INT8, 1, true, 127.0f, QT_TYPE_COUNT, store_i8, load_i8},
};

const qt__kv_format *qt__kv_format_get(qt_kv_type d) {
    return (unsigned)d < QT_KV_TYPE_COUNT && kv_formats[d].name ? &kv_formats[d] : NULL; /* not AUTO */
}

const char *qt_kv_type_name(qt_kv_type d) {
    const qt__kv_format *f = qt__kv_format_get(d);
    return f ? f->name : "?";
}

qt_status qt_kv_type_parse(const char *name, qt_kv_type *out) {
    static const struct { const char *alias; qt_kv_type d; } aliases[] = {
        {"fp8", QT_KV_TYPE_FP8_E4M3}, {"e4m3", QT_KV_TYPE_FP8_E4M3}, {"fp8_e4m3", QT_KV_TYPE_FP8_E4M3},
        {"e5m2", QT_KV_TYPE_FP8_E5M2}, {"fp8_e5m2", QT_KV_TYPE_FP8_E5M2}, {"i8", QT_KV_TYPE_INT8},
        {"fp16", QT_KV_TYPE_F16}, {"float16", QT_KV_TYPE_F16}, {"half", QT_KV_TYPE_F16},
        {"fp32", QT_KV_TYPE_F32}, {"float32", QT_KV_TYPE_F32}, {"bfloat16", QT_KV_TYPE_BF16},
    };
    for (int d = 0; d < QT_KV_TYPE_COUNT; d++)
        if (name && kv_formats[d].name && !strcasecmp(name, kv_formats[d].name)) { *out = (qt_kv_type)d; return QT_OK; }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (name && !strcasecmp(name, aliases[i].alias)) { *out = aliases[i].d; return QT_OK; }
    if (name && (!strcasecmp(name, "q8_0") || !strcasecmp(name, "q8")))
        return qt_error(QT_ERR_UNSUPPORTED, "KV cache format '%s' is llama.cpp's block cache (a scale per 32 values); "
                        "quanta's engine has int8 with a scale per tensor or per head instead: use int8", name);
    return qt_error(QT_ERR_UNSUPPORTED,
                    "KV cache format '%s' is not supported (choose f32, f16 (fp16), bf16, fp8 (fp8-e4m3), fp8-e5m2 "
                    "or int8)", name ? name : "");
}

static const char *scale_source_names[] = {"auto", "file", "one", "dynamic"};

const char *qt_kv_scale_source_name(qt_kv_scale_source s) {
    return (unsigned)s < 4 ? scale_source_names[s] : "?";
}

qt_status qt_kv_scale_source_parse(const char *name, qt_kv_scale_source *out) {
    for (int i = 0; i < 4; i++)
        if (name && !strcasecmp(name, scale_source_names[i])) { *out = (qt_kv_scale_source)i; return QT_OK; }
    return qt_error(QT_ERR_ARG, "KV scale source '%s' is not one of auto, file, one, dynamic", name ? name : "");
}

/* Reads blk.N.attn_{k,v}_scale into scales (n_head_kv values). Returns
 * QT_ERR_NOT_FOUND (message set) when the tensor is absent. */
static qt_status read_file_scales(qt_engine_ctx *e, const char *fmt, int il, float *scales) {
    char name[QT_MAX_NAME];
    snprintf(name, sizeof name, fmt, il);
    const qt_tensor *t = qt_model_find_tensor(e->model, name);
    if (!t) return qt_error(QT_ERR_NOT_FOUND, "%s: tensor '%s' (KV cache scale) is missing", qt_model_path(e->model), name);
    int64_t n = 1;
    for (int d = 0; d < t->n_dims; d++) n *= t->ne[d];
    const int32_t hkv = e->hp.n_head_kv;
    /* f16 / bf16 as checkpoints store them (vLLM casts them to f32 too, docs/formats.md §4.6) */
    const bool floaty = t->type == QT_TYPE_F32 || t->type == QT_TYPE_F16 || t->type == QT_TYPE_BF16;
    const qt_type_traits *tr = qt_type_get(t->type);
    if (!floaty || (n != 1 && n != hkv) || t->nbytes < (size_t)n * tr->block_bytes)
        return qt_error(QT_ERR_SHAPE, "%s: tensor '%s': KV scale must be f32, f16 or bf16 with 1 or %d (n_head_kv) "
                        "elements", qt_model_path(e->model), name, hkv);
    if (n == hkv && n != 1 && e->opts.kv_scale_gran == QT_KV_SCALE_PER_TENSOR)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: tensor '%s' holds per-head KV scales; a per-tensor KV cache cannot "
                        "use them (ask for per-head scales)", qt_model_path(e->model), name);
    for (int32_t h = 0; h < hkv; h++) {
        float s;
        tr->to_float((const uint8_t *)t->data + (size_t)(n == 1 ? 0 : h) * tr->block_bytes, &s, 1);
        if (!(s > 0.0f) || isinf(s))
            return qt_error(QT_ERR_RANGE, "%s: tensor '%s': KV scale %g is not a positive finite number",
                            qt_model_path(e->model), name, (double)s);
        scales[h] = s;
    }
    return QT_OK;
}

float qt_kv_type_max(qt_kv_type d) {
    const qt__kv_format *f = qt__kv_format_get(d);
    return f && f->scaled ? f->max_value : 0.0f;
}

/* One of quanta.kv_cache.{k,v}_scale into scales (n_layer * n_head_kv),
 * multiplied by `rescale` (the fitted format's max / this cache's). */
static qt_status read_meta_array(qt_engine_ctx *e, const char *key, float rescale, float *scales) {
    const qt_gguf *g = qt_model_gguf(e->model);
    const qt_gguf_value *a;
    qt_status s = qt_gguf_get_arr(g, key, QT_GGUF_FLOAT32, &a);
    if (s == QT_ERR_NOT_FOUND) return qt_error(s, "%s: key '%s' (KV cache scales) is missing", qt_model_path(e->model), key);
    if (s != QT_OK) return s;
    const int32_t nl = e->hp.n_layer, hkv = e->hp.n_head_kv;
    const uint64_t n = a->arr.n;
    if (n != (uint64_t)nl && n != (uint64_t)nl * hkv)
        return qt_error(QT_ERR_SHAPE, "%s: key '%s': %llu values; expected %d (n_layer) or %d (n_layer x n_head_kv)",
                        qt_model_path(e->model), key, (unsigned long long)n, nl, nl * hkv);
    if (n != (uint64_t)nl && e->opts.kv_scale_gran == QT_KV_SCALE_PER_TENSOR && hkv > 1)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: key '%s' holds per-head KV scales; a per-tensor KV cache cannot use them "
                        "(ask for per-head scales)", qt_model_path(e->model), key);
    for (int32_t il = 0; il < nl; il++)
        for (int32_t h = 0; h < hkv; h++) {
            const float v = (float)qt_gguf_arr_f64(a, n == (uint64_t)nl ? (uint64_t)il : (uint64_t)il * hkv + h);
            if (!(v > 0.0f) || isinf(v))
                return qt_error(QT_ERR_RANGE, "%s: key '%s': layer %d head %d: KV scale %g is not a positive finite number",
                                qt_model_path(e->model), key, il, h, (double)v);
            scales[(size_t)il * hkv + h] = v * rescale;
        }
    return QT_OK;
}

/* The quantizer's metadata scales (QT_KV_KEY_*), when the file has them. */
static qt_status read_meta_scales(qt_engine_ctx *e) {
    const qt_gguf *g = qt_model_gguf(e->model);
    const char *fitted;
    qt_kv_type ft;
    qt_status s = qt_gguf_get_str(g, QT_KV_KEY_DTYPE, &fitted);
    if (s != QT_OK || (s = qt_kv_type_parse(fitted, &ft)) != QT_OK || !qt_kv_type_max(ft))
        return qt_error(QT_ERR_FORMAT, "%s: key '%s': not a scaled KV format (fp8-e4m3, fp8-e5m2, int8)",
                        qt_model_path(e->model), QT_KV_KEY_DTYPE);
    const float rescale = qt_kv_type_max(ft) / e->kvf->max_value;
    s = read_meta_array(e, QT_KV_KEY_K_SCALE, rescale, e->k_scale);
    return s == QT_OK ? read_meta_array(e, QT_KV_KEY_V_SCALE, rescale, e->v_scale) : s;
}

static qt_status resolve_scales(qt_engine_ctx *e) {
    const int32_t nl = e->hp.n_layer, hkv = e->hp.n_head_kv;
    e->k_scale = malloc((size_t)nl * hkv * sizeof(float));
    e->v_scale = malloc((size_t)nl * hkv * sizeof(float));
    if (!e->k_scale || !e->v_scale) return qt_error(QT_ERR_NOMEM, "KV cache: out of memory");
    for (int32_t i = 0; i < nl * hkv; i++) e->k_scale[i] = e->v_scale[i] = 1.0f;

    qt_kv_scale_source src = e->opts.kv_scale_source;
    if (src == QT_KV_SCALE_AUTO || src == QT_KV_SCALE_FILE) {
        char name[QT_MAX_NAME];
        snprintf(name, sizeof name, QT_KV_K_SCALE_FMT, 0);
        const bool present = qt_model_find_tensor(e->model, name) != NULL;
        const qt_gguf *g = qt_model_gguf(e->model);
        if (!present && g && qt_gguf_find(g, QT_KV_KEY_K_SCALE)) {
            qt_status s = read_meta_scales(e);
            if (s != QT_OK) return s;
            src = QT_KV_SCALE_FILE;
            e->scales_from_meta = true;
        } else if (present || src == QT_KV_SCALE_FILE) {
            for (int il = 0; il < nl; il++) {
                qt_status s = read_file_scales(e, QT_KV_K_SCALE_FMT, il, e->k_scale + (size_t)il * hkv);
                if (s == QT_OK) s = read_file_scales(e, QT_KV_V_SCALE_FMT, il, e->v_scale + (size_t)il * hkv);
                if (s != QT_OK) return s;
            }
            src = QT_KV_SCALE_FILE;
        } else {
            /* No scales in the file: vLLM runs FP8 caches with 1.0; int8 at 1.0
             * would round every K and V to an integer, so compute them instead. */
            src = e->kvf->dtype == QT_KV_TYPE_INT8 ? QT_KV_SCALE_DYNAMIC : QT_KV_SCALE_ONE;
        }
    }
    e->scale_source = src;
    e->scales_ready = src != QT_KV_SCALE_DYNAMIC;
    return QT_OK;
}

qt_status qt__engine_kv_init(qt_engine_ctx *e) {
    e->kvf = qt__kv_format_get(e->opts.kv_type);
    if (!e->kvf) return qt_error(QT_ERR_UNSUPPORTED, "KV cache format id %d is not supported", (int)e->opts.kv_type);
    e->kv_slot_bytes = (size_t)e->n_ctx * e->n_kv * e->kvf->elem_bytes;
    e->kv_layer_bytes = e->kv_slot_bytes * (size_t)e->n_seq;
    const size_t total = e->kv_layer_bytes * (size_t)e->hp.n_layer;
    e->k_cache = calloc(1, total);
    e->v_cache = calloc(1, total);
    if (!e->k_cache || !e->v_cache)
        return qt_error(QT_ERR_NOMEM, "KV cache: out of memory (%zu bytes for n_ctx %d x %d sequences)", 2 * total,
                        e->n_ctx, e->n_seq);
    qt_status s = qt__attn_init(e);
    if (s != QT_OK) return s;
    if (e->kvf->scaled) return resolve_scales(e);
    e->scale_source = QT_KV_SCALE_ONE;
    e->scales_ready = true;
    return QT_OK;
}

void qt__engine_kv_free(qt_engine_ctx *e) {
    free(e->k_cache);
    free(e->v_cache);
    free(e->k_scale);
    free(e->v_scale);
    qt__attn_free(e);
}

/* absmax / max_value over rows [0, B) of src (B, n_kv), per head or over all heads. */
static void dynamic_scales(const qt_engine_ctx *e, const float *src, int32_t B, float *scales) {
    const int32_t hkv = e->hp.n_head_kv, hd = e->hp.head_dim;
    float all = 0.0f;
    for (int32_t h = 0; h < hkv; h++) {
        float amax = 0.0f;
        for (int32_t b = 0; b < B; b++)
            for (int32_t d = 0; d < hd; d++) amax = fmaxf(amax, fabsf(src[(size_t)b * e->n_kv + h * hd + d]));
        scales[h] = amax;
        all = fmaxf(all, amax);
    }
    for (int32_t h = 0; h < hkv; h++) {
        const float amax = e->opts.kv_scale_gran == QT_KV_SCALE_PER_TENSOR ? all : scales[h];
        scales[h] = amax > 0.0f ? amax / e->kvf->max_value : 1.0f;
    }
}

void qt__engine_kv_store(qt_engine_ctx *e, int il, int32_t B) {
    const int32_t hkv = e->hp.n_head_kv, hd = e->hp.head_dim;
    float *ks = e->k_scale ? e->k_scale + (size_t)il * hkv : NULL;
    float *vs = e->v_scale ? e->v_scale + (size_t)il * hkv : NULL;
    if (e->kv_observer) e->kv_observer(e->kv_observer_user, il, e->k, e->v, B, hkv, hd);
    if (!e->scales_ready) {
        dynamic_scales(e, e->k, B, ks);
        dynamic_scales(e, e->v, B, vs);
    }
    const size_t eb = e->kvf->elem_bytes;
    uint8_t *kc = e->k_cache + (size_t)il * e->kv_layer_bytes;
    uint8_t *vc = e->v_cache + (size_t)il * e->kv_layer_bytes;
    for (int32_t b = 0; b < B; b++) {
        const size_t slot = (size_t)e->row_seq[b] * e->kv_slot_bytes, pos = (size_t)e->row_pos[b];
        for (int32_t h = 0; h < hkv; h++) {
            const size_t off = slot + (pos * e->n_kv + (size_t)h * hd) * eb;
            e->kvf->store(e->k + (size_t)b * e->n_kv + h * hd, kc + off, hd, ks ? ks[h] : 1.0f);
            e->kvf->store(e->v + (size_t)b * e->n_kv + h * hd, vc + off, hd, vs ? vs[h] : 1.0f);
        }
    }
}

void qt__engine_kv_finish_batch(qt_engine_ctx *e) { e->scales_ready = true; }
