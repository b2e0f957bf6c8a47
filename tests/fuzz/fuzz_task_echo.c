/* libFuzzer target: what `quanta eval --tasks` reads from a server's answer to
 * a choice check's echo request (qt__task_echo_score, lib/eval/tasks_http.c):
 * OpenAI's logprobs {tokens, token_logprobs, text_offset} or vLLM's
 * prompt_logprobs, scored for a fixed context and choice. Byte 0 picks one of
 * three (context, choice) pairs, one of them not ASCII; the rest is the body.
 * A score must cover at least one token; a refusal must say why; an answer
 * without logprobs leaves the score empty. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const pairs[3][2] = {{"Once upon a time", " there was"}, {"Le caf\xc3\xa9", " \xc3\xa9tait"}, {"a", " b"}};
    if (size < 1) return 0;
    const char *const *p = pairs[data[0] % 3];
    qt_eval_score sc;
    char why[QT_CHECK_WHY_LEN] = "";
    const int r = qt__task_echo_score((const char *)data + 1, size - 1, p[0], p[1], &sc, why);
    if (r == 1 && sc.n_tokens < 1) abort();
    if (r == 0 && !why[0]) abort();
    if (r != 1 && (sc.n_tokens != 0 || sc.logprob != 0)) abort();
    if (r < -1 || r > 1) abort();
    return 0;
}
