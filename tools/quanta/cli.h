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
int cmd_inspect(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_estimate(int argc, char **argv);
int cmd_hw(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_eval(int argc, char **argv);


#endif
