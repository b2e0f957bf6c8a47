/* HF directory -> GGUF for every fixture variant (tests/fixtures.h): the
 * hyperparameters survive, the keys have llama.cpp's types, Q/K rows (and
 * biases) of llama/mistral are permuted to pairs order (docs/formats.md §2.10)
 * while qwen2/qwen3 are copied, llama3 rope scaling becomes rope_freqs.weight,
 * real BPE vocabularies become tokenizer.ggml.* keys, F16/BF16 norms and
 * biases are widened to F32 exactly as llama.cpp's converter writes them
 * (docs/formats.md §2.9 "Rules") while matrices keep their type, and
 * HF -> GGUF -> HF gives back every HF tensor byte for byte (the HF writer
 * narrows the widened tensors back).
 * The real vocabularies come from npm: this test needs the npm_packages fixture. */
#include "fixtures.h"
#include "io/io_internal.h"
#include "qtest.h"
#include "quanta.h"

static bool is_qk(const char *name) {
    return strstr(name, ".attn_q.") != NULL || strstr(name, ".attn_k.") != NULL;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* llama.cpp's converter rule, stated here independently of the writer:
 * 1-D tensors, *_norm.weight and biases (names not ending in "weight") are F32. */
static bool converter_wants_f32(const qt_tensor *t) {
    return t->n_dims == 1 || ends_with(t->name, "_norm.weight") || !ends_with(t->name, "weight");
}

/* An F32 copy of an F16/BF16 tensor (the exact widening); free ->data. */
static qt_tensor widened(const qt_tensor *t) {
    qt_tensor w = *t;
    int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    float *f = malloc((size_t)n * sizeof *f);
    const uint16_t *h = t->data;
    for (int64_t i = 0; f && i < n; i++) f[i] = t->type == QT_TYPE_F16 ? qt_fp16_to_f32(h[i]) : qt_bf16_to_f32(h[i]);
    w.type = QT_TYPE_F32;
    w.data = f;
    w.nbytes = (size_t)n * sizeof *f;
    return w;
}

static void check_permuted(const qt_tensor *hf, const qt_tensor *gg, int64_t heads) {
    /* Units: rows of a weight, elements of a bias. */
    bool bias = hf->n_dims == 1;
    int64_t units = bias ? hf->ne[0] : hf->ne[1];
    size_t unit = bias ? qt_row_size(hf->type, 1) : qt_row_size(hf->type, hf->ne[0]);
    int64_t hd = units / heads, bad = 0;
    for (int64_t r = 0; r < units; r++)
        bad += memcmp((const char *)gg->data + (size_t)r * unit,
                      (const char *)hf->data + (size_t)qt__qk_hf_row_for_gguf_row(r, hd) * unit, unit) != 0;
    CHECK_MSG(bad == 0, "%s: %lld of %lld units not in pairs order", gg->name, (long long)bad, (long long)units);
    if (hd > 2) CHECK_MSG(memcmp(hf->data, gg->data, hf->nbytes) != 0, "%s: unchanged by the permutation", gg->name);
}

static void run_variant(const fx_spec *spec) {
    char dir[600], out[600], back[600];
    snprintf(dir, sizeof dir, "%s/%s", qt_test_tmpdir(), spec->name);
    snprintf(out, sizeof out, "%s/%s.gguf", qt_test_tmpdir(), spec->name);
    snprintf(back, sizeof back, "%s/%s-back", qt_test_tmpdir(), spec->name);
    int rc = fx_write_hf(dir, spec, 1234);
    if (rc == 77) SKIP("%s: npm tokenizer package unavailable", spec->name);
    CHECK_EQ_INT(rc, 0);
    qt_model *hf = NULL, *gg = NULL, *hf2 = NULL;
    CHECK_OK(qt_model_open(dir, &hf));
    if (!hf) return;
    CHECK_OK(qt_gguf_write(hf, out, NULL));
    CHECK_OK(qt_model_open(out, &gg));
    if (!gg) { qt_model_free(hf); return; }

    const qt_hparams *a = qt_model_hparams(hf), *b = qt_model_hparams(gg);
    CHECK_EQ_INT(b->n_vocab, a->n_vocab);
    CHECK_EQ_INT(b->n_embd, a->n_embd);
    CHECK_EQ_INT(b->n_layer, a->n_layer);
    CHECK_EQ_INT(b->n_head, a->n_head);
    CHECK_EQ_INT(b->n_head_kv, a->n_head_kv);
    CHECK_EQ_INT(b->head_dim, a->head_dim);
    CHECK_EQ_INT(b->n_ff, a->n_ff);
    CHECK_EQ_INT(b->n_ctx_train, a->n_ctx_train);
    CHECK_NEAR(b->rms_eps, a->rms_eps, 0);
    CHECK_NEAR(b->rope_theta, a->rope_theta, 0);
    CHECK_EQ_INT(b->tie_embeddings, a->tie_embeddings);
    CHECK_EQ_INT(b->attn_qkv_bias, a->attn_qkv_bias);
    CHECK_EQ_INT(b->attn_qk_norm, a->attn_qk_norm);
    bool permute = !strcmp(spec->model_type, "llama") || !strcmp(spec->model_type, "mistral");
    CHECK_EQ_INT(b->rope_neox, !permute);
    CHECK_EQ_STR(b->arch_name, permute ? "llama" : spec->model_type); /* mistral converts as arch llama */

    const qt_gguf *g = qt_model_gguf(gg);
    char key[96];
    snprintf(key, sizeof key, "%s.attention.head_count_kv", b->arch_name);
    CHECK(qt_gguf_find(g, key) && qt_gguf_find(g, key)->type == QT_GGUF_UINT32);
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", b->arch_name);
    CHECK(qt_gguf_find(g, key) && qt_gguf_find(g, key)->type == QT_GGUF_FLOAT32);
    snprintf(key, sizeof key, "%s.attention.key_length", b->arch_name);
    CHECK_EQ_INT(qt_gguf_find(g, key) != NULL, a->head_dim != a->n_embd / a->n_head);

    int32_t extra = 0, n_f32_rule = 0, n_widened = 0;
    for (int32_t i = 0; i < qt_model_n_tensors(hf); i++) {
        const qt_tensor *ht = qt_model_tensor(hf, i), *gt = qt_model_find_tensor(gg, ht->name);
        CHECK_MSG(gt != NULL, "%s: %s missing from the GGUF", spec->name, ht->name);
        if (!gt) continue;
        bool widen = converter_wants_f32(ht) && (ht->type == QT_TYPE_F16 || ht->type == QT_TYPE_BF16);
        n_f32_rule += converter_wants_f32(ht);
        n_widened += widen;
        CHECK_MSG(gt->type == (widen ? QT_TYPE_F32 : ht->type), "%s: %s is %s in the GGUF", spec->name, ht->name,
                  qt_type_get(gt->type)->name);
        CHECK(memcmp(gt->ne, ht->ne, sizeof gt->ne) == 0);
        qt_tensor wide = widen ? widened(ht) : *ht; /* what the GGUF must hold, before any permutation */
        if (gt->type != wide.type || !wide.data) {
            /* reported above */
        } else if (permute && is_qk(ht->name)) {
            check_permuted(&wide, gt, strstr(ht->name, ".attn_q.") ? a->n_head : a->n_head_kv);
        } else {
            CHECK_MSG(memcmp(gt->data, wide.data, wide.nbytes) == 0, "%s: %s values changed", spec->name, ht->name);
        }
        if (widen) free((void *)wide.data);
    }
    /* every F16/BF16 fixture has norms (and some biases) to widen; F32 ones have none */
    CHECK(n_f32_rule > 0);
    CHECK_EQ_INT(n_widened, spec->dtype == QT_ST_F32 ? 0 : n_f32_rule);
    const qt_tensor *rf = qt_model_find_tensor(gg, "rope_freqs.weight");
    if (spec->llama3_rope) {
        extra = 1;
        CHECK(rf != NULL);
        CHECK_EQ_INT(b->rope_scaling, QT_ROPE_SCALING_LLAMA3);
        if (rf) {
            /* divisors: 1 for high frequencies, the factor for low ones, monotone between */
            const float *f = rf->data;
            CHECK_EQ_INT(rf->ne[0], a->n_rot / 2);
            CHECK_NEAR(f[0], 1.0, 0);
            for (int64_t j = 1; j < rf->ne[0]; j++) CHECK(f[j] >= f[j - 1] && f[j] <= a->rope_factor);
        }
    } else {
        CHECK(rf == NULL);
    }
    CHECK_EQ_INT(qt_model_n_tensors(gg), qt_model_n_tensors(hf) + extra);

    const qt_vocab *va = qt_model_vocab(hf), *vb = qt_model_vocab(gg);
    if (va->n_tokens > 0) {
        const char *model = NULL;
        CHECK_OK(qt_gguf_get_str(g, "tokenizer.ggml.model", &model));
        CHECK_EQ_STR(model, va->kind == QT_VOCAB_BPE ? "gpt2" : "llama");
        CHECK_EQ_INT(vb->n_tokens, a->n_vocab); /* padded to the embedding rows */
        CHECK_EQ_INT(vb->n_merges, va->n_merges);
        CHECK_EQ_STR(vb->pre, va->pre);
        /* GGUF cannot say "no BOS" for gpt2 vocabularies: llama.cpp (and our reader) then use id 11 */
        CHECK_EQ_INT(vb->bos_id, va->bos_id >= 0 ? va->bos_id : 11);
        CHECK_EQ_INT(vb->eos_id, va->eos_id);
        CHECK_EQ_INT(vb->add_bos, va->add_bos);
        int diff = 0;
        for (int32_t i = 0; i < va->n_tokens; i++)
            diff += strcmp(va->tokens[i], vb->tokens[i]) != 0 || (va->token_types && va->token_types[i] != vb->token_types[i]);
        for (int32_t i = 0; i < va->n_merges; i++) diff += strcmp(va->merges[i], vb->merges[i]) != 0;
        CHECK_EQ_INT(diff, 0);
    }

    /* and back: GGUF -> HF restores the original HF tensors */
    if (!spec->llama3_rope) { /* rope_freqs cannot be turned back into config factors */
        CHECK_OK(qt_hf_write(gg, back, NULL));
        CHECK_OK(qt_model_open(back, &hf2));
        if (hf2) {
            int same = 0;
            for (int32_t i = 0; i < qt_model_n_tensors(hf); i++) {
                const qt_tensor *x = qt_model_tensor(hf, i), *y = qt_model_find_tensor(hf2, x->name);
                same += y && y->nbytes == x->nbytes && !memcmp(x->data, y->data, x->nbytes);
            }
            CHECK_EQ_INT(same, qt_model_n_tensors(hf));
            qt_model_free(hf2);
        }
    }
    qt_model_free(gg);
    qt_model_free(hf);
}

/* GGUF -> HF narrows F32 norms back only when nothing is lost: an F32
 * checkpoint converted with --outtype f16 has F16 matrices but norms that are
 * not f16-exact; they must come back F32, bit for bit. */
static void test_narrowing_is_lossless(void) {
    char dir[600], out[600], back[600];
    snprintf(dir, sizeof dir, "%s/lossless", qt_test_tmpdir());
    snprintf(out, sizeof out, "%s/lossless.gguf", qt_test_tmpdir());
    snprintf(back, sizeof back, "%s/lossless-back", qt_test_tmpdir());
    CHECK_EQ_INT(fx_write_hf(dir, &fx_llama, 99), 0);
    qt_model *hf = NULL, *gg = NULL, *hf2 = NULL;
    CHECK_OK(qt_model_open(dir, &hf));
    qt_gguf_write_opts o = qt_gguf_write_opts_default();
    o.outtype = QT_TYPE_F16;
    if (hf) CHECK_OK(qt_gguf_write(hf, out, &o));
    CHECK_OK(qt_model_open(out, &gg));
    if (gg) CHECK_OK(qt_hf_write(gg, back, NULL));
    CHECK_OK(qt_model_open(back, &hf2));
    int32_t n_norms = 0, n_inexact = 0;
    for (int32_t i = 0; hf && hf2 && i < qt_model_n_tensors(hf); i++) {
        const qt_tensor *x = qt_model_tensor(hf, i), *y = qt_model_find_tensor(hf2, x->name);
        if (!y) { CHECK_MSG(false, "%s missing after the round trip", x->name); continue; }
        if (!converter_wants_f32(x)) { CHECK_EQ_INT(y->type, QT_TYPE_F16); continue; }
        n_norms++;
        CHECK_EQ_INT(y->type, QT_TYPE_F32);
        CHECK_MSG(y->nbytes == x->nbytes && !memcmp(x->data, y->data, x->nbytes), "%s changed", x->name);
        const float *f = x->data;
        bool exact = true;
        for (int64_t j = 0; j < x->ne[0]; j++) exact &= qt_fp16_to_f32(qt_f32_to_fp16(f[j])) == f[j];
        n_inexact += !exact;
    }
    CHECK(n_norms > 0);
    CHECK_EQ_INT(n_inexact, n_norms); /* the case is real: narrowing these would have lost bits */
    qt_model_free(hf2);
    qt_model_free(gg);
    qt_model_free(hf);
}

static void test_llama(void) { run_variant(&fx_llama); }
static void test_llama3_rope_with_bias(void) { run_variant(&fx_llama3_rope); }
static void test_qwen2_bias(void) { run_variant(&fx_qwen2_bias); }
static void test_qwen3_qknorm(void) { run_variant(&fx_qwen3_qknorm); }
static void test_mistral_sharded(void) { run_variant(&fx_mistral); }
static void test_llama3_real_vocab(void) { run_variant(&fx_llama3_vocab); }
static void test_qwen3_real_vocab(void) { run_variant(&fx_qwen3_vocab); }

int main(void) {
    QT_RUN(test_llama);
    QT_RUN(test_llama3_rope_with_bias);
    QT_RUN(test_qwen2_bias);
    QT_RUN(test_qwen3_qknorm);
    QT_RUN(test_mistral_sharded);
    QT_RUN(test_llama3_real_vocab);
    QT_RUN(test_qwen3_real_vocab);
    QT_RUN(test_narrowing_is_lossless);
    return qt_test_finish("test_hf_gguf");
}
