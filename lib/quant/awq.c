/* lib/quant/awq.c — AWQ's scale search (Lin et al., MLSys 2024,
 * arXiv:2306.00978, §3.2 "searching to scale") and the folding helpers both
 * smoothing algorithms use (quanta/smooth.h).
 *
 * Where the paper leaves a choice this follows llm-compressor's AWQModifier
 * (and AutoAWQ): activation statistic mean |x_j|; duo scaling with the weight
 * magnitude relative to its quantization group; ratios 0 .. (n-1)/n; scales
 * normalised by sqrt(max * min). quanta measures the candidate's loss through
 * the input's Hessian instead of re-running the linears on the tokens
 * (sum_i dw_i H dw_i^T / 2 = mean_t ||dW x_t||^2 exactly), so a ratio costs
 * rows x cols^2 whatever the number of calibration tokens, and adds s = 1 as
 * a candidate (docs/awq.md).
 */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/blas.h"
#include "quanta/smooth.h"

qt_status qt_act_stats_init(qt_act_stats *a, int64_t n) {
    *a = (qt_act_stats){.n = n};
    a->abs_sum = calloc((size_t)n, sizeof *a->abs_sum);
    a->abs_max = calloc((size_t)n, sizeof *a->abs_max);
    if (!a->abs_sum || !a->abs_max) {
        qt_act_stats_free(a);
        return qt_error(QT_ERR_NOMEM, "smooth: out of memory for %lld channel statistics", (long long)n);
    }
    return QT_OK;
}

void qt_act_stats_add(qt_act_stats *a, const float *x, int64_t n_rows) {
    for (int64_t t = 0; t < n_rows; t++) {
        const float *r = x + t * a->n;
        for (int64_t j = 0; j < a->n; j++) {
            const float v = fabsf(r[j]);
            a->abs_sum[j] += v;
            if (v > a->abs_max[j]) a->abs_max[j] = v;
        }
    }
    a->n_rows += n_rows;
}

void qt_act_stats_mean(const qt_act_stats *a, float *out) {
    for (int64_t j = 0; j < a->n; j++) out[j] = a->n_rows ? (float)(a->abs_sum[j] / (double)a->n_rows) : 0.0f;
}

void qt_act_stats_free(qt_act_stats *a) {
    free(a->abs_sum);
    free(a->abs_max);
    *a = (qt_act_stats){0};
}

void qt_awq_weight_sum(const float *W, int64_t rows, int64_t cols, int64_t group, double *sum) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t g0 = 0; g0 < cols; g0 += group) {
            const float *w = W + i * cols + g0;
            float m = 0;
            for (int64_t j = 0; j < group; j++) m = fmaxf(m, fabsf(w[j]));
            const double d = (double)m + 1e-6; /* llm-compressor's epsilon: an all-zero group stays 0 */
            for (int64_t j = 0; j < group; j++) sum[g0 + j] += fabsf(w[j]) / d;
        }
}

void qt_awq_scales(const float *x, const float *w, int64_t n, double ratio, float *s) {
    float lo = INFINITY, hi = 0;
    for (int64_t j = 0; j < n; j++) {
        double v = pow((double)x[j], ratio);
        if (w) v /= pow((double)w[j], 1.0 - ratio) + 1e-4;
        s[j] = (float)(v < 1e-4 ? 1e-4 : v);
        lo = fminf(lo, s[j]);
        hi = fmaxf(hi, s[j]);
    }
    const float norm = sqrtf(hi * lo);
    for (int64_t j = 0; j < n; j++) s[j] /= norm;
}

#define ERR_COLS 256 /* columns per panel of the error's Gram matrix: a fixed split (the same bits at any
                      * thread count); each panel is one sgemm of 256 x (cols - c0) x rows */

/* The loss as tr(E H E^T) / 2 = <E^T E, H> / 2 with E = W - Q (rows, cols): the Gram matrix E^T E
 * is symmetric, so only its upper triangle is computed, in panels of ERR_COLS columns (panel p:
 * rows [c0, c0 + P) of E^T E from column c0 on, one float sgemm over all of E's rows), and each
 * panel's entries are multiplied by H's (double) and summed in double: the diagonal block once,
 * the part right of it twice. That is rows x cols^2 (1 + P / cols) flops per candidate, half of
 * the (W - Q) H product's 2 rows x cols^2 that this replaced (docs/awq.md "Time"), with no float
 * copy of H (cols^2 x 4 bytes: 256 MiB for ffn_down's 8192). A panel's float entries sum `rows`
 * products (an error ~1e-6 relative), far below the differences between candidates; the panels'
 * sums are added in panel order, whatever thread made each. llm-compressor's loss is itself a
 * float32 MSE of the module's output. */
typedef struct err_job {
    const float *E;           /* (rows, cols) W - Q */
    int64_t rows, cols, n_panels;
    const double *H;          /* (cols, cols) */
    float *scratch;           /* (threads, ERR_COLS, cols) */
    double *part;             /* (n_panels) */
} err_job;

static void err_panel(const err_job *j, int64_t p, float *G) {
    const int64_t C = j->cols, c0 = p * ERR_COLS, P = C - c0 < ERR_COLS ? C - c0 : ERR_COLS, N = C - c0;
    /* G (P, N) = E[:, c0 : c0 + P]^T E[:, c0 : C] */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)P, (int)N, (int)j->rows, 1.0f, j->E + c0, (int)C,
                j->E + c0, (int)C, 0.0f, G, (int)N);
    double e = 0;
    for (int64_t a = 0; a < P; a++) {
        const float *g = G + a * N;
        const double *h = j->H + (c0 + a) * C + c0;
        double diag = 0, right = 0;
        for (int64_t b = 0; b < P; b++) diag += (double)g[b] * h[b];
        for (int64_t b = P; b < N; b++) right += (double)g[b] * h[b];
        e += diag + 2 * right;
    }
    j->part[p] = e;
}

/* Units [begin, end): unit u is panels u and n_panels - 1 - u (a long and a short one: balanced). */
static void err_units(void *ctx, int64_t begin, int64_t end, int thread) {
    const err_job *j = ctx;
    float *G = j->scratch + (size_t)thread * ERR_COLS * (size_t)j->cols;
    for (int64_t u = begin; u < end; u++) {
        err_panel(j, u, G);
        if (j->n_panels - 1 - u != u) err_panel(j, j->n_panels - 1 - u, G);
    }
}

/* The loss of E = W - Q (rows, cols) against H; NAN when out of memory. */
static double output_error(const float *E, int64_t rows, int64_t cols, const double *H, qt_threadpool *pool) {
    const int64_t n_panels = (cols + ERR_COLS - 1) / ERR_COLS, threads = pool ? qt_threadpool_size(pool) : 1;
    const int64_t P = cols < ERR_COLS ? cols : ERR_COLS;
    err_job j = {E, rows, cols, n_panels, H, malloc((size_t)threads * (size_t)(P * cols) * sizeof(float)),
                 malloc((size_t)n_panels * sizeof(double))};
    double e = NAN;
    if (j.scratch && j.part) {
        qt__blas_pin(); /* one thread: the same bits at any --threads (quanta/gptq.h); lib/core/blas.c */
        qt_parallel_for(pool, (n_panels + 1) / 2, err_units, &j);
        e = 0;
        for (int64_t p = 0; p < n_panels; p++) e += j.part[p]; /* in panel order, whatever thread made each */
        e /= 2;
    }
    free(j.scratch);
    free(j.part);
    return e;
}

double qt_awq_output_error(const float *W, const float *Q, int64_t rows, int64_t cols, const double *H) {
    float *E = malloc((size_t)(rows * cols) * sizeof *E);
    if (!E) return NAN;
    for (int64_t i = 0; i < rows * cols; i++) E[i] = W[i] - Q[i];
    const double e = output_error(E, rows, cols, H, NULL);
    free(E);
    return e;
}

/* The summed output error of every linear quantized with scales s (NULL: 1). */
static qt_status loss_at(const qt_awq_problem *p, const float *s, float *buf, double *loss) {
    *loss = 0;
    for (int k = 0; k < p->n_linears; k++) {
        const int64_t rows = p->rows[k], cols = p->cols;
        const float *W = p->W[k];
        memcpy(buf, W, (size_t)(rows * cols) * sizeof *buf);
        if (s) qt_smooth_scale_cols(buf, rows, cols, s);
        qt_status st = p->quant(p->quant_ctx, k, buf, rows, cols);
        if (st != QT_OK) return st;
        /* the error W - Q, back in the unscaled input's coordinates: Q(W s) / s */
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++)
                buf[i * cols + j] = W[i * cols + j] - (s ? buf[i * cols + j] / s[j] : buf[i * cols + j]);
        const double e = output_error(buf, rows, cols, p->H, p->pool);
        if (isnan(e)) return qt_error(QT_ERR_NOMEM, "awq: out of memory for the output error");
        *loss += e;
    }
    return QT_OK;
}

qt_status qt_awq_search(const qt_awq_problem *p, float *s, qt_awq_result *r) {
    const int64_t n = p->cols;
    int64_t max_rows = 0, total_rows = 0;
    for (int k = 0; k < p->n_linears; k++) {
        max_rows = p->rows[k] > max_rows ? p->rows[k] : max_rows;
        total_rows += p->rows[k];
    }
    if (p->n_linears < 1 || n < 1 || p->n_grid < 1)
        return qt_error(QT_ERR_ARG, "awq: %d linears of %lld inputs, grid %d", p->n_linears, (long long)n, p->n_grid);
    float *buf = malloc((size_t)(max_rows * n) * sizeof *buf), *cand = malloc((size_t)n * sizeof *cand);
    float *wm = p->duo ? malloc((size_t)n * sizeof *wm) : NULL;
    double *wsum = p->duo ? calloc((size_t)n, sizeof *wsum) : NULL;
    qt_status st = buf && cand && (!p->duo || (wm && wsum)) ? QT_OK : qt_error(QT_ERR_NOMEM, "awq: out of memory");
    if (st == QT_OK && p->duo) {
        for (int k = 0; k < p->n_linears; k++) qt_awq_weight_sum(p->W[k], p->rows[k], n, p->group[k], wsum);
        for (int64_t j = 0; j < n; j++) wm[j] = (float)(wsum[j] / (double)total_rows);
    }
    double best = INFINITY;
    if (st == QT_OK) st = loss_at(p, NULL, buf, &best);
    r->loss_rtn = best;
    r->ratio = -1;
    for (int64_t j = 0; j < n; j++) s[j] = 1.0f;
    for (int g = 0; st == QT_OK && g < p->n_grid; g++) {
        const double ratio = (double)g / p->n_grid;
        double loss;
        qt_awq_scales(p->x_mean, wm, n, ratio, cand);
        if ((st = loss_at(p, cand, buf, &loss)) != QT_OK) break;
        if (loss < best) { /* strictly lower: the first of equal candidates wins */
            best = loss;
            r->ratio = ratio;
            memcpy(s, cand, (size_t)n * sizeof *s);
        }
    }
    r->loss = best;
    free(buf);
    free(cand);
    free(wm);
    free(wsum);
    return st;
}

/* ---- folding --------------------------------------------------------------------------- */

void qt_smooth_scale_cols(float *W, int64_t rows, int64_t cols, const float *s) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) W[i * cols + j] *= s[j];
}

void qt_smooth_unscale_rows(float *W, int64_t rows, int64_t cols, const float *s) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) W[i * cols + j] /= s[i];
}

void qt_smooth_hessian(double *H, int64_t n, const float *s) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) H[i * n + j] /= (double)s[i] * (double)s[j];
}
