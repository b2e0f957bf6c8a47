/* The load-test client against a scripted server on 127.0.0.1 (this test links libmicrohttpd).
 *
 * The server streams a deterministic SSE script chosen by the request's model
 * name: a normal stream with usage, one without usage, CRLF lines cut into
 * 3-byte writes, an HTTP 500, an error event mid-stream, a stream with no
 * choices, a broken chunk, a slow stream (for timeouts); /metrics exposes
 * quanta serve's two gauges. Assertions are on counts, structure and
 * invariants, never on durations: completed/failed, tokens streamed == usage,
 * sum of ITLs <= E2EL, in-flight requests never above the cap. The CLI is run
 * end to end too (a sweep, HTML, --compare).
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qtest.h"
#include "quanta.h"

#define API_KEY "sekrit"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int n_requests, in_flight, max_in_flight, n_unauthorized;

typedef struct script {
    char **piece;
    int n, i;
    int delay_us;
} script;

static void add_piece(script *s, const char *text) {
    s->piece = realloc(s->piece, sizeof *s->piece * (size_t)(s->n + 1));
    s->piece[s->n++] = strdup(text);
}

/* The SSE events of one scenario; each piece is one write of the server. */
static void build(script *s, const char *model, int max_tokens, bool chat) {
    char ev[256];
    bool usage = strcmp(model, "nousage") != 0, crlf = !strcmp(model, "crlf");
    const char *nl = crlf ? "\r\n\r\n" : "\n\n";
    s->delay_us = !strcmp(model, "slow") ? 300000 : 1000;
    if (!strcmp(model, "nochoices")) max_tokens = 0;
    for (int i = 0; i < max_tokens; i++) {
        if (!strcmp(model, "midstream") && i == 2) {
            snprintf(ev, sizeof ev, "data: {\"error\":{\"message\":\"overloaded\",\"code\":503}}%s", nl);
            add_piece(s, ev);
            return;
        }
        if (!strcmp(model, "garbage") && i == 1) {
            add_piece(s, "data: {\"choices\": [{\"text\": \n\n");
            continue;
        }
        if (chat) snprintf(ev, sizeof ev, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok%d\"}}]}%s", i, nl);
        else snprintf(ev, sizeof ev, ": keep-alive\ndata: {\"choices\":[{\"index\":0,\"text\":\" tok%d\"}]}%s", i, nl);
        add_piece(s, ev);
    }
    if (usage) {
        snprintf(ev, sizeof ev, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":%d}}%s", max_tokens, nl);
        add_piece(s, ev);
    }
    snprintf(ev, sizeof ev, "data: [DONE]%s", nl);
    add_piece(s, ev);
    if (crlf) { /* cut every piece into 3-byte writes */
        script t = {0};
        for (int i = 0; i < s->n; i++) {
            for (size_t k = 0; k < strlen(s->piece[i]); k += 3) {
                char three[4] = {0};
                strncpy(three, s->piece[i] + k, 3);
                add_piece(&t, three);
            }
            free(s->piece[i]);
        }
        free(s->piece);
        *s = t;
        s->delay_us = 200;
    }
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max) {
    script *s = cls;
    if (s->i >= s->n) return MHD_CONTENT_READER_END_OF_STREAM;
    usleep((useconds_t)s->delay_us);
    size_t n = strlen(s->piece[s->i]);
    if (n > max) n = max;
    memcpy(buf, s->piece[s->i++], n);
    return (ssize_t)n;
}

static void script_free(void *cls) {
    script *s = cls;
    for (int i = 0; i < s->n; i++) free(s->piece[i]);
    free(s->piece);
    free(s);
    pthread_mutex_lock(&mu);
    in_flight--;
    pthread_mutex_unlock(&mu);
}

typedef struct upload {
    char *body;
    size_t n;
} upload;

static enum MHD_Result reply(struct MHD_Connection *c, int code, const char *text, const char *type) {
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *data, size_t *data_size, void **con_cls) {
    upload *u = *con_cls;
    if (!u) {
        *con_cls = calloc(1, sizeof(upload));
        return MHD_YES;
    }
    if (*data_size) {
        u->body = realloc(u->body, u->n + *data_size + 1);
        memcpy(u->body + u->n, data, *data_size);
        u->n += *data_size;
        u->body[u->n] = 0;
        *data_size = 0;
        return MHD_YES;
    }
    if (!strcmp(url, "/metrics"))
        return reply(c, 200, "# TYPE quanta_peak_rss_bytes gauge\nquanta_peak_rss_bytes 123456789\n"
                             "quanta_kv_cache_usage_ratio{slot=\"0\"} 0.25\nquanta_kv_cache_usage_ratio{slot=\"1\"} 0.5\n",
                     "text/plain");
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!auth || strcmp(auth, "Bearer " API_KEY)) {
        pthread_mutex_lock(&mu);
        n_unauthorized++;
        pthread_mutex_unlock(&mu);
        return reply(c, 401, "{\"error\":{\"message\":\"invalid api key\"}}", "application/json");
    }
    json_t *req = json_loads(u->body ? u->body : "", 0, NULL);
    const char *model = json_string_value(json_object_get(req, "model"));
    int max_tokens = (int)json_integer_value(json_object_get(req, "max_tokens"));
    bool chat = strstr(url, "chat") != NULL;
    bool usage_asked = json_is_true(json_object_get(json_object_get(req, "stream_options"), "include_usage"));
    enum MHD_Result ret;
    pthread_mutex_lock(&mu);
    n_requests++;
    pthread_mutex_unlock(&mu);
    if (!model || !usage_asked || !json_is_true(json_object_get(req, "stream"))) {
        ret = reply(c, 400, "{\"error\":{\"message\":\"bad request\"}}", "application/json");
    } else if (!strcmp(model, "http500")) {
        ret = reply(c, 500, "{\"error\":{\"message\":\"boom\"}}", "application/json");
    } else {
        script *s = calloc(1, sizeof *s);
        build(s, model, max_tokens, chat);
        pthread_mutex_lock(&mu);
        if (++in_flight > max_in_flight) max_in_flight = in_flight;
        pthread_mutex_unlock(&mu);
        struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, reader, s, script_free);
        MHD_add_response_header(r, "Content-Type", "text/event-stream");
        ret = MHD_queue_response(c, 200, r);
        MHD_destroy_response(r);
    }
    json_decref(req);
    return ret;
}

static void done_cb(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    upload *u = *con_cls;
    if (u) free(u->body), free(u);
    *con_cls = NULL;
}

static struct MHD_Daemon *daemon_;
static char base_url[64];

static void server_start(void) {
    static struct sockaddr_in sa; /* loopback only, a free port */
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    daemon_ = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
                               NULL, handle, NULL, MHD_OPTION_NOTIFY_COMPLETED, done_cb, NULL,
                               MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_END);
    if (!daemon_) return;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
    snprintf(base_url, sizeof base_url, "http://127.0.0.1:%u", (unsigned)info->port);
}

static void reset_counts(void) {
    pthread_mutex_lock(&mu);
    n_requests = max_in_flight = n_unauthorized = 0;
    pthread_mutex_unlock(&mu);
}

static qt_lt_prompt *prompts(int n, int max_tokens) {
    qt_lt_prompt *p = calloc((size_t)n, sizeof *p);
    for (int i = 0; i < n; i++) p[i] = (qt_lt_prompt){strdup("Once upon a time"), NULL, 5, max_tokens};
    return p;
}

static void run(const char *model, const char *endpoint, int n, int conc, int max_tokens, qt_lt_run *out) {
    qt_lt_options o;
    qt_lt_options_default(&o);
    o.url = base_url, o.model = model, o.endpoint = endpoint, o.api_key = API_KEY, o.max_concurrency = conc;
    o.timeout_s = 20;
    qt_lt_prompt *p = prompts(n, max_tokens);
    qt_status s = qt_lt_run_requests(&o, p, n, out);
    CHECK_MSG(s == QT_OK, "%s: %s", model, qt_last_error());
    qt_lt_prompts_free(p, n);
}

/* The invariants of every completed request. */
static void check_ok(const qt_lt_result *r, int max_tokens) {
    double sum = 0;
    for (int32_t j = 0; j < r->n_itl; j++) {
        sum += r->itl_s[j];
        CHECK(r->itl_s[j] >= 0);
    }
    CHECK_MSG(r->ok, "failed: %s", r->error);
    CHECK(r->n_chunks == max_tokens && r->n_itl == max_tokens - 1);
    CHECK(sum <= r->e2el_s + 1e-9 && r->ttft_s <= r->e2el_s && r->ttft_s > 0);
    CHECK(r->http_status == 200 && r->text_len > 0);
}

static void test_stream_counts(void) {
    reset_counts();
    qt_lt_run r;
    run("ok", "/v1/completions", 12, 4, 6, &r);
    CHECK_EQ_INT(r.n_sent, 12);
    for (int32_t i = 0; i < r.n_sent; i++) {
        check_ok(&r.results[i], 6);
        CHECK(r.results[i].output_tokens == 6 && !strcmp(r.results[i].output_from, "usage") && r.results[i].usage_completion == 6);
        CHECK(r.results[i].prompt_len == 5 && !strcmp(r.results[i].text, " tok0 tok1 tok2 tok3 tok4 tok5"));
    }
    CHECK_EQ_INT(n_requests, 12);
    CHECK_MSG(max_in_flight <= 4 && max_in_flight >= 1, "server saw %d in flight", max_in_flight);
    CHECK(r.server_peak_rss_bytes == 123456789 && r.server_kv_cache_usage_max == 0.5);
    qt_lt_metrics m;
    CHECK(qt_lt_metrics_compute(r.results, r.n_sent, r.duration_s, NULL, &m) == QT_OK);
    CHECK(m.completed == 12 && m.failed == 0 && m.total_output == 72 && m.total_input == 60);
    CHECK(m.peak_concurrency >= 1 && m.peak_concurrency <= 4 && m.itl_ms.n == 12 * 5 && m.tpot_ms.n == 12);
    CHECK(m.request_throughput > 0 && m.e2el_ms.p99 >= m.e2el_ms.median);
    qt_lt_run_free(&r);
}

static void test_chat_and_split(void) {
    qt_lt_run r;
    run("ok", "/v1/chat/completions", 3, 0, 4, &r);
    for (int32_t i = 0; i < r.n_sent; i++) {
        check_ok(&r.results[i], 4);
        CHECK(r.results[i].output_tokens == 4);
    }
    qt_lt_run_free(&r);
    run("crlf", "/v1/completions", 2, 2, 5, &r);
    for (int32_t i = 0; i < r.n_sent; i++) {
        check_ok(&r.results[i], 5);
        CHECK(r.results[i].output_tokens == 5);
    }
    qt_lt_run_free(&r);
}

static void test_no_usage_uses_tokenizer(void) {
    qt_model *m = NULL;
    qt_tokenizer *tok = NULL;
    if (qt_model_open(qt_test_shared("models/stories260K.gguf"), &m) || qt_tokenizer_new(qt_model_vocab(m), &tok)) {
        CHECK_MSG(0, "stories260K: %s", qt_last_error());
        return;
    }
    qt_lt_options o;
    qt_lt_options_default(&o);
    o.url = base_url, o.model = "nousage", o.api_key = API_KEY, o.tok = tok;
    qt_lt_prompt *p = prompts(2, 5);
    qt_lt_run r;
    CHECK(qt_lt_run_requests(&o, p, 2, &r) == QT_OK);
    for (int32_t i = 0; i < r.n_sent; i++) {
        int32_t *ids = NULL, n = 0;
        CHECK(qt_tokenize_ex(tok, r.results[i].text, r.results[i].text_len, 0, &ids, &n) == QT_OK);
        CHECK(r.results[i].ok && !strcmp(r.results[i].output_from, "tokenizer") && r.results[i].output_tokens == n);
        CHECK(r.results[i].usage_completion == -1);
        free(ids);
    }
    qt_lt_run_free(&r);
    o.tok = NULL; /* neither usage nor tokenizer: counted chunks */
    CHECK(qt_lt_run_requests(&o, p, 2, &r) == QT_OK);
    CHECK(r.results[0].ok && !strcmp(r.results[0].output_from, "chunks") && r.results[0].output_tokens == 5);
    qt_lt_run_free(&r);
    qt_lt_prompts_free(p, 2);
    qt_tokenizer_free(tok);
    qt_model_free(m);
}

static void test_failures(void) {
    static const struct { const char *model, *why; } cases[] = {
        {"http500", "HTTP 500: boom"},
        {"midstream", "overloaded"},
        {"nochoices", "no chunk with choices"},
        {"garbage", "bad stream chunk"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        qt_lt_run r;
        run(cases[k].model, "/v1/completions", 3, 2, 5, &r);
        CHECK_EQ_INT(r.n_sent, 3);
        for (int32_t i = 0; i < r.n_sent; i++)
            CHECK_MSG(!r.results[i].ok && strstr(r.results[i].error, cases[k].why), "%s: '%s'", cases[k].model, r.results[i].error);
        qt_lt_metrics m;
        CHECK(qt_lt_metrics_compute(r.results, r.n_sent, r.duration_s, NULL, &m) == QT_OK && m.completed == 0 && m.failed == 3);
        CHECK(m.error_rate == 1 && !qt_lt_level_ok(&m, 0.5));
        qt_lt_run_free(&r);
    }
    /* a wrong key: 401 for every request */
    reset_counts();
    qt_lt_options o;
    qt_lt_options_default(&o);
    o.url = base_url, o.model = "ok", o.api_key = "wrong";
    qt_lt_prompt *p = prompts(2, 3);
    qt_lt_run r;
    CHECK(qt_lt_run_requests(&o, p, 2, &r) == QT_OK);
    CHECK(!r.results[0].ok && r.results[0].http_status == 401 && strstr(r.results[0].error, "invalid api key"));
    CHECK_EQ_INT(n_unauthorized, 2);
    qt_lt_run_free(&r);
    /* a per-request timeout fails the request, not the run */
    o.api_key = API_KEY, o.model = "slow", o.timeout_s = 0.2;
    CHECK(qt_lt_run_requests(&o, p, 2, &r) == QT_OK);
    CHECK(!r.results[0].ok && !r.results[1].ok && strstr(r.results[0].error, "imeout"));
    qt_lt_run_free(&r);
    /* the time limit: nothing starts after it */
    o.timeout_s = 20, o.time_limit_s = 0.05, o.max_concurrency = 1;
    qt_lt_prompt *many = prompts(20, 2);
    CHECK(qt_lt_run_requests(&o, many, 20, &r) == QT_OK);
    CHECK_MSG(r.n_sent >= 1 && r.n_sent < 20, "%d sent", r.n_sent);
    qt_lt_run_free(&r);
    qt_lt_prompts_free(many, 20);
    /* nobody listening: connection refused, a failed request */
    o.url = "http://127.0.0.1:1", o.time_limit_s = 0;
    CHECK(qt_lt_run_requests(&o, p, 2, &r) == QT_OK && !r.results[0].ok && r.results[0].http_status == 0);
    qt_lt_run_free(&r);
    o.url = "ftp://x";
    CHECK(qt_lt_run_requests(&o, p, 2, &r) == QT_ERR_ARG);
    qt_lt_prompts_free(p, 2);
}

static void test_rate(void) {
    qt_lt_options o;
    qt_lt_options_default(&o);
    o.url = base_url, o.model = "ok", o.api_key = API_KEY, o.request_rate = 200, o.seed = 5;
    qt_lt_prompt *p = prompts(10, 2);
    qt_lt_run r;
    CHECK(qt_lt_run_requests(&o, p, 10, &r) == QT_OK && r.n_sent == 10);
    double arrive[10];
    qt_lt_arrivals(10, 200, 1, 5, arrive);
    for (int32_t i = 0; i < r.n_sent; i++) {
        CHECK(r.results[i].ok);
        CHECK_MSG(r.results[i].start_s >= arrive[i] - 1e-3, "request %d sent at %g before its arrival %g", i, r.results[i].start_s, arrive[i]);
    }
    qt_lt_run_free(&r);
    qt_lt_prompts_free(p, 10);
}

/* ---- the CLI end to end --------------------------------------------------------------- */

static int sh(const char *cmd) {
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static json_t *load(const char *path) {
    json_t *j = json_load_file(path, 0, NULL);
    CHECK_MSG(j != NULL, "%s did not parse", path);
    return j;
}

static void test_cli(void) {
    const char *tmp = qt_test_tmpdir();
    char cmd[2048], a[512], b[512], html[512];
    snprintf(a, sizeof a, "%s/a.json", tmp);
    snprintf(b, sizeof b, "%s/b.json", tmp);
    snprintf(html, sizeof html, "%s/sweep.html", tmp);
    snprintf(cmd, sizeof cmd,
             "%s/quanta loadtest --url %s --model ok --api-key " API_KEY " --tokenizer %s --input-len 16 --output-len 4 "
             "--num-prompts 8 --max-concurrency 2 --warmup 1 --slo ttft:60000,tpot:60000 --json=%s -q > /dev/null",
             QT_BINARY_DIR, base_url, qt_test_shared("models/stories260K.gguf"), a);
    CHECK_EQ_INT(sh(cmd), 0);
    json_t *ja = load(a);
    CHECK(json_integer_value(json_object_get(ja, "completed")) == 8 && json_integer_value(json_object_get(ja, "failed")) == 0);
    CHECK(json_integer_value(json_object_get(ja, "total_output_tokens")) == 32);
    CHECK(json_integer_value(json_object_get(ja, "total_input_tokens")) == 8 * 16); /* exact prompt lengths */
    CHECK(json_integer_value(json_object_get(ja, "peak_concurrency")) <= 2);
    CHECK(json_real_value(json_object_get(ja, "server_peak_rss_bytes")) == 123456789);
    static const char *const keys[] = {"ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"};
    static const char *const fields[] = {"mean", "median", "std", "p90", "p99"};
    for (int k = 0; k < 4; k++)
        for (int f = 0; f < 5; f++) CHECK(json_is_number(json_object_get(json_object_get(ja, keys[k]), fields[f])));
    CHECK(json_is_number(json_object_get(ja, "goodput")) && json_is_number(json_object_get(ja, "total_token_throughput")));
    json_decref(ja);

    snprintf(cmd, sizeof cmd,
             "%s/quanta loadtest --url %s --model ok --api-key " API_KEY " --dataset %s/tests/data/loadtest_prompts.jsonl "
             "--output-len 3 --sweep auto --sweep-max 4 --slo ttft:60000 --json=%s --html %s -q > /dev/null",
             QT_BINARY_DIR, base_url, QT_SOURCE_DIR, b, html);
    CHECK_EQ_INT(sh(cmd), 0);
    json_t *jb = load(b);
    json_t *lv = json_object_get(jb, "levels");
    CHECK(json_array_size(lv) == 3); /* 1, 2, 4 */
    CHECK(json_integer_value(json_object_get(jb, "sustainable_concurrency")) == 4);
    CHECK(json_integer_value(json_object_get(json_array_get(lv, 2), "completed")) == 16);
    json_decref(jb);
    size_t n = 0;
    char *page = qt_test_read(html, &n);
    CHECK(page && strstr(page, "<svg") && strstr(page, "sustainable 4"));
    free(page);

    snprintf(cmd, sizeof cmd, "%s/quanta loadtest --compare %s %s | grep -q 'output throughput'", QT_BINARY_DIR, a, b);
    CHECK_EQ_INT(sh(cmd), 0);
    /* usage errors exit 2; a server that answers nothing exits 1 */
    snprintf(cmd, sizeof cmd, "%s/quanta loadtest --url %s --model ok 2>/dev/null", QT_BINARY_DIR, base_url);
    CHECK_EQ_INT(sh(cmd), 2); /* random dataset without --tokenizer */
    snprintf(cmd, sizeof cmd, "%s/quanta loadtest --url %s --model ok --slo ttft 2>/dev/null", QT_BINARY_DIR, base_url);
    CHECK_EQ_INT(sh(cmd), 2);
    snprintf(cmd, sizeof cmd, "%s/quanta loadtest --url %s --model http500 --api-key " API_KEY
             " --dataset %s/tests/data/loadtest_prompts.jsonl --num-prompts 2 -q >/dev/null 2>&1", QT_BINARY_DIR, base_url, QT_SOURCE_DIR);
    CHECK_EQ_INT(sh(cmd), 1);
}

int main(void) {
    server_start();
    if (!daemon_) {
        fprintf(stderr, "test_loadtest_client: could not start the test server on 127.0.0.1\n");
        return 1;
    }
    QT_RUN(test_stream_counts);
    QT_RUN(test_chat_and_split);
    QT_RUN(test_no_usage_uses_tokenizer);
    QT_RUN(test_failures);
    QT_RUN(test_rate);
    QT_RUN(test_cli);
    MHD_stop_daemon(daemon_);
    return qt_test_finish("test_loadtest_client");
}
