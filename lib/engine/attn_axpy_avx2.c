/* lib/engine/attn_axpy_avx2.c — the attention's value update with AVX2 + FMA
 * (forward.c attention_items): acc[d] = fma(v[d], w, acc[d]). A fused
 * multiply-add rounds once whatever computes it, so this equals the scalar
 * reference qt__attn_axpy_ref bit for bit (tests/unit/test_attn_axpy.c); the
 * reference's fmaf is a libm call in a build without -mfma, which made the
 * update the engine's most expensive loop at long contexts. */
#include <immintrin.h>
#include <math.h>

#include "engine_internal.h"

void qt__attn_axpy_avx2(float *acc, const float *v, float w, int32_t n) {
    const __m256 wv = _mm256_set1_ps(w);
    int32_t d = 0;
    for (; d + 8 <= n; d += 8)
        _mm256_storeu_ps(acc + d, _mm256_fmadd_ps(_mm256_loadu_ps(v + d), wv, _mm256_loadu_ps(acc + d)));
    for (; d < n; d++) acc[d] = fmaf(v[d], w, acc[d]);
}
