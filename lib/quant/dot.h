/* lib/quant/dot.h — the dot kernels and activation quantizers.
 *
 * Each kernel is `float dot(const void *x, const void *y, int64_t n)` with x
 * one stored row of type T and y one activation row already converted to
 * T's vec_dot_type (the traits table, lib/quant/traits.c, pairs them). The
 * pairing is llama.cpp's CPU backend's (ggml-cpu.c type_traits_cpu):
 *   f32 -> f32, f16 -> f16, bf16 -> bf16,
 *   q4_0, q5_0, q8_0, iq4_nl, mxfp4, q1_0, q2_0 -> q8_0,   q4_1, q5_1 -> q8_1,
 *   q2_K..q6_K, iq4_xs, tq2_0, iq1_s..iq3_s -> q8_K.
 * The integer kernels sum block by block in int32 and scale once per block
 * (or sub-block), which is what makes llama.cpp's quantized-model numbers
 * differ from a float dot of the dequantized weights.
 *
 * `_ref` kernels are the scalar references, in the float order of llama.cpp's
 * x86 kernels; dot_avx2.c and dot_k_avx2.c hold SIMD variants,
 * rows of lib/quant/variants.c (tests compare the two). AVX-512 variants of
 * the f32/f16 kernels were measured no faster (bench_dot: memory-bound decode
 * slower with 64-byte unaligned loads) and are not kept.
 */
#ifndef QT_ENGINE_DOT_H
#define QT_ENGINE_DOT_H

#include <math.h>

#include "quanta/quant.h"

float qt__dot_f32_ref(const void *x, const void *y, int64_t n);  /* ggml_vec_dot_f32 */
float qt__dot_f16_ref(const void *x, const void *y, int64_t n);  /* ggml_vec_dot_f16 */
float qt__gemm_f32_ref(const void *x, const void *y, int64_t n); /* tinyBLAS, several activation rows */
float qt__gemm_f16_ref(const void *x, const void *y, int64_t n);
float qt__dot_bf16_ref(const void *x, const void *y, int64_t n);
float qt__dot_q4_0_q8_0_ref(const void *x, const void *y, int64_t n);
float qt__dot_q4_1_q8_1_ref(const void *x, const void *y, int64_t n);
float qt__dot_q5_0_q8_0_ref(const void *x, const void *y, int64_t n);
float qt__dot_q5_1_q8_1_ref(const void *x, const void *y, int64_t n);
float qt__dot_q8_0_q8_0_ref(const void *x, const void *y, int64_t n);
float qt__dot_iq4_nl_q8_0_ref(const void *x, const void *y, int64_t n);
float qt__dot_mxfp4_q8_0_ref(const void *x, const void *y, int64_t n);
float qt__dot_q1_0_q8_0_ref(const void *x, const void *y, int64_t n);  /* Q1_0, Q2_0: ggml 2026 */
float qt__dot_q2_0_q8_0_ref(const void *x, const void *y, int64_t n);
float qt__dot_q2_K_q8_K_ref(const void *x, const void *y, int64_t n);
float qt__dot_q3_K_q8_K_ref(const void *x, const void *y, int64_t n);
float qt__dot_q4_K_q8_K_ref(const void *x, const void *y, int64_t n);
float qt__dot_q5_K_q8_K_ref(const void *x, const void *y, int64_t n);
float qt__dot_q6_K_q8_K_ref(const void *x, const void *y, int64_t n);
float qt__dot_iq4_xs_q8_K_ref(const void *x, const void *y, int64_t n);
float qt__dot_tq2_0_q8_K_ref(const void *x, const void *y, int64_t n);
/* dot_iq.c: the i-quants below 4 bits with q8_K activations. */
float qt__dot_iq2_xxs_q8_K_ref(const void *x, const void *y, int64_t n);
float qt__dot_iq2_xs_q8_K_ref(const void *x, const void *y, int64_t n);
float qt__dot_iq2_s_q8_K_ref(const void *x, const void *y, int64_t n);
float qt__dot_iq3_xxs_q8_K_ref(const void *x, const void *y, int64_t n);
float qt__dot_iq3_s_q8_K_ref(const void *x, const void *y, int64_t n);
float qt__dot_iq1_s_q8_K_ref(const void *x, const void *y, int64_t n);
float qt__dot_iq1_m_q8_K_ref(const void *x, const void *y, int64_t n);

/* Converts one activation row of n floats to `type` (one of f32, f16, bf16,
 * q8_0, q8_1, q8_K) the way llama.cpp's CPU backend does before a matmul.
 * Returns false for other types. n must be a multiple of the block size. */
bool qt__act_quantize(qt_type type, const float *x, void *y, int64_t n);
/* True if qt__act_quantize handles `type`. */
bool qt__act_type_supported(qt_type type);

/* The tail of ggml_vec_dot_f32 after the 64-element steps, elements i..n-1
 * (fewer than 64), as GCC compiled it for llama.cpp's AVX-512 build: 16- and
 * then 8-element chunks of rounded products added in element order, the last
 * fewer-than-8 elements with fused multiply-adds. Shared by dot.c and the
 * SIMD kernels so that both give the same bits. */
static inline float qt__dot_f32_tail(float sum, const float *x, const float *y, int64_t i, int64_t n) {
    int64_t chunked = n - i >= 16 ? (n - i) / 16 * 16 : 0;
    if (n - i - chunked >= 8) chunked += 8;
    for (const int64_t end = i + chunked; i < end; i++) {
        const float p = x[i] * y[i];
        sum = sum + p;
    }
    for (; i < n; i++) sum = fmaf(x[i], y[i], sum);
    return sum;
}

/* llama.cpp's hsum_float_8: lanes i and i+4 added, then (0+2) + (1+3). */
static inline float qt__hsum8_ref(const float a[8]) {
    float t[4];
    for (int i = 0; i < 4; i++) t[i] = a[i + 4] + a[i];
    return (t[0] + t[2]) + (t[1] + t[3]);
}

#ifdef QT_ARCH_X86
float qt__dot_f32_avx2(const void *x, const void *y, int64_t n);
float qt__dot_f16_avx2(const void *x, const void *y, int64_t n);
float qt__gemm_f32_avx2(const void *x, const void *y, int64_t n);
float qt__gemm_f16_avx2(const void *x, const void *y, int64_t n);
float qt__dot_q8_0_q8_0_avx2(const void *x, const void *y, int64_t n);
float qt__dot_q4_0_q8_0_avx2(const void *x, const void *y, int64_t n);
/* 32-element blocks (dot_avx2.c) */
float qt__dot_q4_1_q8_1_avx2(const void *x, const void *y, int64_t n);
float qt__dot_q5_0_q8_0_avx2(const void *x, const void *y, int64_t n);
float qt__dot_q5_1_q8_1_avx2(const void *x, const void *y, int64_t n);
float qt__dot_iq4_nl_q8_0_avx2(const void *x, const void *y, int64_t n);
float qt__dot_mxfp4_q8_0_avx2(const void *x, const void *y, int64_t n); /* mxfp4_avx2.c */
/* K-quant super-blocks (dot_k_avx2.c) */
float qt__dot_q2_K_q8_K_avx2(const void *x, const void *y, int64_t n);
float qt__dot_q3_K_q8_K_avx2(const void *x, const void *y, int64_t n);
float qt__dot_q4_K_q8_K_avx2(const void *x, const void *y, int64_t n);
float qt__dot_q5_K_q8_K_avx2(const void *x, const void *y, int64_t n);
float qt__dot_q6_K_q8_K_avx2(const void *x, const void *y, int64_t n);
float qt__dot_iq4_xs_q8_K_avx2(const void *x, const void *y, int64_t n);
#endif

#endif
