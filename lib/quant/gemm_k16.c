/* lib/quant/gemm_k16.c — the k16 layout of --numerics fast K-quants
 * (gemm_k16.h): its packer and the scalar reference of the kernels on packed
 * rows. The SIMD kernels are in gemm_k16_avx512.c / gemm_k16_avx2.c. */
#include <math.h>
#include <string.h>

#include "blocks.h"
#include "gemm_k16.h"
#include "quanta/num.h"

static int k16_kind(qt_type t) {
    return t == QT_TYPE_Q4_K ? K16_Q4_K : t == QT_TYPE_Q5_K ? K16_Q5_K : t == QT_TYPE_Q6_K ? K16_Q6_K : -1;
}

size_t qt__k16_group_bytes(qt_type t, int64_t n) {
    const int k = k16_kind(t);
    return k < 0 ? 0 : (size_t)(n / QK_K) * k16_tile_bytes(k);
}

size_t qt__k16_bytes(qt_type t, int64_t nr, int64_t n) {
    if (k16_kind(t) < 0 || n <= 0 || n % QK_K || nr <= 0) return 0;
    return (size_t)((nr + QT_X16_ROWS - 1) / QT_X16_ROWS) * qt__k16_group_bytes(t, n);
}

/* One plain super-block, unpacked: codes 0..63 (Q6_K: before its -32),
 * sub-block scales, mins, and the two f16 scales as stored. */
typedef struct {
    uint8_t q[QK_K];
    int8_t sc[16];
    uint8_t mn[8];
    qt_half d, dmin;
} k16_block;

static void k16_unpack(int kind, const uint8_t *blk, k16_block *u) {
    memset(u, 0, sizeof *u);
    if (kind == K16_Q6_K) {
        const block_q6_K *x = (const block_q6_K *)blk;
        for (int e = 0; e < QK_K; e++) {
            const int g = e / 32, l = e % 32, h = g / 4, k = g % 4;
            const uint8_t ql = x->ql[64 * h + 32 * (k % 2) + l];
            u->q[e] = (uint8_t)(((k < 2 ? ql : ql >> 4) & 0x0F) | ((x->qh[32 * h + l] >> (2 * k)) & 3) << 4);
        }
        memcpy(u->sc, x->scales, 16);
        u->d = x->d;
        return;
    }
    /* Q4_K and Q5_K share d, dmin, scales and qs's places; Q5_K adds qh */
    const block_q4_K *x4 = (const block_q4_K *)blk;
    const block_q5_K *x5 = (const block_q5_K *)blk;
    const uint8_t *qs = kind == K16_Q4_K ? x4->qs : x5->qs;
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        qt__get_scale_min_k4(j, x4->scales, &sc, &m);
        u->sc[j] = (int8_t)sc;
        u->mn[j] = m;
    }
    for (int e = 0; e < QK_K; e++) {
        const int g = e / 32, l = e % 32;
        int q = (qs[32 * (g / 2) + l] >> (4 * (g % 2))) & 0x0F;
        if (kind == K16_Q5_K) q |= ((x5->qh[l] >> g) & 1) << 4;
        u->q[e] = (uint8_t)q;
    }
    u->d = x4->d;
    u->dmin = x4->dmin;
}

/* Row i's super-block u into tile tl (gemm_k16.h). */
static void k16_put(int kind, const k16_block *u, int i, uint8_t *tl) {
    memcpy(tl + 2 * i, &u->d, 2);
    if (k16_has_min(kind)) memcpy(tl + k16_dmin_off(kind) + 2 * i, &u->dmin, 2);
    for (int j = 0; j < k16_nsub(kind); j++) tl[k16_scales_off(kind) + 16 * j + i] = (uint8_t)u->sc[j];
    if (k16_has_min(kind))
        for (int j = 0; j < 8; j++) tl[k16_mins_off(kind) + 32 * (j / 2) + 2 * i + j % 2] = u->mn[j];
    if (kind == K16_Q6_K) {
        for (int m = 0; m < 16; m++)
            for (int e = 0; e < 4; e++) {
                const int q3 = u->q[4 * (m + 48) + e];
                for (int v = 0; v < 3; v++)
                    tl[k16_q6_vec_at(m, v) + 4 * i + e] = (uint8_t)(u->q[4 * (m + 16 * v) + e] | ((q3 >> (2 * v)) & 3) << 6);
            }
        return;
    }
    uint8_t *high = tl + k16_high_off(kind);
    for (int k = 0; k < 32; k++)
        for (int e = 0; e < 4; e++)
            tl[k16_codes_at(kind, k) + 4 * i + e] = (uint8_t)((u->q[4 * k + e] & 0x0F) | (u->q[128 + 4 * k + e] & 0x0F) << 4);
    if (kind == K16_Q5_K)
        for (int q = 0; q < 64; q++)
            for (int e = 0; e < 4; e++)
                high[8 * q + (4 * i + e) / 8] |= (uint8_t)(((u->q[4 * q + e] >> 4) & 1) << ((4 * i + e) % 8));
}

void qt__k16_pack_groups(qt_type t, const void *w, size_t ldw, int64_t nr, int64_t n, void *dst, int64_t g0, int64_t g1) {
    const int kind = k16_kind(t);
    const size_t tile = k16_tile_bytes(kind), bb = k16_block_bytes(kind);
    const int64_t nb = n / QK_K;
    for (int64_t g = g0; g < g1; g++) {
        uint8_t *grp = (uint8_t *)dst + (size_t)g * (size_t)nb * tile;
        memset(grp, 0, (size_t)nb * tile); /* padding rows: zero scales and codes */
        for (int i = 0; i < QT_X16_ROWS && g * QT_X16_ROWS + i < nr; i++) {
            const uint8_t *row = (const uint8_t *)w + (size_t)(g * QT_X16_ROWS + i) * ldw;
            for (int64_t b = 0; b < nb; b++) {
                k16_block u;
                k16_unpack(kind, row + (size_t)b * bb, &u);
                k16_put(kind, &u, i, grp + (size_t)b * tile);
            }
        }
    }
}

void qt__k16_pack(qt_type t, const void *w, size_t ldw, int64_t nr, int64_t n, void *dst) {
    qt__k16_pack_groups(t, w, ldw, nr, n, dst, 0, (nr + QT_X16_ROWS - 1) / QT_X16_ROWS);
}

/* Row i's super-block back out of tile tl: the inverse of k16_put. */
static void k16_get(int kind, const uint8_t *tl, int i, k16_block *u) {
    memset(u, 0, sizeof *u);
    memcpy(&u->d, tl + 2 * i, 2);
    if (k16_has_min(kind)) memcpy(&u->dmin, tl + k16_dmin_off(kind) + 2 * i, 2);
    for (int j = 0; j < k16_nsub(kind); j++) u->sc[j] = (int8_t)tl[k16_scales_off(kind) + 16 * j + i];
    if (k16_has_min(kind))
        for (int j = 0; j < 8; j++) u->mn[j] = tl[k16_mins_off(kind) + 32 * (j / 2) + 2 * i + j % 2];
    if (kind == K16_Q6_K) {
        for (int m = 0; m < 16; m++)
            for (int e = 0; e < 4; e++)
                for (int v = 0; v < 3; v++) {
                    const uint8_t b = tl[k16_q6_vec_at(m, v) + 4 * i + e];
                    u->q[4 * (m + 16 * v) + e] = b & 0x3F;
                    u->q[4 * (m + 48) + e] |= (uint8_t)((b >> 6) << (2 * v));
                }
        return;
    }
    const uint8_t *high = tl + k16_high_off(kind);
    for (int k = 0; k < 32; k++)
        for (int e = 0; e < 4; e++) {
            u->q[4 * k + e] = tl[k16_codes_at(kind, k) + 4 * i + e] & 0x0F;
            u->q[128 + 4 * k + e] = tl[k16_codes_at(kind, k) + 4 * i + e] >> 4;
        }
    if (kind == K16_Q5_K)
        for (int q = 0; q < 64; q++)
            for (int e = 0; e < 4; e++)
                u->q[4 * q + e] |= (uint8_t)(((high[8 * q + (4 * i + e) / 8] >> ((4 * i + e) % 8)) & 1) << 4);
}

/* The fast K order's step for one super-block (gemm_k.h): Q4_K/Q5_K scales
 * are unsigned (the int8 cast above is undone), Q6_K's signed with codes - 32. */
static float k16_step(int kind, const k16_block *u, const block_q8_K *y, float acc) {
    int32_t isum = 0, msum = 0;
    const int sub = QK_K / k16_nsub(kind);
    for (int e = 0; e < QK_K; e++) {
        const int sc = kind == K16_Q6_K ? u->sc[e / sub] : (uint8_t)u->sc[e / sub];
        isum += sc * (kind == K16_Q6_K ? u->q[e] - 32 : u->q[e]) * y->qs[e];
    }
    if (k16_has_min(kind))
        for (int j = 0; j < 8; j++) msum += u->mn[j] * (y->bsums[2 * j] + y->bsums[2 * j + 1]);
    acc = fmaf(y->d * qt_fp16_to_f32(u->d), (float)isum, acc);
    if (k16_has_min(kind)) acc = fmaf(-(y->d * qt_fp16_to_f32(u->dmin)), (float)msum, acc);
    return acc;
}

void qt__gemm_k16_ref(qt_type t, const void *wp, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                      float *out, int64_t ldo) {
    const int kind = k16_kind(t);
    const size_t tile = k16_tile_bytes(kind);
    const int64_t nb = n / QK_K;
    for (int64_t r = 0; r < nr; r++) {
        const uint8_t *g = (const uint8_t *)wp + (size_t)(r / QT_X16_ROWS) * (size_t)nb * tile;
        for (int64_t c = 0; c < nc; c++) {
            const block_q8_K *y = (const block_q8_K *)((const uint8_t *)a + (size_t)c * lda);
            float acc = 0.0f;
            for (int64_t b = 0; b < nb; b++) {
                k16_block u;
                k16_get(kind, g + (size_t)b * tile, (int)(r % QT_X16_ROWS), &u);
                acc = k16_step(kind, &u, y + b, acc);
            }
            out[c * ldo + r] = acc;
        }
    }
}

#define K16_REF(NAME, TYPE)                                                                                   \
    void qt__gemm_k16_##NAME##_ref(const void *wp, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n, \
                                   float *out, int64_t ldo) {                                                 \
        qt__gemm_k16_ref(TYPE, wp, nr, a, lda, nc, n, out, ldo);                                              \
    }
K16_REF(q4_K, QT_TYPE_Q4_K)
K16_REF(q5_K, QT_TYPE_Q5_K)
K16_REF(q6_K, QT_TYPE_Q6_K)
