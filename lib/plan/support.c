/* lib/plan/support.c — the schemes quanta plans for, and where each one runs.
 *
 * The support matrix follows vLLM's "Supported Hardware" table for
 * quantization kernels (docs.vllm.ai, features/quantization/supported_hardware,
 * v0.9-v0.15: Volta = SM 7.0, Turing = 7.5, Ampere = 8.0/8.6, Ada = 8.9,
 * Hopper = 9.0) and its FP8 page ("FP8 computation is supported on NVIDIA GPUs
 * with compute capability >= 8.9 ... FP8 models will run on compute capability
 * >= 7.5 as weight-only W8A16, utilizing FP8 Marlin"; older releases: >= 8.0).
 * Blackwell is not a column there: it is listed where vLLM's FP8/NVFP4 pages
 * name it. llama.cpp (GGUF) runs on CUDA, ROCm/HIP, x86 CPUs and Metal.
 * The FP8 KV cache is a separate row keyed to the CUDA version, not to the
 * compute capability: vLLM's fp8 cache uses cuda_fp8.h conversions (CUDA
 * 11.8+), in software before Hopper (vLLM PR #2279, tested on Volta/Ampere).
 */
#include <string.h>

#include "plan_internal.h"

/* ---- schemes ------------------------------------------------------------- */

static const qt_scheme_info schemes[] = {
    /* 16-bit. */
    {.key = "bf16", .aliases = "bfloat16", .title = "BF16 (unquantized)", .kind = QT_SCHEME_FLOAT16,
     .engine = QT_ENGINE_VLLM, .support_row = "bf16", .simple_bytes = 2, .bits = 16, .act_bits = 16,
     .quality = 0, .method = "none"},
    {.key = "fp16", .aliases = "float16,half", .title = "FP16 (unquantized)", .kind = QT_SCHEME_FLOAT16,
     .engine = QT_ENGINE_VLLM, .support_row = "fp16", .simple_bytes = 2, .bits = 16, .act_bits = 16,
     .quality = 0, .method = "none",
     .note = "a bf16-trained model can overflow in fp16 (activations beyond 65504); most run fine"},
    /* 8-bit. compressed-tensors FP8_DYNAMIC / INT8_W8A8 presets (formats.md §4.1): one scale per
     * output channel (held as f32 by vLLM), activations quantized per token at run time. */
    {.key = "fp8", .aliases = "fp8-w8a8,w8a8-fp8,fp8-dynamic", .title = "FP8 W8A8 (per-channel weights, dynamic per-token activations)",
     .kind = QT_SCHEME_CHANNEL8, .engine = QT_ENGINE_VLLM, .support_row = "fp8-w8a8", .simple_bytes = 1,
     .bits = 8, .scale_bytes = 4, .act_bits = 8, .act_float = true, .quality = 1, .method = "rtn"},
    {.key = "int8", .aliases = "int8-w8a8,w8a8,w8a8-int8", .title = "INT8 W8A8 (SmoothQuant + GPTQ, per-channel weights, per-token activations)",
     .kind = QT_SCHEME_CHANNEL8, .engine = QT_ENGINE_VLLM, .support_row = "int8-w8a8", .simple_bytes = 1,
     .bits = 8, .scale_bytes = 4, .act_bits = 8, .quality = 2, .method = "smoothquant+gptq"},
    {.key = "w8a16", .aliases = "int8-weight-only", .title = "INT8 W8A16 weight-only, group 128 (Marlin)",
     .kind = QT_SCHEME_GROUP_INT, .engine = QT_ENGINE_VLLM, .support_row = "marlin", .simple_bytes = 1,
     .bits = 8, .group = 128, .scale_bytes = 2, .act_bits = 16, .quality = 1, .method = "gptq"},
    /* 4-bit integer, group 128, 16-bit scales (formats.md §4.3 pack-quantized). */
    {.key = "w4a16", .aliases = "int4,w4a16-sym", .title = "INT4 W4A16, group 128, symmetric (compressed-tensors, Marlin)",
     .kind = QT_SCHEME_GROUP_INT, .engine = QT_ENGINE_VLLM, .support_row = "marlin", .simple_bytes = 0.5,
     .bits = 4, .group = 128, .scale_bytes = 2, .act_bits = 16, .quality = 4, .method = "gptq"},
    {.key = "w4a16-asym", .aliases = "int4-asym", .title = "INT4 W4A16, group 128, asymmetric: + 4-bit zero points (Marlin)",
     .kind = QT_SCHEME_GROUP_INT, .engine = QT_ENGINE_VLLM, .support_row = "marlin", .simple_bytes = 0.5,
     .bits = 4, .group = 128, .scale_bytes = 2, .zero_bits = 4, .act_bits = 16, .quality = 4, .method = "gptq"},
    /* AutoAWQ GEMM layout: qweight, qzeros (4-bit, packed), fp16 scales per group of 128. */
    {.key = "awq", .aliases = "awq-int4", .title = "AWQ int4, group 128, zero points (AutoAWQ format)",
     .kind = QT_SCHEME_GROUP_INT, .engine = QT_ENGINE_VLLM, .support_row = "awq", .simple_bytes = 0.5,
     .bits = 4, .group = 128, .scale_bytes = 2, .zero_bits = 4, .act_bits = 16, .quality = 4, .method = "awq"},
    /* GPTQ layout: qweight, qzeros (stored even when symmetric), scales, g_idx (int32 per input). */
    {.key = "gptq", .aliases = "gptq-int4", .title = "GPTQ int4, group 128 (GPTQ format: zero points and act-order index)",
     .kind = QT_SCHEME_GROUP_INT, .engine = QT_ENGINE_VLLM, .support_row = "gptq", .simple_bytes = 0.5,
     .bits = 4, .group = 128, .scale_bytes = 2, .zero_bits = 4, .g_idx = true, .act_bits = 16, .quality = 4,
     .method = "gptq"},
    /* Microscaling fp4 (formats.md §4.7, §5.5, §5.6). */
    {.key = "nvfp4", .aliases = "nvfp4-w4a4", .title = "NVFP4 W4A4 (e2m1, blocks of 16 with an FP8 scale, f32 tensor scale)",
     .kind = QT_SCHEME_MICROFLOAT, .engine = QT_ENGINE_VLLM, .support_row = "nvfp4", .simple_bytes = 0.5,
     .bits = 4, .group = 16, .scale_bytes = 1, .act_bits = 4, .act_float = true, .quality = 5, .method = "rtn+calibration"},
    {.key = "mxfp4", .aliases = "mxfp4-w4a16", .title = "MXFP4 (e2m1, blocks of 32 with an E8M0 scale)",
     .kind = QT_SCHEME_MICROFLOAT, .engine = QT_ENGINE_VLLM, .support_row = "mxfp4", .simple_bytes = 0.5,
     .bits = 4, .group = 32, .scale_bytes = 1, .act_bits = 16, .quality = 5, .method = "rtn"},
    /* bitsandbytes 4-bit: blocks of 64 with an f32 absmax (formats.md §5.4); quantized at load. */
    {.key = "nf4", .aliases = "bnb-nf4,bitsandbytes,bnb", .title = "bitsandbytes NF4 (blocks of 64, f32 absmax, no double quantization)",
     .kind = QT_SCHEME_NF4, .engine = QT_ENGINE_BNB, .support_row = "bitsandbytes", .simple_bytes = 0.5,
     .bits = 4, .group = 64, .scale_bytes = 4, .act_bits = 16, .quality = 5, .method = "rtn (at load)"},
    /* GGUF file types: llama.cpp's per-tensor choices (formats.md §3.6) are applied in tensors.c. */
    {.key = "q8_0", .aliases = "gguf-q8_0", .title = "GGUF Q8_0 (llama.cpp)", .kind = QT_SCHEME_GGUF,
     .engine = QT_ENGINE_LLAMACPP, .support_row = "gguf", .simple_bytes = 1, .bits = 8, .act_bits = 16,
     .quality = 1, .gguf_ftype = "Q8_0", .method = "rtn"},
    {.key = "q6_k", .aliases = "gguf-q6_k", .title = "GGUF Q6_K (llama.cpp)", .kind = QT_SCHEME_GGUF,
     .engine = QT_ENGINE_LLAMACPP, .support_row = "gguf", .simple_bytes = 0.75, .bits = 6, .act_bits = 16,
     .quality = 2, .gguf_ftype = "Q6_K", .method = "imatrix"},
    {.key = "q5_k_m", .aliases = "gguf-q5_k_m", .title = "GGUF Q5_K_M (llama.cpp)", .kind = QT_SCHEME_GGUF,
     .engine = QT_ENGINE_LLAMACPP, .support_row = "gguf", .simple_bytes = 0.625, .bits = 5, .act_bits = 16,
     .quality = 3, .gguf_ftype = "Q5_K_M", .method = "imatrix"},
    {.key = "q4_k_m", .aliases = "gguf-q4_k_m", .title = "GGUF Q4_K_M (llama.cpp)", .kind = QT_SCHEME_GGUF,
     .engine = QT_ENGINE_LLAMACPP, .support_row = "gguf", .simple_bytes = 0.5, .bits = 4, .act_bits = 16,
     .quality = 4, .gguf_ftype = "Q4_K_M", .method = "imatrix"},
    {.key = "q4_0", .aliases = "gguf-q4_0", .title = "GGUF Q4_0 (llama.cpp)", .kind = QT_SCHEME_GGUF,
     .engine = QT_ENGINE_LLAMACPP, .support_row = "gguf", .simple_bytes = 0.5, .bits = 4, .act_bits = 16,
     .quality = 6, .gguf_ftype = "Q4_0", .method = "rtn"},
};
static const int n_schemes = (int)(sizeof schemes / sizeof schemes[0]);

int qt_scheme_count(void) { return n_schemes; }
const qt_scheme_info *qt_scheme_get(int i) { return (i >= 0 && i < n_schemes) ? &schemes[i] : NULL; }

const qt_scheme_info *qt_scheme_find(const char *name) {
    for (int i = 0; i < n_schemes; i++)
        if (qt__name_in_list(name, schemes[i].key, schemes[i].aliases)) return &schemes[i];
    return NULL;
}

/* ---- the support matrix ---------------------------------------------------- */

#define Y(note) {QT_SUPPORT_YES, note}
#define N(note) {QT_SUPPORT_NO, note}
#define P(note) {QT_SUPPORT_PARTIAL, note}

/* What a row needs, for messages ("FP8 W8A8 needs compute capability 8.9 ..."). */
typedef struct row_extra {
    const char *key;
    const char *needs;
} row_extra;

static const qt_support_row rows[] = {
    {"bf16", "BF16 (16-bit, bfloat16 activations)",
     /* Volta..Apple */
     {N("serve in fp16 instead (vllm --dtype half)"), N("serve in fp16 instead (vllm --dtype half)"),
      Y(NULL), Y(NULL), Y(NULL), Y(NULL), Y(NULL), Y(NULL),
      Y("vLLM CPU backend; fast with AVX-512 BF16 / AMX"), N("vLLM has no Metal backend: use a GGUF type (llama.cpp)")},
     "vLLM: bfloat16 needs compute capability 8.0"},
    {"fp16", "FP16 (16-bit, float16 activations)",
     {Y(NULL), Y(NULL), Y(NULL), Y(NULL), Y(NULL), Y(NULL), Y(NULL), Y(NULL),
      P("vLLM's CPU backend computes in bf16/f32; use bf16"), N("vLLM has no Metal backend: use a GGUF type (llama.cpp)")},
     "vLLM"},
    {"awq", "AWQ (int4 weight-only)",
     {N("use the gptq format (exllama kernels) or a GGUF type"), Y("AWQ GEMM kernels"), Y("Marlin kernels"),
      Y("Marlin kernels"), Y("Marlin kernels"), Y("Marlin kernels"), N("vLLM has no AWQ kernels for ROCm: use GGUF or FP8"),
      N("vLLM has no AWQ kernels for ROCm: use GGUF or FP8"), Y("vLLM CPU backend"), N("use a GGUF type (llama.cpp)")},
     "vLLM supported_hardware: AWQ"},
    {"gptq", "GPTQ (int4 weight-only, GPTQ format)",
     {Y("exllama kernels"), Y("exllama kernels"), Y("Marlin kernels"), Y("Marlin kernels"), Y("Marlin kernels"),
      Y("Marlin kernels"), N("vLLM has no GPTQ kernels for ROCm: use GGUF or FP8"),
      N("vLLM has no GPTQ kernels for ROCm: use GGUF or FP8"), Y("vLLM CPU backend"), N("use a GGUF type (llama.cpp)")},
     "vLLM supported_hardware: GPTQ"},
    {"marlin", "Marlin (compressed-tensors W4A16/W8A16)",
     {N("use the gptq format (exllama kernels) or a GGUF type"),
      N("use the gptq or awq format (recent vLLM adds limited Turing Marlin support)"), Y(NULL), Y(NULL),
      Y("Machete kernels on Hopper"), Y(NULL), N("use GGUF or FP8"), N("use GGUF or FP8"),
      N("use AWQ/GPTQ or a GGUF type"), N("use a GGUF type (llama.cpp)")},
     "vLLM supported_hardware: Marlin (GPTQ/AWQ/FP8)"},
    {"int8-w8a8", "INT8 W8A8",
     {N("use the gptq format or a GGUF type"), Y(NULL), Y(NULL), Y(NULL), Y(NULL), Y(NULL),
      N("use FP8 (MI300) or GGUF"), N("use FP8 W8A8"), Y("vLLM CPU backend (oneDNN)"), N("use a GGUF type (llama.cpp)")},
     "vLLM supported_hardware: INT8 (W8A8)"},
    {"fp8-w8a8", "FP8 W8A8",
     {N("use the gptq format or a GGUF type"),
      N("use INT8 W8A8 or W4A16 (recent vLLM loads FP8 checkpoints weight-only through FP8 Marlin: W8A16, no FP8 compute)"),
      N("use INT8 W8A8 or W4A16 (vLLM can still load FP8 checkpoints weight-only through FP8 Marlin: W8A16, no FP8 compute)"),
      Y(NULL), Y(NULL), Y(NULL), N("MI200 has no FP8 units: use GGUF"), Y("FP8 e4m3fnuz (vLLM converts)"),
      N("use INT8 W8A8 or a GGUF type"), N("use a GGUF type (llama.cpp)")},
     "vLLM supported_hardware: FP8 (W8A8); vLLM FP8 W8A8 page"},
    {"bitsandbytes", "bitsandbytes (NF4 / LLM.int8)",
     {Y(NULL), Y(NULL), Y(NULL), Y(NULL), Y(NULL), Y(NULL), N("use GGUF or FP8"), N("use GGUF or FP8"),
      N("use a GGUF type (llama.cpp)"), N("use a GGUF type (llama.cpp)")},
     "vLLM supported_hardware: bitsandbytes"},
    {"gguf", "GGUF (llama.cpp)",
     {Y("llama.cpp CUDA"), Y("llama.cpp CUDA"), Y("llama.cpp CUDA"), Y("llama.cpp CUDA"), Y("llama.cpp CUDA"),
      Y("llama.cpp CUDA"), Y("llama.cpp HIP"), Y("llama.cpp HIP"), Y("llama.cpp CPU"), Y("llama.cpp Metal")},
     "llama.cpp backends; vLLM supported_hardware: GGUF"},
    {"nvfp4", "NVFP4 W4A4",
     {N("use the gptq format or a GGUF type"), N("use INT8 W8A8, gptq/awq or a GGUF type"),
      P("no FP4 tensor cores: vLLM runs NVFP4 weight-only through Marlin (W4A16 speed)"),
      P("no FP4 tensor cores: vLLM runs NVFP4 weight-only through Marlin (W4A16 speed)"),
      P("no FP4 tensor cores: vLLM runs NVFP4 weight-only through Marlin (W4A16 speed)"), Y("FP4 tensor cores"),
      N("use GGUF"), N("use FP8 W8A8"), N("use a GGUF type (llama.cpp)"), N("use a GGUF type (llama.cpp)")},
     "vLLM NVFP4 (compressed-tensors W4A4 on SM 10.0+, W4A16 Marlin fallback)"},
    {"mxfp4", "MXFP4",
     {N("use the gptq format or a GGUF type"), N("use INT8 W8A8, gptq/awq or a GGUF type"),
      P("weight-only through Marlin / Triton kernels (no FP4 compute)"),
      P("weight-only through Marlin / Triton kernels (no FP4 compute)"),
      P("weight-only through Marlin / Triton kernels (no FP4 compute)"), Y("FP4 tensor cores"),
      N("use GGUF"), N("use FP8 W8A8"), N("use a GGUF type (llama.cpp)"), N("use a GGUF type (llama.cpp)")},
     "vLLM MXFP4 (native on Blackwell, weight-only before)"},
    {"fp8-kv", "FP8 KV cache (vLLM --kv-cache-dtype fp8)",
     {Y("CUDA >= 11.8; software fp8 conversion"), Y("CUDA >= 11.8; software fp8 conversion"),
      Y("CUDA >= 11.8; software fp8 conversion"), Y("CUDA >= 11.8; hardware fp8 conversion"),
      Y("CUDA >= 11.8; hardware fp8 conversion"), Y("CUDA >= 11.8; hardware fp8 conversion"),
      Y("ROCm"), Y("ROCm"), P("vLLM CPU backend: fp8_e5m2"), N("llama.cpp has no fp8 cache: use q8_0 cache types")},
     "vLLM quantized KV cache docs; vLLM PR #2279 (keyed to CUDA >= 11.8, not to compute capability)"},
    {"q8-kv", "q8_0 KV cache (llama.cpp --cache-type-k q8_0)",
     {Y("needs flash attention (-fa on)"), Y("needs flash attention (-fa on)"), Y("needs flash attention (-fa on)"),
      Y("needs flash attention (-fa on)"), Y("needs flash attention (-fa on)"), Y("needs flash attention (-fa on)"),
      Y("needs flash attention (-fa on)"), Y("needs flash attention (-fa on)"), Y("needs flash attention (-fa on)"),
      Y("needs flash attention (-fa on)")},
     "llama.cpp common arguments (--cache-type-k, --cache-type-v)"},
};
static const int n_rows = (int)(sizeof rows / sizeof rows[0]);

/* The requirement each row states when it refuses. */
static const row_extra needs[] = {
    {"bf16", "compute capability 8.0 (Ampere) for bfloat16"},
    {"fp16", "a CUDA or ROCm GPU (vLLM)"},
    {"awq", "compute capability 7.5 (Turing) on NVIDIA, or an x86 CPU"},
    {"gptq", "an NVIDIA GPU or an x86 CPU (vLLM)"},
    {"marlin", "compute capability 8.0 (Ampere) for Marlin"},
    {"int8-w8a8", "compute capability 7.5 (Turing) for INT8 tensor cores"},
    {"fp8-w8a8", "compute capability 8.9 (Ada, Hopper, Blackwell)"},
    {"bitsandbytes", "an NVIDIA GPU"},
    {"gguf", "nothing special"},
    {"nvfp4", "compute capability 10.0 (Blackwell) for FP4 tensor cores"},
    {"mxfp4", "compute capability 10.0 (Blackwell) for FP4 tensor cores"},
    {"fp8-kv", "CUDA >= 11.8 or ROCm (vLLM)"},
    {"q8-kv", "llama.cpp with flash attention"},
};

int qt_support_row_count(void) { return n_rows; }
const qt_support_row *qt_support_row_get(int i) { return (i >= 0 && i < n_rows) ? &rows[i] : NULL; }

const qt_support_row *qt_support_row_find(const char *key) {
    for (int i = 0; i < n_rows; i++)
        if (!strcmp(rows[i].key, key)) return &rows[i];
    return NULL;
}

static const char *needs_of(const char *key) {
    for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++)
        if (!strcmp(needs[i].key, key)) return needs[i].needs;
    return "a supported platform";
}

/* "is 8.0 (Ampere)" / "is CDNA2 (gfx90a)" / "is a CPU" */
static void describe_hw(const qt_hw_info *hw, char *buf, size_t n) {
    if (hw->cc) snprintf(buf, n, "is %d.%d (%s)", hw->cc / 10, hw->cc % 10, qt_hw_class_name(hw->cls));
    else if (hw->cls == QT_HW_CPU) snprintf(buf, n, "is a CPU");
    else if (hw->cls == QT_HW_APPLE) snprintf(buf, n, "is Apple Silicon (Metal)");
    else snprintf(buf, n, "is %s", hw->arch_name);
}

qt_support qt_support_check(const qt_scheme_info *scheme, const qt_hw_info *hw, char *reason, size_t n) {
    if (reason && n) reason[0] = 0;
    if (!scheme) return QT_SUPPORT_NO;
    const qt_support_row *row = qt_support_row_find(scheme->support_row);
    if (!hw || !row) {
        if (reason) snprintf(reason, n, "no hardware given: support not checked");
        return QT_SUPPORT_YES;
    }
    const qt_support_cell *c = &row->cell[hw->cls];
    char what[96];
    describe_hw(hw, what, sizeof what);
    if (!reason) return c->s;
    switch (c->s) {
    case QT_SUPPORT_NO:
        snprintf(reason, n, "%s needs %s; %s %s: %s", row->title, needs_of(row->key), hw->name, what,
                 c->note ? c->note : "not supported");
        break;
    case QT_SUPPORT_PARTIAL:
        snprintf(reason, n, "%s on %s: %s", row->title, hw->name, c->note);
        break;
    default:
        snprintf(reason, n, "%s runs on %s%s%s", row->title, hw->name, c->note ? ": " : "", c->note ? c->note : "");
        break;
    }
    return c->s;
}
