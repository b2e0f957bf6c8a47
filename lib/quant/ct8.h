/* lib/quant/ct8.h — engine-resident rows for the weight-only 8-bit
 * compressed-tensors formats (internal; docs/w8a8.md "Weight-only rows").
 *
 * w8a16: int8 codes q with, per group, an f32 scale s (a value of the model
 * dtype) and an int8 zero point zp (0 when symmetric); groups of 128
 * (QT_TYPE_CT_W8_G128) or one group per row (QT_TYPE_CT_W8_CH: the channel
 * strategy, and the tensor strategy with its one scale repeated on every row).
 * A weight decodes as qt_ct_int_dequantize computes it:
 *   w = qt_ct_round_dtype((float)(q - zp) * s, dtype)
 * so a row decoded here has the f32 bits the dequantize-on-load path gave.
 *
 * Row of n elements:
 *   [u32 qt_ct_dtype]
 *   [ng group params]   f32 scale + i8 zero point (5 bytes); ng = ceil(n / 128), or 1 (CH)
 *   [n int8 codes]      the checkpoint's q, in element order
 *
 * Activations are f32 (vec_dot_type f32: weight-only semantics) and the dots
 * are the engine's f32 dots on the decoded row: vec_dot in ggml_vec_dot_f32's
 * order (qt__dot_f32_ref), vec_dot_gemm in tinyBLAS's (qt__gemm_f32_ref). So the
 * engine's results are the old dequantize-on-load path's bits, with 8 bits per
 * weight (plus 5 bytes per group) resident and streamed instead of 32. ct4.h is
 * the 4-bit counterpart.
 */
#ifndef QT_QUANT_CT8_H
#define QT_QUANT_CT8_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "quanta/ct.h"
#include "quanta/num.h"
#include "quanta/quant.h"

#define QT_CT8_GROUP 128 /* the grouped type's group size */
#define QT_CT8_PARAM 5   /* bytes per group: f32 scale, i8 zero point */

/* True for the two ct8 types. */
static inline bool qt__ct8_is(qt_type t) { return t == QT_TYPE_CT_W8_G128 || t == QT_TYPE_CT_W8_CH; }
/* Groups of a row of n elements. */
static inline int64_t qt__ct8_groups(qt_type t, int64_t n) {
    return t == QT_TYPE_CT_W8_CH ? 1 : (n + QT_CT8_GROUP - 1) / QT_CT8_GROUP;
}
/* The group of element i. */
static inline int64_t qt__ct8_group_of(qt_type t, int64_t i) { return t == QT_TYPE_CT_W8_CH ? 0 : i / QT_CT8_GROUP; }
static inline uint32_t qt__ct8_dtype(const void *row) {
    uint32_t d;
    memcpy(&d, row, 4);
    return d;
}
static inline void qt__ct8_param(const void *row, int64_t g, float *s, int *zp) {
    const uint8_t *p = (const uint8_t *)row + 4 + (size_t)g * QT_CT8_PARAM;
    memcpy(s, p, 4);
    *zp = (int8_t)p[4];
}
static inline const int8_t *qt__ct8_codes(qt_type t, const void *row, int64_t n) {
    return (const int8_t *)row + 4 + (size_t)qt__ct8_groups(t, n) * QT_CT8_PARAM;
}

size_t qt__ct8_row_size(qt_type t, int64_t n);
/* Elements i0..i1-1 of a row of n, decoded one by one (the scalar reference; the SIMD files' tails). */
void qt__ct8_decode(qt_type t, const void *row, int64_t n, int64_t i0, int64_t i1, float *out);
size_t qt__ct8_g128_row_size(int64_t n);
size_t qt__ct8_ch_row_size(int64_t n);

/* rows x cols of a ct8 type from the checkpoint's codes q (rows x cols), scales (f32 values of dtype
 * dt; per group for G128, per row for CH, or one for the whole tensor when n_scales is 1) and zero
 * points (the same count; NULL: symmetric). */
void qt__ct8_pack(qt_type type, qt_ct_dtype dt, const int8_t *q, const float *scales, const int8_t *zp,
                  int64_t n_scales, int64_t rows, int64_t cols, void *dst);

/* to_float, and the scalar references of the dots (x: the row, y: n f32 activations). */
#define QT__CT8_DECL(t)                                                   \
    void qt__ct8_##t##_to_float(const void *row, float *y, int64_t n);    \
    float qt__dot_ct8_##t##_ref(const void *x, const void *y, int64_t n); \
    float qt__gemm_ct8_##t##_ref(const void *x, const void *y, int64_t n);
QT__CT8_DECL(g128)
QT__CT8_DECL(ch)
#ifdef QT_ARCH_X86
#define QT__CT8_DECL_X86(t, SUFFIX)                                                   \
    void qt__ct8_##t##_to_float_##SUFFIX(const void *row, float *y, int64_t n);       \
    float qt__dot_ct8_##t##_##SUFFIX(const void *x, const void *y, int64_t n);        \
    float qt__gemm_ct8_##t##_##SUFFIX(const void *x, const void *y, int64_t n);
QT__CT8_DECL_X86(g128, avx2)
QT__CT8_DECL_X86(ch, avx2)
QT__CT8_DECL_X86(g128, avx512)
QT__CT8_DECL_X86(ch, avx512)
#undef QT__CT8_DECL_X86
#endif
#undef QT__CT8_DECL

#endif
