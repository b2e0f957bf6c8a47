/* lib/quant/gemm_avx512.c — the blocked gemm kernels (gemm.h) at the AVX-512
 * level (F + BW + VL + VNNI): 256-bit vpdpbusd / vpdpwssd for the int8
 * products and the 32 vector registers EVEX encoding gives, so tiles of
 * 4 weight rows x 4 activation rows (q8_0 activations) and 2 x 4 (q8_K).
 * 256-bit vectors keep the lane layout of the AVX2 vec_dot kernels, which is
 * what keeps the bits; the integer sums are exact either way. Bodies in
 * gemm_x86.h. */
#include <string.h>

#define QT_GEMM_VNNI 1
#define QT_GEMM_R8 4
#define QT_GEMM_C8 4
#define QT_GEMM_RK 2
#define QT_GEMM_CK 4
#include "gemm_x86.h"

QT_GEMM_DEFINE(avx512)
