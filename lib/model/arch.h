/* lib/model/arch.h — per-architecture knowledge as data (lib/model/arch.c).
 * Adding an architecture is adding a row here plus a fixture, not an if-chain. */
#ifndef QT_MODEL_ARCH_H
#define QT_MODEL_ARCH_H

#include "quanta/model.h"

typedef struct qt_arch_info {
    qt_arch arch;
    const char *gguf_name;        /* general.architecture and the metadata key prefix */
    const char *hf_class;         /* config.json "architectures"[0] */
    const char *hf_model_type;    /* config.json "model_type" */
    bool qkv_bias;                /* attn_q/k/v carry biases (qwen2) */
    bool qk_norm;                 /* per-head RMSNorm on q and k (qwen3) */
    bool rope_neox;               /* rope convention of GGUF files of this arch (qwen: neox halves) */
    bool permute_qk_for_gguf;     /* llama.cpp's convert permutes Q/K rows (formats.md §2.10) */
    bool default_tie_embeddings;  /* config.json default of tie_word_embeddings */
} qt_arch_info;

const qt_arch_info *qt__arch_info(qt_arch a);
const qt_arch_info *qt__arch_by_gguf_name(const char *name);
const qt_arch_info *qt__arch_by_hf_class(const char *cls);
const qt_arch_info *qt__arch_by_hf_model_type(const char *model_type);

#endif
