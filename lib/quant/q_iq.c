/* lib/quant/q_iq.c — ggml's i-quants below 4 bits: IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_XXS, IQ3_S (lattice code books with signs) and IQ1_S, IQ1_M (ternary
 * code book with a shift). Layouts in blocks.h, code books in iq_grids.c.
 *
 * Quantizers reproduce ggml-quants.c (quantize_row_iq2_xxs_impl,
 * quantize_row_iq2_xs_impl, quantize_row_iq2_s_impl,
 * quantize_row_iq3_xxs_impl, quantize_row_iq3_s_impl,
 * quantize_row_iq1_s_impl, quantize_row_iq1_m_impl; llama.cpp 3f545bec)
 * byte for byte: same candidates, same float expressions in the same order
 * (the build uses -ffp-contract=off), same tie-breaking.
 *
 * IQ2/IQ3, per sub-block of 32 (16 for IQ2_XS/IQ2_S) elements:
 *   weights  w = imatrix * sqrt(sigma2 + x^2) (sigma2 a mean square of the
 *            super-block), or x^2 (IQ2_S: sigma2/4 + x^2) without imatrix;
 *   signs    fold x to |x|, remembering the signs per 8; types that store 7
 *            sign bits flip the least important element (smallest w*x^2)
 *            of a group with an odd number of negatives;
 *   search   for 13..31 inverse scales: round every 4/8 magnitudes to lattice
 *            levels; a level code that is not a code-book point is replaced
 *            by its best neighbour (weighted by sqrt(w)); keep the scale with
 *            the best (sum w*x*q)^2 / sum w*q^2; then re-pick the points with
 *            that scale and refit it;
 *   store    sub-block scales as 4-bit odd multiples of max_scale/31 (times a
 *            per-type fudge factor in the stored fp16 d).
 * IQ1_S/IQ1_M, per 32/16 elements: the best split of the sorted values into
 * levels {-1, 0, 1} + shift (+-IQ1S_DELTA) by exhaustive search of the two
 * boundaries, then the nearest code-book points for that assignment.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "blocks.h"
#include "iq_grids.h"
#include "kernels.h"
#include "q_iq_nb.h"
#include "quant_search.h"
#include "quant_util.h"
#include "quanta/num.h"

/* ggml's zero thresholds (GROUP_MAX_EPS_*): a sub-block whose largest value
 * is below counts as all zero. */
#define EPS_IQ2 1e-15f
#define EPS_IQ3_XXS 1e-8f
#define EPS_IQ2_S 1e-8f
#define EPS_IQ1_M 1e-7f
#define EPS_IQ1_S 1e-12f

/* ---- shared pieces ------------------------------------------------------------ */

static float superblock_sigma2(const float *x, float factor) {
    return factor * qt__sum_squares(x, QK_K) / (float)QK_K;
}

/* Importance weights of n elements: imatrix * sqrt(sigma2 + x^2), or, without
 * imatrix, bias + x^2 (ggml: x^2 for IQ3/IQ1_M, sigma2/4 + x^2 for IQ2_S). */
static void subblock_weights(const float *xb, const float *qw, float sigma2, float bias, int n, float *w) {
    if (qw) {
        qt__importance_weights(xb, qw, sigma2, n, w);
    } else {
        for (int i = 0; i < n; i++) w[i] = bias + xb[i] * xb[i];
    }
}

/* |x| of 8 values into xval and their sign bits (returned). With even_parity
 * (types storing 7 sign bits) an odd number of negatives is made even by
 * flipping the element of smallest w*x^2 (first one on ties): its xval turns
 * negative and its bit toggles. */
static uint8_t fold_signs8(const float *xb, const float *w, float *xval, bool even_parity) {
    int nflip = 0;
    uint8_t s = 0;
    for (int i = 0; i < 8; i++) {
        if (xb[i] >= 0) {
            xval[i] = xb[i];
        } else {
            xval[i] = -xb[i];
            nflip++;
            s |= (uint8_t)(1u << i);
        }
    }
    if (even_parity && (nflip & 1)) {
        int imin = 0;
        float min = w[0] * xb[0] * xb[0];
        for (int i = 1; i < 8; i++) {
            const float ax = w[i] * xb[i] * xb[i];
            if (ax < min) {
                min = ax;
                imin = i;
            }
        }
        xval[imin] = -xval[imin];
        s ^= (uint8_t)(1u << imin);
    }
    return even_parity ? (uint8_t)(s & 127) : s;
}

/* ggml iq2/iq3_find_best_neighbour, the scalar reference (q_iq_nb.h): a few
 * loads and adds per neighbour. DIMS is a constant at each call site (4 or
 * 8), so the coordinate loops unroll; this is the quantizers' hot loop. */
static inline __attribute__((always_inline)) int best_neighbour_dims(const qt__iq_lattice *lat, uint32_t u,
                                                                     const float *xval, const float *w, float scale,
                                                                     int kmaxq, int8_t *L, const int DIMS) {
    const uint16_t *nb = qt__iq_neighbours(lat, u);
    const int bits = DIMS == 8 ? 2 : 3;
    const uint32_t mask = (1u << bits) - 1;
    float term[8][8]; /* [coordinate][level] */
    qt__iq_nb_terms(term, xval, w, scale, kmaxq, DIMS);
    float best_d2 = FLT_MAX;
    int best = nb[1];
    for (int j = 1; j <= nb[0]; j++) {
        const uint32_t code = lat->codes[nb[j]];
        float d2 = 0;
        for (int i = 0; i < DIMS; i++) d2 += term[i][(code >> (bits * i)) & mask];
        if (d2 < best_d2) {
            best_d2 = d2;
            best = nb[j];
        }
    }
    return qt__iq_nb_levels(lat, best, L, DIMS);
}

static int best_neighbour(const qt__iq_lattice *lat, uint32_t u, const float *xval, const float *w, float scale,
                          int kmaxq, int8_t *L) {
    return lat->dims == 8 ? best_neighbour_dims(lat, u, xval, w, scale, kmaxq, L, 8)
                          : best_neighbour_dims(lat, u, xval, w, scale, kmaxq, L, 4);
}

/* Levels of dims values at inverse scale id, clamped to 0..kmaxq-1, into L;
 * returns their packed code. */
static uint32_t round_levels(const float *xval, float id, int dims, int bits, int kmaxq, int8_t *L) {
    uint32_t u = 0;
    for (int i = 0; i < dims; i++) {
        const int l = qt__clamp_int(qt__nearest_int(0.5f * (id * xval[i] - 1)), 0, kmaxq - 1);
        L[i] = (int8_t)l;
        u |= (uint32_t)l << (bits * i);
    }
    return u;
}

static uint32_t pack_levels(const int8_t *L, int dims, int bits) {
    uint32_t u = 0;
    for (int i = 0; i < dims; i++) u |= (uint32_t)L[i] << (bits * i);
    return u;
}

/* sum w*x*q and sum w*q^2 for q = 2*level + 1. */
static void level_sums(const int8_t *L, const float *xval, const float *w, int n, float *sumqx, float *sumq2) {
    float sx = 0, s2 = 0;
    for (int i = 0; i < n; i++) {
        const float q = (float)(2 * L[i] + 1);
        sx += w[i] * xval[i] * q;
        s2 += w[i] * q * q;
    }
    *sumqx = sx;
    *sumq2 = s2;
}

/* 4-bit code of a sub-block scale: nearest odd multiple of d (id = 1/d). */
static int scale_code(float scale, float id, int max_code) {
    return qt__clamp_int(qt__nearest_int(0.5f * (id * scale - 1)), 0, max_code);
}

/* ---- IQ2 / IQ3: lattice search per sub-block ---------------------------------- */

typedef enum {
    REFINE_ALL,          /* re-pick every group with the best scale (IQ2_XXS) */
    REFINE_OFF_GRID,     /* only groups that were off the lattice, if any (IQ2_XS, IQ2_S, IQ3_XXS) */
    REFINE_ALL_IF_OFF,   /* every group, if any was off the lattice (IQ3_S) */
} refine_rule;

typedef struct lattice_search lattice_search;

/* Stores one super-block's search results into its block (zeroed before). */
typedef void (*lattice_pack_fn)(void *block, float max_scale, const float *scales, const uint16_t *idx,
                                const uint8_t *signs);

struct lattice_search {
    qt__iq_lattice_id lattice;
    int n;              /* elements per sub-block (one scale) */
    int kmaxq;          /* levels 0..kmaxq-1 */
    int n_try;          /* inverse scales (2*kmaxq - 1 + is*step)/base, is = -n_try..n_try */
    float step;
    float eps;          /* zero threshold on max; 0: only an exact 0 counts as zero */
    bool even_parity;   /* 7 stored sign bits per 8 */
    bool qp_start;      /* base = make_qp_quants scale * kmaxq (IQ2_XXS); else base = max */
    refine_rule refine;
    float sigma_factor; /* sigma2 = sigma_factor * mean x^2 of the super-block */
    float bias_sigma;   /* weights without imatrix: bias_sigma * sigma2 + x^2 */
    bool needs_imatrix;
    size_t block_bytes;
    lattice_pack_fn pack;
};

/* One sub-block of p->n elements (search: the neighbour search, q_iq_nb.h): grid indices (n/dims) into idx, sign bytes
 * (n/8) into signs, the scale returned. An all-zero sub-block returns 0 with
 * idx and signs unwritten (the block keeps zeros there, as ggml's does); a
 * scale can also come out 0 with points written (every weight on the
 * non-zero values 0), and those points are stored, as ggml does. */
static float lattice_subblock(const lattice_search *p, const qt__iq_lattice *lat, qt__iq_neighbour_fn search,
                              const float *xb, const float *w, uint16_t *idx, uint8_t *signs) {
    const int n = p->n, dims = lat->dims, bits = lat->bits, ng = n / dims, kmaxq = p->kmaxq;
    float waux[32], xval[32];
    int8_t L[32], Laux[32];
    bool on[8], on_aux[8];
    uint8_t s[4];
    for (int i = 0; i < n; i++) waux[i] = sqrtf(w[i]);
    for (int k = 0; k < n / 8; k++) s[k] = fold_signs8(xb + 8 * k, w + 8 * k, xval + 8 * k, p->even_parity);
    float max = xval[0];
    for (int i = 1; i < n; i++) max = max > xval[i] ? max : xval[i];
    if (p->eps > 0 ? max < p->eps : max == 0) return 0;

    memset(L, 0, (size_t)n);
    float scale, base;
    if (p->qp_start) {
        scale = qt__fit_scales(n, kmaxq + 1, xval, w, (uint8_t *)L);
        base = scale * (float)kmaxq;
        if (base <= 0) return 0;
    } else {
        scale = max / (float)(2 * kmaxq - 1);
        base = max;
    }
    for (int k = 0; k < ng; k++) on[k] = p->refine != REFINE_ALL_IF_OFF;
    float best = 0;
    for (int is = -p->n_try; is <= p->n_try; is++) {
        const float id = ((float)(2 * kmaxq - 1) + (float)is * p->step) / base;
        const float this_scale = 1 / id;
        for (int k = 0; k < ng; k++) {
            const uint32_t u = round_levels(xval + dims * k, id, dims, bits, kmaxq, Laux + dims * k);
            on_aux[k] = lat->map[u] >= 0;
            if (!on_aux[k]) search(lat, u, xval + dims * k, waux + dims * k, this_scale, kmaxq, Laux + dims * k);
        }
        float sumqx, sumq2;
        level_sums(Laux, xval, w, n, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            memcpy(L, Laux, (size_t)n);
            memcpy(on, on_aux, sizeof(bool) * (size_t)ng);
        }
    }
    int n_off = 0;
    for (int k = 0; k < ng; k++) n_off += !on[k];
    if (scale > 0 && (p->refine == REFINE_ALL || n_off > 0)) {
        const float id = 1 / scale;
        for (int k = 0; k < ng; k++) {
            if (p->refine == REFINE_OFF_GRID && on[k]) continue;
            const uint32_t u = round_levels(xval + dims * k, id, dims, bits, kmaxq, L + dims * k);
            if (lat->map[u] < 0) search(lat, u, xval + dims * k, waux + dims * k, scale, kmaxq, L + dims * k);
        }
        float sumqx, sumq2;
        level_sums(L, xval, w, n, &sumqx, &sumq2);
        if (sumq2 > 0) scale = sumqx / sumq2;
    }
    if (scale < 0) { /* cannot happen for non-negative weights; ggml flips the signs */
        scale = -scale;
        for (int k = 0; k < n / 8; k++) s[k] = (uint8_t)(~s[k] & (p->even_parity ? 127 : 255));
    }
    memcpy(signs, s, (size_t)(n / 8));
    for (int k = 0; k < ng; k++) {
        const int32_t g = lat->map[pack_levels(L + dims * k, dims, bits)];
        idx[k] = (uint16_t)(g >= 0 ? g : 0); /* always a point: L holds a point's levels */
    }
    return scale;
}

/* Runs the search over the sub-blocks of one super-block: scales, indices and
 * signs per sub-block, returns max_scale. */
static float lattice_superblock(const lattice_search *p, const qt__iq_lattice *lat, qt__iq_neighbour_fn nb,
                                const float *xbl, const float *qw, float sigma2, float bias, float *scales,
                                uint16_t *idx, uint8_t *signs) {
    float w[32];
    float max_scale = 0;
    const int nsub = QK_K / p->n, ng = p->n / lat->dims;
    for (int ib = 0; ib < nsub; ib++) {
        const float *xb = xbl + p->n * ib;
        subblock_weights(xb, qw ? qw + p->n * ib : NULL, sigma2, bias, p->n, w);
        scales[ib] = lattice_subblock(p, lat, nb, xb, w, idx + ng * ib, signs + (p->n / 8) * ib);
        max_scale = max_scale > scales[ib] ? max_scale : scales[ib];
    }
    return max_scale;
}

/* One row of n elements: the search per super-block, then p->pack. */
static void lattice_quantize(const lattice_search *p, const float *x, void *dst, int64_t n, const float *imatrix,
                             qt__iq_neighbour_fn nb) {
    uint8_t *y = dst;
    const size_t nbl = (size_t)(n / QK_K);
    const qt__iq_lattice *lat = qt__iq_lattice_get(p->lattice);
    if (!lat || (p->needs_imatrix && !imatrix)) { /* refused by qt_quantize_rows before we get here */
        memset(dst, 0, p->block_bytes * nbl);
        return;
    }
    float scales[QK_K / 16];
    uint16_t idx[QK_K / 4];
    uint8_t signs[QK_K / 8];
    for (size_t ibl = 0; ibl < nbl; ibl++) {
        const float *xbl = x + QK_K * ibl;
        const float sigma2 = superblock_sigma2(xbl, p->sigma_factor);
        memset(idx, 0, sizeof idx);
        memset(signs, 0, sizeof signs);
        const float max_scale = lattice_superblock(p, lat, nb, xbl, imatrix ? imatrix + QK_K * ibl : NULL, sigma2,
                                                   p->bias_sigma * sigma2, scales, idx, signs);
        uint8_t *block = y + p->block_bytes * ibl;
        memset(block, 0, p->block_bytes);
        p->pack(block, max_scale, scales, idx, signs);
    }
}

static void put_u32(uint8_t *dst, uint32_t v) { memcpy(dst, &v, sizeof v); }

/* ---- IQ2_XXS -------------------------------------------------------------------- */

/* ggml keeps nothing of a super-block whose scales are all 0. */
static void pack_iq2_xxs(void *block, float max_scale, const float *scales, const uint16_t *idx, const uint8_t *signs) {
    block_iq2_xxs *y = block;
    if (!max_scale) return;
    const float d = max_scale / 31;
    y->d = qt_f32_to_fp16(d);
    const float id = 1 / d;
    uint8_t *q = (uint8_t *)y->qs;
    for (int ib = 0; ib < QK_K / 32; ib++) {
        uint32_t grid = 0, sc = 0;
        for (int k = 0; k < 4; k++) {
            grid |= (uint32_t)idx[4 * ib + k] << (8 * k);
            sc |= (uint32_t)signs[4 * ib + k] << (7 * k);
        }
        sc |= (uint32_t)scale_code(scales[ib], id, 15) << 28;
        put_u32(q + 8 * ib, grid);
        put_u32(q + 8 * ib + 4, sc);
    }
}

static const lattice_search SEARCH_IQ2_XXS = {QT_IQ_LATTICE_2XXS, 32, 3, 6, 0.1f, EPS_IQ2, true, true, REFINE_ALL,
                                              1, 0, true, sizeof(block_iq2_xxs), pack_iq2_xxs};

void qt__quantize_iq2_xxs(const float *x, void *dst, int64_t n, const float *imatrix) {
    lattice_quantize(&SEARCH_IQ2_XXS, x, dst, n, imatrix, best_neighbour);
}

/* One group of n values of a value grid (vals) times db; sign bit j of s
 * negates element j. Negation flips the float's sign bit, exactly what
 * ggml's multiplication by -1 does; done on the bits it needs no branch. */
static inline void put_group(float *y, const int8_t *vals, uint32_t s, float db, const int n) {
    for (int j = 0; j < n; j++) {
        const float v = db * (float)vals[j];
        uint32_t bits;
        memcpy(&bits, &v, sizeof bits);
        bits ^= ((s >> j) & 1u) << 31;
        memcpy(&y[j], &bits, sizeof bits);
    }
}

void qt__dequantize_iq2_xxs(const void *src, float *y, int64_t n) {
    const block_iq2_xxs *x = src;
    const int8_t *grid = qt__iq_values(QT_IQ_LATTICE_2XXS);
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = qt_fp16_to_f32(x[i].d);
        const uint8_t *q = (const uint8_t *)x[i].qs;
        for (int ib = 0; ib < QK_K / 32; ib++, q += 8) {
            uint32_t sc;
            memcpy(&sc, q + 4, sizeof sc);
            const float db = d * (0.5f + (float)(sc >> 28)) * 0.25f;
            for (int l = 0; l < 4; l++, y += 8) put_group(y, grid + 8 * q[l], qt__iq_signs8((sc >> (7 * l)) & 127), db, 8);
        }
    }
}

/* ---- IQ2_XS ---------------------------------------------------------------------- */

static void pack_scales_16(const float *scales, float id, uint8_t *out) {
    for (int ib = 0; ib < QK_K / 16; ib += 2)
        out[ib / 2] = (uint8_t)(scale_code(scales[ib], id, 15) | (scale_code(scales[ib + 1], id, 15) << 4));
}

static void pack_iq2_xs(void *block, float max_scale, const float *scales, const uint16_t *idx, const uint8_t *signs) {
    block_iq2_xs *y = block;
    if (!max_scale) return;
    const float d = max_scale / 31;
    y->d = qt_f32_to_fp16(d);
    for (int g = 0; g < QK_K / 8; g++) y->qs[g] = (uint16_t)(idx[g] | (signs[g] << 9));
    pack_scales_16(scales, 1 / d, y->scales);
}

static const lattice_search SEARCH_IQ2_XS = {QT_IQ_LATTICE_2XS, 16, 3, 9, 0.1f, EPS_IQ2, true, false, REFINE_OFF_GRID,
                                             1, 0, true, sizeof(block_iq2_xs), pack_iq2_xs};

void qt__quantize_iq2_xs(const float *x, void *dst, int64_t n, const float *imatrix) {
    lattice_quantize(&SEARCH_IQ2_XS, x, dst, n, imatrix, best_neighbour);
}

/* IQ2_XS and IQ2_S rows (is_s): same scales, groups read by qt__iq2_16_group. */
static void dequantize_iq2_16(const uint8_t *x, float *y, int64_t n, int is_s) {
    const int8_t *grid = qt__iq_values(is_s ? QT_IQ_LATTICE_2S : QT_IQ_LATTICE_2XS);
    const size_t bb = is_s ? sizeof(block_iq2_s) : sizeof(block_iq2_xs);
    for (int64_t i = 0; i < n / QK_K; i++, x += bb) {
        qt_half dh;
        memcpy(&dh, x, sizeof dh); /* d leads both blocks */
        const float d = qt_fp16_to_f32(dh);
        const uint8_t *scales = is_s ? ((const block_iq2_s *)x)->scales : ((const block_iq2_xs *)x)->scales;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const float db[2] = {d * (0.5f + (float)(scales[ib] & 0xf)) * 0.25f,
                                 d * (0.5f + (float)(scales[ib] >> 4)) * 0.25f};
            for (int l = 0; l < 4; l++, y += 8) {
                uint32_t signs;
                const int index = qt__iq2_16_group(x, is_s, 4 * ib + l, &signs);
                put_group(y, grid + 8 * index, signs, db[l / 2], 8);
            }
        }
    }
}

void qt__dequantize_iq2_xs(const void *src, float *y, int64_t n) { dequantize_iq2_16(src, y, n, 0); }

/* ---- IQ2_S ----------------------------------------------------------------------- */

/* ggml keeps the points of a super-block whose scales are all 0. */
static void pack_iq2_s(void *block, float max_scale, const float *scales, const uint16_t *idx, const uint8_t *signs) {
    block_iq2_s *y = block;
    for (int g = 0; g < QK_K / 8; g++) {
        y->qs[g] = (uint8_t)(idx[g] & 255);
        y->qh[g / 4] |= (uint8_t)((idx[g] >> 8) << (2 * (g % 4)));
        y->qs[QK_K / 8 + g] = signs[g];
    }
    if (!max_scale) return;
    const float d = max_scale / 31;
    y->d = qt_f32_to_fp16(d * 0.9875f);
    pack_scales_16(scales, 1 / d, y->scales);
}

static const lattice_search SEARCH_IQ2_S = {QT_IQ_LATTICE_2S, 16, 3, 9, 0.1f, EPS_IQ2_S, false, false, REFINE_OFF_GRID,
                                            2, 0.25f, false, sizeof(block_iq2_s), pack_iq2_s};

void qt__quantize_iq2_s(const float *x, void *dst, int64_t n, const float *imatrix) {
    lattice_quantize(&SEARCH_IQ2_S, x, dst, n, imatrix, best_neighbour);
}

void qt__dequantize_iq2_s(const void *src, float *y, int64_t n) { dequantize_iq2_16(src, y, n, 1); }

/* ---- IQ3_XXS --------------------------------------------------------------------- */

static void pack_iq3_xxs(void *block, float max_scale, const float *scales, const uint16_t *idx, const uint8_t *signs) {
    block_iq3_xxs *y = block;
    if (!max_scale) return;
    const float d = max_scale / 31;
    y->d = qt_f32_to_fp16(d * 1.0125f);
    const float id = 1 / d;
    for (int g = 0; g < QK_K / 4; g++) y->qs[g] = (uint8_t)idx[g];
    for (int ib = 0; ib < QK_K / 32; ib++) {
        uint32_t sc = 0;
        for (int k = 0; k < 4; k++) sc |= (uint32_t)signs[4 * ib + k] << (7 * k);
        sc |= (uint32_t)scale_code(scales[ib], id, 15) << 28;
        put_u32(y->qs + QK_K / 4 + 4 * ib, sc);
    }
}

static const lattice_search SEARCH_IQ3_XXS = {QT_IQ_LATTICE_3XXS, 32, 8, 15, 0.2f, EPS_IQ3_XXS, true, false,
                                              REFINE_OFF_GRID, 2, 0, false, sizeof(block_iq3_xxs), pack_iq3_xxs};

void qt__quantize_iq3_xxs(const float *x, void *dst, int64_t n, const float *imatrix) {
    lattice_quantize(&SEARCH_IQ3_XXS, x, dst, n, imatrix, best_neighbour);
}

void qt__dequantize_iq3_xxs(const void *src, float *y, int64_t n) {
    const block_iq3_xxs *x = src;
    const int8_t *grid = qt__iq_values(QT_IQ_LATTICE_3XXS);
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = qt_fp16_to_f32(x[i].d);
        const uint8_t *qs = x[i].qs;
        for (int ib = 0; ib < QK_K / 32; ib++, qs += 8) {
            uint32_t sc;
            memcpy(&sc, x[i].qs + QK_K / 4 + 4 * ib, sizeof sc);
            const float db = d * (0.5f + (float)(sc >> 28)) * 0.5f;
            for (int l = 0; l < 4; l++, y += 8) {
                const uint32_t s = qt__iq_signs8((sc >> (7 * l)) & 127);
                put_group(y, grid + 4 * qs[2 * l], s, db, 4);
                put_group(y + 4, grid + 4 * qs[2 * l + 1], s >> 4, db, 4);
            }
        }
    }
}

/* ---- IQ3_S ----------------------------------------------------------------------- */

/* ggml keeps the points and signs of a super-block whose scales are all 0. */
static void pack_iq3_s(void *block, float max_scale, const float *scales, const uint16_t *idx, const uint8_t *signs) {
    block_iq3_s *y = block;
    for (int g = 0; g < QK_K / 4; g++) {
        y->qs[g] = (uint8_t)(idx[g] & 255);
        y->qh[g / 8] |= (uint8_t)((idx[g] >> 8) << (g % 8));
    }
    memcpy(y->signs, signs, QK_K / 8);
    if (!max_scale) return;
    const float d = max_scale / 31;
    y->d = qt_f32_to_fp16(d * 1.033f);
    const float id = 1 / d;
    for (int ib = 0; ib < QK_K / 32; ib += 2)
        y->scales[ib / 2] = (uint8_t)(scale_code(scales[ib], id, 15) | (scale_code(scales[ib + 1], id, 15) << 4));
}

static const lattice_search SEARCH_IQ3_S = {QT_IQ_LATTICE_3S, 32, 8, 9, 0.2f, 0.0f, false, false, REFINE_ALL_IF_OFF,
                                            2, 0, false, sizeof(block_iq3_s), pack_iq3_s};

void qt__quantize_iq3_s(const float *x, void *dst, int64_t n, const float *imatrix) {
    lattice_quantize(&SEARCH_IQ3_S, x, dst, n, imatrix, best_neighbour);
}

void qt__dequantize_iq3_s(const void *src, float *y, int64_t n) {
    const block_iq3_s *x = src;
    const int8_t *grid = qt__iq_values(QT_IQ_LATTICE_3S);
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = qt_fp16_to_f32(x[i].d);
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const uint8_t sc = x[i].scales[ib / 2];
            const float db = d * (float)(1 + 2 * (ib % 2 ? sc >> 4 : sc & 0xf));
            const uint8_t *qs = x[i].qs + 8 * ib;
            const uint8_t qh = x[i].qh[ib];
            for (int l = 0; l < 4; l++, y += 8) {
                const uint8_t s = x[i].signs[4 * ib + l];
                const int i1 = qs[2 * l] | (((qh >> (2 * l)) & 1) << 8);
                const int i2 = qs[2 * l + 1] | (((qh >> (2 * l + 1)) & 1) << 8);
                put_group(y, grid + 4 * i1, s, db, 4);
                put_group(y + 4, grid + 4 * i2, (uint32_t)s >> 4, db, 4);
            }
        }
    }
}

/* ---- IQ1_S / IQ1_M: ternary levels with a shift ------------------------------------ */

/* The two shifted level sets: x_p = {-1, 0, 1} + delta, x_m = {-1, 0, 1} - delta. */
static const float IQ1_XP[3] = {-1 + QT_IQ1S_DELTA, QT_IQ1S_DELTA, 1 + QT_IQ1S_DELTA};
static const float IQ1_XM[3] = {-1 - QT_IQ1S_DELTA, -QT_IQ1S_DELTA, 1 - QT_IQ1S_DELTA};

/* Element order of xb[0..n) by value, ascending; equal values keep their
 * index order (ggml qsorts (value, index) pairs by value only; glibc's qsort
 * is a stable merge sort for arrays this small). Insertion sort: n <= 32. */
static void sort_by_value(const float *xb, int n, int *order) {
    for (int j = 0; j < n; j++) {
        int k = j;
        while (k > 0 && xb[order[k - 1]] > xb[j]) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = j;
    }
}

/* ggml iq1_find_best_neighbour2: the neighbour of off-lattice code u whose
 * values xx[level]*scale are closest to xb, error weighted by w (first on
 * ties). If no candidate's error is finite, every point is tried (ggml's
 * fallback indexes xb with the point counter there, reading past the group;
 * this reads the group). Writes its levels to L, returns its index. */
static int iq1_best_neighbour(const qt__iq_lattice *lat, uint32_t u, const float *xb, const float *w, float scale,
                              const float *xx, int8_t *L) {
    const uint16_t *nb = qt__iq_neighbours(lat, u);
    float term[8][4]; /* [coordinate][level]: ggml's w*diff*diff, formed once (best_neighbour_dims) */
    for (int i = 0; i < 8; i++)
        for (int l = 0; l < 3; l++) {
            const float diff = scale * xx[l] - xb[i];
            term[i][l] = w[i] * diff * diff;
        }
    float best_d2 = FLT_MAX;
    int best = -1;
    for (int j = 1; j <= nb[0]; j++) {
        const uint32_t code = lat->codes[nb[j]];
        float d2 = 0;
        for (int i = 0; i < 8; i++) d2 += term[i][(code >> (2 * i)) & 3];
        if (d2 < best_d2) {
            best_d2 = d2;
            best = nb[j];
        }
    }
    for (int g = 0; best < 0 && g < lat->n_points; g++) {
        const int8_t *p = lat->pos + (size_t)g * 8;
        float d2 = 0;
        for (int i = 0; i < 8; i++) {
            const float diff = scale * xx[(p[i] - 1) / 2] - xb[i];
            d2 += w[i] * diff * diff;
        }
        if (d2 < best_d2) {
            best_d2 = d2;
            best = g;
        }
    }
    if (best < 0) best = 0;
    const int8_t *p = lat->pos + (size_t)best * 8;
    for (int i = 0; i < 8; i++) L[i] = (int8_t)((p[i] - 1) / 2);
    return best;
}

/* Grid indices (n/8) for levels L with shift sets xx[k] per group of 8; a
 * code not in the code book takes its best neighbour (L updated). Returns
 * true when every code was a point. */
static bool iq1_points(const qt__iq_lattice *lat, const float *xb, const float *w, float scale,
                       const float *const *xx, int n, int8_t *L, uint16_t *idx) {
    bool all_on = true;
    for (int k = 0; k < n / 8; k++) {
        const uint32_t u = pack_levels(L + 8 * k, 8, 2);
        int g = lat->map[u];
        if (g < 0) {
            all_on = false;
            g = iq1_best_neighbour(lat, u, xb + 8 * k, w + 8 * k, scale, xx[k], L + 8 * k);
        }
        idx[k] = (uint16_t)g;
    }
    return all_on;
}

/* Refit of the scale to the chosen points (used when some were neighbours). */
static float iq1_refit(const qt__iq_lattice *lat, const float *xb, const float *w, const float *const *xx, int n,
                       const uint16_t *idx, float scale) {
    float sumqx = 0, sumq2 = 0;
    for (int k = 0; k < n / 8; k++) {
        const int8_t *p = lat->pos + (size_t)idx[k] * 8;
        for (int j = 0; j < 8; j++) {
            const float q = xx[k][(p[j] - 1) / 2];
            sumqx += w[8 * k + j] * q * xb[8 * k + j];
            sumq2 += w[8 * k + j] * q * q;
        }
    }
    return sumqx > 0 && sumq2 > 0 ? sumqx / sumq2 : scale;
}

/* Levels 0/1/2 for the split of the sorted order at i1 <= i2. */
static void iq1_split_levels(const int *order, int n, int i1, int i2, int8_t *L) {
    for (int j = 0; j < n; j++) L[order[j]] = (int8_t)(j < i1 ? 0 : j < i2 ? 1 : 2);
}

#define IQ1S_N 32 /* elements per IQ1_S scale */
#define IQ1M_N 16 /* elements per IQ1_M scale */

/* One IQ1_S sub-block: 4 indices, the scale and the shift (+1: x_p, -1: x_m).
 * Returns false for a zero sub-block (nothing to store: scale 0, shift +1).
 * A stored sub-block may still have scale 0 (every weight on its non-zero
 * values 0); ggml stores its points then, and so do we. */
static bool iq1s_subblock(const qt__iq_lattice *lat, const float *xb, const float *w, uint16_t *idx, float *scale_out,
                          int *shift) {
    *shift = 1;
    *scale_out = 0;
    float max = fabsf(xb[0]);
    for (int i = 1; i < IQ1S_N; i++) max = max > fabsf(xb[i]) ? max : fabsf(xb[i]);
    if (max < EPS_IQ1_S) return false;
    int order[IQ1S_N];
    sort_by_value(xb, IQ1S_N, order);
    float sumx[IQ1S_N + 1], sumw[IQ1S_N + 1];
    sumx[0] = sumw[0] = 0;
    for (int j = 0; j < IQ1S_N; j++) {
        const int i = order[j];
        sumx[j + 1] = sumx[j] + w[i] * xb[i];
        sumw[j + 1] = sumw[j] + w[i];
    }
    float best_score = -FLT_MAX, scale = max;
    int besti1 = -1, besti2 = -1, best_shift = 0;
    for (int i1 = 0; i1 <= IQ1S_N; i1++) {
        for (int i2 = i1; i2 <= IQ1S_N; i2++) {
            const float *const sets[2] = {IQ1_XP, IQ1_XM};
            for (int t = 0; t < 2; t++) {
                const float *xs = sets[t];
                const float sumqx = (sumx[i1] - sumx[0]) * xs[0] + (sumx[i2] - sumx[i1]) * xs[1] +
                                    (sumx[IQ1S_N] - sumx[i2]) * xs[2];
                const float sumq2 = (sumw[i1] - sumw[0]) * xs[0] * xs[0] + (sumw[i2] - sumw[i1]) * xs[1] * xs[1] +
                                    (sumw[IQ1S_N] - sumw[i2]) * xs[2] * xs[2];
                if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
                    scale = sumqx / sumq2;
                    best_score = scale * sumqx;
                    besti1 = i1;
                    besti2 = i2;
                    best_shift = t == 0 ? 1 : -1;
                }
            }
        }
    }
    if (besti1 < 0 || besti2 < 0 || best_shift == 0) return false;
    int8_t L[IQ1S_N];
    iq1_split_levels(order, IQ1S_N, besti1, besti2, L);
    if (scale < 0) {
        for (int j = 0; j < IQ1S_N; j++) L[j] = (int8_t)(2 - L[j]);
        scale = -scale;
        best_shift = -best_shift;
    }
    const float *xs = best_shift == 1 ? IQ1_XP : IQ1_XM;
    const float *const xx[4] = {xs, xs, xs, xs};
    if (!iq1_points(lat, xb, w, scale, xx, IQ1S_N, L, idx)) scale = iq1_refit(lat, xb, w, xx, IQ1S_N, idx, scale);
    *shift = best_shift;
    *scale_out = scale;
    return true;
}

void qt__quantize_iq1_s(const float *x, void *dst, int64_t n, const float *imatrix) {
    block_iq1_s *y = dst;
    const qt__iq_lattice *lat = qt__iq_lattice_get(QT_IQ_LATTICE_1S);
    if (!lat || !imatrix) { /* refused by qt_quantize_rows before we get here */
        memset(dst, 0, sizeof(block_iq1_s) * (size_t)(n / QK_K));
        return;
    }
    float scales[QK_K / IQ1S_N], w[IQ1S_N];
    int shifts[QK_K / IQ1S_N];
    for (int64_t ibl = 0; ibl < n / QK_K; ibl++) {
        const float *xbl = x + QK_K * ibl;
        const float sigma2 = superblock_sigma2(xbl, 2);
        memset(&y[ibl], 0, sizeof y[ibl]);
        float max_scale = 0;
        for (int ib = 0; ib < QK_K / IQ1S_N; ib++) {
            const float *xb = xbl + IQ1S_N * ib;
            qt__importance_weights(xb, imatrix + QK_K * ibl + IQ1S_N * ib, sigma2, IQ1S_N, w);
            uint16_t idx[IQ1S_N / 8] = {0};
            if (!iq1s_subblock(lat, xb, w, idx, &scales[ib], &shifts[ib])) continue;
            uint16_t h = 0;
            for (int k = 0; k < IQ1S_N / 8; k++) {
                y[ibl].qs[4 * ib + k] = (uint8_t)(idx[k] & 255);
                h |= (uint16_t)((idx[k] >> 8) << (3 * k));
            }
            y[ibl].qh[ib] = h;
            max_scale = max_scale > scales[ib] ? max_scale : scales[ib];
        }
        if (!max_scale) continue;
        const float d = max_scale / 15;
        y[ibl].d = qt_f32_to_fp16(d * 1.125f);
        const float id = 1 / d;
        for (int ib = 0; ib < QK_K / IQ1S_N; ib++) {
            int l = scale_code(scales[ib], id, 7);
            if (shifts[ib] == -1) l |= 8;
            y[ibl].qh[ib] |= (uint16_t)(l << 12);
        }
    }
}

void qt__dequantize_iq1_s(const void *src, float *y, int64_t n) {
    const block_iq1_s *x = src;
    const int8_t *grid = qt__iq_values(QT_IQ_LATTICE_1S);
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = qt_fp16_to_f32(x[i].d);
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const uint16_t qh = x[i].qh[ib];
            const float dl = d * (float)(2 * ((qh >> 12) & 7) + 1);
            const float delta = qh & 0x8000 ? -QT_IQ1S_DELTA : QT_IQ1S_DELTA;
            for (int l = 0; l < 4; l++) {
                const int8_t *g = grid + 8 * (x[i].qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8));
                for (int j = 0; j < 8; j++) *y++ = dl * ((float)g[j] + delta);
            }
        }
    }
}

/* IQ1_M shift combinations per 16 (first 8, second 8): 0 = (+,+), 1 = (+,-),
 * 2 = (-,+), 3 = (-,-); the qh delta-sign bits they set. */
static const uint8_t IQ1M_SHIFT_BITS[4] = {0x00, 0x80, 0x08, 0x88};

static const float *iq1m_set(int combo, int k) {
    return (k == 0 ? combo < 2 : combo % 2 == 0) ? IQ1_XP : IQ1_XM;
}

/* One IQ1_M sub-block of 16: 2 indices, the scale and the shift combination.
 * Returns false for a zero sub-block (scale 0, combination 0); as for IQ1_S
 * a stored one may have scale 0. */
static bool iq1m_subblock(const qt__iq_lattice *lat, const float *xb, const float *w, uint16_t *idx, float *scale_out,
                          int *combo) {
    *combo = 0;
    *scale_out = 0;
    float max = fabsf(xb[0]);
    for (int i = 1; i < IQ1M_N; i++) max = max > fabsf(xb[i]) ? max : fabsf(xb[i]);
    if (max < EPS_IQ1_M) return false;
    int order[IQ1M_N];
    sort_by_value(xb, IQ1M_N, order);
    /* ggml sums, for every split (i1, i2) and each combination k, w[i]*q*xb[i] and w[i]*q*q
     * element by element in sorted order. The terms depend only on (sorted position j, level,
     * k), so they are formed once (the same products: (w*q)*xb, (w*q)*q), and the partial sums
     * that splits share are not redone: the level-0 prefix over j < i1 is the same for every i2,
     * the level-1 run over [i1, i2) grows by one term per i2. Each split's sum still adds the
     * same terms in the same order from 0, so the floats, and the chosen split, are ggml's. */
    float term[IQ1M_N][3][8]; /* [j][level][k: sum w*q*x, 4 + k: sum w*q*q] */
    for (int j = 0; j < IQ1M_N; j++) {
        const int i = order[j], half = i < IQ1M_N / 2 ? 0 : 1;
        for (int lv = 0; lv < 3; lv++)
            for (int k = 0; k < 4; k++) {
                const float q = iq1m_set(k, half)[lv];
                term[j][lv][k] = w[i] * q * xb[i];
                term[j][lv][4 + k] = w[i] * q * q;
            }
    }
    float best_score = -FLT_MAX, scale = max;
    int besti1 = -1, besti2 = -1, best_k = -1;
    float lead[8] = {0, 0, 0, 0, 0, 0, 0, 0}; /* level 0 over j < i1 */
    for (int i1 = 0; i1 <= IQ1M_N; i1++) {
        float mid[8]; /* lead, then level 1 over i1 <= j < i2 */
        memcpy(mid, lead, sizeof mid);
        for (int i2 = i1; i2 <= IQ1M_N; i2++) {
            float s[8];
            memcpy(s, mid, sizeof s);
            for (int j = i2; j < IQ1M_N; j++)
                for (int m = 0; m < 8; m++) s[m] += term[j][2][m];
            for (int k = 0; k < 4; k++) {
                const float sumqx = s[k], sumq2 = s[4 + k];
                if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
                    scale = sumqx / sumq2;
                    best_score = scale * sumqx;
                    besti1 = i1;
                    besti2 = i2;
                    best_k = k;
                }
            }
            if (i2 < IQ1M_N)
                for (int m = 0; m < 8; m++) mid[m] += term[i2][1][m];
        }
        if (i1 < IQ1M_N)
            for (int m = 0; m < 8; m++) lead[m] += term[i1][0][m];
    }
    if (besti1 < 0 || besti2 < 0 || best_k < 0) return false;
    int8_t L[IQ1M_N];
    iq1_split_levels(order, IQ1M_N, besti1, besti2, L);
    if (scale < 0) {
        for (int j = 0; j < IQ1M_N; j++) L[j] = (int8_t)(2 - L[j]);
        scale = -scale;
        best_k = 3 - best_k;
    }
    const float *const xx[2] = {iq1m_set(best_k, 0), iq1m_set(best_k, 1)};
    if (!iq1_points(lat, xb, w, scale, xx, IQ1M_N, L, idx)) scale = iq1_refit(lat, xb, w, xx, IQ1M_N, idx, scale);
    *combo = best_k;
    *scale_out = scale;
    return true;
}

void qt__quantize_iq1_m(const float *x, void *dst, int64_t n, const float *imatrix) {
    block_iq1_m *y = dst;
    const qt__iq_lattice *lat = qt__iq_lattice_get(QT_IQ_LATTICE_1S);
    if (!lat) { /* refused by qt_quantize_rows before we get here */
        memset(dst, 0, sizeof(block_iq1_m) * (size_t)(n / QK_K));
        return;
    }
    float scales[QK_K / IQ1M_N], w[IQ1M_N];
    int combos[QK_K / IQ1M_N];
    for (int64_t ibl = 0; ibl < n / QK_K; ibl++) {
        const float *xbl = x + QK_K * ibl;
        const float *qwbl = imatrix ? imatrix + QK_K * ibl : NULL;
        const float sigma2 = superblock_sigma2(xbl, 2);
        memset(&y[ibl], 0, sizeof y[ibl]);
        float max_scale = 0;
        for (int ib = 0; ib < QK_K / IQ1M_N; ib++) {
            const float *xb = xbl + IQ1M_N * ib;
            subblock_weights(xb, qwbl ? qwbl + IQ1M_N * ib : NULL, sigma2, 0, IQ1M_N, w);
            uint16_t idx[2] = {0, 0};
            if (!iq1m_subblock(lat, xb, w, idx, &scales[ib], &combos[ib])) continue;
            y[ibl].qs[2 * ib] = (uint8_t)(idx[0] & 255);
            y[ibl].qs[2 * ib + 1] = (uint8_t)(idx[1] & 255);
            y[ibl].qh[ib] = (uint8_t)((idx[0] >> 8) | ((idx[1] >> 8) << 4));
            max_scale = max_scale > scales[ib] ? max_scale : scales[ib];
        }
        if (!max_scale) continue;

        /* 3-bit scales, then the super-block scale refitted to the stored
         * points and scales over all 256 elements (zero sub-blocks included,
         * as point 0 with scale code 0, as in ggml) */
        uint16_t sc[4] = {0, 0, 0, 0};
        float d = max_scale / 15;
        const float id = 1 / d;
        float sumqx = 0, sumq2 = 0;
        for (int ib = 0; ib < QK_K / IQ1M_N; ib++) {
            const int l = scale_code(scales[ib], id, 7);
            sc[ib / 4] |= (uint16_t)(l << (3 * (ib % 4)));
            y[ibl].qh[ib] |= IQ1M_SHIFT_BITS[combos[ib]];
            const float *xb = xbl + IQ1M_N * ib;
            subblock_weights(xb, qwbl ? qwbl + IQ1M_N * ib : NULL, sigma2, 0, IQ1M_N, w);
            for (int k = 0; k < 2; k++) {
                const float *xx = iq1m_set(combos[ib], k);
                const int g = y[ibl].qs[2 * ib + k] | (((y[ibl].qh[ib] >> (4 * k)) & 7) << 8);
                const int8_t *p = lat->pos + (size_t)g * 8;
                for (int j = 0; j < 8; j++) {
                    const float q = xx[(p[j] - 1) / 2] * (float)(2 * l + 1);
                    sumqx += w[8 * k + j] * q * xb[8 * k + j];
                    sumq2 += w[8 * k + j] * q * q;
                }
            }
        }
        if (sumq2 > 0) d = sumqx / sumq2;
        const uint16_t h = qt_f32_to_fp16(d * 1.1125f);
        sc[0] |= (uint16_t)((h & 0x000f) << 12);
        sc[1] |= (uint16_t)((h & 0x00f0) << 8);
        sc[2] |= (uint16_t)((h & 0x0f00) << 4);
        sc[3] |= (uint16_t)(h & 0xf000);
        memcpy(y[ibl].scales, sc, sizeof sc);
    }
}

void qt__dequantize_iq1_m(const void *src, float *y, int64_t n) {
    const block_iq1_m *x = src;
    const int8_t *grid = qt__iq_values(QT_IQ_LATTICE_1S);
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint16_t sc[4];
        memcpy(sc, x[i].scales, sizeof sc);
        const uint16_t h = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
        const float d = qt_fp16_to_f32(h);
        for (int ib = 0; ib < QK_K / IQ1M_N; ib++) {
            const float dl = d * (float)(2 * ((sc[ib / 4] >> (3 * (ib % 4))) & 7) + 1);
            const uint8_t qh = x[i].qh[ib];
            for (int k = 0; k < 2; k++) {
                const float delta = (qh >> (4 * k)) & 0x08 ? -QT_IQ1S_DELTA : QT_IQ1S_DELTA;
                const int8_t *g = grid + 8 * (x[i].qs[2 * ib + k] | (((qh >> (4 * k)) & 7) << 8));
                for (int j = 0; j < 8; j++) *y++ = dl * ((float)g[j] + delta);
            }
        }
    }
}

/* ---- checks before quantizing ------------------------------------------------------ */

bool qt_type_requires_imatrix(qt_type t) {
    /* ggml_quantize_requires_imatrix; their quantize_row_*_impl assert it */
    return t == QT_TYPE_IQ2_XXS || t == QT_TYPE_IQ2_XS || t == QT_TYPE_IQ1_S;
}

static int lattice_of(qt_type t) {
    switch (t) {
    case QT_TYPE_IQ2_XXS: return QT_IQ_LATTICE_2XXS;
    case QT_TYPE_IQ2_XS: return QT_IQ_LATTICE_2XS;
    case QT_TYPE_IQ2_S: return QT_IQ_LATTICE_2S;
    case QT_TYPE_IQ3_XXS: return QT_IQ_LATTICE_3XXS;
    case QT_TYPE_IQ3_S: return QT_IQ_LATTICE_3S;
    case QT_TYPE_IQ1_S:
    case QT_TYPE_IQ1_M: return QT_IQ_LATTICE_1S;
    default: return -1;
    }
}

qt_status qt__iq_prepare(qt_type t, const float *imatrix) {
    const int id = lattice_of(t);
    if (id < 0) return QT_OK;
    const char *name = qt_type_get(t)->name;
    if (!imatrix && qt_type_requires_imatrix(t))
        return qt_error(QT_ERR_ARG, "type %s needs importance weights (an imatrix); ggml's quantizer has no "
                                    "fallback without them", name);
    if (!qt__iq_lattice_get((qt__iq_lattice_id)id))
        return qt_error(QT_ERR_NOMEM, "out of memory building the %s code-book search tables", name);
    return QT_OK;
}

/* q_iq_nb.h: the lattice quantizers with another neighbour search (the SIMD ones) */
void qt__quantize_iq_lattice(qt_type t, const float *x, void *dst, int64_t n, const float *imatrix,
                             qt__iq_neighbour_fn nb) {
    const lattice_search *p = t == QT_TYPE_IQ2_XXS  ? &SEARCH_IQ2_XXS
                              : t == QT_TYPE_IQ2_XS ? &SEARCH_IQ2_XS
                              : t == QT_TYPE_IQ2_S  ? &SEARCH_IQ2_S
                              : t == QT_TYPE_IQ3_XXS ? &SEARCH_IQ3_XXS
                              : t == QT_TYPE_IQ3_S  ? &SEARCH_IQ3_S
                                                    : NULL;
    if (p) lattice_quantize(p, x, dst, n, imatrix, nb);
}
