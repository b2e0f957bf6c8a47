/* lib/quantize/quantize_internal.h — what lib/quantize shares inside itself and with eval (internal). */
#ifndef QT_QUANTIZE_INTERNAL_H
#define QT_QUANTIZE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "quanta/imatrix.h"
#include "quanta/quantize.h"
#include "quanta/engine.h"

/* Calls fn(ctx, hash) for the FNV-1a hash of every 13-word shingle of t, in
 * text order (the held-out check samples evaluation text with the same rule). */
void qt__calib_shingle_scan(const uint8_t *t, size_t len, void (*fn)(void *, uint64_t), void *ctx);
/* The calibration text of a file's bytes (quanta/quantize.h, rule step 1):
 * plain text as it is, JSONL's "text" fields and rendered "messages" joined by
 * "\n\n"; *out is malloc'd and NUL-terminated; errors name path and line.
 * `chat` is the vocabulary whose chat template renders "messages" (NULL: such
 * lines are refused); *spans (malloc'd, *n_spans, NULL when none) are the byte
 * ranges [b, e) of *out that rendered conversations fill. */
typedef struct qt__calib_span {
    size_t b, e;
} qt__calib_span;
qt_status qt__calib_text(const char *path, const char *data, size_t size, const qt_vocab *chat, char **out,
                         size_t *out_len, qt__calib_span **spans, size_t *n_spans);
/* strftime_now's time for calibration conversations: 2024-07-26 00:00 UTC (Llama 3.1's template date) */
#define QT__CALIB_CHAT_NOW 1721952000
typedef struct qt__qplan_priv {
    qt_imatrix *im;              /* NULL without --imatrix */
    const qt_tensor *first;      /* the model's tensor array: plan index = tensor - first */
    int32_t *plan_index;         /* (model tensors) index into tensors[], -1: not written */
    int32_t n_model_tensors;
    char **fallback_strs;        /* (n_fallbacks) "name: wanted -> type" for quanta.fallbacks */
    const qt_type *mix_types;    /* (n_model_tensors) --target-size's choice, QT_TYPE_COUNT: the rules; NULL: none */
    char *mix_str;               /* quanta.mix.types: the n_mix chosen types, comma-separated, in file order */
    int32_t n_mix;
    uint64_t mix_budget;         /* bytes the mixed tensors could take */
    double mix_cost;             /* their predicted cost */
    const char *mix_sensitivity; /* "proxy", "measured" (static) */
} qt__qplan_priv;

/* OUT.partial and OUT.partial.state for one run (resume.c). */
typedef struct json_t json_t;
typedef struct qt__resume {
    bool staged;              /* OUT is a file: written through stage.path (OUT.partial) */
    bool started;             /* begin succeeded: the staging file is this run's */
    qt_afile_stage stage;     /* path owned; keep = resumable; resume_at from the state */
    char *state_path;         /* OUT.partial.state */
    json_t *state;            /* resumable: identity, options, progress; NULL otherwise */
    int32_t resume_tensors;   /* tensors the state says are complete */
    int32_t n_done;           /* tensors complete so far */
    bool state_written;
} qt__resume;
/* Decides the staging, and for a resume loads and checks the state
 * (QT_ERR_ARG naming what differs) and restores the measured errors. */
qt_status qt__resume_begin(qt__resume *r, const qt_model *m, const char *out, const qt_quantize_opts *o,
                           qt_quantize_plan *p);
/* A saved state (text, len bytes; path names it in messages) against this
 * run's: QT_ERR_FORMAT when malformed, QT_ERR_ARG naming the first input or
 * option that differs from `now` (what this run would save); on success the
 * tensors and bytes complete, and p->tensors[].rmse/snr_db of those tensors. */
qt_status qt__resume_state_check(const char *path, const char *text, size_t len, json_t *now, qt_quantize_plan *p,
                                 int32_t *tensors, uint64_t *bytes);
/* The identity of an input file or directory (path, size, time, a hash of its
 * head or of its listing): what a resumed run must find unchanged. */
qt_status qt__resume_input(const char *path, json_t **out);
/* The state of a run before any progress (input identity, options, size). */
qt_status qt__resume_identity(const qt_model *m, const qt_quantize_opts *o, const qt_quantize_plan *p, json_t **out);
/* QT_ERR_ARG naming the first input or option where saved and now differ. */
qt_status qt__resume_match(const char *path, json_t *saved, json_t *now);
/* The first n_done tensors (`bytes` bytes) are on disk: record it. */
qt_status qt__resume_checkpoint(qt__resume *r, const qt_quantize_plan *p, int32_t n_done, uint64_t bytes);
/* After the write with status s: the state removed on success, the partial
 * kept (p->partial_kept) or removed on failure; frees r. */
void qt__resume_end(qt__resume *r, qt_status s, qt_quantize_plan *p);

/* GPTQ's finished layers on disk (gptq_state.c): OUT.partial.layers and its
 * state, opened by every GPTQ run onto GGUF (its layers leave memory once
 * there); kept on failure only with o->resumable or o->resume. A resume loads
 * and checks the state (QT_ERR_ARG naming what differs). restore: the KV
 * maxima (n_amax values each) and the report so far. has / read: whether plan
 * tensor i is on disk, and its bytes (*data malloc'd; NULL when it is not).
 * save_layer: appends a layer's tensors idx[0..n) and syncs, then records the
 * layer. close: on success (s == QT_OK), or on any failure without
 * --resumable, both files are removed; else they are kept when a layer is
 * recorded (*kept). */
typedef struct qt__gptq_state qt__gptq_state;
qt_status qt__gptq_state_open(const qt_model *m, const char *out, const qt_quantize_opts *o, const qt_quantize_plan *p,
                              int32_t n_amax, qt__gptq_state **g);
/* A saved OUT.partial.layers.state (text, len bytes; path names it in messages)
 * against this run's (`now`: its identity and calibration_sha256): QT_ERR_FORMAT
 * when malformed (every 'tensors' entry a distinct tensor of p with its planned
 * size, adding up to bytes_done; KV maxima at most n_amax each), QT_ERR_ARG
 * naming what differs; on success the parsed state (*out), layers and bytes done. */
qt_status qt__gptq_state_check(const char *path, const char *text, size_t len, json_t *now, const qt_quantize_plan *p,
                               int32_t n_amax, json_t **out, int32_t *layers, uint64_t *bytes);
int32_t qt__gptq_state_layers_done(const qt__gptq_state *g);
qt_status qt__gptq_state_restore(qt__gptq_state *g, float *k_amax, float *v_amax, int32_t n_amax, int64_t *kv_tokens,
                                 qt_gptq_report *r, int32_t *n_rtn);
bool qt__gptq_state_has(const qt__gptq_state *g, int32_t i);
qt_status qt__gptq_state_read(qt__gptq_state *g, int32_t i, uint8_t **data);
qt_status qt__gptq_state_save_layer(qt__gptq_state *g, const qt_quantize_plan *p, const int32_t *idx, int32_t n,
                                    uint8_t *const *given, const float *k_amax, const float *v_amax, int32_t n_amax,
                                    int64_t kv_tokens, const qt_gptq_report *r, int32_t n_rtn);
void qt__gptq_state_close(qt__gptq_state *g, qt_status s, bool *kept);
/* The KV maxima and the report counters of a layer state (both state files). */
qt_status qt__gptq_kv_check(const char *path, const json_t *kv, int32_t n_amax);
json_t *qt__gptq_kv_json(const float *k_amax, const float *v_amax, int32_t n_amax, int64_t kv_tokens);
void qt__gptq_kv_read(const json_t *kv, float *k_amax, float *v_amax, int32_t n_amax, int64_t *kv_tokens);
json_t *qt__gptq_report_json(const qt_gptq_report *r, int32_t n_rtn);
void qt__gptq_report_read(const json_t *rp, qt_gptq_report *r, int32_t *n_rtn);
typedef struct qt__layer_commit {
    const float *k_amax, *v_amax;     /* (n_amax) per layer x KV head */
    int32_t n_amax;
    int64_t kv_tokens;
    const qt_gptq_report *report;
    int32_t n_rtn;
} qt__layer_commit;
qt_status qt__layer_state_commit(json_t *state, const char *state_path, const qt__layer_commit *c,
                                 int32_t *layers_done, uint64_t *bytes_done, uint64_t bytes);

/* A calibrated run's finished layers onto compressed-tensors (gptq_ct_state.c):
 * OUT.partial.layers, unlinked at once unless keep (--resumable) or resume; then
 * with OUT.partial.layers.state, one JSON record per stored linear or vector
 * (appended to the data file by the caller at qt__ct_layers_bytes, fd), each
 * layer committed (synced, then recorded) after it ran. A resume checks the
 * state against `identity` (QT_ERR_ARG naming what differs, QT_ERR_FORMAT when
 * malformed). close: the files are removed on success or without keep, else
 * kept when a layer is recorded (*kept). */
typedef struct qt__ct_layers qt__ct_layers;
qt_status qt__ct_layers_open(const char *out_dir, bool keep, bool resume, json_t *identity, int32_t n_amax,
                             qt__ct_layers **g);
qt_status qt__ct_layers_check(const char *path, const char *text, size_t len, const json_t *identity, int32_t n_amax,
                              json_t **out);
int qt__ct_layers_fd(const qt__ct_layers *g);
bool qt__ct_layers_kept(const qt__ct_layers *g);
int32_t qt__ct_layers_done(const qt__ct_layers *g);
uint64_t qt__ct_layers_bytes(const qt__ct_layers *g);
const json_t *qt__ct_layers_records(const qt__ct_layers *g);
void qt__ct_layers_restore(const qt__ct_layers *g, float *k_amax, float *v_amax, int32_t n_amax, int64_t *kv_tokens,
                           qt_gptq_report *r);
qt_status qt__ct_layers_commit(qt__ct_layers *g, json_t *records, uint64_t bytes, const float *k_amax,
                               const float *v_amax, int32_t n_amax, int64_t kv_tokens, const qt_gptq_report *r);
void qt__ct_layers_close(qt__ct_layers *g, qt_status s, bool *kept);

/* Tensor data an algorithm computed itself (GPTQ, AWQ), written instead of the
 * pipeline's rounding (even for a tensor whose type does not change: a norm
 * that absorbed smoothing scales). */
typedef struct qt__quantize_given {
    const uint8_t *const *data;  /* (p->n_tensors) in the planned type, or NULL: quantize as usual */
    /* Tensors not in data[] but on disk (GPTQ's spilled layers): *bytes malloc'd, NULL when tensor
     * i has none. NULL: none. */
    qt_status (*load)(void *ctx, int32_t i, uint8_t **bytes);
    void *load_ctx;
    const bool *transformed;     /* (p->n_tensors) or NULL: the values were rescaled (AWQ, SmoothQuant), so
                                    an error against the input means nothing and is not measured */
} qt__quantize_given;

/* ---- the calibrated layer-by-layer driver (gptq_run.c, smooth_run.c) ---- */

/* The linears of a decoder layer and which input each one sees: the engine
 * feeds q/k/v the same normed rows, and gate/up the same (lib/engine/forward.c). */
typedef struct qt__layer_linear {
    const char *linear;      /* GGUF base name: "attn_q" */
    int input;               /* 0 attention input, 1 o's input, 2 mlp input, 3 down's input */
} qt__layer_linear;
enum { QT__N_LINEARS = 7, QT__N_INPUTS = 4 };
extern const qt__layer_linear qt__layer_linears[QT__N_LINEARS];
/* The index of a linear's base name in qt__layer_linears, or -1. */
int qt__layer_linear_find(const char *linear);
/* A calibration pass's Hessian scratch: one buffer for every qt_gptq_hessian_add of the pass, grown to the
 * widest input (16 MiB for an 8192-wide one on 2 threads), freed once the pass is over (so it is not held while
 * the linears are quantized, the peak the memory estimate counts). */
typedef struct qt__hess_scratch { float *buf; int64_t floats; } qt__hess_scratch;
qt_status qt__hessian_add_scratch(qt_gptq_hessian *h, qt__hess_scratch *sc, const float *x, int64_t n_rows);
void qt__hess_scratch_free(qt__hess_scratch *sc);

/* What the driver asks of an output format (GGUF plan, compressed-tensors scheme). */
typedef struct qt__calib_target {
    void *ctx;
    /* W (rows, cols) f32 of src, already smoothed; H its (smoothed) Hessian.
     * Sets *bind to the quantized tensor (kept by the target), or leaves
     * bind->data NULL to keep src; *done: GPTQ ran. */
    qt_status (*linear)(void *ctx, const qt_tensor *src, float *W, const double *H, const qt_gptq_opts *o,
                        qt_gptq_stats *st, qt_tensor *bind, bool *done);
    /* After the layer ran on its quantized linears (NULL: nothing to do). */
    qt_status (*layer_done)(void *ctx, const qt_model *m, qt_layerwise *lw, int32_t il);
    /* Smoothing: the columns sharing one scale in src's target grid (0: src
     * is copied as stored and cannot be smoothed); RTN onto that grid in
     * place; a changed norm or bias (n values) for the writer. */
    int64_t (*group)(void *ctx, const qt_tensor *src);
    qt_status (*fake_quant)(void *ctx, const qt_tensor *src, float *W);
    qt_status (*vector)(void *ctx, const qt_tensor *src, const float *v);
    /* --resume: bind a layer an earlier run finished (NULL: never resumed). */
    qt_status (*restore_layer)(void *ctx, const qt_model *m, qt_layerwise *lw, int32_t il);
    /* The layer is finished (it ran on its quantized linears): put it on disk, and it may
     * leave memory (its linears bound to the model's own tensors again). NULL: kept in memory. */
    qt_status (*save_layer)(void *ctx, const qt_model *m, qt_layerwise *lw, int32_t il, const qt_gptq_report *r);
} qt__calib_target;

/* One layer's smoothing: the scales of each input (NULL: not smoothed) and
 * of each linear's rows (NULL: not a producer of a smoothed input). */
typedef struct qt__smooth_layer {
    float *col[QT__N_INPUTS];   /* (n_in): W[:, j] *= s_j for the input's linears, H -> S^-1 H S^-1 */
    float *row[QT__N_LINEARS];  /* (rows): W[j, :] /= s_j */
} qt__smooth_layer;

/* After layer il was observed (h: the inputs' Hessians, act: their channel
 * statistics): the arch's folding pairs smoothed (g->smoothing), the changed
 * norms and biases bound to the engine and handed to t->vector, the scales in
 * *out for the linears; counts in r. */
struct qt_act_stats;
qt_status qt__smooth_layer_run(const qt_model *m, qt_layerwise *lw, int32_t il, const qt_gptq_hessian *h,
                               const struct qt_act_stats *act, const qt_gptq_run_opts *g, const qt__calib_target *t,
                               qt__smooth_layer *out, qt_gptq_report *r);
void qt__smooth_layer_free(qt__smooth_layer *l);
/* The driver's messages (g->note), printf-style. */
void qt__calib_note(const qt_gptq_run_opts *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The writer options both the estimate and the run use (types, metadata);
 * r: the run's staging (NULL for the estimate); given may be NULL. */
qt_status qt__quantize_write(const qt_model *m, const char *path, const qt_quantize_opts *o, qt_quantize_plan *p,
                             uint64_t *size_only, qt__resume *r, const qt__quantize_given *given);
/* A run's write to out_path through its staging (OUT.partial, --resumable). */
qt_status qt__quantize_write_staged(const qt_model *m, const char *out_path, const qt_quantize_opts *o,
                                    qt_quantize_plan *p, const qt__quantize_given *given);

/* qt_quantize_plan_make with --target-size's types (mix_types: one per model tensor,
 * QT_TYPE_COUNT where the rules decide), recorded in quanta.mix.* (lib/quantize/target.c). */
qt_status qt__quantize_plan_make_mix(const qt_model *m, const qt_quantize_opts *o, const qt_type *mix_types,
                                     uint64_t budget, double cost, const char *sensitivity, qt_quantize_plan **out);
/* --sensitivity measured (lib/quantize/mix_measure.c, lib/quantize/mix_table.h): the table of measured
 * group costs; grp (mix->n): each tensor's group in it (-1: none); weights: (mix->n) the importance
 * weights the run quantizes with. tb->g is malloc'd (qt__mix_table_free). */
struct qt_quantize_mix;
struct qt__mix_table;
qt_status qt__mix_measure(const qt_model *m, const qt_quantize_target *tg, int threads, const struct qt_quantize_mix *mx,
                          const qt_quantize_plan *base, float *const *weights, struct qt__mix_table *tb, int32_t *grp);
/* The additivity check: the mean KL per token with every grouped tensor in its chosen type at once. */
qt_status qt__mix_measure_final(const qt_model *m, const qt_quantize_target *tg, int threads, const struct qt_quantize_mix *mx,
                                const qt_quantize_plan *base, float *const *weights, double *kld);

/* The proxy cost of one tensor in one type (lib/quantize/target.c): quantized with the
 * importance weights qw, scored sum_ij w_j dW_ij^2 (NULL: 1); the token embedding's is the
 * mean over its rows, plus the weighted sum when it is also the (tied) output. */
typedef struct qt__proxy_job {
    const qt_tensor *t;
    qt_type type;
    const float *qw, *w;  /* (ne0 x experts) or NULL */
    bool lookup, matmul_too;
    double cost;
    qt_status s;
    int64_t row_step;     /* rows scored: 0, row_step, 2 row_step, ... (qt__proxy_job_sample) */
} qt__proxy_job;
/* Scores j on every k-th row when its tensor has more than max_elems weights (< 0: every row). */
void qt__proxy_job_sample(qt__proxy_job *j, int64_t max_elems);
void qt__proxy_job_init(const qt_model *m, qt__proxy_job *j, const qt_tensor *t, qt_type type, const float *qw,
                        const float *w);
/* Every job on the thread pool (any thread count gives the same costs). */
qt_status qt__proxy_scan(const qt_model *m, int threads, qt__proxy_job *jobs, int64_t n_jobs);
/* t's importance weights from im (malloc'd), or *out NULL where im has no usable entry. */
struct qt_imatrix;
qt_status qt__mix_tensor_weights(const struct qt_imatrix *im, const qt_tensor *t, float **out);
/* tg->refine_rounds rounds of single swaps, each kept only when the whole mix's measured KL divergence
 * on tg's tokens falls (lib/quantize/mix_refine.c); budget: the bytes the chosen options may sum to,
 * each rounded up to align (0: none). Updates mx->t[].chosen, used_bytes, predicted_cost, refine_*. */
qt_status qt__mix_refine(const qt_model *m, const qt_quantize_target *tg, int threads, struct qt_quantize_mix *mx,
                         const qt_quantize_plan *base, float *const *weights, uint64_t budget, uint32_t align);

/* The copies --target-size --algo gptq measures (lib/quantize/mix_gptq.c): t in type ty as the GPTQ run
 * makes it when t alone is quantized (a decoder linear with a grid: GPTQ on the base model's Hessian of its
 * input over tg's tokens with tg->gptq's options; else round to nearest without weights). *bytes malloc'd
 * (rows x row size of ty). Layers asked in increasing order cost one walk of the model. */
typedef struct qt__mix_gptq qt__mix_gptq;
qt_status qt__mix_gptq_new(const qt_model *m, const qt_quantize_target *tg, int threads, qt__mix_gptq **out);
qt_status qt__mix_gptq_copy(qt__mix_gptq *c, const qt_tensor *t, qt_type ty, uint8_t **bytes);
void qt__mix_gptq_free(qt__mix_gptq *c);

#endif
