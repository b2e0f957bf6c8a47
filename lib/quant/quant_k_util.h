/* lib/quant/quant_k_util.h — scalar helpers shared by the K-quant codecs.
 *
 * Kept apart from the legacy/IQ helpers so both codec files can evolve
 * independently; everything here is static inline.
 */
#ifndef QT_QUANT_K_UTIL_H
#define QT_QUANT_K_UTIL_H

#include <stdint.h>
#include <string.h>

/* Round to nearest, ties to even, the way ggml's K-quants do it (formats.md
 * §3.3): adding 1.5*2^23 puts the integer part in the low mantissa bits and
 * lets the FPU's round-to-nearest-even do the rounding. Valid for
 * |x| <= 4194303; the callers' inputs are bounded far below that. */
static inline int qt__k_nearest_int(float x) {
    const float biased = x + 12582912.0f;
    int32_t bits;
    memcpy(&bits, &biased, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

static inline int qt__k_min_i(int a, int b) { return a < b ? a : b; }
static inline int qt__k_max_i(int a, int b) { return a > b ? a : b; }
static inline int qt__k_clamp_i(int v, int lo, int hi) { return qt__k_max_i(lo, qt__k_min_i(hi, v)); }

#endif
