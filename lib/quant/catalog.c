/* lib/quant/catalog.c — the format catalogue (quanta/formats.h).
 *
 * GGUF rows take block sizes and bits per weight from the traits table, so
 * the two can never disagree; only the prose (use, engines) lives here.
 * compressed-tensors rows follow formats.md §4.3: scales in bf16/f16 unless
 * noted, zero points packed at the weight's width. "4096-wide rows" is the
 * stated assumption for per-channel scale overhead (one 16-bit scale per row).
 */
#include <pthread.h>
#include <strings.h>

#include "quanta/formats.h"

#define CH 4096.0 /* row length assumed for per-channel scale overhead */

typedef struct {
    const char *name;
    qt_format_family family;
    int ggml_type;
    int64_t block;
    double bpw; /* only for non-GGUF rows; GGUF rows compute theirs */
    const char *use;
    const char *engines;
} row;

static const row rows[] = {
    {"f32", QT_FAMILY_DENSE, QT_TYPE_F32, 1, 0, "reference precision; norms and small tensors", "llama.cpp, vLLM, transformers"},
    {"f16", QT_FAMILY_DENSE, QT_TYPE_F16, 1, 0, "unquantized baseline on GPUs without bf16 (Turing)", "llama.cpp, vLLM, transformers"},
    {"bf16", QT_FAMILY_DENSE, QT_TYPE_BF16, 1, 0, "unquantized baseline (most checkpoints ship in it)", "llama.cpp, vLLM, transformers"},
    {"q8_0", QT_FAMILY_GGUF, QT_TYPE_Q8_0, 0, 0, "near-lossless 8-bit GGUF", "llama.cpp"},
    {"q6_K", QT_FAMILY_GGUF, QT_TYPE_Q6_K, 0, 0, "high-quality k-quant; output/attn_v in *_M presets", "llama.cpp"},
    {"q5_K", QT_FAMILY_GGUF, QT_TYPE_Q5_K, 0, 0, "Q5_K_M: quality/size sweet spot for laptops", "llama.cpp"},
    {"q5_1", QT_FAMILY_GGUF, QT_TYPE_Q5_1, 0, 0, "legacy 5-bit with min (fallback for rows not /256)", "llama.cpp"},
    {"q5_0", QT_FAMILY_GGUF, QT_TYPE_Q5_0, 0, 0, "legacy 5-bit (fallback for rows not /256)", "llama.cpp"},
    {"q4_K", QT_FAMILY_GGUF, QT_TYPE_Q4_K, 0, 0, "Q4_K_M: the default 4-bit GGUF", "llama.cpp"},
    {"q4_1", QT_FAMILY_GGUF, QT_TYPE_Q4_1, 0, 0, "legacy 4-bit with min", "llama.cpp"},
    {"q4_0", QT_FAMILY_GGUF, QT_TYPE_Q4_0, 0, 0, "legacy 4-bit; fast on ARM repacked paths", "llama.cpp"},
    {"iq4_nl", QT_FAMILY_GGUF, QT_TYPE_IQ4_NL, 0, 0, "non-linear 4-bit codebook, 32-blocks", "llama.cpp"},
    {"iq4_xs", QT_FAMILY_GGUF, QT_TYPE_IQ4_XS, 0, 0, "non-linear 4-bit codebook, 256-superblocks", "llama.cpp"},
    {"q3_K", QT_FAMILY_GGUF, QT_TYPE_Q3_K, 0, 0, "3-bit k-quant (Q3_K_M/S); noticeable loss", "llama.cpp"},
    {"q2_K", QT_FAMILY_GGUF, QT_TYPE_Q2_K, 0, 0, "2-bit k-quant; large loss, last resort for fit", "llama.cpp"},
    /* i-quants below 4 bits (lib/quant/q_iq.c): code books from ggml-common.h */
    {"iq3_s", QT_FAMILY_GGUF, QT_TYPE_IQ3_S, 0, 0, "3-bit lattice code book + signs; IQ3_S/IQ3_M presets", "llama.cpp"},
    {"iq3_xxs", QT_FAMILY_GGUF, QT_TYPE_IQ3_XXS, 0, 0, "3-bit lattice code book; llama-quantize wants an imatrix", "llama.cpp"},
    {"iq2_s", QT_FAMILY_GGUF, QT_TYPE_IQ2_S, 0, 0, "2-bit lattice code book (1024 points); IQ2_S/IQ2_M presets", "llama.cpp"},
    {"iq2_xs", QT_FAMILY_GGUF, QT_TYPE_IQ2_XS, 0, 0, "2-bit lattice code book (512 points); needs an imatrix", "llama.cpp"},
    {"iq2_xxs", QT_FAMILY_GGUF, QT_TYPE_IQ2_XXS, 0, 0, "2-bit lattice code book (256 points); needs an imatrix", "llama.cpp"},
    {"iq1_m", QT_FAMILY_GGUF, QT_TYPE_IQ1_M, 0, 0, "ternary code book, scale per 16; heavy loss, wants an imatrix", "llama.cpp"},
    {"iq1_s", QT_FAMILY_GGUF, QT_TYPE_IQ1_S, 0, 0, "ternary code book, scale per 32; heavy loss, needs an imatrix", "llama.cpp"},
    {"mxfp4", QT_FAMILY_GGUF, QT_TYPE_MXFP4, 0, 0, "OCP MX FP4 (E2M1 + E8M0 per 32), gpt-oss style", "llama.cpp"},
    {"tq2_0", QT_FAMILY_GGUF, QT_TYPE_TQ2_0, 0, 0, "ternary weights (BitNet b1.58 models only)", "llama.cpp"},
    {"tq1_0", QT_FAMILY_GGUF, QT_TYPE_TQ1_0, 0, 0, "ternary weights, densest packing (BitNet only)", "llama.cpp"},
    {"w8a16-channel", QT_FAMILY_COMPRESSED_TENSORS, -1, 1, 8 + 16 / CH,
     "int8 weights, per-channel scales, 16-bit activations (pack-quantized)", "vLLM (Marlin/Machete)"},
    {"w8a8-int8", QT_FAMILY_COMPRESSED_TENSORS, -1, 1, 8 + 16 / CH,
     "int8 weights per channel + dynamic per-token int8 activations (SmoothQuant/GPTQ)", "vLLM (CUTLASS, sm75+)"},
    {"w8a8-fp8", QT_FAMILY_COMPRESSED_TENSORS, -1, 1, 8 + 16 / CH,
     "FP8 E4M3 weights per channel + dynamic FP8 activations (FP8_DYNAMIC)", "vLLM (sm89+: Ada, Hopper, Blackwell)"},
    {"fp8-e4m3-tensor", QT_FAMILY_COMPRESSED_TENSORS, -1, 0, 8,
     "FP8 E4M3 weights, one scale per tensor (FP8 static)", "vLLM (sm89+; W8A16 Marlin on older)"},
    {"w4a16-g128", QT_FAMILY_COMPRESSED_TENSORS, -1, 128, 4 + 16 / 128.0,
     "int4 symmetric, group 128, 16-bit scales (GPTQ/AWQ W4A16)", "vLLM (Marlin, sm80+)"},
    {"w4a16-g128-asym", QT_FAMILY_COMPRESSED_TENSORS, -1, 128, 4 + 16 / 128.0 + 4 / 128.0,
     "int4 asymmetric, group 128, 16-bit scales + int4 zero points", "vLLM (Marlin, sm80+)"},
    {"w4a16-g32", QT_FAMILY_COMPRESSED_TENSORS, -1, 32, 4 + 16 / 32.0,
     "int4 symmetric, group 32 (more accurate, larger)", "vLLM (Marlin, sm80+)"},
    {"nvfp4", QT_FAMILY_COMPRESSED_TENSORS, -1, 16, 4 + 8 / 16.0,
     "E2M1 + FP8 E4M3 scale per 16 + f32 tensor scale", "vLLM (Blackwell sm100+ native; Marlin W4A16 elsewhere)"},
    {"mxfp4-ct", QT_FAMILY_COMPRESSED_TENSORS, -1, 32, 4 + 8 / 32.0,
     "OCP MX FP4: E2M1 + E8M0 scale per 32 (mxfp4-pack-quantized)", "vLLM (Blackwell)"},
    {"nf4", QT_FAMILY_BITSANDBYTES, -1, 64, 4 + 32 / 64.0,
     "QLoRA NormalFloat4, f32 absmax per 64 (no double quant)", "transformers/bitsandbytes, vLLM (slow path)"},
};
static const int n_rows = (int)(sizeof rows / sizeof rows[0]);

static qt_format_info infos[sizeof rows / sizeof rows[0]];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void build(void) {
    for (int i = 0; i < n_rows; i++) {
        const row *r = &rows[i];
        qt_format_info *f = &infos[i];
        f->name = r->name;
        f->family = r->family;
        f->ggml_type = r->ggml_type;
        f->use = r->use;
        f->engines = r->engines;
        const qt_type_traits *tr = r->ggml_type >= 0 ? qt_type_get((qt_type)r->ggml_type) : NULL;
        f->block_elems = tr ? tr->block_elems : r->block;
        f->bits_per_weight = tr ? qt_type_bits_per_weight((qt_type)r->ggml_type) : r->bpw;
    }
}

int qt_format_count(void) { return n_rows; }

const qt_format_info *qt_format_at(int i) {
    if (i < 0 || i >= n_rows) return NULL;
    pthread_once(&once, build);
    return &infos[i];
}

const qt_format_info *qt_format_find(const char *name) {
    for (int i = 0; i < n_rows; i++)
        if (name && !strcasecmp(rows[i].name, name)) return qt_format_at(i);
    return NULL;
}

const char *qt_format_family_name(qt_format_family f) {
    switch (f) {
    case QT_FAMILY_DENSE: return "dense";
    case QT_FAMILY_GGUF: return "gguf";
    case QT_FAMILY_COMPRESSED_TENSORS: return "compressed-tensors";
    case QT_FAMILY_BITSANDBYTES: return "bitsandbytes";
    }
    return "?";
}
