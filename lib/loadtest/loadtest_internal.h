/* lib/loadtest/loadtest_internal.h — the load test's pieces below the public
 * API (quanta/loadtest.h): the server-sent-events parser and the parser of
 * one streamed OpenAI chunk. Both are fuzzed (tests/fuzz/fuzz_sse.c). */
#ifndef QT_LOADTEST_INTERNAL_H
#define QT_LOADTEST_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "core/strbuf.h"
#include "quanta/loadtest.h"

/* One event's data may not exceed this: a server that never ends an event
 * fails its request instead of growing the client without bound. */
#define QT__SSE_MAX_EVENT (4u << 20)

/* Incremental SSE parser (the WHATWG "server-sent events" rules): lines end in
 * LF, CRLF or CR (also split across feeds); "data:" lines (one leading space
 * dropped) are joined with LF; a blank line dispatches the event; lines starting
 * with ':' are comments; other fields (event, id, retry) are ignored. */
typedef int (*qt__sse_fn)(void *user, const char *data, size_t len); /* nonzero: stop */
typedef struct qt__sse {
    qt__sbuf line, data;
    bool have_data; /* a data field was seen since the last dispatch (it may be empty) */
    bool after_cr;  /* the previous byte was CR: a following LF ends nothing */
    bool stopped;   /* the callback asked to stop, or an event was too large */
} qt__sse;

void qt__sse_init(qt__sse *p);
void qt__sse_free(qt__sse *p);
/* QT_ERR_RANGE when an event exceeds QT__SSE_MAX_EVENT; QT_OK otherwise
 * (also after the callback stopped the stream: p->stopped says so). */
qt_status qt__sse_feed(qt__sse *p, const char *buf, size_t n, qt__sse_fn fn, void *user);
/* End of stream: a last event without its blank line is dispatched (servers
 * that close right after "data: [DONE]" are common). */
qt_status qt__sse_finish(qt__sse *p, qt__sse_fn fn, void *user);

/* One event's data as an OpenAI streaming chunk. */
typedef struct qt__lt_chunk {
    bool done;                  /* "[DONE]" */
    bool has_choices;           /* a non-empty "choices" array */
    bool is_error;              /* an "error" member: the server failed mid-stream */
    int64_t completion_tokens;  /* usage.completion_tokens, -1 when absent */
    int64_t prompt_tokens;      /* usage.prompt_tokens, -1 when absent */
    char error[160];
} qt__lt_chunk;
/* Appends choices[0].text (completions) or choices[0].delta.content (chat) to
 * text. QT_ERR_FORMAT (message says why) for data that is not a JSON object. */
qt_status qt__lt_chunk_parse(const char *data, size_t len, qt__lt_chunk *out, qt__sbuf *text);

/* One blocking, non-streamed POST of a JSON body to base + path, for callers
 * outside the run loop (`quanta eval --tasks` through a server). *code: the
 * HTTP status (0: no answer); *resp: the body, malloc'd and NUL-terminated
 * (at most 16 MiB). QT_ERR_IO with curl's message when no answer came
 * (refused, timed out after timeout_s seconds; <= 0: no limit). */
qt_status qt__lt_post(const char *base, const char *path, const char *api_key, const char *body, double timeout_s,
                      long *code, char **resp);

#endif
