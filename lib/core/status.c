/* lib/core/status.c — status names, the per-thread error message, cancellation. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "quanta/core.h"

const char *qt_version(void) { return QT_VERSION_STRING; }

static const char *const status_names[QT_STATUS_COUNT] = {
    [QT_OK] = "ok",
    [QT_ERR_ARG] = "invalid argument",
    [QT_ERR_NOMEM] = "out of memory",
    [QT_ERR_IO] = "I/O error",
    [QT_ERR_FORMAT] = "format error",
    [QT_ERR_UNSUPPORTED] = "unsupported",
    [QT_ERR_SHAPE] = "shape error",
    [QT_ERR_RANGE] = "value out of range",
    [QT_ERR_INTERRUPTED] = "interrupted",
    [QT_ERR_NOT_FOUND] = "not found",
    [QT_ERR_INTERNAL] = "internal error",
};

const char *qt_status_name(qt_status s) {
    return ((unsigned)s < QT_STATUS_COUNT) ? status_names[s] : "unknown status";
}

/* 1 KiB is enough for "file: field: problem" with two paths in it. */
static _Thread_local char last_error[1024];

const char *qt_last_error(void) { return last_error; }
void qt_clear_error(void) { last_error[0] = '\0'; }

/* Formats into a local buffer first: a caller may quote the previous message
 * (qt_error(s, "%s: %s", path, qt_last_error())), and vsnprintf must not read
 * the buffer it writes. */
qt_status qt_verror(qt_status s, const char *fmt, va_list ap) {
    char msg[sizeof last_error];
    vsnprintf(msg, sizeof msg, fmt, ap);
    memcpy(last_error, msg, sizeof msg);
    return s;
}

qt_status qt_error(qt_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    qt_verror(s, fmt, ap);
    va_end(ap);
    return s;
}

static volatile sig_atomic_t cancel_flag;
void qt_request_cancel(void) { cancel_flag = 1; }
void qt_cancel_reset(void) { cancel_flag = 0; }
bool qt_cancelled(void) { return cancel_flag != 0; }
