/* lib/engine/layerwise.c — the model one decoder layer at a time over a batch of
 * sequences (quanta/engine.h, "layer by layer"): the seam calibration and
 * layer-wise quantization run on. Each sequence's hidden states live here
 * between layers; running layer il for a sequence loads them into the engine's
 * residual stream at position 0 and writes layer il's KV rows 0..n_tok-1, which
 * only layer il's attention reads, so sequences never see each other.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

struct qt_layerwise {
    qt_engine_ctx *e;
    int32_t n_seq, n_tok;
    int32_t next;               /* the layer run_layer runs next */
    float *hidden;              /* (n_seq, n_tok, n_embd) residual stream of every sequence */
    bool blas;                  /* qt__layerwise_set_blas: f32 values bound from now on take sgemm */
};

qt_status qt_layerwise_new(qt_engine_ctx *e, const int32_t *tokens, int32_t n_seq, int32_t n_tok, qt_layerwise **out) {
    *out = NULL;
    if (n_seq < 1 || n_tok < 1 || n_tok > e->n_batch)
        return qt_error(QT_ERR_ARG, "layerwise: %d sequences of %d tokens (need at least 1 of 1..%d, the batch size)",
                        n_seq, n_tok, e->n_batch);
    if (e->kvf->scaled)
        return qt_error(QT_ERR_UNSUPPORTED, "layerwise: KV cache %s is scaled; use f32, f16 or bf16", e->kvf->name);
    for (int64_t i = 0; i < (int64_t)n_seq * n_tok; i++)
        if (tokens[i] < 0 || tokens[i] >= e->hp.n_vocab)
            return qt_error(QT_ERR_RANGE, "layerwise: token %d at %lld is not in the vocabulary (%d)", tokens[i],
                            (long long)i, e->hp.n_vocab);
    qt_layerwise *lw = calloc(1, sizeof *lw);
    const size_t seq_floats = (size_t)n_tok * e->hp.n_embd;
    if (lw) lw->hidden = malloc((size_t)n_seq * seq_floats * sizeof(float));
    if (!lw || !lw->hidden) {
        free(lw);
        return qt_error(QT_ERR_NOMEM, "layerwise: out of memory for %d x %d hidden states", n_seq, n_tok);
    }
    *lw = (qt_layerwise){e, n_seq, n_tok, 0, lw->hidden, false};
    for (int32_t s = 0; s < n_seq; s++) {
        qt__engine_embed(e, tokens + (size_t)s * n_tok, n_tok);
        memcpy(lw->hidden + s * seq_floats, e->x, seq_floats * sizeof(float));
    }
    *out = lw;
    return QT_OK;
}

/* Runs layer `next` on every sequence; keep: store the outputs and move on. */
static qt_status run_next(qt_layerwise *lw, qt_linear_observer observer, void *user, bool keep) {
    qt_engine_ctx *e = lw->e;
    if (lw->next >= e->hp.n_layer) return qt_error(QT_ERR_ARG, "layerwise: all %d layers have run", e->hp.n_layer);
    const size_t seq_floats = (size_t)lw->n_tok * e->hp.n_embd;
    e->observer = observer;
    e->observer_user = user;
    e->observe_only = !keep;
    for (int32_t s = 0; s < lw->n_seq; s++) {
        if (qt_cancelled()) {
            e->observer = NULL;
            e->observe_only = false;
            return qt_error(QT_ERR_INTERRUPTED, "layerwise: interrupted");
        }
        float *h = lw->hidden + s * seq_floats;
        memcpy(e->x, h, seq_floats * sizeof(float));
        e->n_past = 0;
        qt__engine_rows_single(e, lw->n_tok);
        qt__engine_layer(e, lw->next, lw->n_tok);
        if (keep) memcpy(h, e->x, seq_floats * sizeof(float));
    }
    e->observer = NULL;
    e->observer_user = NULL;
    e->observe_only = false;
    e->n_past = 0; /* the cache holds no whole sequence: the engine starts afresh */
    if (keep) lw->next++;
    return QT_OK;
}

qt_status qt_layerwise_run_layer(qt_layerwise *lw, qt_linear_observer observer, void *user) {
    return run_next(lw, observer, user, true);
}

qt_status qt_layerwise_observe_layer(qt_layerwise *lw, qt_linear_observer observer, void *user) {
    return run_next(lw, observer, user, false);
}

/* The engine's matrix for a linear's GGUF base name. */
static qt__mat *layer_mat(qt__layer *L, const char *linear) {
    static const struct { const char *name; size_t off; } mats[] = {
        {"attn_q", offsetof(qt__layer, wq)},         {"attn_k", offsetof(qt__layer, wk)},
        {"attn_v", offsetof(qt__layer, wv)},         {"attn_output", offsetof(qt__layer, wo)},
        {"ffn_gate", offsetof(qt__layer, w_gate)},   {"ffn_up", offsetof(qt__layer, w_up)},
        {"ffn_down", offsetof(qt__layer, w_down)},
    };
    for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++)
        if (!strcmp(mats[i].name, linear)) return (qt__mat *)((char *)L + mats[i].off);
    return NULL;
}

qt_status qt_layerwise_set_weight(qt_layerwise *lw, int32_t layer, const char *linear, const qt_tensor *t) {
    qt_engine_ctx *e = lw->e;
    if (layer < 0 || layer >= e->hp.n_layer) return qt_error(QT_ERR_ARG, "layerwise: no layer %d", layer);
    qt__mat *m = layer_mat(&e->layers[layer], linear);
    if (!m) return qt_error(QT_ERR_ARG, "layerwise: no linear '%s'", linear);
    if (t->ne[0] != m->n_in || t->ne[1] != m->n_out)
        return qt_error(QT_ERR_SHAPE, "layerwise: blk.%d.%s: %lld x %lld replacing %lld x %lld", layer, linear,
                        (long long)t->ne[0], (long long)t->ne[1], (long long)m->n_in, (long long)m->n_out);
    qt__mat nm;
    /* the sgemm path takes f32 activations (the rows' own semantics: weight-only) */
    const bool blas = lw->blas && qt__mat_blas_type(t->type);
    qt_status s = qt__mat_init(&nm, t, !blas && !e->opts.act_quant_off, e->opts.numerics);
    if (s != QT_OK) return s;
    nm.blas = blas;
    if (nm.act_row_bytes > e->act_row_cap) {
        const size_t need = nm.act_row_bytes;
        qt__mat_free(&nm);
        return qt_error(QT_ERR_INTERNAL, "layerwise: blk.%d.%s: activation rows of %zu bytes (room for %zu)", layer,
                        linear, need, e->act_row_cap);
    }
    qt__mat_free(m);
    *m = nm;
    return QT_OK;
}

/* The sgemm path's scratch: a unit of dequantized rows per thread, as wide as the layer's widest input. */
qt_status qt__layerwise_set_blas(qt_layerwise *lw, bool on) {
    qt_engine_ctx *e = lw->e;
    lw->blas = on;
    if (!on || e->blas_w) return QT_OK;
    int64_t n = e->hp.n_embd;
    const int64_t n_q = (int64_t)e->hp.n_head * e->hp.head_dim;
    if (n_q > n) n = n_q;
    if (e->hp.n_ff > n) n = e->hp.n_ff;
    e->blas_w = malloc((size_t)e->n_threads * QT__BLAS_ROWS * (size_t)n * sizeof(float));
    if (!e->blas_w) {
        lw->blas = false;
        return qt_error(QT_ERR_NOMEM, "layerwise: out of memory for %d x %d dequantized rows of %lld", e->n_threads,
                        QT__BLAS_ROWS, (long long)n);
    }
    e->blas_w_n = n;
    return QT_OK;
}

qt_status qt_layerwise_set_vector(qt_layerwise *lw, int32_t layer, const char *name, const float *v, int64_t n) {
    qt_engine_ctx *e = lw->e;
    const qt_hparams *hp = &e->hp;
    const int64_t n_q = (int64_t)hp->n_head * hp->head_dim, n_kv = (int64_t)hp->n_head_kv * hp->head_dim;
    const struct { const char *name; size_t off; int64_t len; } vecs[] = {
        {"attn_norm.weight", offsetof(qt__layer, attn_norm), hp->n_embd}, {"ffn_norm.weight", offsetof(qt__layer, ffn_norm), hp->n_embd},
        {"attn_q.bias", offsetof(qt__layer, bq), n_q},                   {"attn_k.bias", offsetof(qt__layer, bk), n_kv},
        {"attn_v.bias", offsetof(qt__layer, bv), n_kv},                  {"ffn_gate.bias", offsetof(qt__layer, b_gate), hp->n_ff},
        {"ffn_up.bias", offsetof(qt__layer, b_up), hp->n_ff},
    };
    if (layer < 0 || layer >= hp->n_layer) return qt_error(QT_ERR_ARG, "layerwise: no layer %d", layer);
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++) {
        if (strcmp(vecs[i].name, name)) continue;
        float *dst = *(float **)((char *)&e->layers[layer] + vecs[i].off); /* the engine's own f32 copy */
        if (!dst) return qt_error(QT_ERR_ARG, "layerwise: blk.%d has no %s", layer, name);
        if (n != vecs[i].len)
            return qt_error(QT_ERR_SHAPE, "layerwise: blk.%d.%s: %lld values for %lld", layer, name, (long long)n,
                            (long long)vecs[i].len);
        memcpy(dst, v, (size_t)n * sizeof *dst);
        return QT_OK;
    }
    return qt_error(QT_ERR_ARG, "layerwise: no layer vector '%s'", name);
}

void qt_layerwise_set_kv_observer(qt_layerwise *lw, qt_kv_observer fn, void *user) {
    lw->e->kv_observer = fn;
    lw->e->kv_observer_user = user;
}

int32_t qt_layerwise_next_layer(const qt_layerwise *lw) { return lw->next; }

float *qt__layerwise_hidden(qt_layerwise *lw, int32_t s) {
    return s >= 0 && s < lw->n_seq ? lw->hidden + (size_t)s * (size_t)lw->n_tok * (size_t)lw->e->hp.n_embd : NULL;
}

qt_status qt__layerwise_resume(qt_layerwise *lw, int32_t s, const float *hidden, int32_t layer) {
    float *h = qt__layerwise_hidden(lw, s);
    if (!h || layer < 0 || layer > lw->e->hp.n_layer)
        return qt_error(QT_ERR_ARG, "layerwise: cannot resume sequence %d (of %d) at layer %d (of %d)", s, lw->n_seq, layer,
                        lw->e->hp.n_layer);
    memcpy(h, hidden, (size_t)lw->n_tok * (size_t)lw->e->hp.n_embd * sizeof(float));
    lw->next = layer;
    return QT_OK;
}

qt_status qt_layerwise_logits(qt_layerwise *lw, float *logits) { return qt_layerwise_logits_observed(lw, NULL, NULL, logits); }

qt_status qt_layerwise_logits_observed(qt_layerwise *lw, qt_linear_observer observer, void *user, float *logits) {
    qt_engine_ctx *e = lw->e;
    if (lw->next < e->hp.n_layer)
        return qt_error(QT_ERR_ARG, "layerwise: logits after all %d layers (%d run)", e->hp.n_layer, lw->next);
    const size_t seq_floats = (size_t)lw->n_tok * e->hp.n_embd;
    e->observer = observer;
    e->observer_user = user;
    e->observe_output = true;
    for (int32_t s = 0; s < lw->n_seq; s++)
        qt__engine_logits(e, lw->hidden + s * seq_floats, lw->n_tok, logits ? logits + (size_t)s * lw->n_tok * e->hp.n_vocab : NULL);
    e->observer = NULL;
    e->observer_user = NULL;
    e->observe_output = false;
    return QT_OK;
}

void qt_layerwise_free(qt_layerwise *lw) {
    if (!lw) return;
    lw->e->kv_observer = NULL;
    free(lw->e->blas_w); /* the engine's mats bound with blas set are the calibration's, rebound or freed with it */
    lw->e->blas_w = NULL;
    lw->e->blas_w_n = 0;
    free(lw->hidden);
    free(lw);
}
