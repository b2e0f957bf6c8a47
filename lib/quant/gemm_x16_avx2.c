/* lib/quant/gemm_x16_avx2.c — the x16 kernels (gemm.h) for AVX2 + FMA + F16C:
 * a group's 16 rows as two halves of 8 (one 256-bit accumulator each), so a
 * half costs per block one vcvtph2ps, 4 (4-bit codes) or 8 (q8_0) 256-bit
 * loads of codes, and per activation row maddubs products against broadcast
 * 4-byte words.
 *   q4_0, q4_1: codes 0..15 times int8 activations; eight maddubs pairs sum to
 *     at most 8 * 2 * 15 * 127 = 30480, so they are added in int16 and widened
 *     once (pmaddwd by 1);
 *   q5_0, q5_1: the fifth bits expanded from their masks to bytes (shuffle,
 *     and, compare); codes 0..31, so two int16 sums of four;
 *   iq4_nl, q8_0: signed values (iq4_nl: vpshufb through the code book),
 *     sign trick (|q| times sign(y, q): |-128| is 128 as an unsigned byte),
 *     widened per vector.
 * Then the offset times sum(y) is taken off. The int32 lanes are exact, the
 * float steps per row are the reference's (gemm.h), so the bits equal the
 * AVX-512 kernels'. Tiles: 8 rows x up to 2 activation rows (16 registers).
 * Also the q8s activation quantizer, for every level from AVX2 up. */
#include <immintrin.h>
#include <string.h>

#include "blocks.h"
#include "gemm.h"
#include "decode_pf.h"
#include "gemm_x16.h"
#include "quanta/num.h"

#define X16_INLINE static inline __attribute__((always_inline))
#define QT_X16_PANEL 64

X16_INLINE __m256i bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32(v);
}

/* 0x10 in byte e where bit e of the 32-bit mask is set. */
X16_INLINE __m256i bits_to_16(uint32_t bits) {
    const __m256i sel = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3,
                                         3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i spread = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), sel), bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(spread, bit), _mm256_set1_epi8(0x10));
}

/* Rows 8h..8h+7 of group g x C activation rows; `rows` of them exist. */
X16_INLINE void x16_half(int kind, int C, const uint8_t *g, int h, int64_t nb, const uint8_t *a, size_t lda, float *out,
                         int64_t ldo, int rows) {
    const qt__x16_format *f = &qt__x16_formats[kind];
    const size_t tile = x16_tile_bytes(kind), codes = x16_codes_off(kind), qh = x16_qh_off(kind);
    const bool is_signed = f->lut || kind == X16_Q8_0;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i book = _mm256_setzero_si256();
    if (f->lut) book = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qt__kvalues_iq4nl));
    __m256 acc[2];
#pragma GCC unroll 2
    for (int c = 0; c < C; c++) acc[c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *t = g + (size_t)b * tile;
        if (C == 1 && h == 0) /* decode: the block QT_X16_PF_BYTES on (decode_pf.h); half 1 finds the group in L2 */
#pragma GCC unroll 9
            for (size_t o = 0; o < tile; o += 64) _mm_prefetch((const char *)(t + QT_X16_PF_BYTES + o), _MM_HINT_T0);
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(t + 16 * h)));
        const __m256 mw = x16_has_m(kind) ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(t + x16_m_off(kind) + 16 * h)))
                                          : _mm256_setzero_ps();
        __m256i v[8];
        if (kind == X16_Q8_0) {
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++)
                v[k] = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(t + codes + 64 * k + 32 * h)),
                                        _mm256_set1_epi8((char)0x80));
        } else {
            const __m256i low = _mm256_set1_epi8(0x0F);
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) {
                const __m256i w = _mm256_loadu_si256((const __m256i *)(t + codes + 64 * k + 32 * h));
                v[k] = _mm256_and_si256(w, low);
                v[4 + k] = _mm256_and_si256(_mm256_srli_epi16(w, 4), low);
                if (x16_has_qh(kind)) {
                    uint32_t lo, hi;
                    memcpy(&lo, t + qh + 16 * k + 4 * h, 4);
                    memcpy(&hi, t + qh + 16 * k + 8 + 4 * h, 4);
                    v[k] = _mm256_or_si256(v[k], bits_to_16(lo));
                    v[4 + k] = _mm256_or_si256(v[4 + k], bits_to_16(hi));
                }
                if (f->lut) {
                    v[k] = _mm256_shuffle_epi8(book, v[k]);
                    v[4 + k] = _mm256_shuffle_epi8(book, v[4 + k]);
                }
            }
        }
#pragma GCC unroll 2
        for (int c = 0; c < C; c++) {
            const qt__block_q8s *y = (const qt__block_q8s *)(a + (size_t)c * lda) + b;
            __m256i s;
            if (is_signed) {
                s = _mm256_setzero_si256();
#pragma GCC unroll 8
                for (int j = 0; j < 8; j++) {
                    const __m256i yb = bcast4(y->qs + 4 * j);
                    const __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(v[j]), _mm256_sign_epi8(yb, v[j]));
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(p, ones));
                }
            } else {
                /* int16 sums of 8 (4-bit) or 4 (5-bit) maddubs pairs stay below 2^15 */
                const int per = x16_has_qh(kind) ? 4 : 8;
                s = _mm256_setzero_si256();
#pragma GCC unroll 2
                for (int j0 = 0; j0 < 8; j0 += per) {
                    __m256i p = _mm256_maddubs_epi16(v[j0], bcast4(y->qs + 4 * j0));
#pragma GCC unroll 8
                    for (int j = j0 + 1; j < j0 + per; j++) p = _mm256_add_epi16(p, _mm256_maddubs_epi16(v[j], bcast4(y->qs + 4 * j)));
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(p, ones));
                }
                if (f->offset) s = _mm256_sub_epi32(s, _mm256_set1_epi32(f->offset * y->sum));
            }
            const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(y->d));
            acc[c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(s), acc[c]);
            if (x16_has_m(kind)) acc[c] = _mm256_fmadd_ps(mw, _mm256_set1_ps(y->s), acc[c]);
        }
    }
    for (int c = 0; c < C; c++) {
        if (rows >= 8) {
            _mm256_storeu_ps(out + c * ldo, acc[c]);
        } else {
            float tmp[8];
            _mm256_storeu_ps(tmp, acc[c]);
            memcpy(out + c * ldo, tmp, (size_t)rows * sizeof *tmp);
        }
    }
}

X16_INLINE void x16_gemm(int kind, const void *wp, int64_t nr, const void *va, size_t lda, int64_t nc, int64_t n,
                         float *out, int64_t ldo) {
    const uint8_t *W = wp, *A = va;
    const int64_t nb = n / 32, ng = (nr + QT_X16_ROWS - 1) / QT_X16_ROWS;
    const size_t gbytes = (size_t)nb * x16_tile_bytes(kind);
    for (int64_t c0 = 0; c0 < nc; c0 += QT_X16_PANEL) {
        const int64_t c1 = c0 + QT_X16_PANEL < nc ? c0 + QT_X16_PANEL : nc;
        for (int64_t gi = 0; gi < ng; gi++)
            for (int h = 0; h < 2; h++) {
                const int64_t r0 = gi * QT_X16_ROWS + 8 * h;
                if (r0 >= nr) break;
                const int rows = nr - r0 < 8 ? (int)(nr - r0) : 8;
                const uint8_t *g = W + (size_t)gi * gbytes;
                int64_t c = c0;
                for (; c + 2 <= c1; c += 2) x16_half(kind, 2, g, h, nb, A + (size_t)c * lda, lda, out + c * ldo + r0, ldo, rows);
                if (c < c1) x16_half(kind, 1, g, h, nb, A + (size_t)c * lda, lda, out + c * ldo + r0, ldo, rows);
            }
    }
}

#define X16_ENTRY(NAME, KIND)                                                                                 \
    void qt__gemm_x16_##NAME##_avx2(const void *wp, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n, \
                                    float *out, int64_t ldo) {                                                \
        x16_gemm(KIND, wp, nr, a, lda, nc, n, out, ldo);                                                      \
    }
X16_ENTRY(q4_0, X16_Q4_0)
X16_ENTRY(q4_1, X16_Q4_1)
X16_ENTRY(q5_0, X16_Q5_0)
X16_ENTRY(q5_1, X16_Q5_1)
X16_ENTRY(iq4_nl, X16_IQ4_NL)
X16_ENTRY(q8_0, X16_Q8_0)

/* One block of 32 floats as llama.cpp's CPU quantize_row_q8_0 codes it: |x| by masking the
 * sign, the maximum exact in any order, x * id rounded to nearest even by vcvtps2dq (MXCSR's
 * default mode, nearbyintf's too), the packs saturating nothing (|q| <= 127). Returns amax;
 * *sum gets the codes' sum, taken in int32 before the packs. */
static inline float q8_block_avx2(const float *x, int8_t qs[32], int32_t *sum) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7); /* undo the packs' lane interleave */
    __m256 v[4], m = _mm256_setzero_ps();
    for (int k = 0; k < 4; k++) {
        v[k] = _mm256_loadu_ps(x + 8 * k);
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v[k]));
    }
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    const float amax = _mm_cvtss_f32(h);
    const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    __m256i q[4];
    for (int k = 0; k < 4; k++) q[k] = _mm256_cvtps_epi32(_mm256_mul_ps(v[k], id));
    const __m256i s8 = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
    *sum = _mm_cvtsi128_si32(s4);
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    _mm256_storeu_si256((__m256i *)qs, _mm256_permutevar8x32_epi32(p, order));
    return amax;
}

/* qt__act_q8s_ref's codes, scale and sums (q8_block_avx2). */
void qt__act_q8s_avx2(const float *x, qt__block_q8s *y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++, x += 32) {
        int32_t s;
        const float amax = q8_block_avx2(x, y[b].qs, &s);
        y[b].d = qt_fp16_to_f32(qt_f32_to_fp16(amax / 127.0f));
        y[b].s = qt_fp16_to_f32(qt_f32_to_fp16(amax / 127.0f * (float)s));
        y[b].sum = s;
    }
}

/* qt__act_q8_0_ref's blocks: the same codes with their f16 scale. */
void qt__act_q8_0_avx2(const float *x, void *vy, int64_t n) {
    block_q8_0 *y = vy;
    for (int64_t b = 0; b < n / 32; b++, x += 32) {
        int32_t s;
        y[b].d = qt_f32_to_fp16(q8_block_avx2(x, y[b].qs, &s) / 127.0f);
    }
}
