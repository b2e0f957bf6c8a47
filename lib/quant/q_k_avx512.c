/* lib/quant/q_k_avx512.c — the K-quant quantizers (q_k.c) with their sub-block
 * searches 16 groups at a time, one per lane (fit_lanes.h): the reference's
 * bytes, faster. Rows in lib/quant/variants.c. */
#define QT_LANES 16
#include "fit_lanes.h"
#include "kernels.h"
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
