/* lib/quant/q_fp4_tq.c — ggml's MXFP4 (32 x E2M1 + E8M0 scale) and the
 * ternary formats TQ1_0 (1.6875 bpw) and TQ2_0 (2.0625 bpw), docs/formats.md §3.4.
 * None of them uses importance weights in ggml.
 */
#include <math.h>
#include <string.h>

#include "blocks.h"
#include "kernels.h"
#include "quant_util.h"
#include "quanta/num.h"

/* ---- MXFP4 ------------------------------------------------------------------ */

/* E2M1 values doubled so they are integers (ggml kvalues_mxfp4); the nibble is
 * the OCP E2M1 code, bit 3 the sign. Scales are therefore used halved. */
static const int8_t kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* 2^(e-128), i.e. half the E8M0 value; e = 0 and 1 are fp32 subnormals and
 * e = 255 is 2^127 here (ggml_e8m0_to_fp32_half). */
static float e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* argmin_i |T[i]*s - v|, scanning i = 0..15 and keeping the first minimum, so
 * ties go to the lower index (+0 before -0, smaller magnitude first). */
static uint8_t mxfp4_best_index(float v, float s) {
    int best = 0;
    float best_err = fabsf((float)kvalues_mxfp4[0] * s - v);
    for (int i = 1; i < 16; i++) {
        const float err = fabsf((float)kvalues_mxfp4[i] * s - v);
        if (err < best_err) { best = i; best_err = err; }
    }
    return (uint8_t)best;
}

void qt__quantize_mxfp4(const float *x, void *dst, int64_t n, const float *imatrix) {
    (void)imatrix;
    block_mxfp4 *y = dst;
    for (int64_t ib = 0; ib < n / QK_MXFP4; ib++) {
        const float *xb = x + QK_MXFP4 * ib;
        float amax = 0.0f;
        for (int j = 0; j < QK_MXFP4; j++)
            if (amax < fabsf(xb[j])) amax = fabsf(xb[j]);
        /* Shared exponent floor(log2(amax)) - 2 (2 = E2M1's emax), via log2f as
         * ggml computes it (its rounding decides blocks just below a power of
         * two). Blocks below 2^-125 would need a negative biased exponent,
         * which ggml leaves undefined; they get the smallest scale, e = 0. */
        int e = 0;
        if (amax > 0.0f) {
            e = (int)(floorf(log2f(amax)) - 2 + 127);
            if (e < 0) e = 0;
        }
        y[ib].e = (uint8_t)e;
        const float s = e8m0_half((uint8_t)e);
        for (int j = 0; j < 16; j++)
            y[ib].qs[j] = (uint8_t)(mxfp4_best_index(xb[j], s) | mxfp4_best_index(xb[j + 16], s) << 4);
    }
}

void qt__dequantize_mxfp4(const void *src, float *y, int64_t n) {
    const block_mxfp4 *x = src;
    for (int64_t ib = 0; ib < n / QK_MXFP4; ib++) {
        const float d = e8m0_half(x[ib].e);
        for (int j = 0; j < 16; j++) {
            y[QK_MXFP4 * ib + j] = (float)kvalues_mxfp4[x[ib].qs[j] & 0x0F] * d;
            y[QK_MXFP4 * ib + j + 16] = (float)kvalues_mxfp4[x[ib].qs[j] >> 4] * d;
        }
    }
}

/* ---- ternary: shared scale d = max|x|, trits lroundf(x/d) + 1 ------------------ */

/* One 256-element block as ggml's quantize_row_tq{1,2}_0_ref sees it: the
 * scale d = max|x| (returned as fp16) and the trits t = lroundf(x/d) + 1 in
 * 0..2. The two formats differ only in how they pack t. (d is converted
 * before the lroundf calls so that max|x| need not survive them: that keeps
 * the max scan in registers, twice as fast.) */
static qt_half ternary_block(const float *xb, uint8_t *t) {
    const float amax = qt__absmax(xb, QK_K);
    const float id = amax != 0 ? 1.0f / amax : 0.0f;
    const qt_half d = qt_f32_to_fp16(amax);
    for (int j = 0; j < QK_K; j++) t[j] = (uint8_t)(lroundf(xb[j] * id) + 1);
    return d;
}

/* Five trits t0..t4 (t0 most significant) as a byte: ceil(v*256/243) with
 * v = sum t_n 3^(4-n), so the decoder can pull trit n out with one multiply
 * ((uint8)(b*3^n) * 3) >> 8. Fewer trits are padded with zeros at the end. */
static uint8_t pack_trits(const uint8_t *t, int stride, int count) {
    unsigned v = 0;
    for (int k = 0; k < count; k++) v = v * 3 + t[k * stride];
    for (int k = count; k < 5; k++) v *= 3;
    return (uint8_t)((v * 256 + 242) / 243);
}

void qt__quantize_tq1_0(const float *x, void *dst, int64_t n, const float *imatrix) {
    (void)imatrix;
    block_tq1_0 *y = dst;
    uint8_t t[QK_K];
    for (int64_t ib = 0; ib < n / QK_K; ib++) {
        y[ib].d = ternary_block(x + QK_K * ib, t);
        /* Elements 0..159: byte m holds 32n+m (n = 0..4); 160..239: byte
         * 32+m holds 160+16n+m; 240..255: qh[j] holds 240+4n+j (n = 0..3). */
        for (int m = 0; m < 32; m++) y[ib].qs[m] = pack_trits(t + m, 32, 5);
        for (int m = 0; m < 16; m++) y[ib].qs[32 + m] = pack_trits(t + 160 + m, 16, 5);
        for (int j = 0; j < 4; j++) y[ib].qh[j] = pack_trits(t + 240 + j, 4, 4);
    }
}

static inline float unpack_trit(uint8_t b, uint8_t pow3, float d) {
    const uint8_t q = (uint8_t)(b * pow3);
    const int t = ((uint16_t)q * 3) >> 8;
    return (float)(t - 1) * d;
}

void qt__dequantize_tq1_0(const void *src, float *y, int64_t n) {
    static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
    const block_tq1_0 *x = src;
    for (int64_t ib = 0; ib < n / QK_K; ib++) {
        const float d = qt_fp16_to_f32(x[ib].d);
        float *yb = y + QK_K * ib;
        for (int k = 0; k < 5; k++)
            for (int m = 0; m < 32; m++) yb[32 * k + m] = unpack_trit(x[ib].qs[m], pow3[k], d);
        for (int k = 0; k < 5; k++)
            for (int m = 0; m < 16; m++) yb[160 + 16 * k + m] = unpack_trit(x[ib].qs[32 + m], pow3[k], d);
        for (int k = 0; k < 4; k++)
            for (int j = 0; j < 4; j++) yb[240 + 4 * k + j] = unpack_trit(x[ib].qh[j], pow3[k], d);
    }
}

void qt__quantize_tq2_0(const float *x, void *dst, int64_t n, const float *imatrix) {
    (void)imatrix;
    block_tq2_0 *y = dst;
    uint8_t t[QK_K];
    for (int64_t ib = 0; ib < n / QK_K; ib++) {
        y[ib].d = ternary_block(x + QK_K * ib, t);
        /* Element 128g + 32k + m at bits 2k..2k+1 of qs[32g + m]. */
        for (int g = 0; g < 2; g++)
            for (int m = 0; m < 32; m++) {
                unsigned q = 0;
                for (int k = 0; k < 4; k++) q |= (unsigned)t[128 * g + 32 * k + m] << (2 * k);
                y[ib].qs[32 * g + m] = (uint8_t)q;
            }
    }
}

void qt__dequantize_tq2_0(const void *src, float *y, int64_t n) {
    const block_tq2_0 *x = src;
    for (int64_t ib = 0; ib < n / QK_K; ib++) {
        const float d = qt_fp16_to_f32(x[ib].d);
        for (int g = 0; g < 2; g++)
            for (int k = 0; k < 4; k++)
                for (int m = 0; m < 32; m++) {
                    const int q = (x[ib].qs[32 * g + m] >> (2 * k)) & 3;
                    y[QK_K * ib + 128 * g + 32 * k + m] = (float)(q - 1) * d;
                }
    }
}
