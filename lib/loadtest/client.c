/* lib/loadtest/client.c — one bounded run against an OpenAI-compatible server.
 *
 * libcurl's multi interface drives every request from this one thread:
 * requests start when their arrival time has come (qt_lt_arrivals) and fewer
 * than max_concurrency are in flight; each response body goes through the SSE
 * parser, and every event is timed when it is parsed (vLLM times a chunk when
 * its aiohttp read returns; both are the client's receive time). The server's
 * /metrics is polled on the side, on the same multi handle.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loadtest_internal.h"

#define ERR_BODY_MAX 512     /* bytes of a non-200 body kept for the message */
#define METRICS_MAX (8u << 20)
#define SCRAPE_PERIOD_S 0.5
#define POLL_MAX_MS 50

/* The server metrics a run reports, by server: quanta serve, vLLM (v1 and v0 names), llama-server --metrics. */
static const char *const rss_names[] = {"quanta_peak_rss_bytes"};
static const char *const kv_names[] = {"quanta_kv_cache_usage_ratio", "vllm:kv_cache_usage_perc",
                                       "vllm:gpu_cache_usage_perc", "llamacpp:kv_cache_usage_ratio"};

void qt_lt_options_default(qt_lt_options *o) {
    *o = (qt_lt_options){.endpoint = "/v1/completions", .burstiness = 1, .timeout_s = 600, .scrape_metrics = true};
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;
static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

typedef struct req {
    CURL *h;
    struct curl_slist *hdrs;
    qt_lt_result *res;
    const qt_lt_prompt *prompt;
    const qt_lt_options *o;
    bool chat, first, failed;
    qt__sse sse;
    qt__sbuf text, body; /* generated text; a non-200 body */
    double t_send, t_last;
    int32_t cap_itl;
    int64_t usage_c, usage_p;
} req;

static void req_fail(req *q, const char *fmt, const char *detail) {
    if (q->failed) return;
    q->failed = true;
    snprintf(q->res->error, sizeof q->res->error, fmt, detail);
}

static int on_event(void *user, const char *data, size_t len) {
    req *q = user;
    double ts = now_s();
    qt__lt_chunk c;
    if (qt__lt_chunk_parse(data, len, &c, &q->text)) {
        req_fail(q, "bad stream chunk: %s", qt_last_error());
        return 1;
    }
    if (c.done) return 0;
    if (c.is_error) {
        req_fail(q, "error event in the stream: %s", c.error);
        return 1;
    }
    if (c.completion_tokens >= 0) q->usage_c = c.completion_tokens;
    if (c.prompt_tokens >= 0) q->usage_p = c.prompt_tokens;
    if (c.has_choices) {
        if (!q->first) {
            q->first = true;
            q->res->ttft_s = ts - q->t_send;
        } else {
            if (q->res->n_itl == q->cap_itl) {
                int32_t nc = q->cap_itl ? q->cap_itl * 2 : 64;
                double *ni = realloc(q->res->itl_s, sizeof *ni * (size_t)nc);
                if (!ni) {
                    req_fail(q, "%s", "out of memory for inter-token latencies");
                    return 1;
                }
                q->res->itl_s = ni, q->cap_itl = nc;
            }
            q->res->itl_s[q->res->n_itl++] = ts - q->t_last;
        }
        q->res->n_chunks++;
        q->t_last = ts;
    } else if (q->chat) {
        q->t_last = ts; /* vLLM's chat client ends E2EL at the last data event, usage included */
    }
    return 0;
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *user) {
    req *q = user;
    size_t n = size * nmemb;
    long code = 0;
    curl_easy_getinfo(q->h, CURLINFO_RESPONSE_CODE, &code);
    if (code != 200) {
        size_t room = q->body.n < ERR_BODY_MAX ? ERR_BODY_MAX - q->body.n : 0;
        qt__sb_add(&q->body, ptr, n < room ? n : room);
        return n;
    }
    if (q->failed) return 0;
    if (qt__sse_feed(&q->sse, ptr, n, on_event, q)) req_fail(q, "%s", qt_last_error());
    return q->failed ? 0 : n; /* 0 aborts the transfer */
}

static char *request_body(const qt_lt_options *o, const qt_lt_prompt *p, bool chat) {
    json_t *b = json_object();
    if (o->model && *o->model) json_object_set_new(b, "model", json_string(o->model)); /* none: the server's own */
    if (chat) {
        json_t *msgs = NULL;
        if (p->messages_json) msgs = json_loads(p->messages_json, 0, NULL);
        else msgs = json_pack("[{s:s, s:s}]", "role", "user", "content", p->prompt ? p->prompt : "");
        json_object_set_new(b, "messages", msgs ? msgs : json_array());
    } else {
        json_object_set_new(b, "prompt", json_string(p->prompt ? p->prompt : ""));
    }
    json_object_set_new(b, "max_tokens", json_integer(p->max_tokens));
    json_object_set_new(b, "temperature", json_real(0));
    json_object_set_new(b, "stream", json_true());
    json_object_set_new(b, "stream_options", json_pack("{s:b}", "include_usage", 1));
    if (o->ignore_eos) json_object_set_new(b, "ignore_eos", json_true());
    char *s = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    return s;
}

static char *join_url(const char *base, const char *path) {
    size_t bl = strlen(base);
    while (bl && base[bl - 1] == '/') bl--;
    size_t n = bl + strlen(path) + 2;
    char *u = malloc(n);
    if (u) snprintf(u, n, "%.*s%s%s", (int)bl, base, path[0] == '/' ? "" : "/", path);
    return u;
}

static qt_status req_start(CURLM *multi, req *q, const char *url, double t0) {
    char *body = request_body(q->o, q->prompt, q->chat);
    q->h = curl_easy_init();
    q->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    q->hdrs = curl_slist_append(q->hdrs, "Accept: text/event-stream");
    if (q->o->api_key) {
        char auth[1024];
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", q->o->api_key);
        q->hdrs = curl_slist_append(q->hdrs, auth);
    }
    if (!body || !q->h || !q->hdrs) {
        free(body);
        return qt_error(QT_ERR_NOMEM, "loadtest: out of memory starting a request");
    }
    curl_easy_setopt(q->h, CURLOPT_URL, url);
    curl_easy_setopt(q->h, CURLOPT_COPYPOSTFIELDS, body);
    free(body);
    curl_easy_setopt(q->h, CURLOPT_HTTPHEADER, q->hdrs);
    curl_easy_setopt(q->h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(q->h, CURLOPT_WRITEDATA, q);
    curl_easy_setopt(q->h, CURLOPT_PRIVATE, q);
    curl_easy_setopt(q->h, CURLOPT_NOSIGNAL, 1L);
    if (q->o->timeout_s > 0) curl_easy_setopt(q->h, CURLOPT_TIMEOUT_MS, (long)(q->o->timeout_s * 1000));
    qt__sse_init(&q->sse);
    q->usage_c = q->usage_p = -1;
    q->t_send = q->t_last = now_s();
    q->res->start_s = q->t_send - t0;
    if (curl_multi_add_handle(multi, q->h) != CURLM_OK) return qt_error(QT_ERR_INTERNAL, "loadtest: curl_multi_add_handle failed");
    return QT_OK;
}

/* A non-200 answer's message: OpenAI's error.message when the body has one. */
static void http_error(req *q, long code) {
    json_t *j = q->body.p ? json_loadb(q->body.p, q->body.n, 0, NULL) : NULL;
    json_t *msg = json_object_get(json_object_get(j, "error"), "message");
    if (!json_is_string(msg)) msg = json_object_get(j, "error");
    char detail[160];
    snprintf(detail, sizeof detail, "%ld: %.120s", code,
             json_is_string(msg) ? json_string_value(msg) : (q->body.p ? q->body.p : ""));
    req_fail(q, "HTTP %s", detail);
    json_decref(j);
}

static void req_finish(req *q, CURLcode rc) {
    qt_lt_result *r = q->res;
    long code = 0;
    curl_easy_getinfo(q->h, CURLINFO_RESPONSE_CODE, &code);
    r->http_status = (int32_t)code;
    if (code == 200 && !q->failed && rc == CURLE_OK && qt__sse_finish(&q->sse, on_event, q))
        req_fail(q, "%s", qt_last_error());
    if (rc != CURLE_OK && !q->failed) req_fail(q, "%s", curl_easy_strerror(rc));
    if (code != 200 && !q->failed) http_error(q, code);
    if (!q->first && !q->failed) req_fail(q, "%s", "the stream had no chunk with choices");
    r->ok = !q->failed;
    r->ttft_s = q->first ? r->ttft_s : 0;
    r->e2el_s = q->t_last - q->t_send;
    r->usage_completion = (int32_t)q->usage_c;
    if (r->prompt_len < 0 && q->usage_p >= 0) r->prompt_len = (int32_t)q->usage_p;
    int32_t *ids = NULL, n_ids = 0;
    if (q->usage_c >= 0) r->output_tokens = (int32_t)q->usage_c, r->output_from = "usage";
    else if (q->o->tok && !qt_tokenize_ex(q->o->tok, q->text.p ? q->text.p : "", q->text.n, 0, &ids, &n_ids))
        r->output_tokens = n_ids, r->output_from = "tokenizer";
    else r->output_tokens = r->n_chunks, r->output_from = "chunks";
    free(ids);
    r->text = q->text.p;
    r->text_len = q->text.n;
    q->text = (qt__sbuf){0};
}

static void req_cleanup(CURLM *multi, req *q) {
    if (q->h) {
        curl_multi_remove_handle(multi, q->h);
        curl_easy_cleanup(q->h);
    }
    curl_slist_free_all(q->hdrs);
    qt__sse_free(&q->sse);
    free(q->text.p);
    free(q->body.p);
    q->h = NULL, q->hdrs = NULL, q->text = q->body = (qt__sbuf){0};
}

/* ---- /metrics ------------------------------------------------------------------- */

typedef struct scraper {
    CURL *h;
    char *url;
    qt__sbuf buf;
    bool active, off; /* a scrape in flight; the server has no usable /metrics */
    double next;
    qt_lt_run *run;
} scraper;

static size_t on_metrics(char *ptr, size_t size, size_t nmemb, void *user) {
    scraper *s = user;
    size_t n = size * nmemb;
    if (s->buf.n + n > METRICS_MAX) return 0;
    qt__sb_add(&s->buf, ptr, n);
    return n;
}

static void scrape_take(scraper *s, CURLcode rc) {
    long code = 0;
    curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &code);
    if (rc != CURLE_OK || code != 200) {
        s->off = true; /* not exposed (llama-server without --metrics): stop asking */
    } else {
        double v;
        for (size_t i = 0; i < sizeof rss_names / sizeof *rss_names; i++)
            if (qt_lt_prom_max(s->buf.p, s->buf.n, rss_names[i], &v) && v > s->run->server_peak_rss_bytes)
                s->run->server_peak_rss_bytes = v;
        for (size_t i = 0; i < sizeof kv_names / sizeof *kv_names; i++)
            if (qt_lt_prom_max(s->buf.p, s->buf.n, kv_names[i], &v) && v > s->run->server_kv_cache_usage_max)
                s->run->server_kv_cache_usage_max = v;
    }
    s->buf.n = 0;
    s->active = false;
}

static void scrape_setup(scraper *s, const qt_lt_options *o) {
    s->h = curl_easy_init();
    if (!s->h || !s->url) {
        s->off = true;
        return;
    }
    curl_easy_setopt(s->h, CURLOPT_URL, s->url);
    curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, on_metrics);
    curl_easy_setopt(s->h, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(s->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(s->h, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(s->h, CURLOPT_PRIVATE, NULL);
    if (o->api_key) {
        /* a server started with a key may guard /metrics with it too */
        curl_easy_setopt(s->h, CURLOPT_XOAUTH2_BEARER, o->api_key);
        curl_easy_setopt(s->h, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
    }
}

/* ---- the run ---------------------------------------------------------------------- */

static qt_status run_loop(CURLM *multi, const qt_lt_options *o, req *q, const double *arrive, int32_t n,
                          const char *url, scraper *sc, qt_lt_run *out) {
    double t0 = now_s();
    int32_t next = 0, done = 0, busy = 0;
    while (done < next || next < n) {
        if (qt_cancelled()) return qt_error(QT_ERR_INTERRUPTED, "loadtest: interrupted");
        double t = now_s() - t0;
        bool may_start = !(o->time_limit_s > 0 && t >= o->time_limit_s);
        if (!may_start) n = next; /* the time limit: nothing new starts */
        while (may_start && next < n && arrive[next] <= t && (o->max_concurrency <= 0 || busy < o->max_concurrency)) {
            qt_status s = req_start(multi, &q[next], url, t0);
            if (s) return s;
            out->n_sent = ++next;
            busy++;
        }
        if (!sc->off && !sc->active && t >= sc->next) {
            sc->active = curl_multi_add_handle(multi, sc->h) == CURLM_OK;
            sc->next = t + SCRAPE_PERIOD_S;
        }
        int running = 0;
        curl_multi_perform(multi, &running);
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(multi, &left))) {
            if (m->msg != CURLMSG_DONE) continue;
            req *r = NULL;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
            if (m->easy_handle == sc->h) {
                CURLcode rc = m->data.result;
                curl_multi_remove_handle(multi, sc->h);
                scrape_take(sc, rc);
                continue;
            }
            req_finish(r, m->data.result);
            req_cleanup(multi, r);
            done++, busy--;
            out->duration_s = now_s() - t0;
        }
        double wait = POLL_MAX_MS / 1000.0;
        if (next < n && arrive[next] - (now_s() - t0) < wait) wait = arrive[next] - (now_s() - t0);
        if (wait > 0 && (done < next || next < n)) curl_multi_poll(multi, NULL, 0, (int)ceil(wait * 1000), NULL);
    }
    return QT_OK;
}

qt_status qt_lt_run_requests(const qt_lt_options *o, const qt_lt_prompt *p, int32_t n, qt_lt_run *out) {
    memset(out, 0, sizeof *out);
    out->server_peak_rss_bytes = out->server_kv_cache_usage_max = -1;
    if (!o->url || (strncmp(o->url, "http://", 7) && strncmp(o->url, "https://", 8)))
        return qt_error(QT_ERR_ARG, "--url: '%s' is not an http:// or https:// URL", o->url ? o->url : "");
    bool chat = o->endpoint && strstr(o->endpoint, "chat/completions");
    for (int32_t i = 0; i < n; i++)
        if (!chat && p[i].messages_json)
            return qt_error(QT_ERR_ARG, "request %d has 'messages': use --endpoint /v1/chat/completions", i + 1);
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK) return qt_error(QT_ERR_INTERNAL, "libcurl: %s", curl_easy_strerror(curl_init_rc));
    double *arrive = malloc(sizeof *arrive * (size_t)(n > 0 ? n : 1));
    req *q = calloc((size_t)(n > 0 ? n : 1), sizeof *q);
    out->results = calloc((size_t)(n > 0 ? n : 1), sizeof *out->results);
    char *url = join_url(o->url, o->endpoint ? o->endpoint : "/v1/completions");
    scraper sc = {.url = join_url(o->url, "/metrics"), .run = out, .off = !o->scrape_metrics};
    CURLM *multi = curl_multi_init();
    qt_status s = QT_OK;
    if (!arrive || !q || !out->results || !url || !multi) s = qt_error(QT_ERR_NOMEM, "loadtest: out of memory for %d requests", n);
    if (!s) s = qt_lt_arrivals(n, o->request_rate, o->burstiness, o->seed, arrive);
    for (int32_t i = 0; !s && i < n; i++) {
        q[i] = (req){.res = &out->results[i], .prompt = &p[i], .o = o, .chat = chat};
        out->results[i].prompt_len = p[i].prompt_len;
    }
    if (!s && !sc.off) scrape_setup(&sc, o);
    if (!s) s = run_loop(multi, o, q, arrive, n, url, &sc, out);
    for (int32_t i = 0; i < n && q; i++) req_cleanup(multi, &q[i]);
    if (!s && !sc.off) { /* one last look, after the load */
        curl_easy_setopt(sc.h, CURLOPT_PRIVATE, NULL);
        if (sc.active) curl_multi_remove_handle(multi, sc.h), sc.active = false;
        scrape_take(&sc, curl_easy_perform(sc.h));
    }
    if (sc.h) {
        if (sc.active) curl_multi_remove_handle(multi, sc.h);
        curl_easy_cleanup(sc.h);
    }
    free(sc.url);
    free(sc.buf.p);
    if (multi) curl_multi_cleanup(multi);
    free(url);
    free(arrive);
    free(q);
    if (s) qt_lt_run_free(out);
    return s;
}

void qt_lt_run_free(qt_lt_run *r) {
    if (!r) return;
    for (int32_t i = 0; r->results && i < r->n_sent; i++) free(r->results[i].itl_s), free(r->results[i].text);
    free(r->results);
    memset(r, 0, sizeof *r);
}

/* ---- one blocking request ------------------------------------------------------- */

#define POST_MAX (16u << 20)

static size_t on_post(char *ptr, size_t size, size_t nmemb, void *user) {
    qt__sbuf *b = user;
    size_t n = size * nmemb;
    if (b->n + n > POST_MAX) return 0; /* aborts the transfer */
    qt__sb_add(b, ptr, n);
    return b->failed ? 0 : n;
}

qt_status qt__lt_post(const char *base, const char *path, const char *api_key, const char *body, double timeout_s,
                      long *code, char **resp) {
    *code = 0;
    *resp = NULL;
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK) return qt_error(QT_ERR_INTERNAL, "curl_global_init: %s", curl_easy_strerror(curl_init_rc));
    char *url = join_url(base, path);
    CURL *h = curl_easy_init();
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    char auth[1024];
    if (api_key && hdrs) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", api_key);
        hdrs = curl_slist_append(hdrs, auth);
    }
    qt_status s = QT_OK;
    qt__sbuf b = {0};
    if (!url || !h || !hdrs) s = qt_error(QT_ERR_NOMEM, "http: out of memory starting a request");
    if (!s) {
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_post);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        if (timeout_s > 0) curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
        CURLcode rc = curl_easy_perform(h);
        if (rc != CURLE_OK) s = qt_error(QT_ERR_IO, "%s: %s", url, b.failed ? "out of memory" : curl_easy_strerror(rc));
        else curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, code);
    }
    if (!s) s = qt__sb_finish(&b, resp, "http");
    else free(b.p);
    curl_slist_free_all(hdrs);
    if (h) curl_easy_cleanup(h);
    free(url);
    return s;
}
