/* quanta/model.h — THE in-memory model every reader produces and every
 * consumer (engine, quantizers, exporters, planner, inspect) uses, whatever
 * the source (GGUF, HF safetensors directory, llama2.c .bin).
 *
 * Tensor names are canonical GGUF names ("token_embd.weight",
 * "blk.0.attn_q.weight", ...; docs/formats.md §2.9) and shapes are ggml-ordered
 * (ne[0] = row length = in_features). Data is the source bytes, mmapped
 * read-only where the source allows; nothing is converted at load time.
 * Q/K weights read from HF layout are NOT permuted in memory: `rope_neox`
 * in the hparams tells the engine which rotary convention the stored rows use.
 */
#ifndef QUANTA_MODEL_H
#define QUANTA_MODEL_H

#include "core.h"
#include "quant.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QT_MAX_DIMS 4
#define QT_MAX_NAME 128

typedef enum qt_arch {
    QT_ARCH_UNKNOWN = 0,
    QT_ARCH_LLAMA,    /* Llama 2/3, TinyLlama, llama2.c */
    QT_ARCH_QWEN2,    /* Qwen2 / Qwen2.5: q/k/v bias */
    QT_ARCH_QWEN3,    /* Qwen3: q/k RMSNorm per head, no bias */
    QT_ARCH_MISTRAL,  /* Mistral: llama layout (sliding window ignored for contexts below it) */
    QT_ARCH_COUNT
} qt_arch;

typedef enum qt_rope_scaling {
    QT_ROPE_SCALING_NONE = 0,
    QT_ROPE_SCALING_LINEAR,
    QT_ROPE_SCALING_LLAMA3,
} qt_rope_scaling;

typedef struct qt_hparams {
    qt_arch arch;
    char arch_name[32];        /* "llama", "qwen2", "qwen3", "mistral" (GGUF general.architecture) */
    int32_t n_vocab;
    int32_t n_embd;            /* d_model */
    int32_t n_layer;
    int32_t n_head;
    int32_t n_head_kv;         /* GQA: n_head % n_head_kv == 0 */
    int32_t head_dim;          /* often n_embd / n_head, but Qwen3 sets it explicitly */
    int32_t n_ff;              /* SwiGLU hidden size */
    int32_t n_ctx_train;
    int32_t n_rot;             /* rotary dims (== head_dim for these families) */
    float rms_eps;
    float rope_theta;          /* rope frequency base; 10000 when absent */
    qt_rope_scaling rope_scaling;
    float rope_factor;         /* linear / llama3 factor */
    float rope_low_freq_factor, rope_high_freq_factor; /* llama3 */
    int32_t rope_orig_ctx;     /* llama3 original_max_position_embeddings */
    bool rope_neox;            /* true: rotate halves (HF layout, qwen); false: rotate pairs (GGUF llama after permutation) */
    bool tie_embeddings;       /* no separate output.weight: reuse token_embd */
    bool attn_qkv_bias;        /* qwen2 */
    bool attn_qk_norm;         /* qwen3 */
    int32_t sliding_window;    /* 0 = none */
} qt_hparams;

typedef struct qt_tensor {
    char name[QT_MAX_NAME];    /* canonical GGUF name */
    qt_type type;
    int32_t n_dims;
    int64_t ne[QT_MAX_DIMS];   /* ggml order: ne[0] is the row length; unused dims are 1 */
    size_t nbytes;
    const void *data;          /* into the mapped file or an owned buffer */
    int32_t source;            /* index of the file it came from (shards) */
    uint64_t offset;           /* byte offset of the data in that file */
} qt_tensor;

typedef enum qt_vocab_kind {
    QT_VOCAB_NONE = 0,
    QT_VOCAB_SPM,   /* tokenizer.ggml.model = "llama": SentencePiece-style, scores, byte fallback */
    QT_VOCAB_BPE,   /* tokenizer.ggml.model = "gpt2" / HF tokenizer.json byte-level BPE */
} qt_vocab_kind;

/* Token types as GGUF stores them (tokenizer.ggml.token_type). */
enum { QT_TOKEN_NORMAL = 1, QT_TOKEN_UNKNOWN = 2, QT_TOKEN_CONTROL = 3,
       QT_TOKEN_USER_DEFINED = 4, QT_TOKEN_UNUSED = 5, QT_TOKEN_BYTE = 6 };

typedef struct qt_vocab {
    qt_vocab_kind kind;
    char pre[32];              /* BPE pre-tokenizer: "llama-bpe", "qwen2", "default", ... (GGUF tokenizer.ggml.pre) */
    int32_t n_tokens;
    char **tokens;             /* (n_tokens) UTF-8 token text, as stored in GGUF */
    float *scores;             /* (n_tokens) or NULL */
    int32_t *token_types;      /* (n_tokens) or NULL */
    int32_t n_merges;
    char **merges;             /* (n_merges) "a b", BPE only */
    int32_t bos_id, eos_id, unk_id, pad_id;  /* -1 when absent */
    bool add_bos, add_eos;
    bool add_space_prefix;     /* SPM: prepend U+2581 (tokenizer.ggml.add_space_prefix, default true) */
    char *chat_template;       /* or NULL */
} qt_vocab;

typedef struct qt_model qt_model;

/* Open any supported checkpoint: a .gguf file, a llama2.c .bin (with its
 * tokenizer.bin beside it or given in opts), or a Hugging Face directory
 * (config.json + model.safetensors or an index + shards + tokenizer.json). */
QT_API qt_status qt_model_open(const char *path, qt_model **out);
QT_API void qt_model_free(qt_model *m);

QT_API const char *qt_model_path(const qt_model *m);
QT_API const char *qt_model_source_format(const qt_model *m); /* "gguf", "safetensors", "llama2c" */
QT_API const qt_hparams *qt_model_hparams(const qt_model *m);
QT_API const qt_vocab *qt_model_vocab(const qt_model *m);
QT_API int32_t qt_model_n_tensors(const qt_model *m);
QT_API const qt_tensor *qt_model_tensor(const qt_model *m, int32_t i);
QT_API const qt_tensor *qt_model_find_tensor(const qt_model *m, const char *name); /* NULL if absent */
QT_API uint64_t qt_model_n_params(const qt_model *m); /* sum of tensor elements */

#ifdef __cplusplus
}
#endif
#endif
