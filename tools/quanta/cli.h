/* tools/quanta/cli.h — what every verb shares: the verb table, exit codes,
 * error printing, common options. Verbs use only the public API (quanta.h). */
#ifndef QT_CLI_H
#define QT_CLI_H

#include <stdio.h>

#include "quanta.h"

/* Exit codes: 0 success, 1 failure (bad input, failed check), 2 usage error. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

typedef int (*cli_verb_fn)(int argc, char **argv);
typedef struct cli_verb {
    const char *name;
    const char *summary;
    cli_verb_fn run; /* argv[0] is the verb name */
} cli_verb;

/* Print "quanta: error: <last library error>" and return CLI_FAIL. */
int cli_fail(qt_status s);
/* Print "quanta <verb>: <message>" plus "try 'quanta <verb> --help'" and return CLI_USAGE. */
int cli_usage(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Common option parsing helpers: strict numbers ("12x" is an error). */
int cli_parse_int(const char *verb, const char *opt, const char *s, long long lo, long long hi, long long *out);
int cli_parse_double(const char *verb, const char *opt, const char *s, double lo, double hi, double *out);


/* --json (standard output) or --json=FILE (written by the output rule); never
 * a separate argument, which would swallow a positional one. */
typedef struct cli_json {
    bool on;
    const char *file; /* NULL or "-": standard output */
} cli_json;
/* 1: a was --json[=FILE] (j set); 0: not a JSON option; -1: usage error printed. */
int cli_json_arg(const char *verb, const char *a, cli_json *j);
/* The stream a verb prints its JSON to, and closing it (writes FILE). */
FILE *cli_json_open(const cli_json *j, char **buf, size_t *len);
int cli_json_close(const cli_json *j, FILE *f, char **buf, size_t *len);
/* Whole JSON text to where --json asked. */
int cli_json_emit(const cli_json *j, const char *text);
/* root (a jansson json_t *, consumed) as indented, ordered JSON plus a newline, to where
 * --json asked; extra_flags adds jansson dump flags; what names the input in errors. */
int cli_json_emit_tree(const cli_json *j, void *root, size_t extra_flags, const char *what);
/* Opens model and tokenizes the whole text file with its tokenizer (BOS as the
 * vocabulary says); on failure prints the error, frees everything and returns CLI_FAIL. */
int cli_open_tokenized(const char *model, const char *file, qt_model **m, int32_t **ids, int32_t *n_ids);
/* --calib FILE [--nsamples N] [--seqlen L] [--seed S]: one meaning in every verb
 * that calibrates (quanta/quantize.h, "calibration samples": N windows of L
 * tokens cut from FILE, chosen by S). */
typedef struct cli_calib {
    const char *file;        /* NULL: no --calib */
    long long n_samples;     /* 0: every window */
    long long seq_len;       /* 0: not given (QT_CALIB_DEFAULT_SEQLEN) */
    unsigned long long seed; /* 0: the first N windows */
    bool tuned;              /* --nsamples, --seqlen, --seed or --allow-short-calib was given */
    bool allow_short;        /* --allow-short-calib */
} cli_calib;
#define CLI_CALIB_HELP                                                                                  \
    "  --calib FILE         calibration text: UTF-8, or JSONL with {\"text\": ...} or {\"messages\": [...]}\n" \
    "                       per line (conversations rendered with the model's own chat template);\n"   \
    "                       tokenized once (BOS first) and cut into windows of L tokens, each starting\n" \
    "                       with BOS\n"                                                                  \
    "  --nsamples N         use N windows (default: all of them)\n"                                     \
    "  --seqlen L           tokens per window (default 512)\n"                                           \
    "  --seed S             0 (default): the first N windows; S > 0: N windows drawn with seed S\n" \
    "  --allow-short-calib  a text with fewer than N windows: use those there are (else refused)\n"
/* 1: argv[*i] was a calibration option (*i advanced past its value); 0: not one; -1: usage error printed. */
int cli_calib_arg(const char *verb, int argc, char **argv, int *i, cli_calib *c);
/* The library's options for c (the defaults filled in). */
qt_calib_opts cli_calib_lib(const cli_calib *c);
/* Does s end with suffix? */
bool cli_ends_with(const char *s, const char *suffix);
/* -q or --quiet. */
bool cli_is_quiet(const char *a);
/* Writes text to path by the output rule (atomic; '-' = stdout). */
int write_text_file(const char *path, const char *text);

/* One KV-dtype vocabulary: f32, f16 (fp16), bf16, fp8 (fp8-e4m3), fp8-e5m2,
 * int8, as the engine has them; q8_0 is refused by the engine with the nearest
 * it has. cli_kv_plan maps a name to the planner's cache sizes (auto, q8_0 ok). */
int cli_kv_engine(const char *verb, const char *opt, const char *name);
int cli_kv_plan(const char *verb, const char *name, qt_kv_type *out);
/* One scheme vocabulary (scheme keys, aliases, `quanta formats` names), with suggestions. */
int cli_scheme(const char *verb, const char *name, const qt_scheme_info **out);

/* Progress on stderr: bar with ETA on a TTY, plain lines otherwise, none when quiet.
 * cli_progress_end() frees the renderer. */
qt_progress cli_progress(int quiet);
void cli_progress_end(void);

/* SIGINT/SIGTERM/SIGHUP -> cancel, handler kept for repeated signals; the
 * third removes temporary files and ends the process (cli_signals.c). */
void cli_signals_install(void);
/* rc, or 128 + the signal when a signal cancelled the verb. */
int cli_signal_exit(int rc);

/* Verb entry points (one file per verb). */
int cmd_formats(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_estimate(int argc, char **argv);
int cmd_hw(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_imatrix(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_loadtest(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_bench(int argc, char **argv);


#endif
