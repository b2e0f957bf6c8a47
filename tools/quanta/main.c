/* tools/quanta/main.c — `quanta <verb> [options]`.
 *
 * The verb table below is the whole CLI surface; each verb lives in its own
 * file (cmd_<verb>.c), parses its own options, and prints `--help`.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const cli_verb verbs[] = {
    {"formats", "list every weight format: bits per weight, block size, use, engines", cmd_formats},
    {"tokenize", "print the token ids (and pieces) of a text with a model's tokenizer", cmd_tokenize},
    {"template", "render a conversation through a chat template (a model's own, or a file) and print it", cmd_template},
    {"inspect", "describe a checkpoint: architecture, tokenizer, tensors, totals", cmd_inspect},
    {"convert", "convert between GGUF, Hugging Face directories and llama2.c", cmd_convert},
    {"quantize", "quantize to any GGUF file type exactly as llama-quantize does (imatrix, per-tensor rules)", cmd_quantize},
    {"plan", "rank the formats that run on a GPU for a model: fit, KV cache, commands, SVG", cmd_plan},
    {"estimate", "memory arithmetic for one model, scheme and GPU: weights, KV cache, sequences", cmd_estimate},
    {"hw", "the hardware table and the format support matrix, with reasons", cmd_hw},
    {"run", "generate text from a prompt with quanta's CPU engine", cmd_run},
    {"perplexity", "perplexity on a text file, measured as llama-perplexity does", cmd_perplexity},
    {"eval", "judge quantized candidates against their base: perplexity, KL divergence, verdicts", cmd_eval},
    {"imatrix", "compute an importance matrix from calibration text, as llama-imatrix does", cmd_imatrix},
    {"serve", "an OpenAI-compatible HTTP server on quanta's engine, with continuous batching", cmd_serve},
    {"loadtest", "load-test an OpenAI-compatible server: throughput, TTFT, TPOT, ITL, sustainable concurrency", cmd_loadtest},
    {"bench", "measure prefill/decode speed, latency, peak RSS and bandwidth use against the machine's", cmd_bench},
    {"synth", "write a random-weight model with a real model's exact shapes (GGUF or HF), for measuring", cmd_synth},
};
static const int n_verbs = (int)(sizeof verbs / sizeof verbs[0]);

static void print_help(FILE *out) {
    fprintf(out,
            "quanta %s — plan, quantize and verify large language models\n\n"
            "usage: quanta <verb> [options]\n"
            "       quanta <verb> --help\n\n"
            "verbs:\n",
            qt_version());
    for (int i = 0; i < n_verbs; i++) fprintf(out, "  %-12s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(out, "\noptions:\n  --help       this text\n  --version    print the version\n");
}

/* "did you mean": verbs within a small edit distance, or that start with what was typed. */
static int unknown_verb(const char *verb) {
    char list[256] = "";
    for (int i = 0; i < n_verbs; i++) {
        const char *v = verbs[i].name;
        if (qt_plan_name_distance(verb, v) > 2 && (strlen(verb) < 2 || strncmp(verb, v, strlen(verb)))) continue;
        strncat(list, *list ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, v, sizeof list - strlen(list) - 1);
    }
    if (*list) fprintf(stderr, "quanta: unknown verb '%s'; did you mean %s?\n", verb, list);
    else fprintf(stderr, "quanta: unknown verb '%s'\n", verb);
    fprintf(stderr, "try 'quanta --help' for the list of verbs\n");
    return CLI_USAGE;
}

int cli_fail(qt_status s) {
    const char *msg = qt_last_error();
    fprintf(stderr, "quanta: error: %s\n", (msg && *msg) ? msg : qt_status_name(s));
    return CLI_FAIL;
}

int cli_usage(const char *verb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "quanta %s: ", verb);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\ntry 'quanta %s --help'\n", verb);
    va_end(ap);
    return CLI_USAGE;
}

int cli_parse_int(const char *verb, const char *opt, const char *s, long long lo, long long hi, long long *out) {
    char *end;
    if (!s || !*s) return cli_usage(verb, "%s needs a value", opt);
    long long v = strtoll(s, &end, 10);
    if (*end) return cli_usage(verb, "%s: '%s' is not an integer", opt, s);
    if (v < lo || v > hi) return cli_usage(verb, "%s: %lld is out of range [%lld, %lld]", opt, v, lo, hi);
    *out = v;
    return CLI_OK;
}

int cli_parse_double(const char *verb, const char *opt, const char *s, double lo, double hi, double *out) {
    char *end;
    if (!s || !*s) return cli_usage(verb, "%s needs a value", opt);
    double v = strtod(s, &end);
    if (*end || v != v) return cli_usage(verb, "%s: '%s' is not a number", opt, s);
    if (v < lo || v > hi) return cli_usage(verb, "%s: %g is out of range [%g, %g]", opt, v, lo, hi);
    *out = v;
    return CLI_OK;
}

bool cli_ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static qt_progress_term *progress_term;

qt_progress cli_progress(int quiet) {
    if (!progress_term) progress_term = qt_progress_term_new(stderr, quiet ? 3 : 0);
    return qt_progress_term_sink(progress_term);
}

void cli_progress_end(void) {
    qt_progress_term_free(progress_term);
    progress_term = NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        print_help(stderr);
        return CLI_USAGE;
    }
    const char *verb = argv[1];
    if (!strcmp(verb, "--help") || !strcmp(verb, "-h") || !strcmp(verb, "help")) {
        print_help(stdout);
        return CLI_OK;
    }
    if (!strcmp(verb, "--version") || !strcmp(verb, "-V")) {
        printf("quanta %s (kernels: %s)\n", qt_version(), qt_cpu_level_detail());
        return CLI_OK;
    }
    cli_signals_install();
    for (int i = 0; i < n_verbs; i++)
        if (!strcmp(verb, verbs[i].name)) return cli_signal_exit(verbs[i].run(argc - 1, argv + 1));
    return unknown_verb(verb);
}
