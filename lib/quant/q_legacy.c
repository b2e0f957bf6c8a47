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
 *    make_qkx3_quants).
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
#include "quant_util.h"
#include "quanta/num.h"

#define LEGACY_QK 32

/* Blocks whose largest |x| is below this are treated as all zero by the
 * searches (ggml GROUP_MAX_EPS). */
#define GROUP_MAX_EPS 1e-15f

/* ---- search helpers (importance-weighted paths) ------------------------ */

/* Weighted least-squares symmetric scale: integers l in [-nmax, nmax-1],
 * x ~ scale*l, minimizing sum w (x - scale*l)^2 over 19 candidate inverse
 * scales -(nmax + 0.1*is)/max around the extreme value (ggml make_qx_quants,
 * rmse_type 1 with explicit weights). L receives l + nmax. */
static float search_symmetric_scale(int n, int nmax, const float *x, const float *w, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++) {
        const float ax = fabsf(x[i]);
        if (ax > amax) { amax = ax; max = x[i]; }
    }
    if (amax < GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = (float)-nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        const int l = qt__clamp_int(qt__nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        sumlx += w[i] * x[i] * (float)l;
        suml2 += w[i] * (float)l * (float)l;
    }
    float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            const int l = qt__clamp_int(qt__nearest_int(iscale * x[i]), -nmax, nmax - 1);
            sumlx += w[i] * x[i] * (float)l;
            suml2 += w[i] * (float)l * (float)l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++)
                L[i] = (int8_t)(nmax + qt__clamp_int(qt__nearest_int(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Weighted least-squares affine fit x ~ scale*l + min with l in [0, nmax] and
 * min <= 0: start from the range, then try inverse scales
 * (nmax - 0.9 + 0.05*is)/(max - min) for is = 0..36, each followed by a
 * closed-form weighted fit of scale and min, keeping the one with the lowest
 * weighted squared error (ggml make_qkx3_quants, use_mad = false). Returns the
 * scale; *neg_min receives -min (>= 0). */
static float search_affine_scale(int n, int nmax, const float *x, const float *w,
                                 uint8_t *L, uint8_t *Laux, float *neg_min) {
    const float rmin = -0.9f, rdelta = 0.05f;
    const int nstep = 36;
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max <= min) {
        memset(L, 0, (size_t)n);
        *neg_min = -min;
        return 0.f;
    }
    float iscale = (float)nmax / (max - min);
    float scale = 1 / iscale;
    float best_err = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)qt__clamp_int(qt__nearest_int(iscale * (x[i] - min)), 0, nmax);
        const float diff = scale * (float)L[i] + min - x[i];
        best_err += w[i] * (diff * diff);
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            /* min may have moved close to max: clamp before rounding so the
             * integer conversion never sees a huge value (same result). */
            const float v = iscale * (x[i] - min);
            const int l = v > 0 ? qt__nearest_int(v < (float)nmax ? v : (float)nmax) : 0;
            Laux[i] = (uint8_t)l;
            sum_l += w[i] * (float)l;
            sum_l2 += w[i] * (float)l * (float)l;
            sum_xl += w[i] * (float)l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float err = 0;
            for (int i = 0; i < n; i++) {
                const float diff = this_scale * (float)Laux[i] + this_min - x[i];
                err += w[i] * (diff * diff);
            }
            if (err < best_err) {
                memcpy(L, Laux, (size_t)n);
                best_err = err;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *neg_min = -min;
    return scale;
}

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
            const float d = search_symmetric_scale(LEGACY_QK, 8, xb, w, L);
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
            const float d = search_affine_scale(LEGACY_QK, 15, xb, w, L, Laux, &neg_min);
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
            const float d = search_symmetric_scale(LEGACY_QK, 16, xb, w, L);
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
            const float d = search_affine_scale(LEGACY_QK, 31, xb, w, q, Laux, &neg_min);
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
