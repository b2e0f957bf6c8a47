/* lib/quant/gemm_f16.h — --numerics fast kernels of 16-bit float weights (F16,
 * BF16) against activation rows of the same type (their vec_dot_type), for
 * decode and prefill (internal).
 *
 * Their order, one element (n a multiple of 16): one 16-lane FMA chain over
 * 16-element steps, element i into lane i % 16, products of the exactly
 * converted values, then dot.c's reduce16 — tinyBLAS's order, which is
 * llama.cpp's for F16 batches (qt__gemm_f16_ref, the F16 reference), and the
 * same for BF16 (qt__dot_fast_bf16_ref; llama.cpp's BF16 dot sums in double).
 * A row length that is not a multiple of 16 takes the reference per element.
 * The kernels get their speed from register tiles of weight rows x activation
 * rows that share every converted vector, not from another order, so the
 * AVX2 and AVX-512 kernels give the same bits at any tiling and thread split.
 */
#ifndef QT_QUANT_GEMM_F16_H
#define QT_QUANT_GEMM_F16_H

#include <stddef.h>
#include <stdint.h>

#include "gemm.h"

/* the BF16 order: as qt__gemm_f16_ref on bf16 values; for n % 16 != 0 the
 * chain over the first n - n % 16 elements, reduce16, then the rest fused in
 * element order */
float qt__dot_fast_bf16_ref(const void *x, const void *y, int64_t n);

/* F16 activation rows (F16's vec_dot_type, llama.cpp's from_float): each element
 * as qt_f32_to_fp16 rounds it (nearest even; NaN as 0x7E00 with its sign). */
void qt__act_f16(const float *x, void *y, int64_t n);
void qt__act_f16_ref(const float *x, void *y, int64_t n); /* the scalar loop */
/* The same rounding kept as f32 (y holds n floats, each exactly the f16 value of
 * qt__act_f16): the rows the a32 kernels below read without converting them. */
void qt__act_f16_f32(const float *x, void *y, int64_t n);
void qt__act_f16_f32_ref(const float *x, void *y, int64_t n);
typedef void (*qt__act_row_fn)(const float *x, void *y, int64_t n);

/* qt__gemm_f16_ref's order on F16 weights against activation rows of f32 that
 * hold f16 values (qt__act_f16_f32; lda in bytes): the bits of the F16 kernels
 * on qt__act_f16's rows, without converting an activation vector in the inner
 * loop (one conversion per weight vector, shared by every activation row of the
 * tile). A row length that is not a multiple of 16 takes qt__gemm_f16_ref per
 * element on the rows converted back. */
float qt__gemm_f16_a32_ref(const void *w, const void *a, int64_t n); /* one element */
/* This CPU level's a32 kernel for row type t (F16 only; NULL: none, the engine keeps gemm_fast) */
qt__gemm_fn qt__gemm_kernel_fast_a32(qt_type t);

#ifdef QT_ARCH_X86
void qt__act_f16_avx2(const float *x, void *y, int64_t n);
void qt__act_f16_f32_avx2(const float *x, void *y, int64_t n);
void qt__gemm_fast_f16_a32_avx2(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                                float *out, int64_t ldo);
void qt__gemm_fast_f16_a32_avx512(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc,
                                  int64_t n, float *out, int64_t ldo);
/* gemm_f16_avx2.c: 16 lanes as two ymm registers, tiles of 2 x 3 */
void qt__gemm_fast_f16_avx2(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                            float *out, int64_t ldo);
void qt__gemm_fast_bf16_avx2(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                             float *out, int64_t ldo);
/* gemm_f16_avx512.c: one zmm per 16 lanes, tiles of 4 x 4 */
void qt__gemm_fast_f16_avx512(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                              float *out, int64_t ldo);
void qt__gemm_fast_bf16_avx512(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                               float *out, int64_t ldo);
#endif

#endif
