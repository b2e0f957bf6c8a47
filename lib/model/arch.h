/* lib/model/arch.h — per-architecture knowledge as data (lib/model/arch.c).
 * Adding an architecture is adding a row here plus a fixture, not an if-chain. */
#ifndef QT_MODEL_ARCH_H
#define QT_MODEL_ARCH_H

#include "quanta/model.h"

/* A scale-folding pair for AWQ / SmoothQuant: the `from` tensor (a norm's weight,
 * or a linear whose output feeds `to`) absorbs per-channel scales that divide
 * the inputs of every `to` linear. GGUF base names (docs/formats.md §2.9). */
typedef struct qt__smooth_pair {
    const char *from;
    const char *to[3];            /* NULL-terminated when shorter */
    bool needs_same_shape;        /* only when from's outputs are to's inputs one for one
                                     (v -> o: not under grouped-query attention) */
    bool smoothquant;             /* in SmoothQuant's mapping too (llm-compressor's llama mapping
                                     smooths the norms only); AWQ uses every pair */
} qt__smooth_pair;

typedef struct qt_arch_info {
    qt_arch arch;
    const char *gguf_name;        /* general.architecture and the metadata key prefix */
    const char *hf_class;         /* config.json "architectures"[0] */
    const char *hf_model_type;    /* config.json "model_type" */
    bool qkv_bias;                /* attn_q/k/v carry biases (qwen2) */
    bool qk_norm;                 /* per-head RMSNorm on q and k (qwen3) */
    bool rope_neox;               /* rope convention of GGUF files of this arch (qwen: neox halves) */
    bool permute_qk_for_gguf;     /* llama.cpp's convert permutes Q/K rows (docs/formats.md §2.10) */
    bool default_tie_embeddings;  /* config.json default of tie_word_embeddings */
    const qt__smooth_pair *smooth; /* AWQ/SmoothQuant folding pairs, ends with from == NULL */
} qt_arch_info;

const qt_arch_info *qt__arch_info(qt_arch a);
const qt_arch_info *qt__arch_by_gguf_name(const char *name);
const qt_arch_info *qt__arch_by_hf_class(const char *cls);
const qt_arch_info *qt__arch_by_hf_model_type(const char *model_type);

/* config.json families the planner sizes (a superset of the engine's
 * architectures above): what a model_type implies beyond the fields it has. */
typedef enum qt__swa_rule {
    QT__SWA_NONE = 0,     /* sliding_window ignored (Phi-3's 2047 is not honoured everywhere) */
    QT__SWA_ALL,          /* every layer (Mistral, Mixtral) */
    QT__SWA_GATED,        /* every layer when use_sliding_window is true (Qwen) */
    QT__SWA_ALTERNATE,    /* every second layer (Gemma 2) */
} qt__swa_rule;

typedef struct qt__hf_family {
    const char *model_type;       /* exact, or a prefix when it ends in '*' */
    bool attn_bias;               /* q/k/v biases whatever attention_bias says (Qwen2) */
    bool qk_norm;                 /* per-head q/k RMSNorm (Qwen3) */
    int norms_per_layer;          /* 2, or 4 with post-attention/post-ffw norms (Gemma 2) */
    bool tie_default;             /* tie_word_embeddings when absent (Gemma) */
    qt__swa_rule swa;
    bool score_bias;              /* e_score_correction_bias per MoE layer (DeepSeek-V3 noaux_tc) */
} qt__hf_family;

/* The first row matching model_type; a row of defaults when none does. */
const qt__hf_family *qt__hf_family_find(const char *model_type);

#endif
