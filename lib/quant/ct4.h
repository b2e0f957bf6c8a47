/* lib/quant/ct4.h — engine-resident rows for the weight-only 4-bit
 * compressed-tensors formats (internal; docs/w8a8.md "Weight-only rows").
 *
 * w4a16 (int4 groups, symmetric or with zero points; one traits row per group
 * size 32, 64, 128), nvfp4 (E2M1 codes, an E4M3 scale per 16, an f32 global
 * scale) and mxfp4 (E2M1 codes, an E8M0 scale per 32) all decode a weight as
 * lut_g[code]: 16 f32 values per group g, the group's dequantized code book.
 * The lookup table is exactly what the load-time dequantizers of ct.h compute
 * for each code, so a weight decoded here has the f32 bits those gave:
 *   int4   lut[c] = qt_ct_round_dtype((float)((c - 8) - zp) * scale, dtype)   (c = q + 8)
 *   nvfp4  lut[c] = e2m1(c) * (e4m3(scale) / global_scale)
 *   mxfp4  lut[c] = e2m1(c) * e8m0(scale)
 *
 * Row of n elements (n a multiple of 32 and of the group size G):
 *   [4-byte row header]  int4: u32 qt_ct_dtype; nvfp4: f32 global scale; mxfp4: 0
 *   [n/G group params]   int4: f32 scale + i8 zero point (5 bytes); nvfp4: e4m3 byte; mxfp4: e8m0 byte
 *   [n/2 code bytes]     per 32-element chunk 16 bytes: byte j's low nibble is element j,
 *                        its high nibble element j + 16 (one 16-byte load widens to
 *                        elements 0..15 and, shifted, 16..31)
 *
 * Activations are f32 (vec_dot_type f32: weight-only semantics), and the dots
 * are the f32 dots of the engine on the dequantized row: vec_dot is
 * ggml_vec_dot_f32's order (qt__dot_f32_ref), vec_dot_gemm tinyBLAS's
 * (qt__gemm_f32_ref). So the engine's results are the bits the dequantize-on-
 * load path gave, with 4.x bits per weight resident instead of 32.
 */
#ifndef QT_QUANT_CT4_H
#define QT_QUANT_CT4_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "quanta/ct.h"
#include "quanta/num.h"
#include "quanta/quant.h"

#define QT_CT4_CHUNK 32 /* elements per code chunk (16 bytes) */

typedef enum { QT_CT4_INT4, QT_CT4_NVFP4, QT_CT4_MXFP4 } qt__ct4_kind;

/* The kind, group size and group-parameter bytes of a ct4 type; false if t is not one. */
typedef struct {
    qt__ct4_kind kind;
    int group;
    int param_bytes;
} qt__ct4_form;
bool qt__ct4_form_of(qt_type t, qt__ct4_form *f);
/* The ct4 type of an int4 group size (32, 64, 128), QT_TYPE_COUNT for others. */
qt_type qt__ct4_int4_type(int64_t group_size);

/* E2M1 code -> value (OCP MX spec table; test_ct_rows checks it against qt_e2m1_to_f32). */
extern const float qt__e2m1_values[16];

static inline const uint8_t *qt__ct4_params(const void *row) { return (const uint8_t *)row + 4; }
static inline const uint8_t *qt__ct4_codes(const void *row, int64_t n, const qt__ct4_form *f) {
    return (const uint8_t *)row + 4 + (size_t)(n / f->group) * (size_t)f->param_bytes;
}

/* The factor of group g's E2M1 values (nvfp4, mxfp4). */
static inline float qt__ct4_fp4_scale(const void *row, const qt__ct4_form *f, int64_t g) {
    const uint8_t b = qt__ct4_params(row)[g];
    if (f->kind == QT_CT4_MXFP4) return qt_e8m0_to_f32(b);
    float gs;
    memcpy(&gs, row, 4);
    return qt_e4m3_to_f32(b) / gs;
}

/* The 16-entry code book of group g of a row (see the top of this file). */
static inline void qt__ct4_lut(const void *row, const qt__ct4_form *f, int64_t g, float lut[16]) {
    if (f->kind != QT_CT4_INT4) {
        const float scale = qt__ct4_fp4_scale(row, f, g);
        for (int c = 0; c < 16; c++) lut[c] = qt__e2m1_values[c] * scale;
        return;
    }
    const uint8_t *p = qt__ct4_params(row) + (size_t)g * (size_t)f->param_bytes;
    uint32_t dt;
    float s;
    memcpy(&dt, row, 4);
    memcpy(&s, p, 4);
    const int zp = (int8_t)p[4];
    for (int c = 0; c < 16; c++) lut[c] = qt_ct_round_dtype((float)((c - 8) - zp) * s, (qt_ct_dtype)dt);
}

size_t qt__ct4_row_size(qt_type t, int64_t n);
size_t qt__ct4_w4g32_row_size(int64_t n);
size_t qt__ct4_w4g64_row_size(int64_t n);
size_t qt__ct4_w4g128_row_size(int64_t n);
size_t qt__ct4_nvfp4_row_size(int64_t n);
size_t qt__ct4_mxfp4_row_size(int64_t n);

/* Writing a row: the header word, then per element its 4-bit code (int4: q + 8). */
void qt__ct4_set_header(void *row, uint32_t word);
void qt__ct4_set_param(void *row, const qt__ct4_form *f, int64_t g, float scale, int8_t zp, uint8_t byte);
void qt__ct4_set_codes(void *row, int64_t n, const qt__ct4_form *f, const uint8_t *codes);
/* rows x cols of an int4 type from the checkpoint's codes q (stored value, q + 8 is the code), per group
 * scales (f32 values of dtype dt) and zero points (NULL: symmetric); codes: cols bytes of scratch. */
void qt__ct4_pack_int4(qt_type type, qt_ct_dtype dt, const int8_t *q, const float *scales, const int8_t *zp,
                       int64_t rows, int64_t cols, void *dst, uint8_t *codes);

/* to_float, and the scalar references of the dots (x: the row, y: n f32 activations). */
#define QT__CT4_DECL(t)                                                       \
    void qt__ct4_##t##_to_float(const void *row, float *y, int64_t n);        \
    float qt__dot_ct4_##t##_ref(const void *x, const void *y, int64_t n);     \
    float qt__gemm_ct4_##t##_ref(const void *x, const void *y, int64_t n);
QT__CT4_DECL(w4g32)
QT__CT4_DECL(w4g64)
QT__CT4_DECL(w4g128)
QT__CT4_DECL(nvfp4)
QT__CT4_DECL(mxfp4)
#ifdef QT_ARCH_X86
#define QT__CT4_DECL_X86(t)                                                   \
    void qt__ct4_##t##_to_float_avx2(const void *row, float *y, int64_t n);   \
    void qt__ct4_##t##_to_float_avx512(const void *row, float *y, int64_t n); \
    float qt__dot_ct4_##t##_avx2(const void *x, const void *y, int64_t n);    \
    float qt__gemm_ct4_##t##_avx2(const void *x, const void *y, int64_t n);   \
    float qt__dot_ct4_##t##_avx512(const void *x, const void *y, int64_t n);  \
    float qt__gemm_ct4_##t##_avx512(const void *x, const void *y, int64_t n);   \
    void qt__gemm_tiles_ct4_##t##_avx512(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, \
                                         int64_t nc, int64_t n, float *out, int64_t ldo); /* int4 types only */
QT__CT4_DECL_X86(w4g32)
QT__CT4_DECL_X86(w4g64)
QT__CT4_DECL_X86(w4g128)
QT__CT4_DECL_X86(nvfp4)
QT__CT4_DECL_X86(mxfp4)
#undef QT__CT4_DECL_X86
#endif
#undef QT__CT4_DECL


/* ---- --numerics fast: int8 activations and integer dots (int4 g128 rows) ------------
 *
 * Marlin-class W4A8 for the CPU (Frantar et al. 2024, "MARLIN: Mixed-Precision
 * Auto-Regressive Parallel Inference on Large Language Models", and QQQ, Zhang
 * et al. 2024: 4-bit weights times per-group int8 activations): the f32 activation
 * row is quantized once per matmul to int8 per group of 128 (absmax / 127, one f32
 * scale d_g and the code sum S_g per group), and each group's product is exact in
 * int32 (vpdpbusd on AVX-512 VNNI, vpmaddubsw + vpmaddwd on AVX2). Weights are the
 * codes c = q + 8 and the f32 scale s_g and zero point zp_g of the row:
 *   w = (c - 8 - zp_g) * s_g  (not rounded to the checkpoint dtype: fast only).
 * The activation row (qt__ct4_q8_row_size bytes): n/128 headers {f32 d, i32 S},
 * then n int8 codes, group by group, in the row's nibble order: for chunk k
 * (0..3) of a group, bytes 16k..16k+15 are elements 32k..32k+15 (the low
 * nibbles' partners) and bytes 64+16k..64+16k+15 elements 32k+16..32k+31.
 *
 * The float order (qt__dot_ct4_w4g128_fast_ref, one element): 16 int32 lanes per
 * group, lane l = sum over the 4 code bytes 4l..4l+3 of the group's 64 of
 * lo * a[b] + hi * a[64 + b] (exact); per group in order, with f = s_g * d_g,
 *   acc_l = fmaf((float)lane_l, f, acc_l)          corr = fmaf(f, (float)((8 + zp_g) * S_g), corr)
 * then reduce16(acc) - corr (lanes l + 8, l + 4, l + 2, l + 1). The SIMD kernels give
 * these bits at every row, batch and thread split. Used under --numerics fast only;
 * llama numerics keep the f32 dots above. */
#define QT_CT4_Q8_GROUP 128
typedef struct {
    float d;     /* activation scale of the group: absmax / 127 */
    int32_t sum; /* sum of its 128 codes */
} qt__ct4_q8_head;
/* Bytes of one activation row of n elements (n % 128 == 0). */
size_t qt__ct4_q8_row_size(int64_t n);
/* x (n f32) as such a row. */
void qt__ct4_q8_quantize(const float *x, void *y, int64_t n);
/* The fast order, one element: row x (CT_W4_G128) and activation row y. */
float qt__dot_ct4_w4g128_fast_ref(const void *x, const void *y, int64_t n);
/* A kernel tile's view of up to 4 activation rows' group headers, group-major (lane k:
 * activation row k; lanes past the tile's rows 0), so each group's scales and code sums
 * are one 4-lane vector. The sums are kept as f32: |S| <= 128 * 127, exact. Rows longer
 * than QT_CT4_Q8_MAX_GROUPS groups (the engine's rows never are: QT_CT_ROW_MAX_N) take
 * the reference in the kernels. */
#define QT_CT4_Q8_MAX_GROUPS 1024
typedef struct {
    float d[QT_CT4_Q8_MAX_GROUPS][4] __attribute__((aligned(16)));
    float sum[QT_CT4_Q8_MAX_GROUPS][4] __attribute__((aligned(16)));
} qt__ct4_q8_heads;
static inline void qt__ct4_q8_heads_load(const uint8_t *a, size_t lda, int C, int64_t n, qt__ct4_q8_heads *hd) {
    const int64_t ng = n / QT_CT4_Q8_GROUP;
    for (int64_t g = 0; g < ng; g++)
        for (int k = 0; k < 4; k++) {
            const qt__ct4_q8_head *h = k < C ? (const qt__ct4_q8_head *)(a + (size_t)k * lda) + g : NULL;
            hd->d[g][k] = h ? h->d : 0.0f;
            hd->sum[g][k] = h ? (float)h->sum : 0.0f;
        }
}
#ifdef QT_ARCH_X86
/* qt__gemm_fn (gemm.h) shapes: nr rows ldw bytes apart x nc activation rows lda apart. */
void qt__gemm_fast_ct4_w4g128_avx2(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc,
                                   int64_t n, float *out, int64_t ldo);
void qt__gemm_fast_ct4_w4g128_avx512(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc,
                                     int64_t n, float *out, int64_t ldo);
#endif

#endif
