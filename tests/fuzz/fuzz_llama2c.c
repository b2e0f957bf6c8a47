/* libFuzzer target: llama2.c checkpoint + tokenizer.bin readers.
 * The input's first byte picks the split: the remaining bytes are cut into
 * a checkpoint and a tokenizer image at a point derived from it, so both
 * parsers (and their interaction through vocab_size) get fuzzed.
 * Seeds: tests/fuzz/corpus/fuzz_llama2c/. */
#include <stdio.h>
#include <stdlib.h>

#include "io/io_internal.h"

static void check_named(qt_status s, const char *name) {
    if (s != QT_OK && !strstr(qt_last_error(), name)) {
        fprintf(stderr, "error message does not name the input: %s\n", qt_last_error());
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3) return 0;
    /* bytes 1..2: little-endian checkpoint length; the rest after it is the tokenizer */
    size_t ck_len = (size_t)data[1] | (size_t)data[2] << 8;
    const uint8_t *body = data + 3;
    size_t n = size - 3;
    if (data[0] & 1) ck_len = n; /* whole input as a checkpoint, no tokenizer */
    if (ck_len > n) ck_len = n;
    qt_model *m;
    if (qt__model_new("fuzz.bin", "llama2c", &m) != QT_OK) return 0;
    qt_status s = qt__read_llama2c_mem(m, body, ck_len, -1, (data[0] & 1) ? NULL : body + ck_len, n - ck_len, "fuzz-tok.bin");
    check_named(s, "fuzz");
    qt_model_free(m);
    /* sniffing must agree with the full parse: a sniffed file is one the reader accepts the size of */
    (void)qt__llama2c_sniff(body, n);
    return 0;
}
