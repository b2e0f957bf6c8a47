/* lib/quantize/gptq_run.c — GPTQ over a whole model, layer by layer
 * (quanta/quantize.h "GPTQ", docs/gptq.md), on the engine's calibration seam:
 *
 *   for each decoder layer:
 *     observe  run the calibration batch through the layer; each distinct
 *              linear input adds its rows to a Hessian (q/k/v share one,
 *              gate/up share one: the qt__layer_linears table);
 *     quantize each linear with GPTQ onto its target grid (the plan's GGUF
 *              type or the compressed-tensors scheme), keeping the result;
 *     rebind   the layer's linears to their quantized form;
 *     run      the layer again, so the next layer sees the quantized layer's
 *              outputs (the paper's sequential order, llm-compressor's
 *              "sequential" pipeline).
 *
 * Memory: the engine's buffers and the hidden states of the calibration batch
 * (n_seq x n_tok x n_embd floats), one linear in f32 and its grid state, the
 * layer's Hessians (double), and the quantized output so far (written at the
 * end: GGUF through the pipeline's writer, compressed-tensors through
 * qt_ct_export with the codes given).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quanta/ct.h"
#include "quanta/quantize_ct.h"
#include "quanta/engine.h"
#include "quanta/gptq.h"
#include "quanta/smooth.h"
#include "model/arch.h"
#include "quantize_internal.h"

const qt__layer_linear qt__layer_linears[QT__N_LINEARS] = {
    {"attn_q", 0}, {"attn_k", 0}, {"attn_v", 0}, {"attn_output", 1}, {"ffn_gate", 2}, {"ffn_up", 2}, {"ffn_down", 3},
};

int qt__layer_linear_find(const char *linear) {
    for (int k = 0; k < QT__N_LINEARS; k++)
        if (!strcmp(qt__layer_linears[k].linear, linear)) return k;
    return -1;
}

typedef struct observer_ctx {
    qt_gptq_hessian h[QT__N_INPUTS];
    qt_act_stats act[QT__N_INPUTS]; /* smoothing only: channel statistics of each input */
    bool smoothing;
    qt_status err;
} observer_ctx;

static void observe(void *user, int32_t layer, const char *linear, const float *x, int32_t n_tokens, int32_t n_in) {
    observer_ctx *c = user;
    (void)layer;
    if (c->err != QT_OK) return;
    for (int k = 0; k < QT__N_LINEARS; k++) {
        if (strcmp(qt__layer_linears[k].linear, linear)) continue;
        qt_gptq_hessian *h = &c->h[qt__layer_linears[k].input];
        if (k > 0 && qt__layer_linears[k - 1].input == qt__layer_linears[k].input) return; /* the same rows again */
        if (!h->s && (c->err = qt_gptq_hessian_init(h, n_in)) != QT_OK) return;
        if (h->n != n_in) { c->err = qt_error(QT_ERR_SHAPE, "gptq: %s: %d inputs, then %lld", linear, n_in, (long long)h->n); return; }
        c->err = qt_gptq_hessian_add(h, x, n_tokens);
        qt_act_stats *a = &c->act[qt__layer_linears[k].input];
        if (c->err == QT_OK && c->smoothing && !a->abs_sum) c->err = qt_act_stats_init(a, n_in);
        if (c->err == QT_OK && c->smoothing) qt_act_stats_add(a, x, n_tokens);
        return;
    }
    c->err = qt_error(QT_ERR_UNSUPPORTED, "gptq: the engine ran a linear '%s' quanta has no Hessian for", linear);
}

void qt__calib_note(const qt_gptq_run_opts *g, const char *fmt, ...) {
    if (!g->note) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    g->note(g->note_ctx, buf);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}


/* One linear: its weights in f32 (smoothed: sl), its Hessian, the target, the engine rebound. */
static qt_status one_linear(const qt_model *m, qt_layerwise *lw, int32_t il, int k, observer_ctx *oc, qt__calib_target *tg,
                            const qt__smooth_layer *sl, const qt_gptq_run_opts *g, qt_gptq_report *r) {
    char name[QT_MAX_NAME];
    snprintf(name, sizeof name, "blk.%d.%s.weight", il, qt__layer_linears[k].linear);
    const qt_tensor *t = qt_model_find_tensor(m, name);
    if (!t) return QT_OK; /* an architecture without this linear */
    const qt_gptq_hessian *h = &oc->h[qt__layer_linears[k].input];
    if (!h->s) return qt_error(QT_ERR_INTERNAL, "gptq: %s: the engine never showed its inputs", name);
    const int64_t cols = t->ne[0], rows = t->ne[1];
    float *W = malloc((size_t)(rows * cols) * sizeof *W);
    double *H = malloc((size_t)(cols * cols) * sizeof *H);
    qt_status s = W && H ? QT_OK : qt_error(QT_ERR_NOMEM, "gptq: out of memory for %s", name);
    if (s == QT_OK) s = qt_dequantize_rows(t->type, t->data, W, rows, cols);
    if (s == QT_OK) s = qt_gptq_hessian_get(h, H);
    const float *cs = sl->col[qt__layer_linears[k].input];
    if (s == QT_OK && cs) {
        qt_smooth_scale_cols(W, rows, cols, cs);
        qt_smooth_hessian(H, cols, cs);
    }
    if (s == QT_OK && sl->row[k]) qt_smooth_unscale_rows(W, rows, cols, sl->row[k]);
    qt_tensor bind = *t;
    bind.data = NULL;
    bool done = false;
    qt_gptq_stats st = {0};
    if (s == QT_OK) s = tg->linear(tg->ctx, t, W, H, &g->gptq, &st, &bind, &done);
    if (s == QT_OK && bind.data) s = qt_layerwise_set_weight(lw, il, qt__layer_linears[k].linear, &bind);
    free(W);
    free(H);
    if (s != QT_OK) return qt_error(s, "%s: %s", name, qt_last_error());
    if (done) {
        r->n_gptq++;
        r->loss += st.loss;
        r->n_retries += st.retries;
        r->n_dead_cols += st.dead_cols;
        if (st.retries)
            qt__calib_note(g, "%s: the Hessian needed damping %.3g (%d retries of x10) for its Cholesky factor", name, st.damp,
                 st.retries);
    }
    return QT_OK;
}

static qt_status run_layers(const qt_model *m, const qt_gptq_run_opts *g, qt__calib_target *tg, qt_gptq_report *r) {
    const int32_t n_layer = qt_model_hparams(m)->n_layer;
    if (!g->tokens || g->n_seq < 1 || g->n_tok < 2)
        return qt_error(QT_ERR_ARG, "gptq: calibration needs at least 1 sequence of 2 tokens (%d x %d)", g->n_seq, g->n_tok);
    const qt_arch_info *ai = qt__arch_info(qt_model_hparams(m)->arch);
    if (g->smoothing != QT_SMOOTH_NONE && (!ai || !ai->smooth))
        return qt_error(QT_ERR_UNSUPPORTED, "%s: architecture '%s' has no norm -> linear folding pairs to smooth "
                        "(lib/model/arch.c)", g->smoothing == QT_SMOOTH_AWQ ? "awq" : "smoothquant",
                        qt_model_hparams(m)->arch_name);
    if (g->n_tok > qt_model_hparams(m)->n_ctx_train)
        return qt_error(QT_ERR_ARG, "gptq: sequences of %d tokens are longer than the model's context (%d)", g->n_tok,
                        qt_model_hparams(m)->n_ctx_train);
    qt_engine_opts eo;
    qt_engine_opts_default(&eo);
    eo.n_ctx = eo.n_batch = g->n_tok;
    eo.n_threads = g->threads;
    eo.kv_type = QT_KV_TYPE_F32;
    qt_engine_ctx *e = NULL;
    qt_layerwise *lw = NULL;
    qt_status s = qt_engine_new(m, &eo, &e);
    if (s == QT_OK) s = qt_layerwise_new(e, g->tokens, g->n_seq, g->n_tok, &lw);
    const double t0 = now();
    for (int32_t il = 0; s == QT_OK && il < n_layer; il++) {
        observer_ctx oc = {.smoothing = g->smoothing != QT_SMOOTH_NONE, .err = QT_OK};
        qt__smooth_layer sl = {0};
        s = qt_layerwise_observe_layer(lw, observe, &oc);
        if (s == QT_OK) s = oc.err;
        if (s == QT_OK && oc.smoothing) s = qt__smooth_layer_run(m, lw, il, oc.h, oc.act, g, tg, &sl, r);
        for (int k = 0; s == QT_OK && k < QT__N_LINEARS; k++) s = one_linear(m, lw, il, k, &oc, tg, &sl, g, r);
        for (int k = 0; k < QT__N_INPUTS; k++) qt_gptq_hessian_free(&oc.h[k]), qt_act_stats_free(&oc.act[k]);
        qt__smooth_layer_free(&sl);
        if (s == QT_OK) s = qt_layerwise_run_layer(lw, NULL, NULL);
        if (s == QT_OK && tg->layer_done) s = tg->layer_done(tg->ctx, m, lw, il);
        if (s != QT_OK) break;
        const double el = now() - t0;
        qt__calib_note(g, "layer %d/%d quantized: %.1f s elapsed, ETA %.1f s", il + 1, n_layer, el,
             el / (il + 1) * (n_layer - il - 1));
        qt_progress_report(&g->progress, "gptq", il + 1, n_layer);
        if (qt_cancelled()) s = qt_error(QT_ERR_INTERRUPTED, "gptq: interrupted");
    }
    r->seconds = now() - t0;
    qt_layerwise_free(lw);
    qt_engine_free(e);
    return s;
}

qt_gptq_run_opts qt_gptq_run_opts_default(void) {
    return (qt_gptq_run_opts){.gptq = qt_gptq_opts_default(), .hessian_importance = true, .awq_grid = 20,
                              .awq_duo = true, .alpha = 0.5};
}

/* ---- GGUF: the plan's type per tensor ------------------------------------------------- */

typedef struct gguf_target {
    const qt_quantize_plan *p;
    const qt_model *m;
    const qt_gptq_run_opts *g;
    uint8_t **given;          /* (p->n_tensors) the algorithm's bytes, NULL: the pipeline quantizes */
    bool *transformed;        /* (p->n_tensors) smoothed: not measured against the input */
    float *importance;        /* (largest cols) diag(H) */
    int32_t n_rtn;
} gguf_target;

static int32_t plan_find(const qt_quantize_plan *p, const char *name) {
    for (int32_t i = 0; i < p->n_tensors; i++)
        if (!strcmp(p->tensors[i].name, name)) return i;
    return -1;
}

/* W (rows, cols) rounded to nearest into plan tensor i's type, kept as its output and bound. */
static qt_status gguf_round(gguf_target *x, int32_t i, qt_type type, const float *W, int64_t rows, int64_t cols,
                            qt_tensor *bind) {
    const size_t nb = qt_row_size(type, cols) * (size_t)rows;
    if (!(x->given[i] = malloc(nb))) return qt_error(QT_ERR_NOMEM, "out of memory");
    qt_status s = qt_quantize_rows(type, W, x->given[i], rows, cols, NULL);
    if (s != QT_OK) return s;
    x->transformed[i] = x->g->smoothing != QT_SMOOTH_NONE;
    bind->type = type;
    bind->nbytes = nb;
    bind->data = x->given[i];
    return QT_OK;
}

static qt_status gguf_linear(void *ctx, const qt_tensor *src, float *W, const double *H, const qt_gptq_opts *o,
                             qt_gptq_stats *st, qt_tensor *bind, bool *done) {
    gguf_target *x = ctx;
    const int32_t i = plan_find(x->p, src->name);
    const int64_t cols = src->ne[0], rows = src->ne[1];
    if (i < 0 || x->p->tensors[i].kept) return QT_OK;
    const qt_type type = x->p->tensors[i].type;
    const bool smoothed = x->g->smoothing != QT_SMOOTH_NONE;
    if (type == src->type && !smoothed) return QT_OK; /* kept as stored */
    if (x->g->rtn || !qt_gptq_gguf_supported(type)) {
        /* no grid for the type (the pipeline would round it to nearest, and says so here), or --algo awq */
        if (!x->g->rtn && qt_type_get(type)->is_quantized) {
            x->n_rtn++;
            qt__calib_note(x->g, "%s: no GPTQ grid for %s: round-to-nearest", src->name, qt_type_get(type)->name);
        }
        return gguf_round(x, i, type, W, rows, cols, bind);
    }
    float *imp = NULL;
    if (x->g->hessian_importance) {
        imp = x->importance;
        for (int64_t c = 0; c < cols; c++) imp[c] = (float)H[c * cols + c];
    }
    qt_gptq_gguf gg;
    qt_status s = qt_gptq_gguf_init(&gg, type, rows, cols, imp);
    qt_gptq_grid grid = qt_gptq_gguf_grid(&gg);
    if (s == QT_OK) s = qt_gptq_quantize(W, rows, cols, H, &grid, o, st);
    if (s != QT_OK) {
        qt_gptq_gguf_free(&gg);
        return s;
    }
    x->given[i] = gg.bytes; /* the grid's bytes are the output */
    x->transformed[i] = smoothed;
    gg.bytes = NULL;
    bind->type = type;
    bind->nbytes = gg.row_bytes * (size_t)rows;
    bind->data = x->given[i];
    qt_gptq_gguf_free(&gg);
    *done = true;
    return QT_OK;
}

/* Smoothing: a GGUF block (or the whole row for a float type); 0 when copied as stored. */
static int64_t gguf_group(void *ctx, const qt_tensor *src) {
    const gguf_target *x = ctx;
    const int32_t i = plan_find(x->p, src->name);
    if (i < 0) return 0;
    if (src->n_dims < 2) return 1; /* a norm or bias: written from the smoothed values */
    if (x->p->tensors[i].kept) return 0;
    const qt_type_traits *tr = qt_type_get(x->p->tensors[i].type);
    return tr->is_quantized ? tr->block_elems : src->ne[0];
}

static qt_status gguf_fake_quant(void *ctx, const qt_tensor *src, float *W) {
    const gguf_target *x = ctx;
    const qt_type type = x->p->tensors[plan_find(x->p, src->name)].type;
    const int64_t cols = src->ne[0], rows = src->ne[1];
    if (type == QT_TYPE_F32) return QT_OK;
    uint8_t *b = malloc(qt_row_size(type, cols) * (size_t)rows);
    qt_status s = b ? qt_quantize_rows(type, W, b, rows, cols, NULL) : qt_error(QT_ERR_NOMEM, "out of memory");
    if (s == QT_OK) s = qt_dequantize_rows(type, b, W, rows, cols);
    free(b);
    return s;
}

static qt_status gguf_vector(void *ctx, const qt_tensor *src, const float *v) {
    gguf_target *x = ctx;
    const int32_t i = plan_find(x->p, src->name);
    if (i < 0) return qt_error(QT_ERR_INTERNAL, "smoothing: %s is not in the plan", src->name);
    qt_tensor bind;
    return gguf_round(x, i, x->p->tensors[i].type, v, 1, src->ne[0], &bind);
}

qt_status qt_gptq_quantize_gguf(const qt_model *m, const char *out_path, const qt_quantize_opts *o,
                                qt_quantize_plan *p, const qt_gptq_run_opts *g, qt_gptq_report *r) {
    *r = (qt_gptq_report){0};
    if (!out_path || !out_path[0]) return qt_error(QT_ERR_ARG, "quantize: no output path");
    if (o->imatrix)
        return qt_error(QT_ERR_ARG, "gptq: --imatrix is for round-to-nearest; GPTQ uses the calibration Hessians");
    if (!o->algorithm)
        return qt_error(QT_ERR_ARG, "gptq: the quantize options must name the algorithm (\"gptq\", \"awq\", ...: it is recorded)");
    int64_t max_cols = 1;
    for (int32_t i = 0; i < p->n_tensors; i++) {
        const qt_tensor *t = qt_model_find_tensor(m, p->tensors[i].name);
        if (t && t->ne[0] > max_cols) max_cols = t->ne[0];
    }
    gguf_target x = {.p = p, .m = m, .g = g};
    x.given = calloc((size_t)p->n_tensors + 1, sizeof *x.given);
    x.transformed = calloc((size_t)p->n_tensors + 1, sizeof *x.transformed);
    x.importance = malloc((size_t)max_cols * sizeof *x.importance);
    qt_status s = x.given && x.transformed && x.importance ? QT_OK : qt_error(QT_ERR_NOMEM, "gptq: out of memory");
    qt__calib_target tg = {&x, gguf_linear, NULL, gguf_group, gguf_fake_quant, gguf_vector};
    if (s == QT_OK) s = run_layers(m, g, &tg, r);
    r->n_rtn = x.n_rtn;
    if (s == QT_OK) {
        const qt__quantize_given given = {(const uint8_t *const *)x.given, x.transformed};
        s = qt__quantize_write_staged(m, out_path, o, p, &given);
    }
    for (int32_t i = 0; x.given && i < p->n_tensors; i++) free(x.given[i]);
    free(x.given);
    free(x.transformed);
    free(x.importance);
    return s;
}

/* ---- compressed-tensors schemes: codes handed to qt_ct_export ------------------------ */

typedef struct ct_codes {
    char name[QT_MAX_NAME];
    int64_t rows, cols;
    qt_gptq_ct_int g;         /* integer schemes: codes, scales, zero points */
    qt_gptq_ct_float f;       /* float schemes: codes, scales or scale codes, the shared scale */
} ct_codes;

typedef struct ct_vector {
    char name[QT_MAX_NAME];
    int64_t n;
    float *v;                 /* (n) a norm or bias that absorbed smoothing scales */
} ct_vector;

typedef struct ct_target {
    const qt_model *m;
    const qt_gptq_run_opts *g;
    bool is_float;
    qt_ct_int_args a;         /* integer schemes */
    int fkind;                /* float schemes: qt_gptq_float_kind */
    qt_ct_dtype fdt;
    ct_codes *t;
    int32_t n, cap;
    ct_vector *vec;
    int32_t n_vec, cap_vec;
    float *bound[QT__N_LINEARS];  /* the current layer's quantized weights in f32, bound to the engine */
    qt_tensor bound_t[QT__N_LINEARS];
    int n_bound;
} ct_target;

static int64_t ct_group(void *ctx, const qt_tensor *src) {
    const ct_target *x = ctx;
    if (src->n_dims < 2) return 1; /* a norm: written in the model dtype */
    if (x->is_float) { /* the columns one scale covers (quanta/gptq.h's qt_gptq_float_kind) */
        static const int64_t float_group[] = {[QT_GPTQ_FP8_TENSOR] = 0, [QT_GPTQ_FP8_CHANNEL] = 0,
                                              [QT_GPTQ_FP8_BLOCK] = 128, [QT_GPTQ_NVFP4] = 16, [QT_GPTQ_MXFP4] = 32};
        const int64_t gs = float_group[x->fkind];
        return gs && gs < src->ne[0] ? gs : src->ne[0];
    }
    return x->a.strategy == QT_CT_GROUP ? (x->a.group_size ? x->a.group_size : QT_CT_DEFAULT_GROUP_SIZE) : src->ne[0];
}

/* The largest weight amax over src and the shards vLLM fuses with it (the
 * linears of its layer that share its input: q/k/v, gate/up), the amax the
 * writer's shared scales come from (ct_write.c shared_scales). */
static qt_status fused_amax(const qt_model *m, const qt_tensor *src, qt_ct_dtype dt, float *amax) {
    int32_t il;
    char linear[32];
    if (sscanf(src->name, "blk.%d.%31[^.].weight", &il, linear) != 2)
        return qt_error(QT_ERR_INTERNAL, "gptq: '%s' is not a decoder linear", src->name);
    int in = -1;
    for (int k = 0; k < QT__N_LINEARS; k++)
        if (!strcmp(qt__layer_linears[k].linear, linear)) in = qt__layer_linears[k].input;
    *amax = 0.0f;
    for (int k = 0; k < QT__N_LINEARS; k++) {
        char name[QT_MAX_NAME];
        snprintf(name, sizeof name, "blk.%d.%s.weight", il, qt__layer_linears[k].linear);
        const qt_tensor *t = qt__layer_linears[k].input == in ? qt_model_find_tensor(m, name) : NULL;
        if (!t) continue;
        const int64_t n = t->ne[0] * t->ne[1];
        float *w = malloc((size_t)n * sizeof *w);
        qt_status s = w ? qt_dequantize_rows(t->type, t->data, w, t->ne[1], t->ne[0])
                        : qt_error(QT_ERR_NOMEM, "gptq: out of memory for %s", name);
        if (s == QT_OK) *amax = fmaxf(*amax, qt_ct_amax(w, n, dt));
        free(w);
        if (s != QT_OK) return s;
    }
    return QT_OK;
}

/* The grid of src: the scheme's integer groups, or its float format with the
 * scale fused shards share (fp8-static's weight scale, nvfp4's global scale). */
static qt_status ct_grid(ct_target *x, const qt_tensor *src, ct_codes *c, qt_gptq_grid *grid) {
    const int64_t cols = c->cols, rows = c->rows;
    if (!x->is_float) {
        const int64_t group = ct_group(x, src);
        if (cols % group != 0)
            return qt_error(QT_ERR_SHAPE, "%lld columns are not a multiple of the group size %lld", (long long)cols,
                            (long long)group);
        qt_status s = qt_gptq_ct_int_init(&c->g, x->a.bits, x->a.symmetric, (int)x->a.dtype, rows, cols, group);
        *grid = qt_gptq_ct_int_grid(&c->g);
        return s;
    }
    float shared = 0.0f, amax;
    if (x->fkind == QT_GPTQ_FP8_TENSOR || x->fkind == QT_GPTQ_NVFP4) {
        qt_status s = fused_amax(x->m, src, x->fdt, &amax);
        if (s != QT_OK) return s;
        /* qt_ct_fp8_tensor_scale of a tensor whose amax is amax */
        shared = x->fkind == QT_GPTQ_NVFP4 ? qt_ct_nvfp4_global_scale(amax, x->fdt) : qt_ct_fp8_tensor_scale(&amax, 1, x->fdt);
    }
    qt_status s = qt_gptq_ct_float_init(&c->f, (qt_gptq_float_kind)x->fkind, (int)x->fdt, rows, cols, shared);
    *grid = qt_gptq_ct_float_grid(&c->f);
    return s;
}

/* Round to nearest onto src's grid, in place (the loss AWQ's search measures). */
static qt_status ct_fake_quant(void *ctx, const qt_tensor *src, float *W) {
    ct_codes c = {.rows = src->ne[1], .cols = src->ne[0]};
    qt_gptq_grid grid;
    qt_status s = ct_grid(ctx, src, &c, &grid);
    if (s == QT_OK) s = qt_gptq_rtn(W, c.rows, c.cols, &grid);
    qt_gptq_ct_int_free(&c.g);
    qt_gptq_ct_float_free(&c.f);
    return s;
}

/* Room for one more element of `size` bytes in *items (n used of *cap). */
static qt_status grow(void **items, int32_t n, int32_t *cap, size_t size) {
    if (n < *cap) return QT_OK;
    const int32_t c = *cap ? 2 * *cap : 32;
    void *t = realloc(*items, (size_t)c * size);
    if (!t) return qt_error(QT_ERR_NOMEM, "out of memory");
    *items = t;
    *cap = c;
    return QT_OK;
}

static qt_status ct_vector_keep(void *ctx, const qt_tensor *src, const float *v) {
    ct_target *x = ctx;
    qt_status s = grow((void **)&x->vec, x->n_vec, &x->cap_vec, sizeof *x->vec);
    if (s != QT_OK) return s;
    ct_vector *c = &x->vec[x->n_vec];
    *c = (ct_vector){.n = src->ne[0]};
    snprintf(c->name, sizeof c->name, "%s", src->name);
    if (!(c->v = malloc((size_t)c->n * sizeof *c->v))) return qt_error(QT_ERR_NOMEM, "out of memory");
    memcpy(c->v, v, (size_t)c->n * sizeof *c->v);
    x->n_vec++;
    return QT_OK;
}

static const float *ct_vector_values(void *ctx, const char *name, int64_t n) {
    const ct_target *x = ctx;
    for (int32_t i = 0; i < x->n_vec; i++)
        if (!strcmp(x->vec[i].name, name) && x->vec[i].n == n) return x->vec[i].v;
    return NULL;
}

static qt_status ct_linear(void *ctx, const qt_tensor *src, float *W, const double *H, const qt_gptq_opts *o,
                           qt_gptq_stats *st, qt_tensor *bind, bool *done) {
    ct_target *x = ctx;
    const int64_t cols = src->ne[0], rows = src->ne[1];
    qt_status s = grow((void **)&x->t, x->n, &x->cap, sizeof *x->t);
    if (s != QT_OK) return s;
    ct_codes *c = &x->t[x->n];
    *c = (ct_codes){.rows = rows, .cols = cols};
    snprintf(c->name, sizeof c->name, "%s", src->name);
    qt_gptq_grid grid;
    s = ct_grid(x, src, c, &grid);
    x->n++; /* freed with the others whatever happened */
    if (s != QT_OK) return s;
    s = x->g->rtn ? qt_gptq_rtn(W, rows, cols, &grid) : qt_gptq_quantize(W, rows, cols, H, &grid, o, st);
    if (s != QT_OK) return s;
    /* the engine runs the rest of the calibration on the dequantized values (vLLM's w*a16) */
    float *f = malloc((size_t)(rows * cols) * sizeof *f);
    if (!f) return qt_error(QT_ERR_NOMEM, "out of memory");
    memcpy(f, W, (size_t)(rows * cols) * sizeof *f);
    x->bound[x->n_bound] = f;
    x->bound_t[x->n_bound] = *src;
    x->n_bound++;
    bind->type = QT_TYPE_F32;
    bind->nbytes = (size_t)(rows * cols) * sizeof(float);
    bind->data = f;
    *done = !x->g->rtn;
    return QT_OK;
}

/* The layer is done: back to the model's own tensors, the f32 copies freed. */
static qt_status ct_layer_done(void *ctx, const qt_model *m, qt_layerwise *lw, int32_t il) {
    ct_target *x = ctx;
    qt_status s = QT_OK;
    for (int k = 0; k < QT__N_LINEARS; k++) {
        char name[QT_MAX_NAME];
        snprintf(name, sizeof name, "blk.%d.%s.weight", il, qt__layer_linears[k].linear);
        const qt_tensor *t = qt_model_find_tensor(m, name);
        if (t && s == QT_OK) s = qt_layerwise_set_weight(lw, il, qt__layer_linears[k].linear, t);
    }
    for (int k = 0; k < x->n_bound; k++) free(x->bound[k]);
    x->n_bound = 0;
    return s;
}

static const ct_codes *codes_of(const ct_target *x, const char *name, int64_t rows, int64_t cols) {
    for (int32_t i = 0; i < x->n; i++)
        if (!strcmp(x->t[i].name, name) && x->t[i].rows == rows && x->t[i].cols == cols) return &x->t[i];
    return NULL;
}

static bool ct_given(void *ctx, const char *name, int64_t rows, int64_t cols, const int8_t **q, const float **scales,
                     const int8_t **zero_points) {
    const ct_codes *c = codes_of(ctx, name, rows, cols);
    if (!c || !c->g.q) return false;
    *q = c->g.q;
    *scales = c->g.scales;
    *zero_points = c->g.zero_points;
    return true;
}

static bool ct_given_float(void *ctx, const char *name, int64_t rows, int64_t cols, const uint8_t **q,
                           const float **scales, const uint8_t **scale_codes, float *shared) {
    const ct_codes *c = codes_of(ctx, name, rows, cols);
    if (!c || !c->f.q) return false;
    *q = c->f.q;
    *scales = c->f.scales;
    *scale_codes = c->f.scale_codes;
    *shared = c->f.kind == QT_GPTQ_FP8_TENSOR ? c->f.scales[0] : c->f.shared;
    return true;
}

qt_status qt_gptq_quantize_ct(const qt_model *m, const char *scheme, const char *out_dir, const qt_ct_export_opts *o,
                              const qt_gptq_run_opts *g, qt_ct_export_estimate *est, qt_gptq_report *r) {
    *r = (qt_gptq_report){0};
    ct_target x = {.m = m, .g = g};
    qt_status s = qt_ct_int_scheme(m, scheme, &x.a);
    if (s == QT_ERR_UNSUPPORTED) {
        x.is_float = true;
        s = qt_ct_float_scheme(m, scheme, &x.fkind, &x.fdt);
    }
    if (s != QT_OK) return qt_error(s, "gptq: %s", qt_last_error());
    if (o->keep && o->keep[0])
        return qt_error(QT_ERR_UNSUPPORTED, "gptq: --keep with a compressed-tensors scheme is not supported yet");
    qt__calib_target tg = {&x, ct_linear, ct_layer_done, ct_group, ct_fake_quant, ct_vector_keep};
    s = run_layers(m, g, &tg, r);
    for (int k = 0; k < x.n_bound; k++) free(x.bound[k]);
    if (s == QT_OK) {
        qt_ct_export_opts eo = *o;
        eo.int_codes = ct_given;
        eo.int_codes_ctx = &x;
        eo.float_codes = ct_given_float;
        eo.float_codes_ctx = &x;
        eo.vector_values = ct_vector_values;
        eo.vector_values_ctx = &x;
        s = qt_ct_export(m, scheme, out_dir, &eo, est);
    }
    for (int32_t i = 0; i < x.n; i++) {
        qt_gptq_ct_int_free(&x.t[i].g);
        qt_gptq_ct_float_free(&x.t[i].f);
    }
    free(x.t);
    for (int32_t i = 0; i < x.n_vec; i++) free(x.vec[i].v);
    free(x.vec);
    return s;
}
