/* lib/quant/traits.c — THE traits table: one row per tensor element type.
 *
 * Sizes are ggml's (docs/formats.md §3.2). Function fields left NULL mean "no codec":
 * the checked wrappers in quant.c refuse such types with QT_ERR_UNSUPPORTED.
 * The table is const and holds scalar references only; SIMD kernels are rows
 * of lib/quant/variants.c, resolved once by lib/quant/dispatch.c.
 */
#include "kernels.h"
#include "traits_internal.h"
#include "ct4.h"     /* engine-only weight-only 4-bit rows */
#include "ct8.h"     /* engine-only weight-only 8-bit rows */
#include "ct_rows.h" /* engine-only compressed-tensors rows */
#include "dot.h" /* vec_dot kernels: dot products with activations quantized to vec_dot_type */

const qt_type_traits qt__traits[QT_TYPE_COUNT] = {
    [QT_TYPE_F32] = {
        .name = "f32", .type = QT_TYPE_F32,
        .block_elems = 1, .block_bytes = 4,
        .is_quantized = false, .runtime_only = false, .imatrix_aware = false,
        .to_float_ref = qt__dequantize_f32,
        .from_float = qt__quantize_f32,
        .vec_dot_type = QT_TYPE_F32,
        .vec_dot = qt__dot_f32_ref,
        .vec_dot_gemm = qt__gemm_f32_ref,
    },

    [QT_TYPE_F16] = {
        .name = "f16", .type = QT_TYPE_F16,
        .block_elems = 1, .block_bytes = 2,
        .is_quantized = false, .runtime_only = false, .imatrix_aware = false,
        .to_float_ref = qt__dequantize_f16,
        .from_float = qt__quantize_f16,
        .vec_dot_type = QT_TYPE_F16,
        .vec_dot = qt__dot_f16_ref,
        .vec_dot_gemm = qt__gemm_f16_ref,
    },

    [QT_TYPE_Q4_0] = {
        .name = "q4_0", .type = QT_TYPE_Q4_0,
        .block_elems = 32, .block_bytes = 18,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = true,
        .to_float_ref = qt__dequantize_q4_0,
        .from_float = qt__quantize_q4_0,
        .vec_dot_type = QT_TYPE_Q8_0,
        .vec_dot = qt__dot_q4_0_q8_0_ref,
    },

    [QT_TYPE_Q4_1] = {
        .name = "q4_1", .type = QT_TYPE_Q4_1,
        .block_elems = 32, .block_bytes = 20,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = true,
        .to_float_ref = qt__dequantize_q4_1,
        .from_float = qt__quantize_q4_1,
        .vec_dot_type = QT_TYPE_Q8_1,
        .vec_dot = qt__dot_q4_1_q8_1_ref,
    },

    [QT_TYPE_Q5_0] = {
        .name = "q5_0", .type = QT_TYPE_Q5_0,
        .block_elems = 32, .block_bytes = 22,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = true,
        .to_float_ref = qt__dequantize_q5_0,
        .from_float = qt__quantize_q5_0,
        .vec_dot_type = QT_TYPE_Q8_0,
        .vec_dot = qt__dot_q5_0_q8_0_ref,
    },

    [QT_TYPE_Q5_1] = {
        .name = "q5_1", .type = QT_TYPE_Q5_1,
        .block_elems = 32, .block_bytes = 24,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = true,
        .to_float_ref = qt__dequantize_q5_1,
        .from_float = qt__quantize_q5_1,
        .vec_dot_type = QT_TYPE_Q8_1,
        .vec_dot = qt__dot_q5_1_q8_1_ref,
    },

    [QT_TYPE_Q8_0] = {
        .name = "q8_0", .type = QT_TYPE_Q8_0,
        .block_elems = 32, .block_bytes = 34,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = false,
        .to_float_ref = qt__dequantize_q8_0,
        .from_float = qt__quantize_q8_0,
        .vec_dot_type = QT_TYPE_Q8_0,
        .vec_dot = qt__dot_q8_0_q8_0_ref,
    },

    [QT_TYPE_Q8_1] = {
        .name = "q8_1", .type = QT_TYPE_Q8_1,
        .block_elems = 32, .block_bytes = 36,
        .is_quantized = true, .runtime_only = true, .imatrix_aware = false,
        .to_float_ref = qt__dequantize_q8_1,
        .from_float = qt__quantize_q8_1,
        .vec_dot_type = QT_TYPE_Q8_1,
        .vec_dot = NULL,
    },

    [QT_TYPE_Q2_K] = {
        .name = "q2_K", .type = QT_TYPE_Q2_K,
        .block_elems = 256, .block_bytes = 84,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = true,
        .to_float_ref = qt__dequantize_q2_K,
        .from_float = qt__quantize_q2_K,
        .vec_dot_type = QT_TYPE_Q8_K,
        .vec_dot = qt__dot_q2_K_q8_K_ref,
    },

    [QT_TYPE_Q3_K] = {
        .name = "q3_K", .type = QT_TYPE_Q3_K,
        .block_elems = 256, .block_bytes = 110,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = true,
        .to_float_ref = qt__dequantize_q3_K,
        .from_float = qt__quantize_q3_K,
        .vec_dot_type = QT_TYPE_Q8_K,
        .vec_dot = qt__dot_q3_K_q8_K_ref,
    },

    [QT_TYPE_Q4_K] = {
        .name = "q4_K", .type = QT_TYPE_Q4_K,
        .block_elems = 256, .block_bytes = 144,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = true,
        .to_float_ref = qt__dequantize_q4_K,
        .from_float = qt__quantize_q4_K,
        .vec_dot_type = QT_TYPE_Q8_K,
        .vec_dot = qt__dot_q4_K_q8_K_ref,
    },

    [QT_TYPE_Q5_K] = {
        .name = "q5_K", .type = QT_TYPE_Q5_K,
        .block_elems = 256, .block_bytes = 176,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = true,
        .to_float_ref = qt__dequantize_q5_K,
        .from_float = qt__quantize_q5_K,
        .vec_dot_type = QT_TYPE_Q8_K,
        .vec_dot = qt__dot_q5_K_q8_K_ref,
    },

    [QT_TYPE_Q6_K] = {
        .name = "q6_K", .type = QT_TYPE_Q6_K,
        .block_elems = 256, .block_bytes = 210,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = true,
        .to_float_ref = qt__dequantize_q6_K,
        .from_float = qt__quantize_q6_K,
        .vec_dot_type = QT_TYPE_Q8_K,
        .vec_dot = qt__dot_q6_K_q8_K_ref,
    },

    [QT_TYPE_Q8_K] = {
        .name = "q8_K", .type = QT_TYPE_Q8_K,
        .block_elems = 256, .block_bytes = 292,
        .is_quantized = true, .runtime_only = true, .imatrix_aware = false,
        .to_float_ref = qt__dequantize_q8_K,
        .from_float = qt__quantize_q8_K,
        .vec_dot_type = QT_TYPE_Q8_K,
        .vec_dot = NULL,
    },

    [QT_TYPE_IQ4_NL] = {
        .name = "iq4_nl", .type = QT_TYPE_IQ4_NL,
        .block_elems = 32, .block_bytes = 18,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = true,
        .to_float_ref = qt__dequantize_iq4_nl,
        .from_float = qt__quantize_iq4_nl,
        .vec_dot_type = QT_TYPE_Q8_0,
        .vec_dot = qt__dot_iq4_nl_q8_0_ref,
    },

    [QT_TYPE_IQ4_XS] = {
        .name = "iq4_xs", .type = QT_TYPE_IQ4_XS,
        .block_elems = 256, .block_bytes = 136,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = true,
        .to_float_ref = qt__dequantize_iq4_xs,
        .from_float = qt__quantize_iq4_xs,
        .vec_dot_type = QT_TYPE_Q8_K,
        .vec_dot = qt__dot_iq4_xs_q8_K_ref,
    },

    /* ---- i-quants below 4 bits (codecs lib/quant/q_iq.c, dot kernels
     * lib/quant/dot_iq.c) ---- */
    [QT_TYPE_IQ2_XXS] = {
        .name = "iq2_xxs", .type = QT_TYPE_IQ2_XXS,
        .block_elems = 256, .block_bytes = 66,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = true,
        .to_float_ref = qt__dequantize_iq2_xxs,
        .from_float = qt__quantize_iq2_xxs,
        .vec_dot_type = QT_TYPE_Q8_K,
        .vec_dot = qt__dot_iq2_xxs_q8_K_ref,
    },

    [QT_TYPE_IQ2_XS] = {
        .name = "iq2_xs", .type = QT_TYPE_IQ2_XS,
        .block_elems = 256, .block_bytes = 74,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = true,
        .to_float_ref = qt__dequantize_iq2_xs,
        .from_float = qt__quantize_iq2_xs,
        .vec_dot_type = QT_TYPE_Q8_K,
        .vec_dot = qt__dot_iq2_xs_q8_K_ref,
    },

    [QT_TYPE_IQ2_S] = {
        .name = "iq2_s", .type = QT_TYPE_IQ2_S,
        .block_elems = 256, .block_bytes = 82,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = true,
        .to_float_ref = qt__dequantize_iq2_s,
        .from_float = qt__quantize_iq2_s,
        .vec_dot_type = QT_TYPE_Q8_K,
        .vec_dot = qt__dot_iq2_s_q8_K_ref,
    },

    [QT_TYPE_IQ3_XXS] = {
        .name = "iq3_xxs", .type = QT_TYPE_IQ3_XXS,
        .block_elems = 256, .block_bytes = 98,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = true,
        .to_float_ref = qt__dequantize_iq3_xxs,
        .from_float = qt__quantize_iq3_xxs,
        .vec_dot_type = QT_TYPE_Q8_K,
        .vec_dot = qt__dot_iq3_xxs_q8_K_ref,
    },

    [QT_TYPE_IQ3_S] = {
        .name = "iq3_s", .type = QT_TYPE_IQ3_S,
        .block_elems = 256, .block_bytes = 110,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = true,
        .to_float_ref = qt__dequantize_iq3_s,
        .from_float = qt__quantize_iq3_s,
        .vec_dot_type = QT_TYPE_Q8_K,
        .vec_dot = qt__dot_iq3_s_q8_K_ref,
    },

    [QT_TYPE_IQ1_S] = {
        .name = "iq1_s", .type = QT_TYPE_IQ1_S,
        .block_elems = 256, .block_bytes = 50,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = true,
        .to_float_ref = qt__dequantize_iq1_s,
        .from_float = qt__quantize_iq1_s,
        .vec_dot_type = QT_TYPE_Q8_K,
        .vec_dot = qt__dot_iq1_s_q8_K_ref,
    },

    [QT_TYPE_IQ1_M] = {
        .name = "iq1_m", .type = QT_TYPE_IQ1_M,
        .block_elems = 256, .block_bytes = 56,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = true,
        .to_float_ref = qt__dequantize_iq1_m,
        .from_float = qt__quantize_iq1_m,
        .vec_dot_type = QT_TYPE_Q8_K,
        .vec_dot = qt__dot_iq1_m_q8_K_ref,
    },
    /* ---- end of i-quants below 4 bits ---- */

    [QT_TYPE_I8] = {
        .name = "i8", .type = QT_TYPE_I8,
        .block_elems = 1, .block_bytes = 1,
        .is_quantized = false, .runtime_only = false, .imatrix_aware = false,
        .to_float_ref = NULL,
        .from_float = NULL,
        .vec_dot_type = QT_TYPE_I8,
        .vec_dot = NULL,
    },

    [QT_TYPE_I16] = {
        .name = "i16", .type = QT_TYPE_I16,
        .block_elems = 1, .block_bytes = 2,
        .is_quantized = false, .runtime_only = false, .imatrix_aware = false,
        .to_float_ref = NULL,
        .from_float = NULL,
        .vec_dot_type = QT_TYPE_I16,
        .vec_dot = NULL,
    },

    [QT_TYPE_I32] = {
        .name = "i32", .type = QT_TYPE_I32,
        .block_elems = 1, .block_bytes = 4,
        .is_quantized = false, .runtime_only = false, .imatrix_aware = false,
        .to_float_ref = NULL,
        .from_float = NULL,
        .vec_dot_type = QT_TYPE_I32,
        .vec_dot = NULL,
    },

    [QT_TYPE_I64] = {
        .name = "i64", .type = QT_TYPE_I64,
        .block_elems = 1, .block_bytes = 8,
        .is_quantized = false, .runtime_only = false, .imatrix_aware = false,
        .to_float_ref = NULL,
        .from_float = NULL,
        .vec_dot_type = QT_TYPE_I64,
        .vec_dot = NULL,
    },

    [QT_TYPE_F64] = {
        .name = "f64", .type = QT_TYPE_F64,
        .block_elems = 1, .block_bytes = 8,
        .is_quantized = false, .runtime_only = false, .imatrix_aware = false,
        .to_float_ref = NULL,
        .from_float = NULL,
        .vec_dot_type = QT_TYPE_F64,
        .vec_dot = NULL,
    },

    [QT_TYPE_BF16] = {
        .name = "bf16", .type = QT_TYPE_BF16,
        .block_elems = 1, .block_bytes = 2,
        .is_quantized = false, .runtime_only = false, .imatrix_aware = false,
        .to_float_ref = qt__dequantize_bf16,
        .from_float = qt__quantize_bf16,
        .vec_dot_type = QT_TYPE_BF16,
        .vec_dot = qt__dot_bf16_ref,
    },

    [QT_TYPE_TQ1_0] = {
        .name = "tq1_0", .type = QT_TYPE_TQ1_0,
        .block_elems = 256, .block_bytes = 54,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = false,
        .to_float_ref = qt__dequantize_tq1_0,
        .from_float = qt__quantize_tq1_0,
        .vec_dot_type = QT_TYPE_TQ1_0,
        .vec_dot = NULL,
    },

    [QT_TYPE_TQ2_0] = {
        .name = "tq2_0", .type = QT_TYPE_TQ2_0,
        .block_elems = 256, .block_bytes = 66,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = false,
        .to_float_ref = qt__dequantize_tq2_0,
        .from_float = qt__quantize_tq2_0,
        .vec_dot_type = QT_TYPE_Q8_K,
        .vec_dot = qt__dot_tq2_0_q8_K_ref,
    },

    [QT_TYPE_MXFP4] = {
        .name = "mxfp4", .type = QT_TYPE_MXFP4,
        .block_elems = 32, .block_bytes = 17,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = false,
        .to_float_ref = qt__dequantize_mxfp4,
        .from_float = qt__quantize_mxfp4,
        .vec_dot_type = QT_TYPE_Q8_0,
        .vec_dot = qt__dot_mxfp4_q8_0_ref,
    },

    /* ---- Q1_0, Q2_0 (ggml 2026; lib/quant/q_q1_q2.c) ---- */
    [QT_TYPE_Q1_0] = {
        .name = "q1_0", .type = QT_TYPE_Q1_0,
        .block_elems = 128, .block_bytes = 18,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = false,
        .to_float_ref = qt__dequantize_q1_0,
        .from_float = qt__quantize_q1_0,
        .vec_dot_type = QT_TYPE_Q8_0,
        .vec_dot = qt__dot_q1_0_q8_0_ref,
    },

    [QT_TYPE_Q2_0] = {
        .name = "q2_0", .type = QT_TYPE_Q2_0,
        .block_elems = 64, .block_bytes = 18,
        .is_quantized = true, .runtime_only = false, .imatrix_aware = false,
        .to_float_ref = qt__dequantize_q2_0,
        .from_float = qt__quantize_q2_0,
        .vec_dot_type = QT_TYPE_Q8_0,
        .vec_dot = qt__dot_q2_0_q8_0_ref,
    },

    /* ---- engine-only: compressed-tensors W8A8 / FP8 rows kept packed (ct_rows.h) ---- */
    [QT_TYPE_CT_I8] = {
        .name = "ct_i8", .type = QT_TYPE_CT_I8,
        .block_elems = 1, .block_bytes = 1,
        .is_quantized = true, .runtime_only = true, .imatrix_aware = false,
        .to_float_ref = qt__ct_i8_to_float,
        .vec_dot_type = QT_TYPE_CT_I8,
        .vec_dot = qt__dot_ct_i8_ref,
        .engine_only = true, .row_size = qt__ct_i8_row_size,
    },

    [QT_TYPE_CT_F8] = {
        .name = "ct_f8", .type = QT_TYPE_CT_F8,
        .block_elems = 1, .block_bytes = 1,
        .is_quantized = true, .runtime_only = true, .imatrix_aware = false,
        .to_float_ref = qt__ct_f8_to_float,
        .vec_dot_type = QT_TYPE_CT_F8_ACT,
        .vec_dot = qt__dot_ct_f8_ref,
        .engine_only = true, .row_size = qt__ct_f8_row_size,
    },

    [QT_TYPE_CT_F8_ACT] = {
        .name = "ct_f8_act", .type = QT_TYPE_CT_F8_ACT,
        .block_elems = 1, .block_bytes = 1,
        .is_quantized = true, .runtime_only = true, .imatrix_aware = false,
        .to_float_ref = qt__ct_f8_act_to_float,
        .vec_dot_type = QT_TYPE_CT_F8_ACT,
        .engine_only = true, .row_size = qt__ct_f8_act_row_size,
    },

    [QT_TYPE_CT_F8_BLOCK] = {
        .name = "ct_f8_block", .type = QT_TYPE_CT_F8_BLOCK,
        .block_elems = 1, .block_bytes = 1,
        .is_quantized = true, .runtime_only = true, .imatrix_aware = false,
        .to_float_ref = qt__ct_f8_block_to_float,
        .vec_dot_type = QT_TYPE_CT_F8_BLOCK,
        .vec_dot = qt__dot_ct_f8_block_ref,
        .engine_only = true, .row_size = qt__ct_f8_block_row_size,
    },

    /* ---- engine-only: weight-only 4-bit compressed-tensors rows, f32 activations (ct4.h) ---- */
    [QT_TYPE_CT_W4_G32] = {
        .name = "ct_w4_g32", .type = QT_TYPE_CT_W4_G32,
        .block_elems = 1, .block_bytes = 1,
        .is_quantized = true, .runtime_only = true, .imatrix_aware = false,
        .to_float_ref = qt__ct4_w4g32_to_float,
        .vec_dot_type = QT_TYPE_F32,
        .vec_dot = qt__dot_ct4_w4g32_ref,
        .vec_dot_gemm = qt__gemm_ct4_w4g32_ref,
        .engine_only = true, .row_size = qt__ct4_w4g32_row_size,
    },

    [QT_TYPE_CT_W4_G64] = {
        .name = "ct_w4_g64", .type = QT_TYPE_CT_W4_G64,
        .block_elems = 1, .block_bytes = 1,
        .is_quantized = true, .runtime_only = true, .imatrix_aware = false,
        .to_float_ref = qt__ct4_w4g64_to_float,
        .vec_dot_type = QT_TYPE_F32,
        .vec_dot = qt__dot_ct4_w4g64_ref,
        .vec_dot_gemm = qt__gemm_ct4_w4g64_ref,
        .engine_only = true, .row_size = qt__ct4_w4g64_row_size,
    },

    [QT_TYPE_CT_W4_G128] = {
        .name = "ct_w4_g128", .type = QT_TYPE_CT_W4_G128,
        .block_elems = 1, .block_bytes = 1,
        .is_quantized = true, .runtime_only = true, .imatrix_aware = false,
        .to_float_ref = qt__ct4_w4g128_to_float,
        .vec_dot_type = QT_TYPE_F32,
        .vec_dot = qt__dot_ct4_w4g128_ref,
        .vec_dot_gemm = qt__gemm_ct4_w4g128_ref,
        .engine_only = true, .row_size = qt__ct4_w4g128_row_size,
    },

    [QT_TYPE_CT_NVFP4] = {
        .name = "ct_nvfp4", .type = QT_TYPE_CT_NVFP4,
        .block_elems = 1, .block_bytes = 1,
        .is_quantized = true, .runtime_only = true, .imatrix_aware = false,
        .to_float_ref = qt__ct4_nvfp4_to_float,
        .vec_dot_type = QT_TYPE_F32,
        .vec_dot = qt__dot_ct4_nvfp4_ref,
        .vec_dot_gemm = qt__gemm_ct4_nvfp4_ref,
        .engine_only = true, .row_size = qt__ct4_nvfp4_row_size,
    },

    [QT_TYPE_CT_MXFP4] = {
        .name = "ct_mxfp4", .type = QT_TYPE_CT_MXFP4,
        .block_elems = 1, .block_bytes = 1,
        .is_quantized = true, .runtime_only = true, .imatrix_aware = false,
        .to_float_ref = qt__ct4_mxfp4_to_float,
        .vec_dot_type = QT_TYPE_F32,
        .vec_dot = qt__dot_ct4_mxfp4_ref,
        .vec_dot_gemm = qt__gemm_ct4_mxfp4_ref,
        .engine_only = true, .row_size = qt__ct4_mxfp4_row_size,
    },

    /* ---- engine-only: weight-only 8-bit compressed-tensors rows, f32 activations (ct8.h) ---- */
    [QT_TYPE_CT_W8_G128] = {
        .name = "ct_w8_g128", .type = QT_TYPE_CT_W8_G128,
        .block_elems = 1, .block_bytes = 1,
        .is_quantized = true, .runtime_only = true, .imatrix_aware = false,
        .to_float_ref = qt__ct8_g128_to_float,
        .vec_dot_type = QT_TYPE_F32,
        .vec_dot = qt__dot_ct8_g128_ref,
        .vec_dot_gemm = qt__gemm_ct8_g128_ref,
        .engine_only = true, .row_size = qt__ct8_g128_row_size,
    },

    [QT_TYPE_CT_W8_CH] = {
        .name = "ct_w8_ch", .type = QT_TYPE_CT_W8_CH,
        .block_elems = 1, .block_bytes = 1,
        .is_quantized = true, .runtime_only = true, .imatrix_aware = false,
        .to_float_ref = qt__ct8_ch_to_float,
        .vec_dot_type = QT_TYPE_F32,
        .vec_dot = qt__dot_ct8_ch_ref,
        .vec_dot_gemm = qt__gemm_ct8_ch_ref,
        .engine_only = true, .row_size = qt__ct8_ch_row_size,
    },
};
