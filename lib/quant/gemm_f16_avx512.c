/* lib/quant/gemm_f16_avx512.c — the F16/BF16 --numerics fast kernels
 * (gemm_f16.h) at the AVX-512 level: one zmm per 16-lane accumulator and 32
 * registers, so tiles of 4 weight rows x 4 activation rows (16 accumulators,
 * 4 + 1 converted vectors). Bodies in gemm_f16_x86.h. */
#include <stddef.h>

#define QT_GEMM_F_512 1
#define QT_GEMM_F_R 4
#define QT_GEMM_F_C 4
/* f32 activations (no conversion of them): 4 x 6, 24 accumulators + 4 converted
 * weight vectors + 1 activation (tinyBLAS's 4 x 6 tile) */
#define QT_GEMM_F_AR 4
#define QT_GEMM_F_AC 6
#include "gemm_f16_x86.h"

QT_GEMM_F_DEFINE(avx512)
