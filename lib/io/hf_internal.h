/* lib/io/hf_internal.h — helpers shared by the HF reader/writer and the fuzzers. */
#ifndef QT_IO_HF_INTERNAL_H
#define QT_IO_HF_INTERNAL_H

#include "quanta/hf.h"

/* Parse config.json text (len bytes, need not be NUL-terminated); `path`
 * names the file in messages. */
qt_status qt__hf_config_parse(const char *text, size_t len, const char *path, qt_hparams *hp);

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

/* Shortest decimal text that reads back as the same float32, spelled like
 * Python's repr of that decimal ("1e-05", "500000.0", "0.5"). */
void qt__hf_format_float(float v, char *buf, size_t cap);

/* Pieces of the HF directory writer (hf_write.c) that the compressed-tensors
 * exporter (ct_write.c) shares: config.json text for a model written in
 * `dtype`, tokenizer.json / tokenizer_config.json texts (NULL, NULL: no
 * vocabulary) and the output-directory rule. */
qt_status qt__hf_config_text(const qt_model *m, qt_type dtype, char **out);
qt_status qt__hf_tokenizer_texts(const qt_model *m, char **tok, char **cfg);
qt_status qt__hf_prepare_dir(const qt_model *m, const char *dir, bool force, bool *created);

#endif
