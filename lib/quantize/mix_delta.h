/* lib/quantize/mix_delta.h — the output projection's move under a quantized copy, for the measured
 * sensitivity (lib/quantize/mix_measure.c: logits += H (Wq - W)^T): the dot products of n_tok rows
 * of H with nv rows of (Wq - W), each summed in double over j = 0..ne0-1 in that order from 0, as
 * `d += (double)h[j] * (double)b[j]`. The SIMD kernels put tokens in the lanes (each lane one row of
 * H, its own sum in that order) and fuse the multiply-add: a product of two floats is exact in a
 * double (24 + 24 significand bits of 53), so the fused and the separate roundings agree and every
 * level gives the scalar reference's bits. */
#ifndef QT_MIX_DELTA_H
#define QT_MIX_DELTA_H

#include <stdint.h>

/* d (nv, n_tok) = b (nv, ne0) x h^T, ht = h transposed (ne0, n_tok): d[v n_tok + r] = sum_j ht[j n_tok + r] b[v ne0 + j]. */
typedef void (*qt__mix_delta_fn)(const float *ht, int32_t n_tok, int64_t ne0, const float *b, int32_t nv, double *d);

void qt__mix_delta_scalar(const float *ht, int32_t n_tok, int64_t ne0, const float *b, int32_t nv, double *d);
#ifdef QT_ARCH_X86
void qt__mix_delta_avx2(const float *ht, int32_t n_tok, int64_t ne0, const float *b, int32_t nv, double *d);
void qt__mix_delta_avx512(const float *ht, int32_t n_tok, int64_t ne0, const float *b, int32_t nv, double *d);
#endif
/* The kernel of the CPU's level (QUANTA_CPU caps it: lib/core/cpu_level.h). */
qt__mix_delta_fn qt__mix_delta_kernel(void);

#endif
