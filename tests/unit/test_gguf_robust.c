/* GGUF reader robustness: a tiny valid llama-architecture GGUF built byte by
 * byte here (independently of our writer), then every truncation, random bit
 * flips, and hand-made extreme/invalid fields — each must fail with one
 * precise message naming the file (and never crash: this runs under ASan). */
#include "io/io_internal.h"
#include "qtest.h"
#include "quanta.h"

typedef struct buf { uint8_t *p; size_t n, cap; } buf;

static void put(buf *b, const void *x, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    if (n) memcpy(b->p + b->n, x, n);
    b->n += n;
}
static void u8(buf *b, uint8_t v) { put(b, &v, 1); }
static void u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void f32(buf *b, float v) { put(b, &v, 4); }
static void str(buf *b, const char *s) { u64(b, strlen(s)); put(b, s, strlen(s)); }
static void key(buf *b, const char *k, uint32_t type) { str(b, k); u32(b, type); }

/* Offsets of fields the tests patch. */
typedef struct layout {
    size_t n_tensors, n_kv, first_key_len, bool_value, tokens_count, version;
    size_t info[16];        /* start of each tensor info (its name length) */
    size_t info_type[16], info_offset[16], info_ndims[16], info_ne0[16];
    size_t data_start, data_end; /* end of the last tensor's bytes (before padding) */
    int n_tensor;
} layout;

typedef struct tdesc { const char *name; int64_t ne0, ne1; } tdesc;

/* n_embd 8, 1 layer, 2 heads (head_dim 4), 1 kv head, n_ff 16, 4 tokens. */
static const tdesc tiny_tensors[] = {
    {"token_embd.weight", 8, 4},    {"output_norm.weight", 8, 0},    {"blk.0.attn_norm.weight", 8, 0},
    {"blk.0.attn_q.weight", 8, 8},  {"blk.0.attn_k.weight", 8, 4},   {"blk.0.attn_v.weight", 8, 4},
    {"blk.0.attn_output.weight", 8, 8}, {"blk.0.ffn_norm.weight", 8, 0}, {"blk.0.ffn_gate.weight", 8, 16},
    {"blk.0.ffn_up.weight", 8, 16}, {"blk.0.ffn_down.weight", 16, 8},
};
#define N_TINY ((int)(sizeof tiny_tensors / sizeof tiny_tensors[0]))

static buf tiny_gguf(layout *L) {
    buf b = {0};
    memset(L, 0, sizeof *L);
    put(&b, "GGUF", 4);
    L->version = b.n;
    u32(&b, 3);
    L->n_tensors = b.n;
    u64(&b, N_TINY);
    L->n_kv = b.n;
    u64(&b, 26);
    L->first_key_len = b.n;
    key(&b, "general.architecture", 8); str(&b, "llama");
    key(&b, "llama.context_length", 4); u32(&b, 64);
    key(&b, "llama.embedding_length", 4); u32(&b, 8);
    key(&b, "llama.block_count", 10); u64(&b, 1);          /* a u64 count: accepted */
    key(&b, "llama.feed_forward_length", 9); u32(&b, 5); u64(&b, 1); u32(&b, 16); /* per-layer array */
    key(&b, "llama.attention.head_count", 4); u32(&b, 2);
    key(&b, "llama.attention.head_count_kv", 5); u32(&b, 1); /* int32: accepted */
    key(&b, "llama.attention.layer_norm_rms_epsilon", 6); f32(&b, 1e-5f);
    key(&b, "llama.rope.freq_base", 6); f32(&b, 500000.0f);
    /* one of every other value type */
    key(&b, "test.u8", 0); u8(&b, 200);
    key(&b, "test.i8", 1); u8(&b, 0x80);
    key(&b, "test.u16", 2); u8(&b, 0x34); u8(&b, 0x12);
    key(&b, "test.i16", 3); u8(&b, 0xFF); u8(&b, 0xFF);
    key(&b, "test.bool", 7); L->bool_value = b.n; u8(&b, 1);
    key(&b, "test.i64", 11); u64(&b, (uint64_t)-5);
    key(&b, "test.f64", 12); { double d = 0.25; put(&b, &d, 8); }
    key(&b, "test.nested", 9); u32(&b, 9); u64(&b, 2);     /* [[1,2],["x"]] */
    u32(&b, 4); u64(&b, 2); u32(&b, 1); u32(&b, 2);
    u32(&b, 8); u64(&b, 1); str(&b, "x");
    key(&b, "test.empty_array", 9); u32(&b, 0); u64(&b, 0);
    key(&b, "test.string_with_nul", 8); u64(&b, 3); put(&b, "a\0b", 3);
    key(&b, "tokenizer.ggml.model", 8); str(&b, "llama");
    key(&b, "tokenizer.ggml.tokens", 9); u32(&b, 8); L->tokens_count = b.n; u64(&b, 4);
    str(&b, "<unk>"); str(&b, "<s>"); str(&b, "</s>"); str(&b, "\xe2\x96\x81hi");
    key(&b, "tokenizer.ggml.scores", 9); u32(&b, 6); u64(&b, 4); f32(&b, 0); f32(&b, 0); f32(&b, 0); f32(&b, -1);
    key(&b, "tokenizer.ggml.token_type", 9); u32(&b, 5); u64(&b, 4); u32(&b, 2); u32(&b, 3); u32(&b, 3); u32(&b, 1);
    key(&b, "tokenizer.ggml.bos_token_id", 4); u32(&b, 1);
    key(&b, "tokenizer.ggml.eos_token_id", 4); u32(&b, 2);
    key(&b, "general.alignment", 4); u32(&b, 32);
    uint64_t off = 0;
    for (int i = 0; i < N_TINY; i++) {
        const tdesc *t = &tiny_tensors[i];
        L->info[i] = b.n;
        str(&b, t->name);
        L->info_ndims[i] = b.n;
        u32(&b, t->ne1 ? 2 : 1);
        L->info_ne0[i] = b.n;
        u64(&b, (uint64_t)t->ne0);
        if (t->ne1) u64(&b, (uint64_t)t->ne1);
        L->info_type[i] = b.n;
        u32(&b, 0);
        L->info_offset[i] = b.n;
        u64(&b, off);
        uint64_t nb = (uint64_t)t->ne0 * (uint64_t)(t->ne1 ? t->ne1 : 1) * 4;
        off += (nb + 31) / 32 * 32;
    }
    L->n_tensor = N_TINY;
    while (b.n % 32) u8(&b, 0);
    L->data_start = b.n;
    for (int i = 0; i < N_TINY; i++) {
        const tdesc *t = &tiny_tensors[i];
        int64_t n = t->ne0 * (t->ne1 ? t->ne1 : 1);
        for (int64_t j = 0; j < n; j++) f32(&b, (float)(i * 1000 + j) * 0.01f);
        L->data_end = b.n;
        while (b.n % 32) u8(&b, 0);
    }
    return b;
}

static qt_status parse_model(const uint8_t *p, size_t n) {
    qt_model *m;
    qt_status s = qt__model_new("tiny.gguf", "gguf", &m);
    if (s != QT_OK) return s;
    s = qt__read_gguf_mem(m, p, n, -1);
    qt_model_free(m);
    return s;
}

static void test_tiny_valid(void) {
    layout L;
    buf b = tiny_gguf(&L);
    qt_gguf *g;
    CHECK_OK(qt_gguf_parse(b.p, b.n, "tiny.gguf", &g));
    if (!g) { free(b.p); return; }
    const qt_gguf_value *v = qt_gguf_find(g, "test.u8");
    CHECK(v && v->type == QT_GGUF_UINT8 && v->u64 == 200);
    v = qt_gguf_find(g, "test.i8");
    CHECK(v && v->i64 == -128);
    v = qt_gguf_find(g, "test.u16");
    CHECK(v && v->u64 == 0x1234);
    v = qt_gguf_find(g, "test.i16");
    CHECK(v && v->i64 == -1);
    v = qt_gguf_find(g, "test.i64");
    CHECK(v && v->i64 == -5);
    v = qt_gguf_find(g, "test.f64");
    CHECK(v && v->f64 == 0.25);
    v = qt_gguf_find(g, "test.string_with_nul");
    CHECK(v && v->str.len == 3 && memcmp(v->str.ptr, "a\0b", 3) == 0);
    v = qt_gguf_find(g, "test.nested");
    CHECK(v && v->arr.type == QT_GGUF_ARRAY && v->arr.n == 2);
    if (v && v->arr.n == 2) {
        CHECK_EQ_INT(qt_gguf_arr_u64(&v->arr.items[0], 1), 2);
        CHECK_EQ_STR(v->arr.items[1].arr.items[0].str.ptr, "x");
    }
    bool bv;
    CHECK_OK(qt_gguf_get_bool(g, "test.bool", &bv));
    CHECK(bv);
    int32_t i32;
    CHECK_OK(qt_gguf_get_i32(g, "test.i8", &i32));
    CHECK_EQ_INT(i32, -128);
    uint32_t u;
    CHECK_STATUS(qt_gguf_get_u32(g, "test.i8", &u), QT_ERR_FORMAT); /* negative */
    CHECK_EQ_INT(qt_gguf_n_tensors(g), N_TINY);
    CHECK_EQ_INT(qt_gguf_data_offset(g), L.data_start);
    qt_gguf_close(g);

    qt_model *m;
    CHECK_OK(qt__model_new("tiny.gguf", "gguf", &m));
    CHECK_OK(qt__read_gguf_mem(m, b.p, b.n, -1));
    const qt_hparams *hp = qt_model_hparams(m);
    CHECK_EQ_INT(hp->n_layer, 1);
    CHECK_EQ_INT(hp->n_ff, 16);
    CHECK_EQ_INT(hp->n_head_kv, 1);
    CHECK_EQ_INT(hp->head_dim, 4);
    CHECK_EQ_INT(hp->n_vocab, 4);
    CHECK_NEAR(hp->rope_theta, 500000.0, 0);
    CHECK(hp->tie_embeddings);
    CHECK_EQ_INT(qt_model_vocab(m)->n_tokens, 4);
    CHECK_EQ_INT(qt_model_vocab(m)->unk_id, 0); /* SentencePiece default */
    qt_model_free(m);
    free(b.p);
}

static void test_every_truncation(void) {
    layout L;
    buf b = tiny_gguf(&L);
    int unexpected = 0, unnamed = 0;
    for (size_t n = 0; n < b.n; n++) {
        qt_status s = parse_model(b.p, n);
        /* Only the zero padding after the last tensor may be cut off. */
        bool want_ok = n >= L.data_end;
        if ((s == QT_OK) != want_ok) {
            if (unexpected++ < 5) fprintf(stderr, "  truncation at %zu: %s %s\n", n, qt_status_name(s), qt_last_error());
        }
        if (s != QT_OK && strncmp(qt_last_error(), "tiny.gguf: ", 11) != 0) unnamed++;
    }
    CHECK_EQ_INT(unexpected, 0);
    CHECK_EQ_INT(unnamed, 0);
    CHECK_STATUS(parse_model(b.p, 3), QT_ERR_FORMAT);
    CHECK_EQ_STR(qt_last_error(), "tiny.gguf: magic: not a GGUF file (starts with 47 47 55 00, expected 'GGUF')");
    CHECK_STATUS(parse_model(b.p, 20), QT_ERR_FORMAT);
    CHECK_EQ_STR(qt_last_error(), "tiny.gguf: header: metadata_kv_count: truncated at offset 16 (needs 8 bytes, 4 left in the file)");
    CHECK_STATUS(parse_model(b.p, L.data_end - 1), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "tensor 'blk.0.ffn_down.weight': data (512 bytes at file offset") != NULL);
    CHECK(strstr(qt_last_error(), "runs past the end of the file") != NULL);
    free(b.p);
}

static void test_random_bit_flips(void) {
    layout L;
    buf b = tiny_gguf(&L);
    uint8_t *c = malloc(b.n);
    uint64_t st = 0x2545F4914F6CDD1Dull;
    int ok = 0, failed = 0, unnamed = 0;
    for (int iter = 0; iter < 20000; iter++) {
        memcpy(c, b.p, b.n);
        int flips = 1 + iter % 3;
        for (int f = 0; f < flips; f++) {
            st ^= st << 13; st ^= st >> 7; st ^= st << 17; /* xorshift64 */
            /* 7 in 8 flips land in the header/metadata/infos, where they matter */
            size_t range = (st & 7) ? L.data_start : b.n;
            c[(st >> 8) % range] ^= (uint8_t)(1u << ((st >> 3) & 7));
        }
        qt_status s = parse_model(c, b.n);
        if (s == QT_OK) ok++;
        else {
            failed++;
            if (strncmp(qt_last_error(), "tiny.gguf: ", 11) != 0 && unnamed++ < 3)
                fprintf(stderr, "  unnamed error: %s\n", qt_last_error());
        }
    }
    CHECK_EQ_INT(unnamed, 0);
    CHECK(ok > 0 && failed > 0);
    fprintf(stderr, "  bit flips: %d loaded, %d refused\n", ok, failed);
    free(c);
    free(b.p);
}

/* Patch one field of a fresh copy and expect a message. */
static void expect_patch(size_t off, const void *val, size_t n, qt_status want, const char *msg) {
    layout L;
    buf b = tiny_gguf(&L);
    memcpy(b.p + off, val, n);
    qt_status s = parse_model(b.p, b.n);
    CHECK_MSG(s == want, "patch at %zu: got %s (%s), want %s", off, qt_status_name(s), qt_last_error(), qt_status_name(want));
    CHECK_MSG(strstr(qt_last_error(), msg) != NULL, "patch at %zu: '%s' lacks '%s'", off, qt_last_error(), msg);
    CHECK(strncmp(qt_last_error(), "tiny.gguf: ", 11) == 0);
    free(b.p);
}

static void test_extreme_header_values(void) {
    layout L;
    buf b = tiny_gguf(&L);
    free(b.p);
    const uint64_t big[] = {UINT64_MAX, (uint64_t)1 << 63, (uint64_t)1 << 62, 1000000};
    for (int i = 0; i < 4; i++) {
        expect_patch(L.n_tensors, &big[i], 8, QT_ERR_FORMAT, "header: tensor_count");
        expect_patch(L.n_kv, &big[i], 8, QT_ERR_FORMAT, "header: metadata_kv_count");
        expect_patch(L.first_key_len, &big[i], 8, QT_ERR_FORMAT, "metadata key #0: string length");
        expect_patch(L.tokens_count, &big[i], 8, QT_ERR_FORMAT, "key 'tokenizer.ggml.tokens': array of");
        expect_patch(L.info[0], &big[i], 8, QT_ERR_FORMAT, "tensor info #0: string length");
    }
    uint64_t v;
    v = (uint64_t)1 << 63;
    expect_patch(L.info_ne0[0], &v, 8, QT_ERR_FORMAT, "tensor 'token_embd.weight': dimension 0 is 9223372036854775808 (negative as int64)");
    v = (uint64_t)1 << 62; /* 2^62 x 4 overflows int64 */
    expect_patch(L.info_ne0[0], &v, 8, QT_ERR_FORMAT, "tensor 'token_embd.weight': element count overflows int64");
    v = ((uint64_t)1 << 62) + 4; /* a 1-D F32 row of 2^62 + 4: its byte count (x 4) wraps to 16 (found by fuzz_imatrix_gguf) */
    expect_patch(L.info_ne0[1], &v, 8, QT_ERR_FORMAT, "tensor 'output_norm.weight': byte size overflows");
    uint32_t w = 5;
    expect_patch(L.info_ndims[1], &w, 4, QT_ERR_FORMAT, "tensor 'output_norm.weight': 5 dimensions (at most 4)");
    w = 4;
    expect_patch(L.info_type[0], &w, 4, QT_ERR_FORMAT, "tensor 'token_embd.weight': unknown type id 4");
    w = 0xFFFFFFFFu;
    expect_patch(L.info_type[0], &w, 4, QT_ERR_FORMAT, "unknown type id 4294967295");
    w = QT_TYPE_Q4_0;
    expect_patch(L.info_type[0], &w, 4, QT_ERR_FORMAT, "tensor 'token_embd.weight': row length 8 is not a multiple of q4_0's block size 32");
    v = 4;
    expect_patch(L.info_offset[1], &v, 8, QT_ERR_FORMAT, "tensor 'output_norm.weight': data offset 4 is not a multiple of the alignment 32");
    v = 256;
    expect_patch(L.info_offset[1], &v, 8, QT_ERR_FORMAT, "tensor 'output_norm.weight': data offset 256, expected 128");
    w = 1;
    expect_patch(L.version, &w, 4, QT_ERR_UNSUPPORTED, "GGUF v1");
    w = 4;
    expect_patch(L.version, &w, 4, QT_ERR_UNSUPPORTED, "GGUF version 4 is not supported");
    w = 0x03000000u;
    expect_patch(L.version, &w, 4, QT_ERR_UNSUPPORTED, "byte-swapped");
    uint8_t two = 2;
    expect_patch(L.bool_value, &two, 1, QT_ERR_FORMAT, "key 'test.bool': boolean value 2 is not 0 or 1");
    /* tensor name of 64 characters: over ggml's limit (write a long name over two infos' worth is messy;
     * instead claim a long length whose bytes are the following fields) */
    v = 64;
    expect_patch(L.info[0], &v, 8, QT_ERR_FORMAT, "bytes long (ggml's limit is 63)");
    v = 0;
    expect_patch(L.info[0], &v, 8, QT_ERR_FORMAT, "tensor info #0: empty tensor name");
    expect_patch(L.first_key_len, &v, 8, QT_ERR_FORMAT, "metadata key #0: empty key");
}

static void test_duplicates_and_types(void) {
    layout L;
    buf b = tiny_gguf(&L);
    free(b.p);
    /* rename "blk.0.attn_q.weight" to the same-length "blk.0.attn_k.weight" */
    expect_patch(L.info[3] + 8, "blk.0.attn_k.weight", 19, QT_ERR_FORMAT, "tensor 'blk.0.attn_k.weight': duplicate tensor name");
    /* "test.u8" -> "test.i8": a duplicate key */
    buf k = {0};
    put(&k, "test.i8", 7);
    size_t u8_key = 0;
    {
        buf t = tiny_gguf(&L);
        for (size_t i = 0; i + 7 <= t.n; i++)
            if (!memcmp(t.p + i, "test.u8", 7)) { u8_key = i; break; }
        free(t.p);
    }
    CHECK(u8_key > 0);
    expect_patch(u8_key, k.p, 7, QT_ERR_FORMAT, "key 'test.i8': duplicate metadata key");
    free(k.p);
    /* value type 13 */
    uint32_t t13 = 13;
    expect_patch(u8_key + 7, &t13, 4, QT_ERR_FORMAT, "key 'test.u8': unknown value type 13");
    /* general.alignment: wrong type (int32) / not a power of two */
    size_t align_val = 0;
    {
        buf t = tiny_gguf(&L);
        for (size_t i = 0; i + 17 <= t.n; i++)
            if (!memcmp(t.p + i, "general.alignment", 17)) { align_val = i + 17; break; }
        free(t.p);
    }
    uint32_t i32type = 5, forty8 = 48;
    expect_patch(align_val, &i32type, 4, QT_ERR_FORMAT, "key 'general.alignment': type int32, must be uint32");
    expect_patch(align_val + 4, &forty8, 4, QT_ERR_FORMAT, "key 'general.alignment': 48 is not a power of two");
}

static void test_model_level_checks(void) {
    layout L;
    buf b = tiny_gguf(&L);
    free(b.p);
    /* token_embd [8, 4] -> [4, 8]: same bytes and offsets, wrong shape for n_embd 8 */
    uint64_t swapped[2] = {4, 8};
    expect_patch(L.info_ne0[0], swapped, 16, QT_ERR_FORMAT, "tensor 'token_embd.weight': shape [4, 8], expected [8, 4]");
    /* blk.0.ffn_up.weight renamed blk.0.ffn_xx.weight: a required tensor is missing */
    expect_patch(L.info[9] + 8 + strlen("blk.0.ffn_"), "xx", 2, QT_ERR_FORMAT,
                 "tensor 'blk.0.ffn_up.weight': missing (required by architecture 'llama')");
    /* a 1-D tensor of the wrong length: attn_norm [8] -> [4] (the bytes beyond are still there) */
    const uint64_t four = 4;
    expect_patch(L.info_ne0[2], &four, 8, QT_ERR_FORMAT, "tensor 'blk.0.attn_norm.weight': shape [4, 1], expected [8]");
    /* scores with 3 entries for 4 tokens */
    size_t scores = 0;
    {
        buf t = tiny_gguf(&L);
        for (size_t i = 0; i + 21 <= t.n; i++)
            if (!memcmp(t.p + i, "tokenizer.ggml.scores", 21)) { scores = i + 21; break; }
        free(t.p);
    }
    /* array of float32 -> array of int32: wrong element type */
    uint32_t i32t = 5;
    expect_patch(scores + 4, &i32t, 4, QT_ERR_FORMAT, "key 'tokenizer.ggml.scores': array of int32, expected array of float32");
    /* head_count 2 -> 3: does not divide embedding 8 */
    size_t hc = 0;
    {
        buf t = tiny_gguf(&L);
        const char *k = "llama.attention.head_count";
        for (size_t i = 0; i + strlen(k) + 1 <= t.n; i++)
            if (!memcmp(t.p + i, k, strlen(k)) && t.p[i + strlen(k)] != '_') { hc = i + strlen(k) + 4; break; }
        free(t.p);
    }
    uint32_t three = 3, zero = 0;
    expect_patch(hc, &three, 4, QT_ERR_FORMAT, "key 'llama.attention.head_count': 3 does not divide embedding_length 8");
    expect_patch(hc, &zero, 4, QT_ERR_FORMAT, "key 'llama.attention.head_count': value 0 out of range");
}

static void test_empty_and_header_only(void) {
    CHECK_STATUS(parse_model(NULL, 0), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "not a GGUF file") != NULL);
    /* a valid file with no tensors and no metadata parses as a container ... */
    uint8_t hdr[24] = {'G', 'G', 'U', 'F', 3};
    qt_gguf *g;
    CHECK_OK(qt_gguf_parse(hdr, sizeof hdr, "empty.gguf", &g));
    if (g) CHECK_EQ_INT(qt_gguf_n_tensors(g), 0);
    qt_gguf_close(g);
    /* ... but is not a model */
    CHECK_STATUS(parse_model(hdr, sizeof hdr), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "tiny.gguf: key 'general.architecture': missing") != NULL);
}

int main(void) {
    QT_RUN(test_tiny_valid);
    QT_RUN(test_every_truncation);
    QT_RUN(test_random_bit_flips);
    QT_RUN(test_extreme_header_values);
    QT_RUN(test_duplicates_and_types);
    QT_RUN(test_model_level_checks);
    QT_RUN(test_empty_and_header_only);
    return qt_test_finish("test_gguf_robust");
}
