/* libFuzzer target: what the load-test client reads from a server — the SSE
 * stream parser (fed in two pieces cut where the first byte says, as network
 * reads split it), every event parsed as an OpenAI stream chunk, and the same
 * bytes as a Prometheus /metrics text. Nothing may crash, leak or loop; every
 * failure must leave a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loadtest/loadtest_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_event(void *user, const char *d, size_t n) {
    qt__sbuf *text = user;
    qt__lt_chunk c;
    qt_clear_error();
    qt_status s = qt__lt_chunk_parse(d, n, &c, text);
    if (s != QT_OK && !qt_last_error()[0]) abort();
    if (s == QT_OK && c.done && (c.has_choices || c.is_error)) abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = (const char *)data;
    size_t cut = size ? data[0] % (size + 1) : 0;
    qt__sse sse;
    qt__sbuf text = {0};
    qt__sse_init(&sse);
    qt_clear_error();
    qt_status s = qt__sse_feed(&sse, p, cut, on_event, &text);
    if (!s) s = qt__sse_feed(&sse, p + cut, size - cut, on_event, &text);
    if (!s) s = qt__sse_finish(&sse, on_event, &text);
    if (s != QT_OK && !qt_last_error()[0]) abort();
    qt__sse_free(&sse);
    free(text.p);
    double v;
    if (qt_lt_prom_max(p, size, "quanta_kv_cache_usage_ratio", &v) && v != v) abort();
    return 0;
}
