/* lib/quant/ct_tensor.c — the tensor-level codecs of the compressed-tensors
 * rows of lib/quant/schemes.c: one signature for every format, the stored
 * tensors of docs/formats.md §4.3 out (codes packed, zero points packed along dim
 * 0), built on the numeric cores of ct_int.c, ct_pack.c and ct_float.c.
 */
#include <stdlib.h>
#include <string.h>

#include "ct_internal.h"
#include "schemes.h"

static bool is_packed(const qt_format_info *f) { return f->ct_format && !strcmp(f->ct_format, "pack-quantized"); }

static qt_ct_int_args int_args(const qt_format_info *f, qt_ct_dtype dt) {
    qt_ct_int_args a = {.bits = f->bits, .symmetric = f->symmetric, .dtype = dt};
    a.strategy = f->block_elems == 0 ? QT_CT_TENSOR : f->block_elems == 1 ? QT_CT_CHANNEL : QT_CT_GROUP;
    a.group_size = f->block_elems > 1 ? f->block_elems : 0;
    return a;
}

static qt_status group_check(const qt_format_info *f, int64_t rows, int64_t cols) {
    qt_status s = qt__ct_check_shape(f->name, rows, cols);
    if (s == QT_OK && f->block_elems > 1 && cols % f->block_elems != 0)
        s = qt_error(QT_ERR_SHAPE, "%s: %lld columns are not a multiple of the group size %lld", f->name,
                     (long long)cols, (long long)f->block_elems);
    return s;
}

qt_status qt__ct_tensor_sizes(const qt_format_info *f, int64_t rows, int64_t cols, qt_ct_tensor_sizes *out) {
    memset(out, 0, sizeof *out);
    qt_status s = group_check(f, rows, cols);
    if (s != QT_OK) return s;
    if (f->quantize == qt__ct_int_tensor_quantize) {
        const qt_ct_int_args a = int_args(f, QT_CT_F32);
        int64_t per_row, total;
        if ((s = qt_ct_int_scale_count(&a, rows, cols, &per_row, &total)) != QT_OK) return s;
        out->n_scales = total;
        if (is_packed(f)) {
            out->weight_bytes = rows * qt_ct_packed_len(cols, f->bits) * 4;
            if (!f->symmetric) out->zero_point_bytes = qt_ct_packed_len(rows, f->bits) * per_row * 4;
        } else {
            out->weight_bytes = rows * cols;
            if (!f->symmetric) out->zero_point_bytes = total;
        }
    } else if (f->quantize == qt__ct_fp8_tensor_quantize) {
        out->weight_bytes = rows * cols;
        out->n_scales = f->block_elems == 0 ? 1 : rows;
    } else {
        out->weight_bytes = rows * (cols / 2); /* fp4 pairs */
        out->scale_code_bytes = rows * (cols / f->block_elems);
    }
    return QT_OK;
}

/* ---- integer: int-quantized (int8 codes) and pack-quantized (int32 words) ---- */

qt_status qt__ct_int_tensor_quantize(const qt_format_info *f, const float *w, int64_t rows, int64_t cols,
                                     qt_ct_dtype dt, qt_ct_tensors *out) {
    qt_ct_tensor_sizes z;
    qt_status s = qt__ct_tensor_sizes(f, rows, cols, &z);
    if (s != QT_OK) return s;
    const qt_ct_int_args a = int_args(f, dt);
    const bool packed = is_packed(f);
    int8_t *q = packed ? malloc((size_t)(rows * cols)) : out->weight;
    int8_t *zp = f->symmetric ? NULL : packed ? malloc((size_t)z.n_scales) : out->zero_points;
    if (!q || (!f->symmetric && !zp)) s = qt_error(QT_ERR_NOMEM, "%s: out of memory", f->name);
    if (s == QT_OK) s = qt_ct_int_quantize(w, rows, cols, &a, q, out->scales, zp);
    if (s == QT_OK && packed) s = qt_ct_pack_rows(q, rows, cols, f->bits, out->weight);
    if (s == QT_OK && packed && zp) s = qt_ct_pack_cols(zp, rows, z.n_scales / rows, f->bits, out->zero_points);
    if (packed) {
        free(q);
        free(zp);
    }
    return s;
}

qt_status qt__ct_int_tensor_dequantize(const qt_format_info *f, const qt_ct_tensors *in, int64_t rows, int64_t cols,
                                       qt_ct_dtype dt, float *out) {
    qt_ct_tensor_sizes z;
    qt_status s = qt__ct_tensor_sizes(f, rows, cols, &z);
    if (s != QT_OK) return s;
    const qt_ct_int_args a = int_args(f, dt);
    const bool packed = is_packed(f);
    int8_t *q = packed ? malloc((size_t)(rows * cols)) : in->weight;
    int8_t *zp = f->symmetric ? NULL : packed ? malloc((size_t)z.n_scales) : in->zero_points;
    if (!q || (!f->symmetric && !zp)) s = qt_error(QT_ERR_NOMEM, "%s: out of memory", f->name);
    if (s == QT_OK && packed) s = qt_ct_unpack_rows(in->weight, rows, cols, f->bits, q);
    if (s == QT_OK && packed && zp) s = qt_ct_unpack_cols(in->zero_points, rows, z.n_scales / rows, f->bits, zp);
    if (s == QT_OK) s = qt_ct_int_dequantize(q, in->scales, zp, rows, cols, &a, out);
    if (packed) {
        free(q);
        free(zp);
    }
    return s;
}

/* ---- FP8 E4M3 (float-quantized): per tensor (block 0) or per channel ---------- */

static qt_ct_strategy fp8_strategy(const qt_format_info *f) { return f->block_elems == 0 ? QT_CT_TENSOR : QT_CT_CHANNEL; }

qt_status qt__ct_fp8_tensor_quantize(const qt_format_info *f, const float *w, int64_t rows, int64_t cols,
                                     qt_ct_dtype dt, qt_ct_tensors *out) {
    return qt_ct_fp8_quantize(w, rows, cols, fp8_strategy(f), dt, out->weight, out->scales);
}

qt_status qt__ct_fp8_tensor_dequantize(const qt_format_info *f, const qt_ct_tensors *in, int64_t rows, int64_t cols,
                                       qt_ct_dtype dt, float *out) {
    return qt_ct_fp8_dequantize(in->weight, in->scales, rows, cols, fp8_strategy(f), dt, out);
}

/* ---- NVFP4 and MXFP4 (the global scale needs the whole tensor) ---------------- */

qt_status qt__ct_nvfp4_tensor_quantize(const qt_format_info *f, const float *w, int64_t rows, int64_t cols,
                                       qt_ct_dtype dt, qt_ct_tensors *out) {
    (void)f;
    return qt_ct_nvfp4_quantize(w, rows, cols, dt, out->weight, out->scale_codes, &out->global_scale);
}

qt_status qt__ct_nvfp4_tensor_dequantize(const qt_format_info *f, const qt_ct_tensors *in, int64_t rows, int64_t cols,
                                         qt_ct_dtype dt, float *out) {
    (void)f;
    (void)dt; /* NVFP4 dequantizes in f32 (qt_ct_nvfp4_dequantize) */
    return qt_ct_nvfp4_dequantize(in->weight, in->scale_codes, in->global_scale, rows, cols, out);
}

qt_status qt__ct_mxfp4_tensor_quantize(const qt_format_info *f, const float *w, int64_t rows, int64_t cols,
                                       qt_ct_dtype dt, qt_ct_tensors *out) {
    (void)f;
    (void)dt; /* compressed-tensors rounds MXFP4 inputs to bf16 whatever the dtype (ct.h) */
    return qt_ct_mxfp4_quantize(w, rows, cols, out->weight, out->scale_codes);
}

qt_status qt__ct_mxfp4_tensor_dequantize(const qt_format_info *f, const qt_ct_tensors *in, int64_t rows, int64_t cols,
                                         qt_ct_dtype dt, float *out) {
    (void)f;
    (void)dt;
    return qt_ct_mxfp4_dequantize(in->weight, in->scale_codes, rows, cols, out);
}
