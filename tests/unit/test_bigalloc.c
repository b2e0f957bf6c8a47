/* qt__weights_alloc (lib/core/bigalloc.h): 64-byte alignment below 2 MiB, 2 MiB from there
 * on (the huge-page case), every byte writable and kept, zero and odd sizes. */
#include <stdint.h>
#include <string.h>

#include "core/bigalloc.h"
#include "qtest.h"

static void test_alignment_and_contents(void) {
    const size_t sizes[] = {0, 1, 63, 4097, ((size_t)2 << 20) - 1, (size_t)2 << 20, ((size_t)5 << 20) + 123};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint8_t *p = qt__weights_alloc(sizes[i]);
        CHECK_MSG(p != NULL, "%zu bytes: NULL", sizes[i]);
        if (!p) continue;
        const size_t rounded = (sizes[i] + 63) & ~(size_t)63; /* what the allocation holds */
        const size_t align = rounded >= ((size_t)2 << 20) ? (size_t)2 << 20 : 64;
        CHECK_MSG((uintptr_t)p % align == 0, "%zu bytes at %p: not %zu-aligned", sizes[i], (void *)p, align);
        for (size_t k = 0; k < sizes[i]; k++) p[k] = (uint8_t)(k * 131 + 7);
        size_t bad = 0;
        for (size_t k = 0; k < sizes[i]; k++) bad += p[k] != (uint8_t)(k * 131 + 7);
        CHECK_MSG(bad == 0, "%zu bytes: %zu bytes changed", sizes[i], bad);
        qt__weights_free(p);
    }
    qt__weights_free(NULL);
}

int main(void) {
    QT_RUN(test_alignment_and_contents);
    return qt_test_finish("test_bigalloc");
}
