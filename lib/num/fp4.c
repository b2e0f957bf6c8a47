/* lib/num/fp4.c — FP4 E2M1, E8M0 scales and the NF4 codebook
 * (docs/formats.md §4.7, §5.4, §5.5).
 */
#include <math.h>
#include <string.h>

#include "quanta/num.h"

/* ---- FP4 E2M1: S EE M, bias 1, no Inf/NaN -------------------------------- */

static const float e2m1_magnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

float qt_e2m1_to_f32(uint8_t code) {
    const float mag = e2m1_magnitude[code & 7];
    return (code & 8) ? -mag : mag;
}

/* compressed-tensors' cast_to_fp4 (FP4_E2M1_DATA): fixed thresholds that
 * round to nearest with ties to the even mantissa (0.25 -> 0, 0.75 -> 1,
 * 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4), saturating at 6. The
 * sign is applied after rounding, so a small negative value rounds to -0
 * (code 8) exactly as pack_fp4_to_uint8 sees it via signbit; -0.0 itself has
 * torch.sign 0 and gives code 0. NaN (not representable) gives code 0. */
uint8_t qt_f32_to_e2m1(float f) {
    if (isnan(f)) return 0;
    const uint8_t sign = f < 0.0f ? 8 : 0;
    const float a = fabsf(f);
    uint8_t idx;
    if (a <= 0.25f) idx = 0;
    else if (a < 0.75f) idx = 1;
    else if (a <= 1.25f) idx = 2;
    else if (a < 1.75f) idx = 3;
    else if (a <= 2.5f) idx = 4;
    else if (a < 3.5f) idx = 5;
    else if (a <= 5.0f) idx = 6;
    else idx = 7;
    return (uint8_t)(sign | idx);
}

/* ---- E8M0: unsigned exponent, bias 127, 0xFF = NaN ------------------------- */

float qt_e8m0_to_f32(uint8_t e) {
    uint32_t bits;
    if (e == 0xFF) bits = 0x7FC00000u;
    else if (e == 0) bits = 0x00400000u; /* 2^-127 is an fp32 subnormal */
    else bits = (uint32_t)e << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* ---- NF4 (QLoRA, Dettmers et al. 2023; bitsandbytes get_4bit_type("nf4")) -- */

const float qt_nf4_codebook[16] = {
    -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
    -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
    0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f,
    0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f,
};

/* Nearest code by fp32 distance; an exact tie keeps the lower index (our
 * rule: bitsandbytes' own kernels were not reviewed, docs/formats.md §9). Values
 * outside [-1, 1] map to the ends; NaN maps to index 7 (0.0). */
uint8_t qt_f32_to_nf4(float x) {
    if (isnan(x)) return 7;
    uint8_t best = 0;
    float best_d = fabsf(x - qt_nf4_codebook[0]);
    for (uint8_t i = 1; i < 16; i++) {
        const float d = fabsf(x - qt_nf4_codebook[i]);
        if (d < best_d) { best_d = d; best = i; }
    }
    return best;
}
