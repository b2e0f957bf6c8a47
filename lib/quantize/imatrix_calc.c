/* lib/quantize/imatrix_calc.c — llama-imatrix's importance statistic
 * (quanta/imatrix.h, "computing one"): per linear, the per-column sum of
 * squared input activations and the tokens seen, collected through the
 * engine's calibration seam (qt_layerwise_*).
 *
 * What llama.cpp's tools/imatrix/imatrix.cpp does, and so what this does:
 * - the text is tokenized once (with BOS); chunk i is tokens[i*n_ctx, (i+1)*n_ctx)
 *   with its first token replaced by BOS, evaluated on an empty cache;
 * - at least 2 chunks of text are required; --chunks caps the count;
 * - every token of the chunk is collected (the callback sees whole matmuls);
 * - only "blk." weights, plus output.weight with --process-output;
 * - the accumulator is float: acc[j] += x[j] * x[j], one row after another in
 *   the order the matmuls see them. That order is llama.cpp's batching:
 *   n_seq = max(1, n_batch / n_ctx) chunks (2048 / 128 = 16) go into one
 *   decode as separate sequences, and with one KV stream per sequence (the
 *   default, no -kvu) llama_batch_allocr::split_equal cuts each micro-batch as
 *   floor(n_ubatch / n_seq) tokens of every sequence, sequence after sequence
 *   (512 / 16 = 32: chunk 0 tokens 0-31, chunk 1 tokens 0-31, ..., then chunk 0
 *   tokens 32-63, ...). Float sums depend on that order, so the rows of a group
 *   are held until every chunk of it has passed, then added in that order.
 *   The engine's activations do not depend on the grouping (each chunk starts
 *   at position 0 on an empty cache); only the order of the sums does;
 * - chunk_count = tokens counted / chunk size, chunk_size = n_ctx.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quanta/engine.h"
#include "quanta/imatrix.h"
#include "quanta/model.h"

/* llama-imatrix's defaults: -b 2048 (logical batch), -ub 512 (micro-batch). */
#define IMX_N_BATCH 2048
#define IMX_N_UBATCH 512

/* The linears of a layer and the output, as the engine names them: one
 * pending-rows buffer each (a layer's linears are all pending at once). */
static const char *const imx_linears[] = {"attn_q", "attn_k", "attn_v", "attn_output",
                                          "ffn_gate", "ffn_up", "ffn_down", "output"};
enum { IMX_N_LINEARS = 8 };

typedef struct imx_slot {
    int32_t layer;        /* -1: output */
    const char *linear;   /* one of imx_linears */
    char name[64];        /* GGUF weight name */
    int64_t n_cols;
    float *sums;          /* (n_cols) */
    int64_t count;        /* tokens added */
    int32_t seen;         /* chunks of the current group pending */
} imx_slot;

typedef struct imx_acc {
    imx_slot *slots;
    int64_t n, cap;
    qt_status err;
    int32_t n_seq, n_ctx, slice;  /* chunks in the current group; tokens per chunk; per micro-batch */
    float *pend[IMX_N_LINEARS];   /* (n_seq, n_ctx, n_cols) one linear's rows until the group is whole */
    size_t pend_cap[IMX_N_LINEARS];
} imx_acc;

static int linear_index(const char *linear) {
    for (int k = 0; k < IMX_N_LINEARS; k++)
        if (!strcmp(imx_linears[k], linear)) return k;
    return -1;
}

static imx_slot *slot_for(imx_acc *a, int32_t layer, const char *linear, int32_t n_in) {
    for (int64_t i = 0; i < a->n; i++)
        if (a->slots[i].layer == layer && a->slots[i].linear == linear) return &a->slots[i];
    if (a->n == a->cap) {
        int64_t cap = a->cap ? 2 * a->cap : 64;
        imx_slot *s = realloc(a->slots, (size_t)cap * sizeof *s);
        if (!s) return NULL;
        a->slots = s;
        a->cap = cap;
    }
    imx_slot *s = &a->slots[a->n];
    *s = (imx_slot){.layer = layer, .linear = linear, .n_cols = n_in};
    if (layer < 0) snprintf(s->name, sizeof s->name, "%s.weight", linear);
    else snprintf(s->name, sizeof s->name, "blk.%d.%s.weight", layer, linear);
    s->sums = calloc((size_t)n_in, sizeof(float));
    if (!s->sums) return NULL;
    a->n++;
    return s;
}

/* Adds a group's rows in llama.cpp's micro-batch order (see the top). */
static void flush(const imx_acc *a, imx_slot *s, const float *rows) {
    const int64_t n = s->n_cols;
    float *acc = s->sums;
    for (int32_t t0 = 0; t0 < a->n_ctx; t0 += a->slice) {
        const int32_t t1 = t0 + a->slice < a->n_ctx ? t0 + a->slice : a->n_ctx;
        for (int32_t q = 0; q < a->n_seq; q++)
            for (int32_t t = t0; t < t1; t++) {
                const float *r = rows + ((size_t)q * a->n_ctx + t) * n;
                for (int64_t j = 0; j < n; j++) acc[j] += r[j] * r[j];
            }
    }
    s->count += (int64_t)a->n_seq * a->n_ctx;
}

/* The observer: one chunk's rows of one linear, held until the group is whole. */
static void observe(void *user, int32_t layer, const char *linear, const float *x, int32_t n_tokens, int32_t n_in) {
    imx_acc *a = user;
    if (a->err != QT_OK) return;
    const int k = linear_index(linear);
    if (k < 0) { a->err = qt_error(QT_ERR_UNSUPPORTED, "imatrix: unknown linear '%s'", linear); return; }
    imx_slot *s = slot_for(a, layer, imx_linears[k], n_in);
    if (!s) { a->err = qt_error(QT_ERR_NOMEM, "imatrix: out of memory for %s", linear); return; }
    if (s->n_cols != n_in || n_tokens != a->n_ctx) {
        a->err = qt_error(QT_ERR_SHAPE, "imatrix: %s: %d x %d rows, expected %d x %lld", s->name, n_tokens, n_in,
                          a->n_ctx, (long long)s->n_cols);
        return;
    }
    const size_t need = (size_t)a->n_seq * a->n_ctx * n_in;
    if (a->pend_cap[k] < need) {
        float *p = realloc(a->pend[k], need * sizeof *p);
        if (!p) { a->err = qt_error(QT_ERR_NOMEM, "imatrix: out of memory for %s's rows", s->name); return; }
        a->pend[k] = p;
        a->pend_cap[k] = need;
    }
    memcpy(a->pend[k] + (size_t)s->seen * a->n_ctx * n_in, x, (size_t)a->n_ctx * n_in * sizeof *x);
    if (++s->seen == a->n_seq) {
        flush(a, s, a->pend[k]);
        s->seen = 0;
    }
}

static int by_name(const void *pa, const void *pb) {
    return strcmp(((const qt_imatrix_stat *)pa)->name, ((const qt_imatrix_stat *)pb)->name);
}

/* One group of chunks through every layer (and the output's input rows with
 * process_output). Only the observed rows are needed, never a product nobody
 * reads: without the output the last layer stops once ffn_down's input is seen
 * (observe_layer: its ffn_down product, 16.8 M of the layer's 60.8 M
 * multiply-adds a token on a 1B Llama, 1.7 % of its 16 layers), and the output's rows are observed without the logits
 * (128,256 x 2048 multiply-adds a token on a 1B Llama, more than a layer). The
 * rows seen are the same either way, so the sums are too. */
static qt_status run_group(const qt_model *m, qt_engine_ctx *e, const int32_t *ids, int32_t n_seq, int32_t n_ctx,
                           bool out, imx_acc *a) {
    qt_layerwise *lw = NULL;
    qt_status s = qt_layerwise_new(e, ids, n_seq, n_ctx, &lw);
    const int32_t n_layer = qt_model_hparams(m)->n_layer;
    for (int32_t l = 0; s == QT_OK && l < n_layer; l++) {
        s = l == n_layer - 1 && !out ? qt_layerwise_observe_layer(lw, observe, a) : qt_layerwise_run_layer(lw, observe, a);
        if (s == QT_OK) s = a->err;
    }
    if (s == QT_OK && out) s = qt_layerwise_logits_observed(lw, observe, a, NULL);
    if (s == QT_OK) s = a->err;
    qt_layerwise_free(lw);
    return s;
}

static qt_status collect(const qt_model *m, qt_engine_ctx *e, const int32_t *tokens, int32_t n_chunk,
                         const qt_imatrix_calc_opts *o, imx_acc *a) {
    const int32_t n_ctx = o->n_ctx;
    const int32_t n_batch = o->n_batch > 0 ? o->n_batch : IMX_N_BATCH;
    const int32_t n_ubatch = o->n_ubatch > 0 ? o->n_ubatch : IMX_N_UBATCH;
    const int32_t group = n_batch / n_ctx > 1 ? n_batch / n_ctx : 1;
    const bool out = o->process_output && qt_model_find_tensor(m, "output.weight");
    int32_t *ids = malloc((size_t)group * n_ctx * sizeof *ids);
    qt_status s = ids ? QT_OK : qt_error(QT_ERR_NOMEM, "imatrix: out of memory for a batch of chunks");
    a->n_ctx = n_ctx;
    for (int32_t i = 0; s == QT_OK && i < n_chunk; i += group) {
        const int32_t n_seq = n_chunk - i < group ? n_chunk - i : group;
        a->n_seq = n_seq;
        a->slice = n_ubatch / n_seq > 1 ? n_ubatch / n_seq : 1;
        memcpy(ids, tokens + (size_t)i * n_ctx, (size_t)n_seq * n_ctx * sizeof *ids);
        if (o->bos_id >= 0)
            for (int32_t q = 0; q < n_seq; q++) ids[(size_t)q * n_ctx] = o->bos_id;
        s = run_group(m, e, ids, n_seq, n_ctx, out, a);
        if (s == QT_OK) qt_progress_report(&o->progress, "imatrix", i + n_seq, n_chunk);
    }
    free(ids);
    for (int k = 0; k < IMX_N_LINEARS; k++) free(a->pend[k]);
    return s;
}

static void free_slots(imx_acc *a) {
    for (int64_t i = 0; i < a->n; i++) free(a->slots[i].sums);
    free(a->slots);
}

qt_status qt_imatrix_compute(const qt_model *m, qt_engine_ctx *e, const int32_t *tokens, int64_t n_tokens,
                             const qt_imatrix_calc_opts *o, qt_imatrix_result *r) {
    *r = (qt_imatrix_result){0};
    if (o->n_ctx < 1) return qt_error(QT_ERR_ARG, "imatrix: chunk size %d (need at least 1)", o->n_ctx);
    if (n_tokens < 2 * (int64_t)o->n_ctx)
        return qt_error(QT_ERR_ARG, "imatrix: the text has %lld tokens; a chunk size of %d needs at least %lld",
                        (long long)n_tokens, o->n_ctx, 2 * (long long)o->n_ctx);
    int64_t n_chunk = n_tokens / o->n_ctx;
    if (o->n_chunks > 0 && o->n_chunks < n_chunk) n_chunk = o->n_chunks;
    if (n_chunk > INT32_MAX / o->n_ctx) return qt_error(QT_ERR_ARG, "imatrix: %lld chunks is too many", (long long)n_chunk);
    imx_acc a = {0};
    qt_status s = collect(m, e, tokens, (int32_t)n_chunk, o, &a);
    for (int64_t i = 0; s == QT_OK && i < a.n; i++)
        for (int64_t j = 0; j < a.slots[i].n_cols; j++)
            if (!(a.slots[i].sums[j] <= 3.40282347e38f)) {
                s = qt_error(QT_ERR_FORMAT, "imatrix: %s: the sum of column %lld is not finite", a.slots[i].name,
                             (long long)j);
                break;
            }
    const size_t n = (size_t)(a.n ? a.n : 1);
    qt_imatrix_stat *st = s == QT_OK ? calloc(n, sizeof *st) : NULL;
    int64_t *counts = s == QT_OK ? calloc(n, sizeof *counts) : NULL;
    char *names = s == QT_OK ? calloc(n, 64) : NULL;
    if (s == QT_OK && (!st || !counts || !names)) s = qt_error(QT_ERR_NOMEM, "imatrix: out of memory");
    if (s != QT_OK || a.n == 0) {
        free_slots(&a);
        free(st);
        free(counts);
        free(names);
        return s != QT_OK ? s : qt_error(QT_ERR_FORMAT, "imatrix: the model has no linear to observe");
    }
    for (int64_t i = 0; i < a.n; i++) {
        memcpy(names + 64 * i, a.slots[i].name, 64);
        counts[i] = a.slots[i].count;
        st[i] = (qt_imatrix_stat){names + 64 * i, a.slots[i].n_cols, 1, a.slots[i].sums, &counts[i]};
    }
    free(a.slots);
    qsort(st, (size_t)a.n, sizeof *st, by_name);
    *r = (qt_imatrix_result){st, a.n, n_chunk, o->n_ctx, n_chunk * o->n_ctx};
    return QT_OK;
}

/* The stats own their sums; the names and the counts are one block each,
 * starting at the lowest address among them (qsort reordered the stats). */
void qt_imatrix_result_free(qt_imatrix_result *r) {
    if (!r || !r->stats) return;
    char *names = NULL;
    int64_t *counts = NULL;
    for (int64_t i = 0; i < r->n_stats; i++) {
        if (!names || (char *)r->stats[i].name < names) names = (char *)r->stats[i].name;
        if (!counts || (int64_t *)r->stats[i].counts < counts) counts = (int64_t *)r->stats[i].counts;
        free((void *)r->stats[i].sums);
    }
    free(names);
    free(counts);
    free(r->stats);
    *r = (qt_imatrix_result){0};
}
