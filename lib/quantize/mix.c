/* lib/quantize/mix.c — the multiple-choice knapsack of --target-size
 * (lib/quantize/mix.h): Pareto frontiers, an exact dynamic programme where it
 * is small, else a Lagrangian allocation (Everett 1963, "Generalized Lagrange
 * multiplier method", Oper. Res. 11) with a greedy repair. Pure functions on
 * plain arrays. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mix.h"

/* Insertion sort of indices by (bytes, cost, index): n is a handful of types. */
int32_t qt__mix_frontier(const qt__mix_option *o, int32_t n, int32_t *idx) {
    int32_t *s = idx;
    for (int32_t i = 0; i < n; i++) {
        int32_t j = i;
        while (j > 0 && (o[s[j - 1]].bytes > o[i].bytes ||
                         (o[s[j - 1]].bytes == o[i].bytes && o[s[j - 1]].cost > o[i].cost)))
            s[j] = s[j - 1], j--;
        s[j] = i;
    }
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++)
        if (k == 0 || o[s[i]].cost < o[idx[k - 1]].cost) idx[k++] = s[i];
    return k;
}

static uint64_t gcd64(uint64_t a, uint64_t b) {
    while (b) { uint64_t t = a % b; a = b; b = t; }
    return a;
}

typedef struct mix_ctx {
    const qt__mix_option *o;
    const int32_t *first;
    int32_t n;
    int32_t *fr;      /* (n * 256) frontier indices per item */
    int32_t *n_fr;    /* (n) */
} mix_ctx;

#define FR(c, i, k) ((c)->fr[(size_t)(i) * 256 + (size_t)(k)])
#define OPT(c, i, k) ((c)->o[(c)->first[i] + FR(c, i, k)])

/* Exact: best[u] = least cost of items 0..i in at most u units; pick[i][u] the frontier entry. */
static qt_status solve_dp(const mix_ctx *c, uint64_t unit, uint64_t units, int32_t *choice) {
    const size_t U = (size_t)units + 1;
    double *best = malloc(U * sizeof *best), *next = malloc(U * sizeof *next);
    uint8_t *pick = malloc((size_t)c->n * U);
    if (!best || !next || !pick) { free(best); free(next); free(pick); return qt_error(QT_ERR_NOMEM, "out of memory"); }
    for (size_t u = 0; u < U; u++) best[u] = 0;
    for (int32_t i = 0; i < c->n; i++) {
        uint8_t *pk = pick + (size_t)i * U;
        for (size_t u = 0; u < U; u++) {
            double b = INFINITY;
            uint8_t bk = 0;
            for (int32_t k = 0; k < c->n_fr[i]; k++) {
                const uint64_t w = OPT(c, i, k).bytes / unit;
                if (w > u) break; /* the frontier is by increasing size */
                const double v = best[u - w] + OPT(c, i, k).cost;
                if (v < b) b = v, bk = (uint8_t)k;
            }
            next[u] = b;
            pk[u] = bk;
        }
        double *t = best; best = next; next = t;
    }
    size_t u = (size_t)units;
    for (int32_t i = c->n - 1; i >= 0; i--) {
        const int32_t k = pick[(size_t)i * U + u];
        choice[i] = k;
        u -= (size_t)(OPT(c, i, k).bytes / unit);
    }
    free(best); free(next); free(pick);
    return QT_OK;
}

/* Each item's argmin of cost + lambda bytes; returns the total bytes. */
static uint64_t lagrange_pick(const mix_ctx *c, double lambda, int32_t *choice) {
    uint64_t total = 0;
    for (int32_t i = 0; i < c->n; i++) {
        int32_t bk = 0;
        double b = INFINITY;
        for (int32_t k = 0; k < c->n_fr[i]; k++) {
            const double v = OPT(c, i, k).cost + lambda * (double)OPT(c, i, k).bytes;
            if (v < b) b = v, bk = k;
        }
        choice[i] = bk;
        total += OPT(c, i, bk).bytes;
    }
    return total;
}

/* The smallest lambda (bisected, 200 halvings) whose choice fits, then upgrades
 * by the best cost saved per byte added while any fits. */
static void solve_lagrange(const mix_ctx *c, uint64_t budget, int32_t *choice) {
    double lo = 0, hi = 1;
    while (lagrange_pick(c, hi, choice) > budget && hi < 1e300) hi *= 2;
    if (lagrange_pick(c, lo, choice) > budget) {
        for (int it = 0; it < 200; it++) {
            const double mid = 0.5 * (lo + hi);
            if (mid <= lo || mid >= hi) break;
            if (lagrange_pick(c, mid, choice) > budget) lo = mid;
            else hi = mid;
        }
        lagrange_pick(c, hi, choice);
    }
    uint64_t used = 0;
    for (int32_t i = 0; i < c->n; i++) used += OPT(c, i, choice[i]).bytes;
    for (;;) {
        int32_t bi = -1, bk = -1;
        double best = 0;
        for (int32_t i = 0; i < c->n; i++) {
            const qt__mix_option *now = &OPT(c, i, choice[i]);
            for (int32_t k = choice[i] + 1; k < c->n_fr[i]; k++) {
                const qt__mix_option *up = &OPT(c, i, k);
                if (up->bytes - now->bytes > budget - used) break;
                const double gain = (now->cost - up->cost) / (double)(up->bytes - now->bytes);
                if (gain > best) best = gain, bi = i, bk = k;
            }
        }
        if (bi < 0) break;
        used += OPT(c, bi, bk).bytes - OPT(c, bi, choice[bi]).bytes;
        choice[bi] = bk;
    }
}

static qt_status check_input(const qt__mix_option *o, const int32_t *first, const int32_t *n_opt, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        if (n_opt[i] < 1 || n_opt[i] > 255) return qt_error(QT_ERR_ARG, "mix: item %d has %d options (1 to 255)", i, n_opt[i]);
        for (int32_t k = 0; k < n_opt[i]; k++)
            if (!(o[first[i] + k].cost >= 0) || !isfinite(o[first[i] + k].cost))
                return qt_error(QT_ERR_ARG, "mix: item %d option %d: cost %g is not a finite number >= 0", i, k,
                                o[first[i] + k].cost);
    }
    return QT_OK;
}

qt_status qt__mix_allocate(const qt__mix_option *opts, const int32_t *first, const int32_t *n_opt, int32_t n_items,
                           uint64_t budget, int64_t max_cells, int32_t *choice, qt__mix_result *r) {
    memset(r, 0, sizeof *r);
    qt_status s = check_input(opts, first, n_opt, n_items);
    if (s != QT_OK) return s;
    mix_ctx c = {opts, first, n_items, calloc((size_t)n_items * 256 + 1, sizeof(int32_t)),
                 calloc((size_t)n_items + 1, sizeof(int32_t))};
    int32_t *fc = calloc((size_t)n_items + 1, sizeof *fc);
    if (!c.fr || !c.n_fr || !fc) { free(c.fr); free(c.n_fr); free(fc); return qt_error(QT_ERR_NOMEM, "out of memory"); }
    uint64_t least = 0, g = 0;
    for (int32_t i = 0; i < n_items; i++) {
        c.n_fr[i] = qt__mix_frontier(opts + first[i], n_opt[i], &FR(&c, i, 0));
        least += OPT(&c, i, 0).bytes;
        for (int32_t k = 0; k < c.n_fr[i]; k++) g = gcd64(g, OPT(&c, i, k).bytes);
    }
    if (least > budget) {
        s = qt_error(QT_ERR_RANGE, "the smallest candidates need %llu bytes, %llu more than the %llu available",
                     (unsigned long long)least, (unsigned long long)(least - budget), (unsigned long long)budget);
    } else if (g == 0) {
        for (int32_t i = 0; i < n_items; i++) fc[i] = 0;
        r->exact = true;
    } else if (max_cells > 0 && budget / g < (uint64_t)max_cells && (double)n_items * (double)(budget / g + 1) <= (double)max_cells) {
        s = solve_dp(&c, g, budget / g, fc);
        r->exact = true;
    } else {
        solve_lagrange(&c, budget, fc);
    }
    for (int32_t i = 0; s == QT_OK && i < n_items; i++) {
        choice[i] = FR(&c, i, fc[i]);
        r->bytes += OPT(&c, i, fc[i]).bytes;
        r->cost += OPT(&c, i, fc[i]).cost;
    }
    free(c.fr); free(c.n_fr); free(fc);
    return s;
}
