/* lib/loadtest/sse.c — server-sent events, one streamed OpenAI chunk, and a
 * Prometheus text exposition: the three things a load test reads from a server.
 *
 * SSE follows the WHATWG HTML standard's "event stream interpretation": any of
 * LF, CRLF and CR ends a line, "data:" lines accumulate, a blank line
 * dispatches. Every input, however broken, gives a clean status (fuzzed).
 */
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loadtest_internal.h"

void qt__sse_init(qt__sse *p) { memset(p, 0, sizeof *p); }

void qt__sse_free(qt__sse *p) {
    free(p->line.p);
    free(p->data.p);
    memset(p, 0, sizeof *p);
}

static int dispatch(qt__sse *p, qt__sse_fn fn, void *user) {
    int stop = 0;
    if (p->have_data) stop = fn(user, p->data.p ? p->data.p : "", p->data.n);
    p->data.n = 0;
    if (p->data.p) p->data.p[0] = 0;
    p->have_data = false;
    return stop;
}

/* One complete line (without its terminator). */
static qt_status process_line(qt__sse *p, qt__sse_fn fn, void *user) {
    const char *l = p->line.p ? p->line.p : "";
    size_t n = p->line.n;
    if (n == 0) {
        if (dispatch(p, fn, user)) p->stopped = true;
        return QT_OK;
    }
    if (l[0] == ':') return QT_OK;
    const char *colon = memchr(l, ':', n);
    size_t flen = colon ? (size_t)(colon - l) : n;
    if (flen != 4 || memcmp(l, "data", 4)) return QT_OK; /* event, id, retry and unknown fields */
    const char *v = colon ? colon + 1 : l + n;
    size_t vlen = (size_t)(l + n - v);
    if (vlen && *v == ' ') v++, vlen--;
    if (p->have_data) qt__sb_add(&p->data, "\n", 1);
    if (p->data.n + vlen > QT__SSE_MAX_EVENT) {
        p->stopped = true;
        return qt_error(QT_ERR_RANGE, "event stream: an event is larger than %u bytes", QT__SSE_MAX_EVENT);
    }
    qt__sb_add(&p->data, v, vlen);
    p->have_data = true;
    if (p->data.failed) return qt_error(QT_ERR_NOMEM, "event stream: out of memory");
    return QT_OK;
}

static void line_reset(qt__sse *p) {
    p->line.n = 0;
    if (p->line.p) p->line.p[0] = 0;
}

qt_status qt__sse_feed(qt__sse *p, const char *buf, size_t n, qt__sse_fn fn, void *user) {
    for (size_t i = 0; i < n && !p->stopped; i++) {
        char c = buf[i];
        if (c == '\n' && p->after_cr) {
            p->after_cr = false;
            continue;
        }
        p->after_cr = c == '\r';
        if (c == '\n' || c == '\r') {
            qt_status s = process_line(p, fn, user);
            line_reset(p);
            if (s) return s;
            continue;
        }
        /* runs of ordinary bytes are copied at once */
        size_t j = i;
        while (j < n && buf[j] != '\n' && buf[j] != '\r') j++;
        if (p->line.n + (j - i) > QT__SSE_MAX_EVENT) {
            p->stopped = true;
            return qt_error(QT_ERR_RANGE, "event stream: a line is longer than %u bytes", QT__SSE_MAX_EVENT);
        }
        qt__sb_add(&p->line, buf + i, j - i);
        if (p->line.failed) return qt_error(QT_ERR_NOMEM, "event stream: out of memory");
        i = j - 1;
    }
    return QT_OK;
}

qt_status qt__sse_finish(qt__sse *p, qt__sse_fn fn, void *user) {
    if (p->stopped) return QT_OK;
    if (p->line.n) {
        qt_status s = process_line(p, fn, user);
        line_reset(p);
        if (s) return s;
    }
    if (!p->stopped && dispatch(p, fn, user)) p->stopped = true;
    return QT_OK;
}

static int64_t usage_int(json_t *usage, const char *key) {
    json_t *v = json_object_get(usage, key);
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (int64_t)json_integer_value(v) : -1;
}

qt_status qt__lt_chunk_parse(const char *data, size_t len, qt__lt_chunk *out, qt__sbuf *text) {
    memset(out, 0, sizeof *out);
    out->completion_tokens = out->prompt_tokens = -1;
    while (len && isspace((unsigned char)*data)) data++, len--;
    while (len && isspace((unsigned char)data[len - 1])) len--;
    if (len == 6 && !memcmp(data, "[DONE]", 6)) {
        out->done = true;
        return QT_OK;
    }
    json_error_t jerr;
    json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return qt_error(QT_ERR_FORMAT, "stream chunk is not a JSON object: %s", root ? "another JSON value" : jerr.text);
    }
    json_t *err = json_object_get(root, "error");
    if (err && !json_is_null(err)) {
        out->is_error = true;
        json_t *msg = json_is_object(err) ? json_object_get(err, "message") : err;
        snprintf(out->error, sizeof out->error, "%s", json_is_string(msg) ? json_string_value(msg) : "error event");
    }
    json_t *choices = json_object_get(root, "choices");
    if (json_is_array(choices) && json_array_size(choices) > 0) {
        out->has_choices = true;
        json_t *c0 = json_array_get(choices, 0);
        json_t *t = json_object_get(c0, "text");
        if (!json_is_string(t)) t = json_object_get(json_object_get(c0, "delta"), "content");
        if (json_is_string(t) && text) qt__sb_add(text, json_string_value(t), json_string_length(t));
    }
    json_t *usage = json_object_get(root, "usage");
    if (json_is_object(usage)) {
        out->completion_tokens = usage_int(usage, "completion_tokens");
        out->prompt_tokens = usage_int(usage, "prompt_tokens");
    }
    json_decref(root);
    if (text && text->failed) return qt_error(QT_ERR_NOMEM, "stream chunk: out of memory");
    return QT_OK;
}

/* Prometheus text format 0.0.4: "name{labels} value [timestamp]" lines, '#' comments. */
bool qt_lt_prom_max(const char *text, size_t len, const char *name, double *out) {
    size_t nl = strlen(name);
    bool found = false;
    double best = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        const char *q = p;
        if ((size_t)(eol - q) > nl && !memcmp(q, name, nl) && (q[nl] == ' ' || q[nl] == '{' || q[nl] == '\t')) {
            q += nl;
            if (*q == '{') { /* label values may hold '}' only inside quotes */
                bool quoted = false;
                for (q++; q < eol; q++) {
                    if (*q == '\\' && quoted && q + 1 < eol) q++;
                    else if (*q == '"') quoted = !quoted;
                    else if (*q == '}' && !quoted) break;
                }
                if (q < eol) q++;
            }
            while (q < eol && (*q == ' ' || *q == '\t')) q++;
            char num[64];
            size_t k = 0;
            while (q < eol && *q != ' ' && *q != '\t' && *q != '\r' && k + 1 < sizeof num) num[k++] = *q++;
            num[k] = 0;
            char *e;
            double v = strtod(num, &e);
            if (k && !*e && isfinite(v) && (!found || v > best)) best = v, found = true;
        }
        p = eol + 1;
    }
    if (found) *out = best;
    return found;
}
