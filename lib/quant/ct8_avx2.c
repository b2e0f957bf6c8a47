/* lib/quant/ct8_avx2.c — AVX2 + FMA fused dots of the weight-only 8-bit
 * compressed-tensors rows (ct8.h): eight int8 codes widened to int32, less
 * the group's zero point, converted, times the group's scale and rounded to
 * the model dtype (qt_ct_round_dtype) in registers, then multiplied into the
 * f32 activations in the lane order of dot_avx2.c's f32 kernels, so the bits
 * are qt__dot_f32_ref's / qt__gemm_f32_ref's on the dequantized row (the
 * references in ct8.c). The dtype is a constant in each specialised loop.
 */
#include <immintrin.h>

#include "ct8.h"
#include "dot.h"
#include "dot_x86.h"

#include "ct_round_x86.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))


typedef struct {
    const void *row;
    const int8_t *q;
    qt_type t;
    int64_t g;  /* the group whose parameters zp, s hold */
    __m256i zp;
    __m256 s;
} decoder;

ALWAYS_INLINE decoder start(qt_type t, const void *row, int64_t n) {
    decoder d = {row, qt__ct8_codes(t, row, n), t, -1, _mm256_setzero_si256(), _mm256_setzero_ps()};
    return d;
}

/* Before elements i.. of one group. */
ALWAYS_INLINE void at(decoder *d, int64_t i) {
    const int64_t g = qt__ct8_group_of(d->t, i);
    if (g == d->g) return;
    float s;
    int zp;
    qt__ct8_param(d->row, g, &s, &zp);
    d->g = g;
    d->zp = _mm256_set1_epi32(zp);
    d->s = _mm256_set1_ps(s);
}

/* Elements i..i+7 (one group). */
ALWAYS_INLINE __m256 dec8(const decoder *d, int64_t i, uint32_t dt) {
    const __m256i v = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(d->q + i)));
    return qt__ct_round_dtype8(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(v, d->zp)), d->s), dt);
}


/* dot_avx2.c's reduce16 of lanes 0-7 (lo) and 8-15 (hi) */
ALWAYS_INLINE float reduce16(__m256 lo, __m256 hi) { return qt__hsum8_avx(_mm256_add_ps(hi, lo)); }

/* ggml_vec_dot_f32's order: 64-element steps (each inside one group: 128 is a multiple of 64) */
ALWAYS_INLINE float dot_dt(qt_type t, const void *x, const float *y, int64_t n, uint32_t dt) {
    decoder d = start(t, x, n);
    const int64_t np = n & ~(int64_t)63;
    __m256 a[8];
    for (int k = 0; k < 8; k++) a[k] = _mm256_setzero_ps();
    for (int64_t i = 0; i < np; i += 64) {
        at(&d, i);
        for (int k = 0; k < 8; k++) a[k] = _mm256_fmadd_ps(dec8(&d, i + 8 * k, dt), _mm256_loadu_ps(y + i + 8 * k), a[k]);
    }
    const __m256 lo = _mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6]));
    const __m256 hi = _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7]));
    const float sum = reduce16(lo, hi);
    if (np == n) return sum;
    float w[64];
    qt__ct8_decode(t, x, n, np, n, w);
    return qt__dot_f32_tail(sum, w, y + np, 0, n - np);
}

/* tinyBLAS's order: one 16-lane chain (n a multiple of 16; 16-element steps inside one group) */
ALWAYS_INLINE float gemm_dt(qt_type t, const void *x, const float *y, int64_t n, uint32_t dt) {
    decoder d = start(t, x, n);
    __m256 lo = _mm256_setzero_ps(), hi = lo;
    for (int64_t i = 0; i < n; i += 16) {
        at(&d, i);
        lo = _mm256_fmadd_ps(dec8(&d, i, dt), _mm256_loadu_ps(y + i), lo);
        hi = _mm256_fmadd_ps(dec8(&d, i + 8, dt), _mm256_loadu_ps(y + i + 8), hi);
    }
    return reduce16(lo, hi);
}

ALWAYS_INLINE void to_float_dt(qt_type t, const void *x, float *y, int64_t n, uint32_t dt) {
    decoder d = start(t, x, n);
    const int64_t n8 = n & ~(int64_t)7;
    int64_t i = 0;
    /* 8 elements at a time while they share a group (groups of 128 are whole 8-element pieces) */
    for (; i < n8; i += 8) {
        at(&d, i);
        _mm256_storeu_ps(y + i, dec8(&d, i, dt));
    }
    qt__ct8_decode(t, x, n, i, n, y + i);
}

#define CT8_ISA avx2
#include "ct8_x86.h"
