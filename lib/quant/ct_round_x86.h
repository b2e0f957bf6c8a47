/* lib/quant/ct_round_x86.h — qt_ct_round_dtype on vector lanes, for the compressed-tensors
 * weight-only kernels (ct4_*.c, ct8_*.c): a decoded value rounded to the checkpoint's dtype.
 * bf16: round to nearest even on the bits (qt_f32_to_bf16; the values here are finite); f16:
 * F16C's round-to-nearest-even conversion; f32: unchanged. Include after <immintrin.h>. */
#ifndef QT_CT_ROUND_X86_H
#define QT_CT_ROUND_X86_H

static inline __attribute__((always_inline)) __m256 qt__ct_round_dtype8(__m256 v, uint32_t dt) {
    if (dt == QT_CT_BF16) {
        const __m256i u = _mm256_castps_si256(v);
        const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
        const __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
        return _mm256_castsi256_ps(_mm256_and_si256(r, _mm256_set1_epi32((int)0xffff0000u)));
    }
    if (dt == QT_CT_F16) return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    return v;
}

#ifdef __AVX512F__
static inline __attribute__((always_inline)) __m512 qt__ct_round_dtype16(__m512 v, uint32_t dt) {
    if (dt == QT_CT_BF16) {
        const __m512i u = _mm512_castps_si512(v);
        const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
        const __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
        return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32((int)0xffff0000u)));
    }
    if (dt == QT_CT_F16) return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    return v;
}
#endif
#endif
