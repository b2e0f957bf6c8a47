/* lib/quant/simd_avx512.c — AVX-512 (F/BW/VL) dequantizers, 16 lanes. Same
 * contract as simd_avx2.c: operation for operation the scalar reference, so
 * the output bits are identical (lib/quant/simd.h).
 */
#include <immintrin.h>

#include "blocks.h"
#include "ct_internal.h"
#include "quanta/num.h"
#include "simd.h"
#include "simd_x86.h"

/* 16 unsigned bytes minus `bias`, as floats. */
static inline __m512 u8x16_to_ps(__m128i b, __m512i bias) {
    return _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(b), bias));
}

/* ---- Q4_0 ---------------------------------------------------------------------- */

void qt__dequantize_q4_0_avx512(const void *src, float *y, int64_t n) {
    const block_q4_0 *x = src;
    const __m128i low4 = _mm_set1_epi8(0x0F);
    const __m512i eight = _mm512_set1_epi32(8);
    for (int64_t ib = 0; ib < n / QK4_0; ib++, y += QK4_0) {
        const __m512 d = _mm512_set1_ps(qt_fp16_to_f32(x[ib].d));
        const __m128i qs = _mm_loadu_si128((const __m128i *)x[ib].qs);
        _mm512_storeu_ps(y + 0, _mm512_mul_ps(u8x16_to_ps(_mm_and_si128(qs, low4), eight), d));
        _mm512_storeu_ps(y + 16, _mm512_mul_ps(u8x16_to_ps(_mm_and_si128(_mm_srli_epi16(qs, 4), low4), eight), d));
    }
}

/* ---- Q8_0 ------------------------------------------------------------------------ */

void qt__dequantize_q8_0_avx512(const void *src, float *y, int64_t n) {
    const block_q8_0 *x = src;
    for (int64_t ib = 0; ib < n / QK8_0; ib++, y += QK8_0) {
        const __m512 d = _mm512_set1_ps(qt_fp16_to_f32(x[ib].d));
        const __m128i a = _mm_loadu_si128((const __m128i *)x[ib].qs);
        const __m128i b = _mm_loadu_si128((const __m128i *)(x[ib].qs + 16));
        _mm512_storeu_ps(y + 0, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(a)), d));
        _mm512_storeu_ps(y + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b)), d));
    }
}

/* ---- Q4_K ------------------------------------------------------------------------ */

static inline void q4k_store32(float *y, __m256i v, float dj, float mj) {
    const __m512 d = _mm512_set1_ps(dj), m = _mm512_set1_ps(mj);
    const __m512i zero = _mm512_setzero_si512();
    _mm512_storeu_ps(y + 0, _mm512_sub_ps(_mm512_mul_ps(d, u8x16_to_ps(_mm256_castsi256_si128(v), zero)), m));
    _mm512_storeu_ps(y + 16, _mm512_sub_ps(_mm512_mul_ps(d, u8x16_to_ps(_mm256_extracti128_si256(v, 1), zero)), m));
}

void qt__dequantize_q4_K_avx512(const void *src, float *y, int64_t n) {
    qt__dequantize_q4_K_x86(src, y, n, q4k_store32);
}

/* ---- Q6_K ------------------------------------------------------------------------ */

static inline void q6k_store32(float *y, __m256i v, float ds0, float ds1) {
    const __m512i bias = _mm512_set1_epi32(32);
    _mm512_storeu_ps(y + 0, _mm512_mul_ps(_mm512_set1_ps(ds0), u8x16_to_ps(_mm256_castsi256_si128(v), bias)));
    _mm512_storeu_ps(y + 16, _mm512_mul_ps(_mm512_set1_ps(ds1), u8x16_to_ps(_mm256_extracti128_si256(v, 1), bias)));
}

void qt__dequantize_q6_K_avx512(const void *src, float *y, int64_t n) {
    qt__dequantize_q6_K_x86(src, y, n, q6k_store32);
}

/* ---- compressed-tensors int4 groups ------------------------------------------------ */

void qt__ct_int4_row_avx512(const int32_t *packed, const float *scales, const int8_t *zero_points,
                            int64_t cols, int64_t group_size, float *out) {
    const __m512i shifts = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28);
    const __m512i low4 = _mm512_set1_epi32(15);
    const int64_t words_per_group = group_size / 8;
    for (int64_t g = 0; g < cols / group_size; g++) {
        const int offset = 8 + (zero_points ? zero_points[g] : 0);
        const __m512i off = _mm512_set1_epi32(offset);
        const __m512 s = _mm512_set1_ps(scales[g]);
        int64_t w = g * words_per_group;
        const int64_t end = w + words_per_group;
        for (; w + 2 <= end; w += 2) { /* two words -> 16 lanes */
            const __m512i words = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi32(packed[w])),
                                                     _mm256_set1_epi32(packed[w + 1]), 1);
            const __m512i u = _mm512_and_si512(_mm512_srlv_epi32(words, shifts), low4);
            _mm512_storeu_ps(out + 8 * w, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(u, off)), s));
        }
        if (w < end) /* odd word count (group size 8 mod 16) */
            qt__ct_int4_word_avx2(packed[w], _mm256_set1_epi32(offset), _mm256_set1_ps(scales[g]), out + 8 * w);
    }
}
