/* lib/eval/stats.c — the per-token comparison of a candidate with its base.
 *
 * Everything here is streamed: a position costs two log-softmaxes of n_vocab
 * doubles (scratch owned by the accumulator, nothing allocated per token)
 * and adds a handful of running sums plus one float (its KL divergence, kept
 * for the exact median / p99). No logits are stored, unlike llama.cpp's
 * --kl-divergence-base file. Formulas and intervals: docs/eval.md.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quanta/eval.h"

qt_status qt_eval_log_softmax(const float *logits, int32_t n, double *out) {
    if (n <= 0) return qt_error(QT_ERR_ARG, "log-softmax: empty row");
    double m = -INFINITY;
    for (int32_t i = 0; i < n; i++) {
        double x = logits[i];
        if (!isfinite(x)) return qt_error(QT_ERR_RANGE, "log-softmax: logit %d is %g", (int)i, x);
        if (x > m) m = x;
    }
    /* Shifting by the maximum keeps every exp() in (0, 1]: the sum is at
     * least 1, so its log is well conditioned (no overflow, no log(0)). */
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++) sum += exp((double)logits[i] - m);
    double lse = m + log(sum);
    for (int32_t i = 0; i < n; i++) out[i] = (double)logits[i] - lse;
    return QT_OK;
}

double qt_eval_kl_from_logprobs(const double *logp, const double *logq, int32_t n) {
    double kl = 0.0;
    for (int32_t i = 0; i < n; i++) {
        double p = exp(logp[i]);
        if (p > 0.0) kl += p * (logp[i] - logq[i]);
    }
    /* Mathematically >= 0 (Gibbs); rounding of near-identical rows can give -1e-17. */
    return kl > 0.0 ? kl : 0.0;
}

int32_t qt_eval_argmax(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

double qt_eval_quantile_sorted(const float *sorted, int64_t n, double q) {
    if (n <= 0) return NAN;
    if (q <= 0.0) return sorted[0];
    if (q >= 1.0) return sorted[n - 1];
    double h = q * (double)(n - 1);
    int64_t lo = (int64_t)floor(h);
    int64_t hi = lo + 1 < n ? lo + 1 : lo;
    double f = h - (double)lo;
    return (double)sorted[lo] + f * ((double)sorted[hi] - (double)sorted[lo]);
}

void qt_eval_wilson(int64_t k, int64_t n, double z, double *lo, double *hi) {
    if (n <= 0) { *lo = *hi = NAN; return; }
    double nn = (double)n, p = (double)k / nn, z2 = z * z;
    double denom = 1.0 + z2 / nn;
    double centre = (p + z2 / (2.0 * nn)) / denom;
    double half = z * sqrt(p * (1.0 - p) / nn + z2 / (4.0 * nn * nn)) / denom;
    *lo = fmax(0.0, centre - half);
    *hi = fmin(1.0, centre + half);
}

/* Welford's running mean and sum of squared deviations (Welford 1962): stable
 * for long streams where mean^2 >> variance. */
typedef struct running { int64_t n; double mean, m2; } running;

static void running_add(running *r, double x) {
    r->n++;
    double d = x - r->mean;
    r->mean += d / (double)r->n;
    r->m2 += d * (x - r->mean);
}

static double running_stderr(const running *r) {
    return r->n > 1 ? sqrt(r->m2 / (double)(r->n - 1) / (double)r->n) : NAN;
}

struct qt_eval_cmp {
    int32_t n_vocab;
    double *logp, *logq;        /* (n_vocab) scratch: base and candidate log-probabilities */
    /* llama-perplexity's sums, for its exact ppl and stderr */
    double nll_b, nll2_b, nll_c, nll2_c;
    running d;                  /* nll_c - nll_b per token */
    running kld;
    int64_t n_top1, n_halved;
    double kld_max;
    float *klds;                /* (cap) per-token KL for the quantiles */
    int64_t n, cap;
    /* per-chunk means of d and kld (batch means) */
    double chunk_d, chunk_kld;
    int64_t chunk_n;
    running chunk_means_d, chunk_means_kld;
};

qt_status qt_eval_cmp_new(int32_t n_vocab, qt_eval_cmp **out) {
    *out = NULL;
    if (n_vocab <= 0) return qt_error(QT_ERR_ARG, "eval: vocabulary size %d", (int)n_vocab);
    qt_eval_cmp *c = calloc(1, sizeof *c);
    if (!c) return qt_error(QT_ERR_NOMEM, "eval: out of memory");
    c->n_vocab = n_vocab;
    c->logp = malloc(sizeof(double) * (size_t)n_vocab);
    c->logq = malloc(sizeof(double) * (size_t)n_vocab);
    if (!c->logp || !c->logq) {
        qt_eval_cmp_free(c);
        return qt_error(QT_ERR_NOMEM, "eval: out of memory for %d-entry rows", (int)n_vocab);
    }
    *out = c;
    return QT_OK;
}

void qt_eval_cmp_free(qt_eval_cmp *c) {
    if (!c) return;
    free(c->logp);
    free(c->logq);
    free(c->klds);
    free(c);
}

qt_status qt_eval_cmp_reserve(qt_eval_cmp *c, int64_t n) {
    if (n <= c->cap) return QT_OK;
    float *k = realloc(c->klds, sizeof(float) * (size_t)n);
    if (!k) return qt_error(QT_ERR_NOMEM, "eval: out of memory for %lld per-token values", (long long)n);
    c->klds = k;
    c->cap = n;
    return QT_OK;
}

int64_t qt_eval_cmp_count(const qt_eval_cmp *c) { return c->n; }

/* Prefixes the log-softmax message with which row failed (copied first: the
 * message buffer is the destination too). */
static qt_status row_error(qt_status s, const char *which, int64_t index) {
    char why[256];
    snprintf(why, sizeof why, "%s", qt_last_error());
    return qt_error(s, "eval: %s logits of scored token %lld: %s", which, (long long)index, why);
}

qt_status qt_eval_cmp_add(qt_eval_cmp *c, const float *base_logits, const float *cand_logits, int32_t target) {
    if (target < 0 || target >= c->n_vocab)
        return qt_error(QT_ERR_ARG, "eval: target token %d outside the vocabulary (%d)", (int)target, (int)c->n_vocab);
    if (c->n == c->cap) {
        qt_status s = qt_eval_cmp_reserve(c, c->cap ? c->cap * 2 : 4096);
        if (s) return s;
    }
    qt_status s = qt_eval_log_softmax(base_logits, c->n_vocab, c->logp);
    if (s) return row_error(s, "base", c->n);
    s = qt_eval_log_softmax(cand_logits, c->n_vocab, c->logq);
    if (s) return row_error(s, "candidate", c->n);

    double nb = -c->logp[target], nc = -c->logq[target];
    c->nll_b += nb;
    c->nll2_b += nb * nb;
    c->nll_c += nc;
    c->nll2_c += nc * nc;
    running_add(&c->d, nc - nb);

    double kl = qt_eval_kl_from_logprobs(c->logp, c->logq, c->n_vocab);
    running_add(&c->kld, kl);
    if (kl > c->kld_max) c->kld_max = kl;
    c->klds[c->n++] = (float)kl;

    if (qt_eval_argmax(base_logits, c->n_vocab) == qt_eval_argmax(cand_logits, c->n_vocab)) c->n_top1++;
    /* q < p/2  <=>  log q < log p - ln 2 */
    if (c->logq[target] < c->logp[target] - M_LN2) c->n_halved++;

    c->chunk_d += nc - nb;
    c->chunk_kld += kl;
    c->chunk_n++;
    return QT_OK;
}

void qt_eval_cmp_end_chunk(qt_eval_cmp *c) {
    if (c->chunk_n == 0) return;
    running_add(&c->chunk_means_d, c->chunk_d / (double)c->chunk_n);
    running_add(&c->chunk_means_kld, c->chunk_kld / (double)c->chunk_n);
    c->chunk_d = c->chunk_kld = 0.0;
    c->chunk_n = 0;
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* llama-perplexity: ppl = exp(mean nll), stderr = ppl * sqrt((E[nll^2] - E[nll]^2) / (n-1)). */
static void ppl_from_sums(double sum, double sum2, int64_t n, double *ppl, double *se, double *mean) {
    double m = sum / (double)n, var = sum2 / (double)n - m * m;
    *mean = m;
    *ppl = exp(m);
    *se = (n > 1 && var > 0) ? *ppl * sqrt(var / (double)(n - 1)) : 0.0;
}

/* The standard error of a mean used for intervals: the per-token one, or the
 * batch-means one over chunks when there are enough chunks and it is larger
 * (tokens of one text are autocorrelated, so the per-token one is optimistic). */
#define QT_EVAL_MIN_CHUNKS_FOR_BATCH_SE 8
static double robust_stderr(const running *tok, const running *chunks) {
    double se = running_stderr(tok);
    if (chunks->n >= QT_EVAL_MIN_CHUNKS_FOR_BATCH_SE) {
        double sc = running_stderr(chunks);
        if (sc > se) se = sc;
    }
    return se;
}

qt_status qt_eval_cmp_summary(qt_eval_cmp *c, qt_eval_summary *o) {
    memset(o, 0, sizeof *o);
    if (c->n == 0) return qt_error(QT_ERR_ARG, "eval: no tokens were scored");
    qt_eval_cmp_end_chunk(c); /* a trailing partial chunk counts as one */
    int64_t n = c->n;
    o->n_tokens = n;
    o->n_chunks = (int32_t)c->chunk_means_d.n;
    ppl_from_sums(c->nll_b, c->nll2_b, n, &o->base_ppl, &o->base_ppl_stderr, &o->base_nll_mean);
    ppl_from_sums(c->nll_c, c->nll2_c, n, &o->ppl, &o->ppl_stderr, &o->nll_mean);

    o->ln_ratio = c->d.mean;
    double se = robust_stderr(&c->d, &c->chunk_means_d);
    o->ln_ratio_stderr = se;
    o->ppl_delta_pct = 100.0 * expm1(o->ln_ratio);
    double h = isfinite(se) ? QT_EVAL_Z95 * se : INFINITY;
    o->ppl_delta_pct_lo = 100.0 * expm1(o->ln_ratio - h);
    o->ppl_delta_pct_hi = 100.0 * expm1(o->ln_ratio + h);

    o->kld_mean = c->kld.mean;
    o->kld_stderr = robust_stderr(&c->kld, &c->chunk_means_kld);
    o->kld_mean_hi = o->kld_mean + (isfinite(o->kld_stderr) ? QT_EVAL_Z95 * o->kld_stderr : INFINITY);
    qsort(c->klds, (size_t)n, sizeof(float), cmp_float);
    o->kld_median = qt_eval_quantile_sorted(c->klds, n, 0.5);
    o->kld_p99 = qt_eval_quantile_sorted(c->klds, n, 0.99);
    o->kld_max = c->kld_max;

    o->top1 = (double)c->n_top1 / (double)n;
    qt_eval_wilson(c->n_top1, n, QT_EVAL_Z95, &o->top1_lo, &o->top1_hi);
    o->p_halved = (double)c->n_halved / (double)n;
    return QT_OK;
}
