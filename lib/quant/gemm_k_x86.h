/* lib/quant/gemm_k_x86.h — the bodies of the --numerics fast K-quant kernels
 * (gemm_k.h), shared by gemm_k_avx2.c (QT_GEMM_K_VNNI 0: maddubs + madd) and
 * gemm_k_avx512.c (QT_GEMM_K_VNNI 1: maddubs + vpdpwssd, 32 registers).
 * Include only from those files, after defining QT_GEMM_K_VNNI and
 * QT_GEMM_K_C (activation rows per tile; a tile is 4 weight rows x C).
 *
 * Per super-block and tile, each weight row's scales are unpacked once into
 * two int16 vectors (the group scales, and the per-16 mins or offset scales
 * that meet Q8_K's bsums), each 32-element group of codes is formed once and
 * meets the C activation rows' bytes in maddubs, and the 4 x C int32 lane
 * vectors are reduced 4 rows at a time (three hadds) into the fast K order's
 * exact super-block integers. The float steps then run on 4 rows per vector:
 * one multiply for the scales, one or two FMAs per super-block.
 */
#ifndef QT_QUANT_GEMM_K_X86_H
#define QT_QUANT_GEMM_K_X86_H

#include <immintrin.h>

#include "blocks.h"
#include "dot_x86.h"
#include "gemm_k.h"

#define KF_INLINE static inline __attribute__((always_inline))

/* Activation rows per column panel (as gemm_x86.h: a panel stays in L2). */
#define KF_PANEL 64

enum { KF_Q2, KF_Q3, KF_Q4, KF_Q5, KF_Q6, KF_IQ4X };

KF_INLINE size_t kf_block_bytes(int kind) {
    switch (kind) {
    case KF_Q2: return sizeof(block_q2_K);
    case KF_Q3: return sizeof(block_q3_K);
    case KF_Q4: return sizeof(block_q4_K);
    case KF_Q5: return sizeof(block_q5_K);
    case KF_IQ4X: return sizeof(block_iq4_xs);
    default: return sizeof(block_q6_K);
    }
}

/* Byte offsets of d and dmin (dmin: -1 where the format has no mins). */
KF_INLINE size_t kf_d_offset(int kind) {
    switch (kind) {
    case KF_Q2: return offsetof(block_q2_K, d);
    case KF_Q3: return offsetof(block_q3_K, d);
    case KF_Q4: return offsetof(block_q4_K, d);
    case KF_Q5: return offsetof(block_q5_K, d);
    case KF_IQ4X: return offsetof(block_iq4_xs, d);
    default: return offsetof(block_q6_K, d);
    }
}
KF_INLINE int kf_has_min(int kind) { return kind == KF_Q2 || kind == KF_Q4 || kind == KF_Q5; }
KF_INLINE size_t kf_dmin_offset(int kind) {
    return kind == KF_Q2 ? offsetof(block_q2_K, dmin) : kind == KF_Q4 ? offsetof(block_q4_K, dmin) : offsetof(block_q5_K, dmin);
}
/* IQ4_XS: signed code-book values (sign trick in maddubs) and no bsums term */
KF_INLINE int kf_signed(int kind) { return kind == KF_IQ4X; }
/* log2 of the code offset that the bsums take out (Q3_K: 4, Q6_K: 32) */
KF_INLINE int kf_offset_shift(int kind) { return kind == KF_Q3 ? 2 : 5; }

/* One weight super-block's scales: sc = int16 lanes 0-7 the scales of the
 * first 16 elements of groups 0..7, lanes 8-15 of the second 16 (a per-group
 * broadcast is then one pshufb); msc = 16 int16 factors of Q8_K's 16 bsums
 * (the mins, or the scales of the code offset). */
typedef struct { __m256i sc, msc; } kf_prep;

KF_INLINE kf_prep kf_prep_w(int kind, const uint8_t *blk) {
    const __m128i evens_odds = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m128i low4 = _mm_set1_epi8(0x0F);
    kf_prep p;
    if (kind == KF_Q4 || kind == KF_Q5) {
        uint8_t sc[8], m[8];
        qt__k4_scales(((const block_q4_K *)blk)->scales, sc, m); /* same place in block_q5_K */
        p.sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)sc)));
        const __m128i m8 = _mm_loadl_epi64((const __m128i *)m);
        p.msc = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
    } else if (kind == KF_IQ4X) {
        const block_iq4_xs *x = (const block_iq4_xs *)blk;
        int16_t ls[8];
        for (int g = 0; g < 8; g++)
            ls[g] = (int16_t)((((x->scales_l[g / 2] >> (4 * (g % 2))) & 0x0F) | ((x->scales_h >> (2 * g)) & 3) << 4) - 32);
        p.sc = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)ls));
        p.msc = _mm256_setzero_si256();
    } else if (kind == KF_Q2) {
        const __m128i s = _mm_loadu_si128((const __m128i *)((const block_q2_K *)blk)->scales);
        p.sc = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(_mm_and_si128(s, low4), evens_odds));
        p.msc = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), low4));
    } else {
        const __m128i s = kind == KF_Q3 ? qt__q3_K_scales(((const block_q3_K *)blk)->scales)
                                        : _mm_loadu_si128((const __m128i *)((const block_q6_K *)blk)->scales);
        p.sc = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(s, evens_odds));
        p.msc = _mm256_cvtepi8_epi16(s);
    }
    return p;
}

/* The 32 codes of group g (elements 32g..32g+31) of one super-block: unsigned,
 * or IQ4_XS's signed code-book values (ggml kvalues_iq4nl). */
KF_INLINE __m256i kf_codes(int kind, const uint8_t *blk, int g) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(0x03), one = _mm256_set1_epi8(1);
#define KF_LOAD(p) _mm256_loadu_si256((const __m256i *)(p))
    switch (kind) {
    case KF_IQ4X: {
        const __m128i book = _mm_loadu_si128((const __m128i *)qt__kvalues_iq4nl), l4 = _mm_set1_epi8(0x0F);
        const __m128i q = _mm_loadu_si128((const __m128i *)(((const block_iq4_xs *)blk)->qs + 16 * g));
        return _mm256_set_m128i(_mm_shuffle_epi8(book, _mm_and_si128(_mm_srli_epi16(q, 4), l4)),
                                _mm_shuffle_epi8(book, _mm_and_si128(q, l4)));
    }
    case KF_Q2: {
        const block_q2_K *x = (const block_q2_K *)blk;
        return _mm256_and_si256(_mm256_srli_epi16(KF_LOAD(x->qs + 32 * (g / 4)), 2 * (g % 4)), low2);
    }
    case KF_Q3: {
        const block_q3_K *x = (const block_q3_K *)blk;
        const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(KF_LOAD(x->qs + 32 * (g / 4)), 2 * (g % 4)), low2);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(KF_LOAD(x->hmask), g), one);
        return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 2));
    }
    case KF_Q4:
    case KF_Q5: {
        const uint8_t *qs = kind == KF_Q4 ? ((const block_q4_K *)blk)->qs : ((const block_q5_K *)blk)->qs;
        const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(KF_LOAD(qs + 32 * (g / 2)), 4 * (g % 2)), low4);
        if (kind == KF_Q4) return lo;
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(KF_LOAD(((const block_q5_K *)blk)->qh), g), one);
        return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
    }
    default: {
        const block_q6_K *x = (const block_q6_K *)blk;
        const int h = g / 4, k = g % 4;
        const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(KF_LOAD(x->ql + 64 * h + 32 * (k % 2)), 4 * (k / 2)), low4);
        /* the top bits 2k, 2k + 1 moved to 4, 5 with one shift (none for k = 2) and one AND: 16-bit
         * shifts carry the neighbouring byte's bits into the other positions, which the mask clears */
        const __m256i qh = KF_LOAD(x->qh + 32 * h), top = _mm256_set1_epi8(0x30);
        const __m256i hs = k == 0 ? _mm256_slli_epi16(qh, 4) : k == 1 ? _mm256_slli_epi16(qh, 2)
                         : k == 2 ? qh : _mm256_srli_epi16(qh, 2);
        return _mm256_or_si256(lo, _mm256_and_si256(hs, top));
    }
    }
#undef KF_LOAD
}

/* s += the int32 lanes of scale16 * maddubs(u, v), u unsigned and v signed
 * bytes: exact (codes u <= 63 and |v| <= 128: |pair| <= 16128; |scale| <= 128). */
KF_INLINE __m256i kf_madd(__m256i s, __m256i u, __m256i v, __m256i scale16) {
    const __m256i p16 = _mm256_maddubs_epi16(u, v);
#if QT_GEMM_K_VNNI
    return _mm256_dpwssd_epi32(s, p16, scale16);
#else
    return _mm256_add_epi32(s, _mm256_madd_epi16(p16, scale16));
#endif
}

/* The totals of four 8-lane int32 vectors, in lanes 0..3. */
KF_INLINE __m128i kf_reduce4(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i t = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
    return _mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
}

/* Four f16 values (rows r < R at p + r * stride, zero beyond) as floats. */
KF_INLINE __m128 kf_halves(int R, const uint8_t *const x[4], size_t off) {
    uint16_t h[4] = {0, 0, 0, 0};
    for (int r = 0; r < R; r++) memcpy(&h[r], x[r] + off, 2);
    return _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)h));
}

/* out[c * ldo + r] for r < R (<= 4), c < C (<= QT_GEMM_K_C): nb super-blocks. */
KF_INLINE void kf_tile(int kind, int R, int C, const uint8_t *w, size_t ldw, const uint8_t *a, size_t lda, int64_t nb,
                       float *out, int64_t ldo) {
    const size_t wb = kf_block_bytes(kind);
    __m128 acc[QT_GEMM_K_C];
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) acc[c] = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *x[4];
        kf_prep p[4];
        const block_q8_K *y[QT_GEMM_K_C];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            x[r] = w + r * ldw + (size_t)b * wb;
            p[r] = kf_prep_w(kind, x[r]);
        }
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) y[c] = (const block_q8_K *)(a + c * lda) + b;
        __m256i s[4][QT_GEMM_K_C];
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
            for (int c = 0; c < C; c++) s[r][c] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++) {
            const __m256i pick = _mm256_set1_epi16((short)(((2 * g + 1) << 8) | (2 * g)));
            __m256i codes[4], scl[4];
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                codes[r] = kf_codes(kind, x[r], g);
                scl[r] = _mm256_shuffle_epi8(p[r].sc, pick);
            }
#pragma GCC unroll 4
            for (int c = 0; c < C; c++) {
                const __m256i yv = _mm256_loadu_si256((const __m256i *)(y[c]->qs + 32 * g));
                if (kf_signed(kind)) {
                    /* signed codes: |y| (0..128, unsigned) times the code signed by y, exact
                     * for y = -128 too (|code| <= 127: |pair| <= 32512) */
                    const __m256i ya = _mm256_abs_epi8(yv);
#pragma GCC unroll 4
                    for (int r = 0; r < R; r++) s[r][c] = kf_madd(s[r][c], ya, _mm256_sign_epi8(codes[r], yv), scl[r]);
                } else {
#pragma GCC unroll 4
                    for (int r = 0; r < R; r++) s[r][c] = kf_madd(s[r][c], codes[r], yv, scl[r]);
                }
            }
        }
        const __m128 dx = kf_halves(R, x, kf_d_offset(kind));
        const __m128 dmx = kf_has_min(kind) ? kf_halves(R, x, kf_dmin_offset(kind)) : _mm_setzero_ps();
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            const __m256i bs = _mm256_loadu_si256((const __m256i *)y[c]->bsums);
            __m256i m[4];
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++) {
                m[r] = _mm256_setzero_si256();
                if (r >= R || kind == KF_IQ4X) continue;
                const __m256i t = _mm256_madd_epi16(p[r].msc, bs);
                if (kf_has_min(kind)) m[r] = t;
                else s[r][c] = _mm256_sub_epi32(s[r][c], _mm256_slli_epi32(t, kf_offset_shift(kind)));
            }
            const __m128 dy = _mm_set1_ps(y[c]->d);
            const __m128i isum = kf_reduce4(s[0][c], s[1][c], s[2][c], s[3][c]);
            acc[c] = _mm_fmadd_ps(_mm_mul_ps(dy, dx), _mm_cvtepi32_ps(isum), acc[c]);
            if (kf_has_min(kind)) {
                const __m128i msum = kf_reduce4(m[0], m[1], m[2], m[3]);
                acc[c] = _mm_fnmadd_ps(_mm_mul_ps(dy, dmx), _mm_cvtepi32_ps(msum), acc[c]);
            }
        }
    }
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) {
        if (R == 4) {
            _mm_storeu_ps(out + c * ldo, acc[c]);
        } else {
            float v[4];
            _mm_storeu_ps(v, acc[c]);
            for (int r = 0; r < R; r++) out[c * ldo + r] = v[r];
        }
    }
}

/* The tiles over nr weight rows x nc activation rows, panel by panel. */
KF_INLINE void kf_gemm(int kind, const void *vw, size_t ldw, int64_t nr, const void *va, size_t lda, int64_t nc,
                       int64_t n, float *out, int64_t ldo) {
    const uint8_t *W = vw, *A = va;
    const int64_t nb = n / QK_K;
    for (int64_t c0 = 0; c0 < nc; c0 += KF_PANEL) {
        const int64_t c1 = c0 + KF_PANEL < nc ? c0 + KF_PANEL : nc;
        int64_t r = 0;
        for (; r + 4 <= nr; r += 4) {
            int64_t c = c0;
            for (; c + QT_GEMM_K_C <= c1; c += QT_GEMM_K_C)
                kf_tile(kind, 4, QT_GEMM_K_C, W + r * ldw, ldw, A + c * lda, lda, nb, out + c * ldo + r, ldo);
            for (; c < c1; c++) kf_tile(kind, 4, 1, W + r * ldw, ldw, A + c * lda, lda, nb, out + c * ldo + r, ldo);
        }
        for (int64_t c = c0; c < c1 && r < nr; c++) {
            const uint8_t *wr = W + r * ldw, *ac = A + c * lda;
            float *o = out + c * ldo + r;
            switch (nr - r) {
            case 1: kf_tile(kind, 1, 1, wr, ldw, ac, lda, nb, o, ldo); break;
            case 2: kf_tile(kind, 2, 1, wr, ldw, ac, lda, nb, o, ldo); break;
            default: kf_tile(kind, 3, 1, wr, ldw, ac, lda, nb, o, ldo); break;
            }
        }
    }
}

#define QT_GEMM_K_ENTRY(NAME, KIND, SUFFIX)                                                                         \
    void qt__gemm_fast_##NAME##_##SUFFIX(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, \
                                         int64_t n, float *out, int64_t ldo) {                                       \
        kf_gemm(KIND, w, ldw, nr, a, lda, nc, n, out, ldo);                                                          \
    }

/* The six entry points of one ISA file: SUFFIX avx2 or avx512. */
#define QT_GEMM_K_DEFINE(SUFFIX)             \
    QT_GEMM_K_ENTRY(q2_K, KF_Q2, SUFFIX)     \
    QT_GEMM_K_ENTRY(q3_K, KF_Q3, SUFFIX)     \
    QT_GEMM_K_ENTRY(q4_K, KF_Q4, SUFFIX)     \
    QT_GEMM_K_ENTRY(q5_K, KF_Q5, SUFFIX)     \
    QT_GEMM_K_ENTRY(q6_K, KF_Q6, SUFFIX)     \
    QT_GEMM_K_ENTRY(iq4_xs, KF_IQ4X, SUFFIX)

#endif
