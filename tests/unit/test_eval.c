/* eval core: log-softmax, KL divergence, the streamed comparison and its
 * summaries, intervals, verdicts. Checked against closed forms and against an
 * independent long-double recomputation of every statistic. */
#include "qtest.h"
#include "quanta.h"

/* Deterministic xorshift for synthetic rows. */
static uint64_t rng_state = 88172645463325252ull;
static double urand(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

static long double lse_ld(const float *x, int n) {
    long double m = x[0], s = 0;
    for (int i = 1; i < n; i++) if (x[i] > m) m = x[i];
    for (int i = 0; i < n; i++) s += expl((long double)x[i] - m);
    return m + logl(s);
}

static long double kl_ld(const float *a, const float *b, int n) {
    long double la = lse_ld(a, n), lb = lse_ld(b, n), kl = 0;
    for (int i = 0; i < n; i++) {
        long double lp = a[i] - la, lq = b[i] - lb;
        kl += expl(lp) * (lp - lq);
    }
    return kl;
}

static void test_log_softmax(void) {
    enum { V = 1000 };
    static float x[V];
    static double out[V];
    for (int offset = 0; offset < 2; offset++) {
        for (int i = 0; i < V; i++) x[i] = (float)(40 * urand() - 20 + (offset ? 1e4 : 0));
        CHECK_OK(qt_eval_log_softmax(x, V, out));
        long double l = lse_ld(x, V), s = 0;
        double maxerr = 0;
        for (int i = 0; i < V; i++) {
            maxerr = fmax(maxerr, fabs(out[i] - (double)(x[i] - l)));
            s += expl(out[i]);
        }
        CHECK_MSG(maxerr < 1e-11, "offset %d: max error %g", offset, maxerr);
        CHECK_NEAR((double)s, 1.0, 1e-12);
    }
    x[7] = NAN;
    CHECK_STATUS(qt_eval_log_softmax(x, V, out), QT_ERR_RANGE);
    CHECK(strstr(qt_last_error(), "logit 7") != NULL);
    x[7] = INFINITY;
    CHECK_STATUS(qt_eval_log_softmax(x, V, out), QT_ERR_RANGE);
}

static void test_kl_closed_forms(void) {
    /* uniform P over 4 vs Q = (1/2, 1/6, 1/6, 1/6): KL = 1/4 ln(1/2) + 3/4 ln(3/2) */
    float p[4] = {0, 0, 0, 0}, q[4] = {(float)log(3.0), 0, 0, 0};
    double lp[4], lq[4];
    CHECK_OK(qt_eval_log_softmax(p, 4, lp));
    CHECK_OK(qt_eval_log_softmax(q, 4, lq));
    CHECK_NEAR(qt_eval_kl_from_logprobs(lp, lq, 4), 0.25 * log(0.5) + 0.75 * log(1.5), 1e-7);
    /* identical rows and rows shifted by a constant have KL 0 */
    CHECK(qt_eval_kl_from_logprobs(lp, lp, 4) == 0.0);
    float r[6] = {1.5f, -2, 3, 0.25f, 7, -1}, rs[6];
    for (int i = 0; i < 6; i++) rs[i] = r[i] + 100.0f;
    double a[6], b[6];
    CHECK_OK(qt_eval_log_softmax(r, 6, a));
    CHECK_OK(qt_eval_log_softmax(rs, 6, b));
    CHECK_NEAR(qt_eval_kl_from_logprobs(a, b, 6), 0.0, 1e-13);
    CHECK(qt_eval_kl_from_logprobs(a, b, 6) >= 0.0);
    /* a near-certain P against a flat Q: KL = ln V - H(P), large */
    float sharp[8] = {50, 0, 0, 0, 0, 0, 0, 0}, flat[8] = {0};
    double ls[8], lf[8];
    CHECK_OK(qt_eval_log_softmax(sharp, 8, ls));
    CHECK_OK(qt_eval_log_softmax(flat, 8, lf));
    CHECK_NEAR(qt_eval_kl_from_logprobs(ls, lf, 8), (double)kl_ld(sharp, flat, 8), 1e-12);
    CHECK_NEAR(qt_eval_kl_from_logprobs(ls, lf, 8), log(8.0), 1e-12);
}

static void test_argmax_quantile_wilson(void) {
    float x[5] = {1, 3, 3, -1, 2};
    CHECK_EQ_INT(qt_eval_argmax(x, 5), 1); /* lowest index on ties */
    float s[4] = {1, 2, 3, 4};
    CHECK_NEAR(qt_eval_quantile_sorted(s, 4, 0.5), 2.5, 1e-12);
    CHECK_NEAR(qt_eval_quantile_sorted(s, 4, 0.99), 3.97, 1e-6);
    CHECK_NEAR(qt_eval_quantile_sorted(s, 4, 0.0), 1.0, 0);
    CHECK_NEAR(qt_eval_quantile_sorted(s, 4, 1.0), 4.0, 0);
    CHECK_NEAR(qt_eval_quantile_sorted(s, 1, 0.37), 1.0, 0);
    CHECK(isnan(qt_eval_quantile_sorted(s, 0, 0.5)));
    /* Newcombe 1998, "Two-sided confidence intervals for the single proportion", table I (score method) */
    double lo, hi;
    qt_eval_wilson(81, 263, QT_EVAL_Z95, &lo, &hi);
    CHECK_NEAR(lo, 0.2553, 5e-5); CHECK_NEAR(hi, 0.3662, 5e-5);
    qt_eval_wilson(15, 148, QT_EVAL_Z95, &lo, &hi);
    CHECK_NEAR(lo, 0.0624, 5e-5); CHECK_NEAR(hi, 0.1605, 5e-5);
    qt_eval_wilson(0, 20, QT_EVAL_Z95, &lo, &hi);
    CHECK_NEAR(lo, 0.0, 1e-12); CHECK_NEAR(hi, 0.1611, 5e-5);
    qt_eval_wilson(1, 29, QT_EVAL_Z95, &lo, &hi);
    CHECK_NEAR(lo, 0.0061, 5e-5); CHECK_NEAR(hi, 0.1718, 5e-5);
    qt_eval_wilson(0, 0, QT_EVAL_Z95, &lo, &hi);
    CHECK(isnan(lo) && isnan(hi));
}

/* Rows whose probabilities are known exactly: base uniform over 4 (ppl 4),
 * candidate puts 9/12 on token 0. */
static void test_summary_known_values(void) {
    qt_eval_cmp *c;
    CHECK_OK(qt_eval_cmp_new(4, &c));
    float base[4] = {0, 0, 0, 0}, cand[4] = {(float)log(9.0), 0, 0, 0};
    for (int i = 0; i < 10; i++) CHECK_OK(qt_eval_cmp_add(c, base, cand, 0)); /* q = 3/4 */
    for (int i = 0; i < 10; i++) CHECK_OK(qt_eval_cmp_add(c, base, cand, 1)); /* q = 1/12: fell below half of 1/4 */
    qt_eval_summary s;
    CHECK_OK(qt_eval_cmp_summary(c, &s));
    CHECK_EQ_INT(s.n_tokens, 20);
    CHECK_NEAR(s.base_ppl, 4.0, 1e-12);
    CHECK_NEAR(s.base_ppl_stderr, 0.0, 1e-12);
    /* candidate nll: ln(4/3) and ln 12 half the time each -> ppl = sqrt(4/3 * 12) = 4 */
    CHECK_NEAR(s.ppl, 4.0, 1e-6);
    CHECK_NEAR(s.ppl_delta_pct, 0.0, 1e-4);
    CHECK(s.ppl_delta_pct_lo < 0 && s.ppl_delta_pct_hi > 0);
    double kl = 0.25 * log(0.25 / 0.75) + 0.75 * log(0.25 / (1.0 / 12));
    CHECK_NEAR(s.kld_mean, kl, 1e-6);
    CHECK_NEAR(s.kld_median, kl, 1e-6);
    CHECK_NEAR(s.kld_max, kl, 1e-6);
    CHECK_NEAR(s.top1, 1.0, 0); /* both argmax 0 (the uniform row ties to index 0) */
    CHECK_NEAR(s.p_halved, 0.5, 0);
    /* llama-perplexity's stderr for the candidate: ppl * sqrt(var/(n-1)) with var = (ln 9 / 2)^2 */
    double sd = log(9.0) / 2;
    CHECK_NEAR(s.ppl_stderr, 4.0 * sqrt(sd * sd / 19.0), 1e-6);
    CHECK_STATUS(qt_eval_cmp_add(c, base, cand, 4), QT_ERR_ARG);
    CHECK_STATUS(qt_eval_cmp_add(c, base, cand, -1), QT_ERR_ARG);
    float bad[4] = {0, NAN, 0, 0};
    CHECK_STATUS(qt_eval_cmp_add(c, bad, cand, 0), QT_ERR_RANGE);
    CHECK(strstr(qt_last_error(), "base logits") != NULL);
    CHECK_STATUS(qt_eval_cmp_add(c, base, bad, 0), QT_ERR_RANGE);
    CHECK(strstr(qt_last_error(), "candidate logits") != NULL);
    qt_eval_cmp_free(c);

    /* "fell by more than half" right at the edge: p = 1/4, q = 0.13 (kept) and 0.12 (fell) */
    CHECK_OK(qt_eval_cmp_new(4, &c));
    float keep[4] = {(float)log(1 / 0.13 - 3), 0, 0, 0}, fell[4] = {(float)log(1 / 0.12 - 3), 0, 0, 0};
    CHECK_OK(qt_eval_cmp_add(c, base, keep, 1));
    CHECK_OK(qt_eval_cmp_add(c, base, fell, 1));
    CHECK_OK(qt_eval_cmp_add(c, base, fell, 2));
    CHECK_OK(qt_eval_cmp_summary(c, &s));
    CHECK_NEAR(s.p_halved, 2.0 / 3.0, 1e-15);
    qt_eval_cmp_free(c);

    CHECK_OK(qt_eval_cmp_new(4, &c));
    CHECK_STATUS(qt_eval_cmp_summary(c, &s), QT_ERR_ARG);
    qt_eval_cmp_free(c);
    CHECK_STATUS(qt_eval_cmp_new(0, &c), QT_ERR_ARG);
}

static int cmp_ld(const void *a, const void *b) {
    long double x = *(const long double *)a, y = *(const long double *)b;
    return (x > y) - (x < y);
}

/* Random rows, candidate = base + noise; every summary field recomputed here
 * from scratch in long double. */
static void test_summary_matches_independent_recomputation(void) {
    enum { V = 97, N = 3000, CH = 100 };
    static float base[V], cand[V];
    static long double nb[N], nc[N], kl[N];
    int top1 = 0, halved = 0;
    qt_eval_cmp *c;
    CHECK_OK(qt_eval_cmp_new(V, &c));
    CHECK_OK(qt_eval_cmp_reserve(c, 10)); /* grows past it */
    for (int t = 0; t < N; t++) {
        for (int i = 0; i < V; i++) {
            base[i] = (float)(6 * urand() - 3);
            cand[i] = base[i] + (float)(0.6 * (urand() - 0.5)) + (t % 7 == 0 ? 0.5f : 0.0f) * (i == 3);
        }
        int target = (int)(urand() * V);
        if (target == V) target = V - 1;
        long double lb = lse_ld(base, V), lc = lse_ld(cand, V);
        nb[t] = lb - base[target];
        nc[t] = lc - cand[target];
        kl[t] = kl_ld(base, cand, V);
        int ab = 0, ac = 0;
        for (int i = 1; i < V; i++) { if (base[i] > base[ab]) ab = i; if (cand[i] > cand[ac]) ac = i; }
        top1 += ab == ac;
        halved += expl(-nc[t]) < 0.5L * expl(-nb[t]);
        CHECK_OK(qt_eval_cmp_add(c, base, cand, target));
        if ((t + 1) % CH == 0) qt_eval_cmp_end_chunk(c);
    }
    CHECK_EQ_INT(qt_eval_cmp_count(c), N);
    qt_eval_summary s;
    CHECK_OK(qt_eval_cmp_summary(c, &s));
    CHECK_EQ_INT(s.n_chunks, N / CH);

    long double sb = 0, sb2 = 0, sc = 0, sc2 = 0, sd = 0, sk = 0;
    for (int t = 0; t < N; t++) {
        sb += nb[t]; sb2 += nb[t] * nb[t]; sc += nc[t]; sc2 += nc[t] * nc[t];
        sd += nc[t] - nb[t]; sk += kl[t];
    }
    long double mb = sb / N, mc = sc / N, md = sd / N, mk = sk / N;
    double pb = (double)expl(mb), pc = (double)expl(mc);
    CHECK_NEAR(s.base_ppl, pb, 1e-10 * pb);
    CHECK_NEAR(s.ppl, pc, 1e-10 * pc);
    CHECK_NEAR(s.base_ppl_stderr, pb * sqrt((double)((sb2 / N - mb * mb) / (N - 1))), 1e-9);
    CHECK_NEAR(s.ppl_stderr, pc * sqrt((double)((sc2 / N - mc * mc) / (N - 1))), 1e-9);
    CHECK_NEAR(s.ln_ratio, (double)md, 1e-12);
    CHECK_NEAR(s.ppl / s.base_ppl, exp(s.ln_ratio), 1e-12);

    /* per-token and batch-means standard errors; the summary uses the larger */
    long double vd = 0, vk = 0;
    for (int t = 0; t < N; t++) { vd += (nc[t] - nb[t] - md) * (nc[t] - nb[t] - md); vk += (kl[t] - mk) * (kl[t] - mk); }
    double se_tok = sqrt((double)(vd / (N - 1) / N)), se_tok_k = sqrt((double)(vk / (N - 1) / N));
    long double cm[N / CH], ck[N / CH], mcm = 0, mck = 0;
    for (int j = 0; j < N / CH; j++) {
        cm[j] = ck[j] = 0;
        for (int t = j * CH; t < (j + 1) * CH; t++) { cm[j] += nc[t] - nb[t]; ck[j] += kl[t]; }
        cm[j] /= CH; ck[j] /= CH; mcm += cm[j]; mck += ck[j];
    }
    mcm /= N / CH; mck /= N / CH;
    long double vcm = 0, vck = 0;
    for (int j = 0; j < N / CH; j++) { vcm += (cm[j] - mcm) * (cm[j] - mcm); vck += (ck[j] - mck) * (ck[j] - mck); }
    double se_ch = sqrt((double)(vcm / (N / CH - 1) / (N / CH))), se_ch_k = sqrt((double)(vck / (N / CH - 1) / (N / CH)));
    CHECK_NEAR(s.ln_ratio_stderr, fmax(se_tok, se_ch), 1e-12);
    CHECK_NEAR(s.kld_stderr, fmax(se_tok_k, se_ch_k), 1e-12);
    double h = QT_EVAL_Z95 * s.ln_ratio_stderr;
    CHECK_NEAR(s.ppl_delta_pct, 100 * expm1((double)md), 1e-9);
    CHECK_NEAR(s.ppl_delta_pct_lo, 100 * expm1((double)md - h), 1e-9);
    CHECK_NEAR(s.ppl_delta_pct_hi, 100 * expm1((double)md + h), 1e-9);

    CHECK_NEAR(s.kld_mean, (double)mk, 1e-12);
    qsort(kl, N, sizeof kl[0], cmp_ld);
    /* type-7 quantile on the exact values; the summary stores floats (rel. 6e-8) */
    double hmed = 0.5 * (N - 1), h99 = 0.99 * (N - 1);
    int im = (int)hmed, i99 = (int)h99;
    double med = (double)(kl[im] + (hmed - im) * (kl[im + 1] - kl[im]));
    double p99 = (double)(kl[i99] + (h99 - i99) * (kl[i99 + 1] - kl[i99]));
    CHECK_NEAR(s.kld_median, med, 1e-6 * med);
    CHECK_NEAR(s.kld_p99, p99, 1e-6 * p99);
    CHECK_NEAR(s.kld_max, (double)kl[N - 1], 1e-12);
    CHECK(s.kld_median < s.kld_mean || s.kld_median > 0); /* sanity: positive */
    CHECK_NEAR(s.top1, (double)top1 / N, 0);
    CHECK(top1 > 0 && top1 < N); /* the noise changes some argmaxes, not all */
    CHECK_NEAR(s.p_halved, (double)halved / N, 0);
    double lo, hi;
    qt_eval_wilson(top1, N, QT_EVAL_Z95, &lo, &hi);
    CHECK_NEAR(s.top1_lo, lo, 0);
    CHECK_NEAR(s.top1_hi, hi, 0);
    qt_eval_cmp_free(c);
}

static qt_eval_summary fake_summary(double d, double lo, double hi, double kld, double kld_hi, double top1, double top1_lo) {
    qt_eval_summary s;
    memset(&s, 0, sizeof s);
    s.ppl_delta_pct = d; s.ppl_delta_pct_lo = lo; s.ppl_delta_pct_hi = hi;
    s.kld_mean = kld; s.kld_mean_hi = kld_hi; s.top1 = top1; s.top1_lo = top1_lo;
    return s;
}

static void test_verdicts(void) {
    qt_eval_thresholds t;
    qt_eval_thresholds_default(&t);
    CHECK_NEAR(t.max_ppl_delta_pct, 5, 0);
    CHECK(isnan(t.max_kld) && isnan(t.min_top1));
    qt_eval_verdict v[4];

    qt_eval_summary s = fake_summary(0.13, 0.10, 0.16, 0.001, 0.0011, 0.98, 0.97);
    qt_eval_judge(&s, &t, &v[0]);
    CHECK_EQ_INT(v[0].verdict, QT_VERDICT_PASS);
    CHECK_EQ_INT(v[0].n_reasons, 1);
    CHECK(strstr(v[0].reasons[0], "within --max-ppl-delta-pct 5") != NULL);

    s = fake_summary(5.89, 5.51, 6.27, 0.05, 0.06, 0.8, 0.79);
    qt_eval_judge(&s, &t, &v[1]);
    CHECK_EQ_INT(v[1].verdict, QT_VERDICT_FAIL);
    CHECK_MSG(strstr(v[1].reasons[0], "exceeds --max-ppl-delta-pct 5 by 0.89 points") != NULL, "%s", v[1].reasons[0]);

    s = fake_summary(4.1, 2.6, 5.6, 0.05, 0.06, 0.8, 0.79);
    qt_eval_judge(&s, &t, &v[2]);
    CHECK_EQ_INT(v[2].verdict, QT_VERDICT_REVIEW);
    CHECK_MSG(strstr(v[2].reasons[0], "reaches +5.60 %") != NULL, "%s", v[2].reasons[0]);

    /* every threshold on: one reason each, the worst wins */
    t.max_kld = 0.01;
    t.min_top1 = 0.9;
    s = fake_summary(1.0, 0.5, 1.5, 0.012, 0.013, 0.95, 0.94);
    qt_eval_judge(&s, &t, &v[3]);
    CHECK_EQ_INT(v[3].n_reasons, 3);
    CHECK_EQ_INT(v[3].verdict, QT_VERDICT_FAIL);
    CHECK_EQ_INT(v[3].level[0], QT_VERDICT_PASS);
    CHECK_EQ_INT(v[3].level[1], QT_VERDICT_FAIL);
    CHECK_MSG(strstr(v[3].reasons[1], "exceeds --max-kld 0.01 by 0.00200 (20 % over)") != NULL, "%s", v[3].reasons[1]);
    CHECK_EQ_INT(v[3].level[2], QT_VERDICT_PASS);

    s = fake_summary(1.0, 0.5, 1.5, 0.005, 0.006, 0.91, 0.89);
    qt_eval_verdict w;
    qt_eval_judge(&s, &t, &w);
    CHECK_EQ_INT(w.verdict, QT_VERDICT_REVIEW);
    CHECK_EQ_INT(w.level[2], QT_VERDICT_REVIEW);
    s.top1 = 0.85;
    qt_eval_judge(&s, &t, &w);
    CHECK_EQ_INT(w.verdict, QT_VERDICT_FAIL);
    CHECK_MSG(strstr(w.reasons[2], "below --min-top1 0.9 by 5.00 points") != NULL, "%s", w.reasons[2]);

    /* NAN estimates never pass */
    s = fake_summary(NAN, NAN, NAN, 0, 0, 1, 1);
    qt_eval_thresholds_default(&t);
    qt_eval_judge(&s, &t, &w);
    CHECK_EQ_INT(w.verdict, QT_VERDICT_FAIL);

    /* nothing active: needs review, never a silent pass */
    t.max_ppl_delta_pct = NAN;
    qt_eval_judge(&s, &t, &w);
    CHECK_EQ_INT(w.verdict, QT_VERDICT_REVIEW);

    /* notes only raise the verdict */
    qt_eval_verdict_note(&v[0], QT_VERDICT_PASS, "fine");
    CHECK_EQ_INT(v[0].verdict, QT_VERDICT_PASS);
    qt_eval_verdict_note(&v[0], QT_VERDICT_REVIEW, "overlap %d %%", 40);
    CHECK_EQ_INT(v[0].verdict, QT_VERDICT_REVIEW);
    CHECK_EQ_STR(v[0].reasons[v[0].n_reasons - 1], "overlap 40 %");
    qt_eval_verdict_note(&v[1], QT_VERDICT_PASS, "x");
    CHECK_EQ_INT(v[1].verdict, QT_VERDICT_FAIL);

    CHECK_EQ_STR(qt_verdict_name(QT_VERDICT_REVIEW), "needs-review");
    qt_eval_verdict all_pass[2];
    s = fake_summary(0.1, 0.0, 0.2, 0, 0, 1, 1);
    qt_eval_thresholds_default(&t);
    qt_eval_judge(&s, &t, &all_pass[0]);
    qt_eval_judge(&s, &t, &all_pass[1]);
    CHECK_EQ_INT(qt_eval_exit_status(all_pass, 2), 0);
    CHECK_EQ_INT(qt_eval_exit_status(v, 2), 1);     /* a fail */
    CHECK_EQ_INT(qt_eval_exit_status(&v[2], 1), 1); /* needs-review is not a pass */
}

int main(void) {
    QT_RUN(test_log_softmax);
    QT_RUN(test_kl_closed_forms);
    QT_RUN(test_argmax_quantile_wilson);
    QT_RUN(test_summary_known_values);
    QT_RUN(test_summary_matches_independent_recomputation);
    QT_RUN(test_verdicts);
    return qt_test_finish("test_eval");
}
