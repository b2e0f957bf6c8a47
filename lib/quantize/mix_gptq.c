/* lib/quantize/mix_gptq.c — the copies `--target-size --algo gptq` measures
 * (lib/quantize/mix_measure.c, mix_refine.c; docs/quantize.md "Target size"):
 * a decoder linear in a candidate type as GPTQ makes it, so the allocation
 * sees what each type costs after GPTQ, not after round-to-nearest (GPTQ
 * recovers more on some types than on others: on stories260K far more on
 * q4_0/q4_1 than on q5_x and q8_0).
 *
 * The Hessian of a linear's input is the base model's: a measurement
 * quantizes one tensor with the rest as stored, so its input is the base
 * model's, as in the GPTQ run's first layer. The layer-wise seam walks the
 * calibration batch forward on an engine of its own (nothing rebound), one
 * layer's Hessians held at a time; a request for an earlier layer starts the
 * walk again. The column loop is the run's (lib/quantize/gptq_run.c,
 * gguf_linear): the same damping, block and act order, the block quantizer
 * weighted by diag(H) when the run's hessian_importance is on. Other tensors,
 * and types without a GPTQ grid, are rounded to nearest without weights, as a
 * GPTQ run writes them. Deterministic at any thread count (quanta/gptq.h). */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "quanta/gptq.h"
#include "quantize_internal.h"

struct qt__mix_gptq {
    const qt_model *m;
    const qt_gptq_run_opts *g;
    qt_engine_ctx *e;
    qt_threadpool *pool;
    const int32_t *tokens;
    int32_t n_seq, n_tok;
    qt_layerwise *lw;                 /* NULL: not started */
    int32_t layer;                    /* whose Hessians are held, -1: none */
    qt_gptq_hessian h[QT__N_INPUTS];  /* of that layer */
    double *H[QT__N_INPUTS];          /* (n, n) each: 2 S / n_rows, made when first asked */
    qt__hess_scratch scratch;         /* the Hessians' partial sums, for the observe pass */
    qt_status err;
};

static void observe(void *user, int32_t layer, const char *linear, const float *x, int32_t n_tokens, int32_t n_in) {
    qt__mix_gptq *c = user;
    (void)layer;
    const int k = qt__layer_linear_find(linear);
    if (c->err != QT_OK || k < 0) return;
    qt_gptq_hessian *h = &c->h[qt__layer_linears[k].input];
    if (k > 0 && qt__layer_linears[k - 1].input == qt__layer_linears[k].input) return; /* the same rows again */
    if (!h->s && (c->err = qt_gptq_hessian_init(h, n_in)) != QT_OK) return;
    h->pool = c->pool;
    if (h->n != n_in) { c->err = qt_error(QT_ERR_SHAPE, "gptq costs: %s: %d inputs, then %lld", linear, n_in, (long long)h->n); return; }
    c->err = qt__hessian_add_scratch(h, &c->scratch, x, n_tokens);
}

static void drop_layer(qt__mix_gptq *c) {
    for (int k = 0; k < QT__N_INPUTS; k++) {
        qt_gptq_hessian_free(&c->h[k]);
        free(c->H[k]);
        c->H[k] = NULL;
    }
    memset(c->h, 0, sizeof c->h);
    c->layer = -1;
}

/* The Hessians of layer il's inputs in the base model. */
static qt_status reach_layer(qt__mix_gptq *c, int32_t il) {
    if (c->layer == il) return QT_OK;
    drop_layer(c);
    qt_status s = QT_OK;
    if (c->lw && qt_layerwise_next_layer(c->lw) > il) { qt_layerwise_free(c->lw); c->lw = NULL; }
    if (!c->lw) s = qt_layerwise_new(c->e, c->tokens, c->n_seq, c->n_tok, &c->lw);
    while (s == QT_OK && qt_layerwise_next_layer(c->lw) < il) s = qt_layerwise_run_layer(c->lw, NULL, NULL);
    c->err = QT_OK;
    if (s == QT_OK) s = qt_layerwise_observe_layer(c->lw, observe, c);
    qt__hess_scratch_free(&c->scratch);
    if (s == QT_OK) s = c->err;
    if (s == QT_OK) c->layer = il;
    return s;
}

qt_status qt__mix_gptq_new(const qt_model *m, const qt_quantize_target *tg, int threads, qt__mix_gptq **out) {
    *out = NULL;
    if (!tg->tokens || tg->n_seq < 1 || tg->n_tok < 2)
        return qt_error(QT_ERR_ARG, "--algo gptq with a target needs calibration text (--calib FILE)");
    qt__mix_gptq *c = calloc(1, sizeof *c);
    if (!c) return qt_error(QT_ERR_NOMEM, "out of memory");
    *c = (qt__mix_gptq){.m = m, .g = tg->gptq, .tokens = tg->tokens, .n_seq = tg->n_seq, .n_tok = tg->n_tok, .layer = -1};
    qt_engine_opts eo;
    qt_engine_opts_default(&eo);
    eo.n_ctx = eo.n_batch = tg->n_tok;
    eo.n_threads = threads;
    eo.kv_type = QT_KV_TYPE_F32;
    qt_status s = qt_engine_new(m, &eo, &c->e);
    if (s == QT_OK) s = qt_threadpool_create(threads > 0 ? threads : qt_default_threads(), &c->pool);
    if (s != QT_OK) { qt__mix_gptq_free(c); return s; }
    *out = c;
    return QT_OK;
}

void qt__mix_gptq_free(qt__mix_gptq *c) {
    if (!c) return;
    drop_layer(c);
    if (c->lw) qt_layerwise_free(c->lw);
    if (c->e) qt_engine_free(c->e);
    qt_threadpool_free(c->pool);
    free(c);
}

/* Layer and linear index of "blk.N.LINEAR.weight", false when it is no decoder linear. */
static bool decoder_linear(const char *name, int32_t *il, int *k) {
    int layer = -1, at = 0;
    if (sscanf(name, "blk.%d.%n", &layer, &at) != 1 || at <= 0 || layer < 0) return false;
    const char *rest = name + at, *dot = strrchr(rest, '.');
    char lin[QT_MAX_NAME];
    if (!dot || strcmp(dot, ".weight") || (size_t)(dot - rest) >= sizeof lin) return false;
    memcpy(lin, rest, (size_t)(dot - rest));
    lin[dot - rest] = '\0';
    *k = qt__layer_linear_find(lin);
    *il = layer;
    return *k >= 0;
}

/* t (rows x cols) by GPTQ onto ty with its input's Hessian: *bytes malloc'd, rows x row size. */
static qt_status gptq_copy(qt__mix_gptq *c, const qt_tensor *t, int32_t il, int k, qt_type ty, uint8_t **bytes) {
    qt_status s = reach_layer(c, il);
    const int in = qt__layer_linears[k].input;
    const int64_t cols = t->ne[0], rows = t->ne[1];
    if (s == QT_OK && (!c->h[in].s || c->h[in].n != cols))
        s = qt_error(QT_ERR_INTERNAL, "gptq costs: %s: the engine never showed its inputs", t->name);
    if (s == QT_OK && !c->H[in]) {
        c->H[in] = malloc((size_t)(cols * cols) * sizeof(double));
        s = c->H[in] ? qt_gptq_hessian_get(&c->h[in], c->H[in]) : qt_error(QT_ERR_NOMEM, "out of memory");
        if (s != QT_OK) { free(c->H[in]); c->H[in] = NULL; }
    }
    if (s != QT_OK) return s;
    const double *H = c->H[in];
    float *W = malloc((size_t)(rows * cols) * sizeof *W), *imp = NULL;
    if (W && c->g->hessian_importance && (imp = malloc((size_t)cols * sizeof *imp)))
        for (int64_t j = 0; j < cols; j++) imp[j] = (float)H[j * cols + j];
    if (!W || (c->g->hessian_importance && !imp)) { free(W); free(imp); return qt_error(QT_ERR_NOMEM, "out of memory"); }
    s = qt_dequantize_rows(t->type, t->data, W, rows, cols);
    qt_gptq_gguf gg;
    if (s == QT_OK) s = qt_gptq_gguf_init(&gg, ty, rows, cols, imp);
    if (s == QT_OK) {
        qt_gptq_grid grid = qt_gptq_gguf_grid(&gg);
        qt_gptq_opts o = c->g->gptq;
        o.pool = c->pool;
        qt_gptq_stats st = {0};
        s = qt_gptq_quantize(W, rows, cols, H, &grid, &o, &st);
        if (s == QT_OK) *bytes = gg.bytes, gg.bytes = NULL;
        qt_gptq_gguf_free(&gg);
    }
    free(W);
    free(imp);
    return s == QT_OK ? QT_OK : qt_error(s, "gptq costs: %s to %s: %s", t->name, qt_type_get(ty)->name, qt_last_error());
}

qt_status qt__mix_gptq_copy(qt__mix_gptq *c, const qt_tensor *t, qt_type ty, uint8_t **bytes) {
    *bytes = NULL;
    int32_t il = -1;
    int k = -1;
    const bool grid = decoder_linear(t->name, &il, &k) && t->ne[2] <= 1 && t->ne[3] <= 1 && qt_gptq_gguf_supported(ty) &&
                      ty != t->type && !c->g->rtn && c->g->smoothing == QT_SMOOTH_NONE;
    if (grid) return gptq_copy(c, t, il, k, ty, bytes);
    /* round to nearest without weights, row by row from the stored type (as the GPTQ run's writer) */
    const int64_t ne0 = t->ne[0], n_rows = (int64_t)(t->nbytes / qt_row_size(t->type, ne0));
    const size_t row = qt_row_size(ty, ne0), src_row = qt_row_size(t->type, ne0);
    float *x = malloc((size_t)ne0 * sizeof *x);
    uint8_t *d = malloc((size_t)n_rows * row + 1);
    qt_status s = x && d ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
    for (int64_t r = 0; s == QT_OK && r < n_rows; r++) {
        s = qt_dequantize_rows(t->type, (const uint8_t *)t->data + (size_t)r * src_row, x, 1, ne0);
        if (s == QT_OK) s = qt_quantize_rows(ty, x, d + (size_t)r * row, 1, ne0, NULL);
    }
    free(x);
    if (s != QT_OK) { free(d); return s; }
    *bytes = d;
    return QT_OK;
}
