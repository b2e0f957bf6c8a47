/* lib/eval/tasks_http.c — a task item's output from an OpenAI-compatible
 * server (vLLM, llama-server, `quanta serve`): one blocking request per output
 * through the load test's HTTP client, 503 retried with exponential backoff,
 * every other failure reported as infrastructure (not the model's fault). */
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

qt_status qt_task_http_gen(void *user, const qt_task_item *it, int32_t sample, char **text, bool *infra) {
    qt_task_http *h = user;
    *text = NULL;
    *infra = false;
    const double now = now_s();
    if (h->t0 <= 0) h->t0 = now;
    if (h->time_limit_s > 0 && now - h->t0 >= h->time_limit_s) {
        char lim[32];
        snprintf(lim, sizeof lim, "%g", h->time_limit_s);
        return infra_fail(text, infra, "time limit of %s s reached%s", lim, "");
    }
    char *body = request_body(h, it, sample), *resp = NULL;
    if (!body) return qt_error(QT_ERR_NOMEM, "tasks: out of memory");
    const char *path = it->messages ? "/v1/chat/completions" : "/v1/completions";
    long code = 0;
    qt_status s = QT_OK;
    double wait = BACKOFF0_S;
    for (int32_t tries = 0;; tries++) {
        free(resp);
        resp = NULL;
        s = qt__lt_post(h->url, path, h->api_key, body, h->timeout_s, &code, &resp);
        if (s || code != 503 || tries >= h->max_retries || qt_cancelled()) break;
        sleep_s(wait);
        wait *= 2;
    }
    free(body);
    if (s == QT_ERR_NOMEM) { free(resp); return s; }
    if (s) s = infra_fail(text, infra, "%s%s", qt_last_error(), "");
    else if (code != 200) s = http_fail(text, infra, code, resp);
    else if (!(*text = answer_text(resp, it)))
        s = infra_fail(text, infra, "%s: the answer has no %s", path, it->messages ? "choices[0].message.content" : "choices[0].text");
    free(resp);
    return s;
}
