/* libFuzzer target: the safetensors reader (lib/io/safetensors.c) on arbitrary
 * bytes. Accepted files must describe tensors that lie inside the buffer,
 * back to back from the end of the header, with consistent sizes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quanta/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    qt_safetensors *st;
    if (qt_st_parse(data, size, "fuzz.safetensors", &st) != QT_OK) {
        if (!qt_last_error()[0]) abort(); /* every refusal carries a message */
        return 0;
    }
    uint64_t expect = 8 + qt_st_header_len(st), sum = 0;
    for (int32_t i = 0; i < qt_st_n_tensors(st); i++) {
        const qt_st_tensor *t = qt_st_tensor_at(st, i);
        if (t->file_offset != expect || t->end < t->begin || t->file_offset + (t->end - t->begin) > size) abort();
        const uint8_t *p = t->data;
        for (uint64_t k = 0; k < t->end - t->begin; k++) sum += p[k]; /* touch every byte: ASan checks bounds */
        expect += t->end - t->begin;
        if (qt_st_find(st, t->name) == NULL) abort();
    }
    if (expect != size) abort();
    for (int32_t i = 0; i < qt_st_n_metadata(st); i++)
        if (strcmp(qt_st_metadata_get(st, qt_st_metadata_key(st, i)), qt_st_metadata_value(st, i))) abort();
    qt_st_close(st);
    return (int)(sum & 0);
}
