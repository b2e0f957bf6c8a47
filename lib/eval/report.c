/* lib/eval/report.c — the terminal table and the JSON report (schema
 * "quanta.eval/1", documented field by field in docs/eval.md). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"

/* ---- terminal table ---------------------------------------------------------- */

static void fmt_size(char *buf, size_t cap, uint64_t bytes) {
    if (!bytes) snprintf(buf, cap, "?");
    else if (bytes >= (1ull << 30)) snprintf(buf, cap, "%.2f GiB", (double)bytes / (double)(1ull << 30));
    else if (bytes >= (1ull << 20)) snprintf(buf, cap, "%.2f MiB", (double)bytes / (double)(1ull << 20));
    else snprintf(buf, cap, "%.1f KiB", (double)bytes / 1024.0);
}

static void fmt_num(char *buf, size_t cap, const char *fmt, double v) {
    if (isfinite(v)) snprintf(buf, cap, fmt, v);
    else snprintf(buf, cap, "-");
}

static int label_width(const qt_eval_report *r) {
    int w = (int)strlen(qt__eval_basename(r->base.label));
    for (int32_t i = 0; i < r->n_candidates; i++) {
        int l = (int)strlen(qt__eval_basename(r->candidates[i].info.label));
        if (l > w) w = l;
    }
    return w < 8 ? 8 : w > 48 ? 48 : w;
}

static int kv_width(const qt_eval_report *r) {
    int w = r->base.kv ? (int)strlen(r->base.kv) : 1;
    for (int32_t i = 0; i < r->n_candidates; i++) {
        int l = r->candidates[i].info.kv ? (int)strlen(r->candidates[i].info.kv) : 1;
        if (l > w) w = l;
    }
    return w < 8 ? 8 : w > 40 ? 40 : w;
}

static bool any_bench(const qt_eval_report *r) {
    if (isfinite(r->base.decode_tps)) return true;
    for (int32_t i = 0; i < r->n_candidates; i++)
        if (isfinite(r->candidates[i].info.decode_tps)) return true;
    return false;
}

static void table_row_head(qt__sbuf *b, int w, int kw, const qt_eval_model_info *m, bool bench) {
    char size[32], bpw[32], tps[32];
    fmt_size(size, sizeof size, m->size_bytes);
    fmt_num(bpw, sizeof bpw, "%.2f", m->bpw);
    qt__sb_printf(b, "%-*.*s  %-*.*s %6s %10s", w, w, qt__eval_basename(m->label), kw, kw, m->kv ? m->kv : "?", bpw, size);
    if (bench) {
        fmt_num(tps, sizeof tps, "%.1f", m->decode_tps);
        qt__sb_printf(b, " %9s", tps);
    }
}

static void table_mc(qt__sbuf *b, const qt_eval_report *r, int w) {
    qt__sb_printf(b, "\nmultiple choice (%s, %d items; acc_norm = log-likelihood per byte, 95%% Wilson CI)\n",
                  r->mc_path ? r->mc_path : "?", r->base_mc ? r->base_mc->n_items : 0);
    qt__sb_printf(b, "%-*s  %8s  %17s  %8s  %s\n", w, "model", "acc_norm", "95% CI", "acc", "changed answers");
    if (r->base_mc)
        qt__sb_printf(b, "%-*.*s  %7.1f%%  [%5.1f%%, %5.1f%%]  %7.1f%%  (base)\n", w, w, qt__eval_basename(r->base.label),
                      100 * r->base_mc->acc, 100 * r->base_mc->acc_lo, 100 * r->base_mc->acc_hi, 100 * r->base_mc->acc_sum);
    for (int32_t i = 0; i < r->n_candidates; i++) {
        const qt_mc_result *m = r->candidates[i].mc;
        if (!m) continue;
        qt__sb_printf(b, "%-*.*s  %7.1f%%  [%5.1f%%, %5.1f%%]  %7.1f%%  %d\n", w, w,
                      qt__eval_basename(r->candidates[i].info.label), 100 * m->acc, 100 * m->acc_lo, 100 * m->acc_hi,
                      100 * m->acc_sum, r->base_mc ? (int)qt_mc_n_disagree(r->base_mc, m) : -1);
    }
}

static void table_needle_one(qt__sbuf *b, const char *label, const qt_needle_result *n) {
    qt__sb_printf(b, "%s: %d/%d retrieved\n", label, (int)n->n_success, (int)n->n_trials);
    /* rows: lengths; columns: depths (cells are length-major) */
    int32_t n_depths = 1;
    while (n_depths < n->n_cells && n->cells[n_depths].length == n->cells[0].length) n_depths++;
    qt__sb_printf(b, "  %-12s", "tokens\\depth");
    for (int32_t d = 0; d < n_depths; d++) qt__sb_printf(b, " %14.0f%%", 100 * n->cells[d].depth);
    qt__sb_puts(b, "\n");
    for (int32_t c = 0; c < n->n_cells; c += n_depths) {
        qt__sb_printf(b, "  %-12d", (int)n->cells[c].length);
        for (int32_t d = 0; d < n_depths && c + d < n->n_cells; d++) {
            const qt_needle_cell *x = &n->cells[c + d];
            qt__sb_printf(b, "  %d/%d lp %6.2f", (int)x->n_success, (int)x->n_trials, x->mean_key_logprob);
        }
        qt__sb_puts(b, "\n");
    }
}

static void table_needle(qt__sbuf *b, const qt_eval_report *r) {
    qt__sb_puts(b, "\nneedle in a haystack (success = greedy decoding writes the key; lp = mean log-prob of the key, nats)\n");
    if (r->base_needle) table_needle_one(b, qt__eval_basename(r->base.label), r->base_needle);
    for (int32_t i = 0; i < r->n_candidates; i++)
        if (r->candidates[i].needle) table_needle_one(b, qt__eval_basename(r->candidates[i].info.label), r->candidates[i].needle);
}

qt_status qt_eval_report_table(const qt_eval_report *r, char **out) {
    qt__sbuf b = {0};
    int w = label_width(r), kw = kv_width(r);
    bool bench = any_bench(r);
    const qt_eval_summary *s0 = r->n_candidates ? &r->candidates[0].summary : NULL;
    qt__sb_printf(&b, "%lld tokens scored in %d chunks of %d from %s\n\n", s0 ? (long long)s0->n_tokens : 0LL,
                  (int)r->n_chunks, (int)r->n_ctx, r->text_path ? r->text_path : "?");
    qt__sb_printf(&b, "%-*s  %-*s %6s %10s", w, "model", kw, "kv cache", "bpw", "size");
    if (bench) qt__sb_printf(&b, " %9s", "decode/s");
    qt__sb_printf(&b, " %18s %8s %18s %9s %9s %9s %7s %7s  %s\n", "ppl", "d-ppl%", "95% CI", "KLD mean", "KLD p99",
                  "KLD max", "top-1", "p-half", "verdict");
    table_row_head(&b, w, kw, &r->base, bench);
    if (s0) qt__sb_printf(&b, " %9.4f +- %6.4f %8s\n", s0->base_ppl, s0->base_ppl_stderr, "base");
    else qt__sb_puts(&b, "\n");
    for (int32_t i = 0; i < r->n_candidates; i++) {
        const qt_eval_candidate *c = &r->candidates[i];
        const qt_eval_summary *s = &c->summary;
        char ci[40];
        snprintf(ci, sizeof ci, "[%+.2f, %+.2f]", s->ppl_delta_pct_lo, s->ppl_delta_pct_hi);
        table_row_head(&b, w, kw, &c->info, bench);
        qt__sb_printf(&b, " %9.4f +- %6.4f %+8.2f %18s %9.5f %9.5f %9.5f %6.2f%% %6.2f%%  %s\n", s->ppl, s->ppl_stderr,
                      s->ppl_delta_pct, ci, s->kld_mean, s->kld_p99, s->kld_max, 100 * s->top1, 100 * s->p_halved,
                      qt_verdict_name(c->verdict.verdict));
    }
    for (int32_t i = 0; i < r->n_candidates; i++) {
        const qt_eval_candidate *c = &r->candidates[i];
        qt__sb_printf(&b, "\n%s: %s\n", qt__eval_basename(c->info.label), qt_verdict_name(c->verdict.verdict));
        for (int32_t k = 0; k < c->verdict.n_reasons; k++)
            qt__sb_printf(&b, "  %-12s %s\n", c->verdict.level[k] == QT_VERDICT_PASS ? "ok" : qt_verdict_name(c->verdict.level[k]),
                          c->verdict.reasons[k]);
        for (int32_t k = 0; k < c->n_warnings; k++) qt__sb_printf(&b, "  %-12s %s\n", "warning", c->warnings[k]);
    }
    if (r->base_mc) table_mc(&b, r, w);
    if (r->base_needle) table_needle(&b, r);
    if (r->base_tasks) qt__tasks_table(&b, r, w);
    return qt__sb_finish(&b, out, "eval");
}

/* ---- JSON ------------------------------------------------------------------------ */

/* Non-finite numbers (unknown, not measured) are null: JSON has no NaN. */
static json_t *jnum(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *jpair(double a, double b) {
    json_t *p = json_array();
    json_array_append_new(p, jnum(a));
    json_array_append_new(p, jnum(b));
    return p;
}

static json_t *jstr(const char *s) { return s ? json_string(s) : json_null(); }

static void model_fields(json_t *o, const qt_eval_model_info *m) {
    json_object_set_new(o, "model", jstr(m->label));
    json_object_set_new(o, "path", jstr(m->path));
    json_object_set_new(o, "kv", jstr(m->kv));
    json_object_set_new(o, "size_bytes", m->size_bytes ? json_integer((json_int_t)m->size_bytes) : json_null());
    json_object_set_new(o, "bpw", jnum(m->bpw));
    if (isfinite(m->decode_tps) || isfinite(m->prefill_tps)) {
        json_t *bench = json_object();
        json_object_set_new(bench, "decode_tps", jnum(m->decode_tps));
        json_object_set_new(bench, "prefill_tps", jnum(m->prefill_tps));
        json_object_set_new(o, "bench", bench);
    } else {
        json_object_set_new(o, "bench", json_null());
    }
}

static json_t *mc_json(const qt_mc_result *m, const qt_mc_result *base) {
    if (!m) return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "n_items", json_integer(m->n_items));
    json_object_set_new(o, "acc_norm", jnum(m->acc));
    json_object_set_new(o, "acc_norm_ci95", jpair(m->acc_lo, m->acc_hi));
    json_object_set_new(o, "acc", jnum(m->acc_sum));
    json_object_set_new(o, "n_correct", json_integer(m->n_correct));
    if (base) json_object_set_new(o, "changed_answers", json_integer(qt_mc_n_disagree(base, m)));
    return o;
}

static json_t *needle_json(const qt_needle_result *n) {
    if (!n) return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "n_trials", json_integer(n->n_trials));
    json_object_set_new(o, "n_success", json_integer(n->n_success));
    json_object_set_new(o, "success_rate", jnum(n->n_trials ? (double)n->n_success / n->n_trials : NAN));
    json_t *cells = json_array();
    for (int32_t i = 0; i < n->n_cells; i++) {
        const qt_needle_cell *c = &n->cells[i];
        json_t *x = json_object();
        json_object_set_new(x, "length", json_integer(c->length));
        json_object_set_new(x, "depth", jnum(c->depth));
        json_object_set_new(x, "n_trials", json_integer(c->n_trials));
        json_object_set_new(x, "n_success", json_integer(c->n_success));
        json_object_set_new(x, "mean_tokens", jnum(c->mean_tokens));
        json_object_set_new(x, "mean_key_logprob", jnum(c->mean_key_logprob));
        json_array_append_new(cells, x);
    }
    json_object_set_new(o, "cells", cells);
    return o;
}

static json_t *heldout_json(const qt_heldout_result *h) {
    if (!h) return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "same_file", json_boolean(h->same_file));
    json_object_set_new(o, "overlap_bytes", json_integer((json_int_t)h->overlap_bytes));
    json_object_set_new(o, "shingles_sampled", json_integer(h->n_sampled));
    json_object_set_new(o, "shingles_matched", json_integer(h->n_matched));
    json_object_set_new(o, "overlap", jnum(h->overlap));
    json_object_set_new(o, "overlaps", json_boolean(h->overlaps));
    return o;
}

static json_t *candidate_json(const qt_eval_report *r, const qt_eval_candidate *c) {
    const qt_eval_summary *s = &c->summary;
    json_t *o = json_object();
    model_fields(o, &c->info);
    json_object_set_new(o, "n_tokens", json_integer(s->n_tokens));
    json_object_set_new(o, "ppl", jnum(s->ppl));
    json_object_set_new(o, "ppl_stderr", jnum(s->ppl_stderr));
    json_object_set_new(o, "ppl_delta_pct", jnum(s->ppl_delta_pct));
    json_object_set_new(o, "ppl_delta_pct_ci95", jpair(s->ppl_delta_pct_lo, s->ppl_delta_pct_hi));
    json_object_set_new(o, "ln_ppl_ratio", jnum(s->ln_ratio));
    json_object_set_new(o, "ln_ppl_ratio_stderr", jnum(s->ln_ratio_stderr));
    json_object_set_new(o, "kld_mean", jnum(s->kld_mean));
    json_object_set_new(o, "kld_stderr", jnum(s->kld_stderr));
    json_object_set_new(o, "kld_median", jnum(s->kld_median));
    json_object_set_new(o, "kld_p99", jnum(s->kld_p99));
    json_object_set_new(o, "kld_max", jnum(s->kld_max));
    json_object_set_new(o, "top1", jnum(s->top1));
    json_object_set_new(o, "top1_ci95", jpair(s->top1_lo, s->top1_hi));
    json_object_set_new(o, "p_halved", jnum(s->p_halved));
    json_object_set_new(o, "verdict", json_string(qt_verdict_name(c->verdict.verdict)));
    json_t *reasons = json_array(), *levels = json_array();
    for (int32_t k = 0; k < c->verdict.n_reasons; k++) {
        json_array_append_new(reasons, json_string(c->verdict.reasons[k]));
        json_array_append_new(levels, json_string(qt_verdict_name(c->verdict.level[k])));
    }
    json_object_set_new(o, "reasons", reasons);
    json_object_set_new(o, "reason_levels", levels);
    json_t *warnings = json_array();
    for (int32_t k = 0; k < c->n_warnings; k++) json_array_append_new(warnings, json_string(c->warnings[k]));
    json_object_set_new(o, "warnings", warnings);
    json_object_set_new(o, "heldout", heldout_json(c->heldout));
    json_object_set_new(o, "mc", mc_json(c->mc, r->base_mc));
    json_object_set_new(o, "needle", needle_json(c->needle));
    json_object_set_new(o, "tasks", qt__tasks_json(r, c->tasks));
    return o;
}

static json_t *report_json(const qt_eval_report *r) {
    json_t *root = json_object();
    json_object_set_new(root, "schema", json_string("quanta.eval/1"));
    json_object_set_new(root, "quanta_version", json_string(qt_version()));
    json_t *text = json_object();
    json_object_set_new(text, "path", jstr(r->text_path));
    json_object_set_new(text, "n_ctx", json_integer(r->n_ctx));
    json_object_set_new(text, "n_chunks", json_integer(r->n_chunks));
    json_object_set_new(text, "n_tokens_scored", json_integer(r->n_candidates ? r->candidates[0].summary.n_tokens : 0));
    json_object_set_new(root, "text", text);
    json_t *th = json_object();
    json_object_set_new(th, "max_ppl_delta_pct", jnum(r->thresholds.max_ppl_delta_pct));
    json_object_set_new(th, "max_kld", jnum(r->thresholds.max_kld));
    json_object_set_new(th, "min_top1", jnum(r->thresholds.min_top1));
    json_object_set_new(th, "max_pass_drop_pct", jnum(r->thresholds.max_pass_drop_pct));
    json_object_set_new(th, "strict", json_boolean(r->strict));
    json_object_set_new(root, "thresholds", th);

    json_t *base = json_object();
    model_fields(base, &r->base);
    const qt_eval_summary *s0 = r->n_candidates ? &r->candidates[0].summary : NULL;
    json_object_set_new(base, "ppl", s0 ? jnum(s0->base_ppl) : json_null());
    json_object_set_new(base, "ppl_stderr", s0 ? jnum(s0->base_ppl_stderr) : json_null());
    json_object_set_new(base, "mc", mc_json(r->base_mc, NULL));
    json_object_set_new(base, "needle", needle_json(r->base_needle));
    json_object_set_new(base, "tasks", qt__tasks_json(r, r->base_tasks));
    json_object_set_new(root, "base", base);

    json_t *cands = json_array();
    int exit_status = 0;
    for (int32_t i = 0; i < r->n_candidates; i++) {
        json_array_append_new(cands, candidate_json(r, &r->candidates[i]));
        if (r->candidates[i].verdict.verdict != QT_VERDICT_PASS) exit_status = 1;
    }
    json_object_set_new(root, "candidates", cands);
    json_object_set_new(root, "mc_path", jstr(r->mc_path));
    json_object_set_new(root, "tasks_path", jstr(r->tasks_path));
    json_object_set_new(root, "exit_status", json_integer(exit_status));
    return root;
}

qt_status qt_eval_report_json(const qt_eval_report *r, char **out) {
    *out = NULL;
    json_t *root = report_json(r);
    if (!root) return qt_error(QT_ERR_NOMEM, "eval report: out of memory");
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(root);
    if (!s) return qt_error(QT_ERR_NOMEM, "eval report: out of memory");
    /* jansson allocates with malloc by default; copy so callers may always free() */
    size_t n = strlen(s);
    *out = malloc(n + 2);
    if (*out) { memcpy(*out, s, n); (*out)[n] = '\n'; (*out)[n + 1] = '\0'; }
    free(s);
    return *out ? QT_OK : qt_error(QT_ERR_NOMEM, "eval report: out of memory");
}

static qt_status write_text(const char *path, const char *text) {
    qt_afile *f;
    qt_status s = qt_afile_open(path, &f);
    if (s) return s;
    s = qt_afile_write(f, text, strlen(text));
    if (s) { qt_afile_abort(f); return s; }
    return qt_afile_commit(f);
}

qt_status qt_eval_report_write_json(const qt_eval_report *r, const char *path) {
    char *text;
    qt_status s = qt_eval_report_json(r, &text);
    if (s) return s;
    s = write_text(path, text);
    free(text);
    return s;
}

qt_status qt_eval_report_write_html(const qt_eval_report *r, const char *path) {
    char *text;
    qt_status s = qt_eval_report_html(r, &text);
    if (s) return s;
    s = write_text(path, text);
    free(text);
    return s;
}

/* The last path component ("a/b/c.gguf" -> "c.gguf"; "model@kv=f32" kept whole). */
const char *qt__eval_basename(const char *path) {
    if (!path) return "";
    const char *at = strchr(path, '@');
    const char *slash = NULL;
    for (const char *p = path; *p && (!at || p < at); p++)
        if (*p == '/') slash = p;
    return slash ? slash + 1 : path;
}
