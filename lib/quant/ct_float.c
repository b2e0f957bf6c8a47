/* lib/quant/ct_float.c — compressed-tensors float weight formats:
 * FP8 E4M3 (float-quantized, docs/formats.md §4.6), NVFP4 and MXFP4
 * (nvfp4-/mxfp4-pack-quantized, §4.7), following compressed-tensors'
 * calculate_qparams, generate_gparam, generate_mxfp4_scales and _quantize.
 */
#include <math.h>

#include "ct_internal.h"

static const float fp8_max = 448.0f;   /* torch.finfo(torch.float8_e4m3fn).max */
static const float fp4_max = 6.0f;     /* FP4_E2M1_DATA.max */

static inline float e4m3_round(float f) { return qt_e4m3_to_f32(qt_f32_to_e4m3_sat(f)); }

static qt_status check_dtype(const char *what, qt_ct_dtype dt) {
    if (dt != QT_CT_F32 && dt != QT_CT_BF16 && dt != QT_CT_F16)
        return qt_error(QT_ERR_ARG, "%s: unknown model dtype %d", what, (int)dt);
    return QT_OK;
}

static float amax_of(const float *w, int64_t n, int64_t stride, qt_ct_dtype dt) {
    float m = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        const float a = fabsf(qt_ct_round_dtype(w[i * stride], dt));
        if (a > m) m = a;
    }
    return m;
}

/* ---- FP8 E4M3 ------------------------------------------------------------------ */

static qt_status check_fp8(const char *what, int64_t rows, int64_t cols, qt_ct_strategy st, qt_ct_dtype dt,
                           const void *a, const void *b, const void *c) {
    qt_status s = qt__ct_check_shape(what, rows, cols);
    if (s != QT_OK) return s;
    if (st != QT_CT_TENSOR && st != QT_CT_CHANNEL)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: strategy '%s' is not supported (tensor or channel)",
                        what, qt_ct_strategy_name(st));
    if (!a || !b || !c) return qt_error(QT_ERR_ARG, "%s: missing input or output buffer", what);
    return check_dtype(what, dt);
}

qt_status qt_ct_fp8_quantize(const float *w, int64_t rows, int64_t cols, qt_ct_strategy strategy,
                             qt_ct_dtype dt, uint8_t *q, float *scales) {
    const char *what = "compressed-tensors fp8 quantization";
    qt_status s = check_fp8(what, rows, cols, strategy, dt, w, q, scales);
    if (s != QT_OK) return s;
    if ((s = qt__ct_check_finite(what, w, rows, cols)) != QT_OK) return s;
    const int64_t n_scales = strategy == QT_CT_TENSOR ? 1 : rows;
    const int64_t span = strategy == QT_CT_TENSOR ? rows * cols : cols;
    for (int64_t k = 0; k < n_scales; k++) {
        /* symmetric calculate_qparams with bit range 448 - (-448): scale = amax / 448 */
        float sc = qt_ct_round_dtype(amax_of(w + k * span, span, 1, dt) / fp8_max, dt);
        if (sc == 0.0f) sc = qt_ct_dtype_eps(dt);
        scales[k] = sc;
    }
    for (int64_t i = 0; i < rows * cols; i++) {
        const float sc = scales[strategy == QT_CT_TENSOR ? 0 : i / cols];
        const float t = qt_ct_round_dtype(qt_ct_round_dtype(w[i], dt) / sc, dt);
        q[i] = qt_f32_to_e4m3_sat(t); /* clamp to +-448, then torch's RNE cast */
    }
    return QT_OK;
}

qt_status qt_ct_fp8_dequantize(const uint8_t *q, const float *scales, int64_t rows, int64_t cols,
                               qt_ct_strategy strategy, qt_ct_dtype dt, float *out) {
    qt_status s = check_fp8("compressed-tensors fp8 dequantization", rows, cols, strategy, dt, q, scales, out);
    if (s != QT_OK) return s;
    for (int64_t i = 0; i < rows * cols; i++) {
        const float sc = scales[strategy == QT_CT_TENSOR ? 0 : i / cols];
        out[i] = qt_ct_round_dtype(qt_e4m3_to_f32(q[i]) * sc, dt);
    }
    return QT_OK;
}

float qt_ct_fp8_tensor_scale(const float *w, int64_t n, qt_ct_dtype dt) {
    float sc = qt_ct_round_dtype(amax_of(w, n, 1, dt) / fp8_max, dt);
    return sc == 0.0f ? qt_ct_dtype_eps(dt) : sc;
}

qt_status qt_ct_fp8_quantize_scaled(const float *w, int64_t rows, int64_t cols, float scale, qt_ct_dtype dt,
                                    uint8_t *q) {
    const char *what = "compressed-tensors fp8 quantization";
    qt_status s = check_fp8(what, rows, cols, QT_CT_TENSOR, dt, w, q, q);
    if (s != QT_OK) return s;
    if (!(scale > 0.0f) || !isfinite(scale)) return qt_error(QT_ERR_RANGE, "%s: scale %g must be positive", what, scale);
    if ((s = qt__ct_check_finite(what, w, rows, cols)) != QT_OK) return s;
    for (int64_t i = 0; i < rows * cols; i++)
        q[i] = qt_f32_to_e4m3_sat(qt_ct_round_dtype(qt_ct_round_dtype(w[i], dt) / scale, dt));
    return QT_OK;
}

static qt_status check_block(const char *what, int64_t rows, int64_t cols, int64_t bh, int64_t bw, qt_ct_dtype dt,
                             const void *a, const void *b, const void *c) {
    qt_status s = qt__ct_check_shape(what, rows, cols);
    if (s != QT_OK) return s;
    if (bh <= 0 || bw <= 0) return qt_error(QT_ERR_ARG, "%s: block %lldx%lld must be positive", what, (long long)bh, (long long)bw);
    if (!a || !b || !c) return qt_error(QT_ERR_ARG, "%s: missing input or output buffer", what);
    return check_dtype(what, dt);
}

qt_status qt_ct_fp8_block_quantize(const float *w, int64_t rows, int64_t cols, int64_t bh, int64_t bw,
                                   qt_ct_dtype dt, uint8_t *q, float *scales) {
    const char *what = "compressed-tensors fp8 block quantization";
    qt_status s = check_block(what, rows, cols, bh, bw, dt, w, q, scales);
    if (s != QT_OK) return s;
    if ((s = qt__ct_check_finite(what, w, rows, cols)) != QT_OK) return s;
    const int64_t nbr = (rows + bh - 1) / bh, nbc = (cols + bw - 1) / bw;
    for (int64_t br = 0; br < nbr; br++)
        for (int64_t bc = 0; bc < nbc; bc++) {
            const int64_t r1 = br * bh + bh < rows ? br * bh + bh : rows, c1 = bc * bw + bw < cols ? bc * bw + bw : cols;
            float m = 0.0f;
            for (int64_t r = br * bh; r < r1; r++) {
                const float a = amax_of(w + r * cols + bc * bw, c1 - bc * bw, 1, dt);
                if (a > m) m = a;
            }
            float sc = qt_ct_round_dtype(m / fp8_max, dt);
            if (sc == 0.0f) sc = qt_ct_dtype_eps(dt);
            scales[br * nbc + bc] = sc;
            for (int64_t r = br * bh; r < r1; r++)
                for (int64_t c = bc * bw; c < c1; c++)
                    q[r * cols + c] = qt_f32_to_e4m3_sat(qt_ct_round_dtype(qt_ct_round_dtype(w[r * cols + c], dt) / sc, dt));
        }
    return QT_OK;
}

qt_status qt_ct_fp8_block_dequantize(const uint8_t *q, const float *scales, int64_t rows, int64_t cols, int64_t bh,
                                     int64_t bw, qt_ct_dtype dt, float *out) {
    qt_status s = check_block("compressed-tensors fp8 block dequantization", rows, cols, bh, bw, dt, q, scales, out);
    if (s != QT_OK) return s;
    const int64_t nbc = (cols + bw - 1) / bw;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            out[r * cols + c] = qt_ct_round_dtype(qt_e4m3_to_f32(q[r * cols + c]) * scales[(r / bh) * nbc + c / bw], dt);
    return QT_OK;
}

/* ---- FP4 shared checks ------------------------------------------------------------ */

static qt_status check_fp4(const char *what, int64_t rows, int64_t cols, int64_t group,
                           const void *a, const void *b, const void *c) {
    qt_status s = qt__ct_check_shape(what, rows, cols);
    if (s != QT_OK) return s;
    if (cols % group != 0)
        return qt_error(QT_ERR_SHAPE, "%s: row length %lld is not a multiple of the group size %lld",
                        what, (long long)cols, (long long)group);
    if (!a || !b || !c) return qt_error(QT_ERR_ARG, "%s: missing input or output buffer", what);
    return QT_OK;
}

/* ---- NVFP4 ------------------------------------------------------------------------- */

float qt_ct_amax(const float *w, int64_t n, qt_ct_dtype dt) { return amax_of(w, n, 1, dt); }

/* generate_gparam: 448*6 / max(amax, tiny), computed against the weight
 * tensor (so rounded to its dtype), then kept as fp32. On purpose unlike
 * llm-compressor: where that rounding overflows (an f16 model whose amax is
 * below 2688 / 65504 = 0.041, common: weights of std 0.02), the f32 quotient
 * is kept, since llm-compressor's inf would make every scale of the tensor
 * zero or NaN. bf16 cannot overflow here. */
float qt_ct_nvfp4_global_scale(float amax, qt_ct_dtype dt) {
    if (amax < 0x1.0p-126f) amax = 0x1.0p-126f;
    const float g = fp8_max * fp4_max / amax, r = qt_ct_round_dtype(g, dt);
    return isfinite(r) ? r : g;
}

qt_status qt_ct_nvfp4_quantize(const float *w, int64_t rows, int64_t cols, qt_ct_dtype dt,
                               uint8_t *packed, uint8_t *scales, float *global_scale) {
    const char *what = "compressed-tensors nvfp4 quantization";
    qt_status s = check_fp4(what, rows, cols, QT_CT_NVFP4_GROUP, w, packed, scales);
    if (s != QT_OK) return s;
    if (!global_scale) return qt_error(QT_ERR_ARG, "%s: missing global scale output", what);
    if ((s = check_dtype(what, dt)) != QT_OK) return s;
    if ((s = qt__ct_check_finite(what, w, rows, cols)) != QT_OK) return s;
    *global_scale = qt_ct_nvfp4_global_scale(amax_of(w, rows * cols, 1, dt), dt);
    return qt_ct_nvfp4_quantize_gs(w, rows, cols, dt, *global_scale, packed, scales);
}

qt_status qt_ct_nvfp4_quantize_gs(const float *w, int64_t rows, int64_t cols, qt_ct_dtype dt,
                                  float gs, uint8_t *packed, uint8_t *scales) {
    const char *what = "compressed-tensors nvfp4 quantization";
    qt_status s = check_fp4(what, rows, cols, QT_CT_NVFP4_GROUP, w, packed, scales);
    if (s != QT_OK) return s;
    if ((s = check_dtype(what, dt)) != QT_OK) return s;
    if (!(gs > 0.0f) || !isfinite(gs)) return qt_error(QT_ERR_RANGE, "%s: global scale %g must be positive", what, gs);
    if ((s = qt__ct_check_finite(what, w, rows, cols)) != QT_OK) return s;
    const int64_t groups = cols / QT_CT_NVFP4_GROUP;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t g = 0; g < groups; g++) {
            const float *x = w + r * cols + g * QT_CT_NVFP4_GROUP;
            /* calculate_qparams: amax/6 in the weight dtype, times the fp32
             * global scale, rounded to the fp8 scale dtype; a zero scale
             * becomes fp8's eps 0.125 (_get_dtype_eps). */
            const float local = qt_ct_round_dtype(amax_of(x, QT_CT_NVFP4_GROUP, 1, dt) / fp4_max, dt);
            float sc = e4m3_round(gs * local);
            if (sc == 0.0f) sc = 0.125f;
            scales[r * groups + g] = qt_f32_to_e4m3_sat(sc);
            const float eff = sc / gs; /* _quantize: scale / global_scale in fp32 */
            uint8_t codes[QT_CT_NVFP4_GROUP];
            for (int j = 0; j < QT_CT_NVFP4_GROUP; j++) {
                float t = qt_ct_round_dtype(x[j], dt) / eff;
                t = fminf(fmaxf(t, -fp4_max), fp4_max);
                codes[j] = qt_f32_to_e2m1(t);
            }
            qt_ct_pack_fp4(codes, QT_CT_NVFP4_GROUP, packed + (r * cols + g * QT_CT_NVFP4_GROUP) / 2);
        }
    return QT_OK;
}

qt_status qt_ct_nvfp4_dequantize(const uint8_t *packed, const uint8_t *scales, float global_scale,
                                 int64_t rows, int64_t cols, float *out) {
    const char *what = "compressed-tensors nvfp4 dequantization";
    qt_status s = check_fp4(what, rows, cols, QT_CT_NVFP4_GROUP, packed, scales, out);
    if (s != QT_OK) return s;
    if (!(global_scale > 0.0f) || !isfinite(global_scale))
        return qt_error(QT_ERR_RANGE, "%s: weight_global_scale %g must be positive and finite", what, global_scale);
    const int64_t groups = cols / QT_CT_NVFP4_GROUP;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t g = 0; g < groups; g++) {
            const float eff = qt_e4m3_to_f32(scales[r * groups + g]) / global_scale;
            uint8_t codes[QT_CT_NVFP4_GROUP];
            const int64_t base = r * cols + g * QT_CT_NVFP4_GROUP;
            qt_ct_unpack_fp4(packed + base / 2, QT_CT_NVFP4_GROUP, codes);
            for (int j = 0; j < QT_CT_NVFP4_GROUP; j++) out[base + j] = qt_e2m1_to_f32(codes[j]) * eff;
        }
    return QT_OK;
}

/* ---- MXFP4 (compressed-tensors) ------------------------------------------------------- */

uint8_t qt_ct_mxfp4_scale_exponent(float amax) {
    /* round_to_power_2 works on the bf16 bits: adding 1 << (7 - 1 - 1) before
     * masking off the mantissa rounds mantissas >= 1.75 up to the next power
     * of two (it assumes bf16 weights, so amax is rounded to bf16 first). */
    const uint16_t b = qt_f32_to_bf16(fabsf(amax));
    const uint16_t p = (uint16_t)((b + (1u << 5)) & 0xFF80u);
    const int biased = p >> 7; /* bf16 exponent field of p */
    /* 127 + floor(log2(p)) - 2, then the uint8 scale dtype cast: clamp to
     * [0, 255] (p = 0 has log2 = -inf -> 0; p = Inf -> 255). */
    if (biased == 0) return 0;
    if (biased == 255) return 255;
    const int e = biased - 2;
    return (uint8_t)(e < 0 ? 0 : e > 255 ? 255 : e);
}

qt_status qt_ct_mxfp4_quantize(const float *w, int64_t rows, int64_t cols, uint8_t *packed, uint8_t *scales) {
    const char *what = "compressed-tensors mxfp4 quantization";
    qt_status s = check_fp4(what, rows, cols, QT_CT_MXFP4_GROUP, w, packed, scales);
    if (s != QT_OK) return s;
    if ((s = qt__ct_check_finite(what, w, rows, cols)) != QT_OK) return s;
    const int64_t groups = cols / QT_CT_MXFP4_GROUP;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t g = 0; g < groups; g++) {
            const float *x = w + r * cols + g * QT_CT_MXFP4_GROUP;
            const uint8_t e = qt_ct_mxfp4_scale_exponent(amax_of(x, QT_CT_MXFP4_GROUP, 1, QT_CT_BF16));
            scales[r * groups + g] = e;
            const float sc = qt_e8m0_to_f32(e);
            uint8_t codes[QT_CT_MXFP4_GROUP];
            for (int j = 0; j < QT_CT_MXFP4_GROUP; j++) {
                float t = qt_ct_round_dtype(qt_ct_round_dtype(x[j], QT_CT_BF16) / sc, QT_CT_BF16);
                t = fminf(fmaxf(t, -fp4_max), fp4_max);
                codes[j] = qt_f32_to_e2m1(t);
            }
            qt_ct_pack_fp4(codes, QT_CT_MXFP4_GROUP, packed + (r * cols + g * QT_CT_MXFP4_GROUP) / 2);
        }
    return QT_OK;
}

qt_status qt_ct_mxfp4_dequantize(const uint8_t *packed, const uint8_t *scales, int64_t rows, int64_t cols, float *out) {
    const char *what = "compressed-tensors mxfp4 dequantization";
    qt_status s = check_fp4(what, rows, cols, QT_CT_MXFP4_GROUP, packed, scales, out);
    if (s != QT_OK) return s;
    const int64_t groups = cols / QT_CT_MXFP4_GROUP;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t g = 0; g < groups; g++) {
            const float sc = qt_e8m0_to_f32(scales[r * groups + g]);
            uint8_t codes[QT_CT_MXFP4_GROUP];
            const int64_t base = r * cols + g * QT_CT_MXFP4_GROUP;
            qt_ct_unpack_fp4(packed + base / 2, QT_CT_MXFP4_GROUP, codes);
            for (int j = 0; j < QT_CT_MXFP4_GROUP; j++) out[base + j] = qt_e2m1_to_f32(codes[j]) * sc;
        }
    return QT_OK;
}
