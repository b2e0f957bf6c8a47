/* lib/quant/gemm.h — blocked matrix products of stored weight rows with
 * quantized activation rows (internal; the engine's prefill and decode).
 *
 * A gemm kernel computes, for r < nr and c < nc,
 *     out[c * ldo + r] = vec_dot(w + r * ldw, a + c * lda, n)
 * with w rows of the weight type and a rows of its vec_dot_type, the same
 * bits as the type's vec_dot (its `_ref` in dot.c) for every element. It gets
 * its speed from register tiling, not from a different float order: a tile
 * of weight rows x activation rows is computed together, so each weight
 * block is loaded and unpacked once per tile and each activation block once
 * per tile, while every output element keeps its own accumulator and meets
 * its blocks in vec_dot's order and lane layout. The integer part of each
 * block product is exact (any instruction sequence gives the same int32
 * lanes), so VNNI's vpdpbusd/vpdpwssd give the AVX2 kernels' bits too.
 * Consequence: results never depend on the tiling, the batch size or how
 * rows are split between threads.
 *
 * Kernels are rows of lib/quant/variants.c (field `gemm`); qt__gemm_kernel
 * hands out the resolved one, NULL where a type has none (callers then loop
 * over vec_dot, qt__gemm_dots). test_engine_dot compares every variant with
 * the scalar vec_dot reference element by element on awkward shapes.
 */
#ifndef QT_QUANT_GEMM_H
#define QT_QUANT_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "quanta/quant.h"

typedef void (*qt__gemm_fn)(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                            float *out, int64_t ldo);

/* The resolved kernel for weight type t at this CPU's level, or NULL. */
qt__gemm_fn qt__gemm_kernel(qt_type t);

/* The reference form of a gemm: one dot call per element, in the same loop
 * order a kernel's result is defined by. */
void qt__gemm_dots(qt_vec_dot_fn dot, const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc,
                   int64_t n, float *out, int64_t ldo);

/* The fewest activation rows qt__gemm_kernel(t) is faster for than one vec_dot
 * per element (1, or 2 where a decode row is better served by vec_dot). The
 * fast kernels apply from one row: their order must not depend on the batch. */
int qt__gemm_min_batch(qt_type t);

/* --numerics fast: the kernel for t that may use its own float order (a
 * `gemm_fast` variant), else qt__gemm_kernel(t). */
qt__gemm_fn qt__gemm_kernel_fast(qt_type t);

/* The float order of the q8_0/q4_0 fast kernels, one element (gemm_avx512.c). */
float qt__dot_fast_q8_0_ref(const void *x, const void *y, int64_t n);
float qt__dot_fast_q4_0_ref(const void *x, const void *y, int64_t n);

#ifdef QT_ARCH_X86
void qt__gemm_q8_0_avx2(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                        float *out, int64_t ldo);
void qt__gemm_q4_0_avx2(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                        float *out, int64_t ldo);
void qt__gemm_q4_K_avx2(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                        float *out, int64_t ldo);
void qt__gemm_q6_K_avx2(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                        float *out, int64_t ldo);
/* AVX-512 level (VL + VNNI): the same tiles with 32 registers and vpdpbusd / vpdpwssd */
void qt__gemm_q8_0_avx512(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                          float *out, int64_t ldo);
void qt__gemm_q4_0_avx512(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                          float *out, int64_t ldo);
void qt__gemm_q4_K_avx512(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                          float *out, int64_t ldo);
void qt__gemm_q6_K_avx512(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                          float *out, int64_t ldo);
/* --numerics fast (gemm_avx512.c): two blocks per 512-bit vector */
void qt__gemm_fast_q8_0_avx512(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                               float *out, int64_t ldo);
void qt__gemm_fast_q4_0_avx512(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                               float *out, int64_t ldo);
#endif

#endif
