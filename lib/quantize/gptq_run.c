/* lib/quantize/gptq_run.c — GPTQ over a whole model, layer by layer
 * (quanta/quantize.h "GPTQ", docs/gptq.md), on the engine's calibration seam:
 *
 *   for each decoder layer:
 *     observe  run the calibration batch through the layer; each distinct
 *              linear input adds its rows to a Hessian (q/k/v share one,
 *              gate/up share one: the qt__layer_linears table);
 *     quantize each linear with GPTQ onto its target grid (the plan's GGUF
 *              type or the compressed-tensors scheme), keeping the result;
 *     rebind   the layer's linears to their quantized form;
 *     run      the layer again, so the next layer sees the quantized layer's
 *              outputs (the paper's sequential order, llm-compressor's
 *              "sequential" pipeline).
 *
 * Memory: the engine's buffers and the hidden states of the calibration batch
 * (n_seq x n_tok x n_embd floats), one linear in f32 and its grid state, the
 * layer's Hessians (double), and one layer's quantized output: each finished
 * layer goes to disk (GGUF: OUT.partial.layers, gptq_state.c, and the
 * pipeline's writer reads every tensor back when it reaches it;
 * compressed-tensors: an unlinked spill file the writer's callbacks read).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "quanta/ct.h"
#include "quanta/quantize_ct.h"
#include "quanta/engine.h"
#include "quanta/gptq.h"
#include "quanta/smooth.h"
#include "core/blas.h"
#include "engine/engine_internal.h"
#include "model/arch.h"
#include "model/model_internal.h"
#include "quant/ct4.h"
#include "quant/ct_rows.h"
#include "quantize_internal.h"

const qt__layer_linear qt__layer_linears[QT__N_LINEARS] = {
    {"attn_q", 0}, {"attn_k", 0}, {"attn_v", 0}, {"attn_output", 1}, {"ffn_gate", 2}, {"ffn_up", 2}, {"ffn_down", 3},
};

int qt__layer_linear_find(const char *linear) {
    for (int k = 0; k < QT__N_LINEARS; k++)
        if (!strcmp(qt__layer_linears[k].linear, linear)) return k;
    return -1;
}

/* Where a resumed run starts: the finished layers and their KV maxima. */
typedef struct resume_point {
    int32_t start;
    const float *k_amax, *v_amax; /* (start * n_per_layer) */
    int64_t kv_tokens;
} resume_point;

/* Process CPU seconds per phase of one layer (qt_gptq_run_opts.profile). */
typedef struct layer_profile {
    double observe, hessian, smooth, prepare, factor, quantize, bind, run;
} layer_profile;

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct observer_ctx {
    qt_gptq_hessian h[QT__N_INPUTS];
    qt_act_stats act[QT__N_INPUTS]; /* smoothing only: channel statistics of each input */
    bool smoothing;
    qt_threadpool *pool;      /* the Hessians' and the column loops' threads (a fixed split: the same bits at any count) */
    qt__hess_scratch scratch; /* the Hessians' partial sums, for the observe pass */
    layer_profile *prof;      /* or NULL */
    qt_status err;
} observer_ctx;

static void observe(void *user, int32_t layer, const char *linear, const float *x, int32_t n_tokens, int32_t n_in) {
    observer_ctx *c = user;
    (void)layer;
    if (c->err != QT_OK) return;
    for (int k = 0; k < QT__N_LINEARS; k++) {
        if (strcmp(qt__layer_linears[k].linear, linear)) continue;
        qt_gptq_hessian *h = &c->h[qt__layer_linears[k].input];
        if (k > 0 && qt__layer_linears[k - 1].input == qt__layer_linears[k].input) return; /* the same rows again */
        if (!h->s && (c->err = qt_gptq_hessian_init(h, n_in)) != QT_OK) return;
        h->pool = c->pool;
        if (h->n != n_in) { c->err = qt_error(QT_ERR_SHAPE, "gptq: %s: %d inputs, then %lld", linear, n_in, (long long)h->n); return; }
        const double c0 = c->prof ? cpu_now() : 0;
        c->err = qt__hessian_add_scratch(h, &c->scratch, x, n_tokens);
        if (c->prof) c->prof->hessian += cpu_now() - c0;
        qt_act_stats *a = &c->act[qt__layer_linears[k].input];
        if (c->err == QT_OK && c->smoothing && !a->abs_sum) c->err = qt_act_stats_init(a, n_in);
        if (c->err == QT_OK && c->smoothing) qt_act_stats_add(a, x, n_tokens);
        return;
    }
    c->err = qt_error(QT_ERR_UNSUPPORTED, "gptq: the engine ran a linear '%s' quanta has no Hessian for", linear);
}

qt_status qt__hessian_add_scratch(qt_gptq_hessian *h, qt__hess_scratch *sc, const float *x, int64_t n_rows) {
    const int64_t need = qt_gptq_hessian_scratch_floats(h);
    if (need > sc->floats) {
        free(sc->buf);
        sc->floats = 0;
        if (!(sc->buf = malloc((size_t)need * sizeof *sc->buf)))
            return qt_error(QT_ERR_NOMEM, "gptq: out of memory for the Hessian's partial sums");
        sc->floats = need;
    }
    h->scratch = sc->buf;
    const qt_status s = qt_gptq_hessian_add(h, x, n_rows);
    h->scratch = NULL;
    return s;
}

void qt__hess_scratch_free(qt__hess_scratch *sc) {
    free(sc->buf);
    *sc = (qt__hess_scratch){0};
}

void qt__calib_note(const qt_gptq_run_opts *g, const char *fmt, ...) {
    if (!g->note) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    g->note(g->note_ctx, buf);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Input channels that never saw a non-zero value (H_ii = 0): GPTQ zeroes their
 * weight columns (llm-compressor's rule); said once per distinct input, named. */
static void note_dead(const qt_gptq_run_opts *g, int32_t il, int k, const double *H, int64_t cols) {
    if (k > 0 && qt__layer_linears[k - 1].input == qt__layer_linears[k].input) return;
    int64_t n = 0;
    char list[160] = "";
    for (int64_t c = 0; c < cols; c++) {
        if (H[c * cols + c] != 0.0) continue;
        const size_t at = strlen(list);
        if (n < 8) snprintf(list + at, sizeof list - at, "%s%lld", n ? ", " : "", (long long)c);
        else if (n == 8) snprintf(list + at, sizeof list - at, ", ...");
        n++;
    }
    if (n)
        qt__calib_note(g, "warning: blk.%d.%s.weight%s: %lld of %lld input channels never saw a non-zero activation (channel %s): "
             "their weight columns are set to 0, as llm-compressor does", il, qt__layer_linears[k].linear,
             qt__layer_linears[k + 1 < QT__N_LINEARS ? k + 1 : k].input == qt__layer_linears[k].input && k + 1 < QT__N_LINEARS
                 ? " and the linears sharing its input" : "",
             (long long)n, (long long)cols, list);
}

/* The linears' buffers, kept from one linear to the next within a layer and grown to the largest, so
 * their pages are faulted in once per layer (fresh ones per linear were ~12 % of a phase), and freed at
 * the layer's end: at most the largest linear's W and H, and qt_gptq_quantize's work (the memory
 * estimate's linear term). */
typedef struct linear_bufs {
    float *W;                 /* (w_cap) a linear's weights in f32 */
    double *H;                /* (h_cap) its Hessian (cols, cols), smoothed */
    int64_t w_cap, h_cap;
    int h_input;              /* the input (qt__layer_linears[].input) whose Hessian H holds, -1: none */
    qt_gptq_work work;        /* its h_id changes with every H fetched: linears sharing an input share the factor */
} linear_bufs;

static bool bufs_reserve(linear_bufs *b, int64_t w, int64_t h) {
    if (w > b->w_cap) {
        free(b->W);
        b->w_cap = (b->W = malloc((size_t)w * sizeof *b->W)) ? w : 0;
    }
    if (h > b->h_cap) {
        free(b->H);
        b->h_cap = (b->H = malloc((size_t)h * sizeof *b->H)) ? h : 0;
        b->h_input = -1;
    }
    return b->w_cap >= w && b->h_cap >= h;
}

static void bufs_free(linear_bufs *b) {
    free(b->W);
    free(b->H);
    qt_gptq_work_free(&b->work);
    *b = (linear_bufs){.h_input = -1};
}

/* Input in's Hessian into b->H (smoothed by cs), unless it is there already: the same values for every
 * linear of that input (cs is per input), so the work's factor of it stays valid. */
static qt_status fetch_h(linear_bufs *b, const qt_gptq_hessian *h, int in, int64_t cols, const float *cs) {
    if (b->h_input == in) return QT_OK;
    b->h_input = -1;
    b->work.h_id++;
    qt_status s = qt_gptq_hessian_get(h, b->H);
    if (s == QT_OK && cs) qt_smooth_hessian(b->H, cols, cs);
    if (s == QT_OK) b->h_input = in;
    return s;
}

/* Whether linear k is the last of the layer's linears reading its input (q/k/v, gate/up share one). */
static bool last_of_input(int k) {
    for (int j = k + 1; j < QT__N_LINEARS; j++)
        if (qt__layer_linears[j].input == qt__layer_linears[k].input) return false;
    return true;
}

/* One linear: its weights in f32 (smoothed: sl), its Hessian, the target, the engine rebound. */
static qt_status one_linear(const qt_model *m, qt_layerwise *lw, int32_t il, int k, observer_ctx *oc, qt__calib_target *tg,
                            const qt__smooth_layer *sl, const qt_gptq_run_opts *g, linear_bufs *b, qt_gptq_report *r) {
    char name[QT_MAX_NAME];
    snprintf(name, sizeof name, "blk.%d.%s.weight", il, qt__layer_linears[k].linear);
    const qt_tensor *t = qt_model_find_tensor(m, name);
    if (!t) return QT_OK; /* an architecture without this linear */
    const double c0 = oc->prof ? cpu_now() : 0;
    const int in = qt__layer_linears[k].input;
    const qt_gptq_hessian *h = &oc->h[in];
    if (!h->s) return qt_error(QT_ERR_INTERNAL, "gptq: %s: the engine never showed its inputs", name);
    const int64_t cols = t->ne[0], rows = t->ne[1];
    qt_status s = bufs_reserve(b, rows * cols, cols * cols) ? QT_OK : qt_error(QT_ERR_NOMEM, "gptq: out of memory for %s", name);
    float *W = b->W;
    const double *H = b->H;
    if (s == QT_OK) s = qt_dequantize_rows(t->type, t->data, W, rows, cols);
    /* W holds the source now: its file pages leave memory before the core's buffers arrive (read back
     * from the file if the engine still runs on them: a linear kept as stored) */
    if (s == QT_OK) qt__model_drop_pages(m, t->data, t->nbytes);
    const float *cs = sl->col[in];
    if (s == QT_OK) s = fetch_h(b, h, in, cols, cs);
    /* b->H holds the input's Hessian now and no later linear fetches it: its accumulator (ffn_down's
     * 8192² doubles, half of them written) leaves memory before the core's buffers arrive */
    if (s == QT_OK && last_of_input(k)) qt_gptq_hessian_free(&oc->h[in]);
    if (s == QT_OK && cs) qt_smooth_scale_cols(W, rows, cols, cs);
    if (s == QT_OK && sl->row[k]) qt_smooth_unscale_rows(W, rows, cols, sl->row[k]);
    if (s == QT_OK) note_dead(g, il, k, H, cols);
    qt_tensor bind = *t;
    bind.data = NULL;
    bool done = false;
    qt_gptq_stats st = {0};
    qt_gptq_opts go = g->gptq;
    go.pool = oc->pool;
    go.work = &b->work;
    const double c1 = oc->prof ? cpu_now() : 0;
    if (s == QT_OK) s = tg->linear(tg->ctx, t, W, H, &go, &st, &bind, &done);
    const double c2 = oc->prof ? cpu_now() : 0;
    if (s == QT_OK && bind.data) s = qt_layerwise_set_weight(lw, il, qt__layer_linears[k].linear, &bind);
    if (oc->prof) {
        oc->prof->prepare += c1 - c0;
        oc->prof->factor += st.cpu_factor;
        oc->prof->quantize += c2 - c1 - st.cpu_factor;
        oc->prof->bind += cpu_now() - c2;
    }
    if (s != QT_OK) return qt_error(s, "%s: %s", name, qt_last_error());
    if (done) {
        r->n_gptq++;
        r->loss += st.loss;
        r->n_retries += st.retries;
        r->n_dead_cols += st.dead_cols;
        if (st.retries)
            qt__calib_note(g, "%s: the Hessian needed damping %.3g (%d retries of x10) for its Cholesky factor", name, st.damp,
                 st.retries);
    }
    return QT_OK;
}

/* Layer il's matrices leave memory once no later pass reads them (the engine keeps them mapped:
 * keep_mapped): their whole file pages dropped, page-aligned inward so neighbours stay; a read-only
 * mapping reads them back if touched. The norms are the engine's f32 copies; the embedding's looked-up
 * pages are dropped as they are read (lib/engine/forward.c). So the source weights resident at once
 * are one layer's, whatever the depth. */
static void drop_layer_source(const qt_model *m, int32_t il) {
    char pre[24];
    const int n = snprintf(pre, sizeof pre, "blk.%d.", il);
    for (int32_t i = 0; i < qt_model_n_tensors(m); i++) {
        const qt_tensor *t = qt_model_tensor(m, i);
        if (t->n_dims >= 2 && !strncmp(t->name, pre, (size_t)n)) qt__model_drop_pages(m, t->data, t->nbytes);
    }
}

/* The finished layers of an earlier run: bound and run forward, so the next layer sees their outputs. */
static qt_status replay(const qt_model *m, const qt_gptq_run_opts *g, qt__calib_target *tg, qt_layerwise *lw,
                        const resume_point *rp) {
    qt_status s = QT_OK;
    for (int32_t il = 0; s == QT_OK && il < rp->start; il++) {
        s = tg->restore_layer(tg->ctx, m, lw, il);
        if (s == QT_OK) s = qt_layerwise_run_layer(lw, NULL, NULL);
        drop_layer_source(m, il);
    }
    if (s == QT_OK && rp->start) qt__calib_note(g, "resumed: layers 1-%d from the interrupted run", rp->start);
    if (s == QT_OK && g->kv_data) {
        const size_t n = (size_t)rp->start * g->kv_data->n_per_layer;
        if (n) memcpy(g->kv_data->k, rp->k_amax, n * sizeof(float));
        if (n) memcpy(g->kv_data->v, rp->v_amax, n * sizeof(float));
        g->kv_data->n_tokens = rp->kv_tokens;
    }
    return s;
}

static qt_status run_layers(const qt_model *m, const qt_gptq_run_opts *g, qt__calib_target *tg, qt_gptq_report *r,
                            const resume_point *rp) {
    const int32_t n_layer = qt_model_hparams(m)->n_layer;
    if (!g->tokens || g->n_seq < 1 || g->n_tok < 2)
        return qt_error(QT_ERR_ARG, "gptq: calibration needs at least 1 sequence of 2 tokens (%d x %d)", g->n_seq, g->n_tok);
    const qt_arch_info *ai = qt__arch_info(qt_model_hparams(m)->arch);
    if (g->smoothing != QT_SMOOTH_NONE && (!ai || !ai->smooth))
        return qt_error(QT_ERR_UNSUPPORTED, "%s: architecture '%s' has no norm -> linear folding pairs to smooth "
                        "(lib/model/arch.c)", g->smoothing == QT_SMOOTH_AWQ ? "awq" : "smoothquant",
                        qt_model_hparams(m)->arch_name);
    if (g->n_tok > qt_model_hparams(m)->n_ctx_train)
        return qt_error(QT_ERR_ARG, "gptq: sequences of %d tokens are longer than the model's context (%d)", g->n_tok,
                        qt_model_hparams(m)->n_ctx_train);
    qt_engine_opts eo;
    qt_engine_opts_default(&eo);
    eo.n_ctx = eo.n_batch = g->n_tok;
    eo.n_threads = g->threads;
    eo.kv_type = QT_KV_TYPE_F32;
    eo.keep_mapped = true; /* one layer's source resident at a time (drop_layer_source), not a copy of all */
    qt_engine_ctx *e = NULL;
    qt_layerwise *lw = NULL;
    qt_threadpool *pool = NULL;
    linear_bufs bufs = {.h_input = -1};
    qt_status s = qt_engine_new(m, &eo, &e);
    if (s == QT_OK) s = qt_threadpool_create(g->threads, &pool);
    if (s == QT_OK) s = qt_layerwise_new(e, g->tokens, g->n_seq, g->n_tok, &lw);
    /* the quantized layers' f32 values and packed rows through sgemm (lib/engine/matmul_blas.c) */
    if (s == QT_OK) s = qt__layerwise_set_blas(lw, true);
    if (g->kv_data) qt_kv_scales_begin(g->kv_data);
    if (s == QT_OK) s = replay(m, g, tg, lw, rp);
    if (s == QT_OK && g->profile)
        qt__calib_note(g, "profile: OpenBLAS %s kernels%s%s", qt__blas_core(), qt__blas_core_note()[0] ? ": " : "",
                       qt__blas_core_note());
    const double t0 = now();
    for (int32_t il = rp->start; s == QT_OK && il < n_layer; il++) {
        layer_profile lp = {0};
        observer_ctx oc = {.smoothing = g->smoothing != QT_SMOOTH_NONE, .pool = pool, .prof = g->profile ? &lp : NULL,
                           .err = QT_OK};
        qt__smooth_layer sl = {0};
        if (g->kv_data) qt_layerwise_set_kv_observer(lw, qt_kv_scales_observe, g->kv_data);
        double c0 = g->profile ? cpu_now() : 0;
        s = qt_layerwise_observe_layer(lw, observe, &oc);
        qt__hess_scratch_free(&oc.scratch);
        lp.observe = g->profile ? cpu_now() - c0 - lp.hessian : 0;
        qt_layerwise_set_kv_observer(lw, NULL, NULL);
        if (s == QT_OK) s = oc.err;
        if (s == QT_OK && g->kv_data) s = g->kv_data->err;
        c0 = g->profile ? cpu_now() : 0;
        if (s == QT_OK && oc.smoothing) s = qt__smooth_layer_run(m, lw, il, oc.h, oc.act, g, tg, &sl, r);
        lp.smooth = g->profile ? cpu_now() - c0 : 0;
        bufs.h_input = -1; /* this layer's Hessians are new */
        for (int k = 0; s == QT_OK && k < QT__N_LINEARS; k++) s = one_linear(m, lw, il, k, &oc, tg, &sl, g, &bufs, r);
        /* the largest linear's W, H and factor buffers would otherwise sit beside the next layer's
         * source pages and Hessian accumulators through its observe forward; faulting them in again
         * costs well under 1 % of a layer (docs/gptq.md "Memory") */
        bufs_free(&bufs);
        for (int k = 0; k < QT__N_INPUTS; k++) qt_gptq_hessian_free(&oc.h[k]), qt_act_stats_free(&oc.act[k]);
        qt__smooth_layer_free(&sl);
        c0 = g->profile ? cpu_now() : 0;
        /* the quantized layer's outputs feed the next layer; the last one's feed nothing */
        if (s == QT_OK && il + 1 < n_layer) s = qt_layerwise_run_layer(lw, NULL, NULL);
        lp.run = g->profile ? cpu_now() - c0 : 0;
        if (s == QT_OK && g->profile)
            qt__calib_note(g, "profile: layer %d, process CPU s: observe forward %.2f, Hessians %.2f, smoothing %.2f, "
                           "W and H copies %.2f, inverse Cholesky %.2f, column loops and grids %.2f, engine rebind %.2f, "
                           "quantized forward %.2f", il + 1, lp.observe, lp.hessian, lp.smooth, lp.prepare, lp.factor,
                           lp.quantize, lp.bind, lp.run);
        if (s == QT_OK && tg->layer_done) s = tg->layer_done(tg->ctx, m, lw, il);
        if (s == QT_OK && tg->save_layer) s = tg->save_layer(tg->ctx, m, lw, il, r);
        drop_layer_source(m, il);
        if (s != QT_OK) break;
        const double el = now() - t0;
        qt__calib_note(g, "layer %d/%d quantized: %.1f s elapsed, ETA %.1f s", il + 1, n_layer, el,
                       el / (il + 1 - rp->start) * (n_layer - il - 1));
        if (g->layer_written) g->layer_written(g->layer_written_ctx, il + 1);
        qt_progress_report(&g->progress, "gptq", il + 1, n_layer);
        if (qt_cancelled()) s = qt_error(QT_ERR_INTERRUPTED, "gptq: interrupted");
    }
    if (s == QT_OK && g->kv_data) s = qt_kv_scales_finish(g->kv_data);
    r->seconds = now() - t0;
    bufs_free(&bufs);
    qt_layerwise_free(lw);
    qt_engine_free(e);
    qt_threadpool_free(pool);
    return s;
}

/* ---- the memory estimate (quanta/quantize.h qt_gptq_memory) ------------------------------ */

static int32_t plan_find(const qt_quantize_plan *p, const char *name);

#define BLAS_ALLOWANCE ((uint64_t)2 << 20) /* OpenBLAS's touched buffer pages and the heap's slack, measured (docs/gptq.md) */

/* Bytes the engine allocates for one sequence of n_tok rows (lib/engine/engine.c alloc_buffers, kv.c). */
static uint64_t engine_bytes(const qt_hparams *hp, int32_t n_tok, int threads) {
    const uint64_t n_q = (uint64_t)hp->n_head * hp->head_dim, n_kv = (uint64_t)hp->n_head_kv * hp->head_dim;
    uint64_t max_in = (uint64_t)hp->n_embd;
    if (n_q > max_in) max_in = n_q;
    if ((uint64_t)hp->n_ff > max_in) max_in = (uint64_t)hp->n_ff;
    const uint64_t per_row = 3 * (uint64_t)hp->n_embd + 2 * n_q + 2 * n_kv + 2 * (uint64_t)hp->n_ff + max_in;
    /* per thread: scratch rows, and the sgemm path's unit of dequantized rows (layerwise.c) */
    return 4 * ((uint64_t)n_tok * per_row + 2 * (uint64_t)hp->n_layer * n_tok * n_kv +
                (uint64_t)(threads > 0 ? threads : 1) * (max_in * (1 + QT__BLAS_ROWS) + 3 * (uint64_t)hp->head_dim));
}

/* Resident bytes of an n x n Hessian accumulator: calloc'd, and only its upper
 * triangle is ever written (cblas_dsyrk, CblasUpper), so a large one (mapped
 * zero pages, above malloc's 128 KiB mmap threshold) holds only the 4 KiB pages
 * the triangle reaches; a small one comes from the heap, all of it resident. */
static uint64_t hessian_resident(uint64_t n) {
    const uint64_t bytes = n * n * 8;
    if (bytes < ((uint64_t)128 << 10)) return bytes;
    uint64_t pages = 0, last = UINT64_MAX;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t first = (i * n + i) * 8 / 4096;
        const uint64_t end = ((i + 1) * n * 8 - 1) / 4096;
        if (last != UINT64_MAX && first <= last) first = last + 1;
        if (first <= end) pages += end - first + 1;
        if (end > last || last == UINT64_MAX) last = end;
    }
    return pages * 4096;
}

/* A compressed-tensors linear's rows bound to the engine until its layer is done (ct_linear's
 * bound_type): the 4-bit rows of lib/quant/ct4.h (header, <= 5 bytes per group, 2 codes a byte)
 * where the groups allow them, else f32. */
static uint64_t ct_bound_bytes(uint64_t R, uint64_t C, int64_t group) {
    const bool ct4 = C % QT_CT4_CHUNK == 0 && (group == 16 || group == 32 || group == 64 || group == 128);
    return ct4 ? R * (4 + (C / (uint64_t)group) * 5 + C / 2) : R * C * 4;
}

/* One linear's working set (one_linear, qt_gptq_quantize, the grid), rows x cols. */
static uint64_t linear_bytes(uint64_t R, uint64_t C, bool gguf, size_t row_bytes, int64_t group) {
    const uint64_t block = 128, G = gguf ? 256 : (uint64_t)(group > 0 ? group : (int64_t)C);
    uint64_t b = R * C * 4 + C * C * 8                      /* W (f32, also the loop's working copy), H */
               + hessian_resident(C) + C * C * 4            /* A (the factorization's workspace: only its
                                                               lower triangle is written, fresh pages for the
                                                               layer's widest), U; --act-order adds W
                                                               permuted, R * C * 4 */
               + R * (2 * block + G + 2) * 4 + 24 * C;      /* err, the block's copy, wg, col, q; perm, pos, diag */
    b += gguf ? R * C * 14 + R * row_bytes : R * C + R * (C / G) * 5; /* grid (CT's bound rows: ct_bound_bytes) */
    return b;
}

void qt_gptq_memory_estimate(const qt_model *m, const qt_quantize_plan *p, int64_t ct_group, const int32_t *tokens,
                             int32_t n_seq, int32_t n_tok, int threads, uint64_t base, uint64_t peak_before,
                             qt_gptq_memory *out) {
    const qt_hparams *hp = qt_model_hparams(m);
    *out = (qt_gptq_memory){.base = base, .peak_before = peak_before, .blas = BLAS_ALLOWANCE};
    out->engine = engine_bytes(hp, n_tok, threads);
    out->hidden = (uint64_t)n_seq * n_tok * hp->n_embd * 4;
    uint64_t biggest = 0;
    /* the source weights resident at once: the largest layer's matrices (run_layers drops each layer's
     * pages once done, drop_layer_source; the engine keeps them mapped), and the vectors (the engine's
     * f32 copies of the norms, at most their file pages). The embedding's looked-up pages are dropped
     * as they are read (keep_mapped), so the calibration tokens add none: `tokens` is not needed. */
    (void)tokens;
    uint64_t *layer_bytes = calloc((size_t)hp->n_layer + 1, sizeof *layer_bytes), vectors = 0;
    for (int32_t i = 0; i < qt_model_n_tensors(m); i++) {
        const qt_tensor *t = qt_model_tensor(m, i);
        int il = -1;
        if (t->n_dims < 2 && (!strncmp(t->name, "blk.", 4) || !strcmp(t->name, "output_norm.weight"))) vectors += t->nbytes;
        else if (layer_bytes && sscanf(t->name, "blk.%d.", &il) == 1 && il >= 0 && il < hp->n_layer) layer_bytes[il] += t->nbytes;
    }
    /* pages outside the model's own file mappings (an HF checkpoint's: qt__model_drop_pages does not
     * reach them yet) stay once read: every layer */
    bool droppable = true;
    for (int32_t i = 0; i < qt_model_n_tensors(m); i++) {
        const qt_tensor *t = qt_model_tensor(m, i);
        if (t->n_dims >= 2 && !strncmp(t->name, "blk.", 4) && !qt__model_in_map(m, t->data, t->nbytes)) droppable = false;
    }
    uint64_t max_layer = 0;
    for (int32_t il = 0; layer_bytes && il < hp->n_layer; il++) {
        if (!droppable) out->model += layer_bytes[il];
        if (layer_bytes[il] > max_layer) max_layer = layer_bytes[il];
    }
    if (droppable) out->model = max_layer;
    const uint64_t other_layers = out->model - max_layer; /* resident beside the phase's own layer */
    free(layer_bytes);
    out->model += vectors;
    /* Two phases per layer (run_layers): the observe forward, with the layer's source pages, every
     * Hessian accumulator and their partial sums; then each linear's core, with its own buffers, the
     * accumulators still to be fetched (each is freed once its last linear has its copy: last_of_input),
     * the layer's quantized linears so far and the source pages of the linears still to come (each
     * linear's are dropped once it is in W). The linears' buffers are freed at the layer's end. */
    static const char *const lin[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
    int64_t max_in = 1;
    uint64_t observe = 0, core = 0;
    for (int32_t il = 0; il < hp->n_layer; il++) {
        uint64_t hess = 0, layer_out = 0, acc[QT__N_INPUTS] = {0}, src[QT__N_LINEARS] = {0}, lbk[QT__N_LINEARS] = {0},
                 outk[QT__N_LINEARS] = {0}, layer_src = 0;
        for (int k = 0; k < QT__N_LINEARS; k++) {
            char name[QT_MAX_NAME];
            snprintf(name, sizeof name, "blk.%d.%s.weight", il, lin[k]);
            const qt_tensor *t = qt_model_find_tensor(m, name);
            if (!t) continue;
            const uint64_t C = (uint64_t)t->ne[0], R = (uint64_t)t->ne[1];
            if ((int64_t)C > max_in) max_in = (int64_t)C;
            src[k] = t->nbytes;
            layer_src += t->nbytes;
            const int in = qt__layer_linears[k].input;
            if (!acc[in]) hess += acc[in] = hessian_resident(C);
            lbk[k] = R * C * 4 + C * C * 8; /* W and H, whether or not the target quantizes it */
            const int32_t pi = p ? plan_find(p, name) : -1;
            const bool quantized = p ? pi >= 0 && p->tensors[pi].type != t->type : true;
            if (!quantized) continue;
            const qt_type ty = p ? p->tensors[pi].type : QT_TYPE_COUNT;
            const size_t rb = p ? qt_row_size(ty, (int64_t)C) : 0;
            lbk[k] = linear_bytes(R, C, p != NULL, rb, ct_group);
            if (lbk[k] > out->linear) out->linear = lbk[k];
            const uint64_t G = (uint64_t)(ct_group > 0 ? ct_group : (int64_t)C);
            layer_out += outk[k] = p ? p->tensors[pi].bytes : R * C + R * (C / G) * 5 + ct_bound_bytes(R, C, ct_group);
            const uint64_t io = (uint64_t)t->nbytes + (p ? p->tensors[pi].bytes : R * C);
            if (io > biggest) biggest = io;
        }
        if (hess > out->hessians) out->hessians = hess;
        /* one layer's output at a time: each finished layer goes to disk */
        if (layer_out > out->output) out->output = layer_out;
        const uint64_t partial = (uint64_t)(threads > 0 ? threads : 1) * 256 * (uint64_t)max_in * 4; /* HESS_PANEL rows */
        if (layer_src + hess + partial > observe) observe = layer_src + hess + partial;
        uint64_t out_before = 0, src_done = 0;
        for (int k = 0; k < QT__N_LINEARS; k++) {
            src_done += src[k];
            uint64_t alive = 0;
            for (int in = 0; in < QT__N_INPUTS; in++) {
                int last = -1;
                for (int j = 0; j < QT__N_LINEARS; j++)
                    if (qt__layer_linears[j].input == in) last = j;
                if (last > k) alive += acc[in];
            }
            const uint64_t c = lbk[k] + alive + out_before + (layer_src - src_done);
            if (src[k] && c > core) core = c;
            out_before += outk[k];
        }
    }
    for (int32_t i = 0; p && i < p->n_tensors; i++)
        if (p->tensors[i].src_bytes + p->tensors[i].bytes > biggest) biggest = p->tensors[i].src_bytes + p->tensors[i].bytes;
    out->write = biggest + ((uint64_t)1 << 20);
    const uint64_t phase = observe > core ? observe : core;
    const uint64_t loop = vectors + other_layers + out->engine + out->hidden + phase + out->blas;
    const uint64_t write = out->model + out->write + out->blas;
    out->total = base + (loop > write ? loop : write);
    if (peak_before > out->total) out->total = peak_before;
}

qt_gptq_run_opts qt_gptq_run_opts_default(void) {
    return (qt_gptq_run_opts){.gptq = qt_gptq_opts_default(), .hessian_importance = true, .awq_grid = 20,
                              .awq_duo = true, .alpha = 0.5};
}

/* ---- GGUF: the plan's type per tensor ------------------------------------------------- */

typedef struct gguf_target {
    const qt_quantize_plan *p;
    const qt_model *m;
    const qt_gptq_run_opts *g;
    uint8_t **given;          /* (p->n_tensors) the algorithm's bytes, NULL: the pipeline quantizes */
    bool *transformed;        /* (p->n_tensors) smoothed: not measured against the input */
    float *importance;        /* (largest cols) diag(H) */
    int32_t n_rtn;
    qt__gptq_state *state;    /* the finished layers on disk (OUT.partial.layers) */
    int32_t held_layer;       /* a replayed layer whose bytes are bound to the engine, -1: none */
    uint8_t *held[QT__N_LINEARS]; /* its tensors read back from disk */
} gguf_target;

static int32_t plan_find(const qt_quantize_plan *p, const char *name) {
    for (int32_t i = 0; i < p->n_tensors; i++)
        if (!strcmp(p->tensors[i].name, name)) return i;
    return -1;
}

/* W (rows, cols) rounded to nearest into plan tensor i's type, kept as its output and bound. */
static qt_status gguf_round(gguf_target *x, int32_t i, qt_type type, const float *W, int64_t rows, int64_t cols,
                            qt_tensor *bind) {
    const size_t nb = qt_row_size(type, cols) * (size_t)rows;
    if (!(x->given[i] = malloc(nb))) return qt_error(QT_ERR_NOMEM, "out of memory");
    qt_status s = qt_quantize_rows(type, W, x->given[i], rows, cols, NULL);
    if (s != QT_OK) return s;
    x->transformed[i] = x->g->smoothing != QT_SMOOTH_NONE;
    bind->type = type;
    bind->nbytes = nb;
    bind->data = x->given[i];
    return QT_OK;
}

static qt_status gguf_linear(void *ctx, const qt_tensor *src, float *W, const double *H, const qt_gptq_opts *o,
                             qt_gptq_stats *st, qt_tensor *bind, bool *done) {
    gguf_target *x = ctx;
    const int32_t i = plan_find(x->p, src->name);
    const int64_t cols = src->ne[0], rows = src->ne[1];
    if (i < 0 || x->p->tensors[i].kept) return QT_OK;
    const qt_type type = x->p->tensors[i].type;
    const bool smoothed = x->g->smoothing != QT_SMOOTH_NONE;
    if (type == src->type && !smoothed) return QT_OK; /* kept as stored */
    if (x->g->rtn || !qt_gptq_gguf_supported(type)) {
        /* no grid for the type (the pipeline would round it to nearest, and says so here), or --algo awq */
        if (!x->g->rtn && qt_type_get(type)->is_quantized) {
            x->n_rtn++;
            qt__calib_note(x->g, "%s: no GPTQ grid for %s: round-to-nearest", src->name, qt_type_get(type)->name);
        }
        return gguf_round(x, i, type, W, rows, cols, bind);
    }
    float *imp = NULL;
    if (x->g->hessian_importance) {
        imp = x->importance;
        for (int64_t c = 0; c < cols; c++) imp[c] = (float)H[c * cols + c];
    }
    qt_gptq_gguf gg;
    qt_status s = qt_gptq_gguf_init(&gg, type, rows, cols, imp);
    qt_gptq_grid grid = qt_gptq_gguf_grid(&gg);
    if (s == QT_OK) s = qt_gptq_quantize(W, rows, cols, H, &grid, o, st);
    if (s != QT_OK) {
        qt_gptq_gguf_free(&gg);
        return s;
    }
    x->given[i] = gg.bytes; /* the grid's bytes are the output */
    x->transformed[i] = smoothed;
    gg.bytes = NULL;
    bind->type = type;
    bind->nbytes = gg.row_bytes * (size_t)rows;
    bind->data = x->given[i];
    qt_gptq_gguf_free(&gg);
    *done = true;
    return QT_OK;
}

/* Smoothing: a GGUF block (or the whole row for a float type); 0 when copied as stored. */
static int64_t gguf_group(void *ctx, const qt_tensor *src) {
    const gguf_target *x = ctx;
    const int32_t i = plan_find(x->p, src->name);
    if (i < 0) return 0;
    if (src->n_dims < 2) return 1; /* a norm or bias: written from the smoothed values */
    if (x->p->tensors[i].kept) return 0;
    const qt_type_traits *tr = qt_type_get(x->p->tensors[i].type);
    return tr->is_quantized ? tr->block_elems : src->ne[0];
}

static qt_status gguf_fake_quant(void *ctx, const qt_tensor *src, float *W) {
    const gguf_target *x = ctx;
    const qt_type type = x->p->tensors[plan_find(x->p, src->name)].type;
    const int64_t cols = src->ne[0], rows = src->ne[1];
    if (type == QT_TYPE_F32) return QT_OK;
    uint8_t *b = malloc(qt_row_size(type, cols) * (size_t)rows);
    qt_status s = b ? qt_quantize_rows(type, W, b, rows, cols, NULL) : qt_error(QT_ERR_NOMEM, "out of memory");
    if (s == QT_OK) s = qt_dequantize_rows(type, b, W, rows, cols);
    free(b);
    return s;
}

static qt_status gguf_vector(void *ctx, const qt_tensor *src, const float *v) {
    gguf_target *x = ctx;
    const int32_t i = plan_find(x->p, src->name);
    if (i < 0) return qt_error(QT_ERR_INTERNAL, "smoothing: %s is not in the plan", src->name);
    qt_tensor bind;
    return gguf_round(x, i, x->p->tensors[i].type, v, 1, src->ne[0], &bind);
}

/* Whether plan tensor name is layer il's ("blk.il."); *rest: what follows. */
static bool of_layer(const char *name, int32_t il, const char **rest) {
    char pre[24];
    const int n = snprintf(pre, sizeof pre, "blk.%d.", il);
    if (strncmp(name, pre, (size_t)n)) return false;
    *rest = name + n;
    return true;
}

/* The plan indices of layer il's tensors the algorithm gave bytes for (its linears, and
 * the norms and biases that absorbed smoothing scales), in plan order. */
static int32_t layer_given(const gguf_target *x, int32_t il, int32_t *idx) {
    int32_t n = 0;
    const char *rest;
    for (int32_t i = 0; i < x->p->n_tensors; i++)
        if (x->given[i] && of_layer(x->p->tensors[i].name, il, &rest)) idx[n++] = i;
    return n;
}

/* A linear's weight ("<linear>.weight" after "blk.N."), not a norm or bias. */
static bool is_linear_weight(const char *rest) {
    char base[QT_MAX_NAME];
    const char *dot = strrchr(rest, '.');
    if (!dot || strcmp(dot, ".weight")) return false;
    snprintf(base, sizeof base, "%.*s", (int)(dot - rest), rest);
    return qt__layer_linear_find(base) >= 0;
}

/* Layer il's linear k bound to t (t->name "blk.N.<linear>.weight"). */
static qt_status bind_linear(qt_layerwise *lw, int32_t il, const qt_tensor *t) {
    const char *linear = strchr(t->name + 4, '.') + 1; /* "blk.N." */
    char base[QT_MAX_NAME];
    snprintf(base, sizeof base, "%.*s", (int)(strrchr(linear, '.') - linear), linear);
    return qt_layerwise_set_weight(lw, il, base, t);
}

/* The held replayed layer's linears bound to the model's tensors again, and its bytes freed. */
static qt_status release_held(gguf_target *x, const qt_model *m, qt_layerwise *lw) {
    qt_status s = QT_OK;
    for (int k = 0; x->held_layer >= 0 && k < QT__N_LINEARS; k++) {
        if (!x->held[k]) continue;
        char name[QT_MAX_NAME];
        snprintf(name, sizeof name, "blk.%d.%s.weight", x->held_layer, qt__layer_linears[k].linear);
        if (s == QT_OK) s = bind_linear(lw, x->held_layer, qt_model_find_tensor(m, name));
        free(x->held[k]);
        x->held[k] = NULL;
    }
    x->held_layer = -1;
    return s;
}

/* --resume: layer il's tensors read back from OUT.partial.layers and bound (the layer
 * replayed before stays bound until this one replaces it). */
/* --resume: layer il's smoothed norms and biases, read back and bound to the engine. */
static qt_status gguf_restore_vectors(gguf_target *x, const qt_model *m, qt_layerwise *lw, int32_t il) {
    qt_status s = QT_OK;
    const char *rest;
    for (int32_t i = 0; s == QT_OK && i < x->p->n_tensors; i++) {
        const qt_quantize_tensor *pt = &x->p->tensors[i];
        if (!of_layer(pt->name, il, &rest) || is_linear_weight(rest) || !qt__gptq_state_has(x->state, i)) continue;
        const qt_tensor *t = qt_model_find_tensor(m, pt->name);
        uint8_t *b = NULL;
        float *v = t ? malloc((size_t)t->ne[0] * sizeof *v) : NULL;
        s = v ? qt__gptq_state_read(x->state, i, &b) : qt_error(QT_ERR_NOMEM, "%s: out of memory", pt->name);
        if (s == QT_OK) s = qt_dequantize_rows(pt->type, b, v, 1, t->ne[0]);
        if (s == QT_OK) s = qt_layerwise_set_vector(lw, il, rest, v, t->ne[0]);
        x->transformed[i] = true;
        free(b);
        free(v);
    }
    return s;
}

static qt_status gguf_restore_layer(void *ctx, const qt_model *m, qt_layerwise *lw, int32_t il) {
    gguf_target *x = ctx;
    qt_status s = release_held(x, m, lw);
    x->held_layer = il;
    for (int k = 0; s == QT_OK && k < QT__N_LINEARS; k++) {
        char name[QT_MAX_NAME];
        snprintf(name, sizeof name, "blk.%d.%s.weight", il, qt__layer_linears[k].linear);
        const int32_t i = plan_find(x->p, name);
        if (i < 0 || !qt__gptq_state_has(x->state, i)) continue;
        if ((s = qt__gptq_state_read(x->state, i, &x->held[k])) != QT_OK) break;
        x->transformed[i] = x->g->smoothing != QT_SMOOTH_NONE;
        qt_tensor bind = *qt_model_find_tensor(m, name);
        bind.type = x->p->tensors[i].type;
        bind.nbytes = (size_t)x->p->tensors[i].bytes;
        bind.data = x->held[k];
        s = bind_linear(lw, il, &bind);
    }
    return s == QT_OK ? gguf_restore_vectors(x, m, lw, il) : s;
}

/* Layer il on disk; then out of memory: its linears bound to the model's tensors again. */
static qt_status gguf_save_layer(void *ctx, const qt_model *m, qt_layerwise *lw, int32_t il, const qt_gptq_report *r) {
    gguf_target *x = ctx;
    int32_t *idx = malloc((size_t)x->p->n_tensors * sizeof *idx + 1);
    if (!idx) return qt_error(QT_ERR_NOMEM, "out of memory");
    const int32_t n = layer_given(x, il, idx);
    const qt_kv_scales *kv = x->g->kv_data;
    qt_status s = qt__gptq_state_save_layer(x->state, x->p, idx, n, x->given, kv ? kv->k : NULL, kv ? kv->v : NULL,
                                            kv ? (il + 1) * kv->n_per_layer : 0, kv ? kv->n_tokens : 0, r, x->n_rtn);
    if (s == QT_OK) s = release_held(x, m, lw);
    const char *rest;
    for (int32_t j = 0; s == QT_OK && j < n; j++) {
        const char *name = x->p->tensors[idx[j]].name;
        if (of_layer(name, il, &rest) && is_linear_weight(rest)) s = bind_linear(lw, il, qt_model_find_tensor(m, name));
        free(x->given[idx[j]]);
        x->given[idx[j]] = NULL;
    }
    free(idx);
    return s;
}

/* The writer's reader of the spilled tensors. */
static qt_status gguf_load(void *ctx, int32_t i, uint8_t **bytes) {
    gguf_target *x = ctx;
    return qt__gptq_state_read(x->state, i, bytes);
}

/* From layer `start` (the layers before it finished by an interrupted run, amax
 * their KV maxima, n_amax each of k and v): the loop, or (all layers finished)
 * only the KV scales. */
static qt_status continue_layers(const qt_model *m, const qt_gptq_run_opts *g, qt__calib_target *tg, qt_gptq_report *r,
                                 int32_t start, const float *amax, int32_t n_amax, int64_t kv_tokens) {
    const int32_t n_layer = qt_model_hparams(m)->n_layer;
    qt_kv_scales *kv = g->kv_data;
    resume_point rp = {.start = start > n_layer ? n_layer : start, .k_amax = amax, .v_amax = amax + n_amax,
                       .kv_tokens = kv_tokens};
    if (rp.start < n_layer) return run_layers(m, g, tg, r, &rp);
    if (!kv) return QT_OK;
    memcpy(kv->k, rp.k_amax, (size_t)n_amax * sizeof(float));
    memcpy(kv->v, rp.v_amax, (size_t)n_amax * sizeof(float));
    kv->n_tokens = rp.kv_tokens;
    kv->err = QT_OK;
    return qt_kv_scales_finish(kv);
}

/* --resume: the finished layers back from OUT.partial.layers, then on. */
static qt_status gguf_layers(const qt_model *m, const qt_gptq_run_opts *g, qt__calib_target *tg, gguf_target *x,
                             qt_gptq_report *r) {
    const int32_t start = qt__gptq_state_layers_done(x->state);
    const int32_t n_amax = g->kv_data ? qt_model_hparams(m)->n_layer * g->kv_data->n_per_layer : 0;
    float *amax = calloc((size_t)(2 * n_amax + 1), sizeof *amax);
    int64_t kv_tokens = 0;
    qt_status s = amax ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
    if (s == QT_OK && start) s = qt__gptq_state_restore(x->state, amax, amax + n_amax, n_amax, &kv_tokens, r, &x->n_rtn);
    if (s == QT_OK) s = continue_layers(m, g, tg, r, start, amax, n_amax, kv_tokens);
    free(amax);
    return s;
}

qt_status qt_gptq_quantize_gguf(const qt_model *m, const char *out_path, const qt_quantize_opts *o,
                                qt_quantize_plan *p, const qt_gptq_run_opts *g, qt_gptq_report *r) {
    *r = (qt_gptq_report){0};
    if (!out_path || !out_path[0]) return qt_error(QT_ERR_ARG, "quantize: no output path");
    if (o->imatrix)
        return qt_error(QT_ERR_ARG, "gptq: --imatrix is for round-to-nearest; GPTQ uses the calibration Hessians");
    if (!o->algorithm)
        return qt_error(QT_ERR_ARG, "gptq: the quantize options must name the algorithm (\"gptq\", \"awq\", ...: it is recorded)");
    int64_t max_cols = 1;
    for (int32_t i = 0; i < p->n_tensors; i++) {
        const qt_tensor *t = qt_model_find_tensor(m, p->tensors[i].name);
        if (t && t->ne[0] > max_cols) max_cols = t->ne[0];
    }
    gguf_target x = {.p = p, .m = m, .g = g, .held_layer = -1};
    x.given = calloc((size_t)p->n_tensors + 1, sizeof *x.given);
    x.transformed = calloc((size_t)p->n_tensors + 1, sizeof *x.transformed);
    x.importance = malloc((size_t)max_cols * sizeof *x.importance);
    qt_status s = x.given && x.transformed && x.importance ? QT_OK : qt_error(QT_ERR_NOMEM, "gptq: out of memory");
    qt__calib_target tg = {&x, gguf_linear, NULL, gguf_group, gguf_fake_quant, gguf_vector, gguf_restore_layer, NULL};
    const int32_t n_amax = g->kv_data ? qt_model_hparams(m)->n_layer * g->kv_data->n_per_layer : 0;
    if (s == QT_OK) s = qt__gptq_state_open(m, out_path, o, p, n_amax, &x.state);
    tg.save_layer = gguf_save_layer;
    if (s == QT_OK) s = gguf_layers(m, g, &tg, &x, r);
    r->n_rtn = x.n_rtn;
    if (s == QT_OK) {
        /* the file itself resumes only where its own state was left (an interrupted write) */
        char *st = malloc(strlen(out_path) + sizeof QT_QUANTIZE_STATE_SUFFIX);
        if (st) sprintf(st, "%s%s", out_path, QT_QUANTIZE_STATE_SUFFIX);
        qt_quantize_opts wo = *o;
        wo.resume = o->resume && st && access(st, F_OK) == 0;
        wo.resumable = o->resumable || o->resume;
        free(st);
        const qt__quantize_given given = {(const uint8_t *const *)x.given, gguf_load, &x, x.transformed};
        s = qt__quantize_write_staged(m, out_path, &wo, p, &given);
    }
    bool kept = false;
    const int32_t done = qt__gptq_state_layers_done(x.state);
    qt__gptq_state_close(x.state, s, &kept);
    r->n_layers_kept = kept ? done : 0;
    for (int32_t i = 0; x.given && i < p->n_tensors; i++) free(x.given[i]);
    for (int k = 0; k < QT__N_LINEARS; k++) free(x.held[k]);
    free(x.given);
    free(x.transformed);
    free(x.importance);
    return s;
}

/* ---- compressed-tensors schemes: codes handed to qt_ct_export ------------------------ */

typedef struct ct_codes {
    char name[QT_MAX_NAME];
    int64_t rows, cols;
    qt_gptq_ct_int g;         /* integer schemes: codes, scales, zero points */
    qt_gptq_ct_float f;       /* float schemes: codes, scales or scale codes, the shared scale */
    bool spilled;             /* the arrays are in the spill file at `off` (and freed here) */
    uint64_t off;
    uint64_t f32_off;         /* --resumable: the f32 values the engine ran on, in the spill file */
} ct_codes;

typedef struct ct_vector {
    char name[QT_MAX_NAME];
    int64_t n;
    float *v;                 /* (n) a norm or bias that absorbed smoothing scales */
    uint64_t off;             /* --resumable: its place in the spill file */
} ct_vector;

typedef struct ct_target {
    const qt_model *m;
    const qt_gptq_run_opts *g;
    bool is_float;
    qt_ct_int_args a;         /* integer schemes */
    int fkind;                /* float schemes: qt_gptq_float_kind */
    qt_ct_dtype fdt;
    ct_codes *t;
    int32_t n, cap;
    ct_vector *vec;
    int32_t n_vec, cap_vec;
    void *bound[QT__N_LINEARS];   /* the current layer's quantized weights, bound to the engine (bound_type) */
    qt_tensor bound_t[QT__N_LINEARS];
    int n_bound;
    /* Each finished layer's codes go to an unlinked spill file beside OUT (nothing is left
     * however the run ends) and leave memory; the writer's callbacks read them back. */
    qt__ct_layers *layers;    /* the spill file (gptq_ct_state.c): kept, with a state, for --resumable */
    int spill_fd;
    uint64_t spill_bytes;
    int32_t n_spilled;        /* t[0..n_spilled) are on disk */
    int32_t layer_t0, layer_v0; /* the last spilled layer's first linear and vector */
    int32_t n_vec_spilled;
    int held_layer;           /* a replayed layer bound to the engine (--resume), -1: none */
    float *held[QT__N_LINEARS];
    ct_codes cur;             /* the arrays last read back (what ct_given returns) */
    qt_status err;            /* a failed read back, reported after the write */
    char err_msg[512];
} ct_target;

static int64_t ct_group(void *ctx, const qt_tensor *src) {
    const ct_target *x = ctx;
    if (src->n_dims < 2) return 1; /* a norm: written in the model dtype */
    if (x->is_float) { /* the columns one scale covers (quanta/gptq.h's qt_gptq_float_kind) */
        static const int64_t float_group[] = {[QT_GPTQ_FP8_TENSOR] = 0, [QT_GPTQ_FP8_CHANNEL] = 0,
                                              [QT_GPTQ_FP8_BLOCK] = 128, [QT_GPTQ_NVFP4] = 16, [QT_GPTQ_MXFP4] = 32};
        const int64_t gs = float_group[x->fkind];
        return gs && gs < src->ne[0] ? gs : src->ne[0];
    }
    const qt_ct_int_args a = qt_ct_int_args_for(&x->a, src->ne[0]); /* per channel where no group divides the row */
    return a.strategy == QT_CT_GROUP ? a.group_size : src->ne[0];
}

/* The largest weight amax over src and the shards vLLM fuses with it (the
 * linears of its layer that share its input: q/k/v, gate/up), the amax the
 * writer's shared scales come from (ct_write.c shared_scales). */
static qt_status fused_amax(const qt_model *m, const qt_tensor *src, qt_ct_dtype dt, float *amax) {
    int32_t il;
    char linear[32];
    if (sscanf(src->name, "blk.%d.%31[^.].weight", &il, linear) != 2)
        return qt_error(QT_ERR_INTERNAL, "gptq: '%s' is not a decoder linear", src->name);
    int in = -1;
    for (int k = 0; k < QT__N_LINEARS; k++)
        if (!strcmp(qt__layer_linears[k].linear, linear)) in = qt__layer_linears[k].input;
    *amax = 0.0f;
    for (int k = 0; k < QT__N_LINEARS; k++) {
        char name[QT_MAX_NAME];
        snprintf(name, sizeof name, "blk.%d.%s.weight", il, qt__layer_linears[k].linear);
        const qt_tensor *t = qt__layer_linears[k].input == in ? qt_model_find_tensor(m, name) : NULL;
        if (!t) continue;
        const int64_t n = t->ne[0] * t->ne[1];
        float *w = malloc((size_t)n * sizeof *w);
        qt_status s = w ? qt_dequantize_rows(t->type, t->data, w, t->ne[1], t->ne[0])
                        : qt_error(QT_ERR_NOMEM, "gptq: out of memory for %s", name);
        if (s == QT_OK) *amax = fmaxf(*amax, qt_ct_amax(w, n, dt));
        free(w);
        if (s != QT_OK) return s;
    }
    return QT_OK;
}

/* The grid of src: the scheme's integer groups, or its float format with the
 * scale fused shards share (fp8-static's weight scale, nvfp4's global scale). */
static qt_status ct_grid(ct_target *x, const qt_tensor *src, ct_codes *c, qt_gptq_grid *grid) {
    const int64_t cols = c->cols, rows = c->rows;
    if (!x->is_float) {
        const int64_t group = ct_group(x, src);
        if (cols % group != 0)
            return qt_error(QT_ERR_SHAPE, "%lld columns are not a multiple of the group size %lld", (long long)cols,
                            (long long)group);
        qt_status s = qt_gptq_ct_int_init(&c->g, x->a.bits, x->a.symmetric, (int)x->a.dtype, rows, cols, group);
        *grid = qt_gptq_ct_int_grid(&c->g);
        return s;
    }
    float shared = 0.0f, amax;
    if (x->fkind == QT_GPTQ_FP8_TENSOR || x->fkind == QT_GPTQ_NVFP4) {
        qt_status s = fused_amax(x->m, src, x->fdt, &amax);
        if (s != QT_OK) return s;
        /* qt_ct_fp8_tensor_scale of a tensor whose amax is amax */
        shared = x->fkind == QT_GPTQ_NVFP4 ? qt_ct_nvfp4_global_scale(amax, x->fdt) : qt_ct_fp8_tensor_scale(&amax, 1, x->fdt);
    }
    qt_status s = qt_gptq_ct_float_init(&c->f, (qt_gptq_float_kind)x->fkind, (int)x->fdt, rows, cols, shared);
    *grid = qt_gptq_ct_float_grid(&c->f);
    return s;
}

/* Round to nearest onto src's grid, in place (the loss AWQ's search measures). */
static qt_status ct_fake_quant(void *ctx, const qt_tensor *src, float *W) {
    ct_codes c = {.rows = src->ne[1], .cols = src->ne[0]};
    qt_gptq_grid grid;
    qt_status s = ct_grid(ctx, src, &c, &grid);
    if (s == QT_OK) s = qt_gptq_rtn(W, c.rows, c.cols, &grid);
    qt_gptq_ct_int_free(&c.g);
    qt_gptq_ct_float_free(&c.f);
    return s;
}

/* Room for one more element of `size` bytes in *items (n used of *cap). */
static qt_status grow(void **items, int32_t n, int32_t *cap, size_t size) {
    if (n < *cap) return QT_OK;
    const int32_t c = *cap ? 2 * *cap : 32;
    void *t = realloc(*items, (size_t)c * size);
    if (!t) return qt_error(QT_ERR_NOMEM, "out of memory");
    *items = t;
    *cap = c;
    return QT_OK;
}

static qt_status ct_vector_keep(void *ctx, const qt_tensor *src, const float *v) {
    ct_target *x = ctx;
    qt_status s = grow((void **)&x->vec, x->n_vec, &x->cap_vec, sizeof *x->vec);
    if (s != QT_OK) return s;
    ct_vector *c = &x->vec[x->n_vec];
    *c = (ct_vector){.n = src->ne[0]};
    snprintf(c->name, sizeof c->name, "%s", src->name);
    if (!(c->v = malloc((size_t)c->n * sizeof *c->v))) return qt_error(QT_ERR_NOMEM, "out of memory");
    memcpy(c->v, v, (size_t)c->n * sizeof *c->v);
    x->n_vec++;
    return QT_OK;
}

static const float *ct_vector_values(void *ctx, const char *name, int64_t n) {
    const ct_target *x = ctx;
    for (int32_t i = 0; i < x->n_vec; i++)
        if (!strcmp(x->vec[i].name, name) && x->vec[i].n == n) return x->vec[i].v;
    return NULL;
}

/* The engine row type the checkpoint reader loads c's tensor as (lib/io/ct_read.c ct4_type_of),
 * QT_TYPE_F32 where it dequantizes: the 4-bit rows of lib/quant/ct4.h for int4 groups, NVFP4, MXFP4. */
static qt_type bound_type(const ct_target *x, const ct_codes *c) {
    if (c->cols % QT_CT4_CHUNK || c->cols > QT_CT_ROW_MAX_N) return QT_TYPE_F32;
    if (x->is_float) return x->fkind == QT_GPTQ_NVFP4 ? QT_TYPE_CT_NVFP4 : x->fkind == QT_GPTQ_MXFP4 ? QT_TYPE_CT_MXFP4 : QT_TYPE_F32;
    const qt_type t = c->g.bits == 4 && c->g.group < c->cols ? qt__ct4_int4_type(c->g.group) : QT_TYPE_COUNT;
    return t == QT_TYPE_COUNT ? QT_TYPE_F32 : t;
}

/* c's codes as the engine's rows of type t (the bytes ct_read.c makes of the written tensor), or W's f32. */
static qt_status bound_rows(const ct_codes *c, qt_type t, const float *W, void *dst) {
    const int64_t rows = c->rows, cols = c->cols;
    if (t == QT_TYPE_F32) {
        memcpy(dst, W, (size_t)(rows * cols) * sizeof(float));
        return QT_OK;
    }
    qt__ct4_form f = {0};
    qt__ct4_form_of(t, &f);
    if (f.kind == QT_CT4_INT4) {
        uint8_t *codes = malloc((size_t)cols);
        if (!codes) return qt_error(QT_ERR_NOMEM, "out of memory");
        qt__ct4_pack_int4(t, (qt_ct_dtype)c->g.dtype, c->g.q, c->g.scales, c->g.symmetric ? NULL : c->g.zero_points,
                          rows, cols, dst, codes);
        free(codes);
    } else { /* E2M1 codes one per byte, a scale byte per group; NVFP4's header: its f32 global scale */
        uint32_t word = 0;
        if (f.kind == QT_CT4_NVFP4) memcpy(&word, &c->f.shared, 4);
        const size_t row_bytes = qt_row_size(t, cols);
        const int64_t ng = cols / f.group;
        for (int64_t r = 0; r < rows; r++) {
            uint8_t *row = (uint8_t *)dst + (size_t)r * row_bytes;
            qt__ct4_set_header(row, word);
            for (int64_t g = 0; g < ng; g++) qt__ct4_set_param(row, &f, g, 0.0f, 0, c->f.scale_codes[r * ng + g]);
            qt__ct4_set_codes(row, cols, &f, c->f.q + (size_t)(r * cols));
        }
    }
    return QT_OK;
}

static qt_status ct_linear(void *ctx, const qt_tensor *src, float *W, const double *H, const qt_gptq_opts *o,
                           qt_gptq_stats *st, qt_tensor *bind, bool *done) {
    ct_target *x = ctx;
    const int64_t cols = src->ne[0], rows = src->ne[1];
    qt_status s = grow((void **)&x->t, x->n, &x->cap, sizeof *x->t);
    if (s != QT_OK) return s;
    ct_codes *c = &x->t[x->n];
    *c = (ct_codes){.rows = rows, .cols = cols};
    snprintf(c->name, sizeof c->name, "%s", src->name);
    qt_gptq_grid grid;
    s = ct_grid(x, src, c, &grid);
    x->n++; /* freed with the others whatever happened */
    if (s != QT_OK) return s;
    s = x->g->rtn ? qt_gptq_rtn(W, rows, cols, &grid) : qt_gptq_quantize(W, rows, cols, H, &grid, o, st);
    if (s != QT_OK) return s;
    /* the engine runs the rest of the calibration on the rows it loads the written checkpoint as
     * (their dots are the f32 dots of the dequantized values: vLLM's w*a16) */
    const qt_type bt = bound_type(x, c);
    const size_t nb = (size_t)rows * qt_row_size(bt, cols);
    void *f = malloc(nb);
    if (!f) return qt_error(QT_ERR_NOMEM, "out of memory");
    s = bound_rows(c, bt, W, f);
    if (s != QT_OK) {
        free(f);
        return s;
    }
    x->bound[x->n_bound] = f;
    x->bound_t[x->n_bound] = *src;
    x->n_bound++;
    bind->type = bt;
    bind->nbytes = nb;
    bind->data = f;
    *done = !x->g->rtn;
    return QT_OK;
}

/* The arrays of c the writer needs (n[k] bytes at p[k]; 0 bytes: none). */
static int ct_arrays(ct_codes *c, void **p[3], size_t n[3]) {
    const size_t rc = (size_t)(c->rows * c->cols);
    if (c->g.group) {
        const size_t n_sc = (size_t)(c->rows * (c->cols / c->g.group));
        p[0] = (void **)&c->g.q, n[0] = rc;
        p[1] = (void **)&c->g.scales, n[1] = n_sc * sizeof(float);
        p[2] = (void **)&c->g.zero_points, n[2] = c->g.symmetric ? 0 : n_sc;
        return 3;
    }
    const int64_t ng = c->cols / c->f.group;
    const qt_gptq_float_kind k = c->f.kind;
    const size_t n_sc = k == QT_GPTQ_FP8_TENSOR ? 1 : k == QT_GPTQ_FP8_CHANNEL ? (size_t)c->rows
                        : k == QT_GPTQ_FP8_BLOCK ? (size_t)(((c->rows + 127) / 128) * ng) : 0;
    p[0] = (void **)&c->f.q, n[0] = rc;
    p[1] = (void **)&c->f.scales, n[1] = n_sc * sizeof(float);
    p[2] = (void **)&c->f.scale_codes, n[2] = n_sc ? 0 : (size_t)(c->rows * ng);
    return 3;
}

static qt_status spill_io(int fd, void *buf, size_t n, uint64_t off, bool write_it) {
    for (size_t done = 0; done < n;) {
        const ssize_t r = write_it ? pwrite(fd, (uint8_t *)buf + done, n - done, (off_t)(off + done))
                                   : pread(fd, (uint8_t *)buf + done, n - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return qt_error(QT_ERR_IO, "gptq: the spill file of finished layers: cannot %s %zu bytes: %s",
                                    write_it ? "write" : "read", n - done, r < 0 ? strerror(errno) : "short file");
        done += (size_t)r;
    }
    return QT_OK;
}

/* The finished layer's codes (t[n_spilled..n)) to the spill file, out of memory; with
 * --resumable also the f32 values the engine ran on and the smoothed vectors. */
static qt_status spill(ct_target *x) {
    qt_status s = QT_OK;
    const bool keep = qt__ct_layers_kept(x->layers);
    x->layer_t0 = x->n_spilled;
    x->layer_v0 = x->n_vec_spilled;
    for (; s == QT_OK && x->n_spilled < x->n; x->n_spilled++) {
        ct_codes *c = &x->t[x->n_spilled];
        void **p[3];
        size_t n[3];
        c->off = x->spill_bytes;
        for (int k = 0; k < ct_arrays(c, p, n) && s == QT_OK; k++) {
            if (!n[k]) continue;
            s = spill_io(x->spill_fd, *p[k], n[k], x->spill_bytes, true);
            x->spill_bytes += n[k];
            free(*p[k]);
            *p[k] = NULL;
        }
        const int32_t b = x->n_spilled - x->layer_t0;
        if (s == QT_OK && keep && b < x->n_bound) {
            /* the f32 values of the bound rows (4-bit rows dequantized: their bytes are fewer than
             * rows x cols x 4); the replay binds them as F32, and the calibration's sgemm path gives
             * both the same bits (lib/engine/matmul_blas.c) */
            const size_t nb = (size_t)(c->rows * c->cols) * sizeof(float);
            const qt_type bt = bound_type(x, c);
            float *vals = bt == QT_TYPE_F32 ? x->bound[b] : malloc(nb);
            if (!vals) s = qt_error(QT_ERR_NOMEM, "out of memory");
            if (s == QT_OK && bt != QT_TYPE_F32) s = qt_dequantize_rows(bt, x->bound[b], vals, c->rows, c->cols);
            c->f32_off = x->spill_bytes;
            if (s == QT_OK) s = spill_io(x->spill_fd, vals, nb, x->spill_bytes, true);
            if (vals != x->bound[b]) free(vals);
            x->spill_bytes += nb;
        }
        free(c->f.eff); /* the grid's own state, not written */
        c->f.eff = NULL;
        c->spilled = true;
    }
    for (; s == QT_OK && keep && x->n_vec_spilled < x->n_vec; x->n_vec_spilled++) {
        ct_vector *v = &x->vec[x->n_vec_spilled];
        v->off = x->spill_bytes;
        s = spill_io(x->spill_fd, v->v, (size_t)v->n * sizeof *v->v, x->spill_bytes, true);
        x->spill_bytes += (uint64_t)v->n * sizeof *v->v;
    }
    return s;
}

static void cur_free(ct_target *x) {
    qt_gptq_ct_int_free(&x->cur.g);
    qt_gptq_ct_float_free(&x->cur.f);
}

/* A spilled tensor's arrays back into x->cur (valid until the next call). The
 * writer's callbacks cannot fail, so a failed read cancels the write (no output
 * appears) and the error is reported after it (x->err). */
static const ct_codes *read_back(ct_target *x, const ct_codes *c) {
    cur_free(x);
    x->cur = *c; /* shapes, group, kind, shared; the arrays are NULL */
    void **p[3];
    size_t n[3];
    uint64_t off = c->off;
    qt_status s = QT_OK;
    for (int k = 0; k < ct_arrays(&x->cur, p, n) && s == QT_OK; k++) {
        if (!n[k]) continue;
        s = (*p[k] = malloc(n[k])) ? spill_io(x->spill_fd, *p[k], n[k], off, false)
                                   : qt_error(QT_ERR_NOMEM, "gptq: out of memory reading %s back", c->name);
        off += n[k];
    }
    if (s == QT_OK) return &x->cur;
    x->err = s;
    snprintf(x->err_msg, sizeof x->err_msg, "%s", qt_last_error());
    qt_request_cancel();
    return NULL;
}

/* Layer il's linears bound to the model's own tensors again. */
static qt_status ct_unbind(const qt_model *m, qt_layerwise *lw, int32_t il) {
    qt_status s = QT_OK;
    for (int k = 0; s == QT_OK && k < QT__N_LINEARS; k++) {
        char name[QT_MAX_NAME];
        snprintf(name, sizeof name, "blk.%d.%s.weight", il, qt__layer_linears[k].linear);
        const qt_tensor *t = qt_model_find_tensor(m, name);
        if (t) s = qt_layerwise_set_weight(lw, il, qt__layer_linears[k].linear, t);
    }
    return s;
}

/* The replayed layer (--resume) unbound and its f32 values freed. */
static qt_status ct_release_held(ct_target *x, const qt_model *m, qt_layerwise *lw) {
    qt_status s = x->held_layer >= 0 ? ct_unbind(m, lw, x->held_layer) : QT_OK;
    for (int k = 0; k < QT__N_LINEARS; k++) free(x->held[k]), x->held[k] = NULL;
    x->held_layer = -1;
    return s;
}

/* The layer is done: back to the model's own tensors, the f32 copies freed, its codes spilled. */
static qt_status ct_layer_done(void *ctx, const qt_model *m, qt_layerwise *lw, int32_t il) {
    ct_target *x = ctx;
    qt_status s = spill(x);
    if (s == QT_OK) s = ct_unbind(m, lw, il);
    if (s == QT_OK) s = ct_release_held(x, m, lw);
    for (int k = 0; k < x->n_bound; k++) free(x->bound[k]);
    x->n_bound = 0;
    return s;
}

/* One state record per linear and vector of the layer just spilled. */
static json_t *layer_records(const ct_target *x) {
    json_t *a = json_array();
    for (int32_t i = x->layer_t0; a && i < x->n_spilled; i++) {
        const ct_codes *c = &x->t[i];
        json_t *g = c->g.group ? json_pack("[i, b, i, I]", c->g.bits, c->g.symmetric, c->g.dtype, (json_int_t)c->g.group)
                               : json_pack("[i, i, I, f]", (int)c->f.kind, c->f.dtype, (json_int_t)c->f.group,
                                           (double)c->f.shared);
        json_array_append_new(a, json_pack("{s:s, s:I, s:I, s:o, s:I, s:I}", "name", c->name, "rows", (json_int_t)c->rows,
                                           "cols", (json_int_t)c->cols, c->g.group ? "int" : "float", g, "off",
                                           (json_int_t)c->off, "f32", (json_int_t)c->f32_off));
    }
    for (int32_t i = x->layer_v0; a && i < x->n_vec_spilled; i++)
        json_array_append_new(a, json_pack("{s:s, s:I, s:I}", "vector", x->vec[i].name, "n", (json_int_t)x->vec[i].n, "off",
                                           (json_int_t)x->vec[i].off));
    return a;
}

/* --resumable: the layer recorded (after its bytes are synced). */
static qt_status ct_save_layer(void *ctx, const qt_model *m, qt_layerwise *lw, int32_t il, const qt_gptq_report *r) {
    ct_target *x = ctx;
    (void)m, (void)lw;
    if (!qt__ct_layers_kept(x->layers)) return QT_OK;
    const qt_kv_scales *kv = x->g->kv_data;
    return qt__ct_layers_commit(x->layers, layer_records(x), x->spill_bytes, kv ? kv->k : NULL, kv ? kv->v : NULL,
                                kv ? (il + 1) * kv->n_per_layer : 0, kv ? kv->n_tokens : 0, r);
}

/* --resume: the records of the finished layers, as the first run had them after spilling. */
static qt_status ct_load_records(ct_target *x) {
    const json_t *rec = qt__ct_layers_records(x->layers), *e;
    size_t i;
    qt_status s = QT_OK;
    json_array_foreach(rec, i, e) {
        const json_t *vn = json_object_get(e, "vector");
        if (vn) {
            if ((s = grow((void **)&x->vec, x->n_vec, &x->cap_vec, sizeof *x->vec)) != QT_OK) return s;
            ct_vector *v = &x->vec[x->n_vec];
            *v = (ct_vector){.n = json_integer_value(json_object_get(e, "n")),
                             .off = (uint64_t)json_integer_value(json_object_get(e, "off"))};
            snprintf(v->name, sizeof v->name, "%s", json_string_value(vn));
            if (!(v->v = malloc((size_t)v->n * sizeof *v->v))) return qt_error(QT_ERR_NOMEM, "out of memory");
            x->n_vec++;
            if ((s = spill_io(x->spill_fd, v->v, (size_t)v->n * sizeof *v->v, v->off, false)) != QT_OK) return s;
            continue;
        }
        if ((s = grow((void **)&x->t, x->n, &x->cap, sizeof *x->t)) != QT_OK) return s;
        ct_codes *c = &x->t[x->n++];
        *c = (ct_codes){.rows = json_integer_value(json_object_get(e, "rows")),
                        .cols = json_integer_value(json_object_get(e, "cols")), .spilled = true,
                        .off = (uint64_t)json_integer_value(json_object_get(e, "off")),
                        .f32_off = (uint64_t)json_integer_value(json_object_get(e, "f32"))};
        snprintf(c->name, sizeof c->name, "%s", json_string_value(json_object_get(e, "name")));
        const json_t *gi = json_object_get(e, "int"), *gf = json_object_get(e, "float");
        if (gi) {
            c->g = (qt_gptq_ct_int){.bits = (int)json_integer_value(json_array_get(gi, 0)),
                                    .symmetric = json_is_true(json_array_get(gi, 1)),
                                    .dtype = (int)json_integer_value(json_array_get(gi, 2)), .rows = c->rows,
                                    .cols = c->cols, .group = json_integer_value(json_array_get(gi, 3))};
        } else {
            c->f = (qt_gptq_ct_float){.kind = (qt_gptq_float_kind)json_integer_value(json_array_get(gf, 0)),
                                      .dtype = (int)json_integer_value(json_array_get(gf, 1)), .rows = c->rows,
                                      .cols = c->cols, .group = json_integer_value(json_array_get(gf, 2)),
                                      .shared = (float)json_number_value(json_array_get(gf, 3))};
        }
    }
    x->n_spilled = x->n;
    x->n_vec_spilled = x->n_vec;
    x->spill_bytes = qt__ct_layers_bytes(x->layers);
    return QT_OK;
}

/* --resume: layer il's f32 values and smoothed vectors, read back and bound. */
static qt_status ct_restore_layer(void *ctx, const qt_model *m, qt_layerwise *lw, int32_t il) {
    ct_target *x = ctx;
    qt_status s = ct_release_held(x, m, lw);
    x->held_layer = il;
    const char *rest;
    for (int32_t i = 0; s == QT_OK && i < x->n; i++) {
        const ct_codes *c = &x->t[i];
        char linear[32];
        int32_t l;
        if (sscanf(c->name, "blk.%d.%31[^.].weight", &l, linear) != 2 || l != il) continue;
        const int k = qt__layer_linear_find(linear);
        const qt_tensor *t = qt_model_find_tensor(m, c->name);
        if (k < 0 || !t || x->held[k]) return qt_error(QT_ERR_FORMAT, "--resume: %s: not a linear of this model", c->name);
        const size_t nb = (size_t)(c->rows * c->cols) * sizeof(float);
        if (!(x->held[k] = malloc(nb))) return qt_error(QT_ERR_NOMEM, "out of memory");
        s = spill_io(x->spill_fd, x->held[k], nb, c->f32_off, false);
        qt_tensor bind = *t;
        bind.type = QT_TYPE_F32;
        bind.nbytes = nb;
        bind.data = x->held[k];
        if (s == QT_OK) s = qt_layerwise_set_weight(lw, il, linear, &bind);
    }
    for (int32_t i = 0; s == QT_OK && i < x->n_vec; i++)
        if (of_layer(x->vec[i].name, il, &rest)) s = qt_layerwise_set_vector(lw, il, rest, x->vec[i].v, x->vec[i].n);
    return s;
}

static const ct_codes *codes_of(ct_target *x, const char *name, int64_t rows, int64_t cols) {
    for (int32_t i = 0; i < x->n; i++)
        if (!strcmp(x->t[i].name, name) && x->t[i].rows == rows && x->t[i].cols == cols)
            return x->t[i].spilled ? read_back(x, &x->t[i]) : &x->t[i];
    return NULL;
}

static bool ct_given(void *ctx, const char *name, int64_t rows, int64_t cols, const int8_t **q, const float **scales,
                     const int8_t **zero_points) {
    const ct_codes *c = codes_of(ctx, name, rows, cols);
    if (!c || !c->g.q) return false; /* not a GPTQ linear, or a failed read (the write is cancelled) */
    *q = c->g.q;
    *scales = c->g.scales;
    *zero_points = c->g.zero_points;
    return true;
}

static bool ct_given_float(void *ctx, const char *name, int64_t rows, int64_t cols, const uint8_t **q,
                           const float **scales, const uint8_t **scale_codes, float *shared) {
    const ct_codes *c = codes_of(ctx, name, rows, cols);
    if (!c || !c->f.q) return false;
    *q = c->f.q;
    *scales = c->f.scales;
    *scale_codes = c->f.scale_codes;
    *shared = c->f.kind == QT_GPTQ_FP8_TENSOR ? c->f.scales[0] : c->f.shared;
    return true;
}

/* What a resumed run must match: the input, the scheme and algorithm, the recorded
 * command line, the calibration's fingerprint (the values the writer records). */
static qt_status ct_identity(const qt_model *m, const char *scheme, const qt_ct_export_opts *o, json_t **out) {
    json_t *in;
    qt_status s = qt__resume_input(qt_model_path(m), &in);
    if (s != QT_OK) return s;
    json_t *cal = json_object();
    for (int32_t i = 0; cal && i < o->n_calibration; i++) {
        const qt_gguf_value *v = &o->calibration[i].value;
        json_object_set_new(cal, o->calibration[i].key,
                            v->type == QT_GGUF_STRING ? json_stringn(v->str.ptr, (size_t)v->str.len)
                            : v->type == QT_GGUF_INT64 || v->type == QT_GGUF_INT32 ? json_integer(v->i64)
                                                                                    : json_integer((json_int_t)v->u64));
    }
    /* output_bytes 0: the directory's sizes are checked by its own state (ct_resume.c) */
    *out = json_pack("{s:o, s:{s:s, s:s, s:s, s:o, s:I}, s:I}", "input", in, "options", "scheme", scheme, "algo",
                     o->method ? o->method : "", "command_line", o->command ? o->command : "", "calibration",
                     cal ? cal : json_null(), "group-size", (json_int_t)o->group_size, "output_bytes", (json_int_t)0);
    return *out ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
}

/* The layer loop, continued from the finished layers of an interrupted run (--resume). */
static qt_status ct_layers(const qt_model *m, const qt_gptq_run_opts *g, qt__calib_target *tg, ct_target *x,
                           qt_gptq_report *r) {
    const int32_t start = qt__ct_layers_done(x->layers);
    const int32_t n_amax = g->kv_data ? qt_model_hparams(m)->n_layer * g->kv_data->n_per_layer : 0;
    float *amax = calloc((size_t)(2 * n_amax + 1), sizeof *amax);
    int64_t kv_tokens = 0;
    qt_status s = amax ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
    if (s == QT_OK && start) {
        s = ct_load_records(x);
        qt__ct_layers_restore(x->layers, amax, amax + n_amax, n_amax, &kv_tokens, r);
    }
    if (s == QT_OK) s = continue_layers(m, g, tg, r, start, amax, n_amax, kv_tokens);
    free(amax);
    return s;
}

qt_status qt_gptq_quantize_ct(const qt_model *m, const char *scheme, const char *out_dir, const qt_ct_export_opts *o,
                              const qt_gptq_run_opts *g, qt_ct_export_estimate *est, qt_gptq_report *r) {
    *r = (qt_gptq_report){0};
    ct_target x = {.m = m, .g = g, .spill_fd = -1, .held_layer = -1};
    qt_status s = qt_ct_int_scheme(m, scheme, &x.a);
    if (s == QT_ERR_UNSUPPORTED) {
        x.is_float = true;
        s = qt_ct_float_scheme(m, scheme, &x.fkind, &x.fdt);
    }
    if (s != QT_OK) return qt_error(s, "gptq: %s", qt_last_error());
    if (o->group_size && (x.is_float || x.a.strategy != QT_CT_GROUP))
        return qt_error(QT_ERR_ARG, "--group-size applies to the per-group integer schemes (w4a16, w4a16-asym, w8a16), "
                        "not %s", scheme);
    if (o->group_size) x.a.group_size = o->group_size; /* --group-size */
    if (o->keep && o->keep[0])
        return qt_error(QT_ERR_UNSUPPORTED, "gptq: --keep with a compressed-tensors scheme is not supported yet");
    qt__calib_target tg = {&x, ct_linear, ct_layer_done, ct_group, ct_fake_quant, ct_vector_keep, ct_restore_layer,
                           ct_save_layer};
    const int32_t n_amax = g->kv_data ? qt_model_hparams(m)->n_layer * g->kv_data->n_per_layer : 0;
    json_t *id = NULL;
    s = ct_identity(m, scheme, o, &id);
    if (s == QT_OK) s = qt__ct_layers_open(out_dir, o->resumable, o->resume, id, n_amax, &x.layers);
    if (s == QT_OK) x.spill_fd = qt__ct_layers_fd(x.layers);
    if (s == QT_OK) s = ct_layers(m, g, &tg, &x, r);
    for (int k = 0; k < x.n_bound; k++) free(x.bound[k]);
    if (s == QT_OK) {
        qt_ct_export_opts eo = *o;
        eo.int_codes = ct_given;
        eo.int_codes_ctx = &x;
        eo.float_codes = ct_given_float;
        eo.float_codes_ctx = &x;
        eo.vector_values = ct_vector_values;
        eo.vector_values_ctx = &x;
        /* the directory itself resumes only where its own state was left (an interrupted write) */
        char st[4096];
        snprintf(st, sizeof st, "%s%s", out_dir, QT_QUANTIZE_STATE_SUFFIX);
        eo.resume = o->resume && access(st, F_OK) == 0;
        eo.resumable = o->resumable || o->resume;
        s = qt_ct_export(m, scheme, out_dir, &eo, est);
        if (x.err != QT_OK) { /* the cancel was ours */
            qt_cancel_reset();
            s = qt_error(x.err, "%s", x.err_msg);
        }
    }
    bool kept = false;
    const int32_t done = x.layers ? qt__ct_layers_done(x.layers) : 0;
    qt__ct_layers_close(x.layers, s, &kept);
    r->n_layers_kept = kept ? done : 0;
    for (int k = 0; k < QT__N_LINEARS; k++) free(x.held[k]);
    cur_free(&x);
    for (int32_t i = 0; i < x.n; i++) {
        qt_gptq_ct_int_free(&x.t[i].g);
        qt_gptq_ct_float_free(&x.t[i].f);
    }
    free(x.t);
    for (int32_t i = 0; i < x.n_vec; i++) free(x.vec[i].v);
    free(x.vec);
    return s;
}
