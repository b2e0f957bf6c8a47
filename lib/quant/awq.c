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

#define ERR_ROWS 256 /* rows per unit of the output error: a fixed split (the same bits at any thread count);
                      * sgemm ran at 51-66 GFLOP per CPU second on 64 rows, 78 on 256 (docs/awq.md "Time") */

/* The loss in float: W - Q and H (whole: both triangles) to float, one sgemm per unit, each
 * unit's products summed in double. The search compares 21 such losses per folding pair (about
 * 9 TFLOP per layer of the 1B shape); dsymm on 64-row units ran at 30-34 GFLOP per CPU second
 * where sgemm on 256-row units runs at 78 (docs/awq.md "Time"). llm-compressor's loss is a float32
 * MSE of the module's output. A unit's float error is ~1e-7 relative (cols terms per product),
 * far below the differences between candidates. */
typedef struct err_job {
    const float *W, *Q;
    int64_t rows, cols;
    const float *H;
    float *d, *dh;            /* (rows, cols), (rows, cols) */
    double *part;             /* (units) */
} err_job;

/* Units [begin, end): each its rows' (w - q) H (w - q)^T, one sgemm, summed into part[unit]. */
static void err_units(void *ctx, int64_t begin, int64_t end, int thread) {
    const err_job *j = ctx;
    const int64_t C = j->cols;
    (void)thread;
    for (int64_t u = begin; u < end; u++) {
        const int64_t r0 = u * ERR_ROWS, m = j->rows - r0 < ERR_ROWS ? j->rows - r0 : ERR_ROWS;
        float *d = j->d + r0 * C, *dh = j->dh + r0 * C;
        for (int64_t i = 0; i < m * C; i++) d[i] = j->W[r0 * C + i] - j->Q[r0 * C + i];
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)C, (int)C, 1.0f, d, (int)C, j->H, (int)C, 0.0f,
                    dh, (int)C);
        double e = 0;
        for (int64_t i = 0; i < m * C; i++) e += (double)d[i] * (double)dh[i];
        j->part[u] = e;
    }
}

static double output_error(const float *W, const float *Q, int64_t rows, int64_t cols, const float *H,
                           qt_threadpool *pool) {
    const int64_t units = (rows + ERR_ROWS - 1) / ERR_ROWS;
    err_job j = {W, Q, rows, cols, H, malloc((size_t)(rows * cols) * sizeof(float)),
                 malloc((size_t)(rows * cols) * sizeof(float)), malloc((size_t)(units + 1) * sizeof(double))};
    double e = NAN;
    if (j.d && j.dh && j.part) {
        qt__blas_pin(); /* one thread: the same bits at any --threads (quanta/gptq.h); lib/core/blas.c */
        qt_parallel_for(pool, units, err_units, &j);
        e = 0;
        for (int64_t u = 0; u < units; u++) e += j.part[u]; /* in unit order, whatever thread made each */
        e /= 2;
    }
    free(j.d);
    free(j.dh);
    free(j.part);
    return e;
}

/* H as float, both triangles (H is symmetric: quanta/gptq.h qt_gptq_hessian_get), or NULL. */
static float *float_hessian(const double *H, int64_t n) {
    float *f = malloc((size_t)(n * n) * sizeof *f);
    if (f)
        for (int64_t i = 0; i < n * n; i++) f[i] = (float)H[i];
    return f;
}

double qt_awq_output_error(const float *W, const float *Q, int64_t rows, int64_t cols, const double *H) {
    float *Hf = float_hessian(H, cols);
    const double e = Hf ? output_error(W, Q, rows, cols, Hf, NULL) : NAN;
    free(Hf);
    return e;
}

/* The summed output error of every linear quantized with scales s (NULL: 1). */
static qt_status loss_at(const qt_awq_problem *p, const float *Hf, const float *s, float *buf, double *loss) {
    *loss = 0;
    for (int k = 0; k < p->n_linears; k++) {
        const int64_t rows = p->rows[k], cols = p->cols;
        memcpy(buf, p->W[k], (size_t)(rows * cols) * sizeof *buf);
        if (s) qt_smooth_scale_cols(buf, rows, cols, s);
        qt_status st = p->quant(p->quant_ctx, k, buf, rows, cols);
        if (st != QT_OK) return st;
        if (s) /* back to the unscaled input's coordinates: Q(W s) / s */
            for (int64_t i = 0; i < rows; i++)
                for (int64_t j = 0; j < cols; j++) buf[i * cols + j] /= s[j];
        const double e = output_error(p->W[k], buf, rows, cols, Hf, p->pool);
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
    float *Hf = float_hessian(p->H, n);
    qt_status st = buf && cand && Hf && (!p->duo || (wm && wsum)) ? QT_OK : qt_error(QT_ERR_NOMEM, "awq: out of memory");
    if (st == QT_OK && p->duo) {
        for (int k = 0; k < p->n_linears; k++) qt_awq_weight_sum(p->W[k], p->rows[k], n, p->group[k], wsum);
        for (int64_t j = 0; j < n; j++) wm[j] = (float)(wsum[j] / (double)total_rows);
    }
    double best = INFINITY;
    if (st == QT_OK) st = loss_at(p, Hf, NULL, buf, &best);
    r->loss_rtn = best;
    r->ratio = -1;
    for (int64_t j = 0; j < n; j++) s[j] = 1.0f;
    for (int g = 0; st == QT_OK && g < p->n_grid; g++) {
        const double ratio = (double)g / p->n_grid;
        double loss;
        qt_awq_scales(p->x_mean, wm, n, ratio, cand);
        if ((st = loss_at(p, Hf, cand, buf, &loss)) != QT_OK) break;
        if (loss < best) { /* strictly lower: the first of equal candidates wins */
            best = loss;
            r->ratio = ratio;
            memcpy(s, cand, (size_t)n * sizeof *s);
        }
    }
    r->loss = best;
    free(Hf);
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
