/* lib/quant/q_iq_avx2.c — the IQ2 / IQ3 quantizers (q_iq.c) with their
 * neighbour search 8 neighbours at a time, one per lane (q_iq_nb.h): as
 * q_iq_avx512.c (each lane its neighbour's terms summed in coordinate order
 * from 0, looked up with vpermps in the coordinate's 8 levels; per lane the
 * first index of its smallest error, strictly below; the winner the smallest
 * index among the lanes at the overall minimum), the reference's bytes. A
 * list's last partial group of 8 is copied into a zeroed buffer (AVX2 has no
 * masked 16-bit load) and its unused lanes masked out of the comparison. */
#include <float.h>
#include <immintrin.h>
#include <string.h>

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
    __m256 tv[8];
    for (int i = 0; i < DIMS; i++) {
        const __m256 diff = _mm256_sub_ps(sv, _mm256_set1_ps(xval[i]));
        tv[i] = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(w[i]), diff), diff);
    }
    const __m256i mask = _mm256_set1_epi32((1 << bits) - 1), lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256 best = _mm256_set1_ps(FLT_MAX);
    __m256i best_j = _mm256_setzero_si256();
    for (int j0 = 0; j0 < n; j0 += 8) {
        uint16_t tail[8] = {0};
        const uint16_t *c8 = codes + j0;
        if (n - j0 < 8) c8 = memcpy(tail, codes + j0, sizeof(uint16_t) * (size_t)(n - j0));
        const __m256i jv = _mm256_add_epi32(lane, _mm256_set1_epi32(j0));
        const __m256i code = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)c8));
        __m256 d2 = _mm256_setzero_ps();
        for (int i = 0; i < DIMS; i++)
            d2 = _mm256_add_ps(d2, _mm256_permutevar8x32_ps(tv[i], _mm256_and_si256(_mm256_srli_epi32(code, bits * i), mask)));
        const __m256 live = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(n), jv));
        const __m256 lt = _mm256_and_ps(live, _mm256_cmp_ps(d2, best, _CMP_LT_OQ));
        best = _mm256_blendv_ps(best, d2, lt);
        best_j = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(best_j), _mm256_castsi256_ps(jv), lt));
    }
    float bv[8];
    int32_t bj[8];
    _mm256_storeu_ps(bv, best);
    _mm256_storeu_si256((__m256i *)bj, best_j);
    float m = FLT_MAX;
    int j = 0;
    for (int l = 0; l < 8; l++)
        if (bv[l] < m || (bv[l] == m && m < FLT_MAX && bj[l] < j)) {
            m = bv[l];
            j = bj[l];
        }
    return qt__iq_nb_levels(lat, nb[1 + j], L, DIMS);
}

int qt__iq_best_neighbour_avx2(const qt__iq_lattice *lat, uint32_t u, const float *xval, const float *w, float scale,
                               int kmaxq, int8_t *L) {
    return lat->dims == 8 ? nb_dims(lat, u, xval, w, scale, kmaxq, L, 8) : nb_dims(lat, u, xval, w, scale, kmaxq, L, 4);
}

#define QT_IQ_AVX2(name, T) QT__IQ_LATTICE_QUANTIZER(avx2, name, T)
QT__IQ_LATTICE_TYPES(QT_IQ_AVX2)
