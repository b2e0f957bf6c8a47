/* lib/quant/gemm_x16_amx.c — the x16 kernels (gemm.h) with AMX int8 tiles
 * (level amx: AVX-512 VNNI plus AMX-TILE/AMX-INT8, the kernel's permission
 * granted, lib/core/cpu.c).
 *
 * Why the x16 layout needs no second copy: a packed tile's code vector k holds
 * 4 bytes (elements 4k..4k+3) of each of the 16 rows, row i at bytes 4i.., which
 * is exactly one row of an AMX B tile (K/4 rows of N = 16 columns x 4 bytes).
 * So per block, with the activations as the A tile (16 batch rows x the 32
 * code bytes of block b, loaded straight from the q8s rows at stride lda) and
 * the block's 8 code vectors as the B tile, one TDPBSSD gives the 16 x 16
 * block sums in int32, exactly. The B tiles hold signed values q (code -
 * offset), spread once per group and K chunk of 64 blocks into a 32 KiB
 * buffer that stays in L1 while every 16 batch rows of the panel use it
 * (4-bit formats: nibbles to bytes, as the VNNI kernel does in registers;
 * q8_0: xor 0x80), so the sums need no offset correction. Row c of the C tile
 * is the 16 weight rows' sums for batch row c, so the float steps of the order
 * (gemm.h) run as in the VNNI kernel: convert, multiply the 16 scales by the
 * activation's, one fused add into a register accumulator per batch row (and
 * the minimum's fused add, q4_1/q5_1): the same operations on the same values,
 * so the same bits. The packed copy is used as it is: no second copy of the
 * weights, RSS unchanged.
 *
 * Tiles: C 0..3, A 4/5, B 6/7: four blocks in flight so that the tile unit
 * works ahead while the vector unit does the float steps. The tile
 * configuration is loaded at the start of every call, on whichever thread makes
 * it (the engine's pool workers included), and released at its end, so no
 * thread ever runs a tile instruction without its own configuration and no
 * idle thread keeps tile state for the kernel to save on context switches.
 *
 * Batches below QT_X16_AMX_MIN rows and the last nc % 16 batch rows go to the
 * VNNI kernel (gemm_x16_avx512.c): the same bits, and faster there
 * (bench_gemm). */
#include <immintrin.h>
#include <stdalign.h>
#include <stddef.h>
#include <string.h>

#include "amx_tiles.h"
#include "blocks.h"
#include "gemm.h"
#include "gemm_x16.h"

#define X16_INLINE static inline __attribute__((always_inline))
#define AMX_M 16          /* batch rows per tile */
#define AMX_KC 64         /* blocks per K chunk: 64 x 512 bytes of unpacked codes stay in L1 */
#define AMX_PANEL 128     /* batch rows whose activations stay in L2 while the weights stream */
#define QT_X16_AMX_MIN 16 /* bench_gemm: below one full tile the VNNI kernel is faster */

_Static_assert(offsetof(qt__block_q8s, qs) == 12 && sizeof(qt__block_q8s) == 44, "the A tile's row offsets");

static void amx_configure(void) {
    qt__amx_shape shape[8];
    for (int t = 0; t < 4; t++) shape[t] = (qt__amx_shape){AMX_M, 64}; /* C: 16 batch rows x 16 int32 */
    for (int t = 4; t < 6; t++) shape[t] = (qt__amx_shape){AMX_M, 32}; /* A: 16 batch rows x one block's 32 codes */
    for (int t = 6; t < 8; t++) shape[t] = (qt__amx_shape){8, 64};     /* B: 8 x (16 weight rows x 4 values) */
    qt__amx_configure(shape, 8);
}

/* The 8 B-tile rows of one packed tile t into dst (512 bytes) as signed
 * weight values q (gemm.h: code - offset), so that TDPBSSD's sums need no
 * correction: q8_0 its 8 code vectors xor 0x80; the 4-bit formats row k < 4
 * the low nibbles of code vector k, row 4 + k its high nibbles, with the
 * fifth bits (q5) and through the code book (iq4_nl, `book` its signed
 * values), as the VNNI kernel spreads them in registers. */
X16_INLINE void unpack_block(int kind, const uint8_t *t, uint8_t *dst, __m512i book) {
    const qt__x16_format *f = &qt__x16_formats[kind];
    const size_t codes = x16_codes_off(kind), qh = x16_qh_off(kind);
    if (kind == X16_Q8_0) {
        const __m512i flip = _mm512_set1_epi8((char)0x80);
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++)
            _mm512_store_si512((void *)(dst + 64 * k),
                               _mm512_xor_si512(_mm512_loadu_si512((const void *)(t + codes + 64 * k)), flip));
        return;
    }
    const __m512i low = _mm512_set1_epi8(0x0F), bit4 = _mm512_set1_epi8(0x10), off = _mm512_set1_epi8((char)f->offset);
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        const __m512i w = _mm512_loadu_si512((const void *)(t + codes + 64 * k));
        __m512i lo = _mm512_and_si512(w, low), hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), low);
        if (x16_has_qh(kind)) {
            __mmask64 ml, mh;
            memcpy(&ml, t + qh + 16 * k, 8);
            memcpy(&mh, t + qh + 16 * k + 8, 8);
            lo = _mm512_mask_add_epi8(lo, ml, lo, bit4);
            hi = _mm512_mask_add_epi8(hi, mh, hi, bit4);
        }
        if (f->lut) {
            lo = _mm512_shuffle_epi8(book, lo);
            hi = _mm512_shuffle_epi8(book, hi);
        } else if (f->offset) {
            lo = _mm512_sub_epi8(lo, off);
            hi = _mm512_sub_epi8(hi, off);
        }
        _mm512_store_si512((void *)(dst + 64 * k), lo);
        _mm512_store_si512((void *)(dst + 64 * (4 + k)), hi);
    }
}

/* The float steps of one block for the 16 batch rows of a panel: sums[c] the
 * C tile's row c, y the batch rows' q8s blocks b (lda bytes apart). */
X16_INLINE void block_steps(int kind, const int32_t *sums, const uint8_t *t, const uint8_t *y, size_t lda,
                            __m512 acc[AMX_M]) {
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)t));
    const __m512 mw = x16_has_m(kind) ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(t + x16_m_off(kind))))
                                      : _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int c = 0; c < AMX_M; c++) {
        const qt__block_q8s *q = (const qt__block_q8s *)(y + (size_t)c * lda);
        const __m512i s = _mm512_load_si512((const void *)(sums + 16 * c));
        const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(q->d));
        acc[c] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(s), acc[c]);
        if (x16_has_m(kind)) acc[c] = _mm512_fmadd_ps(mw, _mm512_set1_ps(q->s), acc[c]);
    }
}

/* Block sums of the A tile at YA (16 q8s rows, lda apart) by the B tile at BP into C tile CT, then DST. */
#define AMX_BLOCK(CT, AT, BT, YA, BP, DST)                                                                     \
    do {                                                                                                      \
        _tile_zero(CT);                                                                                        \
        _tile_loadd(AT, (YA) + offsetof(qt__block_q8s, qs), lda);                                             \
        _tile_loadd(BT, BP, 64);                                                                               \
        _tile_dpbssd(CT, AT, BT);                                                                              \
        _tile_stored(CT, DST, 64);                                                                             \
    } while (0)

/* One K chunk [b0, b1) of one group g for 16 batch rows from a: B tiles from
 * bt (the chunk's unpacked blocks, 512 bytes each), accumulators from 0
 * (first chunk) or from out. Four blocks in flight: C tiles 0..3, A 4/5,
 * B 6/7. */
X16_INLINE void panel_chunk(int kind, const uint8_t *g, const uint8_t *bt, int64_t b0, int64_t b1, const uint8_t *a,
                            size_t lda, float *out, int64_t ldo, __mmask16 m) {
    const size_t tile = x16_tile_bytes(kind), qb = sizeof(qt__block_q8s);
    alignas(64) int32_t sums[4][AMX_M * 16];
    __m512 acc[AMX_M];
#pragma GCC unroll 16
    for (int c = 0; c < AMX_M; c++) acc[c] = b0 ? _mm512_maskz_loadu_ps(m, out + c * ldo) : _mm512_setzero_ps();
    const uint8_t *ya = a + (size_t)b0 * qb;
    int64_t b = b0;
    for (; b + 4 <= b1; b += 4, ya += 4 * qb, bt += 4 * 512) {
        AMX_BLOCK(0, 4, 6, ya, bt, sums[0]);
        AMX_BLOCK(1, 5, 7, ya + qb, bt + 512, sums[1]);
        AMX_BLOCK(2, 4, 6, ya + 2 * qb, bt + 1024, sums[2]);
        AMX_BLOCK(3, 5, 7, ya + 3 * qb, bt + 1536, sums[3]);
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) block_steps(kind, sums[k], g + (size_t)(b + k) * tile, ya + k * qb, lda, acc);
    }
    for (; b < b1; b++, ya += qb, bt += 512) {
        AMX_BLOCK(0, 4, 6, ya, bt, sums[0]);
        block_steps(kind, sums[0], g + (size_t)b * tile, ya, lda, acc);
    }
#pragma GCC unroll 16
    for (int c = 0; c < AMX_M; c++) _mm512_mask_storeu_ps(out + c * ldo, m, acc[c]);
}

X16_INLINE void x16_amx(int kind, const void *wp, int64_t nr, const uint8_t *A, size_t lda, int64_t nc, int64_t n,
                        float *out, int64_t ldo) {
    const uint8_t *W = wp;
    const int64_t nb = n / 32, ng = (nr + QT_X16_ROWS - 1) / QT_X16_ROWS;
    const size_t tile = x16_tile_bytes(kind), gbytes = (size_t)nb * tile;
    alignas(64) uint8_t codes[AMX_KC * 512]; /* one group's unpacked K chunk (4-bit formats) */
    __m512i book = _mm512_setzero_si512();
    if (qt__x16_formats[kind].lut) {
        int8_t u[16];
        for (int j = 0; j < 16; j++) u[j] = qt__kvalues_iq4nl[j];
        book = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)u));
    }
    amx_configure();
    for (int64_t p0 = 0; p0 < nc; p0 += AMX_PANEL) {
        const int64_t p1 = p0 + AMX_PANEL < nc ? p0 + AMX_PANEL : nc;
        for (int64_t gi = 0; gi < ng; gi++) {
            const int64_t rows = nr - gi * QT_X16_ROWS < QT_X16_ROWS ? nr - gi * QT_X16_ROWS : QT_X16_ROWS;
            const __mmask16 m = (__mmask16)((1u << rows) - 1u);
            const uint8_t *g = W + (size_t)gi * gbytes;
            for (int64_t b0 = 0; b0 < nb; b0 += AMX_KC) {
                const int64_t b1 = b0 + AMX_KC < nb ? b0 + AMX_KC : nb;
                for (int64_t b = b0; b < b1; b++) unpack_block(kind, g + (size_t)b * tile, codes + (b - b0) * 512, book);
                for (int64_t c = p0; c < p1; c += AMX_M)
                    panel_chunk(kind, g, codes, b0, b1, A + (size_t)c * lda, lda, out + c * ldo + gi * QT_X16_ROWS, ldo, m);
            }
        }
    }
    _tile_release();
}

#define X16_ENTRY(NAME, KIND)                                                                                  \
    void qt__gemm_x16_##NAME##_amx(const void *wp, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n, \
                                   float *out, int64_t ldo) {                                                 \
        const int64_t full = nc >= QT_X16_AMX_MIN ? nc / AMX_M * AMX_M : 0;                                   \
        if (full) x16_amx(KIND, wp, nr, a, lda, full, n, out, ldo);                                            \
        if (nc > full)                                                                                         \
            qt__gemm_x16_##NAME##_avx512(wp, nr, (const uint8_t *)a + (size_t)full * lda, lda, nc - full, n,   \
                                         out + full * ldo, ldo);                                               \
    }
X16_ENTRY(q4_0, X16_Q4_0)
X16_ENTRY(q4_1, X16_Q4_1)
X16_ENTRY(q5_0, X16_Q5_0)
X16_ENTRY(q5_1, X16_Q5_1)
X16_ENTRY(iq4_nl, X16_IQ4_NL)
X16_ENTRY(q8_0, X16_Q8_0)
