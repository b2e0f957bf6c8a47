/* lib/eval/tasks_run.c — a task file through one model: outputs from a
 * generator callback (the engine, or a server), every check on them, pass@k
 * over samples, pass rates with Wilson 95 % intervals (Wilson 1927). The
 * generator decides where the text comes from; this file only judges it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"

void qt_task_result_free(qt_task_result *r) {
    if (!r) return;
    for (int32_t i = 0; i < r->n_items && r->items; i++) free(r->items[i].text);
    free(r->items);
    memset(r, 0, sizeof *r);
}

int32_t qt_tasks_n_flipped(const qt_task_result *base, const qt_task_result *cand) {
    int32_t n = base->n_items < cand->n_items ? base->n_items : cand->n_items, f = 0;
    for (int32_t i = 0; i < n; i++) f += base->items[i].pass != cand->items[i].pass;
    return f;
}

/* Choice checks: scored once per item (they do not depend on the sample). */
static qt_status run_choices(const qt_task_item *it, qt_eval_score_fn score, void *user, uint64_t *bits, bool *skipped) {
    for (int32_t j = 0; j < it->n_checks; j++) {
        const qt_task_check *c = &it->checks[j];
        if (c->type != QT_CHECK_CHOICE) continue;
        if (!score) { *skipped = true; continue; }
        int32_t best, best_sum;
        qt_status s = qt__mc_pick(score, user, it->prompt, (const char *const *)c->choices, c->n_choices, &best, &best_sum);
        if (s) return s;
        if (best == c->answer) *bits |= 1ull << j;
    }
    return QT_OK;
}

/* The text checks on one output: bits of those passing, why of the first failure. */
static qt_status run_text(const qt_task_item *it, const char *text, uint64_t *bits, char *why) {
    why[0] = '\0';
    for (int32_t j = 0; j < it->n_checks; j++) {
        const qt_task_check *c = &it->checks[j];
        if (c->type == QT_CHECK_CHOICE) continue;
        bool pass;
        char w[QT_CHECK_WHY_LEN];
        qt_status s = qt_task_check_run(c, text, &pass, w);
        if (s) return s;
        if (pass) *bits |= 1ull << j;
        else if (!why[0]) snprintf(why, QT_CHECK_WHY_LEN, "checks[%d] %s: %.120s", (int)j, qt_check_type_name(c->type), w);
    }
    return QT_OK;
}

static uint64_t all_bits(int32_t n) { return n >= 64 ? ~0ull : (1ull << n) - 1; }

static qt_status run_item(const qt_task_item *it, int32_t n_samples, qt_task_gen_fn gen, qt_eval_score_fn score,
                          void *user, qt_task_outcome *o) {
    uint64_t choice_bits = 0;
    qt_status s = run_choices(it, score, user, &choice_bits, &o->choice_skipped);
    if (s) return s;
    const uint64_t want = all_bits(it->n_checks);
    if (!it->generates) {
        o->check_pass = choice_bits;
        o->pass = !o->choice_skipped && o->check_pass == want;
        if (!o->pass && !o->choice_skipped) snprintf(o->why, sizeof o->why, "choice: picked another choice");
        return (o->text = calloc(1, 1)) ? QT_OK : qt_error(QT_ERR_NOMEM, "tasks: out of memory");
    }
    for (int32_t k = 0; k < n_samples && !o->pass; k++) {
        char *text = NULL, why[QT_CHECK_WHY_LEN];
        bool infra = false;
        if ((s = gen(user, it, k, &text, &infra))) { free(text); return s; }
        if (infra) {
            if (k == 0) { o->infra = true; snprintf(o->why, sizeof o->why, "infrastructure: %s", text ? text : "no output"); }
            free(text);
            continue;
        }
        uint64_t bits = choice_bits;
        if ((s = run_text(it, text, &bits, why))) { free(text); return s; }
        bool pass = bits == want;
        if (pass || !o->text) { /* keep the deciding output: the first pass, else the first sample's */
            free(o->text);
            o->text = text;
            o->check_pass = bits;
            o->infra = false;
            snprintf(o->why, sizeof o->why, "%s", pass ? "" : why);
            o->pass = pass;
        } else {
            free(text);
        }
    }
    if (o->choice_skipped) o->pass = false;
    return QT_OK;
}

static void tally(const qt_task_set *set, qt_task_result *r) {
    for (int32_t i = 0; i < set->n_items; i++) {
        const qt_task_item *it = &set->items[i];
        const qt_task_outcome *o = &r->items[i];
        r->n_pass += o->pass;
        r->n_infra += o->infra;
        for (int32_t j = 0; j < it->n_checks; j++) {
            qt_check_type t = it->checks[j].type;
            if (o->infra || (t == QT_CHECK_CHOICE && o->choice_skipped)) continue;
            r->n_checks[t]++;
            r->n_checks_pass[t] += (o->check_pass >> j) & 1;
        }
    }
    r->pass_rate = (double)r->n_pass / (double)r->n_items;
    qt_eval_wilson(r->n_pass, r->n_items, QT_EVAL_Z95, &r->pass_lo, &r->pass_hi);
}

qt_status qt_tasks_run(const qt_task_set *set, int32_t n_samples, qt_task_gen_fn gen, qt_eval_score_fn score,
                       void *user, const qt_progress *progress, qt_task_result *out) {
    memset(out, 0, sizeof *out);
    if (set->n_items <= 0) return qt_error(QT_ERR_ARG, "tasks: no items");
    if (n_samples < 1) return qt_error(QT_ERR_ARG, "tasks: %d samples per item, need at least 1", (int)n_samples);
    if (!(out->items = calloc((size_t)set->n_items, sizeof *out->items))) return qt_error(QT_ERR_NOMEM, "tasks: out of memory");
    out->n_items = set->n_items;
    out->n_samples = n_samples;
    for (int32_t i = 0; i < set->n_items; i++) {
        if (qt_cancelled()) { qt_task_result_free(out); return qt_error(QT_ERR_INTERRUPTED, "tasks: interrupted"); }
        qt_status s = run_item(&set->items[i], n_samples, gen, score, user, &out->items[i]);
        if (s) { qt_task_result_free(out); return s; }
        qt_progress_report(progress, "tasks", i + 1, set->n_items);
    }
    tally(set, out);
    return QT_OK;
}
