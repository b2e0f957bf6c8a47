/* lib/eval/eval_internal.h — helpers shared by the eval files (not public). */
#ifndef QT_EVAL_INTERNAL_H
#define QT_EVAL_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>

#include "core/strbuf.h"
#include "quanta/eval.h"

/* Reports are built in the growable string of lib/core/strbuf.h. */

/* The last path component ("a/b/c.gguf" -> "c.gguf"; "model@kv=f32" kept whole). */
const char *qt__eval_basename(const char *path);

#endif
