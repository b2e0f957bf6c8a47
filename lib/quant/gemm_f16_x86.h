/* lib/quant/gemm_f16_x86.h — the bodies of the F16/BF16 --numerics fast
 * kernels (gemm_f16.h), shared by gemm_f16_avx2.c (QT_GEMM_F_512 0: a 16-lane
 * accumulator is two ymm registers) and gemm_f16_avx512.c (QT_GEMM_F_512 1:
 * one zmm). Include only from those files, after defining QT_GEMM_F_512 and
 * the tile QT_GEMM_F_R x QT_GEMM_F_C (weight rows x activation rows).
 *
 * Each 16-element step converts R weight vectors and C activation vectors
 * once (F16: vcvtph2ps; BF16: widen and shift, exact) and feeds the R x C
 * accumulators, one per output element, lane i % 16 taking element i: the
 * order of qt__gemm_f16_ref / qt__dot_fast_bf16_ref whatever the tile.
 */
#ifndef QT_QUANT_GEMM_F16_X86_H
#define QT_QUANT_GEMM_F16_X86_H

#include <immintrin.h>

#include "dot.h"
#include "dot_x86.h"
#include "gemm_f16.h"

#define GF_INLINE static inline __attribute__((always_inline))

enum { GF_F16, GF_BF16 };

/* Activation rows per column panel: 64 rows of 2048 halves are 256 KB (L2). */
#define GF_PANEL 64
/* f32 activation rows (GF_A32): at most 512 KB of them per panel, in whole tiles of TC rows when
 * that cap binds. 64 rows of 2048 f32 are 512 KB; ffn_down's 8192-wide rows at 64 a panel were
 * 2 MB, past L2: bench_gemm --type f16 --batch 64 on 2048 x 8192, 61-64 -> 69-71 GFLOP per CPU s
 * (2026-12-03, loaded AMX Xeon, interleaved). The tiling changes no element's order, so not the bits. */
static inline int64_t gf_panel_a32(int TC, int64_t n) {
    const int64_t p = (512 * 1024) / (n * 4);
    if (p >= GF_PANEL) return GF_PANEL;
    return p - p % TC < TC ? TC : p - p % TC;
}

#if QT_GEMM_F_512
typedef __m512 gf_vec; /* 16 f32 lanes */
GF_INLINE gf_vec gf_zero(void) { return _mm512_setzero_ps(); }
GF_INLINE gf_vec gf_load(int kind, const uint16_t *p) {
    const __m256i h = _mm256_loadu_si256((const __m256i *)p);
    if (kind == GF_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
GF_INLINE gf_vec gf_fma(gf_vec a, gf_vec b, gf_vec c) { return _mm512_fmadd_ps(a, b, c); }
/* reduce16: lanes i and i+8 added, then hsum8 */
GF_INLINE float gf_reduce(gf_vec a) {
    return qt__hsum8_avx(_mm256_add_ps(_mm512_castps512_ps256(a), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1))));
}
#else
typedef struct { __m256 lo, hi; } gf_vec; /* lanes 0-7, 8-15 */
GF_INLINE gf_vec gf_zero(void) { return (gf_vec){_mm256_setzero_ps(), _mm256_setzero_ps()}; }
GF_INLINE __m256 gf_load8(int kind, const uint16_t *p) {
    const __m128i h = _mm_loadu_si128((const __m128i *)p);
    if (kind == GF_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
GF_INLINE gf_vec gf_load(int kind, const uint16_t *p) { return (gf_vec){gf_load8(kind, p), gf_load8(kind, p + 8)}; }
GF_INLINE gf_vec gf_fma(gf_vec a, gf_vec b, gf_vec c) {
    return (gf_vec){_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
}
GF_INLINE float gf_reduce(gf_vec a) { return qt__hsum8_avx(_mm256_add_ps(a.lo, a.hi)); }
#endif

/* ---- F16 weights x f32 activation rows holding f16 values (qt__act_f16_f32) ----
 * The same order (lane i % 16 of one FMA chain per element, reduce16), so
 * qt__gemm_f16_ref's bits on the rows' f16 values; only the weight vectors are
 * converted (once per panel: gf_gemm_a32 below), so a tile can be wide in activation rows
 * (QT_GEMM_F_AR weight rows x QT_GEMM_F_AC activation rows). One activation
 * row (decode) takes tiles of QT_GEMM_F_AR x 1: that many weight rows side by
 * side, so that many independent FMA chains (one row at a time waits on one
 * chain, 4 cycles per 32 bytes of weights). Machines differ here: on a loaded
 * Zen 4 (256 MB of rows, thread CPU time) one row at a time read 15-19 GB/s
 * against 10-13 for 4 or 8 side by side; on the loaded Xeon (AVX-512 FP16, no
 * AMX) the same harness read 7.4-8.1 one at a time, 9.7-11.5 with 4 side by
 * side, and the 1B F16 decode (quanta bench, per CPU-second) 24-40 % more with 4
 * (docs/performance.md). Quiet Zen 4 F16 decode was 7.85 tok/s before the switch
 * to one row and 7.00 after it (other changes between), so side by side is back
 * everywhere; re-measure on a quiet Zen 4. */
GF_INLINE gf_vec gf_load_f32(const float *p) {
#if QT_GEMM_F_512
    return _mm512_loadu_ps(p);
#else
    return (gf_vec){_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)};
#endif
}

/* Activation element i of row c: f16 / bf16 halves converted, or f32 (GF_A32) loaded as is. */
enum { GF_A32 = 2 };
GF_INLINE gf_vec gf_load_act(int akind, const void *a, size_t lda, int c, int64_t i) {
    if (akind == GF_A32) return gf_load_f32((const float *)a + c * lda + i);
    return gf_load(akind, (const uint16_t *)a + c * lda + i);
}

enum { GF_MR = QT_GEMM_F_R > QT_GEMM_F_AR ? QT_GEMM_F_R : QT_GEMM_F_AR,
       GF_MC = QT_GEMM_F_C > QT_GEMM_F_AC ? QT_GEMM_F_C : QT_GEMM_F_AC };

/* out[c * ldo + r], r < R, c < C: n a multiple of 16; lda in elements of the activation kind */
GF_INLINE void gf_tile(int kind, int akind, int R, int C, const uint16_t *w, size_t ldw, const void *a, size_t lda,
                       int64_t n, float *out, int64_t ldo) {
    gf_vec acc[GF_MR][GF_MC];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) acc[r][c] = gf_zero();
    for (int64_t i = 0; i < n; i += 16) {
        gf_vec x[GF_MR];
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) x[r] = gf_load(kind, w + r * ldw + i);
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) {
            const gf_vec y = gf_load_act(akind, a, lda, c, i);
#pragma GCC unroll 8
            for (int r = 0; r < R; r++) acc[r][c] = gf_fma(x[r], y, acc[r][c]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) out[c * ldo + r] = gf_reduce(acc[r][c]);
}

/* ---- the a32 kernel with its weights converted once per panel ----
 * gf_tile above converts its R weight vectors at every 16-element step of every tile, so a
 * weight row was converted once per activation tile (10-11 times per 64-row panel at 4 x 6);
 * vcvtph2ps zmm is 2 uops on the FMA ports (p0 + p5), 4 of them beside the tile's 24 FMAs.
 * Here a chunk of GF_KC elements of TR weight rows is converted to f32 once into a stack
 * buffer (TR x GF_KC floats: 8 KB at 4 rows, L1) and read by every tile of the panel; the
 * tiles' accumulators live in a stack array across the chunks (stored and reloaded whole, not
 * rounded), so each element is still one FMA chain in element order, lane i % 16, reduce16:
 * qt__gemm_f16_a32_ref's bits at any chunk, panel or tile. */
#define GF_KC 512 /* bench_gemm --batch 512 --type f16, a32 avx512: 512 >= 1024 > 2048 on every shape (loaded AMX Xeon) */
_Static_assert(GF_KC % 16 == 0, "a chunk is whole 16-element steps");
#if QT_GEMM_F_512
GF_INLINE void gf_store_f32(float *p, gf_vec v) { _mm512_storeu_ps(p, v); }
#else
GF_INLINE void gf_store_f32(float *p, gf_vec v) { _mm256_storeu_ps(p, v.lo); _mm256_storeu_ps(p + 8, v.hi); }
#endif

/* R rows of F16 weights, elements [0, kc) from w, as f32 into wf (rows GF_KC apart) */
GF_INLINE void gf_convert_w(int R, const uint16_t *w, size_t ldw, int64_t kc, float *wf) {
    for (int r = 0; r < R; r++)
        for (int64_t i = 0; i < kc; i += 16) gf_store_f32(wf + r * GF_KC + i, gf_load(GF_F16, w + r * ldw + i));
}

/* One R x C tile over one chunk of kc elements: converted weights wf, f32 activations a (lda
 * floats apart), accumulators sp[c][r] (zero when first; reduced into out when last); pf, when
 * not NULL, the F16 rows (ldw apart) to convert next, fetched into cache meanwhile (the
 * conversion alone waits on memory: perf put half of ffn_down's time on it unfetched) */
GF_INLINE void gf_tile_w32(int R, int C, const float *wf, const float *a, size_t lda, int64_t kc, gf_vec (*sp)[GF_MR],
                           int first, int last, float *out, int64_t ldo, const uint16_t *pf, size_t ldw) {
    gf_vec acc[GF_MR][GF_MC];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) acc[r][c] = first ? gf_zero() : sp[c][r];
    for (int64_t i = 0; i < kc; i += 16) {
        gf_vec x[GF_MR];
        if (pf && i % 32 == 0)
#pragma GCC unroll 8
            for (int r = 0; r < R; r++) _mm_prefetch((const char *)(pf + r * ldw + i), _MM_HINT_T0);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) x[r] = gf_load_f32(wf + r * GF_KC + i);
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) {
            const gf_vec y = gf_load_f32(a + c * lda + i);
#pragma GCC unroll 8
            for (int r = 0; r < R; r++) acc[r][c] = gf_fma(x[r], y, acc[r][c]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) {
            if (last) out[c * ldo + r] = gf_reduce(acc[r][c]);
            else sp[c][r] = acc[r][c];
        }
}

/* The last C < TC activation rows of a panel in one tile of C (each C its own unrolled body) */
GF_INLINE void gf_tile_w32_tail(int R, int C, const float *wf, const float *a, size_t lda, int64_t kc,
                                gf_vec (*sp)[GF_MR], int first, int last, float *out, int64_t ldo, const uint16_t *pf,
                                size_t ldw) {
#define GF_TAIL(K) \
    if (C == K) { gf_tile_w32(R, K, wf, a, lda, kc, sp, first, last, out, ldo, pf, ldw); return; }
    GF_TAIL(1)
    GF_TAIL(2)
#if QT_GEMM_F_AC > 3
    GF_TAIL(3)
    GF_TAIL(4)
#endif
#if QT_GEMM_F_AC > 5
    GF_TAIL(5)
#endif
#undef GF_TAIL
    _Static_assert(QT_GEMM_F_AC == 3 || QT_GEMM_F_AC == 5 || QT_GEMM_F_AC == 6, "a tail case for every C < TC");
}

/* R weight rows (one row block) against the panel's activation rows [c0, c1), chunk by chunk;
 * the first tile of a chunk fetches the next chunk's rows (next: the rows after these, NULL if none) */
GF_INLINE void gf_rows_a32(int R, int TC, const uint16_t *w, size_t ldw, const float *A, size_t lda, int64_t c0,
                           int64_t c1, int64_t n, float *out, int64_t ldo, const uint16_t *next) {
    float wf[GF_MR * GF_KC];
    gf_vec sp[GF_PANEL][GF_MR];
    for (int64_t k0 = 0; k0 < n; k0 += GF_KC) {
        const int64_t kc = n - k0 < GF_KC ? n - k0 : GF_KC;
        const int first = k0 == 0, last = k0 + kc == n;
        gf_convert_w(R, w + k0, ldw, kc, wf);
        const uint16_t *pf = last ? next : w + k0 + kc;
        int64_t c = c0;
        for (; c + TC <= c1; c += TC, pf = NULL)
            gf_tile_w32(R, TC, wf, A + c * lda + k0, lda, kc, sp + (c - c0), first, last, out + c * ldo, ldo, pf, ldw);
        if (c < c1)
            gf_tile_w32_tail(R, (int)(c1 - c), wf, A + c * lda + k0, lda, kc, sp + (c - c0), first, last,
                             out + c * ldo, ldo, pf, ldw);
    }
}

/* gf_gemm's a32 case (n a multiple of 16; lda in floats) */
GF_INLINE void gf_gemm_a32(int TR, int TC, const uint16_t *W, size_t ldw, int64_t nr, const float *A, size_t lda,
                           int64_t nc, int64_t n, float *out, int64_t ldo) {
    const int64_t panel = gf_panel_a32(TC, n);
    for (int64_t c0 = 0; c0 < nc; c0 += panel) {
        const int64_t c1 = c0 + panel < nc ? c0 + panel : nc;
        int64_t r = 0;
        for (; r + TR <= nr; r += TR)
            gf_rows_a32(TR, TC, W + r * ldw, ldw, A, lda, c0, c1, n, out + r, ldo, r + 2 * TR <= nr ? W + (r + TR) * ldw : NULL);
        for (; r < nr; r++) gf_rows_a32(1, TC, W + r * ldw, ldw, A, lda, c0, c1, n, out + r, ldo, NULL);
    }
}

/* ldw, lda in bytes (the gemm interface); tiles of TR x TC over nr x nc, panel by panel;
 * one activation row (decode) takes TR x 1 tiles like any narrow batch (above);
 * the tile order changes no element's order, so not the bits. */
GF_INLINE void gf_gemm(int kind, int akind, int TR, int TC, const void *vw, size_t ldw_b, int64_t nr, const void *va,
                       size_t lda_b, int64_t nc, int64_t n, float *out, int64_t ldo) {
    if (n % 16 != 0) {
        /* the reference's order per element (it falls back to vec_dot's for F16) */
        const qt_vec_dot_fn ref = akind == GF_A32 ? qt__gemm_f16_a32_ref : kind == GF_F16 ? qt__gemm_f16_ref : qt__dot_fast_bf16_ref;
        qt__gemm_dots(ref, vw, ldw_b, nr, va, lda_b, nc, n, out, ldo);
        return;
    }
    const uint16_t *W = vw;
    const uint8_t *A = va;
    const size_t ldw = ldw_b / 2, lda = lda_b / (akind == GF_A32 ? 4 : 2);
    if (akind == GF_A32) {
        gf_gemm_a32(TR, TC, W, ldw, nr, va, lda, nc, n, out, ldo);
        return;
    }
    const int64_t panel = GF_PANEL;
    for (int64_t c0 = 0; c0 < nc; c0 += panel) {
        const int64_t c1 = c0 + panel < nc ? c0 + panel : nc;
        int64_t r = 0;
        for (; r + TR <= nr; r += TR) {
            int64_t c = c0;
            for (; c + TC <= c1; c += TC)
                gf_tile(kind, akind, TR, TC, W + r * ldw, ldw, A + c * lda_b, lda, n, out + c * ldo + r, ldo);
            for (; c < c1; c++) gf_tile(kind, akind, TR, 1, W + r * ldw, ldw, A + c * lda_b, lda, n, out + c * ldo + r, ldo);
        }
        for (; r < nr; r++) {
            int64_t c = c0;
            for (; c + TC <= c1; c += TC)
                gf_tile(kind, akind, 1, TC, W + r * ldw, ldw, A + c * lda_b, lda, n, out + c * ldo + r, ldo);
            for (; c < c1; c++) gf_tile(kind, akind, 1, 1, W + r * ldw, ldw, A + c * lda_b, lda, n, out + c * ldo + r, ldo);
        }
    }
}

/* qt__act_f16 / qt__act_f16_f32 with F16C: vcvtps2ph rounds to nearest even as
 * qt_f32_to_fp16 does for every non-NaN; a group of 8 holding a NaN takes the
 * scalar code (vcvtps2ph keeps NaN payloads, qt_f32_to_fp16 gives 0x7E00). */
GF_INLINE void gf_act_f16(const float *x, uint16_t *h, float *f, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
        if (!_mm256_testz_ps(nan, nan)) break;
        const __m128i c = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
        if (h) _mm_storeu_si128((__m128i *)(h + i), c);
        else _mm256_storeu_ps(f + i, _mm256_cvtph_ps(c));
    }
    if (i < n) { /* the tail, and everything after a NaN */
        if (h) qt__act_f16_ref(x + i, h + i, n - i);
        else qt__act_f16_f32_ref(x + i, f + i, n - i);
    }
}

#define QT_GEMM_F_DEFINE(SUFFIX)                                                                                     \
    void qt__gemm_fast_f16_##SUFFIX(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc,   \
                                    int64_t n, float *out, int64_t ldo) {                                           \
        gf_gemm(GF_F16, GF_F16, QT_GEMM_F_R, QT_GEMM_F_C, w, ldw, nr, a, lda, nc, n, out, ldo);                                                        \
    }                                                                                                                \
    void qt__gemm_fast_bf16_##SUFFIX(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc,  \
                                     int64_t n, float *out, int64_t ldo) {                                          \
        gf_gemm(GF_BF16, GF_BF16, QT_GEMM_F_R, QT_GEMM_F_C, w, ldw, nr, a, lda, nc, n, out, ldo);                                                       \
    }                                                                                                                \
    void qt__gemm_fast_f16_a32_##SUFFIX(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, \
                                        int64_t n, float *out, int64_t ldo) {                                       \
        gf_gemm(GF_F16, GF_A32, QT_GEMM_F_AR, QT_GEMM_F_AC, w, ldw, nr, a, lda, nc, n, out, ldo);                                                            \
    }

#endif
