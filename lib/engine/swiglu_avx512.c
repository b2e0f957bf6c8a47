/* lib/engine/swiglu_avx512.c — SwiGLU (forward.c swiglu) with AVX-512F:
 * g = (g / (1 + exp(-g))) * u, 16 elements per step, exp being
 * qt__expf_ggml_ref's steps (ggml_v_expf of llama.cpp's AVX-512 build: the
 * same fused multiply-adds, 2^n by vscalefps as ggml does; ldexpf and
 * vscalefps both round j * 2^n once). Every step rounds once as the scalar
 * one does, so the results are its bits (tests/unit/test_swiglu.c); the
 * scalar loop's fmaf and ldexpf are libm calls in a build without -mfma,
 * which made SwiGLU a tenth of a prefill's CPU time, on one thread. */
#include <immintrin.h>

#include "engine_internal.h"

void qt__swiglu_avx512(float *g, const float *u, int64_t n) {
    const __m512 shift = _mm512_set1_ps(0x1.8p23f), sign = _mm512_set1_ps(-0.0f), one = _mm512_set1_ps(1.0f);
    const __m512 big = _mm512_set1_ps(192.0f), inf = _mm512_set1_ps(__builtin_inff());
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 gv = _mm512_loadu_ps(g + i);
        const __m512 x = _mm512_sub_ps(_mm512_setzero_ps(), gv);
        const __m512 nv = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), shift), shift);
        const __m512 neg = _mm512_xor_ps(nv, sign); /* -n exactly (not 0 - n: the sign of zero matters) */
        const __m512 b = _mm512_fmadd_ps(neg, _mm512_set1_ps(0x1.7f7d1cp-20f),
                                         _mm512_fmadd_ps(neg, _mm512_set1_ps(0x1.62e4p-1f), x));
        const __m512 uu = _mm512_mul_ps(b, b);
        const __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(0x1.0e4020p-7f), b, _mm512_set1_ps(0x1.573e2ep-5f));
        const __m512 q = _mm512_fmadd_ps(_mm512_set1_ps(0x1.555e66p-3f), b, _mm512_set1_ps(0x1.fffdb6p-2f));
        const __m512 r = _mm512_fmadd_ps(_mm512_set1_ps(0x1.ffffecp-1f), b, one);
        const __m512 j = _mm512_fmadd_ps(_mm512_fmadd_ps(p, uu, q), uu, r);
        __m512 e = _mm512_scalef_ps(j, nv);
        /* |n| > 192: 0 below, infinity above (the scalar branch) */
        const __mmask16 out = _mm512_cmp_ps_mask(_mm512_andnot_ps(sign, nv), big, _CMP_GT_OQ);
        const __mmask16 low = _mm512_cmp_ps_mask(nv, _mm512_setzero_ps(), _CMP_LE_OQ);
        e = _mm512_mask_blend_ps(out, e, _mm512_mask_blend_ps(low, inf, _mm512_setzero_ps()));
        const __m512 s = _mm512_div_ps(gv, _mm512_add_ps(one, e));
        _mm512_storeu_ps(g + i, _mm512_mul_ps(s, _mm512_loadu_ps(u + i)));
    }
    qt__swiglu_ref(g + i, u + i, n - i);
}
