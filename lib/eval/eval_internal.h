/* lib/eval/eval_internal.h — helpers shared by the eval files (not public). */
#ifndef QT_EVAL_INTERNAL_H
#define QT_EVAL_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>

#include "quanta/eval.h"

/* A growable NUL-terminated string. After any failed append `failed` is set
 * and further appends do nothing, so builders check once at the end. */
typedef struct qt__eval_sbuf {
    char *p;
    size_t n, cap;
    bool failed;
} qt__eval_sbuf;

void qt__eval_sb_add(qt__eval_sbuf *b, const char *s, size_t n);
void qt__eval_sb_puts(qt__eval_sbuf *b, const char *s);
void qt__eval_sb_printf(qt__eval_sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Text with & < > " ' escaped for HTML / SVG. */
void qt__eval_sb_html(qt__eval_sbuf *b, const char *s);
/* Hands the string over (or frees it and returns QT_ERR_NOMEM if an append failed). */
qt_status qt__eval_sb_finish(qt__eval_sbuf *b, char **out);

/* The last path component ("a/b/c.gguf" -> "c.gguf"; "model@kv=f32" kept whole). */
const char *qt__eval_basename(const char *path);

#endif
