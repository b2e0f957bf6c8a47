/* quanta/quantize_ct.h — a model -> a compressed-tensors checkpoint for vLLM,
 * written as llm-compressor writes it (formats.md §4; lib/io/ct_write.c).
 *
 * Schemes (llm-compressor's preset in brackets, compressed-tensors format):
 *   w4a16       [W4A16]       int4 symmetric, group 128           pack-quantized
 *   w4a16-asym  [W4A16_ASYM]  int4 + int4 zero points, group 128  pack-quantized
 *   w8a16       [W8A16]       int8 symmetric, group 128           pack-quantized
 *   w8a8-int8   [W8A8]        int8 per channel, int8 per-token dynamic activations   int-quantized
 *   fp8-dynamic [FP8_DYNAMIC] E4M3 per channel, E4M3 per-token dynamic activations  float-quantized
 *               (alias fp8)
 *   fp8-static  [FP8]         E4M3 per tensor + static per-tensor input_scale (needs input_amax)
 *   fp8-block   [FP8_BLOCK]   E4M3 128x128 blocks, dynamic per-group-128 activations
 *   nvfp4       [NVFP4A16, or NVFP4 with input_amax]  E2M1, E4M3 scale per 16, f32 global scale
 *   mxfp4       [MXFP4A16]    E2M1, E8M0 scale per 32             mxfp4-pack-quantized
 *
 * What is quantized: every 2-D linear weight of the blocks (q/k/v/o, gate/up/down)
 * whose canonical (GGUF) name matches no `keep` regex. Embeddings, lm_head
 * (listed in `ignore`), norms and biases stay in the model dtype (bf16, or f16
 * when the input's embeddings are f16); tied embeddings stay tied (no lm_head
 * tensor). q/k/v and gate/up share NVFP4 global scales and FP8 per-tensor
 * scales, as llm-compressor does for the shards vLLM fuses.
 *
 * Scale arithmetic is compressed-tensors' (ct.h): minmax observer, round half
 * to even, every intermediate rounded to the model dtype.
 */
#ifndef QUANTA_QUANTIZE_CT_H
#define QUANTA_QUANTIZE_CT_H

#include "core.h"
#include "ct.h"
#include "gguf.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* transformers' default max_shard_size "5GB" (5 * 10^9 bytes). */
#define QT_CT_DEFAULT_SHARD_BYTES 5000000000ull

/* qt_ct_export writes every file in the directory OUT.partial beside OUT and renames it to OUT
 * when all are complete (into an existing OUT, with force, the files move in one by one); on an
 * error or a cancel (Ctrl-C, SIGTERM) OUT.partial is removed and no OUT appears. An OUT.partial
 * already there is an error (qt_quantize_clear_partial removes one left by an interrupted run). */
#define QT_CT_PARTIAL_SUFFIX ".partial"

typedef struct qt_ct_export_opts {
    bool force;                    /* write into a non-empty directory */
    int n_threads;                 /* 0: qt_default_threads(); output identical at any count */
    const char *const *keep;       /* NULL-terminated PCRE2 regexes on canonical names
                                      (blk.3.ffn_down.weight); matches stay 16-bit */
    uint64_t max_shard_bytes;      /* 0: QT_CT_DEFAULT_SHARD_BYTES; shards + index above it */
    qt_progress progress;          /* "quantizing" per tensor */
    const char *command;           /* provenance: the command line (NULL: none) */
    /* Activation absmax at the input of a linear (canonical name), from
     * calibration; needed by fp8-static, and turns nvfp4 into W4A4. NULL: none. */
    float (*input_amax)(void *ctx, const char *name);
    void *input_amax_ctx;
    /* The calibration record (qt_calib_set_gguf_kv: "quanta.calibration.*"
     * keys), written to quantization_config.quanta.calibration with the
     * prefix dropped (docs/quantize.md); uint64 arrays as 16-hex-digit
     * strings (JSON integers stop at 2^63). NULL: none. */
    const qt_gguf_kv *calibration;
    int32_t n_calibration;
    /* Each vLLM kernel shape problem (layer + kernel + rule). NULL: not reported
     * (the count is still returned in the estimate). */
    void (*warn)(void *ctx, const char *message);
    void *warn_ctx;
    /* Integer schemes: codes an algorithm computed (GPTQ) for a linear
     * (canonical name), in the model's (GGUF) row order: q (rows, cols),
     * scales (rows, cols / group) already in the model dtype, zero points
     * (rows, cols / group) or NULL when symmetric. Returns false to let the
     * writer round to nearest (minmax). NULL: every linear is rounded. */
    bool (*int_codes)(void *ctx, const char *name, int64_t rows, int64_t cols, const int8_t **q,
                      const float **scales, const int8_t **zero_points);
    void *int_codes_ctx;
    /* One-dimensional tensors (norms, biases) whose values an algorithm
     * changed (AWQ / SmoothQuant fold their scales into them), by canonical
     * name, n values in f32; NULL: the source's values. NULL: none. */
    const float *(*vector_values)(void *ctx, const char *name, int64_t n);
    /* quantization_config.quanta.method: the algorithm ("gptq", "awq", ...); NULL: "rtn". */
    const char *method;
    void *vector_values_ctx;
    /* Float schemes (fp8-dynamic, fp8-static, fp8-block, nvfp4, mxfp4): the
     * same for float codes, in the model's row order: q (rows, cols) one E4M3
     * or E2M1 code per byte; scales: fp8's floats (rows for channel, the
     * (row block, column block) grid for fp8-block; unused for fp8-static);
     * scale_codes: fp4's E4M3 / E8M0 (rows, cols / group); *shared:
     * fp8-static's weight scale or nvfp4's global scale, which must equal the
     * writer's own (shared over fused shards; an error otherwise). */
    bool (*float_codes)(void *ctx, const char *name, int64_t rows, int64_t cols, const uint8_t **q,
                        const float **scales, const uint8_t **scale_codes, float *shared);
    void *float_codes_ctx;
    /* KV-cache scales (quanta/quantize.h, qt_kv_scales): written as
     * model.layers.N.self_attn.k_scale / v_scale ([1] per tensor or [n_head_kv]
     * per head, in the model dtype, replacing any the input has) with
     * quantization_config.kv_cache_scheme as llm-compressor writes it
     * (num_bits 8, type kv_type, strategy "tensor" or "attn_head", static).
     * NULL: none (and the input's scales, if any, are copied). */
    const float *kv_k_scale, *kv_v_scale;  /* (n_layer * kv_per_layer) */
    int32_t kv_per_layer;                  /* 1 or n_head_kv */
    const char *kv_type;                   /* "float" (fp8-e4m3) or "int" (int8) */
    const char *kv_calib;                  /* recorded as quantization_config.quanta.kv_calib */
    /* Resumable runs (docs/quantize.md, "Staging and resume"). resumable: an
     * interrupted run keeps OUT.partial and its state file OUT.partial.state
     * (beside OUT), rewritten after every stored tensor is synced; resume:
     * continue such a run from its last complete stored tensor, giving the
     * bytes of an uninterrupted run (QT_ERR_ARG naming the input or option that
     * changed). Rounding to nearest only: refused with int_codes, float_codes
     * or vector_values. */
    bool resumable, resume;
    void (*tensor_written)(void *ctx, int32_t n_done); /* after each checkpoint: stored tensors complete */
    void *tensor_written_ctx;
    /* Per-group integer schemes (w4a16, w4a16-asym, w8a16): the group size
     * (0: the scheme's 128). A linear whose input width the group does not
     * divide gets one scale per output channel instead (qt_ct_int_args_for),
     * written as a second config group, reported through warn and in the
     * estimate's tensors. Other schemes: must be 0 (QT_ERR_ARG). */
    int64_t group_size;
    /* Integer schemes rounded to nearest: importance weights for a linear's
     * input columns (canonical name, cols floats, an imatrix's; NULL: none),
     * which make each scale the shrunk range with the least weighted squared
     * error instead of minmax (imatrix-weighted round-to-nearest). The values
     * must stay valid until the next call. NULL: minmax everywhere. */
    const float *(*importance)(void *ctx, const char *name, int64_t cols);
    void *importance_ctx;
} qt_ct_export_opts;

/* One tensor of the source as it will be written. */
typedef struct qt_ct_export_tensor {
    char name[128];                /* canonical name */
    char hf_name[192];             /* HF module or tensor name */
    const char *kind;              /* the format row ("w4a16-g128", ...) or "bf16"/"f16" */
    const char *strategy;          /* integer schemes: "group", "channel" (the fallback) ...; NULL otherwise */
    int64_t group_size;            /* its group size; 0: none */
    uint64_t bytes;                /* every stored tensor it becomes, data bytes */
    int64_t n_elements;
} qt_ct_export_tensor;

typedef struct qt_ct_export_estimate {
    const char *scheme;            /* the canonical scheme key */
    const char *preset;            /* llm-compressor preset: "W4A16", ... */
    const char *format;            /* compressed-tensors format string */
    uint64_t tensor_bytes;         /* sum of all safetensors data sections (= index total_size) */
    int32_t n_shards;
    int32_t n_quantized, n_kept;
    int32_t n_warnings;            /* vLLM kernel shape problems */
    int32_t n_fallback;            /* linears of a per-group scheme with one scale per channel instead */
    double bits_per_weight;        /* tensor bytes * 8 / elements of the source tensors */
    int32_t n_tensors;
    qt_ct_export_tensor *tensors;  /* (n_tensors); qt_ct_export_estimate_free */
    /* qt_ct_export with resumable / resume, also set on failure: */
    int32_t n_stored;              /* stored tensors (safetensors entries) */
    int32_t n_stored_done;         /* complete on disk */
    int32_t n_resumed;             /* complete when this run began (resume) */
    bool partial_kept;             /* OUT.partial and its state kept for --resume */
} qt_ct_export_estimate;

/* The scheme key for a name or alias (case-insensitive), NULL if unknown. */
QT_API const char *qt_ct_scheme_canonical(const char *name);
/* Whether a scheme uses input activation statistics (input_amax): fp8-static
 * needs them; nvfp4 becomes NVFP4 (W4A4) with them. */
QT_API bool qt_ct_scheme_uses_act_stats(const char *scheme);
/* Number of schemes and their keys (for --help). */
QT_API int qt_ct_scheme_count(void);
QT_API const char *qt_ct_scheme_key(int i);

/* The integer grid of an integer scheme (w4a16, w4a16-asym, w8a16, w8a8-int8)
 * for model m: bits, symmetry, strategy and group, and the model dtype its
 * scales are rounded to. QT_ERR_UNSUPPORTED for a float scheme. */
QT_API qt_status qt_ct_int_scheme(const qt_model *m, const char *scheme, qt_ct_int_args *out);
/* The float grid of a float scheme for model m: *kind a qt_gptq_float_kind
 * (quanta/gptq.h: fp8-static is FP8_TENSOR, fp8-dynamic FP8_CHANNEL,
 * fp8-block, nvfp4, mxfp4) and the model dtype. QT_ERR_UNSUPPORTED for an
 * integer scheme. */
QT_API qt_status qt_ct_float_scheme(const qt_model *m, const char *scheme, int *kind, qt_ct_dtype *dtype);

/* What qt_ct_export would write, exactly, without quantizing or writing. */
QT_API qt_status qt_ct_export_estimate_plan(const qt_model *m, const char *scheme, const qt_ct_export_opts *o,
                                            qt_ct_export_estimate *out);
QT_API void qt_ct_export_estimate_free(qt_ct_export_estimate *e);

/* Writes out_dir/config.json (with quantization_config), the safetensors
 * (model.safetensors, or shards + model.safetensors.index.json),
 * recipe.yaml, tokenizer files (copied unchanged from an HF input, written
 * from the vocabulary otherwise) and generation_config.json (copied). The
 * directory rule is qt_hf_write's: created if missing, empty unless force,
 * never the input; files go to temporaries, renamed when all are complete.
 * est may be NULL; otherwise it gets the plan (as qt_ct_export_estimate_plan). */
QT_API qt_status qt_ct_export(const qt_model *m, const char *scheme, const char *out_dir, const qt_ct_export_opts *o,
                              qt_ct_export_estimate *est);

#ifdef __cplusplus
}
#endif
#endif
