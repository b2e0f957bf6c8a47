/* lib/quantize/mix_measure.c — `--sensitivity measured` (docs/quantize.md
 * "Target size"): the cost of tensor W in candidate type c is the mean KL
 * divergence KL(base || model with only W in c) of the next-token
 * distribution, per token, on the calibration sequences.
 *
 * Each decoder linear is measured by the engine itself: the layer-by-layer
 * seam binds that linear to its quantized copy, runs every layer and the
 * output, and binds it back. The output projection is exact without a run:
 * its logits move by H (Wq - W)^T, H the final norm's output rows captured
 * once. The token embedding is rebound in the engine for each candidate; only
 * a tied one (also the output) keeps its proxy cost, scaled by the median
 * measured/proxy ratio of the measured pairs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "quantize_internal.h"

typedef struct measure_ctx {
    const qt_model *m;
    qt_engine_ctx *e;
    const qt_quantize_target *tg;
    int32_t n_layer, n_vocab, n_embd;
    int64_t rows;        /* n_seq * n_tok */
    double *logp0;       /* (rows, n_vocab) the base model's log-probabilities */
    float *logits;       /* (rows, n_vocab) scratch */
    float *h;            /* (rows, n_embd) the output projection's input */
    int64_t h_at;        /* rows of h captured */
} measure_ctx;

static void capture_output_input(void *user, int32_t layer, const char *linear, const float *x, int32_t n_tokens,
                                 int32_t n_in) {
    measure_ctx *c = user;
    if (layer != -1 || strcmp(linear, "output")) return;
    if (c->h_at + n_tokens > c->rows || n_in != c->n_embd) return;
    memcpy(c->h + c->h_at * n_in, x, (size_t)n_tokens * (size_t)n_in * sizeof(float));
    c->h_at += n_tokens;
}

/* log-softmax of one row, in double. */
static void log_softmax(const float *z, int32_t n, double *out) {
    double mx = -INFINITY, sum = 0;
    for (int32_t v = 0; v < n; v++) mx = z[v] > mx ? z[v] : mx;
    for (int32_t v = 0; v < n; v++) sum += exp((double)z[v] - mx);
    const double lse = mx + log(sum);
    for (int32_t v = 0; v < n; v++) out[v] = (double)z[v] - lse;
}

/* Mean over rows of KL(base || softmax(logits)), nats per token. */
static double mean_kld(const measure_ctx *c, double *scratch) {
    double total = 0;
    for (int64_t r = 0; r < c->rows; r++) {
        log_softmax(c->logits + r * c->n_vocab, c->n_vocab, scratch);
        const double *l0 = c->logp0 + r * c->n_vocab;
        double kl = 0;
        for (int32_t v = 0; v < c->n_vocab; v++) kl += exp(l0[v]) * (l0[v] - scratch[v]);
        total += kl > 0 ? kl : 0;
    }
    return total / (double)c->rows;
}

/* Every layer and the output, with whatever is bound; bind (layer, linear, t) first when t. */
static qt_status run_model(measure_ctx *c, int32_t layer, const char *linear, const qt_tensor *t, const qt_tensor *back) {
    qt_layerwise *lw;
    qt_status s = qt_layerwise_new(c->e, c->tg->tokens, c->tg->n_seq, c->tg->n_tok, &lw);
    if (s != QT_OK) return s;
    if (t) s = qt_layerwise_set_weight(lw, layer, linear, t);
    for (int32_t il = 0; s == QT_OK && il < c->n_layer; il++) s = qt_layerwise_run_layer(lw, NULL, NULL);
    if (s == QT_OK) s = qt_layerwise_logits(lw, c->logits);
    if (back) {
        qt_status b = qt_layerwise_set_weight(lw, layer, linear, back);
        if (s == QT_OK) s = b;
    }
    qt_layerwise_free(lw);
    return s;
}

/* The tensor in type ty (data malloc'd into *buf), quantized as the run would (weights w). */
static qt_status quantize_copy(const qt_tensor *t, qt_type ty, const float *w, qt_tensor *out, uint8_t **buf) {
    const int64_t ne0 = t->ne[0], rows = (int64_t)(t->nbytes / qt_row_size(t->type, ne0));
    const size_t row = qt_row_size(ty, ne0), src_row = qt_row_size(t->type, ne0);
    float *x = malloc((size_t)ne0 * sizeof *x);
    *buf = malloc((size_t)rows * row + 1);
    qt_status s = x && *buf ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
    for (int64_t r = 0; s == QT_OK && r < rows; r++) {
        s = qt_dequantize_rows(t->type, (const uint8_t *)t->data + (size_t)r * src_row, x, 1, ne0);
        if (s == QT_OK) s = qt_quantize_rows(ty, x, *buf + (size_t)r * row, 1, ne0, w);
    }
    free(x);
    *out = *t;
    out->type = ty;
    out->data = *buf;
    out->nbytes = (size_t)rows * row;
    return s;
}

/* logits = base + H (Wq - W)^T, from the base logits (exp(logp0) up to a constant per row is enough:
 * log-softmax is shift-invariant, so logp0 stands in for the base logits). */
static qt_status output_logits(measure_ctx *c, const qt_tensor *w, const qt_tensor *q) {
    const int64_t ne0 = w->ne[0];
    float *a = malloc((size_t)ne0 * sizeof *a), *b = malloc((size_t)ne0 * sizeof *b);
    qt_status s = a && b ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
    for (int32_t v = 0; s == QT_OK && v < c->n_vocab; v++) {
        s = qt_dequantize_rows(w->type, (const uint8_t *)w->data + (size_t)v * qt_row_size(w->type, ne0), a, 1, ne0);
        if (s == QT_OK) s = qt_dequantize_rows(q->type, (const uint8_t *)q->data + (size_t)v * qt_row_size(q->type, ne0), b, 1, ne0);
        for (int64_t j = 0; s == QT_OK && j < ne0; j++) b[j] -= a[j];
        for (int64_t r = 0; s == QT_OK && r < c->rows; r++) {
            double d = 0;
            const float *h = c->h + r * ne0;
            for (int64_t j = 0; j < ne0; j++) d += (double)h[j] * (double)b[j];
            c->logits[r * c->n_vocab + v] = (float)(c->logp0[r * c->n_vocab + v] + d);
        }
    }
    free(a);
    free(b);
    return s;
}

/* Layer and linear of "blk.N.<linear>.weight" (layer -1 when the name is not a decoder linear). */
static int32_t linear_of(const char *name, char *linear, size_t cap) {
    int l = -1, end = 0;
    if (sscanf(name, "blk.%d.%n", &l, &end) != 1 || end <= 0) return -1;
    snprintf(linear, cap, "%s", name + end);
    char *dot = strrchr(linear, '.');
    if (!dot || strcmp(dot, ".weight")) return -1;
    *dot = '\0';
    return qt__layer_linear_find(linear) >= 0 ? l : -1;
}

/* The base model, every measured linear bound the way a measurement binds it back; captures h. */
static qt_status run_base(measure_ctx *c, const qt_quantize_mix *mx, const qt_quantize_plan *base) {
    qt_layerwise *lw;
    qt_status s = qt_layerwise_new(c->e, c->tg->tokens, c->tg->n_seq, c->tg->n_tok, &lw);
    if (s != QT_OK) return s;
    for (int32_t i = 0; s == QT_OK && i < mx->n; i++) {
        const qt_tensor *t = qt_model_find_tensor(c->m, base->tensors[mx->t[i].plan_index].name);
        char linear[QT_MAX_NAME];
        const int32_t layer = linear_of(t->name, linear, sizeof linear);
        if (layer >= 0) s = qt_layerwise_set_weight(lw, layer, linear, t);
    }
    for (int32_t il = 0; s == QT_OK && il < c->n_layer; il++) s = qt_layerwise_run_layer(lw, NULL, NULL);
    c->h_at = 0;
    if (s == QT_OK) s = qt_layerwise_logits_observed(lw, capture_output_input, c, c->logits);
    if (s == QT_OK && c->h_at != c->rows)
        s = qt_error(QT_ERR_INTERNAL, "measured sensitivity: the output's input rows were not all seen (%lld of %lld)",
                     (long long)c->h_at, (long long)c->rows);
    qt_layerwise_free(lw);
    for (int64_t r = 0; s == QT_OK && r < c->rows; r++) log_softmax(c->logits + r * c->n_vocab, c->n_vocab, c->logp0 + r * c->n_vocab);
    return s;
}

/* The model with the token embedding in q, then bound back to t. */
static qt_status run_embd(measure_ctx *c, const qt_tensor *t, const qt_tensor *q) {
    qt_status s = qt__engine_set_token_embd(c->e, q);
    if (s == QT_OK) s = run_model(c, 0, NULL, NULL, NULL);
    const qt_status b = qt__engine_set_token_embd(c->e, t);
    return s == QT_OK ? b : s;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static qt_status measure_all(measure_ctx *c, qt_quantize_mix *mx, const qt_quantize_plan *base, float *const *weights) {
    double *scratch = malloc((size_t)c->n_vocab * sizeof *scratch), *ratio = calloc((size_t)mx->n * 32 + 1, sizeof *ratio);
    bool *done = calloc((size_t)mx->n + 1, sizeof *done);
    qt_status s = scratch && ratio && done ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
    int32_t n_ratio = 0;
    for (int32_t i = 0; s == QT_OK && i < mx->n; i++) {
        const qt_tensor *t = qt_model_find_tensor(c->m, base->tensors[mx->t[i].plan_index].name);
        char linear[QT_MAX_NAME];
        const int32_t layer = linear_of(t->name, linear, sizeof linear);
        const bool out = !strcmp(t->name, "output.weight");
        const bool embd = !strcmp(t->name, "token_embd.weight") && qt_model_find_tensor(c->m, "output.weight");
        if (layer < 0 && !out && !embd) continue;
        for (int32_t k = 0; s == QT_OK && k < mx->t[i].n_options; k++) {
            qt_tensor q;
            uint8_t *buf = NULL;
            s = quantize_copy(t, mx->t[i].types[k], weights[i], &q, &buf);
            if (s == QT_OK) s = out ? output_logits(c, t, &q) : embd ? run_embd(c, t, &q) : run_model(c, layer, linear, &q, t);
            if (s == QT_OK) {
                const double proxy = mx->t[i].cost[k];
                mx->t[i].cost[k] = mean_kld(c, scratch);
                if (proxy > 0 && mx->t[i].cost[k] > 0) ratio[n_ratio++] = mx->t[i].cost[k] / proxy;
            }
            free(buf);
            if (s == QT_OK && qt_cancelled()) s = qt_error(QT_ERR_INTERRUPTED, "%s: interrupted", qt_model_path(c->m));
        }
        done[i] = true;
    }
    if (s == QT_OK && n_ratio) {
        qsort(ratio, (size_t)n_ratio, sizeof *ratio, cmp_double);
        const double scale = ratio[n_ratio / 2];
        for (int32_t i = 0; i < mx->n; i++)
            for (int32_t k = 0; !done[i] && k < mx->t[i].n_options; k++) mx->t[i].cost[k] *= scale;
    }
    free(scratch);
    free(ratio);
    free(done);
    return s;
}

qt_status qt__mix_measure(const qt_model *m, const qt_quantize_target *tg, int threads, qt_quantize_mix *mx,
                          const qt_quantize_plan *base, float *const *weights) {
    if (!tg->tokens || tg->n_seq < 1 || tg->n_tok < 2)
        return qt_error(QT_ERR_ARG, "--sensitivity measured needs calibration text (--calib FILE)");
    const qt_hparams *hp = qt_model_hparams(m);
    measure_ctx c = {.m = m, .tg = tg, .n_layer = hp->n_layer, .rows = (int64_t)tg->n_seq * tg->n_tok};
    qt_engine_opts eo;
    qt_engine_opts_default(&eo);
    eo.n_ctx = eo.n_batch = tg->n_tok;
    eo.n_threads = threads;
    eo.kv_type = QT_KV_TYPE_F32;
    qt_status s = qt_engine_new(m, &eo, &c.e);
    if (s != QT_OK) return s;
    c.n_vocab = qt_engine_n_vocab(c.e);
    c.n_embd = (int32_t)hp->n_embd;
    c.logp0 = malloc((size_t)c.rows * (size_t)c.n_vocab * sizeof *c.logp0);
    c.logits = malloc((size_t)c.rows * (size_t)c.n_vocab * sizeof *c.logits);
    c.h = malloc((size_t)c.rows * (size_t)c.n_embd * sizeof *c.h);
    if (!c.logp0 || !c.logits || !c.h) s = qt_error(QT_ERR_NOMEM, "out of memory");
    if (s == QT_OK) s = run_base(&c, mx, base);
    if (s == QT_OK) s = measure_all(&c, mx, base, weights);
    free(c.logp0);
    free(c.logits);
    free(c.h);
    qt_engine_free(c.e);
    return s;
}
