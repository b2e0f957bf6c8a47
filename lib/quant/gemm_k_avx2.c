/* lib/quant/gemm_k_avx2.c — the --numerics fast K-quant kernels (gemm_k.h)
 * for AVX2 + FMA + F16C: maddubs + madd, 16 registers, so tiles of 4 weight
 * rows x 2 activation rows. Bodies in gemm_k_x86.h. */
#include <stddef.h>
#include <string.h>

#define QT_GEMM_K_VNNI 0
#define QT_GEMM_K_C 2
#include "gemm_k_x86.h"

QT_GEMM_K_DEFINE(avx2)
