/* lib/quant/simd_avx2.c — AVX2 dequantizers (compiled with -mavx2 -mfma -mf16c
 * because of the file name; see CMakeLists.txt). Each one mirrors its scalar
 * reference operation for operation (lib/quant/simd.h) so the results are the
 * same bits: integer codes are widened exactly, converted to float, and then
 * multiplied (and for Q4_K the min subtracted) with one rounding per
 * operation, in the reference's order. Block scales are decoded with the same
 * scalar qt_fp16_to_f32 the reference uses.
 */
#include <immintrin.h>

#include "blocks.h"
#include "ct_internal.h"
#include "quanta/num.h"
#include "simd.h"
#include "simd_x86.h"
#include "kernels.h"

/* 8 unsigned bytes (the low half of b) minus `bias`, as floats times d. */
static inline __m256 u8x8_to_ps(__m128i b, __m256i bias) {
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepu8_epi32(b), bias));
}

/* ---- Q4_0: y = (nibble - 8) * d ------------------------------------------- */

void qt__dequantize_q4_0_avx2(const void *src, float *y, int64_t n) {
    const block_q4_0 *x = src;
    const __m128i low4 = _mm_set1_epi8(0x0F);
    const __m256i eight = _mm256_set1_epi32(8);
    for (int64_t ib = 0; ib < n / QK4_0; ib++, y += QK4_0) {
        const __m256 d = _mm256_set1_ps(qt_fp16_to_f32(x[ib].d));
        const __m128i qs = _mm_loadu_si128((const __m128i *)x[ib].qs);
        const __m128i lo = _mm_and_si128(qs, low4);                      /* elements 0..15 */
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(qs, 4), low4);   /* elements 16..31 */
        _mm256_storeu_ps(y + 0, _mm256_mul_ps(u8x8_to_ps(lo, eight), d));
        _mm256_storeu_ps(y + 8, _mm256_mul_ps(u8x8_to_ps(_mm_srli_si128(lo, 8), eight), d));
        _mm256_storeu_ps(y + 16, _mm256_mul_ps(u8x8_to_ps(hi, eight), d));
        _mm256_storeu_ps(y + 24, _mm256_mul_ps(u8x8_to_ps(_mm_srli_si128(hi, 8), eight), d));
    }
}

/* ---- Q8_0: y = q * d ---------------------------------------------------------- */

void qt__dequantize_q8_0_avx2(const void *src, float *y, int64_t n) {
    const block_q8_0 *x = src;
    for (int64_t ib = 0; ib < n / QK8_0; ib++, y += QK8_0) {
        const __m256 d = _mm256_set1_ps(qt_fp16_to_f32(x[ib].d));
        const __m128i a = _mm_loadu_si128((const __m128i *)x[ib].qs);
        const __m128i b = _mm_loadu_si128((const __m128i *)(x[ib].qs + 16));
        _mm256_storeu_ps(y + 0, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(a)), d));
        _mm256_storeu_ps(y + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(a, 8))), d));
        _mm256_storeu_ps(y + 16, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)), d));
        _mm256_storeu_ps(y + 24, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(b, 8))), d));
    }
}

/* ---- Q4_K: y = d*sc * nibble - dmin*m per 32-element sub-block ---------------- */

/* 32 nibbles (one byte each in v) -> y[0..31] = d * q - m */
static inline void q4k_store32(float *y, __m256i v, float dj, float mj) {
    const __m256 d = _mm256_set1_ps(dj), m = _mm256_set1_ps(mj);
    const __m256i zero = _mm256_setzero_si256();
    const __m128i a = _mm256_castsi256_si128(v), b = _mm256_extracti128_si256(v, 1);
    _mm256_storeu_ps(y + 0, _mm256_sub_ps(_mm256_mul_ps(d, u8x8_to_ps(a, zero)), m));
    _mm256_storeu_ps(y + 8, _mm256_sub_ps(_mm256_mul_ps(d, u8x8_to_ps(_mm_srli_si128(a, 8), zero)), m));
    _mm256_storeu_ps(y + 16, _mm256_sub_ps(_mm256_mul_ps(d, u8x8_to_ps(b, zero)), m));
    _mm256_storeu_ps(y + 24, _mm256_sub_ps(_mm256_mul_ps(d, u8x8_to_ps(_mm_srli_si128(b, 8), zero)), m));
}

void qt__dequantize_q4_K_avx2(const void *src, float *y, int64_t n) {
    qt__dequantize_q4_K_x86(src, y, n, q4k_store32);
}

/* ---- Q6_K: y = (d*sc) * (6-bit code - 32) per 16-element sub-block ------------ */

/* 32 codes (one byte each) -> y[0..31]; elements 0..15 use ds0, 16..31 ds1. */
static inline void q6k_store32(float *y, __m256i v, float ds0, float ds1) {
    const __m256i bias = _mm256_set1_epi32(32);
    const __m256 s0 = _mm256_set1_ps(ds0), s1 = _mm256_set1_ps(ds1);
    const __m128i a = _mm256_castsi256_si128(v), b = _mm256_extracti128_si256(v, 1);
    _mm256_storeu_ps(y + 0, _mm256_mul_ps(s0, u8x8_to_ps(a, bias)));
    _mm256_storeu_ps(y + 8, _mm256_mul_ps(s0, u8x8_to_ps(_mm_srli_si128(a, 8), bias)));
    _mm256_storeu_ps(y + 16, _mm256_mul_ps(s1, u8x8_to_ps(b, bias)));
    _mm256_storeu_ps(y + 24, _mm256_mul_ps(s1, u8x8_to_ps(_mm_srli_si128(b, 8), bias)));
}

void qt__dequantize_q6_K_avx2(const void *src, float *y, int64_t n) {
    qt__dequantize_q6_K_x86(src, y, n, q6k_store32);
}

/* ---- compressed-tensors int4 groups: y = (nibble - 8 - zp) * scale ------------- */

void qt__ct_int4_row_avx2(const int32_t *packed, const float *scales, const int8_t *zero_points,
                          int64_t cols, int64_t group_size, float *out) {
    const int64_t words_per_group = group_size / 8;
    for (int64_t g = 0; g < cols / group_size; g++) {
        const __m256i offset = _mm256_set1_epi32(8 + (zero_points ? zero_points[g] : 0));
        const __m256 s = _mm256_set1_ps(scales[g]);
        for (int64_t w = g * words_per_group; w < (g + 1) * words_per_group; w++)
            qt__ct_int4_word_avx2(packed[w], offset, s, out + 8 * w);
    }
}

/* ---- F16 / BF16 rows: y = the half's value ---------------------------------
 * Every f16 and every bf16 is exactly an f32: F16C's VCVTPH2PS gives the
 * reference's bits (NaNs quieted as its multiply quiets them: test_simd's
 * edge halves), and a bf16 is the high half of its f32. */

void qt__dequantize_f16_avx2(const void *src, float *y, int64_t n) {
    const uint8_t *x = src;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + 2 * i))));
    if (i < n) qt__dequantize_f16(x + 2 * i, y + i, n - i);
}

void qt__dequantize_bf16_avx2(const void *src, float *y, int64_t n) {
    const uint8_t *x = src;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(x + 2 * i)));
        _mm256_storeu_ps(y + i, _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
    }
    if (i < n) qt__dequantize_bf16(x + 2 * i, y + i, n - i);
}
