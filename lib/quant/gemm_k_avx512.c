/* lib/quant/gemm_k_avx512.c — the --numerics fast K-quant kernels (gemm_k.h)
 * at the AVX-512 level (F + BW + VL + VNNI): 256-bit vpdpwssd fuses the scale
 * multiply with the accumulation, and the 32 vector registers EVEX encoding
 * gives hold tiles of 4 weight rows x 4 activation rows. Same bits as the
 * AVX2 kernels (the integers are exact). Bodies in gemm_k_x86.h. */
#include <stddef.h>
#include <string.h>

#define QT_GEMM_K_VNNI 1
#define QT_GEMM_K_C 4
#include "gemm_k_x86.h"

QT_GEMM_K_DEFINE(avx512)
