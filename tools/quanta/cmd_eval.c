/* `quanta eval`: candidates against their base on the same tokens — perplexity,
 * KL divergence, top-1 agreement, multiple choice, needle retrieval, speed —
 * with a verdict per candidate and an exit status a CI pipeline can trust.
 * Method and report schema: docs/eval.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine_opts.h"
#include "eval_served.h"

#define VERB "eval"
#define MAX_CANDIDATES 32

static void help(void) {
    printf("usage: quanta eval --base MODEL --candidate MODEL [--candidate MODEL ...] -f TEXT [options]\n"
           "       quanta eval --base URL|MODEL --candidate URL|MODEL [...] --tasks FILE.jsonl [options]\n\n"
           "Runs the base and every candidate over the same tokens of TEXT (llama-perplexity's chunks) and\n"
           "judges each candidate: perplexity change with a 95%% interval, KL(base || candidate) per token\n"
           "(mean, median, p99, max), top-1 agreement, share of tokens whose probability fell by half.\n\n"
           "MODEL is a path (GGUF, Hugging Face directory, llama2.c) optionally followed by engine settings:\n"
           "  PATH@kv=D,kv-scale=S,kv-gran=G,name=N\n"
           "    kv        KV cache: f32 f16 bf16 fp8-e4m3 fp8-e5m2 int8 (default --kv-dtype)\n"
           "    kv-scale  scales of fp8/int8 caches: auto (file's, else fp8 1.0 / int8 dynamic), file, one, dynamic\n"
           "    kv-gran   tensor (one scale per layer) or head (per layer and KV head)\n"
           "    name      label in reports\n"
           "  e.g. --candidate model.gguf@kv=fp8-e4m3,kv-scale=one\n\n"
           "options:\n"
           "  --base MODEL              the reference model\n"
           "  --candidate MODEL         a model to judge (repeatable, at most %d)\n"
           "  -f, --file TEXT           evaluation text (UTF-8)\n"
           "  --chunks N                evaluate only the first N chunks (default: all)\n"
           "  --max-ppl-delta-pct P     fail above a P %% perplexity increase (default 5)\n"
           "  --max-kld K               fail above a mean KL divergence of K nats (default off)\n"
           "  --min-top1 F              fail below a top-1 agreement share F in [0,1] (default off)\n"
           "  --strict                  fail (not just warn) when the text overlaps a candidate's calibration text\n"
           "  --needle                  needle-in-a-haystack retrieval, base vs candidates\n"
           "  --needle-lengths L,...    prompt lengths in tokens (default 128,256,448; capped by -c)\n"
           "  --needle-trials N         keys per length and depth (default 4)\n"
           "  --mc FILE.jsonl           multiple choice: {\"context\", \"endings\", \"label\"} per line\n"
           "  --tasks FILE.jsonl        the user's prompts with checks (docs/eval.md \"Task files\"); a --mc file is one\n"
           "  --samples K               outputs per task item, pass@K (default 1: greedy)\n"
           "  --seed S                  the sampler's seed when K > 1 (default 0)\n"
           "  --temp T                  its temperature when K > 1 (default 0.8)\n"
           "  --max-pass-drop-pct P     fail when the task pass rate falls more than P points below the base's (default 5)\n"
           "  through servers: a URL (http:// or https://, OpenAI-compatible) as --base or --candidate, with --tasks\n"
           "  and without -f; a MODEL beside it runs on quanta's engine (context -c). Each item is one request,\n"
           "  /v1/chat/completions for messages, else /v1/completions; a choice check asks /v1/completions for\n"
           "  the prompt's logprobs (echo), and is skipped with a note when the answer has none; items a\n"
           "  server fails are infrastructure failures\n"
           "  --max-concurrency N       at most N requests in flight to a server (default 1); results are in file order\n"
           "  --timeout S               seconds per request (default 120)\n"
           "  --time-limit S            no request to a model starts S seconds after its first; the rest fail by infrastructure\n"
           "  --retries N               retries of a 503 answer, after 0.5 s, 1 s, 2 s ... (default 4)\n"
           "  --model NAME              \"model\" of each request (default empty)\n"
           "  --api-key KEY             sent as Authorization: Bearer KEY\n"
           "  --bench                   prefill and decode tokens/s per model\n"
           "  --json[=FILE]             the JSON report (schema quanta.eval/1) on stdout instead of the\n"
           "                            table, or in FILE beside it\n"
           "  --html FILE               write a self-contained HTML report with charts\n"
           "  -q, --quiet               no progress on stderr\n\n"
           "exit status: 0 every candidate passes; 1 any fails or needs review, or an error; 2 usage error\n\n"
           "engine options (every model; kv=, kv-scale=, kv-gran= in a MODEL spec override them):\n"
           "  -c, --ctx-size N     context length = the chunk length scored (default 512, as llama-perplexity)\n"
           ENGINE_OPTS_HELP,
           MAX_CANDIDATES);
}

typedef struct eval_args {
    const char *base, *cands[MAX_CANDIDATES], *text, *html, *mc, *tasks;
    const char *model, *api_key; /* sent to servers */
    double timeout_s, time_limit_s;
    long long retries, concurrency;
    cli_json json;
    int n_cands;
    long long n_chunks, needle_trials, samples, seed;
    double temp;
    engine_cli_opts eng;
    int32_t needle_lengths[16];
    int n_needle_lengths;
    bool needle, bench, strict, quiet;
    qt_eval_thresholds th;
} eval_args;

static int parse_lengths(const char *s, eval_args *a) {
    a->n_needle_lengths = 0;
    const char *p = s;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || (*end && *end != ',') || v < 16 || v > 1 << 20)
            return cli_usage(VERB, "--needle-lengths: '%s' is not a list of lengths >= 16 like 128,256", s);
        if (a->n_needle_lengths == 16) return cli_usage(VERB, "--needle-lengths: at most 16 lengths");
        a->needle_lengths[a->n_needle_lengths++] = (int32_t)v;
        p = *end ? end + 1 : end;
    }
    if (!a->n_needle_lengths) return cli_usage(VERB, "--needle-lengths needs a value");
    return CLI_OK;
}

/* Any URL among the models: the task file through servers. */
static bool served(const eval_args *a) {
    bool url = eval_is_url(a->base);
    for (int i = 0; i < a->n_cands; i++) url |= eval_is_url(a->cands[i]);
    return url;
}

static int check_served(const eval_args *a) {
    if (!a->tasks) return cli_usage(VERB, "a URL as --base or --candidate needs --tasks FILE (only task files run through a server)");
    if (a->text || a->mc || a->needle || a->bench || a->html)
        return cli_usage(VERB, "with URLs only --tasks runs: drop -f, --mc, --needle, --bench and --html");
    return CLI_OK;
}

#define NEED_VALUE()                                                              \
    do { if (i + 1 >= argc) return cli_usage(VERB, "%s needs a value", opt); } while (0)

static int parse_args(int argc, char **argv, eval_args *a) {
    memset(a, 0, sizeof *a);
    engine_cli_defaults(&a->eng);
    a->eng.n_ctx = 512;
    a->needle_trials = 4;
    a->samples = 1;
    a->temp = 0.8;
    a->timeout_s = 120;
    a->retries = 4;
    a->concurrency = 1;
    qt_eval_thresholds_default(&a->th);
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        int r = engine_cli_parse(VERB, argc, argv, &i, &a->eng);
        if (r < 0) return CLI_USAGE;
        if (r > 0) continue;
        int j = cli_json_arg(VERB, opt, &a->json);
        if (j < 0) return CLI_USAGE;
        if (j) continue;
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) { help(); return -1; }
        else if (!strcmp(opt, "--base")) { NEED_VALUE(); a->base = argv[++i]; }
        else if (!strcmp(opt, "--candidate")) {
            NEED_VALUE();
            if (a->n_cands == MAX_CANDIDATES) return cli_usage(VERB, "at most %d candidates", MAX_CANDIDATES);
            a->cands[a->n_cands++] = argv[++i];
        }
        else if (!strcmp(opt, "-f") || !strcmp(opt, "--file")) { NEED_VALUE(); a->text = argv[++i]; }
        else if (!strcmp(opt, "--chunks")) { NEED_VALUE(); r = cli_parse_int(VERB, opt, argv[++i], 1, 1 << 30, &a->n_chunks); }
        else if (!strcmp(opt, "--max-ppl-delta-pct")) { NEED_VALUE(); r = cli_parse_double(VERB, opt, argv[++i], -100, 1e9, &a->th.max_ppl_delta_pct); }
        else if (!strcmp(opt, "--max-kld")) { NEED_VALUE(); r = cli_parse_double(VERB, opt, argv[++i], 0, 1e9, &a->th.max_kld); }
        else if (!strcmp(opt, "--min-top1")) { NEED_VALUE(); r = cli_parse_double(VERB, opt, argv[++i], 0, 1, &a->th.min_top1); }
        else if (!strcmp(opt, "--strict")) a->strict = true;
        else if (!strcmp(opt, "--needle")) a->needle = true;
        else if (!strcmp(opt, "--needle-lengths")) { NEED_VALUE(); r = parse_lengths(argv[++i], a); }
        else if (!strcmp(opt, "--needle-trials")) { NEED_VALUE(); r = cli_parse_int(VERB, opt, argv[++i], 1, 1000, &a->needle_trials); }
        else if (!strcmp(opt, "--mc")) { NEED_VALUE(); a->mc = argv[++i]; }
        else if (!strcmp(opt, "--tasks")) { NEED_VALUE(); a->tasks = argv[++i]; }
        else if (!strcmp(opt, "--samples")) { NEED_VALUE(); r = cli_parse_int(VERB, opt, argv[++i], 1, 1000, &a->samples); }
        else if (!strcmp(opt, "--seed")) { NEED_VALUE(); r = cli_parse_int(VERB, opt, argv[++i], 0, 0x7fffffffffffffffLL, &a->seed); }
        else if (!strcmp(opt, "--temp")) { NEED_VALUE(); r = cli_parse_double(VERB, opt, argv[++i], 0, 100, &a->temp); }
        else if (!strcmp(opt, "--max-pass-drop-pct")) { NEED_VALUE(); r = cli_parse_double(VERB, opt, argv[++i], 0, 100, &a->th.max_pass_drop_pct); }
        else if (!strcmp(opt, "--bench")) a->bench = true;
        else if (!strcmp(opt, "--timeout")) { NEED_VALUE(); r = cli_parse_double(VERB, opt, argv[++i], 0.001, 86400, &a->timeout_s); }
        else if (!strcmp(opt, "--time-limit")) { NEED_VALUE(); r = cli_parse_double(VERB, opt, argv[++i], 0.001, 1e7, &a->time_limit_s); }
        else if (!strcmp(opt, "--retries")) { NEED_VALUE(); r = cli_parse_int(VERB, opt, argv[++i], 0, 100, &a->retries); }
        else if (!strcmp(opt, "--max-concurrency")) { NEED_VALUE(); r = cli_parse_int(VERB, opt, argv[++i], 1, 256, &a->concurrency); }
        else if (!strcmp(opt, "--model")) { NEED_VALUE(); a->model = argv[++i]; }
        else if (!strcmp(opt, "--api-key")) { NEED_VALUE(); a->api_key = argv[++i]; }
        else if (!strcmp(opt, "--html")) { NEED_VALUE(); a->html = argv[++i]; }
        else if (!strcmp(opt, "--quiet") || !strcmp(opt, "-q")) a->quiet = true;
        else return cli_usage(VERB, "unknown option '%s'", opt);
        if (r != CLI_OK) return r;
    }
    if (!a->base) return cli_usage(VERB, "--base MODEL is required");
    if (!a->n_cands) return cli_usage(VERB, "at least one --candidate MODEL is required");
    if (served(a)) return check_served(a);
    if (!a->text) return cli_usage(VERB, "-f TEXT is required");
    if (a->eng.n_ctx < 8 || a->eng.n_ctx % 2)
        return cli_usage(VERB, "-c %lld: the chunk length must be even and at least 8 (its second half is scored)", a->eng.n_ctx);
    return CLI_OK;
}

int cmd_eval(int argc, char **argv) {
    eval_args a;
    int r = parse_args(argc, argv, &a);
    if (r < 0) return CLI_OK; /* --help */
    if (r != CLI_OK) return r;
    /* the engine options every model starts from (n_ctx is set per run) */
    qt_engine_opts eo;
    if (engine_cli_to_opts(&a.eng, &eo) != QT_OK) return cli_usage(VERB, "%s", qt_last_error());
    if (served(&a)) {
        served_args sa = {.tasks = a.tasks, .base = a.base, .cands = a.cands, .n_cands = a.n_cands, .model = a.model,
                          .api_key = a.api_key, .json = a.json, .samples = (int32_t)a.samples, .retries = (int32_t)a.retries,
                          .concurrency = (int32_t)a.concurrency, .seed = (uint64_t)a.seed, .temp = (float)a.temp,
                          .timeout_s = a.timeout_s, .time_limit_s = a.time_limit_s, .max_pass_drop_pct = a.th.max_pass_drop_pct,
                          .engine = eo, .progress = cli_progress(a.quiet)};
        sa.engine.n_ctx = (int32_t)a.eng.n_ctx;
        for (int i = 0; i <= a.n_cands; i++) { /* a bad MODEL spec is a usage error before any request */
            const char *spec = i ? a.cands[i - 1] : a.base;
            qt_eval_model m;
            if (!eval_is_url(spec) && qt_eval_parse_model(spec, &eo, &m) != QT_OK)
                return cli_usage(VERB, "%s: %s", i ? "--candidate" : "--base", qt_last_error());
        }
        return eval_tasks_served(&sa);
    }
    eo.n_ctx = 0;
    qt_eval_model base, *cands = calloc((size_t)a.n_cands, sizeof *cands);
    if (!cands) return cli_fail(qt_error(QT_ERR_NOMEM, "out of memory"));
    if (qt_eval_parse_model(a.base, &eo, &base) != QT_OK) { free(cands); return cli_usage(VERB, "--base: %s", qt_last_error()); }
    for (int i = 0; i < a.n_cands; i++)
        if (qt_eval_parse_model(a.cands[i], &eo, &cands[i]) != QT_OK) {
            free(cands);
            return cli_usage(VERB, "--candidate: %s", qt_last_error());
        }

    qt_eval_opts o;
    qt_eval_opts_default(&o);
    o.n_ctx = (int32_t)a.eng.n_ctx;
    o.n_chunks = (int32_t)a.n_chunks;
    o.thresholds = a.th;
    o.strict = a.strict;
    o.needle = a.needle;
    if (a.n_needle_lengths) { o.needle_opts.lengths = a.needle_lengths; o.needle_opts.n_lengths = a.n_needle_lengths; }
    o.needle_opts.n_trials = (int32_t)a.needle_trials;
    o.mc_path = a.mc;
    o.tasks_path = a.tasks;
    o.task_samples = (int32_t)a.samples;
    o.task_seed = (uint64_t)a.seed;
    o.task_temp = (float)a.temp;
    o.bench = a.bench;
    o.progress = cli_progress(a.quiet);

    qt_eval_result *res;
    qt_status s = qt_eval_run(&base, cands, a.n_cands, a.text, &o, &res);
    cli_progress_end();
    free(cands);
    if (s) return cli_fail(s);
    const qt_eval_report *rep = qt_eval_result_report(res);
    char *table;
    if ((!a.json.on || a.json.file) && !(s = qt_eval_report_table(rep, &table))) {
        fputs(table, stdout);
        free(table);
    }
    if (!s && a.json.on) s = qt_eval_report_write_json(rep, a.json.file ? a.json.file : "-");
    if (!s && a.html) s = qt_eval_report_write_html(rep, a.html);
    int exit_status = CLI_OK;
    for (int32_t i = 0; i < rep->n_candidates; i++)
        if (rep->candidates[i].verdict.verdict != QT_VERDICT_PASS) exit_status = CLI_FAIL;
    qt_eval_result_free(res);
    if (s) return cli_fail(s);
    return exit_status;
}
