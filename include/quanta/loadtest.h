/* quanta/loadtest.h — load tests of any OpenAI-compatible server (`quanta loadtest`).
 *
 * A real HTTP client (libcurl's multi interface, one thread) streams
 * /v1/completions or /v1/chat/completions with stream_options.include_usage and
 * times every server-sent event. The metrics are defined as `vllm bench serve`
 * defines them (vllm/benchmarks/serve.py, lib/endpoint_request_func.py):
 *   TTFT  time from sending the request to the first chunk that has choices;
 *   ITL   one value per later chunk with choices: its time minus the previous one's;
 *   E2EL  time from sending to the last chunk with choices (chat: the last data event);
 *   TPOT  (E2EL - TTFT) / (n - 1) for n > 1 output tokens (0 for goodput when n <= 1);
 *   n     usage.completion_tokens, else the generated text counted by the tokenizer;
 *   goodput  requests per second that met every SLO given (TTFT, TPOT, E2EL <= limit).
 * Distributions report mean, median, population std and p90/p99 by linear
 * interpolation between order statistics (numpy's default percentile).
 *
 *   qt_lt_dist_*, qt_lt_tpot, qt_lt_meets_slo, qt_lt_peak_concurrency,
 *   qt_lt_metrics_compute, qt_lt_level_ok, qt_lt_sweep_choose, qt_lt_knee,
 *   qt_lt_arrivals             pure functions on plain arrays (docs/loadtest.md)
 *   qt_lt_random_prompts, qt_lt_dataset_load   the requests
 *   qt_lt_run_requests         one bounded run against a server
 *   qt_lt_report_*             table, JSON, HTML (SVG plot), comparison of two JSON reports
 */
#ifndef QUANTA_LOADTEST_H
#define QUANTA_LOADTEST_H

#include "core.h"
#include "tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- metric math ----------------------------------------------------------- */

typedef struct qt_lt_dist {
    int64_t n;
    double mean, median, std, p90, p99; /* 0 when n == 0 (vLLM reports 0 for an empty list) */
} qt_lt_dist;

/* p-th percentile (0..100) of sorted[0..n) by linear interpolation at rank
 * p/100 * (n - 1), numpy's default. 0 when n == 0. */
QT_API double qt_lt_percentile_sorted(const double *sorted, int64_t n, double p);
/* Summary of x[0..n) (x is sorted in place), each value multiplied by scale (1000: s -> ms). */
QT_API qt_lt_dist qt_lt_dist_of(double *x, int64_t n, double scale);

/* (e2el - ttft) / (n_output - 1) when n_output > 1, else 0 (seconds in, seconds out). */
QT_API double qt_lt_tpot(double e2el_s, double ttft_s, int64_t n_output);

/* Service-level objectives in milliseconds; 0 = not set. */
typedef struct qt_lt_slo {
    double ttft_ms, tpot_ms, e2el_ms;
} qt_lt_slo;
QT_API bool qt_lt_slo_any(const qt_lt_slo *slo);
/* true when every SLO that is set holds (value <= limit), as vLLM's goodput counts. */
QT_API bool qt_lt_meets_slo(const qt_lt_slo *slo, double ttft_s, double tpot_s, double e2el_s);
/* Parses "ttft:MS,tpot:MS,e2el:MS" (any subset, any order). QT_ERR_ARG naming the part. */
QT_API qt_status qt_lt_slo_parse(const char *s, qt_lt_slo *out);

/* Most requests in flight at once, given each one's [start, end] (an end equal
 * to another's start does not overlap it). */
QT_API int32_t qt_lt_peak_concurrency(const double *start, const double *end, int32_t n);

/* Arrival offsets (seconds from the start, nondecreasing) for n requests at
 * `rate` requests/s: gamma-distributed gaps of shape `burstiness` and scale
 * 1/(rate*burstiness) (exponential, a Poisson process, when burstiness is 1),
 * accumulated and rescaled so that the last arrival is at n/rate, as vLLM does.
 * rate <= 0 or infinite: all zero. Seeded (splitmix64, lib/core/rng.h), not numpy's stream. */
QT_API qt_status qt_lt_arrivals(int32_t n, double rate, double burstiness, uint64_t seed, double *out);

/* ---- one request's outcome ------------------------------------------------------ */

typedef struct qt_lt_result {
    bool ok;
    int32_t http_status;      /* 0 when no response came */
    char error[192];          /* why it failed; "" when ok */
    double start_s;           /* when it was sent, seconds from the run's start */
    double ttft_s, e2el_s;
    double *itl_s;            /* (n_itl) owned */
    int32_t n_itl;
    int32_t n_chunks;         /* chunks with choices */
    int32_t prompt_len;       /* the request's tokens: dataset (tokenizer) or usage.prompt_tokens; -1 unknown */
    int32_t output_tokens;    /* see output_from */
    const char *output_from;  /* "usage", "tokenizer", or "chunks" (no usage and no tokenizer) */
    int32_t usage_completion; /* usage.completion_tokens as streamed, -1 when absent */
    char *text;               /* generated text, owned */
    size_t text_len;
} qt_lt_result;

/* ---- aggregate over one run -------------------------------------------------- */

typedef struct qt_lt_metrics {
    int32_t completed, failed;
    int64_t total_input, total_output;
    double duration_s;
    double request_throughput;     /* completed / duration, req/s */
    double output_throughput;      /* total_output / duration, tok/s */
    double total_token_throughput; /* (total_input + total_output) / duration, tok/s */
    bool has_slo;
    int32_t good_completed;        /* completed requests that met every SLO (== completed without SLOs) */
    double goodput;                /* good_completed / duration, req/s */
    double error_rate;             /* failed / (completed + failed) */
    int32_t peak_concurrency;
    qt_lt_dist ttft_ms, tpot_ms, itl_ms, e2el_ms;
    double server_peak_rss_bytes;      /* < 0: the server's /metrics did not say */
    double server_kv_cache_usage_max;  /* 0..1; < 0: not said */
} qt_lt_metrics;

QT_API qt_status qt_lt_metrics_compute(const qt_lt_result *r, int32_t n, double duration_s, const qt_lt_slo *slo,
                                       qt_lt_metrics *out);

/* ---- sweeps -------------------------------------------------------------------- */

typedef struct qt_lt_level {
    int32_t concurrency;
    qt_lt_metrics m;
} qt_lt_level;

/* Goodput share a level needs under its SLOs (of its request throughput). */
#define QT_LT_GOODPUT_SHARE 0.95
/* A level is sustainable when something completed, the error rate is <= max_error_rate
 * and, with SLOs, goodput >= QT_LT_GOODPUT_SHARE x request throughput. */
QT_API bool qt_lt_level_ok(const qt_lt_metrics *m, double max_error_rate);
/* The highest concurrency among sustainable levels, 0 when none is. */
QT_API int32_t qt_lt_sweep_choose(const qt_lt_level *lv, int32_t n, double max_error_rate);
/* The knee (levels in increasing concurrency): the first level after which the next
 * adds less than QT_LT_KNEE_GAIN to output throughput; the last level if throughput
 * never flattens; 0 when n == 0. */
#define QT_LT_KNEE_GAIN 0.10
QT_API int32_t qt_lt_knee(const qt_lt_level *lv, int32_t n);

/* ---- requests -------------------------------------------------------------------- */

typedef struct qt_lt_prompt {
    char *prompt;        /* completions text, or NULL */
    char *messages_json; /* chat: a JSON array of {role, content}, or NULL */
    int32_t prompt_len;  /* tokens (BOS included when the vocabulary adds one); -1 unknown */
    int32_t max_tokens;  /* output tokens asked for */
} qt_lt_prompt;
QT_API void qt_lt_prompts_free(qt_lt_prompt *p, int32_t n);

/* n prompts of random tokens whose text tokenizes to exactly the drawn length
 * (the BOS the vocabulary adds counted in it, as vLLM's random dataset does):
 * input lengths uniform in [floor(L(1-R)), ceil(L(1+R))], output lengths likewise
 * (at least 1), R in [0, 1). Deterministic for a seed. */
/* Tokens are drawn from the vocabulary's normal ones (type 1; all but BOS/EOS/UNK/PAD without types). */
QT_API qt_status qt_lt_random_prompts(const qt_vocab *vocab, const qt_tokenizer *tok, int32_t n, int32_t input_len,
                                      int32_t output_len, double range_ratio, uint64_t seed, qt_lt_prompt **out);
/* The calibration JSONL schema: one object per non-blank line with "prompt" (a string)
 * or "messages" (an array of {"role", "content"} objects), optional "max_tokens"
 * (a positive integer; default_max_tokens otherwise). Lines are used in order,
 * cycled to reach n. tok (may be NULL) counts prompt tokens. Errors name file:line and field. */
QT_API qt_status qt_lt_dataset_load(const char *path, const qt_tokenizer *tok, int32_t n, int32_t default_max_tokens,
                                    qt_lt_prompt **out);

/* ---- a run ----------------------------------------------------------------------- */

typedef struct qt_lt_options {
    const char *url;          /* base URL "http://host:port" */
    const char *endpoint;     /* "/v1/completions" or "/v1/chat/completions" */
    const char *model;
    const char *api_key;      /* NULL: no Authorization header */
    int32_t max_concurrency;  /* 0: unlimited */
    double request_rate;      /* requests/s; 0 or infinite: all at once */
    double burstiness;        /* gamma shape; 1 = Poisson */
    uint64_t seed;
    double timeout_s;         /* per request (0: none) */
    double time_limit_s;      /* no request starts after this many seconds (0: none) */
    bool ignore_eos;
    bool scrape_metrics;      /* poll the server's /metrics during the run */
    const qt_tokenizer *tok;  /* counts output tokens when usage is absent; may be NULL */
} qt_lt_options;
QT_API void qt_lt_options_default(qt_lt_options *o);

typedef struct qt_lt_run {
    qt_lt_result *results;   /* (n_sent) in request order */
    int32_t n_sent;          /* requests started (the time limit may stop it before n) */
    double duration_s;       /* first send to last completion */
    double server_peak_rss_bytes, server_kv_cache_usage_max; /* < 0: not exposed */
} qt_lt_run;

/* Sends prompts p[0..n) as the options say and waits for every answer. A
 * server error, a refused connection or a timeout fails that request, not the
 * run; QT_ERR_INTERRUPTED when qt_cancelled(); QT_ERR_ARG for a bad URL. */
QT_API qt_status qt_lt_run_requests(const qt_lt_options *o, const qt_lt_prompt *p, int32_t n, qt_lt_run *out);
QT_API void qt_lt_run_free(qt_lt_run *r);

/* The largest value of any sample of metric `name` (labels ignored) in a
 * Prometheus text exposition; false when absent. */
QT_API bool qt_lt_prom_max(const char *text, size_t len, const char *name, double *out);

/* ---- reports ------------------------------------------------------------------------ */

typedef struct qt_lt_report {
    const char *url, *endpoint, *model, *dataset;
    int32_t num_prompts, input_len, output_len;
    double range_ratio, request_rate, burstiness, max_error_rate;
    int32_t max_concurrency;
    uint64_t seed;
    qt_lt_slo slo;
    bool sweep;              /* levels[] is a sweep; else levels[0] is the one run */
    qt_lt_level *levels;
    int32_t n_levels;
    int32_t sustainable, knee; /* sweeps: qt_lt_sweep_choose, qt_lt_knee */
} qt_lt_report;

/* Malloc'd text: the terminal table, the JSON report (docs/loadtest.md has the
 * schema), a self-contained HTML page (a sweep gets an SVG plot of throughput
 * and p99 latencies against concurrency, the SLO lines and the chosen level). */
QT_API qt_status qt_lt_report_table(const qt_lt_report *r, char **out);
QT_API qt_status qt_lt_report_json(const qt_lt_report *r, char **out);
QT_API qt_status qt_lt_report_html(const qt_lt_report *r, char **out);
/* Two JSON reports (a baseline and a candidate) side by side: a table and a JSON
 * object; names label the columns. QT_ERR_FORMAT naming the file and field. */
QT_API qt_status qt_lt_compare(const char *a_json, const char *a_name, const char *b_json, const char *b_name,
                               char **table, char **json);

#ifdef __cplusplus
}
#endif
#endif
