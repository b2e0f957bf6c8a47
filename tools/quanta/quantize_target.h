/* tools/quanta/quantize_target.h — `quanta quantize --target-size` helpers: the
 * budget left after a KV cache (--budget-for-kv CTX[xSEQ] with --memory/--gpu, the
 * planner's arithmetic, docs/plan.md) and the picture of the budget sweep (--svg FILE;
 * quanta/quantize.h qt_quantize_sweep_*). docs/quantize.md "Target size". */
#ifndef QT_CLI_QUANTIZE_TARGET_H
#define QT_CLI_QUANTIZE_TARGET_H

#include <jansson.h>

#include "plan_cli.h"

typedef struct qtgt {
    const char *kv;              /* --budget-for-kv as given, NULL when absent */
    bool plan_given;             /* --memory, --gpu, --util or --overhead */
    const char *plan_opt;        /* the first of them, for messages */
    plan_opts po;                /* the planner's options, as `quanta plan` parses them */
    qt_estimate e;               /* the planner's estimate for the file: memory, overhead, KV */
    uint64_t file_bytes;         /* what is left for the file */
    const char *svg;             /* --svg FILE */
} qtgt;

#define QTGT_HELP                                                                                           \
    "  --budget-for-kv CTX[xSEQ]  instead of --target-size: the file gets the memory left after the\n"     \
    "                             KV cache of SEQ (default 1) sequences of CTX tokens, as quanta plan\n"    \
    "                             counts it for llama.cpp (util x memory, less the runtime allowance\n"     \
    "                             and the activation workspace, less the 16-bit cache); with:\n"           \
    "  --memory SIZE | --gpu G    the device (quanta hw --list; 'cpu' = this machine's RAM; no xN)\n"      \
    "  --util F, --overhead SIZE  as in quanta plan (default 0.90, computed allowances)\n"                 \
    "  --svg FILE                 with a target: the picture of the budget sweep (predicted cost of the\n" \
    "                             best mix against file size, llama.cpp's Q3_K_M..Q6_K with and\n"         \
    "                             without the imatrix scored the same way, the chosen point) and a\n"      \
    "                             heat map of the bits per weight each tensor got\n"

void qtgt_init(qtgt *t);
/* argv[*i] one of this file's options: 1 (consumed, *i advanced); 0: not one; -1 with *rc set. */
int qtgt_arg(const char *verb, int argc, char **argv, int *i, qtgt *t, int *rc);
/* After parsing (in: the checkpoint): the options agree; with --budget-for-kv, the planner's
 * estimate and t->file_bytes (printed unless quiet). CLI_OK or an exit code. */
int qtgt_resolve(const char *verb, const char *in, bool other_target, bool quiet, qtgt *t);
/* "budget_for_kv": the arithmetic, unrounded bytes. */
json_t *qtgt_json(const qtgt *t);
/* --svg: the sweep of (m, o, mix, plan) drawn to t->svg; sw gets the sweep (for --json). */
int qtgt_picture(const qtgt *t, const qt_model *m, const qt_quantize_opts *o, const qt_quantize_mix *mix,
                 const qt_quantize_plan *p, const char *title, qt_quantize_sweep **sw);
/* "sweep": the points, presets and chosen point the picture shows. */
json_t *qtgt_sweep_json(const qt_quantize_sweep *sw);

#endif
