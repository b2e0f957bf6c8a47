/* lib/loadtest/report.c — a load test's report: terminal table, JSON
 * (docs/loadtest.md, "JSON"), a self-contained HTML page whose sweep plot is
 * drawn as SVG by hand (as lib/plan/render.c draws the plan's figure), and the
 * side-by-side comparison of two JSON reports.
 */
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "loadtest_internal.h"

/* The four latency distributions, named once for the table, JSON and comparison. */
typedef struct dist_row {
    const char *key, *label;
    size_t off;
} dist_row;
static const dist_row dists[] = {
    {"ttft_ms", "TTFT", offsetof(qt_lt_metrics, ttft_ms)},
    {"tpot_ms", "TPOT", offsetof(qt_lt_metrics, tpot_ms)},
    {"itl_ms", "ITL", offsetof(qt_lt_metrics, itl_ms)},
    {"e2el_ms", "E2EL", offsetof(qt_lt_metrics, e2el_ms)},
};
#define N_DISTS (sizeof dists / sizeof *dists)
static const qt_lt_dist *dist_at(const qt_lt_metrics *m, size_t i) {
    return (const qt_lt_dist *)((const char *)m + dists[i].off);
}

/* ---- JSON ------------------------------------------------------------------------------ */

static json_t *dist_json(const qt_lt_dist *d) {
    return json_pack("{s:I, s:f, s:f, s:f, s:f, s:f}", "n", (json_int_t)d->n, "mean", d->mean, "median", d->median, "std",
                     d->std, "p90", d->p90, "p99", d->p99);
}

static void metrics_into(json_t *o, const qt_lt_metrics *m) {
    json_object_set_new(o, "completed", json_integer(m->completed));
    json_object_set_new(o, "failed", json_integer(m->failed));
    json_object_set_new(o, "error_rate", json_real(m->error_rate));
    json_object_set_new(o, "duration_s", json_real(m->duration_s));
    json_object_set_new(o, "total_input_tokens", json_integer(m->total_input));
    json_object_set_new(o, "total_output_tokens", json_integer(m->total_output));
    json_object_set_new(o, "request_throughput", json_real(m->request_throughput));
    json_object_set_new(o, "output_throughput", json_real(m->output_throughput));
    json_object_set_new(o, "total_token_throughput", json_real(m->total_token_throughput));
    json_object_set_new(o, "goodput", json_real(m->goodput));
    json_object_set_new(o, "good_completed", json_integer(m->good_completed));
    json_object_set_new(o, "peak_concurrency", json_integer(m->peak_concurrency));
    for (size_t i = 0; i < N_DISTS; i++) json_object_set_new(o, dists[i].key, dist_json(dist_at(m, i)));
    if (m->server_peak_rss_bytes >= 0) json_object_set_new(o, "server_peak_rss_bytes", json_real(m->server_peak_rss_bytes));
    if (m->server_kv_cache_usage_max >= 0)
        json_object_set_new(o, "server_kv_cache_usage_max", json_real(m->server_kv_cache_usage_max));
}

static json_t *slo_json(const qt_lt_slo *s) {
    json_t *o = json_object();
    if (s->ttft_ms > 0) json_object_set_new(o, "ttft_ms", json_real(s->ttft_ms));
    if (s->tpot_ms > 0) json_object_set_new(o, "tpot_ms", json_real(s->tpot_ms));
    if (s->e2el_ms > 0) json_object_set_new(o, "e2el_ms", json_real(s->e2el_ms));
    return o;
}

qt_status qt_lt_report_json(const qt_lt_report *r, char **out) {
    json_t *o = json_object();
    json_object_set_new(o, "url", json_string(r->url ? r->url : ""));
    json_object_set_new(o, "endpoint", json_string(r->endpoint ? r->endpoint : ""));
    json_object_set_new(o, "model", json_string(r->model ? r->model : ""));
    json_object_set_new(o, "dataset", json_string(r->dataset ? r->dataset : ""));
    json_object_set_new(o, "num_prompts", json_integer(r->num_prompts));
    json_object_set_new(o, "input_len", json_integer(r->input_len));
    json_object_set_new(o, "output_len", json_integer(r->output_len));
    json_object_set_new(o, "range_ratio", json_real(r->range_ratio));
    json_object_set_new(o, "max_concurrency", json_integer(r->max_concurrency));
    json_object_set_new(o, "request_rate", r->request_rate > 0 && isfinite(r->request_rate) ? json_real(r->request_rate) : json_null());
    json_object_set_new(o, "burstiness", json_real(r->burstiness));
    json_object_set_new(o, "seed", json_integer((json_int_t)r->seed));
    json_object_set_new(o, "slo", slo_json(&r->slo));
    json_object_set_new(o, "max_error_rate", json_real(r->max_error_rate));
    if (r->sweep) {
        json_t *lv = json_array();
        for (int32_t i = 0; i < r->n_levels; i++) {
            json_t *l = json_object();
            json_object_set_new(l, "concurrency", json_integer(r->levels[i].concurrency));
            metrics_into(l, &r->levels[i].m);
            json_object_set_new(l, "sustainable", json_boolean(qt_lt_level_ok(&r->levels[i].m, r->max_error_rate)));
            json_array_append_new(lv, l);
        }
        json_object_set_new(o, "levels", lv);
        json_object_set_new(o, "sustainable_concurrency", json_integer(r->sustainable));
        json_object_set_new(o, "knee_concurrency", json_integer(r->knee));
    } else if (r->n_levels > 0) {
        metrics_into(o, &r->levels[0].m);
    }
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(o);
    if (!s) return qt_error(QT_ERR_NOMEM, "loadtest: out of memory for the JSON report");
    *out = s;
    return QT_OK;
}

/* ---- table ------------------------------------------------------------------------------ */

static void table_one(qt__sbuf *b, const qt_lt_metrics *m) {
    qt__sb_printf(b, "  %-34s %d\n  %-34s %d\n", "successful requests", m->completed, "failed requests", m->failed);
    qt__sb_printf(b, "  %-34s %.2f\n", "benchmark duration (s)", m->duration_s);
    qt__sb_printf(b, "  %-34s %lld\n  %-34s %lld\n", "total input tokens", (long long)m->total_input,
                  "total generated tokens", (long long)m->total_output);
    qt__sb_printf(b, "  %-34s %.2f\n  %-34s %.2f\n  %-34s %.2f\n", "request throughput (req/s)", m->request_throughput,
                  "output token throughput (tok/s)", m->output_throughput, "total token throughput (tok/s)",
                  m->total_token_throughput);
    if (m->has_slo) qt__sb_printf(b, "  %-34s %.2f (%d requests met the SLOs)\n", "request goodput (req/s)", m->goodput, m->good_completed);
    qt__sb_printf(b, "  %-34s %d\n", "peak concurrency", m->peak_concurrency);
    if (m->server_peak_rss_bytes >= 0) qt__sb_printf(b, "  %-34s %.1f MiB\n", "server peak RSS", m->server_peak_rss_bytes / 1048576.0);
    if (m->server_kv_cache_usage_max >= 0)
        qt__sb_printf(b, "  %-34s %.1f %%\n", "server KV cache usage (max)", 100 * m->server_kv_cache_usage_max);
    qt__sb_printf(b, "  %-8s %10s %10s %10s %10s %10s %8s\n", "ms", "mean", "median", "std", "p90", "p99", "n");
    for (size_t i = 0; i < N_DISTS; i++) {
        const qt_lt_dist *d = dist_at(m, i);
        qt__sb_printf(b, "  %-8s %10.2f %10.2f %10.2f %10.2f %10.2f %8lld\n", dists[i].label, d->mean, d->median, d->std,
                      d->p90, d->p99, (long long)d->n);
    }
}

qt_status qt_lt_report_table(const qt_lt_report *r, char **out) {
    qt__sbuf b = {0};
    qt__sb_printf(&b, "load test: %s%s, model %s, dataset %s\n", r->url ? r->url : "", r->endpoint ? r->endpoint : "",
                  r->model ? r->model : "", r->dataset ? r->dataset : "");
    if (!r->sweep) {
        if (r->n_levels > 0) table_one(&b, &r->levels[0].m);
        return qt__sb_finish(&b, out, "loadtest");
    }
    qt__sb_printf(&b, "  %5s %5s %5s %9s %9s %9s %10s %10s %10s %s\n", "conc", "ok", "fail", "req/s", "goodput", "out tok/s",
                  "p99 TTFT", "p99 TPOT", "p99 E2EL", "");
    for (int32_t i = 0; i < r->n_levels; i++) {
        const qt_lt_metrics *m = &r->levels[i].m;
        int32_t c = r->levels[i].concurrency;
        qt__sb_printf(&b, "  %5d %5d %5d %9.2f %9.2f %9.1f %10.1f %10.1f %10.1f %s%s%s\n", c, m->completed, m->failed,
                      m->request_throughput, m->goodput, m->output_throughput, m->ttft_ms.p99, m->tpot_ms.p99, m->e2el_ms.p99,
                      qt_lt_level_ok(m, r->max_error_rate) ? "ok" : "over the limits", c == r->sustainable ? "  <- sustainable" : "",
                      c == r->knee ? "  <- knee" : "");
    }
    if (r->sustainable > 0) qt__sb_printf(&b, "sustainable concurrency: %d", r->sustainable);
    else qt__sb_printf(&b, "sustainable concurrency: none of the levels met the limits");
    qt__sb_printf(&b, " (goodput >= %.0f %% of throughput under the SLOs, error rate <= %g); knee at %d\n",
                  100 * QT_LT_GOODPUT_SHARE, r->max_error_rate, r->knee);
    return qt__sb_finish(&b, out, "loadtest");
}

/* ---- HTML + SVG --------------------------------------------------------------------------- */

#define PW 460
#define PH 300
#define PL 64
#define PB 40
#define PT 30

typedef struct series {
    const char *name, *color;
    double v[64];
} series;

/* One panel: y(levels) lines against evenly spaced concurrency levels, an optional dashed limit. */
static void panel(qt__sbuf *b, const qt_lt_report *r, const char *title, const char *unit, const series *s, int ns,
                  const double *limits, const char *const *limit_names) {
    int32_t n = r->n_levels < 64 ? r->n_levels : 64;
    double ymax = 0;
    for (int k = 0; k < ns; k++)
        for (int32_t i = 0; i < n; i++) ymax = fmax(ymax, s[k].v[i]);
    for (int k = 0; k < ns; k++) ymax = fmax(ymax, limits ? limits[k] : 0);
    ymax = ymax > 0 ? ymax * 1.1 : 1;
    double w = PW - PL - 16, h = PH - PT - PB;
#define X(i) (PL + (n > 1 ? (double)(i) * w / (n - 1) : w / 2))
#define Y(v) (PT + h - (v) / ymax * h)
    qt__sb_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"11\">\n", PW, PH);
    qt__sb_printf(b, "<text x=\"%d\" y=\"16\" font-size=\"13\">", PL);
    qt__sb_html(b, title);
    qt__sb_printf(b, "</text>\n<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>\n", PL, PT + h, PL + w, PT + h);
    qt__sb_printf(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%.1f\" stroke=\"#444\"/>\n", PL, PT, PL, PT + h);
    for (int t = 0; t <= 4; t++)
        qt__sb_printf(b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n", PL - 4, Y(ymax * t / 4) + 4, ymax * t / 4);
    qt__sb_printf(b, "<text x=\"12\" y=\"%.1f\" transform=\"rotate(-90 12 %.1f)\" text-anchor=\"middle\">%s</text>\n",
                  PT + h / 2, PT + h / 2, unit);
    for (int32_t i = 0; i < n; i++) {
        int32_t c = r->levels[i].concurrency;
        qt__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n", X(i), PT + h + 14, c);
        if (c == r->sustainable)
            qt__sb_printf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#2a9d4b\" stroke-width=\"2\"/>"
                             "<text x=\"%.1f\" y=\"%d\" fill=\"#2a9d4b\">sustainable %d</text>\n",
                          X(i), PT, X(i), PT + h, X(i) + 3, PT + 10, c);
    }
    qt__sb_printf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">concurrency</text>\n", PL + w / 2, PH - 6);
    for (int k = 0; k < ns; k++) {
        qt__sb_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", s[k].color);
        for (int32_t i = 0; i < n; i++) qt__sb_printf(b, "%.1f,%.1f ", X(i), Y(s[k].v[i]));
        qt__sb_printf(b, "\"/>\n<text x=\"%.1f\" y=\"%d\" fill=\"%s\">%s</text>\n", PL + 8 + 110.0 * k, PT + 12 + 12, s[k].color,
                      s[k].name);
        if (limits && limits[k] > 0)
            qt__sb_printf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"6 4\"/>"
                             "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"%s\">SLO %s %.0f ms</text>\n",
                          PL, Y(limits[k]), PL + w, Y(limits[k]), s[k].color, PL + w, Y(limits[k]) - 3, s[k].color,
                          limit_names[k], limits[k]);
    }
    qt__sb_puts(b, "</svg>\n");
#undef X
#undef Y
}

qt_status qt_lt_report_html(const qt_lt_report *r, char **out) {
    char *table = NULL;
    qt_status s = qt_lt_report_table(r, &table);
    if (s) return s;
    qt__sbuf b = {0};
    qt__sb_puts(&b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>quanta loadtest</title>\n"
                    "<style>body{font-family:sans-serif;margin:24px} pre{background:#f6f6f6;padding:12px}</style></head><body>\n"
                    "<h1>quanta loadtest</h1>\n");
    if (r->sweep && r->n_levels > 0) {
        series thr = {"output tok/s", "#3b6fb6", {0}}, lat[3] = {{"p99 TTFT", "#d64545", {0}}, {"p99 TPOT", "#8a4fbf", {0}},
                                                                 {"p99 E2EL", "#c98a1b", {0}}};
        for (int32_t i = 0; i < r->n_levels && i < 64; i++) {
            const qt_lt_metrics *m = &r->levels[i].m;
            thr.v[i] = m->output_throughput;
            lat[0].v[i] = m->ttft_ms.p99, lat[1].v[i] = m->tpot_ms.p99, lat[2].v[i] = m->e2el_ms.p99;
        }
        double limits[3] = {r->slo.ttft_ms, r->slo.tpot_ms, r->slo.e2el_ms};
        const char *names[3] = {"TTFT", "TPOT", "E2EL"};
        int nl = r->slo.e2el_ms > 0 ? 3 : 2;
        panel(&b, r, "throughput against concurrency", "tok/s", &thr, 1, NULL, NULL);
        panel(&b, r, "p99 latency against concurrency", "ms", lat, nl, limits, names);
    }
    qt__sb_puts(&b, "<pre>");
    qt__sb_html(&b, table);
    qt__sb_puts(&b, "</pre>\n</body></html>\n");
    free(table);
    return qt__sb_finish(&b, out, "loadtest");
}

/* ---- comparison ------------------------------------------------------------------------------ */

/* The metrics object of a report: a single run's top level, or a sweep's sustainable level
 * (its last level when none was sustainable). */
static json_t *summary_of(json_t *root, const char *name, int32_t *sustainable, qt_status *st) {
    json_t *levels = json_object_get(root, "levels");
    *sustainable = -1;
    if (!levels) {
        if (!json_is_integer(json_object_get(root, "completed")))
            *st = qt_error(QT_ERR_FORMAT, "%s: field 'completed': missing (not a quanta loadtest report)", name);
        return root;
    }
    if (!json_is_array(levels) || json_array_size(levels) == 0) {
        *st = qt_error(QT_ERR_FORMAT, "%s: field 'levels': expected a non-empty array", name);
        return NULL;
    }
    json_t *sc = json_object_get(root, "sustainable_concurrency");
    *sustainable = json_is_integer(sc) ? (int32_t)json_integer_value(sc) : 0;
    size_t i;
    json_t *l, *pick = json_array_get(levels, json_array_size(levels) - 1);
    json_array_foreach(levels, i, l) {
        json_t *c = json_object_get(l, "concurrency");
        if (json_is_integer(c) && json_integer_value(c) == *sustainable) pick = l;
    }
    return pick;
}

static double num_at(json_t *o, const char *key, const char *sub) {
    json_t *v = json_object_get(o, key);
    if (sub) v = json_object_get(v, sub);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

qt_status qt_lt_compare(const char *a_json, const char *a_name, const char *b_json, const char *b_name, char **table,
                        char **json) {
    json_error_t e;
    json_t *ra = json_loads(a_json, 0, &e), *rb = NULL;
    qt_status st = QT_OK;
    if (!json_is_object(ra)) st = qt_error(QT_ERR_FORMAT, "%s: not a JSON object: %s", a_name, ra ? "another value" : e.text);
    if (!st) rb = json_loads(b_json, 0, &e); /* not inside json_is_object: a macro that evaluates twice */
    if (!st && !json_is_object(rb))
        st = qt_error(QT_ERR_FORMAT, "%s: not a JSON object: %s", b_name, rb ? "another value" : e.text);
    int32_t sa = -1, sb = -1;
    json_t *ma = st ? NULL : summary_of(ra, a_name, &sa, &st);
    json_t *mb = st ? NULL : summary_of(rb, b_name, &sb, &st);
    if (st) {
        json_decref(ra), json_decref(rb);
        return st;
    }
    static const struct { const char *key, *sub, *label; } rows[] = {
        {"completed", NULL, "completed"}, {"failed", NULL, "failed"},
        {"request_throughput", NULL, "request throughput (req/s)"}, {"output_throughput", NULL, "output throughput (tok/s)"},
        {"total_token_throughput", NULL, "total token throughput (tok/s)"}, {"goodput", NULL, "goodput (req/s)"},
        {"peak_concurrency", NULL, "peak concurrency"}, {"ttft_ms", "mean", "mean TTFT (ms)"}, {"ttft_ms", "p99", "p99 TTFT (ms)"},
        {"tpot_ms", "mean", "mean TPOT (ms)"}, {"tpot_ms", "p99", "p99 TPOT (ms)"}, {"itl_ms", "mean", "mean ITL (ms)"},
        {"itl_ms", "p99", "p99 ITL (ms)"}, {"e2el_ms", "mean", "mean E2EL (ms)"}, {"e2el_ms", "p99", "p99 E2EL (ms)"},
        {"server_peak_rss_bytes", NULL, "server peak RSS (bytes)"}, {"server_kv_cache_usage_max", NULL, "server KV usage max"},
    };
    qt__sbuf b = {0};
    json_t *out = json_pack("{s:s, s:s}", "a", a_name, "b", b_name), *arr = json_array();
    qt__sb_printf(&b, "  %-32s %14s %14s %9s\n", "metric", "A", "B", "B/A");
    qt__sb_printf(&b, "  A = %s\n  B = %s\n", a_name, b_name);
    if (sa >= 0 || sb >= 0) {
        char ca[16] = "-", cb[16] = "-"; /* "-": a single run, not a sweep */
        if (sa >= 0) snprintf(ca, sizeof ca, "%d", sa);
        if (sb >= 0) snprintf(cb, sizeof cb, "%d", sb);
        qt__sb_printf(&b, "  %-32s %14s %14s\n", "sustainable concurrency", ca, cb);
        json_t *sc = json_object();
        json_object_set_new(sc, "a", sa >= 0 ? json_integer(sa) : json_null());
        json_object_set_new(sc, "b", sb >= 0 ? json_integer(sb) : json_null());
        json_object_set_new(out, "sustainable_concurrency", sc);
    }
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        double va = num_at(ma, rows[i].key, rows[i].sub), vb = num_at(mb, rows[i].key, rows[i].sub);
        if (isnan(va) && isnan(vb)) continue;
        double ratio = va != 0 && !isnan(va) && !isnan(vb) ? vb / va : NAN;
        qt__sb_printf(&b, "  %-32s %14.4g %14.4g", rows[i].label, va, vb);
        if (!isnan(ratio)) qt__sb_printf(&b, " %9.3f", ratio);
        qt__sb_puts(&b, "\n");
        json_t *row = json_pack("{s:s}", "metric", rows[i].sub ? rows[i].label : rows[i].key);
        json_object_set_new(row, "a", isnan(va) ? json_null() : json_real(va));
        json_object_set_new(row, "b", isnan(vb) ? json_null() : json_real(vb));
        json_object_set_new(row, "ratio", isnan(ratio) ? json_null() : json_real(ratio));
        json_array_append_new(arr, row);
    }
    json_object_set_new(out, "rows", arr);
    json_decref(ra), json_decref(rb);
    char *js = json_dumps(out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(out);
    st = qt__sb_finish(&b, table, "loadtest");
    if (st || !js) {
        free(js);
        if (!st) free(*table);
        return st ? st : qt_error(QT_ERR_NOMEM, "loadtest: out of memory for the comparison");
    }
    *json = js;
    return QT_OK;
}
