/* lib/quant/gemm_k.c — the scalar references of the --numerics fast K-quant
 * kernels (gemm_k.h): each super-block's exact integer sums, element by
 * element, written out from the formats (docs/formats.md §3.4), then the fast
 * K order's two fused multiply-adds. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "blocks.h"
#include "gemm_k.h"
#include "quanta/num.h"

/* The integers of one super-block: isum (codes' offsets folded in through the
 * bsums) and msum (the min terms; 0 where a format has none). */
typedef struct { int32_t isum, msum; } k_ints;


/* Element e of a super-block sits in 32-element group g = e / 32 at l = e % 32. */

static k_ints ints_q2_K(const void *vx, const block_q8_K *y) {
    const block_q2_K *x = vx;
    k_ints s = {0, 0};
    for (int e = 0; e < QK_K; e++) {
        const int g = e / 32, l = e % 32;
        const int q = (x->qs[32 * (g / 4) + l] >> (2 * (g % 4))) & 3;
        s.isum += (x->scales[e / 16] & 0x0F) * q * y->qs[e];
    }
    for (int j = 0; j < QK_K / 16; j++) s.msum += (x->scales[j] >> 4) * y->bsums[j];
    return s;
}

static k_ints ints_q3_K(const void *vx, const block_q8_K *y) {
    const block_q3_K *x = vx;
    int sc[16];
    for (int j = 0; j < 16; j++) {
        const int lo = j < 8 ? (x->scales[j] & 0x0F) : (x->scales[j - 8] >> 4);
        const int hi = (x->scales[8 + j % 4] >> (2 * (j / 4))) & 3;
        sc[j] = (lo | hi << 4) - 32;
    }
    k_ints s = {0, 0};
    for (int e = 0; e < QK_K; e++) {
        const int g = e / 32, l = e % 32;
        const int q = ((x->qs[32 * (g / 4) + l] >> (2 * (g % 4))) & 3) | ((x->hmask[l] >> g) & 1) << 2; /* 0..7 */
        s.isum += sc[e / 16] * q * y->qs[e];
    }
    for (int j = 0; j < 16; j++) s.isum -= 4 * sc[j] * y->bsums[j]; /* code - 4 */
    return s;
}

/* Q4_K (qh NULL) and Q5_K (qh: the fifth bit of element l of group g at bit g of qh[l]). */
static k_ints ints_k4(const uint8_t scales[12], const uint8_t *qs, const uint8_t *qh, const block_q8_K *y) {
    k_ints s = {0, 0};
    for (int g = 0; g < 8; g++) {
        uint8_t sc, m;
        qt__get_scale_min_k4(g, scales, &sc, &m);
        for (int l = 0; l < 32; l++) {
            int q = (qs[32 * (g / 2) + l] >> (4 * (g % 2))) & 0x0F;
            if (qh) q |= ((qh[l] >> g) & 1) << 4;
            s.isum += sc * q * y->qs[32 * g + l];
        }
        s.msum += m * (y->bsums[2 * g] + y->bsums[2 * g + 1]);
    }
    return s;
}

static k_ints ints_q4_K(const void *vx, const block_q8_K *y) {
    const block_q4_K *x = vx;
    return ints_k4(x->scales, x->qs, NULL, y);
}

static k_ints ints_q5_K(const void *vx, const block_q8_K *y) {
    const block_q5_K *x = vx;
    return ints_k4(x->scales, x->qs, x->qh, y);
}

static k_ints ints_q6_K(const void *vx, const block_q8_K *y) {
    const block_q6_K *x = vx;
    k_ints s = {0, 0};
    for (int e = 0; e < QK_K; e++) {
        const int g = e / 32, l = e % 32, h = g / 4, k = g % 4;
        const uint8_t ql = x->ql[64 * h + 32 * (k % 2) + l];
        const int q = ((k < 2 ? ql : ql >> 4) & 0x0F) | ((x->qh[32 * h + l] >> (2 * k)) & 3) << 4; /* 0..63 */
        s.isum += x->scales[e / 16] * q * y->qs[e];
    }
    for (int j = 0; j < 16; j++) s.isum -= 32 * x->scales[j] * y->bsums[j]; /* code - 32 */
    return s;
}

static k_ints ints_iq4_xs(const void *vx, const block_q8_K *y) {
    const block_iq4_xs *x = vx;
    k_ints s = {0, 0};
    for (int e = 0; e < QK_K; e++) {
        const int g = e / 32, l = e % 32;
        const int ls = ((x->scales_l[g / 2] >> (4 * (g % 2))) & 0x0F) | ((x->scales_h >> (2 * g)) & 3) << 4;
        const uint8_t q = x->qs[16 * g + l % 16];
        s.isum += (ls - 32) * qt__kvalues_iq4nl[l < 16 ? q & 0x0F : q >> 4] * y->qs[e];
    }
    return s;
}

/* The fast K order (gemm_k.h) over n / 256 super-blocks of xb bytes, d at
 * d_off and dmin at dmin_off (none if < 0). */
static float fast_k(const void *vx, size_t xb, size_t d_off, long dmin_off, k_ints (*ints)(const void *, const block_q8_K *),
                    const void *vy, int64_t n) {
    const block_q8_K *y = vy;
    float acc = 0.0f;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const uint8_t *x = (const uint8_t *)vx + (size_t)b * xb;
        const k_ints s = ints(x, &y[b]);
        qt_half h;
        memcpy(&h, x + d_off, sizeof h);
        acc = fmaf(y[b].d * qt_fp16_to_f32(h), (float)s.isum, acc);
        if (dmin_off >= 0) {
            memcpy(&h, x + dmin_off, sizeof h);
            acc = fmaf(-(y[b].d * qt_fp16_to_f32(h)), (float)s.msum, acc);
        }
    }
    return acc;
}

#define FAST_K_REF(t, DMIN)                                                                                       \
    float qt__dot_fast_##t##_ref(const void *x, const void *y, int64_t n) {                                       \
        return fast_k(x, sizeof(block_##t), offsetof(block_##t, d), DMIN, ints_##t, y, n);                        \
    }
FAST_K_REF(q2_K, (long)offsetof(block_q2_K, dmin))
FAST_K_REF(q3_K, -1)
FAST_K_REF(q4_K, (long)offsetof(block_q4_K, dmin))
FAST_K_REF(q5_K, (long)offsetof(block_q5_K, dmin))
FAST_K_REF(q6_K, -1)
FAST_K_REF(iq4_xs, -1)
