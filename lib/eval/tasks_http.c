/* lib/eval/tasks_http.c — a task item's output from an OpenAI-compatible
 * server (vLLM, llama-server, `quanta serve`): one blocking request per output
 * through the load test's HTTP client, 503 retried with exponential backoff,
 * every other failure reported as infrastructure (not the model's fault).
 * Choice checks score each choice from the prompt's logprobs of an echo
 * (OpenAI's legacy completions shape, or vLLM's prompt_logprobs). */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eval_internal.h"
#include "loadtest/loadtest_internal.h"

#define BACKOFF0_S 0.5 /* first wait after a 503; doubles each retry */

void qt_task_http_default(qt_task_http *h) { *h = (qt_task_http){.timeout_s = 120, .max_retries = 4}; }

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    return d ? memcpy(d, s, n) : NULL;
}

static char *request_body(const qt_task_http *h, const qt_task_item *it, int32_t sample) {
    json_t *b = json_object();
    json_object_set_new(b, "model", json_string(h->model ? h->model : ""));
    if (it->messages) json_object_set_new(b, "messages", json_loads(it->messages, 0, NULL));
    else json_object_set_new(b, "prompt", json_string(it->prompt ? it->prompt : ""));
    json_object_set_new(b, "max_tokens", json_integer(it->max_tokens));
    json_object_set_new(b, "temperature", json_real(h->temp));
    if (h->temp > 0) {
        const int64_t i = h->set ? it - h->set->items : 0;
        json_object_set_new(b, "seed", json_integer((json_int_t)(h->seed + (uint64_t)i * 1000003u + (uint64_t)sample)));
    }
    char *s = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    return s;
}

/* choices[0].text or choices[0].message.content, cut before the stop string that completes first; NULL when absent. */
static char *answer_text(const char *body, const qt_task_item *it) {
    json_t *j = json_loads(body, 0, NULL);
    json_t *c0 = json_array_get(json_object_get(j, "choices"), 0);
    json_t *t = it->messages ? json_object_get(json_object_get(c0, "message"), "content") : json_object_get(c0, "text");
    char *out = json_is_string(t) ? dup_str(json_string_value(t)) : NULL;
    json_decref(j);
    /* the engine stops at the first stop string to complete: the earliest end, then the earliest start */
    size_t end = SIZE_MAX, cut = SIZE_MAX;
    for (int32_t k = 0; out && k < it->n_stop; k++) {
        const char *hit = strstr(out, it->stop[k]);
        if (!hit) continue;
        size_t s = (size_t)(hit - out), e = s + strlen(it->stop[k]);
        if (e < end || (e == end && s < cut)) end = e, cut = s;
    }
    if (cut != SIZE_MAX) out[cut] = '\0';
    return out;
}

/* An infrastructure failure: the reason becomes the text the report shows. */
static qt_status infra_fail(char **text, bool *infra, const char *fmt, const char *a, const char *b) {
    char msg[QT_CHECK_WHY_LEN];
    snprintf(msg, sizeof msg, fmt, a, b);
    *infra = true;
    *text = dup_str(msg);
    return *text ? QT_OK : qt_error(QT_ERR_NOMEM, "tasks: out of memory");
}

/* A non-200 answer's reason: OpenAI's error.message when the body has one, else the body. */
static qt_status http_fail(char **text, bool *infra, long code, const char *resp) {
    json_t *j = resp ? json_loads(resp, 0, NULL) : NULL;
    json_t *msg = json_object_get(json_object_get(j, "error"), "message");
    char head[32];
    snprintf(head, sizeof head, "HTTP %ld", code);
    qt_status s = infra_fail(text, infra, "%s: %.120s", head, json_is_string(msg) ? json_string_value(msg) : resp ? resp : "");
    json_decref(j);
    return s;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_s(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* The time limit: true (with an infrastructure failure in text) once it is reached. */
static bool past_limit(qt_task_http *h, char **text, bool *infra, qt_status *s) {
    const double now = now_s();
    if (h->t0 <= 0) h->t0 = now;
    if (h->time_limit_s <= 0 || now - h->t0 < h->time_limit_s) return false;
    char lim[32];
    snprintf(lim, sizeof lim, "%g", h->time_limit_s);
    *s = infra_fail(text, infra, "time limit of %s s reached%s", lim, "");
    return true;
}

/* One POST, a 503 answer retried after BACKOFF0_S, then twice as long each time. */
static qt_status post_retry(const qt_task_http *h, const char *path, const char *body, long *code, char **resp) {
    qt_status s = QT_OK;
    double wait = BACKOFF0_S;
    *resp = NULL;
    for (int32_t tries = 0;; tries++) {
        free(*resp);
        *resp = NULL;
        s = qt__lt_post(h->url, path, h->api_key, body, h->timeout_s, code, resp);
        if (s || *code != 503 || tries >= h->max_retries || qt_cancelled()) break;
        sleep_s(wait);
        wait *= 2;
    }
    return s;
}

/* A POST's failure, if any, as an infrastructure failure (true) in text. */
static bool post_failed(qt_status *s, long code, const char *resp, char **text, bool *infra) {
    if (*s == QT_ERR_NOMEM) return true;
    if (*s) { *s = infra_fail(text, infra, "%s%s", qt_last_error(), ""); return true; }
    if (code != 200) { *s = http_fail(text, infra, code, resp); return true; }
    return false;
}

qt_status qt_task_http_gen(void *user, const qt_task_item *it, int32_t sample, char **text, bool *infra) {
    qt_task_http *h = user;
    *text = NULL;
    *infra = false;
    qt_status s = QT_OK;
    if (past_limit(h, text, infra, &s)) return s;
    char *body = request_body(h, it, sample), *resp = NULL;
    if (!body) return qt_error(QT_ERR_NOMEM, "tasks: out of memory");
    const char *path = it->messages ? "/v1/chat/completions" : "/v1/completions";
    long code = 0;
    s = post_retry(h, path, body, &code, &resp);
    free(body);
    if (!post_failed(&s, code, resp, text, infra) && !(*text = answer_text(resp, it)))
        s = infra_fail(text, infra, "%s: the answer has no %s", path, it->messages ? "choices[0].message.content" : "choices[0].text");
    free(resp);
    return s;
}

/* ---- choice checks: the prompt's log-likelihood from an echo ------------------------ */

/* Characters (code points) of UTF-8 text: OpenAI's text_offset counts characters. */
static int64_t n_chars(const char *t, size_t n) {
    int64_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)t[i] & 0xC0) != 0x80;
    return c;
}

/* Sums the logprobs of the prompt tokens that end past `boundary` (characters)
 * of a prompt of `total` characters. ends[i]: where token i ends; lp[i] may be
 * NULL only for token 0 (nothing predicts it). A short reason in why on failure. */
static bool sum_after(json_t *lp, const int64_t *ends, size_t n, int64_t boundary, qt_eval_score *out, char *why) {
    for (size_t i = 1; i < n; i++) {
        if (ends[i] <= boundary) continue;
        json_t *v = json_array_get(lp, i);
        if (!json_is_number(v)) { snprintf(why, QT_CHECK_WHY_LEN, "logprob %zu of the prompt is not a number", i); return false; }
        out->logprob += json_number_value(v);
        out->n_tokens++;
    }
    if (out->n_tokens == 0) snprintf(why, QT_CHECK_WHY_LEN, "the logprobs cover no token of the choice");
    return out->n_tokens > 0;
}

/* OpenAI's shape: logprobs {tokens, token_logprobs, text_offset}; tokens past the prompt
 * (a server that generated anyway) are left out. 1: scored, 0: failed (why), -1: not this shape. */
static int openai_logprobs(json_t *lp, int64_t boundary, int64_t total, qt_eval_score *out, char *why) {
    json_t *toks = json_object_get(lp, "tokens"), *lps = json_object_get(lp, "token_logprobs"), *offs = json_object_get(lp, "text_offset");
    if (!json_is_array(lps) || !json_is_array(toks)) return -1;
    size_t n = json_array_size(lps);
    if (json_array_size(toks) != n || (offs && (!json_is_array(offs) || json_array_size(offs) != n))) {
        snprintf(why, QT_CHECK_WHY_LEN, "logprobs: tokens, token_logprobs and text_offset differ in length");
        return 0;
    }
    int64_t *start = malloc((n + 1) * sizeof *start), *ends = malloc((n + 1) * sizeof *ends);
    if (!start || !ends) { free(start), free(ends); snprintf(why, QT_CHECK_WHY_LEN, "out of memory"); return 0; }
    int64_t cum = 0;
    for (size_t i = 0; i < n; i++) { /* without text_offset: the tokens' own text, one after another */
        json_t *o = offs ? json_array_get(offs, i) : NULL, *t = json_array_get(toks, i);
        start[i] = json_is_integer(o) ? (int64_t)json_integer_value(o) : cum;
        cum = start[i] + (json_is_string(t) ? n_chars(json_string_value(t), json_string_length(t)) : 0);
    }
    size_t m = 0; /* the prompt's tokens */
    while (m < n && (m == 0 || start[m] < total)) m++;
    for (size_t i = 0; i < m; i++) ends[i] = i + 1 < m ? start[i + 1] : total;
    const bool ok = sum_after(lps, ends, m, boundary, out, why);
    free(start), free(ends);
    return ok;
}

/* vLLM's prompt_logprobs: [null, {"ID": {"logprob", "decoded_token", ...}}, ...], one entry
 * per position when asked for none besides the prompt's own. The ends are counted back from
 * the prompt's end, so the first token's text (null) is not needed. */
static int vllm_prompt_logprobs(json_t *pl, int64_t boundary, int64_t total, qt_eval_score *out, char *why) {
    if (!json_is_array(pl)) return -1;
    size_t n = json_array_size(pl);
    int64_t *ends = malloc((n + 1) * sizeof *ends);
    json_t *lps = json_array();
    for (size_t i = 0; lps && i < n; i++) json_array_append_new(lps, json_null());
    if (!ends || !lps) { free(ends), json_decref(lps); snprintf(why, QT_CHECK_WHY_LEN, "out of memory"); return 0; }
    int ok = 1;
    int64_t end = total;
    for (size_t i = n; i-- > 1 && ok;) {
        json_t *e = json_array_get(pl, i), *only = NULL;
        const char *k;
        json_t *v;
        if (json_is_object(e) && json_object_size(e) == 1) json_object_foreach(e, k, v) only = v;
        json_t *dec = json_object_get(only, "decoded_token");
        if (!json_is_string(dec)) {
            snprintf(why, QT_CHECK_WHY_LEN, "prompt_logprobs[%zu]: not one {logprob, decoded_token} entry", i);
            ok = 0;
            break;
        }
        ends[i] = end;
        end -= n_chars(json_string_value(dec), json_string_length(dec));
        json_array_set(lps, i, json_object_get(only, "logprob"));
    }
    if (n) ends[0] = end;
    if (ok) ok = sum_after(lps, ends, n, boundary, out, why);
    json_decref(lps);
    free(ends);
    return ok;
}

int qt__task_echo_score(const char *resp, size_t len, const char *context, const char *cont, qt_eval_score *out, char *why) {
    memset(out, 0, sizeof *out);
    json_t *j = json_loadb(resp, len, 0, NULL), *c0 = json_array_get(json_object_get(j, "choices"), 0);
    json_t *pl = json_object_get(c0, "prompt_logprobs");
    if (!pl) pl = json_object_get(j, "prompt_logprobs");
    const int64_t boundary = n_chars(context, strlen(context)), total = boundary + n_chars(cont, strlen(cont));
    int r = openai_logprobs(json_object_get(c0, "logprobs"), boundary, total, out, why);
    if (r < 0) r = vllm_prompt_logprobs(pl, boundary, total, out, why);
    json_decref(j);
    if (r <= 0) memset(out, 0, sizeof *out);
    return r;
}

qt_status qt_task_http_score(void *user, const char *context, const char *cont, qt_eval_score *out, qt_task_miss *miss) {
    qt_task_http *h = user;
    memset(out, 0, sizeof *out);
    char *text = NULL;
    bool infra = false;
    qt_status s = QT_OK;
    const size_t lc = strlen(context), lk = strlen(cont);
    char *full = malloc(lc + lk + 1);
    if (!full) return qt_error(QT_ERR_NOMEM, "tasks: out of memory");
    memcpy(full, context, lc);
    memcpy(full + lc, cont, lk + 1);
    json_t *b = json_pack("{s:s, s:s, s:i, s:b, s:i, s:f}", "model", h->model ? h->model : "", "prompt", full, "max_tokens", 0,
                          "echo", 1, "logprobs", 1, "temperature", 0.0);
    char *body = b ? json_dumps(b, JSON_COMPACT) : NULL, *resp = NULL;
    json_decref(b);
    long code = 0;
    if (!body) s = qt_error(QT_ERR_NOMEM, "tasks: out of memory");
    else if (!past_limit(h, &text, &infra, &s)) {
        s = post_retry(h, "/v1/completions", body, &code, &resp);
        if (!post_failed(&s, code, resp, &text, &infra)) {
            char why[QT_CHECK_WHY_LEN] = "";
            const int r = qt__task_echo_score(resp, strlen(resp), context, cont, out, why);
            if (r < 0) miss->no_logprobs = true;
            else if (r == 0) s = infra_fail(&text, &infra, "/v1/completions (echo): %s%s", why, "");
        }
    }
    if (!s && infra) {
        miss->infra = true;
        snprintf(miss->why, sizeof miss->why, "%s", text ? text : "no answer");
        memset(out, 0, sizeof *out);
    }
    free(text);
    free(resp);
    free(body);
    free(full);
    return s;
}
