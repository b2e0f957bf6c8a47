/* lib/quant/q_legacy.c — ggml's 32-element block formats Q4_0, Q4_1, Q5_0,
 * Q5_1, Q8_0 and Q8_1 (docs/formats.md §3.2-§3.4).
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
#include <stdbool.h>

#include "blocks.h"
#include "kernels.h"
#include "quant_search.h"
#include "quant_util.h"
#include "quanta/num.h"

#define LEGACY_QK 32

/* ggml make_qkx3_quants as quantize_row_q{4,5}_1_impl call it; see
 * qt__affine_search for clamp_before_round. */
static const qt__affine_search LEGACY_IMATRIX = {
    .rmin = -0.9f, .rdelta = 0.05f, .nstep = 36, .use_mad = false, .clamp_before_round = false};

/* ---- helpers ------------------------------------------------------------- */

/* sigma2 = sum(x^2)/n over the whole row, as quantize_row_q*_impl computes
 * it; unused without importance weights. */
static float row_sigma2(const float *x, int64_t n, const float *imatrix) {
    return imatrix ? qt__sum_squares(x, n) / (float)n : 0.0f;
}

/* Block ib's weights w_j = imatrix_j * sqrt(sigma2 + x_j^2) in w, or NULL
 * without an imatrix (the block then takes ggml's "_ref" rounding). */
static const float *block_weights(const float *x, const float *imatrix, int64_t ib, float sigma2, float *w) {
    if (!imatrix) return NULL;
    qt__importance_weights(x + LEGACY_QK * ib, imatrix + LEGACY_QK * ib, sigma2, LEGACY_QK, w);
    return w;
}

/* Q4_0 (nmax 8) / Q5_0 (nmax 16): levels L in 0..2*nmax-1 and the scale of
 * one block. Without weights ggml's quantize_row_q{4,5}_0_ref: d = max/-nmax
 * (max the signed extreme), levels trunc(x/d + nmax + 0.5) (round half up;
 * the extreme maps to 0, its negation to 2*nmax, clamped to 2*nmax-1). With
 * weights the symmetric search of quantize_row_q{4,5}_0_impl. */
static float symmetric_block(const float *xb, const float *w, int nmax, uint8_t *L) {
    if (w) {
        int8_t Ls[LEGACY_QK];
        const float d = qt__fit_symmetric(LEGACY_QK, nmax, xb, w, Ls);
        for (int j = 0; j < LEGACY_QK; j++) L[j] = (uint8_t)Ls[j];
        return d;
    }
    float amax;
    const float d = qt__signed_absmax(xb, LEGACY_QK, &amax) / (float)-nmax;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    const float bias = (float)nmax + 0.5f;
    const int top = 2 * nmax - 1;
    for (int j = 0; j < LEGACY_QK; j++) {
        const int q = (int8_t)qt__cvtt_i32(xb[j] * id + bias);
        L[j] = (uint8_t)(q < top ? q : top);
    }
    return d;
}

/* Q4_1 (nmax 15) / Q5_1 (nmax 31): levels L in 0..nmax, the scale (returned)
 * and the offset *m of one block, x ~ d*l + m. Without weights ggml's
 * quantize_row_q{4,5}_1_ref: m = min, d = (max - min)/nmax, levels
 * trunc((x - min)/d + 0.5), clamped to nmax only where ggml clamps (Q4_1; for
 * finite input the value stays below nmax + 1 anyway). With weights the
 * affine search of quantize_row_q{4,5}_1_impl. */
static float affine_block(const float *xb, const float *w, int nmax, bool clamp, uint8_t *L, float *m) {
    if (w) {
        uint8_t Laux[LEGACY_QK];
        float neg_min;
        const float d = qt__fit_affine(LEGACY_QK, nmax, xb, w, &LEGACY_IMATRIX, L, Laux, &neg_min);
        *m = -neg_min;
        return d;
    }
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < LEGACY_QK; j++) {
        if (xb[j] < min) min = xb[j];
        if (xb[j] > max) max = xb[j];
    }
    const float d = (max - min) / (float)nmax;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    *m = min;
    for (int j = 0; j < LEGACY_QK; j++) {
        const int q = (int8_t)qt__cvtt_i32((xb[j] - min) * id + 0.5f);
        L[j] = (uint8_t)(clamp && q > nmax ? nmax : q);
    }
    return d;
}

/* Fifth bits of 32 5-bit values: bit j of element j / j+16 (docs/formats.md §3.4). */
static void pack_q5(const uint8_t *L, uint8_t qs[16], uint8_t qh_bytes[4]) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t)((L[j] & 0x0F) | ((L[j + 16] & 0x0F) << 4));
        qh |= ((L[j] & 0x10u) >> 4) << j;
        qh |= ((L[j + 16] & 0x10u) >> 4) << (j + 16);
    }
    for (int b = 0; b < 4; b++) qh_bytes[b] = (uint8_t)(qh >> (8 * b)); /* little-endian */
}

/* Inverse of pack_q5: the 32 levels (0..31) of one block. */
static void unpack_q5(const uint8_t qs[16], const uint8_t qh_bytes[4], int L[LEGACY_QK]) {
    const uint32_t qh = (uint32_t)qh_bytes[0] | (uint32_t)qh_bytes[1] << 8 | (uint32_t)qh_bytes[2] << 16 |
                        (uint32_t)qh_bytes[3] << 24;
    for (int j = 0; j < 16; j++) {
        L[j] = (qs[j] & 0x0F) | (int)((qh >> j) & 1u) << 4;
        L[j + 16] = (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1u) << 4;
    }
}

/* ---- Q4_0 ---------------------------------------------------------------- */

void qt__quantize_q4_0(const float *x, void *dst, int64_t n, const float *imatrix) {
    block_q4_0 *y = dst;
    const float sigma2 = row_sigma2(x, n, imatrix);
    float w[LEGACY_QK];
    uint8_t L[LEGACY_QK];
    for (int64_t ib = 0; ib < n / LEGACY_QK; ib++) {
        const float d = symmetric_block(x + LEGACY_QK * ib, block_weights(x, imatrix, ib, sigma2, w), 8, L);
        y[ib].d = qt_f32_to_fp16(d);
        qt__pack_nibbles32(L, y[ib].qs);
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
    const float sigma2 = row_sigma2(x, n, imatrix);
    float w[LEGACY_QK], m;
    uint8_t L[LEGACY_QK];
    for (int64_t ib = 0; ib < n / LEGACY_QK; ib++) {
        const float d = affine_block(x + LEGACY_QK * ib, block_weights(x, imatrix, ib, sigma2, w), 15, true, L, &m);
        y[ib].d = qt_f32_to_fp16(d);
        y[ib].m = qt_f32_to_fp16(m);
        qt__pack_nibbles32(L, y[ib].qs);
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
    const float sigma2 = row_sigma2(x, n, imatrix);
    float w[LEGACY_QK];
    uint8_t L[LEGACY_QK];
    for (int64_t ib = 0; ib < n / LEGACY_QK; ib++) {
        const float d = symmetric_block(x + LEGACY_QK * ib, block_weights(x, imatrix, ib, sigma2, w), 16, L);
        y[ib].d = qt_f32_to_fp16(d);
        pack_q5(L, y[ib].qs, y[ib].qh);
    }
}

void qt__dequantize_q5_0(const void *src, float *y, int64_t n) {
    const block_q5_0 *x = src;
    const int64_t nb = n / LEGACY_QK;
    int L[LEGACY_QK];
    for (int64_t ib = 0; ib < nb; ib++) {
        const float d = qt_fp16_to_f32(x[ib].d);
        unpack_q5(x[ib].qs, x[ib].qh, L);
        for (int j = 0; j < LEGACY_QK; j++) y[LEGACY_QK * ib + j] = (float)(L[j] - 16) * d;
    }
}

/* ---- Q5_1 ---------------------------------------------------------------- */

void qt__quantize_q5_1(const float *x, void *dst, int64_t n, const float *imatrix) {
    block_q5_1 *y = dst;
    const float sigma2 = row_sigma2(x, n, imatrix);
    float w[LEGACY_QK], m;
    uint8_t L[LEGACY_QK];
    for (int64_t ib = 0; ib < n / LEGACY_QK; ib++) {
        const float d = affine_block(x + LEGACY_QK * ib, block_weights(x, imatrix, ib, sigma2, w), 31, false, L, &m);
        y[ib].d = qt_f32_to_fp16(d);
        y[ib].m = qt_f32_to_fp16(m);
        pack_q5(L, y[ib].qs, y[ib].qh);
    }
}

void qt__dequantize_q5_1(const void *src, float *y, int64_t n) {
    const block_q5_1 *x = src;
    const int64_t nb = n / LEGACY_QK;
    int L[LEGACY_QK];
    for (int64_t ib = 0; ib < nb; ib++) {
        const float d = qt_fp16_to_f32(x[ib].d);
        const float m = qt_fp16_to_f32(x[ib].m);
        unpack_q5(x[ib].qs, x[ib].qh, L);
        for (int j = 0; j < LEGACY_QK; j++) y[LEGACY_QK * ib + j] = (float)L[j] * d + m;
    }
}

/* ---- Q8_0 / Q8_1 ----------------------------------------------------------- */

/* d = max|x|/127, q = roundf(x/d) (ties away from zero); returns d. */
static float q8_block(const float *xb, int8_t *qs) {
    const float d = qt__absmax(xb, LEGACY_QK) / 127;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    for (int j = 0; j < LEGACY_QK; j++) qs[j] = (int8_t)qt__cvtt_i32(roundf(xb[j] * id));
    return d;
}

/* y = q*d for one block (Q8_0 and Q8_1 store qs and d alike). */
static void q8_block_to_float(const int8_t *qs, qt_half d16, float *y) {
    const float d = qt_fp16_to_f32(d16);
    for (int j = 0; j < LEGACY_QK; j++) y[j] = (float)qs[j] * d;
}

void qt__quantize_q8_0(const float *x, void *dst, int64_t n, const float *imatrix) {
    (void)imatrix; /* ggml's quantize_q8_0 ignores importance weights */
    block_q8_0 *y = dst;
    for (int64_t ib = 0; ib < n / LEGACY_QK; ib++)
        y[ib].d = qt_f32_to_fp16(q8_block(x + LEGACY_QK * ib, y[ib].qs));
}

void qt__dequantize_q8_0(const void *src, float *y, int64_t n) {
    const block_q8_0 *x = src;
    for (int64_t ib = 0; ib < n / LEGACY_QK; ib++) q8_block_to_float(x[ib].qs, x[ib].d, y + LEGACY_QK * ib);
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
    for (int64_t ib = 0; ib < n / LEGACY_QK; ib++) q8_block_to_float(x[ib].qs, x[ib].d, y + LEGACY_QK * ib);
}
