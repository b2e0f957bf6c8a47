/* quanta/smooth.h — per-input-channel smoothing scales folded into the
 * preceding norm or linear, as pure functions on plain arrays
 * (lib/quant/awq.c, lib/quant/smoothquant.c; docs/awq.md):
 *
 *   AWQ (Lin, Tang, Tang, Yang, Chen, Wang, Xiao, Dang, Gan, Han, "AWQ:
 *   Activation-aware Weight Quantization for LLM Compression and
 *   Acceleration", MLSys 2024, arXiv:2306.00978): scales from activation
 *   magnitudes (and, with duo scaling, weight magnitudes) searched over a
 *   grid of ratios for the lowest output error of the quantized linears.
 *   SmoothQuant (Xiao, Lin, Seznec, Wu, Demouth, Han, "SmoothQuant: Accurate
 *   and Efficient Post-Training Quantization for Large Language Models",
 *   ICML 2023, arXiv:2211.10438): s_j = max|X_j|^a / max|W_j|^(1-a), moving
 *   activation outliers into the weights so both quantize to int8.
 *
 * A linear y = W x, W (rows, cols) row-major. With scales s (cols), every
 * linear fed by the same input x gets W[:, j] *= s_j and the input's producer
 * absorbs 1/s_j (a norm's weight, or the rows of the linear whose outputs are
 * x), so the float model computes the same function; only its rounding
 * changes. */
#ifndef QUANTA_SMOOTH_H
#define QUANTA_SMOOTH_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-channel statistics of a linear's input over the calibration rows. */
typedef struct qt_act_stats {
    int64_t n;               /* channels (in features) */
    int64_t n_rows;          /* calibration rows added */
    double *abs_sum;         /* (n) sum of |x_j| (AWQ: mean |x_j|) */
    float *abs_max;          /* (n) max |x_j| (SmoothQuant) */
} qt_act_stats;

QT_API qt_status qt_act_stats_init(qt_act_stats *a, int64_t n);
/* Adds rows x (n_rows, n) (row-major). */
QT_API void qt_act_stats_add(qt_act_stats *a, const float *x, int64_t n_rows);
/* mean |x_j| into out (n); channels that never saw a non-zero value give 0. */
QT_API void qt_act_stats_mean(const qt_act_stats *a, float *out);
QT_API void qt_act_stats_free(qt_act_stats *a);

/* ---- AWQ ----------------------------------------------------------------------- */

/* Adds to sum (cols) each column's |W_ij| / max|W_i,group| summed over rows:
 * the weight magnitude relative to its quantization group (llm-compressor's
 * duo-scaling statistic; divide by the total rows for the mean). group divides
 * cols (cols itself: one group per row). */
QT_API void qt_awq_weight_sum(const float *W, int64_t rows, int64_t cols, int64_t group, double *sum);

/* The candidate scales for one ratio r in [0, 1):
 *   duo:  s_j = x_j^r / (w_j^(1-r) + 1e-4),   else s_j = x_j^r,
 * clamped below at 1e-4, then divided by sqrt(max s * min s) so the scales
 * are centred on 1 in log scale (AutoAWQ's and llm-compressor's formula).
 * x: (n) mean |x_j|, w: (n) mean relative |W_j| (NULL without duo). */
QT_API void qt_awq_scales(const float *x, const float *w, int64_t n, double ratio, float *s);

/* The output error of replacing W by Q over inputs whose H = 2 X^T X / n
 * (quanta/gptq.h's Hessian): sum_i (w_i - q_i) H (w_i - q_i)^T / 2, which is
 * the mean over calibration rows of ||(W - Q) x||^2, computed as <E^T E, H> / 2 (E = W - Q: the
 * upper triangle of the float Gram matrix E^T E by sgemm in panels of 256 columns, each panel's
 * products with H summed in double: about 1e-6 relative). H: both triangles. */
QT_API double qt_awq_output_error(const float *W, const float *Q, int64_t rows, int64_t cols, const double *H);

/* Round-to-nearest onto linear k's target grid, W (rows, cols) replaced by its
 * grid values (the codec's quantize-then-dequantize). */
typedef qt_status (*qt_awq_fake_quant)(void *ctx, int k, float *W, int64_t rows, int64_t cols);

/* The linears that share one input (q/k/v, gate/up, or a single one). */
typedef struct qt_awq_problem {
    int n_linears;
    const float *const *W;   /* (n_linears) each (rows[k], cols), not modified */
    const int64_t *rows;     /* (n_linears) */
    const int64_t *group;    /* (n_linears) the target grid's group (columns sharing a scale) */
    int64_t cols;
    const double *H;         /* (cols, cols) the input's Hessian 2 X^T X / n, both triangles */
    const float *x_mean;     /* (cols) mean |x_j| */
    int n_grid;              /* 20: ratios 0, 1/n_grid, ..., (n_grid-1)/n_grid */
    bool duo;                /* duo scaling (activation and weight magnitudes; llm-compressor's default) */
    qt_awq_fake_quant quant;
    void *quant_ctx;
    qt_threadpool *pool;     /* or NULL: the output errors' threads (fixed units of rows, summed in
                                order: the same bits at any thread count) */
} qt_awq_problem;

typedef struct qt_awq_result {
    double loss_rtn;         /* output error with s = 1 (plain round-to-nearest), all linears */
    double loss;             /* output error at the chosen scales */
    double ratio;            /* the chosen ratio; -1: s = 1 was best */
} qt_awq_result;

/* Searches the grid for the scales whose quantized linears,
 * Q(W diag(s)) diag(s)^-1, have the lowest summed output error; s = 1 (plain
 * RTN) is a candidate too, so the result is never worse on the calibration
 * rows than RTN (a choice of quanta's: AutoAWQ and llm-compressor search the
 * grid only). s: (cols) out. Deterministic (BLAS pinned to one thread). */
QT_API qt_status qt_awq_search(const qt_awq_problem *p, float *s, qt_awq_result *r);

/* ---- SmoothQuant ----------------------------------------------------------------- */

/* Adds to wmax (cols) each column's max |W_ij| over rows (max-accumulates,
 * so call it for every linear fed by the input; start from zeros). */
QT_API void qt_smooth_weight_absmax(const float *W, int64_t rows, int64_t cols, float *wmax);

/* s_j = max(amax_j, 1e-5)^alpha / max(wmax_j, 1e-5)^(1 - alpha)
 * (llm-compressor's SmoothQuantModifier, clamped so no scale is 0 or inf).
 * A channel whose activations were all zero (amax_j == 0: it never saw a
 * token) gets s_j = 1 and is counted in the return value, never a NaN. */
QT_API int64_t qt_smoothquant_scales(const float *amax, const float *wmax, int64_t n, double alpha, float *s);

/* ---- folding ------------------------------------------------------------------------ */

/* W[:, j] *= s_j (a consumer of the smoothed input). */
QT_API void qt_smooth_scale_cols(float *W, int64_t rows, int64_t cols, const float *s);
/* W[j, :] /= s_j (the producer of the smoothed input: a linear or a 1-row
 * norm weight with rows = n, cols = 1). */
QT_API void qt_smooth_unscale_rows(float *W, int64_t rows, int64_t cols, const float *s);
/* H' = diag(1/s) H diag(1/s): the Hessian of the smoothed input x / s. */
QT_API void qt_smooth_hessian(double *H, int64_t n, const float *s);

#ifdef __cplusplus
}
#endif
#endif
