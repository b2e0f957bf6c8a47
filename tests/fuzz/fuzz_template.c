/* libFuzzer target: the chat-template engine (lib/model/jinja*.c): the input
 * is a template, parsed, and when it parses rendered over a fixed conversation.
 * A failure must say "template" (with line and column for the template's own
 * errors) and leave no output; a success is NUL-terminated text. The limits
 * (steps, memory, output, nesting) keep every input finite. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quanta/template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char vars[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \" Hi \\u00e9 \"},"
    " {\"role\": \"assistant\", \"content\": \"<think>\\nx\\n</think>\\n\\nHello\", \"tool_calls\": [{\"function\":"
    " {\"name\": \"f\", \"arguments\": {\"a\": [1, 2.5, null, true]}}}]}, {\"role\": \"user\", \"content\": \"Bye\"}],"
    " \"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"enable_thinking\": false}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    qt_template *t = NULL;
    char *out = NULL;
    if (qt_template_parse((const char *)data, size, &t) != QT_OK) {
        if (t || !strstr(qt_last_error(), "template")) abort();
        return 0;
    }
    if (qt_template_render(t, vars, 1721952000, &out) != QT_OK) {
        if (out || !strstr(qt_last_error(), "template")) abort();
    } else {
        if (!out) abort();
        (void)strlen(out);
        free(out);
    }
    qt_template_free(t);
    return 0;
}
