/* lib/quant/dot_x86.h — pieces shared by the x86 dot kernel files
 * (dot_avx2.c, dot_k_avx2.c; include only in files compiled with AVX2).
 * Static inline, so each file compiles them with its own ISA flags.
 */
#ifndef QT_QUANT_DOT_X86_H
#define QT_QUANT_DOT_X86_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* high half + low half, then (0+2) + (1+3): dot.c's hsum8 (llama.cpp's hsum_float_8) */
static inline float qt__hsum8_avx(__m256 a) {
    __m128 t = _mm_add_ps(_mm256_extractf128_ps(a, 1), _mm256_castps256_ps128(a));
    t = _mm_add_ps(t, _mm_movehl_ps(t, t));
    t = _mm_add_ss(t, _mm_movehdup_ps(t));
    return _mm_cvtss_f32(t);
}

/* Eight int32 lanes, lane l = sum of x[e]*y[e] over e = 4l..4l+3, x and y
 * signed bytes with |x| <= 127 or y != -128: |x| times y signed by x,
 * adjacent pairs to i16 (no saturation: 2 * 128 * 127 < 2^15), then pairs to i32. */
static inline __m256i qt__lane_sums_i8(__m256i x, __m256i y) {
    const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

/* The same for x unsigned bytes (0..63 here: 2 * 63 * 127 < 2^15). */
static inline __m256i qt__lane_sums_u8(__m256i x, __m256i y) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), _mm256_set1_epi16(1));
}

/* 32 bits to 32 bytes: byte i = 0x10 if bit i of the 32-bit word is set, else 0
 * (Q5_0/Q5_1 fifth bits). */
static inline __m256i qt__bits_to_0x10(uint32_t bits) {
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits),
                                               _mm256_setr_epi64x(0, 0x0101010101010101LL, 0x0202020202020202LL,
                                                                  0x0303030303030303LL));
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
    return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

/* K-quant pieces shared by dot_k_avx2.c and the blocked kernels (gemm_x86.h). */

/* Sixteen int16 lanes of one 32-element group: lanes 0-7 (elements 0..15 in
 * maddubs pairs) get s[p], lanes 8-15 get s[p + 1]; s holds 16 signed bytes. */
static inline __m256i qt__k_pair_scales(__m128i s, int p) {
    const __m128i pick = _mm_set_epi64x((long long)(0x0101010101010101ULL * (uint64_t)(p + 1)),
                                        (long long)(0x0101010101010101ULL * (uint64_t)p));
    return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(s, pick));
}

/* Q3_K's sixteen scales minus 32 as signed bytes (dot.c q3_K_scales), four per
 * 32-bit word: scale j's low nibble is byte j % 8 of s[0..7] (low nibble for
 * j < 8, high for j >= 8), its two high bits come from s[8 + j % 4] at bits
 * 2 * (j / 4). */
static inline __m128i qt__q3_K_scales(const uint8_t s[12]) {
    uint32_t a[3];
    memcpy(a, s, 12);
    const uint32_t m4 = 0x0F0F0F0F, m2 = 0x03030303;
    const __m128i v = _mm_setr_epi32((int)((a[0] & m4) | (a[2] & m2) << 4), (int)((a[1] & m4) | ((a[2] >> 2) & m2) << 4),
                                     (int)(((a[0] >> 4) & m4) | ((a[2] >> 4) & m2) << 4),
                                     (int)(((a[1] >> 4) & m4) | ((a[2] >> 6) & m2) << 4));
    return _mm_sub_epi8(v, _mm_set1_epi8(32));
}

/* Q4_K/Q5_K's eight 6-bit scales and mins (qt__get_scale_min_k4), four per
 * 32-bit word: sc[0..7] into sc, m[0..7] into m. */
static inline void qt__k4_scales(const uint8_t s[12], uint8_t sc[8], uint8_t m[8]) {
    uint32_t a[3], out[4];
    memcpy(a, s, 12);
    const uint32_t m6 = 0x3F3F3F3F, m4 = 0x0F0F0F0F, m2 = 0x03030303;
    out[0] = a[0] & m6;
    out[1] = (a[2] & m4) | ((a[0] >> 6) & m2) << 4;
    out[2] = a[1] & m6;
    out[3] = ((a[2] >> 4) & m4) | ((a[1] >> 6) & m2) << 4;
    memcpy(sc, out, 8);
    memcpy(m, out + 2, 8);
}

#endif
