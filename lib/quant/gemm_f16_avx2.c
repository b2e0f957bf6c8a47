/* lib/quant/gemm_f16_avx2.c — the F16/BF16 --numerics fast kernels
 * (gemm_f16.h) for AVX2 + FMA + F16C: 16 registers, a 16-lane accumulator
 * in two, so tiles of 2 weight rows x 3 activation rows (bench_gemm: 8 % faster
 * than 2 x 2 at batch 64 though the compiler spills a little). Bodies in
 * gemm_f16_x86.h. */
#include <stddef.h>

#define QT_GEMM_F_512 0
#define QT_GEMM_F_R 2
#define QT_GEMM_F_C 3
/* f32 activations: the same 2 x 3 tile (2 x 4 would need all 16 registers for accumulators) */
#define QT_GEMM_F_AR 2
#define QT_GEMM_F_AC 3
#include "gemm_f16_x86.h"

QT_GEMM_F_DEFINE(avx2)

void qt__act_f16_avx2(const float *x, void *y, int64_t n) { gf_act_f16(x, y, NULL, n); }
void qt__act_f16_f32_avx2(const float *x, void *y, int64_t n) { gf_act_f16(x, NULL, y, n); }
