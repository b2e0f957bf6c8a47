/* tools/quanta/eval_served.h — `quanta eval --tasks` through servers (eval_served.c). */
#ifndef QT_CLI_EVAL_SERVED_H
#define QT_CLI_EVAL_SERVED_H

#include "cli.h"

typedef struct served_args {
    const char *tasks, *base, *const *cands, *model, *api_key;
    int n_cands;
    cli_json json;
    int32_t samples, retries, concurrency;
    uint64_t seed;
    float temp;
    double timeout_s, time_limit_s, max_pass_drop_pct;
    qt_engine_opts engine; /* the local models' engine options (n_ctx: the context) */
    qt_progress progress;
} served_args;

bool eval_is_url(const char *spec);
int eval_tasks_served(const served_args *a);

#endif
