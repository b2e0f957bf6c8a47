/* lib/quantize/smooth_run.c — AWQ and SmoothQuant for one decoder layer
 * (quanta/smooth.h's numeric core; docs/awq.md), between the layer's
 * observation and its rounding in the layer-by-layer driver (gptq_run.c):
 *
 *   for each folding pair of the architecture (lib/model/arch.c), in order:
 *     the linears fed by the pair's input, their target grid's RTN, the
 *     input's Hessian and channel statistics  ->  scales s (AWQ's search, or
 *     SmoothQuant's formula);
 *     s multiplies the linears' columns (their Hessian becomes S^-1 H S^-1);
 *     1/s goes into the producer: a norm's weight, or a linear's rows (and
 *     bias). The changed norms and biases are bound to the engine at once and
 *     handed to the writer, so the layer's rerun and the file agree.
 * A pair whose tensors are copied as stored (--keep) is left alone, named.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/arch.h"
#include "quanta/smooth.h"
#include "quantize_internal.h"

typedef struct fq_ctx {
    const qt__calib_target *t;
    const qt_tensor *const *src;
} fq_ctx;

static qt_status fake_quant(void *ctx, int k, float *W, int64_t rows, int64_t cols) {
    const fq_ctx *c = ctx;
    (void)rows;
    (void)cols;
    return c->t->fake_quant(c->t->ctx, c->src[k], W);
}

static qt_status load_f32(const qt_tensor *t, float **out) {
    const int64_t cols = t->ne[0], rows = t->n_dims > 1 ? t->ne[1] : 1;
    *out = malloc((size_t)(rows * cols) * sizeof **out);
    if (!*out) return qt_error(QT_ERR_NOMEM, "%s: out of memory", t->name);
    return qt_dequantize_rows(t->type, t->data, *out, rows, cols);
}

/* The producer's vector (a norm's weight, or a bias) divided by s: to the
 * writer and the engine. */
static qt_status fold_vector(qt_layerwise *lw, int32_t il, const qt_tensor *v, const char *suffix, const float *s,
                             const qt__calib_target *t) {
    float *x = NULL;
    qt_status st = load_f32(v, &x);
    if (st == QT_OK) {
        qt_smooth_unscale_rows(x, v->ne[0], 1, s);
        st = t->vector(t->ctx, v, x);
    }
    if (st == QT_OK) st = qt_layerwise_set_vector(lw, il, suffix, x, v->ne[0]);
    free(x);
    return st;
}

/* The scales of one pair whose consumers are to[0..n) and input `input`. */
static qt_status pair_scales(const qt_tensor *const *to, const int *to_li, int n, const qt_gptq_hessian *h,
                             const qt_act_stats *act, const qt_gptq_run_opts *g, const qt__calib_target *t,
                             const qt__smooth_layer *l, float *s, qt_gptq_report *r) {
    const int64_t cols = to[0]->ne[0];
    float *W[3] = {NULL, NULL, NULL}, *stat = malloc((size_t)cols * sizeof *stat);
    int64_t rows[3], group[3];
    double *H = g->smoothing == QT_SMOOTH_AWQ ? malloc((size_t)(cols * cols) * sizeof *H) : NULL;
    qt_status st = stat && (H || g->smoothing != QT_SMOOTH_AWQ) ? QT_OK : qt_error(QT_ERR_NOMEM, "smooth: out of memory");
    for (int k = 0; st == QT_OK && k < n; k++) {
        rows[k] = to[k]->ne[1];
        group[k] = t->group(t->ctx, to[k]);
        st = load_f32(to[k], &W[k]);
        if (st == QT_OK && l->row[to_li[k]]) qt_smooth_unscale_rows(W[k], rows[k], cols, l->row[to_li[k]]);
    }
    if (st == QT_OK && g->smoothing == QT_SMOOTH_AWQ) {
        qt_act_stats_mean(act, stat);
        st = qt_gptq_hessian_get(h, H);
        fq_ctx fc = {t, to};
        const qt_awq_problem p = {.n_linears = n, .W = (const float *const *)W, .rows = rows, .group = group,
                                  .cols = cols, .H = H, .x_mean = stat, .n_grid = g->awq_grid, .duo = g->awq_duo,
                                  .quant = fake_quant, .quant_ctx = &fc, .pool = h->pool};
        qt_awq_result res;
        if (st == QT_OK) st = qt_awq_search(&p, s, &res);
        if (st == QT_OK) {
            r->awq_loss += res.loss;
            r->awq_loss_rtn += res.loss_rtn;
            r->n_awq_identity += res.ratio < 0;
            qt__calib_note(g, "%s (+%d more): ratio %s%.2f, output error %.4g (RTN %.4g)", to[0]->name, n - 1,
                           res.ratio < 0 ? "none, s = 1: " : "", res.ratio < 0 ? 0.0 : res.ratio, res.loss,
                           res.loss_rtn);
        }
    } else if (st == QT_OK) {
        memset(stat, 0, (size_t)cols * sizeof *stat); /* weight maxima over the consumers */
        for (int k = 0; k < n; k++) qt_smooth_weight_absmax(W[k], rows[k], cols, stat);
        (void)qt_smoothquant_scales(act->abs_max, stat, cols, g->alpha, s);
    }
    int64_t dead = 0;
    for (int64_t j = 0; st == QT_OK && j < cols; j++) dead += !(act->abs_max[j] > 0);
    if (dead) {
        r->n_dead_channels += dead;
        qt__calib_note(g, "%s: %lld of its %lld input channels never saw a non-zero value in the calibration "
                          "batch: their scale is 1", to[0]->name, (long long)dead, (long long)cols);
    }
    for (int k = 0; k < n; k++) free(W[k]);
    free(stat);
    free(H);
    return st;
}

qt_status qt__smooth_layer_run(const qt_model *m, qt_layerwise *lw, int32_t il, const qt_gptq_hessian *h,
                               const qt_act_stats *act, const qt_gptq_run_opts *g, const qt__calib_target *t,
                               qt__smooth_layer *out, qt_gptq_report *r) {
    *out = (qt__smooth_layer){0};
    const qt_arch_info *ai = qt__arch_info(qt_model_hparams(m)->arch);
    if (!ai || !ai->smooth)
        return qt_error(QT_ERR_UNSUPPORTED, "smoothing: architecture '%s' has no norm -> linear folding pairs "
                                            "(lib/model/arch.c)", qt_model_hparams(m)->arch_name);
    qt_status st = QT_OK;
    for (const qt__smooth_pair *pr = ai->smooth; st == QT_OK && pr->from; pr++) {
        if (g->smoothing == QT_SMOOTH_SMOOTHQUANT && !pr->smoothquant) continue;
        char name[QT_MAX_NAME];
        const qt_tensor *to[3];
        int n = 0, input = -1, to_li[3];
        bool frozen = false;
        for (int k = 0; k < 3 && pr->to[k]; k++) {
            snprintf(name, sizeof name, "blk.%d.%s.weight", il, pr->to[k]);
            const qt_tensor *x = qt_model_find_tensor(m, name);
            const int li = qt__layer_linear_find(pr->to[k]);
            if (!x || li < 0) continue;
            to_li[n] = li;
            to[n++] = x;
            input = qt__layer_linears[li].input;
            frozen |= t->group(t->ctx, x) == 0;
        }
        snprintf(name, sizeof name, "blk.%d.%s.weight", il, pr->from);
        const qt_tensor *from = qt_model_find_tensor(m, name);
        const int from_li = qt__layer_linear_find(pr->from);
        if (!n || !from) continue; /* an architecture without this pair's tensors */
        const int64_t cols = to[0]->ne[0], produced = from_li >= 0 ? from->ne[1] : from->ne[0];
        if (produced != cols) {
            if (pr->needs_same_shape) continue; /* v -> o under grouped-query attention: llm-compressor skips it too */
            return qt_error(QT_ERR_SHAPE, "smoothing: %s gives %lld values, %s takes %lld", from->name,
                            (long long)produced, to[0]->name, (long long)cols);
        }
        frozen |= t->group(t->ctx, from) == 0;
        if (frozen || out->col[input]) {
            qt__calib_note(g, "%s -> %s: a tensor is copied as stored: not smoothed", from->name, to[0]->name);
            continue;
        }
        float *s = malloc((size_t)cols * sizeof *s);
        if (!s) return qt_error(QT_ERR_NOMEM, "smoothing: out of memory");
        out->col[input] = s;
        st = pair_scales(to, to_li, n, &h[input], &act[input], g, t, out, s, r);
        if (st == QT_OK && from_li >= 0) { /* a producing linear: its rows (and bias) absorb 1/s */
            if (!(out->row[from_li] = malloc((size_t)cols * sizeof *s))) return qt_error(QT_ERR_NOMEM, "out of memory");
            memcpy(out->row[from_li], s, (size_t)cols * sizeof *s);
            char suffix[64];
            snprintf(suffix, sizeof suffix, "%s.bias", pr->from);
            snprintf(name, sizeof name, "blk.%d.%s", il, suffix);
            const qt_tensor *bias = qt_model_find_tensor(m, name);
            if (bias) st = fold_vector(lw, il, bias, suffix, s, t);
        } else if (st == QT_OK) {
            char suffix[64];
            snprintf(suffix, sizeof suffix, "%s.weight", pr->from);
            st = fold_vector(lw, il, from, suffix, s, t);
        }
        r->n_smoothed += st == QT_OK;
    }
    return st;
}

void qt__smooth_layer_free(qt__smooth_layer *l) {
    for (int k = 0; k < QT__N_INPUTS; k++) free(l->col[k]);
    for (int k = 0; k < QT__N_LINEARS; k++) free(l->row[k]);
    *l = (qt__smooth_layer){0};
}
