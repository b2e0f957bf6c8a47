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

#endif
