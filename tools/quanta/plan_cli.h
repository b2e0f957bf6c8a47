/* tools/quanta/plan_cli.h — options and printing shared by `plan`, `estimate` and `hw`. */
#ifndef QT_PLAN_CLI_H
#define QT_PLAN_CLI_H

#include "cli.h"

typedef struct plan_opts {
    const char *model;           /* --model */
    const char *scheme;          /* --scheme (estimate) */
    const char *gpu;             /* --gpu NAME[xN] */
    const char *svg, *html;      /* plan outputs */
    cli_json json;
    bool quiet;
    bool context_given;          /* -c was given: not clamped to the trained context */
    qt_goal goal;
    qt_model_spec spec;
    qt_hw_info local;            /* --gpu cpu: this machine */
    char local_name[160];
    qt_estimate_req req;
} plan_opts;

void plan_opts_init(plan_opts *o);
/* Consumes argv[*i] (and its value) when it is a shared option: returns 1 and
 * advances *i; returns 0 when the option is not a shared one; on a bad value
 * returns -1 with *rc set to the exit code. */
int plan_opt(const char *verb, int argc, char **argv, int *i, plan_opts *o, int *rc);
/* Resolves --model and --gpu into o->spec / o->req; returns CLI_OK or an exit code. */
int plan_resolve(const char *verb, plan_opts *o, bool need_target);
/* The shared option lines of --help. */
void plan_opts_help(FILE *out);

/* Formatting: "7,615,616,512" and "15.23 GB". */
const char *fmt_count(double v, char *buf, size_t n);
const char *fmt_gb(double bytes, char *buf, size_t n);
/* GB, MB or KB (decimal) by magnitude: "234.9 MB". */
const char *fmt_size(double bytes, char *buf, size_t n);
/* "s" unless n is 1: "1 sequence", "2 sequences". */
static inline const char *plural(long long n) { return n == 1 ? "" : "s"; }
/* A fractional count with one decimal that never rounds up to the next whole number. */
const char *fmt_frac(double x, char *buf, size_t n);

/* `quanta plan`'s quanta job (plan_job.c): qt_gptq_memory_estimate of `quanta quantize
 * --algo gptq --scheme scheme` on the checkpoint at path with n_seq x n_tok calibration
 * tokens, base 0; false when path is no checkpoint or the scheme has no GPTQ run. */
bool plan_gptq_job(const char *path, const char *scheme, int32_t n_seq, int32_t n_tok, qt_gptq_memory *out);

#endif
