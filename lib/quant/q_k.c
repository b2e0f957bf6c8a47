/* lib/quant/q_k.c — ggml's K-quants: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K.
 *
 * Reference quantizers and dequantizers that reproduce llama.cpp's bytes and
 * floats exactly (formats.md §3.2-3.4; ggml src/ggml-quants.c, functions
 * quantize_row_q*_K_ref, quantize_row_q*_K_impl, dequantize_row_q*_K).
 *
 * What bit-exactness rests on (formats.md §3.3):
 *  - rounding is qt__nearest_int (round half to even via 1.5*2^23);
 *  - every multiply/add is a separate fp32 operation (the build uses
 *    -ffp-contract=off) and the expression association below follows ggml's
 *    left-to-right order — e.g. `w * x * l` is (w*x)*l — so do not "simplify";
 *  - reductions are sequential in element order;
 *  - the super-block scales are searched in fp32, stored as fp16, and the
 *    final integer pass re-derives every quant from the fp16-rounded value.
 *
 * Dispatch on importance weights mirrors ggml's quantize_q*_K: without an
 * imatrix every type takes the "_ref" algorithm; with one, the "_impl"
 * algorithm (different search ranges, least-squares super-scales). Q8_K is an
 * activation type and has no weighted variant.
 */
#include <math.h>
#include <string.h>

#include "blocks.h"
#include "kernels.h"
#include "quant_util.h"
#include "quanta/num.h"

/* ggml's GROUP_MAX_EPS: below this max |x| a group counts as all zero. */
#define K_GROUP_EPS 1e-15f

/* ------------------------------------------------------------------------ */
/* Scale searches                                                            */
/* ------------------------------------------------------------------------ */

/* Symmetric fit x ~ scale*l with l in [-nmax, nmax-1] (ggml make_qx_quants,
 * rmse_type 1). Starts from scale = max/-nmax, then tries 18 nearby inverse
 * scales and keeps the one with the best weighted least-squares objective
 * (sum w*x*l)^2 / sum w*l^2. Weights: qw if given, else x^2.
 * Writes L[i] = l + nmax (0..2*nmax-1) and returns the fitted scale. */
static float fit_symmetric(int n, int nmax, const float *x, int8_t *L, const float *qw) {
    float max = 0.0f, amax = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float ax = fabsf(x[i]);
        if (ax > amax) { amax = ax; max = x[i]; }
    }
    if (amax < K_GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = (float)-nmax / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        const int l = qt__clamp_int(qt__nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        const float w = qw ? qw[i] : x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0.0f;
        for (int i = 0; i < n; ++i) {
            const int l = qt__clamp_int(qt__nearest_int(iscale * x[i]), -nmax, nmax - 1);
            const float w = qw ? qw[i] : x[i] * x[i];
            sumlx += w * x[i] * (float)l;
            suml2 += w * (float)l * (float)l;
        }
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                const int l = qt__clamp_int(qt__nearest_int(iscale * x[i]), -nmax, nmax - 1);
                L[i] = (int8_t)(l + nmax);
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Symmetric fit for Q3_K's reference path (ggml make_q3_quants, do_rmse):
 * start at scale = max/-nmax, then up to 5 coordinate-descent sweeps, each
 * moving one l_i to the value that is optimal given the others, accepted
 * only if the objective (sum w*x*l)^2 / sum w*l^2 (w = x^2) improves.
 * Writes L[i] = l + nmax, returns sum(w*x*l)/sum(w*l^2). */
static float fit_symmetric_descent(int n, int nmax, const float *x, int8_t *L) {
    float max = 0.0f, amax = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float ax = fabsf(x[i]);
        if (ax > amax) { amax = ax; max = x[i]; }
    }
    if (amax < K_GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    const float iscale = (float)-nmax / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        const int l = qt__clamp_int(qt__nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)l;
        const float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    for (int sweep = 0; sweep < 5; ++sweep) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * (float)L[i];
            if (slx > 0.0f) {
                float sl2 = suml2 - w * (float)L[i] * (float)L[i];
                const int new_l = qt__clamp_int(qt__nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (new_l != L[i]) {
                    slx += w * x[i] * (float)new_l;
                    sl2 += w * (float)new_l * (float)new_l;
                    if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    for (int i = 0; i < n; ++i) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* Affine fit x ~ scale*l + min with l in [0, nmax] and min <= 0 (ggml
 * make_qkx2_quants; make_qkx3_quants is the same computation when weights are
 * given, which is the only way our callers use it). Tries nstep+1 inverse
 * scales (rmin + rdelta*is + nmax)/(max - min); for each, solves the 2x2
 * weighted least-squares problem for (scale, min) and keeps the candidate with
 * the smallest weighted error (|diff| if use_mad, else diff^2).
 * Writes L, stores -min (>= 0) in *neg_min, returns scale. Laux: n scratch. */
static float fit_affine(int n, int nmax, const float *x, const float *w, uint8_t *L, float *neg_min,
                        uint8_t *Laux, float rmin, float rdelta, int nstep, int use_mad) {
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0.0f) min = 0.0f;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *neg_min = -min;
        return 0.0f;
    }
    float iscale = (float)nmax / (max - min);
    float scale = 1.0f / iscale;
    float best_error = 0.0f;
    for (int i = 0; i < n; ++i) {
        L[i] = (uint8_t)qt__clamp_int(qt__nearest_int(iscale * (x[i] - min)), 0, nmax);
        float diff = scale * (float)L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += w[i] * diff;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
        for (int i = 0; i < n; ++i) {
            const int l = qt__clamp_int(qt__nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t)l;
            const float fl = (float)l;
            sum_l += w[i] * fl;
            sum_l2 += w[i] * fl * fl;
            sum_xl += w[i] * fl * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0.0f) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0.0f) {
                this_min = 0.0f;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0.0f;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * (float)Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                cur_error += w[i] * diff;
            }
            if (cur_error < best_error) {
                memcpy(L, Laux, (size_t)n);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *neg_min = -min;
    return scale;
}

/* Quantize non-negative sub-block scales (or mins) x to l in [0, nmax] with a
 * shared step (ggml make_qp_quants, used by the importance-weighted paths):
 * pick the best of 9 inverse steps (nmax + 0.1*is)/max by weighted squared
 * error, then coordinate descent as in fit_symmetric_descent. Weights qw are
 * the sub-blocks' summed importance. Writes L, returns the step.
 * The uint8_t stores wrap exactly as ggml's do (only reachable for negative
 * scales, which the affine fit does not produce in practice). */
static float fit_scales(int n, int nmax, const float *x, uint8_t *L, const float *qw) {
    float max = 0.0f;
    for (int i = 0; i < n; ++i) max = max > x[i] ? max : x[i];
    if (max < K_GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = (float)nmax / max;
    for (int i = 0; i < n; ++i) L[i] = (uint8_t)qt__nearest_int(iscale * x[i]);
    const float scale = 1.0f / iscale;
    float best_mse = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float diff = x[i] - scale * (float)L[i];
        best_mse += qw[i] * diff * diff;
    }
    for (int is = -4; is <= 4; ++is) {
        if (is == 0) continue;
        const float iscale_is = (0.1f * (float)is + (float)nmax) / max;
        const float scale_is = 1.0f / iscale_is;
        float mse = 0.0f;
        for (int i = 0; i < n; ++i) {
            const int l = qt__min_int(nmax, qt__nearest_int(iscale_is * x[i]));
            const float diff = x[i] - scale_is * (float)l;
            mse += qw[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        const int l = qt__min_int(nmax, qt__nearest_int(iscale * x[i]));
        L[i] = (uint8_t)l;
        sumlx += qw[i] * x[i] * (float)l;
        suml2 += qw[i] * (float)l * (float)l;
    }
    for (int sweep = 0; sweep < 5; ++sweep) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = qw[i];
            float slx = sumlx - w * x[i] * (float)L[i];
            float sl2 = suml2 - w * (float)L[i] * (float)L[i];
            if (slx > 0.0f && sl2 > 0.0f) {
                const int new_l = qt__min_int(nmax, qt__nearest_int(x[i] * sl2 / slx));
                if (new_l != L[i]) {
                    slx += w * x[i] * (float)new_l;
                    sl2 += w * (float)new_l * (float)new_l;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (uint8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* ------------------------------------------------------------------------ */
/* Shared packing                                                            */
/* ------------------------------------------------------------------------ */

/* Sum of squares of one 256-element super-block, sequential (ggml order). */
static float sum_sq(const float *x, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; ++i) s += x[i] * x[i];
    return s;
}

/* Q2_K / Q3_K 2-bit plane: for each half h, byte l holds elements
 * 128h + l, +32, +64, +96 at bit pairs 0, 2, 4, 6. */
static void pack_2bit(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < QK_K; j += 128)
        for (int l = 0; l < 32; ++l)
            qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

/* Q4_K / Q5_K: 8 six-bit scales and 8 six-bit mins in 12 bytes
 * (formats.md §3.4 "Scale packing"; inverse of get_scale_min_k4). */
static void pack_scale_min_k4(const uint8_t *ls, const uint8_t *lm, uint8_t *q) {
    memset(q, 0, K_SCALE_SIZE);
    for (int j = 0; j < QK_K / 32; ++j) {
        if (j < 4) {
            q[j] = ls[j];
            q[j + 4] = lm[j];
        } else {
            q[j + 4] = (uint8_t)((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
            q[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
            q[j] |= (uint8_t)((lm[j] >> 4) << 6);
        }
    }
}

static void get_scale_min_k4(int j, const uint8_t *q, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* Final pass shared by Q4_K and Q5_K: re-derive every quant from the stored
 * fp16 d/dmin and 6-bit scales. Sub-blocks whose scale rounds to 0 keep the
 * levels the search produced. */
static void requant_affine_k4(const float *x, qt_half d16, qt_half dmin16, const uint8_t *scales,
                              int nmax, uint8_t *L) {
    const float d_all = qt_fp16_to_f32(d16), dmin_all = qt_fp16_to_f32(dmin16);
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t sc, m;
        get_scale_min_k4(j, scales, &sc, &m);
        const float d = d_all * (float)sc;
        if (d == 0.0f) continue;
        const float dm = dmin_all * (float)m;
        for (int ii = 0; ii < 32; ++ii)
            L[32 * j + ii] = (uint8_t)qt__clamp_int(qt__nearest_int((x[32 * j + ii] + dm) / d), 0, nmax);
    }
}

/* ------------------------------------------------------------------------ */
/* Q2_K                                                                      */
/* ------------------------------------------------------------------------ */

static void q2_K_finish(const float *x, block_q2_K *y, uint8_t *L) {
    const float d_all = qt_fp16_to_f32(y->d), dmin_all = qt_fp16_to_f32(y->dmin);
    for (int j = 0; j < QK_K / 16; ++j) {
        const float d = d_all * (float)(y->scales[j] & 0xF);
        if (d == 0.0f) continue;
        const float dm = dmin_all * (float)(y->scales[j] >> 4);
        for (int ii = 0; ii < 16; ++ii)
            L[16 * j + ii] = (uint8_t)qt__clamp_int(qt__nearest_int((x[16 * j + ii] + dm) / d), 0, 3);
    }
    pack_2bit(L, y->qs);
}

/* Reference path (quantize_row_q2_K_ref): per 16-element sub-block an affine
 * fit with weights |x| and mean absolute error; 4-bit scale/min codes relative
 * to the block maxima. */
static void q2_K_block_ref(const float *x, block_q2_K *y) {
    uint8_t L[QK_K], Laux[16];
    float weights[16], mins[QK_K / 16], scales[QK_K / 16];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < QK_K / 16; ++j) {
        for (int l = 0; l < 16; ++l) weights[l] = fabsf(x[16 * j + l]);
        scales[j] = fit_affine(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, 1);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0.0f) {
        const float iscale = 15.0f / max_scale;
        for (int j = 0; j < QK_K / 16; ++j) y->scales[j] = (uint8_t)qt__nearest_int(iscale * scales[j]);
        y->d = qt_f32_to_fp16(max_scale / 15.0f);
    } else {
        memset(y->scales, 0, sizeof y->scales);
        y->d = qt_f32_to_fp16(0.0f);
    }
    if (max_min > 0.0f) {
        const float iscale = 15.0f / max_min;
        for (int j = 0; j < QK_K / 16; ++j)
            y->scales[j] |= (uint8_t)((unsigned)qt__nearest_int(iscale * mins[j]) << 4);
        y->dmin = qt_f32_to_fp16(max_min / 15.0f);
    } else {
        y->dmin = qt_f32_to_fp16(0.0f);
    }
    q2_K_finish(x, y, L);
}

/* Importance-weighted path (quantize_row_q2_K_impl): weights
 * imatrix * sqrt(sigma^2 + x^2), squared-error affine fits over a wider
 * search, then the 16 scales and 16 mins are themselves least-squares
 * quantized to 4 bits (fit_scales) with the sub-block weight sums. */
static void q2_K_block_imatrix(const float *x, block_q2_K *y, const float *qw) {
    uint8_t L[QK_K], Laux[16], Ls[QK_K / 16], Lm[QK_K / 16];
    float weight[16], mins[QK_K / 16], scales[QK_K / 16], sw[QK_K / 16];
    const float sigma2 = sum_sq(x, QK_K) / (float)QK_K;
    for (int j = 0; j < QK_K / 16; ++j) {
        for (int l = 0; l < 16; ++l)
            weight[l] = qw[16 * j + l] * sqrtf(sigma2 + x[16 * j + l] * x[16 * j + l]);
        sw[j] = 0.0f;
        for (int l = 0; l < 16; ++l) sw[j] += weight[l];
        scales[j] = fit_affine(16, 3, x + 16 * j, weight, L + 16 * j, &mins[j], Laux, -0.9f, 0.05f, 36, 0);
    }
    const float dm = fit_scales(QK_K / 16, 15, scales, Ls, sw);
    const float mm = fit_scales(QK_K / 16, 15, mins, Lm, sw);
    y->d = qt_f32_to_fp16(dm);
    y->dmin = qt_f32_to_fp16(mm);
    for (int j = 0; j < QK_K / 16; ++j) y->scales[j] = (uint8_t)(Ls[j] | (Lm[j] << 4));
    q2_K_finish(x, y, L);
}

void qt__quantize_q2_K(const float *src, void *dst, int64_t n, const float *imatrix) {
    block_q2_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        if (imatrix) q2_K_block_imatrix(src + i * QK_K, &y[i], imatrix + i * QK_K);
        else q2_K_block_ref(src + i * QK_K, &y[i]);
    }
}

void qt__dequantize_q2_K(const void *src, float *y, int64_t n) {
    const block_q2_K *x = src;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = qt_fp16_to_f32(x[i].d), min = qt_fp16_to_f32(x[i].dmin);
        const uint8_t *q = x[i].qs;
        int is = 0;
        for (int h = 0; h < QK_K; h += 128) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int half = 0; half < 2; ++half) {
                    const uint8_t sc = x[i].scales[is++];
                    const float dl = d * (float)(sc & 0xF), ml = min * (float)(sc >> 4);
                    for (int l = 0; l < 16; ++l) *y++ = dl * (float)((q[16 * half + l] >> shift) & 3) - ml;
                }
            }
            q += 32;
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Q3_K                                                                      */
/* ------------------------------------------------------------------------ */

/* 16 six-bit signed scales (stored +32) into 12 bytes: low nibbles in bytes
 * 0..7 (j<8 low half, j>=8 high half of byte j-8), top two bits in bytes 8..11
 * at bit pair j/4 of byte 8 + j%4. */
static void q3_K_pack_scales(const int *ls, uint8_t *s) {
    memset(s, 0, 12);
    for (int j = 0; j < QK_K / 16; ++j) {
        const int l = ls[j];
        if (j < 8) s[j] = (uint8_t)(l & 0xF);
        else s[j - 8] |= (uint8_t)((l & 0xF) << 4);
        s[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
    }
}

static int q3_K_scale(const uint8_t *s, int j) {
    const int lo = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
    return (lo | (((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
}

/* Final pass: re-derive quants from the fp16 d and 6-bit scales, then split
 * each 3-bit value into a high bit (hmask, bit e/32 of byte e%32) and a 2-bit
 * plane. L holds levels + 4 (0..7). */
static void q3_K_finish(const float *x, block_q3_K *y, int8_t *L) {
    const float d_all = qt_fp16_to_f32(y->d);
    for (int j = 0; j < QK_K / 16; ++j) {
        const float d = d_all * (float)q3_K_scale(y->scales, j);
        if (d == 0.0f) continue;
        for (int ii = 0; ii < 16; ++ii)
            L[16 * j + ii] = (int8_t)(qt__clamp_int(qt__nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
    }
    uint8_t L2[QK_K];
    memset(y->hmask, 0, sizeof y->hmask);
    for (int j = 0; j < QK_K; ++j) {
        int l = L[j];
        if (l > 3) {
            y->hmask[j % (QK_K / 8)] |= (uint8_t)(1u << (j / (QK_K / 8)));
            l -= 4;
        }
        L2[j] = (uint8_t)l;
    }
    pack_2bit(L2, y->qs);
}

/* Reference path (quantize_row_q3_K_ref). */
static void q3_K_block_ref(const float *x, block_q3_K *y) {
    int8_t L[QK_K];
    float scales[QK_K / 16];
    float max_scale = 0.0f, amax = 0.0f;
    for (int j = 0; j < QK_K / 16; ++j) {
        scales[j] = fit_symmetric_descent(16, 4, x + 16 * j, L + 16 * j);
        const float a = fabsf(scales[j]);
        if (a > amax) { amax = a; max_scale = scales[j]; }
    }
    if (max_scale != 0.0f) {
        const float iscale = -32.0f / max_scale;
        int ls[QK_K / 16];
        for (int j = 0; j < QK_K / 16; ++j)
            ls[j] = qt__clamp_int((int8_t)qt__nearest_int(iscale * scales[j]), -32, 31) + 32;
        q3_K_pack_scales(ls, y->scales);
        y->d = qt_f32_to_fp16(1.0f / iscale);
    } else {
        memset(y->scales, 0, sizeof y->scales);
        y->d = qt_f32_to_fp16(0.0f);
    }
    q3_K_finish(x, y, L);
}

/* Importance-weighted path (quantize_row_q3_K_impl): per sub-block symmetric
 * fit with weights imatrix * sqrt(2*sigma^2 + x^2); the 16 scales are then
 * fitted as a 6-bit signed vector (fit_symmetric, nmax 32) with the sub-block
 * weight sums. */
static void q3_K_block_imatrix(const float *x, block_q3_K *y, const float *qw) {
    int8_t L[QK_K], Ls[QK_K / 16];
    float scales[QK_K / 16], weight[16], sw[QK_K / 16];
    const float sigma2 = 2.0f * sum_sq(x, QK_K) / (float)QK_K;
    for (int j = 0; j < QK_K / 16; ++j) {
        for (int l = 0; l < 16; ++l)
            weight[l] = qw[16 * j + l] * sqrtf(sigma2 + x[16 * j + l] * x[16 * j + l]);
        float sumw = 0.0f;
        for (int l = 0; l < 16; ++l) sumw += weight[l];
        sw[j] = sumw;
        scales[j] = fit_symmetric(16, 4, x + 16 * j, L + 16 * j, weight);
    }
    const float d_block = fit_symmetric(QK_K / 16, 32, scales, Ls, sw);
    int ls[QK_K / 16];
    for (int j = 0; j < QK_K / 16; ++j) ls[j] = Ls[j];
    q3_K_pack_scales(ls, y->scales);
    y->d = qt_f32_to_fp16(d_block);
    q3_K_finish(x, y, L);
}

void qt__quantize_q3_K(const float *src, void *dst, int64_t n, const float *imatrix) {
    block_q3_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        if (imatrix) q3_K_block_imatrix(src + i * QK_K, &y[i], imatrix + i * QK_K);
        else q3_K_block_ref(src + i * QK_K, &y[i]);
    }
}

void qt__dequantize_q3_K(const void *src, float *y, int64_t n) {
    const block_q3_K *x = src;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d_all = qt_fp16_to_f32(x[i].d);
        int sc[QK_K / 16];
        for (int j = 0; j < QK_K / 16; ++j) sc[j] = q3_K_scale(x[i].scales, j);
        const uint8_t *q = x[i].qs;
        unsigned bit = 0; /* hmask bit = 4h + k for element 128h + 32k + l */
        int is = 0;
        for (int h = 0; h < QK_K; h += 128) {
            for (int shift = 0; shift < 8; shift += 2, ++bit) {
                for (int half = 0; half < 2; ++half) {
                    const float dl = d_all * (float)sc[is++];
                    for (int l = 0; l < 16; ++l) {
                        const int q2 = (q[16 * half + l] >> shift) & 3;
                        const int hb = (x[i].hmask[16 * half + l] >> bit) & 1;
                        *y++ = dl * (float)(q2 - (hb ? 0 : 4));
                    }
                }
            }
            q += 32;
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Q4_K / Q5_K                                                               */
/* ------------------------------------------------------------------------ */

/* Reference search shared by Q4_K and Q5_K (quantize_row_q{4,5}_K_ref):
 * per 32-element sub-block weights sqrt(mean x^2) + |x|, affine fit with
 * squared error; 6-bit scale/min codes relative to the block maxima. */
static void k4_search_ref(const float *x, int nmax, float rmin, int nstep, uint8_t *L,
                          uint8_t *scales12, qt_half *d, qt_half *dmin) {
    uint8_t Laux[32], ls[QK_K / 32], lm[QK_K / 32];
    float weights[32], mins[QK_K / 32], scales[QK_K / 32];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < QK_K / 32; ++j) {
        const float av_x = sqrtf(sum_sq(x + 32 * j, 32) / 32.0f);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = fit_affine(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, 0);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
    for (int j = 0; j < QK_K / 32; ++j) {
        /* uint8_t first, then clamp: ggml's order (matters only for wrapped negatives). */
        const uint8_t s = (uint8_t)qt__nearest_int(inv_scale * scales[j]);
        const uint8_t m = (uint8_t)qt__nearest_int(inv_min * mins[j]);
        ls[j] = s < 63 ? s : 63;
        lm[j] = m < 63 ? m : 63;
    }
    pack_scale_min_k4(ls, lm, scales12);
    *d = qt_f32_to_fp16(max_scale / 63.0f);
    *dmin = qt_f32_to_fp16(max_min / 63.0f);
}

/* Importance-weighted search shared by Q4_K and Q5_K
 * (quantize_row_q{4,5}_K_impl): weights imatrix * sqrt(2*sigma^2 + x^2),
 * wider affine search, then least-squares 6-bit codes for scales and mins. */
static void k4_search_imatrix(const float *x, const float *qw, int nmax, uint8_t *L,
                              uint8_t *scales12, qt_half *d, qt_half *dmin) {
    /* ggml's Q5_K path clamps the codes to 63, its Q4_K path does not; the
     * codes are <= 63 anyway unless a negative scale wrapped a uint8_t. */
    const int clamp63 = nmax == 31;
    uint8_t Laux[32], ls[QK_K / 32], lm[QK_K / 32];
    float weights[32], mins[QK_K / 32], scales[QK_K / 32], sw[QK_K / 32];
    const float sigma2 = 2.0f * sum_sq(x, QK_K) / (float)QK_K;
    for (int j = 0; j < QK_K / 32; ++j) {
        for (int l = 0; l < 32; ++l)
            weights[l] = qw[32 * j + l] * sqrtf(sigma2 + x[32 * j + l] * x[32 * j + l]);
        float sumw = 0.0f;
        for (int l = 0; l < 32; ++l) sumw += weights[l];
        sw[j] = sumw;
        scales[j] = fit_affine(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, -0.9f, 0.05f, 36, 0);
    }
    const float d_block = fit_scales(QK_K / 32, 63, scales, ls, sw);
    const float m_block = fit_scales(QK_K / 32, 63, mins, lm, sw);
    for (int j = 0; clamp63 && j < QK_K / 32; ++j) {
        if (ls[j] > 63) ls[j] = 63;
        if (lm[j] > 63) lm[j] = 63;
    }
    pack_scale_min_k4(ls, lm, scales12);
    *d = qt_f32_to_fp16(d_block);
    *dmin = qt_f32_to_fp16(m_block);
}

void qt__quantize_q4_K(const float *src, void *dst, int64_t n, const float *imatrix) {
    block_q4_K *y = dst;
    uint8_t L[QK_K];
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float *x = src + i * QK_K;
        if (imatrix) k4_search_imatrix(x, imatrix + i * QK_K, 15, L, y[i].scales, &y[i].d, &y[i].dmin);
        else k4_search_ref(x, 15, -1.0f, 20, L, y[i].scales, &y[i].d, &y[i].dmin);
        requant_affine_k4(x, y[i].d, y[i].dmin, y[i].scales, 15, L);
        /* chunk c of 64: byte 32c + l = L[64c + l] | L[64c + 32 + l] << 4 */
        for (int c = 0; c < QK_K / 64; ++c)
            for (int l = 0; l < 32; ++l)
                y[i].qs[32 * c + l] = (uint8_t)(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
    }
}

void qt__dequantize_q4_K(const void *src, float *y, int64_t n) {
    const block_q4_K *x = src;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = qt_fp16_to_f32(x[i].d), min = qt_fp16_to_f32(x[i].dmin);
        const uint8_t *q = x[i].qs;
        for (int c = 0; c < QK_K / 64; ++c, q += 32) {
            uint8_t sc, m;
            get_scale_min_k4(2 * c, x[i].scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = min * (float)m;
            get_scale_min_k4(2 * c + 1, x[i].scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = min * (float)m;
            for (int l = 0; l < 32; ++l) *y++ = d1 * (float)(q[l] & 0xF) - m1;
            for (int l = 0; l < 32; ++l) *y++ = d2 * (float)(q[l] >> 4) - m2;
        }
    }
}

void qt__quantize_q5_K(const float *src, void *dst, int64_t n, const float *imatrix) {
    block_q5_K *y = dst;
    uint8_t L[QK_K];
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float *x = src + i * QK_K;
        if (imatrix) k4_search_imatrix(x, imatrix + i * QK_K, 31, L, y[i].scales, &y[i].d, &y[i].dmin);
        else k4_search_ref(x, 31, -0.5f, 15, L, y[i].scales, &y[i].d, &y[i].dmin);
        requant_affine_k4(x, y[i].d, y[i].dmin, y[i].scales, 31, L);
        /* low nibbles as Q4_K; bit 4 of L[64c + l] -> qh[l] bit 2c, of L[64c + 32 + l] -> bit 2c+1 */
        memset(y[i].qh, 0, sizeof y[i].qh);
        for (int c = 0; c < QK_K / 64; ++c) {
            for (int l = 0; l < 32; ++l) {
                const int l1 = L[64 * c + l], l2 = L[64 * c + 32 + l];
                y[i].qh[l] |= (uint8_t)(((l1 >> 4) & 1) << (2 * c) | ((l2 >> 4) & 1) << (2 * c + 1));
                y[i].qs[32 * c + l] = (uint8_t)((l1 & 0xF) | ((l2 & 0xF) << 4));
            }
        }
    }
}

void qt__dequantize_q5_K(const void *src, float *y, int64_t n) {
    const block_q5_K *x = src;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = qt_fp16_to_f32(x[i].d), min = qt_fp16_to_f32(x[i].dmin);
        const uint8_t *ql = x[i].qs, *qh = x[i].qh;
        for (int c = 0; c < QK_K / 64; ++c, ql += 32) {
            uint8_t sc, m;
            get_scale_min_k4(2 * c, x[i].scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = min * (float)m;
            get_scale_min_k4(2 * c + 1, x[i].scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = min * (float)m;
            const uint8_t u1 = (uint8_t)(1u << (2 * c)), u2 = (uint8_t)(2u << (2 * c));
            for (int l = 0; l < 32; ++l) *y++ = d1 * (float)((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
            for (int l = 0; l < 32; ++l) *y++ = d2 * (float)((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Q6_K                                                                      */
/* ------------------------------------------------------------------------ */

/* quantize_row_q6_K_ref / _impl: the two differ only in the sub-block
 * weights (x^2, or the raw imatrix values). */
static void q6_K_block(const float *x, block_q6_K *y, const float *qw) {
    int8_t L[QK_K];
    float scales[QK_K / 16];
    float max_scale = 0.0f, max_abs_scale = 0.0f;
    for (int ib = 0; ib < QK_K / 16; ++ib) {
        scales[ib] = fit_symmetric(16, 32, x + 16 * ib, L + 16 * ib, qw ? qw + 16 * ib : NULL);
        const float a = fabsf(scales[ib]);
        if (a > max_abs_scale) { max_abs_scale = a; max_scale = scales[ib]; }
    }
    if (max_abs_scale < K_GROUP_EPS) {
        memset(y, 0, sizeof *y);
        return;
    }
    const float iscale = -128.0f / max_scale;
    y->d = qt_f32_to_fp16(1.0f / iscale);
    for (int ib = 0; ib < QK_K / 16; ++ib)
        y->scales[ib] = (int8_t)qt__min_int(127, qt__nearest_int(iscale * scales[ib]));
    const float d_all = qt_fp16_to_f32(y->d);
    for (int j = 0; j < QK_K / 16; ++j) {
        const float d = d_all * (float)y->scales[j];
        if (d == 0.0f) continue;
        for (int ii = 0; ii < 16; ++ii)
            L[16 * j + ii] = (int8_t)(qt__clamp_int(qt__nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
    }
    /* per half h: ql[64h + l] = L[l] | L[l+64] << 4, ql[64h + 32 + l] = L[l+32] | L[l+96] << 4,
     * qh[32h + l] = top 2 bits of L[l], L[l+32], L[l+64], L[l+96] (indices relative to 128h) */
    for (int h = 0; h < 2; ++h) {
        const int8_t *Lh = L + 128 * h;
        uint8_t *ql = y->ql + 64 * h, *qh = y->qh + 32 * h;
        for (int l = 0; l < 32; ++l) {
            ql[l] = (uint8_t)((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
            ql[l + 32] = (uint8_t)((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
            qh[l] = (uint8_t)((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) |
                              ((Lh[l + 96] >> 4) << 6));
        }
    }
}

void qt__quantize_q6_K(const float *src, void *dst, int64_t n, const float *imatrix) {
    block_q6_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; ++i)
        q6_K_block(src + i * QK_K, &y[i], imatrix ? imatrix + i * QK_K : NULL);
}

void qt__dequantize_q6_K(const void *src, float *y, int64_t n) {
    const block_q6_K *x = src;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = qt_fp16_to_f32(x[i].d);
        for (int h = 0; h < 2; ++h, y += 128) {
            const uint8_t *ql = x[i].ql + 64 * h, *qh = x[i].qh + 32 * h;
            const int8_t *sc = x[i].scales + 8 * h;
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * (float)sc[is] * (float)q1;
                y[l + 32] = d * (float)sc[is + 2] * (float)q2;
                y[l + 64] = d * (float)sc[is + 4] * (float)q3;
                y[l + 96] = d * (float)sc[is + 6] * (float)q4;
            }
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Q8_K (activations)                                                        */
/* ------------------------------------------------------------------------ */

/* quantize_row_q8_K_ref: scale from the signed value of largest magnitude so
 * it maps to -127 exactly; bsums[k] = sum of quants 16k..16k+15 (used by the
 * K-quant dot products to apply the mins). d is kept in fp32. */
void qt__quantize_q8_K(const float *src, void *dst, int64_t n, const float *imatrix) {
    (void)imatrix;
    block_q8_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float *x = src + i * QK_K;
        float max = 0.0f, amax = 0.0f;
        for (int j = 0; j < QK_K; ++j) {
            const float ax = fabsf(x[j]);
            if (ax > amax) { amax = ax; max = x[j]; }
        }
        if (amax == 0.0f) {
            /* ggml leaves bsums untouched here; zero is their true value. */
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < QK_K; ++j) y[i].qs[j] = (int8_t)qt__min_int(127, qt__nearest_int(iscale * x[j]));
        for (int k = 0; k < QK_K / 16; ++k) {
            int sum = 0;
            for (int l = 0; l < 16; ++l) sum += y[i].qs[16 * k + l];
            y[i].bsums[k] = (int16_t)sum;
        }
        y[i].d = 1.0f / iscale;
    }
}

void qt__dequantize_q8_K(const void *src, float *y, int64_t n) {
    const block_q8_K *x = src;
    for (int64_t i = 0; i < n / QK_K; ++i)
        for (int j = 0; j < QK_K; ++j) *y++ = x[i].d * (float)x[i].qs[j];
}
