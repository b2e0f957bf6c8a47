/* lib/quant/gemm_avx2.c — the blocked gemm kernels (gemm.h) for AVX2 + FMA +
 * F16C: maddubs + madd for the int8 products, 16 registers, so tiles of
 * 2 weight rows x 4 activation rows (q8_0 activations) and 2 x 2 (q8_K).
 * Bodies in gemm_x86.h. */
#include <string.h>

#define QT_GEMM_VNNI 0
#define QT_GEMM_R8 2
#define QT_GEMM_C8 4
#define QT_GEMM_RK 2
#define QT_GEMM_CK 2
#include "gemm_x86.h"

QT_GEMM_DEFINE(avx2)
