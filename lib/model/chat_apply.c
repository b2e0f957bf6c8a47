/* lib/model/chat_apply.c — a conversation through a model's own chat template
 * (quanta/template.h): the variables transformers' apply_chat_template passes
 * (messages, add_generation_prompt, bos_token, eos_token, and whatever the
 * caller adds, such as enable_thinking), then one render. `tools` is never
 * set, so templates take their tool-less branch. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "quanta/template.h"

qt_status qt_chat_apply(const char *tmpl, const char *messages_json, const qt_chat_opts *o, char **out) {
    *out = NULL;
    if (!tmpl) return qt_error(QT_ERR_ARG, "chat template: none given");
    json_error_t e;
    json_t *vars = o && o->extra_json ? json_loads(o->extra_json, 0, &e) : json_object();
    if (!vars || !json_is_object(vars)) {
        json_decref(vars);
        return qt_error(QT_ERR_ARG, "chat template: the extra variables are not a JSON object");
    }
    json_t *msgs = messages_json ? json_loads(messages_json, JSON_ALLOW_NUL, &e) : NULL;
    if (!json_is_array(msgs)) {
        json_decref(msgs);
        json_decref(vars);
        return qt_error(QT_ERR_ARG, "chat template: the messages are not a JSON list");
    }
    json_object_set_new(vars, "messages", msgs);
    json_object_set_new(vars, "add_generation_prompt", json_boolean(o && o->add_generation_prompt));
    json_object_set_new(vars, "bos_token", json_string(o && o->bos_token ? o->bos_token : ""));
    json_object_set_new(vars, "eos_token", json_string(o && o->eos_token ? o->eos_token : ""));
    char *text = json_dumps(vars, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(vars);
    if (!text) return qt_error(QT_ERR_NOMEM, "chat template: out of memory");
    qt_template *t = NULL;
    qt_status s = qt_template_parse(tmpl, strlen(tmpl), &t);
    if (s == QT_OK) s = qt_template_render(t, text, o ? o->now : 0, out);
    qt_template_free(t);
    free(text);
    return s;
}

static const char *token_text(const qt_vocab *v, int32_t id) {
    return id >= 0 && id < v->n_tokens && v->tokens ? v->tokens[id] : NULL;
}

qt_status qt_chat_apply_vocab(const qt_vocab *vocab, const char *messages_json, const qt_chat_opts *o, char **out) {
    *out = NULL;
    if (!vocab || !vocab->chat_template)
        return qt_error(QT_ERR_UNSUPPORTED, "the model has no chat template (no tokenizer.chat_template in the GGUF, no "
                                            "chat_template in tokenizer_config.json)");
    qt_chat_opts opts = o ? *o : (qt_chat_opts){0};
    if (!opts.bos_token) opts.bos_token = token_text(vocab, vocab->bos_id);
    if (!opts.eos_token) opts.eos_token = token_text(vocab, vocab->eos_id);
    return qt_chat_apply(vocab->chat_template, messages_json, &opts, out);
}
