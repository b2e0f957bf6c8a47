/* lib/quant/gemm_f16_amx.c — --numerics fast F16 weights x f32 activation
 * rows holding f16 values (the a32 rows, qt__act_f16_f32) with AMX-BF16 tiles
 * (level amx; gemm_f16.h).
 *
 * Why it is exact enough: an f16 value v (11 significant bits) splits exactly
 * into two bf16 values, hi = v rounded to bf16 (8 bits) and lo = v - hi
 * (at most 4 significant bits, exact in f32 and in bf16; 0 where v is not
 * finite). So w.a = whi.ahi + wlo.ahi + whi.alo + wlo.alo, and every product
 * of two bf16 values is exact in f32; the kernel drops only wlo.alo (below
 * 2^-16 of each product, far under the f16 rounding of the activations) and
 * sums in f32. TDPBF16PS gives 16 x 16 of these sums per instruction (1024
 * multiply-adds) where one AVX-512 FMA gives 16.
 *
 * The order (qt__gemm_f16_a32_amx_ref, one element): the row padded with zeros
 * to a multiple of 32; per step of 32 elements, three TDPBF16PS in the order
 * ahi.whi, ahi.wlo, alo.whi, each adding (E + O) to the accumulator, E the
 * products of the 16 even elements summed in order from 0 in f32, O the odd
 * ones'. That is what the instruction does on this hardware, bit for bit
 * (measured: 128 000 elements against the scalar model, none differ; a single
 * f32 chain, a fused chain or one rounding all differ in most elements), and
 * the test compares the kernel with the reference on every element. Nothing in
 * an element's order depends on where its row sits in the batch, the tile or
 * the thread's share, so the bits are the same at any batch and thread count
 * (decode included: one activation row is a tile with 15 zero rows).
 *
 * Tiles: A = 16 activation rows (hi, lo: row-major bf16, converted once per
 * call per panel and K chunk), B = 16 weight rows in the instruction's pair
 * layout (row k: the elements 2k, 2k+1 of each weight row; converted and
 * transposed once per group, K chunk and panel, so for AMX_PANEL batch rows),
 * C = 16 activation rows x 16 weight rows, which is out's layout; C goes
 * through a 1 KiB buffer at each K chunk's end so the edges need no care.
 * Tile registers: C 0/1 (two activation tiles), A 2..5 (hi, lo of each),
 * B 6/7 (hi, lo). The tile configuration is loaded at the start of every call
 * on its own thread and released at the end (as gemm_x16_amx.c).
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "gemm_f16.h"

#define AMX_PANEL 128 /* activation rows per panel: their K chunk (512 KiB of hi/lo) stays in L2 */
#define AMX_KC 1024   /* elements per K chunk: the group's B tiles (64 KiB) stay in L1/L2 */

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_tilecfg;

/* Per-thread scratch, allocated on a thread's first call and kept until it exits. */
typedef struct {
    uint16_t a[2][AMX_PANEL][AMX_KC];   /* activation hi, lo: panel rows x chunk */
    uint16_t b[AMX_KC / 32][2][16][32]; /* per 32-element step: weight hi, lo in pair layout */
    float c[2][16][16];                 /* C tiles on their way to and from out */
} amx_scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_key_ok;
static void scratch_key_make(void) { scratch_key_ok = pthread_key_create(&scratch_key, free) == 0; }

static amx_scratch *scratch_get(void) {
    pthread_once(&scratch_once, scratch_key_make);
    if (!scratch_key_ok) return NULL;
    amx_scratch *s = pthread_getspecific(scratch_key);
    if (s) return s;
    s = aligned_alloc(64, sizeof *s);
    if (s && pthread_setspecific(scratch_key, s) != 0) {
        free(s);
        s = NULL;
    }
    return s;
}

static void amx_configure(void) {
    alignas(64) amx_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.rows[t] = 16, cfg.colsb[t] = 64;
    _tile_loadconfig(&cfg);
}

/* hi = v rounded to bf16 (nearest even), lo = v - hi exactly (0 where v is not finite): 16 lanes each */
static inline void split16(__m512 v, __m256i *hi, __m512 *lo) {
    const __m256i h = (__m256i)_mm512_cvtneps_pbh(v);
    const __m512 hf = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    const __mmask16 nonfinite = _mm512_fpclass_ps_mask(v, 0x99); /* NaN, +-Inf */
    *hi = h;
    *lo = _mm512_maskz_sub_ps((__mmask16)~nonfinite, v, hf);
}

/* Activation rows [0, rows) of the panel, elements [k0, k0 + kc) (kc a multiple of 32; past n: 0)
 * into s->a; rows past `rows` up to the next 16 are zeros. */
static void convert_acts(amx_scratch *s, const uint8_t *a, size_t lda, int64_t rows, int64_t k0, int64_t kc, int64_t n) {
    const int64_t padded = (rows + 15) & ~(int64_t)15;
    for (int64_t c = 0; c < padded; c++) {
        const float *x = (const float *)(a + (size_t)c * lda);
        for (int64_t i = 0; i < kc; i += 16) {
            const int64_t left = c < rows ? n - (k0 + i) : 0;
            const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1u);
            const __m512 v = _mm512_maskz_loadu_ps(m, x + k0 + i);
            __m256i hi;
            __m512 lo;
            split16(v, &hi, &lo);
            _mm256_store_si256((__m256i *)&s->a[0][c][i], hi);
            _mm256_store_si256((__m256i *)&s->a[1][c][i], (__m256i)_mm512_cvtneps_pbh(lo));
        }
    }
}

/* 16 x 16 transpose of 32-bit elements: r[j] lane k -> r[k] lane j */
static inline void transpose16(__m512i r[16]) {
    __m512i q[4][4];
    for (int g = 0; g < 4; g++) {
        const __m512i t0 = _mm512_unpacklo_epi32(r[4 * g], r[4 * g + 1]), t1 = _mm512_unpackhi_epi32(r[4 * g], r[4 * g + 1]);
        const __m512i t2 = _mm512_unpacklo_epi32(r[4 * g + 2], r[4 * g + 3]), t3 = _mm512_unpackhi_epi32(r[4 * g + 2], r[4 * g + 3]);
        q[g][0] = _mm512_unpacklo_epi64(t0, t2);
        q[g][1] = _mm512_unpackhi_epi64(t0, t2);
        q[g][2] = _mm512_unpacklo_epi64(t1, t3);
        q[g][3] = _mm512_unpackhi_epi64(t1, t3);
    }
    /* q[g][e] lane L: rows 4g..4g+3, column 4L+e; row 4L+e of the result is lane L of q[0..3][e] */
    for (int e = 0; e < 4; e++) {
        const __m512i u0 = _mm512_shuffle_i32x4(q[0][e], q[1][e], 0x44), u1 = _mm512_shuffle_i32x4(q[0][e], q[1][e], 0xEE);
        const __m512i u2 = _mm512_shuffle_i32x4(q[2][e], q[3][e], 0x44), u3 = _mm512_shuffle_i32x4(q[2][e], q[3][e], 0xEE);
        r[e] = _mm512_shuffle_i32x4(u0, u2, 0x88);
        r[4 + e] = _mm512_shuffle_i32x4(u0, u2, 0xDD);
        r[8 + e] = _mm512_shuffle_i32x4(u1, u3, 0x88);
        r[12 + e] = _mm512_shuffle_i32x4(u1, u3, 0xDD);
    }
}

/* Weight rows [0, rows) (rows <= 16; the others 0), elements [k0, k0 + kc), as B tiles into s->b */
static void convert_weights(amx_scratch *s, const uint8_t *w, size_t ldw, int64_t rows, int64_t k0, int64_t kc, int64_t n) {
    for (int64_t i = 0; i < kc; i += 32) {
        __m512i hi[16], lo[16];
        for (int j = 0; j < 16; j++) {
            const uint16_t *x = (const uint16_t *)(w + (size_t)j * ldw) + k0 + i;
            const int64_t left = j < rows ? n - (k0 + i) : 0;
            const __mmask32 m = left >= 32 ? (__mmask32)0xFFFFFFFFu : left <= 0 ? 0 : (__mmask32)((1ull << left) - 1u);
            const __m512i h = _mm512_maskz_loadu_epi16(m, x);
            __m256i h0, h1;
            __m512 l0, l1;
            split16(_mm512_cvtph_ps(_mm512_castsi512_si256(h)), &h0, &l0);
            split16(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1)), &h1, &l1);
            hi[j] = _mm512_inserti64x4(_mm512_castsi256_si512(h0), h1, 1);
            lo[j] = (__m512i)_mm512_cvtne2ps_pbh(l1, l0);
        }
        transpose16(hi);
        transpose16(lo);
        for (int k = 0; k < 16; k++) {
            _mm512_store_si512(s->b[i / 32][0][k], hi[k]);
            _mm512_store_si512(s->b[i / 32][1][k], lo[k]);
        }
    }
}

/* C (16 activation rows x 16 weight rows) from out into s->c[t] (0 past the edges), and back */
static void c_in(amx_scratch *s, int t, const float *out, int64_t ldo, int64_t rows, __mmask16 m) {
    for (int c = 0; c < 16; c++)
        _mm512_store_ps(s->c[t][c], c < rows ? _mm512_maskz_loadu_ps(m, out + c * ldo) : _mm512_setzero_ps());
}
static void c_out(const amx_scratch *s, int t, float *out, int64_t ldo, int64_t rows, __mmask16 m) {
    for (int c = 0; c < rows; c++) _mm512_mask_storeu_ps(out + c * ldo, m, _mm512_load_ps(s->c[t][c]));
}

/* One K chunk of kc elements for activation tiles t0, t0 + 1 of the panel against the group's B
 * tiles (C tiles 0/1 loaded from s->c first, stored back after) */
static void chunk_pair(amx_scratch *s, int t0, int pair, int64_t kc) {
    _tile_loadd(0, s->c[0], 64);
    if (pair) _tile_loadd(1, s->c[1], 64);
    const size_t lda = AMX_KC * 2;
    for (int64_t i = 0; i < kc; i += 32) {
        _tile_loadd(6, s->b[i / 32][0], 64);
        _tile_loadd(7, s->b[i / 32][1], 64);
        _tile_loadd(2, &s->a[0][16 * t0][i], lda);
        _tile_loadd(3, &s->a[1][16 * t0][i], lda);
        _tile_dpbf16ps(0, 2, 6);
        _tile_dpbf16ps(0, 2, 7);
        _tile_dpbf16ps(0, 3, 6);
        if (pair) {
            _tile_loadd(4, &s->a[0][16 * t0 + 16][i], lda);
            _tile_loadd(5, &s->a[1][16 * t0 + 16][i], lda);
            _tile_dpbf16ps(1, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(1, 5, 6);
        }
    }
    _tile_stored(0, s->c[0], 64);
    if (pair) _tile_stored(1, s->c[1], 64);
}

void qt__gemm_fast_f16_a32_amx(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc,
                               int64_t n, float *out, int64_t ldo) {
    amx_scratch *s = scratch_get();
    if (!s) { /* no scratch: the same bits, slowly */
        qt__gemm_dots(qt__gemm_f16_a32_amx_ref, w, ldw, nr, a, lda, nc, n, out, ldo);
        return;
    }
    const uint8_t *W = w, *A = a;
    const int64_t np = (n + 31) & ~(int64_t)31;
    amx_configure();
    for (int64_t p0 = 0; p0 < nc; p0 += AMX_PANEL) {
        const int64_t prow = nc - p0 < AMX_PANEL ? nc - p0 : AMX_PANEL, ptiles = (prow + 15) / 16;
        for (int64_t k0 = 0; k0 < np; k0 += AMX_KC) {
            const int64_t kc = np - k0 < AMX_KC ? np - k0 : AMX_KC;
            convert_acts(s, A + (size_t)p0 * lda, lda, prow, k0, kc, n);
            for (int64_t r0 = 0; r0 < nr; r0 += 16) {
                const int64_t wrows = nr - r0 < 16 ? nr - r0 : 16;
                const __mmask16 m = (__mmask16)((1u << wrows) - 1u);
                convert_weights(s, W + (size_t)r0 * ldw, ldw, wrows, k0, kc, n);
                for (int64_t t = 0; t < ptiles; t += 2) {
                    const int pair = t + 1 < ptiles;
                    float *o = out + (p0 + 16 * t) * ldo + r0;
                    const int64_t rows0 = prow - 16 * t < 16 ? prow - 16 * t : 16;
                    const int64_t rows1 = pair ? (prow - 16 * t - 16 < 16 ? prow - 16 * t - 16 : 16) : 0;
                    if (k0 == 0) {
                        memset(s->c, 0, sizeof s->c);
                    } else {
                        c_in(s, 0, o, ldo, rows0, m);
                        if (pair) c_in(s, 1, o + 16 * ldo, ldo, rows1, m);
                    }
                    chunk_pair(s, (int)t, pair, kc);
                    c_out(s, 0, o, ldo, rows0, m);
                    if (pair) c_out(s, 1, o + 16 * ldo, ldo, rows1, m);
                }
            }
        }
    }
    _tile_release();
}
