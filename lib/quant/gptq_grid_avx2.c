/* lib/quant/gptq_grid_avx2.c — the compressed-tensors int grid's column (gptq_grid.c
 * qt__ct_int_col_ref) on 8 lanes (compiled with -mavx2 -mfma -mf16c because of the file
 * name): the reference's operations in its order, each rounded once as IEEE's (division,
 * the dtype roundings of ct_round_x86.h: bf16 round-to-nearest-even on the bits, F16C's
 * round-to-nearest-even conversion), so the same bits (tests/unit/test_gptq.c
 * test_ct_int_col_kernel). The values are finite or infinite, never NaN (the scales are
 * > 0, W is finite), and min/max keep the reference's fmaxf/fminf order. */
#include <immintrin.h>
#include <math.h>

#include "gptq_internal.h"
#include "quanta/ct.h"

#include "ct_round_x86.h"

void qt__ct_int_col_avx2(const float *w, const float *s, const int8_t *zp, int64_t n, int bits, int dtype,
                         int8_t *code, float *q) {
    const uint32_t dt = (uint32_t)dtype;
    const __m256 qmin = _mm256_set1_ps(-(float)(1 << (bits - 1))), qmax = _mm256_set1_ps((float)((1 << (bits - 1)) - 1));
    int64_t r = 0;
    for (; r + 8 <= n; r += 8) {
        const __m256 sv = _mm256_loadu_ps(s + r);
        __m256 t = qt__ct_round_dtype8(_mm256_div_ps(qt__ct_round_dtype8(_mm256_loadu_ps(w + r), dt), sv), dt);
        __m256i zi = _mm256_setzero_si256();
        if (zp) {
            zi = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(zp + r)));
            t = qt__ct_round_dtype8(_mm256_add_ps(t, _mm256_cvtepi32_ps(zi)), dt);
        }
        t = _mm256_min_ps(_mm256_max_ps(t, qmin), qmax);
        const __m256 c = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); /* nearbyintf: ties to even */
        const __m256i ci = _mm256_cvtps_epi32(c);
        const __m128i c16 = _mm_packs_epi32(_mm256_castsi256_si128(ci), _mm256_extracti128_si256(ci, 1));
        _mm_storel_epi64((__m128i *)(code + r), _mm_packs_epi16(c16, c16));
        /* (float)(code - zp) in integers, as the reference: a code of -0.0 (t in (-0.5, 0]) is the integer 0 */
        _mm256_storeu_ps(q + r, qt__ct_round_dtype8(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(ci, zi)), sv), dt));
    }
    if (r < n) qt__ct_int_col_ref(w + r, s + r, zp ? zp + r : NULL, n - r, bits, dtype, code + r, q + r);
}
