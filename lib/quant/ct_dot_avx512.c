/* lib/quant/ct_dot_avx512.c — AVX-512 (VNNI) forms of the W8A8 dots (ct_rows.h),
 * exact sums like the references, so the same bits; tails by masked loads.
 *   int8: vpdpbusd takes unsigned x signed bytes, so the activation is offset by
 *         128 (a ^ 0x80 = a + 128 as u8) and 128 * sum(w), itself one vpdpbusd of
 *         0x80 bytes with w, is taken off: exact for any codes.
 *   e4m3: 16 codes decoded per step (ct_dot_avx2.c's bit placement), products in
 *         f32, summed in f64.
 */
#include <immintrin.h>

#include "ct_rows.h"

static int32_t i8_sum(const int8_t *a, const int8_t *b, int64_t n) {
    __m512i acc = _mm512_setzero_si512(), corr = _mm512_setzero_si512();
    const __m512i off = _mm512_set1_epi8((char)0x80);
    for (int64_t i = 0; i < n; i += 64) {
        const __mmask64 k = n - i >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (n - i)) - 1);
        const __m512i w = _mm512_maskz_loadu_epi8(k, a + i);
        const __m512i x = _mm512_maskz_loadu_epi8(k, b + i);
        acc = _mm512_dpbusd_epi32(acc, _mm512_xor_si512(x, off), w);
        corr = _mm512_dpbusd_epi32(corr, off, w);
    }
    return _mm512_reduce_add_epi32(_mm512_sub_epi32(acc, corr));
}

static inline __m512 e4m3x16(const uint8_t *p, __mmask16 k) {
    const __m512i v = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(k, p));
    const __m512i mag = _mm512_slli_epi32(_mm512_and_si512(v, _mm512_set1_epi32(0x7F)), 20);
    const __m512i sign = _mm512_slli_epi32(_mm512_and_si512(v, _mm512_set1_epi32(0x80)), 24);
    return _mm512_mul_ps(_mm512_castsi512_ps(_mm512_or_si512(mag, sign)), _mm512_set1_ps(0x1p120f));
}

static double f8_sum(const uint8_t *a, const uint8_t *b, int64_t n) {
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        const __m512 p = _mm512_mul_ps(e4m3x16(a + i, k), e4m3x16(b + i, k));
        lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(p)));
        hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(p), 1))));
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
}

float qt__dot_ct_i8_avx512(const void *x, const void *y, int64_t n) { return qt__ct_i8_dot(x, y, n, i8_sum); }
float qt__dot_ct_f8_avx512(const void *x, const void *y, int64_t n) { return qt__ct_f8_dot(x, y, n, f8_sum); }
float qt__dot_ct_f8_block_avx512(const void *x, const void *y, int64_t n) { return qt__ct_f8_block_dot(x, y, n, f8_sum); }
