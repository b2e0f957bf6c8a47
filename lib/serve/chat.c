/* lib/serve/chat.c — the named chat layouts (quanta/serve.h).
 *
 * A model's own tokenizer.chat_template is rendered by the Jinja engine
 * (lib/model/jinja*.c, QT_CHAT_MODEL). These hand-written layouts are the
 * fallback for a model without a template, or with one outside the engine's
 * subset: recognised by the markers of a few well-known templates, or chosen
 * with `quanta serve --chat-template NAME`. Each layout follows the template
 * it is named after, with the generation prompt appended:
 *   chatml  Qwen2/Qwen3's tokenizer_config.json chat_template (without tools)
 *   llama3  Meta Llama 3 Instruct's (BOS comes from the tokenizer, not the text)
 *   llama2  Llama 2 chat's: the system prompt folded into the first [INST]
 */
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "quanta/serve.h"

static const char *const names[] = {"none", "chatml", "llama3", "llama2", "model"};

const char *qt_chat_template_name(qt_chat_template t) {
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

qt_status qt_chat_template_parse(const char *name, qt_chat_template *out) {
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i])) {
            *out = (qt_chat_template)i;
            return QT_OK;
        }
    return qt_error(QT_ERR_UNSUPPORTED, "chat template '%s': known templates are model, none, chatml, llama3, llama2", name);
}

qt_chat_template qt_chat_template_detect(const char *jinja) {
    if (!jinja) return QT_CHAT_NONE;
    if (strstr(jinja, "<|im_start|>") && strstr(jinja, "<|im_end|>")) return QT_CHAT_CHATML;
    if (strstr(jinja, "<|start_header_id|>") && strstr(jinja, "<|eot_id|>")) return QT_CHAT_LLAMA3;
    if (strstr(jinja, "[INST]") && strstr(jinja, "[/INST]")) return QT_CHAT_LLAMA2;
    return QT_CHAT_NONE;
}

static bool known_role(const char *r) { return !strcmp(r, "system") || !strcmp(r, "user") || !strcmp(r, "assistant"); }

static void render_llama2(qt__sbuf *b, const char *const *roles, const char *const *contents, int32_t n) {
    const char *sys = NULL;
    bool replied = false; /* an exchange has ended: the next [INST] opens a new <s> */
    for (int32_t i = 0; i < n; i++) {
        if (!strcmp(roles[i], "system")) {
            sys = contents[i];
        } else if (!strcmp(roles[i], "user")) {
            if (replied) qt__sb_puts(b, "<s>");
            qt__sb_puts(b, "[INST] ");
            if (sys) qt__sb_printf(b, "<<SYS>>\n%s\n<</SYS>>\n\n", sys);
            sys = NULL;
            qt__sb_printf(b, "%s [/INST]", contents[i]);
            replied = false;
        } else {
            qt__sb_printf(b, " %s </s>", contents[i]);
            replied = true;
        }
    }
}

qt_status qt_chat_render(qt_chat_template tpl, const char *const *roles, const char *const *contents, int32_t n,
                         char **out) {
    *out = NULL;
    if (tpl == QT_CHAT_NONE)
        return qt_error(QT_ERR_UNSUPPORTED, "the model has no chat template quanta can render (known: chatml, llama3, "
                                            "llama2; start the server with --chat-template NAME)");
    if (tpl == QT_CHAT_MODEL) return qt_error(QT_ERR_UNSUPPORTED, "the model's own chat template needs the model (qt_chat_apply_vocab)");
    if (n < 1) return qt_error(QT_ERR_ARG, "messages: the conversation is empty");
    for (int32_t i = 0; i < n; i++)
        if (!known_role(roles[i]))
            return qt_error(QT_ERR_ARG, "messages[%d].role: '%s' is not system, user or assistant", i, roles[i]);
    qt__sbuf b = {0};
    if (tpl == QT_CHAT_LLAMA2) {
        render_llama2(&b, roles, contents, n);
    } else {
        for (int32_t i = 0; i < n; i++) {
            if (tpl == QT_CHAT_CHATML) qt__sb_printf(&b, "<|im_start|>%s\n%s<|im_end|>\n", roles[i], contents[i]);
            else qt__sb_printf(&b, "<|start_header_id|>%s<|end_header_id|>\n\n%s<|eot_id|>", roles[i], contents[i]);
        }
        qt__sb_puts(&b, tpl == QT_CHAT_CHATML ? "<|im_start|>assistant\n" : "<|start_header_id|>assistant<|end_header_id|>\n\n");
    }
    return qt__sb_finish(&b, out, "chat template");
}
