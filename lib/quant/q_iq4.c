/* lib/quant/q_iq4.c — ggml's non-linear 4-bit formats IQ4_NL (block 32) and
 * IQ4_XS (256 = 8 sub-blocks of 32 with 6-bit sub-scales), docs/formats.md §3.4.
 *
 * llama-quantize always runs the searching quantizer here (ggml
 * quantize_iq4_nl / quantize_iq4_xs → quantize_row_iq4_nl_impl with ntry 7),
 * with or without importance weights:
 *   weights  w_j = imatrix_j * sqrt(sigma2 + x_j^2), sigma2 = 2*sum(x^2)/S over
 *            the super-block (S = 32 or 256), or w_j = x_j^2 without imatrix;
 *   per 32:  start from d = max/127 (extreme value on the table end -127),
 *            nearest table entries, weighted LSQ scale; then 15 more inverse
 *            scales (itry - 127)/max, keeping the best (sum wqx)^2/sum wq^2;
 *   IQ4_XS:  quantize the 8 sub-scales to 6-bit signed multiples of
 *            D = -max_scale/32 and re-pick every index with the final scale;
 *   IQ4_NL:  store fp16(d) and re-pick every index with the fp32 d.
 */
#include <math.h>
#include <string.h>

#include "blocks.h"
#include "kernels.h"
#include "quant_util.h"
#include "quanta/num.h"

#define IQ4_SUB 32    /* elements per scale */
#define IQ4_NTRY 7    /* llama-quantize's search width */

/* ggml-common.h kvalues_iq4nl (data), shared with the IQ4 dot kernels. */
const int8_t qt__kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                      1,    13,   25,  38,  53,  69,  89,  113};

static const float kvalues_iq4nl_f[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

/* qt__kvalues_iq4nl[j-1] + qt__kvalues_iq4nl[j] for j = 1..15 (index 0 unused):
 * twice the midpoints, exact in float. */
static const float kmid2_iq4nl[16] = {0,   -231, -187, -148, -114, -84, -57, -32,
                                      -9,  14,   38,   63,   91,   122, 158, 202};

/* Index of the table entry nearest to v; an exact midpoint goes to the upper
 * entry, values beyond the ends to the ends. Comparing 2v with the doubled
 * midpoints is exact, so the choice never depends on rounding (same result
 * as ggml's best_index_int8). Branch-free binary search over 16 entries. */
static inline int iq4_best_index(float v) {
    const float v2 = v + v;
    int lo = (v2 >= kmid2_iq4nl[8]) << 3;
    lo += (v2 >= kmid2_iq4nl[lo + 4]) << 2;
    lo += (v2 >= kmid2_iq4nl[lo + 2]) << 1;
    lo += v2 >= kmid2_iq4nl[lo + 1];
    return lo;
}

/* One 32-element sub-block: weighted search for its scale (may be negative);
 * L receives the indices belonging to the search's starting scale (only used
 * when the caller does not re-pick). Returns 0 for an all-(near-)zero block. */
static float iq4_subblock_scale(const float *xb, const float *w, uint8_t *L) {
    float amax;
    const float max = qt__signed_absmax(xb, IQ4_SUB, &amax);
    if (amax < QT_GROUP_MAX_EPS) {
        memset(L, 0, IQ4_SUB);
        return 0;
    }
    float d = -max / (float)qt__kvalues_iq4nl[0];
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < IQ4_SUB; j++) {
        const int l = iq4_best_index(id * xb[j]);
        L[j] = (uint8_t)l;
        const float q = kvalues_iq4nl_f[l];
        sumqx += w[j] * q * xb[j];
        sumq2 += w[j] * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int itry = -IQ4_NTRY; itry <= IQ4_NTRY; itry++) {
        id = (float)(itry + qt__kvalues_iq4nl[0]) / max;
        sumqx = sumq2 = 0;
        for (int j = 0; j < IQ4_SUB; j++) {
            const float q = kvalues_iq4nl_f[iq4_best_index(id * xb[j])];
            sumqx += w[j] * q * xb[j];
            sumq2 += w[j] * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

/* Weights for sub-block ib of a super-block starting at x (S elements). */
static void iq4_weights(const float *xb, const float *qw, float sigma2, float *w) {
    if (qw) {
        qt__importance_weights(xb, qw, sigma2, IQ4_SUB, w);
    } else {
        for (int j = 0; j < IQ4_SUB; j++) w[j] = xb[j] * xb[j];
    }
}

static float iq4_sigma2(const float *x, int S) {
    return qt__sum_squares(x, S) * (2.f / (float)S);
}

/* Sub-block ib uses bytes 16ib..16ib+15: element j low nibble, j+16 high. */
static void iq4_pack(const uint8_t *L, uint8_t *qs, int S) {
    for (int ib = 0; ib < S / IQ4_SUB; ib++) qt__pack_nibbles32(L + IQ4_SUB * ib, qs + 16 * ib);
}

/* ---- IQ4_NL ---------------------------------------------------------------- */

void qt__quantize_iq4_nl(const float *x, void *dst, int64_t n, const float *imatrix) {
    block_iq4_nl *y = dst;
    float w[IQ4_SUB];
    uint8_t L[IQ4_SUB];
    for (int64_t ib = 0; ib < n / QK4_NL; ib++) {
        const float *xb = x + QK4_NL * ib;
        const float sigma2 = iq4_sigma2(xb, QK4_NL);
        iq4_weights(xb, imatrix ? imatrix + QK4_NL * ib : NULL, sigma2, w);
        const float d = iq4_subblock_scale(xb, w, L);
        y[ib].d = qt_f32_to_fp16(d);
        const float id = d != 0 ? 1 / d : 0;
        for (int j = 0; j < QK4_NL; j++) L[j] = (uint8_t)iq4_best_index(id * xb[j]);
        iq4_pack(L, y[ib].qs, QK4_NL);
    }
}

void qt__dequantize_iq4_nl(const void *src, float *y, int64_t n) {
    const block_iq4_nl *x = src;
    for (int64_t ib = 0; ib < n / QK4_NL; ib++) {
        const float d = qt_fp16_to_f32(x[ib].d);
        for (int j = 0; j < 16; j++) {
            y[QK4_NL * ib + j] = d * (float)qt__kvalues_iq4nl[x[ib].qs[j] & 0x0F];
            y[QK4_NL * ib + j + 16] = d * (float)qt__kvalues_iq4nl[x[ib].qs[j] >> 4];
        }
    }
}

/* ---- IQ4_XS ---------------------------------------------------------------- */

void qt__quantize_iq4_xs(const float *x, void *dst, int64_t n, const float *imatrix) {
    block_iq4_xs *y = dst;
    enum { NSUB = QK_K / IQ4_SUB };
    float w[IQ4_SUB];
    float scales[NSUB];
    uint8_t L[QK_K];
    for (int64_t ibl = 0; ibl < n / QK_K; ibl++) {
        const float *xbl = x + QK_K * ibl;
        const float *qwl = imatrix ? imatrix + QK_K * ibl : NULL;
        const float sigma2 = iq4_sigma2(xbl, QK_K);

        float max_scale = 0, amax_scale = 0;
        for (int ib = 0; ib < NSUB; ib++) {
            const float *xb = xbl + IQ4_SUB * ib;
            iq4_weights(xb, qwl ? qwl + IQ4_SUB * ib : NULL, sigma2, w);
            scales[ib] = iq4_subblock_scale(xb, w, L + IQ4_SUB * ib);
            if (fabsf(scales[ib]) > amax_scale) {
                amax_scale = fabsf(scales[ib]);
                max_scale = scales[ib];
            }
        }

        /* Sub-scales as 6-bit signed multiples (-32..31) of D; the extreme
         * one maps to -32. Indices are re-picked with the fp32 D*l. */
        const float d = -max_scale / 32;
        y[ibl].d = qt_f32_to_fp16(d);
        const float id = d != 0 ? 1 / d : 0.f;
        uint16_t scales_h = 0;
        memset(y[ibl].scales_l, 0, sizeof y[ibl].scales_l);
        for (int ib = 0; ib < NSUB; ib++) {
            int l = qt__clamp_int(qt__nearest_int(id * scales[ib]), -32, 31);
            const float dl = d * (float)l;
            const float idl = dl != 0 ? 1 / dl : 0.f;
            const float *xb = xbl + IQ4_SUB * ib;
            for (int j = 0; j < IQ4_SUB; j++) L[IQ4_SUB * ib + j] = (uint8_t)iq4_best_index(idl * xb[j]);
            l += 32;
            y[ibl].scales_l[ib / 2] |= (uint8_t)((l & 0x0F) << (4 * (ib % 2)));
            scales_h |= (uint16_t)((l >> 4) << (2 * ib));
        }
        y[ibl].scales_h = scales_h;
        iq4_pack(L, y[ibl].qs, QK_K);
    }
}

void qt__dequantize_iq4_xs(const void *src, float *y, int64_t n) {
    const block_iq4_xs *x = src;
    for (int64_t ibl = 0; ibl < n / QK_K; ibl++) {
        const float d = qt_fp16_to_f32(x[ibl].d);
        const uint8_t *qs = x[ibl].qs;
        for (int ib = 0; ib < QK_K / IQ4_SUB; ib++) {
            const int ls = ((x[ibl].scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) |
                           (((x[ibl].scales_h >> (2 * ib)) & 3) << 4);
            const float dl = d * (float)(ls - 32);
            float *yb = y + QK_K * ibl + IQ4_SUB * ib;
            for (int j = 0; j < 16; j++) {
                yb[j] = dl * (float)qt__kvalues_iq4nl[qs[j] & 0x0F];
                yb[j + 16] = dl * (float)qt__kvalues_iq4nl[qs[j] >> 4];
            }
            qs += 16;
        }
    }
}
