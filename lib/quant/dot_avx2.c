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
#include "dot_x86.h"

static inline float hsum8(__m256 a) { return qt__hsum8_avx(a); }

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

static inline __m256 lane_sums(__m256i x, __m256i y) { return _mm256_cvtepi32_ps(qt__lane_sums_i8(x, y)); }

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

/* 32 nibbles of a q4_*-style block: elements 0..15 the low nibbles, 16..31 the high ones */
static inline __m256i nibbles32(const uint8_t qs[16]) {
    const __m128i q = _mm_loadu_si128((const __m128i *)qs), low = _mm_set1_epi8(0x0F);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), low), _mm_and_si128(q, low));
}

static inline uint32_t load_u32(const uint8_t p[4]) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One q4_1/q5_1 block (qh NULL for q4_1) into the 8-lane accumulator and the mins sum */
static inline void block_1(qt_half d, qt_half m, const uint8_t *qs, const uint8_t *qh, const block_q8_1 *y,
                           __m256 *acc, float *mins) {
    *mins = fmaf(_cvtsh_ss(m), _cvtsh_ss(y->s), *mins);
    __m256i q = nibbles32(qs);
    if (qh) q = _mm256_or_si256(q, qt__bits_to_0x10(load_u32(qh)));
    const __m256 dd = _mm256_set1_ps(_cvtsh_ss(d) * _cvtsh_ss(y->d));
    const __m256i qy = _mm256_loadu_si256((const __m256i *)y->qs);
    *acc = _mm256_fmadd_ps(dd, _mm256_cvtepi32_ps(qt__lane_sums_u8(q, qy)), *acc);
}

float qt__dot_q4_1_q8_1_avx2(const void *vx, const void *vy, int64_t n) {
    const block_q4_1 *x = vx;
    const block_q8_1 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int64_t b = 0; b < n / QK4_1; b++) block_1(x[b].d, x[b].m, x[b].qs, NULL, &y[b], &acc, &mins);
    return hsum8(acc) + mins;
}

float qt__dot_q5_0_q8_0_avx2(const void *vx, const void *vy, int64_t n) {
    const block_q5_0 *x = vx;
    const block_q8_0 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK5_0; b++) {
        const __m256 d = _mm256_set1_ps(_cvtsh_ss(x[b].d) * _cvtsh_ss(y[b].d));
        const __m256i q = _mm256_or_si256(nibbles32(x[b].qs), qt__bits_to_0x10(load_u32(x[b].qh)));
        const __m256i qy = _mm256_loadu_si256((const __m256i *)y[b].qs);
        acc = _mm256_fmadd_ps(d, lane_sums(_mm256_sub_epi8(q, _mm256_set1_epi8(16)), qy), acc);
    }
    return hsum8(acc);
}

float qt__dot_q5_1_q8_1_avx2(const void *vx, const void *vy, int64_t n) {
    const block_q5_1 *x = vx;
    const block_q8_1 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int64_t b = 0; b < n / QK5_1; b++) block_1(x[b].d, x[b].m, x[b].qs, x[b].qh, &y[b], &acc, &mins);
    return hsum8(acc) + mins;
}

/* dot.c's order: blocks in pairs into two accumulators, a last odd block as one FMA */
float qt__dot_iq4_nl_q8_0_avx2(const void *vx, const void *vy, int64_t n) {
    const block_iq4_nl *x = vx;
    const block_q8_0 *y = vy;
    const int64_t nb = n / QK4_NL;
    const __m128i book = _mm_loadu_si128((const __m128i *)qt__kvalues_iq4nl), low = _mm_set1_epi8(0x0F);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t b = 0;
    for (; b + 1 < nb; b += 2)
        for (int p = 0; p < 2; p++) {
            const __m128i q = _mm_loadu_si128((const __m128i *)x[b + p].qs);
            const __m256i qx = _mm256_set_m128i(_mm_shuffle_epi8(book, _mm_and_si128(_mm_srli_epi16(q, 4), low)),
                                                _mm_shuffle_epi8(book, _mm_and_si128(q, low)));
            const __m256i qy = _mm256_loadu_si256((const __m256i *)y[b + p].qs);
            const __m256 d = _mm256_set1_ps(_cvtsh_ss(y[b + p].d) * _cvtsh_ss(x[b + p].d));
            acc[p] = _mm256_fmadd_ps(d, lane_sums(qx, qy), acc[p]);
        }
    float sum = hsum8(_mm256_add_ps(acc[0], acc[1]));
    if (b < nb) {
        int32_t s = 0;
        for (int j = 0; j < 16; j++)
            s += qt__kvalues_iq4nl[x[b].qs[j] & 0x0F] * y[b].qs[j] + qt__kvalues_iq4nl[x[b].qs[j] >> 4] * y[b].qs[j + 16];
        sum = fmaf(_cvtsh_ss(y[b].d) * _cvtsh_ss(x[b].d), (float)s, sum);
    }
    return sum;
}
