/* qt__weights_alloc (lib/core/bigalloc.h): 64-byte alignment below 2 MiB, 2 MiB from there
 * on (the huge-page case), every byte writable and kept, zero and odd sizes. */
#include <stdint.h>
#include <stdlib.h>
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

#if defined(__linux__)
#include <stdio.h>
#include <unistd.h>
/* The name of the mapping holding address a in /proc/self/maps ("" for anonymous). */
static void mapping_of(const void *a, char *name, size_t cap) {
    snprintf(name, cap, "?");
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        int off = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &off) < 2 || (uintptr_t)a < lo || (uintptr_t)a >= hi) continue;
        snprintf(name, cap, "%s", off > 0 ? line + off : "");
        name[strcspn(name, "\n")] = 0;
        break;
    }
    fclose(f);
}

/* A large buffer is a mapping of its own, never the heap: heap padding before a 2 MiB-aligned
 * block goes back to malloc, load-time scratch is written there and freed, and those pages
 * stay resident beside the weights (bigalloc.c: +82 MB of peak RSS on the 1B w4a16 model). */
static void test_own_mapping(void) {
    /* as after a load: freeing a large block raises glibc's mmap threshold, so a malloc-based
     * buffer of these sizes would come from the heap */
    free(malloc((size_t)24 << 20));
    const size_t sizes[] = {(size_t)2 << 20, ((size_t)9 << 20) + 123};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint8_t *p = qt__weights_alloc(sizes[i]);
        CHECK(p != NULL);
        if (!p) continue;
        memset(p, 1, sizes[i]);
        char first[256], last[256];
        mapping_of(p, first, sizeof first);
        mapping_of(p + sizes[i] - 1, last, sizeof last);
        CHECK_MSG(!strcmp(first, "") && !strcmp(last, ""), "%zu bytes: in mappings \"%s\" .. \"%s\", not anonymous ones "
                  "of its own", sizes[i], first, last);
        qt__weights_free(p);
    }
}
#endif

int main(void) {
    QT_RUN(test_alignment_and_contents);
#if defined(__linux__)
    QT_RUN(test_own_mapping);
#endif
    return qt_test_finish("test_bigalloc");
}
