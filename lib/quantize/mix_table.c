/* lib/quantize/mix_table.c — the measured sensitivity table (lib/quantize/mix_table.h):
 * groups, the split of a group's cost over its members, Spearman's rank
 * correlation of proxy and measured costs (Spearman 1904), and the cache
 * file's text form. Pure functions on plain data. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mix_table.h"

/* Group of each decoder linear (the seam's base names). */
static const struct { const char *linear, *group; } linear_group[] = {
    {"attn_q", "attn"},   {"attn_k", "attn"}, {"attn_v", "attn"},    {"attn_output", "attn"},
    {"ffn_gate", "ffn"},  {"ffn_up", "ffn"},  {"ffn_down", "ffn"},
};

bool qt__mix_group_of(const char *tensor, bool per_group, char *name, size_t cap) {
    if (!strcmp(tensor, "output.weight") || !strcmp(tensor, "token_embd.weight")) {
        snprintf(name, cap, "%.*s", (int)(strchr(tensor, '.') - tensor), tensor);
        return true;
    }
    int l = -1, end = 0;
    if (sscanf(tensor, "blk.%d.%n", &l, &end) != 1 || end <= 0 || l < 0) return false;
    const char *lin = tensor + end, *dot = strrchr(lin, '.');
    if (!dot || strcmp(dot, ".weight")) return false;
    for (size_t k = 0; k < sizeof linear_group / sizeof linear_group[0]; k++)
        if (strlen(linear_group[k].linear) == (size_t)(dot - lin) && !strncmp(lin, linear_group[k].linear, (size_t)(dot - lin))) {
            if (per_group) snprintf(name, cap, "blk.%d.%s", l, linear_group[k].group);
            else snprintf(name, cap, "%s", tensor);
            return true;
        }
    return false;
}

/* ---- Spearman ---------------------------------------------------------------------------------- */

typedef struct ranked { double v; int32_t i; } ranked;

static int cmp_ranked(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    return x->v < y->v ? -1 : x->v > y->v ? 1 : (x->i > y->i) - (x->i < y->i);
}

/* Ranks 1..n, ties the mean of their positions. */
static void ranks(const double *v, int32_t n, ranked *tmp, double *r) {
    for (int32_t i = 0; i < n; i++) tmp[i] = (ranked){v[i], i};
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_ranked);
    for (int32_t a = 0; a < n;) {
        int32_t b = a;
        while (b + 1 < n && tmp[b + 1].v == tmp[a].v) b++;
        for (int32_t k = a; k <= b; k++) r[tmp[k].i] = 0.5 * (double)(a + b) + 1.0;
        a = b + 1;
    }
}

double qt__mix_spearman(const double *x, const double *y, int32_t n) {
    if (n < 2) return NAN;
    ranked *tmp = malloc((size_t)n * sizeof *tmp);
    double *rx = malloc((size_t)n * sizeof *rx), *ry = malloc((size_t)n * sizeof *ry);
    double rho = NAN;
    if (tmp && rx && ry) {
        ranks(x, n, tmp, rx);
        ranks(y, n, tmp, ry);
        const double mean = 0.5 * (double)(n + 1);
        double sxy = 0, sxx = 0, syy = 0;
        for (int32_t i = 0; i < n; i++) {
            sxy += (rx[i] - mean) * (ry[i] - mean);
            sxx += (rx[i] - mean) * (rx[i] - mean);
            syy += (ry[i] - mean) * (ry[i] - mean);
        }
        if (sxx > 0 && syy > 0) rho = sxy / sqrt(sxx * syy);
    }
    free(tmp);
    free(rx);
    free(ry);
    return rho;
}

/* ---- the split -------------------------------------------------------------------------------- */

static int32_t type_index(const qt__mix_group *g, qt_type ty) {
    for (int32_t k = 0; k < g->n_types; k++)
        if (g->types[k] == ty) return k;
    return -1;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void qt__mix_table_apply(const qt__mix_table *t, int32_t n, const int32_t *grp, const int32_t *n_opt, const qt_type *types,
                         const double *proxy, int32_t stride, double *cost, double *rho, int32_t *n_pairs) {
    const int32_t cells = t->n * QT__MIX_MAX_TYPES;
    double *sum = calloc((size_t)cells + 1, sizeof *sum), *px = malloc(((size_t)cells + 1) * sizeof *px),
           *my = malloc(((size_t)cells + 1) * sizeof *my);
    int32_t *cnt = calloc((size_t)cells + 1, sizeof *cnt);
    *rho = NAN;
    *n_pairs = 0;
    for (int32_t i = 0; i < n * stride; i++) cost[i] = proxy[i];
    if (!sum || !px || !my || !cnt) goto done;
    for (int32_t i = 0; i < n; i++) {
        if (grp[i] < 0 || grp[i] >= t->n) continue;
        for (int32_t k = 0; k < n_opt[i]; k++) {
            const int32_t j = type_index(&t->g[grp[i]], types[i * stride + k]);
            if (j >= 0) sum[grp[i] * QT__MIX_MAX_TYPES + j] += proxy[i * stride + k], cnt[grp[i] * QT__MIX_MAX_TYPES + j]++;
        }
    }
    int32_t np = 0, nr = 0;
    for (int32_t g = 0; g < t->n; g++)
        for (int32_t j = 0; j < t->g[g].n_types; j++)
            if (cnt[g * QT__MIX_MAX_TYPES + j]) px[np] = sum[g * QT__MIX_MAX_TYPES + j], my[np++] = t->g[g].cost[j];
    *rho = qt__mix_spearman(px, my, np);
    *n_pairs = np;
    /* the median measured / proxy ratio, for what no group measured */
    for (int32_t k = 0; k < np; k++)
        if (px[k] > 0 && my[k] > 0) px[nr++] = my[k] / px[k];
    qsort(px, (size_t)nr, sizeof *px, cmp_double);
    const double scale = nr ? px[nr / 2] : 1.0;
    for (int32_t i = 0; i < n; i++)
        for (int32_t k = 0; k < n_opt[i]; k++) {
            const int32_t j = grp[i] >= 0 && grp[i] < t->n ? type_index(&t->g[grp[i]], types[i * stride + k]) : -1;
            if (j < 0) { cost[i * stride + k] = proxy[i * stride + k] * scale; continue; }
            const int32_t cell = grp[i] * QT__MIX_MAX_TYPES + j;
            const double share = sum[cell] > 0 ? proxy[i * stride + k] / sum[cell] : 1.0 / (double)cnt[cell];
            cost[i * stride + k] = t->g[grp[i]].cost[j] * share;
        }
done:
    free(sum);
    free(px);
    free(my);
    free(cnt);
}

/* ---- text form -------------------------------------------------------------------------------- */

typedef struct sbuf { char *p; size_t n, cap; bool oom; } sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        const int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) { b->oom = true; return; }
        if (b->p && b->n + (size_t)k < b->cap) { b->n += (size_t)k; return; }
        const size_t cap = (b->cap + (size_t)k + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p) { b->oom = true; return; }
        b->p = p;
        b->cap = cap;
    }
}

qt_status qt__mix_table_format(const qt__mix_table *t, char **out) {
    sbuf b = {0};
    sb_printf(&b, "%s\nmodel %s\ncalibration %s %d %d\nimatrix %s\nnumerics %s\ncandidates %s\ngroups %d\n",
              QT__MIX_CACHE_MAGIC, t->model, t->calib, t->n_seq, t->n_tok, t->imatrix, t->numerics, t->candidates, t->n);
    for (int32_t g = 0; g < t->n; g++) {
        sb_printf(&b, "%s %d", t->g[g].name, t->g[g].n_types);
        for (int32_t k = 0; k < t->g[g].n_types; k++)
            sb_printf(&b, " %s=%.17g", qt_type_get(t->g[g].types[k])->name, t->g[g].cost[k]);
        sb_printf(&b, "\n");
    }
    sb_printf(&b, "end\n");
    if (b.oom) { free(b.p); return qt_error(QT_ERR_NOMEM, "out of memory"); }
    *out = b.p;
    return QT_OK;
}

void qt__mix_table_free(qt__mix_table *t) {
    free(t->g);
    memset(t, 0, sizeof *t);
}

typedef struct lines { const char *p, *end; int line; } lines;

/* The next line (without its '\n') into buf; false at the end or when it does not fit. */
static bool next_line(lines *l, char *buf, size_t cap, bool *too_long) {
    *too_long = false;
    if (l->p >= l->end) return false;
    const char *nl = memchr(l->p, '\n', (size_t)(l->end - l->p));
    const size_t len = (size_t)((nl ? nl : l->end) - l->p);
    l->line++;
    if (len >= cap || memchr(l->p, '\0', len)) { *too_long = true; return false; }
    memcpy(buf, l->p, len);
    buf[len] = '\0';
    l->p = nl ? nl + 1 : l->end;
    return true;
}

static bool is_hex64(const char *s) {
    if (strlen(s) != 64) return false;
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return true;
}

/* One word (no spaces) after "key " into dst (cap bytes). */
static bool key_word(const char *line, const char *key, char *dst, size_t cap) {
    const size_t k = strlen(key);
    if (strncmp(line, key, k) || line[k] != ' ' || !line[k + 1] || strchr(line + k + 1, ' ')) return false;
    if (strlen(line + k + 1) >= cap) return false;
    strcpy(dst, line + k + 1);
    return true;
}

static qt_status group_line(char *s, qt__mix_group *g, const char *what, int line) {
    char *save = NULL, *tok = strtok_r(s, " ", &save);
    if (!tok || strlen(tok) >= sizeof g->name) return qt_error(QT_ERR_FORMAT, "%s: line %d: expected a group name", what, line);
    strcpy(g->name, tok);
    tok = strtok_r(NULL, " ", &save);
    char *end;
    const long n = tok ? strtol(tok, &end, 10) : -1;
    if (!tok || *end || n < 1 || n > QT__MIX_MAX_TYPES)
        return qt_error(QT_ERR_FORMAT, "%s: line %d: group %s: expected a count of types (1 to %d)", what, line, g->name,
                        QT__MIX_MAX_TYPES);
    g->n_types = (int32_t)n;
    for (int32_t k = 0; k < g->n_types; k++) {
        tok = strtok_r(NULL, " ", &save);
        char *eq = tok ? strchr(tok, '=') : NULL;
        if (!eq) return qt_error(QT_ERR_FORMAT, "%s: line %d: group %s: expected %d TYPE=COST pairs", what, line, g->name, g->n_types);
        *eq = '\0';
        const qt_type_traits *tr = qt_type_by_name(tok);
        if (!tr || strcmp(tr->name, tok)) return qt_error(QT_ERR_FORMAT, "%s: line %d: group %s: unknown type '%s'", what, line, g->name, tok);
        const double c = strtod(eq + 1, &end);
        if (end == eq + 1 || *end || !(c >= 0) || !isfinite(c))
            return qt_error(QT_ERR_FORMAT, "%s: line %d: group %s: %s: cost '%s' is not a finite number >= 0", what, line,
                            g->name, tok, eq + 1);
        for (int32_t j = 0; j < k; j++)
            if (g->types[j] == tr->type) return qt_error(QT_ERR_FORMAT, "%s: line %d: group %s: type %s twice", what, line, g->name, tok);
        g->types[k] = tr->type;
        g->cost[k] = c;
    }
    if (strtok_r(NULL, " ", &save)) return qt_error(QT_ERR_FORMAT, "%s: line %d: group %s: more than %d types", what, line, g->name, g->n_types);
    return QT_OK;
}

static qt_status parse(lines *l, const char *what, qt__mix_table *t) {
    char buf[4096];
    bool long_line;
#define NEXT(expect)                                                                                                  \
    do {                                                                                                              \
        if (!next_line(l, buf, sizeof buf, &long_line))                                                               \
            return qt_error(QT_ERR_FORMAT, "%s: line %d: %s", what, l->line, long_line ? "too long" : "ends before " expect); \
    } while (0)
    NEXT("the header");
    if (strcmp(buf, QT__MIX_CACHE_MAGIC))
        return qt_error(QT_ERR_FORMAT, "%s: line 1: not a quanta sensitivity table (expected '%s')", what, QT__MIX_CACHE_MAGIC);
    NEXT("the model line");
    if (!key_word(buf, "model", t->model, sizeof t->model) || !is_hex64(t->model))
        return qt_error(QT_ERR_FORMAT, "%s: line %d: expected 'model SHA256'", what, l->line);
    NEXT("the calibration line");
    char hex[80];
    int used = 0;
    if (sscanf(buf, "calibration %79s %d %d%n", hex, &t->n_seq, &t->n_tok, &used) != 3 || buf[used] || !is_hex64(hex) ||
        t->n_seq < 1 || t->n_tok < 2)
        return qt_error(QT_ERR_FORMAT, "%s: line %d: expected 'calibration SHA256 NSAMPLES SEQLEN'", what, l->line);
    strcpy(t->calib, hex);
    NEXT("the imatrix line");
    if (!key_word(buf, "imatrix", t->imatrix, sizeof t->imatrix) || (strcmp(t->imatrix, "none") && !is_hex64(t->imatrix)))
        return qt_error(QT_ERR_FORMAT, "%s: line %d: expected 'imatrix SHA256|none'", what, l->line);
    NEXT("the numerics line");
    if (!key_word(buf, "numerics", t->numerics, sizeof t->numerics))
        return qt_error(QT_ERR_FORMAT, "%s: line %d: expected 'numerics NAME'", what, l->line);
    NEXT("the candidates line");
    if (!key_word(buf, "candidates", t->candidates, sizeof t->candidates))
        return qt_error(QT_ERR_FORMAT, "%s: line %d: expected 'candidates T,T,...|default'", what, l->line);
    NEXT("the groups line");
    char *end;
    const long n = strncmp(buf, "groups ", 7) ? -1 : strtol(buf + 7, &end, 10);
    if (n < 1 || n > 1 << 20 || *end)
        return qt_error(QT_ERR_FORMAT, "%s: line %d: expected 'groups N' (1 to %d)", what, l->line, 1 << 20);
    /* Refuse counts the file cannot hold before allocating: the shortest group line, "a 1 t=0\n",
     * is 8 bytes (a bound, not a guess: a longer bound refuses a table format() wrote, as the
     * fuzzer found with two groups "a 1 f16=0"). */
    if ((size_t)n * 8 > (size_t)(l->end - l->p))
        return qt_error(QT_ERR_FORMAT, "%s: line %d: %ld groups do not fit in the rest of the file", what, l->line, n);
    if (!(t->g = calloc((size_t)n, sizeof *t->g))) return qt_error(QT_ERR_NOMEM, "out of memory");
    t->n = (int32_t)n;
    for (int32_t g = 0; g < t->n; g++) {
        NEXT("every group");
        qt_status s = group_line(buf, &t->g[g], what, l->line);
        if (s != QT_OK) return s;
        for (int32_t h = 0; h < g; h++)
            if (!strcmp(t->g[h].name, t->g[g].name))
                return qt_error(QT_ERR_FORMAT, "%s: line %d: group %s twice", what, l->line, t->g[g].name);
    }
    NEXT("'end'");
    if (strcmp(buf, "end")) return qt_error(QT_ERR_FORMAT, "%s: line %d: expected 'end'", what, l->line);
    if (l->p != l->end) return qt_error(QT_ERR_FORMAT, "%s: line %d: text after 'end'", what, l->line + 1);
#undef NEXT
    return QT_OK;
}

qt_status qt__mix_table_parse(const char *text, size_t len, const char *what, qt__mix_table *t) {
    memset(t, 0, sizeof *t);
    lines l = {text, text + len, 0};
    qt_status s = parse(&l, what, t);
    if (s != QT_OK) qt__mix_table_free(t);
    return s;
}

const char *qt__mix_table_key_diff(const qt__mix_table *a, const qt__mix_table *b) {
    if (strcmp(a->model, b->model)) return "another model";
    if (strcmp(a->calib, b->calib) || a->n_seq != b->n_seq || a->n_tok != b->n_tok) return "other calibration tokens";
    if (strcmp(a->imatrix, b->imatrix)) return "another importance matrix";
    if (strcmp(a->numerics, b->numerics)) return "other numerics";
    if (strcmp(a->candidates, b->candidates)) return "other candidates";
    return "";
}
