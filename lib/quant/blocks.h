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

#endif
