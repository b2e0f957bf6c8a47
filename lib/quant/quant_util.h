/* lib/quant/quant_util.h — scalar helpers shared by the ggml block codecs
 * (q_legacy.c, q_k.c, q_iq4.c). Static inline only.
 */
#ifndef QT_QUANT_UTIL_H
#define QT_QUANT_UTIL_H

#include <stdint.h>
#include <string.h>

/* Round to nearest, ties to even, as ggml's nearest_int does (formats.md
 * §3.3): adding 1.5*2^23 moves the integer part into the low mantissa bits and
 * the FPU's round-to-nearest-even does the rounding. Valid for |x| <= 4194303;
 * every caller feeds values bounded by a few hundred. */
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

static inline int qt__min_int(int a, int b) { return a < b ? a : b; }
static inline int qt__clamp_int(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

#endif
