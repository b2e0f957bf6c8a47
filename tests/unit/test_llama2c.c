/* llama2.c reader: stories260K.bin + tok512.bin must give exactly the tensors
 * and vocabulary llama.cpp's llama2c converter put in stories260K.gguf; and
 * malformed checkpoints/tokenizers get precise errors (every truncation, byte
 * flips, extreme header values). */
#include <unistd.h>

#include "io/io_internal.h"
#include "qtest.h"
#include "quanta.h"

static void compare_with_reference(const qt_model *m, const qt_model *ref, const char *what) {
    CHECK_EQ_INT(qt_model_n_tensors(m), qt_model_n_tensors(ref));
    int same = 0;
    for (int32_t i = 0; i < qt_model_n_tensors(ref); i++) {
        const qt_tensor *r = qt_model_tensor(ref, i);
        const qt_tensor *t = qt_model_find_tensor(m, r->name);
        CHECK_MSG(t != NULL, "%s: tensor %s missing", what, r->name);
        if (!t) continue;
        CHECK_EQ_INT(t->type, r->type);
        CHECK_EQ_INT(t->n_dims, r->n_dims);
        CHECK(memcmp(t->ne, r->ne, sizeof t->ne) == 0);
        CHECK_EQ_INT(t->nbytes, r->nbytes);
        bool eq = t->nbytes == r->nbytes && memcmp(t->data, r->data, r->nbytes) == 0;
        CHECK_MSG(eq, "%s: tensor %s bytes differ", what, r->name);
        same += eq;
        /* same order as llama.cpp's converter */
        CHECK_EQ_STR(qt_model_tensor(m, i)->name, r->name);
    }
    CHECK_EQ_INT(same, 48);
    const qt_vocab *v = qt_model_vocab(m), *rv = qt_model_vocab(ref);
    CHECK_EQ_INT(v->kind, rv->kind);
    CHECK_EQ_INT(v->n_tokens, rv->n_tokens);
    int diff_tok = 0, diff_score = 0, diff_type = 0;
    for (int32_t i = 0; i < rv->n_tokens && i < v->n_tokens; i++) {
        diff_tok += strcmp(v->tokens[i], rv->tokens[i]) != 0;
        diff_score += memcmp(&v->scores[i], &rv->scores[i], 4) != 0;
        diff_type += v->token_types[i] != rv->token_types[i];
    }
    CHECK_EQ_INT(diff_tok, 0);
    CHECK_EQ_INT(diff_score, 0);
    CHECK_EQ_INT(diff_type, 0);
    CHECK_EQ_INT(v->bos_id, rv->bos_id);
    CHECK_EQ_INT(v->eos_id, rv->eos_id);
    CHECK_EQ_INT(v->unk_id, rv->unk_id);
    CHECK_EQ_INT(v->pad_id, rv->pad_id);
    CHECK_EQ_INT(v->add_bos, rv->add_bos);
    CHECK_EQ_INT(v->add_space_prefix, rv->add_space_prefix);
    const qt_hparams *a = qt_model_hparams(m), *b = qt_model_hparams(ref);
    CHECK_EQ_INT(a->n_embd, b->n_embd);
    CHECK_EQ_INT(a->n_layer, b->n_layer);
    CHECK_EQ_INT(a->n_head, b->n_head);
    CHECK_EQ_INT(a->n_head_kv, b->n_head_kv);
    CHECK_EQ_INT(a->n_ff, b->n_ff);
    CHECK_EQ_INT(a->n_rot, b->n_rot);
    CHECK_EQ_INT(a->rope_neox, b->rope_neox);
    CHECK_NEAR(a->rms_eps, b->rms_eps, 0);
    CHECK_NEAR(a->rope_theta, b->rope_theta, 0);
}

static void test_stories_bin_matches_reference_gguf(void) {
    qt_model *m, *ref;
    /* tok512.bin is found beside the checkpoint (tok<vocab_size>.bin rule) */
    CHECK_OK(qt_model_open(qt_test_shared("models/stories260K.bin"), &m));
    CHECK_OK(qt_model_open(qt_test_shared("models/stories260K.gguf"), &ref));
    if (!m || !ref) return;
    CHECK_EQ_STR(qt_model_source_format(m), "llama2c");
    CHECK_EQ_INT(qt_model_hparams(m)->n_ctx_train, 512); /* the training context, from the header */
    CHECK_EQ_INT(qt_model_n_params(m), 292800);
    compare_with_reference(m, ref, "llama2c");

    /* and once written as GGUF */
    char out[600];
    snprintf(out, sizeof out, "%s/l2c.gguf", qt_test_tmpdir());
    CHECK_OK(qt_gguf_write(m, out, NULL));
    qt_model *w;
    CHECK_OK(qt_model_open(out, &w));
    if (w) {
        compare_with_reference(w, ref, "llama2c->gguf");
        CHECK_EQ_INT(qt_model_hparams(w)->n_ctx_train, 512);
        const qt_gguf *g = qt_model_gguf(w);
        const char *s;
        CHECK_OK(qt_gguf_get_str(g, "general.architecture", &s));
        CHECK_EQ_STR(s, "llama");
        /* llama.cpp's strict key types (docs/formats.md §2.5) */
        CHECK_EQ_INT(qt_gguf_find(g, "llama.block_count")->type, QT_GGUF_UINT32);
        CHECK_EQ_INT(qt_gguf_find(g, "llama.attention.head_count_kv")->type, QT_GGUF_UINT32);
        CHECK_EQ_INT(qt_gguf_find(g, "llama.attention.layer_norm_rms_epsilon")->type, QT_GGUF_FLOAT32);
        CHECK_EQ_INT(qt_gguf_find(g, "tokenizer.ggml.bos_token_id")->type, QT_GGUF_UINT32);
        CHECK_EQ_INT(qt_gguf_find(g, "tokenizer.ggml.token_type")->arr.type, QT_GGUF_INT32);
        qt_model_free(w);
    }
    qt_model_free(m);
    qt_model_free(ref);
}

static void test_explicit_tokenizer_and_wrong_tokenizer(void) {
    qt_model *m;
    CHECK_OK(qt_model_open_llama2c(qt_test_shared("models/stories260K.bin"), qt_test_shared("models/tok512.bin"), &m));
    if (m) CHECK_EQ_INT(qt_model_vocab(m)->n_tokens, 512);
    qt_model_free(m);
    /* a file that is not this model's tokenizer: bytes left over / too short */
    CHECK_STATUS(qt_model_open_llama2c(qt_test_shared("models/stories260K.bin"), qt_test_shared("models/README.md"), &m),
                 QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "README.md: tokenizer") != NULL);
}

/* ---- a tiny synthetic checkpoint ------------------------------------------------ */
typedef struct buf { uint8_t *p; size_t n, cap; } buf;
static void put(buf *b, const void *x, size_t n) {
    if (b->n + n > b->cap) { b->cap = (b->n + n) * 2; b->p = realloc(b->p, b->cap); }
    memcpy(b->p + b->n, x, n);
    b->n += n;
}
static void put_i32(buf *b, int32_t v) { put(b, &v, 4); }
static void put_f32s(buf *b, size_t n, float base) {
    for (size_t i = 0; i < n; i++) { float f = base + (float)i * 0.001f; put(b, &f, 4); }
}

/* dim 8, hidden 12, 2 layers, 2 heads, 1 kv head, vocab 6 (negative = own classifier), seq 4 */
static buf tiny_checkpoint(int32_t vocab_signed) {
    buf b = {0};
    int32_t dim = 8, hid = 12, L = 2, nh = 2, nkv = 1, V = vocab_signed < 0 ? -vocab_signed : vocab_signed, seq = 4;
    int32_t hs = dim / nh, kv = hs * nkv;
    int32_t hdr[7] = {dim, hid, L, nh, nkv, vocab_signed, seq};
    put(&b, hdr, sizeof hdr);
    put_f32s(&b, (size_t)V * dim, 1);          /* embedding */
    put_f32s(&b, (size_t)L * dim, 2);          /* rms_att */
    put_f32s(&b, (size_t)L * dim * dim, 3);    /* wq */
    put_f32s(&b, (size_t)L * kv * dim, 4);     /* wk */
    put_f32s(&b, (size_t)L * kv * dim, 5);     /* wv */
    put_f32s(&b, (size_t)L * dim * dim, 6);    /* wo */
    put_f32s(&b, (size_t)L * dim, 7);          /* rms_ffn */
    put_f32s(&b, (size_t)L * hid * dim, 8);    /* w1 */
    put_f32s(&b, (size_t)L * dim * hid, 9);    /* w2 */
    put_f32s(&b, (size_t)L * hid * dim, 10);   /* w3 */
    put_f32s(&b, (size_t)dim, 11);             /* rms_final */
    put_f32s(&b, (size_t)seq * hs, 12);        /* freq_cis real+imag */
    if (vocab_signed < 0) put_f32s(&b, (size_t)V * dim, 13); /* wcls */
    return b;
}

static buf tiny_tokenizer(int n) {
    buf b = {0};
    put_i32(&b, 6);
    const char *texts[] = {"<unk>", "\n<s>\n", "\n</s>\n", "<0x41>", " a", "b c"};
    for (int i = 0; i < n; i++) {
        float score = -(float)i;
        put(&b, &score, 4);
        put_i32(&b, (int32_t)strlen(texts[i % 6]));
        put(&b, texts[i % 6], strlen(texts[i % 6]));
    }
    return b;
}

static qt_status parse(const buf *ck, const buf *tok, qt_model **out) {
    qt_model *m;
    qt_status s = qt__model_new("tiny.bin", "llama2c", &m);
    if (s != QT_OK) return s;
    s = qt__read_llama2c_mem(m, ck->p, ck->n, -1, tok ? tok->p : NULL, tok ? tok->n : 0, "tiny-tok.bin");
    if (s != QT_OK || !out) { qt_model_free(m); m = NULL; }
    if (out) *out = m;
    return s;
}

static void test_tiny_checkpoint_layout(void) {
    buf ck = tiny_checkpoint(-6), tok = tiny_tokenizer(6);
    qt_model *m;
    CHECK_OK(parse(&ck, &tok, &m));
    if (m) {
        const qt_tensor *emb = qt_model_find_tensor(m, "token_embd.weight"), *out = qt_model_find_tensor(m, "output.weight");
        CHECK(emb && out && emb->data != out->data); /* separate classifier */
        const float *wcls = out->data;
        CHECK_NEAR(wcls[0], 13.0, 0);
        const qt_tensor *k1 = qt_model_find_tensor(m, "blk.1.attn_k.weight");
        CHECK(k1 && k1->ne[0] == 8 && k1->ne[1] == 4);
        if (k1) CHECK_NEAR(((const float *)k1->data)[0], 4.0f + 32 * 0.001f, 1e-6); /* layer-major: layer 1 starts at 32 */
        const qt_vocab *v = qt_model_vocab(m);
        CHECK_EQ_STR(v->tokens[1], "<s>");
        CHECK_EQ_STR(v->tokens[3], "<0x41>");
        CHECK_EQ_INT(v->token_types[3], QT_TOKEN_BYTE);
        CHECK_EQ_STR(v->tokens[4], "\xe2\x96\x81" "a");
        CHECK_EQ_STR(v->tokens[5], "b\xe2\x96\x81" "c");
        qt_model_free(m);
    }
    /* shared classifier: output.weight is the embedding's bytes */
    buf ck2 = tiny_checkpoint(6);
    CHECK_OK(parse(&ck2, NULL, &m));
    if (m) {
        CHECK(qt_model_find_tensor(m, "output.weight")->data == qt_model_find_tensor(m, "token_embd.weight")->data);
        CHECK_EQ_INT(qt_model_vocab(m)->kind, QT_VOCAB_NONE);
        qt_model_free(m);
    }
    free(ck.p);
    free(ck2.p);
    free(tok.p);
}

static void test_every_truncation(void) {
    buf ck = tiny_checkpoint(-6), tok = tiny_tokenizer(6);
    int ok = 0, named = 0;
    for (size_t n = 0; n < ck.n; n++) {
        buf t = {ck.p, n, n};
        qt_status s = parse(&t, &tok, NULL);
        ok += s == QT_OK;
        named += s != QT_OK && strstr(qt_last_error(), "tiny.bin") != NULL;
    }
    CHECK_EQ_INT(ok, 0);
    CHECK_EQ_INT(named, (int)ck.n);
    buf t = {ck.p, ck.n - 4, 0};
    CHECK_STATUS(parse(&t, &tok, NULL), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "implies 4476 bytes, the file has 4472") != NULL);

    int tok_ok = 0, tok_named = 0;
    for (size_t n = 0; n < tok.n; n++) {
        buf tt = {tok.p, n, n};
        qt_status s = parse(&ck, &tt, NULL);
        tok_ok += s == QT_OK;
        tok_named += s != QT_OK && strstr(qt_last_error(), "tiny-tok.bin: tokenizer") != NULL;
    }
    CHECK_EQ_INT(tok_ok, 0);
    CHECK_EQ_INT(tok_named, (int)tok.n);
    buf more = tiny_tokenizer(7); /* one token too many */
    CHECK_STATUS(parse(&ck, &more, NULL), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "bytes left after 6 tokens") != NULL);
    free(more.p);
    free(ck.p);
    free(tok.p);
}

static void test_extreme_headers(void) {
    buf ck = tiny_checkpoint(6);
    const struct { int field; int32_t value; const char *msg; } cases[] = {
        {0, 0, "dim is 0, must be positive"},
        {0, INT32_MAX, "n_heads 2 does not divide dim 2147483647"},
        {0, -8, "dim is -8"},
        {1, INT32_MAX, "implies"},
        {2, INT32_MAX, "implies"},
        {3, 3, "n_heads 3 does not divide dim 8"},
        {3, 8, "head size 1 is odd"},
        {4, 0, "n_kv_heads is 0"},
        {4, 3, "n_kv_heads 3 does not divide n_heads 2"},
        {5, INT32_MIN, "vocab_size is -2147483648"},
        {5, INT32_MAX, "implies"},
        {6, 0, "seq_len is 0"},
        {6, INT32_MAX, "implies"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        buf b = {malloc(ck.n), ck.n, ck.n};
        memcpy(b.p, ck.p, ck.n);
        memcpy(b.p + 4 * cases[i].field, &cases[i].value, 4);
        CHECK_STATUS(parse(&b, NULL, NULL), QT_ERR_FORMAT);
        CHECK_MSG(strstr(qt_last_error(), cases[i].msg) != NULL, "case %zu: '%s' lacks '%s'", i, qt_last_error(), cases[i].msg);
        free(b.p);
    }
    /* version-2 exports (int8) are refused by name */
    uint8_t v2[256] = {0x32, 0x34, 0x6b, 0x61, 2, 0, 0, 0};
    buf b = {v2, sizeof v2, 0};
    CHECK_STATUS(parse(&b, NULL, NULL), QT_ERR_UNSUPPORTED);
    CHECK(strstr(qt_last_error(), "llama2.c export version 2 is not supported") != NULL);
    free(ck.p);
}

static void test_tokenizer_malformed(void) {
    buf ck = tiny_checkpoint(6), tok = tiny_tokenizer(6);
    int32_t neg = -1;
    buf t = {malloc(tok.n), tok.n, tok.n};
    memcpy(t.p, tok.p, tok.n);
    memcpy(t.p + 4 + 4, &neg, 4); /* length of token 0 */
    CHECK_STATUS(parse(&ck, &t, NULL), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "token 0: length -1") != NULL);
    float nan = __builtin_nanf("");
    memcpy(t.p, tok.p, tok.n);
    memcpy(t.p + 4, &nan, 4);
    CHECK_STATUS(parse(&ck, &t, NULL), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "token 0: score is not finite") != NULL);
    memcpy(t.p, tok.p, tok.n);
    t.p[4 + 8 + 2] = 0; /* a NUL inside "<unk>" */
    CHECK_STATUS(parse(&ck, &t, NULL), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "contains a NUL byte") != NULL);
    free(t.p);
    free(ck.p);
    free(tok.p);
}

static void test_random_byte_flips(void) {
    buf ck = tiny_checkpoint(-6), tok = tiny_tokenizer(6);
    uint64_t state = 0x9E3779B97F4A7C15ull;
    int ok = 0, failed_named = 0, failed = 0;
    for (int iter = 0; iter < 3000; iter++) {
        buf a = {malloc(ck.n), ck.n, ck.n}, b = {malloc(tok.n), tok.n, tok.n};
        memcpy(a.p, ck.p, ck.n);
        memcpy(b.p, tok.p, tok.n);
        int flips = 1 + iter % 4;
        for (int f = 0; f < flips; f++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            uint64_t r = state >> 17;
            /* mostly the header / tokenizer, where flips matter */
            if (r & 1) a.p[(r >> 8) % 28] ^= (uint8_t)(1u << ((r >> 4) & 7));
            else b.p[(r >> 8) % b.n] ^= (uint8_t)(1u << ((r >> 4) & 7));
        }
        qt_status s = parse(&a, &b, NULL);
        if (s == QT_OK) ok++;
        else {
            failed++;
            failed_named += strstr(qt_last_error(), "tiny") != NULL;
        }
        free(a.p);
        free(b.p);
    }
    CHECK_EQ_INT(failed_named, failed);
    CHECK(failed > 0 && ok > 0); /* flips in weights/scores load fine; header flips do not */
    free(ck.p);
    free(tok.p);
}

int main(void) {
    QT_RUN(test_stories_bin_matches_reference_gguf);
    QT_RUN(test_explicit_tokenizer_and_wrong_tokenizer);
    QT_RUN(test_tiny_checkpoint_layout);
    QT_RUN(test_every_truncation);
    QT_RUN(test_extreme_headers);
    QT_RUN(test_tokenizer_malformed);
    QT_RUN(test_random_byte_flips);
    return qt_test_finish("test_llama2c");
}
