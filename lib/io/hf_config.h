/* lib/io/hf_config.h — THE config.json reader (lib/io/hf_config.c).
 *
 * One parse serves every consumer: io (qt_hf_read_config -> qt_hparams, for
 * the architectures the engine runs, with transformers' class defaults) and
 * plan (lib/plan/spec.c -> qt_model_spec, for any family it can size). The
 * reader type- and range-checks every field it knows and records which are
 * present; what a consumer does with an absent field (a class default, or an
 * error) is the consumer's, through qt__hf_config_dims and
 * qt__hf_config_missing so the messages stay one set: "FILE: field 'KEY':
 * PROBLEM". JSON null counts as absent (sliding_window: null means 0).
 */
#ifndef QT_IO_HF_CONFIG_H
#define QT_IO_HF_CONFIG_H

#include "model/arch.h"
#include "quanta/model.h"
#include "ct_read.h"

/* One field as read; set is false when absent or null. */
typedef struct qt_hf_int { int32_t v; bool set; } qt_hf_int;       /* an integer in [lo, INT32_MAX] */
typedef struct qt_hf_float { float v; bool set; } qt_hf_float;     /* positive and finite as a float32 */
typedef struct qt_hf_bool { bool v, set; } qt_hf_bool;

typedef struct qt_hf_config {
    const char *path;             /* the file, for messages (borrowed from the caller) */
    const char *prefix;           /* "" or "text_config." when a multimodal config nests the language model */
    /* Which architecture: the first "architectures" class the arch table knows, else by
     * model_type; NULL when neither names one the engine runs (plan still sizes it). */
    const qt_arch_info *arch;
    bool has_architectures;
    char first_class[64];         /* "architectures"[0], for messages */
    char model_type[32];          /* "" when absent */
    /* Shape (transformers' names). */
    qt_hf_int vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads;
    qt_hf_int num_key_value_heads, head_dim, max_position_embeddings;
    qt_hf_int sliding_window;     /* null: set, 0 (no window) */
    /* Mixture of experts: Mixtral num_local_experts, Qwen-MoE num_experts, DeepSeek n_routed_experts. */
    qt_hf_int num_local_experts, num_experts, n_routed_experts, num_experts_per_tok;
    qt_hf_int moe_intermediate_size, n_shared_experts, first_k_dense_replace;
    /* Multi-head latent attention (DeepSeek). */
    qt_hf_int q_lora_rank, kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim;
    qt_hf_float rms_norm_eps, partial_rotary_factor;
    qt_hf_bool tie_word_embeddings, attention_bias, mlp_bias, use_sliding_window;
    char hidden_act[32];          /* "" when absent */
    /* Rope: v5 "rope_parameters", or legacy "rope_theta" + "rope_scaling" (docs/formats.md §7.2, §7.3). */
    struct {
        qt_hf_float theta;
        const char *theta_key;    /* "rope_theta" or "rope_parameters.rope_theta", for messages */
        bool scaled;              /* a rope_scaling / rope_parameters object is present */
        const char *key;          /* "rope_scaling." or "rope_parameters.", the prefix in messages */
        const char *type_key;     /* "rope_type" or legacy "type" */
        char type[32];            /* "" when absent */
        qt_hf_float factor, low_freq_factor, high_freq_factor;
        qt_hf_int original_max_position_embeddings;
    } rope;
    /* quantization_config (root level): quantized checkpoints (docs/formats.md §4.1). */
    struct {
        bool present;
        char method[32];          /* quant_method, "" when absent */
        bool kv_only;             /* compressed-tensors quantizing only the KV cache: dense weights */
        qt__ct_layout ct;         /* compressed-tensors weights (ct.active): their QuantizationArgs */
    } quant;
} qt_hf_config;

/* Parse config.json text (len bytes, need not be NUL-terminated); `path`
 * names the file in messages and must outlive *out. */
qt_status qt__hf_config_read_text(const char *text, size_t len, const char *path, qt_hf_config *out);
qt_status qt__hf_config_read(const char *path, qt_hf_config *out);

/* HF-side facts per architecture that config.json needs beyond lib/model/arch.c:
 * the class defaults of transformers' configuration_*.py (docs/formats.md §7.1). */
typedef struct qt_hf_defaults {
    qt_arch arch;
    int32_t vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads;
    int32_t num_key_value_heads;     /* 0: = num_attention_heads */
    int32_t head_dim;                /* 0: hidden_size / num_attention_heads */
    int32_t max_position_embeddings;
    float rms_norm_eps;
    float rope_theta;
    bool has_attention_bias_field;   /* "attention_bias" biases q,k,v (and o) */
    bool has_sliding_window;         /* the class has a sliding_window field */
    int32_t sliding_window;          /* its default (0 = none) */
    bool sliding_window_gated;       /* only used when use_sliding_window is true (Qwen) */
} qt_hf_defaults;

const qt_hf_defaults *qt__hf_defaults(qt_arch arch);

/* The shape (n_vocab, n_embd, n_ff, n_layer, n_head, n_head_kv, head_dim,
 * n_ctx_train of *hp; nothing else is touched) with the checks every consumer
 * makes: heads divisible by kv heads, head_dim given or hidden / heads. Absent
 * fields take d's defaults; with d NULL they are missing, except
 * num_key_value_heads (= heads), head_dim and max_position_embeddings (0). */
qt_status qt__hf_config_dims(const qt_hf_config *c, const qt_hf_defaults *d, qt_hparams *hp);

/* "FILE: field 'PREFIXKEY': missing" (QT_ERR_FORMAT). */
qt_status qt__hf_config_missing(const qt_hf_config *c, const char *key);

static inline bool qt__hf_bool_or(qt_hf_bool b, bool dflt) { return b.set ? b.v : dflt; }
static inline int32_t qt__hf_int_or(qt_hf_int i, int32_t dflt) { return i.set ? i.v : dflt; }

#endif
