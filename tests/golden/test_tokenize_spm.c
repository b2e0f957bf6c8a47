/* tests/golden/test_tokenize_spm.c — the SentencePiece-style tokenizer against
 * llama.cpp's own output for stories260K (../shared/reference/llamacpp):
 * the 14 test strings, the first 128 tokens of the logits prefix, the greedy
 * prompts, and the token counts of both shared text files.
 *
 * The vocabulary comes from tok512.bin (llama2.c format, docs/formats.md §6.2),
 * converted to the GGUF spelling exactly as llama.cpp's llama2.c converter does
 * (the shared README verifies that conversion is byte-identical to
 * stories260K.gguf's vocabulary). */
#include <jansson.h>
#include <time.h>

#include "model/model_internal.h"
#include "qtest.h"
#include "quanta/tokenizer.h"

typedef struct tok512 {
    qt_vocab v;
    char *store[512];
    float scores[512];
    int32_t types[512];
} tok512;

static tok512 g_vocab;
static qt_tokenizer *g_tok;

/* tok512.bin: u32 max_len, then per token f32 score, i32 len, bytes. "▁" is
 * stored as a space, BOS/EOS as "\n<s>\n" / "\n</s>\n". */
static void load_tok512(tok512 *t) {
    size_t size;
    uint8_t *d = qt_test_read(qt_test_shared("models/tok512.bin"), &size);
    size_t o = 4;
    memset(t, 0, sizeof *t);
    for (int i = 0; i < 512; i++) {
        float score;
        int32_t len;
        memcpy(&score, d + o, 4);
        memcpy(&len, d + o + 4, 4);
        o += 8;
        char *s = malloc((size_t)len * 3 + 1), *w = s;
        if (len == 5 && !memcmp(d + o, "\n<s>\n", 5)) w += sprintf(w, "<s>");
        else if (len == 6 && !memcmp(d + o, "\n</s>\n", 6)) w += sprintf(w, "</s>");
        else
            for (int32_t k = 0; k < len; k++) {
                if (d[o + k] == ' ') { memcpy(w, "\xE2\x96\x81", 3); w += 3; }
                else *w++ = (char)d[o + k];
            }
        *w = 0;
        o += (size_t)len;
        t->store[i] = s;
        t->scores[i] = score;
        t->types[i] = i == 0 ? QT_TOKEN_UNKNOWN
                    : (i == 1 || i == 2) ? QT_TOKEN_CONTROL
                    : (!strncmp(s, "<0x", 3) && strlen(s) == 6) ? QT_TOKEN_BYTE : QT_TOKEN_NORMAL;
    }
    free(d);
    t->v = (qt_vocab){.kind = QT_VOCAB_SPM, .n_tokens = 512, .tokens = t->store, .scores = t->scores,
                      .token_types = t->types, .bos_id = 1, .eos_id = 2, .unk_id = 0, .pad_id = -1,
                      .add_bos = true, .add_space_prefix = true};
}

/* Parse whitespace-separated ints from s until '\n', '|' or the end. */
static int parse_ids(const char *s, int32_t *out, int cap) {
    int n = 0;
    while (*s && *s != '\n' && *s != '|') {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s) { s++; continue; }
        if (n < cap) out[n] = (int32_t)v;
        n++;
        s = end;
    }
    return n;
}

static void check_ids(const char *what, const int32_t *got, int n_got, const int32_t *want, int n_want) {
    int same = n_got == n_want;
    for (int i = 0; same && i < n_got; i++) same = got[i] == want[i];
    if (!same) {
        QT_FAIL_AT("%s: ids differ (got %d, want %d)", what, n_got, n_want);
        fprintf(stderr, "    got :");
        for (int i = 0; i < n_got && i < 40; i++) fprintf(stderr, " %d", got[i]);
        fprintf(stderr, "\n    want:");
        for (int i = 0; i < n_want && i < 40; i++) fprintf(stderr, " %d", want[i]);
        fprintf(stderr, "\n");
    }
}

static void test_reference_strings(void) {
    size_t n_str, n_ids;
    char *strs = qt_test_read(qt_test_shared("reference/llamacpp/tokenize-strings.bin"), &n_str);
    char *ids_txt = qt_test_read(qt_test_shared("reference/llamacpp/tokenize-ids.txt"), &n_ids);
    const char *line = ids_txt, *start = strs;
    int count = 0;
    for (size_t i = 0; i <= n_str; i++) {
        if (i < n_str && strs[i] != 0x1E) continue;
        size_t len = (size_t)(strs + i - start);
        int32_t want[256], *got;
        int n_want = parse_ids(line, want, 256), n_got;
        CHECK_OK(qt_tokenize(g_tok, start, len, true, &got, &n_got));
        char what[64];
        snprintf(what, sizeof what, "string %d (%zu bytes)", count, len);
        check_ids(what, got, n_got, want, n_want);
        /* Round trip: the prefix space is dropped again, bytes come back exactly. */
        char *back;
        size_t back_len;
        CHECK_OK(qt_detokenize(g_tok, got, n_got, &back, &back_len));
        CHECK_MSG(back_len == len && !memcmp(back, start, len), "%s: decode gives '%s'", what, back);
        free(back);
        free(got);
        count++;
        start = strs + i + 1;
        line = strchr(line, '\n');
        line = line ? line + 1 : "";
    }
    CHECK_EQ_INT(count, 14);
    free(strs);
    free(ids_txt);
}

static void test_logits_prefix(void) {
    size_t n_text, n_ids;
    char *text = qt_test_read(qt_test_shared("reference/llamacpp/logits-prefix.txt"), &n_text);
    char *ids_txt = qt_test_read(qt_test_shared("reference/llamacpp/logits-tokens-128.txt"), &n_ids);
    int32_t want[256], *got;
    int n_want = parse_ids(ids_txt, want, 256), n_got;
    CHECK_EQ_INT(n_want, 128);
    CHECK_OK(qt_tokenize(g_tok, text, n_text, true, &got, &n_got));
    CHECK(n_got >= 128);
    if (n_got >= 128) check_ids("logits prefix", got, 128, want, 128);
    free(got);
    free(text);
    free(ids_txt);
}

static void test_greedy_prompts(void) {
    size_t n;
    char *tsv = qt_test_read(qt_test_shared("reference/llamacpp/greedy.tsv"), &n);
    int rows = 0;
    for (char *line = tsv; line && *line; rows++) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        char *prompt = strchr(line, '\t');
        char *ids = prompt ? strchr(prompt + 1, '\t') : NULL;
        CHECK(prompt && ids);
        if (!prompt || !ids) break;
        prompt++;
        int32_t want[256], *got;
        int n_want = parse_ids(ids + 1, want, 256), n_got;
        CHECK_OK(qt_tokenize(g_tok, prompt, (size_t)(ids - prompt), true, &got, &n_got));
        check_ids(prompt, got, n_got, want, n_want);
        free(got);
        line = nl ? nl + 1 : NULL;
    }
    CHECK(rows >= 3);
    free(tsv);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void check_corpus(const char *rel, int want) {
    size_t n;
    char *text = qt_test_read(qt_test_shared(rel), &n);
    int32_t *ids;
    int n_ids;
    double t0 = now_s();
    CHECK_OK(qt_tokenize(g_tok, text, n, true, &ids, &n_ids));
    double t1 = now_s();
    CHECK_EQ_INT(n_ids, want);
    char *back;
    size_t back_len;
    CHECK_OK(qt_detokenize(g_tok, ids, n_ids, &back, &back_len));
    CHECK_MSG(back_len == n && !memcmp(back, text, n), "%s: decode(encode(text)) differs from the text", rel);
    fprintf(stderr, "    %s: %zu bytes -> %d tokens in %.3f s\n", rel, n, n_ids, t1 - t0);
    free(back);
    free(ids);
    free(text);
}

static void test_corpus_counts(void) {
    check_corpus("data/tinystories-valid-first1000.txt", 393019);
    check_corpus("data/wiki.test.raw", 809290);
}

static void test_pieces(void) {
    char buf[16];
    CHECK_EQ_INT(qt_token_to_piece(g_tok, 1, buf, sizeof buf), 0);     /* <s>: control */
    CHECK_EQ_INT(qt_token_to_piece(g_tok, 0, buf, sizeof buf), 0);     /* <unk> */
    CHECK_EQ_INT(qt_token_to_piece(g_tok, 13, buf, sizeof buf), 1);    /* <0x0A> */
    CHECK_EQ_INT(buf[0], '\n');
    CHECK_EQ_INT(qt_token_to_piece(g_tok, 403, buf, sizeof buf), 5);   /* "▁Once" */
    CHECK(!memcmp(buf, " Once", 5));
    CHECK_EQ_INT(qt_token_to_piece(g_tok, 403, buf, 2), 5);            /* truncated copy, full length */
    CHECK_EQ_INT(qt_token_to_piece(g_tok, 512, buf, sizeof buf), -1);
    CHECK_EQ_INT(qt_token_to_piece(g_tok, -1, buf, sizeof buf), -1);
    int32_t bad[] = {1, 600};
    char *text;
    CHECK_STATUS(qt_detokenize(g_tok, bad, 2, &text, NULL), QT_ERR_RANGE);
    /* Without BOS the first piece still loses the prefix space; EOS decodes to nothing. */
    int32_t seq[] = {403, 407, 2};
    CHECK_OK(qt_detokenize(g_tok, seq, 3, &text, NULL));
    CHECK_EQ_STR(text, "Once upon");
    free(text);
}

static void test_flags(void) {
    int32_t *ids;
    int n;
    /* No BOS, but the prefix space stays (llama.cpp adds it for the first fragment). */
    CHECK_OK(qt_tokenize(g_tok, "Once upon a time", 16, false, &ids, &n));
    CHECK_EQ_INT(n, 4);
    if (n == 4) CHECK_EQ_INT(ids[0], 403);
    free(ids);
    /* "A" is "▁" + "A" (no "▁A" piece), as in the reference strings. */
    CHECK_OK(qt_tokenize_ex(g_tok, "A", 1, QT_TOKENIZE_ADD_BOS | QT_TOKENIZE_ADD_EOS, &ids, &n));
    CHECK_EQ_INT(n, 4);
    if (n == 4) { CHECK_EQ_INT(ids[0], 1); CHECK_EQ_INT(ids[1], 410); CHECK_EQ_INT(ids[2], 447); CHECK_EQ_INT(ids[3], 2); }
    free(ids);
    /* Control tokens in the text: plain text by default, parsed on request
     * (and the text after a special token gets the prefix space again). */
    CHECK_OK(qt_tokenize_ex(g_tok, "<s>A</s>", 8, QT_TOKENIZE_PARSE_SPECIAL, &ids, &n));
    CHECK_EQ_INT(n, 4);
    if (n == 4) { CHECK_EQ_INT(ids[0], 1); CHECK_EQ_INT(ids[1], 410); CHECK_EQ_INT(ids[2], 447); CHECK_EQ_INT(ids[3], 2); }
    free(ids);
    CHECK_OK(qt_tokenize_ex(g_tok, "<s>A", 4, 0, &ids, &n));
    CHECK(n > 2);
    if (n > 2) CHECK(ids[0] != 1);
    free(ids);
    /* Empty text: just BOS (llama.cpp). */
    CHECK_OK(qt_tokenize(g_tok, "", 0, true, &ids, &n));
    CHECK_EQ_INT(n, 1);
    free(ids);
    CHECK_OK(qt_tokenize(g_tok, "", 0, false, &ids, &n));
    CHECK_EQ_INT(n, 0);
    free(ids);
}

/* The SentencePiece-as-HF shape (docs/tokenizers.md): a Unigram model with
 * [piece, score] pairs must read back into the identical vocabulary. */
static void test_unigram_json_roundtrip(void) {
    const qt_vocab *v = &g_vocab.v;
    json_t *vocab = json_array(), *added = json_array();
    for (int i = 0; i < v->n_tokens; i++) {
        json_array_append_new(vocab, json_pack("[s, f]", v->tokens[i], (double)v->scores[i]));
        if (v->token_types[i] == QT_TOKEN_CONTROL || v->token_types[i] == QT_TOKEN_UNKNOWN)
            json_array_append_new(added, json_pack("{s:i, s:s, s:b, s:b, s:b, s:b, s:b}", "id", i, "content", v->tokens[i],
                                                   "single_word", 0, "lstrip", 0, "rstrip", 0, "normalized", 0, "special", 1));
    }
    json_t *root = json_pack(
        "{s:s, s:n, s:n, s:o, s:{s:s, s:[{s:s, s:s}, {s:s, s:{s:s}, s:s}]}, s:n, s:n, s:o, s:{s:s, s:i, s:o, s:b}}",
        "version", "1.0", "truncation", "padding", "added_tokens", added, "normalizer", "type", "Sequence", "normalizers",
        "type", "Prepend", "prepend", "\xE2\x96\x81", "type", "Replace", "pattern", "String", " ", "content", "\xE2\x96\x81",
        "pre_tokenizer", "post_processor", "decoder", json_pack("{s:s}", "type", "ByteFallback"), "model", "type", "Unigram",
        "unk_id", 0, "vocab", vocab, "byte_fallback", 1);
    CHECK(root != NULL);
    char path[512], cfg[512];
    snprintf(path, sizeof path, "%s/tokenizer.json", qt_test_tmpdir());
    snprintf(cfg, sizeof cfg, "%s/tokenizer_config.json", qt_test_tmpdir());
    CHECK(json_dump_file(root, path, JSON_INDENT(1)) == 0);
    json_t *c = json_pack("{s:s, s:s, s:s, s:b, s:b}", "bos_token", "<s>", "eos_token", "</s>", "unk_token", "<unk>",
                          "add_bos_token", 1, "add_eos_token", 0);
    CHECK(json_dump_file(c, cfg, 0) == 0);
    json_decref(root);
    json_decref(c);

    qt_model *m;
    CHECK_OK(qt_model_open_tokenizer_json(path, &m));
    if (!m) return;
    const qt_vocab *r = qt_model_vocab(m);
    CHECK_EQ_INT(r->kind, QT_VOCAB_SPM);
    CHECK_EQ_INT(r->n_tokens, 512);
    int diff = 0;
    for (int i = 0; i < 512 && r->n_tokens == 512; i++) {
        uint32_t a, b;
        memcpy(&a, &r->scores[i], 4);
        memcpy(&b, &v->scores[i], 4);
        diff += strcmp(r->tokens[i], v->tokens[i]) != 0 || a != b || r->token_types[i] != v->token_types[i];
    }
    CHECK_EQ_INT(diff, 0);
    CHECK_EQ_INT(r->bos_id, 1);
    CHECK_EQ_INT(r->eos_id, 2);
    CHECK_EQ_INT(r->unk_id, 0);
    CHECK(r->add_bos);
    CHECK(!r->add_eos);
    CHECK(r->add_space_prefix);
    qt_tokenizer *t2;
    CHECK_OK(qt_tokenizer_new(r, &t2));
    size_t n;
    char *text = qt_test_read(qt_test_shared("reference/llamacpp/logits-prefix.txt"), &n);
    int32_t *a, *b;
    int na, nb;
    CHECK_OK(qt_tokenize(g_tok, text, n, true, &a, &na));
    CHECK_OK(qt_tokenize(t2, text, n, true, &b, &nb));
    check_ids("unigram json", b, nb, a, na);
    free(a);
    free(b);
    free(text);
    qt_tokenizer_free(t2);
    qt_model_free(m);
}

/* The same vocabulary read from stories260K.gguf by qt_model_open: identical
 * tokens, scores (bitwise), types and special ids, hence identical ids. */
static void test_gguf_vocab(void) {
    qt_model *m = NULL;
    CHECK_OK(qt_model_open(qt_test_shared("models/stories260K.gguf"), &m));
    if (!m) return;
    const qt_vocab *r = qt_model_vocab(m), *v = &g_vocab.v;
    CHECK_EQ_INT(r->kind, QT_VOCAB_SPM);
    CHECK_EQ_INT(r->n_tokens, 512);
    int diff = 0;
    for (int i = 0; i < 512 && r->n_tokens == 512 && r->scores && r->token_types; i++) {
        uint32_t a, b;
        memcpy(&a, &r->scores[i], 4);
        memcpy(&b, &v->scores[i], 4);
        diff += strcmp(r->tokens[i], v->tokens[i]) != 0 || a != b || r->token_types[i] != v->token_types[i];
    }
    CHECK_EQ_INT(diff, 0);
    CHECK_EQ_INT(r->bos_id, 1);
    CHECK_EQ_INT(r->eos_id, 2);
    CHECK_EQ_INT(r->unk_id, 0);
    CHECK(r->add_bos);
    CHECK(r->add_space_prefix);
    qt_tokenizer *t2;
    CHECK_OK(qt_tokenizer_new(r, &t2));
    if (t2) {
        size_t n;
        char *text = qt_test_read(qt_test_shared("reference/llamacpp/tokenize-strings.bin"), &n);
        int32_t *a, *b;
        int na, nb;
        CHECK_OK(qt_tokenize(g_tok, text, n, true, &a, &na));
        CHECK_OK(qt_tokenize(t2, text, n, true, &b, &nb));
        check_ids("gguf vocabulary", b, nb, a, na);
        free(a);
        free(b);
        free(text);
        qt_tokenizer_free(t2);
    }
    qt_model_free(m);
}

int main(void) {
    load_tok512(&g_vocab);
    if (qt_tokenizer_new(&g_vocab.v, &g_tok) != QT_OK) {
        fprintf(stderr, "qt_tokenizer_new: %s\n", qt_last_error());
        return 1;
    }
    QT_RUN(test_reference_strings);
    QT_RUN(test_logits_prefix);
    QT_RUN(test_greedy_prompts);
    QT_RUN(test_corpus_counts);
    QT_RUN(test_pieces);
    QT_RUN(test_flags);
    QT_RUN(test_unigram_json_roundtrip);
    QT_RUN(test_gguf_vocab);
    qt_tokenizer_free(g_tok);
    for (int i = 0; i < 512; i++) free(g_vocab.store[i]);
    return qt_test_finish("test_tokenize_spm");
}
