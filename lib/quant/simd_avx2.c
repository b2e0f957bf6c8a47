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

/* ggml's get_scale_min_k4 (formats.md §3.4). */
static inline void scale_min_k4(int j, const uint8_t *q, float d, float dmin, float *dj, float *mj) {
    uint8_t sc, m;
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
    *dj = d * (float)sc;
    *mj = dmin * (float)m;
}

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
    const block_q4_K *x = src;
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = qt_fp16_to_f32(x[i].d), dmin = qt_fp16_to_f32(x[i].dmin);
        const uint8_t *q = x[i].qs;
        for (int c = 0; c < QK_K / 64; c++, q += 32, y += 64) {
            float d1, m1, d2, m2;
            scale_min_k4(2 * c, x[i].scales, d, dmin, &d1, &m1);
            scale_min_k4(2 * c + 1, x[i].scales, d, dmin, &d2, &m2);
            const __m256i bytes = _mm256_loadu_si256((const __m256i *)q);
            q4k_store32(y, _mm256_and_si256(bytes, low4), d1, m1);
            q4k_store32(y + 32, _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low4), d2, m2);
        }
    }
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
    const block_q6_K *x = src;
    const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(0x03);
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = qt_fp16_to_f32(x[i].d);
        for (int h = 0; h < 2; h++, y += 128) {
            const uint8_t *ql = x[i].ql + 64 * h, *qh = x[i].qh + 32 * h;
            const int8_t *sc = x[i].scales + 8 * h;
            const __m256i a = _mm256_loadu_si256((const __m256i *)ql);
            const __m256i b = _mm256_loadu_si256((const __m256i *)(ql + 32));
            const __m256i hb = _mm256_loadu_si256((const __m256i *)qh);
            /* the high two bits of each code sit in qh at bits 0-1, 2-3, 4-5, 6-7 */
            const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(hb, low2), 4);
            const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), low2), 4);
            const __m256i h2 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), low2), 4);
            const __m256i h3 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), low2), 4);
            const __m256i q1 = _mm256_or_si256(_mm256_and_si256(a, low4), h0);
            const __m256i q2 = _mm256_or_si256(_mm256_and_si256(b, low4), h1);
            const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), low4), h2);
            const __m256i q4 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), low4), h3);
            q6k_store32(y + 0, q1, d * (float)sc[0], d * (float)sc[1]);
            q6k_store32(y + 32, q2, d * (float)sc[2], d * (float)sc[3]);
            q6k_store32(y + 64, q3, d * (float)sc[4], d * (float)sc[5]);
            q6k_store32(y + 96, q4, d * (float)sc[6], d * (float)sc[7]);
        }
    }
}

/* ---- compressed-tensors int4 groups: y = (nibble - 8 - zp) * scale ------------- */

void qt__ct_int4_row_avx2(const int32_t *packed, const float *scales, const int8_t *zero_points,
                          int64_t cols, int64_t group_size, float *out) {
    const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i low4 = _mm256_set1_epi32(15);
    const int64_t words_per_group = group_size / 8;
    for (int64_t g = 0; g < cols / group_size; g++) {
        const __m256i offset = _mm256_set1_epi32(8 + (zero_points ? zero_points[g] : 0));
        const __m256 s = _mm256_set1_ps(scales[g]);
        for (int64_t w = g * words_per_group; w < (g + 1) * words_per_group; w++) {
            const __m256i u = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(packed[w]), shifts), low4);
            _mm256_storeu_ps(out + 8 * w, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(u, offset)), s));
        }
    }
}
