/* lib/plan/render.c — the seeds' memory figure as SVG, and an HTML report.
 *
 * One stacked horizontal bar per scheme: weights, overhead (allowances) and
 * the KV cache, against the budget line (util x memory) and the device's
 * memory; what does not fit is drawn past the budget line in red and labelled
 * with how much is missing; each bar is annotated with its concurrency.
 * Pure string building: no fonts measured, no external tools.
 */
#include <math.h>
#include <string.h>

#include "plan_internal.h"

#define W 980
#define LEFT 150    /* bar origin */
#define RIGHT 250   /* room for annotations */
#define ROW_H 28
#define BAR_H 18
#define TOP 64

static const char *const C_WEIGHTS = "#3b6fb6", *const C_OVERHEAD = "#9a9a9a", *const C_KV = "#4caf6a",
                  *const C_OVER = "#d64545";

/* one decimal, unless rounding would show the next whole number */
static double frac_shown(double x, int *decimals) {
    *decimals = floor(x * 10 + 0.5) / 10 >= floor(x) + 1 ? 2 : 1;
    return *decimals == 2 ? floor(x * 100) / 100 : x;
}

static double max_extent(const qt_plan *p) {
    double mx = 0;
    for (int i = 0; i < p->n_rows; i++) {
        const qt_estimate *e = &p->rows[i].est;
        double end = e->weights_bytes + e->overhead_bytes;
        double need = end + e->kv_required_bytes;
        if (need > mx) mx = need;
        if (e->device_bytes > mx) mx = e->device_bytes;
        if (end > mx) mx = end;
    }
    return mx > 0 ? mx * 1.04 : 1;
}

static void rect(qt__sbuf *b, double x, double y, double w, double h, const char *fill, const char *extra) {
    if (w <= 0) return;
    qt__sb_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"%s/>\n", x, y, w, h, fill,
                  extra ? extra : "");
}

static void text(qt__sbuf *b, double x, double y, const char *anchor, const char *cls, const char *s) {
    qt__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" class=\"%s\">", x, y, anchor, cls);
    qt__sb_html(b, s);
    qt__sb_printf(b, "</text>\n");
}

static void title_line(const qt_plan *p, char *buf, size_t n) {
    const qt_estimate_req *r = &p->req;
    char dev[96];
    if (r->hw) snprintf(dev, sizeof dev, "%s", r->hw->name);
    else snprintf(dev, sizeof dev, "a %.2f GB device", r->memory_bytes / QT_GB);
    if (r->model->kind == QT_SPEC_DIFFUSION)
        snprintf(buf, n, "%s on %s: memory per scheme of the denoiser (GB = 1e9 bytes)", r->model->display, dev);
    else if (r->n_gpus > 1)
        snprintf(buf, n, "%s on %d x %s: memory per GPU, context %lld tokens (GB = 1e9 bytes)", r->model->display,
                 r->n_gpus, dev, (long long)r->context);
    else
        snprintf(buf, n, "%s on %s: memory per GPU, context %lld tokens (GB = 1e9 bytes)", r->model->display, dev,
                 (long long)r->context);
}

static void svg_body(const qt_plan *p, qt__sbuf *b) {
    const int n = p->n_rows;
    int n_ranked = 0;
    while (n_ranked < n && p->rows[n_ranked].rank) n_ranked++;
    const double refused_gap = n_ranked < n ? ROW_H / 2 + 52 : 0; /* heading, and room under the lines */
    const double H = TOP + n * ROW_H + refused_gap + 70;
    const double scale = (W - LEFT - RIGHT) / max_extent(p);
    const bool diffusion = p->req.model->kind == QT_SPEC_DIFFUSION;
    char buf[512], a[32], c[32];
    qt__sb_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d %.0f\" "
                     "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n",
                  W, H, W, H);
    qt__sb_printf(b, "<style>.t{font-size:15px;font-weight:bold}.s{fill:#333}.lab{font-weight:bold}.dim{fill:#888}"
                     ".bad{fill:#b22}.ok{fill:#1b6b34}</style>\n");
    qt__sb_printf(b, "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
                     "patternTransform=\"rotate(45)\"><rect width=\"3\" height=\"6\" fill=\"%s\"/></pattern></defs>\n",
                  C_OVER);
    rect(b, 0, 0, W, H, "#ffffff", NULL);
    title_line(p, buf, sizeof buf);
    text(b, 10, 22, "start", "t", buf);
    const qt_estimate *e0 = n ? &p->rows[0].est : NULL;
    if (e0) {
        snprintf(buf, sizeof buf, "budget %s = %.0f%% of %s%s", qt__fmt_gb(e0->budget_bytes, a, sizeof a),
                 100.0 * e0->budget_bytes / e0->device_bytes, qt__fmt_gb(e0->device_bytes, c, sizeof c),
                 diffusion ? "" : "; bars: weights | overhead (allowance) | KV cache; right: sequences that fit");
        text(b, 10, 42, "start", "s", buf);
    }
    for (int i = 0; i < n; i++) {
        const qt_plan_row *r = &p->rows[i];
        const qt_estimate *e = &r->est;
        const double y = TOP + i * ROW_H + (r->rank ? 0 : 52);
        const double x_w = LEFT, w_w = e->weights_bytes * scale;
        const double x_o = x_w + w_w, w_o = e->overhead_bytes * scale;
        const double x_k = x_o + w_o;
        if (!r->rank && i == n_ranked) {
            snprintf(buf, sizeof buf, "cannot run on %s:", p->req.hw ? p->req.hw->name : "this device");
            text(b, 10, y + BAR_H - 4, "start", "lab", buf);
        }
        snprintf(buf, sizeof buf, "%s%s", r->rank ? "" : "\xc3\x97 ", r->scheme->key); /* U+00D7 marks refused */
        text(b, LEFT - 8, y + BAR_H - 4 + (r->rank ? 0 : ROW_H / 2), "end", r->rank ? "lab" : "dim", buf);
        if (!r->rank) { /* refused rows come last, below the budget lines: the reason, no bar */
            snprintf(buf, sizeof buf, "%s", e->reason);
            if (strlen(buf) > 120) memcpy(buf + 116, "...", 4);
            text(b, x_w, y + BAR_H - 5 + ROW_H / 2, "start", "dim", buf);
            continue;
        }
        rect(b, x_w, y, w_w, BAR_H, C_WEIGHTS, NULL);
        rect(b, x_o, y, w_o, BAR_H, C_OVERHEAD, NULL);
        const double budget_x = LEFT + e->budget_bytes * scale;
        double end; /* where the annotation starts */
        if (e->weights_shortfall_bytes > 0) {
            /* weights + overhead alone cross the budget line: hatch the part beyond it */
            rect(b, budget_x, y, x_k - budget_x, BAR_H, "url(#hatch)", " opacity=\"0.85\"");
            end = x_k;
        } else if (diffusion) {
            end = x_k;
        } else {
            rect(b, x_k, y, budget_x - x_k, BAR_H, C_KV, NULL);
            end = budget_x;
            if (!e->fits) { /* the required sequences need more cache than is left */
                rect(b, budget_x, y, e->shortfall_bytes * scale, BAR_H, "url(#hatch)", " opacity=\"0.85\"");
                end += e->shortfall_bytes * scale;
            }
        }
        if (!e->fits) {
            snprintf(buf, sizeof buf, "DOES NOT FIT: %s short", qt__fmt_gb(e->shortfall_bytes, a, sizeof a));
            text(b, end + 6, y + BAR_H - 4, "start", "bad", buf);
        } else if (diffusion) {
            snprintf(buf, sizeof buf, "fits: %s spare", qt__fmt_gb(e->kv_budget_bytes, a, sizeof a));
            text(b, end + 6, y + BAR_H - 4, "start", "ok", buf);
        } else {
            int dec;
            double fr = frac_shown(e->concurrency_frac, &dec);
            int k = snprintf(buf, sizeof buf, "%lld seqs x %lld (%.*f)", (long long)e->concurrency,
                             (long long)p->req.context, dec, fr);
            if (p->goal == QT_GOAL_THROUGHPUT && e->tok_s_batch > 0)
                snprintf(buf + k, sizeof buf - (size_t)k, ", %.0f tok/s", e->tok_s_batch);
            text(b, end + 6, y + BAR_H - 4, "start", "ok", buf);
        }
        if (w_w > 70) {
            snprintf(buf, sizeof buf, "%.2f", e->weights_bytes / QT_GB);
            qt__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#fff\" font-size=\"11\">%s</text>\n", x_w + 4,
                          y + BAR_H - 5, buf);
        }
    }
    /* Budget and device lines (the same for every row of a plan). */
    if (e0) {
        const double bx = LEFT + e0->budget_bytes * scale, dx = LEFT + e0->device_bytes * scale;
        const double y1 = TOP - 8, y2 = TOP + n_ranked * ROW_H;
        qt__sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\" stroke-width=\"2\" "
                         "stroke-dasharray=\"6,3\"/>\n", bx, y1, bx, y2);
        qt__sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" stroke-width=\"1\"/>\n",
                      dx, y1, dx, y2);
        snprintf(buf, sizeof buf, "budget %.2f GB", e0->budget_bytes / QT_GB);
        text(b, bx, y2 + 14, "middle", "s", buf);
        snprintf(buf, sizeof buf, "memory %.2f GB", e0->device_bytes / QT_GB);
        text(b, dx, y2 + 28, "middle", "dim", buf);
    }
    /* Legend. */
    const double ly = H - 22;
    const char *names[4] = {diffusion ? "weights (all components)" : "weights", diffusion ? "activations (allowance)" : "overhead (allowances)",
                            diffusion ? NULL : "KV cache", "does not fit"};
    const char *cols[4] = {C_WEIGHTS, C_OVERHEAD, C_KV, "url(#hatch)"};
    double lx = 10;
    for (int k = 0; k < 4; k++) {
        if (!names[k]) continue;
        rect(b, lx, ly - 10, 14, 12, cols[k], NULL);
        text(b, lx + 20, ly, "start", "s", names[k]);
        lx += 30 + 7.0 * (double)strlen(names[k]);
    }
    qt__sb_printf(b, "</svg>\n");
}

qt_status qt_plan_svg(const qt_plan *p, char **out) {
    qt__sbuf b = {0};
    svg_body(p, &b);
    return qt__sb_finish(&b, out, "plan");
}

/* ---- HTML --------------------------------------------------------------------- */

/* The LLM table: KV budget, sequences, context, decode bound. */
static void html_llm_rows(const qt_plan *p, qt__sbuf *bp) {
#define b (*bp)
    char a[32];
    qt__sb_printf(&b, ". Goal: %s. Weights or cache? The constraint at 16-bit is <b>%s</b>.</p>\n", qt_goal_name(p->goal),
                  p->constraint);
    qt__sb_printf(&b, "<table>\n<tr><th>rank</th><th>scheme</th><th>weights GB</th><th>overhead GB</th><th>KV budget GB</th>"
                      "<th>sequences</th><th>max context</th><th>decode tok/s (bound)</th><th>status</th></tr>\n");
    for (int i = 0; i < p->n_rows; i++) {
        const qt_plan_row *r = &p->rows[i];
        const qt_estimate *e = &r->est;
        if (r->rank) qt__sb_printf(&b, "<tr><td>%d</td>", r->rank);
        else qt__sb_printf(&b, "<tr class=\"no\"><td>-</td>");
        qt__sb_printf(&b, "<td class=\"l\">");
        qt__sb_html(&b, r->scheme->key);
        qt__sb_printf(&b, "</td><td>%.2f</td><td>%.2f</td><td>%.2f</td>", e->weights_bytes / QT_GB,
                      e->overhead_bytes / QT_GB, e->kv_budget_bytes / QT_GB);
        int dec;
        double fr = frac_shown(e->concurrency_frac, &dec);
        if (e->concurrency_frac > 0) qt__sb_printf(&b, "<td>%lld (%.*f)</td>", (long long)e->concurrency, dec, fr);
        else qt__sb_printf(&b, "<td>-</td>");
        qt__sb_printf(&b, "<td>%lld</td><td>%.0f</td>", (long long)e->max_context, e->tok_s_batch);
        if (!r->rank) {
            qt__sb_printf(&b, "<td class=\"l\">");
            qt__sb_html(&b, e->reason);
            qt__sb_printf(&b, "</td></tr>\n");
        } else if (e->fits) {
            qt__sb_printf(&b, "<td class=\"l ok\">fits</td></tr>\n");
        } else {
            qt__sb_printf(&b, "<td class=\"l bad\">DOES NOT FIT (%s short)</td></tr>\n",
                          qt__fmt_gb(e->shortfall_bytes, a, sizeof a));
        }
    }
#undef b
}

/* Diffusion: the rows by denoiser scheme with the hardware rule of each, and the
 * components with their memory at each precision and the recommended one. */
static void html_diffusion(const qt_plan *p, qt__sbuf *b) {
    char a[32];
    const qt_model_spec *m = p->req.model;
    qt__sb_printf(b, ". Goal: %s.</p>\n<table>\n<tr><th>rank</th><th>denoiser</th><th>weights GB</th><th>activations GB</th>"
                     "<th>spare GB</th><th>text encoders</th><th>hardware</th><th>status</th></tr>\n",
                  qt_goal_name(p->goal));
    for (int i = 0; i < p->n_rows; i++) {
        const qt_plan_row *r = &p->rows[i];
        const qt_estimate *e = &r->est;
        if (r->rank) qt__sb_printf(b, "<tr><td>%d</td>", r->rank);
        else qt__sb_printf(b, "<tr class=\"no\"><td>-</td>");
        qt__sb_printf(b, "<td class=\"l\">");
        qt__sb_html(b, r->scheme->key);
        qt__sb_printf(b, "</td><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%s</td><td class=\"l\">", e->weights_bytes / QT_GB,
                      e->overhead_bytes / QT_GB, e->kv_budget_bytes / QT_GB, r->encoders_8bit ? "8-bit" : "16-bit");
        qt__sb_html(b, e->reason);
        if (!r->rank) qt__sb_printf(b, "</td><td class=\"l bad\">cannot run</td></tr>\n");
        else if (e->fits) qt__sb_printf(b, "</td><td class=\"l ok\">fits%s</td></tr>\n",
                                        e->support == QT_SUPPORT_PARTIAL ? ", memory only" : "");
        else qt__sb_printf(b, "</td><td class=\"l bad\">DOES NOT FIT (%s short)</td></tr>\n",
                           qt__fmt_gb(e->shortfall_bytes, a, sizeof a));
    }
    const qt_plan_row *bst = p->best >= 0 ? &p->rows[p->best] : NULL;
    qt__sb_printf(b, "</table>\n<h2>Components</h2>\n<table>\n<tr><th>component</th><th>what</th><th>parameters</th>"
                     "<th>16-bit GB</th><th>8-bit GB</th><th>4-bit GB</th><th>recommended</th></tr>\n");
    for (int c = 0; c < p->n_components; c++) {
        qt__sb_printf(b, "<tr><td>");
        qt__sb_html(b, m->comp[c].name);
        qt__sb_printf(b, "</td><td class=\"l\">");
        qt__sb_html(b, m->comp[c].what);
        qt__sb_printf(b, "</td><td>%lld</td><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%s</td></tr>\n",
                      (long long)m->comp[c].n_params, p->comp_bytes[c][0] / QT_GB, p->comp_bytes[c][1] / QT_GB,
                      p->comp_bytes[c][2] / QT_GB, qt_plan_component_precision(p, bst, c));
    }
}

qt_status qt_plan_html(const qt_plan *p, char **out) {
    qt__sbuf b = {0};
    char buf[512];
    const qt_model_spec *m = p->req.model;
    title_line(p, buf, sizeof buf);
    qt__sb_printf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>quanta plan: ");
    qt__sb_html(&b, m->display);
    qt__sb_printf(&b, "</title>\n<style>\nbody{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;margin:2em;max-width:1100px;color:#222}\n"
                      "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\n"
                      "td:first-child,th:first-child,td.l{text-align:left}tr.no td{color:#999}.bad{color:#b22}.ok{color:#1b6b34}\n"
                      "pre{background:#f4f4f4;padding:.6em;overflow-x:auto}\n</style>\n</head>\n<body>\n");
    qt__sb_printf(&b, "<h1>");
    qt__sb_html(&b, buf);
    qt__sb_printf(&b, "</h1>\n<p>Model source: ");
    qt__sb_html(&b, m->source);
    if (p->n_components) html_diffusion(p, &b);
    else html_llm_rows(p, &b);
    qt__sb_printf(&b, "</table>\n");
    if (p->best >= 0) {
        qt__sb_printf(&b, "<h2>Recommendation: ");
        qt__sb_html(&b, p->rows[p->best].scheme->title);
        qt__sb_printf(&b, "</h2>\n");
    } else {
        qt__sb_printf(&b, "<h2 class=\"bad\">Nothing fits this target</h2>\n");
    }
    if (p->n_commands) {
        qt__sb_printf(&b, "<pre>");
        for (int i = 0; i < p->n_commands; i++) {
            qt__sb_html(&b, p->commands[i]);
            qt__sb_printf(&b, "\n");
        }
        qt__sb_printf(&b, "</pre>\n");
    }
    if (p->n_warnings) {
        qt__sb_printf(&b, "<h2>Notes</h2>\n<ul>\n");
        for (int i = 0; i < p->n_warnings; i++) {
            qt__sb_printf(&b, "<li>");
            qt__sb_html(&b, p->warnings[i]);
            qt__sb_printf(&b, "</li>\n");
        }
        qt__sb_printf(&b, "</ul>\n");
    }
    qt__sb_printf(&b, "<h2>Memory</h2>\n");
    svg_body(p, &b);
    qt__sb_printf(&b, "<p>GB = 10<sup>9</sup> bytes. Overheads are allowances (see docs/plan.md).</p>\n</body>\n</html>\n");
    return qt__sb_finish(&b, out, "plan");
}
