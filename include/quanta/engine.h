/* quanta/engine.h — the CPU inference engine: forward pass, KV cache formats,
 * sampling, perplexity.
 *
 * One engine runs one model (llama, qwen2, qwen3, mistral families) with the
 * weights in whatever format they are stored in: every matrix row goes
 * through the traits table (to_float, or vec_dot on activations quantized to
 * the row type's vec_dot_type, as llama.cpp's CPU backend does). Nothing is
 * allocated while evaluating; all buffers are sized at qt_engine_new.
 *
 * The KV cache can be stored as f32, f16 (default, like llama.cpp), bf16,
 * FP8 E4M3 / E5M2 or int8, the last three with per-tensor or per-head scales
 * taken from the model file, fixed at 1.0 or computed on the fly; the engine
 * says which in qt_engine_describe().
 */
#ifndef QUANTA_ENGINE_H
#define QUANTA_ENGINE_H

#include "core.h"
#include "model.h"
#include "num.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- KV cache storage ------------------------------------------------------ */
/* qt_kv_type, the one KV cache element enum (engine and planner), is in num.h. */

/* Granularity of the scales of the scaled formats (fp8, int8). */
typedef enum qt_kv_scale_gran {
    QT_KV_SCALE_PER_TENSOR = 0, /* one scale per layer for K and one for V */
    QT_KV_SCALE_PER_HEAD,       /* one per layer and KV head, for K and for V */
} qt_kv_scale_gran;

/* Where the scales of the scaled formats come from. */
typedef enum qt_kv_scale_source {
    QT_KV_SCALE_AUTO = 0,  /* the file's when present; else fp8: 1.0 (what vLLM does without
                              calibration), int8: on the fly */
    QT_KV_SCALE_FILE,      /* the model's blk.N.attn_k_scale / blk.N.attn_v_scale (error if absent) */
    QT_KV_SCALE_ONE,       /* 1.0 */
    QT_KV_SCALE_DYNAMIC,   /* absmax / format max over the first batch the engine evaluates, then fixed */
} qt_kv_scale_source;

/* Tensor names the engine reads KV scales from (F32; 1 element = per tensor,
 * n_head_kv elements = per head). Dequantization multipliers, as vLLM's
 * k_scale / v_scale (docs/formats.md §4.8): stored = fp8(k / k_scale). */
#define QT_KV_K_SCALE_FMT "blk.%d.attn_k_scale"
#define QT_KV_V_SCALE_FMT "blk.%d.attn_v_scale"
/* GGUF metadata a quantizer writes instead of those tensors (llama.cpp refuses a
 * file with tensors it does not use, but ignores unknown keys; docs/quantize.md
 * "KV-cache scales"):
 *   quanta.kv_cache.dtype       string: the format the scales were fitted for
 *                               (qt_kv_type_name: fp8-e4m3, fp8-e5m2, int8)
 *   quanta.kv_cache.scale_gran  string: "tensor" or "head"
 *   quanta.kv_cache.calib       string: how they were fitted: "data", "random", "none"
 *   quanta.kv_cache.k_scale     array of float32: n_layer values (tensor) or
 *   quanta.kv_cache.v_scale     n_layer * n_head_kv (head, layer-major)
 * A scale is amax / the fitted format's largest value; an engine running
 * another scaled format rescales it to amax / its own largest value. */
#define QT_KV_KEY_DTYPE "quanta.kv_cache.dtype"
#define QT_KV_KEY_GRAN "quanta.kv_cache.scale_gran"
#define QT_KV_KEY_CALIB "quanta.kv_cache.calib"
#define QT_KV_KEY_K_SCALE "quanta.kv_cache.k_scale"
#define QT_KV_KEY_V_SCALE "quanta.kv_cache.v_scale"
/* The largest finite value of a scaled KV format (448, 57344, 127); 0 for unscaled ones. */
QT_API float qt_kv_type_max(qt_kv_type d);

QT_API const char *qt_kv_type_name(qt_kv_type d); /* "f32", "f16", "bf16", "fp8-e4m3", "fp8-e5m2", "int8" */
/* QT_ERR_UNSUPPORTED naming the accepted formats when `name` is not one of them. */
QT_API qt_status qt_kv_type_parse(const char *name, qt_kv_type *out);
QT_API const char *qt_kv_scale_source_name(qt_kv_scale_source s); /* "auto", "file", "one", "dynamic" */
QT_API qt_status qt_kv_scale_source_parse(const char *name, qt_kv_scale_source *out);

/* ---- float order ------------------------------------------------------------- */
/* Which float order the matrix kernels may use (docs/engine.md, "Numerics"). */
typedef enum qt_numerics {
    QT_NUMERICS_FAST = 0,   /* default: the fastest kernels this CPU has, whatever their order of
                               float operations (results agree with llama's to rounding) */
    QT_NUMERICS_LLAMA,      /* llama.cpp's CPU order everywhere: its F32 logits bit for bit */
} qt_numerics;

QT_API const char *qt_numerics_name(qt_numerics n); /* "fast", "llama" */
/* QT_ERR_UNSUPPORTED naming the accepted values when `name` is not one of them. */
QT_API qt_status qt_numerics_parse(const char *name, qt_numerics *out);

/* ---- engine ------------------------------------------------------------------ */
typedef struct qt_engine_opts {
    int32_t n_ctx;            /* KV cache length; 0: the model's training context capped at 4096 */
    int32_t n_batch;          /* most tokens per forward batch; 0: min(n_ctx, 512) */
    int32_t n_seq;            /* KV slots, each of n_ctx positions, for qt_engine_batch_eval's
                                 sequences; 0: 1 (slot 0 is the single-sequence calls') */
    int n_threads;            /* <= 0: all online CPUs */
    qt_kv_type kv_type;      /* QT_KV_TYPE_F16 by default */
    qt_kv_scale_gran kv_scale_gran;
    qt_kv_scale_source kv_scale_source;
    bool act_quant_off;       /* false (default): quantize activations to each weight type's
                                 vec_dot_type and dot in that domain, as llama.cpp does;
                                 true: dequantize weight rows to f32 and dot in f32 */
    qt_numerics numerics;     /* QT_NUMERICS_FAST by default */
    bool keep_mapped;         /* false (default): F16/BF16 matrices in a file mapping are copied at load
                                 into huge-page buffers (lib/engine/matmul.c); true: they stay in the
                                 mapping and every looked-up embedding row's pages are dropped again,
                                 for a caller that reads each layer once and drops its pages (GPTQ's
                                 layer-by-layer run: peak RSS one layer's weights, not the model's) */
} qt_engine_opts;

QT_API void qt_engine_opts_default(qt_engine_opts *o);

typedef struct qt_engine_ctx qt_engine_ctx;

/* Binds the model's tensors (checking names and shapes) and allocates every
 * buffer. The model must outlive the engine. */
QT_API qt_status qt_engine_new(const qt_model *m, const qt_engine_opts *o, qt_engine_ctx **out);
QT_API void qt_engine_free(qt_engine_ctx *e);

/* One paragraph naming the numerics in use: KV format, scales and where they
 * came from, activation handling (e.g. "activations quantized to q8_0 for
 * q4_0/q8_0 weights, f16 for f16 weights (llama.cpp CPU behaviour)"). */
QT_API const char *qt_engine_describe(const qt_engine_ctx *e);

QT_API int32_t qt_engine_n_ctx(const qt_engine_ctx *e);
QT_API int32_t qt_engine_n_vocab(const qt_engine_ctx *e);
QT_API int32_t qt_engine_n_past(const qt_engine_ctx *e);   /* tokens held in the KV cache */

/* Forget the KV cache (scales computed on the fly are kept). */
QT_API void qt_engine_reset(qt_engine_ctx *e);

/* Evaluates tokens[0..n) at positions n_past .. n_past+n-1 (in batches of at
 * most n_batch), appending them to the cache. If logits is not NULL it
 * receives (n - first_logit) rows of n_vocab floats: the logits after tokens
 * first_logit .. n-1. QT_ERR_ARG if the tokens do not fit the context or an id
 * is outside the vocabulary (the cache is then unchanged). */
QT_API qt_status qt_engine_eval(qt_engine_ctx *e, const int32_t *tokens, int32_t n, int32_t first_logit, float *logits);

/* The KV scales in use (after the first eval for on-the-fly ones): n_head_kv
 * values per layer for K and V (all equal for per-tensor scales), or NULL for
 * unscaled formats. */
QT_API const float *qt_engine_kv_scales(const qt_engine_ctx *e, int32_t layer, bool value);

/* ---- several sequences at once: continuous batching (lib/engine/batch.c) ----- *
 * An engine made with n_seq = N keeps N independent sequences, one KV slot of
 * n_ctx positions each. qt_engine_batch_eval evaluates rows of any of them in
 * ONE forward pass: every weight matrix is read once for all rows (B activation
 * rows per matmul) and attention is per row, over its own sequence's cache.
 * Row b belongs to sequence seq[b] and takes the next free position of that
 * sequence (rows of one sequence in order). A server puts one decode row of
 * every running sequence beside a prefill chunk of a new one.
 *
 * Batch invariance: a sequence's numbers do not depend on the other rows in
 * the batch. Each row takes the matmul kernel its sequence would take if its
 * rows of this batch were evaluated alone by qt_engine_eval (batch kernels when
 * the sequence has two or more rows here, the decode kernel for one), and the
 * same for logits rows. So a sequence fed the same chunks as qt_engine_eval
 * feeds it (prompt in chunks of n_batch, then one token at a time) gets the
 * same logits bit for bit, alone or beside others, at any thread count. One
 * exception: KV scales computed on the fly come from the engine's first batch,
 * whatever sequences it holds. Slot 0 is the single-sequence calls' cache
 * (qt_engine_eval, qt_engine_n_past, qt_engine_reset). */
QT_API int32_t qt_engine_n_seq(const qt_engine_ctx *e);
/* Most rows in one qt_engine_batch_eval: n_batch + n_seq - 1 (a full prefill
 * chunk beside one decode row of every other sequence). */
QT_API int32_t qt_engine_max_rows(const qt_engine_ctx *e);
/* The batch size prompts should be cut by to match qt_engine_eval (n_batch). */
QT_API int32_t qt_engine_n_batch(const qt_engine_ctx *e);
QT_API int32_t qt_engine_seq_len(const qt_engine_ctx *e, int32_t seq); /* positions held by slot seq */
QT_API void qt_engine_seq_reset(qt_engine_ctx *e, int32_t seq);          /* forget slot seq */
/* Evaluates n rows: tokens[b] of sequence seq[b]. logits receives one row of
 * n_vocab floats per row with want_logits[b] (all rows when want_logits is
 * NULL), in row order. QT_ERR_ARG, with nothing changed, if n exceeds
 * qt_engine_max_rows, a slot is out of range, a token is outside the
 * vocabulary or a sequence's rows do not fit its context. */
QT_API qt_status qt_engine_batch_eval(qt_engine_ctx *e, const int32_t *tokens, const int32_t *seq,
                                      const bool *want_logits, int32_t n, float *logits);

/* ---- sampling ---------------------------------------------------------------- */
typedef struct qt_sampler_opts {
    float temp;       /* 0: greedy (argmax, lowest id on ties) */
    int32_t top_k;    /* <= 0: off */
    float top_p;      /* >= 1: off */
    uint64_t seed;
} qt_sampler_opts;

typedef struct qt_sampler qt_sampler;
QT_API qt_status qt_sampler_new(const qt_sampler_opts *o, int32_t n_vocab, qt_sampler **out);
QT_API void qt_sampler_free(qt_sampler *s);
/* Picks the next token from one row of logits: top-k, then temperature
 * softmax, then top-p (nucleus), then a draw from the seeded generator.
 * Deterministic given the seed and the logits. */
QT_API int32_t qt_sampler_sample(qt_sampler *s, const float *logits);

/* ---- perplexity (llama-perplexity's method) ---------------------------------- */
/* `tokens` is the whole text tokenized once with BOS. It is cut into
 * non-overlapping chunks of n_ctx tokens; the first token of each chunk is
 * replaced by BOS; the negative log-likelihood of tokens n_ctx/2+1 .. n_ctx-1
 * (predicted from positions n_ctx/2 .. n_ctx-2) is averaged over all chunks.
 * ppl = exp(mean nll); ppl_stderr = ppl * sqrt((mean nll² - mean nll²)/(N-1)),
 * exactly as llama.cpp's perplexity tool reports it. */
typedef void (*qt_ppl_chunk_fn)(void *user, int32_t chunks_done, int32_t n_chunks, double ppl_so_far);

typedef struct qt_ppl_opts {
    int32_t n_ctx;            /* chunk length; must not exceed the engine's context */
    int32_t n_chunks;         /* <= 0: every full chunk */
    int32_t bos_id;           /* replaces each chunk's first token; < 0: keep the text's token */
    qt_progress progress;     /* "perplexity", chunks done / total */
    qt_ppl_chunk_fn on_chunk; /* running estimate after each chunk, or NULL */
    void *user;
} qt_ppl_opts;

typedef struct qt_ppl_result {
    double ppl, ppl_stderr;
    double nll_mean;          /* mean negative log-likelihood (nats) */
    int32_t n_ctx, n_chunks;
    int64_t n_scored;         /* tokens whose probability was scored */
    int64_t n_evaluated;      /* tokens run through the model */
    double seconds;           /* wall time of the evaluation */
} qt_ppl_result;

QT_API qt_status qt_perplexity(qt_engine_ctx *e, const int32_t *tokens, int64_t n_tokens,
                        const qt_ppl_opts *o, qt_ppl_result *r);

/* ---- layer by layer: the calibration seam ------------------------------------ *
 * Runs the model one decoder layer at a time over a batch of n_seq sequences of
 * n_tok tokens each (every sequence starts at position 0), keeping the hidden
 * states of all of them between layers, as layer-wise quantization (GPTQ, AWQ,
 * SmoothQuant) needs: observe a layer's linears on every sequence, change that
 * layer, then run it again to feed the next. The observer sees each linear's
 * input rows (n_tokens, n_in) before its matmul, linear named by its GGUF base
 * name: attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down.
 * The same hook fires in ordinary evaluation when set; the numbers are the
 * full forward pass's, bit for bit. n_tok <= the engine's batch size; the KV
 * cache must be an unscaled format (f32, f16, bf16). */
typedef void (*qt_linear_observer)(void *user, int32_t layer, const char *linear, const float *x, int32_t n_tokens,
                                   int32_t n_in);
typedef struct qt_layerwise qt_layerwise;
/* The KV seam: each layer's K rows (after the head norm and RoPE, as the cache
 * stores them and as vLLM's KV-cache observer sees them) and V rows, both
 * (n_tokens, n_head_kv * head_dim), before they are stored. */
typedef void (*qt_kv_observer)(void *user, int32_t layer, const float *k, const float *v, int32_t n_tokens,
                               int32_t n_head_kv, int32_t head_dim);

QT_API qt_status qt_layerwise_new(qt_engine_ctx *e, const int32_t *tokens, int32_t n_seq, int32_t n_tok,
                                  qt_layerwise **out);
/* Runs the next layer on every sequence (observer may be NULL); QT_ERR_ARG after the last. */
QT_API qt_status qt_layerwise_run_layer(qt_layerwise *lw, qt_linear_observer observer, void *user);
/* Runs the next layer on every sequence for its observer only: the hidden
 * states stay as they were and the next layer is still this one (observe,
 * change the layer's weights, then run_layer feeds the changed layer's
 * outputs on: GPTQ's sequential order). The layer stops once the observer
 * has seen ffn_down's input: its own product, a quarter of the layer's
 * multiply-adds on Llama shapes, would not be kept. */
QT_API qt_status qt_layerwise_observe_layer(qt_layerwise *lw, qt_linear_observer observer, void *user);
/* Binds layer `layer`'s linear (attn_q ... ffn_down) to tensor t (same shape,
 * any type with a dot kernel or a dequantizer) for every later evaluation by
 * this engine; t and its data must outlive the engine. */
/* Every later layer run (run_layer and observe_layer) shows its K and V rows
 * to fn (NULL: none). */
QT_API void qt_layerwise_set_kv_observer(qt_layerwise *lw, qt_kv_observer fn, void *user);
QT_API qt_status qt_layerwise_set_weight(qt_layerwise *lw, int32_t layer, const char *linear, const qt_tensor *t);
/* Replaces a layer vector's values (n floats): "attn_norm.weight",
 * "ffn_norm.weight", "attn_q.bias", "attn_k.bias", "attn_v.bias",
 * "ffn_gate.bias", "ffn_up.bias" (smoothing scales folded into a norm or a
 * producing linear's bias). QT_ERR_ARG when the layer has no such vector,
 * QT_ERR_SHAPE when n differs from its length. */
QT_API qt_status qt_layerwise_set_vector(qt_layerwise *lw, int32_t layer, const char *name, const float *v, int64_t n);
QT_API int32_t qt_layerwise_next_layer(const qt_layerwise *lw);
/* After the last layer: logits (n_seq * n_tok, n_vocab), sequence by sequence. */
QT_API qt_status qt_layerwise_logits(qt_layerwise *lw, float *logits);
/* The same, the observer seeing the output projection's input rows (the final
 * norm's output) as layer -1, linear "output" (llama-imatrix --process-output).
 * logits NULL: only the rows are shown, the product is skipped (an importance
 * matrix needs the inputs only; on Llama-3.2-1B's vocabulary of 128,256 the
 * output is about a fifth of the model's multiply-adds). */
QT_API qt_status qt_layerwise_logits_observed(qt_layerwise *lw, qt_linear_observer observer, void *user, float *logits);
QT_API void qt_layerwise_free(qt_layerwise *lw);

#ifdef __cplusplus
}
#endif
#endif
