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
#include "quant/schemes.h"

/* ---- schemes ------------------------------------------------------------- */

/* The rows are lib/quant/schemes.c's (the one table of formats and schemes);
 * the planner looks them up by key or alias with its own name matching. */
int qt_scheme_count(void) { return qt__scheme_row_count(); }
const qt_scheme_info *qt_scheme_get(int i) { return qt__scheme_row(i); }

const qt_scheme_info *qt_scheme_find(const char *name) {
    for (int i = 0; i < qt__scheme_row_count(); i++) {
        const qt_scheme_info *s = qt__scheme_row(i);
        if (qt__name_in_list(name, s->key, s->aliases)) return s;
    }
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
