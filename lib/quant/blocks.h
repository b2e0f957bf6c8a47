/* lib/quant/blocks.h — one packed struct per ggml block format.
 *
 * Layouts are ggml's (ggml-common.h; docs/formats.md §3.2), byte for byte, with
 * their sizes asserted. Half-precision fields are stored as raw uint16_t bits
 * (convert with qt_fp16_to_f32 / qt_f32_to_fp16 from quanta/num.h).
 */
#ifndef QT_QUANT_BLOCKS_H
#define QT_QUANT_BLOCKS_H

#include <assert.h>
#include <stdint.h>

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32
#define QK8_1 32
#define QK_K 256
#define K_SCALE_SIZE 12
#define QK4_NL 32
#define QK_MXFP4 32

typedef uint16_t qt_half; /* IEEE binary16 bits */

/* Q4_0, 4.5 bits/weight: d = scale (f16); qs = 32 4-bit codes, element j in the low
 * nibble and j+16 in the high nibble of qs[j]; x = (code - 8) * d. */
typedef struct { qt_half d; uint8_t qs[QK4_0 / 2]; } block_q4_0;
static_assert(sizeof(block_q4_0) == 18, "block_q4_0 size");

/* Q4_1, 5.0 bits/weight: d = scale, m = minimum (f16); qs as Q4_0; x = code * d + m. */
typedef struct { qt_half d, m; uint8_t qs[QK4_1 / 2]; } block_q4_1;
static_assert(sizeof(block_q4_1) == 20, "block_q4_1 size");

/* Q5_0, 5.5 bits/weight: d = scale; qh = bit 4 of element j at bit j (little-endian u32);
 * qs = the low 4 bits as Q4_0; x = (code - 16) * d. */
typedef struct { qt_half d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; } block_q5_0;
static_assert(sizeof(block_q5_0) == 22, "block_q5_0 size");

/* Q5_1, 6.0 bits/weight: d = scale, m = minimum; qh, qs as Q5_0; x = code * d + m. */
typedef struct { qt_half d, m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; } block_q5_1;
static_assert(sizeof(block_q5_1) == 24, "block_q5_1 size");

/* Q8_0, 8.5 bits/weight: d = amax / 127 (f16); qs = 32 signed codes; x = q * d. */
typedef struct { qt_half d; int8_t qs[QK8_0]; } block_q8_0;
static_assert(sizeof(block_q8_0) == 34, "block_q8_0 size");

/* Q8_1, 9.0 bits/weight, an activation type (vec_dot partner of Q4_1/Q5_1): d as Q8_0;
 * s = d * sum(qs) (f16), which lets the dot product add the weights' minimum once. */
typedef struct { qt_half d, s; int8_t qs[QK8_1]; } block_q8_1; /* s = d * sum(qs) */
static_assert(sizeof(block_q8_1) == 36, "block_q8_1 size");

/* Q2_K, 2.625 bits/weight, 256 = 16 sub-blocks of 16: scales = per sub-block 4-bit scale
 * (low nibble) and 4-bit min (high); qs = 2-bit codes, four per byte; d, dmin = f16
 * super-scales of the scales and mins; x = d * sc * q - dmin * m. */
typedef struct {
    uint8_t scales[QK_K / 16]; /* 4-bit scale | 4-bit min per 16 */
    uint8_t qs[QK_K / 4];
    qt_half d, dmin;
} block_q2_K;
static_assert(sizeof(block_q2_K) == 84, "block_q2_K size");

/* Q3_K, 3.4375 bits/weight, 16 sub-blocks of 16: hmask = the high (third) bit of every
 * code; qs = the low 2 bits, four per byte; scales = 16 6-bit signed scales packed in 12
 * bytes; d = f16 super-scale; x = d * (sc - 32) * (q - 4). */
typedef struct {
    uint8_t hmask[QK_K / 8];
    uint8_t qs[QK_K / 4];
    uint8_t scales[12];
    qt_half d;
} block_q3_K;
static_assert(sizeof(block_q3_K) == 110, "block_q3_K size");

/* Q4_K, 4.5 bits/weight, 8 sub-blocks of 32: d, dmin = f16 super-scales; scales = 8 6-bit
 * scales and 8 6-bit mins in 12 bytes (qt__get_scale_min_k4); qs = 4-bit codes, 32 elements
 * per nibble half of each 32 bytes; x = d * sc * q - dmin * m. */
typedef struct {
    qt_half d, dmin;
    uint8_t scales[K_SCALE_SIZE];
    uint8_t qs[QK_K / 2];
} block_q4_K;
static_assert(sizeof(block_q4_K) == 144, "block_q4_K size");

/* Q5_K, 5.5 bits/weight: as Q4_K plus qh = the fifth bit of every code. */
typedef struct {
    qt_half d, dmin;
    uint8_t scales[K_SCALE_SIZE];
    uint8_t qh[QK_K / 8];
    uint8_t qs[QK_K / 2];
} block_q5_K;
static_assert(sizeof(block_q5_K) == 176, "block_q5_K size");

/* Sub-block j's 6-bit scale and min from the 12 packed scale bytes of a Q4_K
 * or Q5_K block (ggml get_scale_min_k4; docs/formats.md §3.4 "Scale packing"). */
static inline void qt__get_scale_min_k4(int j, const uint8_t *q, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* Q6_K, 6.5625 bits/weight, 16 sub-blocks of 16: ql = low 4 bits, qh = high 2 bits of each
 * 6-bit code; scales = 16 signed 8-bit scales; d = f16 super-scale; x = d * sc * (q - 32). */
typedef struct {
    uint8_t ql[QK_K / 2];
    uint8_t qh[QK_K / 4];
    int8_t scales[QK_K / 16];
    qt_half d;
} block_q6_K;
static_assert(sizeof(block_q6_K) == 210, "block_q6_K size");

/* Q8_K, 9.125 bits/weight, an activation type (vec_dot partner of the k-quants): d = f32
 * scale; qs = 256 signed codes; bsums = sums of each 16 codes (for the mins). */
typedef struct {
    float d;
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16];
} block_q8_K;
static_assert(sizeof(block_q8_K) == 292, "block_q8_K size");

/* IQ4_NL, 4.5 bits/weight: d = f16 scale; qs = 4-bit indices into qt__kvalues_iq4nl, laid
 * out as Q4_0; x = d * kvalues[code]. */
typedef struct { qt_half d; uint8_t qs[QK4_NL / 2]; } block_iq4_nl;
static_assert(sizeof(block_iq4_nl) == 18, "block_iq4_nl size");

/* The IQ4_NL / IQ4_XS non-linear code book (ggml kvalues_iq4nl; lib/quant/q_iq4.c). */
extern const int8_t qt__kvalues_iq4nl[16];

/* IQ4_XS, 4.25 bits/weight, 8 sub-blocks of 32: d = f16 super-scale; 6-bit sub-scales as
 * low 4 bits in scales_l (two per byte) and high 2 bits in scales_h; qs = code-book indices;
 * x = d * (sc - 32) * kvalues[code]. */
typedef struct {
    qt_half d;
    uint16_t scales_h;
    uint8_t scales_l[QK_K / 64];
    uint8_t qs[QK_K / 2];
} block_iq4_xs;
static_assert(sizeof(block_iq4_xs) == 136, "block_iq4_xs size");

/* TQ1_0, 1.6875 bits/weight: ternary codes (-1, 0, 1) packed 5 per byte in qs (base 3) and 4
 * per byte in qh; d = f16 scale; x = d * t. */
typedef struct {
    uint8_t qs[(QK_K - 4 * QK_K / 64) / 5]; /* 5 ternary digits per byte */
    uint8_t qh[QK_K / 64];                  /* 4 per byte */
    qt_half d;
} block_tq1_0;
static_assert(sizeof(block_tq1_0) == 54, "block_tq1_0 size");

/* TQ2_0, 2.0625 bits/weight: ternary codes as 2-bit values (t + 1), four per byte; d = f16
 * scale; x = d * t. */
typedef struct { uint8_t qs[QK_K / 4]; qt_half d; } block_tq2_0;
static_assert(sizeof(block_tq2_0) == 66, "block_tq2_0 size");

/* MXFP4, 4.25 bits/weight (OCP MX): e = shared E8M0 scale exponent; qs = 32 E2M1 codes,
 * element j low and j+16 high nibble of qs[j]; x = e2m1(code) * 2^(e - 127) (ggml keeps
 * the codes doubled, so its scale is 2^(e - 128)). */
typedef struct { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; } block_mxfp4; /* e: E8M0 */
static_assert(sizeof(block_mxfp4) == 17, "block_mxfp4 size");

/* Q1_0 and Q2_0 (ggml type ids 41, 42; new in llama.cpp 2026, ggml-common.h at
 * commit 3f545bec): one fp16 scale per block. Q1_0: 128 sign bits, element j
 * in bit j%8 of qs[j/8], value +d (bit set) or -d; 1.125 bpw. Q2_0: 64
 * two-bit codes, element j in bits 2*(j%4) of qs[j/4], value (code-1)*d;
 * 2.25 bpw. */
#define QK1_0 128
#define QK2_0 64
typedef struct { qt_half d; uint8_t qs[QK1_0 / 8]; } block_q1_0;
static_assert(sizeof(block_q1_0) == 18, "block_q1_0 size");

typedef struct { qt_half d; uint8_t qs[QK2_0 / 4]; } block_q2_0;
static_assert(sizeof(block_q2_0) == 18, "block_q2_0 size");

/* ---- i-quants below 4 bits (lib/quant/q_iq.c; code books in iq_grids.c) ----
 * 256-element super-blocks. A "grid index" names one point of the type's
 * code book: 8 magnitudes (IQ2_*, IQ1_*) or 4 (IQ3_*). Sign bytes hold one
 * bit per element (set = negative); where only 7 are stored, the eighth makes
 * the number of negatives even (ggml ksigns_iq2xs). Sub-block scales are
 * 4-bit (3-bit for IQ1) odd multiples of the super-block scale d. */

/* 2.0625 bpw. Per 32 elements, two little-endian uint32 words in qs: four
 * 8-bit grid indices, then four 7-bit sign groups (bits 0..27) and the
 * 4-bit scale s (bits 28..31); scale d*(0.5 + s)/4. */
typedef struct { qt_half d; uint16_t qs[QK_K / 8]; } block_iq2_xxs;
static_assert(sizeof(block_iq2_xxs) == 66, "block_iq2_xxs size");

/* 2.3125 bpw. qs: per 8 elements a 9-bit grid index | 7 sign bits << 9;
 * scales: two 4-bit scales per 32 (one per 16), d*(0.5 + s)/4. */
typedef struct { qt_half d; uint16_t qs[QK_K / 8]; uint8_t scales[QK_K / 32]; } block_iq2_xs;
static_assert(sizeof(block_iq2_xs) == 74, "block_iq2_xs size");

/* 2.5625 bpw. qs[0..31]: low 8 bits of the 10-bit grid index per 8
 * elements, qs[32..63]: their 8 sign bits; qh: the 2 high index bits of four
 * groups per byte; scales as IQ2_XS. */
typedef struct {
    qt_half d;
    uint8_t qs[QK_K / 4];
    uint8_t qh[QK_K / 32];
    uint8_t scales[QK_K / 32];
} block_iq2_s;
static_assert(sizeof(block_iq2_s) == 82, "block_iq2_s size");

/* 3.0625 bpw. qs[0..63]: 8-bit grid index per 4 elements; qs[64..95]: per 32
 * elements a little-endian uint32 of four 7-bit sign groups and the 4-bit
 * scale s << 28; scale d*(0.5 + s)/2. */
typedef struct { qt_half d; uint8_t qs[3 * QK_K / 8]; } block_iq3_xxs;
static_assert(sizeof(block_iq3_xxs) == 98, "block_iq3_xxs size");

/* 3.4375 bpw. 9-bit grid index per 4 elements (low 8 in qs, bit 8 in qh,
 * one qh byte per 32); 8 sign bits per byte; one 4-bit scale per 32
 * (two per byte), d*(1 + 2s). */
typedef struct {
    qt_half d;
    uint8_t qs[QK_K / 4];
    uint8_t qh[QK_K / 32];
    uint8_t signs[QK_K / 8];
    uint8_t scales[QK_K / 64];
} block_iq3_s;
static_assert(sizeof(block_iq3_s) == 110, "block_iq3_s size");

/* 1.5625 bpw. Values in {-1, 0, 1} + delta. Per 32 elements: four low bytes
 * of 11-bit grid indices in qs, and qh = 3 high bits per index (bits 0..11),
 * 3-bit scale s (bits 12..14), delta sign (bit 15: -IQ1S_DELTA); scale
 * d*(2s + 1). */
typedef struct { qt_half d; uint8_t qs[QK_K / 8]; uint16_t qh[QK_K / 32]; } block_iq1_s;
static_assert(sizeof(block_iq1_s) == 50, "block_iq1_s size");

/* 1.75 bpw. No separate d: its fp16 bits are the top nibbles of the four
 * little-endian uint16 words of scales, whose low 12 bits hold four 3-bit
 * scales (one per 16 elements, d*(2s + 1)). qh: per 16 elements the 3 high
 * bits of two 11-bit indices (bits 0..2, 4..6) and their delta signs (bit 3,
 * bit 7). */
typedef struct {
    uint8_t qs[QK_K / 8];
    uint8_t qh[QK_K / 16];
    uint8_t scales[QK_K / 32];
} block_iq1_m;
static_assert(sizeof(block_iq1_m) == 56, "block_iq1_m size");

#define QT_IQ1S_DELTA 0.125f /* ggml IQ1S_DELTA (IQ1M_DELTA is the same) */

#endif
