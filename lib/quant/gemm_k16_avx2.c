/* lib/quant/gemm_k16_avx2.c — the k16 kernels (gemm_k16.h) of Q4_K and Q5_K
 * for AVX2 + FMA + F16C: a group's 16 rows as two halves of 8 (one 256-bit
 * int32 / float vector each). Per 4-element group and activation row one
 * maddubs of the unsigned codes with the broadcast int8 word; the int16 pair
 * sums are added while they provably fit (Q4_K: eight of at most 2 * 15 *
 * 128 = 3840; Q5_K: four of 7936) and then widened by pmaddwd against the 8
 * rows' sub-block scales (each scale in both int16 halves of its lane), which
 * folds the scale multiply into the widening; the mins are pmaddwd of int16
 * min pairs with bsum pairs. Exact integers, gemm_k.h's float steps: the
 * scalar reference's bits, as the AVX-512 kernels'. Tiles: 8 rows x up to 2
 * activation rows.
 * No Q6_K kernel at this level: one written the same way (two maddubs per
 * int16 sum, the offset as 32 * sum(scale * bsum)) measured 0.55-0.95x the
 * gemm_fast AVX2 kernel in bench_gemm (16 registers do not hold its four
 * sub-block sums, scales and unpacked codes), so AVX2 Q6_K stays on gemm_fast
 * (commit history: "k16: AVX2 kernels"). */
#include <immintrin.h>
#include <string.h>

#include "blocks.h"
#include "gemm_k16.h"

#define K16_INLINE static inline __attribute__((always_inline))
#define K16_PANEL 64
#define K16_PF 2 /* tiles ahead to prefetch, as gemm_k16_avx512.c */

K16_INLINE __m256i bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32(v);
}

/* 0x10 in byte e where bit e of the 32-bit mask is set (Q5_K's fifth bits). */
K16_INLINE __m256i bits_to_16(const uint8_t *p) {
    uint32_t bits;
    memcpy(&bits, p, 4);
    const __m256i sel = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3,
                                         3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i spread = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), sel), bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(spread, bit), _mm256_set1_epi8(0x10));
}

/* 8 rows' sub-block scales (bytes at p) as int16 pairs (s, s) per int32 lane. */
K16_INLINE __m256i scale_pairs(int kind, const uint8_t *p) {
    const __m128i b = _mm_loadl_epi64((const __m128i *)p);
    const __m256i s = kind == K16_Q6_K ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
    return _mm256_or_si256(_mm256_and_si256(s, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(s, 16));
}

K16_INLINE __m256i pair32(int32_t lo, int32_t hi) {
    return _mm256_set1_epi32((int32_t)((uint32_t)(uint16_t)lo | (uint32_t)hi << 16));
}

/* isum (and msum) of rows 8h..8h+7 x C activation rows for one super-block tile t. */
K16_INLINE void k16_ints(int kind, int C, const uint8_t *t, int h, const block_q8_K *const y[2], __m256i isum[2],
                         __m256i msum[2]) {
    const __m256i low = _mm256_set1_epi8(0x0F), zero = _mm256_setzero_si256();
    const uint8_t *scl = t + k16_scales_off(kind) + 8 * h;
#pragma GCC unroll 2
    for (int c = 0; c < C; c++) isum[c] = msum[c] = zero;
    const int per = kind == K16_Q4_K ? 8 : 4; /* maddubs results an int16 sum holds exactly */
    for (int j = 0; j < 4; j++) { /* sub-blocks j (low nibbles) and 4 + j (high) */
        const __m256i sl = scale_pairs(kind, scl + 16 * j), sh = scale_pairs(kind, scl + 16 * (4 + j));
#pragma GCC unroll 2
        for (int q0 = 0; q0 < 8; q0 += per) {
            __m256i plo[2], phi[2];
#pragma GCC unroll 2
            for (int c = 0; c < C; c++) plo[c] = phi[c] = zero;
#pragma GCC unroll 8
            for (int q = q0; q < q0 + per; q++) {
                const int k = 8 * j + q;
                const __m256i w = _mm256_loadu_si256((const __m256i *)(t + k16_codes_at(kind, k) + 32 * h));
                __m256i lo = _mm256_and_si256(w, low), hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), low);
                if (kind == K16_Q5_K) {
                    const uint8_t *hm = t + k16_high_off(kind);
                    lo = _mm256_or_si256(lo, bits_to_16(hm + 8 * k + 4 * h));
                    hi = _mm256_or_si256(hi, bits_to_16(hm + 8 * (k + 32) + 4 * h));
                }
#pragma GCC unroll 2
                for (int c = 0; c < C; c++) {
                    plo[c] = _mm256_add_epi16(plo[c], _mm256_maddubs_epi16(lo, bcast4(y[c]->qs + 4 * k)));
                    phi[c] = _mm256_add_epi16(phi[c], _mm256_maddubs_epi16(hi, bcast4(y[c]->qs + 128 + 4 * k)));
                }
            }
#pragma GCC unroll 2
            for (int c = 0; c < C; c++)
                isum[c] = _mm256_add_epi32(isum[c], _mm256_add_epi32(_mm256_madd_epi16(plo[c], sl), _mm256_madd_epi16(phi[c], sh)));
        }
    }
    const uint8_t *mins = t + k16_mins_off(kind) + 16 * h;
#pragma GCC unroll 4
    for (int p = 0; p < 4; p++) {
        const __m256i mn = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(mins + 32 * p)));
#pragma GCC unroll 2
        for (int c = 0; c < C; c++) {
            const int16_t *bs = y[c]->bsums + 4 * p;
            msum[c] = _mm256_add_epi32(msum[c], _mm256_madd_epi16(mn, pair32(bs[0] + bs[1], bs[2] + bs[3])));
        }
    }
}

/* Rows 8h..8h+7 of group g x C activation rows; `rows` of them exist. */
K16_INLINE void k16_half(int kind, int C, const uint8_t *g, int h, int64_t nb, const uint8_t *a, size_t lda, float *out,
                         int64_t ldo, int rows) {
    const size_t tile = k16_tile_bytes(kind);
    __m256 acc[2];
#pragma GCC unroll 2
    for (int c = 0; c < C; c++) acc[c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *t = g + (size_t)b * tile;
        for (size_t off = 32 * (size_t)h; off < tile; off += 128)
            _mm_prefetch((const char *)t + K16_PF * tile + off, _MM_HINT_T0);
        const block_q8_K *y[2];
#pragma GCC unroll 2
        for (int c = 0; c < C; c++) y[c] = (const block_q8_K *)(a + (size_t)c * lda) + b;
        __m256i isum[2], msum[2];
        k16_ints(kind, C, t, h, y, isum, msum);
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(t + 16 * h)));
#pragma GCC unroll 2
        for (int c = 0; c < C; c++)
            acc[c] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(y[c]->d), dw), _mm256_cvtepi32_ps(isum[c]), acc[c]);
        if (k16_has_min(kind)) {
            const __m256 dm = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(t + k16_dmin_off(kind) + 16 * h)));
#pragma GCC unroll 2
            for (int c = 0; c < C; c++)
                acc[c] = _mm256_fnmadd_ps(_mm256_mul_ps(_mm256_set1_ps(y[c]->d), dm), _mm256_cvtepi32_ps(msum[c]), acc[c]);
        }
    }
#pragma GCC unroll 2
    for (int c = 0; c < C; c++) {
        if (rows == 8) {
            _mm256_storeu_ps(out + c * ldo, acc[c]);
        } else {
            float v[8];
            _mm256_storeu_ps(v, acc[c]);
            memcpy(out + c * ldo, v, (size_t)rows * sizeof *v);
        }
    }
}

K16_INLINE void k16_gemm(int kind, const void *wp, int64_t nr, const void *va, size_t lda, int64_t nc, int64_t n,
                         float *out, int64_t ldo) {
    const uint8_t *W = wp, *A = va;
    const int64_t nb = n / QK_K, ng = (nr + QT_X16_ROWS - 1) / QT_X16_ROWS;
    const size_t gbytes = (size_t)nb * k16_tile_bytes(kind);
    for (int64_t c0 = 0; c0 < nc; c0 += K16_PANEL) {
        const int64_t c1 = c0 + K16_PANEL < nc ? c0 + K16_PANEL : nc;
        for (int64_t gi = 0; gi < ng; gi++)
            for (int h = 0; h < 2; h++) {
                const int64_t left = nr - gi * QT_X16_ROWS - 8 * h;
                if (left <= 0) break;
                const int rows = left < 8 ? (int)left : 8;
                const uint8_t *g = W + (size_t)gi * gbytes;
                float *o = out + gi * QT_X16_ROWS + 8 * h;
                int64_t c = c0;
                for (; c + 2 <= c1; c += 2) k16_half(kind, 2, g, h, nb, A + (size_t)c * lda, lda, o + c * ldo, ldo, rows);
                for (; c < c1; c++) k16_half(kind, 1, g, h, nb, A + (size_t)c * lda, lda, o + c * ldo, ldo, rows);
            }
    }
}

#define K16_ENTRY(NAME, KIND)                                                                                 \
    void qt__gemm_k16_##NAME##_avx2(const void *wp, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n, \
                                    float *out, int64_t ldo) {                                                \
        k16_gemm(KIND, wp, nr, a, lda, nc, n, out, ldo);                                                      \
    }
K16_ENTRY(q4_K, K16_Q4_K)
K16_ENTRY(q5_K, K16_Q5_K)
