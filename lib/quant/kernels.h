/* lib/quant/kernels.h — scalar reference codecs for the plain types and
 * ggml's block formats (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1,
 * Q2_K..Q6_K, Q8_K, IQ4_NL, IQ4_XS, MXFP4, TQ1_0, TQ2_0).
 *
 * Signatures match qt_from_float_fn / qt_to_float_fn so the functions sit
 * directly in the traits table. n is a multiple of the block size (the
 * checked wrappers in quant.c guarantee it); imatrix is NULL or n per-column
 * importance weights for this row. Quantizers reproduce llama.cpp's
 * ggml_quantize_chunk byte for byte and dequantizers its to_float bit for bit
 * (docs/formats.md §3.4, §3.5).
 */
#ifndef QT_QUANT_KERNELS_H
#define QT_QUANT_KERNELS_H

#include <stdint.h>

#include "quanta/quant.h"

/* q_plain.c: raw element rows (docs/formats.md §3.5). */
void qt__quantize_f32(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_f16(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_bf16(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__dequantize_f32(const void *src, float *dst, int64_t n);
void qt__dequantize_f16(const void *src, float *dst, int64_t n);
void qt__dequantize_bf16(const void *src, float *dst, int64_t n);

/* q_legacy.c: 32-element blocks. Q8_0/Q8_1 ignore imatrix (ggml does too). */
void qt__quantize_q4_0(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_q4_1(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_q5_0(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_q5_1(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_q8_0(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_q8_1(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__dequantize_q4_0(const void *src, float *dst, int64_t n);
void qt__dequantize_q4_1(const void *src, float *dst, int64_t n);
void qt__dequantize_q5_0(const void *src, float *dst, int64_t n);
void qt__dequantize_q5_1(const void *src, float *dst, int64_t n);
void qt__dequantize_q8_0(const void *src, float *dst, int64_t n);
void qt__dequantize_q8_1(const void *src, float *dst, int64_t n);

/* q_k.c: 256-element super-blocks (quantize_row_q*_K_ref / _impl). Q8_K is
 * an activation type: imatrix is ignored (ggml has none for it). */
void qt__quantize_q2_K(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_q3_K(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_q4_K(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_q5_K(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_q6_K(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_q8_K(const float *src, void *dst, int64_t n, const float *imatrix);
/* The same K-quant quantizers with their sub-block searches done by `fit`
 * (quant_search.h): qt__fit_batch_ref gives the functions above; the SIMD
 * forms (q_k_avx2.c, q_k_avx512.c) pass their lane-parallel searches. */
struct qt__fit_batch;
void qt__quantize_q2_K_fit(const float *src, void *dst, int64_t n, const float *imatrix, const struct qt__fit_batch *fit);
void qt__quantize_q3_K_fit(const float *src, void *dst, int64_t n, const float *imatrix, const struct qt__fit_batch *fit);
void qt__quantize_q4_K_fit(const float *src, void *dst, int64_t n, const float *imatrix, const struct qt__fit_batch *fit);
void qt__quantize_q5_K_fit(const float *src, void *dst, int64_t n, const float *imatrix, const struct qt__fit_batch *fit);
void qt__quantize_q6_K_fit(const float *src, void *dst, int64_t n, const float *imatrix, const struct qt__fit_batch *fit);
void qt__dequantize_q2_K(const void *src, float *dst, int64_t n);
void qt__dequantize_q3_K(const void *src, float *dst, int64_t n);
void qt__dequantize_q4_K(const void *src, float *dst, int64_t n);
void qt__dequantize_q5_K(const void *src, float *dst, int64_t n);
void qt__dequantize_q6_K(const void *src, float *dst, int64_t n);
void qt__dequantize_q8_K(const void *src, float *dst, int64_t n);

/* q_iq4.c: non-linear 4-bit (kvalues_iq4nl). */
void qt__quantize_iq4_nl(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_iq4_xs(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__dequantize_iq4_nl(const void *src, float *dst, int64_t n);
void qt__dequantize_iq4_xs(const void *src, float *dst, int64_t n);

/* q_iq.c: i-quants below 4 bits (code books in iq_grids.c). IQ2_XXS, IQ2_XS
 * and IQ1_S need imatrix (ggml asserts it); the others take NULL. Call them
 * through qt_quantize_rows, which refuses a missing imatrix and a failed
 * code-book build (these kernels would write zero blocks). */
void qt__quantize_iq2_xxs(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_iq2_xs(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_iq2_s(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_iq3_xxs(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_iq3_s(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_iq1_s(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_iq1_m(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__dequantize_iq2_xxs(const void *src, float *dst, int64_t n);
void qt__dequantize_iq2_xs(const void *src, float *dst, int64_t n);
void qt__dequantize_iq2_s(const void *src, float *dst, int64_t n);
void qt__dequantize_iq3_xxs(const void *src, float *dst, int64_t n);
void qt__dequantize_iq3_s(const void *src, float *dst, int64_t n);
void qt__dequantize_iq1_s(const void *src, float *dst, int64_t n);
void qt__dequantize_iq1_m(const void *src, float *dst, int64_t n);

/* q_iq.c: what qt_quantize_rows checks before calling those quantizers:
 * QT_ERR_ARG when type t needs importance weights and imatrix is NULL,
 * QT_ERR_NOMEM when its code-book search tables could not be built; QT_OK
 * for every other type. */
qt_status qt__iq_prepare(qt_type t, const float *imatrix);

/* q_fp4_tq.c: MXFP4 (ggml's scale choice) and the ternary formats; no imatrix. */
void qt__quantize_mxfp4(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_tq1_0(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_tq2_0(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__dequantize_mxfp4(const void *src, float *dst, int64_t n);
void qt__dequantize_tq1_0(const void *src, float *dst, int64_t n);
void qt__dequantize_tq2_0(const void *src, float *dst, int64_t n);

/* q_q1_q2.c: Q1_0 (signs, mean-|x| scale) and Q2_0 (2-bit, max-|x| scale);
 * ggml ignores importance weights for both. */
void qt__quantize_q1_0(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__quantize_q2_0(const float *src, void *dst, int64_t n, const float *imatrix);
void qt__dequantize_q1_0(const void *src, float *dst, int64_t n);
void qt__dequantize_q2_0(const void *src, float *dst, int64_t n);

#endif
