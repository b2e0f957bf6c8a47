/* lib/engine/engine.c — engine lifetime, option checks, batching, describe(). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "engine_internal.h"
#include "quant/gemm_k16.h"

void qt_engine_opts_default(qt_engine_opts *o) {
    memset(o, 0, sizeof *o);
    o->kv_type = QT_KV_TYPE_F16;
    o->kv_scale_gran = QT_KV_SCALE_PER_TENSOR;
    o->kv_scale_source = QT_KV_SCALE_AUTO;
}

const char *qt_numerics_name(qt_numerics n) { return n == QT_NUMERICS_LLAMA ? "llama" : "fast"; }

qt_status qt_numerics_parse(const char *name, qt_numerics *out) {
    if (!strcmp(name, "fast")) *out = QT_NUMERICS_FAST;
    else if (!strcmp(name, "llama")) *out = QT_NUMERICS_LLAMA;
    else return qt_error(QT_ERR_UNSUPPORTED, "numerics '%s': expected fast or llama", name);
    return QT_OK;
}

static qt_status check_hparams(const qt_engine_ctx *e) {
    const qt_hparams *hp = &e->hp;
    const char *path = qt_model_path(e->model);
    if (hp->arch <= QT_ARCH_UNKNOWN || hp->arch >= QT_ARCH_COUNT)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: architecture '%s' is not supported by the engine "
                        "(supported: llama, qwen2, qwen3, mistral)", path, hp->arch_name[0] ? hp->arch_name : "unknown");
#define NEED(cond, ...) do { if (!(cond)) return qt_error(QT_ERR_FORMAT, __VA_ARGS__); } while (0)
    NEED(hp->n_embd > 0 && hp->n_layer > 0 && hp->n_vocab > 0 && hp->n_ff > 0, "%s: hyper-parameters: n_embd %d, "
         "n_layer %d, n_vocab %d, n_ff %d must all be positive", path, hp->n_embd, hp->n_layer, hp->n_vocab, hp->n_ff);
    NEED(hp->n_head > 0 && hp->n_head_kv > 0 && hp->n_head % hp->n_head_kv == 0,
         "%s: hyper-parameters: n_head %d is not a positive multiple of n_head_kv %d", path, hp->n_head, hp->n_head_kv);
    NEED(hp->head_dim > 0 && hp->n_rot > 0 && hp->n_rot % 2 == 0 && hp->n_rot <= hp->head_dim,
         "%s: hyper-parameters: rope dimension %d must be even and at most head_dim %d", path, hp->n_rot, hp->head_dim);
    NEED(hp->rms_eps > 0.0f && hp->rope_theta > 0.0f, "%s: hyper-parameters: rms_eps %g and rope_theta %g must be positive",
         path, (double)hp->rms_eps, (double)hp->rope_theta);
#undef NEED
    return QT_OK;
}

static void *alloc_floats(size_t n, qt_status *s) {
    void *p = n ? calloc(n, sizeof(float)) : NULL;
    if (n && !p && *s == QT_OK) *s = qt_error(QT_ERR_NOMEM, "engine: out of memory (%zu floats)", n);
    return p;
}

static qt_status alloc_buffers(qt_engine_ctx *e) {
    qt_status s = QT_OK;
    const size_t B = (size_t)e->n_rows;
    e->x = alloc_floats(B * e->hp.n_embd, &s);
    e->xb = alloc_floats(B * e->hp.n_embd, &s);
    e->xb2 = alloc_floats(B * e->hp.n_embd, &s);
    e->q = alloc_floats(B * e->n_q, &s);
    e->k = alloc_floats(B * e->n_kv, &s);
    e->v = alloc_floats(B * e->n_kv, &s);
    e->att = alloc_floats(B * e->n_q, &s);
    e->hb = alloc_floats(B * e->hp.n_ff, &s);
    e->hb2 = alloc_floats(B * e->hp.n_ff, &s);
    e->row_pos = calloc(B, sizeof *e->row_pos);
    e->row_seq = calloc(B, sizeof *e->row_seq);
    e->row_gemm = calloc(B, 1);
    e->seq_len = calloc((size_t)e->n_seq, sizeof *e->seq_len);
    if ((!e->row_pos || !e->row_seq || !e->row_gemm || !e->seq_len) && s == QT_OK)
        s = qt_error(QT_ERR_NOMEM, "engine: out of memory");

    /* the largest activation row any matrix converts to */
    size_t act_bytes = e->output.act_row_bytes;
    int64_t max_in = e->hp.n_embd;
    for (int il = 0; il < e->hp.n_layer; il++) {
        const qt__mat *ms[] = {&e->layers[il].wq, &e->layers[il].wk, &e->layers[il].wv, &e->layers[il].wo,
                               &e->layers[il].w_gate, &e->layers[il].w_up, &e->layers[il].w_down};
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
            if (ms[i]->act_row_bytes > act_bytes) act_bytes = ms[i]->act_row_bytes;
            if (ms[i]->n_in > max_in) max_in = ms[i]->n_in;
        }
    }
    /* room for f32 rows too: the calibration seam may rebind a linear to any type
     * (qt_layerwise_set_weight), and no activation type is wider than f32 */
    if ((size_t)max_in * sizeof(float) > act_bytes) act_bytes = (size_t)max_in * sizeof(float);
    e->act_row_cap = act_bytes;
    e->act = calloc(B, act_bytes ? act_bytes : 1);
    if (!e->act && s == QT_OK) s = qt_error(QT_ERR_NOMEM, "engine: out of memory");

    e->scratch = calloc((size_t)e->n_threads, sizeof *e->scratch);
    if (!e->scratch) return s == QT_OK ? qt_error(QT_ERR_NOMEM, "engine: out of memory") : s;
    for (int t = 0; t < e->n_threads; t++) {
        qt__scratch *sc = &e->scratch[t];
        sc->row = alloc_floats((size_t)max_in, &s);
        sc->kv_row = alloc_floats((size_t)e->hp.head_dim, &s);
        sc->q_conv = alloc_floats((size_t)e->hp.head_dim, &s);
        sc->acc = alloc_floats((size_t)e->hp.head_dim, &s);
    }
    return s;
}

/* "q4_0 x35, f16 x5, q8_0 x1" and how each type meets its activations. */
static void describe(qt_engine_ctx *e) {
    int count[QT_TYPE_COUNT] = {0};
    qt_type act[QT_TYPE_COUNT];
    bool deq[QT_TYPE_COUNT] = {0}, fast[QT_TYPE_COUNT] = {0}, packed[QT_TYPE_COUNT] = {0}, q8g[QT_TYPE_COUNT] = {0};
    for (int il = 0; il < e->hp.n_layer; il++) {
        const qt__layer *L = &e->layers[il];
        const qt__mat *ms[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
            count[ms[i]->t->type]++;
            act[ms[i]->t->type] = ms[i]->act_type;
            deq[ms[i]->t->type] = ms[i]->dequant_rows;
            fast[ms[i]->t->type] |= ms[i]->own_order;
            packed[ms[i]->t->type] |= ms[i]->x16 != NULL;
            q8g[ms[i]->t->type] |= ms[i]->act_ct4_q8;
        }
    }
    count[e->output.t->type]++;
    act[e->output.t->type] = e->output.act_type;
    deq[e->output.t->type] = e->output.dequant_rows;
    fast[e->output.t->type] |= e->output.own_order;
    packed[e->output.t->type] |= e->output.x16 != NULL;
    q8g[e->output.t->type] |= e->output.act_ct4_q8;

    char *d = e->describe;
    size_t cap = sizeof e->describe, n = 0;
#define PUT(...) do { if (n < cap) n += (size_t)snprintf(d + n, cap - n, __VA_ARGS__); } while (0)
    PUT("matrices:");
    for (int t = 0; t < QT_TYPE_COUNT; t++)
        if (count[t]) PUT(" %s x%d", qt_type_get((qt_type)t)->name, count[t]);
    PUT(" (output %s, embeddings %s); activations:", e->output_tied ? "tied to token_embd" : "separate",
        e->tok_embd.tr->name);
    bool first = true, any_ct = false;
    for (int t = 0; t < QT_TYPE_COUNT; t++) {
        if (!count[t]) continue;
        if (q8g[t])
            PUT("%s int8 per group of 128 for %s rows (integer dots)", first ? "" : ";", qt_type_get((qt_type)t)->name);
        else if (deq[t] && qt_type_get((qt_type)t)->engine_only)
            PUT("%s f32 for %s rows (fused dot for one row, dequantized per row for batches)", first ? "" : ";",
                qt_type_get((qt_type)t)->name);
        else if (deq[t]) PUT("%s %s rows dequantized to f32, f32 dot", first ? "" : ";", qt_type_get((qt_type)t)->name);
        else if (packed[t] && qt__k16_bytes((qt_type)t, 1, 256))
            PUT("%s q8_K for %s rows packed k16", first ? "" : ";", qt_type_get((qt_type)t)->name);
        else if (packed[t]) PUT("%s q8s for %s rows packed x16", first ? "" : ";", qt_type_get((qt_type)t)->name);
        else PUT("%s %s for %s rows", first ? "" : ";", qt_type_get(act[t])->name, qt_type_get((qt_type)t)->name);
        any_ct |= !deq[t] && qt_type_get((qt_type)t)->engine_only;
        first = false;
    }
    PUT(" (%s%s); --numerics %s", e->opts.act_quant_off ? "--act-quant off" :
        "--act-quant auto: quantized to each type's vec_dot_type as llama.cpp's CPU backend does",
        any_ct ? "; compressed-tensors W8A8 / FP8 rows as vLLM computes them, docs/w8a8.md" : "",
        qt_numerics_name(e->opts.numerics));
    int n_fast = 0;
    for (int t = 0; t < QT_TYPE_COUNT; t++) n_fast += fast[t];
    if (n_fast) {
        PUT(" (own float order for");
        for (int t = 0; t < QT_TYPE_COUNT; t++)
            if (fast[t]) PUT(" %s", qt_type_get((qt_type)t)->name);
        PUT(" rows)");
    }
    PUT("; KV cache: %s, n_ctx %d", e->kvf->name, e->n_ctx);
    if (e->n_seq > 1) PUT(" x %d sequences", e->n_seq);
    if (e->kvf->scaled) {
        const char *gran = e->opts.kv_scale_gran == QT_KV_SCALE_PER_HEAD ? "per-head" : "per-tensor";
        if (e->scale_source == QT_KV_SCALE_FILE) PUT(", %s scales from the model file (%s)", gran,
                 e->scales_from_meta ? "quanta.kv_cache.k_scale / v_scale" : "blk.N.attn_k_scale / attn_v_scale");
        else if (e->scale_source == QT_KV_SCALE_ONE) PUT(", %s scales fixed at 1.0 (uncalibrated)", gran);
        else PUT(", %s scales computed on the fly (absmax/%g of the first batch)", gran, (double)e->kvf->max_value);
    } else if (!e->opts.act_quant_off && e->kvf->dtype != QT_KV_TYPE_F32 && e->opts.numerics == QT_NUMERICS_LLAMA) {
        PUT(" (Q rounded to %s%s, as llama.cpp's flash attention)", e->kvf->name,
            e->kvf->dtype == QT_KV_TYPE_F16 ? " and an f16 value accumulator" : "");
    }
    if (e->opts.numerics == QT_NUMERICS_FAST)
        PUT("; attention: f32 Q and accumulator on the stored cache, split over heads x blocks of up to %d keys",
            QT_ATTN_BLOCK);
#undef PUT
}

qt_status qt_engine_new(const qt_model *m, const qt_engine_opts *o, qt_engine_ctx **out) {
    *out = NULL;
    qt_engine_opts defaults;
    if (!o) { qt_engine_opts_default(&defaults); o = &defaults; }
    qt_engine_ctx *e = calloc(1, sizeof *e);
    if (!e) return qt_error(QT_ERR_NOMEM, "engine: out of memory");
    e->model = m;
    e->hp = *qt_model_hparams(m);
    e->opts = *o;
    qt_status s = check_hparams(e);
    if (s != QT_OK) goto fail;

    e->n_q = e->hp.n_head * e->hp.head_dim;
    e->n_kv = e->hp.n_head_kv * e->hp.head_dim;
    e->n_rep = e->hp.n_head / e->hp.n_head_kv;
    e->kq_scale = 1.0f / sqrtf((float)e->hp.head_dim);
    e->n_ctx = o->n_ctx > 0 ? o->n_ctx : (e->hp.n_ctx_train > 0 && e->hp.n_ctx_train < 4096 ? e->hp.n_ctx_train : 4096);
    if (o->n_ctx < 0 || e->n_ctx > (1 << 24)) {
        s = qt_error(QT_ERR_ARG, "context length %d is out of range", o->n_ctx);
        goto fail;
    }
    e->n_batch = o->n_batch > 0 ? (o->n_batch < e->n_ctx ? o->n_batch : e->n_ctx) : (e->n_ctx < 512 ? e->n_ctx : 512);
    e->n_seq = o->n_seq > 0 ? o->n_seq : 1;
    if (o->n_seq < 0 || o->n_seq > 4096) {
        s = qt_error(QT_ERR_ARG, "%d sequences is out of range (1..4096)", o->n_seq);
        goto fail;
    }
    e->n_rows = e->n_batch + e->n_seq - 1;
    e->n_threads = o->n_threads > 0 ? o->n_threads : qt_default_threads();

    /* the pool first: binding packs the x16 / k16 copies on it */
    if ((s = qt_threadpool_create(e->n_threads, &e->pool)) != QT_OK) goto fail;
    if ((s = qt__engine_bind_weights(e)) != QT_OK) goto fail;
    if ((s = qt__engine_kv_init(e)) != QT_OK) goto fail;
    if ((s = alloc_buffers(e)) != QT_OK) goto fail;
    describe(e);
    *out = e;
    return QT_OK;
fail:
    qt_engine_free(e);
    return s;
}

void qt_engine_free(qt_engine_ctx *e) {
    if (!e) return;
    qt_threadpool_free(e->pool);
    qt__engine_free_weights(e);
    qt__engine_kv_free(e);
    free(e->x); free(e->xb); free(e->xb2); free(e->q); free(e->k); free(e->v);
    free(e->att); free(e->hb); free(e->hb2); free(e->act);
    free(e->row_pos); free(e->row_seq); free(e->row_gemm); free(e->seq_len);
    if (e->scratch) {
        for (int t = 0; t < e->n_threads; t++) {
            free(e->scratch[t].row); free(e->scratch[t].kv_row);
            free(e->scratch[t].q_conv); free(e->scratch[t].acc);
        }
        free(e->scratch);
    }
    free(e);
}

const char *qt_engine_describe(const qt_engine_ctx *e) { return e->describe; }
int32_t qt_engine_n_ctx(const qt_engine_ctx *e) { return e->n_ctx; }
int32_t qt_engine_n_vocab(const qt_engine_ctx *e) { return e->hp.n_vocab; }
int32_t qt_engine_n_past(const qt_engine_ctx *e) { return e->n_past; }
void qt_engine_reset(qt_engine_ctx *e) { e->n_past = 0; }

const float *qt_engine_kv_scales(const qt_engine_ctx *e, int32_t layer, bool value) {
    if (!e->kvf->scaled || layer < 0 || layer >= e->hp.n_layer) return NULL;
    return (value ? e->v_scale : e->k_scale) + (size_t)layer * e->hp.n_head_kv;
}

qt_status qt_engine_eval(qt_engine_ctx *e, const int32_t *tokens, int32_t n, int32_t first_logit, float *logits) {
    if (n <= 0) return qt_error(QT_ERR_ARG, "eval: no tokens");
    if (n > e->n_ctx - e->n_past)
        return qt_error(QT_ERR_ARG, "%d tokens do not fit the context: %d of %d positions are free", n,
                        e->n_ctx - e->n_past, e->n_ctx);
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= e->hp.n_vocab)
            return qt_error(QT_ERR_ARG, "token %d at index %d is outside the vocabulary (%d tokens)", tokens[i], i,
                            e->hp.n_vocab);
    if (first_logit < 0) first_logit = 0;
    const int32_t n_past0 = e->n_past;
    for (int32_t start = 0; start < n; start += e->n_batch) {
        const int32_t B = n - start < e->n_batch ? n - start : e->n_batch;
        int32_t local_first = first_logit - start;
        if (local_first < 0) local_first = 0;
        float *out = logits && local_first < B ? logits + (size_t)(start + local_first - first_logit) * e->hp.n_vocab : NULL;
        qt_status s = qt__engine_forward(e, tokens + start, B, local_first, out);
        if (s != QT_OK) {
            e->n_past = n_past0;
            return s;
        }
    }
    return QT_OK;
}
