/* libFuzzer target: `quanta serve`'s request bodies (qt_serve_request_parse,
 * lib/serve/request.c) as completions and, with each chat template, as chat
 * requests. Byte 0 picks the kind and template; the rest is the body. An
 * accepted request must be usable as the server uses it (a prompt or token ids,
 * sampling values in range, logprobs only on a non-streamed completion); a
 * refused one must name a problem and give a 4xx. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quanta/serve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const qt_serve_kind kind = data[0] & 1 ? QT_SERVE_CHAT : QT_SERVE_COMPLETION;
    const qt_chat_template tpl = (qt_chat_template)((data[0] >> 1) % 4);
    qt_serve_request r;
    int http = 0;
    qt_clear_error();
    if (qt_serve_request_parse((const char *)data + 1, size - 1, kind, tpl, NULL, &r, &http) != QT_OK) {
        if (!qt_last_error()[0] || http < 400 || http > 599) abort();
        if (r.prompt || r.model || r.prompt_ids) abort(); /* nothing left behind */
        return 0;
    }
    if (!r.prompt == !r.prompt_ids) abort();
    if (r.prompt_ids && r.n_prompt_ids < 1) abort();
    for (int32_t i = 0; i < r.n_prompt_ids; i++)
        if (r.prompt_ids[i] < 0) abort();
    if (kind == QT_SERVE_CHAT && (!r.prompt || tpl == QT_CHAT_NONE)) abort();
    if (r.max_tokens < -1 || !(r.temperature >= 0) || !(r.top_p > 0 && r.top_p <= 1) || r.top_k < 0) abort();
    if (r.logprobs < -1 || r.logprobs > QT_SERVE_MAX_LOGPROBS || (kind == QT_SERVE_CHAT && (r.echo || r.logprobs >= 0))) abort();
    if (r.stream && r.logprobs >= 0) abort(); /* refused: logprobs are not streamed */
    if (r.prompt) (void)strlen(r.prompt);
    qt_serve_request_free(&r);
    return 0;
}
