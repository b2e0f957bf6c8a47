/* quanta/quantize.h — quantization: `quanta quantize` (docs/quantize.md) and
 * the calibration record.
 *
 * lib/quantize/ sits above engine, quant and io: algorithms observe a model
 * run layer by layer on calibration text (quanta/engine.h, qt_layerwise_*),
 * choose scales with pure numeric cores on plain arrays (lib/quant/), and
 * write GGUF or compressed-tensors files (lib/io/) in the formats of the one
 * table (quanta/formats.h). docs/architecture.md, "Quantization algorithms",
 * gives the lifecycle every algorithm follows.
 *
 *   qt_calib_*   the calibration text's fingerprint, recorded in the output so
 *                evaluation can tell whether its text was held out (docs/eval.md)
 *   qt_quantize_* a checkpoint to a GGUF file the way llama-quantize does it,
 *                in three steps, each usable alone:
 *     plan      every tensor's output type: llama-quantize's per-tensor rules
 *               for the file type (lib/quant/recipe.c, the same copy the
 *               planner uses), then the user's --tensor-type / --keep /
 *               --output-tensor-type / --token-embedding-type / --pure /
 *               --leave-output-tensor, then the row-length fallbacks;
 *     estimate  bytes per tensor and the exact size of the file (the GGUF
 *               writer's own layout, so a dry run equals the written file);
 *     run       stream through the mapped input tensor by tensor, rows in
 *               parallel (any thread count gives the same bytes: rows are
 *               independent), importance-weighted where an imatrix is given,
 *               staged at OUT.partial and renamed when complete (nothing at OUT
 *               before); resumable from the last complete tensor (OUT.partial.state);
 *               the input pages of a tensor are dropped after use. Each tensor's
 *               RMSE and SNR against the input are measured on the way.
 */
#ifndef QUANTA_QUANTIZE_H
#define QUANTA_QUANTIZE_H

#include "core.h"
#include "engine.h"
#include "formats.h"
#include "gguf.h"
#include "gptq.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GGUF metadata a quantizer writes when it used calibration text (docs/eval.md):
 *   quanta.calibration.sha256    string: SHA-256 (hex) of the whole calibration file
 *   quanta.calibration.ranges    string: byte ranges of that file used, "a-b[,c-d...]" (half-open);
 *                                absent = the whole file
 *   quanta.calibration.shingles  array of uint64, ascending: bottom-k sample of the hashes of
 *                                the 13-word shingles of the calibration text actually used
 *   quanta.calibration.scheme    string: QT_CALIB_SCHEME (how the shingles were made) */
#define QT_CALIB_KEY_SHA256 "quanta.calibration.sha256"
#define QT_CALIB_KEY_RANGES "quanta.calibration.ranges"
#define QT_CALIB_KEY_SHINGLES "quanta.calibration.shingles"
#define QT_CALIB_KEY_SCHEME "quanta.calibration.scheme"
#define QT_CALIB_SCHEME "w13-fnv1a64-bottom4096"
#define QT_CALIB_SHINGLE_WORDS 13
#define QT_CALIB_MAX_SHINGLES 4096
#define QT_CALIB_MAX_RANGES 64

/* SHA-256 (FIPS 180-4) of a buffer as 64 lowercase hex digits + NUL. */
QT_API void qt_sha256_hex(const void *data, size_t len, char hex[65]);

typedef struct qt_calib_fingerprint {
    char sha256[65];
    int32_t n_ranges;                            /* 0: the whole file */
    uint64_t ranges[QT_CALIB_MAX_RANGES][2];     /* [begin, end) byte offsets */
    int32_t n_shingles;
    uint64_t *shingles;                          /* (n_shingles) ascending, unique */
} qt_calib_fingerprint;

/* Fingerprint of calibration text: the file's bytes and the ranges used
 * (n_ranges 0 = all of it). */
QT_API qt_status qt_calib_fingerprint_make(const void *file, size_t size, const uint64_t (*ranges)[2], int32_t n_ranges,
                                    qt_calib_fingerprint *out);
/* Parses "a-b,c-d" into fp->ranges. */
QT_API qt_status qt_calib_parse_ranges(const char *s, qt_calib_fingerprint *fp);
/* "a-b,c-d" into buf (cap bytes); "" for the whole file. */
QT_API void qt_calib_format_ranges(const qt_calib_fingerprint *fp, char *buf, size_t cap);
QT_API void qt_calib_fingerprint_free(qt_calib_fingerprint *fp);

/* Hashes of the sampled shingles of a text that fall under `cutoff` (the
 * largest stored calibration hash), appended to *out (malloc'd, ascending, unique). */
QT_API qt_status qt_calib_shingles(const void *text, size_t len, uint64_t cutoff, int32_t cap, uint64_t **out,
                            int32_t *n_out);

/* The metadata entries recording fp (QT_CALIB_KEY_*), for qt_gguf_write_opts.extra_kv:
 * sha256, scheme, shingles, and ranges unless fp covers the whole file. They
 * point into fp and into ranges_buf (cap bytes), which must outlive them.
 * Returns the number of entries written to out (at most 4). */
QT_API int32_t qt_calib_gguf_kv(const qt_calib_fingerprint *fp, char *ranges_buf, size_t cap, qt_gguf_kv out[4]);
/* Reads the record back from a model opened from GGUF (the keys above) or from
 * a compressed-tensors directory (config.json's quantization_config.quanta.
 * calibration: sha256, scheme, shingles as hex strings; the whole file); *has =
 * false when the model records no calibration text. A shingle sample with
 * another scheme is ignored (the SHA-256 / range check still applies);
 * malformed entries are QT_ERR_FORMAT naming the key. */
QT_API qt_status qt_calib_from_model(const qt_model *m, qt_calib_fingerprint *fp, bool *has);

/* ---- calibration samples: --calib FILE [--nsamples N] [--seqlen L] [--seed S] ----
 * One rule in every verb that calibrates (quantize, imatrix, later GPTQ):
 * 1. the text: a plain UTF-8 file, or JSONL (every non-blank line an object
 *    with a string "text", or a "messages" list; a file is JSONL when its
 *    first non-blank byte is '{'), the texts joined by "\n\n"; a "messages"
 *    line is rendered with the model's own chat template
 *    (qt_chat_apply_vocab: no generation prompt, strftime_now's date fixed at
 *    2024-07-26 so that the samples never depend on the day), and a model
 *    without one is refused (QT_ERR_UNSUPPORTED);
 * 2. tokenized once, BOS first when the vocabulary adds one (and the text
 *    does not already start with it); the rendered conversations with their
 *    control tokens ("<|im_start|>") parsed as such, as transformers does;
 * 3. cut into W = floor(T / L) non-overlapping windows, window i being
 *    tokens [i*L, (i+1)*L) (llama-imatrix's chunks);
 * 4. seed 0: the first N windows (llama-imatrix --chunks N); seed S > 0: N
 *    distinct windows drawn by a Fisher-Yates shuffle of 0..W-1 driven by
 *    splitmix64(S), then put in ascending order; N = 0: all W windows;
 * 5. each sample's first token replaced by BOS (when the vocabulary has one),
 *    so every sample starts as a document does (llama-imatrix's rule).
 * Fewer windows than N is an error naming the file and the counts (how many
 * tokens there are and how many N x L needs), unless allow_short. */
#define QT_CALIB_DEFAULT_SEQLEN 512

/* Provenance keys written beside the QT_CALIB_KEY_* fingerprint (docs/quantize.md). */
#define QT_CALIB_KEY_FILE "quanta.calibration.file"
#define QT_CALIB_KEY_TOKENS "quanta.calibration.tokens"
#define QT_CALIB_KEY_NSAMPLES "quanta.calibration.nsamples"
#define QT_CALIB_KEY_SEQLEN "quanta.calibration.seqlen"
#define QT_CALIB_KEY_SEED "quanta.calibration.seed"
#define QT_CALIB_MAX_KV 9

typedef struct qt_calib_opts {
    const char *path;   /* the calibration file */
    int32_t n_samples;  /* N; <= 0: every window */
    int32_t seq_len;    /* L; <= 0: QT_CALIB_DEFAULT_SEQLEN */
    uint64_t seed;      /* S; 0: the first N windows */
    bool allow_short;   /* fewer than N windows: take the W there are (at least 1) instead of refusing */
} qt_calib_opts;

/* Window indices (rule steps 3-4): *starts (malloc'd, n_out entries,
 * ascending) are first-token offsets. QT_ERR_ARG when fewer than n_samples
 * windows of seq_len fit in n_tokens (the message names the counts). */
QT_API qt_status qt_calib_windows(int64_t n_tokens, int32_t seq_len, int32_t n_samples, uint64_t seed, int64_t **starts,
                                  int32_t *n_out);

typedef struct qt_calib_set {
    const char *path;           /* opts.path */
    int64_t file_bytes;
    int64_t file_tokens;        /* T: the whole text's tokens (with BOS) */
    int32_t n_samples, seq_len; /* as cut */
    int32_t n_requested;        /* N asked for (0: all); > n_samples when allow_short took fewer */
    uint64_t seed;
    int32_t *tokens;            /* (n_samples * seq_len) the samples, concatenated, BOS first in each */
    qt_calib_fingerprint fp;    /* of the whole file (n_ranges 0) */
} qt_calib_set;

/* Reads, tokenizes with m's vocabulary and cuts the calibration samples
 * (the rule above); errors name the file. */
QT_API qt_status qt_calib_load(const qt_model *m, const qt_calib_opts *o, qt_calib_set *out);
QT_API void qt_calib_set_free(qt_calib_set *s);
/* The GGUF metadata recording a set: QT_CALIB_KEY_FILE, TOKENS, NSAMPLES,
 * SEQLEN, SEED and the fingerprint's (qt_calib_gguf_kv). The entries point
 * into s, which must outlive them. Returns the count (<= QT_CALIB_MAX_KV). */
QT_API int32_t qt_calib_set_gguf_kv(const qt_calib_set *s, qt_gguf_kv out[QT_CALIB_MAX_KV]);

/* Per-tensor absmax of the input activations of every linear of every decoder
 * layer (llm-compressor's static minmax observer over the whole calibration
 * set: max |x| over all samples, tokens and columns), through the engine's
 * layer-wise seam. Names are the canonical weight names (blk.N.attn_q.weight).
 * Order-free, so the same at any thread count. */
typedef struct qt_engine_ctx qt_engine_ctx;
typedef struct qt_act_amax {
    int32_t n;
    char (*names)[64];          /* (n) */
    float *amax;                /* (n) */
} qt_act_amax;
/* e must hold batches of s->seq_len tokens. */
QT_API qt_status qt_calib_act_amax(const qt_model *m, qt_engine_ctx *e, const qt_calib_set *s, qt_progress progress,
                                   qt_act_amax *out);
/* amax of weight tensor `name`, NAN when not observed. */
QT_API float qt_act_amax_get(const qt_act_amax *a, const char *name);
QT_API void qt_act_amax_free(qt_act_amax *a);

/* ---- KV-cache scales: --kv-dtype D --kv-calib none|random|data --kv-scale-gran tensor|head ----
 * (lib/quantize/kv_calib.c, docs/quantize.md "KV-cache scales"). For a scaled
 * cache format D (fp8-e4m3, fp8-e5m2, int8) a scale is amax / D's largest value
 * (vLLM's / llm-compressor's static minmax KV observer), amax being max |K|
 * (after the head norm and RoPE, as the cache stores K) or max |V| per layer,
 * over all heads (tensor) or per KV head (head), over
 *   data    the calibration samples, run through the engine layer by layer
 *           (with --algo gptq, in GPTQ's observe pass: the earlier layers are
 *           already quantized, llm-compressor's sequential order);
 *   random  --nsamples sequences of --seqlen tokens drawn uniformly from the
 *           vocabulary (BOS first) with splitmix64(--seed): a scale for the range
 *           activations take on noise, not on text;
 *   none    nothing: every scale is 1.0 (what vLLM uses without scales).
 * A zero, negative, NaN or infinite scale is refused naming layer, head and K/V. */
typedef enum qt_kv_calib_mode { QT_KV_CALIB_NONE = 0, QT_KV_CALIB_RANDOM, QT_KV_CALIB_DATA } qt_kv_calib_mode;
QT_API const char *qt_kv_calib_mode_name(qt_kv_calib_mode m); /* "none", "random", "data" */
QT_API qt_status qt_kv_calib_mode_parse(const char *name, qt_kv_calib_mode *out);

typedef struct qt_kv_scales {
    qt_kv_type dtype;          /* the scaled format they are fitted for */
    qt_kv_scale_gran gran;
    qt_kv_calib_mode mode;
    int32_t n_layer, n_per_layer; /* n_per_layer: 1 (tensor) or n_head_kv (head) */
    int32_t n_head_kv, head_dim;
    float *k, *v;              /* (n_layer * n_per_layer) scales; amax while observing */
    int64_t n_tokens;          /* tokens observed per layer (0 for none) */
    qt_status err;             /* the observer's first error */
} qt_kv_scales;

/* Every scale 1.0 (mode none, and before observing). QT_ERR_ARG for an unscaled dtype. */
QT_API qt_status qt_kv_scales_init(qt_kv_scales *s, const qt_model *m, qt_kv_type dtype, qt_kv_scale_gran gran,
                                   qt_kv_calib_mode mode);
/* The seam's observer (qt_kv_observer, user = a qt_kv_scales): after
 * qt_kv_scales_begin, accumulates max |K| and max |V|. */
QT_API void qt_kv_scales_begin(qt_kv_scales *s);
QT_API void qt_kv_scales_observe(void *user, int32_t layer, const float *k, const float *v, int32_t n_tokens,
                                 int32_t n_head_kv, int32_t head_dim);
/* amax -> scale, refusing a zero, negative, NaN or infinite one (layer, head, K/V named). */
QT_API qt_status qt_kv_scales_finish(qt_kv_scales *s);
/* data / random: runs `tokens` (n_seq x n_tok, each from position 0) through
 * m layer by layer, one sequence at a time (an f32 cache), observing K and V;
 * then qt_kv_scales_finish. The scales do not depend on threads. */
QT_API qt_status qt_kv_scales_calibrate(qt_kv_scales *s, const qt_model *m, const int32_t *tokens, int32_t n_seq,
                                        int32_t n_tok, int threads, qt_progress progress);
/* random's tokens: n_seq sequences of n_tok, BOS first (when the vocabulary has
 * one), the rest uniform over the vocabulary from splitmix64(seed). */
QT_API void qt_kv_random_tokens(const qt_model *m, int32_t n_seq, int32_t n_tok, uint64_t seed, int32_t *out);
/* The GGUF metadata (QT_KV_KEY_*, quanta/engine.h), pointing into s; returns 5. */
#define QT_KV_MAX_KV 5
QT_API int32_t qt_kv_scales_gguf_kv(const qt_kv_scales *s, qt_gguf_kv out[QT_KV_MAX_KV]);
QT_API void qt_kv_scales_free(qt_kv_scales *s);

/* --tensor-type PATTERN=TYPE: PCRE2, searched (not anchored) in the
 * canonical GGUF tensor name; the first matching pattern wins, as in
 * llama-quantize. */
typedef struct qt_quantize_override {
    const char *pattern;
    qt_type type;
} qt_quantize_override;

typedef struct qt_quantize_opts {
    const char *scheme;                       /* a GGUF file type name, case-insensitive: "q4_k_m" */
    const char *imatrix;                      /* importance matrix file (GGUF or legacy .dat), or NULL */
    const qt_quantize_override *overrides;    /* (n_overrides) */
    int32_t n_overrides;
    const char *const *keep;                  /* (n_keep) PCRE2 patterns: matching tensors are copied as stored */
    int32_t n_keep;
    qt_type output_type;                      /* --output-tensor-type; QT_TYPE_COUNT: the rules' */
    qt_type embd_type;                        /* --token-embedding-type; QT_TYPE_COUNT: the rules' */
    bool pure;                                /* the base type for every tensor (then the fallbacks) */
    bool leave_output;                        /* --leave-output-tensor: output.weight copied as stored */
    bool allow_requantize;                    /* accept an already-quantized input tensor */
    int threads;                              /* <= 0: qt_default_threads() */
    const char *command_line;                 /* recorded as quanta.command_line; NULL: not recorded */
    const char *algorithm;                    /* recorded as quanta.algorithm ("gptq", "awq", ...); NULL: RTN,
                                                 not recorded */
    const char *imatrix_label;                /* recorded as quantize.imatrix.file; NULL: imatrix */
    const qt_calib_set *calib;                /* calibration text the imatrix came from: its
                                                 quanta.calibration.* keys are written; NULL: none */
    const qt_kv_scales *kv_scales;            /* KV-cache scales written as quanta.kv_cache.* (read
                                                 when the file is written: GPTQ fills them on the
                                                 way); NULL: none */
    qt_progress progress;
    /* Staging and resume (docs/quantize.md). A file OUT is always written as
     * OUT.partial and renamed at the end. resumable: a failed or cancelled run
     * keeps OUT.partial and OUT.partial.state (input identity, options, tensors
     * complete), written after each tensor is synced. resume: continue such a
     * run from its last complete tensor (refused unless input and options
     * match); the bytes equal an uninterrupted run's. */
    bool resumable;
    bool resume;
    /* Optional: called after each tensor is complete in the output (synced
     * first when resumable), with the count so far (a resumed run counts the
     * earlier ones). It may call qt_request_cancel() to stop the run there. */
    void (*tensor_written)(void *ctx, int32_t n_done);
    void *tensor_written_ctx;
} qt_quantize_opts;

/* Everything zero/NULL, output_type and embd_type QT_TYPE_COUNT. */
QT_API qt_quantize_opts qt_quantize_opts_default(void);

typedef struct qt_quantize_tensor {
    char name[QT_MAX_NAME];  /* canonical GGUF name */
    qt_type src_type;
    qt_type type;            /* written as */
    qt_type wanted;          /* the rules' choice before a row-length fallback */
    int64_t n_elements;
    uint64_t src_bytes;
    uint64_t bytes;          /* this tensor's data in the output (unpadded) */
    bool fallback;           /* row length forced a fallback (llama-quantize's table) */
    bool quanta_fallback;    /* llama-quantize has no fallback and refuses; quanta wrote F16 */
    bool kept;               /* --keep / --leave-output-tensor / not quantizable: copied */
    bool needs_imatrix;      /* llama-quantize's per-tensor rule */
    bool imatrix_missing;    /* an imatrix was given but has no entry: quantized without weights */
    bool measured;           /* rmse/snr_db set (after a run, for converted tensors) */
    double rmse;             /* sqrt(mean((w - q)^2)) */
    double snr_db;           /* 10 log10(sum w^2 / sum (w - q)^2); INFINITY when exact */
} qt_quantize_tensor;

typedef struct qt_quantize_plan {
    const qt_gguf_ftype_info *ftype;
    int32_t n_tensors;
    qt_quantize_tensor *tensors;  /* (n_tensors) in file order */
    uint64_t input_bytes;         /* tensor data of the input */
    uint64_t tensor_bytes;        /* sum of tensors[].bytes */
    uint64_t output_bytes;        /* the whole output file, exactly */
    uint64_t n_weights;           /* elements of all tensors */
    double bits_per_weight;       /* 8 * tensor_bytes / n_weights */
    uint64_t peak_rss_estimate;   /* bytes: the largest tensor in and out, scratch, and a base */
    int32_t n_fallbacks;
    int32_t n_requantized;        /* already-quantized input tensors converted (allow_requantize) */
    char imatrix_sha256[65];      /* "" without an imatrix */
    /* After qt_quantize_run (qt_quantize_opts.resume / resumable): */
    int32_t n_resumed;            /* tensors a resumed run found complete (not redone, not re-measured) */
    int32_t n_done;               /* output tensors complete when the run ended (all of them on success) */
    bool partial_kept;            /* the run failed and left OUT.partial + state for --resume */
    /* internal */
    void *priv;
} qt_quantize_plan;

/* Plan: types, bytes, the exact output size. Refuses (QT_ERR_ARG /
 * QT_ERR_UNSUPPORTED / QT_ERR_FORMAT / QT_ERR_SHAPE, naming file and tensor)
 * an unknown scheme, a bad pattern, a tensor that needs an importance matrix
 * without one (llama-quantize's rule, per tensor), an imatrix entry of the
 * wrong width, and an already-quantized tensor without allow_requantize. */
QT_API qt_status qt_quantize_plan_make(const qt_model *m, const qt_quantize_opts *o, qt_quantize_plan **out);
/* Write the GGUF file (staged at OUT.partial, renamed when complete) and
 * fill the tensors' rmse/snr_db (a resumed run restores the earlier tensors'
 * from the state file). */
QT_API qt_status qt_quantize_run(const qt_model *m, const char *out_path, const qt_quantize_opts *o,
                                 qt_quantize_plan *p);

/* The staging names beside OUT: OUT.partial and OUT.partial.state. */
#define QT_QUANTIZE_PARTIAL_SUFFIX ".partial"
#define QT_QUANTIZE_STATE_SUFFIX ".partial.state"
/* GPTQ's finished layers (docs/gptq.md "--resume"): their quantized bytes, and what they are. */
#define QT_QUANTIZE_LAYERS_SUFFIX ".partial.layers"
#define QT_QUANTIZE_LAYERS_STATE_SUFFIX ".partial.layers.state"
/* Removes what an interrupted run left at OUT.partial, OUT.partial.state and
 * GPTQ's OUT.partial.layers(.state) (regular files only; a directory there is
 * QT_ERR_IO). *removed says whether there was anything. */
QT_API qt_status qt_quantize_clear_partial(const char *out_path, bool *removed);
/* One writer per OUT. qt_quantize_lock takes an exclusive advisory lock
 * (flock) on OUT.partial.lock, created beside OUT; a second run for the same
 * OUT (GGUF file or compressed-tensors directory) gets QT_ERR_IO saying so,
 * before it touches OUT.partial. The kernel drops the lock when the process
 * ends, however it ends; a lock file left by kill -9 is reused.
 * qt_quantize_unlock removes the file and frees the handle (NULL: no-op). */
#define QT_QUANTIZE_LOCK_SUFFIX ".partial.lock"
typedef struct qt_quantize_lock qt_quantize_lock;
QT_API qt_status qt_quantize_lock_take(const char *out_path, qt_quantize_lock **out);
QT_API void qt_quantize_unlock(qt_quantize_lock *l);
QT_API void qt_quantize_plan_free(qt_quantize_plan *p);

/* ---- a target size: the best mix of types under a byte budget (lib/quantize/target.c,
 * docs/quantize.md "Target size") ----
 * Every tensor llama-quantize would quantize gets one type from the candidates
 * (those whose block divides its row length; the i-quants ggml cannot make
 * without importance weights only where the imatrix has the tensor), chosen
 * to minimise the sum of the tensors' predicted costs under the budget
 * (lib/quantize/mix.c: an exact knapsack where small, else a Lagrangian
 * allocation with greedy repair). Proxy cost of tensor W with candidate c:
 * sum over rows i and columns j of a_j (W_ij - Q_c(W)_ij)^2, a_j the imatrix's
 * mean squared input of column j (1 without an entry): the expected squared
 * error of W x per token; the token embedding's, a lookup, is that mean over
 * its rows (plus the matmul term when the imatrix has it: tied output). */
typedef struct qt_quantize_target {
    uint64_t file_bytes;          /* the whole output file, header included, at most; 0: bpw decides */
    double bpw;                   /* or: 8 x tensor data bytes / weights at most (plan.bits_per_weight) */
    const qt_type *candidates;    /* (n_candidates); NULL: QT_QUANTIZE_MIX_DEFAULT */
    int32_t n_candidates;
    /* sensitivity: false, the proxy above; true, measured (lib/quantize/mix_measure.c): the mean KL
     * divergence per token of the next-token distribution on these calibration sequences with only
     * that tensor in that type (decoder linears and the token embedding rebound in the engine, the
     * output projection exact from its input rows; a tied embedding keeps its proxy, scaled by the
     * median measured/proxy ratio) */
    bool measured;
    /* measured: false (default), each decoder linear, the output and the token embedding measured
     * alone; true, by groups (a layer's attention q/k/v/o together, a layer's FFN gate/up/down), each
     * member's cost the group's split by its share of the group's proxy cost (3.5x fewer runs; worse
     * mixes on stories260K: docs/quantize.md "Target size") */
    bool per_group;
    const int32_t *tokens;        /* (n_seq, n_tok) calibration sequences, for measured and refine_rounds */
    int32_t n_seq, n_tok;
    /* measured: the table of measured costs is read from this file when its key (the model's
     * tensors, the tokens, the imatrix, numerics, candidates) matches, else measured and written
     * there (a temp file renamed); a mismatched one is ignored with a note, a corrupt one refused
     * (QT_ERR_FORMAT). NULL: measured every run. */
    const char *sensitivity_cache;
    /* after the allocation, up to this many rounds of swaps measured on the tokens above
     * (lib/quantize/mix_refine.c); 0: none */
    int32_t refine_rounds;
    /* the proxy scores a tensor larger than this many weights on an evenly spaced fixed subset of
     * its rows (every k-th from row 0, k = ceil(weights / this)), the sums scaled to all rows;
     * 0: QT_QUANTIZE_PROXY_SAMPLE_DEFAULT; < 0: every row. The file is of all rows either way. */
    int64_t proxy_sample;
    /* non-NULL (--algo gptq): the run GPTQs the decoder linears with these options (damping, block,
     * act order, hessian_importance), so the measured costs, the additivity check and the
     * refinement quantize those linears by GPTQ too, on the base model's Hessians of the
     * calibration tokens above (lib/quantize/mix_gptq.c); NULL: round-to-nearest copies */
    const struct qt_gptq_run_opts *gptq;
} qt_quantize_target;

/* 2^21 weights: a 1B's 2048 x 2048 projections are scored on every 2nd row, its FFN matrices on every
 * 8th, its token embedding on every 126th; a 512 x 2048 one whole (docs/quantize.md "Target size:
 * time on the 1B": the 1B's scan 6.1x fewer weights, the costs' rank order kept on its layer shapes) */
#define QT_QUANTIZE_PROXY_SAMPLE_DEFAULT ((int64_t)1 << 21)

/* The default candidates: the legacy, K- and i-quants llama.cpp reads on every
 * backend, and F16 (Q1_0/Q2_0/TQ* are left to --candidates). */
#define QT_QUANTIZE_MIX_N_DEFAULT 20
QT_API const qt_type *qt_quantize_mix_default(void);

/* One tensor's candidates and their predicted costs (plan.mix[]). */
typedef struct qt_quantize_mix_tensor {
    int32_t plan_index;           /* into plan.tensors */
    int32_t n_options;
    qt_type types[QT_QUANTIZE_MIX_N_DEFAULT + 12];   /* (n_options) */
    uint64_t bytes[QT_QUANTIZE_MIX_N_DEFAULT + 12];  /* (n_options) unpadded */
    double cost[QT_QUANTIZE_MIX_N_DEFAULT + 12];     /* (n_options) predicted */
    int32_t chosen;               /* index into types */
} qt_quantize_mix_tensor;

typedef struct qt_quantize_mix {
    int32_t n;                    /* tensors the allocation chose for */
    qt_quantize_mix_tensor *t;    /* (n) */
    uint64_t budget_bytes;        /* what their data (padded for file_bytes) could take */
    uint64_t used_bytes;          /* what it takes */
    double predicted_cost;        /* sum of the chosen costs */
    bool exact;                   /* the knapsack was solved exactly */
    const char *sensitivity;      /* "proxy" or "measured" */
    /* measured: */
    int32_t n_groups;             /* groups measured (each a tensor unless per_group) */
    double rank_correlation;      /* Spearman between proxy and measured (group, type) costs; NAN: none */
    int32_t rank_pairs;           /* (group, type) pairs it ranks */
    double measured_cost;         /* the chosen mix's mean KL per token on the calibration tokens, all its
                                     grouped tensors quantized at once (the additivity check); NAN: not run */
    bool cache_used;              /* the table came from sensitivity_cache: no measurement ran */
    bool cache_written;           /* it was measured and written there */
    char cache_note[256];         /* why a cache file present was not used ("" otherwise) */
    int32_t refine_swaps;         /* swaps the refinement kept (refine_rounds) */
    double refine_kld_before;     /* the allocation's mix: measured mean KL divergence on the calibration tokens */
    double refine_kld_after;      /* after the swaps (nats per token; both 0 without the refinement) */
} qt_quantize_mix;

/* A plan (as qt_quantize_plan_make, with o's imatrix, --keep, threads) whose
 * quantized tensors take the types the allocation chose; the plan's file type
 * is the one of the type with the most bytes. *mix describes the choice
 * (qt_quantize_mix_free). QT_ERR_RANGE when even the smallest candidates do not
 * fit (the message says by how much); QT_ERR_ARG for a candidate that is not
 * a GGUF type quanta writes, or a tensor no candidate fits (naming it). The
 * result is within the budget: the exact size comes from the writer. */
QT_API qt_status qt_quantize_plan_target(const qt_model *m, const qt_quantize_opts *o, const qt_quantize_target *t,
                                         qt_quantize_plan **out, qt_quantize_mix **mix);
QT_API void qt_quantize_mix_free(qt_quantize_mix *mix);

/* The budget sweep of a target run and its picture (lib/quantize/sweep.c, docs/quantize.md
 * "The picture"): the predicted cost of the optimal mix at QT_QUANTIZE_SWEEP_POINTS budgets
 * from the smallest to the largest mix (each tensor's Pareto frontier; the same allocator),
 * llama.cpp's presets as points (each preset's per-tensor types, as `--scheme` plans them,
 * scored with the same costs; with and without the imatrix), the chosen point, and the bits
 * per weight each tensor got. File sizes are the writer's for the chosen plan and the
 * presets; a sweep point's is its tensors' padded bytes plus the rest of the chosen file. */
#define QT_QUANTIZE_SWEEP_POINTS 33
#define QT_QUANTIZE_SWEEP_PRESETS 5   /* Q3_K_M, Q4_K_S, Q4_K_M, Q5_K_M, Q6_K */

typedef struct qt_quantize_sweep_point {
    uint64_t file_bytes;
    double cost;                  /* predicted: the sum of the tensors' costs */
} qt_quantize_sweep_point;

typedef struct qt_quantize_preset_point {
    char name[16];                /* "Q4_K_M" */
    bool imatrix;                 /* quantized with the run's imatrix */
    bool scored;                  /* false: no cost (why names the reason) */
    uint64_t file_bytes;          /* the preset's file, exactly */
    double cost;
    char why[160];
} qt_quantize_preset_point;

typedef struct qt_quantize_sweep {
    int32_t n_points;
    qt_quantize_sweep_point points[QT_QUANTIZE_SWEEP_POINTS];
    int32_t n_presets;            /* with and without the imatrix: up to 2 x QT_QUANTIZE_SWEEP_PRESETS */
    qt_quantize_preset_point presets[2 * QT_QUANTIZE_SWEEP_PRESETS];
    qt_quantize_sweep_point chosen;
    const char *sensitivity;      /* the mix's */
    int32_t n_tensors;            /* the mixed tensors, in the mix's order: */
    char (*names)[QT_MAX_NAME];   /* (n_tensors) */
    double *bpw;                  /* (n_tensors) bits per weight of the chosen type */
    qt_type *types;               /* (n_tensors) the chosen types */
} qt_quantize_sweep;

/* m, o: the run's model and options (its imatrix, --keep, threads); mix, plan: what
 * qt_quantize_plan_target returned. Proxy costs the mix lacks (a preset's type outside
 * the candidates, or a preset without the imatrix the mix's costs were made with) are
 * scanned here; with measured costs such a preset is left unscored, saying so. */
QT_API qt_status qt_quantize_sweep_make(const qt_model *m, const qt_quantize_opts *o, const qt_quantize_mix *mix,
                                        const qt_quantize_plan *plan, qt_quantize_sweep **out);
/* The picture: the size/cost curve, the presets, the chosen point and the heat map of bits
 * per weight (layers x tensor roles), as one SVG document (malloc'd). The same sweep gives
 * the same bytes; each marker carries its numbers (data-bytes, data-cost). */
QT_API qt_status qt_quantize_sweep_svg(const qt_quantize_sweep *s, const char *title, char **out);
QT_API void qt_quantize_sweep_free(qt_quantize_sweep *s);

/* ---- GPTQ (Frantar et al. 2023, arXiv:2210.17323; lib/quantize/gptq_run.c, docs/gptq.md) ----
 * Layer by layer on the engine's calibration seam: observe a layer on the
 * calibration batch (one Hessian per distinct linear input), GPTQ each linear
 * onto its target grid (quanta/gptq.h), rebind the layer to the quantized
 * weights and run it again so the next layer sees the quantized outputs.
 * Tensors outside the decoder layers (token_embd, output) and linears whose
 * type has no GPTQ grid are rounded to nearest, each one named through note.
 * The same driver runs AWQ and SmoothQuant (smoothing below, then GPTQ or,
 * with rtn, round-to-nearest). */
/* Smoothing before the rounding (quanta/smooth.h, docs/awq.md): per-input-channel
 * scales folded into the preceding norm or linear by the architecture's
 * folding pairs (lib/model/arch.c), searched per layer on the calibration
 * batch. */
typedef enum qt_smoothing {
    QT_SMOOTH_NONE = 0,
    QT_SMOOTH_AWQ,            /* Lin et al. 2024: every pair, scales searched for the lowest output error */
    QT_SMOOTH_SMOOTHQUANT,    /* Xiao et al. 2023: the norm pairs, s = amax^alpha / wmax^(1-alpha) */
} qt_smoothing;

typedef struct qt_gptq_run_opts {
    const int32_t *tokens;    /* (n_seq * n_tok) calibration sequences, each from position 0 */
    int32_t n_seq, n_tok;
    qt_smoothing smoothing;   /* QT_SMOOTH_NONE: plain GPTQ (or RTN) */
    bool rtn;                 /* round to nearest after the smoothing instead of GPTQ */
    int awq_grid;             /* AWQ: ratios searched (20) */
    bool awq_duo;             /* AWQ: duo scaling, activation and weight magnitudes (true) */
    double alpha;             /* SmoothQuant: migration strength (0.5) */
    qt_gptq_opts gptq;        /* damping, block, act order (quanta/gptq.h) */
    bool hessian_importance;  /* GGUF blocks: the block quantizer weighs columns by H_ii (default true) */
    int threads;              /* the engine's; the bytes do not depend on it */
    qt_progress progress;     /* "gptq": layers done / total */
    qt_kv_scales *kv_data;    /* non-NULL: K/V amax observed in each layer's observe pass, then finished */
    /* Optional: called after each layer is finished (and, when resumable, on disk), with
     * the count so far; it may call qt_request_cancel() to stop the run there. */
    void (*layer_written)(void *ctx, int32_t n_layers_done);
    void *layer_written_ctx;
    void (*note)(void *ctx, const char *message); /* per layer (time, ETA), retries, RTN tensors */
    void *note_ctx;
    bool profile;                 /* a note per layer splitting its process CPU seconds into the phases
                                     (docs/gptq.md "Where the time goes"); the CLI sets it from
                                     QUANTA_GPTQ_PROFILE=1 */
} qt_gptq_run_opts;

typedef struct qt_gptq_report {
    int32_t n_gptq;           /* linears quantized with GPTQ */
    int32_t n_rtn;            /* quantized linears of the layers rounded to nearest (no grid) */
    int32_t n_retries;        /* Cholesky retries, all linears */
    int64_t n_dead_cols;      /* input columns that never saw a non-zero value */
    double loss;              /* sum of GPTQ's err^2 over all linears */
    int32_t n_smoothed;       /* folding pairs smoothed (AWQ / SmoothQuant) */
    int32_t n_awq_identity;   /* AWQ pairs where s = 1 (plain rounding) had the lowest error */
    int64_t n_dead_channels;  /* smoothed input channels that never saw a non-zero value (s = 1) */
    double awq_loss, awq_loss_rtn; /* AWQ: summed output error at the chosen scales and at s = 1 */
    double seconds;           /* the layer loop */
    int32_t n_layers_kept;    /* a failed resumable run: finished layers kept in OUT.partial.layers */
} qt_gptq_report;

QT_API qt_gptq_run_opts qt_gptq_run_opts_default(void);
/* GGUF: p from qt_quantize_plan_make(m, o); every planned linear type with a
 * grid (q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K iq4_nl iq4_xs:
 * qt_gptq_gguf_supported) through GPTQ, the rest as qt_quantize_run does.
 * o->imatrix must be NULL and o->algorithm name the algorithm ("gptq",
 * "awq", "awq+gptq", ...: the plan's exact size includes that key). With
 * g->smoothing every linear of the layers (and the norms that absorbed the
 * scales) is written from the smoothed values. o->resumable (any
 * algorithm): each finished layer's bytes (smoothed norms included) are kept in OUT.partial.layers (+ .state)
 * until the file is written; o->resume continues from the last finished layer
 * (then from the last complete tensor of OUT.partial), the bytes equal an
 * uninterrupted run's. */
QT_API qt_status qt_gptq_quantize_gguf(const qt_model *m, const char *out_path, const qt_quantize_opts *o,
                                       qt_quantize_plan *p, const qt_gptq_run_opts *g, qt_gptq_report *r);
/* compressed-tensors schemes (quanta/quantize_ct.h): integer (w4a16,
 * w4a16-asym, w8a16, w8a8-int8) or float (fp8-dynamic, fp8-static, fp8-block,
 * nvfp4, mxfp4): every linear of the layers through GPTQ onto the scheme's
 * grid (scales chosen when the column loop reaches the group; scales that
 * fused shards share fixed first, as the writer fixes them), then
 * qt_ct_export with those codes (o->int_codes / o->float_codes are GPTQ's;
 * o->input_amax as for rtn). The engine runs later layers on the dequantized
 * values. o->keep must be empty. o->resumable: each finished layer's codes,
 * the f32 values the engine ran on and the smoothed norms are kept in
 * OUT.partial.layers (+ .state) until the directory is written; o->resume
 * continues from the last finished layer (then from the last complete stored
 * tensor of OUT.partial); every file equals an uninterrupted run's. */
struct qt_ct_export_opts;
struct qt_ct_export_estimate;
QT_API qt_status qt_gptq_quantize_ct(const qt_model *m, const char *scheme, const char *out_dir,
                                     const struct qt_ct_export_opts *o, const qt_gptq_run_opts *g,
                                     struct qt_ct_export_estimate *est, qt_gptq_report *r);

/* What a GPTQ run holds at its peak (docs/gptq.md "Memory"), in bytes, estimated
 * before it starts from the shapes alone: the run's peak is the last layer's
 * largest linear (every earlier layer's output already held), or the final
 * write, whichever is larger, on top of what is resident when it starts
 * (program, libraries, vocabulary, calibration tokens: `base`, VmRSS); the total
 * is that or the process's peak so far (`peak_before`, VmHWM), whichever is larger. */
typedef struct qt_gptq_memory {
    uint64_t base;           /* given by the caller: resident before the run (VmRSS) */
    uint64_t peak_before;    /* given by the caller: the peak so far (VmHWM; calibration loading) */
    uint64_t model;          /* decoder weights and norms, mapped and read by every forward pass,
                                plus the embedding rows the calibration tokens touch */
    uint64_t engine;         /* activation buffers and the f32 KV cache for one sequence of n_tok */
    uint64_t hidden;         /* n_seq x n_tok x n_embd floats, every sequence between layers */
    uint64_t hessians;       /* the layer's Hessians (double, one per distinct linear input) */
    uint64_t linear;         /* the largest linear's working set: W, H, its factor, GPTQ's and the grid's state */
    uint64_t output;         /* the quantized linears held: onto GGUF the largest layer's (each finished
                                layer goes to disk), onto compressed-tensors all, until the write */
    uint64_t write;          /* the final write's own peak: the largest tensor in and out, buffers */
    uint64_t blas;           /* OpenBLAS's pages (an allowance: its buffer, touched by the larger GEMMs) */
    uint64_t total;          /* max(peak_before, base + max(loop phase, write phase)) */
} qt_gptq_memory;
/* p: the GGUF plan (NULL: compressed-tensors, int scheme of that group size;
 * group 0 = per channel). tokens: the calibration tokens (for the embedding rows
 * they touch). */
QT_API void qt_gptq_memory_estimate(const qt_model *m, const qt_quantize_plan *p, int64_t ct_group,
                                    const int32_t *tokens, int32_t n_seq, int32_t n_tok, int threads, uint64_t base,
                                    uint64_t peak_before, qt_gptq_memory *out);

/* Provenance keys written beside llama.cpp's general.file_type,
 * general.quantization_version and quantize.imatrix.* (docs/quantize.md). */
#define QT_QUANTIZE_KEY_VERSION "quanta.version"
#define QT_QUANTIZE_KEY_COMMAND "quanta.command_line"
#define QT_QUANTIZE_KEY_SCHEME "quanta.scheme"
#define QT_QUANTIZE_KEY_IMATRIX_SHA256 "quanta.imatrix.sha256"
#define QT_QUANTIZE_KEY_FALLBACKS "quanta.fallbacks"
#define QT_QUANTIZE_KEY_ALGORITHM "quanta.algorithm" /* "gptq", "awq", "awq+gptq", "smoothquant", ...; absent: RTN */
/* --target-size / --target-bpw (docs/quantize.md "Target size"): the chosen types, comma-separated, one per
 * quantized tensor in file order (a string: every byte is out of the budget); the budget its tensors were given (bytes); the sensitivity used. */
#define QT_QUANTIZE_KEY_MIX_TYPES "quanta.mix.types"
#define QT_QUANTIZE_KEY_MIX_BUDGET "quanta.mix.budget_bytes"
#define QT_QUANTIZE_KEY_MIX_SENSITIVITY "quanta.mix.sensitivity"
#define QT_QUANTIZE_KEY_MIX_PREDICTED "quanta.mix.predicted_cost"

#ifdef __cplusplus
}
#endif
#endif
