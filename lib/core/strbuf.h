/* lib/core/strbuf.h — the growable string every text renderer builds with
 * (eval's reports, plan's SVG/HTML). Internal. */
#ifndef QT_CORE_STRBUF_H
#define QT_CORE_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "quanta/core.h"

/* A growable NUL-terminated string. After any failed append `failed` is set
 * and further appends do nothing, so builders check once at the end. */
typedef struct qt__sbuf {
    char *p;
    size_t n, cap;
    bool failed;
} qt__sbuf;

void qt__sb_add(qt__sbuf *b, const char *s, size_t n);
void qt__sb_puts(qt__sbuf *b, const char *s);
void qt__sb_printf(qt__sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Text with & < > " ' escaped for HTML / SVG (text and attribute values). */
void qt__sb_html(qt__sbuf *b, const char *s);
/* Hands the string over ("" if nothing was added), or frees it and returns
 * QT_ERR_NOMEM naming `what` ("eval", "plan") if an append failed. */
qt_status qt__sb_finish(qt__sbuf *b, char **out, const char *what);

#endif
