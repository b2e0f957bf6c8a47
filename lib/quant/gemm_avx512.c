/* lib/quant/gemm_avx512.c — the blocked gemm kernels (gemm.h) at the AVX-512
 * level (F + BW + VL + VNNI): 256-bit vpdpbusd / vpdpwssd for the int8
 * products and the 32 vector registers EVEX encoding gives, so tiles of
 * 4 weight rows x 4 activation rows (q8_0 activations) and 2 x 4 (q8_K).
 * 256-bit vectors keep the lane layout of the AVX2 vec_dot kernels, which is
 * what keeps the bits; the integer sums are exact either way. Bodies in
 * gemm_x86.h. */
#include <string.h>

#define QT_GEMM_VNNI 1
#define QT_GEMM_R8 4
#define QT_GEMM_C8 4
#define QT_GEMM_RK 2
#define QT_GEMM_CK 4
#include "gemm_x86.h"

QT_GEMM_DEFINE(avx512)

/* ---- --numerics fast: 512-bit tiles, a different float order ---------------
 *
 * Two consecutive blocks per 512-bit vector, so each product costs half the
 * conversions, multiplies and fused adds. Lanes 0-7 of an accumulator take
 * the even blocks, lanes 8-15 the odd ones; at the end the halves are added
 * lane by lane, a last odd block is fused into that sum, and dot.c's hsum8
 * reduces it. Not vec_dot's order: the engine uses these only with
 * --numerics fast. Scalar reference: qt__dot_fast_pairs_ref (gemm.c). */

static inline __m512i pair_i(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

static inline __m512 pair_f(float lo, float hi) {
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_set1_ps(lo)), _mm256_castps_pd(_mm256_set1_ps(hi)), 1));
}

QT_GEMM_INLINE void gemm_tile8_fast(int kind, int R, int C, const uint8_t *w, size_t ldw, const uint8_t *a, size_t lda,
                                    int64_t nb, float *out, int64_t ldo) {
    const size_t wb = kind == GEMM_Q4_0 ? sizeof(block_q4_0) : sizeof(block_q8_0);
    const __m512i k = _mm512_set1_epi8((char)(kind == GEMM_Q4_0 ? 8 : 0x80));
    __m512 acc[4][4];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) acc[r][c] = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 1 < nb; b += 2) {
        __m512i u[4];
        __m512 dx[4];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const uint8_t *b0 = w + r * ldw + (size_t)b * wb, *b1 = b0 + wb;
            u[r] = pair_i(gemm_prep_w(kind, b0).u, gemm_prep_w(kind, b1).u);
            dx[r] = pair_f(_cvtsh_ss(*(const qt_half *)b0), _cvtsh_ss(*(const qt_half *)b1));
        }
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            const block_q8_0 *y = (const block_q8_0 *)(a + c * lda) + b;
            const __m512i yv = pair_i(_mm256_loadu_si256((const __m256i *)y[0].qs), _mm256_loadu_si256((const __m256i *)y[1].qs));
            const __m512i off = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), k, yv));
            const __m512 dy = pair_f(_cvtsh_ss(y[0].d), _cvtsh_ss(y[1].d));
#pragma GCC unroll 4
            for (int r = 0; r < R; r++)
                acc[r][c] = _mm512_fmadd_ps(_mm512_mul_ps(dx[r], dy), _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(off, u[r], yv)),
                                            acc[r][c]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            const __m512 v = acc[r][c];
            __m256 s = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
            if (b < nb) {
                const uint8_t *bx = w + r * ldw + (size_t)b * wb;
                const block_q8_0 *y = (const block_q8_0 *)(a + c * lda) + b;
                const __m256 d = _mm256_set1_ps(_cvtsh_ss(*(const qt_half *)bx) * _cvtsh_ss(y->d));
                s = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(gemm_lanes8(gemm_prep_w(kind, bx), gemm_prep_y(kind, y))), s);
            }
            out[c * ldo + r] = qt__hsum8_avx(s);
        }
}

QT_GEMM_INLINE void gemm_q8_family_fast(int kind, const void *vw, size_t ldw, int64_t nr, const void *va, size_t lda,
                                        int64_t nc, int64_t n, float *out, int64_t ldo) {
    const uint8_t *W = vw, *A = va;
    const int64_t nb = n / 32;
#define TILE8F(R_, C_, w_, a_, o_) gemm_tile8_fast(kind, (R_), (C_), (w_), ldw, (a_), lda, nb, (o_), ldo)
    QT_GEMM_LOOPS(4, 4, TILE8F);
#undef TILE8F
}

void qt__gemm_fast_q8_0_avx512(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                               float *out, int64_t ldo) {
    gemm_q8_family_fast(GEMM_Q8_0, w, ldw, nr, a, lda, nc, n, out, ldo);
}

void qt__gemm_fast_q4_0_avx512(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                               float *out, int64_t ldo) {
    gemm_q8_family_fast(GEMM_Q4_0, w, ldw, nr, a, lda, nc, n, out, ldo);
}
