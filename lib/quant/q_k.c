/* lib/quant/q_k.c — ggml's K-quants: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K.
 *
 * Reference quantizers and dequantizers that reproduce llama.cpp's bytes and
 * floats exactly (docs/formats.md §3.2-3.4; ggml src/ggml-quants.c, functions
 * quantize_row_q*_K_ref, quantize_row_q*_K_impl, dequantize_row_q*_K).
 *
 * What bit-exactness rests on (docs/formats.md §3.3):
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
#include "quant_search.h"
#include "quant_util.h"
#include "quanta/num.h"

/* Affine-search schedules (docs/formats.md §3.4): the _ref paths use ggml's
 * make_qkx2_quants settings per type, the _impl paths make_qkx3's. */
static const qt__affine_search Q2_K_REF = {.rmin = -0.5f, .rdelta = 0.1f, .nstep = 15, .use_mad = true};
static const qt__affine_search Q4_K_REF = {.rmin = -1.0f, .rdelta = 0.1f, .nstep = 20};
static const qt__affine_search Q5_K_REF = {.rmin = -0.5f, .rdelta = 0.1f, .nstep = 15};
static const qt__affine_search K_IMATRIX = {.rmin = -0.9f, .rdelta = 0.05f, .nstep = 36};

/* ------------------------------------------------------------------------ */
/* Shared weights, final passes and packing                                  */
/* ------------------------------------------------------------------------ */

/* Super-blocks searched together: the sub-block searches of KB super-blocks
 * go to the fit batch at once (32 to 64 groups: whole vectors of 8 or 16
 * lanes for the SIMD forms, fit_lanes.h). Blocks stay independent. */
#define KB 4

static int batch_len(int64_t i, int64_t nb) { return nb - i < KB ? (int)(nb - i) : KB; }

/* Importance weights of m super-blocks (quantize_row_q*_K_impl): per
 * super-block sigma2 = f * sum(x^2) / 256, per sub-block of sb elements the
 * weights w = qw * sqrt(sigma2 + x^2) and their sum sw (element order). */
static void batch_weights(const float *x, const float *qw, int m, float f, int sb, float *w, float *sw) {
    for (int b = 0; b < m; ++b) {
        const float sigma2 = f * qt__sum_squares(x + b * QK_K, QK_K) / (float)QK_K;
        for (int j = 0; j < QK_K / sb; ++j) {
            const int o = b * QK_K + j * sb;
            qt__importance_weights(x + o, qw + o, sigma2, sb, w + o);
            float sum = 0.0f;
            for (int i = 0; i < sb; ++i) sum += w[o + i];
            sw[b * (QK_K / sb) + j] = sum;
        }
    }
}

/* Final passes: re-derive a sub-block's levels from its stored (fp16-based)
 * scale d, affine l = clamp(nearest_int((x + dm)/d), 0, nmax) or symmetric
 * l = clamp(nearest_int(x/d), -nmax, nmax-1) + nmax. A sub-block whose scale
 * is 0 keeps the levels the search produced. */
static void requant_affine(const float *x, int n, float d, float dm, int nmax, uint8_t *L) {
    if (d == 0.0f) return;
    for (int i = 0; i < n; ++i) L[i] = (uint8_t)qt__clamp_int(qt__nearest_int((x[i] + dm) / d), 0, nmax);
}

static void requant_symmetric(const float *x, int n, float d, int nmax, int8_t *L) {
    if (d == 0.0f) return;
    for (int i = 0; i < n; ++i) L[i] = (int8_t)(qt__clamp_int(qt__nearest_int(x[i] / d), -nmax, nmax - 1) + nmax);
}

/* Q2_K / Q3_K 2-bit plane: for each half h, byte l holds elements
 * 128h + l, +32, +64, +96 at bit pairs 0, 2, 4, 6. */
static void pack_2bit(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < QK_K; j += 128)
        for (int l = 0; l < 32; ++l)
            qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

static void unpack_2bit(const uint8_t *qs, uint8_t *L) {
    for (int j = 0; j < QK_K; j += 128)
        for (int k = 0; k < 4; ++k)
            for (int l = 0; l < 32; ++l) L[j + 32 * k + l] = (uint8_t)((qs[j / 4 + l] >> (2 * k)) & 3);
}

/* Q4_K / Q5_K: 8 six-bit scales and 8 six-bit mins in 12 bytes
 * (docs/formats.md §3.4 "Scale packing"; inverse of qt__get_scale_min_k4). */
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

/* Final pass shared by Q4_K and Q5_K: levels from the stored fp16 d/dmin and
 * 6-bit scales. */
static void requant_affine_k4(const float *x, qt_half d16, qt_half dmin16, const uint8_t *scales,
                              int nmax, uint8_t *L) {
    const float d_all = qt_fp16_to_f32(d16), dmin_all = qt_fp16_to_f32(dmin16);
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t sc, m;
        qt__get_scale_min_k4(j, scales, &sc, &m);
        requant_affine(x + 32 * j, 32, d_all * (float)sc, dmin_all * (float)m, nmax, L + 32 * j);
    }
}

/* ------------------------------------------------------------------------ */
/* Q2_K                                                                      */
/* ------------------------------------------------------------------------ */

static void q2_K_finish(const float *x, block_q2_K *y, uint8_t *L) {
    const float d_all = qt_fp16_to_f32(y->d), dmin_all = qt_fp16_to_f32(y->dmin);
    for (int j = 0; j < QK_K / 16; ++j)
        requant_affine(x + 16 * j, 16, d_all * (float)(y->scales[j] & 0xF), dmin_all * (float)(y->scales[j] >> 4),
                       3, L + 16 * j);
    pack_2bit(L, y->qs);
}

/* Reference codes (quantize_row_q2_K_ref): 4-bit scale/min codes relative to
 * the block maxima of the 16 sub-block fits. */
static void q2_K_codes_ref(const float *scales, const float *mins, block_q2_K *y) {
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < QK_K / 16; ++j) {
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
}

/* Importance-weighted codes (quantize_row_q2_K_impl): the 16 scales and 16
 * mins are themselves least-squares quantized to 4 bits (qt__fit_scales) with
 * the sub-block weight sums. */
static void q2_K_codes_imatrix(const float *scales, const float *mins, const float *sw, block_q2_K *y) {
    uint8_t Ls[QK_K / 16], Lm[QK_K / 16];
    const float dm = qt__fit_scales(QK_K / 16, 15, scales, sw, Ls);
    const float mm = qt__fit_scales(QK_K / 16, 15, mins, sw, Lm);
    y->d = qt_f32_to_fp16(dm);
    y->dmin = qt_f32_to_fp16(mm);
    for (int j = 0; j < QK_K / 16; ++j) y->scales[j] = (uint8_t)(Ls[j] | (Lm[j] << 4));
}

/* Per 16-element sub-block an affine fit: without importance weights with
 * weights |x| and mean absolute error (the _ref path), with them weights
 * imatrix * sqrt(sigma^2 + x^2) and squared error over a wider search. */
void qt__quantize_q2_K_fit(const float *src, void *dst, int64_t n, const float *imatrix, const qt__fit_batch *fit) {
    block_q2_K *y = dst;
    uint8_t L[KB * QK_K];
    float w[KB * QK_K], scales[KB * QK_K / 16], mins[KB * QK_K / 16], sw[KB * QK_K / 16];
    const int64_t nb = n / QK_K;
    for (int64_t i = 0; i < nb; i += KB) {
        const int m = batch_len(i, nb);
        const float *x = src + i * QK_K;
        if (imatrix) batch_weights(x, imatrix + i * QK_K, m, 1.0f, 16, w, sw);
        else for (int e = 0; e < m * QK_K; ++e) w[e] = fabsf(x[e]);
        fit->affine(m * QK_K / 16, 16, 3, x, w, imatrix ? &K_IMATRIX : &Q2_K_REF, L, scales, mins);
        for (int b = 0; b < m; ++b) {
            const int o = b * QK_K / 16;
            if (imatrix) q2_K_codes_imatrix(scales + o, mins + o, sw + o, &y[i + b]);
            else q2_K_codes_ref(scales + o, mins + o, &y[i + b]);
            q2_K_finish(x + b * QK_K, &y[i + b], L + b * QK_K);
        }
    }
}

void qt__quantize_q2_K(const float *src, void *dst, int64_t n, const float *imatrix) {
    qt__quantize_q2_K_fit(src, dst, n, imatrix, &qt__fit_batch_ref);
}

void qt__dequantize_q2_K(const void *src, float *y, int64_t n) {
    const block_q2_K *x = src;
    uint8_t L[QK_K];
    for (int64_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        const float d = qt_fp16_to_f32(x[i].d), min = qt_fp16_to_f32(x[i].dmin);
        unpack_2bit(x[i].qs, L);
        for (int j = 0; j < QK_K / 16; ++j) {
            const float dl = d * (float)(x[i].scales[j] & 0xF), ml = min * (float)(x[i].scales[j] >> 4);
            for (int l = 0; l < 16; ++l) y[16 * j + l] = dl * (float)L[16 * j + l] - ml;
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
    for (int j = 0; j < QK_K / 16; ++j)
        requant_symmetric(x + 16 * j, 16, d_all * (float)q3_K_scale(y->scales, j), 4, L + 16 * j);
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

/* Reference codes (quantize_row_q3_K_ref): the 16 scales as 6-bit signed
 * codes relative to the one of largest magnitude. */
static void q3_K_codes_ref(const float *scales, block_q3_K *y) {
    float amax;
    const float max_scale = qt__signed_absmax(scales, QK_K / 16, &amax);
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
}

/* Importance-weighted codes (quantize_row_q3_K_impl): the 16 scales fitted as
 * a 6-bit signed vector (qt__fit_symmetric, nmax 32) with the sub-block
 * weight sums. */
static void q3_K_codes_imatrix(const float *scales, const float *sw, block_q3_K *y) {
    int8_t Ls[QK_K / 16];
    const float d_block = qt__fit_symmetric(QK_K / 16, 32, scales, sw, Ls);
    int ls[QK_K / 16];
    for (int j = 0; j < QK_K / 16; ++j) ls[j] = Ls[j];
    q3_K_pack_scales(ls, y->scales);
    y->d = qt_f32_to_fp16(d_block);
}

/* Per 16-element sub-block a symmetric fit: by coordinate descent with
 * weights x^2 (the _ref path), or with weights imatrix * sqrt(2*sigma^2 + x^2). */
void qt__quantize_q3_K_fit(const float *src, void *dst, int64_t n, const float *imatrix, const qt__fit_batch *fit) {
    block_q3_K *y = dst;
    int8_t L[KB * QK_K];
    float w[KB * QK_K], scales[KB * QK_K / 16], sw[KB * QK_K / 16];
    const int64_t nb = n / QK_K;
    for (int64_t i = 0; i < nb; i += KB) {
        const int m = batch_len(i, nb);
        const float *x = src + i * QK_K;
        if (imatrix) {
            batch_weights(x, imatrix + i * QK_K, m, 2.0f, 16, w, sw);
            fit->symmetric(m * QK_K / 16, 16, 4, x, w, L, scales);
        } else {
            fit->symmetric_descent(m * QK_K / 16, 16, 4, x, L, scales);
        }
        for (int b = 0; b < m; ++b) {
            const int o = b * QK_K / 16;
            if (imatrix) q3_K_codes_imatrix(scales + o, sw + o, &y[i + b]);
            else q3_K_codes_ref(scales + o, &y[i + b]);
            q3_K_finish(x + b * QK_K, &y[i + b], L + b * QK_K);
        }
    }
}

void qt__quantize_q3_K(const float *src, void *dst, int64_t n, const float *imatrix) {
    qt__quantize_q3_K_fit(src, dst, n, imatrix, &qt__fit_batch_ref);
}

void qt__dequantize_q3_K(const void *src, float *y, int64_t n) {
    const block_q3_K *x = src;
    uint8_t L[QK_K];
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        const float d_all = qt_fp16_to_f32(x[i].d);
        unpack_2bit(x[i].qs, L);
        /* element 32k + m's high bit is bit k of hmask[m]; clear means level - 4 */
        for (int k = 0; k < QK_K / 32; ++k)
            for (int m = 0; m < 32; ++m)
                q[32 * k + m] = (int8_t)(L[32 * k + m] - ((x[i].hmask[m] >> k) & 1 ? 0 : 4));
        for (int j = 0; j < QK_K / 16; ++j) {
            const float dl = d_all * (float)q3_K_scale(x[i].scales, j);
            for (int l = 0; l < 16; ++l) y[16 * j + l] = dl * (float)q[16 * j + l];
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Q4_K / Q5_K                                                               */
/* ------------------------------------------------------------------------ */

/* The codes of one Q4_K / Q5_K super-block: 8 six-bit scales and mins in 12
 * bytes, and the two fp16 super-scales. */
typedef struct {
    uint8_t scales[K_SCALE_SIZE];
    qt_half d, dmin;
} k4_codes;

/* Reference codes (quantize_row_q{4,5}_K_ref): 6-bit scale/min codes relative
 * to the block maxima. */
static void k4_codes_ref(const float *scales, const float *mins, k4_codes *c) {
    uint8_t ls[QK_K / 32], lm[QK_K / 32];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < QK_K / 32; ++j) {
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
    pack_scale_min_k4(ls, lm, c->scales);
    c->d = qt_f32_to_fp16(max_scale / 63.0f);
    c->dmin = qt_f32_to_fp16(max_min / 63.0f);
}

/* Importance-weighted codes (quantize_row_q{4,5}_K_impl): least-squares 6-bit
 * codes for scales and mins with the sub-block weight sums. */
static void k4_codes_imatrix(const float *scales, const float *mins, const float *sw, int nmax, k4_codes *c) {
    /* ggml's Q5_K path clamps the codes to 63, its Q4_K path does not; the
     * codes are <= 63 anyway unless a negative scale wrapped a uint8_t. */
    const int clamp63 = nmax == 31;
    uint8_t ls[QK_K / 32], lm[QK_K / 32];
    const float d_block = qt__fit_scales(QK_K / 32, 63, scales, sw, ls);
    const float m_block = qt__fit_scales(QK_K / 32, 63, mins, sw, lm);
    for (int j = 0; clamp63 && j < QK_K / 32; ++j) {
        if (ls[j] > 63) ls[j] = 63;
        if (lm[j] > 63) lm[j] = 63;
    }
    pack_scale_min_k4(ls, lm, c->scales);
    c->d = qt_f32_to_fp16(d_block);
    c->dmin = qt_f32_to_fp16(m_block);
}

/* Search shared by Q4_K and Q5_K over m super-blocks: per 32-element
 * sub-block an affine fit with squared error, with weights sqrt(mean x^2) +
 * |x| and the type's schedule `ref` (the _ref path), or with weights
 * imatrix * sqrt(2*sigma^2 + x^2) and the wider imatrix schedule. */
static void k4_search(const float *x, const float *qw, int m, int nmax, const qt__affine_search *ref,
                      const qt__fit_batch *fit, uint8_t *L, k4_codes *c) {
    float w[KB * QK_K], mins[KB * QK_K / 32], scales[KB * QK_K / 32], sw[KB * QK_K / 32];
    if (qw) {
        batch_weights(x, qw, m, 2.0f, 32, w, sw);
    } else {
        for (int j = 0; j < m * QK_K / 32; ++j) {
            const float av_x = sqrtf(qt__sum_squares(x + 32 * j, 32) / 32.0f);
            for (int l = 0; l < 32; ++l) w[32 * j + l] = av_x + fabsf(x[32 * j + l]);
        }
    }
    fit->affine(m * QK_K / 32, 32, nmax, x, w, qw ? &K_IMATRIX : ref, L, scales, mins);
    for (int b = 0; b < m; ++b) {
        const int o = b * QK_K / 32;
        if (qw) k4_codes_imatrix(scales + o, mins + o, sw + o, nmax, &c[b]);
        else k4_codes_ref(scales + o, mins + o, &c[b]);
    }
}

void qt__quantize_q4_K_fit(const float *src, void *dst, int64_t n, const float *imatrix, const qt__fit_batch *fit) {
    block_q4_K *y = dst;
    uint8_t L[KB * QK_K];
    k4_codes c[KB];
    const int64_t nb = n / QK_K;
    for (int64_t i0 = 0; i0 < nb; i0 += KB) {
        const int m = batch_len(i0, nb);
        k4_search(src + i0 * QK_K, imatrix ? imatrix + i0 * QK_K : NULL, m, 15, &Q4_K_REF, fit, L, c);
        for (int b = 0; b < m; ++b) {
            block_q4_K *yb = &y[i0 + b];
            uint8_t *Lb = L + b * QK_K;
            memcpy(yb->scales, c[b].scales, sizeof yb->scales);
            yb->d = c[b].d;
            yb->dmin = c[b].dmin;
            requant_affine_k4(src + (i0 + b) * QK_K, yb->d, yb->dmin, yb->scales, 15, Lb);
            /* chunk k of 64: byte 32k + l = L[64k + l] | L[64k + 32 + l] << 4 */
            for (int k = 0; k < QK_K / 64; ++k)
                for (int l = 0; l < 32; ++l)
                    yb->qs[32 * k + l] = (uint8_t)(Lb[64 * k + l] | (Lb[64 * k + 32 + l] << 4));
        }
    }
}

void qt__quantize_q4_K(const float *src, void *dst, int64_t n, const float *imatrix) {
    qt__quantize_q4_K_fit(src, dst, n, imatrix, &qt__fit_batch_ref);
}

void qt__dequantize_q4_K(const void *src, float *y, int64_t n) {
    const block_q4_K *x = src;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = qt_fp16_to_f32(x[i].d), min = qt_fp16_to_f32(x[i].dmin);
        const uint8_t *q = x[i].qs;
        for (int c = 0; c < QK_K / 64; ++c, q += 32) {
            uint8_t sc, m;
            qt__get_scale_min_k4(2 * c, x[i].scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = min * (float)m;
            qt__get_scale_min_k4(2 * c + 1, x[i].scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = min * (float)m;
            for (int l = 0; l < 32; ++l) *y++ = d1 * (float)(q[l] & 0xF) - m1;
            for (int l = 0; l < 32; ++l) *y++ = d2 * (float)(q[l] >> 4) - m2;
        }
    }
}

void qt__quantize_q5_K_fit(const float *src, void *dst, int64_t n, const float *imatrix, const qt__fit_batch *fit) {
    block_q5_K *y = dst;
    uint8_t L[KB * QK_K];
    k4_codes c[KB];
    const int64_t nb = n / QK_K;
    for (int64_t i0 = 0; i0 < nb; i0 += KB) {
        const int m = batch_len(i0, nb);
        k4_search(src + i0 * QK_K, imatrix ? imatrix + i0 * QK_K : NULL, m, 31, &Q5_K_REF, fit, L, c);
        for (int b = 0; b < m; ++b) {
            block_q5_K *yb = &y[i0 + b];
            const uint8_t *Lb = L + b * QK_K;
            memcpy(yb->scales, c[b].scales, sizeof yb->scales);
            yb->d = c[b].d;
            yb->dmin = c[b].dmin;
            requant_affine_k4(src + (i0 + b) * QK_K, yb->d, yb->dmin, yb->scales, 31, L + b * QK_K);
            /* low nibbles as Q4_K; bit 4 of L[64k + l] -> qh[l] bit 2k, of L[64k + 32 + l] -> bit 2k+1 */
            memset(yb->qh, 0, sizeof yb->qh);
            for (int k = 0; k < QK_K / 64; ++k) {
                for (int l = 0; l < 32; ++l) {
                    const int l1 = Lb[64 * k + l], l2 = Lb[64 * k + 32 + l];
                    yb->qh[l] |= (uint8_t)(((l1 >> 4) & 1) << (2 * k) | ((l2 >> 4) & 1) << (2 * k + 1));
                    yb->qs[32 * k + l] = (uint8_t)((l1 & 0xF) | ((l2 & 0xF) << 4));
                }
            }
        }
    }
}

void qt__quantize_q5_K(const float *src, void *dst, int64_t n, const float *imatrix) {
    qt__quantize_q5_K_fit(src, dst, n, imatrix, &qt__fit_batch_ref);
}

void qt__dequantize_q5_K(const void *src, float *y, int64_t n) {
    const block_q5_K *x = src;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = qt_fp16_to_f32(x[i].d), min = qt_fp16_to_f32(x[i].dmin);
        const uint8_t *ql = x[i].qs, *qh = x[i].qh;
        for (int c = 0; c < QK_K / 64; ++c, ql += 32) {
            uint8_t sc, m;
            qt__get_scale_min_k4(2 * c, x[i].scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = min * (float)m;
            qt__get_scale_min_k4(2 * c + 1, x[i].scales, &sc, &m);
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

/* quantize_row_q6_K_ref / _impl after the sub-block fits (the two differ
 * only in the sub-block weights: x^2, or the raw imatrix values): 8-bit
 * signed scale codes relative to the one of largest magnitude, then levels
 * from the stored codes. */
static void q6_K_finish(const float *x, block_q6_K *y, int8_t *L, const float *scales) {
    float amax;
    const float max_scale = qt__signed_absmax(scales, QK_K / 16, &amax);
    if (amax < QT_GROUP_MAX_EPS) {
        memset(y, 0, sizeof *y);
        return;
    }
    const float iscale = -128.0f / max_scale;
    y->d = qt_f32_to_fp16(1.0f / iscale);
    for (int ib = 0; ib < QK_K / 16; ++ib)
        y->scales[ib] = (int8_t)qt__min_int(127, qt__nearest_int(iscale * scales[ib]));
    const float d_all = qt_fp16_to_f32(y->d);
    for (int j = 0; j < QK_K / 16; ++j)
        requant_symmetric(x + 16 * j, 16, d_all * (float)y->scales[j], 32, L + 16 * j);
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

void qt__quantize_q6_K_fit(const float *src, void *dst, int64_t n, const float *imatrix, const qt__fit_batch *fit) {
    block_q6_K *y = dst;
    int8_t L[KB * QK_K];
    float scales[KB * QK_K / 16];
    const int64_t nb = n / QK_K;
    for (int64_t i = 0; i < nb; i += KB) {
        const int m = batch_len(i, nb);
        const float *x = src + i * QK_K;
        fit->symmetric(m * QK_K / 16, 16, 32, x, imatrix ? imatrix + i * QK_K : NULL, L, scales);
        for (int b = 0; b < m; ++b) q6_K_finish(x + b * QK_K, &y[i + b], L + b * QK_K, scales + b * QK_K / 16);
    }
}

void qt__quantize_q6_K(const float *src, void *dst, int64_t n, const float *imatrix) {
    qt__quantize_q6_K_fit(src, dst, n, imatrix, &qt__fit_batch_ref);
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
        /* qt__signed_absmax's scan, written out: in this form (max declared
         * first) GCC 12 keeps the rarely taken branch, which over 256 values
         * is 1.5x faster than the select chain the helper compiles to. */
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
