/* lib/eval/tasks_engine.c — one task item's output from quanta's engine: the
 * prompt (or the chat rendered with the model's template) tokenized as
 * `quanta run` does, then tokens from the sampler (greedy unless sampling)
 * until EOS, max_tokens, a stop string or a full context. The same steps as
 * tools/quanta/cmd_run.c, so `quanta run --temp 0` reproduces a greedy output.
 */
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"
#include "quanta/template.h"
#include "quanta/tokenizer.h"

/* The prompt's tokens: BOS as the vocabulary asks unless a chat template wrote it. */
static qt_status prompt_ids(const qt_tokenizer *tok, const qt_vocab *voc, const qt_task_item *it, int32_t **ids, int32_t *n) {
    char *chat = NULL;
    const char *text = it->prompt;
    if (it->messages) {
        qt_chat_opts co = {.add_generation_prompt = true};
        qt_status s = qt_chat_apply_vocab(voc, it->messages, &co, &chat);
        if (s) return qt_error(s, "item '%s': %s", it->id, qt_last_error());
        text = chat;
    }
    const char *bos = voc->bos_id >= 0 && voc->bos_id < voc->n_tokens ? voc->tokens[voc->bos_id] : NULL;
    const bool has_bos = chat && bos && *bos && !strncmp(text, bos, strlen(bos));
    const unsigned flags = (voc->add_bos && !has_bos ? QT_TOKENIZE_ADD_BOS : 0u) | (chat ? QT_TOKENIZE_PARSE_SPECIAL : 0u);
    qt_status s = qt_tokenize_ex(tok, text, strlen(text), flags, ids, n);
    free(chat);
    if (!s && *n == 0) { free(*ids); *ids = NULL; s = qt_error(QT_ERR_ARG, "item '%s': the prompt has no tokens", it->id); }
    return s;
}

/* Appends token id's bytes; true when a stop string now occurs (the text is cut before it). */
static qt_status append(qt__sbuf *b, const qt_tokenizer *tok, int32_t id, const qt_task_item *it, bool *stop) {
    char buf[256];
    int32_t n = qt_token_to_piece(tok, id, buf, (int32_t)sizeof buf);
    if (n > (int32_t)sizeof buf) return qt_error(QT_ERR_UNSUPPORTED, "token %d: a piece of %d bytes", (int)id, (int)n);
    if (n > 0) qt__sb_add(b, buf, (size_t)n);
    if (b->failed) return qt_error(QT_ERR_NOMEM, "tasks: out of memory");
    size_t cut = b->n;
    for (int32_t j = 0; j < it->n_stop; j++) {
        const char *hit = b->n ? strstr(b->p, it->stop[j]) : NULL;
        if (hit && (size_t)(hit - b->p) < cut) cut = (size_t)(hit - b->p);
    }
    *stop = cut < b->n;
    if (*stop) { b->n = cut; b->p[cut] = '\0'; }
    return QT_OK;
}

qt_status qt__task_generate(qt_engine_ctx *e, const qt_tokenizer *tok, const qt_vocab *voc, qt_sampler *smp,
                            const qt_task_item *it, float *logits, char **out) {
    int32_t *ids = NULL, n_ids = 0;
    *out = NULL;
    qt_status s = prompt_ids(tok, voc, it, &ids, &n_ids);
    if (s) return s;
    if (n_ids > qt_engine_n_ctx(e))
        s = qt_error(QT_ERR_ARG, "item '%s': the prompt is %d tokens but the context holds %d (raise -c)", it->id, (int)n_ids,
                     (int)qt_engine_n_ctx(e));
    qt__sbuf b = {0};
    if (!s) {
        qt_engine_reset(e);
        s = qt_engine_eval(e, ids, n_ids, n_ids - 1, logits);
    }
    for (int32_t n = 0; !s && n < it->max_tokens; n++) {
        const int32_t next = qt_sampler_sample(smp, logits);
        bool stop = false;
        if (next == voc->eos_id) break;
        if ((s = append(&b, tok, next, it, &stop)) || stop) break;
        if (n + 1 == it->max_tokens || qt_engine_n_past(e) >= qt_engine_n_ctx(e)) break;
        s = qt_engine_eval(e, &next, 1, 0, logits);
    }
    free(ids);
    if (!s) s = qt__sb_finish(&b, out, "tasks");
    else free(b.p);
    return s;
}
