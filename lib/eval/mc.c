/* lib/eval/mc.c — multiple choice by log-likelihood (the hellaswag shape).
 *
 * Each item is a context and n endings; a model picks the ending whose
 * tokens it finds most likely after the context. Two rules, as
 * lm-evaluation-harness reports them (Gao et al., "A framework for few-shot
 * language model evaluation"): `acc` picks the largest summed log-likelihood,
 * `acc_norm` the largest log-likelihood per byte of the ending (which does
 * not favour short endings; it is the headline number). Accuracy carries a
 * Wilson 95 % interval.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"

static void item_free(qt_mc_item *it) {
    free(it->context);
    for (int32_t j = 0; j < it->n_endings; j++) free(it->endings[j]);
    free(it->endings);
}

void qt_mc_free(qt_mc_set *s) {
    if (!s) return;
    for (int32_t i = 0; i < s->n_items; i++) item_free(&s->items[i]);
    free(s->items);
    free(s);
}

static char *dup_str(const char *s) {
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

/* The label: an integer, or a string of decimal digits (hellaswag's own files
 * store "2"). Returns QT_OK with *out set, or an error naming the line. */
static qt_status parse_label(json_t *lab, const char *name, int64_t line, int32_t n_endings, int32_t *out) {
    long long v;
    if (json_is_integer(lab)) {
        v = json_integer_value(lab);
    } else if (json_is_string(lab)) {
        const char *s = json_string_value(lab);
        char *end;
        if (!*s) return qt_error(QT_ERR_FORMAT, "%s:%lld: field 'label': empty string", name, (long long)line);
        v = strtoll(s, &end, 10);
        if (*end) return qt_error(QT_ERR_FORMAT, "%s:%lld: field 'label': \"%s\" is not an integer", name, (long long)line, s);
    } else {
        return qt_error(QT_ERR_FORMAT, "%s:%lld: field 'label': must be an integer index of an ending", name, (long long)line);
    }
    if (v < 0 || v >= n_endings)
        return qt_error(QT_ERR_FORMAT, "%s:%lld: field 'label': %lld is out of range for %d endings (0..%d)", name,
                        (long long)line, v, (int)n_endings, (int)n_endings - 1);
    *out = (int32_t)v;
    return QT_OK;
}

qt_status qt__mc_parse_item(json_t *obj, const char *name, int64_t line, qt_mc_item *it) {
    memset(it, 0, sizeof *it);
    it->line = line;
    if (!json_is_object(obj))
        return qt_error(QT_ERR_FORMAT, "%s:%lld: expected a JSON object per line", name, (long long)line);
    json_t *ctx = json_object_get(obj, "context");
    if (!ctx) ctx = json_object_get(obj, "ctx");
    if (!ctx) return qt_error(QT_ERR_FORMAT, "%s:%lld: field 'context': missing (also accepted: 'ctx')", name, (long long)line);
    if (!json_is_string(ctx)) return qt_error(QT_ERR_FORMAT, "%s:%lld: field 'context': must be a string", name, (long long)line);
    json_t *ends = json_object_get(obj, "endings");
    if (!ends) return qt_error(QT_ERR_FORMAT, "%s:%lld: field 'endings': missing", name, (long long)line);
    if (!json_is_array(ends)) return qt_error(QT_ERR_FORMAT, "%s:%lld: field 'endings': must be an array of strings", name, (long long)line);
    size_t n = json_array_size(ends);
    if (n < 2) return qt_error(QT_ERR_FORMAT, "%s:%lld: field 'endings': %zu ending(s), need at least 2", name, (long long)line, n);
    if (n > 1000) return qt_error(QT_ERR_FORMAT, "%s:%lld: field 'endings': %zu endings, at most 1000", name, (long long)line, n);
    for (size_t j = 0; j < n; j++) {
        json_t *e = json_array_get(ends, j);
        if (!json_is_string(e))
            return qt_error(QT_ERR_FORMAT, "%s:%lld: field 'endings[%zu]': must be a string", name, (long long)line, j);
        if (json_string_length(e) == 0)
            return qt_error(QT_ERR_FORMAT, "%s:%lld: field 'endings[%zu]': empty ending", name, (long long)line, j);
    }
    json_t *lab = json_object_get(obj, "label");
    if (!lab) return qt_error(QT_ERR_FORMAT, "%s:%lld: field 'label': missing", name, (long long)line);
    qt_status s = parse_label(lab, name, line, (int32_t)n, &it->label);
    if (s) return s;

    it->context = dup_str(json_string_value(ctx));
    it->endings = calloc(n, sizeof(char *));
    if (!it->context || !it->endings) return qt_error(QT_ERR_NOMEM, "%s: out of memory", name);
    it->n_endings = (int32_t)n;
    for (size_t j = 0; j < n; j++)
        if (!(it->endings[j] = dup_str(json_string_value(json_array_get(ends, j)))))
            return qt_error(QT_ERR_NOMEM, "%s: out of memory", name);
    return QT_OK;
}

static bool blank(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r') return false;
    return true;
}

qt_status qt_mc_parse(const char *text, size_t len, const char *name, qt_mc_set **out) {
    *out = NULL;
    qt_mc_set *set = calloc(1, sizeof *set);
    if (!set) return qt_error(QT_ERR_NOMEM, "%s: out of memory", name);
    int32_t cap = 0;
    qt_status s = QT_OK;
    int64_t line = 0;
    for (size_t pos = 0; pos < len && s == QT_OK;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        line++;
        const char *p = text + pos;
        size_t n = end - pos;
        pos = end + 1;
        if (blank(p, n)) continue;
        json_error_t jerr;
        json_t *obj = json_loadb(p, n, JSON_REJECT_DUPLICATES, &jerr);
        if (!obj) {
            s = qt_error(QT_ERR_FORMAT, "%s:%lld: column %d: invalid JSON: %s", name, (long long)line, jerr.column, jerr.text);
            break;
        }
        if (set->n_items == cap) {
            int32_t nc = cap ? cap * 2 : 64;
            qt_mc_item *ni = realloc(set->items, sizeof *ni * (size_t)nc);
            if (!ni) { json_decref(obj); s = qt_error(QT_ERR_NOMEM, "%s: out of memory", name); break; }
            set->items = ni;
            cap = nc;
        }
        s = qt__mc_parse_item(obj, name, line, &set->items[set->n_items]);
        set->n_items++; /* counted even on failure so qt_mc_free releases what was parsed */
        json_decref(obj);
    }
    if (s == QT_OK && set->n_items == 0) s = qt_error(QT_ERR_FORMAT, "%s: no items (expected one JSON object per line)", name);
    if (s) { qt_mc_free(set); return s; }
    *out = set;
    return QT_OK;
}

qt_status qt_mc_load(const char *path, qt_mc_set **out) {
    char *text;
    size_t size;
    *out = NULL;
    qt_status s = qt_read_file(path, &text, &size);
    if (s) return s;
    s = qt_mc_parse(text, size, path, out);
    free(text);
    return s;
}

void qt_mc_result_free(qt_mc_result *r) {
    if (!r) return;
    free(r->choice);
    r->choice = NULL;
}

qt_status qt__mc_pick(qt_eval_score_fn score, void *user, const char *context, const char *const *endings, int32_t n,
                      int32_t *best_norm, int32_t *best_sum) {
    double v_norm = -INFINITY, v_sum = -INFINITY;
    *best_norm = *best_sum = 0;
    for (int32_t j = 0; j < n; j++) {
        /* the ending follows the context after one space, as hellaswag is scored */
        size_t el = strlen(endings[j]);
        char *cont = malloc(el + 2);
        if (!cont) return qt_error(QT_ERR_NOMEM, "multiple choice: out of memory");
        cont[0] = ' ';
        memcpy(cont + 1, endings[j], el + 1);
        qt_eval_score sc;
        qt_status s = score(user, context, cont, &sc);
        free(cont);
        if (s) return s;
        double per_byte = sc.logprob / (double)el;
        /* strict '>' keeps the lowest index on ties, deterministically */
        if (per_byte > v_norm) { v_norm = per_byte; *best_norm = j; }
        if (sc.logprob > v_sum) { v_sum = sc.logprob; *best_sum = j; }
    }
    return QT_OK;
}

qt_status qt_mc_run(const qt_mc_set *set, qt_eval_score_fn score, void *user, const qt_progress *progress,
                    qt_mc_result *out) {
    memset(out, 0, sizeof *out);
    if (set->n_items <= 0) return qt_error(QT_ERR_ARG, "multiple choice: no items");
    out->choice = calloc((size_t)set->n_items, sizeof(int32_t));
    if (!out->choice) return qt_error(QT_ERR_NOMEM, "multiple choice: out of memory");
    out->n_items = set->n_items;
    for (int32_t i = 0; i < set->n_items; i++) {
        if (qt_cancelled()) { qt_mc_result_free(out); return qt_error(QT_ERR_INTERRUPTED, "multiple choice: interrupted"); }
        const qt_mc_item *it = &set->items[i];
        int32_t best_norm, best_sum;
        qt_status s = qt__mc_pick(score, user, it->context, (const char *const *)it->endings, it->n_endings, &best_norm, &best_sum);
        if (s) { qt_mc_result_free(out); return s; }
        out->choice[i] = best_norm;
        out->n_correct += best_norm == it->label;
        out->n_correct_sum += best_sum == it->label;
        qt_progress_report(progress, "multiple choice", i + 1, set->n_items);
    }
    out->acc = (double)out->n_correct / (double)out->n_items;
    out->acc_sum = (double)out->n_correct_sum / (double)out->n_items;
    qt_eval_wilson(out->n_correct, out->n_items, QT_EVAL_Z95, &out->acc_lo, &out->acc_hi);
    return QT_OK;
}

int32_t qt_mc_n_disagree(const qt_mc_result *a, const qt_mc_result *b) {
    int32_t n = a->n_items < b->n_items ? a->n_items : b->n_items, d = 0;
    for (int32_t i = 0; i < n; i++) d += a->choice[i] != b->choice[i];
    return d;
}
