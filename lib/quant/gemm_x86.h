/* lib/quant/gemm_x86.h — the bodies of the blocked gemm kernels (gemm.h),
 * shared by gemm_avx2.c (QT_GEMM_VNNI 0: maddubs + madd, 16 registers) and
 * gemm_avx512.c (QT_GEMM_VNNI 1: vpdpbusd / vpdpwssd on 256-bit vectors, 32
 * registers). Include only from those files, after defining QT_GEMM_VNNI and
 * the tile sizes QT_GEMM_R8/C8 (q8_0-activation formats) and QT_GEMM_RK/CK
 * (q8_K-activation formats): R weight rows x C activation rows per tile.
 *
 * Every tile keeps one accumulator per output element and feeds it exactly
 * the float operations of the type's vec_dot (dot_avx2.c, dot_k_avx2.c, and
 * their scalar references in dot.c): per block, fmadd(d_x * d_y, float(int32
 * lanes), acc) into 8 lanes, then dot.c's hsum8. The int32 lanes (lane l =
 * elements 4l..4l+3 of each 32-element group) are exact integers, so how they
 * are formed (sign trick, unsigned codes with an offset, VNNI) cannot change
 * a bit.
 */
#ifndef QT_QUANT_GEMM_X86_H
#define QT_QUANT_GEMM_X86_H

#include <immintrin.h>

#include "blocks.h"
#include "dot_x86.h"
#include "gemm.h"
#include "simd_x86.h"

#define QT_GEMM_INLINE static inline __attribute__((always_inline))

/* Activation rows per column panel: 64 q8_0 rows of 2048 elements are 139 KB,
 * so a panel stays in L2 while a thread's weight rows stream past it. */
#define QT_GEMM_PANEL 64

enum { GEMM_Q8_0, GEMM_Q4_0 };

/* ---- formats with q8_0 activations: one float step per 32-element block ---- */

/* One prepared weight block: AVX2 keeps |q| and q (for the sign trick);
 * VNNI keeps unsigned codes (q + 8 for q4_0, q + 128 for q8_0) whose offset
 * the activation side subtracts. */
typedef struct { __m256i u, s; } gemm_wq;

QT_GEMM_INLINE gemm_wq gemm_prep_w(int kind, const uint8_t *blk) {
    gemm_wq p;
    if (kind == GEMM_Q4_0) {
        const __m128i q = _mm_loadu_si128((const __m128i *)(blk + 2)), low = _mm_set1_epi8(0x0F);
        const __m256i nib = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), low), _mm_and_si128(q, low));
#if QT_GEMM_VNNI
        p.u = nib;
        p.s = p.u;
#else
        p.s = _mm256_sub_epi8(nib, _mm256_set1_epi8(8));
        p.u = _mm256_sign_epi8(p.s, p.s);
#endif
    } else {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(blk + 2));
#if QT_GEMM_VNNI
        p.u = _mm256_xor_si256(q, _mm256_set1_epi8((char)0x80));
        p.s = p.u;
#else
        p.s = q;
        p.u = _mm256_sign_epi8(q, q);
#endif
    }
    return p;
}

/* One activation block: its bytes and, for VNNI, minus the weight offset
 * times each lane's sum of y (so that dpbusd(off, u, y) = sum (u - offset) y). */
typedef struct { __m256i y, off; } gemm_yq;

QT_GEMM_INLINE gemm_yq gemm_prep_y(int kind, const block_q8_0 *blk) {
    gemm_yq p;
    p.y = _mm256_loadu_si256((const __m256i *)blk->qs);
#if QT_GEMM_VNNI
    const __m256i k = _mm256_set1_epi8((char)(kind == GEMM_Q4_0 ? 8 : 0x80));
    p.off = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_dpbusd_epi32(_mm256_setzero_si256(), k, p.y));
#else
    (void)kind;
    p.off = _mm256_setzero_si256();
#endif
    return p;
}

QT_GEMM_INLINE __m256i gemm_lanes8(gemm_wq w, gemm_yq y) {
#if QT_GEMM_VNNI
    (void)w.s;
    return _mm256_dpbusd_epi32(y.off, w.u, y.y);
#else
    const __m256i p16 = _mm256_maddubs_epi16(w.u, _mm256_sign_epi8(y.y, w.s));
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
#endif
}

/* R x C outputs: weight rows w + r*ldw, activation rows a + c*lda, nb blocks. */
QT_GEMM_INLINE void gemm_tile8(int kind, int R, int C, const uint8_t *w, size_t ldw, const uint8_t *a, size_t lda,
                               int64_t nb, float *out, int64_t ldo) {
    const size_t wb = kind == GEMM_Q4_0 ? sizeof(block_q4_0) : sizeof(block_q8_0);
    __m256 acc[4][4];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) acc[r][c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        gemm_wq wq[4];
        __m256 dx[4];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const uint8_t *blk = w + r * ldw + (size_t)b * wb;
            wq[r] = gemm_prep_w(kind, blk);
            dx[r] = _mm256_set1_ps(_cvtsh_ss(*(const qt_half *)blk));
        }
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            const block_q8_0 *yb = (const block_q8_0 *)(a + c * lda) + b;
            const gemm_yq yq = gemm_prep_y(kind, yb);
            const __m256 dy = _mm256_set1_ps(_cvtsh_ss(yb->d));
#pragma GCC unroll 4
            for (int r = 0; r < R; r++)
                acc[r][c] = _mm256_fmadd_ps(_mm256_mul_ps(dx[r], dy), _mm256_cvtepi32_ps(gemm_lanes8(wq[r], yq)), acc[r][c]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) out[c * ldo + r] = qt__hsum8_avx(acc[r][c]);
}

/* The panel and tile loops around a tile body TILE(R, C, w, a, out). */
#define QT_GEMM_LOOPS(TR, TC, TILE)                                                                 \
    do {                                                                                            \
        for (int64_t c0 = 0; c0 < nc; c0 += QT_GEMM_PANEL) {                                        \
            const int64_t c1 = c0 + QT_GEMM_PANEL < nc ? c0 + QT_GEMM_PANEL : nc;                   \
            int64_t r = 0;                                                                          \
            for (; r + (TR) <= nr; r += (TR)) {                                                     \
                int64_t c = c0;                                                                     \
                for (; c + (TC) <= c1; c += (TC))                                                   \
                    TILE((TR), (TC), W + r * ldw, A + c * lda, out + c * ldo + r);                  \
                for (; c < c1; c++) TILE((TR), 1, W + r * ldw, A + c * lda, out + c * ldo + r);     \
            }                                                                                       \
            for (; r < nr; r++) {                                                                   \
                int64_t c = c0;                                                                     \
                for (; c + (TC) <= c1; c += (TC)) TILE(1, (TC), W + r * ldw, A + c * lda, out + c * ldo + r); \
                for (; c < c1; c++) TILE(1, 1, W + r * ldw, A + c * lda, out + c * ldo + r);        \
            }                                                                                       \
        }                                                                                           \
    } while (0)

QT_GEMM_INLINE void gemm_q8_family(int kind, const void *vw, size_t ldw, int64_t nr, const void *va, size_t lda,
                                   int64_t nc, int64_t n, float *out, int64_t ldo) {
    const uint8_t *W = vw, *A = va;
    const int64_t nb = n / 32;
#define TILE8(R_, C_, w_, a_, o_) gemm_tile8(kind, (R_), (C_), (w_), ldw, (a_), lda, nb, (o_), ldo)
    QT_GEMM_LOOPS(QT_GEMM_R8, QT_GEMM_C8, TILE8);
#undef TILE8
}

/* ---- K-quant super-blocks with q8_K activations ---------------------------- */

/* sum += the int32 lanes of scale16 * maddubs(codes, y) (dot_k_avx2.c scaled_u8) */
QT_GEMM_INLINE __m256i gemm_scaled_u8(__m256i sum, __m256i codes, const int8_t *q8, __m256i scale16) {
    const __m256i p16 = _mm256_maddubs_epi16(codes, _mm256_loadu_si256((const __m256i *)q8));
#if QT_GEMM_VNNI
    return _mm256_dpwssd_epi32(sum, p16, scale16);
#else
    return _mm256_add_epi32(sum, _mm256_madd_epi16(scale16, p16));
#endif
}

QT_GEMM_INLINE void gemm_tile_q4_K(int R, int C, const uint8_t *w, size_t ldw, const uint8_t *a, size_t lda,
                                   int64_t nb, float *out, int64_t ldo) {
    __m256 acc[4][4];
    __m128 accm[4][4];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) acc[r][c] = _mm256_setzero_ps(), accm[r][c] = _mm_setzero_ps();
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int64_t b = 0; b < nb; b++) {
        const block_q4_K *x[4];
        const block_q8_K *y[4];
        uint8_t sc[4][8], m[4][8];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            x[r] = (const block_q4_K *)(w + r * ldw) + b;
            qt__k4_scales(x[r]->scales, sc[r], m[r]);
        }
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) y[c] = (const block_q8_K *)(a + c * lda) + b;
        __m256i sum[4][4];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
#pragma GCC unroll 4
            for (int c = 0; c < C; c++) sum[r][c] = _mm256_setzero_si256();
        for (int k = 0; k < 4; k++) {
            __m256i lo[4], hi[4], slo[4], shi[4];
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                const __m256i bytes = _mm256_loadu_si256((const __m256i *)(x[r]->qs + 32 * k));
                lo[r] = _mm256_and_si256(bytes, low4);
                hi[r] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low4);
                slo[r] = _mm256_set1_epi16(sc[r][2 * k]);
                shi[r] = _mm256_set1_epi16(sc[r][2 * k + 1]);
            }
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
#pragma GCC unroll 4
                for (int r = 0; r < R; r++) {
                    sum[r][c] = gemm_scaled_u8(sum[r][c], lo[r], y[c]->qs + 64 * k, slo[r]);
                    sum[r][c] = gemm_scaled_u8(sum[r][c], hi[r], y[c]->qs + 64 * k + 32, shi[r]);
                }
        }
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            const __m128i s32 = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)y[c]->bsums),
                                               _mm_loadu_si128((const __m128i *)(y[c]->bsums + 8)));
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                const float d = y[c]->d * _cvtsh_ss(x[r]->d), dmin = -y[c]->d * _cvtsh_ss(x[r]->dmin);
                const __m128i mins = _mm_madd_epi16(_mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)m[r])), s32);
                accm[r][c] = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(mins), accm[r][c]);
                acc[r][c] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sum[r][c]), acc[r][c]);
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            __m128 am = accm[r][c];
            am = _mm_add_ps(am, _mm_movehl_ps(am, am));
            am = _mm_add_ss(am, _mm_movehdup_ps(am));
            out[c * ldo + r] = qt__hsum8_avx(acc[r][c]) + _mm_cvtss_f32(am);
        }
}

/* Code vector k (0..3) of one 128-element half of a Q6_K block (qt__q6_K_codes_avx2's codes[k]) */
QT_GEMM_INLINE __m256i gemm_q6_K_code(const uint8_t *ql, const uint8_t *qh, int k) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(0x03);
    __m256i lo = _mm256_loadu_si256((const __m256i *)(ql + 32 * (k & 1)));
    if (k >= 2) lo = _mm256_srli_epi16(lo, 4);
    lo = _mm256_and_si256(lo, low4);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)qh), 2 * k), low2);
    return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
}

QT_GEMM_INLINE void gemm_tile_q6_K(int R, int C, const uint8_t *w, size_t ldw, const uint8_t *a, size_t lda,
                                   int64_t nb, float *out, int64_t ldo) {
    __m256 acc[4][4];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) acc[r][c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const block_q6_K *x[4];
        const block_q8_K *y[4];
        __m128i sc[4];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            x[r] = (const block_q6_K *)(w + r * ldw) + b;
            sc[r] = _mm_loadu_si128((const __m128i *)x[r]->scales);
        }
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) y[c] = (const block_q8_K *)(a + c * lda) + b;
        __m256i sum[4][4];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
#pragma GCC unroll 4
            for (int c = 0; c < C; c++) sum[r][c] = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 4; k++) {
                __m256i codes[4], s16[4];
#pragma GCC unroll 4
                for (int r = 0; r < R; r++) {
                    codes[r] = gemm_q6_K_code(x[r]->ql + 64 * h, x[r]->qh + 32 * h, k);
                    s16[r] = qt__k_pair_scales(sc[r], 8 * h + 2 * k);
                }
#pragma GCC unroll 4
                for (int c = 0; c < C; c++)
#pragma GCC unroll 4
                    for (int r = 0; r < R; r++)
                        sum[r][c] = gemm_scaled_u8(sum[r][c], codes[r], y[c]->qs + 128 * h + 32 * k, s16[r]);
            }
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            const __m256i bsums = _mm256_loadu_si256((const __m256i *)y[c]->bsums);
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                /* the -32 offset: 32 * (scale * bsum) */
                const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(_mm256_cvtepi8_epi16(sc[r]), bsums), 5);
                const __m256 d = _mm256_set1_ps(y[c]->d * _cvtsh_ss(x[r]->d));
                acc[r][c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(sum[r][c], offset)), acc[r][c]);
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) out[c * ldo + r] = qt__hsum8_avx(acc[r][c]);
}

#define QT_GEMM_K_BODY(TILEFN)                                                                      \
    const uint8_t *W = vw, *A = va;                                                                 \
    const int64_t nb = n / QK_K;                                                                    \
    QT_GEMM_LOOPS(QT_GEMM_RK, QT_GEMM_CK, TILEFN##_AT)

#define gemm_tile_q4_K_AT(R_, C_, w_, a_, o_) gemm_tile_q4_K((R_), (C_), (w_), ldw, (a_), lda, nb, (o_), ldo)
#define gemm_tile_q6_K_AT(R_, C_, w_, a_, o_) gemm_tile_q6_K((R_), (C_), (w_), ldw, (a_), lda, nb, (o_), ldo)

/* The four entry points of one ISA file: SUFFIX avx2 or avx512. */
#define QT_GEMM_DEFINE(SUFFIX)                                                                      \
    void qt__gemm_q8_0_##SUFFIX(const void *vw, size_t ldw, int64_t nr, const void *va, size_t lda, int64_t nc, \
                                int64_t n, float *out, int64_t ldo) {                               \
        gemm_q8_family(GEMM_Q8_0, vw, ldw, nr, va, lda, nc, n, out, ldo);                           \
    }                                                                                               \
    void qt__gemm_q4_0_##SUFFIX(const void *vw, size_t ldw, int64_t nr, const void *va, size_t lda, int64_t nc, \
                                int64_t n, float *out, int64_t ldo) {                               \
        gemm_q8_family(GEMM_Q4_0, vw, ldw, nr, va, lda, nc, n, out, ldo);                           \
    }                                                                                               \
    void qt__gemm_q4_K_##SUFFIX(const void *vw, size_t ldw, int64_t nr, const void *va, size_t lda, int64_t nc, \
                                int64_t n, float *out, int64_t ldo) {                               \
        QT_GEMM_K_BODY(gemm_tile_q4_K);                                                             \
    }                                                                                               \
    void qt__gemm_q6_K_##SUFFIX(const void *vw, size_t ldw, int64_t nr, const void *va, size_t lda, int64_t nc, \
                                int64_t n, float *out, int64_t ldo) {                               \
        QT_GEMM_K_BODY(gemm_tile_q6_K);                                                             \
    }

#endif
