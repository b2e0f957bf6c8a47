/* lib/quant/dot_avx2.c — AVX2 + FMA + F16C dot kernels.
 *
 * Each one computes exactly what its scalar reference in dot.c computes,
 * bit for bit: the references are written in the lane structure of
 * llama.cpp's AVX2 code (8 f32 lanes, FMA accumulation, the same horizontal
 * reduction), so the vector code is the reference with the lanes in
 * registers. test_engine_dot compares them for equality.
 *
 * No AVX-512 variants: a 16-lane accumulation would change the float order
 * (and the bits); AVX-512 machines run these.
 */
#include <immintrin.h>

#include "dot.h"
#include "blocks.h"

/* high half + low half, then (0+2) + (1+3): dot.c's hsum8 */
static inline float hsum8(__m256 a) {
    __m128 t = _mm_add_ps(_mm256_extractf128_ps(a, 1), _mm256_castps256_ps128(a));
    t = _mm_add_ps(t, _mm_movehl_ps(t, t));
    t = _mm_add_ss(t, _mm_movehdup_ps(t));
    return _mm_cvtss_f32(t);
}

float qt__dot_f32_avx2(const void *vx, const void *vy, int64_t n) {
    const float *x = vx, *y = vy;
    if (n % 8 == 0) {
        __m256 acc = _mm256_setzero_ps();
        for (int64_t i = 0; i < n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc);
        return hsum8(acc);
    }
    const int64_t np = n & ~(int64_t)31;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < np; i += 32) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), _mm256_loadu_ps(y + i + 16), a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), _mm256_loadu_ps(y + i + 24), a3);
    }
    float sum = hsum8(_mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a1, a3)));
    for (int64_t i = np; i < n; i++) sum += x[i] * y[i];
    return sum;
}

static inline __m256 load_f16x8(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

float qt__dot_f16_avx2(const void *vx, const void *vy, int64_t n) {
    const uint16_t *x = vx, *y = vy;
    const int64_t np = n & ~(int64_t)31;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < np; i += 32) {
        a0 = _mm256_fmadd_ps(load_f16x8(x + i), load_f16x8(y + i), a0);
        a1 = _mm256_fmadd_ps(load_f16x8(x + i + 8), load_f16x8(y + i + 8), a1);
        a2 = _mm256_fmadd_ps(load_f16x8(x + i + 16), load_f16x8(y + i + 16), a2);
        a3 = _mm256_fmadd_ps(load_f16x8(x + i + 24), load_f16x8(y + i + 24), a3);
    }
    double sum = np ? (double)hsum8(_mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a1, a3))) : 0.0;
    for (int64_t i = np; i < n; i++)
        sum += (double)(_cvtsh_ss(x[i]) * _cvtsh_ss(y[i]));
    return (float)sum;
}

/* Eight int32 lanes, lane l = sum of x[e]*y[e] over e = 4l..4l+3 (x, y signed bytes):
 * |x| times y signed by x, adjacent pairs to i16, then pairs of i16 to i32. */
static inline __m256 lane_sums(__m256i x, __m256i y) {
    const __m256i ax = _mm256_sign_epi8(x, x);
    const __m256i sy = _mm256_sign_epi8(y, x);
    const __m256i p16 = _mm256_maddubs_epi16(ax, sy);
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

float qt__dot_q8_0_q8_0_avx2(const void *vx, const void *vy, int64_t n) {
    const block_q8_0 *x = vx;
    const block_q8_0 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK8_0; b++) {
        const __m256 d = _mm256_set1_ps(_cvtsh_ss(x[b].d) * _cvtsh_ss(y[b].d));
        const __m256i qx = _mm256_loadu_si256((const __m256i *)x[b].qs);
        const __m256i qy = _mm256_loadu_si256((const __m256i *)y[b].qs);
        acc = _mm256_fmadd_ps(d, lane_sums(qx, qy), acc);
    }
    return hsum8(acc);
}

float qt__dot_q4_0_q8_0_avx2(const void *vx, const void *vy, int64_t n) {
    const block_q4_0 *x = vx;
    const block_q8_0 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    const __m128i low = _mm_set1_epi8(0x0F);
    for (int64_t b = 0; b < n / QK4_0; b++) {
        const __m256 d = _mm256_set1_ps(_cvtsh_ss(x[b].d) * _cvtsh_ss(y[b].d));
        const __m128i q = _mm_loadu_si128((const __m128i *)x[b].qs);
        /* elements 0..15 are the low nibbles, 16..31 the high ones */
        const __m256i nib = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), low), _mm_and_si128(q, low));
        const __m256i qx = _mm256_sub_epi8(nib, _mm256_set1_epi8(8));
        const __m256i qy = _mm256_loadu_si256((const __m256i *)y[b].qs);
        acc = _mm256_fmadd_ps(d, lane_sums(qx, qy), acc);
    }
    return hsum8(acc);
}
