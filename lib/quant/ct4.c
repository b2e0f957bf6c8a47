/* lib/quant/ct4.c — the weight-only 4-bit compressed-tensors rows (ct4.h):
 * sizes, writing, to_float and the scalar references of the fused dots.
 *
 * The references decode 32-element chunks through the groups' code books and
 * then follow the f32 dots of dot.c lane by lane: vec_dot is ggml_vec_dot_f32
 * (16-lane accumulators over 64-element steps, qt__dot_f32_tail for the rest),
 * vec_dot_gemm tinyBLAS's one 16-lane chain (rows here are multiples of 32, so
 * always the chain). Each equals qt__dot_f32_ref / qt__gemm_f32_ref on the
 * dequantized row (test_ct_rows checks it).
 */
#include <math.h>

#include "ct4.h"
#include "dot.h"

/* OCP Microscaling Formats v1.0, table "FP4 E2M1": codes 0-7 positive, 8-15 negative */
const float qt__e2m1_values[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                   -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

bool qt__ct4_form_of(qt_type t, qt__ct4_form *f) {
    switch (t) {
    case QT_TYPE_CT_W4_G32: *f = (qt__ct4_form){QT_CT4_INT4, 32, 5}; return true;
    case QT_TYPE_CT_W4_G64: *f = (qt__ct4_form){QT_CT4_INT4, 64, 5}; return true;
    case QT_TYPE_CT_W4_G128: *f = (qt__ct4_form){QT_CT4_INT4, 128, 5}; return true;
    case QT_TYPE_CT_NVFP4: *f = (qt__ct4_form){QT_CT4_NVFP4, QT_CT_NVFP4_GROUP, 1}; return true;
    case QT_TYPE_CT_MXFP4: *f = (qt__ct4_form){QT_CT4_MXFP4, QT_CT_MXFP4_GROUP, 1}; return true;
    default: return false;
    }
}

qt_type qt__ct4_int4_type(int64_t g) {
    return g == 32 ? QT_TYPE_CT_W4_G32 : g == 64 ? QT_TYPE_CT_W4_G64 : g == 128 ? QT_TYPE_CT_W4_G128 : QT_TYPE_COUNT;
}

size_t qt__ct4_row_size(qt_type t, int64_t n) {
    qt__ct4_form f;
    if (!qt__ct4_form_of(t, &f)) return 0;
    return 4 + (size_t)((n + f.group - 1) / f.group) * (size_t)f.param_bytes + (size_t)(n + 1) / 2;
}
size_t qt__ct4_w4g32_row_size(int64_t n) { return qt__ct4_row_size(QT_TYPE_CT_W4_G32, n); }
size_t qt__ct4_w4g64_row_size(int64_t n) { return qt__ct4_row_size(QT_TYPE_CT_W4_G64, n); }
size_t qt__ct4_w4g128_row_size(int64_t n) { return qt__ct4_row_size(QT_TYPE_CT_W4_G128, n); }
size_t qt__ct4_nvfp4_row_size(int64_t n) { return qt__ct4_row_size(QT_TYPE_CT_NVFP4, n); }
size_t qt__ct4_mxfp4_row_size(int64_t n) { return qt__ct4_row_size(QT_TYPE_CT_MXFP4, n); }

void qt__ct4_set_header(void *row, uint32_t word) { memcpy(row, &word, 4); }

void qt__ct4_set_param(void *row, const qt__ct4_form *f, int64_t g, float scale, int8_t zp, uint8_t byte) {
    uint8_t *p = (uint8_t *)row + 4 + (size_t)g * (size_t)f->param_bytes;
    if (f->kind == QT_CT4_INT4) {
        memcpy(p, &scale, 4);
        p[4] = (uint8_t)zp;
    } else {
        p[0] = byte;
    }
}

void qt__ct4_set_codes(void *row, int64_t n, const qt__ct4_form *f, const uint8_t *codes) {
    uint8_t *q = (uint8_t *)qt__ct4_codes(row, n, f);
    for (int64_t k = 0; k < n / QT_CT4_CHUNK; k++)
        for (int j = 0; j < 16; j++)
            q[16 * k + j] = (uint8_t)((codes[32 * k + j] & 15) | (codes[32 * k + 16 + j] & 15) << 4);
}

void qt__ct4_pack_int4(qt_type type, qt_ct_dtype dt, const int8_t *q, const float *scales, const int8_t *zp,
                       int64_t rows, int64_t cols, void *dst, uint8_t *codes) {
    qt__ct4_form f = {0};
    qt__ct4_form_of(type, &f);
    const int64_t per_row = cols / f.group;
    const size_t row_bytes = qt__ct4_row_size(type, cols);
    for (int64_t r = 0; r < rows; r++) {
        uint8_t *row = (uint8_t *)dst + (size_t)r * row_bytes;
        qt__ct4_set_header(row, (uint32_t)dt);
        for (int64_t g = 0; g < per_row; g++)
            qt__ct4_set_param(row, &f, g, scales[r * per_row + g], zp ? zp[r * per_row + g] : 0, 0);
        for (int64_t c = 0; c < cols; c++) codes[c] = (uint8_t)(q[r * cols + c] + 8);
        qt__ct4_set_codes(row, cols, &f, codes);
    }
}

/* Elements 32k..32k+31 of a row, through their groups' code books. */
static void decode_chunk(const void *row, int64_t n, const qt__ct4_form *f, int64_t k, float out[32]) {
    const uint8_t *q = qt__ct4_codes(row, n, f) + 16 * k;
    float lo[16], hi[16];
    qt__ct4_lut(row, f, 32 * k / f->group, lo);
    qt__ct4_lut(row, f, (32 * k + 16) / f->group, hi);
    for (int j = 0; j < 16; j++) {
        out[j] = lo[q[j] & 15];
        out[16 + j] = hi[q[j] >> 4];
    }
}

static void to_float(qt_type t, const void *row, float *y, int64_t n) {
    qt__ct4_form f;
    qt__ct4_form_of(t, &f);
    const uint8_t *q = qt__ct4_codes(row, n, &f);
    float lut[16];
    /* one group at a time: no division per value (the calibration's sgemm path dequantizes every
     * weight once per sequence, lib/engine/matmul_blas.c) */
    for (int64_t g0 = 0; g0 < n; g0 += f.group) {
        qt__ct4_lut(row, &f, g0 / f.group, lut);
        const int64_t g1 = g0 + f.group < n ? g0 + f.group : n;
        for (int64_t i = g0; i < g1; i++) {
            const uint8_t b = q[(i >> 5) * 16 + (i & 15)];
            y[i] = lut[(i & 16) ? b >> 4 : b & 15];
        }
    }
}

/* _mm512_reduce_add_ps's order (dot.c's reduce16) */
static float reduce16(const float a[16]) {
    float t[8], u[4];
    for (int i = 0; i < 8; i++) t[i] = a[i + 8] + a[i];
    for (int i = 0; i < 4; i++) u[i] = t[i + 4] + t[i];
    return (u[0] + u[2]) + (u[1] + u[3]);
}

static float dot_ref(qt_type t, const void *x, const float *y, int64_t n) {
    qt__ct4_form f;
    qt__ct4_form_of(t, &f);
    const int64_t np = n & ~(int64_t)63;
    float acc[4][16] = {{0}}, w[64];
    for (int64_t i = 0; i < np; i += 64) {
        decode_chunk(x, n, &f, i / 32, w);
        decode_chunk(x, n, &f, i / 32 + 1, w + 32);
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 16; l++) acc[j][l] = fmaf(w[16 * j + l], y[i + 16 * j + l], acc[j][l]);
    }
    for (int l = 0; l < 16; l++) acc[0][l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
    const float sum = reduce16(acc[0]);
    if (np == n) return qt__dot_f32_tail(sum, w, y + np, 0, 0);
    decode_chunk(x, n, &f, np / 32, w); /* n % 32 == 0: one chunk left */
    return qt__dot_f32_tail(sum, w, y + np, 0, n - np);
}

static float gemm_ref(qt_type t, const void *x, const float *y, int64_t n) {
    qt__ct4_form f;
    qt__ct4_form_of(t, &f);
    float acc[16] = {0}, w[32];
    for (int64_t i = 0; i < n; i += 32) {
        decode_chunk(x, n, &f, i / 32, w);
        for (int l = 0; l < 32; l++) acc[l & 15] = fmaf(w[l], y[i + l], acc[l & 15]);
    }
    return reduce16(acc);
}

#define QT__CT4_DEFS(t, T)                                                                                        \
    void qt__ct4_##t##_to_float(const void *row, float *y, int64_t n) { to_float(QT_TYPE_CT_##T, row, y, n); }   \
    float qt__dot_ct4_##t##_ref(const void *x, const void *y, int64_t n) { return dot_ref(QT_TYPE_CT_##T, x, y, n); } \
    float qt__gemm_ct4_##t##_ref(const void *x, const void *y, int64_t n) { return gemm_ref(QT_TYPE_CT_##T, x, y, n); }
QT__CT4_DEFS(w4g32, W4_G32)
QT__CT4_DEFS(w4g64, W4_G64)
QT__CT4_DEFS(w4g128, W4_G128)
QT__CT4_DEFS(nvfp4, NVFP4)
QT__CT4_DEFS(mxfp4, MXFP4)
