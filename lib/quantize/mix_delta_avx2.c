/* lib/quantize/mix_delta_avx2.c — the output projection's move (mix_delta.h) with 4 tokens per ymm
 * of doubles: 16 tokens x 2 rows of (Wq - W) per pass (8 accumulators), then 4 tokens x 1 row, the
 * last tokens scalar. Each lane's sum runs over j in order, as the scalar reference's. */
#include <immintrin.h>

#include "mix_delta.h"

void qt__mix_delta_tail(const float *ht, int32_t n_tok, int32_t r0, int64_t ne0, const float *b, int32_t nv, double *d);

void qt__mix_delta_avx2(const float *ht, int32_t n_tok, int64_t ne0, const float *b, int32_t nv, double *d) {
    int32_t r = 0;
    for (; r + 16 <= n_tok; r += 16) {
        int32_t v = 0;
        for (; v + 2 <= nv; v += 2) {
            __m256d a0[4], a1[4];
            for (int k = 0; k < 4; k++) a0[k] = a1[k] = _mm256_setzero_pd();
            const float *b0 = b + (int64_t)v * ne0, *b1 = b0 + ne0;
            for (int64_t j = 0; j < ne0; j++) {
                const float *hj = ht + j * n_tok + r;
                const __m256d w0 = _mm256_set1_pd((double)b0[j]), w1 = _mm256_set1_pd((double)b1[j]);
                for (int k = 0; k < 4; k++) {
                    const __m256d h = _mm256_cvtps_pd(_mm_loadu_ps(hj + 4 * k));
                    a0[k] = _mm256_fmadd_pd(h, w0, a0[k]);
                    a1[k] = _mm256_fmadd_pd(h, w1, a1[k]);
                }
            }
            for (int k = 0; k < 4; k++) {
                _mm256_storeu_pd(d + (int64_t)v * n_tok + r + 4 * k, a0[k]);
                _mm256_storeu_pd(d + (int64_t)(v + 1) * n_tok + r + 4 * k, a1[k]);
            }
        }
        for (; v < nv; v++) {
            __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
            const float *bv = b + (int64_t)v * ne0;
            for (int64_t j = 0; j < ne0; j++) {
                const __m256d w = _mm256_set1_pd((double)bv[j]);
                for (int k = 0; k < 4; k++)
                    acc[k] = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm_loadu_ps(ht + j * n_tok + r + 4 * k)), w, acc[k]);
            }
            for (int k = 0; k < 4; k++) _mm256_storeu_pd(d + (int64_t)v * n_tok + r + 4 * k, acc[k]);
        }
    }
    for (; r + 4 <= n_tok; r += 4)
        for (int32_t v = 0; v < nv; v++) {
            __m256d acc = _mm256_setzero_pd();
            const float *bv = b + (int64_t)v * ne0;
            for (int64_t j = 0; j < ne0; j++)
                acc = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm_loadu_ps(ht + j * n_tok + r)), _mm256_set1_pd((double)bv[j]), acc);
            _mm256_storeu_pd(d + (int64_t)v * n_tok + r, acc);
        }
    if (r < n_tok) qt__mix_delta_tail(ht, n_tok, r, ne0, b, nv, d);
}
