/* lib/core/heap.h — one binary heap of fixed-size elements (internal).
 *
 * The tokenizers' merge queues (tok_spm.c: SentencePiece's bigrams by score,
 * tok_bpe.c: BPE pairs by rank) are the two users. `before(a, b)` is true when
 * a must come out first; ties are the comparator's to break, so the order is
 * fully determined by it (the tokenizers rely on that to match their
 * references token for token).
 */
#ifndef QT_CORE_HEAP_H
#define QT_CORE_HEAP_H

#include <stdbool.h>
#include <stddef.h>

typedef bool (*qt__heap_before_fn)(const void *a, const void *b);

typedef struct qt__heap {
    unsigned char *v;          /* (cap * elem) bytes; v[0] is the next element out */
    size_t n, cap, elem;       /* elements held, allocated, bytes per element */
    qt__heap_before_fn before;
} qt__heap;

static inline void qt__heap_init(qt__heap *h, size_t elem, qt__heap_before_fn before) {
    *h = (qt__heap){.elem = elem, .before = before};
}
/* Copies the element in; false when out of memory (the heap is unchanged). */
bool qt__heap_push(qt__heap *h, const void *x);
/* Copies the first element out and removes it; the heap must not be empty. */
void qt__heap_pop(qt__heap *h, void *top);
void qt__heap_free(qt__heap *h);

#endif
