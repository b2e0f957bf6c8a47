/* quanta/ct.h — compressed-tensors weight formats (the checkpoints vLLM reads).
 *
 * Numeric cores are pure functions on plain row-major arrays: a weight
 * matrix `w` of shape (rows, cols) = (out_features, in_features) goes in,
 * codes + scales (+ zero points) come out, and a matching dequantizer maps
 * them back. Nothing here knows about files; the exporter arranges the
 * outputs into the tensors of docs/formats.md §4.3.
 *
 *   integer (pack-quantized / int-quantized)   docs/formats.md §4.4, §4.5
 *   FP8 E4M3 (float-quantized)                 docs/formats.md §4.6
 *   NVFP4 (nvfp4-pack-quantized)               docs/formats.md §4.7, §5.6
 *   MXFP4 (mxfp4-pack-quantized)               docs/formats.md §4.7, §5.5
 *
 * Model dtype. compressed-tensors computes scales in the dtype of the weight
 * tensor (BF16 for most checkpoints) and torch rounds every intermediate
 * tensor to it. `qt_ct_dtype` names that dtype: inputs are first rounded to
 * it, and so are scales, x/scale, x/scale + zp and dequantized outputs.
 * QT_CT_F32 rounds nothing. Scales come back as floats holding values
 * exactly representable in that dtype (convert with qt_f32_to_bf16 /
 * qt_f32_to_fp16 to store them bit-exactly).
 *
 * Every function refuses NaN/Inf weights (QT_ERR_RANGE) and impossible
 * shapes (QT_ERR_SHAPE) with a message naming the problem.
 */
#ifndef QUANTA_CT_H
#define QUANTA_CT_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qt_ct_dtype {
    QT_CT_F32 = 0,
    QT_CT_BF16,
    QT_CT_F16,
} qt_ct_dtype;

/* Round f to the dtype and back (RNE; the identity for QT_CT_F32). */
QT_API float qt_ct_round_dtype(float f, qt_ct_dtype dt);
/* torch.finfo(dtype).eps: the value compressed-tensors substitutes for a zero scale. */
QT_API float qt_ct_dtype_eps(qt_ct_dtype dt);
QT_API const char *qt_ct_dtype_name(qt_ct_dtype dt); /* "float32", "bfloat16", "float16" */

typedef enum qt_ct_strategy {
    QT_CT_TENSOR = 0,  /* one scale: shape (1,) */
    QT_CT_CHANNEL,     /* one per output row: (rows, 1) */
    QT_CT_GROUP,       /* one per row per group of input columns: (rows, cols / group_size) */
} qt_ct_strategy;

QT_API const char *qt_ct_strategy_name(qt_ct_strategy s); /* "tensor", "channel", "group" */

#define QT_CT_DEFAULT_GROUP_SIZE 128

/* ---- integer weights (W2A16 ... W8A16, INT8) ---------------------------- */

typedef struct qt_ct_int_args {
    int bits;                 /* 2..8: q in [-2^(bits-1), 2^(bits-1) - 1] */
    bool symmetric;           /* false: per-scale int8 zero point */
    qt_ct_strategy strategy;
    int64_t group_size;       /* QT_CT_GROUP: must divide cols; 0 means 128 */
    qt_ct_dtype dtype;        /* model dtype (see top of file) */
} qt_ct_int_args;

/* Number of scales (and zero points) per row and in total. Fails with
 * QT_ERR_SHAPE if the group size does not divide cols, QT_ERR_ARG for bad bits. */
QT_API qt_status qt_ct_int_scale_count(const qt_ct_int_args *a, int64_t rows, int64_t cols,
                                int64_t *per_row, int64_t *total);

/* The arguments one linear of `cols` inputs is quantized with under a: a itself
 * (group_size 0 resolved to 128) when a is per group and the group divides
 * cols; otherwise, for a per-group a, one scale per output channel
 * (QT_CT_CHANNEL, group_size 0): the per-channel fallback for rows no group
 * tiles (issue 15: stories260K's 172-wide ffn_down). Other strategies unchanged. */
QT_API qt_ct_int_args qt_ct_int_args_for(const qt_ct_int_args *a, int64_t cols);

/* calculate_qparams for one (min, max) observation (docs/formats.md §4.4):
 * the range is widened to include 0; symmetric: scale = max(|min|,|max|) /
 * ((qmax - qmin) / 2), zp = 0; asymmetric: scale = (max - min)/(qmax - qmin),
 * zp = round_half_even(clamp(qmin - min/scale, qmin, qmax)). A zero scale
 * becomes the dtype's eps (after the zero point was computed: an all-zero
 * asymmetric group gets zp 0). */
QT_API void qt_ct_int_qparams(float min, float max, int bits, bool symmetric, qt_ct_dtype dt,
                       float *scale, int8_t *zero_point);

/* Quantize: q = clamp(round_half_even(x/scale + zp), qmin, qmax).
 * q: rows*cols int8; scales: `total` floats (layout (rows, per_row), or one
 * for QT_CT_TENSOR); zero_points: same count, required iff !symmetric
 * (may be NULL when symmetric). */
QT_API qt_status qt_ct_int_quantize(const float *w, int64_t rows, int64_t cols, const qt_ct_int_args *a,
                             int8_t *q, float *scales, int8_t *zero_points);
/* Dequantize: (q - zp) * scale, rounded to the model dtype. */
QT_API qt_status qt_ct_int_dequantize(const int8_t *q, const float *scales, const int8_t *zero_points,
                               int64_t rows, int64_t cols, const qt_ct_int_args *a, float *out);

/* ---- pack-quantized int32 packing (docs/formats.md §4.5) ---------------------- *
 * Each signed b-bit value (1 <= b <= 8) is offset by 2^(b-1) and laid down
 * densely at bits [i*b, i*b + b) of a little-endian stream of int32 words;
 * ceil(n*b/32) words hold n values, padding bits are zero. Weights pack along
 * each row; zero points pack along columns (dim 0). Values outside the b-bit
 * range are refused (QT_ERR_RANGE). */
QT_API int64_t qt_ct_packed_len(int64_t n, int bits);
/* q (rows, cols) -> packed (rows, qt_ct_packed_len(cols, bits)) */
QT_API qt_status qt_ct_pack_rows(const int8_t *q, int64_t rows, int64_t cols, int bits, int32_t *packed);
QT_API qt_status qt_ct_unpack_rows(const int32_t *packed, int64_t rows, int64_t cols, int bits, int8_t *q);
/* q (rows, cols) -> packed (qt_ct_packed_len(rows, bits), cols) */
QT_API qt_status qt_ct_pack_cols(const int8_t *q, int64_t rows, int64_t cols, int bits, int32_t *packed);
QT_API qt_status qt_ct_unpack_cols(const int32_t *packed, int64_t rows, int64_t cols, int bits, int8_t *q);

/* ---- int4 group weights straight from their packed form ------------------ *
 * out[r][c] = (u(r,c) - 8 - zp[r][c/G]) * scale[r][c/G] in fp32, where u is the
 * unsigned nibble of weight_packed (rows, cols/8) and zp (rows, cols/G) is the
 * unpacked int8 zero point or NULL (symmetric). cols % 8 == 0 and G % 8 == 0
 * (whole words per group). This is the fast path used when running a
 * W4A16 checkpoint; it dispatches to AVX2/AVX-512 kernels at run time. */
QT_API qt_status qt_ct_int4_group_dequantize(const int32_t *packed, const float *scales, const int8_t *zero_points,
                                      int64_t rows, int64_t cols, int64_t group_size, float *out);

/* ---- FP8 E4M3 weights (float-quantized; docs/formats.md §4.6) ----------------- *
 * scale = amax/448 (per tensor or per output channel), q = e4m3(clamp(x/scale,
 * -448, 448)), dequant q*scale. scales: 1 (tensor) or rows (channel) floats. */
QT_API qt_status qt_ct_fp8_quantize(const float *w, int64_t rows, int64_t cols, qt_ct_strategy strategy,
                             qt_ct_dtype dt, uint8_t *q, float *scales);
QT_API qt_status qt_ct_fp8_dequantize(const uint8_t *q, const float *scales, int64_t rows, int64_t cols,
                               qt_ct_strategy strategy, qt_ct_dtype dt, float *out);

/* Per-tensor FP8 with a given scale (llm-compressor shares one scale across
 * the shards vLLM fuses, q/k/v and gate/up: the largest shard's). */
QT_API qt_status qt_ct_fp8_quantize_scaled(const float *w, int64_t rows, int64_t cols, float scale,
                                    qt_ct_dtype dt, uint8_t *q);
/* The per-tensor scale qt_ct_fp8_quantize would pick: amax/448 in the dtype. */
QT_API float qt_ct_fp8_tensor_scale(const float *w, int64_t n, qt_ct_dtype dt);

/* FP8 block strategy (FP8_BLOCK preset, DeepSeek-V3 style): one scale per
 * bh x bw block, scales (ceil(rows/bh), ceil(cols/bw)) row-major; edge blocks
 * are partial. scale = amax(block)/448, q = e4m3(x/scale). */
QT_API qt_status qt_ct_fp8_block_quantize(const float *w, int64_t rows, int64_t cols, int64_t bh, int64_t bw,
                                   qt_ct_dtype dt, uint8_t *q, float *scales);
QT_API qt_status qt_ct_fp8_block_dequantize(const uint8_t *q, const float *scales, int64_t rows, int64_t cols,
                                     int64_t bh, int64_t bw, qt_ct_dtype dt, float *out);

/* ---- NVFP4 (docs/formats.md §4.7, §5.6) ---------------------------------------- *
 * global_scale = 448*6/amax(tensor) (the stored reciprocal: weight_global_scale);
 * per 16 columns: scale = e4m3(amax_group/6 * global_scale) (weight_scale, raw
 * E4M3 codes); elements e2m1(x / (scale/global_scale)), two per byte, element
 * 2k in the low nibble (weight_packed (rows, cols/2)). cols % 16 == 0.
 * Dequant: e2m1 * (scale / global_scale). */
#define QT_CT_NVFP4_GROUP 16
QT_API qt_status qt_ct_nvfp4_quantize(const float *w, int64_t rows, int64_t cols, qt_ct_dtype dt,
                               uint8_t *packed, uint8_t *scales, float *global_scale);
/* The global scale qt_ct_nvfp4_quantize picks for a tensor of this amax
 * (448*6/amax in the dtype). Fused shards share the smallest one. */
QT_API float qt_ct_nvfp4_global_scale(float amax, qt_ct_dtype dt);
QT_API float qt_ct_amax(const float *w, int64_t n, qt_ct_dtype dt); /* max |round_dtype(w)| */
/* NVFP4 with a given global scale. */
QT_API qt_status qt_ct_nvfp4_quantize_gs(const float *w, int64_t rows, int64_t cols, qt_ct_dtype dt,
                                  float global_scale, uint8_t *packed, uint8_t *scales);
QT_API qt_status qt_ct_nvfp4_dequantize(const uint8_t *packed, const uint8_t *scales, float global_scale,
                                 int64_t rows, int64_t cols, float *out);

/* ---- MXFP4, compressed-tensors flavour (docs/formats.md §4.7, §5.5) ------------ *
 * Per 32 columns: amax is rounded to bf16 and then to a power of two p (up
 * when its mantissa is >= 1.75), scale exponent e = clamp(127 + log2(p) - 2,
 * 0, 255) stored as a raw E8M0 byte (weight_scale (rows, cols/32)); elements
 * e2m1(x / 2^(e-127)) packed like NVFP4. cols % 32 == 0. compressed-tensors
 * only does this for bf16 weights, so inputs are rounded to bf16 first. NOTE: ggml's MXFP4
 * (the GGUF type) picks the scale differently; see quant.h's traits table. */
#define QT_CT_MXFP4_GROUP 32
QT_API qt_status qt_ct_mxfp4_quantize(const float *w, int64_t rows, int64_t cols,
                               uint8_t *packed, uint8_t *scales);
QT_API qt_status qt_ct_mxfp4_dequantize(const uint8_t *packed, const uint8_t *scales,
                                 int64_t rows, int64_t cols, float *out);
/* The scale exponent byte for one group's amax (exposed for tests). */
QT_API uint8_t qt_ct_mxfp4_scale_exponent(float amax);

/* FP4 nibble packing shared by NVFP4 and MXFP4: codes[2k] low, codes[2k+1] high. */
QT_API void qt_ct_pack_fp4(const uint8_t *codes, int64_t n, uint8_t *packed); /* n even */
QT_API void qt_ct_unpack_fp4(const uint8_t *packed, int64_t n, uint8_t *codes);

#ifdef __cplusplus
}
#endif
#endif
