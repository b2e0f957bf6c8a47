/* tools/quanta/quantize_target.c — --budget-for-kv and --svg of `quanta quantize
 * --target-size` (quantize_target.h). The memory arithmetic is the planner's own
 * (qt_plan_estimate for a llama.cpp GGUF scheme): budget, overhead and KV cache are
 * its numbers, and the file gets what they leave. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quantize_target.h"

void qtgt_init(qtgt *t) {
    memset(t, 0, sizeof *t);
    plan_opts_init(&t->po);
    t->po.req.concurrency = 1;
}

/* "16384" or "16384x4": CTX tokens, SEQ sequences. */
static int parse_kv(const char *verb, const char *v, qtgt *t) {
    char *end;
    errno = 0;
    const long long ctx = strtoll(v, &end, 10);
    long long seq = 1;
    if (end != v && (*end == 'x' || *end == 'X') && end[1]) {
        const char *s = end + 1;
        seq = strtoll(s, &end, 10);
        if (end == s) seq = 0;
    }
    if (*end || errno || v[0] == '-' || ctx < 1 || ctx > 100000000 || seq < 1 || seq > 10000000)
        return cli_usage(verb, "--budget-for-kv '%s': expected CTX or CTXxSEQ (tokens per sequence, 1 to 100000000; "
                               "sequences, 1 to 10000000), e.g. 16384 or 8192x4", v);
    t->kv = v;
    t->po.req.context = ctx;
    t->po.context_given = true;
    t->po.req.concurrency = seq;
    return CLI_OK;
}

int qtgt_arg(const char *verb, int argc, char **argv, int *i, qtgt *t, int *rc) {
    const char *a = argv[*i];
    *rc = CLI_OK;
    if (!strcmp(a, "--budget-for-kv") || !strcmp(a, "--svg")) {
        if (*i + 1 >= argc) { *rc = cli_usage(verb, "%s needs a value", a); return -1; }
        const char *v = argv[++*i];
        if (!strcmp(a, "--svg")) { t->svg = v; return 1; }
        return (*rc = parse_kv(verb, v, t)) ? -1 : 1;
    }
    /* the planner's own parsing of its options (the same names and checks as quanta plan) */
    static const char *const planner[] = {"--memory", "--gpu", "--util", "--overhead"};
    for (size_t k = 0; k < sizeof planner / sizeof planner[0]; k++)
        if (!strcmp(a, planner[k])) {
            if (!t->plan_given) t->plan_opt = planner[k];
            t->plan_given = true;
            return plan_opt(verb, argc, argv, i, &t->po, rc);
        }
    return 0;
}

int qtgt_resolve(const char *verb, const char *in, bool other_target, bool quiet, qtgt *t) {
    if (!t->kv) {
        if (t->plan_given) return cli_usage(verb, "%s goes with --budget-for-kv CTX[xSEQ]", t->plan_opt);
        return CLI_OK;
    }
    if (other_target) return cli_usage(verb, "--budget-for-kv sets the target size; give it or --target-size/--target-bpw");
    if (!t->po.gpu && !t->po.req.memory_bytes)
        return cli_usage(verb, "--budget-for-kv needs the device's memory: give --memory SIZE (e.g. 8GB) or --gpu NAME");
    t->po.model = in;
    t->po.quiet = quiet;
    int rc = plan_resolve(verb, &t->po, true);
    if (rc != CLI_OK) return rc;
    if (t->po.req.n_gpus > 1)
        return cli_usage(verb, "--gpu %s: --budget-for-kv sizes one file for one device; give one GPU", t->po.gpu);
    /* a llama.cpp GGUF scheme: the runtime allowance and cache element the planner counts for llama.cpp */
    t->po.req.scheme = qt_scheme_resolve("q4_k_m");
    if (!t->po.req.scheme) return cli_fail(qt_error(QT_ERR_INTERNAL, "the planner has no GGUF scheme"));
    qt_status st = qt_plan_estimate(&t->po.req, &t->e);
    if (st != QT_OK) return cli_fail(st);
    const qt_estimate *e = &t->e;
    const double left = e->budget_bytes - e->overhead_bytes - e->kv_required_bytes;
    char b1[32], b2[32], b3[32], b4[32];
    if (!(left >= 1)) {
        fprintf(stderr, "quanta: error: --budget-for-kv %s: the KV cache (%s for %lld x %lld tokens) and the overhead (%s) "
                        "leave nothing of the %s budget (%.2f x %s) for the weights\n", t->kv,
                fmt_size(e->kv_required_bytes, b1, sizeof b1), (long long)t->po.req.concurrency,
                (long long)t->po.req.context, fmt_size(e->overhead_bytes, b2, sizeof b2),
                fmt_size(e->budget_bytes, b3, sizeof b3), e->budget_bytes / e->device_bytes,
                fmt_size(e->device_bytes, b4, sizeof b4));
        return CLI_FAIL;
    }
    t->file_bytes = (uint64_t)left;
    if (!quiet) {
        char b5[32], b6[32], b7[32];
        fprintf(stderr, "quanta %s: budget for KV: %.2f x %s = %s; less overhead %s (runtime %s, workspace %s); less the "
                        "KV cache %s (%lld x %lld tokens, %.0f bytes per sequence, %g-byte elements): the file gets %s "
                        "(%llu bytes)\n", verb, e->budget_bytes / e->device_bytes, fmt_size(e->device_bytes, b1, sizeof b1),
                fmt_size(e->budget_bytes, b2, sizeof b2), fmt_size(e->overhead_bytes, b3, sizeof b3),
                fmt_size(e->runtime_bytes, b4, sizeof b4), fmt_size(e->workspace_bytes, b5, sizeof b5),
                fmt_size(e->kv_required_bytes, b6, sizeof b6), (long long)t->po.req.concurrency,
                (long long)t->po.req.context, e->kv_bytes_per_seq, e->kv_elt_bytes,
                fmt_size(left, b7, sizeof b7), (unsigned long long)t->file_bytes);
    }
    return CLI_OK;
}

json_t *qtgt_json(const qtgt *t) {
    const qt_estimate *e = &t->e;
    json_t *o = json_object();
    json_object_set_new(o, "context", json_integer(t->po.req.context));
    json_object_set_new(o, "sequences", json_integer(t->po.req.concurrency));
    json_object_set_new(o, "hardware", t->po.req.hw ? json_string(t->po.req.hw->key) : json_null());
    json_object_set_new(o, "device_bytes", json_real(e->device_bytes));
    json_object_set_new(o, "util", json_real(e->budget_bytes / e->device_bytes));
    json_object_set_new(o, "budget_bytes", json_real(e->budget_bytes));
    json_object_set_new(o, "runtime_bytes", json_real(e->runtime_bytes));
    json_object_set_new(o, "workspace_bytes", json_real(e->workspace_bytes));
    json_object_set_new(o, "overhead_bytes", json_real(e->overhead_bytes));
    json_object_set_new(o, "kv_elt_bytes", json_real(e->kv_elt_bytes));
    json_object_set_new(o, "kv_bytes_per_token", json_real(e->kv_bytes_per_token));
    json_object_set_new(o, "kv_bytes_per_seq", json_real(e->kv_bytes_per_seq));
    json_object_set_new(o, "kv_bytes", json_real(e->kv_required_bytes));
    json_object_set_new(o, "file_bytes", json_integer((json_int_t)t->file_bytes));
    return o;
}

int qtgt_picture(const qtgt *t, const qt_model *m, const qt_quantize_opts *o, const qt_quantize_mix *mix,
                 const qt_quantize_plan *p, const char *title, qt_quantize_sweep **sw) {
    *sw = NULL;
    qt_status st = qt_quantize_sweep_make(m, o, mix, p, sw);
    char *svg = NULL;
    if (st == QT_OK) st = qt_quantize_sweep_svg(*sw, title, &svg);
    if (st != QT_OK) { qt_quantize_sweep_free(*sw); *sw = NULL; return cli_fail(st); }
    const int rc = write_text_file(t->svg, svg);
    free(svg);
    return rc;
}

json_t *qtgt_sweep_json(const qt_quantize_sweep *sw) {
    json_t *o = json_object(), *pts = json_array(), *pre = json_array();
    for (int32_t i = 0; i < sw->n_points; i++)
        json_array_append_new(pts, json_pack("{s:I, s:f}", "file_bytes", (json_int_t)sw->points[i].file_bytes, "cost",
                                             sw->points[i].cost));
    for (int32_t i = 0; i < sw->n_presets; i++) {
        const qt_quantize_preset_point *p = &sw->presets[i];
        json_t *e = json_pack("{s:s, s:b, s:b}", "name", p->name, "imatrix", p->imatrix, "scored", p->scored);
        if (p->scored) {
            json_object_set_new(e, "file_bytes", json_integer((json_int_t)p->file_bytes));
            json_object_set_new(e, "cost", json_real(p->cost));
        } else {
            json_object_set_new(e, "why", json_string(p->why));
        }
        json_array_append_new(pre, e);
    }
    json_object_set_new(o, "points", pts);
    json_object_set_new(o, "presets", pre);
    json_object_set_new(o, "chosen", json_pack("{s:I, s:f}", "file_bytes", (json_int_t)sw->chosen.file_bytes, "cost",
                                               sw->chosen.cost));
    return o;
}
