/* lib/quant/ct_internal.h — helpers shared by the compressed-tensors codecs. */
#ifndef QT_QUANT_CT_INTERNAL_H
#define QT_QUANT_CT_INTERNAL_H

#include "quanta/ct.h"
#include "quanta/num.h"

/* rows, cols > 0 and rows*cols fits in int64 (what: "int4 quantization" ...). */
qt_status qt__ct_check_shape(const char *what, int64_t rows, int64_t cols);
/* QT_ERR_RANGE naming the first NaN/Inf element. */
qt_status qt__ct_check_finite(const char *what, const float *w, int64_t rows, int64_t cols);

/* qt_ct_int_quantize with importance weights imp (cols floats, >= 0; llama-imatrix's mean
 * squared activation per input column): each scale's range is shrunk by the factor (1, 0.99,
 * ..., 0.81) that minimises sum imp_c (x_c - q_c)^2 over its elements (ct_int.c). imp NULL:
 * qt_ct_int_quantize exactly. */
qt_status qt__ct_int_quantize_weighted(const float *w, int64_t rows, int64_t cols, const qt_ct_int_args *a,
                                       const float *imp, int8_t *q, float *scales, int8_t *zero_points);

/* One row of int4 group dequantization from packed words (see ct.h). */
typedef void (*qt__ct_int4_row_fn)(const int32_t *packed, const float *scales, const int8_t *zero_points,
                                   int64_t cols, int64_t group_size, float *out);
void qt__ct_int4_row_ref(const int32_t *packed, const float *scales, const int8_t *zero_points,
                         int64_t cols, int64_t group_size, float *out);
/* The kernel dispatch chose for this CPU (lib/quant/dispatch.c). */
qt__ct_int4_row_fn qt__ct_int4_row_kernel(void);

#endif
