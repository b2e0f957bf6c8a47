/* Model specs from config.json files, from an in-memory model, and from a
 * checkpoint on disk (once the readers provide qt_model_open). */
#include <stdio.h>
#include <sys/stat.h>

#include "model/model_internal.h"
#include "qtest.h"
#include "quanta.h"

static const char *write_tmp(const char *name, const char *text) {
    static char path[8][512];
    static int k;
    char *p = path[k++ & 7];
    snprintf(p, 512, "%s/%s", qt_test_tmpdir(), name);
    FILE *f = fopen(p, "w");
    if (!f) { QT_FAIL_AT("cannot write %s", p); return p; }
    fputs(text, f);
    fclose(f);
    return p;
}

static void test_config_qwen3_head_dim(void) {
    /* Qwen3-0.6B's config.json (huggingface.co/Qwen/Qwen3-0.6B): head_dim is its own field */
    const char *path = write_tmp("qwen3.json",
        "{\"architectures\": [\"Qwen3ForCausalLM\"], \"model_type\": \"qwen3\", \"vocab_size\": 151936,"
        " \"hidden_size\": 1024, \"intermediate_size\": 3072, \"num_hidden_layers\": 28,"
        " \"num_attention_heads\": 16, \"num_key_value_heads\": 8, \"head_dim\": 128,"
        " \"max_position_embeddings\": 40960, \"tie_word_embeddings\": true, \"sliding_window\": null,"
        " \"use_sliding_window\": false, \"rope_theta\": 1000000}");
    qt_model_spec m;
    CHECK_OK(qt_plan_spec_from_config(path, &m));
    CHECK_EQ_STR(m.arch, "qwen3");
    CHECK_EQ_INT(m.head_dim, 128);
    CHECK(m.qk_norm && m.tie_embeddings && !m.attn_bias);
    CHECK_EQ_INT((long long)qt_plan_kv_bytes_per_token(&m, 2.0, 1), 114688);
    /* the same numbers as the preset */
    qt_param_counts a, b;
    CHECK_OK(qt_plan_param_counts(&m, &a));
    CHECK_OK(qt_plan_param_counts(qt_plan_preset_find("qwen3-0.6b"), &b));
    CHECK_EQ_INT(a.total, b.total);
    /* a directory holding config.json works too */
    char dir[512];
    snprintf(dir, sizeof dir, "%s/Qwen3-0.6B", qt_test_tmpdir());
    CHECK(mkdir(dir, 0755) == 0);
    char cfg[600];
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    FILE *f = fopen(cfg, "w");
    FILE *g = fopen(path, "r");
    int c;
    while ((c = fgetc(g)) != EOF) fputc(c, f);
    fclose(g);
    fclose(f);
    CHECK_OK(qt_plan_spec_resolve(dir, &m));
    CHECK_EQ_STR(m.key, "Qwen3-0.6B");
    CHECK_EQ_INT(m.head_dim, 128);
}

static void test_config_defaults_and_families(void) {
    /* Qwen2: q/k/v biases always; head_dim = hidden / heads; sliding window off unless
     * use_sliding_window (docs/formats.md §7.1) */
    const char *q2 = write_tmp("q2.json",
        "{\"model_type\": \"qwen2\", \"vocab_size\": 152064, \"hidden_size\": 3584, \"intermediate_size\": 18944,"
        " \"num_hidden_layers\": 28, \"num_attention_heads\": 28, \"num_key_value_heads\": 4,"
        " \"sliding_window\": 131072, \"use_sliding_window\": false, \"tie_word_embeddings\": false}");
    qt_model_spec m;
    CHECK_OK(qt_plan_spec_from_config(q2, &m));
    CHECK(m.attn_bias);
    CHECK_EQ_INT(m.head_dim, 128);
    CHECK_EQ_INT(m.sliding_window, 0);
    qt_param_counts pc;
    CHECK_OK(qt_plan_param_counts(&m, &pc));
    CHECK_EQ_INT(pc.total, 7615616512LL);
    /* Gemma 2: explicit head_dim, tied by default, 4 norms, sliding window on even layers */
    const char *g2 = write_tmp("g2.json",
        "{\"model_type\": \"gemma2\", \"vocab_size\": 256000, \"hidden_size\": 3584, \"intermediate_size\": 14336,"
        " \"num_hidden_layers\": 42, \"num_attention_heads\": 16, \"num_key_value_heads\": 8, \"head_dim\": 256,"
        " \"sliding_window\": 4096}");
    CHECK_OK(qt_plan_spec_from_config(g2, &m));
    CHECK(m.tie_embeddings);
    CHECK_EQ_INT(m.swa_period, 2);
    CHECK_OK(qt_plan_param_counts(&m, &pc));
    CHECK_EQ_INT(pc.total, 9241705984LL);
    /* num_key_value_heads absent: multi-head attention */
    const char *mha = write_tmp("mha.json",
        "{\"model_type\": \"llama\", \"vocab_size\": 32000, \"hidden_size\": 4096, \"intermediate_size\": 11008,"
        " \"num_hidden_layers\": 32, \"num_attention_heads\": 32}");
    CHECK_OK(qt_plan_spec_from_config(mha, &m));
    CHECK_EQ_INT(m.n_head_kv, 32);
    CHECK_EQ_INT((long long)qt_plan_kv_bytes_per_token(&m, 2.0, 1), 2 * 32 * 32 * 128 * 2);
    /* DeepSeek-V3: experts and MLA */
    const char *ds = write_tmp("ds.json",
        "{\"model_type\": \"deepseek_v3\", \"vocab_size\": 129280, \"hidden_size\": 7168, \"intermediate_size\": 18432,"
        " \"num_hidden_layers\": 61, \"num_attention_heads\": 128, \"num_key_value_heads\": 128,"
        " \"n_routed_experts\": 256, \"num_experts_per_tok\": 8, \"moe_intermediate_size\": 2048,"
        " \"n_shared_experts\": 1, \"first_k_dense_replace\": 3, \"q_lora_rank\": 1536, \"kv_lora_rank\": 512,"
        " \"qk_rope_head_dim\": 64, \"qk_nope_head_dim\": 128, \"v_head_dim\": 128, \"tie_word_embeddings\": false}");
    CHECK_OK(qt_plan_spec_from_config(ds, &m));
    qt_param_counts preset;
    CHECK_OK(qt_plan_param_counts(&m, &pc));
    CHECK_OK(qt_plan_param_counts(qt_plan_preset_find("deepseek-v3"), &preset));
    CHECK_EQ_INT(pc.total, preset.total);
    CHECK_EQ_INT((long long)qt_plan_kv_bytes_per_token(&m, 2.0, 1), 61 * 576 * 2);
    /* multimodal: the language model under text_config */
    const char *mm = write_tmp("mm.json",
        "{\"model_type\": \"llava\", \"text_config\": {\"model_type\": \"llama\", \"vocab_size\": 32000,"
        " \"hidden_size\": 4096, \"intermediate_size\": 11008, \"num_hidden_layers\": 32,"
        " \"num_attention_heads\": 32}}");
    CHECK_OK(qt_plan_spec_from_config(mm, &m));
    CHECK_EQ_INT(m.n_layer, 32);
    /* what the engine refuses (gelu, yarn rope, partial rotary) the planner still sizes */
    const char *phi = write_tmp("phi.json",
        "{\"model_type\": \"phi\", \"vocab_size\": 51200, \"hidden_size\": 2560, \"intermediate_size\": 10240,"
        " \"num_hidden_layers\": 32, \"num_attention_heads\": 32, \"hidden_act\": \"gelu_new\","
        " \"partial_rotary_factor\": 0.4, \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 40}}");
    CHECK_OK(qt_plan_spec_from_config(phi, &m));
    CHECK_EQ_INT(m.head_dim, 80);
}

static void test_config_errors_name_the_field(void) {
    qt_model_spec m;
    const char *p = write_tmp("nohidden.json", "{\"model_type\": \"llama\", \"vocab_size\": 32000}");
    CHECK_STATUS(qt_plan_spec_from_config(p, &m), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "nohidden.json") && strstr(qt_last_error(), "'hidden_size'"));
    p = write_tmp("badjson.json", "{\"model_type\": ");
    CHECK_STATUS(qt_plan_spec_from_config(p, &m), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "badjson.json"));
    p = write_tmp("kv.json",
        "{\"model_type\": \"llama\", \"vocab_size\": 32000, \"hidden_size\": 4096, \"intermediate_size\": 11008,"
        " \"num_hidden_layers\": 32, \"num_attention_heads\": 32, \"num_key_value_heads\": 5}");
    CHECK_STATUS(qt_plan_spec_from_config(p, &m), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "'num_key_value_heads'"));
    p = write_tmp("neg.json",
        "{\"model_type\": \"llama\", \"vocab_size\": -1, \"hidden_size\": 4096, \"intermediate_size\": 11008,"
        " \"num_hidden_layers\": 32, \"num_attention_heads\": 32}");
    CHECK_STATUS(qt_plan_spec_from_config(p, &m), QT_ERR_FORMAT);
    p = write_tmp("str.json",
        "{\"model_type\": \"llama\", \"vocab_size\": \"32000\", \"hidden_size\": 4096, \"intermediate_size\": 11008,"
        " \"num_hidden_layers\": 32, \"num_attention_heads\": 32}");
    CHECK_STATUS(qt_plan_spec_from_config(p, &m), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "field 'vocab_size': must be an integer")); /* the one reader's wording */
    /* a nested language model's fields are named with their path */
    p = write_tmp("mmbad.json", "{\"model_type\": \"llava\", \"text_config\": {\"model_type\": \"llama\"}}");
    CHECK_STATUS(qt_plan_spec_from_config(p, &m), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "field 'text_config.vocab_size': missing"));
    CHECK_STATUS(qt_plan_spec_from_config("/nonexistent/config.json", &m), QT_ERR_IO);
    /* unknown names suggest the nearest preset */
    CHECK_STATUS(qt_plan_spec_resolve("qwen2.5-7", &m), QT_ERR_NOT_FOUND);
    CHECK(strstr(qt_last_error(), "did you mean qwen2.5-7b"));
}

/* A stories260K-shaped model (../shared/models/README.md: d_model 64, ff 172, 5 layers, 8 heads,
 * 4 KV heads, vocab 512, separate output tensor, all F32) built in memory. */
static qt_model *stories_shaped(void) {
    qt_model *m;
    if (qt__model_new("mem/stories260K", "gguf", &m)) return NULL;
    qt_hparams *hp = &m->hp;
    hp->arch = QT_ARCH_LLAMA;
    snprintf(hp->arch_name, sizeof hp->arch_name, "llama");
    hp->n_vocab = 512, hp->n_embd = 64, hp->n_layer = 5, hp->n_head = 8, hp->n_head_kv = 4, hp->head_dim = 8;
    hp->n_ff = 172, hp->n_ctx_train = 2048;
    struct { const char *name; int64_t ne0, ne1; } shapes[] = {
        {"attn_norm", 64, 1}, {"attn_q", 64, 64}, {"attn_k", 64, 32}, {"attn_v", 64, 32}, {"attn_output", 64, 64},
        {"ffn_norm", 64, 1},  {"ffn_gate", 64, 172}, {"ffn_up", 64, 172}, {"ffn_down", 172, 64},
    };
    qt_tensor t;
    memset(&t, 0, sizeof t);
    t.type = QT_TYPE_F32;
    t.n_dims = 2;
    t.ne[2] = t.ne[3] = 1;
    snprintf(t.name, sizeof t.name, "token_embd.weight");
    t.ne[0] = 64, t.ne[1] = 512, t.nbytes = 64 * 512 * 4;
    qt__model_add_tensor(m, &t);
    snprintf(t.name, sizeof t.name, "output.weight");
    qt__model_add_tensor(m, &t);
    t.ne[1] = 1, t.nbytes = 64 * 4;
    snprintf(t.name, sizeof t.name, "output_norm.weight");
    qt__model_add_tensor(m, &t);
    for (int l = 0; l < 5; l++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            snprintf(t.name, sizeof t.name, "blk.%d.%s.weight", l, shapes[i].name);
            t.ne[0] = shapes[i].ne0, t.ne[1] = shapes[i].ne1;
            t.nbytes = (size_t)(shapes[i].ne0 * shapes[i].ne1 * 4);
            qt__model_add_tensor(m, &t);
        }
    return m;
}

static void test_spec_from_model_is_exact(void) {
    qt_model *mdl = stories_shaped();
    CHECK(mdl != NULL);
    if (!mdl) return;
    qt_model_spec s;
    CHECK_OK(qt_plan_spec_from_model(mdl, &s));
    CHECK(s.measured);
    CHECK_EQ_INT(s.measured_params, 292800);      /* the README's stored count */
    CHECK_EQ_INT(s.measured_bytes, 292800 * 4);   /* all F32 */
    CHECK(strstr(s.measured_format, "f32") != NULL);
    qt_param_counts pc; /* the shape formula agrees with the tensors */
    CHECK_OK(qt_plan_param_counts(&s, &pc));
    CHECK_EQ_INT(pc.total, 292800);
    CHECK_EQ_INT((long long)qt_plan_kv_bytes_per_token(&s, 4.0, 1), 2 * 5 * 4 * 8 * 4);
    qt_model_free(mdl);
}

static void test_spec_from_checkpoint_on_disk(void) {
    qt_model_spec s;
    CHECK_OK(qt_plan_spec_resolve(qt_test_shared("models/stories260K.gguf"), &s));
    CHECK(s.measured);
    CHECK_EQ_INT(s.measured_params, 292800);
    CHECK_EQ_INT(s.measured_bytes, 1171200);
    qt_param_counts pc;
    CHECK_OK(qt_plan_param_counts(&s, &pc));
    CHECK_EQ_INT(pc.total, 292800);
}

int main(void) {
    QT_RUN(test_config_qwen3_head_dim);
    QT_RUN(test_config_defaults_and_families);
    QT_RUN(test_config_errors_name_the_field);
    QT_RUN(test_spec_from_model_is_exact);
    QT_RUN(test_spec_from_checkpoint_on_disk);
    return qt_test_finish("test_plan_spec");
}
