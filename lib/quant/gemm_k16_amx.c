/* lib/quant/gemm_k16_amx.c — the k16 kernels (gemm_k16.h) with AMX int8 tiles
 * (level amx: AVX-512 VNNI plus AMX-TILE/AMX-INT8, the kernel's permission
 * granted, lib/core/cpu.c).
 *
 * The fast K order needs per super-block two exact integers per output,
 * isum = sum_e sc(e) * q(e) * y(e) and (Q4_K/Q5_K) msum = sum_j mn_j * (the
 * 32-element sum of y over sub-block j), then one or two fused adds
 * (gemm_k.h). Scaling each sub-block's tile sums on the vector unit would cost
 * 8 (Q6_K: 16) tile stores and vpmulld per 16 x 16 outputs, more than the
 * VNNI kernel saves. Instead the scales go into the B tiles: per group and K
 * chunk each weight w = sc * q (Q6_K: sc * (q - 32)) is formed once in int16
 * (|w| <= 63 * 31 = 1953 for Q5_K, 128 * 32 = 4096 for Q6_K) and split into
 * two int8 digit planes, w = 256 * hi + lo with lo = w & 255 (unsigned) and
 * hi = w >> 8 (signed, |hi| <= 16): the low and high bytes of the int16. Then
 * per 64 elements one TDPBSUD (signed y x unsigned lo) and one TDPBSSD (y x
 * hi) give sum lo * y and sum hi * y for 16 batch rows x 16 weight rows, and
 * isum = (sum hi * y) * 256 + sum lo * y exactly (|isum| < 2^25). A third
 * plane holds each element's sub-block min, so TDPBSUD gives msum = sum_e
 * mn(e) * y(e), which is the reference's sum of mins times bsums because a
 * Q8_K row's bsums are the sums of its codes (blocks.h, qt__quantize_q8_K).
 * The B tiles' rows are the k16 code vectors' layout (row i's 4 elements at
 * bytes 4i..4i+3, as an AMX B tile wants); the A tiles are the Q8_K rows' qs
 * loaded straight at stride lda. Every integer is the reference's, and the
 * float steps per super-block and batch row are the VNNI kernel's (convert,
 * y.d times the 16 rows' d, one fused add; the same for dmin and msum,
 * subtracted), so the bits are the scalar reference's at any tiling.
 *
 * Tiles: C 0..2 (lo, hi, min sums), A 3/4 (alternating K steps), B 5..7 (the
 * three planes), all 16 rows x 64 bytes. The float steps of super-block b run
 * after the tile work of b + 1 is issued (two sums buffers), so the tile unit
 * works while the vector unit scales. The planes of one group's K chunk
 * (k16_amx_kc super-blocks, 24-32 KiB) stay in L1 while every 16 batch rows
 * of a panel use them, so the unpacking is paid once per panel; a panel is as
 * many 16-row tiles as keep its activations within K16_AMX_L2 (512 KiB of L2:
 * bench_gemm q4_K ffn_down, batch 512, one thread, CPU s: 1 MiB 0.038, 512 KiB
 * 0.033-0.035, 256 KiB 0.044; a fixed 256 rows 0.047). The tile configuration is loaded at the start of every call on the
 * calling thread and released at its end (as gemm_x16_amx.c).
 *
 * Batches below 16 rows and the last nc % 16 batch rows go to the VNNI kernel
 * (gemm_k16_avx512.c): the same bits. */
#include <immintrin.h>
#include <stdalign.h>
#include <stddef.h>
#include <string.h>

#include "amx_tiles.h"
#include "blocks.h"
#include "gemm_k16.h"

#define K16_INLINE static inline __attribute__((always_inline))
#define AMX_M 16            /* batch rows per tile */
#define K16_AMX_BUF 32768   /* bytes of one group's unpacked K chunk: stays in L1 */
#define K16_AMX_L2 (1 << 19) /* bytes of a panel's activation rows, which stay in L2 while the weights stream */
#define PLANE_BYTES 4096    /* one plane of one super-block: 4 K steps x 16 B-tile rows x 64 bytes */

_Static_assert(offsetof(block_q8_K, qs) == 4, "the A tile's row offsets");

static void amx_configure(void) {
    qt__amx_shape shape[8];
    for (int t = 0; t < 8; t++) shape[t] = (qt__amx_shape){AMX_M, 64}; /* C, A, B: 16 x 64 bytes */
    qt__amx_configure(shape, 8);
}

static inline int k16_planes(int kind) { return k16_has_min(kind) ? 3 : 2; }
/* Super-blocks per K chunk: 2 for Q4_K/Q5_K (24 KiB), 4 for Q6_K (32 KiB). */
static inline int k16_amx_kc(int kind) { return K16_AMX_BUF / (PLANE_BYTES * k16_planes(kind)); }

/* The 16 rows' scales (or mins) of one sub-block as int16 pairs, one per 32-bit lane i. */
K16_INLINE __m512i pair16(__m512i v32) {
    return _mm512_or_si512(_mm512_and_si512(v32, _mm512_set1_epi32(0xFFFF)), _mm512_slli_epi32(v32, 16));
}

/* Element group q's B-tile row in plane p of the super-block at sb: K step q / 16, row q % 16. */
K16_INLINE uint8_t *plane_row(uint8_t *sb, int p, int q) { return sb + (size_t)p * PLANE_BYTES + 64 * (size_t)q; }

/* w = v * sc (v: 64 codes, unsigned bytes; q6: minus 32 first; sc16: the rows' scales as int16 pairs) into
 * its two digit planes at lo and hi. */
K16_INLINE void put_digits(bool q6, __m512i v, __m512i sc16, uint8_t *lo, uint8_t *hi) {
    const __m512i m00ff = _mm512_set1_epi16(0x00FF);
    __m512i ve = _mm512_and_si512(v, m00ff), vo = _mm512_srli_epi16(v, 8);
    if (q6) {
        ve = _mm512_sub_epi16(ve, _mm512_set1_epi16(32));
        vo = _mm512_sub_epi16(vo, _mm512_set1_epi16(32));
    }
    const __m512i pe = _mm512_mullo_epi16(ve, sc16), po = _mm512_mullo_epi16(vo, sc16);
    /* 0xE4 = (A & C) | (B & ~C): low bytes of pe and po, then their high bytes */
    _mm512_store_si512((void *)lo, _mm512_ternarylogic_epi32(pe, _mm512_slli_epi16(po, 8), m00ff, 0xE4));
    _mm512_store_si512((void *)hi, _mm512_ternarylogic_epi32(_mm512_srli_epi16(pe, 8), po, m00ff, 0xE4));
}

/* Tile t (one super-block of 16 rows) into its planes at sb. */
K16_INLINE void unpack_sb(int kind, const uint8_t *t, uint8_t *sb) {
    const uint8_t *scl = t + k16_scales_off(kind);
    const __m512i low = _mm512_set1_epi8(0x0F);
    if (kind == K16_Q6_K) {
        const __m512i six = _mm512_set1_epi8(0x3F), two = _mm512_set1_epi8(0x03);
        for (int jj = 0; jj < 4; jj++) { /* chunks m = 4jj..4jj+3: sub-blocks jj + 4p */
            __m512i sc16[4];
#pragma GCC unroll 4
            for (int p = 0; p < 4; p++)
                sc16[p] = pair16(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(scl + 16 * (jj + 4 * p)))));
#pragma GCC unroll 4
            for (int qq = 0; qq < 4; qq++) {
                const int m = 4 * jj + qq;
                const __m512i w0 = _mm512_loadu_si512((const void *)(t + k16_q6_vec_at(m, 0)));
                const __m512i w1 = _mm512_loadu_si512((const void *)(t + k16_q6_vec_at(m, 1)));
                const __m512i w2 = _mm512_loadu_si512((const void *)(t + k16_q6_vec_at(m, 2)));
                __m512i v[4];
                v[0] = _mm512_and_si512(w0, six);
                v[1] = _mm512_and_si512(w1, six);
                v[2] = _mm512_and_si512(w2, six);
                /* as gemm_k16_avx512.c: the top bit pairs of w0, w1, w2 give the fourth code */
                const __m512i lo4 = _mm512_ternarylogic_epi32(_mm512_srli_epi16(w0, 6), _mm512_srli_epi16(w1, 4), two, 0xE4);
                v[3] = _mm512_and_si512(_mm512_ternarylogic_epi32(lo4, _mm512_srli_epi16(w2, 2), low, 0xE4), six);
#pragma GCC unroll 4
                for (int p = 0; p < 4; p++) /* element group m + 16p */
                    put_digits(true, v[p], sc16[p], plane_row(sb, 0, m + 16 * p), plane_row(sb, 1, m + 16 * p));
            }
        }
        return;
    }
    const uint8_t *codes = t + k16_codes_off(kind), *high = t + k16_high_off(kind), *mins = t + k16_mins_off(kind);
    const __m512i bit4 = _mm512_set1_epi8(0x10);
    __m512i sc16[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) sc16[j] = pair16(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(scl + 16 * j))));
#pragma GCC unroll 4
    for (int p = 0; p < 4; p++) { /* min plane: sub-blocks 2p, 2p + 1 are B rows 0..7, 8..15 of K step p */
        const __m512i mp = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(mins + 32 * p)));
        const __m512i m0 = _mm512_mullo_epi32(_mm512_and_si512(mp, _mm512_set1_epi32(0xFF)), _mm512_set1_epi32(0x01010101));
        const __m512i m1 = _mm512_mullo_epi32(_mm512_srli_epi32(mp, 8), _mm512_set1_epi32(0x01010101));
        for (int r = 0; r < 8; r++) {
            _mm512_store_si512((void *)plane_row(sb, 2, 16 * p + r), m0);
            _mm512_store_si512((void *)plane_row(sb, 2, 16 * p + 8 + r), m1);
        }
    }
    for (int k = 0; k < 32; k++) { /* element groups k (low nibbles) and k + 32 (high) */
        const __m512i w = _mm512_loadu_si512((const void *)(codes + 64 * k));
        __m512i lo = _mm512_and_si512(w, low), hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), low);
        if (kind == K16_Q5_K) {
            __mmask64 ml, mh;
            memcpy(&ml, high + 8 * k, 8);
            memcpy(&mh, high + 8 * (k + 32), 8);
            lo = _mm512_mask_add_epi8(lo, ml, lo, bit4);
            hi = _mm512_mask_add_epi8(hi, mh, hi, bit4);
        }
        put_digits(false, lo, sc16[k / 8], plane_row(sb, 0, k), plane_row(sb, 1, k));
        put_digits(false, hi, sc16[4 + k / 8], plane_row(sb, 0, k + 32), plane_row(sb, 1, k + 32));
    }
}

/* The tile work of one super-block for 16 batch rows: A from ya (the rows' block b, lda apart), B from the
 * planes at sb, the C sums to sums (lo, hi, min: 1 KiB each). */
K16_INLINE void sb_tiles(int kind, const uint8_t *ya, size_t lda, const uint8_t *sb, int32_t *sums) {
    const uint8_t *qs = ya + offsetof(block_q8_K, qs);
    _tile_zero(0);
    _tile_zero(1);
    if (k16_has_min(kind)) _tile_zero(2);
#define K16_STEP(S, AT)                                                                                      \
    do {                                                                                                     \
        _tile_loadd(AT, qs + 64 * (S), lda);                                                                 \
        _tile_loadd(5, sb + 1024 * (S), 64);                                                                 \
        _tile_dpbsud(0, AT, 5);                                                                              \
        _tile_loadd(6, sb + PLANE_BYTES + 1024 * (S), 64);                                                   \
        _tile_dpbssd(1, AT, 6);                                                                              \
        if (k16_has_min(kind)) {                                                                             \
            _tile_loadd(7, sb + 2 * PLANE_BYTES + 1024 * (S), 64);                                           \
            _tile_dpbsud(2, AT, 7);                                                                          \
        }                                                                                                    \
    } while (0)
    K16_STEP(0, 3);
    K16_STEP(1, 4);
    K16_STEP(2, 3);
    K16_STEP(3, 4);
#undef K16_STEP
    _tile_stored(0, sums, 64);
    _tile_stored(1, sums + 256, 64);
    if (k16_has_min(kind)) _tile_stored(2, sums + 512, 64);
}

/* The float steps of one super-block (tile t: the 16 rows' d, dmin) for 16 batch rows (ya: their block b). */
K16_INLINE void sb_steps(int kind, const int32_t *sums, const uint8_t *t, const uint8_t *ya, size_t lda,
                         __m512 acc[AMX_M]) {
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)t));
    const __m512 dm = k16_has_min(kind) ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(t + k16_dmin_off(kind))))
                                        : _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int c = 0; c < AMX_M; c++) {
        const __m512 dy = _mm512_set1_ps(((const block_q8_K *)(ya + (size_t)c * lda))->d);
        const __m512i lo = _mm512_load_si512((const void *)(sums + 16 * c));
        const __m512i hi = _mm512_load_si512((const void *)(sums + 256 + 16 * c));
        const __m512i isum = _mm512_add_epi32(_mm512_slli_epi32(hi, 8), lo);
        acc[c] = _mm512_fmadd_ps(_mm512_mul_ps(dy, dw), _mm512_cvtepi32_ps(isum), acc[c]);
        if (k16_has_min(kind)) {
            const __m512i msum = _mm512_load_si512((const void *)(sums + 512 + 16 * c));
            acc[c] = _mm512_fnmadd_ps(_mm512_mul_ps(dy, dm), _mm512_cvtepi32_ps(msum), acc[c]);
        }
    }
}

/* Super-blocks [b0, b1) of group g for the 16 batch rows at a, planes from buf; accumulators from 0
 * (first chunk) or from out (mask m: the group's rows that exist). */
K16_INLINE void tile_chunk(int kind, const uint8_t *g, const uint8_t *buf, int64_t b0, int64_t b1, const uint8_t *a,
                           size_t lda, float *out, int64_t ldo, __mmask16 m) {
    const size_t tile = k16_tile_bytes(kind), qb = sizeof(block_q8_K), sbb = (size_t)k16_planes(kind) * PLANE_BYTES;
    alignas(64) int32_t sums[2][3 * 256];
    __m512 acc[AMX_M];
#pragma GCC unroll 16
    for (int c = 0; c < AMX_M; c++) acc[c] = b0 ? _mm512_maskz_loadu_ps(m, out + c * ldo) : _mm512_setzero_ps();
    for (int64_t b = b0; b < b1; b++) {
        sb_tiles(kind, a + (size_t)b * qb, lda, buf + (size_t)(b - b0) * sbb, sums[b & 1]);
        if (b > b0) sb_steps(kind, sums[(b - 1) & 1], g + (size_t)(b - 1) * tile, a + (size_t)(b - 1) * qb, lda, acc);
    }
    sb_steps(kind, sums[(b1 - 1) & 1], g + (size_t)(b1 - 1) * tile, a + (size_t)(b1 - 1) * qb, lda, acc);
#pragma GCC unroll 16
    for (int c = 0; c < AMX_M; c++) _mm512_mask_storeu_ps(out + c * ldo, m, acc[c]);
}

/* nc a multiple of 16. */
K16_INLINE void k16_amx(int kind, const void *wp, int64_t nr, const uint8_t *A, size_t lda, int64_t nc, int64_t n,
                        float *out, int64_t ldo) {
    const uint8_t *W = wp;
    const int64_t nb = n / QK_K, ng = (nr + QT_X16_ROWS - 1) / QT_X16_ROWS, kc = k16_amx_kc(kind);
    const size_t tile = k16_tile_bytes(kind), gbytes = (size_t)nb * tile, sbb = (size_t)k16_planes(kind) * PLANE_BYTES;
    /* batch rows per panel: as many 16-row tiles as fit K16_AMX_L2, at least one, at most 16 */
    int64_t panel = (int64_t)(K16_AMX_L2 / (lda * AMX_M)) * AMX_M;
    panel = panel < AMX_M ? AMX_M : panel > 16 * AMX_M ? 16 * AMX_M : panel;
    alignas(64) uint8_t buf[K16_AMX_BUF];
    amx_configure();
    for (int64_t p0 = 0; p0 < nc; p0 += panel) {
        const int64_t p1 = p0 + panel < nc ? p0 + panel : nc;
        for (int64_t gi = 0; gi < ng; gi++) {
            const int64_t rows = nr - gi * QT_X16_ROWS < QT_X16_ROWS ? nr - gi * QT_X16_ROWS : QT_X16_ROWS;
            const __mmask16 m = (__mmask16)((1u << rows) - 1u);
            const uint8_t *g = W + (size_t)gi * gbytes;
            for (int64_t b0 = 0; b0 < nb; b0 += kc) {
                const int64_t b1 = b0 + kc < nb ? b0 + kc : nb;
                for (int64_t b = b0; b < b1; b++) unpack_sb(kind, g + (size_t)b * tile, buf + (size_t)(b - b0) * sbb);
                for (int64_t c = p0; c < p1; c += AMX_M)
                    tile_chunk(kind, g, buf, b0, b1, A + (size_t)c * lda, lda, out + c * ldo + gi * QT_X16_ROWS, ldo, m);
            }
        }
    }
    _tile_release();
}

#define K16_ENTRY(NAME, KIND)                                                                                 \
    void qt__gemm_k16_##NAME##_amx(const void *wp, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n, \
                                   float *out, int64_t ldo) {                                                 \
        const int64_t full = nc / AMX_M * AMX_M;                                                              \
        if (full) k16_amx(KIND, wp, nr, a, lda, full, n, out, ldo);                                            \
        if (nc > full)                                                                                         \
            qt__gemm_k16_##NAME##_avx512(wp, nr, (const uint8_t *)a + (size_t)full * lda, lda, nc - full, n,   \
                                         out + full * ldo, ldo);                                               \
    }
K16_ENTRY(q4_K, K16_Q4_K)
K16_ENTRY(q5_K, K16_Q5_K)
K16_ENTRY(q6_K, K16_Q6_K)
