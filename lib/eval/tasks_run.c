/* lib/eval/tasks_run.c — a task file through one model: outputs from a
 * generator callback (the engine, or a server), every check on them, pass@k
 * over samples, pass rates with Wilson 95 % intervals (Wilson 1927). The
 * generator decides where the text comes from; this file only judges it.
 * Items may run on several threads (a server answers several requests at
 * once); each writes only its own outcome, so results stay in file order.
 */
#include <pthread.h>
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

/* qt__mc_pick's scorer over a task scorer: after the first miss the other choices are not asked for. */
typedef struct score_ctx {
    qt_task_score_fn score;
    void *user;
    qt_task_miss miss;
} score_ctx;

static qt_status score_one(void *user, const char *context, const char *cont, qt_eval_score *out) {
    score_ctx *sc = user;
    memset(out, 0, sizeof *out);
    if (sc->miss.infra || sc->miss.no_logprobs) return QT_OK;
    return sc->score(sc->user, context, cont, out, &sc->miss);
}

/* Choice checks: scored once per item (they do not depend on the sample). A
 * scorer without log-likelihoods skips them; one whose server failed fails
 * the item by infrastructure (*infra, the reason in why). */
static qt_status run_choices(const qt_task_item *it, qt_task_score_fn score, void *user, uint64_t *bits, bool *skipped,
                             bool *infra, char *why) {
    for (int32_t j = 0; j < it->n_checks; j++) {
        const qt_task_check *c = &it->checks[j];
        if (c->type != QT_CHECK_CHOICE) continue;
        if (!score) { *skipped = true; continue; }
        int32_t best, best_sum;
        score_ctx sc = {.score = score, .user = user};
        qt_status s = qt__mc_pick(score_one, &sc, it->prompt, (const char *const *)c->choices, c->n_choices, &best, &best_sum);
        if (s) return s;
        if (sc.miss.infra) {
            *infra = true;
            snprintf(why, QT_CHECK_WHY_LEN, "infrastructure: %.140s", sc.miss.why);
            return QT_OK;
        }
        if (sc.miss.no_logprobs) { *skipped = true; continue; }
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

static qt_status run_item(const qt_task_item *it, int32_t n_samples, qt_task_gen_fn gen, qt_task_score_fn score,
                          void *user, qt_task_outcome *o) {
    uint64_t choice_bits = 0;
    qt_status s = run_choices(it, score, user, &choice_bits, &o->choice_skipped, &o->infra, o->why);
    if (s) return s;
    if (o->infra) return (o->text = calloc(1, 1)) ? QT_OK : qt_error(QT_ERR_NOMEM, "tasks: out of memory");
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

/* The items run by worker threads: each takes the next item not yet taken. */
typedef struct pool {
    const qt_task_set *set;
    int32_t n_samples;
    qt_task_gen_fn gen;
    qt_task_score_fn score;
    void *user;
    const qt_progress *progress;
    qt_task_result *out;
    pthread_mutex_t mu;
    int32_t next, done;
    int32_t err_item;          /* the first item (file order) that failed, or n_items */
    qt_status err;
    char err_msg[1024];        /* its qt_last_error() (thread-local, so carried over) */
} pool;

static void *worker(void *arg) {
    pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        const int32_t i = p->err ? p->set->n_items : p->next++;
        pthread_mutex_unlock(&p->mu);
        if (i >= p->set->n_items) break;
        qt_status s = qt_cancelled() ? qt_error(QT_ERR_INTERRUPTED, "tasks: interrupted")
                                     : run_item(&p->set->items[i], p->n_samples, p->gen, p->score, p->user, &p->out->items[i]);
        pthread_mutex_lock(&p->mu);
        if (s && i < p->err_item) {
            p->err_item = i, p->err = s;
            snprintf(p->err_msg, sizeof p->err_msg, "%s", qt_last_error());
        }
        if (!s) qt_progress_report(p->progress, "tasks", ++p->done, p->set->n_items);
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

qt_status qt_tasks_run_parallel(const qt_task_set *set, int32_t n_samples, int32_t n_workers, qt_task_gen_fn gen,
                                qt_task_score_fn score, void *user, const qt_progress *progress, qt_task_result *out) {
    memset(out, 0, sizeof *out);
    if (set->n_items <= 0) return qt_error(QT_ERR_ARG, "tasks: no items");
    if (n_samples < 1) return qt_error(QT_ERR_ARG, "tasks: %d samples per item, need at least 1", (int)n_samples);
    if (n_workers < 1) return qt_error(QT_ERR_ARG, "tasks: %d workers, need at least 1", (int)n_workers);
    if (!(out->items = calloc((size_t)set->n_items, sizeof *out->items))) return qt_error(QT_ERR_NOMEM, "tasks: out of memory");
    out->n_items = set->n_items;
    out->n_samples = n_samples;
    pool p = {.set = set, .n_samples = n_samples, .gen = gen, .score = score, .user = user, .progress = progress, .out = out,
              .err_item = set->n_items};
    pthread_mutex_init(&p.mu, NULL);
    if (n_workers > set->n_items) n_workers = set->n_items;
    pthread_t *th = n_workers > 1 ? calloc((size_t)n_workers, sizeof *th) : NULL;
    int32_t started = 0;
    for (; th && started < n_workers; started++)
        if (pthread_create(&th[started], NULL, worker, &p) != 0) break;
    if (started == 0) worker(&p); /* one worker, or no thread could start: this one */
    for (int32_t k = 0; k < started; k++) pthread_join(th[k], NULL);
    free(th);
    pthread_mutex_destroy(&p.mu);
    if (p.err) {
        qt_task_result_free(out);
        return qt_error(p.err, "%s", p.err_msg);
    }
    tally(set, out);
    return QT_OK;
}

qt_status qt_tasks_run(const qt_task_set *set, int32_t n_samples, qt_task_gen_fn gen, qt_task_score_fn score,
                       void *user, const qt_progress *progress, qt_task_result *out) {
    return qt_tasks_run_parallel(set, n_samples, 1, gen, score, user, progress, out);
}
