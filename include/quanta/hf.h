/* quanta/hf.h — Hugging Face checkpoint directories (config.json,
 * model.safetensors or an index with shards, tokenizer.json), docs/hf.md.
 *
 * Reading goes through qt_model_open (a directory path); these are the
 * HF-specific entry points: the config.json parser alone (for planning
 * without weights) and the directory writer.
 */
#ifndef QUANTA_HF_H
#define QUANTA_HF_H

#include "core.h"
#include "gguf.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* config.json -> hyperparameters (docs/formats.md §7): LlamaForCausalLM,
 * Qwen2ForCausalLM, Qwen3ForCausalLM, MistralForCausalLM, with each class's
 * defaults for absent fields. Unknown architectures, activations and rope
 * scaling types are QT_ERR_UNSUPPORTED naming the file, field and value. */
QT_API qt_status qt_hf_read_config(const char *path, qt_hparams *hp);

typedef struct qt_hf_write_opts {
    /* false: keep every tensor's type (it must be F32, F16, BF16 or an integer
     * type; block-quantized tensors are refused). true: write every tensor as
     * outtype (F32, F16 or BF16), dequantizing where needed. */
    bool convert_types;
    qt_type outtype;
    /* 0: one model.safetensors. Otherwise shards model-0000K-of-0000M.safetensors
     * of at most this many tensor bytes (a bigger tensor gets its own shard) and
     * model.safetensors.index.json, as transformers' save_pretrained does. */
    uint64_t max_shard_bytes;
    qt_progress progress;
    /* false: an existing non-empty dir is refused; true: written into. */
    bool force;
    /* Optional: produces each tensor's data in its output type, as the GGUF
     * writer's hook does (row permutation applied afterwards), so a model
     * whose tensors have no data (lib/synth/) is written one tensor at a time. */
    qt_gguf_tensor_data_fn tensor_data;
    void *user;
} qt_hf_write_opts;

/* Writes dir/config.json, dir/model.safetensors (or shards and an index) and,
 * when the model has a vocabulary, dir/tokenizer.json and
 * dir/tokenizer_config.json. The directory is created if missing (its
 * parent must exist); an existing one must be empty unless opts->force, and
 * it is never the input model's. Tensors get HF names and [out, in] shapes; Q/K rows
 * stored in llama.cpp's pairs order (hp.rope_neox == false) are put back in HF
 * rotate-half order (inverse of docs/formats.md §2.10). All files are written to
 * temporaries first and renamed only when every one is complete. opts may be NULL. */
QT_API qt_status qt_hf_write(const qt_model *m, const char *dir, const qt_hf_write_opts *opts);

#ifdef __cplusplus
}
#endif
#endif
