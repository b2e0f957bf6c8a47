/* lib/quant/quant_util.h — scalar helpers shared by the ggml block codecs
 * (q_legacy.c, q_k.c, q_iq4.c, q_fp4_tq.c, quant_search.c). Static inline
 * only.
 */
#ifndef QT_QUANT_UTIL_H
#define QT_QUANT_UTIL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ggml's GROUP_MAX_EPS: a group whose largest |x| is below this counts as all
 * zero in the scale searches. */
#define QT_GROUP_MAX_EPS 1e-15f

/* Round to nearest, ties to even, as ggml's nearest_int does (docs/formats.md
 * §3.3): adding 1.5*2^23 moves the integer part into the low mantissa bits and
 * the FPU's round-to-nearest-even does the rounding. Valid for |x| <= 4194303;
 * beyond that the result is meaningless, but the same as ggml's (whose range
 * check is an assert, off in release builds). Callers stay far inside except
 * in the case qt__affine_search describes. */
static inline int qt__nearest_int(float x) {
    const float biased = x + 12582912.0f;
    int32_t bits;
    memcpy(&bits, &biased, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

/* C's float -> small-integer cast as x86-64 builds of ggml execute it
 * (cvttss2si to int32, then keep the low byte): identical to the plain cast
 * for in-range values, and defined for the +-Inf/NaN that 1/d produces when a
 * block's scale is an fp32 subnormal (there the plain cast is undefined
 * behaviour; x86 yields INT32_MIN, whose low byte is 0). Narrow the result
 * with (int8_t)/(uint8_t). */
static inline int32_t qt__cvtt_i32(float v) {
    return (v >= -2147483648.0f && v < 2147483648.0f) ? (int32_t)v : INT32_MIN;
}

/* The signed value of largest magnitude (returned) and that magnitude
 * (*amax); the first one wins ties (ggml's `if (ax > amax) { amax = ax;
 * max = x[i]; }` scan). Both 0 when all are 0. GCC 12 compiles this to a
 * branch-free select chain, the faster choice for the 16/32-element groups it
 * serves (see qt__quantize_q8_K for the 256-element case). */
static inline float qt__signed_absmax(const float *x, int n, float *amax) {
    float a = 0.0f, max = 0.0f;
    for (int i = 0; i < n; i++) {
        const float ax = fabsf(x[i]);
        if (ax > a) { a = ax; max = x[i]; }
    }
    *amax = a;
    return max;
}

/* max |x| as ggml's MAX(amax, fabsf(x)) scan computes it. */
static inline float qt__absmax(const float *x, int n) {
    float amax = 0.0f;
    for (int i = 0; i < n; i++) {
        const float a = fabsf(x[i]);
        amax = amax > a ? amax : a;
    }
    return amax;
}

/* Sum of squares in element order (ggml's sequential sums). */
static inline float qt__sum_squares(const float *x, int64_t n) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) s += x[i] * x[i];
    return s;
}

/* ggml's importance weights w_j = qw_j * sqrt(sigma2 + x_j^2), sigma2 a
 * per-row or per-super-block mean square (quantize_row_*_impl). */
static inline void qt__importance_weights(const float *x, const float *qw, float sigma2, int n, float *w) {
    for (int i = 0; i < n; i++) w[i] = qw[i] * sqrtf(sigma2 + x[i] * x[i]);
}

/* 32 4-bit levels into 16 bytes, element j in the low nibble of byte j and
 * element j+16 in the high nibble (Q4_0/Q4_1/IQ4 layout, docs/formats.md §3.4). */
static inline void qt__pack_nibbles32(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < 16; j++) qs[j] = (uint8_t)(L[j] | (L[j + 16] << 4));
}

static inline int qt__min_int(int a, int b) { return a < b ? a : b; }
static inline int qt__max_int(int a, int b) { return a > b ? a : b; }
/* ggml's MAX(lo, MIN(hi, v)); lo <= hi. Written as min/max so loops using it
 * stay vectorizable. */
static inline int qt__clamp_int(int v, int lo, int hi) { return qt__max_int(lo, qt__min_int(hi, v)); }

#endif
