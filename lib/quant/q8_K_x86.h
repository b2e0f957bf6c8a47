/* lib/quant/q8_K_x86.h — pieces of the SIMD Q8_K activation quantizers
 * (q_k_avx2.c, q_k_avx512.c), whose bytes equal qt__quantize_q8_K's
 * (quantize_row_q8_K_ref) for every input, NaN and infinities included.
 * Included only by files compiled with AVX2 (or wider) flags. */
#ifndef QT_QUANT_Q8_K_X86_H
#define QT_QUANT_Q8_K_X86_H

#include <immintrin.h>
#include <stdint.h>

/* qt__nearest_int(v) on 8 lanes (quant_util.h): v + 1.5 * 2^23 rounds to nearest even, the
 * integer sits in the low mantissa bits; the same float ops give the same bits for any v. */
static inline __m256i qt__nearest_int_avx2(__m256 v) {
    const __m256i bits = _mm256_castps_si256(_mm256_add_ps(v, _mm256_set1_ps(12582912.0f)));
    return _mm256_sub_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x00400000));
}

/* bsums[k] = the sum of qs[16k .. 16k+15]: byte pairs by maddubs against ones, quads by madd,
 * then two hadds leave [bs0 bs2 bs4 bs6 | bs1 bs3 bs5 bs7] (and 8..15), interleaved back by
 * the final unpacks. |sum| <= 16 * 128, so no step saturates. */
static inline void qt__q8_K_bsums_avx2(const int8_t qs[256], int16_t bsums[16]) {
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    __m256i s[8];
    for (int k = 0; k < 8; k++)
        s[k] = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, _mm256_loadu_si256((const __m256i *)(qs + 32 * k))), ones16);
    const __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
    const __m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(s[4], s[5]), _mm256_hadd_epi32(s[6], s[7]));
    const __m256i p = _mm256_packs_epi32(a, b); /* [bs0 bs2 .. bs14 | bs1 bs3 .. bs15] */
    const __m128i even = _mm256_castsi256_si128(p), odd = _mm256_extracti128_si256(p, 1);
    _mm_storeu_si128((__m128i *)bsums, _mm_unpacklo_epi16(even, odd));
    _mm_storeu_si128((__m128i *)(bsums + 8), _mm_unpackhi_epi16(even, odd));
}

#endif
