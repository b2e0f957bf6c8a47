/* lib/quantize/kv_calib.c — KV-cache scales fitted at quantize time
 * (quanta/quantize.h "KV-cache scales", docs/quantize.md).
 *
 * A scale is amax / the format's largest value: llm-compressor's static minmax
 * observer on the attention's key and value states (its kv_cache_scheme; vLLM
 * stores cache = cast(x / k_scale) and reads q * k_scale). K is observed after
 * the head norm and RoPE, where the cache stores it and where vLLM's
 * calibration hooks see it. A maximum does not depend on the order rows arrive
 * in, so neither batching nor threads change a bit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/rng.h"
#include "quanta/engine.h"
#include "quanta/model.h"
#include "quanta/quantize.h"

static const char *mode_names[] = {"none", "random", "data"};

const char *qt_kv_calib_mode_name(qt_kv_calib_mode m) { return (unsigned)m < 3 ? mode_names[m] : "?"; }

qt_status qt_kv_calib_mode_parse(const char *name, qt_kv_calib_mode *out) {
    for (int i = 0; i < 3; i++)
        if (name && !strcasecmp(name, mode_names[i])) { *out = (qt_kv_calib_mode)i; return QT_OK; }
    return qt_error(QT_ERR_ARG, "KV calibration '%s' is not one of none, random, data", name ? name : "");
}

qt_status qt_kv_scales_init(qt_kv_scales *s, const qt_model *m, qt_kv_type dtype, qt_kv_scale_gran gran,
                            qt_kv_calib_mode mode) {
    memset(s, 0, sizeof *s);
    if (!qt_kv_type_max(dtype))
        return qt_error(QT_ERR_ARG, "KV cache format %s takes no scales (fp8-e4m3, fp8-e5m2 and int8 do)",
                        qt_kv_type_name(dtype));
    const qt_hparams *hp = qt_model_hparams(m);
    *s = (qt_kv_scales){.dtype = dtype, .gran = gran, .mode = mode, .n_layer = hp->n_layer,
                        .n_per_layer = gran == QT_KV_SCALE_PER_HEAD ? hp->n_head_kv : 1, .n_head_kv = hp->n_head_kv,
                        .head_dim = hp->head_dim};
    const size_t n = (size_t)s->n_layer * s->n_per_layer;
    s->k = malloc((n ? n : 1) * sizeof *s->k);
    s->v = malloc((n ? n : 1) * sizeof *s->v);
    if (!s->k || !s->v) {
        qt_kv_scales_free(s);
        return qt_error(QT_ERR_NOMEM, "KV scales: out of memory");
    }
    for (size_t i = 0; i < n; i++) s->k[i] = s->v[i] = 1.0f;
    return QT_OK;
}

void qt_kv_scales_begin(qt_kv_scales *s) {
    const size_t n = (size_t)s->n_layer * s->n_per_layer;
    for (size_t i = 0; i < n; i++) s->k[i] = s->v[i] = 0.0f;
    s->n_tokens = 0;
    s->err = QT_OK;
}

/* max |x| of each head's slice of rows (n_tokens, n_head_kv * head_dim) into
 * amax[h] (or amax[0] for all heads); a NaN sticks (the loops stop at it) and
 * is refused by finish. */
static void head_amax(const float *x, int32_t n_tokens, int32_t hkv, int32_t hd, bool per_head, float *amax) {
    for (int32_t h = 0; h < hkv; h++) {
        float m = amax[per_head ? h : 0];
        for (int32_t t = 0; t < n_tokens && m == m; t++) {
            const float *r = x + ((size_t)t * hkv + h) * hd;
            for (int32_t d = 0; d < hd && m == m; d++) {
                const float a = fabsf(r[d]);
                if (!(a <= m)) m = a;
            }
        }
        amax[per_head ? h : 0] = m;
    }
}

void qt_kv_scales_observe(void *user, int32_t layer, const float *k, const float *v, int32_t n_tokens, int32_t n_head_kv,
                          int32_t head_dim) {
    qt_kv_scales *s = user;
    if (s->err != QT_OK) return;
    if (layer < 0 || layer >= s->n_layer || n_head_kv != s->n_head_kv || head_dim != s->head_dim) {
        s->err = qt_error(QT_ERR_INTERNAL, "KV scales: layer %d with %d x %d heads (expected %d layers, %d x %d)", layer,
                          n_head_kv, head_dim, s->n_layer, s->n_head_kv, s->head_dim);
        return;
    }
    const bool per_head = s->gran == QT_KV_SCALE_PER_HEAD;
    head_amax(k, n_tokens, n_head_kv, head_dim, per_head, s->k + (size_t)layer * s->n_per_layer);
    head_amax(v, n_tokens, n_head_kv, head_dim, per_head, s->v + (size_t)layer * s->n_per_layer);
    if (layer == 0) s->n_tokens += n_tokens;
}

/* One amax -> scale, or the error naming where it is. */
static qt_status to_scale(const qt_kv_scales *s, float *x, int32_t il, int32_t h, const char *which) {
    const float amax = *x, scale = amax / qt_kv_type_max(s->dtype);
    char head[32] = "all heads";
    if (s->n_per_layer > 1) snprintf(head, sizeof head, "head %d", h);
    if (!(scale > 0.0f) || isinf(scale)) {
        const char *why = amax != amax ? "a K or V value was NaN"
                        : isinf(amax) || isinf(scale) ? "a value was infinite"
                        : "every value was 0 (the head never saw a non-zero activation)";
        return qt_error(QT_ERR_RANGE, "KV scales: layer %d %s %s: amax %g over %lld tokens gives the scale %g (%s); a "
                        "cache cannot use it", il, head, which, (double)amax, (long long)s->n_tokens, (double)scale, why);
    }
    *x = scale;
    return QT_OK;
}

qt_status qt_kv_scales_finish(qt_kv_scales *s) {
    if (s->err != QT_OK) return s->err;
    if (s->n_tokens < 1) return qt_error(QT_ERR_ARG, "KV scales: no token was observed");
    qt_status st = QT_OK;
    for (int32_t il = 0; il < s->n_layer && st == QT_OK; il++)
        for (int32_t h = 0; h < s->n_per_layer && st == QT_OK; h++) {
            const size_t i = (size_t)il * s->n_per_layer + h;
            st = to_scale(s, &s->k[i], il, h, "K");
            if (st == QT_OK) st = to_scale(s, &s->v[i], il, h, "V");
        }
    return st;
}

qt_status qt_kv_scales_calibrate(qt_kv_scales *s, const qt_model *m, const int32_t *tokens, int32_t n_seq, int32_t n_tok,
                                 int threads, qt_progress progress) {
    if (!tokens || n_seq < 1 || n_tok < 1) return qt_error(QT_ERR_ARG, "KV scales: no calibration tokens");
    qt_engine_opts eo;
    qt_engine_opts_default(&eo);
    eo.n_ctx = eo.n_batch = n_tok;
    eo.n_threads = threads;
    eo.kv_type = QT_KV_TYPE_F32;
    qt_engine_ctx *e = NULL;
    qt_status st = qt_engine_new(m, &eo, &e);
    qt_kv_scales_begin(s);
    for (int32_t i = 0; st == QT_OK && i < n_seq; i++) {
        qt_layerwise *lw = NULL;
        st = qt_layerwise_new(e, tokens + (size_t)i * n_tok, 1, n_tok, &lw);
        if (st == QT_OK) qt_layerwise_set_kv_observer(lw, qt_kv_scales_observe, s);
        for (int32_t l = 0; st == QT_OK && l < s->n_layer; l++) st = qt_layerwise_run_layer(lw, NULL, NULL);
        if (lw) qt_layerwise_set_kv_observer(lw, NULL, NULL);
        qt_layerwise_free(lw);
        if (st == QT_OK) st = s->err;
        if (st == QT_OK) qt_progress_report(&progress, "KV scales", i + 1, n_seq);
    }
    qt_engine_free(e);
    return st == QT_OK ? qt_kv_scales_finish(s) : st;
}

void qt_kv_random_tokens(const qt_model *m, int32_t n_seq, int32_t n_tok, uint64_t seed, int32_t *out) {
    const qt_vocab *voc = qt_model_vocab(m);
    const int32_t n_vocab = qt_model_hparams(m)->n_vocab, bos = voc && voc->add_bos ? voc->bos_id : -1;
    qt__rng r = {seed};
    for (int32_t i = 0; i < n_seq; i++)
        for (int32_t t = 0; t < n_tok; t++)
            out[(size_t)i * n_tok + t] = t == 0 && bos >= 0 ? bos : (int32_t)qt__rng_range(&r, 0, n_vocab - 1);
}

static qt_gguf_value str_value(const char *x) {
    qt_gguf_value v = {.type = QT_GGUF_STRING};
    v.str.ptr = x;
    v.str.len = strlen(x);
    return v;
}

static qt_gguf_value f32_array(const float *x, int64_t n) {
    qt_gguf_value v = {.type = QT_GGUF_ARRAY};
    v.arr.type = QT_GGUF_FLOAT32;
    v.arr.n = (uint64_t)n;
    v.arr.raw = x; /* little-endian float32: the machines quanta supports */
    return v;
}

int32_t qt_kv_scales_gguf_kv(const qt_kv_scales *s, qt_gguf_kv out[QT_KV_MAX_KV]) {
    const int64_t n = (int64_t)s->n_layer * s->n_per_layer;
    out[0] = (qt_gguf_kv){QT_KV_KEY_DTYPE, str_value(qt_kv_type_name(s->dtype))};
    out[1] = (qt_gguf_kv){QT_KV_KEY_GRAN, str_value(s->gran == QT_KV_SCALE_PER_HEAD ? "head" : "tensor")};
    out[2] = (qt_gguf_kv){QT_KV_KEY_CALIB, str_value(qt_kv_calib_mode_name(s->mode))};
    out[3] = (qt_gguf_kv){QT_KV_KEY_K_SCALE, f32_array(s->k, n)};
    out[4] = (qt_gguf_kv){QT_KV_KEY_V_SCALE, f32_array(s->v, n)};
    return QT_KV_MAX_KV;
}

void qt_kv_scales_free(qt_kv_scales *s) {
    if (!s) return;
    free(s->k);
    free(s->v);
    s->k = s->v = NULL;
}
