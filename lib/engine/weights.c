/* lib/engine/weights.c — find, check and bind every tensor the forward pass uses.
 *
 * What a layer holds, its GGUF names, shapes and when each is required (always,
 * or when the hparams flag q/k/v biases (qwen2) or per-head q/k norms (qwen3)),
 * is lib/model/tensor_names.c's table (docs/formats.md §2.9). This file says
 * only where each row the forward pass uses goes in qt__layer (`bindings`).
 * Optional rows (llama's rarely used attention biases) are bound when present.
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
#include "model/model_internal.h"
#include "model/tensor_names.h"

/* Where a per-layer row of the tensor-name table goes in qt__layer. Rows without
 * one are not the forward pass's: the KV scales (lib/engine/kv.c reads them),
 * HF-only rows. */
typedef struct binding {
    bool used;
    bool matrix;               /* qt__mat (else an f32 vector) */
    size_t offset;             /* of the qt__mat or float* in qt__layer */
} binding;

#define MAT(field) {true, true, offsetof(qt__layer, field)}
#define VEC(field) {true, false, offsetof(qt__layer, field)}

static const binding bindings[QT_TN_COUNT] = {
    [QT_TN_ATTN_NORM] = VEC(attn_norm),
    [QT_TN_ATTN_Q] = MAT(wq),          [QT_TN_ATTN_Q_BIAS] = VEC(bq),
    [QT_TN_ATTN_K] = MAT(wk),          [QT_TN_ATTN_K_BIAS] = VEC(bk),
    [QT_TN_ATTN_V] = MAT(wv),          [QT_TN_ATTN_V_BIAS] = VEC(bv),
    [QT_TN_ATTN_Q_NORM] = VEC(q_norm), [QT_TN_ATTN_K_NORM] = VEC(k_norm),
    [QT_TN_ATTN_OUTPUT] = MAT(wo),     [QT_TN_ATTN_OUTPUT_BIAS] = VEC(bo),
    [QT_TN_FFN_NORM] = VEC(ffn_norm),
    [QT_TN_FFN_GATE] = MAT(w_gate),    [QT_TN_FFN_GATE_BIAS] = VEC(b_gate),
    [QT_TN_FFN_UP] = MAT(w_up),        [QT_TN_FFN_UP_BIAS] = VEC(b_up),
    [QT_TN_FFN_DOWN] = MAT(w_down),    [QT_TN_FFN_DOWN_BIAS] = VEC(b_down),
};

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
    s = qt__mat_init_pool(m, t, !e->opts.act_quant_off, e->opts.numerics, e->pool, e->model, !e->opts.keep_mapped);
    if (s != QT_OK) return with_path(e, s);
    /* a packed copy replaces the pages of a tensor in a read-only file mapping */
    qt__mat_drop_source(m, e->model);
    return QT_OK;
}

static const qt_tensor *find(const qt_engine_ctx *e, const char *name, bool required, qt_status *s) {
    const qt_tensor *t = qt_model_find_tensor(e->model, name);
    if (!t && required)
        *s = qt_error(QT_ERR_NOT_FOUND, "%s: tensor '%s' is missing (architecture %s)", qt_model_path(e->model),
                      name, e->hp.arch_name[0] ? e->hp.arch_name : "?");
    return t;
}

/* The row's ggml shape for these hyperparameters (ne1 = 1 for vectors). */
static void row_shape(const qt_engine_ctx *e, const qt_tn_info *ti, int64_t *ne0, int64_t *ne1) {
    *ne0 = qt__tn_dim(ti->ne[0], &e->hp);
    *ne1 = ti->n_dims > 1 ? qt__tn_dim(ti->ne[1], &e->hp) : 1;
}

static qt_status bind_layer(qt_engine_ctx *e, int il) {
    qt__layer *L = &e->layers[il];
    for (int32_t id = 0; id < QT_TN_COUNT; id++) {
        const binding *b = &bindings[id];
        const qt_tn_info *ti = qt__tn_row((qt_tn_id)id);
        if (!b->used) continue;
        char name[QT_MAX_NAME];
        if (ti->place != QT_TN_PER_LAYER || !qt__tn_gguf_name(ti, il, name, sizeof name))
            return qt_error(QT_ERR_INTERNAL, "engine: tensor-name row %d is not a per-layer GGUF tensor", id);
        qt_status s = QT_OK;
        const qt_tensor *t = find(e, name, qt__tn_required(ti, &e->hp), &s);
        if (s != QT_OK) return s;
        if (!t) continue;
        int64_t ne0, ne1;
        row_shape(e, ti, &ne0, &ne1);
        if (b->matrix) {
            s = bind_matrix(e, t, ne0, ne1, (qt__mat *)((char *)L + b->offset));
        } else {
            s = check_shape(e, t, ne0, ne1);
            if (s == QT_OK) s = load_vector(e, t, ne0, (float **)((char *)L + b->offset));
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
    const qt_tn_info *rfi = qt__tn_row(QT_TN_ROPE_FREQS);
    const qt_tensor *rf = qt_model_find_tensor(e->model, rfi->gguf);
    qt_status s = QT_OK;
    if (rf) {
        int64_t ne0, ne1;
        row_shape(e, rfi, &ne0, &ne1); /* (n_rot / 2) */
        if ((s = check_shape(e, rf, ne0, ne1)) != QT_OK) return s;
        if ((s = load_vector(e, rf, ne0, &freq_factors)) != QT_OK) return s;
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

/* A global row: found (when required), its shape checked. */
static const qt_tensor *find_global(const qt_engine_ctx *e, qt_tn_id id, bool required, qt_status *s) {
    const qt_tn_info *ti = qt__tn_row(id);
    const qt_tensor *t = find(e, ti->gguf, required, s);
    if (!t) return NULL;
    int64_t ne0, ne1;
    row_shape(e, ti, &ne0, &ne1);
    if ((*s = check_shape(e, t, ne0, ne1)) != QT_OK) return NULL;
    return t;
}

/* A mixture-of-experts layer (a router ffn_gate_inp and expert tensors *_exps,
 * llama.cpp's names) is refused by name: the engine has dense feed-forward
 * layers only. */
static qt_status refuse_experts(const qt_engine_ctx *e) {
    for (int32_t i = 0; i < qt_model_n_tensors(e->model); i++) {
        const char *n = qt_model_tensor(e->model, i)->name;
        if (strstr(n, ".ffn_gate_inp.") || strstr(n, "_exps.") || strstr(n, "_shexp."))
            return qt_error(QT_ERR_UNSUPPORTED, "%s: tensor '%s': a mixture-of-experts layer (router ffn_gate_inp, "
                            "experts ffn_*_exps); quanta's engine runs dense feed-forward layers only and has no expert "
                            "routing, so it cannot run, evaluate or calibrate this model (GPTQ, imatrix, KV scales); "
                            "round-to-nearest quantization needs no engine", qt_model_path(e->model), n);
    }
    return QT_OK;
}

qt_status qt__engine_bind_weights(qt_engine_ctx *e) {
    qt_status s = refuse_experts(e);
    if (s != QT_OK) return s;
    const qt_tensor *t = find_global(e, QT_TN_TOKEN_EMBD, true, &s);
    if (!t) return s;
    if ((s = qt__mat_init(&e->tok_embd, t, false, QT_NUMERICS_LLAMA)) != QT_OK) return with_path(e, s);
    if (!e->tok_embd.tr->to_float)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: tensor '%s': type %s has no dequantizer", qt_model_path(e->model), t->name,
                        e->tok_embd.tr->name);

    e->layers = calloc((size_t)e->hp.n_layer, sizeof *e->layers);
    if (!e->layers) return qt_error(QT_ERR_NOMEM, "engine: out of memory");
    for (int il = 0; il < e->hp.n_layer; il++)
        if ((s = bind_layer(e, il)) != QT_OK) return s;

    if (!(t = find_global(e, QT_TN_OUTPUT_NORM, true, &s))) return s;
    if ((s = load_vector(e, t, e->hp.n_embd, &e->out_norm)) != QT_OK) return s;

    /* llama.cpp treats output.weight as optional for these architectures and
     * reuses token_embd when it is absent (tied embeddings). */
    t = find_global(e, QT_TN_OUTPUT, false, &s);
    if (s != QT_OK) return s;
    e->output_tied = t == NULL;
    if (!t) t = e->tok_embd.t;
    if ((s = bind_matrix(e, t, e->hp.n_embd, e->hp.n_vocab, &e->output)) != QT_OK) return s;
    return build_rope(e);
}

void qt__engine_free_weights(qt_engine_ctx *e) {
    if (e->layers) {
        for (int il = 0; il < e->hp.n_layer; il++) {
            /* every vector field the binding table fills is an f32 copy this engine owns */
            for (int id = 0; id < QT_TN_COUNT; id++) {
                if (!bindings[id].used) continue;
                void *field = (char *)&e->layers[il] + bindings[id].offset;
                if (bindings[id].matrix) qt__mat_free(field);
                else free(*(float **)field);
            }
        }
        free(e->layers);
    }
    qt__mat_free(&e->output);
    free(e->out_norm);
    free(e->rope_cos);
    free(e->rope_sin);
}

qt_status qt__engine_set_token_embd(qt_engine_ctx *e, const qt_tensor *t) {
    if (e->output_tied) return qt_error(QT_ERR_UNSUPPORTED, "engine: token_embd is also the (tied) output projection");
    if (t->ne[0] != e->tok_embd.t->ne[0] || t->ne[1] != e->tok_embd.t->ne[1])
        return qt_error(QT_ERR_SHAPE, "engine: token_embd: shape differs");
    qt__mat_free(&e->tok_embd);
    qt_status s = qt__mat_init(&e->tok_embd, t, false, QT_NUMERICS_LLAMA);
    if (s == QT_OK && !e->tok_embd.tr->to_float) s = qt_error(QT_ERR_UNSUPPORTED, "engine: token_embd: no dequantizer");
    return s;
}
