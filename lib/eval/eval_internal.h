/* lib/eval/eval_internal.h — helpers shared by the eval files (not public). */
#ifndef QT_EVAL_INTERNAL_H
#define QT_EVAL_INTERNAL_H

#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>

#include "core/strbuf.h"
#include "quanta/eval.h"
#include "quanta/tasks.h"
#include "quanta/tokenizer.h"

/* Reports are built in the growable string of lib/core/strbuf.h. */

/* The last path component ("a/b/c.gguf" -> "c.gguf"; "model@kv=f32" kept whole). */
const char *qt__eval_basename(const char *path);


/* mc.c: one --mc line into *it (messages "NAME:LINE: field 'F': ..."); and the
 * ending a model picks for a context, by log-likelihood per byte (best_norm,
 * lm-eval's acc_norm) and summed (best_sum, acc), lowest index on ties. */
qt_status qt__mc_parse_item(json_t *obj, const char *name, int64_t line, qt_mc_item *it);
qt_status qt__mc_pick(qt_eval_score_fn score, void *user, const char *context, const char *const *endings, int32_t n,
                      int32_t *best_norm, int32_t *best_sum);

/* checks.c: a check type by name (-1 unknown); a PCRE2 pattern compiled (*out a
 * pcre2_code *), the JSON Schema subset (validate: QT_ERR_FORMAT naming path and
 * keyword; match: why gets QT_CHECK_WHY_LEN bytes), an OpenAI tools list. */
int qt__check_type_parse(const char *name);
qt_status qt__regex_compile(const char *pattern, void **out);
void qt__regex_free(void *re);
qt_status qt__schema_validate(json_t *schema, const char *path);
bool qt__schema_match(json_t *schema, json_t *doc, const char *path, char *why);
qt_status qt__tools_validate(json_t *tools);

/* tasks_engine.c: item it's output from engine e (reset first) and sampler smp;
 * logits: n_vocab floats of scratch. *out malloc'd. */
qt_status qt__task_generate(qt_engine_ctx *e, const qt_tokenizer *tok, const qt_vocab *voc, qt_sampler *smp,
                            const qt_task_item *it, float *logits, char **out);

/* tasks_http.c: the score of `cont` after `context` from a server's answer body to an echo
 * request (OpenAI's logprobs, else vLLM's prompt_logprobs): 1 scored (out set), 0 logprobs that
 * cannot score it (why, QT_CHECK_WHY_LEN bytes, says how), -1 no logprobs in the answer. */
int qt__task_echo_score(const char *resp, size_t len, const char *context, const char *cont, qt_eval_score *out, char *why);

/* tasks_report.c: the --tasks parts of the text, JSON and HTML reports (r->base_tasks set). */
void qt__tasks_table(qt__sbuf *b, const qt_eval_report *r, int w);
json_t *qt__tasks_json(const qt_eval_report *r, const qt_task_result *t);
void qt__tasks_html(qt__sbuf *b, const qt_eval_report *r);

#endif
