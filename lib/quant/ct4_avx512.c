/* lib/quant/ct4_avx512.c — AVX-512 fused dots of the weight-only 4-bit
 * compressed-tensors rows (ct4.h): the group's 16-entry code book is one
 * register and one vpermps decodes 16 weights. The 16-lane accumulators are
 * the ones dot_avx2.c holds as register pairs (ggml_vec_dot_f32's and
 * tinyBLAS's lanes), so the bits are the AVX2 kernels' and the references'.
 */
#include <immintrin.h>
#include <math.h>

#include "ct4.h"
#include "decode_pf.h"
#include "dot.h"
#include "dot_x86.h"

#include "ct_round_x86.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))


/* The code book of ct4.h's qt__ct4_lut in one register (the same products, the same rounding). */
ALWAYS_INLINE __m512 make_lut(const void *row, const qt__ct4_form *f, int64_t g) {
    if (f->kind == QT_CT4_INT4) {
        const uint8_t *p = qt__ct4_params(row) + (size_t)g * (size_t)f->param_bytes;
        uint32_t dt;
        float s;
        memcpy(&dt, row, 4);
        memcpy(&s, p, 4);
        const __m512i c = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        const __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(c, _mm512_set1_epi32(8 + (int8_t)p[4])));
        return qt__ct_round_dtype16(_mm512_mul_ps(v, _mm512_set1_ps(s)), dt);
    }
    return _mm512_mul_ps(_mm512_loadu_ps(qt__e2m1_values), _mm512_set1_ps(qt__ct4_fp4_scale(row, f, g)));
}

typedef struct {
    const void *row;
    const uint8_t *codes;
    qt__ct4_form f;
    int64_t ga, gb;
    __m512 la, lb;
} decoder;

/* Elements 32k..32k+15 (e[0]) and 32k+16..32k+31 (e[1]). */
ALWAYS_INLINE void chunk(decoder *d, int64_t k, __m512 e[2]) {
    const int64_t ga = 32 * k / d->f.group, gb = (32 * k + 16) / d->f.group;
    if (ga != d->ga) {
        d->ga = ga;
        d->la = ga == d->gb ? d->lb : make_lut(d->row, &d->f, ga);
    }
    if (gb != d->gb) {
        d->gb = gb;
        d->lb = gb == ga ? d->la : make_lut(d->row, &d->f, gb);
    }
    const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(d->codes + 16 * k)));
    e[0] = _mm512_permutexvar_ps(_mm512_and_si512(b, _mm512_set1_epi32(15)), d->la);
    e[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), d->lb);
}

ALWAYS_INLINE decoder start(const void *row, int64_t n, qt__ct4_form f) {
    decoder d = {row, qt__ct4_codes(row, n, &f), f, -1, -1, _mm512_setzero_ps(), _mm512_setzero_ps()};
    return d;
}

/* _mm512_reduce_add_ps's order, written out: lanes i and i+8, then the hsum8 order */
ALWAYS_INLINE float reduce16(__m512 z) {
    return qt__hsum8_avx(_mm256_add_ps(_mm512_extractf32x8_ps(z, 1), _mm512_castps512_ps256(z)));
}

ALWAYS_INLINE float dot(const void *x, const float *y, int64_t n, qt__ct4_form f) {
    decoder d = start(x, n, f);
    const int64_t np = n & ~(int64_t)63;
    __m512 z[4], e[4];
    for (int k = 0; k < 4; k++) z[k] = _mm512_setzero_ps();
    for (int64_t i = 0; i < np; i += 64) {
        chunk(&d, i / 32, e);
        chunk(&d, i / 32 + 1, e + 2);
        for (int k = 0; k < 4; k++) z[k] = _mm512_fmadd_ps(e[k], _mm512_loadu_ps(y + i + 16 * k), z[k]);
    }
    const float sum = reduce16(_mm512_add_ps(_mm512_add_ps(z[0], z[2]), _mm512_add_ps(z[1], z[3])));
    if (np == n) return sum;
    float w[32];
    chunk(&d, np / 32, e);
    _mm512_storeu_ps(w, e[0]);
    _mm512_storeu_ps(w + 16, e[1]);
    return qt__dot_f32_tail(sum, w, y + np, 0, n - np);
}

ALWAYS_INLINE float gemm(const void *x, const float *y, int64_t n, qt__ct4_form f) {
    decoder d = start(x, n, f);
    __m512 z = _mm512_setzero_ps(), e[2];
    for (int64_t i = 0; i < n; i += 32) {
        chunk(&d, i / 32, e);
        z = _mm512_fmadd_ps(e[0], _mm512_loadu_ps(y + i), z);
        z = _mm512_fmadd_ps(e[1], _mm512_loadu_ps(y + i + 16), z);
    }
    return reduce16(z);
}

ALWAYS_INLINE void to_float(const void *x, float *y, int64_t n, qt__ct4_form f) {
    decoder d = start(x, n, f);
    __m512 e[2];
    for (int64_t i = 0; i < n; i += 32) {
        chunk(&d, i / 32, e);
        _mm512_storeu_ps(y + i, e[0]);
        _mm512_storeu_ps(y + i + 16, e[1]);
    }
}

#define DEFS(t, KIND, G, P)                                                                                           \
    void qt__ct4_##t##_to_float_avx512(const void *x, float *y, int64_t n) { to_float(x, y, n, (qt__ct4_form){KIND, G, P}); } \
    float qt__dot_ct4_##t##_avx512(const void *x, const void *y, int64_t n) { return dot(x, y, n, (qt__ct4_form){KIND, G, P}); } \
    float qt__gemm_ct4_##t##_avx512(const void *x, const void *y, int64_t n) { return gemm(x, y, n, (qt__ct4_form){KIND, G, P}); }
DEFS(w4g32, QT_CT4_INT4, 32, 5)
DEFS(w4g64, QT_CT4_INT4, 64, 5)
DEFS(w4g128, QT_CT4_INT4, 128, 5)
DEFS(nvfp4, QT_CT4_NVFP4, QT_CT_NVFP4_GROUP, 1)
DEFS(mxfp4, QT_CT4_MXFP4, QT_CT_MXFP4_GROUP, 1)

/* ---- blocked: tiles of up to 4 rows x 3 activation rows (int4 rows; variants.c) -----
 * Each output keeps its own 16-lane chain over the elements in order (tinyBLAS's, as
 * gemm() above), so the bits are vec_dot_gemm's for every element; a tile decodes each
 * weight chunk once for its 3 activation rows and loads each activation vector once
 * for its 4 weight rows. */
ALWAYS_INLINE void tile(const uint8_t *w, size_t ldw, const float *a, size_t lda, int64_t n, qt__ct4_form f,
                        float *out, int64_t ldo, const int R, const int C) {
    decoder d[4];
    __m512 acc[4][3], e[4][2];
    for (int r = 0; r < R; r++) d[r] = start(w + (size_t)r * ldw, n, f);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) acc[r][c] = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 32) {
        for (int r = 0; r < R; r++) chunk(&d[r], i / 32, e[r]);
        for (int c = 0; c < C; c++) {
            const float *y = (const float *)((const uint8_t *)a + (size_t)c * lda) + i;
            const __m512 y0 = _mm512_loadu_ps(y), y1 = _mm512_loadu_ps(y + 16);
            for (int r = 0; r < R; r++) {
                acc[r][c] = _mm512_fmadd_ps(e[r][0], y0, acc[r][c]);
                acc[r][c] = _mm512_fmadd_ps(e[r][1], y1, acc[r][c]);
            }
        }
    }
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) out[(size_t)c * (size_t)ldo + (size_t)r] = reduce16(acc[r][c]);
}

ALWAYS_INLINE void gemm_tiles(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                              float *out, int64_t ldo, qt__ct4_form f) {
    for (int64_t r0 = 0; r0 < nr; r0 += 4) {
        const int R = nr - r0 < 4 ? (int)(nr - r0) : 4;
        const uint8_t *wr = (const uint8_t *)w + (size_t)r0 * ldw;
        for (int64_t c0 = 0; c0 < nc; c0 += 3) {
            const int C = nc - c0 < 3 ? (int)(nc - c0) : 3;
            const uint8_t *ac = (const uint8_t *)a + (size_t)c0 * lda;
            float *o = out + (size_t)c0 * (size_t)ldo + (size_t)r0;
#define T(RR, CC) case RR * 4 + CC: tile(wr, ldw, (const float *)ac, lda, n, f, o, ldo, RR, CC); break
            switch (R * 4 + C) {
                T(1, 1); T(1, 2); T(1, 3); T(2, 1); T(2, 2); T(2, 3);
                T(3, 1); T(3, 2); T(3, 3); T(4, 1); T(4, 2); T(4, 3);
            }
#undef T
        }
    }
}

#define GEMM_DEFS(t, KIND, G, P)                                                                                      \
    void qt__gemm_tiles_ct4_##t##_avx512(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, \
                                         int64_t n, float *out, int64_t ldo) {                                       \
        gemm_tiles(w, ldw, nr, a, lda, nc, n, out, ldo, (qt__ct4_form){KIND, G, P});                                   \
    }
GEMM_DEFS(w4g32, QT_CT4_INT4, 32, 5)
GEMM_DEFS(w4g64, QT_CT4_INT4, 64, 5)
GEMM_DEFS(w4g128, QT_CT4_INT4, 128, 5)

/* ---- --numerics fast: int8 activations, vpdpbusd (ct4.h "int8 activations") --------
 * Tiles of up to 4 weight rows x 4 activation rows: each group of 128 loads a row's 64
 * code bytes and splits its nibbles once for the tile's activation rows, and each
 * activation's 64 + 64 bytes once for its weight rows; two vpdpbusd, one conversion and
 * one fused multiply-add per (row, activation) into that pair's 16 lanes. The scale
 * products f = s_g * d_g and the zero-point corrections are 4-lane vectors over the
 * tile's activation rows (the same IEEE products and fused multiply-adds as the
 * reference's scalars), so every element has the reference's bits whatever the tile. */
ALWAYS_INLINE void fast_tile(const uint8_t *w, size_t ldw, const uint8_t *a, size_t lda, const qt__ct4_q8_heads *hd,
                             int64_t n, float *out, int64_t ldo, const int R, const int C) {
    const qt__ct4_form f = {QT_CT4_INT4, QT_CT4_Q8_GROUP, 5};
    const int64_t ng = n / QT_CT4_Q8_GROUP;
    const int8_t *q = (const int8_t *)a + (size_t)ng * sizeof(qt__ct4_q8_head);
    const __m512i low = _mm512_set1_epi8(0x0F);
    __m512 acc[4][4];
    __m128 corr[4];
    float fg[4][4] __attribute__((aligned(16)));
    const uint8_t *p[4], *c[4];
    for (int r = 0; r < R; r++) {
        for (int k = 0; k < C; k++) acc[r][k] = _mm512_setzero_ps();
        corr[r] = _mm_setzero_ps();
        p[r] = qt__ct4_params(w + (size_t)r * ldw);
        c[r] = qt__ct4_codes(w + (size_t)r * ldw, n, &f);
    }
    for (int64_t g = 0; g < ng; g++) {
        const __m128 d = _mm_load_ps(hd->d[g]), sum = _mm_load_ps(hd->sum[g]);
        __m512i lo[4], hi[4];
        if (C == 1) /* decode: this group's codes (and at g = 0 the parameters) QT_CT4_PF_ROWS rows on (decode_pf.h) */
            for (int r = 0; r < R; r++) {
                _mm_prefetch((const char *)(c[r] + (size_t)QT_CT4_PF_ROWS * ldw + 64 * g), _MM_HINT_T0);
                if (g == 0) _mm_prefetch((const char *)(p[r] + (size_t)QT_CT4_PF_ROWS * ldw), _MM_HINT_T0);
            }
        for (int r = 0; r < R; r++) {
            const __m512i b = _mm512_loadu_si512((const void *)(c[r] + 64 * g));
            lo[r] = _mm512_and_si512(b, low);
            hi[r] = _mm512_and_si512(_mm512_srli_epi16(b, 4), low);
            float s;
            memcpy(&s, p[r] + 5 * g, 4);
            const __m128 fv = _mm_mul_ps(_mm_set1_ps(s), d);
            _mm_store_ps(fg[r], fv);
            /* (8 + zp) * S exactly in f32: |8 + zp| <= 136, |S| <= 16256, the product < 2^24 */
            const __m128 zs = _mm_mul_ps(_mm_set1_ps((float)(8 + (int8_t)p[r][5 * g + 4])), sum);
            corr[r] = _mm_fmadd_ps(fv, zs, corr[r]);
        }
        /* through memory: each f is then one broadcast load (a load port) in its multiply-add, not a shuffle */
        __asm__ volatile("" : "+m"(fg));
        for (int k = 0; k < C; k++) {
            const int8_t *ag = q + (size_t)k * lda + 128 * g;
            const __m512i alo = _mm512_loadu_si512((const void *)ag), ahi = _mm512_loadu_si512((const void *)(ag + 64));
            for (int r = 0; r < R; r++) {
                __m512i l = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo[r], alo);
                l = _mm512_dpbusd_epi32(l, hi[r], ahi);
                acc[r][k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(l), _mm512_set1_ps(fg[r][k]), acc[r][k]);
            }
        }
    }
    for (int r = 0; r < R; r++) {
        float cr[4];
        _mm_storeu_ps(cr, corr[r]);
        for (int k = 0; k < C; k++) out[(size_t)k * (size_t)ldo + (size_t)r] = reduce16(acc[r][k]) - cr[k];
    }
}

/* Weight rows per block: their codes (32 x 4.4 KB at n = 8192) stay in L2 while every
 * 4 activation rows pass over them, and the group headers are gathered once per block. */
#define FAST_ROW_BLOCK 32

void qt__gemm_fast_ct4_w4g128_avx512(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc,
                                     int64_t n, float *out, int64_t ldo) {
    if (n / QT_CT4_Q8_GROUP > QT_CT4_Q8_MAX_GROUPS) { /* longer than any engine row (ct4.h) */
        for (int64_t k = 0; k < nc; k++)
            for (int64_t r = 0; r < nr; r++)
                out[k * ldo + r] = qt__dot_ct4_w4g128_fast_ref((const uint8_t *)w + (size_t)r * ldw,
                                                               (const uint8_t *)a + (size_t)k * lda, n);
        return;
    }
    qt__ct4_q8_heads hd;
    for (int64_t b0 = 0; b0 < nr; b0 += FAST_ROW_BLOCK) {
        const int64_t b1 = nr - b0 < FAST_ROW_BLOCK ? nr : b0 + FAST_ROW_BLOCK;
        for (int64_t c0 = 0; c0 < nc; c0 += 4) {
            const int C = nc - c0 < 4 ? (int)(nc - c0) : 4;
            const uint8_t *ac = (const uint8_t *)a + (size_t)c0 * lda;
            qt__ct4_q8_heads_load(ac, lda, C, n, &hd);
            for (int64_t r0 = b0; r0 < b1; r0 += 4) {
                const int R = b1 - r0 < 4 ? (int)(b1 - r0) : 4;
                const uint8_t *wr = (const uint8_t *)w + (size_t)r0 * ldw;
                float *o = out + (size_t)c0 * (size_t)ldo + (size_t)r0;
#define T(RR, CC) case RR * 4 + CC: fast_tile(wr, ldw, ac, lda, &hd, n, o, ldo, RR, CC); break
                switch (R * 4 + C) {
                    T(1, 1); T(1, 2); T(1, 3); T(1, 4); T(2, 1); T(2, 2); T(2, 3); T(2, 4);
                    T(3, 1); T(3, 2); T(3, 3); T(3, 4); T(4, 1); T(4, 2); T(4, 3); T(4, 4);
                }
#undef T
            }
        }
    }
}
