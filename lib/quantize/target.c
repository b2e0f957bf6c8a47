/* lib/quantize/target.c — `quanta quantize --target-size / --target-bpw`:
 * each quantizable tensor's candidates, their proxy costs, the allocation
 * (lib/quantize/mix.c) and the plan that writes it (include/quanta/quantize.h,
 * docs/quantize.md "Target size").
 *
 * The proxy is imatrix-weighted weight error, as llama.cpp PR #15550 scores
 * tensors: with a_j = E[x_j^2] (the imatrix), sum_ij a_j dW_ij^2 is the
 * expected squared error of W x per token when the errors of a row are
 * uncorrelated. Every pair (tensor, candidate) is one job; each sums its rows
 * in order, so any thread count gives the same costs. The file's size is the
 * writer's (size-only mode); the tensors' budget is the target less the rest
 * of the file, and a plan over target is re-allocated with the excess taken off. */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mix.h"
#include "mix_table.h"
#include "quanta/imatrix.h"
#include "quantize_internal.h"

#define ALIGN 32 /* GGUF's default tensor alignment (bytes); a file with another is caught by the size check */
#define MAX_OPT (QT_QUANTIZE_MIX_N_DEFAULT + 12)

static const qt_type default_candidates[QT_QUANTIZE_MIX_N_DEFAULT] = {
    QT_TYPE_IQ1_S,  QT_TYPE_IQ1_M,  QT_TYPE_IQ2_XXS, QT_TYPE_IQ2_XS, QT_TYPE_IQ2_S, QT_TYPE_Q2_K, QT_TYPE_IQ3_XXS,
    QT_TYPE_IQ3_S,  QT_TYPE_Q3_K,   QT_TYPE_IQ4_XS,  QT_TYPE_IQ4_NL, QT_TYPE_Q4_0,  QT_TYPE_Q4_1, QT_TYPE_Q4_K,
    QT_TYPE_Q5_0,   QT_TYPE_Q5_1,   QT_TYPE_Q5_K,    QT_TYPE_Q6_K,   QT_TYPE_Q8_0,  QT_TYPE_F16,
};

const qt_type *qt_quantize_mix_default(void) { return default_candidates; }

void qt_quantize_mix_free(qt_quantize_mix *mix) {
    if (!mix) return;
    free(mix->t);
    free(mix);
}

static uint64_t pad(uint64_t b) { return (b + ALIGN - 1) / ALIGN * ALIGN; }

typedef struct scan_ctx {
    qt__proxy_job *jobs;
    const int64_t *order; /* (n_jobs) job indices, largest tensor first */
    int64_t n_jobs;
    atomic_int_fast64_t next; /* the next position in order to take */
    float **scratch;     /* (threads) 2 rows of floats + a quantized row */
    int64_t max_row;
} scan_ctx;

/* qw quantizes, w scores: the same weights for the mix's own costs; a preset
 * quantized without an imatrix is scored with the run's (lib/quantize/sweep.c). */
static void scan_job(qt__proxy_job *j, float *row, float *back, uint8_t *q) {
    const qt_tensor *t = j->t;
    const int64_t ne0 = t->ne[0], n_rows = t->ne[1] * (t->ne[2] > 1 ? t->ne[2] : 1) * (t->ne[3] > 1 ? t->ne[3] : 1);
    const size_t src_row = qt_row_size(t->type, ne0);
    const int64_t per_slice = t->ne[1] > 0 ? t->ne[1] : 1, n_exp = t->ne[2] > 1 ? t->ne[2] : 1;
    double weighted = 0, plain = 0;
    int64_t n_scored = 0;
    for (int64_t r = 0; r < n_rows && j->s == QT_OK; r += j->row_step, n_scored++) {
        const int64_t at = (r / per_slice % n_exp) * ne0;
        const float *w = j->w ? j->w + at : NULL, *qw = j->qw ? j->qw + at : NULL;
        j->s = qt_dequantize_rows(t->type, (const uint8_t *)t->data + (size_t)r * src_row, row, 1, ne0);
        if (j->s == QT_OK) j->s = qt_quantize_rows(j->type, row, q, 1, ne0, qw);
        if (j->s == QT_OK) j->s = qt_dequantize_rows(j->type, q, back, 1, ne0);
        for (int64_t k = 0; j->s == QT_OK && k < ne0; k++) {
            const double e = (double)row[k] - (double)back[k];
            weighted += (w ? w[k] : 1.0) * e * e;
            plain += e * e;
        }
    }
    if (n_scored < n_rows) weighted *= (double)n_rows / (double)n_scored; /* the sample's sum to all rows' */
    j->cost = j->lookup ? plain / (double)n_scored + (j->matmul_too ? weighted : 0) : weighted;
}

/* One worker per thread: each takes the next job in order until none is left. Jobs differ by 100x
 * (a token embedding in IQ1_M against a k projection in Q8_0), so fixed contiguous shares left one
 * thread idle for much of the scan; taking them one at a time, largest first, keeps every thread
 * busy to the end. A job is one thread's from start to end, its cost the same sum in the same
 * order whichever thread runs it, so the costs do not depend on the thread count. */
static void scan_range(void *vctx, int64_t b, int64_t e, int ti) {
    (void)b, (void)e;
    scan_ctx *c = vctx;
    float *row = c->scratch[ti], *back = row + c->max_row;
    uint8_t *q = (uint8_t *)(back + c->max_row);
    for (;;) {
        const int64_t k = atomic_fetch_add(&c->next, 1);
        if (k >= c->n_jobs || qt_cancelled()) break;
        scan_job(&c->jobs[c->order[k]], row, back, q);
    }
}

static int64_t job_elements(const qt__proxy_job *j) { /* the weights it scores */
    const int64_t n_rows = j->t->ne[1] * (j->t->ne[2] > 1 ? j->t->ne[2] : 1) * (j->t->ne[3] > 1 ? j->t->ne[3] : 1);
    return j->t->ne[0] * ((n_rows + j->row_step - 1) / j->row_step);
}

/* Insertion of each job after the larger ones (stable: equal sizes keep their order); a merge of
 * sorted runs would do, but n is a few thousand at most and this runs once. */
static void order_jobs(const qt__proxy_job *jobs, int64_t n, int64_t *order) {
    for (int64_t i = 0; i < n; i++) {
        int64_t k = i;
        const int64_t e = job_elements(&jobs[i]);
        while (k > 0 && job_elements(&jobs[order[k - 1]]) < e) order[k] = order[k - 1], k--;
        order[k] = i;
    }
}

void qt__proxy_job_init(const qt_model *m, qt__proxy_job *j, const qt_tensor *t, qt_type type, const float *qw,
                        const float *w) {
    const bool lookup = !strcmp(t->name, "token_embd.weight");
    *j = (qt__proxy_job){t, type, qw, w, lookup, lookup && qt_model_find_tensor(m, "output.weight") == NULL, 0, QT_OK, 1};
    qt__proxy_job_sample(j, QT_QUANTIZE_PROXY_SAMPLE_DEFAULT);
}

/* The scan's time is the i-quants' searches, linear in the weights scored: ~4,300 CPU seconds for a 1B
 * on every row, over the 10 minutes on 2 cores the issue asks. A cost is a sum over rows of like
 * errors, so an evenly spaced fixed subset of the rows estimates it (rank correlation against every
 * row: docs/quantize.md); the same rows for every type of a tensor, and at any thread count. */
void qt__proxy_job_sample(qt__proxy_job *j, int64_t max_elems) {
    const qt_tensor *t = j->t;
    const int64_t n_rows = t->ne[1] * (t->ne[2] > 1 ? t->ne[2] : 1) * (t->ne[3] > 1 ? t->ne[3] : 1);
    const int64_t elems = n_rows * t->ne[0];
    j->row_step = max_elems > 0 && elems > max_elems ? (elems + max_elems - 1) / max_elems : 1;
}

qt_status qt__proxy_scan(const qt_model *m, int threads, qt__proxy_job *jobs, int64_t n_jobs) {
    int64_t max_row = 0;
    for (int64_t i = 0; i < n_jobs; i++)
        if (jobs[i].t->ne[0] > max_row) max_row = jobs[i].t->ne[0];
    qt_threadpool *tp = NULL;
    qt_status s = qt_threadpool_create(threads > 0 ? threads : qt_default_threads(), &tp);
    int64_t *order = malloc(((size_t)n_jobs + 1) * sizeof *order);
    scan_ctx sc = {.jobs = jobs, .order = order, .n_jobs = n_jobs, .max_row = max_row};
    atomic_init(&sc.next, 0);
    const int nt = s == QT_OK ? qt_threadpool_size(tp) : 0;
    if (s == QT_OK && (!order || !(sc.scratch = calloc((size_t)nt, sizeof *sc.scratch))))
        s = qt_error(QT_ERR_NOMEM, "out of memory");
    for (int i = 0; s == QT_OK && i < nt; i++)
        if (!(sc.scratch[i] = malloc((size_t)max_row * 3 * sizeof(float) + 256))) s = qt_error(QT_ERR_NOMEM, "out of memory");
    if (s == QT_OK) order_jobs(jobs, n_jobs, order);
    if (s == QT_OK) qt_parallel_for(tp, nt, scan_range, &sc); /* one chunk per thread */
    if (s == QT_OK && qt_cancelled()) s = qt_error(QT_ERR_INTERRUPTED, "%s: interrupted", qt_model_path(m));
    for (int64_t j = 0; s == QT_OK && j < n_jobs; j++)
        if (jobs[j].s != QT_OK)
            s = qt_error(jobs[j].s, "%s: tensor '%s' to %s: %s", qt_model_path(m), jobs[j].t->name,
                         qt_type_get(jobs[j].type)->name, qt_last_error());
    for (int i = 0; sc.scratch && i < nt; i++) free(sc.scratch[i]);
    free(sc.scratch);
    free(order);
    qt_threadpool_free(tp);
    return s;
}

qt_status qt__mix_tensor_weights(const qt_imatrix *im, const qt_tensor *t, float **out) {
    *out = NULL;
    const int64_t n_exp = t->ne[2] > 1 ? t->ne[2] : 1;
    if (!im || !qt_imatrix_find(im, t->name)) return QT_OK;
    float *w = malloc((size_t)(t->ne[0] * n_exp) * sizeof *w);
    if (!w) return qt_error(QT_ERR_NOMEM, "out of memory");
    if (qt_imatrix_get(im, t->name, t->ne[0], n_exp, w) != QT_OK) { free(w); w = NULL; }
    *out = w;
    return QT_OK;
}

/* One tensor's candidates: those whose block divides the row, and that ggml can make
 * (the imatrix-only i-quants where the imatrix has the tensor). */
static int32_t tensor_options(const qt_tensor *t, const qt_type *cand, int32_t n_cand, bool has_weights, qt_type *out) {
    int32_t n = 0;
    for (int32_t k = 0; k < n_cand && n < MAX_OPT; k++) {
        const qt_type_traits *tr = qt_type_get(cand[k]);
        if (!tr || !tr->from_float || t->ne[0] % tr->block_elems) continue;
        if (qt_type_requires_imatrix(cand[k]) && !has_weights) continue;
        out[n++] = cand[k];
    }
    return n;
}

typedef struct target_ctx {
    const qt_model *m;
    const qt_quantize_opts *o;
    const qt_quantize_target *tg;
    qt_quantize_plan *base;
    qt_imatrix *im;
    qt_quantize_mix *mix;
    float **weights;     /* (mix->n) importance weights or NULL */
} target_ctx;

static qt_status collect(target_ctx *c) {
    const qt_type *cand = c->tg->candidates ? c->tg->candidates : default_candidates;
    const int32_t n_cand = c->tg->candidates ? c->tg->n_candidates : QT_QUANTIZE_MIX_N_DEFAULT;
    qt_quantize_mix *mx = c->mix;
    if (!(mx->t = calloc((size_t)c->base->n_tensors + 1, sizeof *mx->t)) ||
        !(c->weights = calloc((size_t)c->base->n_tensors + 1, sizeof *c->weights)))
        return qt_error(QT_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; i < c->base->n_tensors; i++) {
        const qt_quantize_tensor *q = &c->base->tensors[i];
        if (q->kept) continue;
        const qt_tensor *t = qt_model_find_tensor(c->m, q->name);
        float *w = NULL;
        qt_status s = qt__mix_tensor_weights(c->im, t, &w);
        if (s != QT_OK) return s;
        qt_quantize_mix_tensor *mt = &mx->t[mx->n];
        c->weights[mx->n] = w;
        mt->plan_index = i;
        mt->n_options = tensor_options(t, cand, n_cand, w != NULL, mt->types);
        if (!mt->n_options)
            return qt_error(QT_ERR_ARG, "%s: tensor '%s' (rows of %lld): no candidate type fits its row length",
                            qt_model_path(c->m), t->name, (long long)t->ne[0]);
        for (int32_t k = 0; k < mt->n_options; k++)
            mt->bytes[k] = (uint64_t)(q->n_elements / t->ne[0]) * qt_row_size(mt->types[k], t->ne[0]);
        mx->n++;
    }
    return QT_OK;
}

static qt_status scan(target_ctx *c) {
    qt_quantize_mix *mx = c->mix;
    int64_t n_jobs = 0;
    for (int32_t i = 0; i < mx->n; i++) n_jobs += mx->t[i].n_options;
    qt__proxy_job *jobs = calloc((size_t)n_jobs + 1, sizeof *jobs);
    if (!jobs) return qt_error(QT_ERR_NOMEM, "out of memory");
    for (int32_t i = 0, at = 0; i < mx->n; i++) {
        const qt_tensor *t = qt_model_find_tensor(c->m, c->base->tensors[mx->t[i].plan_index].name);
        for (int32_t k = 0; k < mx->t[i].n_options; k++, at++) {
            qt__proxy_job_init(c->m, &jobs[at], t, mx->t[i].types[k], c->weights[i], c->weights[i]);
            if (c->tg->proxy_sample) qt__proxy_job_sample(&jobs[at], c->tg->proxy_sample);
        }
    }
    qt_status s = qt__proxy_scan(c->m, c->o->threads, jobs, n_jobs);
    for (int32_t i = 0, at = 0; s == QT_OK && i < mx->n; i++)
        for (int32_t k = 0; k < mx->t[i].n_options; k++) mx->t[i].cost[k] = jobs[at++].cost;
    free(jobs);
    return s;
}

/* ---- --sensitivity measured: the table, its cache, the split ---------------------------------- */

/* The table's key: the model's tensors, the tokens, the imatrix, numerics and candidates. */
static qt_status table_key(const target_ctx *c, qt__mix_table *k) {
    const qt_quantize_target *tg = c->tg;
    const int32_t nt = qt_model_n_tensors(c->m);
    char *list = malloc((size_t)nt * (QT_MAX_NAME + 160) + 1);
    if (!list) return qt_error(QT_ERR_NOMEM, "out of memory");
    size_t at = 0;
    for (int32_t i = 0; i < nt; i++) { /* SHA-256 of each tensor's data, then of the list */
        const qt_tensor *t = qt_model_tensor(c->m, i);
        char hex[65];
        qt_sha256_hex(t->data, t->nbytes, hex);
        at += (size_t)snprintf(list + at, QT_MAX_NAME + 160, "%.127s %d %lld %lld %lld %lld %s\n", t->name, (int)t->type,
                               (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3], hex);
    }
    qt_sha256_hex(list, at, k->model);
    free(list);
    qt_sha256_hex(tg->tokens, (size_t)tg->n_seq * (size_t)tg->n_tok * sizeof *tg->tokens, k->calib);
    k->n_seq = tg->n_seq;
    k->n_tok = tg->n_tok;
    snprintf(k->imatrix, sizeof k->imatrix, "%s", c->base->imatrix_sha256[0] ? c->base->imatrix_sha256 : "none");
    snprintf(k->numerics, sizeof k->numerics, "fast/%s", qt_cpu_level_name()); /* the engine's default float order */
    if (tg->gptq) { /* GPTQ's copies (lib/quantize/mix_gptq.c): another table, keyed by the column loop's options */
        const qt_gptq_run_opts *g = tg->gptq;
        const size_t n = strlen(k->numerics);
        snprintf(k->numerics + n, sizeof k->numerics - n, "/gptq-d%g-b%lld%s%s", g->gptq.damp_frac, (long long)g->gptq.block,
                 g->gptq.act_order ? "-act" : "", g->hessian_importance ? "-hi" : "");
    }
    at = 0;
    k->candidates[0] = '\0';
    for (int32_t j = 0; tg->candidates && j < tg->n_candidates && at + 16 < sizeof k->candidates; j++)
        at += (size_t)snprintf(k->candidates + at, sizeof k->candidates - at, "%s%s", j ? "," : "",
                               qt_type_get(tg->candidates[j])->name);
    if (!tg->candidates) snprintf(k->candidates, sizeof k->candidates, "default");
    return QT_OK;
}

/* Each tensor's group in a loaded table (as qt__mix_measure groups them); false when the table lacks one
 * or a type of one (then it is another table). */
static bool table_groups(const target_ctx *c, const qt__mix_table *tb, int32_t *grp) {
    const bool tied = qt_model_find_tensor(c->m, "output.weight") == NULL;
    bool *seen = calloc((size_t)tb->n + 1, sizeof *seen);
    bool ok = seen != NULL;
    for (int32_t i = 0; ok && i < c->mix->n; i++) {
        const char *name = c->base->tensors[c->mix->t[i].plan_index].name;
        char g[QT_MAX_NAME];
        grp[i] = -1;
        if (!qt__mix_group_of(name, c->tg->per_group, g, sizeof g) || (tied && !strcmp(g, "token_embd"))) continue;
        int32_t j = 0;
        while (j < tb->n && strcmp(tb->g[j].name, g)) j++;
        if (j == tb->n) { ok = false; break; }
        grp[i] = j;
        seen[j] = true;
        for (int32_t k = 0; k < c->mix->t[i].n_options; k++) {
            int32_t x = 0;
            while (x < tb->g[j].n_types && tb->g[j].types[x] != c->mix->t[i].types[k]) x++;
            if (x == tb->g[j].n_types) ok = false;
        }
    }
    for (int32_t j = 0; ok && j < tb->n; j++) ok = seen[j];
    free(seen);
    return ok;
}

/* The cache file: QT_OK with *found false when absent; QT_ERR_FORMAT / QT_ERR_IO when unreadable. */
static qt_status cache_read(const char *path, qt__mix_table *tb, bool *found) {
    *found = false;
    FILE *f = fopen(path, "rb");
    if (!f) return errno == ENOENT ? QT_OK : qt_error(QT_ERR_IO, "--sensitivity-cache %s: cannot open: %s", path, strerror(errno));
    char *text = NULL;
    size_t n = 0, cap = 0;
    qt_status s = QT_OK;
    for (;;) {
        if (n + 4096 > cap) {
            char *p = cap > ((size_t)64 << 20) ? NULL : realloc(text, cap = (cap + 4096) * 2);
            if (!p) { s = qt_error(QT_ERR_FORMAT, "--sensitivity-cache %s: too large for a sensitivity table", path); break; }
            text = p;
        }
        const size_t r = fread(text + n, 1, cap - n, f);
        n += r;
        if (r == 0) {
            if (ferror(f)) s = qt_error(QT_ERR_IO, "--sensitivity-cache %s: read error", path);
            break;
        }
    }
    fclose(f);
    if (s == QT_OK) s = qt__mix_table_parse(text, n, path, tb);
    free(text);
    if (s == QT_OK) *found = true;
    return s;
}

static qt_status cache_write(const char *path, const qt__mix_table *tb) {
    char *text;
    qt_status s = qt__mix_table_format(tb, &text);
    if (s != QT_OK) return s;
    const size_t len = strlen(path) + 32;
    char *tmp = malloc(len);
    if (!tmp) { free(text); return qt_error(QT_ERR_NOMEM, "out of memory"); }
    snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid()); /* two runs sharing a table never share a temp file */
    FILE *f = fopen(tmp, "wb");
    if (!f) s = qt_error(QT_ERR_IO, "--sensitivity-cache %s: cannot create: %s", tmp, strerror(errno));
    if (f) {
        const size_t n = strlen(text);
        const bool ok = fwrite(text, 1, n, f) == n;
        if (fclose(f) != 0 || !ok) s = qt_error(QT_ERR_IO, "--sensitivity-cache %s: write error", tmp);
        if (s == QT_OK && rename(tmp, path) != 0) s = qt_error(QT_ERR_IO, "--sensitivity-cache %s: cannot rename: %s", path, strerror(errno));
        if (s != QT_OK) unlink(tmp);
    }
    free(tmp);
    free(text);
    return s;
}

/* mix costs: the proxy's on entry, the measured table's split over each group's members on return. */
static qt_status measured_costs(target_ctx *c) {
    qt_quantize_mix *mx = c->mix;
    const qt_quantize_target *tg = c->tg;
    if (!tg->tokens || tg->n_seq < 1 || tg->n_tok < 2)
        return qt_error(QT_ERR_ARG, "--sensitivity measured needs calibration text (--calib FILE)");
    qt__mix_table key = {0}, tb = {0};
    int32_t *grp = calloc((size_t)mx->n + 1, sizeof *grp), *n_opt = calloc((size_t)mx->n + 1, sizeof *n_opt);
    qt_type *types = calloc((size_t)mx->n * MAX_OPT + 1, sizeof *types);
    double *proxy = calloc((size_t)mx->n * MAX_OPT + 1, sizeof *proxy), *cost = calloc((size_t)mx->n * MAX_OPT + 1, sizeof *cost);
    qt_status s = grp && n_opt && types && proxy && cost ? table_key(c, &key) : qt_error(QT_ERR_NOMEM, "out of memory");
    bool found = false;
    if (s == QT_OK && tg->sensitivity_cache) s = cache_read(tg->sensitivity_cache, &tb, &found);
    if (s == QT_OK && found) {
        const char *diff = qt__mix_table_key_diff(&tb, &key);
        if (!*diff && !table_groups(c, &tb, grp)) diff = "other groups or types";
        if (*diff) {
            snprintf(mx->cache_note, sizeof mx->cache_note, "%s: measured for %s; measuring again", tg->sensitivity_cache, diff);
            qt__mix_table_free(&tb);
            found = false;
        }
    }
    mx->cache_used = found;
    if (s == QT_OK && !found) {
        tb = key;
        s = qt__mix_measure(c->m, tg, c->o->threads, mx, c->base, c->weights, &tb, grp);
        if (s == QT_OK && tg->sensitivity_cache) s = cache_write(tg->sensitivity_cache, &tb);
        mx->cache_written = s == QT_OK && tg->sensitivity_cache;
    }
    if (s == QT_OK) {
        for (int32_t i = 0; i < mx->n; i++) {
            n_opt[i] = mx->t[i].n_options;
            for (int32_t k = 0; k < n_opt[i]; k++) types[i * MAX_OPT + k] = mx->t[i].types[k], proxy[i * MAX_OPT + k] = mx->t[i].cost[k];
        }
        qt__mix_table_apply(&tb, mx->n, grp, n_opt, types, proxy, MAX_OPT, cost, &mx->rank_correlation, &mx->rank_pairs);
        for (int32_t i = 0; i < mx->n; i++)
            for (int32_t k = 0; k < n_opt[i]; k++) mx->t[i].cost[k] = cost[i * MAX_OPT + k];
        mx->n_groups = tb.n;
    }
    qt__mix_table_free(&tb);
    free(grp); free(n_opt); free(types); free(proxy); free(cost);
    return s;
}

/* The file type named after the quantized type with the most bytes ("q4_K" -> q4_k_m; f16 when all are float). */
static const char *mix_ftype(const qt_quantize_mix *mx) {
    uint64_t by[QT_TYPE_COUNT] = {0};
    qt_type best = QT_TYPE_F16;
    for (int32_t i = 0; i < mx->n; i++) {
        const qt_type ty = mx->t[i].types[mx->t[i].chosen];
        if (!qt_type_get(ty)->is_quantized) continue;
        if ((by[ty] += mx->t[i].bytes[mx->t[i].chosen]) > by[best]) best = ty;
    }
    static _Thread_local char name[32];
    static const char *const suffix[] = {"", "_m", "_s"};
    for (size_t k = 0; k < sizeof suffix / sizeof suffix[0]; k++) {
        snprintf(name, sizeof name, "%s%s", qt_type_get(best)->name, suffix[k]);
        if (qt_gguf_ftype_find(name)) return name;
    }
    return "f16";
}

/* The plan of the mix's chosen types; *over: how far the file exceeds the target (0: within). */
static qt_status plan_chosen(target_ctx *c, qt_type *types, qt_quantize_plan **p, uint64_t *over) {
    const qt_quantize_mix *mx = c->mix;
    for (int32_t i = 0; i < mx->n; i++) {
        const qt_tensor *t = qt_model_find_tensor(c->m, c->base->tensors[mx->t[i].plan_index].name);
        types[t - qt_model_tensor(c->m, 0)] = mx->t[i].types[mx->t[i].chosen];
    }
    qt_quantize_opts o = *c->o;
    o.scheme = mix_ftype(mx);
    qt_status s = qt__quantize_plan_make_mix(c->m, &o, types, mx->budget_bytes, mx->predicted_cost, mx->sensitivity, p);
    if (s == QT_OK) {
        const uint64_t limit = c->tg->file_bytes ? c->tg->file_bytes : UINT64_MAX;
        *over = (*p)->output_bytes > limit ? (*p)->output_bytes - limit : 0;
    }
    return s;
}

/* Allocates under budget and plans it; *over: how far the file exceeds the target (0: within). */
static qt_status allocate_and_plan(target_ctx *c, uint64_t budget, bool padded, qt_type *types, qt_quantize_plan **p,
                                   uint64_t *over) {
    qt_quantize_mix *mx = c->mix;
    qt__mix_option *opts = calloc((size_t)mx->n * MAX_OPT + 1, sizeof *opts);
    int32_t *first = calloc((size_t)mx->n + 1, sizeof *first), *n_opt = calloc((size_t)mx->n + 1, sizeof *n_opt),
            *choice = calloc((size_t)mx->n + 1, sizeof *choice);
    qt_status s = opts && first && n_opt && choice ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; s == QT_OK && i < mx->n; i++) {
        first[i] = i * MAX_OPT;
        n_opt[i] = mx->t[i].n_options;
        for (int32_t k = 0; k < n_opt[i]; k++)
            opts[first[i] + k] = (qt__mix_option){padded ? pad(mx->t[i].bytes[k]) : mx->t[i].bytes[k], mx->t[i].cost[k]};
    }
    qt__mix_result r;
    if (s == QT_OK) s = qt__mix_allocate(opts, first, n_opt, mx->n, budget, QT__MIX_DP_CELLS, choice, &r);
    if (s == QT_OK) {
        for (int32_t i = 0; i < mx->n; i++) mx->t[i].chosen = choice[i];
        mx->budget_bytes = budget;
        mx->used_bytes = r.bytes;
        mx->predicted_cost = r.cost;
        mx->exact = r.exact;
        s = plan_chosen(c, types, p, over);
    }
    free(opts); free(first); free(n_opt); free(choice);
    return s;
}

/* The measured refinement (lib/quantize/mix_refine.c) within the allocation's budget; a changed
 * choice is planned again, and kept only when its file is within the target too. */
static qt_status refine(target_ctx *c, bool padded, qt_type *types, qt_quantize_plan **p) {
    qt_quantize_mix *mx = c->mix;
    int32_t *was = malloc(((size_t)mx->n + 1) * sizeof *was);
    if (!was) return qt_error(QT_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; i < mx->n; i++) was[i] = mx->t[i].chosen;
    const uint64_t used = mx->used_bytes;
    const double cost = mx->predicted_cost;
    qt_status s = qt__mix_refine(c->m, c->tg, c->o->threads, mx, c->base, c->weights, mx->budget_bytes, padded ? ALIGN : 0);
    qt_quantize_plan *np = NULL;
    uint64_t over = 0;
    if (s == QT_OK && mx->refine_swaps) s = plan_chosen(c, types, &np, &over);
    if (s == QT_OK && np && over) { /* the file type's name or the keys grew past the target: the allocation's mix */
        for (int32_t i = 0; i < mx->n; i++) mx->t[i].chosen = was[i];
        mx->used_bytes = used;
        mx->predicted_cost = cost;
        mx->refine_swaps = 0;
        mx->refine_kld_after = mx->refine_kld_before;
        qt_quantize_plan_free(np);
        np = NULL;
    }
    if (np) { qt_quantize_plan_free(*p); *p = np; }
    free(was);
    return s;
}

/* The tensors' budget: the target less the rest of the file (kept tensors, header, mix keys). */
static qt_status first_budget(const target_ctx *c, uint64_t *budget, bool *padded) {
    const qt_quantize_plan *b = c->base;
    uint64_t kept = 0, all_padded = 0, names = 0;
    for (int32_t i = 0; i < b->n_tensors; i++) {
        all_padded += pad(b->tensors[i].bytes);
        if (b->tensors[i].kept) kept += b->tensors[i].bytes;
    }
    names = (uint64_t)c->mix->n * 12; /* quanta.mix.types: a type name and a comma each */
    if (c->tg->file_bytes) {
        /* header and kept tensors as the base plan lays them out, the mix keys on top (~names + 128 bytes) */
        uint64_t kept_padded = 0;
        for (int32_t i = 0; i < b->n_tensors; i++) kept_padded += b->tensors[i].kept ? pad(b->tensors[i].bytes) : 0;
        const uint64_t rest = b->output_bytes - all_padded + kept_padded + names + 128 + ALIGN;
        if (c->tg->file_bytes <= rest)
            return qt_error(QT_ERR_RANGE, "target size %llu bytes: the header and the tensors kept as stored already take "
                            "%llu bytes", (unsigned long long)c->tg->file_bytes, (unsigned long long)rest);
        *budget = c->tg->file_bytes - rest;
        *padded = true;
        return QT_OK;
    }
    const double total = c->tg->bpw * (double)b->n_weights / 8.0;
    if (!(c->tg->bpw > 0) || total <= (double)kept)
        return qt_error(QT_ERR_RANGE, "target %.4g bits per weight: the tensors kept as stored already take %.4g",
                        c->tg->bpw, 8.0 * (double)kept / (double)(b->n_weights ? b->n_weights : 1));
    *budget = (uint64_t)(total - (double)kept);
    *padded = false;
    return QT_OK;
}

static qt_status base_plan(const qt_model *m, const qt_quantize_opts *o, qt_quantize_plan **b) {
    qt_quantize_opts bo = *o;
    bo.scheme = "f16"; /* every quantizable tensor stays quantizable; no row-length fallback */
    bo.n_overrides = 0;
    bo.output_type = bo.embd_type = QT_TYPE_COUNT;
    bo.pure = false;
    return qt_quantize_plan_make(m, &bo, b);
}

qt_status qt_quantize_plan_target(const qt_model *m, const qt_quantize_opts *o, const qt_quantize_target *tg,
                                  qt_quantize_plan **out, qt_quantize_mix **mix) {
    *out = NULL;
    *mix = NULL;
    if (o->n_overrides || o->output_type != QT_TYPE_COUNT || o->embd_type != QT_TYPE_COUNT || o->pure)
        return qt_error(QT_ERR_ARG, "a target size chooses every tensor's type: --tensor-type, --output-tensor-type, "
                                    "--token-embedding-type and --pure do not apply (--keep does)");
    for (int32_t k = 0; tg->candidates && k < tg->n_candidates; k++) {
        const qt_type_traits *tr = qt_type_get(tg->candidates[k]);
        if (!tr || !tr->from_float || tr->runtime_only)
            return qt_error(QT_ERR_ARG, "--candidates: type %d is not a GGUF type quanta writes", (int)tg->candidates[k]);
    }
    if (tg->candidates && (tg->n_candidates < 1 || tg->n_candidates > MAX_OPT))
        return qt_error(QT_ERR_ARG, "--candidates: %d types (1 to %d)", tg->n_candidates, MAX_OPT);
    target_ctx c = {.m = m, .o = o, .tg = tg};
    qt_type *types = malloc(((size_t)qt_model_n_tensors(m) + 1) * sizeof *types);
    if (!types || !(c.mix = calloc(1, sizeof *c.mix))) { free(types); return qt_error(QT_ERR_NOMEM, "out of memory"); }
    for (int32_t i = 0; i < qt_model_n_tensors(m); i++) types[i] = QT_TYPE_COUNT;
    c.mix->sensitivity = "proxy";
    qt_status s = base_plan(m, o, &c.base);
    if (s == QT_OK && o->imatrix) s = qt_imatrix_open(o->imatrix, &c.im);
    if (s == QT_OK) s = collect(&c);
    if (s == QT_OK) s = scan(&c);
    c.mix->rank_correlation = c.mix->measured_cost = NAN;
    if (s == QT_OK && tg->measured) {
        c.mix->sensitivity = tg->per_group ? "measured-groups" : "measured";
        s = measured_costs(&c);
    }
    uint64_t budget = 0, over = 0;
    bool padded = false;
    if (s == QT_OK) s = first_budget(&c, &budget, &padded);
    qt_quantize_plan *p = NULL;
    /* The estimate of the rest is generous: bytes left over go back into the budget, and a
     * file over the target has the excess taken off; the last budget that fitted is kept. */
    uint64_t fit = 0;
    bool have_fit = false;
    for (int it = 0; s == QT_OK && it < 12; it++) {
        s = allocate_and_plan(&c, budget, padded, types, &p, &over);
        if (s != QT_OK) break;
        if (over) {
            qt_quantize_plan_free(p);
            p = NULL;
            if (have_fit) { s = allocate_and_plan(&c, fit, padded, types, &p, &over); break; }
            if (over + ALIGN >= budget) { s = qt_error(QT_ERR_RANGE, "target size: nothing fits"); break; }
            budget -= over + ALIGN;
            continue;
        }
        const uint64_t slack = tg->file_bytes ? tg->file_bytes - p->output_bytes : 0;
        if (slack < ALIGN || it == 11) break;
        have_fit = true;
        fit = budget;
        qt_quantize_plan_free(p);
        p = NULL;
        budget += slack;
    }
    if (s == QT_OK && over) s = qt_error(QT_ERR_INTERNAL, "target size: the plan stays %llu bytes over", (unsigned long long)over);
    if (s == QT_OK && tg->refine_rounds > 0) s = refine(&c, padded, types, &p);
    /* additivity is assumed by the allocation: the chosen mix measured as a whole */
    if (s == QT_OK && tg->measured) s = qt__mix_measure_final(m, tg, o->threads, c.mix, c.base, c.weights, &c.mix->measured_cost);
    for (int32_t i = 0; c.weights && i < c.mix->n; i++) free(c.weights[i]);
    free(c.weights);
    free(types);
    if (c.im) qt_imatrix_close(c.im);
    qt_quantize_plan_free(c.base);
    if (s != QT_OK) {
        qt_quantize_plan_free(p);
        qt_quantize_mix_free(c.mix);
        return s;
    }
    *out = p;
    *mix = c.mix;
    return QT_OK;
}
