/* lib/quant/gemm_k16_avx512.c — the k16 kernels (gemm_k16.h) at the AVX-512
 * level (F + BW + VL + VNNI): 16 rows per 512-bit vector. Per super-block a
 * group costs one vcvtph2ps per f16 scale vector, 32 loads of nibble codes
 * (Q5_K: fifth bits added under mask registers; Q6_K: 48 loads of 6-bit
 * codes, the fourth code of each 4 from three top bit pairs) and, per activation row, 64 vpdpbusd against broadcast
 * 4-byte words into one int32 partial per sub-block, each multiplied by the
 * 16 rows' sub-block scales (vpmulld). Q6_K's code offset enters as each
 * partial's start value -32 * bsum; Q4_K/Q5_K's mins as vpdpwssd of int16
 * min pairs with the bsum pairs. Every int32 lane is the exact fast-K
 * integer, and the float steps are gemm_k.h's, so the bits are the scalar
 * reference's. Tiles: 16 rows x up to 4 activation rows, over column panels
 * of K16_PANEL rows that stay in L2. */
#include <immintrin.h>
#include <string.h>

#include "blocks.h"
#include "gemm_k16.h"

#define K16_INLINE static inline __attribute__((always_inline))
#define K16_PANEL 64
/* Tiles ahead that each super-block step prefetches (a hint: past the end it cannot fault);
 * 0: none. With the packed copies in 4 KiB pages two tiles ahead made Q4_K/Q6_K decode 15-40 %
 * faster (bench_gemm, loaded machine); in the engine's 2 MiB pages (core/bigalloc.h) the
 * hardware streams them and the prefetches only cost: bench_gemm --shape output --batch 1,
 * one thread, CPU s, PF 2 vs none: q6_K 13-19 ms vs 8-12, q4_K 9.7 vs 5-9 (2026-12-02). */
#define K16_PF 0

K16_INLINE __m512i bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32(v);
}

K16_INLINE __m512i scales32(int kind, const uint8_t *p) {
    const __m128i s = _mm_loadu_si128((const __m128i *)p);
    return kind == K16_Q6_K ? _mm512_cvtepi8_epi32(s) : _mm512_cvtepu8_epi32(s);
}

/* isum (and msum) of 16 rows x C activation rows for one super-block tile t. */
K16_INLINE void k16_ints(int kind, int C, const uint8_t *t, const block_q8_K *const y[4], __m512i isum[4],
                         __m512i msum[4]) {
    const __m512i low = _mm512_set1_epi8(0x0F);
    const uint8_t *codes = t + k16_codes_off(kind), *high = t + k16_high_off(kind), *scl = t + k16_scales_off(kind);
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) isum[c] = _mm512_setzero_si512();
    if (kind == K16_Q6_K) {
        const __m512i six = _mm512_set1_epi8(0x3F), two = _mm512_set1_epi8(0x03);
        for (int jj = 0; jj < 4; jj++) { /* sub-blocks jj, 4 + jj, 8 + jj, 12 + jj */
            __m512i s[4][4];
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
#pragma GCC unroll 4
                for (int p = 0; p < 4; p++) s[c][p] = _mm512_set1_epi32(-32 * y[c]->bsums[jj + 4 * p]);
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++) {
                const int m = 4 * jj + q;
                const __m512i w0 = _mm512_loadu_si512((const void *)(t + k16_q6_vec_at(m, 0)));
                const __m512i w1 = _mm512_loadu_si512((const void *)(t + k16_q6_vec_at(m, 1)));
                const __m512i w2 = _mm512_loadu_si512((const void *)(t + k16_q6_vec_at(m, 2)));
                __m512i v[4];
                v[0] = _mm512_and_si512(w0, six);
                v[1] = _mm512_and_si512(w1, six);
                v[2] = _mm512_and_si512(w2, six);
                /* p = 3: bits 6..7 of w0, w1, w2 to bits 0..1, 2..3, 4..5 (16-bit shifts bring the
                 * next byte's bits in above them; 0xE4 = (A & C) | (B & ~C) keeps each pair's own) */
                const __m512i lo4 = _mm512_ternarylogic_epi32(_mm512_srli_epi16(w0, 6), _mm512_srli_epi16(w1, 4), two, 0xE4);
                v[3] = _mm512_and_si512(_mm512_ternarylogic_epi32(lo4, _mm512_srli_epi16(w2, 2), low, 0xE4), six);
#pragma GCC unroll 4
                for (int c = 0; c < C; c++)
#pragma GCC unroll 4
                    for (int p = 0; p < 4; p++)
                        s[c][p] = _mm512_dpbusd_epi32(s[c][p], v[p], bcast4(y[c]->qs + 4 * (m + 16 * p)));
            }
#pragma GCC unroll 4
            for (int p = 0; p < 4; p++) {
                const __m512i sc = scales32(kind, scl + 16 * (jj + 4 * p));
#pragma GCC unroll 4
                for (int c = 0; c < C; c++) isum[c] = _mm512_add_epi32(isum[c], _mm512_mullo_epi32(s[c][p], sc));
            }
        }
        return;
    }
    const __m512i bit4 = _mm512_set1_epi8(0x10);
    for (int j = 0; j < 4; j++) { /* sub-blocks j (low nibbles) and 4 + j (high) */
        __m512i slo[4], shi[4];
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) slo[c] = shi[c] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int q = 0; q < 8; q++) {
            const int k = 8 * j + q;
            const __m512i w = _mm512_loadu_si512((const void *)(codes + 64 * k));
            __m512i lo = _mm512_and_si512(w, low), hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), low);
            if (kind == K16_Q5_K) {
                __mmask64 ml, mh;
                memcpy(&ml, high + 8 * k, 8);
                memcpy(&mh, high + 8 * (k + 32), 8);
                lo = _mm512_mask_add_epi8(lo, ml, lo, bit4);
                hi = _mm512_mask_add_epi8(hi, mh, hi, bit4);
            }
#pragma GCC unroll 4
            for (int c = 0; c < C; c++) {
                slo[c] = _mm512_dpbusd_epi32(slo[c], lo, bcast4(y[c]->qs + 4 * k));
                shi[c] = _mm512_dpbusd_epi32(shi[c], hi, bcast4(y[c]->qs + 128 + 4 * k));
            }
        }
        const __m512i sl = scales32(kind, scl + 16 * j), sh = scales32(kind, scl + 16 * (4 + j));
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            isum[c] = _mm512_add_epi32(isum[c], _mm512_add_epi32(_mm512_mullo_epi32(slo[c], sl), _mm512_mullo_epi32(shi[c], sh)));
    }
    const uint8_t *mins = t + k16_mins_off(kind);
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) msum[c] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int p = 0; p < 4; p++) {
        const __m512i mn = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(mins + 32 * p)));
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            const int16_t *bs = y[c]->bsums + 4 * p;
            const int32_t b0 = bs[0] + bs[1], b1 = bs[2] + bs[3]; /* sub-blocks 2p, 2p + 1: |b| <= 8192 */
            msum[c] = _mm512_dpwssd_epi32(msum[c], mn, _mm512_set1_epi32((int32_t)((uint32_t)(uint16_t)b0 | (uint32_t)b1 << 16)));
        }
    }
}

/* 16 rows of group g (mask m: the rows that exist) x C activation rows. */
K16_INLINE void k16_tile(int kind, int C, const uint8_t *g, int64_t nb, const uint8_t *a, size_t lda, float *out,
                         int64_t ldo, __mmask16 msk) {
    const size_t tile = k16_tile_bytes(kind);
    __m512 acc[4];
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *t = g + (size_t)b * tile;
        if (K16_PF)
            for (size_t off = 0; off < tile; off += 64) _mm_prefetch((const char *)t + K16_PF * tile + off, _MM_HINT_T0);
        const block_q8_K *y[4];
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) y[c] = (const block_q8_K *)(a + (size_t)c * lda) + b;
        __m512i isum[4], msum[4];
        k16_ints(kind, C, t, y, isum, msum);
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)t));
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            const __m512 dy = _mm512_set1_ps(y[c]->d);
            acc[c] = _mm512_fmadd_ps(_mm512_mul_ps(dy, dw), _mm512_cvtepi32_ps(isum[c]), acc[c]);
        }
        if (k16_has_min(kind)) {
            const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(t + k16_dmin_off(kind))));
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
                acc[c] = _mm512_fnmadd_ps(_mm512_mul_ps(_mm512_set1_ps(y[c]->d), dm), _mm512_cvtepi32_ps(msum[c]), acc[c]);
        }
    }
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) _mm512_mask_storeu_ps(out + c * ldo, msk, acc[c]);
}

K16_INLINE void k16_gemm(int kind, const void *wp, int64_t nr, const void *va, size_t lda, int64_t nc, int64_t n,
                         float *out, int64_t ldo) {
    const uint8_t *W = wp, *A = va;
    const int64_t nb = n / QK_K, ng = (nr + QT_X16_ROWS - 1) / QT_X16_ROWS;
    const size_t gbytes = (size_t)nb * k16_tile_bytes(kind);
    for (int64_t c0 = 0; c0 < nc; c0 += K16_PANEL) {
        const int64_t c1 = c0 + K16_PANEL < nc ? c0 + K16_PANEL : nc;
        for (int64_t gi = 0; gi < ng; gi++) {
            const int64_t rows = nr - gi * QT_X16_ROWS < QT_X16_ROWS ? nr - gi * QT_X16_ROWS : QT_X16_ROWS;
            const __mmask16 m = (__mmask16)((1u << rows) - 1u);
            const uint8_t *g = W + (size_t)gi * gbytes;
            float *o = out + gi * QT_X16_ROWS;
            int64_t c = c0;
            for (; c + 4 <= c1; c += 4) k16_tile(kind, 4, g, nb, A + (size_t)c * lda, lda, o + c * ldo, ldo, m);
            switch (c1 - c) {
            case 3: k16_tile(kind, 3, g, nb, A + (size_t)c * lda, lda, o + c * ldo, ldo, m); break;
            case 2: k16_tile(kind, 2, g, nb, A + (size_t)c * lda, lda, o + c * ldo, ldo, m); break;
            case 1: k16_tile(kind, 1, g, nb, A + (size_t)c * lda, lda, o + c * ldo, ldo, m); break;
            default: break;
            }
        }
    }
}

#define K16_ENTRY(NAME, KIND)                                                                                 \
    void qt__gemm_k16_##NAME##_avx512(const void *wp, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n, \
                                      float *out, int64_t ldo) {                                              \
        k16_gemm(KIND, wp, nr, a, lda, nc, n, out, ldo);                                                      \
    }
K16_ENTRY(q4_K, K16_Q4_K)
K16_ENTRY(q5_K, K16_Q5_K)
K16_ENTRY(q6_K, K16_Q6_K)
