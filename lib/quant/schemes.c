/* lib/quant/schemes.c — THE table of weight formats, GGUF file types and
 * quantization schemes (quanta/formats.h).
 *
 * Formats. GGUF rows take block sizes and bits per weight from the traits
 * table (traits.c), so the two can never disagree; the others compute theirs
 * from their columns: bits + scale_bits / group + zero_bits / group (+ 32 / CH
 * for GPTQ's g_idx). compressed-tensors rows follow docs/formats.md §4.3: scales in
 * the model's 16-bit dtype unless noted, zero points packed at the weight's
 * width along dim 0. "4096-wide rows" (CH) is the stated assumption for
 * per-channel scale overhead (one 16-bit scale per row).
 *
 * GGUF file types: llama.cpp's enum llama_ftype (llama.h; docs/formats.md §3.6).
 *
 * Schemes: what the planner ranks. Each names its format row; bits, group,
 * zero bits and g_idx are the format's, filled in once (never written twice).
 * The support matrix that says where each runs is lib/plan/support.c.
 */
#include <pthread.h>
#include <strings.h>

#include "schemes.h"

#define CH 4096.0 /* row length assumed for per-channel scale overhead */

#define F32 QT_FAMILY_DENSE
#define GG QT_FAMILY_GGUF
#define CT QT_FAMILY_COMPRESSED_TENSORS

#define INT_CODEC .quantize = qt__ct_int_tensor_quantize, .dequantize = qt__ct_int_tensor_dequantize
#define FP8_CODEC .quantize = qt__ct_fp8_tensor_quantize, .dequantize = qt__ct_fp8_tensor_dequantize

/* block_elems: GGUF rows take it from the traits; others 1 = per channel, 0 = per tensor. */
static const qt_format_info formats[] = {
    {"f32", F32, QT_TYPE_F32, NULL, 32, true, "none", .use = "reference precision; norms and small tensors", .engines = "llama.cpp, vLLM, transformers"},
    {"f16", F32, QT_TYPE_F16, NULL, 16, true, "none", .use = "unquantized baseline on GPUs without bf16 (Turing)", .engines = "llama.cpp, vLLM, transformers"},
    {"bf16", F32, QT_TYPE_BF16, NULL, 16, true, "none", .use = "unquantized baseline (most checkpoints ship in it)", .engines = "llama.cpp, vLLM, transformers"},
    {"q8_0", GG, QT_TYPE_Q8_0, NULL, 8, true, "f16", .use = "near-lossless 8-bit GGUF", .engines = "llama.cpp"},
    {"q6_K", GG, QT_TYPE_Q6_K, NULL, 6, true, "f16 + 8-bit sub-scales per 16", .use = "high-quality k-quant; output/attn_v in *_M presets", .engines = "llama.cpp"},
    {"q5_K", GG, QT_TYPE_Q5_K, NULL, 5, false, "f16 + 6-bit sub-scales and mins per 32", .use = "Q5_K_M: quality/size sweet spot for laptops", .engines = "llama.cpp"},
    {"q5_1", GG, QT_TYPE_Q5_1, NULL, 5, false, "f16 scale and min", .use = "legacy 5-bit with min (fallback for rows not /256)", .engines = "llama.cpp"},
    {"q5_0", GG, QT_TYPE_Q5_0, NULL, 5, true, "f16", .use = "legacy 5-bit (fallback for rows not /256)", .engines = "llama.cpp"},
    {"q4_K", GG, QT_TYPE_Q4_K, NULL, 4, false, "f16 + 6-bit sub-scales and mins per 32", .use = "Q4_K_M: the default 4-bit GGUF", .engines = "llama.cpp"},
    {"q4_1", GG, QT_TYPE_Q4_1, NULL, 4, false, "f16 scale and min", .use = "legacy 4-bit with min", .engines = "llama.cpp"},
    {"q4_0", GG, QT_TYPE_Q4_0, NULL, 4, true, "f16", .use = "legacy 4-bit; fast on ARM repacked paths", .engines = "llama.cpp"},
    {"iq4_nl", GG, QT_TYPE_IQ4_NL, NULL, 4, true, "f16", .use = "non-linear 4-bit codebook, 32-blocks", .engines = "llama.cpp"},
    {"iq4_xs", GG, QT_TYPE_IQ4_XS, NULL, 4, true, "f16 + 6-bit sub-scales per 32", .use = "non-linear 4-bit codebook, 256-superblocks", .engines = "llama.cpp"},
    {"q3_K", GG, QT_TYPE_Q3_K, NULL, 3, true, "f16 + 6-bit sub-scales per 16", .use = "3-bit k-quant (Q3_K_M/S); noticeable loss", .engines = "llama.cpp"},
    {"iq3_s", GG, QT_TYPE_IQ3_S, NULL, 3, true, "f16 + 4-bit sub-scales per 32", .use = "3-bit lattice codebook (IQ3_S/IQ3_M); needs an imatrix", .engines = "llama.cpp"},
    {"iq3_xxs", GG, QT_TYPE_IQ3_XXS, NULL, 3, true, "f16 + 4-bit sub-scales per 32", .use = "3-bit lattice codebook, smallest 3-bit; needs an imatrix", .engines = "llama.cpp"},
    {"q2_K", GG, QT_TYPE_Q2_K, NULL, 2, false, "f16 scale and min + 4-bit sub-scales per 16", .use = "2-bit k-quant; large loss, last resort for fit", .engines = "llama.cpp"},
    {"iq2_s", GG, QT_TYPE_IQ2_S, NULL, 2, true, "f16 + 4-bit sub-scales per 16", .use = "2-bit lattice codebook (IQ2_S/IQ2_M); needs an imatrix", .engines = "llama.cpp"},
    {"iq2_xs", GG, QT_TYPE_IQ2_XS, NULL, 2, true, "f16 + 4-bit sub-scales per 16", .use = "2-bit lattice codebook; needs an imatrix", .engines = "llama.cpp"},
    {"iq2_xxs", GG, QT_TYPE_IQ2_XXS, NULL, 2, true, "f16 + 4-bit sub-scales per 32", .use = "2-bit lattice codebook, smallest 2-bit; needs an imatrix", .engines = "llama.cpp"},
    {"iq1_m", GG, QT_TYPE_IQ1_M, NULL, 1, true, "3-bit sub-scales packing an f16 per 256", .use = "1.75-bit codebook; very large loss", .engines = "llama.cpp"},
    {"iq1_s", GG, QT_TYPE_IQ1_S, NULL, 1, true, "f16 + 3-bit sub-scales per 32", .use = "1.56-bit codebook; very large loss", .engines = "llama.cpp"},
    {"mxfp4", GG, QT_TYPE_MXFP4, NULL, 4, true, "e8m0", .use = "OCP MX FP4 (E2M1 + E8M0 per 32), gpt-oss style", .engines = "llama.cpp"},
    {"tq2_0", GG, QT_TYPE_TQ2_0, NULL, 2, true, "f16", .use = "ternary weights (BitNet b1.58 models only)", .engines = "llama.cpp"},
    {"tq1_0", GG, QT_TYPE_TQ1_0, NULL, 2, true, "f16", .use = "ternary weights, densest packing (BitNet only)", .engines = "llama.cpp"},
    {"q2_0", GG, QT_TYPE_Q2_0, NULL, 2, true, "f16", .use = "2-bit, one max-|x| scale per 64 (llama.cpp 2026)", .engines = "llama.cpp"},
    {"q1_0", GG, QT_TYPE_Q1_0, NULL, 1, true, "f16", .use = "signs only, one mean-|x| scale per 128 (llama.cpp 2026)", .engines = "llama.cpp"},
    {"w8a16-channel", CT, -1, "pack-quantized", 8, true, "bf16", 16, 0, false, 1, 0,
     "int8 weights, per-channel scales, 16-bit activations (pack-quantized)", "vLLM (Marlin/Machete)", INT_CODEC},
    {"w8a8-int8", CT, -1, "int-quantized", 8, true, "bf16", 16, 0, false, 1, 0,
     "int8 weights per channel + dynamic per-token int8 activations (SmoothQuant/GPTQ)", "vLLM (CUTLASS, sm75+)", INT_CODEC},
    {"w8a8-fp8", CT, -1, "float-quantized", 8, true, "bf16", 16, 0, false, 1, 0,
     "FP8 E4M3 weights per channel + dynamic FP8 activations (FP8_DYNAMIC)", "vLLM (sm89+: Ada, Hopper, Blackwell)", FP8_CODEC},
    {"fp8-e4m3-tensor", CT, -1, "float-quantized", 8, true, "bf16", 16, 0, false, 0, 0,
     "FP8 E4M3 weights, one scale per tensor (FP8 static)", "vLLM (sm89+; W8A16 Marlin on older)", FP8_CODEC},
    {"w8a16-g128", CT, -1, "pack-quantized", 8, true, "bf16", 16, 0, false, 128, 0,
     "int8 symmetric, group 128, 16-bit scales (GPTQ W8A16)", "vLLM (Marlin, sm80+)", INT_CODEC},
    {"w4a16-g128", CT, -1, "pack-quantized", 4, true, "bf16", 16, 0, false, 128, 0,
     "int4 symmetric, group 128, 16-bit scales (GPTQ/AWQ W4A16)", "vLLM (Marlin, sm80+)", INT_CODEC},
    {"w4a16-g128-asym", CT, -1, "pack-quantized", 4, false, "bf16", 16, 4, false, 128, 0,
     "int4 asymmetric, group 128, 16-bit scales + int4 zero points", "vLLM (Marlin, sm80+)", INT_CODEC},
    {"w4a16-g32", CT, -1, "pack-quantized", 4, true, "bf16", 16, 0, false, 32, 0,
     "int4 symmetric, group 32 (more accurate, larger)", "vLLM (Marlin, sm80+)", INT_CODEC},
    {"nvfp4", CT, -1, "nvfp4-pack-quantized", 4, true, "e4m3 + f32 tensor scale", 8, 0, false, 16, 0,
     "E2M1 + FP8 E4M3 scale per 16 + f32 tensor scale", "vLLM (Blackwell sm100+ native; Marlin W4A16 elsewhere)",
     .quantize = qt__ct_nvfp4_tensor_quantize, .dequantize = qt__ct_nvfp4_tensor_dequantize},
    {"mxfp4-ct", CT, -1, "mxfp4-pack-quantized", 4, true, "e8m0", 8, 0, false, 32, 0,
     "OCP MX FP4: E2M1 + E8M0 scale per 32 (mxfp4-pack-quantized)", "vLLM (Blackwell)",
     .quantize = qt__ct_mxfp4_tensor_quantize, .dequantize = qt__ct_mxfp4_tensor_dequantize},
    {"awq-g128", QT_FAMILY_AWQ, -1, NULL, 4, false, "f16", 16, 4, false, 128, 0,
     "AutoAWQ GEMM: int4 asymmetric, group 128, f16 scales, packed int4 zero points", "vLLM (AWQ GEMM sm75+, Marlin sm80+)", .quantize = NULL},
    {"gptq-g128", QT_FAMILY_GPTQ, -1, NULL, 4, true, "f16", 16, 4, true, 128, 0,
     "AutoGPTQ: int4, group 128, f16 scales, zero points stored, act-order g_idx", "vLLM (exllama sm60+, Marlin sm80+)", .quantize = NULL},
    {"nf4", QT_FAMILY_BITSANDBYTES, -1, NULL, 4, true, "f32 absmax", 32, 0, false, 64, 0,
     "QLoRA NormalFloat4, f32 absmax per 64 (no double quant)", "transformers/bitsandbytes, vLLM (slow path)", .quantize = NULL},
};
#define N_FORMATS ((int)(sizeof formats / sizeof formats[0]))

static const qt_gguf_ftype_info ftypes[] = {
    /* name, id, base type, _M mix, labels a file of mostly `base`, per-tensor rules in recipe.c */
    {"F32", 0, QT_TYPE_F32, false, true, true},
    {"F16", 1, QT_TYPE_F16, false, true, true},
    {"Q4_0", 2, QT_TYPE_Q4_0, false, true, true},
    {"Q4_1", 3, QT_TYPE_Q4_1, false, true, true},
    {"Q8_0", 7, QT_TYPE_Q8_0, false, true, true},
    {"Q5_0", 8, QT_TYPE_Q5_0, false, true, true},
    {"Q5_1", 9, QT_TYPE_Q5_1, false, true, true},
    {"Q2_K", 10, QT_TYPE_Q2_K, false, true, true},
    {"Q3_K_S", 11, QT_TYPE_Q3_K, false, false, true},
    {"Q3_K_M", 12, QT_TYPE_Q3_K, true, true, true},
    {"Q3_K_L", 13, QT_TYPE_Q3_K, false, false, true},
    {"Q4_K_S", 14, QT_TYPE_Q4_K, false, false, true},
    {"Q4_K_M", 15, QT_TYPE_Q4_K, true, true, true},
    {"Q5_K_S", 16, QT_TYPE_Q5_K, false, false, true},
    {"Q5_K_M", 17, QT_TYPE_Q5_K, true, true, true},
    {"Q6_K", 18, QT_TYPE_Q6_K, false, true, true},
    {"IQ2_XXS", 19, QT_TYPE_IQ2_XXS, false, true, true},
    {"IQ2_XS", 20, QT_TYPE_IQ2_XS, false, true, true},
    {"Q2_K_S", 21, QT_TYPE_Q2_K, false, false, true},
    {"IQ3_XS", 22, QT_TYPE_IQ3_S, false, false, true},
    {"IQ3_XXS", 23, QT_TYPE_IQ3_XXS, false, true, true},
    {"IQ1_S", 24, QT_TYPE_IQ1_S, false, true, true},
    {"IQ4_NL", 25, QT_TYPE_IQ4_NL, false, true, true},
    {"IQ3_S", 26, QT_TYPE_IQ3_S, false, true, true},
    {"IQ3_M", 27, QT_TYPE_IQ3_S, true, false, true},
    {"IQ2_S", 28, QT_TYPE_IQ2_XS, false, false, true}, /* sic: llama_ftype_get_default_type gives IQ2_S files IQ2_XS */
    {"IQ2_M", 29, QT_TYPE_IQ2_S, true, false, true},
    {"IQ4_XS", 30, QT_TYPE_IQ4_XS, false, true, true},
    {"IQ1_M", 31, QT_TYPE_IQ1_M, false, true, true},
    {"BF16", 32, QT_TYPE_BF16, false, true, true},
    {"TQ1_0", 36, QT_TYPE_TQ1_0, false, true, true},
    {"TQ2_0", 37, QT_TYPE_TQ2_0, false, true, true},
    {"MXFP4_MOE", 38, QT_TYPE_MXFP4, false, true, true},
    {"Q1_0", 40, QT_TYPE_Q1_0, false, true, true},
    {"Q2_0", 41, QT_TYPE_Q2_0, false, true, true},
};
#define N_FTYPES ((int)(sizeof ftypes / sizeof ftypes[0]))

/* Scheme rows. The support matrix follows vLLM's quantization hardware table
 * (lib/plan/support.c has the citations); docs/formats.md sections as cited. */
static const qt_scheme_info schemes[] = {
    /* 16-bit. */
    {.key = "bf16", .aliases = "bfloat16", .title = "BF16 (unquantized)", .kind = QT_SCHEME_FLOAT16,
     .runtime = QT_RUNTIME_VLLM, .support_row = "bf16", .format = "bf16", .simple_bytes = 2, .act_bits = 16,
     .quality = 0, .method = "none"},
    {.key = "fp16", .aliases = "float16,half", .title = "FP16 (unquantized)", .kind = QT_SCHEME_FLOAT16,
     .runtime = QT_RUNTIME_VLLM, .support_row = "fp16", .format = "f16", .simple_bytes = 2, .act_bits = 16,
     .quality = 0, .method = "none",
     .note = "a bf16-trained model can overflow in fp16 (activations beyond 65504); most run fine"},
    /* 8-bit. compressed-tensors FP8_DYNAMIC / INT8_W8A8 presets (docs/formats.md §4.1): one scale per
     * output channel (held as f32 by vLLM), activations quantized per token at run time. */
    {.key = "fp8", .aliases = "fp8-w8a8,w8a8-fp8,fp8-dynamic", .title = "FP8 W8A8 (per-channel weights, dynamic per-token activations)",
     .kind = QT_SCHEME_CHANNEL8, .runtime = QT_RUNTIME_VLLM, .support_row = "fp8-w8a8", .format = "w8a8-fp8",
     .simple_bytes = 1, .scale_bytes = 4, .act_bits = 8, .act_float = true, .quality = 1, .method = "rtn"},
    {.key = "int8", .aliases = "int8-w8a8,w8a8,w8a8-int8", .title = "INT8 W8A8 (SmoothQuant + GPTQ, per-channel weights, per-token activations)",
     .kind = QT_SCHEME_CHANNEL8, .runtime = QT_RUNTIME_VLLM, .support_row = "int8-w8a8", .format = "w8a8-int8",
     .simple_bytes = 1, .scale_bytes = 4, .act_bits = 8, .quality = 2, .method = "smoothquant+gptq"},
    {.key = "w8a16", .aliases = "int8-weight-only", .title = "INT8 W8A16 weight-only, group 128 (Marlin)",
     .kind = QT_SCHEME_GROUP_INT, .runtime = QT_RUNTIME_VLLM, .support_row = "marlin", .format = "w8a16-g128",
     .simple_bytes = 1, .scale_bytes = 2, .act_bits = 16, .quality = 1, .method = "gptq"},
    /* 4-bit integer, group 128, 16-bit scales (docs/formats.md §4.3 pack-quantized). */
    {.key = "w4a16", .aliases = "int4,w4a16-sym", .title = "INT4 W4A16, group 128, symmetric (compressed-tensors, Marlin)",
     .kind = QT_SCHEME_GROUP_INT, .runtime = QT_RUNTIME_VLLM, .support_row = "marlin", .format = "w4a16-g128",
     .simple_bytes = 0.5, .scale_bytes = 2, .act_bits = 16, .quality = 4, .method = "gptq"},
    {.key = "w4a16-asym", .aliases = "int4-asym", .title = "INT4 W4A16, group 128, asymmetric: + 4-bit zero points (Marlin)",
     .kind = QT_SCHEME_GROUP_INT, .runtime = QT_RUNTIME_VLLM, .support_row = "marlin", .format = "w4a16-g128-asym",
     .simple_bytes = 0.5, .scale_bytes = 2, .act_bits = 16, .quality = 4, .method = "gptq"},
    /* AutoAWQ GEMM layout: qweight, qzeros (4-bit, packed), fp16 scales per group of 128. */
    {.key = "awq", .aliases = "awq-int4", .title = "AWQ int4, group 128, zero points (AutoAWQ format)",
     .kind = QT_SCHEME_GROUP_INT, .runtime = QT_RUNTIME_VLLM, .support_row = "awq", .format = "awq-g128",
     .simple_bytes = 0.5, .scale_bytes = 2, .act_bits = 16, .quality = 4, .method = "awq"},
    /* GPTQ layout: qweight, qzeros (stored even when symmetric), scales, g_idx (int32 per input). */
    {.key = "gptq", .aliases = "gptq-int4", .title = "GPTQ int4, group 128 (GPTQ format: zero points and act-order index)",
     .kind = QT_SCHEME_GROUP_INT, .runtime = QT_RUNTIME_VLLM, .support_row = "gptq", .format = "gptq-g128",
     .simple_bytes = 0.5, .scale_bytes = 2, .act_bits = 16, .quality = 4, .method = "gptq"},
    /* Microscaling fp4 (docs/formats.md §4.7, §5.5, §5.6). */
    {.key = "nvfp4", .aliases = "nvfp4-w4a4", .title = "NVFP4 W4A4 (e2m1, blocks of 16 with an FP8 scale, f32 tensor scale)",
     .kind = QT_SCHEME_MICROFLOAT, .runtime = QT_RUNTIME_VLLM, .support_row = "nvfp4", .format = "nvfp4",
     .simple_bytes = 0.5, .scale_bytes = 1, .act_bits = 4, .act_float = true, .quality = 5, .method = "rtn+calibration"},
    {.key = "mxfp4", .aliases = "mxfp4-w4a16", .title = "MXFP4 (e2m1, blocks of 32 with an E8M0 scale)",
     .kind = QT_SCHEME_MICROFLOAT, .runtime = QT_RUNTIME_VLLM, .support_row = "mxfp4", .format = "mxfp4-ct",
     .simple_bytes = 0.5, .scale_bytes = 1, .act_bits = 16, .quality = 5, .method = "rtn"},
    /* bitsandbytes 4-bit: blocks of 64 with an f32 absmax (docs/formats.md §5.4); quantized at load. */
    {.key = "nf4", .aliases = "bnb-nf4,bitsandbytes,bnb", .title = "bitsandbytes NF4 (blocks of 64, f32 absmax, no double quantization)",
     .kind = QT_SCHEME_NF4, .runtime = QT_RUNTIME_BNB, .support_row = "bitsandbytes", .format = "nf4",
     .simple_bytes = 0.5, .scale_bytes = 4, .act_bits = 16, .quality = 5, .method = "rtn (at load)"},
    /* GGUF file types: llama.cpp's per-tensor choices (docs/formats.md §3.6) are lib/quant/recipe.c's. */
    {.key = "q8_0", .aliases = "gguf-q8_0", .title = "GGUF Q8_0 (llama.cpp)", .kind = QT_SCHEME_GGUF,
     .runtime = QT_RUNTIME_LLAMACPP, .support_row = "gguf", .format = "q8_0", .simple_bytes = 1, .act_bits = 16,
     .quality = 1, .gguf_ftype = "Q8_0", .method = "rtn"},
    {.key = "q6_k", .aliases = "gguf-q6_k", .title = "GGUF Q6_K (llama.cpp)", .kind = QT_SCHEME_GGUF,
     .runtime = QT_RUNTIME_LLAMACPP, .support_row = "gguf", .format = "q6_K", .simple_bytes = 0.75, .act_bits = 16,
     .quality = 2, .gguf_ftype = "Q6_K", .method = "imatrix"},
    {.key = "q5_k_m", .aliases = "gguf-q5_k_m", .title = "GGUF Q5_K_M (llama.cpp)", .kind = QT_SCHEME_GGUF,
     .runtime = QT_RUNTIME_LLAMACPP, .support_row = "gguf", .format = "q5_K", .simple_bytes = 0.625, .act_bits = 16,
     .quality = 3, .gguf_ftype = "Q5_K_M", .method = "imatrix"},
    {.key = "q4_k_m", .aliases = "gguf-q4_k_m", .title = "GGUF Q4_K_M (llama.cpp)", .kind = QT_SCHEME_GGUF,
     .runtime = QT_RUNTIME_LLAMACPP, .support_row = "gguf", .format = "q4_K", .simple_bytes = 0.5, .act_bits = 16,
     .quality = 4, .gguf_ftype = "Q4_K_M", .method = "imatrix"},
    {.key = "q4_0", .aliases = "gguf-q4_0", .title = "GGUF Q4_0 (llama.cpp)", .kind = QT_SCHEME_GGUF,
     .runtime = QT_RUNTIME_LLAMACPP, .support_row = "gguf", .format = "q4_0", .simple_bytes = 0.5, .act_bits = 16,
     .quality = 6, .gguf_ftype = "Q4_0", .method = "rtn"},
};
#define N_SCHEMES ((int)(sizeof schemes / sizeof schemes[0]))

/* ---- resolved views (built once) ------------------------------------------- */

static qt_format_info fmt[N_FORMATS];
static const qt_format_info *listed[N_FORMATS];
static int n_listed;
static qt_scheme_info sch[N_SCHEMES];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static double computed_bpw(const qt_format_info *f) {
    const double per = f->block_elems == 1 ? CH : (double)f->block_elems; /* values per scale */
    double bpw = f->bits;
    if (f->block_elems > 0) bpw += (double)(f->scale_bits + f->zero_bits) / per;
    if (f->g_idx) bpw += 32.0 / CH;
    return bpw;
}

static void build_formats(void) {
    n_listed = 0;
    for (int i = 0; i < N_FORMATS; i++) {
        qt_format_info *f = &fmt[i];
        *f = formats[i];
        if (f->ggml_type >= 0) {
            const qt_type_traits *tr = qt_type_get((qt_type)f->ggml_type);
            f->block_elems = tr ? tr->block_elems : 0;
            f->bits_per_weight = tr ? qt_type_bits_per_weight((qt_type)f->ggml_type) : 0;
            if (!tr || !tr->from_float) continue; /* a ggml type without a codec here yet: not listed */
        } else {
            f->bits_per_weight = computed_bpw(f);
        }
        listed[n_listed++] = f;
    }
}

static const qt_format_info *row_find(const char *name) {
    for (int i = 0; name && i < N_FORMATS; i++)
        if (!strcasecmp(fmt[i].name, name)) return &fmt[i];
    return NULL;
}

static void build_schemes(void) {
    for (int i = 0; i < N_SCHEMES; i++) {
        qt_scheme_info *s = &sch[i];
        *s = schemes[i];
        const qt_format_info *f = row_find(s->format); /* inside the once: no re-entry */
        if (f) {
            s->bits = f->bits;
            s->group = f->family != QT_FAMILY_GGUF && f->block_elems > 1 ? (int)f->block_elems : 0;
            s->zero_bits = f->zero_bits;
            s->g_idx = f->g_idx;
        }
        s->gguf = s->gguf_ftype ? qt_gguf_ftype_find(s->gguf_ftype) : NULL;
    }
}

static void build(void) {
    build_formats();
    build_schemes();
}

const qt_format_info *qt__format_row_find(const char *name) {
    pthread_once(&once, build);
    return row_find(name);
}

int qt_format_count(void) {
    pthread_once(&once, build);
    return n_listed;
}

const qt_format_info *qt_format_at(int i) {
    pthread_once(&once, build);
    return i >= 0 && i < n_listed ? listed[i] : NULL;
}

const qt_format_info *qt_format_find(const char *name) {
    pthread_once(&once, build);
    for (int i = 0; name && i < n_listed; i++)
        if (!strcasecmp(listed[i]->name, name)) return listed[i];
    return NULL;
}

const char *qt_format_family_name(qt_format_family f) {
    switch (f) {
    case QT_FAMILY_DENSE: return "dense";
    case QT_FAMILY_GGUF: return "gguf";
    case QT_FAMILY_COMPRESSED_TENSORS: return "compressed-tensors";
    case QT_FAMILY_BITSANDBYTES: return "bitsandbytes";
    case QT_FAMILY_AWQ: return "awq";
    case QT_FAMILY_GPTQ: return "gptq";
    }
    return "?";
}

qt_status qt_format_tensor_sizes(const qt_format_info *f, int64_t rows, int64_t cols, qt_ct_tensor_sizes *out) {
    if (!f || !f->quantize)
        return qt_error(QT_ERR_UNSUPPORTED, "format '%s' has no tensor codec", f ? f->name : "(null)");
    return qt__ct_tensor_sizes(f, rows, cols, out);
}

const qt_gguf_ftype_info *qt_gguf_ftype_find(const char *name) {
    for (int i = 0; name && i < N_FTYPES; i++)
        if (!strcasecmp(ftypes[i].name, name)) return &ftypes[i];
    return NULL;
}

const qt_gguf_ftype_info *qt_gguf_ftype_by_id(int32_t id) {
    for (int i = 0; i < N_FTYPES; i++)
        if (ftypes[i].id == id) return &ftypes[i];
    return NULL;
}

int32_t qt_gguf_ftype_of_type(qt_type t) {
    for (int i = 0; i < N_FTYPES; i++)
        if (ftypes[i].labels_base && ftypes[i].base == t) return ftypes[i].id;
    return 1024; /* LLAMA_FTYPE_GUESSED */
}

int qt__scheme_row_count(void) { return N_SCHEMES; }

const qt_scheme_info *qt__scheme_row(int i) {
    pthread_once(&once, build);
    return i >= 0 && i < N_SCHEMES ? &sch[i] : NULL;
}
