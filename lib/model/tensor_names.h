/* lib/model/tensor_names.h — canonical (GGUF) <-> Hugging Face tensor names,
 * expected shapes and Q/K row-permutation roles, as one data table
 * (lib/model/tensor_names.c; docs/formats.md §2.9, §7.4).
 *
 * Per-layer rows store only the suffix: GGUF "blk.N.<gguf>", HF
 * "model.layers.N.<hf>". Shapes are ggml-ordered (ne[0] = row length) and
 * written in terms of the hyperparameters, so readers can check every tensor.
 */
#ifndef QT_MODEL_TENSOR_NAMES_H
#define QT_MODEL_TENSOR_NAMES_H

#include "quanta/model.h"

/* A dimension in terms of the hyperparameters. */
typedef enum qt_tn_dim {
    QT_TN_DIM_NONE = 0,
    QT_TN_DIM_EMBD,      /* n_embd */
    QT_TN_DIM_VOCAB,     /* n_vocab */
    QT_TN_DIM_Q,         /* n_head * head_dim */
    QT_TN_DIM_KV,        /* n_head_kv * head_dim */
    QT_TN_DIM_FF,        /* n_ff */
    QT_TN_DIM_HEAD,      /* head_dim */
    QT_TN_DIM_ROT_HALF,  /* n_rot / 2 */
    QT_TN_DIM_KV_SCALE,  /* KV cache scale: 1 (per tensor) or n_head_kv (per head); HF also [] */
} qt_tn_dim;

/* When a tensor must be present. */
typedef enum qt_tn_need {
    QT_TN_ALWAYS = 0,
    QT_TN_IF_UNTIED,     /* output.weight: absent when embeddings are tied */
    QT_TN_IF_QKV_BIAS,   /* hp.attn_qkv_bias */
    QT_TN_IF_QK_NORM,    /* hp.attn_qk_norm */
    QT_TN_OPTIONAL,      /* o_proj / MLP biases, rope_freqs: allowed, never required */
} qt_tn_need;

/* Rows of Q/K (weight and bias) are head-blocked and change order between the
 * HF rotate-half layout and llama.cpp's adjacent-pairs layout (§2.10). */
typedef enum qt_tn_rope_rows {
    QT_TN_ROWS_PLAIN = 0,
    QT_TN_ROWS_Q,        /* heads = n_head */
    QT_TN_ROWS_K,        /* heads = n_head_kv */
} qt_tn_rope_rows;

typedef enum qt_tn_place {
    QT_TN_BEFORE_LAYERS = 0, /* global, listed before the blocks */
    QT_TN_PER_LAYER,
    QT_TN_AFTER_LAYERS,
} qt_tn_place;

/* Which row: the index of a row in the table (canonical order), for code that
 * binds rows to its own storage (lib/engine/weights.c) rather than by name. */
typedef enum qt_tn_id {
    QT_TN_TOKEN_EMBD,
    QT_TN_ROPE_FREQS,
    QT_TN_ATTN_NORM,
    QT_TN_ATTN_Q,
    QT_TN_ATTN_Q_BIAS,
    QT_TN_ATTN_K,
    QT_TN_ATTN_K_BIAS,
    QT_TN_ATTN_V,
    QT_TN_ATTN_V_BIAS,
    QT_TN_ATTN_Q_NORM,
    QT_TN_ATTN_K_NORM,
    QT_TN_ATTN_OUTPUT,
    QT_TN_ATTN_OUTPUT_BIAS,
    QT_TN_ROTARY_INV_FREQ,      /* HF-only, dropped */
    QT_TN_FFN_NORM,
    QT_TN_FFN_GATE,
    QT_TN_FFN_GATE_BIAS,
    QT_TN_FFN_UP,
    QT_TN_FFN_UP_BIAS,
    QT_TN_FFN_DOWN,
    QT_TN_FFN_DOWN_BIAS,
    QT_TN_ATTN_K_SCALE,
    QT_TN_ATTN_V_SCALE,
    QT_TN_OUTPUT_NORM,
    QT_TN_OUTPUT,
    QT_TN_COUNT
} qt_tn_id;

typedef struct qt_tn_info {
    qt_tn_place place;
    const char *gguf;          /* full name, or suffix after "blk.N."; NULL: HF-only tensor that is dropped */
    const char *hf;            /* full name, or suffix after "model.layers.N."; NULL: GGUF-only (generated) */
    int32_t n_dims;
    qt_tn_dim ne[2];           /* ggml order */
    qt_tn_need need;
    qt_tn_rope_rows rows;
    const char *const *hf_alias; /* NULL-terminated other HF suffixes read as this row (never written), or NULL */
} qt_tn_info;

#define QT_TN_GGUF_LAYER_PREFIX "blk."
#define QT_TN_HF_LAYER_PREFIX "model.layers."

/* The whole table, in canonical order (what a reader emits); row i has id i. */
const qt_tn_info *qt__tn_table(int32_t *n);
/* One row by id; NULL when id is out of range. */
const qt_tn_info *qt__tn_row(qt_tn_id id);
/* Look a full name up; *layer = block index for per-layer names, -1 otherwise.
 * NULL if the name is not in the table (or has a malformed layer number).
 * HF lookups also match hf_alias (the first row with that alias). */
const qt_tn_info *qt__tn_from_hf(const char *name, int32_t *layer);
const qt_tn_info *qt__tn_from_gguf(const char *name, int32_t *layer);
/* Full names; false if the row has no name on that side or it does not fit. */
bool qt__tn_gguf_name(const qt_tn_info *ti, int32_t layer, char *buf, size_t cap);
bool qt__tn_hf_name(const qt_tn_info *ti, int32_t layer, char *buf, size_t cap);
/* Size of a symbolic dimension for these hyperparameters (KV_SCALE: n_head_kv). */
int64_t qt__tn_dim(qt_tn_dim d, const qt_hparams *hp);
/* Is n an allowed size for d (KV_SCALE: 1 or n_head_kv)? */
bool qt__tn_dim_ok(qt_tn_dim d, const qt_hparams *hp, int64_t n);
/* Is the tensor required for these hyperparameters? */
bool qt__tn_required(const qt_tn_info *ti, const qt_hparams *hp);

/* Q/K row order between layouts (docs/formats.md §2.10), for `rows` rows of
 * `row_bytes` bytes grouped in heads of head_dim rows:
 *   to_pairs:  HF rotate-half order -> llama.cpp pairs order (the converter's permute)
 *   !to_pairs: pairs -> rotate-half (llama2.c's permute_reverse)
 * Returns the source row for destination row r. */
int64_t qt__tn_permuted_row(int64_t r, int64_t head_dim, bool to_pairs);

#endif
