/* lib/quant/gemm_x16.h — the x16 formats as data (internal: gemm_x16*.c).
 * gemm.h describes the layout; this table is where each format's block
 * fields and code offset are written, once, for the packer, the scalar
 * references and the SIMD kernels (in which `kind` is a constant, so the
 * lookups fold away). */
#ifndef QT_QUANT_GEMM_X16_H
#define QT_QUANT_GEMM_X16_H

#include <stdbool.h>
#include <stddef.h>

#include "quanta/quant.h"

enum { X16_Q4_0, X16_Q4_1, X16_Q5_0, X16_Q5_1, X16_IQ4_NL, X16_Q8_0, X16_KINDS };

typedef struct {
    qt_type type;
    unsigned char block_bytes;      /* the plain block (blocks.h) */
    unsigned char m_at, qh_at, qs_at; /* byte offsets in the plain block (d is at 0); m_at/qh_at 0: none */
    unsigned char code_bytes;       /* per row per block in the tile: 16 (4-bit codes) or 32 (q8_0) */
    short offset;                   /* unsigned code = q + offset */
    bool lut;                       /* 4-bit indices into qt__kvalues_iq4nl (code = value + 128) */
} qt__x16_format;

static const qt__x16_format qt__x16_formats[X16_KINDS] = {
    [X16_Q4_0] = {QT_TYPE_Q4_0, 18, 0, 0, 2, 16, 8, false},
    [X16_Q4_1] = {QT_TYPE_Q4_1, 20, 2, 0, 4, 16, 0, false},
    [X16_Q5_0] = {QT_TYPE_Q5_0, 22, 0, 2, 6, 16, 16, false},
    [X16_Q5_1] = {QT_TYPE_Q5_1, 24, 2, 4, 8, 16, 0, false},
    [X16_IQ4_NL] = {QT_TYPE_IQ4_NL, 18, 0, 0, 2, 16, 128, true},
    [X16_Q8_0] = {QT_TYPE_Q8_0, 34, 0, 0, 2, 32, 128, false},
};

/* Offsets inside one tile of 16 rows x one block (gemm.h). */
static inline bool x16_has_m(int k) { return qt__x16_formats[k].m_at != 0; }
static inline bool x16_has_qh(int k) { return qt__x16_formats[k].qh_at != 0; }
static inline size_t x16_m_off(int k) { (void)k; return 32; }
static inline size_t x16_qh_off(int k) { return 32 + 32 * (size_t)x16_has_m(k); }
static inline size_t x16_codes_off(int k) { return x16_qh_off(k) + 64 * (size_t)x16_has_qh(k); }
static inline size_t x16_tile_bytes(int k) { return 16 * (size_t)qt__x16_formats[k].block_bytes; }

#endif
