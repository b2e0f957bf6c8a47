/* quanta/num.h — scalar number formats (docs/formats.md §5).
 *
 * All conversions are bit-exact with the reference named beside them.
 * Half-precision values travel as their raw bits (uint16_t), 8-bit formats as uint8_t.
 */
#ifndef QUANTA_NUM_H
#define QUANTA_NUM_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* KV cache element formats: the engine's cache types (engine.h) and the
 * planner's --kv-dtype (plan.h) are this one enum. */
typedef enum qt_kv_type {
    QT_KV_TYPE_AUTO = 0,   /* planner only: the model's own 16-bit dtype (no engine cache format) */
    QT_KV_TYPE_F32,
    QT_KV_TYPE_F16,        /* llama.cpp's default cache type */
    QT_KV_TYPE_BF16,
    QT_KV_TYPE_FP8_E4M3,   /* OCP E4M3FN, saturating, scaled (vLLM's "fp8") */
    QT_KV_TYPE_FP8_E5M2,   /* OCP E5M2, saturating, scaled */
    QT_KV_TYPE_INT8,       /* symmetric int8, scaled (llama.cpp: q8_0) */
    QT_KV_TYPE_COUNT
} qt_kv_type;

/* IEEE binary16, round-to-nearest-even, overflow to Inf, NaN -> 0x7E00|sign (ggml). */
QT_API float qt_fp16_to_f32(uint16_t h);
QT_API uint16_t qt_f32_to_fp16(float f);

/* bfloat16: RNE; NaN keeps sign/payload with the quiet bit set (ggml's row converter). */
QT_API float qt_bf16_to_f32(uint16_t h);
QT_API uint16_t qt_f32_to_bf16(float f);

/* FP8 E4M3FN (max 448, no Inf, NaN = 0x7F/0xFF).
 * qt_f32_to_e4m3: torch's cast (|x| >= 480 -> NaN; no saturation).
 * qt_f32_to_e4m3_sat: clamp to +-448 first (what quantizers use); NaN stays NaN. */
QT_API float qt_e4m3_to_f32(uint8_t v);
QT_API uint8_t qt_f32_to_e4m3(float f);
QT_API uint8_t qt_f32_to_e4m3_sat(float f);

/* FP8 E5M2 (max 57344, Inf 0x7C/0xFC, NaN 0x7D-0x7F). Torch's cast; _sat clamps to +-57344. */
QT_API float qt_e5m2_to_f32(uint8_t v);
QT_API uint8_t qt_f32_to_e5m2(float f);
QT_API uint8_t qt_f32_to_e5m2_sat(float f);

/* FP4 E2M1 (codes 0..7 = 0, .5, 1, 1.5, 2, 3, 4, 6; bit 3 = sign). */
QT_API float qt_e2m1_to_f32(uint8_t code);
/* Nearest E2M1, saturating to +-6, ties to even mantissa (compressed-tensors). */
QT_API uint8_t qt_f32_to_e2m1(float f);

/* E8M0 scale: 2^(e-127); 0xFF = NaN. */
QT_API float qt_e8m0_to_f32(uint8_t e);

/* NF4 (QLoRA) codebook: 16 values in [-1, 1]. */
QT_API extern const float qt_nf4_codebook[16];
/* Nearest NF4 index for x already divided by absmax. */
QT_API uint8_t qt_f32_to_nf4(float x);

/* Unsigned/signed b-bit integers (b = 2, 3, 4, 8) packed densely into
 * little-endian int32 words as compressed-tensors' pack_to_int32 does
 * (values offset by 2^(b-1); docs/formats.md §4.5). Declared in quanta/ct.h. */

#ifdef __cplusplus
}
#endif
#endif
