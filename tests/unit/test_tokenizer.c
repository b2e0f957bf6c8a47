/* tests/unit/test_tokenizer.c — byte-level BPE and the HF tokenizer.json
 * loader on small hand-made vocabularies (the real Llama 3 / Qwen3 files are
 * checked against an independent encoder in tests/interop), plus the UTF-8
 * repair rule, the byte-level alphabet and error messages. */
#include <jansson.h>

#include "model/model_internal.h"
#include "model/tok_internal.h"
#include "qtest.h"

/* ---- helpers ------------------------------------------------------------------- */

static char *byte_char(uint8_t b, char out[4]) {
    size_t n = qt__utf8_encode(qt__byte_to_cp(b), out);
    out[n] = 0;
    return out;
}

/* A byte-level text: every byte of s through the alphabet. */
static void bl(const char *s, char *out) {
    char c[4];
    out[0] = 0;
    for (; *s; s++) strcat(out, byte_char((uint8_t)*s, c));
}

/* tokenizer.json for a byte-level BPE: ids 0..255 are the bytes (in byte
 * order), then one token per merge. Merges are given as raw "left|right" byte
 * strings, written through the byte-level alphabet as "a b" strings (or
 * [a, b] pairs when pair_form). */
static const char *write_bpe_json(const char *name, const char *regex, bool nfc, int ignore_merges, const char *const *merges,
                                  bool pair_form, const char *added_json, const char *config_json) {
    json_t *vocab = json_object();
    char c[4], t[520];
    for (int b = 0; b < 256; b++) json_object_set_new(vocab, byte_char((uint8_t)b, c), json_integer(b));
    json_t *jm = json_array();
    int next = 256;
    for (int i = 0; merges[i]; i++) {
        char l[128], r[128], bl_l[256], bl_r[256];
        const char *sp = strchr(merges[i], '|');
        if (!sp) { QT_FAIL_AT("merge spec '%s' has no '|'", merges[i]); continue; }
        snprintf(l, sizeof l, "%.*s", (int)(sp - merges[i]), merges[i]);
        snprintf(r, sizeof r, "%s", sp + 1);
        bl(l, bl_l);
        bl(r, bl_r);
        snprintf(t, sizeof t, "%s%s", bl_l, bl_r);
        if (!json_object_get(vocab, t)) json_object_set_new(vocab, t, json_integer(next++));
        if (pair_form) json_array_append_new(jm, json_pack("[s, s]", bl_l, bl_r));
        else {
            char m[600];
            snprintf(m, sizeof m, "%s %s", bl_l, bl_r);
            json_array_append_new(jm, json_string(m));
        }
    }
    json_error_t err;
    json_t *added = json_loads(added_json ? added_json : "[]", 0, &err);
    json_t *pre = regex ? json_pack("{s:s, s:[{s:s, s:{s:s}, s:s, s:b}, {s:s, s:b, s:b, s:b}]}", "type", "Sequence", "pretokenizers",
                                    "type", "Split", "pattern", "Regex", regex, "behavior", "Isolated", "invert", 0, "type",
                                    "ByteLevel", "add_prefix_space", 0, "trim_offsets", 1, "use_regex", 0)
                        : json_pack("{s:s, s:b, s:b, s:b}", "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets", 1, "use_regex", 1);
    json_t *model = json_pack("{s:s, s:o, s:o}", "type", "BPE", "vocab", vocab, "merges", jm);
    if (ignore_merges >= 0) json_object_set_new(model, "ignore_merges", json_boolean(ignore_merges));
    json_t *root = json_pack("{s:o, s:o, s:o, s:o, s:{s:s}}", "added_tokens", added, "normalizer",
                             nfc ? json_pack("{s:s}", "type", "NFC") : json_null(), "pre_tokenizer", pre, "model", model,
                             "decoder", "type", "ByteLevel");
    static char path[8][600];
    static int k;
    char *p = path[k++ & 7];
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", qt_test_tmpdir(), name);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    CHECK(system(cmd) == 0);
    snprintf(p, 600, "%s/tokenizer.json", dir);
    CHECK(json_dump_file(root, p, 0) == 0);
    json_decref(root);
    char cfg[600];
    snprintf(cfg, sizeof cfg, "%s/tokenizer_config.json", dir);
    remove(cfg);
    if (config_json) {
        FILE *f = fopen(cfg, "w");
        fputs(config_json, f);
        fclose(f);
    }
    return p;
}

static const char *RE_LLAMA3 =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char *RE_QWEN2 =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

typedef struct loaded {
    qt_model *m;
    qt_tokenizer *t;
} loaded;

static loaded load(const char *path) {
    loaded l = {0};
    CHECK_OK(qt_model_open_tokenizer_json(path, &l.m));
    if (l.m) CHECK_OK(qt_tokenizer_new(qt_model_vocab(l.m), &l.t));
    return l;
}

static void unload(loaded *l) {
    qt_tokenizer_free(l->t);
    qt_model_free(l->m);
}

/* Encode and render as the tokens' texts mapped back to bytes, "|"-separated. */
static const char *enc(const loaded *l, const char *text, size_t len, unsigned flags) {
    static char out[4096];
    out[0] = 0;
    if (!l->t) return "(no tokenizer)";
    int32_t *ids, n;
    if (qt_tokenize_ex(l->t, text, len, flags, &ids, &n) != QT_OK) return qt_last_error();
    for (int32_t i = 0; i < n; i++) {
        char piece[256];
        int32_t k = qt_token_to_piece(l->t, ids[i], piece, sizeof piece);
        if (k == 0) k = snprintf(piece, sizeof piece, "#%d", ids[i]); /* control tokens: show the id */
        if (i) strcat(out, "|");
        strncat(out, piece, (size_t)k);
    }
    free(ids);
    return out;
}
#define ENC(l, s) enc(l, s, strlen(s), 0)

/* ---- tests ----------------------------------------------------------------------- */

static void test_byte_alphabet(void) {
    CHECK_EQ_INT(qt__byte_to_cp(0x00), 0x100);
    CHECK_EQ_INT(qt__byte_to_cp(0x09), 0x109);
    CHECK_EQ_INT(qt__byte_to_cp(0x0A), 0x10A);
    CHECK_EQ_INT(qt__byte_to_cp(0x20), 0x120);
    CHECK_EQ_INT(qt__byte_to_cp(0x21), 0x21);
    CHECK_EQ_INT(qt__byte_to_cp(0x7F), 0x121);
    CHECK_EQ_INT(qt__byte_to_cp(0x80), 0x122);
    CHECK_EQ_INT(qt__byte_to_cp(0xA0), 0x142);
    CHECK_EQ_INT(qt__byte_to_cp(0xAD), 0x143);
    CHECK_EQ_INT(qt__byte_to_cp(0xFF), 0xFF);
    int bad = 0;
    for (int b = 0; b < 256; b++) bad += qt__cp_to_byte(qt__byte_to_cp((uint8_t)b)) != b;
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(qt__cp_to_byte(0x144), -1);
    CHECK_EQ_INT(qt__cp_to_byte(0x20), -1);
}

static void check_repair(const char *in, size_t n, const char *want) {
    size_t out_n;
    bool oom;
    char *r = qt__utf8_repair(in, n, &out_n, &oom);
    CHECK(!oom);
    if (!want) { CHECK_MSG(r == NULL, "well-formed input was changed"); free(r); return; }
    CHECK_MSG(r && out_n == strlen(want) && !memcmp(r, want, out_n), "repair of %zu bytes gave '%s', want '%s'", n, r ? r : "(none)", want);
    free(r);
}

#define FFFD "\xEF\xBF\xBD"
static void test_utf8_repair(void) {
    check_repair("plain ascii", 11, NULL);
    check_repair("caf\xC3\xA9 \xF0\x9F\x99\x82", 10, NULL);
    check_repair("a\x80" "b", 3, "a" FFFD "b");
    check_repair("\xE2\x82", 2, FFFD);                    /* truncated: one maximal subpart */
    check_repair("\xE2\x82x", 3, FFFD "x");
    check_repair("\xF0\x9F\x99", 3, FFFD);
    check_repair("\xED\xA0\x80", 3, FFFD FFFD FFFD);      /* surrogate: ED alone, then two strays */
    check_repair("\xC0\x80", 2, FFFD FFFD);               /* overlong lead byte is never valid */
    check_repair("\xE0\x80\x80", 3, FFFD FFFD FFFD);
    check_repair("\xF4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD);
    check_repair("\xF5x\xFF", 3, FFFD "x" FFFD);
    check_repair("\xC3\xA9\xA9", 3, "\xC3\xA9" FFFD);
}

static const char *const no_merges[] = {NULL};

static void test_merge_order(void) {
    /* Lowest rank first; equal ranks leftmost first. */
    const char *const merges[] = {"b|c", "a|b", "a|a", "x|y", "xy|z", "x|yz", "y|z", NULL};
    loaded l = load(write_bpe_json("order", RE_QWEN2, true, 0, merges, false, NULL, NULL));
    CHECK_EQ_STR(ENC(&l, "abc"), "a|bc");
    CHECK_EQ_STR(ENC(&l, "aaa"), "aa|a");
    CHECK_EQ_STR(ENC(&l, "aaaa"), "aa|aa");
    CHECK_EQ_STR(ENC(&l, "ab"), "ab");
    /* "xyz": "x y" (rank 3) beats "y z" (rank 6); then "xy z" (rank 4). */
    CHECK_EQ_STR(ENC(&l, "xyz"), "xyz");
    CHECK_EQ_STR(ENC(&l, "qq"), "q|q");
    unload(&l);
    /* Same table written as [a, b] pairs gives the same ids. */
    loaded p = load(write_bpe_json("order_pairs", RE_QWEN2, true, 0, merges, true, NULL, NULL));
    CHECK_EQ_STR(ENC(&p, "abc"), "a|bc");
    CHECK_EQ_STR(ENC(&p, "xyz"), "xyz");
    if (p.m) CHECK_EQ_INT(qt_model_vocab(p.m)->n_merges, 7);
    unload(&p);
}

static void test_pretokenizers(void) {
    /* "s|a" ranks before "'|s": "'sa" as one pre-token would give "'|sa", the contraction "'s|a" */
    const char *const merges[] = {"1|2", "12|3", "123|4", "4|5", "s|a", "S|a", "\xC5|\xBF", "\xC5\xBF|a", "'|s", "'|S",
                                  "'|\xC5\xBF", "h|i", "hi|'s", " | ", "  | ", " |a", "\xC2|\x85", "\xC2\x85|\xC2\x85", "\xC2\x85|b",
                                  "\xEF|\xBB", "\xEF\xBB|\xBF", "\xEF\xBB\xBF|b", NULL};
    loaded l3 = load(write_bpe_json("llama3", RE_LLAMA3, false, 1, merges, false, NULL, NULL));
    loaded q2 = load(write_bpe_json("qwen2", RE_QWEN2, true, 0, merges, false, NULL, NULL));
    loaded g2 = load(write_bpe_json("gpt2", NULL, false, -1, merges, false, NULL, NULL));
    if (l3.m) CHECK_EQ_STR(qt_model_vocab(l3.m)->pre, "llama-bpe");
    if (q2.m) CHECK_EQ_STR(qt_model_vocab(q2.m)->pre, "qwen2");
    if (g2.m) CHECK_EQ_STR(qt_model_vocab(g2.m)->pre, "gpt-2");
    /* digits: Llama 3 groups of 3, Qwen2 single digits, GPT-2 whole runs */
    CHECK_EQ_STR(ENC(&l3, "12345"), "123|45");
    CHECK_EQ_STR(ENC(&q2, "12345"), "1|2|3|4|5");
    CHECK_EQ_STR(ENC(&g2, "12345"), "1234|5");
    /* contractions are pre-tokens of their own ("hi|'s" would merge otherwise), case-insensitively */
    CHECK_EQ_STR(ENC(&l3, "hi's"), "hi|'s");
    CHECK_EQ_STR(ENC(&l3, "hi'sa"), "hi|'s|a");
    CHECK_EQ_STR(ENC(&l3, "hi'Sa"), "hi|'S|a");
    CHECK_EQ_STR(ENC(&l3, "hi'xsa"), "hi|'|x|sa"); /* no contraction: "'xsa" is one pre-token */
    CHECK_EQ_STR(ENC(&q2, "hi'\xC5\xBF" "a"), "hi|'\xC5\xBF|a"); /* U+017F LONG S folds to 's', as in Oniguruma */
    /* whitespace: a run before a word leaves its last space to the word */
    CHECK_EQ_STR(ENC(&l3, "   a"), "  | a");
    CHECK_EQ_STR(ENC(&l3, "x   "), "x|   ");
    CHECK_EQ_STR(ENC(&l3, "a\n\n b"), "a|\n|\n| |b");
    /* U+0085 is White_Space (as in HF tokenizers and tiktoken); U+FEFF is not */
    CHECK_EQ_STR(ENC(&l3, "a\xC2\x85\xC2\x85" "b"), "a|\xC2\x85|\xC2\x85" "b");
    CHECK_EQ_STR(ENC(&l3, "a\xEF\xBB\xBF" "b"), "a|\xEF\xBB\xBF" "b");
    unload(&l3);
    unload(&q2);
    unload(&g2);
}

static void test_ignore_merges_nfc_invalid(void) {
    /* "abc" is a token but no merge builds it: only Llama 3 (ignore_merges) emits it whole. */
    const char *const merges[] = {"ab|c", NULL};
    loaded l3 = load(write_bpe_json("im_l3", RE_LLAMA3, false, 1, merges, false, NULL, NULL));
    loaded q2 = load(write_bpe_json("im_q2", RE_QWEN2, true, 0, merges, false, NULL, NULL));
    CHECK_EQ_STR(ENC(&l3, "abc"), "abc");
    CHECK_EQ_STR(ENC(&q2, "abc"), "a|b|c");
    /* Qwen2 normalises to NFC, Llama 3 does not */
    CHECK_EQ_STR(ENC(&q2, "e\xCC\x81"), "\xC3|\xA9");
    CHECK_EQ_STR(ENC(&l3, "e\xCC\x81"), "e|\xCC|\x81");
    /* ill-formed UTF-8 becomes U+FFFD */
    CHECK_EQ_STR(enc(&l3, "a\x80", 2, 0), "a|\xEF|\xBF|\xBD");
    /* NUL bytes are text: byte 0 is token 0 here */
    int32_t *ids = NULL, n = 0;
    if (q2.t) CHECK_OK(qt_tokenize(q2.t, "a\0b", 3, false, &ids, &n));
    CHECK_EQ_INT(n, 3);
    if (n == 3) CHECK_EQ_INT(ids[1], 0);
    free(ids);
    unload(&l3);
    unload(&q2);
}

static void test_added_tokens(void) {
    const char *added = "[{\"id\": 300, \"content\": \"<|ctl|>\", \"special\": true},"
                        " {\"id\": 301, \"content\": \"<u>\", \"special\": false},"
                        " {\"id\": 302, \"content\": \"<|look|>\", \"special\": false},"
                        " {\"id\": 303, \"content\": \"<bos>\", \"special\": true}]";
    const char *cfg = "{\"bos_token\": \"<bos>\", \"eos_token\": {\"content\": \"<|ctl|>\"}, \"model_max_length\": 1e30,"
                      " \"chat_template\": \"{{ x }}\"}";
    loaded l = load(write_bpe_json("added", RE_LLAMA3, false, 1, no_merges, false, added, cfg));
    if (!l.m) return;
    const qt_vocab *v = qt_model_vocab(l.m);
    CHECK_EQ_INT(v->kind, QT_VOCAB_BPE);
    CHECK_EQ_INT(v->n_tokens, 304);
    CHECK_EQ_STR(v->tokens[256], "[PAD256]");           /* ids missing from the file */
    CHECK_EQ_INT(v->token_types[256], QT_TOKEN_UNUSED);
    CHECK_EQ_INT(v->token_types[300], QT_TOKEN_CONTROL);
    CHECK_EQ_INT(v->token_types[301], QT_TOKEN_USER_DEFINED);
    CHECK_EQ_INT(v->token_types[302], QT_TOKEN_CONTROL); /* looks special: llama.cpp's converter marks it CONTROL */
    CHECK_EQ_INT(v->bos_id, 303);
    CHECK_EQ_INT(v->eos_id, 300);
    CHECK(v->add_bos);                                    /* llama-bpe default when add_bos_token is absent */
    CHECK_EQ_STR(v->chat_template, "{{ x }}");
    /* user-defined tokens always split out; control tokens only with PARSE_SPECIAL */
    CHECK_EQ_STR(ENC(&l, "a<u>b"), "a|<u>|b");
    CHECK_EQ_STR(ENC(&l, "a<|ctl|>"), "a|<|||c|t|l|||>");
    CHECK_EQ_STR(enc(&l, "a<|ctl|>", 8, QT_TOKENIZE_PARSE_SPECIAL), "a|#300");
    CHECK_EQ_STR(enc(&l, "a", 1, QT_TOKENIZE_ADD_BOS | QT_TOKENIZE_ADD_EOS), "#303|a|#300");
    /* decoding: control tokens vanish, user-defined ones are their text */
    int32_t ids[] = {303, 'H', 301, 300, 0x20 /* byte 0x20 = "Ġ" */};
    char *text;
    CHECK_OK(qt_detokenize(l.t, ids, 5, &text, NULL));
    CHECK_EQ_STR(text, "H<u> ");
    free(text);
    unload(&l);
}

static void test_roundtrip_random(void) {
    const char *const merges[] = {"t|h", "th|e", " |t", " t|he", "i|n", " |a", "e|r", NULL};
    loaded l = load(write_bpe_json("rt", RE_LLAMA3, false, 1, merges, false, NULL, NULL));
    if (!l.t) return;
    uint32_t s = 12345;
    int bad = 0;
    for (int k = 0; k < 300; k++) {
        char buf[64];
        int n = 1 + k % 60;
        for (int i = 0; i < n; i++) {
            s = s * 1664525u + 1013904223u;
            const char *pool = "the in a er \n\t1234'sTHE";
            buf[i] = (k % 3 == 0) ? (char)(s >> 24) : pool[(s >> 24) % 24];
        }
        int32_t *ids, m;
        CHECK_OK(qt_tokenize(l.t, buf, (size_t)n, false, &ids, &m));
        char *back;
        size_t back_n, want_n = (size_t)n;
        bool oom;
        char *want = qt__utf8_repair(buf, (size_t)n, &want_n, &oom);
        CHECK_OK(qt_detokenize(l.t, ids, m, &back, &back_n));
        bad += back_n != want_n || memcmp(back, want ? want : buf, want_n) != 0;
        free(want);
        free(back);
        free(ids);
    }
    CHECK_EQ_INT(bad, 0);
    unload(&l);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void check_load_error(const char *json, qt_status want, const char *needle) {
    char path[512];
    snprintf(path, sizeof path, "%s/bad.json", qt_test_tmpdir());
    write_file(path, json);
    qt_model *m = NULL;
    CHECK_STATUS(qt_model_open_tokenizer_json(path, &m), want);
    CHECK_MSG(strstr(qt_last_error(), needle) && strstr(qt_last_error(), "bad.json"), "message '%s' lacks '%s'", qt_last_error(), needle);
    CHECK(m == NULL);
    qt_model_free(m);
}

static void test_load_errors(void) {
    check_load_error("{\"model\": ", QT_ERR_FORMAT, "not valid JSON");
    check_load_error("{}", QT_ERR_FORMAT, "'model'");
    check_load_error("{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}", QT_ERR_UNSUPPORTED, "WordPiece");
    check_load_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [1]}, \"decoder\": {\"type\": \"ByteLevel\"}}",
                     QT_ERR_FORMAT, "model.merges[0]");
    check_load_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 0}, \"merges\": []}}", QT_ERR_FORMAT, "id 0 used by both");
    check_load_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": {\"type\": \"Sequence\","
                     " \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\w+\"}, \"behavior\": \"Isolated\"},"
                     " {\"type\": \"ByteLevel\", \"use_regex\": false}]}}",
                     QT_ERR_UNSUPPORTED, "Split regex");
    check_load_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}", QT_ERR_UNSUPPORTED, "byte_fallback");
    check_load_error("{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\"]]}}", QT_ERR_FORMAT, "model.vocab[0]");
    qt_model *m = NULL;
    CHECK_STATUS(qt_model_open_tokenizer_json("/nonexistent/tokenizer.json", &m), QT_ERR_IO);
}

static void test_tokenizer_errors(void) {
    char *toks[3] = {"a", "b", "ab"};
    char *merges[1] = {"a b"};
    qt_vocab v = {.kind = QT_VOCAB_BPE, .pre = "llama-bpe", .n_tokens = 3, .tokens = toks, .n_merges = 1, .merges = merges,
                  .bos_id = -1, .eos_id = -1, .unk_id = -1, .pad_id = -1};
    qt_tokenizer *t = NULL;
    CHECK_STATUS(qt_tokenizer_new(&v, &t), QT_ERR_UNSUPPORTED); /* no byte-level alphabet */
    CHECK(strstr(qt_last_error(), "byte 0x00") != NULL);
    snprintf(v.pre, sizeof v.pre, "deepseek-llm");
    CHECK_STATUS(qt_tokenizer_new(&v, &t), QT_ERR_UNSUPPORTED);
    CHECK(strstr(qt_last_error(), "deepseek-llm") != NULL);
    v.kind = QT_VOCAB_NONE;
    CHECK_STATUS(qt_tokenizer_new(&v, &t), QT_ERR_UNSUPPORTED);
    CHECK(t == NULL);
}

/* SentencePiece BPE written as HF BPE with byte_fallback (Llama 2 style):
 * read as SPM, scores from the merge order. */
static void test_spm_bpe_fallback(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/spm_bpe.json", qt_test_tmpdir());
    write_file(path,
               "{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true},"
               " {\"id\": 1, \"content\": \"<s>\", \"special\": true}, {\"id\": 2, \"content\": \"</s>\", \"special\": true}],"
               " \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", \"prepend\": \"\\u2581\"},"
               " {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\\u2581\"}]},"
               " \"pre_tokenizer\": null,"
               " \"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"unk_token\": \"<unk>\","
               " \"vocab\": {\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2, \"<0x0A>\": 3, \"<0x21>\": 4, \"\\u2581\": 5, \"a\": 6, \"b\": 7,"
               " \"\\u2581a\": 8, \"ab\": 9, \"\\u2581ab\": 10},"
               " \"merges\": [\"\\u2581 a\", \"a b\", \"\\u2581a b\"]}}");
    loaded l = load(path);
    if (!l.m) return;
    const qt_vocab *v = qt_model_vocab(l.m);
    CHECK_EQ_INT(v->kind, QT_VOCAB_SPM);
    CHECK(v->add_space_prefix);
    CHECK_EQ_INT(v->token_types[0], QT_TOKEN_UNKNOWN);
    CHECK_EQ_INT(v->token_types[1], QT_TOKEN_CONTROL);
    CHECK_EQ_INT(v->token_types[3], QT_TOKEN_BYTE);
    CHECK_EQ_INT(v->bos_id, 1);
    CHECK_EQ_INT(v->eos_id, 2);
    CHECK(v->add_bos);
    CHECK(v->scores[8] > v->scores[9] && v->scores[9] > v->scores[10]);
    /* "▁a" merges first, so "ab" never forms: ▁ab via "▁a b". */
    CHECK_EQ_STR(ENC(&l, "ab"), " ab");
    CHECK_EQ_STR(enc(&l, "ab\n!", 4, QT_TOKENIZE_ADD_BOS), "#1| ab|\n|!");
    CHECK_EQ_STR(ENC(&l, "c"), " |#0"); /* no byte token for 'c': <unk> */
    unload(&l);
}

int main(void) {
    QT_RUN(test_byte_alphabet);
    QT_RUN(test_utf8_repair);
    QT_RUN(test_merge_order);
    QT_RUN(test_pretokenizers);
    QT_RUN(test_ignore_merges_nfc_invalid);
    QT_RUN(test_added_tokens);
    QT_RUN(test_roundtrip_random);
    QT_RUN(test_load_errors);
    QT_RUN(test_tokenizer_errors);
    QT_RUN(test_spm_bpe_fallback);
    return qt_test_finish("test_tokenizer");
}
