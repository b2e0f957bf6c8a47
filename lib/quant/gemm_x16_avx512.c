/* lib/quant/gemm_x16_avx512.c — the x16 kernels (gemm.h) at the AVX-512 level
 * (F + BW + VL + VNNI): one 512-bit accumulator holds the 16 rows of a group,
 * so per block a group costs one vcvtph2ps for its scales, 4 (q4_0) or 8
 * (q8_0) vector loads of codes (q5: the fifth bits added under a mask
 * register; iq4_nl: a vpshufb through the code book), and per activation row 8 vpdpbusd against
 * broadcast 4-byte words (load-port broadcasts, no shuffles), one multiply of
 * the 16 scales by the activation's and one fused add. Weight codes are
 * unsigned (gemm.h); the activation's code sum times the offset is
 * taken off the int32 sum before it is converted, so every int32 lane is the
 * exact block product. Tiles: 16 rows x up to 4 activation rows, over column
 * panels of QT_X16_PANEL rows that stay in L2. */
#include <immintrin.h>
#include <string.h>

#include "blocks.h"
#include "gemm.h"
#include "decode_pf.h"
#include "gemm_x16.h"

#define X16_INLINE static inline __attribute__((always_inline))
#define QT_X16_PANEL 64

X16_INLINE __m512i bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32(v);
}

/* 16 rows of group g (mask m: the rows that exist) x C activation rows. */
X16_INLINE void x16_tile(int kind, int C, const uint8_t *g, int64_t nb, const uint8_t *a, size_t lda, float *out,
                         int64_t ldo, __mmask16 m) {
    const qt__x16_format *f = &qt__x16_formats[kind];
    const size_t tile = x16_tile_bytes(kind), codes = x16_codes_off(kind), qh = x16_qh_off(kind);
    const __m512i low = _mm512_set1_epi8(0x0F), bit4 = _mm512_set1_epi8(0x10);
    /* iq4_nl: the code book + 128 (unsigned) in every 128-bit lane, for vpshufb */
    __m512i book = _mm512_setzero_si512();
    if (f->lut) {
        int8_t u[16];
        for (int j = 0; j < 16; j++) u[j] = (int8_t)(qt__kvalues_iq4nl[j] + 128);
        book = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)u));
    }
    __m512 acc[4];
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *t = g + (size_t)b * tile;
        if (C == 1) /* decode: the block QT_X16_PF_BYTES on (decode_pf.h) */
#pragma GCC unroll 9
            for (size_t o = 0; o < tile; o += 64) _mm_prefetch((const char *)(t + QT_X16_PF_BYTES + o), _MM_HINT_T0);
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)t));
        const __m512 mw = x16_has_m(kind) ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(t + x16_m_off(kind))))
                                          : _mm512_setzero_ps();
        __m512i v[8];
        if (kind == X16_Q8_0) {
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) v[k] = _mm512_loadu_si512((const void *)(t + codes + 64 * k));
        } else {
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) {
                const __m512i w = _mm512_loadu_si512((const void *)(t + codes + 64 * k));
                v[k] = _mm512_and_si512(w, low);
                v[4 + k] = _mm512_and_si512(_mm512_srli_epi16(w, 4), low);
                if (x16_has_qh(kind)) {
                    __mmask64 lo, hi;
                    memcpy(&lo, t + qh + 16 * k, 8);
                    memcpy(&hi, t + qh + 16 * k + 8, 8);
                    v[k] = _mm512_mask_add_epi8(v[k], lo, v[k], bit4);
                    v[4 + k] = _mm512_mask_add_epi8(v[4 + k], hi, v[4 + k], bit4);
                }
                if (f->lut) {
                    v[k] = _mm512_shuffle_epi8(book, v[k]);
                    v[4 + k] = _mm512_shuffle_epi8(book, v[4 + k]);
                }
            }
        }
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            const qt__block_q8s *y = (const qt__block_q8s *)(a + (size_t)c * lda) + b;
            __m512i s0 = _mm512_set1_epi32(-f->offset * y->sum), s1 = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int j = 0; j < 8; j += 2) {
                s0 = _mm512_dpbusd_epi32(s0, v[j], bcast4(y->qs + 4 * j));
                s1 = _mm512_dpbusd_epi32(s1, v[j + 1], bcast4(y->qs + 4 * j + 4));
            }
            const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(y->d));
            acc[c] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(_mm512_add_epi32(s0, s1)), acc[c]);
            if (x16_has_m(kind)) acc[c] = _mm512_fmadd_ps(mw, _mm512_set1_ps(y->s), acc[c]);
        }
    }
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) _mm512_mask_storeu_ps(out + c * ldo, m, acc[c]);
}

X16_INLINE void x16_gemm(int kind, const void *wp, int64_t nr, const void *va, size_t lda, int64_t nc, int64_t n,
                         float *out, int64_t ldo) {
    const uint8_t *W = wp, *A = va;
    const int64_t nb = n / 32, ng = (nr + QT_X16_ROWS - 1) / QT_X16_ROWS;
    const size_t gbytes = (size_t)nb * x16_tile_bytes(kind);
    for (int64_t c0 = 0; c0 < nc; c0 += QT_X16_PANEL) {
        const int64_t c1 = c0 + QT_X16_PANEL < nc ? c0 + QT_X16_PANEL : nc;
        for (int64_t gi = 0; gi < ng; gi++) {
            const int64_t rows = nr - gi * QT_X16_ROWS < QT_X16_ROWS ? nr - gi * QT_X16_ROWS : QT_X16_ROWS;
            const __mmask16 m = (__mmask16)((1u << rows) - 1u);
            const uint8_t *g = W + (size_t)gi * gbytes;
            float *o = out + gi * QT_X16_ROWS;
            int64_t c = c0;
            for (; c + 4 <= c1; c += 4) x16_tile(kind, 4, g, nb, A + (size_t)c * lda, lda, o + c * ldo, ldo, m);
            switch (c1 - c) {
            case 3: x16_tile(kind, 3, g, nb, A + (size_t)c * lda, lda, o + c * ldo, ldo, m); break;
            case 2: x16_tile(kind, 2, g, nb, A + (size_t)c * lda, lda, o + c * ldo, ldo, m); break;
            case 1: x16_tile(kind, 1, g, nb, A + (size_t)c * lda, lda, o + c * ldo, ldo, m); break;
            default: break;
            }
        }
    }
}

#define X16_ENTRY(NAME, KIND)                                                                                 \
    void qt__gemm_x16_##NAME##_avx512(const void *wp, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n, \
                                      float *out, int64_t ldo) {                                              \
        x16_gemm(KIND, wp, nr, a, lda, nc, n, out, ldo);                                                      \
    }
X16_ENTRY(q4_0, X16_Q4_0)
X16_ENTRY(q4_1, X16_Q4_1)
X16_ENTRY(q5_0, X16_Q5_0)
X16_ENTRY(q5_1, X16_Q5_1)
X16_ENTRY(iq4_nl, X16_IQ4_NL)
X16_ENTRY(q8_0, X16_Q8_0)
