/* libFuzzer target: the GGUF parser and the GGUF -> qt_model reader on
 * arbitrary bytes. Every input must either load or fail with a message that
 * names the input; anything else (crash, sanitizer report, leak) is a bug.
 * Seeds: tests/fuzz/corpus/fuzz_gguf/ (tiny valid files). */
#include <stdio.h>
#include <stdlib.h>

#include "io/io_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    qt_model *m;
    if (qt__model_new("fuzz.gguf", "gguf", &m) != QT_OK) return 0;
    qt_status s = qt__read_gguf_mem(m, data, size, -1);
    if (s != QT_OK && strncmp(qt_last_error(), "fuzz.gguf: ", 11) != 0) {
        fprintf(stderr, "error message does not name the input: %s\n", qt_last_error());
        abort();
    }
    if (s == QT_OK) {
        /* Touch what a consumer would: every tensor's bytes and the vocabulary. */
        volatile uint8_t sink = 0;
        for (int32_t i = 0; i < qt_model_n_tensors(m); i++) {
            const qt_tensor *t = qt_model_tensor(m, i);
            if (t->nbytes) sink ^= ((const uint8_t *)t->data)[0] ^ ((const uint8_t *)t->data)[t->nbytes - 1];
        }
        const qt_vocab *v = qt_model_vocab(m);
        for (int32_t i = 0; i < v->n_tokens; i++) sink ^= (uint8_t)v->tokens[i][0];
        (void)sink;
    }
    qt_model_free(m);
    return 0;
}
