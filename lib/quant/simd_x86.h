/* lib/quant/simd_x86.h — pieces shared by simd_avx2.c, simd_avx512.c and
 * dot_k_avx2.c (all compiled with at least AVX2; include in no other file). Static inline, so
 * each file compiles them with its own ISA flags. Same contract as simd.h:
 * operation for operation the scalar reference.
 */
#ifndef QT_QUANT_SIMD_X86_H
#define QT_QUANT_SIMD_X86_H

#include <immintrin.h>

#include "blocks.h"
#include "quanta/num.h"

/* Q4_K sub-block j's multipliers d*sc and dmin*m (as the scalar reference
 * rounds them). */
static inline void qt__q4_K_scale_min(int j, const uint8_t *scales, float d, float dmin, float *dj, float *mj) {
    uint8_t sc, m;
    qt__get_scale_min_k4(j, scales, &sc, &m);
    *dj = d * (float)sc;
    *mj = dmin * (float)m;
}

/* Q6_K: the 6-bit codes (0..63) of one 128-element half, one byte per
 * element; codes[k] holds elements 32k..32k+31. The low four bits come from
 * ql (k = 0, 1 low nibbles, k = 2, 3 high nibbles), the high two from qh at
 * bits 2k..2k+1. */
static inline void qt__q6_K_codes_avx2(const uint8_t *ql, const uint8_t *qh, __m256i codes[4]) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(0x03);
    const __m256i a = _mm256_loadu_si256((const __m256i *)ql);
    const __m256i b = _mm256_loadu_si256((const __m256i *)(ql + 32));
    const __m256i hb = _mm256_loadu_si256((const __m256i *)qh);
    const __m256i lo[4] = {_mm256_and_si256(a, low4), _mm256_and_si256(b, low4),
                           _mm256_and_si256(_mm256_srli_epi16(a, 4), low4),
                           _mm256_and_si256(_mm256_srli_epi16(b, 4), low4)};
    const __m256i hi[4] = {hb, _mm256_srli_epi16(hb, 2), _mm256_srli_epi16(hb, 4), _mm256_srli_epi16(hb, 6)};
    for (int k = 0; k < 4; k++) codes[k] = _mm256_or_si256(lo[k], _mm256_slli_epi16(_mm256_and_si256(hi[k], low2), 4));
}

/* Writes 32 floats from one vector of 32 byte codes and two factors: Q4_K
 * d*sc and dmin*m of the sub-block, Q6_K d*sc of its two 16-element halves.
 * Each kernel file has its own (8 or 16 lanes per store). */
typedef void (*qt__store32_fn)(float *y, __m256i codes, float a, float b);

/* The Q4_K and Q6_K block loops, the same at both widths. Inlined into each
 * file's kernel with its static store32, so that call is direct (and
 * inlined) too. */
static inline void qt__dequantize_q4_K_x86(const block_q4_K *x, float *y, int64_t n, qt__store32_fn store32) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = qt_fp16_to_f32(x[i].d), dmin = qt_fp16_to_f32(x[i].dmin);
        const uint8_t *q = x[i].qs;
        for (int c = 0; c < QK_K / 64; c++, q += 32, y += 64) {
            float d1, m1, d2, m2;
            qt__q4_K_scale_min(2 * c, x[i].scales, d, dmin, &d1, &m1);
            qt__q4_K_scale_min(2 * c + 1, x[i].scales, d, dmin, &d2, &m2);
            const __m256i bytes = _mm256_loadu_si256((const __m256i *)q);
            store32(y, _mm256_and_si256(bytes, low4), d1, m1);
            store32(y + 32, _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low4), d2, m2);
        }
    }
}

static inline void qt__dequantize_q6_K_x86(const block_q6_K *x, float *y, int64_t n, qt__store32_fn store32) {
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = qt_fp16_to_f32(x[i].d);
        for (int h = 0; h < 2; h++, y += 128) {
            const int8_t *sc = x[i].scales + 8 * h;
            __m256i codes[4];
            qt__q6_K_codes_avx2(x[i].ql + 64 * h, x[i].qh + 32 * h, codes);
            for (int k = 0; k < 4; k++) store32(y + 32 * k, codes[k], d * (float)sc[2 * k], d * (float)sc[2 * k + 1]);
        }
    }
}

/* compressed-tensors int4: the 8 nibbles of one packed word (element 8w + i
 * at bits 4i..4i+3) as (nibble - offset) * scale into out[0..7]. */
static inline void qt__ct_int4_word_avx2(int32_t word, __m256i offset, __m256 scale, float *out) {
    const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i u = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(word), shifts), _mm256_set1_epi32(15));
    _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(u, offset)), scale));
}

#endif
