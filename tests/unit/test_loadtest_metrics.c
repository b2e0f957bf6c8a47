/* The load test's pure parts on known inputs: percentiles, TPOT, goodput,
 * peak concurrency, arrivals, sweep choice and knee, the SSE parser, stream
 * chunks, Prometheus text, random prompts of exact lengths, JSONL datasets. */
#include "loadtest/loadtest_internal.h"
#include "qtest.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

static void test_percentiles(void) {
    double x[] = {4, 1, 3, 2};
    qt_lt_dist d = qt_lt_dist_of(x, 4, 1000);
    CHECK(NEAR(d.mean, 2500) && NEAR(d.median, 2500));
    CHECK(NEAR(d.p90, 3700) && NEAR(d.p99, 3970));       /* numpy: rank p/100 * (n - 1) */
    CHECK(NEAR(d.std, 1000 * sqrt(1.25)));                /* ddof 0 */
    qt_lt_dist e = qt_lt_dist_of(NULL, 0, 1000);
    CHECK(e.n == 0 && e.mean == 0 && e.p99 == 0);
    double one[] = {0.5};
    qt_lt_dist f = qt_lt_dist_of(one, 1, 1);
    CHECK(NEAR(f.p90, 0.5) && f.std == 0);
}

static void test_tpot_slo(void) {
    CHECK(NEAR(qt_lt_tpot(1.0, 0.2, 5), 0.2));
    CHECK(qt_lt_tpot(1.0, 0.2, 1) == 0 && qt_lt_tpot(1.0, 0.2, 0) == 0);
    qt_lt_slo s;
    CHECK(qt_lt_slo_parse("tpot:200,ttft:2000", &s) == QT_OK && s.ttft_ms == 2000 && s.tpot_ms == 200 && s.e2el_ms == 0);
    CHECK(qt_lt_meets_slo(&s, 2.0, 0.2, 99) && !qt_lt_meets_slo(&s, 2.001, 0.1, 0) && !qt_lt_meets_slo(&s, 1, 0.21, 0));
    CHECK(qt_lt_slo_parse("foo:1", &s) == QT_ERR_ARG && strstr(qt_last_error(), "foo"));
    CHECK(qt_lt_slo_parse("ttft:-3", &s) == QT_ERR_ARG);
    CHECK(qt_lt_slo_parse("ttft", &s) == QT_ERR_ARG);
    CHECK(qt_lt_slo_parse("ttft:1x", &s) == QT_ERR_ARG);
    CHECK(qt_lt_slo_parse("e2el:5000", &s) == QT_OK && s.e2el_ms == 5000 && qt_lt_slo_any(&s));
}

static void test_peak(void) {
    double s1[] = {0, 0.5, 1}, e1[] = {1, 2, 3};
    CHECK_EQ_INT(qt_lt_peak_concurrency(s1, e1, 3), 2); /* [0,1] ends as [1,3] starts */
    double s2[] = {0, 1, 1.5}, e2[] = {10, 2, 3};
    CHECK_EQ_INT(qt_lt_peak_concurrency(s2, e2, 3), 3);
    CHECK_EQ_INT(qt_lt_peak_concurrency(s2, e2, 0), 0);
}

static void test_arrivals(void) {
    enum { N = 2000 };
    static double a[N], b[N], c[N];
    CHECK(qt_lt_arrivals(N, 10, 1, 7, a) == QT_OK && qt_lt_arrivals(N, 10, 1, 7, b) == QT_OK);
    CHECK(NEAR(a[N - 1], N / 10.0)); /* rescaled as vLLM does */
    int mono = 1, same = 1;
    for (int i = 0; i < N; i++) mono &= i == 0 || a[i] >= a[i - 1], same &= a[i] == b[i];
    CHECK(mono && same);
    /* the coefficient of variation of gamma gaps is 1/sqrt(shape): burstier below 1, steadier above */
    double cv[2];
    double shapes[2] = {0.25, 4};
    for (int k = 0; k < 2; k++) {
        CHECK(qt_lt_arrivals(N, 10, shapes[k], 3, c) == QT_OK);
        double m = 0, v = 0;
        for (int i = 0; i < N; i++) m += c[i] - (i ? c[i - 1] : 0);
        m /= N;
        for (int i = 0; i < N; i++) v += pow(c[i] - (i ? c[i - 1] : 0) - m, 2);
        cv[k] = sqrt(v / N) / m;
    }
    CHECK_MSG(fabs(cv[0] - 2) < 0.3 && fabs(cv[1] - 0.5) < 0.1, "cv %g (want 2), %g (want 0.5)", cv[0], cv[1]);
    CHECK(qt_lt_arrivals(3, 0, 1, 0, c) == QT_OK && c[0] == 0 && c[2] == 0);
    CHECK(qt_lt_arrivals(3, 1, 0, 0, c) == QT_ERR_ARG);
}

static void test_metrics(void) {
    double itl0[] = {0.1, 0.1, 0.1}, itl1[] = {0.3};
    qt_lt_result r[3] = {
        {.ok = true, .start_s = 0, .ttft_s = 0.5, .e2el_s = 0.8, .itl_s = itl0, .n_itl = 3, .prompt_len = 10, .output_tokens = 4},
        {.ok = true, .start_s = 0.1, .ttft_s = 2.5, .e2el_s = 2.8, .itl_s = itl1, .n_itl = 1, .prompt_len = 12, .output_tokens = 2},
        {.ok = false, .start_s = 0.2, .prompt_len = 9},
    };
    qt_lt_slo slo = {.ttft_ms = 2000};
    qt_lt_metrics m;
    CHECK(qt_lt_metrics_compute(r, 3, 4.0, &slo, &m) == QT_OK);
    CHECK(m.completed == 2 && m.failed == 1 && m.total_input == 22 && m.total_output == 6);
    CHECK(NEAR(m.request_throughput, 0.5) && NEAR(m.output_throughput, 1.5) && NEAR(m.total_token_throughput, 7.0));
    CHECK(m.has_slo && m.good_completed == 1 && NEAR(m.goodput, 0.25) && NEAR(m.error_rate, 1.0 / 3));
    CHECK(m.itl_ms.n == 4 && NEAR(m.itl_ms.mean, 150));
    CHECK(m.tpot_ms.n == 2 && NEAR(m.tpot_ms.mean, 200)); /* (0.3/3 + 0.3/1) / 2 */
    CHECK(m.ttft_ms.n == 2 && NEAR(m.ttft_ms.median, 1500) && m.peak_concurrency == 2);
    CHECK(!qt_lt_level_ok(&m, 0.5)); /* 1 of 2 met the SLO: below 95 % */
    CHECK(qt_lt_metrics_compute(r, 3, 4.0, NULL, &m) == QT_OK && m.good_completed == 2 && qt_lt_level_ok(&m, 0.5) &&
          !qt_lt_level_ok(&m, 0.3));
}

static void test_sweep(void) {
    qt_lt_level lv[4] = {{1, {.completed = 10, .good_completed = 10, .has_slo = true, .output_throughput = 100}},
                         {2, {.completed = 10, .good_completed = 10, .has_slo = true, .output_throughput = 190}},
                         {4, {.completed = 20, .good_completed = 19, .has_slo = true, .output_throughput = 200}},
                         {8, {.completed = 20, .good_completed = 10, .has_slo = true, .output_throughput = 205}}};
    CHECK_EQ_INT(qt_lt_sweep_choose(lv, 4, 0.01), 4); /* 19/20 = 95 % passes, 10/20 does not */
    CHECK_EQ_INT(qt_lt_knee(lv, 4), 2);               /* 2 -> 4 adds 5 % < 10 % */
    lv[2].m.error_rate = 0.05;
    CHECK_EQ_INT(qt_lt_sweep_choose(lv, 4, 0.01), 2);
    CHECK_EQ_INT(qt_lt_sweep_choose(lv, 0, 0.01), 0);
    lv[0].m.completed = 0;
    CHECK_EQ_INT(qt_lt_sweep_choose(lv, 1, 0.01), 0);
}

/* ---- SSE ---------------------------------------------------------------------- */

typedef struct events {
    char got[8][128];
    int n;
} events;
static int collect(void *u, const char *d, size_t n) {
    events *e = u;
    if (e->n < 8) snprintf(e->got[e->n], sizeof e->got[0], "%.*s", (int)n, d);
    e->n++;
    return 0;
}

static void parse_split(const char *s, size_t cut, events *e) {
    qt__sse p;
    qt__sse_init(&p);
    memset(e, 0, sizeof *e);
    CHECK(qt__sse_feed(&p, s, cut, collect, e) == QT_OK);
    CHECK(qt__sse_feed(&p, s + cut, strlen(s) - cut, collect, e) == QT_OK);
    CHECK(qt__sse_finish(&p, collect, e) == QT_OK);
    qt__sse_free(&p);
}

static void test_sse(void) {
    const char *s = ": ping\r\nevent: x\r\ndata: {\"a\":1}\r\n\r\ndata:two\ndata: lines\n\nid: 3\rdata: [DONE]\r\r";
    for (size_t cut = 0; cut <= strlen(s); cut++) {
        events e;
        parse_split(s, cut, &e);
        CHECK_MSG(e.n == 3 && !strcmp(e.got[0], "{\"a\":1}") && !strcmp(e.got[1], "two\nlines") && !strcmp(e.got[2], "[DONE]"),
                  "cut %zu: %d events", cut, e.n);
    }
    events e;
    parse_split("data: tail without blank line", 5, &e);
    CHECK(e.n == 1 && !strcmp(e.got[0], "tail without blank line"));
    parse_split("\n\n: only comments\n\n", 3, &e);
    CHECK(e.n == 0);
    parse_split("data\n\n", 0, &e); /* a data field with no value is an empty event */
    CHECK(e.n == 1 && e.got[0][0] == 0);
    qt__sse p;
    qt__sse_init(&p);
    char *big = malloc(QT__SSE_MAX_EVENT + 16);
    memset(big, 'x', QT__SSE_MAX_EVENT + 16);
    memcpy(big, "data: ", 6);
    CHECK(qt__sse_feed(&p, big, QT__SSE_MAX_EVENT + 16, collect, &e) == QT_ERR_RANGE && p.stopped);
    free(big);
    qt__sse_free(&p);
}

static void test_chunks(void) {
    qt__sbuf t = {0};
    qt__lt_chunk c;
    const char *a = "{\"choices\":[{\"index\":0,\"text\":\"Hel\"}]}";
    CHECK(qt__lt_chunk_parse(a, strlen(a), &c, &t) == QT_OK && c.has_choices && c.completion_tokens == -1);
    const char *b = "{\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}";
    CHECK(qt__lt_chunk_parse(b, strlen(b), &c, &t) == QT_OK && c.has_choices && !strcmp(t.p, "Hello"));
    const char *u = "{\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7}}";
    CHECK(qt__lt_chunk_parse(u, strlen(u), &c, &t) == QT_OK && !c.has_choices && c.completion_tokens == 7 && c.prompt_tokens == 5);
    CHECK(qt__lt_chunk_parse(" [DONE] ", 8, &c, &t) == QT_OK && c.done);
    const char *er = "{\"error\":{\"message\":\"overloaded\"}}";
    CHECK(qt__lt_chunk_parse(er, strlen(er), &c, &t) == QT_OK && c.is_error && !strcmp(c.error, "overloaded"));
    CHECK(qt__lt_chunk_parse("{nope", 5, &c, &t) == QT_ERR_FORMAT);
    CHECK(qt__lt_chunk_parse("[1]", 3, &c, &t) == QT_ERR_FORMAT);
    free(t.p);
}

static void test_prom(void) {
    const char *m = "# HELP quanta_peak_rss_bytes peak\n# TYPE quanta_peak_rss_bytes gauge\n"
                    "quanta_peak_rss_bytes 1.5e6\nquanta_peak_rss_bytes_total 9e9\n"
                    "vllm:kv_cache_usage_perc{model_name=\"a}b\",engine=\"0\"} 0.25\n"
                    "vllm:kv_cache_usage_perc{model_name=\"c\"} 0.5 1700000000\nother 3\n";
    double v = 0;
    CHECK(qt_lt_prom_max(m, strlen(m), "quanta_peak_rss_bytes", &v) && v == 1.5e6);
    CHECK(qt_lt_prom_max(m, strlen(m), "vllm:kv_cache_usage_perc", &v) && v == 0.5);
    CHECK(!qt_lt_prom_max(m, strlen(m), "missing", &v));
}

/* ---- requests ------------------------------------------------------------------ */

static void test_random_prompts(void) {
    qt_model *m = NULL;
    qt_tokenizer *tok = NULL;
    if (qt_model_open(qt_test_shared("models/stories260K.gguf"), &m) || qt_tokenizer_new(qt_model_vocab(m), &tok)) {
        CHECK_MSG(0, "stories260K: %s", qt_last_error());
        return;
    }
    qt_lt_prompt *p = NULL, *p2 = NULL;
    CHECK(qt_lt_random_prompts(qt_model_vocab(m), tok, 20, 64, 16, 0.5, 11, &p) == QT_OK);
    CHECK(qt_lt_random_prompts(qt_model_vocab(m), tok, 20, 64, 16, 0.5, 11, &p2) == QT_OK);
    for (int i = 0; p && p2 && i < 20; i++) {
        int32_t *ids = NULL, n = 0;
        CHECK(qt_tokenize(tok, p[i].prompt, strlen(p[i].prompt), true, &ids, &n) == QT_OK);
        CHECK_MSG(n == p[i].prompt_len, "prompt %d: %d tokens, said %d", i, n, p[i].prompt_len);
        /* vLLM's bounds: [floor(63 * 0.5), ceil(63 * 1.5)] text tokens plus BOS; outputs [8, 24] */
        CHECK(p[i].prompt_len >= 31 + 1 && p[i].prompt_len <= 95 + 1 && p[i].max_tokens >= 8 && p[i].max_tokens <= 24);
        CHECK(!strcmp(p[i].prompt, p2[i].prompt) && p[i].max_tokens == p2[i].max_tokens);
        free(ids);
    }
    qt_lt_prompts_free(p, 20);
    qt_lt_prompts_free(p2, 20);
    CHECK(qt_lt_random_prompts(qt_model_vocab(m), tok, 2, 64, 16, 1.0, 1, &p) == QT_ERR_ARG);
    qt_tokenizer_free(tok);
    qt_model_free(m);
}

static const char *write_tmp(const char *name, const char *text) {
    static char path[4][512];
    static int k;
    char *p = path[k++ % 4];
    snprintf(p, 512, "%s/%s", qt_test_tmpdir(), name);
    FILE *f = fopen(p, "w");
    fputs(text, f);
    fclose(f);
    return p;
}

static void test_dataset(void) {
    const char *ok = write_tmp("ok.jsonl", "{\"prompt\": \"Once upon a time\", \"max_tokens\": 5}\n\n"
                                           "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n");
    qt_lt_prompt *p = NULL;
    CHECK(qt_lt_dataset_load(ok, NULL, 5, 9, &p) == QT_OK);
    if (p) {
        CHECK(!strcmp(p[0].prompt, "Once upon a time") && p[0].max_tokens == 5 && p[0].prompt_len == -1);
        CHECK(p[1].messages_json && strstr(p[1].messages_json, "\"hi\"") && p[1].max_tokens == 9);
        CHECK(!strcmp(p[4].prompt, "Once upon a time")); /* cycled */
        qt_lt_prompts_free(p, 5);
    }
    const char *bad[][2] = {
        {"{\"prompt\": 3}\n", ":1: field 'prompt'"},
        {"{\"prompt\": \"a\"}\n{\"max_tokens\": 0, \"prompt\": \"b\"}\n", ":2: field 'max_tokens'"},
        {"{\"messages\": [{\"role\": \"user\"}]}\n", "field 'messages[0]'"},
        {"{\"text\": \"x\"}\n", "needs a 'prompt'"},
        {"not json\n", ":1: not a JSON object"},
        {"\n\n", "no requests"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *path = write_tmp("bad.jsonl", bad[i][0]);
        CHECK(qt_lt_dataset_load(path, NULL, 2, 4, &p) == QT_ERR_FORMAT);
        CHECK_MSG(strstr(qt_last_error(), bad[i][1]) && strstr(qt_last_error(), "bad.jsonl"), "%zu: %s", i, qt_last_error());
    }
}

static void test_report_compare(void) {
    qt_lt_level lv[2] = {{1, {.completed = 4, .good_completed = 4, .output_throughput = 10, .request_throughput = 1}},
                         {2, {.completed = 4, .good_completed = 4, .output_throughput = 18, .request_throughput = 2}}};
    lv[0].m.server_peak_rss_bytes = lv[1].m.server_peak_rss_bytes = -1;
    lv[0].m.server_kv_cache_usage_max = lv[1].m.server_kv_cache_usage_max = -1;
    qt_lt_report r = {.url = "http://x", .sweep = true, .levels = lv, .n_levels = 2, .sustainable = 2, .knee = 2,
                      .slo = {.ttft_ms = 100}, .max_error_rate = 0.01};
    char *ja = NULL, *jb = NULL, *table = NULL, *cj = NULL, *html = NULL;
    CHECK(qt_lt_report_json(&r, &ja) == QT_OK && strstr(ja, "\"sustainable_concurrency\": 2") && strstr(ja, "\"levels\""));
    CHECK(!strstr(ja, "server_peak_rss_bytes"));
    CHECK(qt_lt_report_html(&r, &html) == QT_OK && strstr(html, "<svg") && strstr(html, "sustainable 2") && strstr(html, "SLO TTFT"));
    r.sweep = false, r.levels = &lv[0], r.n_levels = 1;
    CHECK(qt_lt_report_json(&r, &jb) == QT_OK && strstr(jb, "\"completed\": 4") && !strstr(jb, "levels"));
    CHECK(qt_lt_compare(ja, "a.json", jb, "b.json", &table, &cj) == QT_OK);
    CHECK(table && strstr(table, "output throughput") && cj && strstr(cj, "\"ratio\""));
    free(table), free(cj);
    CHECK(qt_lt_compare("{}", "a.json", jb, "b.json", &table, &cj) == QT_ERR_FORMAT && strstr(qt_last_error(), "a.json"));
    free(ja), free(jb), free(html);
}

int main(void) {
    QT_RUN(test_percentiles);
    QT_RUN(test_tpot_slo);
    QT_RUN(test_peak);
    QT_RUN(test_arrivals);
    QT_RUN(test_metrics);
    QT_RUN(test_sweep);
    QT_RUN(test_sse);
    QT_RUN(test_chunks);
    QT_RUN(test_prom);
    QT_RUN(test_random_prompts);
    QT_RUN(test_dataset);
    QT_RUN(test_report_compare);
    return qt_test_finish("test_loadtest_metrics");
}
