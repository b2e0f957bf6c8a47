/* quanta/template.h — chat templates: the Jinja subset that Hugging Face
 * tokenizer_config.json "chat_template"s are written in (docs/serve.md,
 * "Chat templates").
 *
 * A template is parsed once into a tree and rendered any number of times over
 * a JSON object of variables (messages, add_generation_prompt, bos_token, ...).
 * It renders the way transformers' apply_chat_template does (Jinja2 with
 * trim_blocks and lstrip_blocks, the loopcontrols extension, tojson without
 * HTML escaping, raise_exception and strftime_now as globals), byte for byte
 * against @huggingface/jinja on the real templates of Llama 3, Qwen2.5/Qwen3
 * and Mistral (tests/interop/test_chat_template.sh). A construct outside the
 * subset (macro, include, an unknown filter or test, ...) is refused when the
 * template is parsed, naming the construct and its line and column. Rendering
 * is bounded (steps, memory, output), so a hostile template ends in an error,
 * never a hang.
 */
#ifndef QUANTA_TEMPLATE_H
#define QUANTA_TEMPLATE_H

#include "core.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qt_template qt_template;

/* Parses `src` (len bytes, UTF-8). QT_ERR_FORMAT for a syntax error,
 * QT_ERR_UNSUPPORTED for a construct outside the subset; the message says
 * "template line L, column C: ...". */
QT_API qt_status qt_template_parse(const char *src, size_t len, qt_template **out);
QT_API void qt_template_free(qt_template *t);

/* Renders with the variables of `vars_json` (a JSON object; NULL: none).
 * `now` is the time strftime_now() formats, in seconds since the epoch (UTC),
 * so that a render is a pure function of its inputs. *out is malloc'd.
 * QT_ERR_ARG for raise_exception() and for an evaluation error (a type error,
 * an undefined attribute of an undefined value), naming line and column;
 * QT_ERR_RANGE when a limit is hit. */
QT_API qt_status qt_template_render(const qt_template *t, const char *vars_json, int64_t now, char **out);

/* A conversation through a model's chat template. */
typedef struct qt_chat_opts {
    const char *bos_token, *eos_token; /* the tokenizer's; NULL: "" */
    bool add_generation_prompt;        /* end with the assistant's header */
    const char *extra_json;            /* more variables, a JSON object ({"enable_thinking": false}); NULL: none */
    int64_t now;                       /* strftime_now's time (see qt_template_render) */
} qt_chat_opts;

/* Renders `messages_json` (a JSON list of {"role", "content", ...} objects,
 * passed to the template as they are) with the template source `tmpl`. */
QT_API qt_status qt_chat_apply(const char *tmpl, const char *messages_json, const qt_chat_opts *o, char **out);

/* The same with a model's own template (vocab->chat_template: GGUF's
 * tokenizer.chat_template, or tokenizer_config.json's chat_template), its BOS
 * and EOS token texts filled in where o leaves them NULL. A model without a
 * template is QT_ERR_UNSUPPORTED, saying so. */
QT_API qt_status qt_chat_apply_vocab(const qt_vocab *vocab, const char *messages_json, const qt_chat_opts *o, char **out);

#ifdef __cplusplus
}
#endif
#endif
