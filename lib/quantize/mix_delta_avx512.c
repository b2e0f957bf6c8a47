/* lib/quantize/mix_delta_avx512.c — the output projection's move (mix_delta.h) with 8 tokens per
 * zmm of doubles: 32 tokens x 4 rows of (Wq - W) per pass (16 accumulators), then 8 tokens x 1 row,
 * the last tokens scalar. Each lane's sum runs over j in order, as the scalar reference's. */
#include <immintrin.h>

#include "mix_delta.h"

void qt__mix_delta_tail(const float *ht, int32_t n_tok, int32_t r0, int64_t ne0, const float *b, int32_t nv, double *d);

void qt__mix_delta_avx512(const float *ht, int32_t n_tok, int64_t ne0, const float *b, int32_t nv, double *d) {
    int32_t r = 0;
    for (; r + 32 <= n_tok; r += 32) {
        int32_t v = 0;
        for (; v + 4 <= nv; v += 4) {
            __m512d acc[4][4];
            for (int i = 0; i < 4; i++)
                for (int k = 0; k < 4; k++) acc[i][k] = _mm512_setzero_pd();
            const float *b0 = b + (int64_t)v * ne0;
            for (int64_t j = 0; j < ne0; j++) {
                const float *hj = ht + j * n_tok + r;
                const __m512d h0 = _mm512_cvtps_pd(_mm256_loadu_ps(hj)), h1 = _mm512_cvtps_pd(_mm256_loadu_ps(hj + 8));
                const __m512d h2 = _mm512_cvtps_pd(_mm256_loadu_ps(hj + 16)), h3 = _mm512_cvtps_pd(_mm256_loadu_ps(hj + 24));
                for (int i = 0; i < 4; i++) {
                    const __m512d w = _mm512_set1_pd((double)b0[i * ne0 + j]);
                    acc[i][0] = _mm512_fmadd_pd(h0, w, acc[i][0]);
                    acc[i][1] = _mm512_fmadd_pd(h1, w, acc[i][1]);
                    acc[i][2] = _mm512_fmadd_pd(h2, w, acc[i][2]);
                    acc[i][3] = _mm512_fmadd_pd(h3, w, acc[i][3]);
                }
            }
            for (int i = 0; i < 4; i++)
                for (int k = 0; k < 4; k++) _mm512_storeu_pd(d + (int64_t)(v + i) * n_tok + r + 8 * k, acc[i][k]);
        }
        for (; v < nv; v++) {
            __m512d acc[4] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd()};
            const float *bv = b + (int64_t)v * ne0;
            for (int64_t j = 0; j < ne0; j++) {
                const __m512d w = _mm512_set1_pd((double)bv[j]);
                for (int k = 0; k < 4; k++)
                    acc[k] = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_loadu_ps(ht + j * n_tok + r + 8 * k)), w, acc[k]);
            }
            for (int k = 0; k < 4; k++) _mm512_storeu_pd(d + (int64_t)v * n_tok + r + 8 * k, acc[k]);
        }
    }
    for (; r + 8 <= n_tok; r += 8)
        for (int32_t v = 0; v < nv; v++) {
            __m512d acc = _mm512_setzero_pd();
            const float *bv = b + (int64_t)v * ne0;
            for (int64_t j = 0; j < ne0; j++)
                acc = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_loadu_ps(ht + j * n_tok + r)), _mm512_set1_pd((double)bv[j]), acc);
            _mm512_storeu_pd(d + (int64_t)v * n_tok + r, acc);
        }
    if (r < n_tok) qt__mix_delta_tail(ht, n_tok, r, ne0, b, nv, d);
}
