/* lib/quant/recipe.h — llama-quantize's per-tensor type rules (internal).
 *
 * Below plan and quantize alike: the planner predicts a GGUF file's size with
 * these rules and `quanta quantize` makes the same choices (lib/quantize/), so
 * the two cannot drift apart. Tensors are named by their GGUF base name
 * without "blk.N." and ".weight" ("attn_v", "ffn_down_exps", "token_embd";
 * docs/formats.md §2.9).
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
    const char *arch;        /* "llama", "qwen2", "falcon" ... (llama.cpp's "70B" and Falcon rules look at it) */
    int64_t n_layer;
    int64_t n_expert;        /* 0 for dense models */
    bool tie_embeddings;     /* no output.weight: token_embd doubles as the output matrix */
    int64_t n_gqa;           /* n_head / n_head_kv (0: unknown, taken as 1) */
    bool has_imatrix;        /* some rules differ when importance weights are given */
} qt__recipe_model;

typedef struct qt__recipe_tensor {
    const char *name;        /* base name */
    int32_t layer;           /* block index, -1 outside blocks */
    qt__role role;
    int64_t row_len;         /* ne[0] */
    int64_t n_slices;        /* ne[2]: experts of a merged expert tensor (0 or 1: a matrix) */
} qt__recipe_tensor;

/* What the user asked for on top of the file type (llama-quantize's options). */
typedef struct qt__recipe_opts {
    qt_type manual;          /* a --tensor-type match for this tensor, QT_TYPE_COUNT: none */
    qt_type output_type;     /* --output-tensor-type, QT_TYPE_COUNT: none */
    qt_type embd_type;       /* --token-embedding-type, QT_TYPE_COUNT: none */
    bool pure;               /* --pure: the base type everywhere (then the row-length fallbacks) */
} qt__recipe_opts;

/* How the choice came about, for provenance and messages. */
typedef struct qt__recipe_note {
    qt_type wanted;          /* the rule's type before the row-length fallback */
    bool fell_back;          /* the row length did not divide wanted's block */
    bool quanta_fallback;    /* llama-quantize defines no fallback for `wanted` and throws
                                ("no tensor type fallback is defined"); quanta writes F16 */
} qt__recipe_note;

/* The type llama-quantize gives the tensor in a file of type ft
 * (llama-quant.cpp llama_tensor_get_type and tensor_type_fallback). Tensors
 * it does not quantize (norms, biases, routers, 1-D) get F32 here: the
 * caller keeps their stored type. opts and note may be NULL. */
qt_type qt__recipe_gguf_type_ex(const qt_gguf_ftype_info *ft, const qt__recipe_model *m, const qt__recipe_tensor *t,
                                const qt__recipe_opts *opts, qt__recipe_note *note);
qt_type qt__recipe_gguf_type(const qt_gguf_ftype_info *ft, const qt__recipe_model *m, const qt__recipe_tensor *t);

/* llama-quantize's per-tensor imatrix rule (tensor_requires_imatrix): the
 * i-quants below 4 bits need importance weights, and Q2_K in a Q2_K_S file;
 * token_embd and output never do. */
bool qt__recipe_requires_imatrix(const qt_gguf_ftype_info *ft, const qt__recipe_tensor *t, qt_type type);

#endif
