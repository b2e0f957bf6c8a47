/* lib/quantize/mix_table.h — the measured sensitivity table of --target-size
 * (internal; lib/quantize/mix_table.c, docs/quantize.md "Target size").
 *
 * `--sensitivity measured` measures groups, not tensors: one layer's attention
 * (attn_q, attn_k, attn_v, attn_output together), one layer's FFN (ffn_gate,
 * ffn_up, ffn_down), the output tensor, the token embedding. A group's cost
 * in type c is the mean KL(base || model) per token with only that group's
 * members in c (a member c does not fit stays as stored). The allocation still
 * chooses per tensor: member i's cost in c is the group's, split by i's share
 * of the group's proxy cost in c. The table is what the cache file holds. */
#ifndef QT_QUANTIZE_MIX_TABLE_H
#define QT_QUANTIZE_MIX_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quanta/model.h"
#include "quanta/quant.h"

#define QT__MIX_MAX_TYPES 32
#define QT__MIX_CACHE_MAGIC "quanta sensitivity table 1"

typedef struct qt__mix_group {
    char name[QT_MAX_NAME];            /* "blk.3.attn", "blk.3.ffn", "output", "token_embd" */
    int32_t n_types;
    qt_type types[QT__MIX_MAX_TYPES];  /* (n_types) */
    double cost[QT__MIX_MAX_TYPES];    /* measured mean KL per token, nats, >= 0 */
} qt__mix_group;

/* The table and what it was measured on (the cache's key: a loaded table whose key differs is stale). */
typedef struct qt__mix_table {
    char model[65];        /* SHA-256 of every tensor's name, type, shape and data */
    char calib[65];        /* SHA-256 of the calibration tokens (n_seq x n_tok int32) */
    char imatrix[65];      /* the importance weights' SHA-256, or "none" */
    char numerics[64];     /* the engine's float order and kernel level: "fast/avx512" */
    char candidates[512];  /* the candidate list, comma-separated, or "default" */
    int32_t n_seq, n_tok;
    int32_t n;
    qt__mix_group *g;      /* (n) */
} qt__mix_table;

/* The group of a tensor (into name, cap bytes): per_group, "blk.N.attn" for attn_q/k/v/output and
 * "blk.N.ffn" for ffn_gate/up/down; else each decoder linear is its own group, named as the tensor;
 * "output" and "token_embd" either way; false for any other tensor (not measured). */
bool qt__mix_group_of(const char *tensor, bool per_group, char *name, size_t cap);

/* Spearman's rank correlation of x and y (n pairs; tied values get their mean rank): the Pearson
 * correlation of the ranks. NAN when n < 2 or either side is constant. Pure. */
double qt__mix_spearman(const double *x, const double *y, int32_t n);

/* The split of group costs over members (pure): n tensors, tensor i in group grp[i] (-1: none) with
 * options types[i*stride ..], proxy[i*stride ..] (n_opt[i] of them). cost[i*stride + k] gets
 * G(c) * proxy_i(c) / sum_j proxy_j(c) over the members j that have c (equal shares when that sum is 0);
 * a tensor in no group, or a type its group lacks, gets proxy x the median measured/proxy-sum ratio.
 * *rho, *n_pairs: Spearman between each (group, type)'s proxy sum and its measured cost. */
void qt__mix_table_apply(const qt__mix_table *t, int32_t n, const int32_t *grp, const int32_t *n_opt, const qt_type *types,
                         const double *proxy, int32_t stride, double *cost, double *rho, int32_t *n_pairs);

/* The table as text (QT__MIX_CACHE_MAGIC, key lines, one line per group with costs as %.17g, "end"):
 * malloc'd, NUL-terminated. */
qt_status qt__mix_table_format(const qt__mix_table *t, char **out);
/* Parses that text (len bytes, need not be NUL-terminated). QT_ERR_FORMAT naming `what` (the file),
 * the line and the problem on anything else; *t is then empty. */
qt_status qt__mix_table_parse(const char *text, size_t len, const char *what, qt__mix_table *t);
/* Empty when the key fields (not the groups) of a and b agree, else the first that differs, in words. */
const char *qt__mix_table_key_diff(const qt__mix_table *a, const qt__mix_table *b);
void qt__mix_table_free(qt__mix_table *t);

#endif
