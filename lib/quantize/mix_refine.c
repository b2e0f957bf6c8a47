/* lib/quantize/mix_refine.c — the refinement after a --target-size allocation
 * (docs/quantize.md "Target size", "Refinement"). The knapsack adds per-tensor
 * costs; the quantization errors of different tensors interact, so the sum is
 * only a prediction. This step measures the whole mix: the mean KL divergence
 * per token, KL(base || mix), of the next-token distribution on the
 * calibration sequences, every chosen tensor quantized at once, and then tries
 * single swaps (one tensor one frontier step up, another one step down, or one
 * step up alone where the budget has room), the few of least predicted cost
 * first, keeping a swap only when the measured KL divergence falls. Greedy
 * local search on the measured objective, as in HAWQ-V3's / mlx-lm
 * dynamic_quant's "measure the mix, then adjust" loops.
 *
 * Decoder linears and an untied token embedding are rebound in the engine; the
 * output projection (the token embedding where tied) is applied here to the
 * final norm's output rows the engine shows (logits = H Wq^T, in double: each
 * logit summed in the order of the width, tokens in SIMD lanes on the engine's
 * threads, lib/quantize/mix_delta.h), the
 * base model's logits the same way from its own weights, so base and mix share
 * one arithmetic. The weights are quantized by round to nearest with the run's
 * importance weights; with --algo gptq the decoder linears by GPTQ, each on the
 * base model's Hessian of its input (lib/quantize/mix_gptq.c: the run's own
 * sequential order, each layer's Hessian after the earlier layers were
 * quantized, would be a GPTQ run per trial). Every run is
 * the engine's, deterministic at any thread count; the swaps are tried in a
 * fixed order, so the result is too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "mix_delta.h"
#include "quantize_internal.h"

#define MAX_TRIES 12                 /* swaps measured per round */
#define LOGP_CAP ((int64_t)64 << 20) /* base log-probabilities kept: 64 Mi doubles (512 MiB) at most */

typedef struct slot {                /* one (tensor, option) quantized copy, made when first needed */
    qt_tensor t;
    uint8_t *data;
} slot;

typedef struct refine_ctx {
    const qt_model *m;
    qt_engine_ctx *e;
    qt_quantize_mix *mx;
    const qt_quantize_plan *base;
    float *const *weights;
    const int32_t *tokens;
    int32_t n_seq, n_tok, n_layer, n_vocab, n_embd;
    int64_t rows;
    const qt_tensor **src;           /* (mx->n) the model's tensor */
    int32_t *layer;                  /* (mx->n) decoder layer of a linear, else -1 */
    char (*linear)[QT_MAX_NAME];     /* (mx->n) its linear name */
    int32_t i_out, i_embd;           /* the output projection's / token embedding's index, -1: none */
    bool tied;                       /* the token embedding is the output projection too */
    slot *slots;                     /* (mx->n * MAX_OPT) */
    double *logp0;                   /* (rows, n_vocab) base log-probabilities */
    float *h;                        /* (rows, n_embd) the output projection's input */
    int64_t h_at;
    float *wout;                     /* (n_vocab, n_embd) the output projection, dequantized */
    double *row;                     /* (n_vocab) */
    float *proj_ht;                  /* (n_embd, PROJ_TOK) a block of H transposed */
    double *proj;                    /* (n_vocab, PROJ_TOK) its logits */
    qt__mix_gptq *gq;                /* --algo gptq: GPTQ's copies (lib/quantize/mix_gptq.c); NULL: round to nearest */
} refine_ctx;

#define SLOT(c, i, k) (&(c)->slots[(size_t)(i) * (QT_QUANTIZE_MIX_N_DEFAULT + 12) + (size_t)(k)])

static void see_output(void *user, int32_t layer, const char *linear, const float *x, int32_t n_tokens, int32_t n_in) {
    refine_ctx *c = user;
    if (layer != -1 || strcmp(linear, "output") || n_in != c->n_embd || c->h_at + n_tokens > c->rows) return;
    memcpy(c->h + c->h_at * n_in, x, (size_t)n_tokens * (size_t)n_in * sizeof(float));
    c->h_at += n_tokens;
}

/* Tensor i in option k (k < 0: as stored), quantized as the run quantizes it. */
static qt_status tensor_in(refine_ctx *c, int32_t i, int32_t k, const qt_tensor **out) {
    if (k < 0) { *out = c->src[i]; return QT_OK; }
    slot *s = SLOT(c, i, k);
    if (!s->data) {
        const qt_tensor *t = c->src[i];
        const qt_type ty = c->mx->t[i].types[k];
        const int64_t ne0 = t->ne[0], n_rows = (int64_t)(t->nbytes / qt_row_size(t->type, ne0));
        const int64_t per = t->ne[1] > 0 ? t->ne[1] : 1, n_exp = t->ne[2] > 1 ? t->ne[2] : 1;
        const size_t row = qt_row_size(ty, ne0), src_row = qt_row_size(t->type, ne0);
        float *x = c->gq ? NULL : malloc((size_t)ne0 * sizeof *x);
        uint8_t *d = c->gq ? NULL : malloc((size_t)n_rows * row + 1);
        qt_status st = c->gq ? qt__mix_gptq_copy(c->gq, t, ty, &d) : x && d ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
        for (int64_t r = 0; !c->gq && st == QT_OK && r < n_rows; r++) {
            const float *w = c->weights[i] ? c->weights[i] + (r / per % n_exp) * ne0 : NULL;
            st = qt_dequantize_rows(t->type, (const uint8_t *)t->data + (size_t)r * src_row, x, 1, ne0);
            if (st == QT_OK) st = qt_quantize_rows(ty, x, d + (size_t)r * row, 1, ne0, w);
        }
        free(x);
        if (st != QT_OK) { free(d); return st; }
        s->t = *t;
        s->t.type = ty;
        s->t.data = d;
        s->t.nbytes = (size_t)n_rows * row;
        s->data = d;
    }
    *out = &s->t;
    return QT_OK;
}

/* The output projection of a block of PROJ_TOK rows, PROJ_ROWS rows of the vocabulary per kernel call
 * (lib/quantize/mix_delta.h: the sums of the loop it replaced, `d += (double)h[j] * (double)w[j]`, bit
 * for bit), on the engine's threads: each logit from its own row and token only. */
enum { PROJ_TOK = 64, PROJ_ROWS = 16 };

typedef struct proj_job {
    const float *ht;        /* (ne0, n_tok) the block's rows of H transposed */
    int32_t n_tok;
    int64_t ne0;
    const float *w;         /* (n_vocab, ne0) */
    double *d;              /* (n_vocab, n_tok) */
    qt__mix_delta_fn kernel;
} proj_job;

static void proj_range(void *ctx, int64_t v0, int64_t v1, int th) {
    (void)th;
    const proj_job *j = ctx;
    for (int64_t v = v0; v < v1; v += PROJ_ROWS)
        j->kernel(j->ht, j->n_tok, j->ne0, j->w + v * j->ne0, (int32_t)(v1 - v < PROJ_ROWS ? v1 - v : PROJ_ROWS),
                  j->d + v * j->n_tok);
}

/* Runs the model with tensor i in option choice[i] (NULL: the base model); the mean KL
 * divergence per token against the base into *kld (the base: fills logp0). */
static qt_status run_mix(refine_ctx *c, const int32_t *choice, double *kld) {
    qt_layerwise *lw;
    qt_status s = qt_layerwise_new(c->e, c->tokens, c->n_seq, c->n_tok, &lw);
    if (s != QT_OK) return s;
    for (int32_t i = 0; s == QT_OK && i < c->mx->n; i++) {
        const qt_tensor *t;
        s = tensor_in(c, i, choice ? choice[i] : -1, &t);
        if (s == QT_OK && c->layer[i] >= 0) s = qt_layerwise_set_weight(lw, c->layer[i], c->linear[i], t);
        /* A tied embedding cannot be rebound in the engine (it is the output too): its output
         * role is applied below in its chosen type, its lookup stays the base's, as in
         * mix_measure.c's whole-mix check. */
        if (s == QT_OK && i == c->i_embd && !c->tied) s = qt__engine_set_token_embd(c->e, t);
    }
    for (int32_t il = 0; s == QT_OK && il < c->n_layer; il++) s = qt_layerwise_run_layer(lw, NULL, NULL);
    c->h_at = 0;
    /* the engine's own logits are not used: the output projection is applied below */
    float *scratch = s == QT_OK ? malloc((size_t)c->rows * (size_t)c->n_vocab * sizeof *scratch) : NULL;
    if (s == QT_OK && !scratch) s = qt_error(QT_ERR_NOMEM, "out of memory");
    if (s == QT_OK) s = qt_layerwise_logits_observed(lw, see_output, c, scratch);
    free(scratch);
    qt_layerwise_free(lw);
    if (s == QT_OK && c->h_at != c->rows)
        s = qt_error(QT_ERR_INTERNAL, "mix refinement: %lld of %lld output rows seen", (long long)c->h_at, (long long)c->rows);
    const int32_t io = c->i_out >= 0 ? c->i_out : c->i_embd;
    const qt_tensor *wo = NULL;
    if (s == QT_OK) s = io >= 0 ? tensor_in(c, io, choice ? choice[io] : -1, &wo)
                                : qt_error(QT_ERR_ARG, "mix refinement: the model has no output projection among the mixed tensors");
    if (s == QT_OK) s = qt_dequantize_rows(wo->type, (const uint8_t *)wo->data, c->wout, c->n_vocab, c->n_embd);
    double total = 0;
    proj_job pj = {.ne0 = c->n_embd, .w = c->wout, .d = c->proj, .ht = c->proj_ht, .kernel = qt__mix_delta_kernel()};
    for (int64_t r = 0; s == QT_OK && r < c->rows; r++) {
        const int32_t rr = (int32_t)(r % PROJ_TOK);
        if (rr == 0) { /* the next block of rows' logits, every one a dot product in double in the order of j */
            pj.n_tok = (int32_t)(c->rows - r < PROJ_TOK ? c->rows - r : PROJ_TOK);
            for (int32_t t = 0; t < pj.n_tok; t++)
                for (int32_t j = 0; j < c->n_embd; j++) c->proj_ht[(size_t)j * pj.n_tok + t] = c->h[(r + t) * c->n_embd + j];
            qt_parallel_for_balanced(c->e->pool, c->n_vocab, PROJ_ROWS * 8, proj_range, &pj);
        }
        double mx = -INFINITY, sum = 0;
        for (int32_t v = 0; v < c->n_vocab; v++) {
            const double d = c->proj[(size_t)v * pj.n_tok + rr];
            c->row[v] = d;
            if (d > mx) mx = d;
        }
        for (int32_t v = 0; v < c->n_vocab; v++) sum += exp(c->row[v] - mx);
        const double lse = mx + log(sum);
        double *l0 = c->logp0 + r * c->n_vocab, kl = 0;
        for (int32_t v = 0; v < c->n_vocab; v++) {
            const double lp = c->row[v] - lse;
            if (!choice) l0[v] = lp;
            else kl += exp(l0[v]) * (l0[v] - lp);
        }
        total += kl > 0 ? kl : 0;
    }
    *kld = total / (double)c->rows;
    return s;
}

static uint64_t opt_bytes(const qt_quantize_mix *mx, int32_t i, int32_t k, uint32_t align) {
    const uint64_t b = mx->t[i].bytes[k];
    return align ? (b + align - 1) / align * align : b;
}

/* Option of tensor i one step along its Pareto frontier from k (dir +1: bigger and cheaper, -1:
 * smaller and dearer); -1 where there is none. */
static int32_t step(const qt_quantize_mix *mx, int32_t i, int32_t k, int dir, uint32_t align) {
    const qt_quantize_mix_tensor *t = &mx->t[i];
    int32_t best = -1;
    for (int32_t o = 0; o < t->n_options; o++) {
        const uint64_t bo = opt_bytes(mx, i, o, align), bk = opt_bytes(mx, i, k, align);
        if (dir > 0 ? !(bo > bk && t->cost[o] < t->cost[k]) : !(bo < bk && t->cost[o] > t->cost[k])) continue;
        if (best < 0) { best = o; continue; }
        const uint64_t bb = opt_bytes(mx, i, best, align);
        /* the nearest in bytes; among equal sizes the cheaper */
        if (dir > 0 ? (bo < bb || (bo == bb && t->cost[o] < t->cost[best])) : (bo > bb || (bo == bb && t->cost[o] < t->cost[best])))
            best = o;
    }
    return best;
}

typedef struct swap { int32_t up, up_to, down, down_to; double delta; } swap;

static int cmp_swap(const void *a, const void *b) {
    const swap *x = a, *y = b;
    if (x->delta != y->delta) return x->delta < y->delta ? -1 : 1;
    if (x->up != y->up) return x->up - y->up;
    return x->down - y->down;
}

static qt_status refine(refine_ctx *c, int32_t rounds, uint64_t budget, uint32_t align) {
    qt_quantize_mix *mx = c->mx;
    const int32_t n = mx->n;
    int32_t *cur = malloc((size_t)n * sizeof *cur), *trial = malloc((size_t)n * sizeof *trial);
    swap *sw = malloc(((size_t)n * (size_t)(n + 1) + 1) * sizeof *sw);
    qt_status s = cur && trial && sw ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
    double base_kld = 0, now = 0;
    uint64_t used = 0;
    for (int32_t i = 0; s == QT_OK && i < n; i++) cur[i] = mx->t[i].chosen, used += opt_bytes(mx, i, cur[i], align);
    if (s == QT_OK) s = run_mix(c, NULL, &base_kld);
    if (s == QT_OK) s = run_mix(c, cur, &now);
    mx->refine_kld_before = now;
    mx->refine_swaps = 0;
    for (int32_t r = 0; s == QT_OK && r < rounds; r++) {
        int64_t n_sw = 0;
        for (int32_t i = 0; i < n; i++) {
            const int32_t up = step(mx, i, cur[i], +1, align);
            if (up < 0) continue;
            const uint64_t add = opt_bytes(mx, i, up, align) - opt_bytes(mx, i, cur[i], align);
            const double gain = mx->t[i].cost[up] - mx->t[i].cost[cur[i]];
            if (used + add <= budget) sw[n_sw++] = (swap){i, up, -1, -1, gain};
            for (int32_t j = 0; j < n; j++) {
                const int32_t dn = j == i ? -1 : step(mx, j, cur[j], -1, align);
                if (dn < 0) continue;
                const uint64_t freed = opt_bytes(mx, j, cur[j], align) - opt_bytes(mx, j, dn, align);
                if (used + add - freed > budget) continue; /* freed <= used */
                sw[n_sw++] = (swap){i, up, j, dn, gain + mx->t[j].cost[dn] - mx->t[j].cost[cur[j]]};
            }
        }
        qsort(sw, (size_t)n_sw, sizeof *sw, cmp_swap);
        int64_t best = -1;
        double best_kld = now;
        for (int64_t k = 0; s == QT_OK && k < n_sw && k < MAX_TRIES; k++) {
            memcpy(trial, cur, (size_t)n * sizeof *trial);
            trial[sw[k].up] = sw[k].up_to;
            if (sw[k].down >= 0) trial[sw[k].down] = sw[k].down_to;
            double kld = 0;
            s = run_mix(c, trial, &kld);
            if (s == QT_OK && kld < best_kld) best_kld = kld, best = k;
            if (s == QT_OK && qt_cancelled()) s = qt_error(QT_ERR_INTERRUPTED, "%s: interrupted", qt_model_path(c->m));
        }
        if (s != QT_OK || best < 0) break;
        const swap *b = &sw[best];
        used += opt_bytes(mx, b->up, b->up_to, align) - opt_bytes(mx, b->up, cur[b->up], align);
        cur[b->up] = b->up_to;
        if (b->down >= 0) {
            used -= opt_bytes(mx, b->down, cur[b->down], align) - opt_bytes(mx, b->down, b->down_to, align);
            cur[b->down] = b->down_to;
        }
        now = best_kld;
        mx->refine_swaps++;
    }
    if (s == QT_OK) {
        mx->refine_kld_after = now;
        mx->predicted_cost = 0;
        mx->used_bytes = used;
        for (int32_t i = 0; i < n; i++) mx->t[i].chosen = cur[i], mx->predicted_cost += mx->t[i].cost[cur[i]];
    }
    free(cur);
    free(trial);
    free(sw);
    return s;
}

/* Layer and linear of "blk.N.LINEAR.weight"; -1 when it is no decoder linear. */
static int32_t decoder_linear(const char *name, char *linear) {
    int layer = -1, at = 0;
    if (sscanf(name, "blk.%d.%n", &layer, &at) != 1 || at <= 0) return -1;
    const char *rest = name + at, *dot = strrchr(rest, '.');
    if (!dot || strcmp(dot, ".weight") || (size_t)(dot - rest) >= QT_MAX_NAME) return -1;
    memcpy(linear, rest, (size_t)(dot - rest));
    linear[dot - rest] = '\0';
    return qt__layer_linear_find(linear) >= 0 ? layer : -1;
}

qt_status qt__mix_refine(const qt_model *m, const qt_quantize_target *tg, int threads, qt_quantize_mix *mx,
                         const qt_quantize_plan *base, float *const *weights, uint64_t budget, uint32_t align) {
    if (tg->refine_rounds <= 0) return QT_OK;
    if (!tg->tokens || tg->n_seq < 1 || tg->n_tok < 2)
        return qt_error(QT_ERR_ARG, "the mix refinement needs calibration text (--calib FILE)");
    const qt_hparams *hp = qt_model_hparams(m);
    refine_ctx c = {.m = m, .mx = mx, .base = base, .weights = weights, .tokens = tg->tokens, .n_seq = tg->n_seq,
                    .n_tok = tg->n_tok, .n_layer = hp->n_layer, .n_embd = (int32_t)hp->n_embd, .i_out = -1, .i_embd = -1};
    qt_engine_opts eo;
    qt_engine_opts_default(&eo);
    eo.n_ctx = eo.n_batch = tg->n_tok;
    eo.n_threads = threads;
    eo.kv_type = QT_KV_TYPE_F32;
    qt_status s = qt_engine_new(m, &eo, &c.e);
    if (s == QT_OK && tg->gptq) s = qt__mix_gptq_new(m, tg, threads, &c.gq);
    if (s != QT_OK) { if (c.e) qt_engine_free(c.e); return s; }
    c.n_vocab = qt_engine_n_vocab(c.e);
    /* the base distribution is kept whole: as many sequences as fit LOGP_CAP */
    while (c.n_seq > 1 && (int64_t)c.n_seq * c.n_tok * c.n_vocab > LOGP_CAP) c.n_seq--;
    c.rows = (int64_t)c.n_seq * c.n_tok;
    c.tied = qt_model_find_tensor(m, "output.weight") == NULL;
    c.src = calloc((size_t)mx->n + 1, sizeof *c.src);
    c.layer = calloc((size_t)mx->n + 1, sizeof *c.layer);
    c.linear = calloc((size_t)mx->n + 1, sizeof *c.linear);
    c.slots = calloc((size_t)mx->n * (QT_QUANTIZE_MIX_N_DEFAULT + 12) + 1, sizeof *c.slots);
    c.logp0 = malloc((size_t)c.rows * (size_t)c.n_vocab * sizeof *c.logp0);
    c.h = malloc((size_t)c.rows * (size_t)c.n_embd * sizeof *c.h);
    c.wout = malloc((size_t)c.n_vocab * (size_t)c.n_embd * sizeof *c.wout);
    c.row = malloc((size_t)c.n_vocab * sizeof *c.row);
    c.proj_ht = malloc((size_t)c.n_embd * PROJ_TOK * sizeof *c.proj_ht);
    c.proj = malloc((size_t)c.n_vocab * PROJ_TOK * sizeof *c.proj);
    if (!c.src || !c.layer || !c.linear || !c.slots || !c.logp0 || !c.h || !c.wout || !c.row || !c.proj_ht || !c.proj)
        s = qt_error(QT_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; s == QT_OK && i < mx->n; i++) {
        c.src[i] = qt_model_find_tensor(m, base->tensors[mx->t[i].plan_index].name);
        c.layer[i] = decoder_linear(c.src[i]->name, c.linear[i]);
        if (!strcmp(c.src[i]->name, "output.weight")) c.i_out = i;
        if (!strcmp(c.src[i]->name, "token_embd.weight")) c.i_embd = i;
    }
    const int32_t io = c.i_out >= 0 ? c.i_out : c.tied ? c.i_embd : -1;
    if (s == QT_OK && (io < 0 || c.src[io]->ne[0] != c.n_embd || c.src[io]->ne[1] != c.n_vocab))
        s = qt_error(QT_ERR_ARG, "%s: the mix refinement needs the output projection (%d x %d) among the mixed tensors",
                     qt_model_path(m), c.n_embd, c.n_vocab);
    if (s == QT_OK) s = refine(&c, tg->refine_rounds, budget, align);
    qt_engine_free(c.e);
    qt__mix_gptq_free(c.gq);
    for (size_t k = 0; c.slots && k < (size_t)mx->n * (QT_QUANTIZE_MIX_N_DEFAULT + 12); k++) free(c.slots[k].data);
    free(c.src); free(c.layer); free(c.linear); free(c.slots);
    free(c.logp0); free(c.h); free(c.wout); free(c.row); free(c.proj_ht); free(c.proj);
    return s;
}
