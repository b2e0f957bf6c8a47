/* lib/core/bigalloc.h — memory for weights the engine streams every token (internal).
 *
 * Decode reads every weight byte once per token, front to back. In 4 KiB pages that
 * is a TLB miss every 64 cache lines (a 728 MB model: ~180k page walks a token), and
 * the hardware prefetchers stop at each 4 KiB boundary. qt__weights_alloc therefore
 * aligns large buffers to 2 MiB and asks for transparent huge pages
 * (madvise(MADV_HUGEPAGE): the setting most kernels ship, "madvise"); where the kernel
 * refuses, the buffer is ordinary memory. On Linux a large buffer is a mapping of its own
 * (bigalloc.c: heap padding beside it would be reused and stay resident); only what is
 * written becomes resident. Free with qt__weights_free (a 64-byte tag precedes each buffer).
 */
#ifndef QT_CORE_BIGALLOC_H
#define QT_CORE_BIGALLOC_H

#include <stddef.h>

/* The size from which buffers are 2 MiB-aligned with huge pages asked for (x86-64's huge page). */
#define QT__WEIGHTS_HUGE_MIN ((size_t)2 << 20)

/* bytes (rounded up to 64) aligned to 64, or to QT__WEIGHTS_HUGE_MIN with huge pages asked
 * for when at least that; NULL when out of memory. Not zeroed. */
void *qt__weights_alloc(size_t bytes);
void qt__weights_free(void *p);

/* Whether `bytes` more of anonymous memory still leave an eighth of physical memory
 * available (/proc/meminfo MemAvailable: free memory plus what the page cache could give
 * back). A copy of a file mapping's pages that this refuses stays on the mapping: the
 * kernel can evict those pages and read them again, anonymous ones (no swap) end in the OOM
 * killer. False where the figure is unknown (not Linux). */
int qt__weights_copy_fits(size_t bytes);

#endif
