/* tools/quanta/cmd_loadtest.c — `quanta loadtest`: throughput, TTFT, TPOT, ITL and
 * sustainable concurrency of any OpenAI-compatible server (quanta/loadtest.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

#define VERB "loadtest"
#define SWEEP_MAX_LEVELS 32

static void help(void) {
    printf("usage: quanta loadtest --url URL --model NAME [--tokenizer PATH] [options]\n"
           "       quanta loadtest --compare A.json B.json [--json[=FILE]]\n\n"
           "Streams requests to an OpenAI-compatible server (vLLM, llama-server, quanta serve, ...) and\n"
           "reports throughput, goodput, TTFT, TPOT, ITL and E2EL as `vllm bench serve` defines them.\n\n"
           "  --url URL                 server base URL (http://127.0.0.1:8000)\n"
           "  --model NAME              the model name the server serves\n"
           "  --endpoint PATH           /v1/completions (default) or /v1/chat/completions\n"
           "  --tokenizer PATH          GGUF, tokenizer.json or HF directory: random prompts of exact\n"
           "                            token lengths; output tokens when the server sends no usage\n"
           "  --dataset random|FILE     random (default; needs --tokenizer) or JSONL: {\"prompt\": ...} or\n"
           "                            {\"messages\": [...]}, optional \"max_tokens\"\n"
           "  --input-len N             random prompt tokens (default 128)\n"
           "  --output-len N            max_tokens per request (default 64)\n"
           "  --range-ratio R           lengths uniform in [L(1-R), L(1+R)], R in [0, 1) (default 0)\n"
           "  --num-prompts N           requests per run (default 100; a sweep level: max(16, 4 x C))\n"
           "  --max-concurrency C       at most C requests in flight (default: unlimited)\n"
           "  --request-rate R          Poisson arrivals at R requests/s (default: all at once)\n"
           "  --burstiness B            gamma shape of the arrival gaps (default 1 = Poisson)\n"
           "  --sweep C1,C2,...|auto    one run per concurrency level; auto: 1, 2, 4, ... up to\n"
           "                            --sweep-max (default 64), stopping after the first level over the limits\n"
           "  --slo ttft:MS,tpot:MS,e2el:MS   service-level objectives for goodput (any subset)\n"
           "  --max-error-rate F        a sustainable level fails at most this share (default 0.01)\n"
           "  --seed S                  dataset and arrival seed (default 0)\n"
           "  --warmup N                N requests one at a time before measuring (not counted)\n"
           "  --ignore-eos              ask the server to ignore EOS (vLLM, llama-server extension)\n"
           "  --timeout S               per-request timeout in seconds (default 600)\n"
           "  --time-limit S            no request of a run starts after S seconds (default 300)\n"
           "  --api-key KEY             bearer token\n"
           "  --no-metrics              do not poll the server's /metrics\n"
           "  --json[=FILE]             the JSON report (stdout, or FILE beside the table)\n"
           "  --html FILE               HTML report (a sweep gets the throughput/latency plot)\n"
           "  --compare A.json B.json   a baseline and a candidate report side by side\n"
           "  -q, --quiet               no progress lines\n");
}

typedef struct args {
    qt_lt_options o;
    const char *tokenizer, *dataset, *sweep, *html, *cmp_a, *cmp_b;
    int32_t input_len, output_len, num_prompts, warmup, sweep_max;
    bool num_prompts_set, quiet;
    double range_ratio, max_error_rate;
    qt_lt_slo slo;
    cli_json json;
} args;

static int need(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) return cli_usage(VERB, "%s needs a value", argv[*i]);
    (*i)++;
    return CLI_OK;
}

static int parse_num(args *a, const char *opt, const char *v) {
    long long x;
    double d;
    int rc = CLI_OK;
    if (!strcmp(opt, "--input-len") && !(rc = cli_parse_int(VERB, opt, v, 1, 1 << 24, &x))) a->input_len = (int32_t)x;
    else if (!strcmp(opt, "--output-len") && !(rc = cli_parse_int(VERB, opt, v, 1, 1 << 24, &x))) a->output_len = (int32_t)x;
    else if (!strcmp(opt, "--num-prompts") && !(rc = cli_parse_int(VERB, opt, v, 1, 1 << 20, &x)))
        a->num_prompts = (int32_t)x, a->num_prompts_set = true;
    else if (!strcmp(opt, "--max-concurrency") && !(rc = cli_parse_int(VERB, opt, v, 1, 100000, &x))) a->o.max_concurrency = (int32_t)x;
    else if (!strcmp(opt, "--warmup") && !(rc = cli_parse_int(VERB, opt, v, 0, 100000, &x))) a->warmup = (int32_t)x;
    else if (!strcmp(opt, "--sweep-max") && !(rc = cli_parse_int(VERB, opt, v, 1, 100000, &x))) a->sweep_max = (int32_t)x;
    else if (!strcmp(opt, "--seed") && !(rc = cli_parse_int(VERB, opt, v, 0, INT64_MAX, &x))) a->o.seed = (uint64_t)x;
    else if (!strcmp(opt, "--range-ratio") && !(rc = cli_parse_double(VERB, opt, v, 0, 0.999999, &d))) a->range_ratio = d;
    else if (!strcmp(opt, "--max-error-rate") && !(rc = cli_parse_double(VERB, opt, v, 0, 1, &d))) a->max_error_rate = d;
    else if (!strcmp(opt, "--request-rate") && !(rc = cli_parse_double(VERB, opt, v, 1e-6, INFINITY, &d))) a->o.request_rate = d;
    else if (!strcmp(opt, "--burstiness") && !(rc = cli_parse_double(VERB, opt, v, 1e-6, INFINITY, &d))) a->o.burstiness = d;
    else if (!strcmp(opt, "--timeout") && !(rc = cli_parse_double(VERB, opt, v, 0.001, 86400, &d))) a->o.timeout_s = d;
    else if (!strcmp(opt, "--time-limit") && !(rc = cli_parse_double(VERB, opt, v, 0.001, 86400, &d))) a->o.time_limit_s = d;
    return rc;
}

static const char *const num_opts[] = {"--input-len", "--output-len", "--num-prompts", "--max-concurrency", "--warmup",
                                       "--sweep-max", "--seed", "--range-ratio", "--max-error-rate", "--request-rate",
                                       "--burstiness", "--timeout", "--time-limit"};

static int parse_args(int argc, char **argv, args *a) {
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        int j = cli_json_arg(VERB, opt, &a->json), rc = CLI_OK;
        if (j < 0) return CLI_USAGE;
        if (j > 0) continue;
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) return help(), -1;
        if (cli_is_quiet(opt)) { a->quiet = true; continue; }
        if (!strcmp(opt, "--ignore-eos")) { a->o.ignore_eos = true; continue; }
        if (!strcmp(opt, "--no-metrics")) { a->o.scrape_metrics = false; continue; }
        bool numeric = false;
        for (size_t k = 0; k < sizeof num_opts / sizeof *num_opts; k++) numeric |= !strcmp(opt, num_opts[k]);
        if (numeric) {
            if ((rc = need(argc, argv, &i)) || (rc = parse_num(a, opt, argv[i]))) return rc;
            continue;
        }
        const char **dst = !strcmp(opt, "--url")         ? &a->o.url
                           : !strcmp(opt, "--model")     ? &a->o.model
                           : !strcmp(opt, "--endpoint")  ? &a->o.endpoint
                           : !strcmp(opt, "--api-key")   ? &a->o.api_key
                           : !strcmp(opt, "--tokenizer") ? &a->tokenizer
                           : !strcmp(opt, "--dataset")   ? &a->dataset
                           : !strcmp(opt, "--sweep")     ? &a->sweep
                           : !strcmp(opt, "--html")      ? &a->html
                                                         : NULL;
        if (dst) {
            if ((rc = need(argc, argv, &i))) return rc;
            *dst = argv[i];
        } else if (!strcmp(opt, "--slo")) {
            if ((rc = need(argc, argv, &i))) return rc;
            if (qt_lt_slo_parse(argv[i], &a->slo)) return cli_usage(VERB, "%s", qt_last_error());
        } else if (!strcmp(opt, "--compare")) {
            if (i + 2 >= argc) return cli_usage(VERB, "--compare needs two JSON reports");
            a->cmp_a = argv[++i], a->cmp_b = argv[++i];
        } else {
            return cli_usage(VERB, "unknown option '%s'", opt);
        }
    }
    return CLI_OK;
}

static int check_args(const args *a) {
    if (a->cmp_a) return CLI_OK;
    if (!a->o.url) return cli_usage(VERB, "--url is required");
    if (!a->o.model) return cli_usage(VERB, "--model is required");
    if (strcmp(a->o.endpoint, "/v1/completions") && strcmp(a->o.endpoint, "/v1/chat/completions"))
        return cli_usage(VERB, "--endpoint: '%s' is not /v1/completions or /v1/chat/completions", a->o.endpoint);
    if (!strcmp(a->dataset, "random") && !a->tokenizer)
        return cli_usage(VERB, "--dataset random needs --tokenizer (prompts of exact token lengths)");
    if (a->sweep && a->o.request_rate > 0) return cli_usage(VERB, "--sweep varies concurrency: drop --request-rate");
    if (a->sweep && a->o.max_concurrency > 0) return cli_usage(VERB, "--sweep sets the concurrency: drop --max-concurrency");
    return CLI_OK;
}

static int ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && !strcmp(s + n - k, suf);
}

static qt_status open_tokenizer(const char *path, qt_model **m, qt_tokenizer **tok) {
    struct stat st;
    char buf[4096];
    if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
        snprintf(buf, sizeof buf, "%s/tokenizer.json", path);
        if (!stat(buf, &st)) path = buf;
    }
    qt_status s = ends_with(path, ".json") ? qt_model_open_tokenizer_json(path, m) : qt_model_open(path, m);
    if (!s) s = qt_tokenizer_new(qt_model_vocab(*m), tok);
    return s;
}

/* The concurrency levels of --sweep (increasing, deduplicated). */
static int sweep_levels(const args *a, int32_t *lv, int32_t *n) {
    *n = 0;
    if (!strcmp(a->sweep, "auto")) {
        for (int32_t c = 1; c <= a->sweep_max && *n < SWEEP_MAX_LEVELS; c *= 2) lv[(*n)++] = c;
        if (lv[*n - 1] != a->sweep_max && *n < SWEEP_MAX_LEVELS) lv[(*n)++] = a->sweep_max;
        return CLI_OK;
    }
    const char *p = a->sweep;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || (*end && *end != ',') || v < 1 || v > 100000)
            return cli_usage(VERB, "--sweep: '%s' is not a list of positive concurrencies or 'auto'", a->sweep);
        if (*n == SWEEP_MAX_LEVELS) return cli_usage(VERB, "--sweep: at most %d levels", SWEEP_MAX_LEVELS);
        if (*n && v <= lv[*n - 1]) return cli_usage(VERB, "--sweep: levels must increase (%ld after %d)", v, lv[*n - 1]);
        lv[(*n)++] = (int32_t)v;
        p = *end ? end + 1 : end;
    }
    if (!*n) return cli_usage(VERB, "--sweep: no levels");
    return CLI_OK;
}

static qt_status make_prompts(const args *a, const qt_model *m, const qt_tokenizer *tok, int32_t n, uint64_t seed,
                              qt_lt_prompt **p) {
    if (!strcmp(a->dataset, "random"))
        return qt_lt_random_prompts(qt_model_vocab(m), tok, n, a->input_len, a->output_len, a->range_ratio, seed, p);
    return qt_lt_dataset_load(a->dataset, tok, n, a->output_len, p);
}

/* The random prompts' seed for sweep level `level` (0 for a single run), and
 * for its warm-up requests: every level and every warm-up gets prompts of its
 * own, so a server's prompt cache never serves one level what an earlier
 * level (or the warm-up) already sent. */
static uint64_t level_seed(uint64_t seed, int32_t level, bool warmup) {
    return seed + (uint64_t)level * 0x9E3779B97F4A7C15ull + (warmup ? 0xD1B54A32D192ED03ull : 0);
}

/* The warm-up: min(--warmup, n) requests one at a time, not counted. */
static qt_status warm_up(const args *a, const qt_model *m, const qt_tokenizer *tok, int32_t n, int32_t level,
                         const qt_lt_options *o) {
    const int32_t k = a->warmup < n ? a->warmup : n;
    qt_lt_prompt *p = NULL;
    qt_status s = make_prompts(a, m, tok, k, level_seed(a->o.seed, level, true), &p);
    if (s) return s;
    qt_lt_options w = *o;
    w.max_concurrency = 1, w.request_rate = 0, w.scrape_metrics = false;
    qt_lt_run wr;
    s = qt_lt_run_requests(&w, p, k, &wr);
    qt_lt_run_free(&wr);
    qt_lt_prompts_free(p, k);
    return s;
}

/* One measured run of n requests at concurrency c (0: the options' own): sweep level `level`. */
static qt_status one_run(const args *a, const qt_model *m, const qt_tokenizer *tok, int32_t n, int32_t c, int32_t level,
                         qt_lt_level *out) {
    qt_lt_options o = a->o;
    if (c > 0) o.max_concurrency = c;
    qt_status s = a->warmup > 0 ? warm_up(a, m, tok, n, level, &o) : QT_OK;
    qt_lt_prompt *p = NULL;
    if (!s) s = make_prompts(a, m, tok, n, level_seed(a->o.seed, level, false), &p);
    if (s) return s;
    qt_lt_run run = {0};
    if (!s) s = qt_lt_run_requests(&o, p, n, &run);
    if (!s) s = qt_lt_metrics_compute(run.results, run.n_sent, run.duration_s, &a->slo, &out->m);
    if (!s) {
        out->concurrency = o.max_concurrency;
        out->m.server_peak_rss_bytes = run.server_peak_rss_bytes;
        out->m.server_kv_cache_usage_max = run.server_kv_cache_usage_max;
        if (out->m.failed && !a->quiet)
            for (int32_t i = 0; i < run.n_sent; i++)
                if (!run.results[i].ok) {
                    fprintf(stderr, "quanta loadtest: %d of %d requests failed; the first: %s\n", out->m.failed,
                            run.n_sent, run.results[i].error);
                    break;
                }
    }
    qt_lt_run_free(&run);
    qt_lt_prompts_free(p, n);
    return s;
}

/* The library's JSON text plus a newline, to where --json asked. */
static int emit_json_line(const cli_json *j, const char *json) {
    size_t n = strlen(json);
    char *line = malloc(n + 2);
    if (!line) return cli_fail(qt_error(QT_ERR_NOMEM, "loadtest: out of memory for the JSON report"));
    memcpy(line, json, n);
    memcpy(line + n, "\n", 2);
    int rc = cli_json_emit(j, line);
    free(line);
    return rc;
}

static int compare(const args *a) {
    qt_mmap fa, fb;
    if (qt_mmap_open(a->cmp_a, &fa)) return cli_fail(QT_ERR_IO);
    if (qt_mmap_open(a->cmp_b, &fb)) {
        qt_mmap_close(&fa);
        return cli_fail(QT_ERR_IO);
    }
    char *ta = strndup((const char *)fa.data, fa.size), *tb = strndup((const char *)fb.data, fb.size), *table = NULL, *json = NULL;
    qt_mmap_close(&fa), qt_mmap_close(&fb);
    qt_status s = ta && tb ? qt_lt_compare(ta, a->cmp_a, tb, a->cmp_b, &table, &json) : QT_ERR_NOMEM;
    free(ta), free(tb);
    if (s) return cli_fail(s);
    int rc = CLI_OK;
    if (!a->json.on || a->json.file) fputs(table, stdout);
    if (a->json.on) rc = emit_json_line(&a->json, json);
    free(table), free(json);
    return rc;
}

static int emit(const args *a, const qt_lt_report *r) {
    char *table = NULL, *json = NULL, *html = NULL;
    qt_status s = qt_lt_report_table(r, &table);
    if (!s && a->json.on) s = qt_lt_report_json(r, &json);
    if (!s && a->html) s = qt_lt_report_html(r, &html);
    int rc = s ? cli_fail(s) : CLI_OK;
    if (!rc && (!a->json.on || a->json.file)) fputs(table, stdout);
    if (!rc && json) rc = emit_json_line(&a->json, json);
    if (!rc && html) rc = write_text_file(a->html, html);
    free(table), free(json), free(html);
    return rc;
}

static int run_all(const args *a, const qt_model *m, const qt_tokenizer *tok) {
    qt_lt_report r = {.url = a->o.url, .endpoint = a->o.endpoint, .model = a->o.model, .dataset = a->dataset,
                      .num_prompts = a->num_prompts, .input_len = a->input_len, .output_len = a->output_len,
                      .range_ratio = a->range_ratio, .request_rate = a->o.request_rate, .burstiness = a->o.burstiness,
                      .max_error_rate = a->max_error_rate, .max_concurrency = a->o.max_concurrency, .seed = a->o.seed,
                      .slo = a->slo, .sweep = a->sweep != NULL};
    int32_t lv[SWEEP_MAX_LEVELS] = {1}, n_lv = 1;
    int rc = a->sweep ? sweep_levels(a, lv, &n_lv) : CLI_OK;
    if (rc) return rc;
    qt_lt_level levels[SWEEP_MAX_LEVELS];
    r.levels = levels;
    for (int32_t i = 0; i < n_lv; i++) {
        int32_t c = a->sweep ? lv[i] : 0;
        int32_t n = a->sweep && !a->num_prompts_set ? (4 * c > 16 ? (4 * c < 512 ? 4 * c : 512) : 16) : a->num_prompts;
        if (!a->quiet && a->sweep) fprintf(stderr, "quanta loadtest: concurrency %d, %d requests\n", c, n);
        qt_status s = one_run(a, m, tok, n, c, i, &levels[i]);
        if (s) return cli_fail(s);
        r.n_levels = i + 1;
        if (a->sweep && !strcmp(a->sweep, "auto") && !qt_lt_level_ok(&levels[i].m, a->max_error_rate)) break;
    }
    if (a->sweep) {
        r.sustainable = qt_lt_sweep_choose(levels, r.n_levels, a->max_error_rate);
        r.knee = qt_lt_knee(levels, r.n_levels);
    }
    rc = emit(a, &r);
    bool any = false;
    for (int32_t i = 0; i < r.n_levels; i++) any |= levels[i].m.completed > 0;
    if (!rc && !any) {
        fprintf(stderr, "quanta: error: %s: no request completed\n", a->o.url);
        rc = CLI_FAIL;
    }
    return rc;
}

int cmd_loadtest(int argc, char **argv) {
    args a = {.dataset = "random", .input_len = 128, .output_len = 64, .num_prompts = 100, .sweep_max = 64,
              .max_error_rate = 0.01};
    qt_lt_options_default(&a.o);
    a.o.time_limit_s = 300;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc < 0 ? CLI_OK : rc;
    if ((rc = check_args(&a))) return rc;
    if (a.cmp_a) return compare(&a);
    qt_model *m = NULL;
    qt_tokenizer *tok = NULL;
    if (a.tokenizer && open_tokenizer(a.tokenizer, &m, &tok)) {
        rc = cli_fail(QT_ERR_IO);
    } else {
        a.o.tok = tok;
        rc = run_all(&a, m, tok);
    }
    qt_tokenizer_free(tok);
    qt_model_free(m);
    return rc;
}
