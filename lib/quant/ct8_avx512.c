/* lib/quant/ct8_avx512.c — AVX-512 fused dots of the weight-only 8-bit
 * compressed-tensors rows (ct8.h): ct8_avx2.c's decoding sixteen codes at a
 * time, the 16-lane accumulators of the f32 dots in single registers, so the
 * bits are again qt__dot_f32_ref's / qt__gemm_f32_ref's on the dequantized row.
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
    int64_t g;
    __m512i zp;
    __m512 s;
} decoder;

ALWAYS_INLINE decoder start(qt_type t, const void *row, int64_t n) {
    decoder d = {row, qt__ct8_codes(t, row, n), t, -1, _mm512_setzero_si512(), _mm512_setzero_ps()};
    return d;
}

ALWAYS_INLINE void at(decoder *d, int64_t i) {
    const int64_t g = qt__ct8_group_of(d->t, i);
    if (g == d->g) return;
    float s;
    int zp;
    qt__ct8_param(d->row, g, &s, &zp);
    d->g = g;
    d->zp = _mm512_set1_epi32(zp);
    d->s = _mm512_set1_ps(s);
}

/* Elements i..i+15 (one group). */
ALWAYS_INLINE __m512 dec16(const decoder *d, int64_t i, uint32_t dt) {
    const __m512i v = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(d->q + i)));
    return qt__ct_round_dtype16(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(v, d->zp)), d->s), dt);
}


/* _mm512_reduce_add_ps's order, written out: lanes i and i+8, then the hsum8 order */
ALWAYS_INLINE float reduce16(__m512 z) {
    return qt__hsum8_avx(_mm256_add_ps(_mm512_extractf32x8_ps(z, 1), _mm512_castps512_ps256(z)));
}

ALWAYS_INLINE float dot_dt(qt_type t, const void *x, const float *y, int64_t n, uint32_t dt) {
    decoder d = start(t, x, n);
    const int64_t np = n & ~(int64_t)63;
    __m512 z[4];
    for (int k = 0; k < 4; k++) z[k] = _mm512_setzero_ps();
    for (int64_t i = 0; i < np; i += 64) {
        at(&d, i);
        for (int k = 0; k < 4; k++) z[k] = _mm512_fmadd_ps(dec16(&d, i + 16 * k, dt), _mm512_loadu_ps(y + i + 16 * k), z[k]);
    }
    const float sum = reduce16(_mm512_add_ps(_mm512_add_ps(z[0], z[2]), _mm512_add_ps(z[1], z[3])));
    if (np == n) return sum;
    float w[64];
    qt__ct8_decode(t, x, n, np, n, w);
    return qt__dot_f32_tail(sum, w, y + np, 0, n - np);
}

ALWAYS_INLINE float gemm_dt(qt_type t, const void *x, const float *y, int64_t n, uint32_t dt) {
    decoder d = start(t, x, n);
    __m512 z = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
        at(&d, i);
        z = _mm512_fmadd_ps(dec16(&d, i, dt), _mm512_loadu_ps(y + i), z);
    }
    return reduce16(z);
}

ALWAYS_INLINE void to_float_dt(qt_type t, const void *x, float *y, int64_t n, uint32_t dt) {
    decoder d = start(t, x, n);
    const int64_t n16 = n & ~(int64_t)15;
    int64_t i = 0;
    for (; i < n16; i += 16) {
        at(&d, i);
        _mm512_storeu_ps(y + i, dec16(&d, i, dt));
    }
    qt__ct8_decode(t, x, n, i, n, y + i);
}

#define CT8_ISA avx512
#include "ct8_x86.h"
