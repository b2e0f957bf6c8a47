/* lib/core/bigalloc.c — 2 MiB-aligned, huge-page-advised buffers (bigalloc.h).
 *
 * On Linux a large buffer is a mapping of its own (mmap), trimmed to the page
 * before it and its pages: nothing else the process allocates lives in its
 * alignment padding. From the heap (posix_memalign) the padding before each
 * 2 MiB-aligned buffer went back to malloc's free lists, load-time scratch
 * (the checkpoint's codes and scales while a tensor is converted) was written
 * there and freed, and those pages stayed resident beside the weights: up to
 * 2 MiB per tensor, +82 MB of peak RSS on the 1B-shaped w4a16 model (112
 * tensors; docs/performance.md). Every buffer carries a 64-byte tag just
 * before it saying how it was made, so qt__weights_free needs no size. */
#define _DEFAULT_SOURCE /* madvise, mmap, posix_memalign */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "bigalloc.h"

#define HUGE_BYTES QT__WEIGHTS_HUGE_MIN
#define TAG_BYTES 64
#define TAG_MAGIC 0x71745f7765696768ull /* "qt_weigh" */

typedef struct {
    uint64_t magic;
    int kind;      /* 0: malloc'd block starting at base; 1: mapping base .. base + len */
    void *base;
    size_t len;
} tag;

static void *tagged(uint8_t *p, int kind, void *base, size_t len) {
    const tag t = {TAG_MAGIC, kind, base, len};
    memcpy(p - TAG_BYTES, &t, sizeof t);
    return p;
}

#if defined(__linux__)
/* Its own mapping: [one page holding the tag][the buffer's pages], the buffer 2 MiB-aligned. */
static void *map_huge(size_t n) {
    const long pgl = sysconf(_SC_PAGESIZE);
    const size_t pg = pgl > 0 ? (size_t)pgl : 4096;
    const size_t body = (n + pg - 1) & ~(pg - 1), len = body + HUGE_BYTES + pg;
    uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)m + pg + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1));
    uint8_t *const base = p - pg, *const end = p + body;
    if (base > m) munmap(m, (size_t)(base - m));
    if (m + len > end) munmap(end, (size_t)(m + len - end));
#if defined(MADV_HUGEPAGE)
    /* whole huge pages only; a refusal (THP off, old kernel) leaves ordinary pages */
    (void)madvise(p, n & ~(HUGE_BYTES - 1), MADV_HUGEPAGE);
#endif
    return tagged(p, 1, base, body + pg);
}
#endif

void *qt__weights_alloc(size_t bytes) {
    const size_t n = (bytes + 63) & ~(size_t)63;
    if (n < HUGE_BYTES) {
        uint8_t *b = aligned_alloc(64, n + TAG_BYTES);
        return b ? tagged(b + TAG_BYTES, 0, b, 0) : NULL;
    }
#if defined(__linux__)
    return map_huge(n);
#else
    void *b = NULL;
    if (posix_memalign(&b, HUGE_BYTES, n + HUGE_BYTES) != 0) return NULL;
    return tagged((uint8_t *)b + HUGE_BYTES, 0, b, 0);
#endif
}

void qt__weights_free(void *p) {
    if (!p) return;
    tag t;
    memcpy(&t, (uint8_t *)p - TAG_BYTES, sizeof t);
    if (t.magic != TAG_MAGIC) return; /* not from qt__weights_alloc (a bug): leaked, not freed wrongly */
#if defined(__linux__)
    if (t.kind == 1) {
        munmap(t.base, t.len);
        return;
    }
#endif
    free(t.base);
}

int qt__weights_copy_fits(size_t bytes) {
#if defined(__linux__)
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[128];
    unsigned long long kib = 0;
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) found = sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
    fclose(f);
    const long pages = sysconf(_SC_PHYS_PAGES), pg = sysconf(_SC_PAGESIZE);
    if (!found || pages <= 0 || pg <= 0) return 0;
    const unsigned long long avail = kib * 1024ull, floor = (unsigned long long)pages * (unsigned long long)pg / 8;
    return avail >= floor && avail - floor >= bytes;
#else
    (void)bytes;
    return 0;
#endif
}
