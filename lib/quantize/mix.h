/* lib/quantize/mix.h — one type per tensor under a byte budget (internal;
 * lib/quantize/mix.c, docs/quantize.md "Target size").
 *
 * A multiple-choice knapsack: item i (a tensor) takes exactly one of its
 * options (a candidate type), each with a size in bytes and a predicted cost
 * (the predicted KL divergence it adds); the sum of sizes must not exceed the
 * budget and the sum of costs is minimised. Costs are assumed additive over
 * tensors (the caller checks that assumption against measurement).
 *   1. each item's Pareto frontier: options by size, keeping only those that
 *      lower the cost (a bigger, worse option is never chosen);
 *   2. exact dynamic programming over sizes in units of their greatest common
 *      divisor when items x units is small (stories260K: always);
 *   3. otherwise the Lagrangian relaxation (Everett 1963: min cost + lambda bytes
 *      per item, lambda bisected to the smallest that fits), then a greedy
 *      repair spending what is left on the upgrades of best cost per byte. */
#ifndef QT_QUANTIZE_MIX_H
#define QT_QUANTIZE_MIX_H

#include <stdbool.h>
#include <stdint.h>

#include "quanta/core.h"

typedef struct qt__mix_option {
    uint64_t bytes;  /* what this option adds to the file (padded as the file stores it) */
    double cost;     /* predicted cost, >= 0, finite */
} qt__mix_option;

typedef struct qt__mix_result {
    uint64_t bytes;  /* sum of the chosen options' bytes (<= budget) */
    double cost;     /* sum of their costs */
    bool exact;      /* the dynamic programme ran: cost is the minimum */
} qt__mix_result;

/* Largest items x (budget / gcd + 1) cells the exact programme takes (one byte each). */
#define QT__MIX_DP_CELLS ((int64_t)1 << 25)

/* Item i's options are opts[first[i] .. first[i] + n_opt[i]) (n_opt[i] >= 1,
 * at most 255); choice[i] gets the index (within item i) of its option.
 * max_cells: the exact programme's limit (QT__MIX_DP_CELLS; 0: never exact).
 * QT_ERR_RANGE when even the smallest options exceed the budget (the message
 * says by how much); QT_ERR_ARG for a bad cost or count. Deterministic: ties
 * go to the smaller option, then the earlier index. */
qt_status qt__mix_allocate(const qt__mix_option *opts, const int32_t *first, const int32_t *n_opt, int32_t n_items,
                           uint64_t budget, int64_t max_cells, int32_t *choice, qt__mix_result *r);

/* The Pareto frontier of n options: their indices by increasing bytes and
 * strictly decreasing cost, into idx (n entries of room); returns the count. */
int32_t qt__mix_frontier(const qt__mix_option *opts, int32_t n, int32_t *idx);

#endif
