/* lib/quant/kernels_k.h — scalar reference codecs for ggml's K-quants
 * (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K weights and the Q8_K activation type).
 *
 * Signatures match qt_from_float_fn / qt_to_float_fn so they sit directly in
 * the traits table. n is a multiple of QK_K (256); the checked wrappers in
 * quant.c guarantee that. imatrix: NULL or n per-column importance weights.
 * Output is byte-identical to llama.cpp's quantize_q*_K (formats.md §3.4).
 */
#ifndef QT_QUANT_KERNELS_K_H
#define QT_QUANT_KERNELS_K_H

#include <stdint.h>

void qt__quantize_q2_K(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_q3_K(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_q4_K(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_q5_K(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_q6_K(const float *src, void *dst, int64_t n, const float *imatrix);
/* Activation type: imatrix is ignored (ggml has none for Q8_K). */
void qt__quantize_q8_K(const float *src, void *dst, int64_t n, const float *imatrix);

void qt__dequantize_q2_K(const void *src, float *dst, int64_t n);
void qt__dequantize_q3_K(const void *src, float *dst, int64_t n);
void qt__dequantize_q4_K(const void *src, float *dst, int64_t n);
void qt__dequantize_q5_K(const void *src, float *dst, int64_t n);
void qt__dequantize_q6_K(const void *src, float *dst, int64_t n);
void qt__dequantize_q8_K(const void *src, float *dst, int64_t n);

#endif
