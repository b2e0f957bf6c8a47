/* lib/eval/verdict.c — thresholds to pass / fail / needs-review, with reasons.
 *
 * Rule per threshold (docs/eval.md "Verdict"): the point estimate decides
 * fail; the far end of its 95 % interval decides whether a pass is certain
 * (pass) or could go either way with more text (needs-review). A verdict is
 * the worst of its reasons, and `quanta eval` exits 0 only when every
 * candidate passes.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "quanta/eval.h"

const char *qt_verdict_name(qt_verdict v) {
    switch (v) {
    case QT_VERDICT_PASS: return "pass";
    case QT_VERDICT_REVIEW: return "needs-review";
    case QT_VERDICT_FAIL: return "fail";
    }
    return "?";
}

void qt_eval_thresholds_default(qt_eval_thresholds *t) {
    t->max_ppl_delta_pct = 5.0;
    t->max_pass_drop_pct = 5.0;
    t->max_kld = NAN;
    t->min_top1 = NAN;
}

static void vnote(qt_eval_verdict *v, qt_verdict level, const char *fmt, va_list ap) {
    if (level > v->verdict) v->verdict = level;
    if (v->n_reasons >= QT_EVAL_MAX_REASONS) return; /* the verdict still counts it */
    int i = v->n_reasons++;
    v->level[i] = level;
    vsnprintf(v->reasons[i], QT_EVAL_REASON_LEN, fmt, ap);
}

void qt_eval_verdict_note(qt_eval_verdict *v, qt_verdict level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vnote(v, level, fmt, ap);
    va_end(ap);
}

/* One "upper limit" check (value must stay at or below limit): fail beyond
 * it, needs-review when the interval's upper end crosses it. */
static qt_verdict upper_check(double value, double hi, double limit) {
    if (!(value <= limit)) return QT_VERDICT_FAIL; /* NAN fails too: nothing proves it is within */
    if (!(hi <= limit)) return QT_VERDICT_REVIEW;
    return QT_VERDICT_PASS;
}

static void judge_ppl(const qt_eval_summary *s, double limit, qt_eval_verdict *v) {
    double d = s->ppl_delta_pct, lo = s->ppl_delta_pct_lo, hi = s->ppl_delta_pct_hi;
    qt_verdict r = upper_check(d, hi, limit);
    if (r == QT_VERDICT_FAIL)
        qt_eval_verdict_note(v, r, "perplexity %+.2f %% [95%% CI %+.2f, %+.2f] exceeds --max-ppl-delta-pct %g by %.2f points",
                             d, lo, hi, limit, d - limit);
    else if (r == QT_VERDICT_REVIEW)
        qt_eval_verdict_note(v, r, "perplexity %+.2f %% is within --max-ppl-delta-pct %g, but its 95%% CI reaches %+.2f %% "
                             "(%.2f points over); evaluate more text", d, limit, hi, hi - limit);
    else
        qt_eval_verdict_note(v, r, "perplexity %+.2f %% [95%% CI %+.2f, %+.2f] within --max-ppl-delta-pct %g (margin %.2f points)",
                             d, lo, hi, limit, limit - hi);
}

static void judge_kld(const qt_eval_summary *s, double limit, qt_eval_verdict *v) {
    double k = s->kld_mean, hi = s->kld_mean_hi;
    qt_verdict r = upper_check(k, hi, limit);
    if (r == QT_VERDICT_FAIL)
        qt_eval_verdict_note(v, r, "mean KLD %.5f exceeds --max-kld %g by %.5f (%.0f %% over)", k, limit, k - limit,
                             limit > 0 ? 100.0 * (k - limit) / limit : INFINITY);
    else if (r == QT_VERDICT_REVIEW)
        qt_eval_verdict_note(v, r, "mean KLD %.5f is within --max-kld %g, but its 95%% CI reaches %.5f; evaluate more text",
                             k, limit, hi);
    else
        qt_eval_verdict_note(v, r, "mean KLD %.5f (95%% CI upper %.5f) within --max-kld %g", k, hi, limit);
}

static void judge_top1(const qt_eval_summary *s, double limit, qt_eval_verdict *v) {
    double t = s->top1, lo = s->top1_lo;
    /* a lower limit: mirror of upper_check */
    qt_verdict r = !(t >= limit) ? QT_VERDICT_FAIL : !(lo >= limit) ? QT_VERDICT_REVIEW : QT_VERDICT_PASS;
    if (r == QT_VERDICT_FAIL)
        qt_eval_verdict_note(v, r, "top-1 agreement %.2f %% is below --min-top1 %g by %.2f points", 100.0 * t, limit,
                             100.0 * (limit - t));
    else if (r == QT_VERDICT_REVIEW)
        qt_eval_verdict_note(v, r, "top-1 agreement %.2f %% meets --min-top1 %g, but its 95%% CI goes down to %.2f %%; "
                             "evaluate more text", 100.0 * t, limit, 100.0 * lo);
    else
        qt_eval_verdict_note(v, r, "top-1 agreement %.2f %% (95%% CI lower %.2f %%) meets --min-top1 %g", 100.0 * t,
                             100.0 * lo, limit);
}

void qt_eval_judge(const qt_eval_summary *s, const qt_eval_thresholds *t, qt_eval_verdict *out) {
    memset(out, 0, sizeof *out);
    out->verdict = QT_VERDICT_PASS;
    int active = 0;
    if (!isnan(t->max_ppl_delta_pct)) { judge_ppl(s, t->max_ppl_delta_pct, out); active++; }
    if (!isnan(t->max_kld)) { judge_kld(s, t->max_kld, out); active++; }
    if (!isnan(t->min_top1)) { judge_top1(s, t->min_top1, out); active++; }
    if (!active) qt_eval_verdict_note(out, QT_VERDICT_REVIEW, "no threshold is active, so nothing was checked");
}

int qt_eval_exit_status(const qt_eval_verdict *v, int32_t n) {
    for (int32_t i = 0; i < n; i++)
        if (v[i].verdict != QT_VERDICT_PASS) return 1;
    return 0;
}
