/* lib/quant/ct_int.c — compressed-tensors integer weight quantization
 * (docs/formats.md §4.4; compressed-tensors quantization/utils/helpers.py
 * calculate_qparams and lifecycle/forward.py _quantize / _dequantize).
 */
#include <math.h>
#include <stdio.h>

#include "ct_internal.h"

/* ---- shared helpers -------------------------------------------------------- */

float qt_ct_round_dtype(float f, qt_ct_dtype dt) {
    switch (dt) {
    case QT_CT_BF16: return qt_bf16_to_f32(qt_f32_to_bf16(f));
    case QT_CT_F16: return qt_fp16_to_f32(qt_f32_to_fp16(f));
    default: return f;
    }
}

float qt_ct_dtype_eps(qt_ct_dtype dt) {
    switch (dt) {
    case QT_CT_BF16: return 0x1.0p-7f;   /* torch.finfo(torch.bfloat16).eps */
    case QT_CT_F16: return 0x1.0p-10f;   /* torch.finfo(torch.float16).eps */
    default: return 0x1.0p-23f;          /* torch.finfo(torch.float32).eps */
    }
}

const char *qt_ct_dtype_name(qt_ct_dtype dt) {
    switch (dt) {
    case QT_CT_BF16: return "bfloat16";
    case QT_CT_F16: return "float16";
    default: return "float32";
    }
}

const char *qt_ct_strategy_name(qt_ct_strategy s) {
    switch (s) {
    case QT_CT_TENSOR: return "tensor";
    case QT_CT_CHANNEL: return "channel";
    case QT_CT_GROUP: return "group";
    }
    return "unknown";
}

qt_status qt__ct_check_shape(const char *what, int64_t rows, int64_t cols) {
    if (rows <= 0 || cols <= 0)
        return qt_error(QT_ERR_SHAPE, "%s: matrix shape (%lld, %lld) must be positive",
                        what, (long long)rows, (long long)cols);
    if (cols > INT64_MAX / 64 / rows)
        return qt_error(QT_ERR_SHAPE, "%s: matrix shape (%lld, %lld) is too large",
                        what, (long long)rows, (long long)cols);
    return QT_OK;
}

qt_status qt__ct_check_finite(const char *what, const float *w, int64_t rows, int64_t cols) {
    for (int64_t i = 0; i < rows * cols; i++)
        if (!isfinite(w[i]))
            return qt_error(QT_ERR_RANGE, "%s: weight[%lld][%lld] is %s", what, (long long)(i / cols),
                            (long long)(i % cols), isnan(w[i]) ? "NaN" : "infinite");
    return QT_OK;
}

/* ---- qparams ----------------------------------------------------------------- */

void qt_ct_int_qparams(float min, float max, int bits, bool symmetric, qt_ct_dtype dt,
                       float *scale, int8_t *zero_point) {
    const float qmin = -(float)(1 << (bits - 1)), qmax = (float)((1 << (bits - 1)) - 1);
    const float bit_range = qmax - qmin;
    /* 0 must stay exactly representable (calculate_qparams widens the range). */
    if (min > 0.0f) min = 0.0f;
    if (max < 0.0f) max = 0.0f;
    float s, zp = 0.0f;
    if (symmetric) {
        const float amax = fmaxf(-min, max);
        s = qt_ct_round_dtype(amax / (bit_range / 2.0f), dt);
    } else {
        s = qt_ct_round_dtype(qt_ct_round_dtype(max - min, dt) / bit_range, dt);
        if (s != 0.0f) {
            zp = qt_ct_round_dtype(qmin - qt_ct_round_dtype(min / s, dt), dt);
            zp = fminf(fmaxf(zp, qmin), qmax);
            zp = nearbyintf(zp); /* torch.round: half to even */
        }
        /* s == 0 (an all-zero group): torch computes 0/0 = NaN here and its
         * int8 cast yields 0; we give 0 directly. */
    }
    if (s == 0.0f) s = qt_ct_dtype_eps(dt);
    *scale = s;
    *zero_point = (int8_t)zp;
}

/* ---- quantize / dequantize ----------------------------------------------------- */

static qt_status check_int_args(const qt_ct_int_args *a, int64_t rows, int64_t cols, int64_t *group) {
    const char *what = "compressed-tensors int quantization";
    *group = 0;
    if (!a) return qt_error(QT_ERR_ARG, "%s: no arguments", what);
    if (a->bits < 2 || a->bits > 8)
        return qt_error(QT_ERR_ARG, "%s: num_bits %d is not supported (2..8)", what, a->bits);
    if (a->dtype != QT_CT_F32 && a->dtype != QT_CT_BF16 && a->dtype != QT_CT_F16)
        return qt_error(QT_ERR_ARG, "%s: unknown model dtype %d", what, (int)a->dtype);
    qt_status s = qt__ct_check_shape(what, rows, cols);
    if (s != QT_OK) return s;
    switch (a->strategy) {
    case QT_CT_TENSOR: *group = cols; break;
    case QT_CT_CHANNEL: *group = cols; break;
    case QT_CT_GROUP:
        *group = a->group_size ? a->group_size : QT_CT_DEFAULT_GROUP_SIZE;
        if (*group < 0)
            return qt_error(QT_ERR_ARG, "%s: group size %lld must be positive", what, (long long)*group);
        if (cols % *group != 0)
            return qt_error(QT_ERR_SHAPE, "%s: group size %lld does not divide the row length %lld "
                            "(in_features); choose a group size that divides it or the channel strategy",
                            what, (long long)*group, (long long)cols);
        break;
    default:
        return qt_error(QT_ERR_ARG, "%s: unknown strategy %d", what, (int)a->strategy);
    }
    return QT_OK;
}

qt_status qt_ct_int_scale_count(const qt_ct_int_args *a, int64_t rows, int64_t cols,
                                int64_t *per_row, int64_t *total) {
    int64_t group;
    qt_status s = check_int_args(a, rows, cols, &group);
    if (s != QT_OK) return s;
    const int64_t pr = a->strategy == QT_CT_GROUP ? cols / group : 1;
    if (per_row) *per_row = pr;
    if (total) *total = a->strategy == QT_CT_TENSOR ? 1 : rows * pr;
    return QT_OK;
}

qt_ct_int_args qt_ct_int_args_for(const qt_ct_int_args *a, int64_t cols) {
    qt_ct_int_args o = *a;
    if (a->strategy != QT_CT_GROUP) return o;
    o.group_size = a->group_size ? a->group_size : QT_CT_DEFAULT_GROUP_SIZE;
    if (cols % o.group_size) {
        o.strategy = QT_CT_CHANNEL;
        o.group_size = 0;
    }
    return o;
}

/* Index of the scale used by element (r, c). */
static inline int64_t scale_index(qt_ct_strategy st, int64_t r, int64_t c, int64_t per_row, int64_t group) {
    if (st == QT_CT_TENSOR) return 0;
    return r * per_row + c / group;
}

/* compressed-tensors' _quantize of one value x (already in the dtype) under (scale, zp):
 * q = clamp(round_half_even(x/scale + zp), qmin, qmax), every step rounded to the dtype. */
static inline int8_t code_of(float x, float scale, int8_t zp, bool sym, qt_ct_dtype dt, float qmin, float qmax) {
    float t = qt_ct_round_dtype(x / scale, dt);
    if (!sym) t = qt_ct_round_dtype(t + (float)zp, dt);
    t = fminf(fmaxf(t, qmin), qmax);
    return (int8_t)nearbyintf(t);
}

/* sum_c imp[c] * (x_c - dequant(quant(x_c)))^2 over one row's columns [c0, c1). */
static double weighted_error(const float *x, const float *imp, int64_t c0, int64_t c1, float scale, int8_t zp,
                             bool sym, qt_ct_dtype dt, float qmin, float qmax) {
    double e = 0.0;
    for (int64_t c = c0; c < c1; c++) {
        const float v = qt_ct_round_dtype(x[c], dt);
        const int8_t q = code_of(v, scale, zp, sym, dt, qmin, qmax);
        const double d = (double)v - (double)qt_ct_round_dtype((float)(q - (sym ? 0 : zp)) * scale, dt);
        e += (double)imp[c] * d * d;
    }
    return e;
}

/* The minmax observer (imp NULL), or with importance weights imp (cols) the
 * range shrunk by the factor p = 1, 0.99, ..., 0.81 (llm-compressor's MSE
 * observer's grid: maxshrink 0.2, grid 100) whose rounding has the least
 * importance-weighted squared error; p = 1 (minmax) unless another is strictly
 * better. Per tensor: always minmax. */
static qt_status int_quantize(const float *w, int64_t rows, int64_t cols, const qt_ct_int_args *a, const float *imp,
                              int8_t *q, float *scales, int8_t *zero_points) {
    int64_t group, per_row, total;
    qt_status s = check_int_args(a, rows, cols, &group);
    if (s != QT_OK) return s;
    if (!w || !q || !scales || (!a->symmetric && !zero_points))
        return qt_error(QT_ERR_ARG, "compressed-tensors int quantization: missing input or output buffer");
    if ((s = qt__ct_check_finite("compressed-tensors int quantization", w, rows, cols)) != QT_OK) return s;
    qt_ct_int_scale_count(a, rows, cols, &per_row, &total);
    const qt_ct_dtype dt = a->dtype;
    const float qmin = -(float)(1 << (a->bits - 1)), qmax = (float)((1 << (a->bits - 1)) - 1);

    for (int64_t k = 0; k < total; k++) {
        float mn = INFINITY, mx = -INFINITY;
        int64_t r0, r1, c0, c1;
        if (a->strategy == QT_CT_TENSOR) { r0 = 0; r1 = rows; c0 = 0; c1 = cols; }
        else { r0 = k / per_row; r1 = r0 + 1; c0 = (k % per_row) * group; c1 = c0 + group; }
        for (int64_t r = r0; r < r1; r++)
            for (int64_t c = c0; c < c1; c++) {
                const float x = qt_ct_round_dtype(w[r * cols + c], dt);
                if (x < mn) mn = x;
                if (x > mx) mx = x;
            }
        int8_t zp;
        qt_ct_int_qparams(mn, mx, a->bits, a->symmetric, dt, &scales[k], &zp);
        if (imp && a->strategy != QT_CT_TENSOR) {
            const float *x = w + r0 * cols;
            double best = weighted_error(x, imp, c0, c1, scales[k], zp, a->symmetric, dt, qmin, qmax);
            for (int i = 1; i < 20; i++) {
                const float p = 1.0f - (float)i / 100.0f;
                float sc;
                int8_t z;
                qt_ct_int_qparams(mn * p, mx * p, a->bits, a->symmetric, dt, &sc, &z);
                const double e = weighted_error(x, imp, c0, c1, sc, z, a->symmetric, dt, qmin, qmax);
                if (e < best) best = e, scales[k] = sc, zp = z;
            }
        }
        if (!a->symmetric) zero_points[k] = zp;
    }

    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            const int64_t k = scale_index(a->strategy, r, c, per_row, group);
            q[r * cols + c] = code_of(qt_ct_round_dtype(w[r * cols + c], dt), scales[k], a->symmetric ? 0 : zero_points[k],
                                      a->symmetric, dt, qmin, qmax);
        }
    return QT_OK;
}

qt_status qt_ct_int_quantize(const float *w, int64_t rows, int64_t cols, const qt_ct_int_args *a,
                             int8_t *q, float *scales, int8_t *zero_points) {
    return int_quantize(w, rows, cols, a, NULL, q, scales, zero_points);
}

qt_status qt__ct_int_quantize_weighted(const float *w, int64_t rows, int64_t cols, const qt_ct_int_args *a,
                                       const float *imp, int8_t *q, float *scales, int8_t *zero_points) {
    return int_quantize(w, rows, cols, a, imp, q, scales, zero_points);
}

qt_status qt_ct_int_dequantize(const int8_t *q, const float *scales, const int8_t *zero_points,
                               int64_t rows, int64_t cols, const qt_ct_int_args *a, float *out) {
    int64_t group, per_row;
    qt_status s = check_int_args(a, rows, cols, &group);
    if (s != QT_OK) return s;
    if (!q || !scales || !out || (!a->symmetric && !zero_points))
        return qt_error(QT_ERR_ARG, "compressed-tensors int dequantization: missing input or output buffer");
    qt_ct_int_scale_count(a, rows, cols, &per_row, NULL);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            const int64_t k = scale_index(a->strategy, r, c, per_row, group);
            const int zp = a->symmetric ? 0 : zero_points[k];
            out[r * cols + c] = qt_ct_round_dtype((float)(q[r * cols + c] - zp) * scales[k], a->dtype);
        }
    return QT_OK;
}
