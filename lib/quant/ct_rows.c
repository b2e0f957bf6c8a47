/* lib/quant/ct_rows.c — the engine-resident compressed-tensors row formats
 * (ct_rows.h): sizes, dequantizers, vLLM's activation quantizers and the
 * scalar references of the W8A8 dot products.
 *
 * Activation quantizers (vLLM csrc/quantization, read, not copied):
 *   int8 per token   dynamic_scaled_int8_quant_kernel: scale = absmax / 127,
 *                    q = cvt.rni.sat.s8(x * (127 / absmax)) (round half to even,
 *                    saturate; an all-zero row gives scale 0 and codes 0)
 *   fp8 per token    dynamic_per_token_scaled_fp8_quant_kernel: scale =
 *                    max(absmax / 448, 1 / (448 * 512)), q = e4m3(clamp(x / scale))
 *   fp8 static       scaled_fp8_quant_kernel_strided: q = e4m3(clamp(x * (1 / input_scale)))
 *   fp8 groups       per_token_group_quant_fp8 (vLLM fp8_utils.py, DeepSeek-V3's 1x128
 *                    activation tiles): scale = max(absmax, 1e-10) / 448, q = e4m3(clamp(x / scale))
 */
#include <math.h>

#include "ct_rows.h"
#include "quanta/num.h"

static const float e4m3_max = 448.0f;

size_t qt__ct_i8_row_size(int64_t n) { return 4 + (size_t)n; }
size_t qt__ct_f8_row_size(int64_t n) { return 8 + (size_t)n; }
size_t qt__ct_f8_act_row_size(int64_t n) { return 4 + (size_t)n; }
size_t qt__ct_f8_block_row_size(int64_t n) { return 4 * (size_t)qt__ct_groups(n) + (size_t)n; }

size_t qt__ct_header_bytes(qt_type t, int64_t n) {
    switch (t) {
    case QT_TYPE_CT_I8: case QT_TYPE_CT_F8_ACT: return 4;
    case QT_TYPE_CT_F8: return 8;
    case QT_TYPE_CT_F8_BLOCK: return 4 * (size_t)qt__ct_groups(n);
    default: return 0;
    }
}

/* ---- dequantizers ---------------------------------------------------------------- */

void qt__ct_i8_to_float(const void *row, float *y, int64_t n) {
    const float d = qt__ct_hdr(row, 0);
    const int8_t *q = (const int8_t *)row + 4;
    for (int64_t i = 0; i < n; i++) y[i] = (float)q[i] * d;
}

static void e4m3_scaled(const uint8_t *q, float d, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = qt_e4m3_to_f32(q[i]) * d;
}

void qt__ct_f8_to_float(const void *row, float *y, int64_t n) {
    e4m3_scaled((const uint8_t *)row + 8, qt__ct_hdr(row, 0), y, n);
}

void qt__ct_f8_act_to_float(const void *row, float *y, int64_t n) {
    e4m3_scaled((const uint8_t *)row + 4, qt__ct_hdr(row, 0), y, n);
}

void qt__ct_f8_block_to_float(const void *row, float *y, int64_t n) {
    const int64_t ng = qt__ct_groups(n);
    const uint8_t *q = (const uint8_t *)row + 4 * ng;
    for (int64_t g = 0; g < ng; g++) {
        const int64_t i0 = g * QT_CT_FP8_GROUP, len = n - i0 < QT_CT_FP8_GROUP ? n - i0 : QT_CT_FP8_GROUP;
        e4m3_scaled(q + i0, qt__ct_hdr(row, (int)g), y + i0, len);
    }
}

/* ---- activation quantizers ------------------------------------------------------- */

static float absmax(const float *x, int64_t n) {
    float m = 0.0f;
    for (int64_t i = 0; i < n; i++) m = fmaxf(m, fabsf(x[i]));
    return m;
}

/* cvt.rni.sat.s8.f32: nearest, ties to even (the default rounding mode), saturated; NaN -> 0 */
static int8_t i8_rn_sat(float v) {
    if (!(v == v)) return 0;
    const float r = nearbyintf(v);
    return (int8_t)(r > 127.0f ? 127.0f : r < -128.0f ? -128.0f : r);
}

void qt__ct_i8_act_quantize(const float *x, void *row, int64_t n, const float *unused) {
    (void)unused;
    const float am = absmax(x, n);
    int8_t *q = (int8_t *)row + 4;
    qt__ct_hdr_set(row, 0, am / 127.0f);
    if (am == 0.0f) { /* vLLM: 127 / 0 = inf, 0 * inf = NaN, converted to 0 */
        memset(q, 0, (size_t)n);
        return;
    }
    const float inv = 127.0f / am;
    for (int64_t i = 0; i < n; i++) q[i] = i8_rn_sat(x[i] * inv);
}

/* clamp to +-448, then the round-to-nearest-even cast (qt_f32_to_e4m3_sat) */
static void e4m3_div(const float *x, uint8_t *q, int64_t n, float scale) {
    for (int64_t i = 0; i < n; i++) q[i] = qt_f32_to_e4m3_sat(x[i] / scale);
}

void qt__ct_f8_act_quantize(const float *x, void *row, int64_t n, const float *unused) {
    (void)unused;
    const float s = fmaxf(absmax(x, n) / e4m3_max, 1.0f / (e4m3_max * 512.0f));
    qt__ct_hdr_set(row, 0, s);
    e4m3_div(x, (uint8_t *)row + 4, n, s);
}

void qt__ct_f8_act_quantize_static(const float *x, void *row, int64_t n, float scale) {
    const float inv = 1.0f / scale;
    uint8_t *q = (uint8_t *)row + 4;
    qt__ct_hdr_set(row, 0, scale);
    for (int64_t i = 0; i < n; i++) q[i] = qt_f32_to_e4m3_sat(x[i] * inv);
}

void qt__ct_f8_block_act_quantize(const float *x, void *row, int64_t n, const float *unused) {
    (void)unused;
    const int64_t ng = qt__ct_groups(n);
    uint8_t *q = (uint8_t *)row + 4 * ng;
    for (int64_t g = 0; g < ng; g++) {
        const int64_t i0 = g * QT_CT_FP8_GROUP, len = n - i0 < QT_CT_FP8_GROUP ? n - i0 : QT_CT_FP8_GROUP;
        const float s = fmaxf(absmax(x + i0, len), 1e-10f) / e4m3_max;
        qt__ct_hdr_set(row, (int)g, s);
        e4m3_div(x + i0, q + i0, len, s);
    }
}

/* ---- dots (x: weights, y: activations) ------------------------------------------- */

int32_t qt__ct_i8_sum_ref(const int8_t *a, const int8_t *b, int64_t n) {
    int32_t s = 0;
    for (int64_t i = 0; i < n; i++) s += (int32_t)a[i] * (int32_t)b[i];
    return s;
}

double qt__ct_f8_sum_ref(const uint8_t *a, const uint8_t *b, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += (double)(qt_e4m3_to_f32(a[i]) * qt_e4m3_to_f32(b[i]));
    return s;
}

float qt__dot_ct_i8_ref(const void *x, const void *y, int64_t n) { return qt__ct_i8_dot(x, y, n, qt__ct_i8_sum_ref); }
float qt__dot_ct_f8_ref(const void *x, const void *y, int64_t n) { return qt__ct_f8_dot(x, y, n, qt__ct_f8_sum_ref); }
float qt__dot_ct_f8_block_ref(const void *x, const void *y, int64_t n) {
    return qt__ct_f8_block_dot(x, y, n, qt__ct_f8_sum_ref);
}
