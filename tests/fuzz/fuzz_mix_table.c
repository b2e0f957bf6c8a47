/* libFuzzer target: the `--sensitivity-cache` file (qt__mix_table_parse,
 * lib/quantize/mix_table.c). Every input must either parse or fail with a
 * message that names the input; a parsed table must have sane groups (1 to
 * 32 distinct types, finite costs >= 0, distinct names) and survive
 * qt__mix_table_format -> parse unchanged. Seeds:
 * tests/fuzz/corpus/fuzz_mix_table/. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quanta.h"
#include "quantize/mix_table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    qt__mix_table t, u;
    if (qt__mix_table_parse((const char *)data, size, "fuzz.table", &t) != QT_OK) {
        if (strncmp(qt_last_error(), "fuzz.table: ", 12) != 0) {
            fprintf(stderr, "error message does not name the input: %s\n", qt_last_error());
            abort();
        }
        return 0;
    }
    if (t.n < 1 || t.n_seq < 1 || t.n_tok < 2) abort();
    for (int32_t g = 0; g < t.n; g++) {
        if (t.g[g].n_types < 1 || t.g[g].n_types > QT__MIX_MAX_TYPES) abort();
        for (int32_t k = 0; k < t.g[g].n_types; k++)
            if (!(t.g[g].cost[k] >= 0) || !isfinite(t.g[g].cost[k]) || !qt_type_get(t.g[g].types[k])) abort();
    }
    char *text;
    if (qt__mix_table_format(&t, &text) != QT_OK) abort();
    if (qt__mix_table_parse(text, strlen(text), "fuzz.table", &u) != QT_OK) {
        fprintf(stderr, "a formatted table does not parse: %s\n", qt_last_error());
        abort();
    }
    if (u.n != t.n || *qt__mix_table_key_diff(&t, &u)) abort();
    for (int32_t g = 0; g < t.n; g++)
        if (strcmp(u.g[g].name, t.g[g].name) || u.g[g].n_types != t.g[g].n_types ||
            memcmp(u.g[g].types, t.g[g].types, (size_t)t.g[g].n_types * sizeof *t.g[g].types) ||
            memcmp(u.g[g].cost, t.g[g].cost, (size_t)t.g[g].n_types * sizeof *t.g[g].cost))
            abort();
    free(text);
    qt__mix_table_free(&t);
    qt__mix_table_free(&u);
    return 0;
}
