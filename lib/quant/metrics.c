/* lib/quant/metrics.c — RMSE, max abs error and SNR (quanta/metrics.h). */
#include <math.h>
#include <stdlib.h>

#include "quanta/metrics.h"

static void finish(qt_qerr_stats *s) {
    s->rmse = s->n > 0 ? sqrt(s->sum_sq_err / (double)s->n) : 0.0;
    if (s->sum_sq_err == 0.0) s->snr_db = INFINITY;
    else if (s->sum_sq_ref == 0.0) s->snr_db = -INFINITY;
    else s->snr_db = 10.0 * log10(s->sum_sq_ref / s->sum_sq_err);
}

void qt_qerr_merge(qt_qerr_stats *acc, const qt_qerr_stats *part) {
    acc->n += part->n;
    acc->sum_sq_err += part->sum_sq_err;
    acc->sum_sq_ref += part->sum_sq_ref;
    if (part->max_abs > acc->max_abs) acc->max_abs = part->max_abs;
    finish(acc);
}

/* One contiguous run; `base` only labels messages. */
static qt_status accumulate(const float *ref, const float *approx, int64_t n, int64_t base, qt_qerr_stats *s) {
    *s = (qt_qerr_stats){0};
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(ref[i]) || !isfinite(approx[i]))
            return qt_error(QT_ERR_RANGE, "error metrics: element %lld is not finite (original %g, approximation %g)",
                            (long long)(base + i), (double)ref[i], (double)approx[i]);
        const double d = (double)ref[i] - (double)approx[i];
        s->sum_sq_err += d * d;
        s->sum_sq_ref += (double)ref[i] * (double)ref[i];
        if (fabs(d) > s->max_abs) s->max_abs = fabs(d);
    }
    s->n = n;
    finish(s);
    return QT_OK;
}

qt_status qt_qerr_compare(const float *ref, const float *approx, int64_t n, qt_qerr_stats *out) {
    if (!ref || !approx || !out || n < 0) return qt_error(QT_ERR_ARG, "error metrics: missing arrays or negative length");
    return accumulate(ref, approx, n, 0, out);
}

qt_status qt_qerr_compare_rows(const float *ref, const float *approx, int64_t rows, int64_t cols,
                              qt_qerr_stats *per_row, qt_qerr_stats *total) {
    if (!ref || !approx || rows < 0 || cols < 0)
        return qt_error(QT_ERR_ARG, "error metrics: missing arrays or negative shape");
    qt_qerr_stats acc = {0};
    finish(&acc);
    for (int64_t r = 0; r < rows; r++) {
        qt_qerr_stats row;
        qt_status s = accumulate(ref + r * cols, approx + r * cols, cols, r * cols, &row);
        if (s != QT_OK) return s;
        if (per_row) per_row[r] = row;
        qt_qerr_merge(&acc, &row);
    }
    if (total) *total = acc;
    return QT_OK;
}

qt_status qt_qerr_of_type(qt_type t, const float *src, int64_t rows, int64_t cols, const float *imatrix,
                         qt_qerr_stats *per_row, qt_qerr_stats *total) {
    if (!src || rows <= 0 || cols <= 0)
        return qt_error(QT_ERR_ARG, "error metrics: missing input or empty shape");
    const size_t row_bytes = qt_row_size(t, cols);
    if (row_bytes == 0) /* qt_row_size recorded why (unknown type, row not a multiple of the block) */
        return qt_type_get(t) ? QT_ERR_SHAPE : QT_ERR_UNSUPPORTED;
    void *codes = malloc(row_bytes * (size_t)rows);
    float *back = malloc(sizeof(float) * (size_t)(rows * cols));
    qt_status s = (codes && back) ? QT_OK : qt_error(QT_ERR_NOMEM, "error metrics: out of memory for %lld x %lld",
                                                     (long long)rows, (long long)cols);
    if (s == QT_OK) s = qt_quantize_rows(t, src, codes, rows, cols, imatrix);
    if (s == QT_OK) s = qt_dequantize_rows(t, codes, back, rows, cols);
    if (s == QT_OK) s = qt_qerr_compare_rows(src, back, rows, cols, per_row, total);
    free(codes);
    free(back);
    return s;
}
