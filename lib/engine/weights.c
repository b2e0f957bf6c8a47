/* lib/engine/weights.c — find, check and bind every tensor the forward pass uses.
 *
 * What a layer holds is data (layer_specs below), not per-architecture code:
 * each entry names the GGUF tensor (docs/formats.md §2.9), its shape in terms of
 * the hyper-parameters, and when it is required (always, or when the
 * hparams flag q/k/v biases (qwen2) or per-head q/k norms (qwen3)). Optional
 * entries (llama's rarely used biases) are bound when present.
 *
 * Matrices stay in their stored format; only the small vectors (norm
 * weights, biases: O(n_embd) each) are converted to f32 copies.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

typedef enum dim { D_NONE = 0, D_EMBD, D_Q, D_KV, D_FF, D_HEAD, D_VOCAB } dim;
typedef enum need { NEED_ALWAYS, NEED_IF_QKV_BIAS, NEED_IF_QK_NORM, NEED_NEVER } need;

typedef struct layer_spec {
    const char *name;          /* after "blk.N." */
    bool matrix;               /* qt__mat (else an f32 vector) */
    size_t offset;             /* of the qt__mat or float* in qt__layer */
    dim ne0, ne1;              /* ggml shape: ne0 = row length */
    need when;
} layer_spec;

#define MAT(field) true, offsetof(qt__layer, field)
#define VEC(field) false, offsetof(qt__layer, field)

static const layer_spec layer_specs[] = {
    {"attn_norm.weight",   VEC(attn_norm), D_EMBD, D_NONE, NEED_ALWAYS},
    {"attn_q.weight",      MAT(wq),        D_EMBD, D_Q,    NEED_ALWAYS},
    {"attn_k.weight",      MAT(wk),        D_EMBD, D_KV,   NEED_ALWAYS},
    {"attn_v.weight",      MAT(wv),        D_EMBD, D_KV,   NEED_ALWAYS},
    {"attn_q.bias",        VEC(bq),        D_Q,    D_NONE, NEED_IF_QKV_BIAS},
    {"attn_k.bias",        VEC(bk),        D_KV,   D_NONE, NEED_IF_QKV_BIAS},
    {"attn_v.bias",        VEC(bv),        D_KV,   D_NONE, NEED_IF_QKV_BIAS},
    {"attn_q_norm.weight", VEC(q_norm),    D_HEAD, D_NONE, NEED_IF_QK_NORM},
    {"attn_k_norm.weight", VEC(k_norm),    D_HEAD, D_NONE, NEED_IF_QK_NORM},
    {"attn_output.weight", MAT(wo),        D_Q,    D_EMBD, NEED_ALWAYS},
    {"attn_output.bias",   VEC(bo),        D_EMBD, D_NONE, NEED_NEVER},
    {"ffn_norm.weight",    VEC(ffn_norm),  D_EMBD, D_NONE, NEED_ALWAYS},
    {"ffn_gate.weight",    MAT(w_gate),    D_EMBD, D_FF,   NEED_ALWAYS},
    {"ffn_up.weight",      MAT(w_up),      D_EMBD, D_FF,   NEED_ALWAYS},
    {"ffn_down.weight",    MAT(w_down),    D_FF,   D_EMBD, NEED_ALWAYS},
};

static int64_t dim_value(const qt_engine_ctx *e, dim d) {
    switch (d) {
    case D_EMBD: return e->hp.n_embd;
    case D_Q: return e->n_q;
    case D_KV: return e->n_kv;
    case D_FF: return e->hp.n_ff;
    case D_HEAD: return e->hp.head_dim;
    case D_VOCAB: return e->hp.n_vocab;
    default: return 1;
    }
}

static bool needed(const qt_engine_ctx *e, need w) {
    switch (w) {
    case NEED_ALWAYS: return true;
    case NEED_IF_QKV_BIAS: return e->hp.attn_qkv_bias;
    case NEED_IF_QK_NORM: return e->hp.attn_qk_norm;
    default: return false;
    }
}

static qt_status check_shape(const qt_engine_ctx *e, const qt_tensor *t, int64_t ne0, int64_t ne1) {
    int64_t rest = 1;
    for (int d = 2; d < t->n_dims; d++) rest *= t->ne[d];
    const int64_t got1 = t->n_dims >= 2 ? t->ne[1] : 1;
    if (t->ne[0] != ne0 || got1 != ne1 || rest != 1) {
        char got[96];
        int n = snprintf(got, sizeof got, "[%lld", (long long)t->ne[0]);
        for (int d = 1; d < t->n_dims && n < (int)sizeof got; d++)
            n += snprintf(got + n, sizeof got - (size_t)n, ", %lld", (long long)t->ne[d]);
        snprintf(got + (n < (int)sizeof got ? n : (int)sizeof got - 2), 2, "]");
        if (ne1 == 1)
            return qt_error(QT_ERR_SHAPE, "%s: tensor '%s': shape %s, expected [%lld]", qt_model_path(e->model),
                            t->name, got, (long long)ne0);
        return qt_error(QT_ERR_SHAPE, "%s: tensor '%s': shape %s, expected [%lld, %lld]", qt_model_path(e->model),
                        t->name, got, (long long)ne0, (long long)ne1);
    }
    return QT_OK;
}

/* An f32 copy of a small vector tensor (norm weight or bias), any float or block type. */
static qt_status load_vector(const qt_engine_ctx *e, const qt_tensor *t, int64_t n, float **out) {
    const qt_type_traits *tr = qt_type_get(t->type);
    if (!tr || !tr->to_float || n % tr->block_elems != 0)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: tensor '%s': cannot read type %s as a vector",
                        qt_model_path(e->model), t->name, tr ? tr->name : "?");
    if (qt_row_size(t->type, n) > t->nbytes)
        return qt_error(QT_ERR_SHAPE, "%s: tensor '%s': data shorter than its shape", qt_model_path(e->model), t->name);
    float *v = malloc((size_t)n * sizeof *v);
    if (!v) return qt_error(QT_ERR_NOMEM, "tensor '%s': out of memory", t->name);
    tr->to_float(t->data, v, n);
    *out = v;
    return QT_OK;
}

/* Prefixes the current error message with the model's path. */
static qt_status with_path(const qt_engine_ctx *e, qt_status s) {
    char why[512];
    snprintf(why, sizeof why, "%s", qt_last_error());
    return qt_error(s, "%s: %s", qt_model_path(e->model), why);
}

static qt_status bind_matrix(const qt_engine_ctx *e, const qt_tensor *t, int64_t ne0, int64_t ne1, qt__mat *m) {
    qt_status s = check_shape(e, t, ne0, ne1);
    if (s != QT_OK) return s;
    s = qt__mat_init(m, t, !e->opts.act_quant_off);
    return s == QT_OK ? QT_OK : with_path(e, s);
}

static const qt_tensor *find(const qt_engine_ctx *e, const char *name, bool required, qt_status *s) {
    const qt_tensor *t = qt_model_find_tensor(e->model, name);
    if (!t && required)
        *s = qt_error(QT_ERR_NOT_FOUND, "%s: tensor '%s' is missing (architecture %s)", qt_model_path(e->model),
                      name, e->hp.arch_name[0] ? e->hp.arch_name : "?");
    return t;
}

static qt_status bind_layer(qt_engine_ctx *e, int il) {
    qt__layer *L = &e->layers[il];
    for (size_t i = 0; i < sizeof layer_specs / sizeof layer_specs[0]; i++) {
        const layer_spec *sp = &layer_specs[i];
        char name[QT_MAX_NAME];
        snprintf(name, sizeof name, "blk.%d.%s", il, sp->name);
        qt_status s = QT_OK;
        const qt_tensor *t = find(e, name, needed(e, sp->when), &s);
        if (s != QT_OK) return s;
        if (!t) continue;
        const int64_t ne0 = dim_value(e, sp->ne0), ne1 = dim_value(e, sp->ne1);
        if (sp->matrix) {
            s = bind_matrix(e, t, ne0, ne1, (qt__mat *)((char *)L + sp->offset));
        } else {
            s = check_shape(e, t, ne0, 1);
            if (s == QT_OK) s = load_vector(e, t, ne0, (float **)((char *)L + sp->offset));
        }
        if (s != QT_OK) return s;
    }
    return QT_OK;
}

/* ggml_rope's angles: theta_i(p) = p * base^(-2i/n_rot), computed as ggml does
 * (running product of theta_scale in f32), divided by the llama3 frequency
 * factor of pair i and scaled by freq_scale (linear scaling). */
static qt_status build_rope(qt_engine_ctx *e) {
    const int half = e->hp.n_rot / 2;
    float *freq_factors = NULL;
    const qt_tensor *rf = qt_model_find_tensor(e->model, "rope_freqs.weight");
    qt_status s = QT_OK;
    if (rf) {
        if ((s = check_shape(e, rf, half, 1)) != QT_OK) return s;
        if ((s = load_vector(e, rf, half, &freq_factors)) != QT_OK) return s;
    } else if (e->hp.rope_scaling == QT_ROPE_SCALING_LLAMA3) {
        const qt_hparams *hp = &e->hp;
        if (!(hp->rope_factor > 0 && hp->rope_orig_ctx > 0 && hp->rope_high_freq_factor > hp->rope_low_freq_factor))
            return qt_error(QT_ERR_FORMAT, "%s: llama3 rope scaling without rope_freqs.weight needs factor > 0, "
                            "original context > 0 and high_freq_factor > low_freq_factor (got %g, %d, %g, %g)",
                            qt_model_path(e->model), (double)hp->rope_factor, hp->rope_orig_ctx,
                            (double)hp->rope_high_freq_factor, (double)hp->rope_low_freq_factor);
        /* docs/formats.md §7.3: the divisor of pair i, as convert_hf_to_gguf writes rope_freqs. */
        freq_factors = malloc((size_t)half * sizeof *freq_factors);
        if (!freq_factors) return qt_error(QT_ERR_NOMEM, "rope: out of memory");
        const double factor = e->hp.rope_factor, lo = e->hp.rope_low_freq_factor, hi = e->hp.rope_high_freq_factor;
        const double orig = e->hp.rope_orig_ctx, low_wavelen = orig / lo, high_wavelen = orig / hi;
        for (int i = 0; i < half; i++) {
            const double freq = 1.0 / pow((double)e->hp.rope_theta, 2.0 * i / e->hp.n_rot);
            const double wavelen = 2.0 * M_PI / freq;
            double div;
            if (wavelen < high_wavelen) div = 1.0;
            else if (wavelen > low_wavelen) div = factor;
            else {
                const double smooth = (orig / wavelen - lo) / (hi - lo);
                div = 1.0 / ((1.0 - smooth) / factor + smooth);
            }
            freq_factors[i] = (float)div;
        }
    }
    const float freq_scale = e->hp.rope_scaling == QT_ROPE_SCALING_LINEAR && e->hp.rope_factor > 0
                                 ? 1.0f / e->hp.rope_factor : 1.0f;
    const float theta_scale = powf(e->hp.rope_theta, -2.0f / (float)e->hp.n_rot);
    e->rope_cos = malloc((size_t)e->n_ctx * half * sizeof(float));
    e->rope_sin = malloc((size_t)e->n_ctx * half * sizeof(float));
    if (!e->rope_cos || !e->rope_sin) { free(freq_factors); return qt_error(QT_ERR_NOMEM, "rope: out of memory"); }
    for (int32_t p = 0; p < e->n_ctx; p++) {
        float theta = (float)p;
        for (int i = 0; i < half; i++) {
            const float ff = freq_factors ? freq_factors[i] : 1.0f;
            const float t = freq_scale * (theta / ff);
            e->rope_cos[(size_t)p * half + i] = cosf(t);
            e->rope_sin[(size_t)p * half + i] = sinf(t);
            theta *= theta_scale;
        }
    }
    free(freq_factors);
    return QT_OK;
}

qt_status qt__engine_bind_weights(qt_engine_ctx *e) {
    qt_status s = QT_OK;
    const qt_tensor *t = find(e, "token_embd.weight", true, &s);
    if (!t) return s;
    if ((s = check_shape(e, t, e->hp.n_embd, e->hp.n_vocab)) != QT_OK) return s;
    if ((s = qt__mat_init(&e->tok_embd, t, false)) != QT_OK) return with_path(e, s);
    if (!e->tok_embd.tr->to_float)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: tensor 'token_embd.weight': type %s has no dequantizer",
                        qt_model_path(e->model), e->tok_embd.tr->name);

    e->layers = calloc((size_t)e->hp.n_layer, sizeof *e->layers);
    if (!e->layers) return qt_error(QT_ERR_NOMEM, "engine: out of memory");
    for (int il = 0; il < e->hp.n_layer; il++)
        if ((s = bind_layer(e, il)) != QT_OK) return s;

    if (!(t = find(e, "output_norm.weight", true, &s))) return s;
    if ((s = check_shape(e, t, e->hp.n_embd, 1)) != QT_OK) return s;
    if ((s = load_vector(e, t, e->hp.n_embd, &e->out_norm)) != QT_OK) return s;

    /* llama.cpp treats output.weight as optional for these architectures and
     * reuses token_embd when it is absent (tied embeddings). */
    t = qt_model_find_tensor(e->model, "output.weight");
    e->output_tied = t == NULL;
    if (!t) t = e->tok_embd.t;
    if ((s = bind_matrix(e, t, e->hp.n_embd, e->hp.n_vocab, &e->output)) != QT_OK) return s;
    return build_rope(e);
}

void qt__engine_free_weights(qt_engine_ctx *e) {
    if (e->layers) {
        for (int il = 0; il < e->hp.n_layer; il++) {
            qt__layer *L = &e->layers[il];
            free(L->attn_norm); free(L->ffn_norm);
            free(L->bq); free(L->bk); free(L->bv); free(L->bo);
            free(L->q_norm); free(L->k_norm);
        }
        free(e->layers);
    }
    free(e->out_norm);
    free(e->rope_cos);
    free(e->rope_sin);
}
