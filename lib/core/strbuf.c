/* lib/core/strbuf.c — the growable string of lib/core/strbuf.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

static bool reserve(qt__sbuf *b, size_t extra) {
    if (b->failed) return false;
    if (b->n + extra + 1 <= b->cap) return true;
    size_t nc = b->cap ? b->cap : 1024;
    while (nc < b->n + extra + 1) nc *= 2;
    char *np = realloc(b->p, nc);
    if (!np) { b->failed = true; return false; }
    b->p = np;
    b->cap = nc;
    return true;
}

void qt__sb_add(qt__sbuf *b, const char *s, size_t n) {
    if (!reserve(b, n)) return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void qt__sb_puts(qt__sbuf *b, const char *s) { qt__sb_add(b, s, strlen(s)); }

void qt__sb_printf(qt__sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) { b->failed = true; return; }
    if ((size_t)n < sizeof small) { qt__sb_add(b, small, (size_t)n); return; }
    if (!reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

void qt__sb_html(qt__sbuf *b, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '&': qt__sb_puts(b, "&amp;"); break;
        case '<': qt__sb_puts(b, "&lt;"); break;
        case '>': qt__sb_puts(b, "&gt;"); break;
        case '"': qt__sb_puts(b, "&quot;"); break;
        case '\'': qt__sb_puts(b, "&#39;"); break;
        default: qt__sb_add(b, s, 1);
        }
    }
}

qt_status qt__sb_finish(qt__sbuf *b, char **out, const char *what) {
    if (!b->failed && !b->p) qt__sb_add(b, "", 0); /* an empty string is still a string */
    if (b->failed) {
        free(b->p);
        *out = NULL;
        return qt_error(QT_ERR_NOMEM, "%s: out of memory building text", what);
    }
    *out = b->p;
    return QT_OK;
}
