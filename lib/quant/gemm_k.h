/* lib/quant/gemm_k.h — --numerics fast kernels of the 256-element K-quant
 * super-block formats (Q2_K..Q6_K) against Q8_K activations (internal).
 *
 * The fast K order, one element (the scalar references in gemm_k.c):
 *     acc = 0
 *     for each super-block b, in order:
 *         isum = the exact int32 sum over the 256 elements of scale * code * y,
 *                the code offsets folded in through Q8_K's bsums (Q6_K: -32,
 *                Q3_K: -4)
 *         msum = the exact int32 sum of min * bsum (Q4_K, Q5_K, Q2_K), else none
 *         acc  = fmaf(d_y * d_x,     (float)isum, acc)
 *         acc  = fmaf(-(d_y * dmin_x), (float)msum, acc)   (types with mins)
 *     result = acc
 * Every integer is exact (|isum| < 2^31 for every format: Q6_K's worst case
 * is 256 * 128 * 32 * 127 = 1.3e8), so how a kernel forms it (lanes, VNNI,
 * horizontal sums in any order) cannot change a bit: the AVX2 and AVX-512
 * kernels give the same bits as the scalar reference, at any tiling, batch
 * and thread split. What the order saves against vec_dot's (8 float lanes
 * per super-block, hsum8 at the end): the integer lanes of 4 weight rows are
 * reduced together and the float steps run on 4 rows in one vector.
 * Not llama.cpp's order: the engine uses these with --numerics fast only.
 */
#ifndef QT_QUANT_GEMM_K_H
#define QT_QUANT_GEMM_K_H

#include <stddef.h>
#include <stdint.h>

#include "gemm.h"

float qt__dot_fast_q2_K_ref(const void *x, const void *y, int64_t n);
float qt__dot_fast_q3_K_ref(const void *x, const void *y, int64_t n);
float qt__dot_fast_q4_K_ref(const void *x, const void *y, int64_t n);
float qt__dot_fast_q5_K_ref(const void *x, const void *y, int64_t n);
float qt__dot_fast_q6_K_ref(const void *x, const void *y, int64_t n);
float qt__dot_fast_iq4_xs_ref(const void *x, const void *y, int64_t n);

#ifdef QT_ARCH_X86
#define QT_GEMM_K_DECLARE(SUFFIX)                                                                                   \
    void qt__gemm_fast_q2_K_##SUFFIX(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, \
                                     int64_t n, float *out, int64_t ldo);                                          \
    void qt__gemm_fast_q3_K_##SUFFIX(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, \
                                     int64_t n, float *out, int64_t ldo);                                          \
    void qt__gemm_fast_q4_K_##SUFFIX(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, \
                                     int64_t n, float *out, int64_t ldo);                                          \
    void qt__gemm_fast_q5_K_##SUFFIX(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, \
                                     int64_t n, float *out, int64_t ldo);                                          \
    void qt__gemm_fast_q6_K_##SUFFIX(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, \
                                     int64_t n, float *out, int64_t ldo);                                          \
    void qt__gemm_fast_iq4_xs_##SUFFIX(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda,           \
                                       int64_t nc, int64_t n, float *out, int64_t ldo);
/* gemm_k_avx2.c: maddubs + madd, tiles of 4 weight rows x 2 activation rows */
QT_GEMM_K_DECLARE(avx2)
/* gemm_k_avx512.c: maddubs + vpdpwssd and 32 registers, tiles of 4 x 4 */
QT_GEMM_K_DECLARE(avx512)
#undef QT_GEMM_K_DECLARE
#endif

#endif
