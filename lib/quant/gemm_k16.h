/* lib/quant/gemm_k16.h — --numerics fast on repacked K-quant rows: the k16
 * layout (internal: the engine's matmul, gemm_k16*.c, tests, bench_gemm).
 *
 * Q4_K, Q5_K and Q6_K rows are copied once, at engine load, into groups of
 * QT_X16_ROWS (16) rows, the last group padded with zero rows, as the x16
 * formats are (gemm.h), so that one 512-bit load of codes feeds vpdpbusd for
 * 16 rows against one broadcast 4-byte word of a Q8_K activation row, and
 * the scales of 16 rows are one vector. Group g holds n / 256 tiles, one per
 * super-block column b; element group q (0..63) = elements 4q..4q+3:
 *     d:      the 16 rows' f16 super-scales, 32 bytes;
 *     dmin:   (Q4_K, Q5_K) their f16 min scales, 32 bytes;
 *     scales: per sub-block j (Q6_K 16 of 16 elements, int8; Q4_K/Q5_K 8 of
 *             32, 6-bit unsigned) 16 bytes, row i's at 16j + i;
 *     mins:   (Q4_K, Q5_K) 4 x 32 bytes: pair p, row i: bytes 32p + 2i and
 *             32p + 2i + 1 = the mins of sub-blocks 2p and 2p + 1 (so one
 *             widening gives int16 pairs for pmaddwd / vpdpwssd);
 *     codes:  (Q4_K, Q5_K) 32 vectors of 64 bytes, vector k holding 4 bytes
 *             per row (row i's at 4i..4i+3): low nibbles = the low 4 code
 *             bits of element group k, high nibbles of group k + 32;
 *     high:   Q5_K: per element group q a 64-bit mask (8 bytes at 8q), bit
 *             4i + e = the fifth bit of row i's element 4q + e;
 *     Q6_K:   16 chunks of three 64-byte vectors V0, V1, V2 (k16_q6_vec_at):
 *             chunk m covers element groups m + 16p (p = 0..3); row i byte e
 *             of Vp (p < 3) = the whole 6-bit code of element 4(m + 16p) + e
 *             in bits 0..5, and in bits 6..7 bits 2p, 2p + 1 of the code of
 *             element 4(m + 48) + e. So p = 0..2 unpack with one AND each and
 *             p = 3 from the three top bit pairs (three shifts, two ternary
 *             logic ops and one AND): 9 vector ops for 4 x 64 codes, where
 *             nibbles plus a vector of top bits took 17.
 * Q6_K's copy is exactly the tensor's size; Q4_K's and Q5_K's are 64 bytes
 * per tile larger (2.8 % and 2.3 %: the 6-bit scales and mins as bytes).
 *
 * The float order is the fast K order of gemm_k.h, unchanged: per
 * super-block the exact integers isum and msum, then one or two fused
 * multiply-adds. So a k16 kernel gives, element for element, the bits of the
 * gemm_fast K kernels and of qt__dot_fast_*_ref on the plain rows, at any
 * tiling, batch and thread split: packing changes speed only.
 */
#ifndef QT_QUANT_GEMM_K16_H
#define QT_QUANT_GEMM_K16_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemm.h"
#include "quanta/quant.h"

enum { K16_Q4_K, K16_Q5_K, K16_Q6_K, K16_KINDS };

/* Per format: sub-blocks per super-block, the plain block's bytes, whether it has mins. */
static inline int k16_nsub(int kind) { return kind == K16_Q6_K ? 16 : 8; }
static inline bool k16_has_min(int kind) { return kind != K16_Q6_K; }
static inline size_t k16_block_bytes(int kind) { return kind == K16_Q4_K ? 144 : kind == K16_Q5_K ? 176 : 210; }

/* Offsets inside one tile of 16 rows x one super-block. */
static inline size_t k16_dmin_off(int kind) { (void)kind; return 32; }
static inline size_t k16_scales_off(int kind) { return 32 + 32 * (size_t)k16_has_min(kind); }
static inline size_t k16_mins_off(int kind) { return k16_scales_off(kind) + 16 * (size_t)k16_nsub(kind); }
static inline size_t k16_codes_off(int kind) { return k16_mins_off(kind) + 128 * (size_t)k16_has_min(kind); }
static inline size_t k16_high_off(int kind) { return k16_codes_off(kind) + 2048; }
/* Nibble vector k (0..31) of a Q4_K/Q5_K tile, as a byte offset from the tile's start. */
static inline size_t k16_codes_at(int kind, int k) { return k16_codes_off(kind) + 64 * (size_t)k; }
/* Q6_K: vector v (0..2) of chunk m (0..15), from the tile's start. */
static inline size_t k16_q6_vec_at(int m, int v) { return k16_codes_off(K16_Q6_K) + 192 * (size_t)m + 64 * (size_t)v; }
static inline size_t k16_tile_bytes(int kind) {
    return k16_codes_off(kind) + (kind == K16_Q5_K ? 2048 + 512 : kind == K16_Q6_K ? 3072 : 2048);
}

/* Bytes of the k16 copy of nr rows of n elements (0: t is not Q4_K/Q5_K/Q6_K or n % 256). */
size_t qt__k16_bytes(qt_type t, int64_t nr, int64_t n);
/* Bytes of one group of QT_X16_ROWS packed rows. */
size_t qt__k16_group_bytes(qt_type t, int64_t n);
/* Pack groups g0 <= g < g1 of nr rows (ldw bytes apart) into dst (qt__k16_bytes of all nr rows):
 * each group is written alone, so threads may pack disjoint ranges. */
void qt__k16_pack_groups(qt_type t, const void *w, size_t ldw, int64_t nr, int64_t n, void *dst, int64_t g0, int64_t g1);
/* All groups. */
void qt__k16_pack(qt_type t, const void *w, size_t ldw, int64_t nr, int64_t n, void *dst);

/* A kernel on k16-packed rows has the x16 kernels' signature (qt__gemm_x16_fn),
 * with Q8_K activation rows (lda bytes apart). The scalar reference: */
void qt__gemm_k16_ref(qt_type t, const void *wp, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                      float *out, int64_t ldo);

/* The resolved k16 kernel for t at this CPU's level, or NULL. */
qt__gemm_x16_fn qt__gemm_k16_kernel(qt_type t);

#define QT_K16_DECLARE(SUFFIX)                                                                               \
    void qt__gemm_k16_q4_K_##SUFFIX(const void *, int64_t, const void *, size_t, int64_t, int64_t, float *, int64_t); \
    void qt__gemm_k16_q5_K_##SUFFIX(const void *, int64_t, const void *, size_t, int64_t, int64_t, float *, int64_t); \
    void qt__gemm_k16_q6_K_##SUFFIX(const void *, int64_t, const void *, size_t, int64_t, int64_t, float *, int64_t);
QT_K16_DECLARE(ref)
#ifdef QT_ARCH_X86
QT_K16_DECLARE(amx) /* gemm_k16_amx.c: AMX tiles from 16 batch rows, the AVX-512 kernel for the rest */
QT_K16_DECLARE(avx512)
void qt__gemm_k16_q4_K_avx2(const void *, int64_t, const void *, size_t, int64_t, int64_t, float *, int64_t);
void qt__gemm_k16_q5_K_avx2(const void *, int64_t, const void *, size_t, int64_t, int64_t, float *, int64_t);
#endif
#undef QT_K16_DECLARE

#endif
