/* lib/loadtest/metrics.c — the load test's numbers, as pure functions.
 *
 * Definitions follow `vllm bench serve` (vllm/benchmarks/serve.py,
 * calculate_metrics): throughputs over the whole run's duration, goodput from
 * the completed requests that meet every SLO given, TPOT 0 for goodput when a
 * request produced one token, and numpy's mean / median / std (ddof 0) /
 * linear percentiles. docs/loadtest.md states each formula.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "loadtest_internal.h"

double qt_lt_percentile_sorted(const double *sorted, int64_t n, double p) {
    if (n <= 0) return 0;
    double rank = p / 100.0 * (double)(n - 1);
    int64_t lo = (int64_t)floor(rank);
    if (lo < 0) return sorted[0];
    if (lo >= n - 1) return sorted[n - 1];
    double f = rank - (double)lo;
    return sorted[lo] + (sorted[lo + 1] - sorted[lo]) * f;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

qt_lt_dist qt_lt_dist_of(double *x, int64_t n, double scale) {
    qt_lt_dist d = {.n = n};
    if (n <= 0) return d;
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += x[i];
    double mean = sum / (double)n, ss = 0;
    for (int64_t i = 0; i < n; i++) ss += (x[i] - mean) * (x[i] - mean);
    d.mean = mean * scale;
    d.std = sqrt(ss / (double)n) * scale;
    d.median = qt_lt_percentile_sorted(x, n, 50) * scale;
    d.p90 = qt_lt_percentile_sorted(x, n, 90) * scale;
    d.p99 = qt_lt_percentile_sorted(x, n, 99) * scale;
    return d;
}

double qt_lt_tpot(double e2el_s, double ttft_s, int64_t n_output) {
    return n_output > 1 ? (e2el_s - ttft_s) / (double)(n_output - 1) : 0;
}

bool qt_lt_slo_any(const qt_lt_slo *slo) { return slo && (slo->ttft_ms > 0 || slo->tpot_ms > 0 || slo->e2el_ms > 0); }

bool qt_lt_meets_slo(const qt_lt_slo *slo, double ttft_s, double tpot_s, double e2el_s) {
    if (!slo) return true;
    if (slo->ttft_ms > 0 && ttft_s * 1000 > slo->ttft_ms) return false;
    if (slo->tpot_ms > 0 && tpot_s * 1000 > slo->tpot_ms) return false;
    if (slo->e2el_ms > 0 && e2el_s * 1000 > slo->e2el_ms) return false;
    return true;
}

qt_status qt_lt_slo_parse(const char *s, qt_lt_slo *out) {
    qt_lt_slo slo = {0};
    const char *p = s ? s : "";
    if (!*p) return qt_error(QT_ERR_ARG, "--slo: empty (expected ttft:MS,tpot:MS,e2el:MS)");
    while (*p) {
        const char *colon = strchr(p, ':'), *comma = strchr(p, ',');
        if (!comma) comma = p + strlen(p);
        if (!colon || colon > comma)
            return qt_error(QT_ERR_ARG, "--slo: '%.*s' is not NAME:MS (names: ttft, tpot, e2el)", (int)(comma - p), p);
        size_t klen = (size_t)(colon - p);
        double *dst = klen == 4 && !strncmp(p, "ttft", 4)   ? &slo.ttft_ms
                      : klen == 4 && !strncmp(p, "tpot", 4) ? &slo.tpot_ms
                      : klen == 4 && !strncmp(p, "e2el", 4) ? &slo.e2el_ms
                                                            : NULL;
        if (!dst) return qt_error(QT_ERR_ARG, "--slo: unknown metric '%.*s' (names: ttft, tpot, e2el)", (int)klen, p);
        char num[64];
        size_t vlen = (size_t)(comma - colon - 1);
        if (vlen == 0 || vlen >= sizeof num) return qt_error(QT_ERR_ARG, "--slo: %.*s needs milliseconds", (int)klen, p);
        memcpy(num, colon + 1, vlen);
        num[vlen] = 0;
        char *end;
        double v = strtod(num, &end);
        if (*end || !(v > 0) || !isfinite(v))
            return qt_error(QT_ERR_ARG, "--slo: %.*s: '%s' is not a positive number of milliseconds", (int)klen, p, num);
        *dst = v;
        p = *comma ? comma + 1 : comma;
    }
    *out = slo;
    return QT_OK;
}

typedef struct edge {
    double t;
    int delta; /* +1 start, -1 end */
} edge;

static int cmp_edge(const void *a, const void *b) {
    const edge *x = a, *y = b;
    if (x->t != y->t) return (x->t > y->t) - (x->t < y->t);
    return x->delta - y->delta; /* ends before starts at the same instant */
}

int32_t qt_lt_peak_concurrency(const double *start, const double *end, int32_t n) {
    if (n <= 0) return 0;
    edge *e = malloc(sizeof *e * 2 * (size_t)n);
    if (!e) return -1;
    for (int32_t i = 0; i < n; i++) {
        e[2 * i] = (edge){start[i], +1};
        e[2 * i + 1] = (edge){end[i] >= start[i] ? end[i] : start[i], -1};
    }
    qsort(e, 2 * (size_t)n, sizeof *e, cmp_edge);
    int32_t cur = 0, peak = 0;
    for (int32_t i = 0; i < 2 * n; i++) {
        cur += e[i].delta;
        if (cur > peak) peak = cur;
    }
    free(e);
    return peak;
}

/* Marsaglia and Tsang (2000), "A simple method for generating gamma variables":
 * shape k >= 1 directly; k < 1 as Gamma(k + 1) * U^(1/k). Normals by Box-Muller. */
static double normal01(qt__rng *r) {
    double u = 1.0 - qt__rng_unit(r), v = qt__rng_unit(r);
    return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

static double gamma_draw(qt__rng *r, double k) {
    if (k < 1) {
        double u = 1.0 - qt__rng_unit(r);
        return gamma_draw(r, k + 1) * pow(u, 1.0 / k);
    }
    double d = k - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = normal01(r), v = 1 + c * x;
        if (v <= 0) continue;
        v = v * v * v;
        double u = 1.0 - qt__rng_unit(r);
        if (log(u) < 0.5 * x * x + d - d * v + d * log(v)) return d * v;
    }
}

qt_status qt_lt_arrivals(int32_t n, double rate, double burstiness, uint64_t seed, double *out) {
    if (n < 0) return qt_error(QT_ERR_ARG, "arrivals: negative count %d", n);
    if (!(burstiness > 0)) return qt_error(QT_ERR_ARG, "--burstiness: %g is not positive", burstiness);
    if (!(rate > 0) || isinf(rate)) {
        for (int32_t i = 0; i < n; i++) out[i] = 0;
        return QT_OK;
    }
    qt__rng r = {seed ^ 0x6c6f616474657374ull};
    double t = 0;
    for (int32_t i = 0; i < n; i++) {
        /* vLLM: gap ~ Gamma(shape = burstiness, scale = 1 / (rate * burstiness)); the first
         * request waits its gap too. Infinite burstiness: the constant gap 1 / rate. */
        double gap = isinf(burstiness) ? 1.0 / rate : gamma_draw(&r, burstiness) / (rate * burstiness);
        t += gap;
        out[i] = t;
    }
    /* vLLM rescales so that the last arrival is at n / rate exactly (steadier throughput across seeds) */
    if (n > 0 && out[n - 1] > 0) {
        double f = ((double)n / rate) / out[n - 1];
        for (int32_t i = 0; i < n; i++) out[i] *= f;
    }
    return QT_OK;
}

qt_status qt_lt_metrics_compute(const qt_lt_result *r, int32_t n, double duration_s, const qt_lt_slo *slo,
                                qt_lt_metrics *out) {
    qt_lt_metrics m = {.duration_s = duration_s, .server_peak_rss_bytes = -1, .server_kv_cache_usage_max = -1};
    int64_t n_itl = 0;
    for (int32_t i = 0; i < n; i++)
        if (r[i].ok) n_itl += r[i].n_itl;
    size_t cap = (size_t)(n > 0 ? n : 1);
    double *ttft = malloc(sizeof(double) * cap), *tpot = malloc(sizeof(double) * cap),
           *e2el = malloc(sizeof(double) * cap), *start = malloc(sizeof(double) * cap),
           *end = malloc(sizeof(double) * cap), *itl = malloc(sizeof(double) * (size_t)(n_itl > 0 ? n_itl : 1));
    qt_status st = QT_OK;
    if (!ttft || !tpot || !e2el || !start || !end || !itl) {
        st = qt_error(QT_ERR_NOMEM, "loadtest: out of memory for %d results", n);
        goto done;
    }
    m.has_slo = qt_lt_slo_any(slo);
    int64_t n_tpot = 0, k_itl = 0;
    int32_t n_ok = 0;
    for (int32_t i = 0; i < n; i++) {
        const qt_lt_result *x = &r[i];
        if (!x->ok) {
            m.failed++;
            continue;
        }
        int64_t out_len = x->output_tokens > 0 ? x->output_tokens : 0;
        m.total_output += out_len;
        m.total_input += x->prompt_len > 0 ? x->prompt_len : 0;
        double tp = qt_lt_tpot(x->e2el_s, x->ttft_s, out_len);
        if (out_len > 1) tpot[n_tpot++] = tp;
        ttft[n_ok] = x->ttft_s;
        e2el[n_ok] = x->e2el_s;
        start[n_ok] = x->start_s;
        end[n_ok] = x->start_s + x->e2el_s;
        for (int32_t j = 0; j < x->n_itl; j++) itl[k_itl++] = x->itl_s[j];
        if (!m.has_slo || qt_lt_meets_slo(slo, x->ttft_s, tp, x->e2el_s)) m.good_completed++;
        n_ok++;
    }
    m.completed = n_ok;
    m.peak_concurrency = qt_lt_peak_concurrency(start, end, n_ok);
    if (m.peak_concurrency < 0) {
        st = qt_error(QT_ERR_NOMEM, "loadtest: out of memory for %d results", n);
        goto done;
    }
    if (duration_s > 0) {
        m.request_throughput = m.completed / duration_s;
        m.output_throughput = (double)m.total_output / duration_s;
        m.total_token_throughput = (double)(m.total_input + m.total_output) / duration_s;
        m.goodput = m.good_completed / duration_s;
    }
    m.error_rate = n > 0 ? (double)m.failed / n : 0;
    m.ttft_ms = qt_lt_dist_of(ttft, n_ok, 1000);
    m.tpot_ms = qt_lt_dist_of(tpot, n_tpot, 1000);
    m.itl_ms = qt_lt_dist_of(itl, k_itl, 1000);
    m.e2el_ms = qt_lt_dist_of(e2el, n_ok, 1000);
    *out = m;
done:
    free(ttft), free(tpot), free(e2el), free(start), free(end), free(itl);
    return st;
}

bool qt_lt_level_ok(const qt_lt_metrics *m, double max_error_rate) {
    if (m->completed <= 0 || m->error_rate > max_error_rate) return false;
    return !m->has_slo || m->good_completed >= QT_LT_GOODPUT_SHARE * m->completed;
}

int32_t qt_lt_sweep_choose(const qt_lt_level *lv, int32_t n, double max_error_rate) {
    int32_t best = 0;
    for (int32_t i = 0; i < n; i++)
        if (qt_lt_level_ok(&lv[i].m, max_error_rate) && lv[i].concurrency > best) best = lv[i].concurrency;
    return best;
}

int32_t qt_lt_knee(const qt_lt_level *lv, int32_t n) {
    if (n <= 0) return 0;
    for (int32_t i = 0; i + 1 < n; i++)
        if (lv[i + 1].m.output_throughput < (1 + QT_LT_KNEE_GAIN) * lv[i].m.output_throughput) return lv[i].concurrency;
    return lv[n - 1].concurrency;
}
