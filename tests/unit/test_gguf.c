/* GGUF reader and writer on the real stories260K.gguf (../shared/models):
 * hyperparameters and vocabulary as its README states, the generic metadata
 * API, the byte-exact read -> write round trip, and --outtype conversion. */
#include <unistd.h>

#include "qtest.h"
#include "quanta.h"

static const char *stories(void) { return qt_test_shared("models/stories260K.gguf"); }

static void test_stories_hparams_and_vocab(void) {
    qt_model *m;
    CHECK_OK(qt_model_open(stories(), &m));
    if (!m) return;
    CHECK_EQ_STR(qt_model_source_format(m), "gguf");
    const qt_hparams *hp = qt_model_hparams(m);
    CHECK_EQ_INT(hp->arch, QT_ARCH_LLAMA);
    CHECK_EQ_STR(hp->arch_name, "llama");
    CHECK_EQ_INT(hp->n_vocab, 512);
    CHECK_EQ_INT(hp->n_embd, 64);
    CHECK_EQ_INT(hp->n_layer, 5);
    CHECK_EQ_INT(hp->n_head, 8);
    CHECK_EQ_INT(hp->n_head_kv, 4);
    CHECK_EQ_INT(hp->head_dim, 8);
    CHECK_EQ_INT(hp->n_ff, 172);
    CHECK_EQ_INT(hp->n_ctx_train, 2048);
    CHECK_EQ_INT(hp->n_rot, 8);
    CHECK_NEAR(hp->rms_eps, 1e-5, 1e-12);
    CHECK_NEAR(hp->rope_theta, 10000.0, 0); /* not stored: llama.cpp's default */
    CHECK(!hp->rope_neox);
    CHECK(!hp->tie_embeddings); /* output.weight is a separate tensor */
    CHECK(!hp->attn_qkv_bias && !hp->attn_qk_norm);

    const qt_vocab *v = qt_model_vocab(m);
    CHECK_EQ_INT(v->kind, QT_VOCAB_SPM);
    CHECK_EQ_INT(v->n_tokens, 512);
    CHECK_EQ_STR(v->tokens[0], "<unk>");
    CHECK_EQ_STR(v->tokens[1], "<s>");
    CHECK_EQ_STR(v->tokens[3], "<0x00>");
    CHECK_EQ_STR(v->tokens[259], "\xe2\x96\x81t");
    CHECK_EQ_INT(v->token_types[0], QT_TOKEN_UNKNOWN);
    CHECK_EQ_INT(v->token_types[1], QT_TOKEN_CONTROL);
    CHECK_EQ_INT(v->token_types[3], QT_TOKEN_BYTE);
    CHECK_EQ_INT(v->token_types[259], QT_TOKEN_NORMAL);
    CHECK_NEAR(v->scores[260], -1.0, 0);
    CHECK_EQ_INT(v->bos_id, 1);
    CHECK_EQ_INT(v->eos_id, 2);
    CHECK_EQ_INT(v->unk_id, 0);
    CHECK_EQ_INT(v->pad_id, -1); /* stored as 0xFFFFFFFF */
    CHECK(v->add_bos && !v->add_eos && v->add_space_prefix);

    CHECK_EQ_INT(qt_model_n_tensors(m), 48);
    CHECK_EQ_INT(qt_model_n_params(m), 292800);
    const qt_tensor *t = qt_model_find_tensor(m, "blk.4.ffn_down.weight");
    CHECK(t != NULL);
    if (t) {
        CHECK_EQ_INT(t->type, QT_TYPE_F32);
        CHECK_EQ_INT(t->n_dims, 2);
        CHECK_EQ_INT(t->ne[0], 172);
        CHECK_EQ_INT(t->ne[1], 64);
        CHECK_EQ_INT(t->nbytes, 172 * 64 * 4);
        /* offsets as gguf-py lists them: data section at 14176, tensor at +1082880 */
        CHECK_EQ_INT(t->offset, 14176 + 1082880);
    }
    qt_model_free(m);
}

static void test_metadata_api(void) {
    qt_gguf *g;
    CHECK_OK(qt_gguf_open(stories(), &g));
    if (!g) return;
    CHECK_EQ_INT(qt_gguf_version(g), 3);
    CHECK_EQ_INT(qt_gguf_n_kv(g), 19);
    CHECK_EQ_INT(qt_gguf_n_tensors(g), 48);
    CHECK_EQ_INT(qt_gguf_alignment(g), 32);
    CHECK_EQ_INT(qt_gguf_data_offset(g), 14176);
    CHECK_EQ_INT(qt_gguf_file_size(g), 1185376);
    CHECK_EQ_STR(qt_gguf_kv_at(g, 0)->key, "tokenizer.ggml.tokens");

    uint32_t u;
    int32_t i32;
    int64_t i64;
    float f;
    const char *s;
    bool b;
    CHECK_OK(qt_gguf_get_u32(g, "llama.block_count", &u));
    CHECK_EQ_INT(u, 5);
    CHECK_OK(qt_gguf_get_i64(g, "llama.feed_forward_length", &i64));
    CHECK_EQ_INT(i64, 172);
    CHECK_OK(qt_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &f));
    CHECK_NEAR(f, 1e-5, 1e-12);
    CHECK_OK(qt_gguf_get_str(g, "general.architecture", &s));
    CHECK_EQ_STR(s, "llama");
    /* 4294967295 is a valid u32 but not an int32 */
    CHECK_OK(qt_gguf_get_u32(g, "tokenizer.ggml.padding_token_id", &u));
    CHECK_EQ_INT(u, 4294967295u);
    CHECK_STATUS(qt_gguf_get_i32(g, "tokenizer.ggml.padding_token_id", &i32), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "out of range") != NULL);
    CHECK_STATUS(qt_gguf_get_str(g, "llama.block_count", &s), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "stories260K.gguf: key 'llama.block_count': has type uint32, expected string") != NULL);
    CHECK_STATUS(qt_gguf_get_bool(g, "no.such.key", &b), QT_ERR_NOT_FOUND);
    CHECK(qt_gguf_find(g, "no.such.key") == NULL);

    const qt_gguf_value *arr;
    CHECK_OK(qt_gguf_get_arr(g, "tokenizer.ggml.scores", QT_GGUF_FLOAT32, &arr));
    CHECK_EQ_INT(arr->arr.n, 512);
    CHECK_NEAR(qt_gguf_arr_f64(arr, 261), -2.0, 0);
    CHECK_OK(qt_gguf_get_arr(g, "tokenizer.ggml.tokens", QT_GGUF_STRING, &arr));
    CHECK_EQ_STR(arr->arr.items[2].str.ptr, "</s>");
    CHECK_EQ_INT(arr->arr.items[2].str.len, 4);
    CHECK_STATUS(qt_gguf_get_arr(g, "tokenizer.ggml.tokens", QT_GGUF_INT32, &arr), QT_ERR_FORMAT);

    const qt_gguf_tensor *t = qt_gguf_find_tensor(g, "output.weight");
    const qt_gguf_tensor *e = qt_gguf_find_tensor(g, "token_embd.weight");
    CHECK(t && e);
    if (t && e) {
        CHECK_EQ_INT(t->offset, 131328);
        CHECK(memcmp(t->data, e->data, e->nbytes) == 0); /* llama2.c's tied classifier, copied */
    }
    CHECK(qt_gguf_find_tensor(g, "nope") == NULL);
    qt_gguf_close(g);
}

static bool files_equal(const char *a, const char *b, size_t *size_a, size_t *size_b, size_t *first_diff) {
    size_t na, nb;
    char *da = qt_test_read(a, &na), *db = qt_test_read(b, &nb);
    *size_a = na;
    *size_b = nb;
    *first_diff = SIZE_MAX;
    for (size_t i = 0; i < (na < nb ? na : nb); i++)
        if (da[i] != db[i]) { *first_diff = i; break; }
    bool eq = na == nb && *first_diff == SIZE_MAX;
    free(da);
    free(db);
    return eq;
}

static void test_roundtrip_byte_identical(void) {
    qt_model *m;
    CHECK_OK(qt_model_open(stories(), &m));
    if (!m) return;
    char out[600];
    snprintf(out, sizeof out, "%s/rt.gguf", qt_test_tmpdir());
    CHECK_OK(qt_gguf_write(m, out, NULL));
    size_t na, nb, diff;
    bool eq = files_equal(stories(), out, &na, &nb, &diff);
    CHECK_MSG(eq, "round trip differs: sizes %zu vs %zu, first difference at byte %zu", na, nb, diff);
    qt_model_free(m);

    /* Written again from the written file: still identical (a fixed point). */
    CHECK_OK(qt_model_open(out, &m));
    if (!m) return;
    char out2[600];
    snprintf(out2, sizeof out2, "%s/rt2.gguf", qt_test_tmpdir());
    CHECK_OK(qt_gguf_write(m, out2, NULL));
    CHECK(files_equal(out, out2, &na, &nb, &diff));
    qt_model_free(m);
}

static void test_outtype_f16_and_bf16(void) {
    qt_model *m;
    CHECK_OK(qt_model_open(stories(), &m));
    if (!m) return;
    const qt_type types[] = {QT_TYPE_F16, QT_TYPE_BF16};
    for (int k = 0; k < 2; k++) {
        char out[600];
        snprintf(out, sizeof out, "%s/h%d.gguf", qt_test_tmpdir(), k);
        qt_gguf_write_opts o = qt_gguf_write_opts_default();
        o.outtype = types[k];
        CHECK_OK(qt_gguf_write(m, out, &o));
        qt_model *h;
        CHECK_OK(qt_model_open(out, &h));
        if (!h) continue;
        CHECK_EQ_INT(qt_model_n_tensors(h), 48);
        for (int32_t i = 0; i < qt_model_n_tensors(m); i++) {
            const qt_tensor *a = qt_model_tensor(m, i), *b = qt_model_tensor(h, i);
            CHECK_EQ_STR(a->name, b->name);
            if (a->n_dims == 1) { /* norms stay F32, bytes unchanged */
                CHECK_EQ_INT(b->type, QT_TYPE_F32);
                CHECK(memcmp(a->data, b->data, a->nbytes) == 0);
                continue;
            }
            CHECK_EQ_INT(b->type, types[k]);
            CHECK_EQ_INT(b->nbytes, a->nbytes / 2);
            const float *src = a->data;
            const uint16_t *dst = b->data;
            int bad = 0;
            for (int64_t j = 0; j < a->ne[0] * a->ne[1]; j++) {
                uint16_t want = types[k] == QT_TYPE_F16 ? qt_f32_to_fp16(src[j]) : qt_f32_to_bf16(src[j]);
                if (dst[j] != want) bad++;
            }
            CHECK_EQ_INT(bad, 0);
        }
        const qt_gguf *g = qt_model_gguf(h);
        uint32_t ft = 0;
        CHECK_OK(qt_gguf_get_u32(g, "general.file_type", &ft));
        CHECK_EQ_INT(ft, types[k] == QT_TYPE_F16 ? 1 : 32); /* LLAMA_FTYPE_MOSTLY_F16 / _BF16 */
        CHECK(qt_gguf_find(g, "general.quantization_version") == NULL);
        qt_model_free(h);
    }
    qt_model_free(m);
}

static void test_extra_metadata_and_alignment(void) {
    qt_model *m;
    CHECK_OK(qt_model_open(stories(), &m));
    if (!m) return;
    char out[600];
    snprintf(out, sizeof out, "%s/extra.gguf", qt_test_tmpdir());
    qt_gguf_write_opts o = qt_gguf_write_opts_default();
    qt_gguf_kv extra[2] = {
        {"quanta.recipe", {.type = QT_GGUF_STRING, .str = {"rtn", 3}}},
        {"general.name", {.type = QT_GGUF_STRING, .str = {"renamed", 7}}},
    };
    o.extra_kv = extra;
    o.n_extra_kv = 2;
    o.alignment = 64;
    CHECK_OK(qt_gguf_write(m, out, &o));
    qt_gguf *g;
    CHECK_OK(qt_gguf_open(out, &g));
    if (g) {
        const char *s = NULL;
        CHECK_OK(qt_gguf_get_str(g, "quanta.recipe", &s));
        CHECK_EQ_STR(s, "rtn");
        CHECK_OK(qt_gguf_get_str(g, "general.name", &s));
        CHECK_EQ_STR(s, "renamed");
        CHECK_EQ_INT(qt_gguf_alignment(g), 64);
        CHECK_EQ_INT(qt_gguf_data_offset(g) % 64, 0);
        CHECK_EQ_INT(qt_gguf_n_kv(g), 21); /* 19 + recipe + alignment; name replaced in place */
        CHECK_EQ_STR(qt_gguf_kv_at(g, 5)->key, "general.name");
        for (int64_t i = 0; i < qt_gguf_n_tensors(g); i++) {
            const qt_gguf_tensor *t = qt_gguf_tensor_at(g, i);
            CHECK_EQ_INT(t->offset % 64, 0);
            CHECK(memcmp(t->data, qt_model_find_tensor(m, t->name)->data, t->nbytes) == 0);
        }
        qt_gguf_close(g);
    }
    qt_model_free(m);
}

static void test_write_refuses_impossible_and_leaves_nothing(void) {
    qt_model *m;
    CHECK_OK(qt_model_open(stories(), &m));
    if (!m) return;
    char out[600];
    snprintf(out, sizeof out, "%s/q.gguf", qt_test_tmpdir());
    /* ffn_down rows are 172 long: not a multiple of q8_0's 32 */
    qt_gguf_write_opts o = qt_gguf_write_opts_default();
    o.outtype = QT_TYPE_Q8_0;
    CHECK_STATUS(qt_gguf_write(m, out, &o), QT_ERR_SHAPE);
    CHECK(strstr(qt_last_error(), "tensor 'blk.0.ffn_down.weight': row length 172 is not a multiple of q8_0's block size 32") != NULL);
    CHECK(access(out, F_OK) != 0);
    o = qt_gguf_write_opts_default();
    CHECK_STATUS(qt_gguf_write(m, "/nonexistent-dir/x.gguf", &o), QT_ERR_IO);
    CHECK(strstr(qt_last_error(), "/nonexistent-dir/x.gguf") != NULL);
    qt_model_free(m);
}

int main(void) {
    QT_RUN(test_stories_hparams_and_vocab);
    QT_RUN(test_metadata_api);
    QT_RUN(test_roundtrip_byte_identical);
    QT_RUN(test_outtype_f16_and_bf16);
    QT_RUN(test_extra_metadata_and_alignment);
    QT_RUN(test_write_refuses_impossible_and_leaves_nothing);
    return qt_test_finish("test_gguf");
}
