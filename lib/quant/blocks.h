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

typedef struct { qt_half d; uint8_t qs[QK4_0 / 2]; } block_q4_0;
static_assert(sizeof(block_q4_0) == 18, "block_q4_0 size");

typedef struct { qt_half d, m; uint8_t qs[QK4_1 / 2]; } block_q4_1;
static_assert(sizeof(block_q4_1) == 20, "block_q4_1 size");

typedef struct { qt_half d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; } block_q5_0;
static_assert(sizeof(block_q5_0) == 22, "block_q5_0 size");

typedef struct { qt_half d, m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; } block_q5_1;
static_assert(sizeof(block_q5_1) == 24, "block_q5_1 size");

typedef struct { qt_half d; int8_t qs[QK8_0]; } block_q8_0;
static_assert(sizeof(block_q8_0) == 34, "block_q8_0 size");

typedef struct { qt_half d, s; int8_t qs[QK8_1]; } block_q8_1; /* s = d * sum(qs) */
static_assert(sizeof(block_q8_1) == 36, "block_q8_1 size");

typedef struct {
    uint8_t scales[QK_K / 16]; /* 4-bit scale | 4-bit min per 16 */
    uint8_t qs[QK_K / 4];
    qt_half d, dmin;
} block_q2_K;
static_assert(sizeof(block_q2_K) == 84, "block_q2_K size");

typedef struct {
    uint8_t hmask[QK_K / 8];
    uint8_t qs[QK_K / 4];
    uint8_t scales[12];
    qt_half d;
} block_q3_K;
static_assert(sizeof(block_q3_K) == 110, "block_q3_K size");

typedef struct {
    qt_half d, dmin;
    uint8_t scales[K_SCALE_SIZE];
    uint8_t qs[QK_K / 2];
} block_q4_K;
static_assert(sizeof(block_q4_K) == 144, "block_q4_K size");

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

typedef struct {
    uint8_t ql[QK_K / 2];
    uint8_t qh[QK_K / 4];
    int8_t scales[QK_K / 16];
    qt_half d;
} block_q6_K;
static_assert(sizeof(block_q6_K) == 210, "block_q6_K size");

typedef struct {
    float d;
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16];
} block_q8_K;
static_assert(sizeof(block_q8_K) == 292, "block_q8_K size");

typedef struct { qt_half d; uint8_t qs[QK4_NL / 2]; } block_iq4_nl;
static_assert(sizeof(block_iq4_nl) == 18, "block_iq4_nl size");

/* The IQ4_NL / IQ4_XS non-linear code book (ggml kvalues_iq4nl; lib/quant/q_iq4.c). */
extern const int8_t qt__kvalues_iq4nl[16];

typedef struct {
    qt_half d;
    uint16_t scales_h;
    uint8_t scales_l[QK_K / 64];
    uint8_t qs[QK_K / 2];
} block_iq4_xs;
static_assert(sizeof(block_iq4_xs) == 136, "block_iq4_xs size");

typedef struct {
    uint8_t qs[(QK_K - 4 * QK_K / 64) / 5]; /* 5 ternary digits per byte */
    uint8_t qh[QK_K / 64];                  /* 4 per byte */
    qt_half d;
} block_tq1_0;
static_assert(sizeof(block_tq1_0) == 54, "block_tq1_0 size");

typedef struct { uint8_t qs[QK_K / 4]; qt_half d; } block_tq2_0;
static_assert(sizeof(block_tq2_0) == 66, "block_tq2_0 size");

typedef struct { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; } block_mxfp4; /* e: E8M0 */
static_assert(sizeof(block_mxfp4) == 17, "block_mxfp4 size");

#endif
