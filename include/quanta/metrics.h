/* quanta/metrics.h — quantization error (qt_qerr_*, not to be confused with
 * qt_error, the status messages) of any format: an f32 original
 * against its dequantized approximation.
 *
 *   RMSE    sqrt(mean((ref - approx)^2))
 *   max_abs max |ref - approx|
 *   SNR dB  10 log10(sum ref^2 / sum (ref - approx)^2)
 *           (+Inf when the approximation is exact, -Inf when ref is all
 *           zero but the approximation is not)
 * Sums are accumulated in double, in element order.
 */
#ifndef QUANTA_METRICS_H
#define QUANTA_METRICS_H

#include "core.h"
#include "quant.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qt_qerr_stats {
    int64_t n;            /* elements compared */
    double sum_sq_err;    /* sum (ref - approx)^2 */
    double sum_sq_ref;    /* sum ref^2 */
    double rmse;
    double max_abs;
    double snr_db;
} qt_qerr_stats;

/* n elements; QT_ERR_RANGE names the first NaN/Inf in either array. */
QT_API qt_status qt_qerr_compare(const float *ref, const float *approx, int64_t n, qt_qerr_stats *out);

/* A (rows, cols) matrix: per_row (rows entries) and/or total; either may be NULL. */
QT_API qt_status qt_qerr_compare_rows(const float *ref, const float *approx, int64_t rows, int64_t cols,
                              qt_qerr_stats *per_row, qt_qerr_stats *total);

/* Combine partial statistics (e.g. per-row into per-tensor). */
QT_API void qt_qerr_merge(qt_qerr_stats *acc, const qt_qerr_stats *part);

/* Round-trip a (rows, cols) f32 matrix through a traits-table type (reference
 * quantizer, then dequantizer; imatrix as in qt_quantize_rows) and measure the
 * error per row and/or in total. Errors of the codec (unsupported type, row
 * length not a multiple of the block) are passed through. */
QT_API qt_status qt_qerr_of_type(qt_type t, const float *src, int64_t rows, int64_t cols, const float *imatrix,
                         qt_qerr_stats *per_row, qt_qerr_stats *total);

#ifdef __cplusplus
}
#endif
#endif
