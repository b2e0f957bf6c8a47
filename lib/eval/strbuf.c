/* lib/eval/strbuf.c — the growable string the report writers build with. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"

static bool reserve(qt__eval_sbuf *b, size_t extra) {
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

void qt__eval_sb_add(qt__eval_sbuf *b, const char *s, size_t n) {
    if (!reserve(b, n)) return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void qt__eval_sb_puts(qt__eval_sbuf *b, const char *s) { qt__eval_sb_add(b, s, strlen(s)); }

void qt__eval_sb_printf(qt__eval_sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) { b->failed = true; return; }
    if ((size_t)n < sizeof small) { qt__eval_sb_add(b, small, (size_t)n); return; }
    if (!reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

void qt__eval_sb_html(qt__eval_sbuf *b, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '&': qt__eval_sb_puts(b, "&amp;"); break;
        case '<': qt__eval_sb_puts(b, "&lt;"); break;
        case '>': qt__eval_sb_puts(b, "&gt;"); break;
        case '"': qt__eval_sb_puts(b, "&quot;"); break;
        case '\'': qt__eval_sb_puts(b, "&#39;"); break;
        default: qt__eval_sb_add(b, s, 1);
        }
    }
}

qt_status qt__eval_sb_finish(qt__eval_sbuf *b, char **out) {
    if (!b->failed && !b->p) qt__eval_sb_add(b, "", 0); /* an empty string is still a string */
    if (b->failed) {
        free(b->p);
        *out = NULL;
        return qt_error(QT_ERR_NOMEM, "eval: out of memory building text");
    }
    *out = b->p;
    return QT_OK;
}

const char *qt__eval_basename(const char *path) {
    if (!path) return "";
    const char *at = strchr(path, '@');
    const char *slash = NULL;
    for (const char *p = path; *p && (!at || p < at); p++)
        if (*p == '/') slash = p;
    return slash ? slash + 1 : path;
}
