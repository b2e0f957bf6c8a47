/* lib/eval/tasks_report.c — the --tasks part of the eval reports: per check
 * type pass rates, the candidate's pass rate against the base's with its
 * Wilson 95 % interval, and the flipped items with both outputs (text table,
 * JSON "tasks" object, HTML section). Schema: docs/eval.md.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"

/* ---- text -------------------------------------------------------------------------- */

static void rate_row(qt__sbuf *b, int w, const char *label, const qt_task_result *t, const char *extra) {
    qt__sb_printf(b, "%-*.*s  %4d/%-4d %6.1f%%  [%5.1f%%, %5.1f%%]  %5d  %s\n", w, w, label, (int)t->n_pass, (int)t->n_items,
                  100 * t->pass_rate, 100 * t->pass_lo, 100 * t->pass_hi, (int)t->n_infra, extra);
}

static void flipped_text(qt__sbuf *b, const qt_task_set *set, const qt_task_result *base, const qt_task_result *c) {
    for (int32_t i = 0; i < set->n_items; i++) {
        if (base->items[i].pass == c->items[i].pass) continue;
        qt__sb_printf(b, "  %s (line %lld): %s on base, %s on candidate\n", set->items[i].id, (long long)set->items[i].line,
                      base->items[i].pass ? "passed" : "failed", c->items[i].pass ? "passed" : "failed");
        const qt_task_outcome *fail = base->items[i].pass ? &c->items[i] : &base->items[i];
        if (fail->why[0]) qt__sb_printf(b, "    why:       %s\n", fail->why);
        qt__sb_printf(b, "    base:      %.200s\n    candidate: %.200s\n", base->items[i].text ? base->items[i].text : "",
                      c->items[i].text ? c->items[i].text : "");
    }
}

void qt__tasks_table(qt__sbuf *b, const qt_eval_report *r, int w) {
    const qt_task_result *base = r->base_tasks;
    qt__sb_printf(b, "\ntasks (%s, %d items, %d sample(s) each; 95%% Wilson CI)\n", r->tasks_path ? r->tasks_path : "?",
                  (int)base->n_items, (int)base->n_samples);
    qt__sb_printf(b, "%-*s  %9s %7s  %17s  %5s  %s\n", w, "model", "passed", "rate", "95% CI", "infra", "flipped");
    rate_row(b, w, qt__eval_basename(r->base.label), base, "(base)");
    for (int32_t i = 0; i < r->n_candidates; i++) {
        const qt_task_result *t = r->candidates[i].tasks;
        char f[32];
        if (!t) continue;
        snprintf(f, sizeof f, "%d", (int)qt_tasks_n_flipped(base, t));
        rate_row(b, w, qt__eval_basename(r->candidates[i].info.label), t, f);
    }
    qt__sb_puts(b, "per check type (passed / checked):");
    for (int t = 0; t < QT_CHECK__COUNT; t++) {
        if (!base->n_checks[t] && !r->task_set->n_by_type[t]) continue;
        qt__sb_printf(b, "  %s base %d/%d", qt_check_type_name((qt_check_type)t), (int)base->n_checks_pass[t], (int)base->n_checks[t]);
        for (int32_t i = 0; i < r->n_candidates; i++)
            if (r->candidates[i].tasks)
                qt__sb_printf(b, ", cand %d/%d", (int)r->candidates[i].tasks->n_checks_pass[t], (int)r->candidates[i].tasks->n_checks[t]);
    }
    qt__sb_puts(b, "\n");
    for (int32_t i = 0; i < r->n_candidates; i++) {
        const qt_task_result *t = r->candidates[i].tasks;
        if (!t || !qt_tasks_n_flipped(base, t)) continue;
        qt__sb_printf(b, "flipped on %s:\n", qt__eval_basename(r->candidates[i].info.label));
        flipped_text(b, r->task_set, base, t);
    }
}

/* ---- JSON -------------------------------------------------------------------------- */

/* Model output as a JSON string (bytes that are not UTF-8 become U+FFFD). */
static json_t *jtext(const char *s) {
    char *clean = NULL;
    size_t n = 0;
    if (!s || qt_utf8_repair(s, strlen(s), &clean, &n)) return json_null();
    json_t *j = json_stringn(clean, n);
    free(clean);
    return j ? j : json_null();
}

static json_t *by_type(const qt_task_result *t) {
    json_t *o = json_object();
    for (int k = 0; k < QT_CHECK__COUNT; k++) {
        if (!t->n_checks[k]) continue;
        json_t *e = json_object();
        double lo, hi;
        qt_eval_wilson(t->n_checks_pass[k], t->n_checks[k], QT_EVAL_Z95, &lo, &hi);
        json_object_set_new(e, "checked", json_integer(t->n_checks[k]));
        json_object_set_new(e, "passed", json_integer(t->n_checks_pass[k]));
        json_object_set_new(e, "pass_rate", json_real((double)t->n_checks_pass[k] / t->n_checks[k]));
        json_object_set_new(e, "pass_rate_ci95", json_pack("[f, f]", lo, hi));
        json_object_set_new(o, qt_check_type_name((qt_check_type)k), e);
    }
    return o;
}

json_t *qt__tasks_json(const qt_eval_report *r, const qt_task_result *t) {
    const qt_task_result *base = r->base_tasks;
    if (!t || !base) return json_null();
    json_t *o = json_object(), *flipped = json_array();
    json_object_set_new(o, "items", json_integer(t->n_items));
    json_object_set_new(o, "samples", json_integer(t->n_samples));
    json_object_set_new(o, "passed", json_integer(t->n_pass));
    json_object_set_new(o, "pass_rate", json_real(t->pass_rate));
    json_object_set_new(o, "base_pass_rate", json_real(base->pass_rate));
    json_object_set_new(o, "pass_rate_ci95", json_pack("[f, f]", t->pass_lo, t->pass_hi));
    json_object_set_new(o, "pass_drop_pct", json_real(100 * (base->pass_rate - t->pass_rate)));
    json_object_set_new(o, "infra_failures", json_integer(t->n_infra));
    json_object_set_new(o, "by_check", by_type(t));
    json_object_set_new(o, "base_by_check", by_type(base));
    for (int32_t i = 0; i < t->n_items && t != base; i++) {
        const qt_task_outcome *b = &base->items[i], *c = &t->items[i];
        if (b->pass == c->pass) continue;
        json_t *e = json_object();
        json_object_set_new(e, "id", json_string(r->task_set->items[i].id));
        json_object_set_new(e, "line", json_integer(r->task_set->items[i].line));
        json_object_set_new(e, "base_pass", json_boolean(b->pass));
        json_object_set_new(e, "candidate_pass", json_boolean(c->pass));
        json_object_set_new(e, "base_output", jtext(b->text));
        json_object_set_new(e, "candidate_output", jtext(c->text));
        json_object_set_new(e, "why", jtext(b->pass ? c->why : b->why));
        json_array_append_new(flipped, e);
    }
    json_object_set_new(o, "flipped", flipped);
    json_t *results = json_array(); /* every item, in file order */
    for (int32_t i = 0; i < t->n_items; i++) {
        const qt_task_outcome *c = &t->items[i];
        json_t *e = json_pack("{s:s, s:b, s:b}", "id", r->task_set->items[i].id, "pass", c->pass, "infra", c->infra);
        json_object_set_new(e, "output", c->infra ? json_null() : jtext(c->text));
        json_array_append_new(results, e);
    }
    json_object_set_new(o, "results", results);
    return o;
}

/* ---- HTML -------------------------------------------------------------------------- */

void qt__tasks_html(qt__sbuf *b, const qt_eval_report *r) {
    const qt_task_result *base = r->base_tasks;
    qt__sb_puts(b, "<h2>Tasks</h2><p class=\"sub\">");
    qt__sb_html(b, r->tasks_path ? r->tasks_path : "?");
    qt__sb_printf(b, ": %d items, pass@%d; base passes %d (%.1f %%)</p>\n", (int)base->n_items, (int)base->n_samples,
                  (int)base->n_pass, 100 * base->pass_rate);
    qt__sb_puts(b, "<table><tr><th>candidate</th><th>passed</th><th>rate</th><th>95% CI</th><th>infra</th><th>flipped</th></tr>\n");
    for (int32_t i = 0; i < r->n_candidates; i++) {
        const qt_task_result *t = r->candidates[i].tasks;
        if (!t) continue;
        qt__sb_puts(b, "<tr><td>");
        qt__sb_html(b, qt__eval_basename(r->candidates[i].info.label));
        qt__sb_printf(b, "</td><td>%d/%d</td><td>%.1f %%</td><td>[%.1f, %.1f] %%</td><td>%d</td><td>%d</td></tr>\n",
                      (int)t->n_pass, (int)t->n_items, 100 * t->pass_rate, 100 * t->pass_lo, 100 * t->pass_hi, (int)t->n_infra,
                      (int)qt_tasks_n_flipped(base, t));
    }
    qt__sb_puts(b, "</table>\n");
    for (int32_t i = 0; i < r->n_candidates; i++) {
        const qt_task_result *t = r->candidates[i].tasks;
        if (!t || !qt_tasks_n_flipped(base, t)) continue;
        qt__sb_puts(b, "<h3>Flipped on ");
        qt__sb_html(b, qt__eval_basename(r->candidates[i].info.label));
        qt__sb_puts(b, "</h3><table class=\"flipped\"><tr><th>item</th><th>base</th><th>candidate</th><th>why</th></tr>\n");
        for (int32_t k = 0; k < t->n_items; k++) {
            const qt_task_outcome *bo = &base->items[k], *co = &t->items[k];
            if (bo->pass == co->pass) continue;
            qt__sb_puts(b, "<tr><td>");
            qt__sb_html(b, r->task_set->items[k].id);
            qt__sb_printf(b, "</td><td><b>%s</b><pre>", bo->pass ? "pass" : "fail");
            qt__sb_html(b, bo->text ? bo->text : "");
            qt__sb_printf(b, "</pre></td><td><b>%s</b><pre>", co->pass ? "pass" : "fail");
            qt__sb_html(b, co->text ? co->text : "");
            qt__sb_puts(b, "</pre></td><td>");
            qt__sb_html(b, bo->pass ? co->why : bo->why);
            qt__sb_puts(b, "</td></tr>\n");
        }
        qt__sb_puts(b, "</table>\n");
    }
}
