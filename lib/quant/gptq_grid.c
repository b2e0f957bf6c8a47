/* lib/quant/gptq_grid.c — the target grids GPTQ rounds onto (quanta/gptq.h):
 * compressed-tensors integer groups, and GGUF block types through the traits
 * table.
 *
 * GGUF: a block's scales are what the type's own quantizer (the traits row's
 * from_float, bit-exact with ggml) chooses for the block's values when the
 * column loop reaches the block. Each code is then set on its own: the value
 * of code q at a position is b + a q (every type here decodes affinely in its
 * code: d (q - 8), d q, d sc q - dmin m, ...), and a and b are read off the
 * type's own decoder by decoding the block with every code 0 and every code 1,
 * so no decoding formula is written twice. A value the loop has not moved
 * since the block's scales were chosen keeps the code the quantizer gave it
 * (ggml rounds with the unrounded scale, so its code is not always the
 * nearest decoded value): with H = I GPTQ writes the codec's bytes. The bytes are the codec's scales
 * with the codes GPTQ chose: exactly what llama.cpp decodes. Per type only the
 * place of a code in the block and its range are data here (code_layouts). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blocks.h"
#include "core/cpu_level.h"
#include "gptq_internal.h"
#include "quanta/ct.h"
#include "quanta/gptq.h"
#include "quanta/num.h"

/* ---- compressed-tensors integer groups ------------------------------------------ */

qt_status qt_gptq_ct_int_init(qt_gptq_ct_int *g, int bits, bool symmetric, int dtype, int64_t rows, int64_t cols,
                              int64_t group) {
    *g = (qt_gptq_ct_int){.bits = bits, .symmetric = symmetric, .dtype = dtype, .rows = rows, .cols = cols,
                          .group = group};
    if (bits < 2 || bits > 8 || rows < 1 || cols < 1 || group < 1 || cols % group != 0)
        return qt_error(QT_ERR_ARG, "gptq: int%d grid of group %lld on (%lld, %lld)", bits, (long long)group,
                        (long long)rows, (long long)cols);
    const size_t n_sc = (size_t)(rows * (cols / group));
    g->q = malloc((size_t)(rows * cols));
    g->scales = malloc(n_sc * sizeof *g->scales);
    g->zero_points = symmetric ? NULL : calloc(n_sc, 1);
    if (!g->q || !g->scales || (!symmetric && !g->zero_points)) {
        qt_gptq_ct_int_free(g);
        return qt_error(QT_ERR_NOMEM, "gptq: out of memory for int%d codes", bits);
    }
    return QT_OK;
}

static qt_status ct_int_begin(void *ctx, const float *wg, int64_t r0, int64_t rows, int64_t g) {
    qt_gptq_ct_int *c = ctx;
    const int64_t G = c->group, ng = c->cols / G;
    for (int64_t r = 0; r < rows; r++) {
        float mn = INFINITY, mx = -INFINITY;
        for (int64_t k = 0; k < G; k++) {
            const float x = qt_ct_round_dtype(wg[r * G + k], (qt_ct_dtype)c->dtype);
            if (x < mn) mn = x;
            if (x > mx) mx = x;
        }
        int8_t zp;
        qt_ct_int_qparams(mn, mx, c->bits, c->symmetric, (qt_ct_dtype)c->dtype, &c->scales[(r0 + r) * ng + g], &zp);
        if (!c->symmetric) c->zero_points[(r0 + r) * ng + g] = zp;
    }
    return QT_OK;
}

/* compressed-tensors' _quantize / _dequantize for one element (ct_int.c's arithmetic), element by element. */
void qt__ct_int_col_ref(const float *w, const float *s, const int8_t *zp, int64_t n, int bits, int dtype,
                        int8_t *code, float *q) {
    const qt_ct_dtype dt = (qt_ct_dtype)dtype;
    const float qmin = -(float)(1 << (bits - 1)), qmax = (float)((1 << (bits - 1)) - 1);
    for (int64_t r = 0; r < n; r++) {
        const int z = zp ? zp[r] : 0;
        float t = qt_ct_round_dtype(qt_ct_round_dtype(w[r], dt) / s[r], dt);
        if (zp) t = qt_ct_round_dtype(t + (float)z, dt);
        t = fminf(fmaxf(t, qmin), qmax);
        code[r] = (int8_t)nearbyintf(t);
        q[r] = qt_ct_round_dtype((float)(code[r] - z) * s[r], dt);
    }
}

#define COL_CHUNK 64 /* rows per call of the column kernel: the column loop's panel (gptq.c LAZY_ROWS) */

/* The column's rows in chunks: their scales, zero points and codes gathered from and scattered to
 * the grid's (rows, groups) and (rows, cols) arrays around one kernel call. */
static void ct_int_col(void *ctx, const float *w, int64_t r0, int64_t rows, int64_t col, float *q) {
    qt_gptq_ct_int *c = ctx;
    const int64_t ng = c->cols / c->group, g = col / c->group;
    void (*const kernel)(const float *, const float *, const int8_t *, int64_t, int, int, int8_t *, float *) =
#if QT_ARCH_X86
        qt__cpu_level_get() >= QT__CPU_AVX2 ? qt__ct_int_col_avx2 :
#endif
        qt__ct_int_col_ref;
    float s[COL_CHUNK];
    int8_t zp[COL_CHUNK], code[COL_CHUNK];
    for (int64_t a = 0; a < rows; a += COL_CHUNK) {
        const int64_t m = rows - a < COL_CHUNK ? rows - a : COL_CHUNK;
        for (int64_t r = 0; r < m; r++) {
            s[r] = c->scales[(r0 + a + r) * ng + g];
            if (!c->symmetric) zp[r] = c->zero_points[(r0 + a + r) * ng + g];
        }
        kernel(w + a, s, c->symmetric ? NULL : zp, m, c->bits, c->dtype, code, q + a);
        for (int64_t r = 0; r < m; r++) c->q[(r0 + a + r) * c->cols + col] = code[r];
    }
}

qt_gptq_grid qt_gptq_ct_int_grid(qt_gptq_ct_int *g) { return (qt_gptq_grid){g->group, g, ct_int_begin, ct_int_col, 1}; }

void qt_gptq_ct_int_free(qt_gptq_ct_int *g) {
    free(g->q);
    free(g->scales);
    free(g->zero_points);
    *g = (qt_gptq_ct_int){0};
}

/* ---- compressed-tensors float formats ------------------------------------------------ */

enum { FP8_BLOCK = 128 };
static const float fp8_max = 448.0f, fp4_max = 6.0f; /* finfo(float8_e4m3fn).max, FP4_E2M1_DATA.max */

static const struct { int64_t group; const char *name; } float_kinds[] = {
    [QT_GPTQ_FP8_TENSOR] = {0, "fp8 (tensor)"}, [QT_GPTQ_FP8_CHANNEL] = {0, "fp8 (channel)"},
    [QT_GPTQ_FP8_BLOCK] = {FP8_BLOCK, "fp8-block"}, [QT_GPTQ_NVFP4] = {QT_CT_NVFP4_GROUP, "nvfp4"},
    [QT_GPTQ_MXFP4] = {QT_CT_MXFP4_GROUP, "mxfp4"},
};

qt_status qt_gptq_ct_float_init(qt_gptq_ct_float *g, qt_gptq_float_kind kind, int dtype, int64_t rows, int64_t cols,
                                float shared) {
    *g = (qt_gptq_ct_float){.kind = kind, .dtype = dtype, .rows = rows, .cols = cols, .shared = shared};
    if ((unsigned)kind > QT_GPTQ_MXFP4 || rows < 1 || cols < 1)
        return qt_error(QT_ERR_ARG, "gptq: float grid %d on (%lld, %lld)", (int)kind, (long long)rows, (long long)cols);
    const char *name = float_kinds[kind].name;
    g->group = float_kinds[kind].group && cols > float_kinds[kind].group ? float_kinds[kind].group : cols;
    if (kind != QT_GPTQ_FP8_BLOCK && float_kinds[kind].group && cols % float_kinds[kind].group != 0)
        return qt_error(QT_ERR_SHAPE, "gptq: %s needs rows of a multiple of %lld elements, not %lld", name,
                        (long long)float_kinds[kind].group, (long long)cols);
    if (cols % g->group != 0)
        return qt_error(QT_ERR_SHAPE, "gptq: %s needs rows of at most 128 or a multiple of 128 elements, not %lld "
                        "(a partial 128 x 128 block has no GPTQ grid)", name, (long long)cols);
    if (kind == QT_GPTQ_NVFP4 && (!(shared > 0.0f) || !isfinite(shared)))
        return qt_error(QT_ERR_ARG, "gptq: nvfp4 needs the tensor's global scale, not %g", shared);
    const int64_t ng = cols / g->group;
    const size_t n_sc = kind == QT_GPTQ_FP8_TENSOR ? 1 : kind == QT_GPTQ_FP8_CHANNEL ? (size_t)rows
                        : kind == QT_GPTQ_FP8_BLOCK ? (size_t)(((rows + FP8_BLOCK - 1) / FP8_BLOCK) * ng) : 0;
    g->q = malloc((size_t)(rows * cols));
    if (n_sc) g->scales = malloc(n_sc * sizeof *g->scales);
    else {
        g->scale_codes = malloc((size_t)(rows * ng));
        g->eff = malloc((size_t)(rows * ng) * sizeof *g->eff);
    }
    if (!g->q || (n_sc && !g->scales) || (!n_sc && (!g->scale_codes || !g->eff))) {
        qt_gptq_ct_float_free(g);
        return qt_error(QT_ERR_NOMEM, "gptq: out of memory for %s codes", name);
    }
    return QT_OK;
}

static float amax_of(const float *w, int64_t n, qt_ct_dtype dt) {
    float m = 0.0f;
    for (int64_t i = 0; i < n; i++) m = fmaxf(m, fabsf(qt_ct_round_dtype(w[i], dt)));
    return m;
}

/* calculate_qparams for E4M3: amax / 448 in the dtype, eps for a zero scale (qt_ct_fp8_quantize). */
static float fp8_scale(float amax, qt_ct_dtype dt) {
    const float sc = qt_ct_round_dtype(amax / fp8_max, dt);
    return sc == 0.0f ? qt_ct_dtype_eps(dt) : sc;
}

static qt_status ct_float_begin(void *ctx, const float *wg, int64_t r0, int64_t rows, int64_t g) {
    qt_gptq_ct_float *c = ctx;
    const qt_ct_dtype dt = (qt_ct_dtype)c->dtype;
    const int64_t G = c->group, ng = c->cols / G;
    switch (c->kind) {
    case QT_GPTQ_FP8_TENSOR:
        c->scales[0] = c->shared > 0.0f ? c->shared : fp8_scale(amax_of(wg, rows * G, dt), dt);
        break;
    case QT_GPTQ_FP8_CHANNEL:
        for (int64_t r = 0; r < rows; r++) c->scales[r0 + r] = fp8_scale(amax_of(wg + r * G, G, dt), dt);
        break;
    case QT_GPTQ_FP8_BLOCK:
        for (int64_t b = 0; b < rows; b += FP8_BLOCK) { /* r0 is a multiple of FP8_BLOCK (row_block) */
            const int64_t n = rows - b < FP8_BLOCK ? rows - b : FP8_BLOCK;
            c->scales[(r0 + b) / FP8_BLOCK * ng + g] = fp8_scale(amax_of(wg + b * G, n * G, dt), dt);
        }
        break;
    case QT_GPTQ_NVFP4:
        for (int64_t r = 0; r < rows; r++) { /* qt_ct_nvfp4_quantize_gs's calculate_qparams */
            const float local = qt_ct_round_dtype(amax_of(wg + r * G, G, dt) / fp4_max, dt);
            float sc = qt_e4m3_to_f32(qt_f32_to_e4m3_sat(c->shared * local));
            if (sc == 0.0f) sc = 0.125f;
            c->scale_codes[(r0 + r) * ng + g] = qt_f32_to_e4m3_sat(sc);
            c->eff[(r0 + r) * ng + g] = sc / c->shared;
        }
        break;
    case QT_GPTQ_MXFP4:
        for (int64_t r = 0; r < rows; r++) {
            const uint8_t e = qt_ct_mxfp4_scale_exponent(amax_of(wg + r * G, G, QT_CT_BF16));
            c->scale_codes[(r0 + r) * ng + g] = e;
            c->eff[(r0 + r) * ng + g] = qt_e8m0_to_f32(e);
        }
        break;
    }
    return QT_OK;
}

/* One element through the codec's _quantize and the dequantizer's product. */
static void ct_float_col(void *ctx, const float *w, int64_t r0, int64_t rows, int64_t col, float *q) {
    qt_gptq_ct_float *c = ctx;
    const qt_ct_dtype dt = (qt_ct_dtype)c->dtype;
    const int64_t ng = c->cols / c->group, g = col / c->group;
    for (int64_t i = 0; i < rows; i++) {
        const int64_t r = r0 + i; /* w, q are indexed by i, the grid's own arrays by r */
        uint8_t *code = &c->q[r * c->cols + col];
        if (c->kind <= QT_GPTQ_FP8_BLOCK) {
            const float sc = c->kind == QT_GPTQ_FP8_TENSOR    ? c->scales[0]
                             : c->kind == QT_GPTQ_FP8_CHANNEL ? c->scales[r]
                                                              : c->scales[r / FP8_BLOCK * ng + g];
            *code = qt_f32_to_e4m3_sat(qt_ct_round_dtype(qt_ct_round_dtype(w[i], dt) / sc, dt));
            q[i] = qt_ct_round_dtype(qt_e4m3_to_f32(*code) * sc, dt);
        } else {
            const float eff = c->eff[r * ng + g];
            const float t = c->kind == QT_GPTQ_NVFP4
                                ? qt_ct_round_dtype(w[i], dt) / eff
                                : qt_ct_round_dtype(qt_ct_round_dtype(w[i], QT_CT_BF16) / eff, QT_CT_BF16);
            *code = qt_f32_to_e2m1(fminf(fmaxf(t, -fp4_max), fp4_max));
            q[i] = qt_e2m1_to_f32(*code) * eff;
        }
    }
}

qt_gptq_grid qt_gptq_ct_float_grid(qt_gptq_ct_float *g) {
    /* FP8_TENSOR's one scale needs every row; FP8_BLOCK's scales cover 128 rows; the rest are per row */
    const int64_t row_block = g->kind == QT_GPTQ_FP8_TENSOR ? 0 : g->kind == QT_GPTQ_FP8_BLOCK ? FP8_BLOCK : 1;
    return (qt_gptq_grid){g->group, g, ct_float_begin, ct_float_col, row_block};
}

void qt_gptq_ct_float_free(qt_gptq_ct_float *g) {
    free(g->q);
    free(g->scales);
    free(g->scale_codes);
    free(g->eff);
    *g = (qt_gptq_ct_float){0};
}

/* ---- GGUF block types --------------------------------------------------------------- */

/* Writes / reads code q of element i (0 <= i < block_elems) of a block. */
typedef void (*set_code_fn)(uint8_t *block, int64_t i, int q);
typedef int (*get_code_fn)(const uint8_t *block, int64_t i);

/* The value of code q is b + a * level(q): level(q) = q for the uniform grids;
 * for a code book (IQ4's kvalues_iq4nl) level(q) = levels[q] and b = 0
 * (x = d kvalues[q]), and a is read off the decoder at the code whose level
 * is 1 (unit), so a * level is the decoder's own product. */
typedef struct code_layout {
    qt_type type;
    int qmin, qmax;          /* the codes ggml's quantizer produces */
    set_code_fn set;
    get_code_fn get;
    const int8_t *levels;    /* (qmax + 1) code book, or NULL: level(q) = q */
    int unit;                /* with levels: the code whose level is 1 */
} code_layout;

static int get_nibble(const uint8_t *qs, int64_t i, int64_t half) { return i < half ? qs[i] & 0xF : qs[i % half] >> 4; }
static int get_bit(const uint8_t *bits, int64_t k) { return bits[k / 8] >> (k % 8) & 1; }
static int get_q4_0(const uint8_t *b, int64_t i) { return get_nibble(((const block_q4_0 *)b)->qs, i, QK4_0 / 2); }
static int get_q4_1(const uint8_t *b, int64_t i) { return get_nibble(((const block_q4_1 *)b)->qs, i, QK4_1 / 2); }
static int get_q5_0(const uint8_t *b, int64_t i) {
    return get_nibble(((const block_q5_0 *)b)->qs, i, QK5_0 / 2) | get_bit(((const block_q5_0 *)b)->qh, i) << 4;
}
static int get_q5_1(const uint8_t *b, int64_t i) {
    return get_nibble(((const block_q5_1 *)b)->qs, i, QK5_1 / 2) | get_bit(((const block_q5_1 *)b)->qh, i) << 4;
}
static int get_q8_0(const uint8_t *b, int64_t i) { return ((const block_q8_0 *)b)->qs[i]; }
static int get_q4_K(const uint8_t *b, int64_t i) { return get_nibble(((const block_q4_K *)b)->qs + 32 * (i / 64), i % 64, 32); }
static int get_q5_K(const uint8_t *b, int64_t i) {
    const block_q5_K *x = (const block_q5_K *)b;
    const int bit = (int)(2 * (i / 64) + (i % 64 >= 32));
    return get_nibble(x->qs + 32 * (i / 64), i % 64, 32) | (x->qh[i % 32] >> bit & 1) << 4;
}
static int get_q6_K(const uint8_t *b, int64_t i) {
    const block_q6_K *x = (const block_q6_K *)b;
    const int64_t h = i / 128, k = i % 128 / 32, l = i % 32;
    const uint8_t ql = x->ql[64 * h + l + 32 * (k & 1)], qh = x->qh[32 * h + l];
    return (k < 2 ? ql & 0xF : ql >> 4) | (qh >> (2 * k) & 3) << 4;
}

/* Q2_K / Q3_K: per 128 elements 32 bytes of qs; element 32 k + l (k < 4) at bits 2 k of
 * qs[l]; Q3_K's third bit of element 32 k + l (k < 8) is bit k of hmask[l]. */
static int get_crumb(const uint8_t *qs, int64_t i) { return qs[32 * (i / 128) + i % 32] >> (2 * (i % 128 / 32)) & 3; }
static int get_q2_K(const uint8_t *b, int64_t i) { return get_crumb(((const block_q2_K *)b)->qs, i); }
static int get_q3_K(const uint8_t *b, int64_t i) {
    const block_q3_K *x = (const block_q3_K *)b;
    return get_crumb(x->qs, i) | (x->hmask[i % 32] >> (i / 32) & 1) << 2;
}
/* IQ4_NL: as Q4_0; IQ4_XS: sub-block s (32 elements) in qs[16 s..16 s + 15], as Q4_0 within. */
static int get_iq4_nl(const uint8_t *b, int64_t i) { return get_nibble(((const block_iq4_nl *)b)->qs, i, QK4_NL / 2); }
static int get_iq4_xs(const uint8_t *b, int64_t i) {
    return get_nibble(((const block_iq4_xs *)b)->qs + 16 * (i / 32), i % 32, 16);
}

static void set_nibble(uint8_t *qs, int64_t i, int64_t half, int q) {
    uint8_t *b = qs + (i % half);
    *b = i < half ? (uint8_t)((*b & 0xF0) | (q & 0xF)) : (uint8_t)((*b & 0x0F) | ((q & 0xF) << 4));
}

static void set_bit(uint8_t *bits, int64_t k, int on) {
    if (on) bits[k / 8] |= (uint8_t)(1u << (k % 8));
    else bits[k / 8] &= (uint8_t)~(1u << (k % 8));
}

/* Q4_0 / Q4_1: element j in the low nibble of qs[j], j + 16 in the high one. */
static void set_q4_0(uint8_t *b, int64_t i, int q) { set_nibble(((block_q4_0 *)b)->qs, i, QK4_0 / 2, q); }
static void set_q4_1(uint8_t *b, int64_t i, int q) { set_nibble(((block_q4_1 *)b)->qs, i, QK4_1 / 2, q); }
/* Q5_0 / Q5_1: the low 4 bits as Q4_0, the fifth bit of element i is bit i of qh. */
static void set_q5_0(uint8_t *b, int64_t i, int q) {
    set_nibble(((block_q5_0 *)b)->qs, i, QK5_0 / 2, q);
    set_bit(((block_q5_0 *)b)->qh, i, q >> 4 & 1);
}
static void set_q5_1(uint8_t *b, int64_t i, int q) {
    set_nibble(((block_q5_1 *)b)->qs, i, QK5_1 / 2, q);
    set_bit(((block_q5_1 *)b)->qh, i, q >> 4 & 1);
}
static void set_q8_0(uint8_t *b, int64_t i, int q) { ((block_q8_0 *)b)->qs[i] = (int8_t)q; }
/* Q4_K / Q5_K: 64 elements per 32 bytes of qs (the first 32 low nibbles, the
 * next 32 high); Q5_K's fifth bit of element 64 j + l is bit 2 j + (l >= 32) of qh[l % 32]. */
static void set_q4_K(uint8_t *b, int64_t i, int q) {
    set_nibble(((block_q4_K *)b)->qs + 32 * (i / 64), i % 64, 32, q);
}
static void set_q5_K(uint8_t *b, int64_t i, int q) {
    block_q5_K *x = (block_q5_K *)b;
    set_nibble(x->qs + 32 * (i / 64), i % 64, 32, q);
    const int bit = (int)(2 * (i / 64) + (i % 64 >= 32));
    x->qh[i % 32] = (uint8_t)((x->qh[i % 32] & ~(1u << bit)) | ((unsigned)(q >> 4 & 1) << bit));
}
/* Q6_K: per 128 elements, 64 bytes of ql and 32 of qh; element 32 k + l (k < 4)
 * keeps its low 4 bits in ql[l + 32 (k & 1)] (high nibble for k >= 2) and its
 * top 2 bits at 2 k of qh[l]. */
static void set_q6_K(uint8_t *b, int64_t i, int q) {
    block_q6_K *x = (block_q6_K *)b;
    const int64_t h = i / 128, k = i % 128 / 32, l = i % 32;
    uint8_t *ql = x->ql + 64 * h + l + 32 * (k & 1), *qh = x->qh + 32 * h + l;
    *ql = k < 2 ? (uint8_t)((*ql & 0xF0) | (q & 0xF)) : (uint8_t)((*ql & 0x0F) | ((q & 0xF) << 4));
    *qh = (uint8_t)((*qh & ~(3u << (2 * k))) | ((unsigned)(q >> 4 & 3) << (2 * k)));
}

static void set_crumb(uint8_t *qs, int64_t i, int q) {
    uint8_t *b = qs + 32 * (i / 128) + i % 32;
    const int sh = (int)(2 * (i % 128 / 32));
    *b = (uint8_t)((*b & ~(3u << sh)) | ((unsigned)(q & 3) << sh));
}
static void set_q2_K(uint8_t *b, int64_t i, int q) { set_crumb(((block_q2_K *)b)->qs, i, q); }
static void set_q3_K(uint8_t *b, int64_t i, int q) {
    block_q3_K *x = (block_q3_K *)b;
    set_crumb(x->qs, i, q);
    set_bit(x->hmask + i % 32, i / 32, q >> 2 & 1);
}
static void set_iq4_nl(uint8_t *b, int64_t i, int q) { set_nibble(((block_iq4_nl *)b)->qs, i, QK4_NL / 2, q); }
static void set_iq4_xs(uint8_t *b, int64_t i, int q) {
    set_nibble(((block_iq4_xs *)b)->qs + 16 * (i / 32), i % 32, 16, q);
}

static const code_layout code_layouts[] = {
    {QT_TYPE_Q4_0, 0, 15, set_q4_0, get_q4_0, NULL, 0},      {QT_TYPE_Q4_1, 0, 15, set_q4_1, get_q4_1, NULL, 0},
    {QT_TYPE_Q5_0, 0, 31, set_q5_0, get_q5_0, NULL, 0},      {QT_TYPE_Q5_1, 0, 31, set_q5_1, get_q5_1, NULL, 0},
    {QT_TYPE_Q8_0, -127, 127, set_q8_0, get_q8_0, NULL, 0},  {QT_TYPE_Q4_K, 0, 15, set_q4_K, get_q4_K, NULL, 0},
    {QT_TYPE_Q5_K, 0, 31, set_q5_K, get_q5_K, NULL, 0},      {QT_TYPE_Q6_K, 0, 63, set_q6_K, get_q6_K, NULL, 0},
    {QT_TYPE_Q2_K, 0, 3, set_q2_K, get_q2_K, NULL, 0},       {QT_TYPE_Q3_K, 0, 7, set_q3_K, get_q3_K, NULL, 0},
    {QT_TYPE_IQ4_NL, 0, 15, set_iq4_nl, get_iq4_nl, qt__kvalues_iq4nl, 8},
    {QT_TYPE_IQ4_XS, 0, 15, set_iq4_xs, get_iq4_xs, qt__kvalues_iq4nl, 8},
};

static const code_layout *layout_of(qt_type t) {
    for (size_t i = 0; i < sizeof code_layouts / sizeof code_layouts[0]; i++)
        if (code_layouts[i].type == t) return &code_layouts[i];
    return NULL;
}

bool qt_gptq_gguf_supported(qt_type t) {
    const qt_type_traits *tr = qt_type_get(t);
    return layout_of(t) && tr && tr->from_float && tr->to_float_ref;
}

qt_status qt_gptq_gguf_init(qt_gptq_gguf *g, qt_type t, int64_t rows, int64_t cols, const float *importance) {
    *g = (qt_gptq_gguf){.type = t, .rows = rows, .cols = cols, .importance = importance};
    const qt_type_traits *tr = qt_type_get(t);
    if (!qt_gptq_gguf_supported(t))
        return qt_error(QT_ERR_UNSUPPORTED, "gptq: no GPTQ grid for GGUF type %s (grids: q4_0 q4_1 q5_0 q5_1 q8_0 "
                        "q2_K q3_K q4_K q5_K q6_K iq4_nl iq4_xs)", tr ? tr->name : "?");
    if (rows < 1 || cols < 1 || cols % tr->block_elems != 0)
        return qt_error(QT_ERR_SHAPE, "gptq: %s needs rows of a multiple of %lld elements, not %lld", tr->name,
                        (long long)tr->block_elems, (long long)cols);
    g->tr = tr;
    g->layout = layout_of(t);
    g->row_bytes = qt_row_size(t, cols);
    g->bytes = calloc((size_t)rows, g->row_bytes);
    g->a = malloc((size_t)(rows * cols) * sizeof *g->a);
    g->b = malloc((size_t)(rows * cols) * sizeof *g->b);
    g->seen = malloc((size_t)(rows * cols) * sizeof *g->seen);
    g->code = malloc((size_t)(rows * cols) * sizeof *g->code);
    if (!g->bytes || !g->a || !g->b || !g->seen || !g->code) {
        qt_gptq_gguf_free(g);
        return qt_error(QT_ERR_NOMEM, "gptq: out of memory for %lld rows of %s", (long long)rows, tr->name);
    }
    return QT_OK;
}

/* The block's scales from its current values, then b (all codes qmin... 0) and a. */
static qt_status gguf_begin(void *ctx, const float *wg, int64_t r0, int64_t rows, int64_t g) {
    qt_gptq_gguf *x = ctx;
    const code_layout *L = x->layout;
    const int64_t G = x->tr->block_elems;
    const size_t bb = x->tr->block_bytes;
    uint8_t probe[512];
    float v0[QK_K], v1[QK_K];
    if (bb > sizeof probe || G > QK_K) return qt_error(QT_ERR_INTERNAL, "gptq: %s block too large", x->tr->name);
    for (int64_t k = 0; k < rows; k++) {
        const int64_t r = r0 + k; /* wg is indexed by k, the grid's own arrays by r */
        uint8_t *blk = x->bytes + (size_t)r * x->row_bytes + (size_t)g * bb;
        x->tr->from_float(wg + k * G, blk, G, x->importance ? x->importance + g * G : NULL);
        for (int64_t i = 0; i < G; i++) {
            x->seen[r * x->cols + g * G + i] = wg[k * G + i];
            x->code[r * x->cols + g * G + i] = (int16_t)L->get(blk, i);
        }
        memcpy(probe, blk, bb);
        if (L->levels) { /* a code book: x = a level(q), a the decoded value at level 1 */
            for (int64_t i = 0; i < G; i++) L->set(probe, i, L->unit);
            x->tr->to_float_ref(probe, v1, G);
            for (int64_t i = 0; i < G; i++) {
                x->a[r * x->cols + g * G + i] = v1[i];
                x->b[r * x->cols + g * G + i] = 0.0f;
            }
            continue;
        }
        for (int64_t i = 0; i < G; i++) L->set(probe, i, L->qmin);
        x->tr->to_float_ref(probe, v0, G);
        for (int64_t i = 0; i < G; i++) L->set(probe, i, L->qmin + 1);
        x->tr->to_float_ref(probe, v1, G);
        for (int64_t i = 0; i < G; i++) {
            const float a = v1[i] - v0[i];
            x->a[r * x->cols + g * G + i] = a;
            x->b[r * x->cols + g * G + i] = v0[i] - a * (float)L->qmin; /* the value of code 0 */
        }
    }
    return QT_OK;
}

static float level_of(const code_layout *L, int q) { return L->levels ? (float)L->levels[q] : (float)q; }

/* The code whose value b + a level(q) is nearest w (the lowest on a tie). */
static int nearest_code(const code_layout *L, float a, float b, float w) {
    if (!L->levels) {
        const float t = nearbyintf((w - b) / a);
        return t < (float)L->qmin ? L->qmin : t > (float)L->qmax ? L->qmax : (int)t;
    }
    int best = L->qmin;
    float best_e = INFINITY;
    for (int q = L->qmin; q <= L->qmax; q++) {
        const float e = fabsf(w - (b + a * (float)L->levels[q]));
        if (e < best_e) {
            best_e = e;
            best = q;
        }
    }
    return best;
}

static void gguf_col(void *ctx, const float *w, int64_t r0, int64_t rows, int64_t col, float *q) {
    qt_gptq_gguf *x = ctx;
    const code_layout *L = x->layout;
    const int64_t G = x->tr->block_elems, g = col / G;
    for (int64_t i = 0; i < rows; i++) {
        const int64_t r = r0 + i; /* w, q are indexed by i, the grid's own arrays by r */
        const float a = x->a[r * x->cols + col], b = x->b[r * x->cols + col];
        int code = x->code[r * x->cols + col];
        if (w[i] != x->seen[r * x->cols + col] && a != 0.0f) code = nearest_code(L, a, b, w[i]);
        L->set(x->bytes + (size_t)r * x->row_bytes + (size_t)g * x->tr->block_bytes, col % G, code);
        q[i] = b + a * level_of(L, code);
    }
}

qt_gptq_grid qt_gptq_gguf_grid(qt_gptq_gguf *g) {
    return (qt_gptq_grid){g->tr ? g->tr->block_elems : 0, g, gguf_begin, gguf_col, 1}; /* blocks lie along a row */
}

void qt_gptq_gguf_free(qt_gptq_gguf *g) {
    free(g->bytes);
    free(g->a);
    free(g->b);
    free(g->seen);
    free(g->code);
    *g = (qt_gptq_gguf){0};
}
