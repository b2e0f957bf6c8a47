/* lib/quant/q_iq_avx512.c — the IQ2 / IQ3 quantizers (q_iq.c) with their
 * neighbour search 16 neighbours at a time, one per lane (q_iq_nb.h): each
 * lane sums its neighbour's 4 or 8 terms in coordinate order from 0, as the
 * scalar reference does, looking each term up with vpermps in the
 * coordinate's 8 levels; each lane keeps the first index of its smallest
 * error (strictly below, so NaN never wins), and the winner is the smallest
 * index among the lanes holding the overall minimum: the scalar search's
 * first neighbour of least error. The reference's bytes, faster. Rows in
 * lib/quant/variants.c. */
#include <float.h>
#include <immintrin.h>
#include <limits.h>

#include "q_iq_nb.h"

static inline __attribute__((always_inline)) int nb_dims(const qt__iq_lattice *lat, uint32_t u, const float *xval,
                                                         const float *w, float scale, int kmaxq, int8_t *L,
                                                         const int DIMS) {
    const int64_t off = -(int64_t)lat->map[u] - 1;
    const uint16_t *nb = lat->neighbours + off, *codes = lat->neighbour_codes + off + 1;
    const int bits = DIMS == 8 ? 2 : 3, n = nb[0];
    /* qt__iq_nb_terms' term[i][l] in lane l (the same two products of the same operands; lanes
     * l >= kmaxq are never looked up) */
    (void)kmaxq;
    const __m256 odd = _mm256_setr_ps(1, 3, 5, 7, 9, 11, 13, 15), sv = _mm256_mul_ps(_mm256_set1_ps(scale), odd);
    __m512 tv[8];
    for (int i = 0; i < DIMS; i++) {
        const __m256 diff = _mm256_sub_ps(sv, _mm256_set1_ps(xval[i]));
        tv[i] = _mm512_castps256_ps512(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(w[i]), diff), diff));
    }
    const __m512i mask = _mm512_set1_epi32((1 << bits) - 1), lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512 best = _mm512_set1_ps(FLT_MAX);
    __m512i best_j = _mm512_setzero_si512();
    for (int j0 = 0; j0 < n; j0 += 16) {
        const __mmask16 live = n - j0 >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j0)) - 1);
        const __m512i code = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(live, codes + j0));
        __m512 d2 = _mm512_setzero_ps();
        for (int i = 0; i < DIMS; i++)
            d2 = _mm512_add_ps(d2, _mm512_permutexvar_ps(_mm512_and_si512(_mm512_srli_epi32(code, bits * i), mask), tv[i]));
        const __mmask16 lt = _mm512_mask_cmp_ps_mask(live, d2, best, _CMP_LT_OQ);
        best = _mm512_mask_mov_ps(best, lt, d2);
        best_j = _mm512_mask_mov_epi32(best_j, lt, _mm512_add_epi32(lane, _mm512_set1_epi32(j0)));
    }
    const float m = _mm512_reduce_min_ps(best);
    int j = 0;
    if (m < FLT_MAX) {
        const __mmask16 at = _mm512_cmp_ps_mask(best, _mm512_set1_ps(m), _CMP_EQ_OQ);
        j = _mm512_reduce_min_epi32(_mm512_mask_mov_epi32(_mm512_set1_epi32(INT_MAX), at, best_j));
    }
    return qt__iq_nb_levels(lat, nb[1 + j], L, DIMS);
}

int qt__iq_best_neighbour_avx512(const qt__iq_lattice *lat, uint32_t u, const float *xval, const float *w, float scale,
                                 int kmaxq, int8_t *L) {
    return lat->dims == 8 ? nb_dims(lat, u, xval, w, scale, kmaxq, L, 8) : nb_dims(lat, u, xval, w, scale, kmaxq, L, 4);
}

#define QT_IQ_AVX512(name, T) QT__IQ_LATTICE_QUANTIZER(avx512, name, T)
QT__IQ_LATTICE_TYPES(QT_IQ_AVX512)
