/* lib/quant/simd.h — SIMD dequantizers beside their scalar references.
 *
 * Each kernel produces exactly the bits of its reference (the to_float_ref of
 * the traits row, or qt__ct_int4_row_ref): same per-element operations in the
 * same order, only several lanes at a time; the build keeps -ffp-contract=off
 * so no multiply-add is fused. They exist only on x86 builds (QT_ARCH_X86)
 * and may only run where qt_cpu() reports the ISA; lib/quant/dispatch.c is
 * the one place that picks them.
 */
#ifndef QT_QUANT_SIMD_H
#define QT_QUANT_SIMD_H

#include <stdint.h>

#ifdef QT_ARCH_X86
/* simd_avx2.c (AVX2 + FMA + F16C) */
void qt__dequantize_q4_0_avx2(const void *src, float *dst, int64_t n);
void qt__dequantize_q8_0_avx2(const void *src, float *dst, int64_t n);
void qt__dequantize_q4_K_avx2(const void *src, float *dst, int64_t n);
void qt__dequantize_q6_K_avx2(const void *src, float *dst, int64_t n);
void qt__dequantize_f16_avx2(const void *src, float *dst, int64_t n);
void qt__dequantize_bf16_avx2(const void *src, float *dst, int64_t n);
void qt__ct_int4_row_avx2(const int32_t *packed, const float *scales, const int8_t *zero_points,
                          int64_t cols, int64_t group_size, float *out);

/* simd_avx512.c (AVX-512 F/BW/VL) */
void qt__dequantize_q4_0_avx512(const void *src, float *dst, int64_t n);
void qt__dequantize_q8_0_avx512(const void *src, float *dst, int64_t n);
void qt__dequantize_q4_K_avx512(const void *src, float *dst, int64_t n);
void qt__dequantize_q6_K_avx512(const void *src, float *dst, int64_t n);
void qt__ct_int4_row_avx512(const int32_t *packed, const float *scales, const int8_t *zero_points,
                            int64_t cols, int64_t group_size, float *out);

/* q_k_avx2.c / q_k_avx512.c: the K-quant quantizers with lane-parallel
 * sub-block searches (fit_lanes.h), and the Q8_K activation quantizer (q8_K_x86.h),
 * bytes equal to qt__quantize_q*_K's. */
struct qt__fit_batch;
#define QT__K_QUANTIZERS(isa)                                                                 \
    const struct qt__fit_batch *qt__fit_batch_##isa(void);                                    \
    void qt__quantize_q2_K_##isa(const float *src, void *dst, int64_t n, const float *imatrix); \
    void qt__quantize_q3_K_##isa(const float *src, void *dst, int64_t n, const float *imatrix); \
    void qt__quantize_q4_K_##isa(const float *src, void *dst, int64_t n, const float *imatrix); \
    void qt__quantize_q5_K_##isa(const float *src, void *dst, int64_t n, const float *imatrix); \
    void qt__quantize_q6_K_##isa(const float *src, void *dst, int64_t n, const float *imatrix); \
    void qt__quantize_q8_K_##isa(const float *src, void *dst, int64_t n, const float *imatrix);
QT__K_QUANTIZERS(avx2)
QT__K_QUANTIZERS(avx512)
#undef QT__K_QUANTIZERS

/* q_iq_avx2.c / q_iq_avx512.c: the IQ2 / IQ3 quantizers with the lane-parallel neighbour
 * search (q_iq_nb.h), bytes equal to qt__quantize_iq*'s. */
#define QT__IQ_QUANTIZERS(isa)                                                                    \
    void qt__quantize_iq2_xxs_##isa(const float *src, void *dst, int64_t n, const float *imatrix); \
    void qt__quantize_iq2_xs_##isa(const float *src, void *dst, int64_t n, const float *imatrix);  \
    void qt__quantize_iq2_s_##isa(const float *src, void *dst, int64_t n, const float *imatrix);   \
    void qt__quantize_iq3_xxs_##isa(const float *src, void *dst, int64_t n, const float *imatrix); \
    void qt__quantize_iq3_s_##isa(const float *src, void *dst, int64_t n, const float *imatrix);
QT__IQ_QUANTIZERS(avx2)
QT__IQ_QUANTIZERS(avx512)
#undef QT__IQ_QUANTIZERS
#endif

#endif
