/* lib/quant/quant.c — lookups and checked row wrappers over the traits table. */
#include <math.h>
#include <strings.h>

#include "kernels.h"
#include "traits_internal.h"
#include "variants.h"

const qt_type_traits *qt_type_get(qt_type t) {
    if ((unsigned)t >= QT_TYPE_COUNT || qt__traits[t].name == NULL) return NULL;
    return qt__traits_dispatched(t);
}

const qt_type_traits *qt__traits_ref(qt_type t) {
    return (unsigned)t < QT_TYPE_COUNT && qt__traits[t].name ? &qt__traits[t] : NULL;
}

const qt_type_traits *qt_type_by_name(const char *name) {
    if (!name) return NULL;
    for (int t = 0; t < QT_TYPE_COUNT; t++)
        if (qt__traits[t].name && strcasecmp(qt__traits[t].name, name) == 0) return qt_type_get((qt_type)t);
    return NULL;
}

double qt_type_bits_per_weight(qt_type t) {
    const qt_type_traits *tr = qt_type_get(t);
    return tr ? 8.0 * (double)tr->block_bytes / (double)tr->block_elems : 0.0; /* CT rows: codes only */
}

static qt_status check_row(const qt_type_traits *tr, qt_type t, int64_t n) {
    if (!tr) return qt_error(QT_ERR_UNSUPPORTED, "unknown tensor type id %d", (int)t);
    if (n <= 0 || n % tr->block_elems != 0)
        return qt_error(QT_ERR_SHAPE, "row of %lld elements is not a multiple of %s's block size %lld",
                        (long long)n, tr->name, (long long)tr->block_elems);
    return QT_OK;
}

size_t qt_row_size(qt_type t, int64_t n) {
    const qt_type_traits *tr = qt_type_get(t);
    if (check_row(tr, t, n) != QT_OK) return 0;
    return tr->row_size ? tr->row_size(n) : (size_t)(n / tr->block_elems) * tr->block_bytes;
}

qt_status qt_quantize_rows(qt_type t, const float *src, void *dst,
                           int64_t n_rows, int64_t n_per_row, const float *imatrix) {
    const qt_type_traits *tr = qt_type_get(t);
    qt_status s = check_row(tr, t, n_per_row);
    if (s != QT_OK) return s;
    if (!tr->from_float) return qt_error(QT_ERR_UNSUPPORTED, "no quantizer for type %s", tr->name);
    s = qt__iq_prepare(t, imatrix); /* i-quants: imatrix required? code books built? (q_iq.c) */
    if (s != QT_OK) return s;
    /* Like llama-quantize's row validation, but before writing anything:
     * NaN/Inf would silently poison a block's scale. Plain float types
     * (f32/f16/bf16) carry special values through unchanged. */
    for (int64_t i = 0; tr->is_quantized && i < n_rows * n_per_row; i++)
        if (!isfinite(src[i]))
            return qt_error(QT_ERR_RANGE, "non-finite value %g at row %lld, column %lld: cannot quantize to %s",
                            (double)src[i], (long long)(i / n_per_row), (long long)(i % n_per_row), tr->name);
    const size_t row_bytes = qt_row_size(t, n_per_row);
    for (int64_t r = 0; r < n_rows; r++)
        tr->from_float(src + r * n_per_row, (uint8_t *)dst + (size_t)r * row_bytes, n_per_row, imatrix);
    return QT_OK;
}

qt_status qt_dequantize_rows(qt_type t, const void *src, float *dst, int64_t n_rows, int64_t n_per_row) {
    const qt_type_traits *tr = qt_type_get(t);
    qt_status s = check_row(tr, t, n_per_row);
    if (s != QT_OK) return s;
    if (!tr->to_float) return qt_error(QT_ERR_UNSUPPORTED, "no dequantizer for type %s", tr->name);
    const size_t row_bytes = qt_row_size(t, n_per_row);
    for (int64_t r = 0; r < n_rows; r++)
        tr->to_float((const uint8_t *)src + (size_t)r * row_bytes, dst + r * n_per_row, n_per_row);
    return QT_OK;
}
