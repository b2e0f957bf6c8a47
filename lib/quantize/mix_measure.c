/* lib/quantize/mix_measure.c — `--sensitivity measured` (docs/quantize.md
 * "Target size", lib/quantize/mix_table.h): for each group (one layer's
 * attention, one layer's FFN, the output, an untied token embedding) and each
 * type its members take, the mean KL divergence KL(base || model) per token
 * of the next-token distribution on the calibration sequences with only that
 * group's members in that type.
 *
 * The base distribution is never stored for all tokens (n_seq x n_tok x
 * n_vocab doubles: 4.2 GB at 8 x 512 on a 128K vocabulary). The base runs
 * once per sequence and keeps its residual stream after the last layer; a
 * second layer-wise walk holds every sequence's stream at the input of the
 * layer being measured (2 x n_seq x n_tok x n_embd floats in all: 64 MiB at
 * 8 x 512 x 2048). Layer by layer, each sequence's base log-probabilities
 * (n_tok x n_vocab doubles) are recomputed from its final stream (one output
 * projection) and each (group, type) run starts at its group's layer from
 * the held stream: the layers before it see the base model, so the numbers
 * are the reference loop's (QUANTA_MIX_MEASURE_FULL=1: every run from the
 * tokens through every layer, kept to check that). The copies of the groups
 * starting at one layer, in all their types, are held while it is measured. Decoder
 * linears are bound through the layer-wise seam, an untied token embedding
 * through the engine; the output projection needs no run: its logits move by
 * H (Wq - W)^T, H the final norm's output rows of that sequence. A tied token
 * embedding (also the output) is in no group (the engine cannot rebind it):
 * it keeps its proxy, scaled by the median measured/proxy ratio. With
 * --algo gptq the decoder linears' copies are GPTQ's (lib/quantize/mix_gptq.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "mix_delta.h"
#include "mix_table.h"
#include "quantize_internal.h"

enum { K_LINEAR, K_EMBD, K_OUTPUT };

typedef struct member {
    int32_t i;              /* into mix->t */
    const qt_tensor *t;     /* the model's */
    int kind;
    int32_t layer;
    char linear[32];
} member;

typedef struct measure_ctx {
    const qt_model *m;
    qt_engine_ctx *e;
    const qt_quantize_target *tg;
    int32_t n_layer, n_vocab, n_embd, n_tok;
    double *logp0;       /* (n_tok, n_vocab) the base model's log-probabilities of the current sequence */
    double *scratch;     /* (threads, n_vocab) */
    double *row_kl;      /* (n_tok) */
    float *base_logits;  /* (n_tok, n_vocab) the base model's logits of the current sequence */
    float *logits;       /* (n_tok, n_vocab) scratch */
    float *h0, *h;       /* (n_tok, n_embd) the output projection's input: base, and the run's */
    float *h_dst;
    int64_t h_at;
    qt__mix_gptq *gq;    /* --algo gptq: the copies GPTQ makes (lib/quantize/mix_gptq.c); NULL: round to nearest */
} measure_ctx;

static void capture_output_input(void *user, int32_t layer, const char *linear, const float *x, int32_t n_tokens,
                                 int32_t n_in) {
    measure_ctx *c = user;
    if (layer != -1 || strcmp(linear, "output")) return;
    if (c->h_at + n_tokens > c->n_tok || n_in != c->n_embd) return;
    memcpy(c->h_dst + c->h_at * n_in, x, (size_t)n_tokens * (size_t)n_in * sizeof(float));
    c->h_at += n_tokens;
}

/* log-softmax of one row, in double. */
static void log_softmax(const float *z, int32_t n, double *out) {
    double mx = -INFINITY, sum = 0;
    for (int32_t v = 0; v < n; v++) mx = z[v] > mx ? z[v] : mx;
    for (int32_t v = 0; v < n; v++) sum += exp((double)z[v] - mx);
    const double lse = mx + log(sum);
    for (int32_t v = 0; v < n; v++) out[v] = (double)z[v] - lse;
}

typedef struct kld_job {
    measure_ctx *c;
    const float *logits;  /* (n_tok, n_vocab) */
    double *kl;           /* (n_tok) each row's KL, clamped at 0 */
} kld_job;

/* Rows [r0, r1): one row's KL from its own values only, so the split cannot change a bit. */
static void kld_range(void *ctx, int64_t r0, int64_t r1, int th) {
    const kld_job *j = ctx;
    const measure_ctx *c = j->c;
    double *lp = c->scratch + (size_t)th * (size_t)c->n_vocab;
    for (int64_t r = r0; r < r1; r++) {
        log_softmax(j->logits + (size_t)r * c->n_vocab, c->n_vocab, lp);
        const double *l0 = c->logp0 + (size_t)r * c->n_vocab;
        double kl = 0;
        for (int32_t v = 0; v < c->n_vocab; v++) kl += exp(l0[v]) * (l0[v] - lp[v]);
        j->kl[r] = kl > 0 ? kl : 0;
    }
}

/* Sum over the sequence's rows of KL(base || softmax(logits)), nats: the rows on the engine's threads,
 * their sum in row order. */
static double sum_kld(measure_ctx *c, const float *logits) {
    kld_job j = {.c = c, .logits = logits, .kl = c->row_kl};
    qt_parallel_for_balanced(c->e->pool, c->n_tok, 4, kld_range, &j);
    double total = 0;
    for (int32_t r = 0; r < c->n_tok; r++) total += c->row_kl[r];
    return total;
}

static void log_softmax_range(void *ctx, int64_t r0, int64_t r1, int th) {
    (void)th;
    measure_ctx *c = ctx;
    for (int64_t r = r0; r < r1; r++)
        log_softmax(c->base_logits + (size_t)r * c->n_vocab, c->n_vocab, c->logp0 + (size_t)r * c->n_vocab);
}

/* The tensor in type ty (data malloc'd into *buf), quantized as the run would (weights w; GPTQ's copy with --algo gptq). */
static qt_status quantize_copy(const measure_ctx *c, const qt_tensor *t, qt_type ty, const float *w, qt_tensor *out,
                               uint8_t **buf) {
    const int64_t ne0 = t->ne[0], rows = (int64_t)(t->nbytes / qt_row_size(t->type, ne0));
    const size_t row = qt_row_size(ty, ne0), src_row = qt_row_size(t->type, ne0);
    *out = *t;
    out->type = ty;
    out->nbytes = (size_t)rows * row;
    if (c->gq) {
        qt_status s = qt__mix_gptq_copy(c->gq, t, ty, buf);
        out->data = *buf;
        return s;
    }
    float *x = malloc((size_t)ne0 * sizeof *x);
    *buf = malloc((size_t)rows * row + 1);
    qt_status s = x && *buf ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
    for (int64_t r = 0; s == QT_OK && r < rows; r++) {
        s = qt_dequantize_rows(t->type, (const uint8_t *)t->data + (size_t)r * src_row, x, 1, ne0);
        if (s == QT_OK) s = qt_quantize_rows(ty, x, *buf + (size_t)r * row, 1, ne0, w);
    }
    free(x);
    out->data = *buf;
    return s;
}

/* output_delta's rows of the vocabulary per kernel call: 16 rows of W and Wq dequantized (2 x 128 KB at
 * 2048 wide) while the kernel sweeps the tokens, 32 at a time (256 KB of H^T, kept in L2 across them). */
enum { DELTA_ROWS = 16 };

typedef struct delta_job {
    const float *ht;          /* (ne0, n_tok) H transposed */
    const qt_tensor *w, *q;
    int32_t n_tok, n_vocab;
    int64_t ne0;
    float *logits;            /* (n_tok, n_vocab) */
    float *scratch;           /* (threads, 2 DELTA_ROWS ne0) a, b */
    double *d;                /* (threads, DELTA_ROWS n_tok) */
    qt__mix_delta_fn kernel;
    qt_status *st;            /* (threads) the first error of each */
} delta_job;

/* Vocabulary rows [v0, v1): each row's logits from its own rows only, so the split cannot change a bit. */
static void delta_range(void *ctx, int64_t v0, int64_t v1, int th) {
    const delta_job *j = ctx;
    const int64_t ne0 = j->ne0;
    float *a = j->scratch + (size_t)th * 2 * DELTA_ROWS * (size_t)ne0, *b = a + DELTA_ROWS * ne0;
    double *d = j->d + (size_t)th * DELTA_ROWS * (size_t)j->n_tok;
    const size_t rw = qt_row_size(j->w->type, ne0), rq = qt_row_size(j->q->type, ne0);
    for (int64_t v = v0; v < v1 && j->st[th] == QT_OK; v += DELTA_ROWS) {
        const int32_t nv = (int32_t)(v1 - v < DELTA_ROWS ? v1 - v : DELTA_ROWS);
        qt_status s = qt_dequantize_rows(j->w->type, (const uint8_t *)j->w->data + (size_t)v * rw, a, nv, ne0);
        if (s == QT_OK) s = qt_dequantize_rows(j->q->type, (const uint8_t *)j->q->data + (size_t)v * rq, b, nv, ne0);
        if (s != QT_OK) {
            j->st[th] = s;
            return;
        }
        for (int64_t k = 0; k < nv * ne0; k++) b[k] -= a[k];
        j->kernel(j->ht, j->n_tok, ne0, b, nv, d);
        for (int32_t i = 0; i < nv; i++)
            for (int32_t r = 0; r < j->n_tok; r++) {
                float *l = j->logits + (size_t)r * j->n_vocab + (size_t)(v + i);
                *l = (float)((double)*l + d[(size_t)i * j->n_tok + r]);
            }
    }
}

/* logits += h (Wq - W)^T, over the sequence's rows (log-softmax is shift-invariant, so any base works):
 * each (row, token) dot product summed in double in the order of j (lib/quantize/mix_delta.h), on the
 * engine's threads. */
static qt_status output_delta(measure_ctx *c, const float *h, const qt_tensor *w, const qt_tensor *q, float *logits) {
    const int64_t ne0 = w->ne[0];
    const int nth = c->e->pool ? qt_threadpool_size(c->e->pool) : 1;
    delta_job j = {.w = w, .q = q, .n_tok = c->n_tok, .n_vocab = c->n_vocab, .ne0 = ne0, .logits = logits,
                   .kernel = qt__mix_delta_kernel()};
    float *ht = malloc((size_t)ne0 * (size_t)c->n_tok * sizeof *ht);
    j.scratch = malloc((size_t)nth * 2 * DELTA_ROWS * (size_t)ne0 * sizeof *j.scratch);
    j.d = malloc((size_t)nth * DELTA_ROWS * (size_t)c->n_tok * sizeof *j.d);
    j.st = calloc((size_t)nth, sizeof *j.st);
    qt_status s = ht && j.scratch && j.d && j.st ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
    if (s == QT_OK) {
        for (int32_t r = 0; r < c->n_tok; r++)
            for (int64_t k = 0; k < ne0; k++) ht[k * c->n_tok + r] = h[(size_t)r * ne0 + k];
        j.ht = ht;
        qt_parallel_for_balanced(c->e->pool, c->n_vocab, DELTA_ROWS * 8, delta_range, &j);
        for (int t = 0; t < nth && s == QT_OK; t++) s = j.st[t];
    }
    free(ht);
    free(j.scratch);
    free(j.d);
    free(j.st);
    return s;
}

static qt_status bind(measure_ctx *c, qt_layerwise *lw, const member *mb, const qt_tensor *t) {
    if (mb->kind == K_LINEAR) return qt_layerwise_set_weight(lw, mb->layer, mb->linear, t);
    if (mb->kind == K_EMBD) return qt__engine_set_token_embd(c->e, t);
    return QT_OK; /* the output: by its delta */
}

/* Sequence s through every layer from `layer` and the output with the members bound to q[k] (NULL: as
 * stored), then bound back: logits into `logits`, the output's input rows into `h`. from: the residual
 * stream (n_tok, n_embd) at the input of `layer`, as the base run left it (NULL: from the tokens, layer 0). */
static qt_status run_seq(measure_ctx *c, int32_t s, const member *mb, int32_t n, const qt_tensor *q, const float *from,
                         int32_t layer, float *logits, float *h) {
    qt_layerwise *lw = NULL;
    qt_status st = QT_OK;
    /* the embedding first: the seam looks the tokens up when it starts */
    for (int32_t k = 0; st == QT_OK && k < n; k++)
        if (q && q[k].data && mb[k].kind == K_EMBD) st = bind(c, NULL, &mb[k], &q[k]);
    if (st == QT_OK) st = qt_layerwise_new(c->e, c->tg->tokens + (size_t)s * c->n_tok, 1, c->n_tok, &lw);
    if (st == QT_OK && from) st = qt__layerwise_resume(lw, 0, from, layer);
    for (int32_t k = 0; st == QT_OK && k < n; k++)
        if (q && q[k].data && mb[k].kind == K_LINEAR) st = bind(c, lw, &mb[k], &q[k]);
    for (int32_t il = from ? layer : 0; st == QT_OK && il < c->n_layer; il++) st = qt_layerwise_run_layer(lw, NULL, NULL);
    c->h_at = 0;
    c->h_dst = h;
    if (st == QT_OK) st = qt_layerwise_logits_observed(lw, capture_output_input, c, logits);
    if (st == QT_OK && c->h_at != c->n_tok)
        st = qt_error(QT_ERR_INTERNAL, "measured sensitivity: the output's input rows were not all seen (%lld of %d)",
                      (long long)c->h_at, c->n_tok);
    for (int32_t k = 0; k < n; k++)
        if (q && q[k].data && (lw || mb[k].kind == K_EMBD)) {
            const qt_status b = bind(c, lw, &mb[k], mb[k].t);
            if (st == QT_OK) st = b;
        }
    if (lw) qt_layerwise_free(lw);
    return st;
}

/* The base run of sequence s: base_logits, h0, logp0; final: its residual stream after the last layer
 * (the base run's), or NULL: run it. */
static qt_status run_base(measure_ctx *c, int32_t s, const float *final) {
    qt_status st = run_seq(c, s, NULL, 0, NULL, final, c->n_layer, c->base_logits, c->h0);
    if (st == QT_OK) qt_parallel_for_balanced(c->e->pool, c->n_tok, 4, log_softmax_range, c);
    return st;
}

/* Sum of KL over sequence s's rows with the members in q (after run_base(s)), the engine run from `layer`
 * on the stream `from` (run_seq). */
static qt_status kld_with(measure_ctx *c, int32_t s, const member *mb, int32_t n, const qt_tensor *q, const float *from,
                          int32_t layer, double *sum) {
    bool engine = false;
    for (int32_t k = 0; k < n; k++) engine |= q[k].data && mb[k].kind != K_OUTPUT;
    const float *h = c->h0;
    qt_status st = QT_OK;
    if (engine) {
        st = run_seq(c, s, mb, n, q, from, layer, c->logits, c->h);
        h = c->h;
    } else {
        memcpy(c->logits, c->base_logits, (size_t)c->n_tok * (size_t)c->n_vocab * sizeof *c->logits);
    }
    for (int32_t k = 0; st == QT_OK && k < n; k++)
        if (q[k].data && mb[k].kind == K_OUTPUT) st = output_delta(c, h, mb[k].t, &q[k], c->logits);
    if (st == QT_OK) *sum += sum_kld(c, c->logits);
    return st;
}

/* The members of every group, in the mix's order; grp[i]: tensor i's group (-1: none). */
static qt_status make_groups(measure_ctx *c, const qt_quantize_mix *mx, const qt_quantize_plan *base, qt__mix_table *tb,
                             member *mb, int32_t *grp) {
    const bool tied = qt_model_find_tensor(c->m, "output.weight") == NULL;
    tb->n = 0;
    for (int32_t i = 0; i < mx->n; i++) {
        grp[i] = -1;
        const qt_tensor *t = qt_model_find_tensor(c->m, base->tensors[mx->t[i].plan_index].name);
        char name[QT_MAX_NAME];
        if (!qt__mix_group_of(t->name, c->tg->per_group, name, sizeof name)) continue;
        member *b = &mb[i];
        *b = (member){.i = i, .t = t, .layer = -1};
        if (!strcmp(name, "output")) b->kind = K_OUTPUT;
        else if (!strcmp(name, "token_embd")) {
            if (tied) continue;
            b->kind = K_EMBD;
        } else {
            int end = 0;
            sscanf(t->name, "blk.%d.%n", &b->layer, &end);
            snprintf(b->linear, sizeof b->linear, "%.*s", (int)(strlen(t->name) - (size_t)end - strlen(".weight")), t->name + end);
            b->kind = K_LINEAR;
        }
        int32_t g = 0;
        while (g < tb->n && strcmp(tb->g[g].name, name)) g++;
        if (g == tb->n) {
            snprintf(tb->g[g].name, sizeof tb->g[g].name, "%s", name);
            tb->g[g].n_types = 0;
            tb->n++;
        }
        grp[i] = g;
        qt__mix_group *G = &tb->g[g];
        for (int32_t k = 0; k < mx->t[i].n_options; k++) {
            int32_t j = 0;
            while (j < G->n_types && G->types[j] != mx->t[i].types[k]) j++;
            if (j == G->n_types && j < QT__MIX_MAX_TYPES) G->types[G->n_types++] = mx->t[i].types[k];
        }
    }
    return QT_OK;
}

/* Engine and buffers for one sequence's logits. */
static qt_status ctx_open(measure_ctx *c, const qt_model *m, const qt_quantize_target *tg, int threads) {
    if (!tg->tokens || tg->n_seq < 1 || tg->n_tok < 2)
        return qt_error(QT_ERR_ARG, "--sensitivity measured needs calibration text (--calib FILE)");
    const qt_hparams *hp = qt_model_hparams(m);
    *c = (measure_ctx){.m = m, .tg = tg, .n_layer = hp->n_layer, .n_tok = tg->n_tok, .n_embd = (int32_t)hp->n_embd};
    qt_engine_opts eo;
    qt_engine_opts_default(&eo);
    eo.n_ctx = eo.n_batch = tg->n_tok;
    eo.n_threads = threads;
    eo.kv_type = QT_KV_TYPE_F32;
    qt_status s = qt_engine_new(m, &eo, &c->e);
    if (s == QT_OK && tg->gptq) s = qt__mix_gptq_new(m, tg, threads, &c->gq);
    if (s != QT_OK) return s;
    c->n_vocab = qt_engine_n_vocab(c->e);
    const size_t lv = (size_t)c->n_tok * (size_t)c->n_vocab, le = (size_t)c->n_tok * (size_t)c->n_embd;
    c->logp0 = malloc(lv * sizeof *c->logp0);
    const int nth = c->e->pool ? qt_threadpool_size(c->e->pool) : 1;
    c->scratch = malloc((size_t)nth * (size_t)c->n_vocab * sizeof *c->scratch);
    c->row_kl = malloc((size_t)c->n_tok * sizeof *c->row_kl);
    c->base_logits = malloc(lv * sizeof *c->base_logits);
    c->logits = malloc(lv * sizeof *c->logits);
    c->h0 = malloc(le * sizeof *c->h0);
    c->h = malloc(le * sizeof *c->h);
    if (!c->logp0 || !c->scratch || !c->row_kl || !c->base_logits || !c->logits || !c->h0 || !c->h) return qt_error(QT_ERR_NOMEM, "out of memory");
    return QT_OK;
}

static void ctx_close(measure_ctx *c) {
    free(c->logp0);
    free(c->scratch);
    free(c->row_kl);
    free(c->base_logits);
    free(c->logits);
    free(c->h0);
    free(c->h);
    if (c->e) qt_engine_free(c->e);
    qt__mix_gptq_free(c->gq);
}

/* Every decoder linear bound to its own tensor, as a measurement binds it back (the same kernels from here on). */
static qt_status bind_base(measure_ctx *c, const member *mb, const int32_t *grp, int32_t n) {
    qt_layerwise *lw = NULL;
    qt_status s = qt_layerwise_new(c->e, c->tg->tokens, 1, c->n_tok, &lw);
    for (int32_t i = 0; s == QT_OK && i < n; i++)
        if (grp[i] >= 0 && mb[i].kind == K_LINEAR) s = bind(c, lw, &mb[i], mb[i].t);
    if (lw) qt_layerwise_free(lw);
    return s;
}

/* One group being measured: its members, their copies in each of its types, the KL summed so far. */
typedef struct group_run {
    int32_t n;            /* members */
    int32_t start;        /* the layer its runs start at: -1 the token embedding (from the tokens), n_layer the output only */
    member *gm;           /* (n) */
    qt_tensor *q;         /* (n_types, n) type k's copies at q + k n */
    uint8_t **buf;        /* (n_types, n) their bytes */
    double *sum;          /* (n_types) KL summed over the sequences measured so far, nats */
} group_run;

/* Where group g's runs start: the earliest layer of its decoder linears (the layers before see the base model). */
static int32_t group_start(const measure_ctx *c, const member *mb, const int32_t *grp, int32_t n_mix, int32_t g) {
    int32_t start = c->n_layer;
    for (int32_t i = 0; i < n_mix; i++) {
        if (grp[i] != g) continue;
        if (mb[i].kind == K_EMBD) return -1;
        if (mb[i].kind == K_LINEAR && mb[i].layer < start) start = mb[i].layer;
    }
    return start;
}

static qt_status group_open(measure_ctx *c, const qt_quantize_mix *mx, float *const *weights, const member *mb,
                            const int32_t *grp, int32_t g, const qt__mix_group *G, group_run *r) {
    int32_t n = 0;
    for (int32_t i = 0; i < mx->n; i++) n += grp[i] == g;
    *r = (group_run){.n = n, .start = group_start(c, mb, grp, mx->n, g)};
    r->gm = calloc((size_t)n + 1, sizeof *r->gm);
    r->q = calloc((size_t)G->n_types * (size_t)n + 1, sizeof *r->q);
    r->buf = calloc((size_t)G->n_types * (size_t)n + 1, sizeof *r->buf);
    r->sum = calloc((size_t)G->n_types + 1, sizeof *r->sum);
    qt_status s = r->gm && r->q && r->buf && r->sum ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
    int32_t at = 0;
    for (int32_t i = 0; s == QT_OK && i < mx->n; i++) {
        if (grp[i] != g) continue;
        r->gm[at] = mb[i];
        for (int32_t k = 0; s == QT_OK && k < G->n_types; k++)
            for (int32_t o = 0; s == QT_OK && o < mx->t[i].n_options; o++)
                if (mx->t[i].types[o] == G->types[k])
                    s = quantize_copy(c, mb[i].t, G->types[k], weights[i], &r->q[k * n + at], &r->buf[k * n + at]);
        at++;
    }
    return s;
}

/* The group's costs from its sums (on success), and its copies freed. */
static void group_close(const measure_ctx *c, group_run *r, qt__mix_group *G, qt_status s) {
    for (int32_t k = 0; s == QT_OK && k < G->n_types; k++) G->cost[k] = r->sum[k] / ((double)c->tg->n_seq * (double)c->n_tok);
    for (int32_t k = 0; r->buf && k < G->n_types * r->n; k++) free(r->buf[k]);
    free(r->gm);
    free(r->q);
    free(r->buf);
    free(r->sum);
    *r = (group_run){0};
}

/* The reference loop (QUANTA_MIX_MEASURE_FULL=1): each group on its own, every sequence's base and every
 * (group, type) run from the tokens through every layer. */
static qt_status measure_group(measure_ctx *c, const qt_quantize_mix *mx, float *const *weights, const member *mb,
                               const int32_t *grp, int32_t g, qt__mix_group *G) {
    group_run r;
    qt_status s = group_open(c, mx, weights, mb, grp, g, G, &r);
    for (int32_t sq = 0; s == QT_OK && sq < c->tg->n_seq; sq++) {
        s = run_base(c, sq, NULL);
        for (int32_t k = 0; s == QT_OK && k < G->n_types; k++) s = kld_with(c, sq, r.gm, r.n, &r.q[k * r.n], NULL, 0, &r.sum[k]);
        if (s == QT_OK && qt_cancelled()) s = qt_error(QT_ERR_INTERRUPTED, "%s: interrupted", qt_model_path(c->m));
    }
    group_close(c, &r, G, s);
    return s;
}

/* The groups starting at layer L (group_start), measured together: per sequence the base distribution
 * from the base run's final stream (fin), then each (group, type) run resumed from the base stream at
 * L's input (at, which holds it for every sequence). The same numbers as measure_group: the layers
 * before L see the base model either way, and each group's sum runs over the sequences in order. */
static qt_status measure_at(measure_ctx *c, const qt_quantize_mix *mx, float *const *weights, const member *mb,
                            const int32_t *grp, qt__mix_table *tb, int32_t L, qt_layerwise *fin, qt_layerwise *at) {
    group_run *r = calloc((size_t)tb->n + 1, sizeof *r);
    int32_t *gi = calloc((size_t)tb->n + 1, sizeof *gi), n = 0;
    qt_status s = r && gi ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
    for (int32_t g = 0; s == QT_OK && g < tb->n; g++)
        if (group_start(c, mb, grp, mx->n, g) == L) {
            gi[n] = g;
            s = group_open(c, mx, weights, mb, grp, g, &tb->g[g], &r[n++]);
        }
    const bool resume = L > 0 && L < c->n_layer;
    for (int32_t sq = 0; s == QT_OK && n > 0 && sq < c->tg->n_seq; sq++) {
        s = run_base(c, sq, qt__layerwise_hidden(fin, sq));
        const float *from = resume ? qt__layerwise_hidden(at, sq) : NULL;
        for (int32_t j = 0; s == QT_OK && j < n; j++)
            for (int32_t k = 0; s == QT_OK && k < tb->g[gi[j]].n_types; k++)
                s = kld_with(c, sq, r[j].gm, r[j].n, &r[j].q[k * r[j].n], from, resume ? L : 0, &r[j].sum[k]);
        if (s == QT_OK && qt_cancelled()) s = qt_error(QT_ERR_INTERRUPTED, "%s: interrupted", qt_model_path(c->m));
    }
    for (int32_t j = 0; r && j < n; j++) group_close(c, &r[j], &tb->g[gi[j]], s);
    free(r);
    free(gi);
    return s;
}

/* Groups in layer order (the token embedding first, the output last): the base runs once per sequence
 * (fin: every sequence's final stream, n_seq x n_tok x n_embd floats) and a second layer-wise walk (at)
 * holds every sequence's stream at the input of the layer being measured, so a (group, type) run
 * computes only the layers from its group's on. */
static qt_status measure_resumed(measure_ctx *c, const qt_quantize_mix *mx, float *const *weights, const member *mb,
                                 const int32_t *grp, qt__mix_table *tb) {
    qt_layerwise *fin = NULL, *at = NULL;
    qt_status s = qt_layerwise_new(c->e, c->tg->tokens, c->tg->n_seq, c->n_tok, &fin);
    for (int32_t il = 0; s == QT_OK && il < c->n_layer; il++) s = qt_layerwise_run_layer(fin, NULL, NULL);
    if (s == QT_OK) s = qt_layerwise_new(c->e, c->tg->tokens, c->tg->n_seq, c->n_tok, &at);
    int32_t last = -1; /* the latest layer a group starts at: the walk stops there */
    for (int32_t g = 0; g < tb->n; g++) {
        const int32_t st = group_start(c, mb, grp, mx->n, g);
        if (st < c->n_layer && st > last) last = st;
    }
    for (int32_t L = -1; s == QT_OK && L <= c->n_layer; L++) {
        s = measure_at(c, mx, weights, mb, grp, tb, L, fin, at);
        if (s == QT_OK && L >= 0 && L < last) s = qt_layerwise_run_layer(at, NULL, NULL);
    }
    qt_layerwise_free(at);
    qt_layerwise_free(fin);
    return s;
}

qt_status qt__mix_measure(const qt_model *m, const qt_quantize_target *tg, int threads, const qt_quantize_mix *mx,
                          const qt_quantize_plan *base, float *const *weights, qt__mix_table *tb, int32_t *grp) {
    measure_ctx c = {0};
    member *mb = calloc((size_t)mx->n + 1, sizeof *mb);
    tb->g = calloc((size_t)mx->n + 1, sizeof *tb->g);
    qt_status s = mb && tb->g ? ctx_open(&c, m, tg, threads) : qt_error(QT_ERR_NOMEM, "out of memory");
    if (s == QT_OK) s = make_groups(&c, mx, base, tb, mb, grp);
    if (s == QT_OK) s = bind_base(&c, mb, grp, mx->n);
    const char *full = getenv("QUANTA_MIX_MEASURE_FULL");
    if (full && !strcmp(full, "1"))
        for (int32_t g = 0; s == QT_OK && g < tb->n; g++) s = measure_group(&c, mx, weights, mb, grp, g, &tb->g[g]);
    else if (s == QT_OK)
        s = measure_resumed(&c, mx, weights, mb, grp, tb);
    ctx_close(&c);
    free(mb);
    return s;
}

/* The additivity check: every grouped tensor in its chosen type at once (a tied token embedding as the
 * output projection only: the engine cannot rebind its lookup), the mean KL per token on the same tokens. */
qt_status qt__mix_measure_final(const qt_model *m, const qt_quantize_target *tg, int threads, const qt_quantize_mix *mx,
                                const qt_quantize_plan *base, float *const *weights, double *kld) {
    measure_ctx c = {0};
    const int32_t n = mx->n;
    member *mb = calloc((size_t)n + 1, sizeof *mb);
    int32_t *grp = calloc((size_t)n + 1, sizeof *grp);
    qt_tensor *q = calloc((size_t)n + 1, sizeof *q);
    uint8_t **buf = calloc((size_t)n + 1, sizeof *buf);
    qt__mix_table tb = {.g = calloc((size_t)n + 1, sizeof *tb.g)};
    qt_status s = mb && grp && q && buf && tb.g ? ctx_open(&c, m, tg, threads) : qt_error(QT_ERR_NOMEM, "out of memory");
    if (s == QT_OK) s = make_groups(&c, mx, base, &tb, mb, grp);
    const bool tied = qt_model_find_tensor(m, "output.weight") == NULL;
    for (int32_t i = 0; s == QT_OK && i < n; i++) {
        const qt_tensor *t = qt_model_find_tensor(m, base->tensors[mx->t[i].plan_index].name);
        if (grp[i] < 0 && tied && !strcmp(t->name, "token_embd.weight")) {
            mb[i] = (member){.i = i, .t = t, .kind = K_OUTPUT, .layer = -1};
            grp[i] = 0;
        }
        if (grp[i] >= 0) s = quantize_copy(&c, t, mx->t[i].types[mx->t[i].chosen], weights[i], &q[i], &buf[i]);
    }
    if (s == QT_OK) s = bind_base(&c, mb, grp, n);
    double sum = 0;
    for (int32_t sq = 0; s == QT_OK && sq < tg->n_seq; sq++) {
        s = run_base(&c, sq, NULL);
        if (s == QT_OK) s = kld_with(&c, sq, mb, n, q, NULL, 0, &sum);
        if (s == QT_OK && qt_cancelled()) s = qt_error(QT_ERR_INTERRUPTED, "%s: interrupted", qt_model_path(m));
    }
    *kld = s == QT_OK ? sum / ((double)tg->n_seq * (double)tg->n_tok) : NAN;
    ctx_close(&c);
    for (int32_t i = 0; buf && i < n; i++) free(buf[i]);
    free(buf);
    free(q);
    free(mb);
    free(grp);
    free(tb.g);
    return s;
}
