/* lib/quant/recipe.h — llama-quantize's per-tensor type rules (internal).
 *
 * Below plan and quantize alike: the planner predicts a GGUF file's size with
 * these rules and quantization makes the same choices, so the two cannot
 * drift apart. Tensors are named by their GGUF base name without "blk.N."
 * and ".weight" ("attn_v", "ffn_down_exps", "token_embd"; docs/formats.md §2.9).
 */
#ifndef QT_QUANT_RECIPE_H
#define QT_QUANT_RECIPE_H

#include "quanta/formats.h"

/* What a tensor is for, which decides whether a scheme quantizes it. */
typedef enum qt__role {
    QT__ROLE_EMBED = 0,   /* token embedding: a lookup table, kept 16-bit by vLLM/bnb */
    QT__ROLE_OUTPUT,      /* lm_head: ignored by llm-compressor recipes ("ignore": ["lm_head"]) */
    QT__ROLE_LINEAR,      /* quantizable matmul weight */
    QT__ROLE_ROUTER,      /* MoE gate: kept 16-bit (f32 in GGUF, docs/formats.md §3.6) */
    QT__ROLE_SMALL,       /* norms, biases, score-correction biases */
} qt__role;

/* The role of a tensor by its base name and number of dimensions. */
qt__role qt__recipe_role(const char *base_name, int n_dims);

/* The model facts the rules look at. */
typedef struct qt__recipe_model {
    const char *arch;        /* "llama", "qwen2", ... (llama.cpp's "70B" rule looks at it) */
    int64_t n_layer;
    int64_t n_expert;        /* 0 for dense models */
    bool tie_embeddings;     /* token_embd doubles as the output matrix */
} qt__recipe_model;

typedef struct qt__recipe_tensor {
    const char *name;        /* base name */
    int32_t layer;           /* block index, -1 outside blocks */
    qt__role role;
    int64_t row_len;         /* ne[0] */
} qt__recipe_tensor;

/* The type llama-quantize gives the tensor in a file of type ft (ft->has_rules;
 * other file types get their base type with the row-length fallbacks). */
qt_type qt__recipe_gguf_type(const qt_gguf_ftype_info *ft, const qt__recipe_model *m, const qt__recipe_tensor *t);

#endif
