/* lib/engine/fp8_fallback.c — TEMPORARY weak stand-ins for the FP8 conversions
 * of quanta/num.h until lib/num/fp8.c (helper numct) is merged; the strong
 * definitions there replace these. Delete this file after that merge. */
#include <math.h>

#include "quanta/num.h"

static float fb_decode(uint8_t v, int ebits, int mbits, int bias) {
    const int s = v >> 7, e = (v >> mbits) & ((1 << ebits) - 1), m = v & ((1 << mbits) - 1);
    const float mag = e == 0 ? ldexpf((float)m, 1 - bias - mbits) : ldexpf((float)((1 << mbits) | m), e - bias - mbits);
    return s ? -mag : mag;
}

/* nearest code by brute force, ties to even code; saturating at max_code */
static uint8_t fb_encode(float f, int ebits, int mbits, int bias, int max_code) {
    if (f != f) return 0x7F;
    const uint8_t sign = f < 0 ? 0x80 : 0;
    const float a = fabsf(f);
    int best = 0;
    float bd = INFINITY;
    for (int c = 0; c <= max_code; c++) {
        const float d = fabsf(fb_decode((uint8_t)c, ebits, mbits, bias) - a);
        if (d < bd || (d == bd && (c & 1) == 0)) { bd = d; best = c; }
    }
    return (uint8_t)(sign | best);
}

__attribute__((weak)) float qt_e4m3_to_f32(uint8_t v) {
    if ((v & 0x7F) == 0x7F) return NAN;
    return fb_decode(v, 4, 3, 7);
}
__attribute__((weak)) uint8_t qt_f32_to_e4m3_sat(float f) { return fb_encode(f, 4, 3, 7, 0x7E); }
__attribute__((weak)) float qt_e5m2_to_f32(uint8_t v) {
    if ((v & 0x7F) > 0x7C) return NAN;
    if ((v & 0x7F) == 0x7C) return v & 0x80 ? -INFINITY : INFINITY;
    return fb_decode(v, 5, 2, 15);
}
__attribute__((weak)) uint8_t qt_f32_to_e5m2_sat(float f) { return fb_encode(f, 5, 2, 15, 0x7B); }
