/* lib/quant/ct_dot_avx2.c — AVX2 forms of the W8A8 dots (ct_rows.h): the same
 * exact sums as the scalar references, so the same bits.
 *   int8: maddubs(|w|, sign(a, w)) then madd with ones: pairs of products
 *         (<= 128 * 127 * 2) fit int16, sums in int32. Needs activation codes in
 *         [-127, 127], which the per-token quantizer guarantees (|x| * 127 / absmax).
 *   e4m3: decoded to f32 by placing its 7 bits at f32 bits 20..26 and scaling by
 *         2^120 (subnormals included), products exact in f32, summed in f64.
 */
#include <immintrin.h>

#include "ct_rows.h"

static int32_t i8_sum(const int8_t *a, const int8_t *b, int64_t n) {
    __m256i acc = _mm256_setzero_si256();
    const __m256i ones = _mm256_set1_epi16(1);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m256i w = _mm256_loadu_si256((const __m256i *)(a + i));
        const __m256i x = _mm256_loadu_si256((const __m256i *)(b + i));
        const __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, ones));
    }
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s) + qt__ct_i8_sum_ref(a + i, b + i, n - i);
}

static inline __m256 e4m3x8(const uint8_t *p) {
    const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
    const __m256i mag = _mm256_slli_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0x7F)), 20);
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0x80)), 24);
    return _mm256_mul_ps(_mm256_castsi256_ps(_mm256_or_si256(mag, sign)), _mm256_set1_ps(0x1p120f));
}

static double f8_sum(const uint8_t *a, const uint8_t *b, int64_t n) {
    __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 p = _mm256_mul_ps(e4m3x8(a + i), e4m3x8(b + i));
        lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(p)));
        hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(p, 1)));
    }
    double t[4];
    _mm256_storeu_pd(t, _mm256_add_pd(lo, hi));
    return ((t[0] + t[1]) + (t[2] + t[3])) + qt__ct_f8_sum_ref(a + i, b + i, n - i);
}

float qt__dot_ct_i8_avx2(const void *x, const void *y, int64_t n) { return qt__ct_i8_dot(x, y, n, i8_sum); }
float qt__dot_ct_f8_avx2(const void *x, const void *y, int64_t n) { return qt__ct_f8_dot(x, y, n, f8_sum); }
float qt__dot_ct_f8_block_avx2(const void *x, const void *y, int64_t n) { return qt__ct_f8_block_dot(x, y, n, f8_sum); }
