/* `quanta bench -m MODEL [-m MODEL2 ...]`: prefill and decode speed, latency,
 * peak RSS and the bandwidth decode achieves against the machine's own read
 * bandwidth (quanta/bench.h, docs/performance.md). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_MODELS 32

static void help(void) {
    printf("usage: quanta bench -m MODEL [-m MODEL2 ...] [-p 512] [-n 128] [-t THREADS] [-r REPS]\n"
           "                    [--kv-dtype D] [--bw-size SIZE] [--json[=FILE]] [-q]\n\n"
           "Measure quanta's CPU engine on each model: prefill tokens/s (a prompt of -p random\n"
           "tokens in one batch), decode tokens/s (-n greedy tokens), time to first token,\n"
           "inter-token latency p50/p99, peak RSS, the weight bytes one decode step reads, the\n"
           "GB/s that makes, and its ratio to the machine's read bandwidth, which is measured\n"
           "last with the same threads (a streaming read of a buffer much larger than the\n"
           "last-level cache). One warm-up run, then medians over -r reps. Prints a Markdown\n"
           "table and the pp/tg rows as llama-bench prints them.\n\n"
           "  -m, --model PATH  a model (GGUF, HF directory, llama2.c); repeat for more\n"
           "  -p, --n-prompt N  prompt tokens (default 512)\n"
           "  -n, --n-gen N     generated tokens (default 128)\n"
           "  -t, --threads N   threads (default: all CPUs)\n"
           "  -r, --reps N      repetitions (default 3)\n"
           "  --kv-dtype D      KV cache format: f32, f16 (default; also fp16), bf16, fp8 (fp8-e4m3),\n"
           "                    fp8-e5m2, int8\n"
           "  --bw-size SIZE    bandwidth buffer (e.g. 2GiB; default max(1 GiB, 8 x last-level cache))\n"
           "  --json[=FILE]     {machine, models} as JSON on stdout (instead of the tables) or in FILE\n"
           "  -q, --quiet       no progress on stderr\n"
           "  --help            this text\n\n"
           "exit status: 0 ok, 1 failed, 2 usage error\n");
}

typedef struct bench_args {
    const char *models[MAX_MODELS];
    int n_models;
    long long n_prompt, n_gen, threads, reps;
    const char *kv;
    double bw_bytes;
    int quiet;
    cli_json json;
} bench_args;

static int parse_value(bench_args *a, const char *opt, const char *v) {
    if (!strcmp(opt, "-m") || !strcmp(opt, "--model")) {
        if (a->n_models == MAX_MODELS) return cli_usage("bench", "at most %d models", MAX_MODELS);
        a->models[a->n_models++] = v;
        return CLI_OK;
    }
    if (!strcmp(opt, "-p") || !strcmp(opt, "--n-prompt")) return cli_parse_int("bench", opt, v, 1, 1 << 20, &a->n_prompt);
    if (!strcmp(opt, "-n") || !strcmp(opt, "--n-gen")) return cli_parse_int("bench", opt, v, 0, 1 << 20, &a->n_gen);
    if (!strcmp(opt, "-t") || !strcmp(opt, "--threads")) return cli_parse_int("bench", opt, v, 1, 1024, &a->threads);
    if (!strcmp(opt, "-r") || !strcmp(opt, "--reps")) return cli_parse_int("bench", opt, v, 1, 1000, &a->reps);
    if (!strcmp(opt, "--kv-dtype")) {
        a->kv = v;
        return cli_kv_engine("bench", opt, v);
    }
    if (qt_plan_parse_size(v, &a->bw_bytes) != QT_OK) return cli_usage("bench", "--bw-size: %s", qt_last_error());
    if (a->bw_bytes < 1048576.0) return cli_usage("bench", "--bw-size '%s': must be at least 1 MiB (e.g. 2GiB)", v);
    return CLI_OK;
}

static int parse(int argc, char **argv, bench_args *a) {
    static const char *const with_value[] = {"-m", "--model", "-p", "--n-prompt", "-n", "--n-gen", "-t",
                                             "--threads", "-r", "--reps", "--kv-dtype", "--bw-size"};
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int j = cli_json_arg("bench", s, &a->json);
        if (j < 0) return CLI_USAGE;
        if (j) continue;
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) { help(); return -1; }
        if (cli_is_quiet(s)) { a->quiet = 1; continue; }
        bool known = false;
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++) known |= !strcmp(s, with_value[k]);
        if (!known) return s[0] == '-' ? cli_usage("bench", "unknown option '%s'", s) : cli_usage("bench", "unexpected argument '%s' (models are -m PATH)", s);
        if (i + 1 >= argc) return cli_usage("bench", "%s needs a value", s);
        int rc = parse_value(a, s, argv[++i]);
        if (rc) return rc;
    }
    if (!a->n_models) return cli_usage("bench", "no model: give -m PATH");
    return CLI_OK;
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s && s[1] ? s + 1 : p;
}

/* "1.24 B", "260.10 K" as llama-bench prints parameter counts. */
static void fmt_params(char *buf, size_t n, uint64_t p) {
    if (p >= 1000000000ull) snprintf(buf, n, "%.2f B", p / 1e9);
    else if (p >= 1000000ull) snprintf(buf, n, "%.2f M", p / 1e6);
    else snprintf(buf, n, "%.2f K", p / 1e3);
}

/* One row as llama-bench prints it: "| llama f16 | 2.30 GiB | 1.24 B | CPU | 2 | pp512 | 89.50 ± 0.30 |". */
static void llama_bench_row(const qt_bench_result *r, const char *test, int32_t n, double tps, double sd) {
    char model[64], size[32], params[32], name[32], ts[48];
    snprintf(model, sizeof model, "%s %s", r->arch, r->file_type[0] ? r->file_type : r->type_name);
    snprintf(size, sizeof size, "%.2f GiB", r->model_bytes / 1073741824.0);
    fmt_params(params, sizeof params, r->n_params);
    snprintf(name, sizeof name, "%s%d", test, n);
    snprintf(ts, sizeof ts, "%.2f ± %.2f", tps, sd);
    printf("| %-30s | %10s | %10s | %-10s | %7d | %15s | %20s |\n", model, size, params, "CPU (quanta)", r->threads, name, ts);
}

static void print_tables(const bench_args *a, const qt_bandwidth *bw, const qt_bench_result *r) {
    printf("machine: read bandwidth %.1f GB/s (median of %d, best %.1f) with %d threads over %.0f MiB, kernels %s\n\n",
           bw->read_gbps, bw->reps, bw->read_gbps_max, bw->threads, bw->buffer_bytes / 1048576.0, qt_cpu_level_detail());
    printf("| model | file type | params | prefill tok/s | decode tok/s | TTFT ms | ITL p50 ms | ITL p99 ms | peak RSS MiB "
           "| weight MiB/token | GB/s | of bandwidth |\n");
    printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < a->n_models; i++) {
        char params[32];
        fmt_params(params, sizeof params, r[i].n_params);
        printf("| %s | %s | %s | %.2f | %.2f | %.1f | %.2f | %.2f | %.0f | %.1f | %.1f | %.0f %% |\n", base_name(a->models[i]),
               r[i].file_type[0] ? r[i].file_type : r[i].type_name, params, r[i].prefill_tps, r[i].decode_tps, r[i].ttft_ms, r[i].itl_p50_ms, r[i].itl_p99_ms,
               r[i].peak_rss_bytes / 1048576.0, r[i].weight_bytes / 1048576.0, r[i].read_gbps, 100.0 * r[i].bandwidth_ratio);
    }
    printf("\n| model | size | params | backend | threads | test | t/s |\n");
    printf("| ------------------------------ | ---------: | ---------: | ---------- | ------: | --------------: | -------------------: |\n");
    for (int i = 0; i < a->n_models; i++) {
        llama_bench_row(&r[i], "pp", r[i].n_prompt, r[i].prefill_tps, r[i].prefill_tps_sd);
        if (r[i].n_gen > 0) llama_bench_row(&r[i], "tg", r[i].n_gen, r[i].decode_tps, r[i].decode_tps_sd);
    }
}

static json_t *jnum(double x) { return isfinite(x) ? json_real(x) : json_null(); }

static int emit_json(const bench_args *a, const qt_bandwidth *bw, const qt_bench_result *r) {
    json_t *models = json_array();
    for (int i = 0; i < a->n_models; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "model", json_string(a->models[i]));
        json_object_set_new(o, "arch", json_string(r[i].arch));
        json_object_set_new(o, "type", json_string(r[i].type_name));
        json_object_set_new(o, "file_type", r[i].file_type[0] ? json_string(r[i].file_type) : json_null());
        json_object_set_new(o, "params", json_integer((json_int_t)r[i].n_params));
        json_object_set_new(o, "model_bytes", json_integer((json_int_t)r[i].model_bytes));
        json_object_set_new(o, "n_prompt", json_integer(r[i].n_prompt));
        json_object_set_new(o, "n_gen", json_integer(r[i].n_gen));
        json_object_set_new(o, "reps", json_integer(r[i].reps));
        json_object_set_new(o, "threads", json_integer(r[i].threads));
        json_object_set_new(o, "prefill_tps", jnum(r[i].prefill_tps));
        json_object_set_new(o, "prefill_tps_sd", jnum(r[i].prefill_tps_sd));
        json_object_set_new(o, "prefill_tps_cpu", jnum(r[i].prefill_tps_cpu));
        json_object_set_new(o, "decode_tps", jnum(r[i].decode_tps));
        json_object_set_new(o, "decode_tps_sd", jnum(r[i].decode_tps_sd));
        json_object_set_new(o, "decode_tps_cpu", jnum(r[i].decode_tps_cpu));
        json_object_set_new(o, "ttft_ms", jnum(r[i].ttft_ms));
        json_object_set_new(o, "itl_p50_ms", jnum(r[i].itl_p50_ms));
        json_object_set_new(o, "itl_p99_ms", jnum(r[i].itl_p99_ms));
        json_object_set_new(o, "peak_rss_bytes", json_integer((json_int_t)r[i].peak_rss_bytes));
        json_object_set_new(o, "peak_rss_is_model", json_boolean(r[i].peak_rss_is_model));
        json_object_set_new(o, "weight_bytes", json_integer((json_int_t)r[i].weight_bytes));
        json_object_set_new(o, "read_gbps", jnum(r[i].read_gbps));
        json_object_set_new(o, "bandwidth_ratio", jnum(r[i].bandwidth_ratio));
        json_object_set_new(o, "read_gb_per_cpu_s", jnum(r[i].read_gb_per_cpu_s));
        json_array_append_new(models, o);
    }
    json_t *machine = json_pack("{s:o, s:o, s:i, s:s, s:s, s:I, s:I, s:i}", "read_gbps", jnum(bw->read_gbps), "read_gbps_max",
                                jnum(bw->read_gbps_max), "threads", bw->threads, "cpu_level", qt_cpu_level_name(),
                                "cpu_level_detail", qt_cpu_level_detail(),
                                "buffer_bytes", (json_int_t)bw->buffer_bytes, "llc_bytes", (json_int_t)bw->llc_bytes,
                                "reps", bw->reps);
    json_t *root = json_pack("{s:o, s:s, s:o}", "machine", machine, "kv_dtype", a->kv, "models", models);
    return cli_json_emit_tree(&a->json, root, 0, "bench");
}

int cmd_bench(int argc, char **argv) {
    bench_args a;
    memset(&a, 0, sizeof a);
    a.n_prompt = 512;
    a.n_gen = 128;
    a.reps = 3;
    a.kv = "f16";
    int rc = parse(argc, argv, &a);
    if (rc) return rc < 0 ? CLI_OK : rc;
    qt_bench_opts o = qt_bench_opts_default();
    o.n_prompt = (int32_t)a.n_prompt;
    o.n_gen = (int32_t)a.n_gen;
    o.reps = (int32_t)a.reps;
    o.threads = (int)a.threads;
    qt_status st = qt_kv_type_parse(a.kv, &o.kv_type);
    if (st != QT_OK) return cli_fail(st);
    qt_bench_result *r = calloc((size_t)a.n_models, sizeof *r);
    if (!r) return cli_fail(qt_error(QT_ERR_NOMEM, "bench: out of memory"));
    for (int i = 0; i < a.n_models && rc == CLI_OK; i++) {
        o.progress = cli_progress(a.quiet);
        st = qt_bench_file(a.models[i], &o, &r[i]);
        cli_progress_end();
        if (st != QT_OK) rc = cli_fail(st);
    }
    /* The machine last, with no model loaded: its buffer never counts in a model's peak RSS,
     * even where the high-water mark cannot be reset. */
    qt_bandwidth bw;
    if (rc == CLI_OK && !a.quiet) fprintf(stderr, "quanta bench: measuring the read bandwidth\n");
    if (rc == CLI_OK && (st = qt_bench_read_bandwidth((uint64_t)a.bw_bytes, o.threads, 0, &bw)) != QT_OK) rc = cli_fail(st);
    for (int i = 0; i < a.n_models && rc == CLI_OK; i++) r[i].bandwidth_ratio = r[i].read_gbps / bw.read_gbps;
    if (rc == CLI_OK && (!a.json.on || (a.json.file && strcmp(a.json.file, "-")))) print_tables(&a, &bw, r);
    if (rc == CLI_OK && a.json.on) rc = emit_json(&a, &bw, r);
    free(r);
    return rc;
}
