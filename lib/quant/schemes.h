/* lib/quant/schemes.h — the rows behind quanta/formats.h (internal). */
#ifndef QT_QUANT_SCHEMES_H
#define QT_QUANT_SCHEMES_H

#include "quanta/formats.h"

/* Every scheme row, with the format's facts (bits, group, zero bits, g_idx)
 * and the GGUF file type filled in; NULL past the end. The planner's lookups
 * (qt_scheme_find, lib/plan/support.c) walk these. */
const qt_scheme_info *qt__scheme_row(int i);
int qt__scheme_row_count(void);

/* Every format row, listed or not (GGUF block types without a codec yet). */
const qt_format_info *qt__format_row_find(const char *name);

/* The tensor codecs of compressed-tensors rows (lib/quant/ct_tensor.c). */
qt_status qt__ct_tensor_sizes(const qt_format_info *f, int64_t rows, int64_t cols, qt_ct_tensor_sizes *out);
qt_status qt__ct_int_tensor_quantize(const qt_format_info *f, const float *w, int64_t rows, int64_t cols,
                                     qt_ct_dtype dt, qt_ct_tensors *out);
qt_status qt__ct_int_tensor_dequantize(const qt_format_info *f, const qt_ct_tensors *in, int64_t rows, int64_t cols,
                                       qt_ct_dtype dt, float *out);
qt_status qt__ct_fp8_tensor_quantize(const qt_format_info *f, const float *w, int64_t rows, int64_t cols,
                                     qt_ct_dtype dt, qt_ct_tensors *out);
qt_status qt__ct_fp8_tensor_dequantize(const qt_format_info *f, const qt_ct_tensors *in, int64_t rows, int64_t cols,
                                       qt_ct_dtype dt, float *out);
qt_status qt__ct_nvfp4_tensor_quantize(const qt_format_info *f, const float *w, int64_t rows, int64_t cols,
                                       qt_ct_dtype dt, qt_ct_tensors *out);
qt_status qt__ct_nvfp4_tensor_dequantize(const qt_format_info *f, const qt_ct_tensors *in, int64_t rows, int64_t cols,
                                         qt_ct_dtype dt, float *out);
qt_status qt__ct_mxfp4_tensor_quantize(const qt_format_info *f, const float *w, int64_t rows, int64_t cols,
                                       qt_ct_dtype dt, qt_ct_tensors *out);
qt_status qt__ct_mxfp4_tensor_dequantize(const qt_format_info *f, const qt_ct_tensors *in, int64_t rows, int64_t cols,
                                         qt_ct_dtype dt, float *out);

#endif
