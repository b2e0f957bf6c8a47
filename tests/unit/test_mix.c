/* The --target-size allocator (lib/quantize/mix.c) against brute force on
 * small random instances: the exact programme finds the optimum, the
 * Lagrangian path stays within the budget and near it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qtest.h"
#include "quanta.h"
#include "core/rng.h"
#include "quantize/mix.h"

static void test_frontier(void) {
    /* sizes 10, 20, 20, 30, 40 with costs 5, 3, 4, 3, 1: (30, 3) is no better than (20, 3) */
    const qt__mix_option o[5] = {{30, 3}, {10, 5}, {20, 4}, {40, 1}, {20, 3}};
    int32_t idx[5];
    CHECK_EQ_INT(qt__mix_frontier(o, 5, idx), 3);
    CHECK_EQ_INT(idx[0], 1);
    CHECK_EQ_INT(idx[1], 4);
    CHECK_EQ_INT(idx[2], 3);
}

/* The least cost over every combination within budget (INFINITY: none). */
static double brute(const qt__mix_option *o, const int32_t *first, const int32_t *n_opt, int32_t n, uint64_t budget,
                    int32_t i, uint64_t used, double cost) {
    if (i == n) return used <= budget ? cost : INFINITY;
    double best = INFINITY;
    for (int32_t k = 0; k < n_opt[i]; k++) {
        const double v = brute(o, first, n_opt, n, budget, i + 1, used + o[first[i] + k].bytes, cost + o[first[i] + k].cost);
        if (v < best) best = v;
    }
    return best;
}

static void test_random_against_brute_force(void) {
    qt__rng seed = {17};
    int exact_checked = 0, lagrange_checked = 0, infeasible = 0;
    for (int trial = 0; trial < 400; trial++) {
        const int32_t n = 1 + (int32_t)(qt__rng_next(&seed) % 6);
        qt__mix_option o[6 * 5];
        int32_t first[6], n_opt[6], choice[6];
        uint64_t least = 0, most = 0;
        for (int32_t i = 0, at = 0; i < n; i++) {
            first[i] = at;
            n_opt[i] = 1 + (int32_t)(qt__rng_next(&seed) % 5);
            uint64_t lo = UINT64_MAX, hi = 0;
            for (int32_t k = 0; k < n_opt[i]; k++, at++) {
                /* sizes in multiples of 32 (the file's alignment), some repeated */
                o[at].bytes = 32 * (1 + qt__rng_next(&seed) % 12);
                o[at].cost = (double)(qt__rng_next(&seed) % 1000) / 7.0;
                if (o[at].bytes < lo) lo = o[at].bytes;
                if (o[at].bytes > hi) hi = o[at].bytes;
            }
            least += lo;
            most += hi;
        }
        const uint64_t budget = least / 2 + qt__rng_next(&seed) % (most - least / 2 + 1);
        const double opt = brute(o, first, n_opt, n, budget, 0, 0, 0);
        qt__mix_result r;
        if (!isfinite(opt)) {
            CHECK_STATUS(qt__mix_allocate(o, first, n_opt, n, budget, QT__MIX_DP_CELLS, choice, &r), QT_ERR_RANGE);
            infeasible++;
            continue;
        }
        for (int path = 0; path < 2; path++) {
            CHECK_OK(qt__mix_allocate(o, first, n_opt, n, budget, path ? 0 : QT__MIX_DP_CELLS, choice, &r));
            uint64_t bytes = 0;
            double cost = 0;
            for (int32_t i = 0; i < n; i++) {
                CHECK(choice[i] >= 0 && choice[i] < n_opt[i]);
                bytes += o[first[i] + choice[i]].bytes;
                cost += o[first[i] + choice[i]].cost;
            }
            CHECK(bytes == r.bytes && bytes <= budget);
            CHECK_NEAR(cost, r.cost, 1e-9);
            CHECK(r.exact == !path);
            if (!path) {
                CHECK_MSG(fabs(cost - opt) < 1e-9, "trial %d: exact %g, brute force %g", trial, cost, opt);
                exact_checked++;
            } else {
                CHECK_MSG(cost >= opt - 1e-9, "trial %d: lagrange %g below the optimum %g", trial, cost, opt);
                lagrange_checked++;
            }
        }
    }
    CHECK(exact_checked > 200 && lagrange_checked > 200 && infeasible > 5);
}

/* Many items of one convex family: the Lagrangian path is within one item's step of the optimum. */
static void test_lagrange_close_on_convex(void) {
    enum { N = 40, K = 6 };
    qt__mix_option o[N * K];
    int32_t first[N], n_opt[N], a[N], b[N];
    for (int32_t i = 0; i < N; i++) {
        first[i] = i * K;
        n_opt[i] = K;
        for (int32_t k = 0; k < K; k++) {
            o[i * K + k].bytes = (uint64_t)(64 * (k + 1));
            o[i * K + k].cost = (1.0 + (double)(i % 7)) * ldexp(1.0, -2 * k); /* error x 4 per bit removed */
        }
    }
    const uint64_t budget = 64 * 3 * N + 1000;
    qt__mix_result ra, rb;
    CHECK_OK(qt__mix_allocate(o, first, n_opt, N, budget, QT__MIX_DP_CELLS, a, &ra));
    CHECK_OK(qt__mix_allocate(o, first, n_opt, N, budget, 0, b, &rb));
    CHECK(ra.exact && !rb.exact && ra.bytes <= budget && rb.bytes <= budget);
    CHECK(rb.cost >= ra.cost - 1e-12);
    CHECK_MSG(rb.cost <= ra.cost * 1.02, "lagrange %g, exact %g", rb.cost, ra.cost);
}

static void test_bad_input(void) {
    const qt__mix_option o[2] = {{32, 1}, {64, NAN}};
    const int32_t first[1] = {0}, two[1] = {2}, none[1] = {0};
    int32_t c[1];
    qt__mix_result r;
    CHECK_STATUS(qt__mix_allocate(o, first, two, 1, 100, QT__MIX_DP_CELLS, c, &r), QT_ERR_ARG);
    CHECK_STATUS(qt__mix_allocate(o, first, none, 1, 100, QT__MIX_DP_CELLS, c, &r), QT_ERR_ARG);
    const int32_t one[1] = {1};
    CHECK_STATUS(qt__mix_allocate(o, first, one, 1, 31, QT__MIX_DP_CELLS, c, &r), QT_ERR_RANGE);
    CHECK(strstr(qt_last_error(), "1 more") != NULL);
}

int main(void) {
    QT_RUN(test_frontier);
    QT_RUN(test_random_against_brute_force);
    QT_RUN(test_lagrange_close_on_convex);
    QT_RUN(test_bad_input);
    return qt_test_finish("test_mix");
}
