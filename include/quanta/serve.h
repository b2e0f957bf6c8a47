/* quanta/serve.h — serving: OpenAI-style request bodies, chat templates, and
 * a continuous-batching scheduler over one engine (docs/serve.md).
 *
 * `quanta serve` is these pieces behind an HTTP server (libmicrohttpd, in
 * tools/quanta/): the library never listens on a socket. A request body is
 * parsed and checked here (qt_serve_request_parse: every refusal a message and
 * an HTTP status); the scheduler runs any number of generation jobs on one
 * engine built with n_seq KV slots, one thread owning the engine.
 */
#ifndef QUANTA_SERVE_H
#define QUANTA_SERVE_H

#include "core.h"
#include "engine.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- request bodies ----------------------------------------------------------- */
typedef enum qt_serve_kind {
    QT_SERVE_COMPLETION = 0, /* POST /v1/completions: "prompt" */
    QT_SERVE_CHAT,           /* POST /v1/chat/completions: "messages" through a chat template */
} qt_serve_kind;

/* How chat requests become a prompt. QT_CHAT_MODEL renders the model's own
 * Jinja chat template (quanta/template.h), as transformers' apply_chat_template
 * does; the named layouts (lib/serve/chat.c) are hand-written fallbacks for a
 * model without a template, or one outside the Jinja subset, and are recognised
 * from a template's markers (qt_chat_template_detect). QT_CHAT_NONE refuses
 * chat requests. */
typedef enum qt_chat_template {
    QT_CHAT_NONE = 0,
    QT_CHAT_CHATML,  /* <|im_start|>role\ncontent<|im_end|>\n (Qwen2/Qwen3, many fine-tunes) */
    QT_CHAT_LLAMA3,  /* <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|> */
    QT_CHAT_LLAMA2,  /* [INST] <<SYS>>\nsystem\n<</SYS>>\n\nuser [/INST] assistant</s><s>[INST] ... (Llama 2, Mistral) */
    QT_CHAT_MODEL,   /* the model's own tokenizer.chat_template, rendered by the Jinja engine */
} qt_chat_template;

QT_API const char *qt_chat_template_name(qt_chat_template t); /* "none", "chatml", "llama3", "llama2", "model" */
QT_API qt_status qt_chat_template_parse(const char *name, qt_chat_template *out);
/* Which known template a Jinja chat template is (QT_CHAT_NONE: none of them, or NULL). */
QT_API qt_chat_template qt_chat_template_detect(const char *jinja);

typedef struct qt_serve_request {
    qt_serve_kind kind;
    char *model;              /* "model", or NULL when absent */
    char *prompt;             /* the text to tokenize: the prompt, or the rendered conversation */
    int32_t *prompt_ids;      /* completions with a list of token ids as "prompt" (n_prompt_ids), else NULL */
    int32_t n_prompt_ids;
    int32_t max_tokens;       /* "max_tokens" / "max_completion_tokens"; -1: not given */
    float temperature;        /* default 1 (OpenAI's); 0 = greedy */
    float top_p;              /* default 1 (off) */
    int32_t top_k;            /* default 0 (off); an extension vLLM and llama.cpp accept */
    uint64_t seed;            /* default 42: the same request gives the same text */
    bool stream;              /* SSE */
    bool include_usage;       /* stream_options.include_usage: a last chunk with usage */
    bool ignore_eos;          /* vLLM's extension: generate max_tokens even past EOS */
    bool echo;                /* completions: the answer's text (and logprobs) start with the prompt */
    int32_t logprobs;         /* completions: "logprobs" N (0..QT_SERVE_MAX_LOGPROBS), the N most likely
                                 alternatives per token beside its own; -1: none (null or absent) */
} qt_serve_request;
#define QT_SERVE_MAX_LOGPROBS 5 /* OpenAI's limit for the legacy completions endpoint */

/* Parses and checks a request body (UTF-8 JSON object). For chat the messages
 * are rendered with `tpl`; with QT_CHAT_MODEL, vocab's own template (with its
 * BOS/EOS texts, add_generation_prompt, the request's "chat_template_kwargs"
 * object as more variables, vLLM's extension, and the current time for
 * strftime_now), any role the template accepts, and text parts joined into
 * one string. On failure *http_status is the status to answer
 * (400, or 413 / 422 where those fit) and qt_last_error() the message, naming
 * the field. Unknown fields are ignored, as OpenAI-compatible servers do. */
QT_API qt_status qt_serve_request_parse(const char *body, size_t len, qt_serve_kind kind, qt_chat_template tpl,
                                        const qt_vocab *vocab, qt_serve_request *out, int *http_status);
QT_API void qt_serve_request_free(qt_serve_request *r);

/* Renders a conversation with a named layout: roles[i] is "system", "user" or
 * "assistant", ending with the assistant's header so that generation continues
 * as its reply. *out is malloc'd. QT_ERR_ARG naming the message for an unknown
 * role; QT_CHAT_MODEL needs the model (qt_chat_apply_vocab) and is refused. */
QT_API qt_status qt_chat_render(qt_chat_template tpl, const char *const *roles, const char *const *contents,
                                int32_t n, char **out);

/* ---- the scheduler: continuous batching ----------------------------------------- *
 * Up to qt_engine_n_seq(engine) jobs run at once, one KV slot each; more wait
 * in a queue of at most max_queue (beyond it qt_sched_submit refuses). Each
 * step of the scheduler thread is ONE qt_engine_batch_eval: a decode row for
 * every running job beside the next prefill chunk (n_batch tokens) of a job
 * being admitted, so new prompts are interleaved with running decodes. Prompts
 * are cut into chunks exactly as qt_engine_eval cuts them and the engine is
 * batch-invariant, so a job's tokens equal `quanta run`'s for the same prompt
 * and sampling options, whatever runs beside it. Callbacks run on the
 * scheduler thread and must be quick (copy and signal). */
typedef enum qt_sched_finish {
    QT_FINISH_LENGTH = 0, /* max_tokens reached, or the context is full */
    QT_FINISH_STOP,       /* EOS */
    QT_FINISH_CANCELLED,  /* qt_sched_cancel */
    QT_FINISH_ERROR,      /* the engine failed (message in the callback) */
} qt_sched_finish;

typedef void (*qt_sched_token_fn)(void *user, int32_t token);
/* A token's log-probability (OpenAI's logprobs): the log-softmax of the raw
 * logits (before temperature, top-k and top-p), in nats, computed as
 * qt_eval_log_softmax does (doubles, so `quanta eval` sums the same numbers
 * it sums locally). pos is the token's index in the job's sequence (prompt
 * tokens 0 .. n_prompt-1, then the generated ones); top_ids/top_lp hold the
 * n_top most likely tokens, most likely first (lowest id on ties). */
typedef void (*qt_sched_logprob_fn)(void *user, int32_t pos, int32_t token, double logprob, const int32_t *top_ids,
                                    const double *top_lp, int32_t n_top);
#define QT_SCHED_MAX_TOP_LOGPROBS 20
/* Called exactly once per submitted job, last; after it the job is gone. */
typedef void (*qt_sched_done_fn)(void *user, qt_sched_finish why, int32_t n_prompt, int32_t n_generated,
                                 const char *error);

typedef struct qt_sched_job {
    const int32_t *prompt;    /* copied by qt_sched_submit */
    int32_t n_prompt;         /* 1 .. n_ctx */
    int32_t max_tokens;       /* >= 0 */
    qt_sampler_opts sampling;
    bool ignore_eos;
    bool prompt_logprobs;     /* on_logprob for prompt positions 1 .. n_prompt-1 (echo); then max_tokens may be 0 */
    bool logprobs;            /* on_logprob for every generated token, before its on_token */
    int32_t top_logprobs;     /* 0 .. QT_SCHED_MAX_TOP_LOGPROBS alternatives per on_logprob */
    qt_sched_logprob_fn on_logprob; /* needed when prompt_logprobs or logprobs */
    qt_sched_token_fn on_token;
    qt_sched_done_fn on_done;
    void *user;
} qt_sched_job;

typedef struct qt_sched_opts {
    int32_t max_queue;        /* jobs waiting for a slot; <= 0: 4 * n_seq */
} qt_sched_opts;

typedef struct qt_sched_stats {
    int32_t running, queued, n_slots;
    uint64_t submitted, refused, finished[4];  /* finished by qt_sched_finish */
    uint64_t prompt_tokens, generated_tokens;  /* totals */
    uint64_t steps, step_rows;                 /* engine batches and the rows they held */
    int64_t kv_used, kv_capacity;              /* positions held now, n_seq * n_ctx */
    double kv_usage_max;                       /* highest kv_used / kv_capacity seen */
} qt_sched_stats;

typedef struct qt_sched qt_sched;

/* Starts the scheduler thread; the engine (and its model) must outlive it. */
QT_API qt_status qt_sched_new(qt_engine_ctx *engine, int32_t eos_id, const qt_sched_opts *o, qt_sched **out);
/* Queues a job; *id names it for qt_sched_cancel. QT_ERR_RANGE when the queue
 * is full, QT_ERR_INTERRUPTED while draining, QT_ERR_ARG for a bad job. */
QT_API qt_status qt_sched_submit(qt_sched *s, const qt_sched_job *job, uint64_t *id);
/* Ends one job (queued or running) at its next step; no-op once it is done. */
QT_API void qt_sched_cancel(qt_sched *s, uint64_t id);
QT_API void qt_sched_get_stats(qt_sched *s, qt_sched_stats *st);
/* Refuses new jobs from now on and returns once every accepted one is done. */
QT_API void qt_sched_drain(qt_sched *s);
/* Drains, stops the thread and frees. */
QT_API void qt_sched_free(qt_sched *s);

#ifdef __cplusplus
}
#endif
#endif
