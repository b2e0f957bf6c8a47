/* lib/core/heap.c — the binary heap of lib/core/heap.h: sift up on push,
 * sift down on pop, elements moved by memcpy. */
#include <stdlib.h>
#include <string.h>

#include "heap.h"

#define AT(h, i) ((h)->v + (i) * (h)->elem)

bool qt__heap_push(qt__heap *h, const void *x) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        unsigned char *v = realloc(h->v, cap * h->elem);
        if (!v) return false;
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!h->before(x, AT(h, p))) break;
        memcpy(AT(h, i), AT(h, p), h->elem);
        i = p;
    }
    memcpy(AT(h, i), x, h->elem);
    return true;
}

void qt__heap_pop(qt__heap *h, void *top) {
    memcpy(top, AT(h, 0), h->elem);
    /* The last element x stays at index n while it sinks: the loop writes only below n. */
    const unsigned char *x = AT(h, --h->n);
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && h->before(AT(h, c + 1), AT(h, c))) c++;
        if (!h->before(AT(h, c), x)) break;
        memcpy(AT(h, i), AT(h, c), h->elem);
        i = c;
    }
    if (h->n > 0) memcpy(AT(h, i), x, h->elem);
}

void qt__heap_free(qt__heap *h) {
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}
