/* lib/quant/ct_pack.c — pack-quantized int32 packing (docs/formats.md §4.5;
 * compressed-tensors compressors/pack_quantized/helpers.py pack_to_int32 /
 * unpack_from_int32) and the FP4 nibble packing of §4.7.
 *
 * The bit stream is dense: value i of a packed line occupies bits
 * [i*b, i*b + b) of consecutive little-endian 32-bit words, so for b = 3 a
 * value may straddle two words; ceil(n*b/32) words per line, unused high bits
 * of the last word are zero. For b = 4 and 8 this equals the classic layout
 * vLLM's WNA16 kernels read (32/b values per word, value k at bits [k*b, k*b+b)).
 */
#include "ct_internal.h"

int64_t qt_ct_packed_len(int64_t n, int bits) {
    if (n <= 0 || bits <= 0) return 0;
    return (n * bits + 31) / 32;
}

static qt_status check_pack(const char *what, int64_t rows, int64_t cols, int bits, const void *a, const void *b) {
    if (bits < 1 || bits > 8)
        return qt_error(QT_ERR_ARG, "%s: num_bits %d is not packable (1..8)", what, bits);
    if (!a || !b) return qt_error(QT_ERR_ARG, "%s: missing input or output buffer", what);
    return qt__ct_check_shape(what, rows, cols);
}

/* Pack n values read with stride `in_stride` into words written with stride
 * `out_stride` (strides let one routine serve rows and columns). */
static qt_status pack_line(const int8_t *q, int64_t n, int64_t in_stride, int bits,
                           int32_t *out, int64_t out_stride, const char *what, int64_t line) {
    const int offset = 1 << (bits - 1);
    const uint32_t mask = (1u << bits) - 1;
    const int64_t words = qt_ct_packed_len(n, bits);
    for (int64_t w = 0; w < words; w++) out[w * out_stride] = 0;
    for (int64_t i = 0; i < n; i++) {
        const int v = q[i * in_stride];
        if (v < -offset || v >= offset)
            return qt_error(QT_ERR_RANGE, "%s: value %d at line %lld, position %lld does not fit in %d bits (%d..%d)",
                            what, v, (long long)line, (long long)i, bits, -offset, offset - 1);
        const uint32_t u = (uint32_t)(v + offset) & mask;
        const int64_t bit = i * bits, word = bit / 32;
        const int shift = (int)(bit % 32);
        uint32_t lo = (uint32_t)out[word * out_stride] | (u << shift);
        out[word * out_stride] = (int32_t)lo;
        if (shift + bits > 32) { /* straddles into the next word */
            uint32_t hi = (uint32_t)out[(word + 1) * out_stride] | (u >> (32 - shift));
            out[(word + 1) * out_stride] = (int32_t)hi;
        }
    }
    return QT_OK;
}

static void unpack_line(const int32_t *in, int64_t in_stride, int64_t n, int bits, int8_t *q, int64_t out_stride) {
    const int offset = 1 << (bits - 1);
    const uint32_t mask = (1u << bits) - 1;
    for (int64_t i = 0; i < n; i++) {
        const int64_t bit = i * bits, word = bit / 32;
        const int shift = (int)(bit % 32);
        uint32_t u = (uint32_t)in[word * in_stride] >> shift;
        if (shift + bits > 32) u |= (uint32_t)in[(word + 1) * in_stride] << (32 - shift);
        q[i * out_stride] = (int8_t)((int)(u & mask) - offset);
    }
}

qt_status qt_ct_pack_rows(const int8_t *q, int64_t rows, int64_t cols, int bits, int32_t *packed) {
    const char *what = "pack-quantized packing along rows";
    qt_status s = check_pack(what, rows, cols, bits, q, packed);
    if (s != QT_OK) return s;
    const int64_t words = qt_ct_packed_len(cols, bits);
    for (int64_t r = 0; r < rows; r++) {
        s = pack_line(q + r * cols, cols, 1, bits, packed + r * words, 1, what, r);
        if (s != QT_OK) return s;
    }
    return QT_OK;
}

qt_status qt_ct_unpack_rows(const int32_t *packed, int64_t rows, int64_t cols, int bits, int8_t *q) {
    qt_status s = check_pack("pack-quantized unpacking along rows", rows, cols, bits, packed, q);
    if (s != QT_OK) return s;
    const int64_t words = qt_ct_packed_len(cols, bits);
    for (int64_t r = 0; r < rows; r++) unpack_line(packed + r * words, 1, cols, bits, q + r * cols, 1);
    return QT_OK;
}

qt_status qt_ct_pack_cols(const int8_t *q, int64_t rows, int64_t cols, int bits, int32_t *packed) {
    const char *what = "pack-quantized packing along columns";
    qt_status s = check_pack(what, rows, cols, bits, q, packed);
    if (s != QT_OK) return s;
    for (int64_t c = 0; c < cols; c++) {
        s = pack_line(q + c, rows, cols, bits, packed + c, cols, what, c);
        if (s != QT_OK) return s;
    }
    return QT_OK;
}

qt_status qt_ct_unpack_cols(const int32_t *packed, int64_t rows, int64_t cols, int bits, int8_t *q) {
    qt_status s = check_pack("pack-quantized unpacking along columns", rows, cols, bits, packed, q);
    if (s != QT_OK) return s;
    for (int64_t c = 0; c < cols; c++) unpack_line(packed + c, cols, rows, bits, q + c, cols);
    return QT_OK;
}

/* ---- FP4 nibbles ------------------------------------------------------------ */

void qt_ct_pack_fp4(const uint8_t *codes, int64_t n, uint8_t *packed) {
    for (int64_t k = 0; k < n / 2; k++)
        packed[k] = (uint8_t)((codes[2 * k] & 15) | (codes[2 * k + 1] & 15) << 4);
}

void qt_ct_unpack_fp4(const uint8_t *packed, int64_t n, uint8_t *codes) {
    for (int64_t k = 0; k < n / 2; k++) {
        codes[2 * k] = packed[k] & 15;
        codes[2 * k + 1] = packed[k] >> 4;
    }
}

/* ---- int4 group weights from packed words ----------------------------------- */

/* Scalar reference for the dispatched kernels (simd_avx2.c, simd_avx512.c). */
void qt__ct_int4_row_ref(const int32_t *packed, const float *scales, const int8_t *zero_points,
                         int64_t cols, int64_t group_size, float *out) {
    const int64_t words_per_group = group_size / 8;
    for (int64_t g = 0; g < cols / group_size; g++) {
        const int offset = 8 + (zero_points ? zero_points[g] : 0);
        const float s = scales[g];
        for (int64_t w = g * words_per_group; w < (g + 1) * words_per_group; w++) {
            const uint32_t word = (uint32_t)packed[w];
            for (int k = 0; k < 8; k++) out[8 * w + k] = (float)((int)((word >> (4 * k)) & 15) - offset) * s;
        }
    }
}

qt_status qt_ct_int4_group_dequantize(const int32_t *packed, const float *scales, const int8_t *zero_points,
                                      int64_t rows, int64_t cols, int64_t group_size, float *out) {
    const char *what = "int4 group dequantization";
    qt_status s = qt__ct_check_shape(what, rows, cols);
    if (s != QT_OK) return s;
    if (!packed || !scales || !out) return qt_error(QT_ERR_ARG, "%s: missing input or output buffer", what);
    if (group_size <= 0 || group_size % 8 != 0 || cols % group_size != 0)
        return qt_error(QT_ERR_SHAPE, "%s: group size %lld must be a positive multiple of 8 dividing the row length %lld",
                        what, (long long)group_size, (long long)cols);
    const qt__ct_int4_row_fn kernel = qt__ct_int4_row_kernel();
    const int64_t words = cols / 8, groups = cols / group_size;
    for (int64_t r = 0; r < rows; r++)
        kernel(packed + r * words, scales + r * groups, zero_points ? zero_points + r * groups : NULL,
               cols, group_size, out + r * cols);
    return QT_OK;
}
