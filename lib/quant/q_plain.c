/* lib/quant/q_plain.c — F32, F16 and BF16 rows (docs/formats.md §3.5).
 *
 * F16 uses ggml's software RNE conversion (identical to F16C for finite
 * values), BF16 ggml's reference row converter (RNE, NaN kept quiet with its
 * sign and payload). Importance weights do not apply to plain types.
 */
#include <string.h>

#include "kernels.h"
#include "quanta/num.h"

void qt__quantize_f32(const float *src, void *dst, int64_t n, const float *imatrix) {
    (void)imatrix;
    memcpy(dst, src, (size_t)n * sizeof(float));
}

void qt__dequantize_f32(const void *src, float *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}

/* F16/BF16 rows element by element through memcpy: dst/src may be unaligned
 * file bytes. Inlined with a constant converter, so no indirect calls. */
static inline void halves_from_float(const float *src, uint8_t *out, int64_t n, uint16_t (*to_half)(float)) {
    for (int64_t i = 0; i < n; i++) {
        const uint16_t h = to_half(src[i]);
        memcpy(out + 2 * i, &h, 2);
    }
}

static inline void halves_to_float(const uint8_t *in, float *dst, int64_t n, float (*from_half)(uint16_t)) {
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, in + 2 * i, 2);
        dst[i] = from_half(h);
    }
}

void qt__quantize_f16(const float *src, void *dst, int64_t n, const float *imatrix) {
    (void)imatrix;
    halves_from_float(src, dst, n, qt_f32_to_fp16);
}

void qt__dequantize_f16(const void *src, float *dst, int64_t n) { halves_to_float(src, dst, n, qt_fp16_to_f32); }

void qt__quantize_bf16(const float *src, void *dst, int64_t n, const float *imatrix) {
    (void)imatrix;
    halves_from_float(src, dst, n, qt_f32_to_bf16);
}

void qt__dequantize_bf16(const void *src, float *dst, int64_t n) { halves_to_float(src, dst, n, qt_bf16_to_f32); }
