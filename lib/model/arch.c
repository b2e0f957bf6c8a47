/* lib/model/arch.c — the architecture table (formats.md §2.6, §2.7, §7). */
#include <string.h>

#include "arch.h"

static const qt_arch_info arch_table[] = {
    /* arch             gguf       HF class              model_type  bias   qknorm neox   permute tie */
    {QT_ARCH_LLAMA,   "llama",   "LlamaForCausalLM",   "llama",    false, false, false, true,  false},
    {QT_ARCH_QWEN2,   "qwen2",   "Qwen2ForCausalLM",   "qwen2",    true,  false, true,  false, false},
    {QT_ARCH_QWEN3,   "qwen3",   "Qwen3ForCausalLM",   "qwen3",    false, true,  true,  false, false},
    /* llama.cpp converts Mistral checkpoints to arch "llama" GGUFs (permuted, pairs rope). */
    {QT_ARCH_MISTRAL, "llama",   "MistralForCausalLM", "mistral",  false, false, false, true,  false},
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
