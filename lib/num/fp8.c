/* lib/num/fp8.c — FP8 E4M3FN and E5M2 (docs/formats.md §5.1).
 *
 * The casts reproduce torch's c10 Float8_e4m3fn / Float8_e5m2 scalar
 * conversions bit for bit, because compressed-tensors and vLLM produce their
 * FP8 checkpoints with `tensor.to(torch.float8_e4m3fn)`:
 *   - normal range: round-to-nearest-even on the fp32 bits (add half an ulp
 *     minus one, plus the lowest kept mantissa bit, then truncate);
 *   - below the smallest normal: add a power of two whose ulp is the FP8
 *     subnormal step, so the FPU's RNE does the rounding (the "magic add");
 *   - E4M3FN has no Inf: |x| >= 480 (and Inf, NaN) becomes NaN 0x7F|sign, so
 *     values in (464, 480) round up into the NaN code and 464 ties to 448.
 *     The cast does not saturate; the _sat variants clamp to +-448 first, as
 *     compressed-tensors (`clamp(x, finfo.min, finfo.max).to(fp8)`) and vLLM's
 *     kernels do.
 *   - E5M2 keeps Inf: |x| >= 65536 gives Inf (NaN gives 0x7F|sign) and values
 *     from 61440 up round to Inf like fp16.
 */
#include <math.h>
#include <string.h>

#include "quanta/num.h"

static inline uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* ---- E4M3FN: S EEEE MMM, bias 7, max 448, NaN 0x7F/0xFF ---------------- */

float qt_e4m3_to_f32(uint8_t v) {
    const uint32_t sign = (uint32_t)(v & 0x80) << 24;
    const uint32_t exp = (v >> 3) & 15, man = v & 7;
    if ((v & 0x7F) == 0x7F) return bits_f32(sign | 0x7FC00000u);
    if (exp == 0) { /* subnormal: man * 2^-9, exact in fp32 */
        const float mag = (float)man * 0x1.0p-9f;
        return sign ? -mag : mag;
    }
    return bits_f32(sign | ((exp - 7 + 127) << 23) | (man << 20));
}

uint8_t qt_f32_to_e4m3(float f) {
    const uint32_t nan_threshold = 0x43F00000u;   /* 480.0f: first value past 448 + half an ulp */
    const uint32_t min_normal = 121u << 23;       /* 2^-6 */
    const uint32_t subnormal_magic = 141u << 23;  /* 2^14: its ulp is 2^-9, E4M3's subnormal step */
    uint32_t bits = f32_bits(f);
    const uint32_t sign = bits & 0x80000000u;
    bits ^= sign;
    uint8_t result;
    if (bits >= nan_threshold) { /* also Inf and NaN */
        result = 0x7F;
    } else if (bits < min_normal) {
        const float shifted = bits_f32(bits) + bits_f32(subnormal_magic);
        result = (uint8_t)(f32_bits(shifted) - subnormal_magic);
    } else {
        const uint32_t lsb = (bits >> 20) & 1; /* lowest mantissa bit kept: ties to even */
        bits += ((uint32_t)(7 - 127) << 23) + 0x7FFFFu + lsb;
        result = (uint8_t)(bits >> 20);
    }
    return (uint8_t)(result | (sign >> 24));
}

uint8_t qt_f32_to_e4m3_sat(float f) {
    if (isnan(f)) return qt_f32_to_e4m3(f);
    if (f > 448.0f) f = 448.0f;
    if (f < -448.0f) f = -448.0f;
    return qt_f32_to_e4m3(f);
}

/* ---- E5M2: S EEEEE MM, bias 15, max 57344, Inf 0x7C, NaN 0x7D-0x7F -------- */

float qt_e5m2_to_f32(uint8_t v) {
    /* E5M2 is binary16 with the low 8 mantissa bits dropped: decoding is exact. */
    return qt_fp16_to_f32((uint16_t)((uint16_t)v << 8));
}

uint8_t qt_f32_to_e5m2(float f) {
    const uint32_t f32_inf = 255u << 23;
    const uint32_t inf_threshold = 143u << 23;    /* 65536.0f */
    const uint32_t min_normal = 113u << 23;       /* 2^-14 */
    const uint32_t subnormal_magic = 134u << 23;  /* 2^7: its ulp is 2^-16, E5M2's subnormal step */
    uint32_t bits = f32_bits(f);
    const uint32_t sign = bits & 0x80000000u;
    bits ^= sign;
    uint8_t result;
    if (bits >= inf_threshold) {
        result = bits > f32_inf ? 0x7F : 0x7C;
    } else if (bits < min_normal) {
        const float shifted = bits_f32(bits) + bits_f32(subnormal_magic);
        result = (uint8_t)(f32_bits(shifted) - subnormal_magic);
    } else {
        const uint32_t lsb = (bits >> 21) & 1;
        bits += ((uint32_t)(15 - 127) << 23) + 0xFFFFFu + lsb;
        result = (uint8_t)(bits >> 21);
    }
    return (uint8_t)(result | (sign >> 24));
}

uint8_t qt_f32_to_e5m2_sat(float f) {
    if (isnan(f)) return qt_f32_to_e5m2(f);
    if (f > 57344.0f) f = 57344.0f;
    if (f < -57344.0f) f = -57344.0f;
    return qt_f32_to_e5m2(f);
}
