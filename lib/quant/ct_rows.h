/* lib/quant/ct_rows.h — engine-resident compressed-tensors row formats (internal).
 *
 * The HF reader (lib/io/ct_read.c) keeps W8A8 / FP8 linears packed in these
 * rows instead of dequantizing them; the engine runs them as vLLM computes
 * them (docs/w8a8.md). Each row carries its scales in a small header (f32,
 * little-endian, unaligned: read with memcpy), then one code byte per element:
 *
 *   QT_TYPE_CT_I8        [f32 scale][int8 q[n]]             w8a8-int8 weights (scale: the
 *                                                          channel's) and their activations
 *                                                          (scale: the token's, absmax/127)
 *   QT_TYPE_CT_F8        [f32 w_scale][f32 in_scale][e4m3 q[n]]  fp8 weights: per channel or per
 *                                                          tensor (repeated on every row);
 *                                                          in_scale > 0: fp8-static's input_scale,
 *                                                          0: per-token dynamic activations
 *   QT_TYPE_CT_F8_ACT    [f32 scale][e4m3 q[n]]             the activations of CT_F8
 *   QT_TYPE_CT_F8_BLOCK  [f32 scale[ceil(n/128)]][e4m3 q[n]] fp8-block weights (the scales of
 *                                                          the row's 128x128 blocks) and their
 *                                                          activations (one scale per group of
 *                                                          128 columns of a token)
 *
 * Exactness: int8 x int8 products are summed exactly in int32 (|sum| < 2^31
 * for n <= QT_CT_ROW_MAX_N). An e4m3 x e4m3 product is exact in f32 (4 + 4
 * significant bits, exponents >= 2^-18), and a sum of fewer than 2^17 of them
 * is exact in f64 (each is k * 2^-18 with |k| < 2^36), so every kernel gives
 * the exact sum, rounded once to f32, whatever its order: SIMD variants and the
 * scalar references agree bit for bit.
 */
#ifndef QT_QUANT_CT_ROWS_H
#define QT_QUANT_CT_ROWS_H

#include <stdint.h>
#include <string.h>

#include "quanta/quant.h"

#define QT_CT_FP8_GROUP 128       /* fp8-block: weight blocks 128x128, activation groups 1x128 */
#define QT_CT_ROW_MAX_N 131072    /* longest row the exact sums above allow */

static inline float qt__ct_hdr(const void *row, int i) {
    float v;
    memcpy(&v, (const uint8_t *)row + 4 * i, 4);
    return v;
}
static inline void qt__ct_hdr_set(void *row, int i, float v) { memcpy((uint8_t *)row + 4 * i, &v, 4); }
static inline int64_t qt__ct_groups(int64_t n) { return (n + QT_CT_FP8_GROUP - 1) / QT_CT_FP8_GROUP; }
/* Bytes of the header of a row of n elements (the codes follow it). */
size_t qt__ct_header_bytes(qt_type t, int64_t n);

size_t qt__ct_i8_row_size(int64_t n);
size_t qt__ct_f8_row_size(int64_t n);
size_t qt__ct_f8_act_row_size(int64_t n);
size_t qt__ct_f8_block_row_size(int64_t n);

/* to_float: codes times their scales, in f32 */
void qt__ct_i8_to_float(const void *row, float *y, int64_t n);
void qt__ct_f8_to_float(const void *row, float *y, int64_t n);
void qt__ct_f8_act_to_float(const void *row, float *y, int64_t n);
void qt__ct_f8_block_to_float(const void *row, float *y, int64_t n);

/* Activation quantizers, as vLLM's kernels compute them (docs/w8a8.md cites them). */
void qt__ct_i8_act_quantize(const float *x, void *row, int64_t n, const float *unused);
void qt__ct_f8_act_quantize(const float *x, void *row, int64_t n, const float *unused);
void qt__ct_f8_act_quantize_static(const float *x, void *row, int64_t n, float scale);
void qt__ct_f8_block_act_quantize(const float *x, void *row, int64_t n, const float *unused);

/* Scalar references of the dots (x: the weight row, y: the activation row). */
float qt__dot_ct_i8_ref(const void *x, const void *y, int64_t n);
float qt__dot_ct_f8_ref(const void *x, const void *y, int64_t n);
float qt__dot_ct_f8_block_ref(const void *x, const void *y, int64_t n);
/* The integer / exact sums the dots are built from (exposed for SIMD tails and tests). */
int32_t qt__ct_i8_sum_ref(const int8_t *a, const int8_t *b, int64_t n);
double qt__ct_f8_sum_ref(const uint8_t *a, const uint8_t *b, int64_t n);

#ifdef QT_ARCH_X86
float qt__dot_ct_i8_avx2(const void *x, const void *y, int64_t n);
float qt__dot_ct_f8_avx2(const void *x, const void *y, int64_t n);
float qt__dot_ct_f8_block_avx2(const void *x, const void *y, int64_t n);
float qt__dot_ct_i8_avx512(const void *x, const void *y, int64_t n);
float qt__dot_ct_f8_avx512(const void *x, const void *y, int64_t n);
float qt__dot_ct_f8_block_avx512(const void *x, const void *y, int64_t n);
#endif

/* The epilogues every variant shares: vLLM's ScaledEpilogue, D = s_a * (s_b * acc);
 * fp8-block: acc += (group_sum * s_a) * s_w per group of 128, in column order. */
static inline float qt__ct_epilogue(float acc, float s_w, float s_a) { return s_a * (s_w * acc); }

typedef int32_t (*qt__ct_i8_sum_fn)(const int8_t *a, const int8_t *b, int64_t n);
typedef double (*qt__ct_f8_sum_fn)(const uint8_t *a, const uint8_t *b, int64_t n);

/* The three dots over a kernel's exact sum (the scalar references pass theirs). */
static inline float qt__ct_i8_dot(const void *x, const void *y, int64_t n, qt__ct_i8_sum_fn sum) {
    const int32_t acc = sum((const int8_t *)x + 4, (const int8_t *)y + 4, n);
    return qt__ct_epilogue((float)acc, qt__ct_hdr(x, 0), qt__ct_hdr(y, 0));
}
static inline float qt__ct_f8_dot(const void *x, const void *y, int64_t n, qt__ct_f8_sum_fn sum) {
    const double acc = sum((const uint8_t *)x + 8, (const uint8_t *)y + 4, n);
    return qt__ct_epilogue((float)acc, qt__ct_hdr(x, 0), qt__ct_hdr(y, 0));
}
static inline float qt__ct_f8_block_dot(const void *x, const void *y, int64_t n, qt__ct_f8_sum_fn sum) {
    const int64_t ng = qt__ct_groups(n);
    const uint8_t *a = (const uint8_t *)x + 4 * ng, *b = (const uint8_t *)y + 4 * ng;
    float acc = 0.0f;
    for (int64_t g = 0; g < ng; g++) {
        const int64_t i0 = g * QT_CT_FP8_GROUP, len = n - i0 < QT_CT_FP8_GROUP ? n - i0 : QT_CT_FP8_GROUP;
        const float p = (float)sum(a + i0, b + i0, len);
        acc += (p * qt__ct_hdr(y, (int)g)) * qt__ct_hdr(x, (int)g);
    }
    return acc;
}

#endif
