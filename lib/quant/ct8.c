/* lib/quant/ct8.c — the weight-only 8-bit compressed-tensors rows (ct8.h):
 * sizes, writing, to_float and the scalar references of the fused dots.
 *
 * The references decode 64 (or 16) elements at a time and then follow the f32
 * dots of dot.c lane by lane: vec_dot is ggml_vec_dot_f32 (16-lane
 * accumulators over 64-element steps, qt__dot_f32_tail for the rest),
 * vec_dot_gemm tinyBLAS's one 16-lane chain when n is a multiple of 16 (else
 * vec_dot). Each equals qt__dot_f32_ref / qt__gemm_f32_ref on the dequantized
 * row (test_ct8 checks it).
 */
#include <math.h>

#include "ct8.h"
#include "dot.h"

size_t qt__ct8_row_size(qt_type t, int64_t n) {
    if (!qt__ct8_is(t) || n <= 0) return 0;
    return 4 + (size_t)qt__ct8_groups(t, n) * QT_CT8_PARAM + (size_t)n;
}
size_t qt__ct8_g128_row_size(int64_t n) { return qt__ct8_row_size(QT_TYPE_CT_W8_G128, n); }
size_t qt__ct8_ch_row_size(int64_t n) { return qt__ct8_row_size(QT_TYPE_CT_W8_CH, n); }

void qt__ct8_pack(qt_type type, qt_ct_dtype dt, const int8_t *q, const float *scales, const int8_t *zp,
                  int64_t n_scales, int64_t rows, int64_t cols, void *dst) {
    const int64_t ng = qt__ct8_groups(type, cols);
    const size_t row_bytes = qt__ct8_row_size(type, cols);
    const uint32_t word = (uint32_t)dt;
    for (int64_t r = 0; r < rows; r++) {
        uint8_t *row = (uint8_t *)dst + (size_t)r * row_bytes;
        memcpy(row, &word, 4);
        for (int64_t g = 0; g < ng; g++) {
            const int64_t k = n_scales == 1 ? 0 : r * ng + g;
            uint8_t *p = row + 4 + (size_t)g * QT_CT8_PARAM;
            memcpy(p, &scales[k], 4);
            p[4] = (uint8_t)(zp ? zp[k] : 0);
        }
        memcpy(row + 4 + (size_t)ng * QT_CT8_PARAM, q + r * cols, (size_t)cols);
    }
}

/* Elements i0..i1-1 of a row, decoded (one group parameter lookup per group). */
void qt__ct8_decode(qt_type t, const void *row, int64_t n, int64_t i0, int64_t i1, float *out) {
    const int8_t *q = qt__ct8_codes(t, row, n);
    const qt_ct_dtype dt = (qt_ct_dtype)qt__ct8_dtype(row);
    int64_t g = -1;
    float s = 0.0f;
    int zp = 0;
    for (int64_t i = i0; i < i1; i++) {
        if (qt__ct8_group_of(t, i) != g) qt__ct8_param(row, g = qt__ct8_group_of(t, i), &s, &zp);
        out[i - i0] = qt_ct_round_dtype((float)(q[i] - zp) * s, dt);
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
    const int64_t np = n & ~(int64_t)63;
    float acc[4][16] = {{0}}, w[64];
    for (int64_t i = 0; i < np; i += 64) {
        qt__ct8_decode(t, x, n, i, i + 64, w);
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 16; l++) acc[j][l] = fmaf(w[16 * j + l], y[i + 16 * j + l], acc[j][l]);
    }
    for (int l = 0; l < 16; l++) acc[0][l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
    const float sum = reduce16(acc[0]);
    qt__ct8_decode(t, x, n, np, n, w);
    return qt__dot_f32_tail(sum, w, y + np, 0, n - np);
}

static float gemm_ref(qt_type t, const void *x, const float *y, int64_t n) {
    if (n % 16 != 0) return dot_ref(t, x, y, n);
    float acc[16] = {0}, w[16];
    for (int64_t i = 0; i < n; i += 16) {
        qt__ct8_decode(t, x, n, i, i + 16, w);
        for (int l = 0; l < 16; l++) acc[l] = fmaf(w[l], y[i + l], acc[l]);
    }
    return reduce16(acc);
}

#define QT__CT8_DEFS(t, T)                                                                                            \
    void qt__ct8_##t##_to_float(const void *row, float *y, int64_t n) { qt__ct8_decode(QT_TYPE_CT_##T, row, n, 0, n, y); }  \
    float qt__dot_ct8_##t##_ref(const void *x, const void *y, int64_t n) { return dot_ref(QT_TYPE_CT_##T, x, y, n); } \
    float qt__gemm_ct8_##t##_ref(const void *x, const void *y, int64_t n) { return gemm_ref(QT_TYPE_CT_##T, x, y, n); }
QT__CT8_DEFS(g128, W8_G128)
QT__CT8_DEFS(ch, W8_CH)
#undef QT__CT8_DEFS
