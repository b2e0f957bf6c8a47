/* `quanta eval --tasks FILE` with a URL among --base/--candidate: the task
 * file through OpenAI-compatible servers (up to --max-concurrency requests at
 * once) and, for a model given as a path, on quanta's engine, all in one
 * report (docs/eval.md "Through a server"). Items a server failed to answer
 * are counted apart from the model's failures. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "eval_served.h"

bool eval_is_url(const char *spec) { return !strncmp(spec, "http://", 7) || !strncmp(spec, "https://", 8); }

/* A side of the comparison: "url" for a server, "model" (as written) for a local model. */
static json_t *model_json(const char *spec, const qt_task_set *set, const qt_task_result *r) {
    json_t *o = json_pack("{s:s, s:I, s:I, s:f, s:I}", eval_is_url(spec) ? "url" : "model", spec, "items", (json_int_t)r->n_items,
                          "passed", (json_int_t)r->n_pass, "pass_rate", r->pass_rate, "infra_failures", (json_int_t)r->n_infra);
    json_t *items = json_array();
    for (int32_t i = 0; i < r->n_items; i++) {
        const qt_task_outcome *t = &r->items[i];
        json_t *e = json_pack("{s:s, s:I, s:b, s:b, s:b, s:s}", "id", set->items[i].id, "line", (json_int_t)set->items[i].line,
                              "pass", t->pass, "infra", t->infra, "choice_skipped", t->choice_skipped, "why", t->why);
        json_object_set_new(e, "output", t->text && !t->infra ? json_string(t->text) : json_null());
        json_array_append_new(items, e);
    }
    json_object_set_new(o, "results", items);
    return o;
}

static void table_row(const char *role, const char *url, const qt_task_result *r) {
    printf("%-10s %6d/%-6d %6.1f %%  infra %d  %s\n", role, (int)r->n_pass, (int)r->n_items, 100 * r->pass_rate,
           (int)r->n_infra, url);
}

static double monotonic_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One side: a server through the HTTP client, or a model file on the engine. */
static qt_status run_side(const served_args *a, const char *spec, const qt_task_set *set, qt_task_result *out) {
    if (!eval_is_url(spec)) {
        qt_eval_model m;
        qt_status s = qt_eval_parse_model(spec, &a->engine, &m);
        if (s) return s;
        qt_eval_opts o;
        qt_eval_opts_default(&o);
        o.n_ctx = a->engine.n_ctx;
        o.task_samples = a->samples, o.task_seed = a->seed, o.task_temp = a->temp;
        o.progress = a->progress;
        return qt_tasks_run_model(&m, set, &o, out);
    }
    qt_task_http h;
    qt_task_http_default(&h);
    h.url = spec;
    h.model = a->model, h.api_key = a->api_key, h.set = set;
    h.timeout_s = a->timeout_s, h.max_retries = a->retries;
    h.time_limit_s = a->time_limit_s;
    h.temp = a->samples > 1 ? a->temp : 0.0f, h.seed = a->seed;
    h.t0 = monotonic_s(); /* before the workers start: the time limit counts from here */
    return qt_tasks_run_parallel(set, a->samples, a->concurrency, qt_task_http_gen, qt_task_http_score, &h, &a->progress, out);
}

int eval_tasks_served(const served_args *a) {
    qt_task_set *set;
    qt_status ls = qt_tasks_load(a->tasks, &set);
    if (ls) return cli_fail(ls);
    const int n = a->n_cands + 1;
    qt_task_result *res = calloc((size_t)n, sizeof *res);
    if (!res) { qt_tasks_free(set); return cli_fail(qt_error(QT_ERR_NOMEM, "out of memory")); }
    qt_status s = QT_OK;
    for (int i = 0; i < n && !s; i++) s = run_side(a, i ? a->cands[i - 1] : a->base, set, &res[i]);
    cli_progress_end();
    int exit_status = CLI_OK;
    if (!s) {
        if (!a->json.on || a->json.file) {
            printf("%-10s %13s %8s\n", "model", "passed", "rate");
            for (int i = 0; i < n; i++) table_row(i ? "candidate" : "base", i ? a->cands[i - 1] : a->base, &res[i]);
            for (int i = 0; i < n; i++) {
                int32_t skipped = 0;
                for (int32_t k = 0; k < res[i].n_items; k++) skipped += res[i].items[k].choice_skipped;
                if (skipped)
                    printf("note: the choice checks of %d item(s) were skipped on %s (its answers carry no logprobs)\n", (int)skipped,
                           i ? a->cands[i - 1] : a->base);
            }
            for (int i = 0; i < n; i++)
                if (res[i].n_infra) printf("note: %d item(s) failed by infrastructure on %s (see --json for why)\n", (int)res[i].n_infra, i ? a->cands[i - 1] : a->base);
        }
        for (int i = 0; i < n; i++) {
            if (res[i].n_infra) exit_status = CLI_FAIL; /* a server that did not answer needs review */
            if (i && 100 * (res[0].pass_rate - res[i].pass_rate) > a->max_pass_drop_pct) exit_status = CLI_FAIL;
        }
        if (a->json.on) {
            json_t *root = json_pack("{s:s, s:s, s:I}", "schema", "quanta.eval_tasks/1", "tasks_path", a->tasks, "samples",
                                     (json_int_t)a->samples);
            json_object_set_new(root, "base", model_json(a->base, set, &res[0]));
            json_t *c = json_array();
            for (int i = 1; i < n; i++) json_array_append_new(c, model_json(a->cands[i - 1], set, &res[i]));
            json_object_set_new(root, "candidates", c);
            if (cli_json_emit_tree(&a->json, root, 0, "eval") != CLI_OK) exit_status = CLI_FAIL;
        }
    }
    for (int i = 0; i < n; i++) qt_task_result_free(&res[i]);
    free(res);
    qt_tasks_free(set);
    return s ? cli_fail(s) : exit_status;
}
