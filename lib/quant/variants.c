/* lib/quant/variants.c — the SIMD kernel variants (lib/quant/variants.h).
 *
 * Only x86 builds have them (QT_ARCH_X86); kernels live in *_avx2.c /
 * *_avx512.c, the only files compiled with ISA flags. The dot kernels have
 * AVX2 forms only: AVX-512 forms measured no faster (lib/quant/dot.h), so an
 * AVX-512 CPU runs the AVX2 ones (levels are cumulative).
 */
#include "ct4.h"
#include "ct8.h"
#include "ct_rows.h"
#include "dot.h"
#include "gemm.h"
#include "gemm_f16.h"
#include "gemm_k.h"
#include "gemm_k16.h"
#include "simd.h"
#include "variants.h"

const qt__kernel_variant qt__variants[] = {
#ifdef QT_ARCH_X86
    /* AVX2 + FMA + F16C */
    {QT_TYPE_F32, QT__CPU_AVX2, .vec_dot = qt__dot_f32_avx2, .vec_dot_gemm = qt__gemm_f32_avx2},
    {QT_TYPE_F16, QT__CPU_AVX2, .vec_dot = qt__dot_f16_avx2, .vec_dot_gemm = qt__gemm_f16_avx2},
    {QT_TYPE_F16, QT__CPU_AVX2, .to_float = qt__dequantize_f16_avx2},   /* F16C: GPTQ's and AWQ's W in f32 */
    {QT_TYPE_BF16, QT__CPU_AVX2, .to_float = qt__dequantize_bf16_avx2},
    {QT_TYPE_Q4_0, QT__CPU_AVX2, .to_float = qt__dequantize_q4_0_avx2, .vec_dot = qt__dot_q4_0_q8_0_avx2},
    {QT_TYPE_Q8_0, QT__CPU_AVX2, .to_float = qt__dequantize_q8_0_avx2, .vec_dot = qt__dot_q8_0_q8_0_avx2},
    {QT_TYPE_Q4_K, QT__CPU_AVX2, .to_float = qt__dequantize_q4_K_avx2},
    {QT_TYPE_Q6_K, QT__CPU_AVX2, .to_float = qt__dequantize_q6_K_avx2},
    {QT_TYPE_COUNT, QT__CPU_AVX2, .ct_int4_row = qt__ct_int4_row_avx2},
    /* AVX2 dot kernels of the other block formats (dot_avx2.c, dot_k_avx2.c) */
    {QT_TYPE_Q4_1, QT__CPU_AVX2, .vec_dot = qt__dot_q4_1_q8_1_avx2},
    {QT_TYPE_Q5_0, QT__CPU_AVX2, .vec_dot = qt__dot_q5_0_q8_0_avx2},
    {QT_TYPE_Q5_1, QT__CPU_AVX2, .vec_dot = qt__dot_q5_1_q8_1_avx2},
    {QT_TYPE_IQ4_NL, QT__CPU_AVX2, .vec_dot = qt__dot_iq4_nl_q8_0_avx2},
    {QT_TYPE_MXFP4, QT__CPU_AVX2, .vec_dot = qt__dot_mxfp4_q8_0_avx2}, /* mxfp4_avx2.c */
    {QT_TYPE_Q2_K, QT__CPU_AVX2, .vec_dot = qt__dot_q2_K_q8_K_avx2},
    {QT_TYPE_Q3_K, QT__CPU_AVX2, .vec_dot = qt__dot_q3_K_q8_K_avx2},
    {QT_TYPE_Q4_K, QT__CPU_AVX2, .vec_dot = qt__dot_q4_K_q8_K_avx2},
    {QT_TYPE_Q5_K, QT__CPU_AVX2, .vec_dot = qt__dot_q5_K_q8_K_avx2},
    {QT_TYPE_Q6_K, QT__CPU_AVX2, .vec_dot = qt__dot_q6_K_q8_K_avx2},
    {QT_TYPE_IQ4_XS, QT__CPU_AVX2, .vec_dot = qt__dot_iq4_xs_q8_K_avx2},
    /* blocked gemm kernels (gemm_avx2.c): vec_dot's bits, tiled over rows and activations */
    {QT_TYPE_Q8_0, QT__CPU_AVX2, .gemm = qt__gemm_q8_0_avx2},
    {QT_TYPE_Q4_0, QT__CPU_AVX2, .gemm = qt__gemm_q4_0_avx2},
    {QT_TYPE_Q4_K, QT__CPU_AVX2, .gemm = qt__gemm_q4_K_avx2, .gemm_min_batch = 2},
    {QT_TYPE_Q6_K, QT__CPU_AVX2, .gemm = qt__gemm_q6_K_avx2, .gemm_min_batch = 2},
    /* compressed-tensors W8A8 / FP8 rows (ct_dot_avx2.c): exact sums, the references' bits */
    {QT_TYPE_CT_I8, QT__CPU_AVX2, .vec_dot = qt__dot_ct_i8_avx2},
    {QT_TYPE_CT_F8, QT__CPU_AVX2, .vec_dot = qt__dot_ct_f8_avx2},
    {QT_TYPE_CT_F8_BLOCK, QT__CPU_AVX2, .vec_dot = qt__dot_ct_f8_block_avx2},
    /* --numerics fast on x16-packed rows (gemm_x16_avx2.c) */
    {QT_TYPE_Q4_0, QT__CPU_AVX2, .gemm_x16 = qt__gemm_x16_q4_0_avx2, .gemm_x16_ref = qt__gemm_x16_q4_0_ref},
    {QT_TYPE_Q4_1, QT__CPU_AVX2, .gemm_x16 = qt__gemm_x16_q4_1_avx2, .gemm_x16_ref = qt__gemm_x16_q4_1_ref},
    {QT_TYPE_Q5_0, QT__CPU_AVX2, .gemm_x16 = qt__gemm_x16_q5_0_avx2, .gemm_x16_ref = qt__gemm_x16_q5_0_ref},
    {QT_TYPE_Q5_1, QT__CPU_AVX2, .gemm_x16 = qt__gemm_x16_q5_1_avx2, .gemm_x16_ref = qt__gemm_x16_q5_1_ref},
    {QT_TYPE_IQ4_NL, QT__CPU_AVX2, .gemm_x16 = qt__gemm_x16_iq4_nl_avx2, .gemm_x16_ref = qt__gemm_x16_iq4_nl_ref},
    {QT_TYPE_Q8_0, QT__CPU_AVX2, .gemm_x16 = qt__gemm_x16_q8_0_avx2, .gemm_x16_ref = qt__gemm_x16_q8_0_ref},
    {QT_TYPE_Q8_0, QT__CPU_AVX2, .act_q8s = qt__act_q8s_avx2}, /* q8s activations, every level from AVX2 up */
    {QT_TYPE_Q8_0, QT__CPU_AVX2, .act_q8_0 = qt__act_q8_0_avx2}, /* q8_0 activations (llama order), the same codes */
    /* K-quant quantizers, sub-block searches 8 groups at a time (q_k_avx2.c, fit_lanes.h) */
    {QT_TYPE_Q2_K, QT__CPU_AVX2, .from_float = qt__quantize_q2_K_avx2},
    {QT_TYPE_Q3_K, QT__CPU_AVX2, .from_float = qt__quantize_q3_K_avx2},
    {QT_TYPE_Q4_K, QT__CPU_AVX2, .from_float = qt__quantize_q4_K_avx2},
    {QT_TYPE_Q5_K, QT__CPU_AVX2, .from_float = qt__quantize_q5_K_avx2},
    {QT_TYPE_Q6_K, QT__CPU_AVX2, .from_float = qt__quantize_q6_K_avx2},
    /* IQ2 / IQ3 quantizers, neighbour searches 8 neighbours at a time (q_iq_avx2.c, q_iq_nb.h) */
    {QT_TYPE_IQ2_XXS, QT__CPU_AVX2, .from_float = qt__quantize_iq2_xxs_avx2},
    {QT_TYPE_IQ2_XS, QT__CPU_AVX2, .from_float = qt__quantize_iq2_xs_avx2},
    {QT_TYPE_IQ2_S, QT__CPU_AVX2, .from_float = qt__quantize_iq2_s_avx2},
    {QT_TYPE_IQ3_XXS, QT__CPU_AVX2, .from_float = qt__quantize_iq3_xxs_avx2},
    {QT_TYPE_IQ3_S, QT__CPU_AVX2, .from_float = qt__quantize_iq3_s_avx2},
    {QT_TYPE_Q8_K, QT__CPU_AVX2, .from_float = qt__quantize_q8_K_avx2}, /* activations of the K-quant dots and k16 kernels */
    /* AVX-512 F + BW + VL + VNNI */
    {QT_TYPE_CT_I8, QT__CPU_AVX512, .vec_dot = qt__dot_ct_i8_avx512},
    {QT_TYPE_CT_F8, QT__CPU_AVX512, .vec_dot = qt__dot_ct_f8_avx512},
    {QT_TYPE_CT_F8_BLOCK, QT__CPU_AVX512, .vec_dot = qt__dot_ct_f8_block_avx512},
    /* K-quant quantizers, 16 groups at a time (q_k_avx512.c) */
    {QT_TYPE_Q2_K, QT__CPU_AVX512, .from_float = qt__quantize_q2_K_avx512},
    {QT_TYPE_Q3_K, QT__CPU_AVX512, .from_float = qt__quantize_q3_K_avx512},
    {QT_TYPE_Q4_K, QT__CPU_AVX512, .from_float = qt__quantize_q4_K_avx512},
    {QT_TYPE_Q5_K, QT__CPU_AVX512, .from_float = qt__quantize_q5_K_avx512},
    {QT_TYPE_Q6_K, QT__CPU_AVX512, .from_float = qt__quantize_q6_K_avx512},
    /* IQ2 / IQ3 quantizers, neighbour searches 16 neighbours at a time (q_iq_avx512.c, q_iq_nb.h) */
    {QT_TYPE_IQ2_XXS, QT__CPU_AVX512, .from_float = qt__quantize_iq2_xxs_avx512},
    {QT_TYPE_IQ2_XS, QT__CPU_AVX512, .from_float = qt__quantize_iq2_xs_avx512},
    {QT_TYPE_IQ2_S, QT__CPU_AVX512, .from_float = qt__quantize_iq2_s_avx512},
    {QT_TYPE_IQ3_XXS, QT__CPU_AVX512, .from_float = qt__quantize_iq3_xxs_avx512},
    {QT_TYPE_IQ3_S, QT__CPU_AVX512, .from_float = qt__quantize_iq3_s_avx512},
    {QT_TYPE_Q8_K, QT__CPU_AVX512, .from_float = qt__quantize_q8_K_avx512},
    {QT_TYPE_Q8_0, QT__CPU_AVX512, .gemm = qt__gemm_q8_0_avx512},
    {QT_TYPE_Q4_0, QT__CPU_AVX512, .gemm = qt__gemm_q4_0_avx512},
    {QT_TYPE_Q4_K, QT__CPU_AVX512, .gemm = qt__gemm_q4_K_avx512, .gemm_min_batch = 2},
    {QT_TYPE_Q6_K, QT__CPU_AVX512, .gemm = qt__gemm_q6_K_avx512, .gemm_min_batch = 2},
    /* --numerics fast: two blocks per 512-bit vector (not llama.cpp's float order) */
    {QT_TYPE_Q8_0, QT__CPU_AVX512, .gemm_fast = qt__gemm_fast_q8_0_avx512, .gemm_fast_ref = qt__dot_fast_q8_0_ref},
    {QT_TYPE_Q4_0, QT__CPU_AVX512, .gemm_fast = qt__gemm_fast_q4_0_avx512, .gemm_fast_ref = qt__dot_fast_q4_0_ref},
    /* --numerics fast on x16-packed rows (gemm_x16_avx512.c) */
    {QT_TYPE_Q4_0, QT__CPU_AVX512, .gemm_x16 = qt__gemm_x16_q4_0_avx512, .gemm_x16_ref = qt__gemm_x16_q4_0_ref},
    {QT_TYPE_Q4_1, QT__CPU_AVX512, .gemm_x16 = qt__gemm_x16_q4_1_avx512, .gemm_x16_ref = qt__gemm_x16_q4_1_ref},
    {QT_TYPE_Q5_0, QT__CPU_AVX512, .gemm_x16 = qt__gemm_x16_q5_0_avx512, .gemm_x16_ref = qt__gemm_x16_q5_0_ref},
    {QT_TYPE_Q5_1, QT__CPU_AVX512, .gemm_x16 = qt__gemm_x16_q5_1_avx512, .gemm_x16_ref = qt__gemm_x16_q5_1_ref},
    {QT_TYPE_IQ4_NL, QT__CPU_AVX512, .gemm_x16 = qt__gemm_x16_iq4_nl_avx512, .gemm_x16_ref = qt__gemm_x16_iq4_nl_ref},
    {QT_TYPE_Q8_0, QT__CPU_AVX512, .gemm_x16 = qt__gemm_x16_q8_0_avx512, .gemm_x16_ref = qt__gemm_x16_q8_0_ref},
    /* --numerics fast K-quants and IQ4_XS (gemm_k_avx2.c, gemm_k_avx512.c): exact super-block integers,
       4 rows per float vector; one order (gemm_k.h), so both levels give the same bits */
#define QT_FAST_K(T, t, SUFFIX, LEVEL) \
    {QT_TYPE_##T, LEVEL, .gemm_fast = qt__gemm_fast_##t##_##SUFFIX, .gemm_fast_ref = qt__dot_fast_##t##_ref}
    QT_FAST_K(Q2_K, q2_K, avx2, QT__CPU_AVX2),   QT_FAST_K(Q3_K, q3_K, avx2, QT__CPU_AVX2),
    QT_FAST_K(Q4_K, q4_K, avx2, QT__CPU_AVX2),   QT_FAST_K(Q5_K, q5_K, avx2, QT__CPU_AVX2),
    QT_FAST_K(Q6_K, q6_K, avx2, QT__CPU_AVX2),
    QT_FAST_K(Q2_K, q2_K, avx512, QT__CPU_AVX512), QT_FAST_K(Q3_K, q3_K, avx512, QT__CPU_AVX512),
    QT_FAST_K(Q4_K, q4_K, avx512, QT__CPU_AVX512), QT_FAST_K(Q5_K, q5_K, avx512, QT__CPU_AVX512),
    QT_FAST_K(Q6_K, q6_K, avx512, QT__CPU_AVX512),
    QT_FAST_K(IQ4_XS, iq4_xs, avx2, QT__CPU_AVX2), QT_FAST_K(IQ4_XS, iq4_xs, avx512, QT__CPU_AVX512),
#undef QT_FAST_K
    /* --numerics fast F16/BF16 (gemm_f16_avx2.c, gemm_f16_avx512.c): tinyBLAS's 16-lane order
       at every batch size, in register tiles */
    {QT_TYPE_F16, QT__CPU_AVX2, .gemm_fast = qt__gemm_fast_f16_avx2, .gemm_fast_ref = qt__gemm_f16_ref},
    {QT_TYPE_BF16, QT__CPU_AVX2, .gemm_fast = qt__gemm_fast_bf16_avx2, .gemm_fast_ref = qt__dot_fast_bf16_ref},
    {QT_TYPE_F16, QT__CPU_AVX512, .gemm_fast = qt__gemm_fast_f16_avx512, .gemm_fast_ref = qt__gemm_f16_ref},
    /* F16 activations with F16C (qt_f32_to_fp16's bits), and the fast kernels that read them as f32 */
    {QT_TYPE_F16, QT__CPU_AVX2, .act_f16 = qt__act_f16_avx2, .act_f16_f32 = qt__act_f16_f32_avx2},
    {QT_TYPE_F16, QT__CPU_AVX2, .gemm_fast_a32 = qt__gemm_fast_f16_a32_avx2, .gemm_fast_a32_ref = qt__gemm_f16_a32_ref},
    {QT_TYPE_F16, QT__CPU_AVX512, .gemm_fast_a32 = qt__gemm_fast_f16_a32_avx512, .gemm_fast_a32_ref = qt__gemm_f16_a32_ref},
    {QT_TYPE_BF16, QT__CPU_AVX512, .gemm_fast = qt__gemm_fast_bf16_avx512, .gemm_fast_ref = qt__dot_fast_bf16_ref},
    /* --numerics fast K-quants on k16-packed rows (gemm_k16_avx2.c, gemm_k16_avx512.c): gemm_fast's bits;
       no AVX2 Q6_K (slower than its gemm_fast, gemm_k16_avx2.c) */
    {QT_TYPE_Q4_K, QT__CPU_AVX2, .gemm_k16 = qt__gemm_k16_q4_K_avx2, .gemm_k16_ref = qt__gemm_k16_q4_K_ref},
    {QT_TYPE_Q5_K, QT__CPU_AVX2, .gemm_k16 = qt__gemm_k16_q5_K_avx2, .gemm_k16_ref = qt__gemm_k16_q5_K_ref},
    {QT_TYPE_Q4_K, QT__CPU_AVX512, .gemm_k16 = qt__gemm_k16_q4_K_avx512, .gemm_k16_ref = qt__gemm_k16_q4_K_ref},
    {QT_TYPE_Q5_K, QT__CPU_AVX512, .gemm_k16 = qt__gemm_k16_q5_K_avx512, .gemm_k16_ref = qt__gemm_k16_q5_K_ref},
    {QT_TYPE_Q6_K, QT__CPU_AVX512, .gemm_k16 = qt__gemm_k16_q6_K_avx512, .gemm_k16_ref = qt__gemm_k16_q6_K_ref},
    {QT_TYPE_Q4_0, QT__CPU_AVX512, .to_float = qt__dequantize_q4_0_avx512},
    {QT_TYPE_Q8_0, QT__CPU_AVX512, .to_float = qt__dequantize_q8_0_avx512},
    {QT_TYPE_Q4_K, QT__CPU_AVX512, .to_float = qt__dequantize_q4_K_avx512},
    {QT_TYPE_Q6_K, QT__CPU_AVX512, .to_float = qt__dequantize_q6_K_avx512},
    {QT_TYPE_COUNT, QT__CPU_AVX512, .ct_int4_row = qt__ct_int4_row_avx512},
    /* weight-only 4-bit compressed-tensors rows (ct4_avx2.c, ct4_avx512.c): the f32 dots' bits */
#define QT_CT4(t, T, SUFFIX, LEVEL) \
    {QT_TYPE_CT_##T, LEVEL, .to_float = qt__ct4_##t##_to_float_##SUFFIX, .vec_dot = qt__dot_ct4_##t##_##SUFFIX, \
     .vec_dot_gemm = qt__gemm_ct4_##t##_##SUFFIX}
    QT_CT4(w4g32, W4_G32, avx2, QT__CPU_AVX2), QT_CT4(w4g64, W4_G64, avx2, QT__CPU_AVX2),
    QT_CT4(w4g128, W4_G128, avx2, QT__CPU_AVX2), QT_CT4(nvfp4, NVFP4, avx2, QT__CPU_AVX2),
    QT_CT4(mxfp4, MXFP4, avx2, QT__CPU_AVX2),
    QT_CT4(w4g32, W4_G32, avx512, QT__CPU_AVX512), QT_CT4(w4g64, W4_G64, avx512, QT__CPU_AVX512),
    QT_CT4(w4g128, W4_G128, avx512, QT__CPU_AVX512), QT_CT4(nvfp4, NVFP4, avx512, QT__CPU_AVX512),
    QT_CT4(mxfp4, MXFP4, avx512, QT__CPU_AVX512),
    /* weight-only 8-bit compressed-tensors rows (ct8_avx2.c, ct8_avx512.c): the f32 dots' bits */
#define QT_CT8(t, T, SUFFIX, LEVEL) \
    {QT_TYPE_CT_##T, LEVEL, .to_float = qt__ct8_##t##_to_float_##SUFFIX, .vec_dot = qt__dot_ct8_##t##_##SUFFIX, \
     .vec_dot_gemm = qt__gemm_ct8_##t##_##SUFFIX}
    QT_CT8(g128, W8_G128, avx2, QT__CPU_AVX2), QT_CT8(ch, W8_CH, avx2, QT__CPU_AVX2),
    QT_CT8(g128, W8_G128, avx512, QT__CPU_AVX512), QT_CT8(ch, W8_CH, avx512, QT__CPU_AVX512),
#undef QT_CT8
    /* batches of int4 rows, AVX-512 (vec_dot_gemm's bits; bench_gemm: 1.2-1.8x the dequantized rows' f32
       dots at batch 64; the AVX2 tiles and the fp4 rows' measured slower than dequantizing each row) */
#define QT_CT4_GEMM(t, T) {QT_TYPE_CT_##T, QT__CPU_AVX512, .gemm = qt__gemm_tiles_ct4_##t##_avx512, .gemm_min_batch = 2}
    QT_CT4_GEMM(w4g32, W4_G32), QT_CT4_GEMM(w4g64, W4_G64), QT_CT4_GEMM(w4g128, W4_G128),
#undef QT_CT4_GEMM
#undef QT_CT4
    /* --numerics fast on int4 g128 rows: int8 activations per group of 128, integer dots (ct4.h) */
    {QT_TYPE_CT_W4_G128, QT__CPU_AVX2, .gemm_fast = qt__gemm_fast_ct4_w4g128_avx2, .gemm_fast_ref = qt__dot_ct4_w4g128_fast_ref},
    {QT_TYPE_CT_W4_G128, QT__CPU_AVX512, .gemm_fast = qt__gemm_fast_ct4_w4g128_avx512,
     .gemm_fast_ref = qt__dot_ct4_w4g128_fast_ref},
    /* AMX-INT8 (gemm_x16_amx.c): --numerics fast on x16-packed rows, TDPBSUD block sums from 16 batch rows
       (bench_gemm), the AVX-512 kernel's bits */
    {QT_TYPE_Q4_0, QT__CPU_AMX, .gemm_x16 = qt__gemm_x16_q4_0_amx, .gemm_x16_ref = qt__gemm_x16_q4_0_ref},
    {QT_TYPE_Q4_1, QT__CPU_AMX, .gemm_x16 = qt__gemm_x16_q4_1_amx, .gemm_x16_ref = qt__gemm_x16_q4_1_ref},
    {QT_TYPE_Q5_0, QT__CPU_AMX, .gemm_x16 = qt__gemm_x16_q5_0_amx, .gemm_x16_ref = qt__gemm_x16_q5_0_ref},
    {QT_TYPE_Q5_1, QT__CPU_AMX, .gemm_x16 = qt__gemm_x16_q5_1_amx, .gemm_x16_ref = qt__gemm_x16_q5_1_ref},
    {QT_TYPE_IQ4_NL, QT__CPU_AMX, .gemm_x16 = qt__gemm_x16_iq4_nl_amx, .gemm_x16_ref = qt__gemm_x16_iq4_nl_ref},
    {QT_TYPE_Q8_0, QT__CPU_AMX, .gemm_x16 = qt__gemm_x16_q8_0_amx, .gemm_x16_ref = qt__gemm_x16_q8_0_ref},
    /* AMX-INT8 (gemm_k16_amx.c): --numerics fast on k16-packed K-quant rows, the scales in two int8 digit
       planes of the B tiles, from 16 batch rows; the AVX-512 k16 kernel's bits */
    {QT_TYPE_Q4_K, QT__CPU_AMX, .gemm_k16 = qt__gemm_k16_q4_K_amx, .gemm_k16_ref = qt__gemm_k16_q4_K_ref},
    {QT_TYPE_Q5_K, QT__CPU_AMX, .gemm_k16 = qt__gemm_k16_q5_K_amx, .gemm_k16_ref = qt__gemm_k16_q5_K_ref},
    {QT_TYPE_Q6_K, QT__CPU_AMX, .gemm_k16 = qt__gemm_k16_q6_K_amx, .gemm_k16_ref = qt__gemm_k16_q6_K_ref},
#endif
    {.type = QT_TYPE_COUNT, .level = QT__CPU_LEVEL_COUNT}, /* end */
};
