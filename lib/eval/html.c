/* lib/eval/html.c — the report as one self-contained HTML page: inline CSS
 * and inline SVG charts, no scripts, no fonts or images fetched from
 * anywhere, so it can be attached to a CI run and opened offline.
 *
 * Charts: perplexity against bits per weight, KL divergence against bits per
 * weight, memory against quality (perplexity change with the threshold
 * drawn), multiple-choice accuracy, needle retrieval heat maps. Output is
 * deterministic: the same report gives the same bytes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"

#define COLOR_BASE "#2b6cb0"
#define COLOR_PASS "#2f855a"
#define COLOR_REVIEW "#b7791f"
#define COLOR_FAIL "#c53030"

static const char *verdict_color(qt_verdict v) {
    return v == QT_VERDICT_PASS ? COLOR_PASS : v == QT_VERDICT_REVIEW ? COLOR_REVIEW : COLOR_FAIL;
}

/* ---- axes ---------------------------------------------------------------------- */

typedef struct axis {
    double lo, hi;   /* data range shown */
    bool log;        /* log10 scale (lo > 0) */
    double p0, p1;   /* pixel range */
} axis;

static double ax_map(const axis *a, double v) {
    double t = a->log ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo)) : (v - a->lo) / (a->hi - a->lo);
    return a->p0 + t * (a->p1 - a->p0);
}

/* "Nice" step of 1, 2 or 5 times a power of ten giving about `want` ticks. */
static double nice_step(double span, int want) {
    double raw = span / want, mag = pow(10.0, floor(log10(raw))), f = raw / mag;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

/* Range covering [mn, mx] with 8 % padding (a fixed span around a single value). */
static void ax_fit(axis *a, double mn, double mx, bool try_log) {
    a->log = try_log && mn > 0 && mx / mn > 20.0;
    if (a->log) {
        a->lo = pow(10.0, floor(log10(mn)));
        a->hi = pow(10.0, ceil(log10(mx)));
        if (a->hi <= a->lo) a->hi = a->lo * 10;
        return;
    }
    if (!(mx > mn)) {
        double pad = fabs(mn) > 0 ? fabs(mn) * 0.1 : 1.0;
        mn -= pad;
        mx += pad;
    }
    double pad = (mx - mn) * 0.08;
    a->lo = mn - pad;
    a->hi = mx + pad;
}

static void fmt_tick(char *buf, size_t cap, double v, double step) {
    if (v == 0) { snprintf(buf, cap, "0"); return; }
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    if (dec > 6 || fabs(v) < 1e-4) snprintf(buf, cap, "%.0e", v);
    else snprintf(buf, cap, "%.*f", dec, v);
}

static void svg_axes(qt__sbuf *b, const axis *x, const axis *y, const char *xlabel, const char *ylabel) {
    qt__sb_printf(b, "<g class=\"axis\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x->p0, y->p0, x->p1, y->p0);
    qt__sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x->p0, y->p0, x->p0, y->p1);
    char t[32];
    double step = nice_step(x->hi - x->lo, 5);
    for (double v = ceil(x->lo / step) * step; v <= x->hi + step * 1e-9; v += step) {
        double px = ax_map(x, v);
        fmt_tick(t, sizeof t, v, step);
        qt__sb_printf(b, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                         "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>",
                      px, y->p0, px, y->p1, px, y->p0 + 16, t);
    }
    if (y->log) {
        for (double v = y->lo; v <= y->hi * 1.0001; v *= 10) {
            double py = ax_map(y, v);
            snprintf(t, sizeof t, "%g", v);
            qt__sb_printf(b, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                             "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
                          x->p0, py, x->p1, py, x->p0 - 6, py + 4, t);
        }
    } else {
        step = nice_step(y->hi - y->lo, 5);
        for (double v = ceil(y->lo / step) * step; v <= y->hi + step * 1e-9; v += step) {
            double py = ax_map(y, v);
            fmt_tick(t, sizeof t, fabs(v) < step * 1e-9 ? 0 : v, step);
            qt__sb_printf(b, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                             "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
                          x->p0, py, x->p1, py, x->p0 - 6, py + 4, t);
        }
    }
    qt__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (x->p0 + x->p1) / 2, y->p0 + 36);
    qt__sb_html(b, xlabel);
    qt__sb_printf(b, "</text><text transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\">", x->p0 - 50,
                  (y->p0 + y->p1) / 2);
    qt__sb_html(b, ylabel);
    qt__sb_puts(b, "</text></g>\n");
}

/* ---- scatter charts ------------------------------------------------------------ */

typedef struct point {
    double x, y;
    double ylo, yhi;      /* whisker, NAN for none */
    const char *label;
    const char *color;
} point;

#define CHART_W 460
#define CHART_H 320

static void svg_open(qt__sbuf *b, const char *title) {
    qt__sb_printf(b, "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                     "role=\"img\"><title>", CHART_W, CHART_H, CHART_W, CHART_H);
    qt__sb_html(b, title);
    qt__sb_puts(b, "</title><rect class=\"bg\" width=\"100%\" height=\"100%\"/><text class=\"ttl\" x=\"12\" y=\"20\">");
    qt__sb_html(b, title);
    qt__sb_puts(b, "</text>\n");
}

static void svg_close(qt__sbuf *b, const char *caption) {
    qt__sb_puts(b, "</svg><figcaption>");
    qt__sb_html(b, caption);
    qt__sb_puts(b, "</figcaption></figure>\n");
}

static void svg_scatter(qt__sbuf *b, const char *title, const char *caption, const char *xlabel, const char *ylabel,
                        const point *pts, int n, bool try_log_y, double hline, const char *hline_label) {
    double xmn = INFINITY, xmx = -INFINITY, ymn = INFINITY, ymx = -INFINITY;
    int shown = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(pts[i].x) || !isfinite(pts[i].y)) continue;
        shown++;
        xmn = fmin(xmn, pts[i].x); xmx = fmax(xmx, pts[i].x);
        ymn = fmin(ymn, pts[i].y); ymx = fmax(ymx, pts[i].y);
        if (isfinite(pts[i].ylo)) ymn = fmin(ymn, pts[i].ylo);
        if (isfinite(pts[i].yhi)) ymx = fmax(ymx, pts[i].yhi);
    }
    if (isfinite(hline)) { ymn = fmin(ymn, hline); ymx = fmax(ymx, hline); }
    svg_open(b, title);
    if (!shown) {
        qt__sb_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">no data (bits per weight or size unknown)</text>",
                      CHART_W / 2, CHART_H / 2);
        svg_close(b, caption);
        return;
    }
    axis x = {.p0 = 70, .p1 = CHART_W - 20}, y = {.p0 = CHART_H - 50, .p1 = 34};
    ax_fit(&x, xmn, xmx, false);
    ax_fit(&y, ymn, ymx, try_log_y);
    svg_axes(b, &x, &y, xlabel, ylabel);
    if (isfinite(hline)) {
        double py = ax_map(&y, hline);
        qt__sb_printf(b, "<line class=\"thr\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                         "<text class=\"thrl\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">",
                      x.p0, py, x.p1, py, x.p1 - 4, py - 4);
        qt__sb_html(b, hline_label);
        qt__sb_puts(b, "</text>\n");
    }
    double *lx = calloc((size_t)n, sizeof(double)), *ly = calloc((size_t)n, sizeof(double));
    for (int i = 0; i < n; i++) {
        const point *p = &pts[i];
        if (!isfinite(p->x) || !isfinite(p->y)) continue;
        double px = ax_map(&x, p->x), py = ax_map(&y, p->y);
        if (isfinite(p->ylo) && isfinite(p->yhi) && (!y.log || p->ylo > 0))
            qt__sb_printf(b, "<line class=\"wh\" stroke=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", p->color,
                          px, ax_map(&y, p->ylo), px, ax_map(&y, p->yhi));
        qt__sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"/>", px, py, p->color);
        /* labels of points drawn near earlier ones move down a line, so they do not overprint */
        double dy = 0;
        if (lx && ly) {
            for (int j = 0; j < i; j++)
                if (fabs(lx[j] - px) < 60 && fabs(ly[j] - (py + dy)) < 12) { dy += 13; j = -1; }
            lx[i] = px;
            ly[i] = py + dy;
        }
        bool left = px > (x.p0 + x.p1) / 2;
        qt__sb_printf(b, "<text class=\"pl\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">", left ? px - 8 : px + 8, py + 4 + dy,
                      left ? "end" : "start");
        qt__sb_html(b, p->label);
        qt__sb_puts(b, "</text>\n");
    }
    free(lx);
    free(ly);
    svg_close(b, caption);
}

/* ---- the page ------------------------------------------------------------------ */

static const char *css =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:24px;color:#1a202c;background:#fff}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}.sub{color:#4a5568;margin:0 0 16px}"
    "table{border-collapse:collapse;font-variant-numeric:tabular-nums}th,td{padding:4px 10px;border-bottom:1px solid #e2e8f0;text-align:right;white-space:nowrap}"
    "th:first-child,td:first-child{text-align:left}th{background:#f7fafc;font-weight:600}"
    ".badge{display:inline-block;padding:1px 8px;border-radius:10px;color:#fff;font-weight:600;font-size:12px}"
    ".cards{display:flex;flex-wrap:wrap;gap:12px}.card{border:1px solid #e2e8f0;border-radius:8px;padding:10px 14px;max-width:560px}"
    ".card ul{margin:6px 0 0 18px;padding:0}.card li{margin:2px 0}"
    ".charts{display:flex;flex-wrap:wrap;gap:16px}figure{margin:0}figcaption{color:#4a5568;font-size:12px;max-width:460px}"
    "svg text{font:11px system-ui,Helvetica,Arial,sans-serif;fill:#2d3748}svg .ttl{font-size:13px;font-weight:600}"
    "svg .bg{fill:#fff;stroke:#e2e8f0}svg .axis line{stroke:#4a5568}svg .axis line.grid{stroke:#edf2f7}"
    "svg .thr{stroke:#c53030;stroke-dasharray:5 4}svg .thrl{fill:#c53030}svg .wh{stroke-width:2}svg .pl{font-size:11px}"
    "footer{margin-top:28px;color:#718096;font-size:12px}";

static void badge(qt__sbuf *b, qt_verdict v) {
    qt__sb_printf(b, "<span class=\"badge\" style=\"background:%s\">%s</span>", verdict_color(v), qt_verdict_name(v));
}

static void td_num(qt__sbuf *b, const char *fmt, double v) {
    if (isfinite(v)) { qt__sb_puts(b, "<td>"); qt__sb_printf(b, fmt, v); qt__sb_puts(b, "</td>"); }
    else qt__sb_puts(b, "<td>&ndash;</td>");
}

static void td_text(qt__sbuf *b, const char *s) {
    qt__sb_puts(b, "<td>");
    qt__sb_html(b, s);
    qt__sb_puts(b, "</td>");
}

static void metrics_table(qt__sbuf *b, const qt_eval_report *r) {
    const qt_eval_summary *s0 = r->n_candidates ? &r->candidates[0].summary : NULL;
    qt__sb_puts(b, "<div style=\"overflow-x:auto\"><table><tr><th>model</th><th>KV cache</th><th>bits/weight</th><th>size (MiB)</th><th>decode tok/s</th>"
                   "<th>perplexity</th><th>&Delta; ppl</th><th>95% CI</th><th>KLD mean</th><th>KLD median</th>"
                   "<th>KLD p99</th><th>KLD max</th><th>top-1</th><th>p halved</th><th>verdict</th></tr>\n<tr>");
    td_text(b, qt__eval_basename(r->base.label));
    td_text(b, r->base.kv ? r->base.kv : "?");
    td_num(b, "%.2f", r->base.bpw);
    td_num(b, "%.2f", r->base.size_bytes ? (double)r->base.size_bytes / 1048576.0 : NAN);
    td_num(b, "%.1f", r->base.decode_tps);
    if (s0) qt__sb_printf(b, "<td>%.4f &plusmn; %.4f</td>", s0->base_ppl, s0->base_ppl_stderr);
    else qt__sb_puts(b, "<td>&ndash;</td>");
    qt__sb_puts(b, "<td colspan=\"8\" style=\"text-align:left;color:#718096\">base (reference)</td><td></td></tr>\n");
    for (int32_t i = 0; i < r->n_candidates; i++) {
        const qt_eval_candidate *c = &r->candidates[i];
        const qt_eval_summary *s = &c->summary;
        qt__sb_puts(b, "<tr>");
        td_text(b, qt__eval_basename(c->info.label));
        td_text(b, c->info.kv ? c->info.kv : "?");
        td_num(b, "%.2f", c->info.bpw);
        td_num(b, "%.2f", c->info.size_bytes ? (double)c->info.size_bytes / 1048576.0 : NAN);
        td_num(b, "%.1f", c->info.decode_tps);
        qt__sb_printf(b, "<td>%.4f &plusmn; %.4f</td><td>%+.2f %%</td><td>[%+.2f, %+.2f]</td>", s->ppl, s->ppl_stderr,
                      s->ppl_delta_pct, s->ppl_delta_pct_lo, s->ppl_delta_pct_hi);
        td_num(b, "%.5f", s->kld_mean);
        td_num(b, "%.5f", s->kld_median);
        td_num(b, "%.5f", s->kld_p99);
        td_num(b, "%.5f", s->kld_max);
        qt__sb_printf(b, "<td>%.2f %%</td><td>%.2f %%</td><td>", 100 * s->top1, 100 * s->p_halved);
        badge(b, c->verdict.verdict);
        qt__sb_puts(b, "</td></tr>\n");
    }
    qt__sb_puts(b, "</table></div>\n");
}

static void verdict_cards(qt__sbuf *b, const qt_eval_report *r) {
    qt__sb_puts(b, "<div class=\"cards\">\n");
    for (int32_t i = 0; i < r->n_candidates; i++) {
        const qt_eval_candidate *c = &r->candidates[i];
        qt__sb_printf(b, "<div class=\"card\" style=\"border-left:5px solid %s\"><b>", verdict_color(c->verdict.verdict));
        qt__sb_html(b, c->info.label);
        qt__sb_puts(b, "</b> ");
        badge(b, c->verdict.verdict);
        qt__sb_puts(b, "<ul>");
        for (int32_t k = 0; k < c->verdict.n_reasons; k++) {
            qt__sb_printf(b, "<li style=\"color:%s\">",
                          c->verdict.level[k] == QT_VERDICT_PASS ? "#1a202c" : verdict_color(c->verdict.level[k]));
            qt__sb_html(b, c->verdict.reasons[k]);
            qt__sb_puts(b, "</li>");
        }
        for (int32_t k = 0; k < c->n_warnings; k++) {
            qt__sb_puts(b, "<li style=\"color:" COLOR_REVIEW "\">warning: ");
            qt__sb_html(b, c->warnings[k]);
            qt__sb_puts(b, "</li>");
        }
        qt__sb_puts(b, "</ul></div>\n");
    }
    qt__sb_puts(b, "</div>\n");
}

static void charts(qt__sbuf *b, const qt_eval_report *r) {
    int n = r->n_candidates;
    point *p = calloc((size_t)n + 1, sizeof *p);
    if (!p) { b->failed = true; return; }
    const qt_eval_summary *s0 = n ? &r->candidates[0].summary : NULL;
    qt__sb_puts(b, "<div class=\"charts\">\n");

    /* 1. perplexity against bits per weight (whiskers: 95 % interval of each perplexity) */
    p[0] = (point){r->base.bpw, s0 ? s0->base_ppl : NAN, NAN, NAN, qt__eval_basename(r->base.label), COLOR_BASE};
    if (s0) { p[0].ylo = s0->base_ppl - QT_EVAL_Z95 * s0->base_ppl_stderr; p[0].yhi = s0->base_ppl + QT_EVAL_Z95 * s0->base_ppl_stderr; }
    for (int i = 0; i < n; i++) {
        const qt_eval_candidate *c = &r->candidates[i];
        p[i + 1] = (point){c->info.bpw, c->summary.ppl, c->summary.ppl - QT_EVAL_Z95 * c->summary.ppl_stderr,
                           c->summary.ppl + QT_EVAL_Z95 * c->summary.ppl_stderr, qt__eval_basename(c->info.label),
                           verdict_color(c->verdict.verdict)};
    }
    svg_scatter(b, "Perplexity vs bits per weight", "Lower is better. Whiskers: 95% interval of each perplexity. "
                "Base in blue; candidates coloured by verdict.", "bits per weight", "perplexity", p, n + 1, false, NAN, NULL);

    /* 2. KL divergence against bits per weight (dot: mean; whisker: median to p99) */
    for (int i = 0; i < n; i++) {
        const qt_eval_candidate *c = &r->candidates[i];
        p[i] = (point){c->info.bpw, c->summary.kld_mean, c->summary.kld_median, c->summary.kld_p99,
                       qt__eval_basename(c->info.label), verdict_color(c->verdict.verdict)};
    }
    char cap[160];
    snprintf(cap, sizeof cap, "KL(base || candidate) per token, nats. Dot: mean; whisker: median to 99th percentile.%s",
             isnan(r->thresholds.max_kld) ? "" : " Dashed: --max-kld.");
    svg_scatter(b, "KL divergence vs bits per weight", cap, "bits per weight", "KL divergence (nats)", p, n, true,
                r->thresholds.max_kld, "max KLD");

    /* 3. memory against quality */
    p[0] = (point){r->base.size_bytes ? (double)r->base.size_bytes / 1048576.0 : NAN, 0.0, NAN, NAN,
                   qt__eval_basename(r->base.label), COLOR_BASE};
    for (int i = 0; i < n; i++) {
        const qt_eval_candidate *c = &r->candidates[i];
        p[i + 1] = (point){c->info.size_bytes ? (double)c->info.size_bytes / 1048576.0 : NAN, c->summary.ppl_delta_pct,
                           c->summary.ppl_delta_pct_lo, c->summary.ppl_delta_pct_hi, qt__eval_basename(c->info.label),
                           verdict_color(c->verdict.verdict)};
    }
    char thr[64];
    snprintf(thr, sizeof thr, "max +%g %%", r->thresholds.max_ppl_delta_pct);
    svg_scatter(b, "Memory vs quality", "Weight memory against perplexity change from the base; whiskers: 95% interval; "
                "dashed: the --max-ppl-delta-pct threshold.", "weights (MiB)", "perplexity change (%)", p, n + 1, false,
                r->thresholds.max_ppl_delta_pct, thr);
    qt__sb_puts(b, "</div>\n");
    free(p);
}

static void mc_chart(qt__sbuf *b, const qt_eval_report *r) {
    /* room on the left for the longest label (about 6.5 px per character at 11 px) */
    size_t longest = strlen(qt__eval_basename(r->base.label));
    for (int32_t i = 0; i < r->n_candidates; i++)
        if (strlen(qt__eval_basename(r->candidates[i].info.label)) > longest)
            longest = strlen(qt__eval_basename(r->candidates[i].info.label));
    int n = 1 + r->n_candidates, row = 26, h = 40 + n * row + 30;
    int x0 = 20 + (int)(6.5 * (double)(longest > 80 ? 80 : longest)), x1;
    if (x0 < 170) x0 = 170;
    x1 = x0 + CHART_W - 10;
    qt__sb_printf(b, "<h2>Multiple choice</h2><figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                     "viewBox=\"0 0 %d %d\" role=\"img\"><title>Multiple-choice accuracy</title>"
                     "<rect class=\"bg\" width=\"100%%\" height=\"100%%\"/><text class=\"ttl\" x=\"12\" y=\"20\">"
                     "Multiple-choice accuracy (acc_norm)</text>\n", x1 + 120, h, x1 + 120, h);
    for (int k = 0; k <= 10; k += 2) {
        double px = x0 + (x1 - x0) * k / 10.0;
        qt__sb_printf(b, "<line stroke=\"#edf2f7\" x1=\"%.1f\" y1=\"32\" x2=\"%.1f\" y2=\"%d\"/><text x=\"%.1f\" y=\"%d\" "
                         "text-anchor=\"middle\">%d%%</text>", px, px, h - 24, px, h - 10, k * 10);
    }
    for (int i = 0; i < n; i++) {
        const qt_mc_result *m = i == 0 ? r->base_mc : r->candidates[i - 1].mc;
        const char *label = i == 0 ? r->base.label : r->candidates[i - 1].info.label;
        const char *color = i == 0 ? COLOR_BASE : verdict_color(r->candidates[i - 1].verdict.verdict);
        if (!m) continue;
        double y = 36 + i * row;
        qt__sb_printf(b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", x0 - 8, y + 14);
        qt__sb_html(b, qt__eval_basename(label));
        qt__sb_printf(b, "</text><rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"18\" fill=\"%s\" opacity=\"0.8\"/>", x0, y + 2,
                      (x1 - x0) * m->acc, color);
        qt__sb_printf(b, "<line stroke=\"#1a202c\" stroke-width=\"1.5\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
                      x0 + (x1 - x0) * m->acc_lo, y + 11, x0 + (x1 - x0) * m->acc_hi, y + 11);
        qt__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\">%.1f%% (%d/%d)</text>\n", x0 + (x1 - x0) * m->acc_hi + 6, y + 15,
                      100 * m->acc, (int)m->n_correct, (int)m->n_items);
    }
    qt__sb_puts(b, "</svg><figcaption>Bars: accuracy, choosing the ending with the highest log-likelihood per byte; "
                   "black line: Wilson 95% interval.</figcaption></figure>\n");
}

/* Success rate 0..1 -> a red-to-green fill. */
static void rate_color(char *buf, size_t cap, double t) {
    int r = (int)lround(197 + (47 - 197) * t), g = (int)lround(48 + (133 - 48) * t), bl = (int)lround(48 + (90 - 48) * t);
    snprintf(buf, cap, "#%02x%02x%02x", r, g, bl);
}

static void needle_map(qt__sbuf *b, const char *label, const qt_needle_result *nr) {
    int32_t n_depths = 1;
    while (n_depths < nr->n_cells && nr->cells[n_depths].length == nr->cells[0].length) n_depths++;
    int32_t n_len = (nr->n_cells + n_depths - 1) / n_depths;
    int cw = 62, ch = 36, x0 = 70, y0 = 44, w = x0 + n_depths * cw + 16, h = y0 + n_len * ch + 44;
    int title_w = 24 + (int)(7.5 * (double)(strlen(label) + 12)); /* bold 13 px title and " — k/n" */
    if (w < title_w) w = title_w;
    qt__sb_printf(b, "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                     "role=\"img\"><title>needle retrieval</title><rect class=\"bg\" width=\"100%%\" height=\"100%%\"/>"
                     "<text class=\"ttl\" x=\"12\" y=\"20\">", w, h, w, h);
    qt__sb_html(b, label);
    qt__sb_printf(b, " &#8212; %d/%d</text>\n", (int)nr->n_success, (int)nr->n_trials);
    for (int32_t d = 0; d < n_depths; d++)
        qt__sb_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%.0f%%</text>", x0 + d * cw + cw / 2, y0 - 6,
                      100 * nr->cells[d].depth);
    for (int32_t l = 0; l < n_len; l++) {
        qt__sb_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%d tok</text>", x0 - 6, y0 + l * ch + ch / 2 + 4,
                      (int)nr->cells[l * n_depths].length);
        for (int32_t d = 0; d < n_depths && l * n_depths + d < nr->n_cells; d++) {
            const qt_needle_cell *c = &nr->cells[l * n_depths + d];
            char col[8];
            rate_color(col, sizeof col, c->n_trials ? (double)c->n_success / c->n_trials : 0);
            /* the count, and the key's mean log-probability (the graded signal) under it */
            qt__sb_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"#fff\"/>"
                             "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" style=\"fill:#fff\">%d/%d</text>"
                             "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" style=\"fill:#fff;font-size:9px\">lp %.1f</text>",
                          x0 + d * cw, y0 + l * ch, cw, ch, col, x0 + d * cw + cw / 2, y0 + l * ch + 15,
                          (int)c->n_success, (int)c->n_trials, x0 + d * cw + cw / 2, y0 + l * ch + 29, c->mean_key_logprob);
        }
    }
    qt__sb_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">needle depth</text></svg></figure>\n",
                  x0 + n_depths * cw / 2, h - 12);
}

qt_status qt_eval_report_html(const qt_eval_report *r, char **out) {
    qt__sbuf b = {0};
    const qt_eval_summary *s0 = r->n_candidates ? &r->candidates[0].summary : NULL;
    qt__sb_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>quanta eval: ");
    qt__sb_html(&b, qt__eval_basename(r->base.label));
    qt__sb_printf(&b, "</title><style>%s</style></head><body>\n<h1>quanta eval</h1><p class=\"sub\">base <b>", css);
    qt__sb_html(&b, r->base.label);
    qt__sb_puts(&b, "</b> &middot; text <b>");
    qt__sb_html(&b, r->text_path ? r->text_path : "?");
    qt__sb_printf(&b, "</b> &middot; %lld tokens scored in %d chunks of %d &middot; thresholds: perplexity +%g %%",
                  s0 ? (long long)s0->n_tokens : 0LL, (int)r->n_chunks, (int)r->n_ctx, r->thresholds.max_ppl_delta_pct);
    if (!isnan(r->thresholds.max_kld)) qt__sb_printf(&b, ", mean KLD %g", r->thresholds.max_kld);
    if (!isnan(r->thresholds.min_top1)) qt__sb_printf(&b, ", top-1 &ge; %g", r->thresholds.min_top1);
    if (r->strict) qt__sb_puts(&b, " &middot; strict");
    qt__sb_puts(&b, "</p>\n<h2>Verdicts</h2>\n");
    verdict_cards(&b, r);
    qt__sb_puts(&b, "<h2>Metrics</h2>\n");
    metrics_table(&b, r);
    qt__sb_puts(&b, "<h2>Trade-offs</h2>\n");
    charts(&b, r);
    if (r->base_mc) mc_chart(&b, r);
    if (r->base_needle) {
        qt__sb_puts(&b, "<h2>Needle in a haystack</h2><p class=\"sub\">Cells: trials where greedy decoding wrote the key "
                        "(rows: prompt length, columns: where the key sits) and the key's mean log-probability "
                        "(nats; higher is better).</p><div class=\"charts\">\n");
        needle_map(&b, qt__eval_basename(r->base.label), r->base_needle);
        for (int32_t i = 0; i < r->n_candidates; i++)
            if (r->candidates[i].needle) needle_map(&b, qt__eval_basename(r->candidates[i].info.label), r->candidates[i].needle);
        qt__sb_puts(&b, "</div>\n");
    }
    if (r->base_tasks) qt__tasks_html(&b, r);
    qt__sb_printf(&b, "<footer>quanta %s &middot; perplexity as llama-perplexity computes it; intervals and every field "
                      "are described in docs/eval.md (schema quanta.eval/1).</footer>\n</body></html>\n", qt_version());
    return qt__sb_finish(&b, out, "eval");
}
