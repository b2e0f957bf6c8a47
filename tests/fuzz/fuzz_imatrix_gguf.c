/* libFuzzer target: the GGUF importance-matrix reader (qt_imatrix_parse on
 * inputs that start with the GGUF magic; the rest belongs to
 * fuzz_imatrix_dat). Every input must either load or fail with a message that
 * names the input; a loaded file must give weights for every entry at its own
 * shape and refuse a wrong one. Seeds: tests/fuzz/corpus/fuzz_imatrix_gguf/. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quanta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 4 || memcmp(data, "GGUF", 4)) return 0;
    qt_imatrix *im;
    qt_status s = qt_imatrix_parse(data, size, "fuzz.imatrix", &im);
    if (s != QT_OK) {
        if (strncmp(qt_last_error(), "fuzz.imatrix: ", 14) != 0) {
            fprintf(stderr, "error message does not name the input: %s\n", qt_last_error());
            abort();
        }
        return 0;
    }
    if (qt_imatrix_format_of(im) != QT_IMATRIX_GGUF || qt_imatrix_n_entries(im) < 1) abort();
    for (int64_t i = 0; i < qt_imatrix_n_entries(im); i++) {
        const qt_imatrix_entry *e = qt_imatrix_entry_at(im, i);
        if (e->n_cols * e->n_counts != e->n_values || qt_imatrix_find(im, e->name) != e) abort();
        float *w = malloc((size_t)e->n_values * sizeof *w);
        if (!w) break;
        if (qt_imatrix_get(im, e->name, e->n_cols, e->n_counts, w) != QT_OK) abort();
        for (int64_t k = 0; k < e->n_values; k++)
            if (!(w[k] >= 0.0f)) abort(); /* weights are never negative or NaN */
        if (qt_imatrix_get(im, e->name, e->n_cols + 1, e->n_counts, w) != QT_ERR_SHAPE) abort();
        free(w);
    }
    for (int64_t i = 0; i < qt_imatrix_n_datasets(im); i++)
        if (!qt_imatrix_dataset(im, i)) abort();
    qt_imatrix_close(im);
    return 0;
}
