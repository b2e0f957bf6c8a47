/* lib/quant/ct4_avx2.c — AVX2 + FMA fused dots of the weight-only 4-bit
 * compressed-tensors rows (ct4.h): each 4-bit code is looked up in its
 * group's 16-entry code book (two vpermps and a blend, the code's bit 3
 * choosing the half) and multiplied into the f32 activations in the lane
 * order of dot_avx2.c's f32 kernels, so the bits are qt__dot_f32_ref's /
 * qt__gemm_f32_ref's on the dequantized row (the references in ct4.c).
 */
#include <immintrin.h>
#include <math.h>

#include "ct4.h"
#include "decode_pf.h"
#include "dot.h"
#include "dot_x86.h"

typedef struct {
    __m256 l0, l1; /* code book entries 0..7 and 8..15 */
} lut8;

#include "ct_round_x86.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))


/* The code book of ct4.h's qt__ct4_lut, in vector registers (the same products, the same rounding). */
ALWAYS_INLINE lut8 make_lut(const void *row, const qt__ct4_form *f, int64_t g) {
    lut8 r;
    if (f->kind == QT_CT4_INT4) {
        const uint8_t *p = qt__ct4_params(row) + (size_t)g * (size_t)f->param_bytes;
        uint32_t dt;
        float s;
        memcpy(&dt, row, 4);
        memcpy(&s, p, 4);
        const __m256i off = _mm256_set1_epi32(8 + (int8_t)p[4]);
        const __m256i i0 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), i1 = _mm256_add_epi32(i0, _mm256_set1_epi32(8));
        const __m256 sv = _mm256_set1_ps(s);
        r.l0 = qt__ct_round_dtype8(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(i0, off)), sv), dt);
        r.l1 = qt__ct_round_dtype8(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(i1, off)), sv), dt);
    } else {
        const __m256 s = _mm256_set1_ps(qt__ct4_fp4_scale(row, f, g));
        r.l0 = _mm256_mul_ps(_mm256_loadu_ps(qt__e2m1_values), s);
        r.l1 = _mm256_mul_ps(_mm256_loadu_ps(qt__e2m1_values + 8), s);
    }
    return r;
}

ALWAYS_INLINE __m256 look(lut8 l, __m256i idx) {
    const __m256 lo = _mm256_permutevar8x32_ps(l.l0, idx), hi = _mm256_permutevar8x32_ps(l.l1, idx);
    return _mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));
}

/* Elements 32k..32k+31 as four 8-lane vectors; *cur / *la / *lb cache the code books. */
typedef struct {
    const void *row;
    const uint8_t *codes;
    qt__ct4_form f;
    int64_t ga, gb; /* groups whose books la, lb hold */
    lut8 la, lb;
} decoder;

ALWAYS_INLINE void chunk(decoder *d, int64_t k, __m256 e[4]) {
    const int64_t ga = 32 * k / d->f.group, gb = (32 * k + 16) / d->f.group;
    if (ga != d->ga) {
        d->ga = ga;
        d->la = ga == d->gb ? d->lb : make_lut(d->row, &d->f, ga);
    }
    if (gb != d->gb) {
        d->gb = gb;
        d->lb = gb == ga ? d->la : make_lut(d->row, &d->f, gb);
    }
    const uint8_t *q = d->codes + 16 * k;
    const __m256i b0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)q));
    const __m256i b1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + 8)));
    const __m256i m = _mm256_set1_epi32(15);
    e[0] = look(d->la, _mm256_and_si256(b0, m));
    e[1] = look(d->la, _mm256_and_si256(b1, m));
    e[2] = look(d->lb, _mm256_srli_epi32(b0, 4));
    e[3] = look(d->lb, _mm256_srli_epi32(b1, 4));
}

ALWAYS_INLINE decoder start(const void *row, int64_t n, qt__ct4_form f) {
    const lut8 z = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    decoder d = {row, qt__ct4_codes(row, n, &f), f, -1, -1, z, z};
    return d;
}

/* dot_avx2.c's reduce16 of lanes 0-7 (lo) and 8-15 (hi) */
ALWAYS_INLINE float reduce16(__m256 lo, __m256 hi) { return qt__hsum8_avx(_mm256_add_ps(hi, lo)); }

ALWAYS_INLINE float dot(const void *x, const float *y, int64_t n, qt__ct4_form f) {
    decoder d = start(x, n, f);
    const int64_t np = n & ~(int64_t)63;
    __m256 a[8], e[8];
    for (int k = 0; k < 8; k++) a[k] = _mm256_setzero_ps();
    for (int64_t i = 0; i < np; i += 64) {
        chunk(&d, i / 32, e);
        chunk(&d, i / 32 + 1, e + 4);
        for (int k = 0; k < 8; k++) a[k] = _mm256_fmadd_ps(e[k], _mm256_loadu_ps(y + i + 8 * k), a[k]);
    }
    const __m256 lo = _mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6]));
    const __m256 hi = _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7]));
    const float sum = reduce16(lo, hi);
    if (np == n) return sum;
    float w[32];
    chunk(&d, np / 32, e);
    for (int k = 0; k < 4; k++) _mm256_storeu_ps(w + 8 * k, e[k]);
    return qt__dot_f32_tail(sum, w, y + np, 0, n - np);
}

ALWAYS_INLINE float gemm(const void *x, const float *y, int64_t n, qt__ct4_form f) {
    decoder d = start(x, n, f);
    __m256 lo = _mm256_setzero_ps(), hi = lo, e[4];
    for (int64_t i = 0; i < n; i += 32) {
        chunk(&d, i / 32, e);
        lo = _mm256_fmadd_ps(e[0], _mm256_loadu_ps(y + i), lo);
        hi = _mm256_fmadd_ps(e[1], _mm256_loadu_ps(y + i + 8), hi);
        lo = _mm256_fmadd_ps(e[2], _mm256_loadu_ps(y + i + 16), lo);
        hi = _mm256_fmadd_ps(e[3], _mm256_loadu_ps(y + i + 24), hi);
    }
    return reduce16(lo, hi);
}

ALWAYS_INLINE void to_float(const void *x, float *y, int64_t n, qt__ct4_form f) {
    decoder d = start(x, n, f);
    __m256 e[4];
    for (int64_t i = 0; i < n; i += 32) {
        chunk(&d, i / 32, e);
        for (int k = 0; k < 4; k++) _mm256_storeu_ps(y + i + 8 * k, e[k]);
    }
}

#define DEFS(t, KIND, G, P)                                                                                           \
    void qt__ct4_##t##_to_float_avx2(const void *x, float *y, int64_t n) { to_float(x, y, n, (qt__ct4_form){KIND, G, P}); } \
    float qt__dot_ct4_##t##_avx2(const void *x, const void *y, int64_t n) { return dot(x, y, n, (qt__ct4_form){KIND, G, P}); } \
    float qt__gemm_ct4_##t##_avx2(const void *x, const void *y, int64_t n) { return gemm(x, y, n, (qt__ct4_form){KIND, G, P}); }
DEFS(w4g32, QT_CT4_INT4, 32, 5)
DEFS(w4g64, QT_CT4_INT4, 64, 5)
DEFS(w4g128, QT_CT4_INT4, 128, 5)
DEFS(nvfp4, QT_CT4_NVFP4, QT_CT_NVFP4_GROUP, 1)
DEFS(mxfp4, QT_CT4_MXFP4, QT_CT_MXFP4_GROUP, 1)


/* ---- --numerics fast: int8 activations (ct4.h "int8 activations") ------------------
 * The 16 int32 lanes of a group as two registers (lanes 0-7: code bytes 0..31, 8-15:
 * 32..63), each lane 4 bytes' products through vpmaddubsw (unsigned codes <= 15 times
 * signed activations: pairs <= 3810, the low and high sums added in int16 <= 7620, no
 * saturation) and vpmaddwd; then the AVX-512 kernel's float order, lane for lane. */
ALWAYS_INLINE __m256i fast_lanes(__m256i b, const int8_t *alo, const int8_t *ahi) {
    const __m256i low = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi16(1);
    const __m256i p = _mm256_add_epi16(
        _mm256_maddubs_epi16(_mm256_and_si256(b, low), _mm256_loadu_si256((const __m256i *)alo)),
        _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(b, 4), low), _mm256_loadu_si256((const __m256i *)ahi)));
    return _mm256_madd_epi16(p, one);
}

ALWAYS_INLINE void fast_rows(const uint8_t *w, size_t ldw, const uint8_t *a, int64_t n, float *out, const int R) {
    const qt__ct4_form f = {QT_CT4_INT4, QT_CT4_Q8_GROUP, 5};
    const int64_t ng = n / QT_CT4_Q8_GROUP;
    const qt__ct4_q8_head *h = (const qt__ct4_q8_head *)a;
    const int8_t *q = (const int8_t *)(h + ng);
    __m256 lo[2], hi[2];
    float corr[2] = {0.0f, 0.0f};
    const uint8_t *p[2], *c[2];
    for (int r = 0; r < R; r++) {
        lo[r] = hi[r] = _mm256_setzero_ps();
        p[r] = qt__ct4_params(w + (size_t)r * ldw);
        c[r] = qt__ct4_codes(w + (size_t)r * ldw, n, &f);
    }
    for (int64_t g = 0; g < ng; g++) {
        const int8_t *ag = q + 128 * g;
        /* this group's codes (and at g = 0 the parameters) QT_CT4_PF_ROWS rows on (decode_pf.h) */
        for (int r = 0; r < R; r++) {
            _mm_prefetch((const char *)(c[r] + (size_t)QT_CT4_PF_ROWS * ldw + 64 * g), _MM_HINT_T0);
            if (g == 0) _mm_prefetch((const char *)(p[r] + (size_t)QT_CT4_PF_ROWS * ldw), _MM_HINT_T0);
        }
        for (int r = 0; r < R; r++) {
            const uint8_t *cg = c[r] + 64 * g;
            const __m256i l0 = fast_lanes(_mm256_loadu_si256((const __m256i *)cg), ag, ag + 64);
            const __m256i l1 = fast_lanes(_mm256_loadu_si256((const __m256i *)(cg + 32)), ag + 32, ag + 96);
            float s;
            memcpy(&s, p[r] + 5 * g, 4);
            const float fg = s * h[g].d;
            const __m256 vf = _mm256_set1_ps(fg);
            lo[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(l0), vf, lo[r]);
            hi[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(l1), vf, hi[r]);
            corr[r] = fmaf(fg, (float)((8 + (int8_t)p[r][5 * g + 4]) * h[g].sum), corr[r]);
        }
    }
    for (int r = 0; r < R; r++) out[r] = reduce16(lo[r], hi[r]) - corr[r];
}

/* Batches: one weight row x up to 4 activation rows, the row's nibbles split once a group
 * for all of them (fast_lanes' products, the same int32 lanes); the scale products and
 * zero-point corrections as 4-lane vectors over the activation rows (the reference's IEEE
 * products and fused multiply-adds), so the bits are fast_rows'. */
ALWAYS_INLINE __m256i split_lanes(__m256i lo, __m256i hi, const int8_t *alo, const int8_t *ahi) {
    const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)alo)),
                                       _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)ahi)));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

ALWAYS_INLINE void fast_tile(const uint8_t *w, const uint8_t *a, size_t lda, const qt__ct4_q8_heads *hd, int64_t n,
                             float *out, int64_t ldo, const int C) {
    const qt__ct4_form f = {QT_CT4_INT4, QT_CT4_Q8_GROUP, 5};
    const int64_t ng = n / QT_CT4_Q8_GROUP;
    const int8_t *q = (const int8_t *)a + (size_t)ng * sizeof(qt__ct4_q8_head);
    const uint8_t *p = qt__ct4_params(w), *c = qt__ct4_codes(w, n, &f);
    const __m256i low = _mm256_set1_epi8(0x0F);
    __m256 lo[4], hi[4];
    __m128 corr = _mm_setzero_ps();
    float fg[4] __attribute__((aligned(16)));
    for (int k = 0; k < C; k++) lo[k] = hi[k] = _mm256_setzero_ps();
    for (int64_t g = 0; g < ng; g++) {
        float s;
        memcpy(&s, p + 5 * g, 4);
        const __m128 fv = _mm_mul_ps(_mm_set1_ps(s), _mm_load_ps(hd->d[g]));
        _mm_store_ps(fg, fv);
        /* (8 + zp) * S exactly in f32 (ct4_avx512.c) */
        corr = _mm_fmadd_ps(fv, _mm_mul_ps(_mm_set1_ps((float)(8 + (int8_t)p[5 * g + 4])), _mm_load_ps(hd->sum[g])), corr);
        __asm__ volatile("" : "+m"(fg)); /* each f one broadcast load, not a shuffle */
        const __m256i b0 = _mm256_loadu_si256((const __m256i *)(c + 64 * g));
        const __m256i b1 = _mm256_loadu_si256((const __m256i *)(c + 64 * g + 32));
        const __m256i l0 = _mm256_and_si256(b0, low), h0 = _mm256_and_si256(_mm256_srli_epi16(b0, 4), low);
        const __m256i l1 = _mm256_and_si256(b1, low), h1 = _mm256_and_si256(_mm256_srli_epi16(b1, 4), low);
        for (int k = 0; k < C; k++) {
            const int8_t *ag = q + (size_t)k * lda + 128 * g;
            const __m256 vf = _mm256_set1_ps(fg[k]);
            lo[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(split_lanes(l0, h0, ag, ag + 64)), vf, lo[k]);
            hi[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(split_lanes(l1, h1, ag + 32, ag + 96)), vf, hi[k]);
        }
    }
    float cr[4];
    _mm_storeu_ps(cr, corr);
    for (int k = 0; k < C; k++) out[(size_t)k * (size_t)ldo] = reduce16(lo[k], hi[k]) - cr[k];
}

/* Weight rows per block: their codes stay in L2 while every 4 activation rows pass over them. */
#define FAST_ROW_BLOCK 32

void qt__gemm_fast_ct4_w4g128_avx2(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc,
                                   int64_t n, float *out, int64_t ldo) {
    if (nc >= 2 && n / QT_CT4_Q8_GROUP <= QT_CT4_Q8_MAX_GROUPS) {
        qt__ct4_q8_heads hd;
        for (int64_t b0 = 0; b0 < nr; b0 += FAST_ROW_BLOCK) {
            const int64_t b1 = nr - b0 < FAST_ROW_BLOCK ? nr : b0 + FAST_ROW_BLOCK;
            for (int64_t c0 = 0; c0 < nc; c0 += 4) {
                const int C = nc - c0 < 4 ? (int)(nc - c0) : 4;
                const uint8_t *ac = (const uint8_t *)a + (size_t)c0 * lda;
                qt__ct4_q8_heads_load(ac, lda, C, n, &hd);
                for (int64_t r = b0; r < b1; r++) {
                    const uint8_t *wr = (const uint8_t *)w + (size_t)r * ldw;
                    float *o = out + (size_t)c0 * (size_t)ldo + (size_t)r;
                    switch (C) {
                    case 4: fast_tile(wr, ac, lda, &hd, n, o, ldo, 4); break;
                    case 3: fast_tile(wr, ac, lda, &hd, n, o, ldo, 3); break;
                    case 2: fast_tile(wr, ac, lda, &hd, n, o, ldo, 2); break;
                    default: fast_tile(wr, ac, lda, &hd, n, o, ldo, 1); break;
                    }
                }
            }
        }
        return;
    }
    /* decode (and rows longer than the headers' view): two weight rows per pass */
    float o[2];
    for (int64_t r0 = 0; r0 < nr; r0 += 2) {
        const int R = nr - r0 < 2 ? (int)(nr - r0) : 2;
        const uint8_t *wr = (const uint8_t *)w + (size_t)r0 * ldw;
        for (int64_t cc = 0; cc < nc; cc++) {
            const uint8_t *ac = (const uint8_t *)a + (size_t)cc * lda;
            if (R == 2) fast_rows(wr, ldw, ac, n, o, 2);
            else fast_rows(wr, ldw, ac, n, o, 1);
            for (int r = 0; r < R; r++) out[(size_t)cc * (size_t)ldo + (size_t)(r0 + r)] = o[r];
        }
    }
}
