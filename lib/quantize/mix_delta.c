/* lib/quantize/mix_delta.c — the scalar reference of the output projection's move (mix_delta.h) and
 * the choice of kernel. */
#include "mix_delta.h"

#include <string.h>

#include "core/cpu_level.h"

/* Tokens r >= r0 of d, 8 at a time (8 sums side by side, each in the order of j: the loads of H^T
 * contiguous), the last ones alone; also the SIMD kernels' tail. */
static void delta_rows(const float *ht, int32_t n_tok, int32_t r0, int64_t ne0, const float *b, int32_t nv, double *d) {
    for (int32_t v = 0; v < nv; v++) {
        const float *bv = b + (int64_t)v * ne0;
        int32_t r = r0;
        for (; r + 8 <= n_tok; r += 8) {
            double s[8] = {0};
            for (int64_t j = 0; j < ne0; j++)
                for (int i = 0; i < 8; i++) s[i] += (double)ht[j * n_tok + r + i] * (double)bv[j];
            memcpy(d + (int64_t)v * n_tok + r, s, sizeof s);
        }
        for (; r < n_tok; r++) {
            double s = 0;
            for (int64_t j = 0; j < ne0; j++) s += (double)ht[j * n_tok + r] * (double)bv[j];
            d[(int64_t)v * n_tok + r] = s;
        }
    }
}

void qt__mix_delta_scalar(const float *ht, int32_t n_tok, int64_t ne0, const float *b, int32_t nv, double *d) {
    delta_rows(ht, n_tok, 0, ne0, b, nv, d);
}

/* for the SIMD kernels' tails */
void qt__mix_delta_tail(const float *ht, int32_t n_tok, int32_t r0, int64_t ne0, const float *b, int32_t nv, double *d);
void qt__mix_delta_tail(const float *ht, int32_t n_tok, int32_t r0, int64_t ne0, const float *b, int32_t nv, double *d) {
    delta_rows(ht, n_tok, r0, ne0, b, nv, d);
}

qt__mix_delta_fn qt__mix_delta_kernel(void) {
#ifdef QT_ARCH_X86
    const qt__cpu_level l = qt__cpu_level_get();
    if (l >= QT__CPU_AVX512) return qt__mix_delta_avx512;
    if (l >= QT__CPU_AVX2) return qt__mix_delta_avx2;
#endif
    return qt__mix_delta_scalar;
}
