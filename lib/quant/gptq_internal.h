/* lib/quant/gptq_internal.h — GPTQ's inverse Cholesky factor on its own, for tests (internal). */
#ifndef QT_QUANT_GPTQ_INTERNAL_H
#define QT_QUANT_GPTQ_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "quanta/core.h"

/* U (n, n) upper with U^T U = (H + damp I)^-1, H (n, n) symmetric in natural
 * order, as qt_gptq_quantize computes it (fixed tiles over pool, or NULL).
 * False when H + damp I is not positive definite or U is not finite. */
bool qt__gptq_inverse_factor(const double *H, int64_t n, double damp, float *U, qt_threadpool *pool);

/* The compressed-tensors int grid on one column of n rows (compressed-tensors' _quantize and
 * _dequantize per element, ct_int.c's arithmetic): w the values, s and zp (NULL: symmetric) their
 * rows' scales and zero points; code the int codes, q their values in dtype (a qt_ct_dtype). The
 * scalar reference (gptq_grid.c) and its AVX2 form (gptq_grid_avx2.c: the same bits; x86 only,
 * where the CPU has AVX2). */
void qt__ct_int_col_ref(const float *w, const float *s, const int8_t *zp, int64_t n, int bits, int dtype,
                        int8_t *code, float *q);
void qt__ct_int_col_avx2(const float *w, const float *s, const int8_t *zp, int64_t n, int bits, int dtype,
                         int8_t *code, float *q);

#endif
