/* lib/quant/q_k_avx2.c — the K-quant quantizers (q_k.c) with their sub-block
 * searches 8 groups at a time, one per lane (fit_lanes.h): the reference's
 * bytes, faster. Rows in lib/quant/variants.c. */
#define QT_LANES 8
#include <string.h>

#include "fit_lanes.h"
#include "blocks.h"
#include "kernels.h"
#include "q8_K_x86.h"
#include "simd.h"

static const qt__fit_batch fit_avx2 = QT_FIT_LANES_BATCH;

const qt__fit_batch *qt__fit_batch_avx2(void) { return &fit_avx2; }

void qt__quantize_q2_K_avx2(const float *src, void *dst, int64_t n, const float *imatrix) {
    qt__quantize_q2_K_fit(src, dst, n, imatrix, &fit_avx2);
}

void qt__quantize_q3_K_avx2(const float *src, void *dst, int64_t n, const float *imatrix) {
    qt__quantize_q3_K_fit(src, dst, n, imatrix, &fit_avx2);
}

void qt__quantize_q4_K_avx2(const float *src, void *dst, int64_t n, const float *imatrix) {
    qt__quantize_q4_K_fit(src, dst, n, imatrix, &fit_avx2);
}

void qt__quantize_q5_K_avx2(const float *src, void *dst, int64_t n, const float *imatrix) {
    qt__quantize_q5_K_fit(src, dst, n, imatrix, &fit_avx2);
}

void qt__quantize_q6_K_avx2(const float *src, void *dst, int64_t n, const float *imatrix) {
    qt__quantize_q6_K_fit(src, dst, n, imatrix, &fit_avx2);
}

/* qt__quantize_q8_K's bytes, 8 lanes: max |x| by vmaxps with the running maximum second (a NaN
 * |x| leaves it, as the reference's `ax > amax` skips NaN), then the first lane equal to it for
 * the signed max (the reference's first-wins scan); codes by the reference's float ops and
 * qt__nearest_int, min 127, then their low bytes (AND 0xFF and unsigned packs truncate as the
 * reference's int8 cast does, also for the huge values an infinite iscale gives). */
void qt__quantize_q8_K_avx2(const float *src, void *dst, int64_t n, const float *imatrix) {
    (void)imatrix;
    block_q8_K *y = dst;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7); /* undo the packs' lane interleave */
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float *x = src + i * QK_K;
        __m256 m[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
        for (int k = 0; k < QK_K / 8; k++) m[k % 4] = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)), m[k % 4]);
        const __m256 m8 = _mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3]));
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps(m8, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_movehdup_ps(h));
        const float amax = _mm_cvtss_f32(h);
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const __m256 va = _mm256_set1_ps(amax);
        int first = 0;
        for (int k = 0; k < QK_K / 8; k++) {
            const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)), va, _CMP_EQ_OQ));
            if (hit) { first = 8 * k + __builtin_ctz((unsigned)hit); break; }
        }
        const float iscale = -127.0f / x[first];
        const __m256 vs = _mm256_set1_ps(iscale);
        const __m256i top = _mm256_set1_epi32(127), low = _mm256_set1_epi32(0xFF);
        for (int k = 0; k < QK_K / 32; k++) {
            __m256i q[4];
            for (int l = 0; l < 4; l++) {
                const __m256i v = qt__nearest_int_avx2(_mm256_mul_ps(vs, _mm256_loadu_ps(x + 32 * k + 8 * l)));
                q[l] = _mm256_and_si256(_mm256_min_epi32(v, top), low);
            }
            const __m256i p = _mm256_packus_epi16(_mm256_packus_epi32(q[0], q[1]), _mm256_packus_epi32(q[2], q[3]));
            _mm256_storeu_si256((__m256i *)(y[i].qs + 32 * k), _mm256_permutevar8x32_epi32(p, order));
        }
        qt__q8_K_bsums_avx2(y[i].qs, y[i].bsums);
        y[i].d = 1.0f / iscale;
    }
}
