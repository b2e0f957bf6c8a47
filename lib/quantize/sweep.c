/* lib/quantize/sweep.c — the budget sweep of a --target-size run and its
 * picture (include/quanta/quantize.h qt_quantize_sweep_*, docs/quantize.md
 * "The picture").
 *
 * The sweep re-runs the allocator (lib/quantize/mix.c) on the costs the run
 * already has, at budgets evenly spaced from the sum of each tensor's smallest
 * candidate to the sum of each tensor's cheapest-cost one (the ends of the
 * Pareto frontiers): no quantization, a knapsack per point. llama.cpp's presets
 * are the types `quantize --scheme` plans for them (lib/quant/recipe.c, the
 * rules of llama_tensor_get_type), scored with the same costs; a preset made
 * without the imatrix the costs were made with is quantized again without it
 * (proxy only) and scored with the run's importance weights, so every point
 * is the same measure of the same model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "mix.h"
#include "quanta/imatrix.h"
#include "quantize_internal.h"

#define ALIGN 32 /* GGUF's default tensor alignment (bytes), as target.c pads */
#define MAX_OPT (QT_QUANTIZE_MIX_N_DEFAULT + 12)

/* The presets issue 17 compares against (llama-quantize's names). */
static const char *const preset_names[QT_QUANTIZE_SWEEP_PRESETS] = {"Q3_K_M", "Q4_K_S", "Q4_K_M", "Q5_K_M", "Q6_K"};

static uint64_t pad(uint64_t b) { return (b + ALIGN - 1) / ALIGN * ALIGN; }

void qt_quantize_sweep_free(qt_quantize_sweep *s) {
    if (!s) return;
    free(s->names);
    free(s->bpw);
    free(s->types);
    free(s);
}

/* The curve: QT_QUANTIZE_SWEEP_POINTS budgets from the least to the most a mix can take. */
static qt_status sweep_points(const qt_quantize_mix *mx, uint64_t rest, qt_quantize_sweep *sw) {
    const int32_t n = mx->n;
    qt__mix_option *opts = calloc((size_t)n * MAX_OPT + 1, sizeof *opts);
    int32_t *first = calloc((size_t)n + 1, sizeof *first), *n_opt = calloc((size_t)n + 1, sizeof *n_opt),
            *choice = calloc((size_t)n + 1, sizeof *choice), idx[MAX_OPT];
    qt_status s = opts && first && n_opt && choice ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
    uint64_t least = 0, most = 0;
    for (int32_t i = 0; s == QT_OK && i < n; i++) {
        first[i] = i * MAX_OPT;
        n_opt[i] = mx->t[i].n_options;
        for (int32_t k = 0; k < n_opt[i]; k++) opts[first[i] + k] = (qt__mix_option){pad(mx->t[i].bytes[k]), mx->t[i].cost[k]};
        const int32_t nf = qt__mix_frontier(opts + first[i], n_opt[i], idx);
        least += opts[first[i] + idx[0]].bytes;
        most += opts[first[i] + idx[nf - 1]].bytes;
    }
    for (int32_t k = 0; s == QT_OK && k < QT_QUANTIZE_SWEEP_POINTS; k++) {
        const uint64_t budget =
            least + (uint64_t)((unsigned __int128)(most - least) * (unsigned)k / (QT_QUANTIZE_SWEEP_POINTS - 1));
        qt__mix_result r;
        s = qt__mix_allocate(opts, first, n_opt, n, budget, QT__MIX_DP_CELLS, choice, &r);
        if (s == QT_OK) sw->points[sw->n_points++] = (qt_quantize_sweep_point){rest + r.bytes, r.cost};
    }
    free(opts); free(first); free(n_opt); free(choice);
    return s;
}

/* Where a preset's types meet the mix: per mixed tensor, the mix's own cost or a proxy job. */
typedef struct preset_acc {
    qt_quantize_plan *plan;
    int64_t *job;        /* (mix->n) index into the jobs, -1: the mix's cost in cost[] */
    double *cost;        /* (mix->n) */
} preset_acc;

static int64_t find_job(const qt__proxy_job *jobs, int64_t n, const qt_tensor *t, qt_type ty, const float *qw) {
    for (int64_t j = 0; j < n; j++)
        if (jobs[j].t == t && jobs[j].type == ty && jobs[j].qw == qw) return j;
    return -1;
}

/* One preset (with or without the imatrix): plan it, and say per tensor where its cost comes from. */
static qt_status preset_collect(const qt_model *m, const qt_quantize_opts *o, const qt_quantize_mix *mx,
                                float *const *w, bool with_im, qt_quantize_preset_point *pt, preset_acc *acc,
                                qt__proxy_job *jobs, int64_t *n_jobs) {
    qt_quantize_opts po = *o;
    po.scheme = pt->name;
    po.n_overrides = 0;
    po.output_type = po.embd_type = QT_TYPE_COUNT;
    po.pure = false;
    po.command_line = NULL;
    po.algorithm = NULL;
    if (!with_im) po.imatrix = NULL, po.imatrix_label = NULL, po.calib = NULL;
    if (qt_quantize_plan_make(m, &po, &acc->plan) != QT_OK) {
        snprintf(pt->why, sizeof pt->why, "%s", qt_last_error());
        return QT_OK;
    }
    const bool measured = strcmp(mx->sensitivity, "proxy") != 0;
    const bool run_im = o->imatrix != NULL;
    for (int32_t i = 0; i < mx->n; i++) {
        const qt_quantize_mix_tensor *t = &mx->t[i];
        const qt_quantize_tensor *q = &acc->plan->tensors[t->plan_index];
        acc->job[i] = -1;
        acc->cost[i] = 0; /* copied as stored: no error against the base model */
        if (q->kept) continue;
        int32_t k = 0;
        while (k < t->n_options && t->types[k] != q->type) k++;
        /* the mix's costs were made quantizing with w[i]: reusable where the preset quantizes the same way */
        const float *qw = with_im ? w[i] : NULL;
        if (k < t->n_options && (with_im == run_im || !w[i])) {
            acc->cost[i] = t->cost[k];
            continue;
        }
        if (measured) {
            snprintf(pt->why, sizeof pt->why, "%.96s in %s %s: not among the measured costs", q->name,
                     qt_type_get(q->type)->name, with_im ? "with the imatrix" : "without an imatrix");
            return QT_OK;
        }
        const qt_tensor *mt = qt_model_find_tensor(m, q->name);
        int64_t j = find_job(jobs, *n_jobs, mt, q->type, qw);
        if (j < 0) qt__proxy_job_init(m, &jobs[j = (*n_jobs)++], mt, q->type, qw, w[i]);
        acc->job[i] = j;
    }
    pt->scored = true;
    pt->file_bytes = acc->plan->output_bytes;
    return QT_OK;
}

static qt_status sweep_presets(const qt_model *m, const qt_quantize_opts *o, const qt_quantize_mix *mx,
                               qt_quantize_sweep *sw) {
    const int32_t n = mx->n, n_pre = (o->imatrix ? 2 : 1) * QT_QUANTIZE_SWEEP_PRESETS;
    qt_imatrix *im = NULL;
    float **w = calloc((size_t)n + 1, sizeof *w);
    preset_acc *acc = calloc((size_t)n_pre, sizeof *acc);
    qt__proxy_job *jobs = calloc((size_t)n * n_pre + 1, sizeof *jobs);
    int64_t n_jobs = 0;
    qt_status s = w && acc && jobs ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
    if (s == QT_OK && o->imatrix) s = qt_imatrix_open(o->imatrix, &im);
    for (int32_t i = 0; s == QT_OK && i < n; i++)
        s = qt__mix_tensor_weights(im, qt_model_find_tensor(m, sw->names[i]), &w[i]);
    for (int32_t p = 0; s == QT_OK && p < n_pre; p++) {
        qt_quantize_preset_point *pt = &sw->presets[sw->n_presets++];
        snprintf(pt->name, sizeof pt->name, "%s", preset_names[p % QT_QUANTIZE_SWEEP_PRESETS]);
        pt->imatrix = o->imatrix && p < QT_QUANTIZE_SWEEP_PRESETS;
        if (!(acc[p].job = calloc((size_t)n + 1, sizeof *acc[p].job)) || !(acc[p].cost = calloc((size_t)n + 1, sizeof(double))))
            s = qt_error(QT_ERR_NOMEM, "out of memory");
        if (s == QT_OK) s = preset_collect(m, o, mx, w, pt->imatrix, pt, &acc[p], jobs, &n_jobs);
    }
    if (s == QT_OK && n_jobs) s = qt__proxy_scan(m, o->threads, jobs, n_jobs);
    for (int32_t p = 0; s == QT_OK && p < sw->n_presets; p++) {
        if (!sw->presets[p].scored) continue;
        double c = 0;
        for (int32_t i = 0; i < n; i++) c += acc[p].job[i] >= 0 ? jobs[acc[p].job[i]].cost : acc[p].cost[i];
        sw->presets[p].cost = c;
    }
    for (int32_t p = 0; acc && p < n_pre; p++) {
        qt_quantize_plan_free(acc[p].plan);
        free(acc[p].job);
        free(acc[p].cost);
    }
    for (int32_t i = 0; w && i < n; i++) free(w[i]);
    free(w); free(acc); free(jobs);
    if (im) qt_imatrix_close(im);
    return s;
}

qt_status qt_quantize_sweep_make(const qt_model *m, const qt_quantize_opts *o, const qt_quantize_mix *mix,
                                 const qt_quantize_plan *plan, qt_quantize_sweep **out) {
    *out = NULL;
    if (!mix || !plan || mix->n < 1) return qt_error(QT_ERR_ARG, "sweep: no mix to sweep");
    qt_quantize_sweep *sw = calloc(1, sizeof *sw);
    if (!sw) return qt_error(QT_ERR_NOMEM, "out of memory");
    sw->sensitivity = mix->sensitivity;
    sw->n_tensors = mix->n;
    sw->names = calloc((size_t)mix->n, sizeof *sw->names);
    sw->bpw = calloc((size_t)mix->n, sizeof *sw->bpw);
    sw->types = calloc((size_t)mix->n, sizeof *sw->types);
    qt_status s = sw->names && sw->bpw && sw->types ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
    uint64_t mixed = 0;
    for (int32_t i = 0; s == QT_OK && i < mix->n; i++) {
        const qt_quantize_mix_tensor *t = &mix->t[i];
        const qt_quantize_tensor *q = &plan->tensors[t->plan_index];
        snprintf(sw->names[i], sizeof sw->names[i], "%s", q->name);
        sw->types[i] = t->types[t->chosen];
        sw->bpw[i] = q->n_elements ? 8.0 * (double)t->bytes[t->chosen] / (double)q->n_elements : 0;
        mixed += pad(t->bytes[t->chosen]);
    }
    /* the rest of the file (header, kept tensors) as the chosen plan lays it out */
    const uint64_t rest = plan->output_bytes > mixed ? plan->output_bytes - mixed : 0;
    sw->chosen = (qt_quantize_sweep_point){plan->output_bytes, mix->predicted_cost};
    if (s == QT_OK) s = sweep_points(mix, rest, sw);
    if (s == QT_OK) s = sweep_presets(m, o, mix, sw);
    if (s != QT_OK) { qt_quantize_sweep_free(sw); return s; }
    *out = sw;
    return QT_OK;
}

/* ---- the picture ---------------------------------------------------------------- */

#define W 960           /* px */
#define PL 90           /* plot left, right, top, bottom (px) */
#define PR 920
#define PT 60
#define PB 380
#define CELL_H 16       /* heat map row (px) */

/* Bits per weight to a colour: log2(bpw) over 0..4 (1 to 16 bits) through three stops
 * (ColorBrewer's RdYlBu, reversed: few bits blue, many red). */
static void heat_colour(double bpw, char *buf, size_t n) {
    static const double stop[3][3] = {{49, 54, 149}, {255, 255, 191}, {165, 0, 38}};
    double t = bpw > 0 ? log2(bpw) / 4.0 : 0;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    const int seg = t < 0.5 ? 0 : 1;
    const double f = t < 0.5 ? t * 2 : (t - 0.5) * 2;
    int c[3];
    for (int k = 0; k < 3; k++) c[k] = (int)lround(stop[seg][k] + f * (stop[seg + 1][k] - stop[seg][k]));
    snprintf(buf, n, "#%02x%02x%02x", c[0], c[1], c[2]);
}

typedef struct axes {
    double x0, x1;      /* bytes */
    double y0, y1;      /* log10 cost */
    double floor_cost;  /* costs at or below it are drawn on the bottom edge */
} axes;

static double px_x(const axes *a, double bytes) { return PL + (PR - PL) * (bytes - a->x0) / (a->x1 - a->x0); }
static double px_y(const axes *a, double cost) {
    const double l = log10(cost > a->floor_cost ? cost : a->floor_cost);
    return PB - (PB - PT) * (l - a->y0) / (a->y1 - a->y0);
}

static void fit_axes(const qt_quantize_sweep *s, axes *a) {
    double xmin = (double)s->chosen.file_bytes, xmax = xmin, cmin = INFINITY, cmax = 0;
#define SEE(b, c) do { \
        if ((double)(b) < xmin) xmin = (double)(b); \
        if ((double)(b) > xmax) xmax = (double)(b); \
        if ((c) > 0 && (c) < cmin) cmin = (c); \
        if ((c) > cmax) cmax = (c); \
    } while (0)
    SEE(s->chosen.file_bytes, s->chosen.cost);
    for (int32_t i = 0; i < s->n_points; i++) SEE(s->points[i].file_bytes, s->points[i].cost);
    for (int32_t i = 0; i < s->n_presets; i++)
        if (s->presets[i].scored) SEE(s->presets[i].file_bytes, s->presets[i].cost);
#undef SEE
    const double span = xmax > xmin ? xmax - xmin : (xmax > 0 ? xmax : 1);
    a->x0 = xmin - 0.03 * span;
    a->x1 = xmax + 0.03 * span;
    if (!(cmax > 0)) cmin = cmax = 1; /* every cost zero: one decade around 1 */
    if (!isfinite(cmin)) cmin = cmax;
    a->y0 = floor(log10(cmin));
    a->y1 = ceil(log10(cmax));
    if (a->y1 <= a->y0) a->y1 = a->y0 + 1;
    a->floor_cost = pow(10, a->y0);
}

static void svg_axes(qt__sbuf *b, const axes *a) {
    qt__sb_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n", PL, PT, PR - PL,
                  PB - PT);
    for (int k = 0; k <= 5; k++) {
        const double bytes = a->x0 + (a->x1 - a->x0) * k / 5.0, x = px_x(a, bytes);
        qt__sb_printf(b, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"#888\"/>"
                         "<text x=\"%.2f\" y=\"%d\" text-anchor=\"middle\">%.4g MB</text>\n",
                      x, PB, x, PB + 5, x, PB + 18, bytes / 1e6);
    }
    for (double l = a->y0; l <= a->y1 + 1e-9; l += 1) {
        const double y = PB - (PB - PT) * (l - a->y0) / (a->y1 - a->y0);
        qt__sb_printf(b, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" stroke=\"#ddd\"/>"
                         "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\">1e%d</text>\n",
                      PL, y, PR, y, PL - 6, y + 4, (int)l);
    }
    qt__sb_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">file size (MB = 10^6 bytes)</text>\n", (PL + PR) / 2,
                  PB + 36);
    qt__sb_printf(b, "<text x=\"20\" y=\"%d\" transform=\"rotate(-90 20 %d)\" text-anchor=\"middle\">predicted cost "
                     "(sum over tensors, log scale)</text>\n", (PT + PB) / 2, (PT + PB) / 2);
}

static void svg_curve(qt__sbuf *b, const qt_quantize_sweep *s, const axes *a) {
    qt__sb_printf(b, "<polyline class=\"sweep\" data-points=\"%d\" fill=\"none\" stroke=\"#2166ac\" stroke-width=\"2\" "
                     "points=\"", s->n_points);
    for (int32_t i = 0; i < s->n_points; i++)
        qt__sb_printf(b, "%s%.2f,%.2f", i ? " " : "", px_x(a, (double)s->points[i].file_bytes), px_y(a, s->points[i].cost));
    qt__sb_puts(b, "\"/>\n");
    for (int32_t i = 0; i < s->n_points; i++)
        qt__sb_printf(b, "<circle class=\"sweep-point\" cx=\"%.2f\" cy=\"%.2f\" r=\"2\" fill=\"#2166ac\" data-bytes=\"%llu\" "
                         "data-cost=\"%.17g\"/>\n", px_x(a, (double)s->points[i].file_bytes), px_y(a, s->points[i].cost),
                      (unsigned long long)s->points[i].file_bytes, s->points[i].cost);
}

static void svg_presets(qt__sbuf *b, const qt_quantize_sweep *s, const axes *a) {
    for (int32_t i = 0; i < s->n_presets; i++) {
        const qt_quantize_preset_point *p = &s->presets[i];
        if (!p->scored) continue;
        const double x = px_x(a, (double)p->file_bytes), y = px_y(a, p->cost);
        qt__sb_printf(b, "<rect class=\"preset\" x=\"%.2f\" y=\"%.2f\" width=\"8\" height=\"8\" fill=\"%s\" stroke=\"#b35806\" "
                         "data-name=\"%s\" data-imatrix=\"%s\" data-bytes=\"%llu\" data-cost=\"%.17g\"><title>%s%s: %llu bytes, "
                         "cost %.6g</title></rect>\n", x - 4, y - 4, p->imatrix ? "#b35806" : "white", p->name,
                      p->imatrix ? "yes" : "no", (unsigned long long)p->file_bytes, p->cost, p->name,
                      p->imatrix ? " (imatrix)" : "", (unsigned long long)p->file_bytes, p->cost);
        qt__sb_printf(b, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"10\" fill=\"#b35806\">%s%s</text>\n", x + 6,
                      y + (p->imatrix ? -6 : 12), p->name, p->imatrix ? "+im" : "");
    }
    const double x = px_x(a, (double)s->chosen.file_bytes), y = px_y(a, s->chosen.cost);
    qt__sb_printf(b, "<circle class=\"chosen\" cx=\"%.2f\" cy=\"%.2f\" r=\"6\" fill=\"#d6604d\" stroke=\"black\" "
                     "data-bytes=\"%llu\" data-cost=\"%.17g\"><title>chosen: %llu bytes, cost %.6g</title></circle>\n",
                  x, y, (unsigned long long)s->chosen.file_bytes, s->chosen.cost, (unsigned long long)s->chosen.file_bytes,
                  s->chosen.cost);
    qt__sb_printf(b, "<g font-size=\"11\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#2166ac\" stroke-width=\"2\"/>"
                     "<text x=\"%d\" y=\"%d\">optimal mix at each budget</text>"
                     "<rect x=\"%d\" y=\"%d\" width=\"8\" height=\"8\" fill=\"#b35806\"/><text x=\"%d\" y=\"%d\">preset with "
                     "the imatrix</text><rect x=\"%d\" y=\"%d\" width=\"8\" height=\"8\" fill=\"white\" stroke=\"#b35806\"/>"
                     "<text x=\"%d\" y=\"%d\">preset without</text><circle cx=\"%d\" cy=\"%d\" r=\"5\" fill=\"#d6604d\" "
                     "stroke=\"black\"/><text x=\"%d\" y=\"%d\">chosen</text></g>\n",
                  PR - 200, PT + 14, PR - 180, PT + 14, PR - 174, PT + 18, PR - 196, PT + 26, PR - 174, PT + 34, PR - 196,
                  PT + 42, PR - 174, PT + 50, PR - 192, PT + 62, PR - 174, PT + 66);
}

/* "blk.12.attn_q.weight" -> layer 12, role "attn_q"; else layer -1, role the name less ".weight". */
static int32_t split_name(const char *name, char *role, size_t n) {
    int layer = -1, used = 0;
    if (sscanf(name, "blk.%d.%n", &layer, &used) < 1 || !used) layer = -1, used = 0;
    snprintf(role, n, "%s", name + used);
    char *dot = strstr(role, ".weight");
    if (dot && !dot[7]) *dot = 0;
    return layer;
}

static void svg_heat(qt__sbuf *b, const qt_quantize_sweep *s, int top) {
    char roles[32][48], role[48], fill[16];
    int32_t n_roles = 0, n_layers = 0;
    for (int32_t i = 0; i < s->n_tensors; i++) {
        const int32_t l = split_name(s->names[i], role, sizeof role);
        if (l < 0) continue;
        if (l + 1 > n_layers) n_layers = l + 1;
        int32_t k = 0;
        while (k < n_roles && strcmp(roles[k], role)) k++;
        if (k == n_roles && n_roles < 32) snprintf(roles[n_roles++], sizeof roles[0], "%s", role);
    }
    const int left = PL, cw = n_roles ? (PR - PL) / n_roles : 0;
    qt__sb_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"13\">bits per weight given, per layer (rows) and tensor role "
                     "(columns)</text>\n", left, top - 24);
    for (int32_t k = 0; k < n_roles; k++)
        qt__sb_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%s</text>\n", left + k * cw + cw / 2,
                      top - 6, roles[k]);
    for (int32_t l = 0; l < n_layers; l++)
        qt__sb_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">blk.%d</text>\n", left - 6,
                      top + l * CELL_H + 12, l);
    int32_t other = 0;
    for (int32_t i = 0; i < s->n_tensors; i++) {
        const int32_t l = split_name(s->names[i], role, sizeof role);
        int32_t k = 0;
        while (l >= 0 && k < n_roles && strcmp(roles[k], role)) k++;
        if (l >= 0 && k == n_roles) continue; /* beyond 32 roles: not drawn */
        const int x = l >= 0 ? left + k * cw : left + other * 160, y = l >= 0 ? top + l * CELL_H : top + n_layers * CELL_H + 8;
        const int w = l >= 0 ? cw : 150;
        if (l < 0) other++;
        heat_colour(s->bpw[i], fill, sizeof fill);
        qt__sb_printf(b, "<rect class=\"heat\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" data-tensor=\"", x, y,
                      w - 1, CELL_H - 1, fill);
        qt__sb_html(b, s->names[i]);
        qt__sb_printf(b, "\" data-bpw=\"%.4f\"><title>", s->bpw[i]);
        qt__sb_html(b, s->names[i]);
        qt__sb_printf(b, ": %s, %.3f bits per weight</title></rect>\n", qt_type_get(s->types[i])->name, s->bpw[i]);
        qt__sb_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"middle\">%s%s%s %.2f</text>\n", x + w / 2,
                      y + 11, l < 0 ? role : "", l < 0 ? " " : "", qt_type_get(s->types[i])->name, s->bpw[i]);
    }
}

qt_status qt_quantize_sweep_svg(const qt_quantize_sweep *s, const char *title, char **out) {
    *out = NULL;
    int32_t n_layers = 0, has_other = 0;
    char role[48];
    for (int32_t i = 0; i < s->n_tensors; i++) {
        const int32_t l = split_name(s->names[i], role, sizeof role);
        if (l + 1 > n_layers) n_layers = l + 1;
        has_other |= l < 0;
    }
    const int heat_top = PB + 90, height = heat_top + (n_layers + has_other) * CELL_H + 40;
    axes a;
    fit_axes(s, &a);
    qt__sbuf b = {0};
    qt__sb_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                      "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\" data-sensitivity=\"%s\" "
                      "data-chosen-bytes=\"%llu\" data-chosen-cost=\"%.17g\">\n", W, height, W, height, s->sensitivity,
                  (unsigned long long)s->chosen.file_bytes, s->chosen.cost);
    qt__sb_printf(&b, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n<text x=\"%d\" y=\"28\" font-size=\"15\">", W, height,
                  PL);
    qt__sb_html(&b, title ? title : "quanta quantize --target-size");
    qt__sb_printf(&b, "</text>\n<text x=\"%d\" y=\"46\" font-size=\"11\" fill=\"#555\">predicted cost (%s sensitivity) against "
                      "file size: the optimal mix at %d budgets, llama.cpp's presets scored with the same costs, the chosen "
                      "mix</text>\n", PL, s->sensitivity, s->n_points);
    svg_axes(&b, &a);
    svg_curve(&b, s, &a);
    svg_presets(&b, s, &a);
    svg_heat(&b, s, heat_top);
    qt__sb_puts(&b, "</svg>\n");
    return qt__sb_finish(&b, out, "sweep");
}
