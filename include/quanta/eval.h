/* quanta/eval.h — before/after evaluation: a candidate model (quantized
 * weights, a quantized KV cache, ...) measured against its base on the same
 * tokens, and the verdict a CI pipeline can trust.
 *
 * The metrics are pure functions on plain arrays (logit rows, token ids,
 * text), so they are tested without a model; docs/eval.md states every
 * formula, the confidence intervals and the JSON report schema.
 *
 *   qt_eval_cmp      streamed per-token comparison of two logit rows: NLL of
 *                    both (perplexity, llama-perplexity's estimate), KL(base ||
 *                    candidate), top-1 agreement, "p(correct) fell by more than
 *                    half"; summaries with confidence intervals
 *   qt_eval_judge    thresholds -> pass / fail / needs-review with reasons
 *   qt_mc_*          multiple choice (hellaswag-shaped JSONL), log-likelihood scoring
 *   qt_needle_*      long-context retrieval (a key fact in a haystack)
 *   qt_heldout_*     held-out check against a candidate's calibration text (quantize.h's qt_calib_*)
 *   qt_eval_report_* terminal table, JSON, self-contained HTML with SVG charts
 */
#ifndef QUANTA_EVAL_H
#define QUANTA_EVAL_H

#include "core.h"
#include "engine.h"
#include "gguf.h"
#include "quantize.h"
#include "tasks.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Two-sided 95 % normal quantile used by every interval in this module. */
#define QT_EVAL_Z95 1.959963984540054

/* ---- numerics on one logit row ------------------------------------------------ */

/* out[i] = x[i] - logsumexp(x), in double, shifted by the row maximum so no
 * exp overflows. QT_ERR_RANGE when the row holds a NaN or an infinity. */
QT_API qt_status qt_eval_log_softmax(const float *logits, int32_t n, double *out);

/* KL(P || Q) = sum_i p_i (log p_i - log q_i) from two log-softmaxed rows, in
 * nats; terms with p_i == 0 contribute 0 and a result rounded below zero is
 * returned as 0 (KL is non-negative). */
QT_API double qt_eval_kl_from_logprobs(const double *logp, const double *logq, int32_t n);

/* Index of the largest value, lowest index on ties (as greedy sampling). */
QT_API int32_t qt_eval_argmax(const float *x, int32_t n);

/* Quantile q in [0,1] of sorted[0..n) by linear interpolation between the
 * closest ranks (Hyndman-Fan type 7, numpy's default). NAN when n == 0. */
QT_API double qt_eval_quantile_sorted(const float *sorted, int64_t n, double q);

/* Wilson score interval of a binomial proportion k/n at normal quantile z
 * (Wilson 1927); lo = hi = NAN when n == 0. */
QT_API void qt_eval_wilson(int64_t k, int64_t n, double z, double *lo, double *hi);

/* ---- streamed comparison of a candidate with its base ------------------------- */

typedef struct qt_eval_cmp qt_eval_cmp;

/* n_vocab: length of every logit row passed to qt_eval_cmp_add. */
QT_API qt_status qt_eval_cmp_new(int32_t n_vocab, qt_eval_cmp **out);
QT_API void qt_eval_cmp_free(qt_eval_cmp *c);
/* Reserve room for n per-token KL values (optional; rows are added without
 * reallocating until then). */
QT_API qt_status qt_eval_cmp_reserve(qt_eval_cmp *c, int64_t n);

/* One scored position: the base's and the candidate's logits (n_vocab each)
 * and the token that actually followed. QT_ERR_ARG for a target outside the
 * vocabulary, QT_ERR_RANGE for non-finite logits (the message names which row). */
QT_API qt_status qt_eval_cmp_add(qt_eval_cmp *c, const float *base_logits, const float *cand_logits, int32_t target);
/* Marks the end of a chunk (an independent window of text); the per-chunk
 * means give a second, autocorrelation-robust standard error (docs/eval.md). */
QT_API void qt_eval_cmp_end_chunk(qt_eval_cmp *c);
QT_API int64_t qt_eval_cmp_count(const qt_eval_cmp *c);

typedef struct qt_eval_summary {
    int64_t n_tokens;                /* scored positions */
    int32_t n_chunks;                /* chunks marked with qt_eval_cmp_end_chunk */
    /* perplexity of each model: exp(mean NLL), and llama-perplexity's standard
     * error ppl * sqrt((mean(nll^2) - mean(nll)^2) / (n - 1)) */
    double base_ppl, base_ppl_stderr, base_nll_mean;
    double ppl, ppl_stderr, nll_mean;
    /* ln(ppl / base_ppl) = mean of the paired differences d = nll_cand - nll_base,
     * its standard error, and the relative change in percent with its 95 % interval
     * 100 * (exp(mean(d) +- z se) - 1) */
    double ln_ratio, ln_ratio_stderr;
    double ppl_delta_pct, ppl_delta_pct_lo, ppl_delta_pct_hi;
    /* KL(base || candidate) per token, nats: mean (with standard error and 95 %
     * interval), median, 99th percentile, maximum */
    double kld_mean, kld_stderr, kld_mean_hi, kld_median, kld_p99, kld_max;
    /* share of positions whose argmax tokens agree, with its Wilson 95 % interval */
    double top1, top1_lo, top1_hi;
    /* share of positions where p_cand(target) < p_base(target) / 2 */
    double p_halved;
} qt_eval_summary;

/* Sorts the stored per-token KL values (for the quantiles) and fills *out.
 * QT_ERR_ARG when nothing was added. */
QT_API qt_status qt_eval_cmp_summary(qt_eval_cmp *c, qt_eval_summary *out);

/* ---- verdict ------------------------------------------------------------------ */

typedef enum qt_verdict {
    QT_VERDICT_PASS = 0,
    QT_VERDICT_REVIEW,   /* "needs-review": within every threshold, but not with confidence, or a warning */
    QT_VERDICT_FAIL,
} qt_verdict;

QT_API const char *qt_verdict_name(qt_verdict v); /* "pass", "needs-review", "fail" */

/* A threshold is off when it is NAN. */
typedef struct qt_eval_thresholds {
    double max_ppl_delta_pct;  /* default 5 (%) */
    double max_kld;            /* mean KL(base||cand), nats; default off */
    double min_top1;           /* top-1 agreement share in [0,1]; default off */
    double max_pass_drop_pct;  /* --tasks: pass rate fall, percentage points; default 5 */
} qt_eval_thresholds;

QT_API void qt_eval_thresholds_default(qt_eval_thresholds *t);

#define QT_EVAL_MAX_REASONS 16
#define QT_EVAL_REASON_LEN 256

typedef struct qt_eval_verdict {
    qt_verdict verdict;                                   /* the worst of the reasons */
    int32_t n_reasons;
    qt_verdict level[QT_EVAL_MAX_REASONS];                /* what each reason says */
    char reasons[QT_EVAL_MAX_REASONS][QT_EVAL_REASON_LEN];
} qt_eval_verdict;

/* Applies each active threshold to the summary. Per threshold: the point
 * estimate beyond it -> fail ("ppl +5.89 % exceeds --max-ppl-delta-pct 5 by
 * 0.89 points"); within it but with the far end of the 95 % interval beyond
 * it -> needs-review; otherwise ok. The verdict is the worst outcome. */
QT_API void qt_eval_judge(const qt_eval_summary *s, const qt_eval_thresholds *t, qt_eval_verdict *out);
/* Adds a reason from elsewhere (held-out check, ...); raises the verdict to `level` if worse. */
QT_API void qt_eval_verdict_note(qt_eval_verdict *v, qt_verdict level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Exit status policy of `quanta eval`: 0 when every verdict is pass, 1 when
 * any is fail or needs-review (2, usage errors, is the CLI's own). */
QT_API int qt_eval_exit_status(const qt_eval_verdict *v, int32_t n);

/* ---- log-likelihood scoring callback ------------------------------------------ */

/* The score of `continuation` right after `context` (concatenated as they are:
 * multiple choice passes " " + ending) under one model: the sum of
 * the log-probabilities of its tokens (nats) and whether each of them was the
 * model's argmax under teacher forcing (= greedy decoding would produce it).
 * The engine glue tokenizes context + continuation together and scores the
 * tokens after the longest common prefix with the context's own tokens. */
typedef struct qt_eval_score {
    double logprob;
    int32_t n_tokens;
    bool greedy;
} qt_eval_score;

typedef qt_status (*qt_eval_score_fn)(void *user, const char *context, const char *continuation, qt_eval_score *out);

/* ---- multiple choice ---------------------------------------------------------- */

/* One item, hellaswag-shaped: {"context": "...", "endings": ["...", ...], "label": 2}.
 * Also accepted: "ctx" for "context", a label written as a string of digits. */
typedef struct qt_mc_item {
    char *context;
    int32_t n_endings;
    char **endings;      /* (n_endings) */
    int32_t label;       /* index of the correct ending */
    int64_t line;        /* 1-based line in the file, for messages */
} qt_mc_item;

typedef struct qt_mc_set {
    int32_t n_items;
    qt_mc_item *items;   /* (n_items) */
} qt_mc_set;

/* Parses JSONL text (one object per non-blank line). Errors are QT_ERR_FORMAT
 * naming the file, the line, the field and the problem. */
QT_API qt_status qt_mc_parse(const char *text, size_t len, const char *name, qt_mc_set **out);
QT_API qt_status qt_mc_load(const char *path, qt_mc_set **out);
QT_API void qt_mc_free(qt_mc_set *s);

typedef struct qt_mc_result {
    int32_t n_items;
    int32_t n_correct;       /* choice = argmax of log-likelihood per byte of the ending (lm-eval's acc_norm) */
    int32_t n_correct_sum;   /* choice = argmax of the summed log-likelihood (lm-eval's acc) */
    double acc, acc_lo, acc_hi;  /* n_correct / n_items with its Wilson 95 % interval */
    double acc_sum;
    int32_t *choice;         /* (n_items) ending picked (per-byte rule) */
} qt_mc_result;

QT_API qt_status qt_mc_run(const qt_mc_set *set, qt_eval_score_fn score, void *user, const qt_progress *progress,
                    qt_mc_result *out);
QT_API void qt_mc_result_free(qt_mc_result *r);
/* Items where the two results picked different endings. */
QT_API int32_t qt_mc_n_disagree(const qt_mc_result *a, const qt_mc_result *b);

/* ---- needle in a haystack ----------------------------------------------------- */

/* Counts the tokens of a text under the model's tokenizer (no BOS). */
typedef qt_status (*qt_eval_count_fn)(void *user, const char *text, int32_t *n_tokens);

typedef struct qt_needle_opts {
    int32_t n_lengths;
    const int32_t *lengths;  /* (n_lengths) prompt lengths in tokens; default 128, 256, 448 */
    int32_t n_depths;
    const double *depths;    /* (n_depths) needle position as a share of the haystack: 0 = first, 1 = last */
    int32_t n_trials;        /* keys per (length, depth) cell; default 4 */
    const char *needle;      /* sentence with "{KEY}": default "The secret number is {KEY}." */
    const char *query;       /* appended after the haystack: default "The secret number is" */
    uint64_t seed;           /* picks the keys (4-digit numbers) and the haystack offsets */
} qt_needle_opts;

QT_API void qt_needle_opts_default(qt_needle_opts *o);

/* Builds one prompt: whole sentences of `text` starting near byte `start`,
 * the needle (with `key` substituted) inserted at the sentence boundary
 * closest to `depth` of the haystack, then " " + query; its token count
 * (by `count`) is at most `target_tokens`. *prompt is malloc'd. */
QT_API qt_status qt_needle_build(const char *text, size_t len, size_t start, int32_t target_tokens, double depth,
                          const char *needle, const char *key, const char *query, qt_eval_count_fn count,
                          void *user, char **prompt, int32_t *n_tokens);

typedef struct qt_needle_cell {
    int32_t length;          /* requested length (tokens) */
    double depth;
    int32_t n_trials, n_success;
    double mean_tokens;      /* actual prompt length */
    double mean_key_logprob; /* log-probability of the key's tokens, nats (graded signal for weak models) */
} qt_needle_cell;

typedef struct qt_needle_result {
    int32_t n_cells;         /* n_lengths * n_depths, length-major */
    qt_needle_cell *cells;
    int32_t n_trials, n_success;
} qt_needle_result;

/* Success of one trial: every token of " " + key is the model's argmax under
 * teacher forcing after the prompt, i.e. greedy decoding writes the key next. */
QT_API qt_status qt_needle_run(const char *text, size_t len, const qt_needle_opts *o, qt_eval_count_fn count,
                        qt_eval_score_fn score, void *user, const qt_progress *progress, qt_needle_result *out);
QT_API void qt_needle_result_free(qt_needle_result *r);

/* ---- task files (quanta/tasks.h): base against candidate on the user's items ------ */

/* Generates the output of item `it` (sample `sample` of n): *text malloc'd.
 * *infra = true marks a failure of the infrastructure (a server that errors or
 * times out), counted apart from the model's failures; *text may then be NULL. */
typedef qt_status (*qt_task_gen_fn)(void *user, const qt_task_item *it, int32_t sample, char **text, bool *infra);

typedef struct qt_task_outcome {
    char *text;            /* the output that decided the item: the first passing sample, else sample 0 */
    bool pass;             /* every check passed on one sample (pass@k) */
    bool infra;            /* failed by infrastructure (no output) */
    bool choice_skipped;   /* a choice check had no log-likelihoods (a server without logprobs) */
    uint64_t check_pass;   /* bit j: check j passed on that output */
    char why[QT_CHECK_WHY_LEN]; /* the first failing check: "checks[1] regex: no match for /x/" */
} qt_task_outcome;

typedef struct qt_task_result {
    int32_t n_items, n_samples;
    int32_t n_pass, n_infra;           /* items passing; items failed by infrastructure */
    double pass_rate, pass_lo, pass_hi; /* n_pass / n_items with its Wilson 95 % interval */
    int32_t n_checks[QT_CHECK__COUNT], n_checks_pass[QT_CHECK__COUNT]; /* per check type, over the items */
    qt_task_outcome *items;            /* (n_items) in file order */
} qt_task_result;

/* A choice check's scorer: qt_eval_score_fn's score of `continuation` after
 * `context`, or, when none came with QT_OK, why in *miss (zeroed by the
 * caller): no_logprobs (a server that gives no log-likelihoods: the item's
 * choice checks are skipped, with a note) or infra (the server failed: the
 * item fails by infrastructure, `why` the reason). */
typedef struct qt_task_miss {
    bool no_logprobs, infra;
    char why[QT_CHECK_WHY_LEN];
} qt_task_miss;
typedef qt_status (*qt_task_score_fn)(void *user, const char *context, const char *continuation, qt_eval_score *out,
                                      qt_task_miss *miss);

/* Runs every item: n_samples outputs by gen (items without a generating check
 * skip it), each check on them, choice checks by score (NULL: skipped with
 * choice_skipped). Deterministic when gen is. */
QT_API qt_status qt_tasks_run(const qt_task_set *set, int32_t n_samples, qt_task_gen_fn gen, qt_task_score_fn score,
                              void *user, const qt_progress *progress, qt_task_result *out);
/* The same with up to n_workers items at once, on threads of their own: gen
 * and score must then be safe to call from several threads (the server
 * client's are; the engine's are not: give 1). Results are in file order and
 * equal qt_tasks_run's when gen and score are deterministic; an error stops
 * the run and the first item's (in file order) is returned. */
QT_API qt_status qt_tasks_run_parallel(const qt_task_set *set, int32_t n_samples, int32_t n_workers, qt_task_gen_fn gen,
                                       qt_task_score_fn score, void *user, const qt_progress *progress, qt_task_result *out);
QT_API void qt_task_result_free(qt_task_result *r);
/* Items whose pass differs between base and candidate (same set). */
QT_API int32_t qt_tasks_n_flipped(const qt_task_result *base, const qt_task_result *cand);

/* A generator (qt_task_gen_fn) through an OpenAI-compatible server: one
 * blocking request per output, /v1/chat/completions for items with messages,
 * /v1/completions otherwise, non-streamed, with max_tokens and temperature
 * `temp` (0: greedy). Stop strings are not sent (quanta serve refuses them):
 * the text is cut before the first one here, which gives the local engine's
 * text at the cost of the tokens past it. A 503 answer is retried after
 * 0.5 s, 1 s, 2 s ... (max_retries times); any other non-200 answer, a timeout
 * or no answer is an infrastructure failure with the reason as its text.
 * Choice checks score through qt_task_http_score. Both are thread-safe. */
typedef struct qt_task_http {
    const char *url;     /* base URL, "http://127.0.0.1:8080" */
    const char *model;   /* "model" of each request ("" when NULL) */
    const char *api_key; /* NULL: no Authorization header */
    double timeout_s;    /* per request, seconds; default 120 */
    int32_t max_retries; /* 503 answers retried; default 4 */
    float temp;          /* default 0 */
    uint64_t seed;       /* sent as "seed" (+ the item index * 1000003 + the sample) when temp > 0 */
    double time_limit_s; /* no request starts this many seconds after the first (the item fails by
                            infrastructure: "time limit reached"); <= 0: none */
    const qt_task_set *set; /* the items (for their index) */
    double t0;           /* the monotonic clock (s) the time limit counts from: set by the first call
                            when 0 (set it before calling from several threads) */
} qt_task_http;
QT_API void qt_task_http_default(qt_task_http *h);
QT_API qt_status qt_task_http_gen(void *user, const qt_task_item *it, int32_t sample, char **text, bool *infra);
/* A scorer (qt_task_score_fn) through the same server: one /v1/completions
 * request of context + continuation with "echo": true, "logprobs": 1 and
 * "max_tokens": 0, whose answer's logprobs (OpenAI's {tokens, token_logprobs,
 * text_offset}, or vLLM's prompt_logprobs) give the log-probability of every
 * prompt token. The continuation's are those of the tokens ending past the
 * context's last character, the rule of the engine's scorer when the two
 * tokenize alike (docs/eval.md). An answer without logprobs: miss->no_logprobs. */
QT_API qt_status qt_task_http_score(void *user, const char *context, const char *continuation, qt_eval_score *out,
                                    qt_task_miss *miss);

/* ---- held-out check ----------------------------------------------------------- */

/* The calibration fingerprint (qt_calib_*) is quantization's: quanta/quantize.h. */

typedef struct qt_heldout_result {
    bool same_file;          /* evaluation file has the calibration file's SHA-256 */
    uint64_t overlap_bytes;  /* same file: bytes evaluated that calibration also used */
    int32_t n_sampled;       /* evaluation shingles under the cutoff */
    int32_t n_matched;       /* ... of which the calibration sample holds */
    double overlap;          /* share of the evaluated text found in the calibration text, [0,1] */
    bool overlaps;           /* overlap >= QT_HELDOUT_WARN_SHARE, or any byte overlap of the same file */
} qt_heldout_result;

#define QT_HELDOUT_WARN_SHARE 0.02

/* Compares the evaluation text (the whole file, of which bytes [0, used)
 * were evaluated) with the fingerprint. */
QT_API qt_status qt_heldout_check(const qt_calib_fingerprint *calib, const void *eval_file, size_t size, uint64_t used,
                           qt_heldout_result *out);

/* ---- reports ------------------------------------------------------------------ */

typedef struct qt_eval_model_info {
    const char *label;       /* what the user wrote (path, with @kv=... if any) */
    const char *path;
    const char *kv;          /* KV cache description ("f16", "fp8-e4m3, scale 1.0") */
    uint64_t size_bytes;     /* weights as stored; 0 unknown */
    double bpw;              /* bits per weight of the weights; NAN unknown */
    double decode_tps;       /* --bench: decode tokens/s; NAN when not measured */
    double prefill_tps;      /* --bench: prompt tokens/s; NAN when not measured */
} qt_eval_model_info;

typedef struct qt_eval_candidate {
    qt_eval_model_info info;
    qt_eval_summary summary;
    qt_eval_verdict verdict;
    const qt_mc_result *mc;            /* NULL when not run */
    const qt_needle_result *needle;    /* NULL when not run */
    const qt_heldout_result *heldout;  /* NULL when the candidate records no calibration text */
    const qt_task_result *tasks;       /* NULL when --tasks was not given */
    int32_t n_warnings;
    const char *const *warnings;
} qt_eval_candidate;

typedef struct qt_eval_report {
    qt_eval_model_info base;
    const qt_mc_result *base_mc;
    const qt_needle_result *base_needle;
    const char *text_path;             /* evaluation text */
    int32_t n_ctx, n_chunks;
    const char *mc_path;               /* NULL when --mc was not given */
    const qt_task_set *task_set;       /* NULL when --tasks was not given */
    const qt_task_result *base_tasks;
    const char *tasks_path;
    qt_eval_thresholds thresholds;
    bool strict;
    int32_t n_candidates;
    const qt_eval_candidate *candidates;
} qt_eval_report;

/* The terminal table (and each candidate's reasons), malloc'd, NUL-terminated. */
QT_API qt_status qt_eval_report_table(const qt_eval_report *r, char **out);
/* The JSON document of docs/eval.md (schema "quanta.eval/1"), malloc'd. */
QT_API qt_status qt_eval_report_json(const qt_eval_report *r, char **out);
/* A self-contained HTML page (inline CSS and SVG, no scripts, no external links), malloc'd. */
QT_API qt_status qt_eval_report_html(const qt_eval_report *r, char **out);
/* Either of the above written atomically to path. */
QT_API qt_status qt_eval_report_write_json(const qt_eval_report *r, const char *path);
QT_API qt_status qt_eval_report_write_html(const qt_eval_report *r, const char *path);

/* ---- running models: the engine glue behind `quanta eval` ------------------------ */

/* One model to run: a path and the engine settings it runs with. */
typedef struct qt_eval_model {
    char label[4096];        /* shown in reports: the spec as written, or its name= */
    char path[4096];
    qt_engine_opts engine;   /* n_ctx is set by qt_eval_run */
} qt_eval_model;

/* Parses "PATH[@key=value,...]" (keys: kv, kv-scale, kv-gran, name; docs/eval.md)
 * on top of `defaults`. The split is at the last '@' followed by key=value.
 * QT_ERR_ARG naming the bad key or value. */
QT_API qt_status qt_eval_parse_model(const char *spec, const qt_engine_opts *defaults, qt_eval_model *out);

typedef struct qt_eval_opts {
    int32_t n_ctx;                 /* chunk length, llama-perplexity's -c; default 512 */
    int32_t n_chunks;              /* <= 0: every full chunk of the text */
    qt_eval_thresholds thresholds;
    bool strict;                   /* held-out overlap fails instead of warning */
    bool needle;
    qt_needle_opts needle_opts;    /* lengths longer than n_ctx allows are dropped */
    const char *mc_path;           /* NULL: no multiple choice */
    const char *tasks_path;        /* NULL: no task file */
    int32_t task_samples;          /* outputs per item (pass@k); 1: greedy */
    uint64_t task_seed;            /* the sampler's seed when task_samples > 1 */
    float task_temp;               /* its temperature (default 0.8) */
    bool bench;
    qt_progress progress;
} qt_eval_opts;

QT_API void qt_eval_opts_default(qt_eval_opts *o);

typedef struct qt_eval_result qt_eval_result;

/* Opens every model (a path given twice is opened once), tokenizes the text
 * once with the base's tokenizer, runs base and candidates chunk by chunk on
 * identical tokens (llama-perplexity's chunks: BOS first, second half scored),
 * then the optional tasks, and judges each candidate. Nothing is written;
 * the report is ready for qt_eval_report_*. */
QT_API qt_status qt_eval_run(const qt_eval_model *base, const qt_eval_model *cands, int32_t n_cands, const char *text_path,
                      const qt_eval_opts *o, qt_eval_result **out);
/* One model's run of a task set on quanta's engine, exactly as qt_eval_run
 * runs it (its own tokenizer, a context of o->n_ctx, o->task_samples,
 * task_seed, task_temp, progress): the local side of a mix of local models
 * and servers (`quanta eval --base MODEL --candidate URL`). */
QT_API qt_status qt_tasks_run_model(const qt_eval_model *m, const qt_task_set *set, const qt_eval_opts *o, qt_task_result *out);
QT_API const qt_eval_report *qt_eval_result_report(const qt_eval_result *r);
QT_API void qt_eval_result_free(qt_eval_result *r);

#ifdef __cplusplus
}
#endif
#endif
