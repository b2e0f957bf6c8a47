/* lib/quantize/pipeline.c — the run: every tensor through the GGUF writer's
 * conversion hook, rows quantized in parallel, and the provenance metadata
 * (include/quanta/quantize.h, docs/quantize.md).
 *
 * Determinism: ggml's quantizers work row by row (importance weights are per
 * column), so splitting rows among threads cannot change a byte; the error
 * sums are kept per chunk and added in chunk order. Memory: the input is the
 * model's mapping; a tensor's pages are dropped (madvise) once it is written,
 * so only one tensor's input and output are resident at a time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"
#include "quanta/gguf.h"
#include "quantize_internal.h"

#define CHUNK_ROWS 16 /* rows one thread takes at a time */

typedef struct run_ctx {
    const qt_model *m;
    qt_quantize_plan *p;
    qt_threadpool *tp;
    int n_threads;
    float **scratch;          /* (n_threads) 2 x row floats each: input row, dequantized row */
    int64_t scratch_row;
    float *weights;           /* importance weights of the current tensor, or NULL */
    /* current tensor */
    const qt_tensor *src;
    qt_type type;
    uint8_t *dst;
    size_t dst_row;
    int64_t rows_per_slice;   /* ne[1] */
    double (*err)[2];         /* per chunk: sum (w - q)^2, sum w^2 */
    qt_status status;         /* first failure (set under no lock: any failure code will do) */
    const qt_quantize_opts *o;
    qt__resume *r;            /* the run's staging; NULL for the estimate */
    const qt__quantize_given *given; /* NULL, or data computed by an algorithm */
} run_ctx;

static void quantize_chunk(void *vctx, int64_t begin, int64_t end, int ti) {
    run_ctx *c = vctx;
    const int64_t ne0 = c->src->ne[0];
    const size_t src_row = qt_row_size(c->src->type, ne0);
    float *row = c->scratch[ti], *back = c->scratch[ti] + c->scratch_row;
    for (int64_t ch = begin; ch < end; ch++) {
        double e2 = 0, w2 = 0;
        const int64_t r0 = ch * CHUNK_ROWS;
        int64_t r1 = r0 + CHUNK_ROWS;
        const int64_t n_rows = (int64_t)(c->src->nbytes / src_row);
        if (r1 > n_rows) r1 = n_rows;
        for (int64_t r = r0; r < r1 && c->status == QT_OK; r++) {
            const uint8_t *s = (const uint8_t *)c->src->data + (size_t)r * src_row;
            uint8_t *d = c->dst + (size_t)r * c->dst_row;
            qt_status st = qt_dequantize_rows(c->src->type, s, row, 1, ne0);
            const float *w = c->weights ? c->weights + (r / c->rows_per_slice % (c->src->ne[2] > 0 ? c->src->ne[2] : 1)) * ne0 : NULL;
            if (st == QT_OK) st = qt_quantize_rows(c->type, row, d, 1, ne0, w);
            if (st == QT_OK) st = qt_dequantize_rows(c->type, d, back, 1, ne0);
            if (st != QT_OK) { c->status = st; return; }
            for (int64_t k = 0; k < ne0; k++) {
                const double x = row[k], e = x - back[k];
                e2 += e * e;
                w2 += x * x;
            }
        }
        c->err[ch][0] = e2;
        c->err[ch][1] = w2;
        qt__model_drop_pages(c->m, (const uint8_t *)c->src->data + (size_t)r0 * src_row, (size_t)(r1 - r0) * src_row);
    }
}

static int32_t plan_index(const qt_quantize_plan *p, const qt_tensor *t) {
    const qt__qplan_priv *pv = p->priv;
    if (!pv->first || t < pv->first || t >= pv->first + pv->n_model_tensors) return -1;
    return pv->plan_index[t - pv->first];
}

static qt_type hook_type(void *user, const qt_tensor *t) {
    run_ctx *c = user;
    int32_t i = plan_index(c->p, t);
    return i < 0 ? QT_TYPE_COUNT : c->p->tensors[i].type;
}

static qt_status convert(run_ctx *c, qt_quantize_tensor *q, const qt_tensor *t, qt_type type, void *dst) {
    qt__qplan_priv *pv = c->p->priv;
    const int64_t ne0 = t->ne[0], n_exp = t->ne[2] > 1 ? t->ne[2] : 1;
    qt_status s = QT_OK;
    c->weights = NULL;
    if (pv->im && !q->imatrix_missing && qt_type_get(type)->is_quantized) {
        if (!(c->weights = malloc((size_t)(ne0 * n_exp) * sizeof(float)))) return qt_error(QT_ERR_NOMEM, "out of memory");
        s = qt_imatrix_get(pv->im, t->name, ne0, n_exp, c->weights);
        if (s == QT_ERR_NOT_FOUND || (s != QT_OK && !strcmp(t->name, "token_embd.weight"))) {
            free(c->weights);
            c->weights = NULL;
            s = QT_OK;
        }
        if (s != QT_OK) { free(c->weights); c->weights = NULL; return s; }
    }
    const int64_t n_rows = q->n_elements / ne0, n_chunks = (n_rows + CHUNK_ROWS - 1) / CHUNK_ROWS;
    c->src = t;
    c->type = type;
    c->dst = dst;
    c->dst_row = qt_row_size(type, ne0);
    c->rows_per_slice = t->ne[1] > 0 ? t->ne[1] : 1;
    c->status = QT_OK;
    if (!(c->err = calloc((size_t)n_chunks + 1, sizeof *c->err))) { free(c->weights); return qt_error(QT_ERR_NOMEM, "out of memory"); }
    qt_parallel_for(c->tp, n_chunks, quantize_chunk, c);
    double e2 = 0, w2 = 0;
    for (int64_t k = 0; k < n_chunks; k++) { e2 += c->err[k][0]; w2 += c->err[k][1]; }
    free(c->err);
    free(c->weights);
    c->weights = NULL;
    if (c->status != QT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", qt_last_error());
        return qt_error(c->status, "%s: tensor '%s' to %s: %s", qt_model_path(c->m), t->name, qt_type_get(type)->name, why);
    }
    q->measured = true;
    q->rmse = q->n_elements ? sqrt(e2 / (double)q->n_elements) : 0;
    q->snr_db = e2 > 0 ? 10.0 * log10(w2 / e2) : INFINITY;
    return QT_OK;
}

/* Data an algorithm computed: copied, and measured against the input as convert() does
 * (unless its values were rescaled: transformed). */
static qt_status copy_given(run_ctx *c, qt_quantize_tensor *q, const qt_tensor *t, qt_type type, const uint8_t *data,
                            void *dst, size_t nbytes, bool transformed) {
    const int64_t ne0 = t->ne[0], n_rows = q->n_elements / ne0;
    const size_t src_row = qt_row_size(t->type, ne0), dst_row = qt_row_size(type, ne0);
    if (dst_row * (size_t)n_rows != nbytes)
        return qt_error(QT_ERR_INTERNAL, "%s: tensor '%s': size mismatch", qt_model_path(c->m), t->name);
    memcpy(dst, data, nbytes);
    if (transformed) return QT_OK;
    float *row = c->scratch[0], *back = c->scratch[0] + c->scratch_row;
    double e2 = 0, w2 = 0;
    for (int64_t r = 0; r < n_rows; r++) {
        qt_status s = qt_dequantize_rows(t->type, (const uint8_t *)t->data + (size_t)r * src_row, row, 1, ne0);
        if (s == QT_OK) s = qt_dequantize_rows(type, data + (size_t)r * dst_row, back, 1, ne0);
        if (s != QT_OK) return s;
        for (int64_t k = 0; k < ne0; k++) {
            const double x = row[k], e = x - back[k];
            e2 += e * e;
            w2 += x * x;
        }
    }
    q->measured = true;
    q->rmse = q->n_elements ? sqrt(e2 / (double)q->n_elements) : 0;
    q->snr_db = e2 > 0 ? 10.0 * log10(w2 / e2) : INFINITY;
    return QT_OK;
}

static qt_status hook_data(void *user, const qt_tensor *t, qt_type type, void *dst, size_t nbytes) {
    run_ctx *c = user;
    int32_t i = plan_index(c->p, t);
    qt_status s = QT_OK;
    if (qt_cancelled()) return qt_error(QT_ERR_INTERRUPTED, "%s: interrupted", qt_model_path(c->m));
    uint8_t *loaded = NULL;
    const uint8_t *given = i >= 0 && c->given && c->given->data ? c->given->data[i] : NULL;
    if (i >= 0 && !given && c->given && c->given->load) {
        if ((s = c->given->load(c->given->load_ctx, i, &loaded)) != QT_OK) return s;
        given = loaded;
    }
    if (given && t->ne[0] <= c->scratch_row) {
        s = copy_given(c, &c->p->tensors[i], t, type, given, dst, nbytes, c->given->transformed && c->given->transformed[i]);
    } else if (type == t->type) {
        if (nbytes != t->nbytes) return qt_error(QT_ERR_INTERNAL, "%s: tensor '%s': size mismatch", qt_model_path(c->m), t->name);
        memcpy(dst, t->data, nbytes);
    } else if (i >= 0 && t->ne[0] <= c->scratch_row) {
        s = convert(c, &c->p->tensors[i], t, type, dst);
    } else {
        /* not in the plan (a generated tensor): one thread */
        s = qt_error(QT_ERR_INTERNAL, "%s: tensor '%s' is not in the plan", qt_model_path(c->m), t->name);
    }
    free(loaded);
    qt__model_drop_pages(c->m, t->data, t->nbytes);
    return s;
}

static qt_status hook_checkpoint(void *user, int32_t n_done, uint64_t bytes) {
    run_ctx *c = user;
    qt_status s = qt__resume_checkpoint(c->r, c->p, n_done, bytes);
    if (s == QT_OK && n_done > 0 && c->o->tensor_written) c->o->tensor_written(c->o->tensor_written_ctx, n_done);
    return s;
}

/* ---- metadata ---------------------------------------------------------------------- */

static qt_gguf_value str_val(const char *s) {
    qt_gguf_value v = {.type = QT_GGUF_STRING};
    v.str.ptr = s;
    v.str.len = strlen(s);
    return v;
}

static qt_gguf_value i32_val(int64_t x) {
    qt_gguf_value v = {.type = QT_GGUF_INT32};
    v.i64 = x;
    return v;
}

#define MAX_KV (16 + QT_CALIB_MAX_KV + QT_KV_MAX_KV)

/* llama-quantize's quantize.imatrix.* keys (llama.cpp tools/quantize) and quanta's own. */
static qt_gguf_value str_array(qt_gguf_value *items, char *const *strs, int32_t n) {
    for (int32_t i = 0; i < n; i++) items[i] = str_val(strs[i]);
    qt_gguf_value v = {.type = QT_GGUF_ARRAY};
    v.arr.type = QT_GGUF_STRING;
    v.arr.n = (uint64_t)n;
    v.arr.items = items;
    return v;
}

/* --target-size's choice (quanta.mix.*). */
static int32_t mix_kv(const qt__qplan_priv *pv, qt_gguf_kv *kv, qt_gguf_value *mix_items) {
    if (!pv->n_mix) return 0;
    qt_gguf_value budget = {.type = QT_GGUF_UINT64}, cost = {.type = QT_GGUF_FLOAT64};
    budget.u64 = pv->mix_budget;
    cost.f64 = pv->mix_cost;
    kv[0] = (qt_gguf_kv){QT_QUANTIZE_KEY_MIX_TYPES, str_array(mix_items, pv->mix_strs, pv->n_mix)};
    kv[1] = (qt_gguf_kv){QT_QUANTIZE_KEY_MIX_BUDGET, budget};
    kv[2] = (qt_gguf_kv){QT_QUANTIZE_KEY_MIX_SENSITIVITY, str_val("proxy")};
    kv[3] = (qt_gguf_kv){QT_QUANTIZE_KEY_MIX_PREDICTED, cost};
    return 4;
}

static int32_t build_kv(const qt_quantize_opts *o, const qt_quantize_plan *p, qt_gguf_kv *kv, qt_gguf_value *fb_items,
                        qt_gguf_value *mix_items) {
    const qt__qplan_priv *pv = p->priv;
    int32_t n = 0;
    kv[n++] = (qt_gguf_kv){QT_QUANTIZE_KEY_VERSION, str_val(qt_version())};
    if (o->algorithm) kv[n++] = (qt_gguf_kv){QT_QUANTIZE_KEY_ALGORITHM, str_val(o->algorithm)};
    if (o->command_line) kv[n++] = (qt_gguf_kv){QT_QUANTIZE_KEY_COMMAND, str_val(o->command_line)};
    kv[n++] = (qt_gguf_kv){QT_QUANTIZE_KEY_SCHEME, str_val(p->ftype->name)};
    if (pv->im) {
        kv[n++] = (qt_gguf_kv){"quantize.imatrix.file", str_val(o->imatrix_label ? o->imatrix_label : o->imatrix)};
        if (qt_imatrix_n_datasets(pv->im) > 0)
            kv[n++] = (qt_gguf_kv){"quantize.imatrix.dataset", str_val(qt_imatrix_dataset(pv->im, 0))};
        kv[n++] = (qt_gguf_kv){"quantize.imatrix.entries_count", i32_val(qt_imatrix_n_entries(pv->im))};
        kv[n++] = (qt_gguf_kv){"quantize.imatrix.chunks_count", i32_val(qt_imatrix_chunk_count(pv->im))};
        kv[n++] = (qt_gguf_kv){QT_QUANTIZE_KEY_IMATRIX_SHA256, str_val(p->imatrix_sha256)};
    }
    if (o->calib) n += qt_calib_set_gguf_kv(o->calib, kv + n);
    if (o->kv_scales) n += qt_kv_scales_gguf_kv(o->kv_scales, kv + n);
    if (p->n_fallbacks) kv[n++] = (qt_gguf_kv){QT_QUANTIZE_KEY_FALLBACKS, str_array(fb_items, pv->fallback_strs, p->n_fallbacks)};
    return n + mix_kv(pv, kv + n, mix_items);
}

static void free_scratch(run_ctx *c) {
    for (int i = 0; c->scratch && i < c->n_threads; i++) free(c->scratch[i]);
    free(c->scratch);
    if (c->tp) qt_threadpool_free(c->tp);
}

qt_status qt__quantize_write(const qt_model *m, const char *path, const qt_quantize_opts *o, qt_quantize_plan *p,
                             uint64_t *size_only, qt__resume *r, const qt__quantize_given *given) {
    run_ctx c = {.m = m, .p = p, .o = o, .r = r, .given = given};
    qt_status s = QT_OK;
    if (!size_only) {
        c.n_threads = o->threads > 0 ? o->threads : qt_default_threads();
        for (int32_t i = 0; i < p->n_tensors; i++)
            if (p->tensors[i].n_elements && qt_model_find_tensor(m, p->tensors[i].name)->ne[0] > c.scratch_row)
                c.scratch_row = qt_model_find_tensor(m, p->tensors[i].name)->ne[0];
        if ((s = qt_threadpool_create(c.n_threads, &c.tp)) != QT_OK) return s;
        c.n_threads = qt_threadpool_size(c.tp);
        if (!(c.scratch = calloc((size_t)c.n_threads, sizeof *c.scratch))) s = qt_error(QT_ERR_NOMEM, "out of memory");
        for (int i = 0; s == QT_OK && i < c.n_threads; i++)
            if (!(c.scratch[i] = malloc((size_t)c.scratch_row * 2 * sizeof(float) + 64))) s = qt_error(QT_ERR_NOMEM, "out of memory");
    }
    qt_gguf_kv kv[MAX_KV];
    const qt__qplan_priv *pv = p->priv;
    qt_gguf_value *fb = calloc((size_t)p->n_fallbacks + 1, sizeof *fb), *mx = calloc((size_t)pv->n_mix + 1, sizeof *mx);
    if ((!fb || !mx) && s == QT_OK) s = qt_error(QT_ERR_NOMEM, "out of memory");
    if (s == QT_OK) {
        qt_gguf_write_opts wo = qt_gguf_write_opts_default();
        wo.tensor_type = hook_type;
        wo.tensor_data = size_only ? NULL : hook_data;
        wo.user = &c;
        wo.extra_kv = kv;
        wo.n_extra_kv = build_kv(o, p, kv, fb, mx);
        wo.file_type = p->ftype->id;
        wo.progress = o->progress;
        wo.size_only = size_only;
        if (r) wo.checkpoint = hook_checkpoint;
        if (r && r->staged) {
            wo.stage = &r->stage;
            wo.resume_tensors = r->resume_tensors;
        }
        s = qt_gguf_write(m, path ? path : "-", &wo);
    }
    free(fb);
    free(mx);
    free_scratch(&c);
    return s;
}

qt_status qt_quantize_run(const qt_model *m, const char *out_path, const qt_quantize_opts *o, qt_quantize_plan *p) {
    if (!out_path || !out_path[0]) return qt_error(QT_ERR_ARG, "quantize: no output path");
    return qt__quantize_write_staged(m, out_path, o, p, NULL);
}

qt_status qt__quantize_write_staged(const qt_model *m, const char *out_path, const qt_quantize_opts *o,
                                    qt_quantize_plan *p, const qt__quantize_given *given) {
    qt__resume r;
    qt_status s = qt__resume_begin(&r, m, out_path, o, p);
    if (s == QT_OK) s = qt__quantize_write(m, out_path, o, p, NULL, &r, given);
    qt__resume_end(&r, s, p);
    return s;
}
