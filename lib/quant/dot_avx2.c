/* lib/quant/dot_avx2.c — AVX2 + FMA + F16C dot kernels.
 *
 * Each one computes exactly what its scalar reference in dot.c computes,
 * bit for bit: the references are written in the lane structure of
 * llama.cpp's code (16-lane f32 accumulators for f32/f16 rows, as its AVX-512
 * build runs them, held here as pairs of 8-lane registers; 8 lanes for the
 * 32-element block formats, as its x86 vec_dot_q* kernels run them), so the
 * vector code is the reference with the lanes in registers. test_engine_dot
 * compares them for equality.
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

/* dot.c's reduce16 of 16 lanes held as lanes 0-7 (lo) and 8-15 (hi): lanes i
 * and i+8 added first, then the hsum8 order. */
static inline float reduce16(__m256 lo, __m256 hi) { return hsum8(_mm256_add_ps(hi, lo)); }

static inline __m256 load_f16x8(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

/* ggml_vec_dot's 64-element steps with 16-lane accumulators as register
 * pairs: a[2j] lanes 0-7 and a[2j+1] lanes 8-15 of accumulator j. */
#define VEC_DOT_STEPS(LOAD, x, y, np, out)                                              \
    do {                                                                                \
        __m256 a[8];                                                                    \
        for (int k = 0; k < 8; k++) a[k] = _mm256_setzero_ps();                         \
        for (int64_t i = 0; i < (np); i += 64)                                          \
            for (int k = 0; k < 8; k++)                                                 \
                a[k] = _mm256_fmadd_ps(LOAD((x) + i + 8 * k), LOAD((y) + i + 8 * k), a[k]); \
        const __m256 lo = _mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6])); \
        const __m256 hi = _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7])); \
        (out) = reduce16(lo, hi);                                                       \
    } while (0)

/* tinyBLAS: one 16-lane FMA chain, n a multiple of 16 */
#define GEMM_LANES(LOAD, x, y, n, out)                                                  \
    do {                                                                                \
        __m256 lo = _mm256_setzero_ps(), hi = lo;                                       \
        for (int64_t i = 0; i < (n); i += 16) {                                         \
            lo = _mm256_fmadd_ps(LOAD((x) + i), LOAD((y) + i), lo);                     \
            hi = _mm256_fmadd_ps(LOAD((x) + i + 8), LOAD((y) + i + 8), hi);             \
        }                                                                               \
        (out) = reduce16(lo, hi);                                                       \
    } while (0)

float qt__dot_f32_avx2(const void *vx, const void *vy, int64_t n) {
    const float *x = vx, *y = vy;
    const int64_t np = n & ~(int64_t)63;
    float sum;
    VEC_DOT_STEPS(_mm256_loadu_ps, x, y, np, sum);
    return qt__dot_f32_tail(sum, x, y, np, n);
}

float qt__gemm_f32_avx2(const void *vx, const void *vy, int64_t n) {
    if (n % 16 != 0) return qt__dot_f32_avx2(vx, vy, n);
    const float *x = vx, *y = vy;
    float sum;
    GEMM_LANES(_mm256_loadu_ps, x, y, n, sum);
    return sum;
}

float qt__dot_f16_avx2(const void *vx, const void *vy, int64_t n) {
    const uint16_t *x = vx, *y = vy;
    const int64_t np = n & ~(int64_t)63;
    float steps;
    VEC_DOT_STEPS(load_f16x8, x, y, np, steps);
    double sum = steps;
    for (int64_t i = np; i < n; i++) sum += (double)(_cvtsh_ss(x[i]) * _cvtsh_ss(y[i]));
    return (float)sum;
}

float qt__gemm_f16_avx2(const void *vx, const void *vy, int64_t n) {
    if (n % 16 != 0) return qt__dot_f16_avx2(vx, vy, n);
    const uint16_t *x = vx, *y = vy;
    float sum;
    GEMM_LANES(load_f16x8, x, y, n, sum);
    return sum;
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
