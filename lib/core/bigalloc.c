/* lib/core/bigalloc.c — 2 MiB-aligned, huge-page-advised buffers (bigalloc.h). */
#define _DEFAULT_SOURCE /* madvise, posix_memalign */
#include <stdint.h>
#include <stdlib.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "bigalloc.h"

#define HUGE_BYTES QT__WEIGHTS_HUGE_MIN

void *qt__weights_alloc(size_t bytes) {
    const size_t n = (bytes + 63) & ~(size_t)63;
    if (n < HUGE_BYTES) return aligned_alloc(64, n ? n : 64);
    void *p = NULL;
    if (posix_memalign(&p, HUGE_BYTES, n) != 0) return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    /* whole huge pages only; a refusal (THP off, old kernel) leaves ordinary pages */
    if (p) (void)madvise(p, n & ~(HUGE_BYTES - 1), MADV_HUGEPAGE);
#endif
    return p;
}

void qt__weights_free(void *p) { free(p); }
