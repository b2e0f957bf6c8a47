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


/* ---- --numerics fast on repacked weights: the x16 layout (gemm_x16.c) -----
 *
 * A type with an x16 packer (q4_0, q4_1, q5_0, q5_1, iq4_nl, q8_0) is copied
 * once, at engine load, into groups of QT_X16_ROWS rows (the last group padded
 * with zero rows). Group g holds nb = n / 32 tiles, one per block column b:
 *     d:     the 16 rows' f16 scales of block b, 32 bytes;
 *     m:     (q4_1, q5_1) their f16 minimums, 32 bytes;
 *     masks: (q5_0, q5_1) the fifth bits as 8 64-bit masks, per code vector k
 *            (0..3) one for its low nibbles and one for its high nibbles, bit
 *            4i+e = the bit of row i's element 4k+e (low) or 16+4k+e (high);
 *     codes: 64-byte vectors, vector k holding 4 code bytes of each row, row
 *            i's at bytes 4i..4i+3: the 4-bit formats 4 vectors, vector k =
 *            bytes qs[4k..4k+3] as stored (low nibbles: elements 4k..4k+3,
 *            high nibbles: 16+4k..16+4k+3); q8_0 8 vectors, vector k =
 *            qs[4k..4k+3] xor 0x80.
 * One 512-bit load then feeds vpdpbusd for 16 rows against one broadcast
 * 4-byte word of the activations, one vcvtph2ps converts 16 scales: no
 * shuffles per block. A tile has exactly the 16 rows' block bytes, so the
 * packed copy is the size of the tensor. Weight codes are unsigned, c = q +
 * offset (q4_0 8, q5_0 16, iq4_nl and q8_0 128: the code book value + 128,
 * q4_1/q5_1 0 with the minimum apart).
 *
 * Activations are qt__block_q8s rows (q8_0's codes and scale and q8_1's s, as
 * f32, and the code sum, so kernels take the offset off once per block).
 *
 * The float order (scalar reference qt__dot_x16_ref, one element): for each
 * block b in order, with I_b = sum_j q_j y_j exact in int32,
 *     acc = fmaf(d_w * d_y, (float)I_b, acc)                      (from 0)
 *     acc = fmaf(m_w, s_y, acc)                      (q4_1, q5_1 only)
 * one accumulator per output element, so the AVX-512 and AVX2 kernels give
 * the same bits at any tile, batch and thread split. Not llama.cpp's order:
 * used only under --numerics fast. */
#define QT_X16_ROWS 16

typedef struct {
    float d;      /* scale: q8_0's, f16(amax / 127), as f32 */
    float s;      /* q8_1's s, f16(amax / 127 * sum), as f32: the minimum's factor (q4_1, q5_1) */
    int32_t sum;  /* sum of qs */
    int8_t qs[32];
} qt__block_q8s;

/* x as q8s blocks: the codes of llama.cpp's CPU quantize_row_q8_0 (dot.c). n % 32 == 0. */
void qt__act_q8s(const float *x, qt__block_q8s *y, int64_t n);
/* Its scalar reference; the variant (variants.c field act_q8s) gives its bits for finite x with
 * 127 / amax finite in every block (the reference's conversion is undefined beyond). */
void qt__act_q8s_ref(const float *x, qt__block_q8s *y, int64_t n);
typedef void (*qt__act_q8s_fn)(const float *x, qt__block_q8s *y, int64_t n);

/* x as llama.cpp's CPU quantize_row_q8_0 makes its block_q8_0 rows (the llama-order paths'
 * activations, qt__act_quantize): qt__act_q8s's codes with the f16 scale. n % 32 == 0. */
void qt__act_q8_0(const float *x, void *y, int64_t n);
/* Its scalar reference (dot.c); the variants (variants.c field act_q8_0) give its bits for x as
 * qt__act_q8s_ref's. */
void qt__act_q8_0_ref(const float *x, void *y, int64_t n);
typedef void (*qt__act_q8_0_fn)(const float *x, void *y, int64_t n);

/* Bytes of the x16 copy of nr rows of n elements of type t (0: t has no packer or n % 32). */
size_t qt__x16_bytes(qt_type t, int64_t nr, int64_t n);
/* Pack nr rows (ldw bytes apart) into dst (qt__x16_bytes of them). */
void qt__x16_pack(qt_type t, const void *w, size_t ldw, int64_t nr, int64_t n, void *dst);
/* Only groups g0 <= g < g1 of them (each written alone: threads may pack disjoint ranges). */
void qt__x16_pack_groups(qt_type t, const void *w, size_t ldw, int64_t nr, int64_t n, void *dst, int64_t g0, int64_t g1);
/* Bytes of one group of QT_X16_ROWS packed rows. */
size_t qt__x16_group_bytes(qt_type t, int64_t n);

/* A kernel on packed rows: wp is the group holding row 0 (nr rows from there:
 * whole groups, the last possibly partial), a holds nc q8s rows lda bytes apart;
 * out[c * ldo + r] for r < nr, c < nc. */
typedef void (*qt__gemm_x16_fn)(const void *wp, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                                float *out, int64_t ldo);

/* The x16 float order, one element, on a plain row x of type t and a q8s row y. */
float qt__dot_x16_ref(qt_type t, const void *x, const void *y, int64_t n);
/* The same order on packed rows, scalar (what the SIMD kernels are tested against). */
void qt__gemm_x16_ref(qt_type t, const void *wp, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                      float *out, int64_t ldo);

/* The resolved x16 kernel for t at this CPU's level, or NULL (no packer or no kernel). */
qt__gemm_x16_fn qt__gemm_x16_kernel(qt_type t);

#define QT_X16_DECLARE(SUFFIX)                                                                               \
    void qt__gemm_x16_q4_0_##SUFFIX(const void *, int64_t, const void *, size_t, int64_t, int64_t, float *, int64_t); \
    void qt__gemm_x16_q4_1_##SUFFIX(const void *, int64_t, const void *, size_t, int64_t, int64_t, float *, int64_t); \
    void qt__gemm_x16_q5_0_##SUFFIX(const void *, int64_t, const void *, size_t, int64_t, int64_t, float *, int64_t); \
    void qt__gemm_x16_q5_1_##SUFFIX(const void *, int64_t, const void *, size_t, int64_t, int64_t, float *, int64_t); \
    void qt__gemm_x16_iq4_nl_##SUFFIX(const void *, int64_t, const void *, size_t, int64_t, int64_t, float *, int64_t); \
    void qt__gemm_x16_q8_0_##SUFFIX(const void *, int64_t, const void *, size_t, int64_t, int64_t, float *, int64_t);
QT_X16_DECLARE(ref) /* qt__gemm_x16_ref for each type, for the variants table */

#ifdef QT_ARCH_X86
QT_X16_DECLARE(amx) /* gemm_x16_amx.c: AMX tiles from 16 batch rows, the VNNI kernel below and for the rest */
QT_X16_DECLARE(avx512)
QT_X16_DECLARE(avx2)
void qt__act_q8s_avx2(const float *x, qt__block_q8s *y, int64_t n);
void qt__act_q8_0_avx2(const float *x, void *y, int64_t n);
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
