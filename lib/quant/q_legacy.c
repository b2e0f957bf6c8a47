/* lib/quant/q_legacy.c — ggml's 32-element block formats Q4_0, Q4_1, Q5_0,
 * Q5_1, Q8_0 and Q8_1 (formats.md §3.2-§3.4).
 *
 * Two quantizers per 4/5-bit type, as in ggml-quants.c:
 *  - without importance weights the "_ref" rounding quantizers (scale from the
 *    block's extreme value, truncating x+0.5 rounding);
 *  - with importance weights the "_impl" searches: weights
 *    w_j = imatrix_j * sqrt(sigma2 + x_j^2) with sigma2 = sum(x^2)/n over the
 *    whole row, then a weighted symmetric scale search (Q4_0/Q5_0, ggml's
 *    make_qx_quants) or a weighted scale+min search (Q4_1/Q5_1, ggml's
 *    make_qkx3_quants), both in quant_search.c.
 * Float-to-integer casts go through qt__cvtt_i32 so blocks with fp32-subnormal
 * scales (1/d = Inf) give x86 ggml's bytes instead of undefined behaviour.
 * Bit-exactness rests on evaluating every float expression in ggml's order
 * with separate roundings (the build uses -ffp-contract=off), on using the
 * fp32 scale to pick integers while storing fp16, and on sequential sums.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "blocks.h"
#include "kernels.h"
#include "quant_search.h"
#include "quant_util.h"
#include "quanta/num.h"

#define LEGACY_QK 32

/* ggml make_qkx3_quants as quantize_row_q{4,5}_1_impl call it; see
 * qt__affine_search for clamp_before_round. */
static const qt__affine_search LEGACY_IMATRIX = {
    .rmin = -0.9f, .rdelta = 0.05f, .nstep = 36, .use_mad = false, .clamp_before_round = true};

/* ---- helpers ------------------------------------------------------------- */

/* sigma2 = sum(x^2)/n over the whole row, and the per-block weights
 * w_j = imatrix_j * sqrt(sigma2 + x_j^2) (ggml quantize_row_q*_impl). */
static float row_sigma2(const float *x, int64_t n) {
    float sum_x2 = 0;
    for (int64_t j = 0; j < n; j++) sum_x2 += x[j] * x[j];
    return sum_x2 / (float)n;
}

static void block_weights(const float *xb, const float *qw, float sigma2, float *w) {
    for (int j = 0; j < LEGACY_QK; j++) w[j] = qw[j] * sqrtf(sigma2 + xb[j] * xb[j]);
}

/* Signed value of the largest |x| (first one wins ties). */
static float signed_absmax(const float *x) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < LEGACY_QK; j++) {
        if (amax < fabsf(x[j])) { amax = fabsf(x[j]); max = x[j]; }
    }
    return max;
}

/* Fifth bits of 32 5-bit values: bit j of element j / j+16 (formats.md §3.4). */
static void pack_q5_high_bits(const uint8_t *L, uint8_t qs[16], uint8_t qh_bytes[4]) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t)((L[j] & 0x0F) | ((L[j + 16] & 0x0F) << 4));
        qh |= ((L[j] & 0x10u) >> 4) << j;
        qh |= ((L[j + 16] & 0x10u) >> 4) << (j + 16);
    }
    for (int b = 0; b < 4; b++) qh_bytes[b] = (uint8_t)(qh >> (8 * b)); /* little-endian */
}

static uint32_t load_q5_high_bits(const uint8_t qh_bytes[4]) {
    return (uint32_t)qh_bytes[0] | (uint32_t)qh_bytes[1] << 8 | (uint32_t)qh_bytes[2] << 16 |
           (uint32_t)qh_bytes[3] << 24;
}

/* ---- Q4_0 ---------------------------------------------------------------- */

void qt__quantize_q4_0(const float *x, void *dst, int64_t n, const float *imatrix) {
    block_q4_0 *y = dst;
    const int64_t nb = n / LEGACY_QK;
    if (imatrix) {
        const float sigma2 = row_sigma2(x, n);
        float w[LEGACY_QK];
        int8_t L[LEGACY_QK];
        for (int64_t ib = 0; ib < nb; ib++) {
            const float *xb = x + LEGACY_QK * ib;
            block_weights(xb, imatrix + LEGACY_QK * ib, sigma2, w);
            const float d = qt__fit_symmetric(LEGACY_QK, 8, xb, w, L);
            y[ib].d = qt_f32_to_fp16(d);
            for (int j = 0; j < 16; j++) y[ib].qs[j] = (uint8_t)(L[j] | (L[j + 16] << 4));
        }
        return;
    }
    for (int64_t ib = 0; ib < nb; ib++) {
        const float *xb = x + LEGACY_QK * ib;
        const float d = signed_absmax(xb) / -8;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[ib].d = qt_f32_to_fp16(d);
        for (int j = 0; j < 16; j++) {
            /* Truncation of x*id + 8.5 (round half up); the extreme maps to 0
             * and its negation to 16, clamped to 15. */
            const int q0 = (int8_t)qt__cvtt_i32(xb[j] * id + 8.5f);
            const int q1 = (int8_t)qt__cvtt_i32(xb[j + 16] * id + 8.5f);
            y[ib].qs[j] = (uint8_t)((q0 < 15 ? q0 : 15) | (q1 < 15 ? q1 : 15) << 4);
        }
    }
}

void qt__dequantize_q4_0(const void *src, float *y, int64_t n) {
    const block_q4_0 *x = src;
    const int64_t nb = n / LEGACY_QK;
    for (int64_t ib = 0; ib < nb; ib++) {
        const float d = qt_fp16_to_f32(x[ib].d);
        for (int j = 0; j < 16; j++) {
            y[LEGACY_QK * ib + j] = (float)((x[ib].qs[j] & 0x0F) - 8) * d;
            y[LEGACY_QK * ib + j + 16] = (float)((x[ib].qs[j] >> 4) - 8) * d;
        }
    }
}

/* ---- Q4_1 ---------------------------------------------------------------- */

void qt__quantize_q4_1(const float *x, void *dst, int64_t n, const float *imatrix) {
    block_q4_1 *y = dst;
    const int64_t nb = n / LEGACY_QK;
    if (imatrix) {
        const float sigma2 = row_sigma2(x, n);
        float w[LEGACY_QK];
        uint8_t L[LEGACY_QK], Laux[LEGACY_QK];
        for (int64_t ib = 0; ib < nb; ib++) {
            const float *xb = x + LEGACY_QK * ib;
            block_weights(xb, imatrix + LEGACY_QK * ib, sigma2, w);
            float neg_min;
            const float d = qt__fit_affine(LEGACY_QK, 15, xb, w, &LEGACY_IMATRIX, L, Laux, &neg_min);
            y[ib].d = qt_f32_to_fp16(d);
            y[ib].m = qt_f32_to_fp16(-neg_min);
            for (int j = 0; j < 16; j++) y[ib].qs[j] = (uint8_t)(L[j] | (L[j + 16] << 4));
        }
        return;
    }
    for (int64_t ib = 0; ib < nb; ib++) {
        const float *xb = x + LEGACY_QK * ib;
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < LEGACY_QK; j++) {
            if (xb[j] < min) min = xb[j];
            if (xb[j] > max) max = xb[j];
        }
        const float d = (max - min) / 15;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[ib].d = qt_f32_to_fp16(d);
        y[ib].m = qt_f32_to_fp16(min);
        for (int j = 0; j < 16; j++) {
            const int q0 = (int8_t)qt__cvtt_i32((xb[j] - min) * id + 0.5f);
            const int q1 = (int8_t)qt__cvtt_i32((xb[j + 16] - min) * id + 0.5f);
            y[ib].qs[j] = (uint8_t)((q0 < 15 ? q0 : 15) | (q1 < 15 ? q1 : 15) << 4);
        }
    }
}

void qt__dequantize_q4_1(const void *src, float *y, int64_t n) {
    const block_q4_1 *x = src;
    const int64_t nb = n / LEGACY_QK;
    for (int64_t ib = 0; ib < nb; ib++) {
        const float d = qt_fp16_to_f32(x[ib].d);
        const float m = qt_fp16_to_f32(x[ib].m);
        for (int j = 0; j < 16; j++) {
            y[LEGACY_QK * ib + j] = (float)(x[ib].qs[j] & 0x0F) * d + m;
            y[LEGACY_QK * ib + j + 16] = (float)(x[ib].qs[j] >> 4) * d + m;
        }
    }
}

/* ---- Q5_0 ---------------------------------------------------------------- */

void qt__quantize_q5_0(const float *x, void *dst, int64_t n, const float *imatrix) {
    block_q5_0 *y = dst;
    const int64_t nb = n / LEGACY_QK;
    uint8_t q[LEGACY_QK];
    if (imatrix) {
        const float sigma2 = row_sigma2(x, n);
        float w[LEGACY_QK];
        int8_t L[LEGACY_QK];
        for (int64_t ib = 0; ib < nb; ib++) {
            const float *xb = x + LEGACY_QK * ib;
            block_weights(xb, imatrix + LEGACY_QK * ib, sigma2, w);
            const float d = qt__fit_symmetric(LEGACY_QK, 16, xb, w, L);
            y[ib].d = qt_f32_to_fp16(d);
            for (int j = 0; j < LEGACY_QK; j++) q[j] = (uint8_t)L[j];
            pack_q5_high_bits(q, y[ib].qs, y[ib].qh);
        }
        return;
    }
    for (int64_t ib = 0; ib < nb; ib++) {
        const float *xb = x + LEGACY_QK * ib;
        const float d = signed_absmax(xb) / -16;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[ib].d = qt_f32_to_fp16(d);
        for (int j = 0; j < LEGACY_QK; j++) {
            const int v = (int8_t)qt__cvtt_i32(xb[j] * id + 16.5f);
            q[j] = (uint8_t)(v < 31 ? v : 31);
        }
        pack_q5_high_bits(q, y[ib].qs, y[ib].qh);
    }
}

void qt__dequantize_q5_0(const void *src, float *y, int64_t n) {
    const block_q5_0 *x = src;
    const int64_t nb = n / LEGACY_QK;
    for (int64_t ib = 0; ib < nb; ib++) {
        const float d = qt_fp16_to_f32(x[ib].d);
        const uint32_t qh = load_q5_high_bits(x[ib].qh);
        for (int j = 0; j < 16; j++) {
            const int h0 = (int)((qh >> j) & 1u) << 4;
            const int h1 = (int)((qh >> (j + 16)) & 1u) << 4;
            y[LEGACY_QK * ib + j] = (float)(((x[ib].qs[j] & 0x0F) | h0) - 16) * d;
            y[LEGACY_QK * ib + j + 16] = (float)(((x[ib].qs[j] >> 4) | h1) - 16) * d;
        }
    }
}

/* ---- Q5_1 ---------------------------------------------------------------- */

void qt__quantize_q5_1(const float *x, void *dst, int64_t n, const float *imatrix) {
    block_q5_1 *y = dst;
    const int64_t nb = n / LEGACY_QK;
    uint8_t q[LEGACY_QK];
    if (imatrix) {
        const float sigma2 = row_sigma2(x, n);
        float w[LEGACY_QK];
        uint8_t Laux[LEGACY_QK];
        for (int64_t ib = 0; ib < nb; ib++) {
            const float *xb = x + LEGACY_QK * ib;
            block_weights(xb, imatrix + LEGACY_QK * ib, sigma2, w);
            float neg_min;
            const float d = qt__fit_affine(LEGACY_QK, 31, xb, w, &LEGACY_IMATRIX, q, Laux, &neg_min);
            y[ib].d = qt_f32_to_fp16(d);
            y[ib].m = qt_f32_to_fp16(-neg_min);
            pack_q5_high_bits(q, y[ib].qs, y[ib].qh);
        }
        return;
    }
    for (int64_t ib = 0; ib < nb; ib++) {
        const float *xb = x + LEGACY_QK * ib;
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < LEGACY_QK; j++) {
            if (xb[j] < min) min = xb[j];
            if (xb[j] > max) max = xb[j];
        }
        const float d = (max - min) / 31;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[ib].d = qt_f32_to_fp16(d);
        y[ib].m = qt_f32_to_fp16(min);
        /* No clamp in ggml: (x-min)*id + 0.5 stays below 32 for finite input. */
        for (int j = 0; j < LEGACY_QK; j++) q[j] = (uint8_t)qt__cvtt_i32((xb[j] - min) * id + 0.5f);
        pack_q5_high_bits(q, y[ib].qs, y[ib].qh);
    }
}

void qt__dequantize_q5_1(const void *src, float *y, int64_t n) {
    const block_q5_1 *x = src;
    const int64_t nb = n / LEGACY_QK;
    for (int64_t ib = 0; ib < nb; ib++) {
        const float d = qt_fp16_to_f32(x[ib].d);
        const float m = qt_fp16_to_f32(x[ib].m);
        const uint32_t qh = load_q5_high_bits(x[ib].qh);
        for (int j = 0; j < 16; j++) {
            const int h0 = (int)((qh >> j) & 1u) << 4;
            const int h1 = (int)((qh >> (j + 16)) & 1u) << 4;
            y[LEGACY_QK * ib + j] = (float)((x[ib].qs[j] & 0x0F) | h0) * d + m;
            y[LEGACY_QK * ib + j + 16] = (float)((x[ib].qs[j] >> 4) | h1) * d + m;
        }
    }
}

/* ---- Q8_0 / Q8_1 ----------------------------------------------------------- */

/* d = max|x|/127, q = roundf(x/d) (ties away from zero); returns d. */
static float q8_block(const float *xb, int8_t *qs) {
    float amax = 0.0f;
    for (int j = 0; j < LEGACY_QK; j++) {
        const float a = fabsf(xb[j]);
        amax = amax > a ? amax : a;
    }
    const float d = amax / 127;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    for (int j = 0; j < LEGACY_QK; j++) qs[j] = (int8_t)qt__cvtt_i32(roundf(xb[j] * id));
    return d;
}

void qt__quantize_q8_0(const float *x, void *dst, int64_t n, const float *imatrix) {
    (void)imatrix; /* ggml's quantize_q8_0 ignores importance weights */
    block_q8_0 *y = dst;
    for (int64_t ib = 0; ib < n / LEGACY_QK; ib++)
        y[ib].d = qt_f32_to_fp16(q8_block(x + LEGACY_QK * ib, y[ib].qs));
}

void qt__dequantize_q8_0(const void *src, float *y, int64_t n) {
    const block_q8_0 *x = src;
    for (int64_t ib = 0; ib < n / LEGACY_QK; ib++) {
        const float d = qt_fp16_to_f32(x[ib].d);
        for (int j = 0; j < LEGACY_QK; j++) y[LEGACY_QK * ib + j] = (float)x[ib].qs[j] * d;
    }
}

void qt__quantize_q8_1(const float *x, void *dst, int64_t n, const float *imatrix) {
    (void)imatrix;
    block_q8_1 *y = dst;
    for (int64_t ib = 0; ib < n / LEGACY_QK; ib++) {
        const float d = q8_block(x + LEGACY_QK * ib, y[ib].qs);
        int sum = 0;
        for (int j = 0; j < LEGACY_QK; j++) sum += y[ib].qs[j];
        y[ib].d = qt_f32_to_fp16(d);
        y[ib].s = qt_f32_to_fp16((float)sum * d); /* fp32 d, as ggml */
    }
}

/* ggml has no Q8_1 to_float (activation type); the natural inverse q*d. */
void qt__dequantize_q8_1(const void *src, float *y, int64_t n) {
    const block_q8_1 *x = src;
    for (int64_t ib = 0; ib < n / LEGACY_QK; ib++) {
        const float d = qt_fp16_to_f32(x[ib].d);
        for (int j = 0; j < LEGACY_QK; j++) y[LEGACY_QK * ib + j] = (float)x[ib].qs[j] * d;
    }
}
