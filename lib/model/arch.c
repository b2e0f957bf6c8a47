/* lib/model/arch.c — the architecture table (docs/formats.md §2.6, §2.7, §7). */
#include <string.h>

#include "arch.h"

/* The llama layout's folding pairs, in the order they are applied
 * (llm-compressor's AWQ llama mapping: input_layernorm -> q/k/v, v -> o when
 * shapes match, post_attention_layernorm -> gate/up, up -> down; its
 * SmoothQuant mapping: the two norms). */
static const qt__smooth_pair llama_smooth[] = {
    {"attn_norm", {"attn_q", "attn_k", "attn_v"}, false, true},
    {"attn_v", {"attn_output", NULL, NULL}, true, false},
    {"ffn_norm", {"ffn_gate", "ffn_up", NULL}, false, true},
    {"ffn_up", {"ffn_down", NULL, NULL}, false, false},
    {NULL, {NULL, NULL, NULL}, false, false},
};

static const qt_arch_info arch_table[] = {
    /* arch             gguf       HF class              model_type  bias   qknorm neox   permute tie    smooth */
    {QT_ARCH_LLAMA,   "llama",   "LlamaForCausalLM",   "llama",    false, false, false, true,  false, llama_smooth},
    {QT_ARCH_QWEN2,   "qwen2",   "Qwen2ForCausalLM",   "qwen2",    true,  false, true,  false, false, llama_smooth},
    {QT_ARCH_QWEN3,   "qwen3",   "Qwen3ForCausalLM",   "qwen3",    false, true,  true,  false, false, llama_smooth},
    /* llama.cpp converts Mistral checkpoints to arch "llama" GGUFs (permuted, pairs rope). */
    {QT_ARCH_MISTRAL, "llama",   "MistralForCausalLM", "mistral",  false, false, false, true,  false, llama_smooth},
};
static const int n_arch = (int)(sizeof arch_table / sizeof arch_table[0]);

const qt_arch_info *qt__arch_info(qt_arch a) {
    for (int i = 0; i < n_arch; i++)
        if (arch_table[i].arch == a) return &arch_table[i];
    return NULL;
}

const qt_arch_info *qt__arch_by_gguf_name(const char *name) {
    for (int i = 0; i < n_arch; i++)
        if (!strcmp(arch_table[i].gguf_name, name)) return &arch_table[i]; /* first row wins: llama */
    return NULL;
}

const qt_arch_info *qt__arch_by_hf_class(const char *cls) {
    for (int i = 0; i < n_arch; i++)
        if (!strcmp(arch_table[i].hf_class, cls)) return &arch_table[i];
    return NULL;
}

const qt_arch_info *qt__arch_by_hf_model_type(const char *model_type) {
    for (int i = 0; i < n_arch; i++)
        if (!strcmp(arch_table[i].hf_model_type, model_type)) return &arch_table[i];
    return NULL;
}

/* transformers' configuration classes (docs/formats.md §7.1): first match wins. */
static const qt__hf_family families[] = {
    /* model_type     bias   qknorm norms tie    sliding window       score bias */
    {"gemma2",        false, false, 4,    true,  QT__SWA_ALTERNATE, false},
    {"gemma*",        false, false, 2,    true,  QT__SWA_NONE,      false},
    {"qwen2",         true,  false, 2,    false, QT__SWA_GATED,     false},
    {"qwen2_moe",     true,  false, 2,    false, QT__SWA_GATED,     false},
    {"qwen3",         false, true,  2,    false, QT__SWA_GATED,     false},
    {"qwen3_moe",     false, true,  2,    false, QT__SWA_GATED,     false},
    {"qwen*",         false, false, 2,    false, QT__SWA_GATED,     false},
    {"mistral",       false, false, 2,    false, QT__SWA_ALL,       false},
    {"mixtral",       false, false, 2,    false, QT__SWA_ALL,       false},
    {"deepseek_v3",   false, false, 2,    false, QT__SWA_NONE,      true},
};
static const qt__hf_family family_default = {"", false, false, 2, false, QT__SWA_NONE, false};

const qt__hf_family *qt__hf_family_find(const char *model_type) {
    for (size_t i = 0; model_type && i < sizeof families / sizeof families[0]; i++) {
        const char *k = families[i].model_type;
        const size_t n = strlen(k);
        if (k[n - 1] == '*' ? !strncmp(model_type, k, n - 1) : !strcmp(model_type, k)) return &families[i];
    }
    return &family_default;
}
