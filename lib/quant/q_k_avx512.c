/* lib/quant/q_k_avx512.c — the K-quant quantizers (q_k.c) with their sub-block
 * searches 16 groups at a time, one per lane (fit_lanes.h): the reference's
 * bytes, faster. Rows in lib/quant/variants.c. */
#define QT_LANES 16
#include <string.h>

#include "fit_lanes.h"
#include "blocks.h"
#include "kernels.h"
#include "q8_K_x86.h"
#include "simd.h"

static const qt__fit_batch fit_avx512 = QT_FIT_LANES_BATCH;

const qt__fit_batch *qt__fit_batch_avx512(void) { return &fit_avx512; }

void qt__quantize_q2_K_avx512(const float *src, void *dst, int64_t n, const float *imatrix) {
    qt__quantize_q2_K_fit(src, dst, n, imatrix, &fit_avx512);
}

void qt__quantize_q3_K_avx512(const float *src, void *dst, int64_t n, const float *imatrix) {
    qt__quantize_q3_K_fit(src, dst, n, imatrix, &fit_avx512);
}

void qt__quantize_q4_K_avx512(const float *src, void *dst, int64_t n, const float *imatrix) {
    qt__quantize_q4_K_fit(src, dst, n, imatrix, &fit_avx512);
}

void qt__quantize_q5_K_avx512(const float *src, void *dst, int64_t n, const float *imatrix) {
    qt__quantize_q5_K_fit(src, dst, n, imatrix, &fit_avx512);
}

void qt__quantize_q6_K_avx512(const float *src, void *dst, int64_t n, const float *imatrix) {
    qt__quantize_q6_K_fit(src, dst, n, imatrix, &fit_avx512);
}

/* qt__quantize_q8_K_avx2's steps (the reference's bytes, same reasons), 16 lanes: vpmovdb
 * truncates to the low byte as the reference's int8 cast does. */
void qt__quantize_q8_K_avx512(const float *src, void *dst, int64_t n, const float *imatrix) {
    (void)imatrix;
    block_q8_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float *x = src + i * QK_K;
        __m512 m[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
        for (int k = 0; k < QK_K / 16; k++) m[k % 4] = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + 16 * k)), m[k % 4]);
        const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m[0], m[1]), _mm512_max_ps(m[2], m[3])));
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const __m512 va = _mm512_set1_ps(amax);
        int first = 0;
        for (int k = 0; k < QK_K / 16; k++) {
            const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(x + 16 * k)), va, _CMP_EQ_OQ);
            if (hit) { first = 16 * k + __builtin_ctz((unsigned)hit); break; }
        }
        const float iscale = -127.0f / x[first];
        const __m512 vs = _mm512_set1_ps(iscale), magic = _mm512_set1_ps(12582912.0f);
        const __m512i mant = _mm512_set1_epi32(0x007fffff), bias = _mm512_set1_epi32(0x00400000), top = _mm512_set1_epi32(127);
        for (int k = 0; k < QK_K / 16; k++) {
            const __m512 b = _mm512_add_ps(_mm512_mul_ps(vs, _mm512_loadu_ps(x + 16 * k)), magic);
            const __m512i v = _mm512_sub_epi32(_mm512_and_si512(_mm512_castps_si512(b), mant), bias);
            _mm_storeu_si128((__m128i *)(y[i].qs + 16 * k), _mm512_cvtepi32_epi8(_mm512_min_epi32(v, top)));
        }
        qt__q8_K_bsums_avx2(y[i].qs, y[i].bsums);
        y[i].d = 1.0f / iscale;
    }
}
