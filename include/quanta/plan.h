/* quanta/plan.h — capacity planning: will it fit, what is left for the KV
 * cache, how many sequences does that buy, which formats does this hardware
 * actually run, and what to do about it.
 *
 * Everything here is arithmetic on data tables (lib/plan/): model presets
 * (each citing its config.json), hardware (datasheets), the support matrix
 * (vLLM's quantization hardware table plus llama.cpp), and the schemes quanta
 * knows with their exact storage layouts. Nothing here touches an engine.
 *
 * Units: every byte count is in bytes (double, never rounded). Text output
 * says which unit it uses: GB = 1e9 bytes, GiB = 2^30 bytes. Vendor memory
 * sizes ("16 GB") are taken as decimal GB, like the seed's arithmetic; pass
 * an explicit --memory (e.g. "15360MiB", what nvidia-smi reports) to use a
 * measured figure instead.
 *
 * Two accountings (docs/plan.md):
 *   simple     the seed's flat bytes per parameter (2 / 1 / 0.5 for 16 / 8 /
 *              4 bits) over ALL parameters, and a flat overhead (1.0 GB).
 *   realistic  (default) per tensor: the parts that stay 16-bit (embeddings,
 *              lm_head, norms, biases, MoE routers), each scheme's scale and
 *              zero-point bytes, llama.cpp's per-tensor type choice for GGUF
 *              presets; overhead = a stated runtime allowance plus an
 *              activation workspace computed from the model's shape.
 */
#ifndef QUANTA_PLAN_H
#define QUANTA_PLAN_H

#include "core.h"
#include "formats.h"
#include "num.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QT_GB 1e9
#define QT_GIB 1073741824.0

/* ---- units and names ------------------------------------------------------ */

/* "16GB", "16 GB", "15360MiB", "1.5TB", "123456B" -> bytes. A unit is required
 * (B, KB, MB, GB, TB = powers of 1000; KiB, MiB, GiB, TiB = powers of 1024;
 * case-insensitive). Negative, NaN or unit-less sizes are QT_ERR_ARG (zero is
 * allowed: callers that need a positive size check it). */
QT_API qt_status qt_plan_parse_size(const char *s, double *bytes);

/* Levenshtein distance between two names after lower-casing and dropping
 * everything but letters and digits ("Qwen2.5-7B" ~ "qwen25 7b"). */
QT_API int qt_plan_name_distance(const char *a, const char *b);

/* ---- model specs -------------------------------------------------------------- */

typedef enum qt_spec_kind {
    QT_SPEC_LLM = 0,        /* decoder-only transformer */
    QT_SPEC_DIFFUSION,      /* text-to-image pipeline: components, no KV cache */
} qt_spec_kind;

typedef enum qt_component_role {
    QT_COMPONENT_DENOISER = 0,   /* UNet / MMDiT / Flux transformer */
    QT_COMPONENT_TEXT_ENCODER,
    QT_COMPONENT_VAE,
} qt_component_role;

#define QT_PLAN_MAX_COMPONENTS 6

typedef struct qt_plan_component {
    const char *name;            /* diffusers sub-folder: "unet", "text_encoder_2", "vae" */
    const char *what;            /* "OpenCLIP ViT-bigG/14 text encoder" */
    qt_component_role role;
    uint64_t n_params;           /* published (approximate) count; see the preset's source */
} qt_plan_component;

typedef struct qt_model_spec {
    qt_spec_kind kind;
    char key[48];                /* preset key ("qwen2.5-7b") or the file name */
    char display[64];            /* "Qwen2.5-7B" */
    char hf_repo[96];            /* used in printed commands; a path for local models */
    char source[224];            /* where the numbers come from (config.json URL, file path) */
    char arch[32];               /* config.json model_type: "qwen2", "gemma2", "deepseek_v3", ... */
    /* Transformer shape (config.json names). */
    int64_t n_vocab;             /* vocab_size */
    int64_t n_embd;              /* hidden_size */
    int64_t n_layer;             /* num_hidden_layers */
    int64_t n_head;              /* num_attention_heads */
    int64_t n_head_kv;           /* num_key_value_heads */
    int64_t head_dim;            /* head_dim, or hidden_size / heads */
    int64_t n_ff;                /* intermediate_size (dense MLP) */
    int64_t n_ctx_train;         /* max_position_embeddings */
    bool tie_embeddings;         /* lm_head shares the embedding matrix */
    bool attn_bias;              /* q/k/v biases (qwen2) */
    bool qk_norm;                /* per-head q/k RMSNorm (qwen3) */
    int32_t norms_per_layer;     /* 2, or 4 for gemma2 (pre/post attention and MLP) */
    /* Sliding-window attention: those layers cache at most `sliding_window` tokens. */
    int64_t sliding_window;      /* 0 = none */
    int32_t swa_period;          /* 0 none; 1 every layer (mistral v0.1, phi3); 2 even layers (gemma2) */
    /* Mixture of experts (0 = dense). */
    int64_t n_expert;            /* routed experts per MoE layer */
    int64_t n_expert_used;       /* num_experts_per_tok */
    int64_t n_ff_expert;         /* moe_intermediate_size (mixtral: intermediate_size) */
    int64_t n_expert_shared;     /* shared experts, each n_ff_expert wide (deepseek) */
    int64_t n_dense_lead;        /* first_k_dense_replace: leading dense layers */
    /* Multi-head latent attention (deepseek_v2/v3); kv_lora_rank 0 = plain attention. */
    int64_t q_lora_rank, kv_lora_rank, qk_rope_dim, qk_nope_dim, v_head_dim;
    /* From a checkpoint: exact counts and the bytes it actually occupies. */
    bool measured;
    uint64_t measured_params;    /* sum of tensor elements */
    uint64_t measured_bytes;     /* sum of tensor bytes as stored */
    char measured_format[48];    /* "gguf q4_K (mostly)", "safetensors bf16" */
    /* Diffusion pipelines. */
    int n_components;
    qt_plan_component comp[QT_PLAN_MAX_COMPONENTS];
} qt_model_spec;

QT_API int qt_plan_preset_count(void);
QT_API const qt_model_spec *qt_plan_preset_get(int i);
/* By key, alias or Hugging Face repo id ("Qwen/Qwen2.5-7B-Instruct"); NULL if unknown. */
QT_API const qt_model_spec *qt_plan_preset_find(const char *name);

/* Fill *out from a config.json (the file, or a directory holding one). */
QT_API qt_status qt_plan_spec_from_config(const char *path, qt_model_spec *out);
/* Fill *out from an opened model: shape from its hparams, exact parameter
 * count and stored bytes from its tensors. */
QT_API qt_status qt_plan_spec_from_model(const qt_model *m, qt_model_spec *out);
/* A preset name, a config.json, or any checkpoint qt_model_open reads.
 * Unknown names: QT_ERR_NOT_FOUND naming the nearest presets. */
QT_API qt_status qt_plan_spec_resolve(const char *name_or_path, qt_model_spec *out);

/* Parameter counts by what happens to them under quantization. */
typedef struct qt_param_counts {
    uint64_t total;
    uint64_t embed;              /* token embedding */
    uint64_t lm_head;            /* 0 when tied */
    uint64_t linear;             /* quantizable Linear weights (attention, MLP, experts) */
    uint64_t router;             /* MoE router weights (kept 16-bit) */
    uint64_t small;              /* norms and biases (kept 16-bit, f32 in GGUF) */
    uint64_t active;             /* touched per token: all but the unused experts */
} qt_param_counts;
QT_API qt_status qt_plan_param_counts(const qt_model_spec *m, qt_param_counts *out);

/* ---- hardware -------------------------------------------------------------------- */

typedef enum qt_hw_class {
    QT_HW_VOLTA = 0,   /* NVIDIA SM 7.0 */
    QT_HW_TURING,      /* SM 7.5 */
    QT_HW_AMPERE,      /* SM 8.0 / 8.6 */
    QT_HW_ADA,         /* SM 8.9 */
    QT_HW_HOPPER,      /* SM 9.0 */
    QT_HW_BLACKWELL,   /* SM 10.0 / 12.0 */
    QT_HW_CDNA2,       /* AMD MI200 (gfx90a) */
    QT_HW_CDNA3,       /* AMD MI300 (gfx942) */
    QT_HW_CPU,         /* x86-64 host RAM */
    QT_HW_APPLE,       /* Apple Silicon unified memory */
    QT_HW_CLASS_COUNT
} qt_hw_class;

QT_API const char *qt_hw_class_name(qt_hw_class c);   /* "Turing", ... */

typedef struct qt_hw_info {
    const char *key;             /* "t4", "a100-80gb", "h100-sxm", "cpu", "m2-ultra" */
    const char *aliases;         /* comma separated */
    const char *name;            /* "NVIDIA T4" */
    qt_hw_class cls;
    const char *arch_name;       /* "Turing (TU104)" */
    int cc;                      /* compute capability x10 (75 = 7.5); 0 when not NVIDIA */
    double mem_gb;               /* vendor figure, taken as decimal GB */
    const char *mem_type;        /* "GDDR6", "HBM3", "unified", "DDR5" */
    double bw_gbs;               /* memory bandwidth, GB/s (0 unknown) */
    /* Dense (no sparsity) tensor throughput from the datasheet, 0 = none/unknown. */
    double tflops_16;            /* fp16/bf16 */
    double tops_int8;
    double tflops_fp8;
    double tflops_fp4;
    double default_util;         /* share of memory the runtime may take (0.90; 0.75 Apple) */
    const char *source;
} qt_hw_info;

QT_API int qt_hw_count(void);
QT_API const qt_hw_info *qt_hw_get(int i);
QT_API const qt_hw_info *qt_hw_find(const char *name);  /* key or alias, case-insensitive */
/* The machine this runs on, as a CPU target: RAM from the OS, features from qt_cpu(). */
QT_API qt_status qt_hw_local_cpu(qt_hw_info *out, char *name_buf, size_t name_size);
/* Up to n nearest known names (models when models != 0, else hardware). */
QT_API int qt_plan_suggest(const char *name, int models, const char **out, int n);

/* ---- schemes and the support matrix ------------------------------------------ */

/* Schemes (qt_scheme_info, qt_scheme_find, ...) are rows of the format table: quanta/formats.h. */
/* What a --scheme value means in every verb: a scheme key or alias (case and
 * punctuation ignored), or the name `quanta formats` prints for the weight
 * format a scheme stores (w4a16-g128 -> w4a16, f16 -> fp16). NULL if none. */
QT_API const qt_scheme_info *qt_scheme_resolve(const char *name);
/* Up to n scheme keys near an unknown name (related formats first, then by
 * edit distance); *note explains a format name the planner does not plan, else NULL. */
QT_API int qt_scheme_suggest(const char *name, const char **out, int n, const char **note);

typedef enum qt_support { QT_SUPPORT_NO = 0, QT_SUPPORT_YES, QT_SUPPORT_PARTIAL } qt_support;

typedef struct qt_support_cell {
    qt_support s;
    const char *note;            /* why, and what to use instead (never NULL for NO/PARTIAL) */
} qt_support_cell;

typedef struct qt_support_row {
    const char *key;             /* "fp8-w8a8", "marlin", "gguf", "fp8-kv", ... */
    const char *title;
    qt_support_cell cell[QT_HW_CLASS_COUNT];
    const char *source;
} qt_support_row;

QT_API int qt_support_row_count(void);
QT_API const qt_support_row *qt_support_row_get(int i);
QT_API const qt_support_row *qt_support_row_find(const char *key);
/* Can `scheme` run on `hw`? Writes the one-line reason (why not, or how). */
QT_API qt_support qt_support_check(const qt_scheme_info *scheme, const qt_hw_info *hw, char *reason, size_t n);

/* ---- estimate ---------------------------------------------------------------------- */

typedef enum qt_accounting { QT_ACCOUNTING_REALISTIC = 0, QT_ACCOUNTING_SIMPLE } qt_accounting;
/* The KV cache dtype is num.h's qt_kv_type; the planner offers auto, bf16, f16, fp8-e4m3 and int8
 * and names them as vLLM does: "auto", "bf16", "fp16", "fp8", "int8" ("?" for the others). */
QT_API const char *qt_kv_dtype_name(qt_kv_type k);

/* KV bytes per token when every layer keeps every token (2 x layers x kv_heads
 * x head_dim x elt_bytes; MLA: layers x (kv_lora_rank + rope dims) x elt_bytes),
 * per GPU under tensor parallelism over tp GPUs. */
QT_API double qt_plan_kv_bytes_per_token(const qt_model_spec *m, double elt_bytes, int tp);
/* KV bytes of one sequence of ctx tokens: sliding-window layers hold at most the window. */
QT_API double qt_plan_kv_bytes_per_seq(const qt_model_spec *m, double elt_bytes, int64_t ctx, int tp);

typedef struct qt_estimate_req {
    const qt_model_spec *model;
    const qt_scheme_info *scheme;
    const qt_hw_info *hw;        /* NULL: a generic device of memory_bytes */
    int n_gpus;                  /* tensor parallel degree (>= 1) */
    double memory_bytes;         /* per device; 0 = the hardware's */
    double util;                 /* share of memory the runtime takes; 0 = hardware default */
    double overhead_bytes;       /* < 0: default (simple: 1.0 GB; realistic: computed) */
    int64_t context;             /* tokens per sequence */
    int64_t concurrency;         /* sequences required; 0 = not given (one must fit) */
    qt_kv_type kv_dtype;
    qt_accounting accounting;
    int64_t batch_tokens;        /* tokens per forward for the activation workspace (0 = 2048) */
    int64_t max_num_seqs;        /* scheduler cap used for logits and throughput (0 = 256) */
} qt_estimate_req;

typedef struct qt_estimate {
    double device_bytes;         /* memory of one device */
    double budget_bytes;         /* util x device_bytes */
    /* Weights, per GPU (tensor-parallel share) and in total. */
    double weights_bytes;
    double weights_total_bytes;
    double weights_16bit_bytes;  /* part kept in 16-bit (embeddings, lm_head, norms...) */
    double weights_scale_bytes;  /* scales, zero points, act-order indices */
    uint64_t n_params;
    uint64_t n_params_16bit;
    /* Overhead, per GPU (allowances, stated as such). */
    double runtime_bytes;        /* CUDA context, library workspaces, CUDA graphs */
    double workspace_bytes;      /* activations of one batch_tokens forward + logits */
    double overhead_bytes;
    /* KV cache. */
    double kv_elt_bytes;
    double kv_bytes_per_token;   /* whole model (all GPUs), full attention */
    double kv_bytes_per_token_gpu;
    double kv_bytes_per_seq;     /* per GPU, one sequence of `context` tokens */
    double kv_budget_bytes;      /* per GPU; negative when the weights do not fit */
    double kv_required_bytes;    /* per GPU, for max(concurrency, 1) sequences */
    double concurrency_frac;     /* kv_budget / kv_bytes_per_seq (may be < 0) */
    int64_t concurrency;         /* whole sequences that fit (>= 0) */
    int64_t gpu_blocks;          /* vLLM blocks of 16 tokens (>= 0) */
    int64_t max_context;         /* tokens one sequence could hold (>= 0), at most the trained
                                    context unless the requested context is beyond it */
    int64_t max_context_memory;  /* what memory alone allows */
    bool fits;                   /* weights + overhead + the required sequences fit */
    double shortfall_bytes;      /* how much is missing when !fits (per GPU) */
    double weights_shortfall_bytes; /* > 0: weights + overhead alone exceed the budget */
    /* Where it runs. */
    qt_support support;
    char reason[256];
    /* Decode roofline (upper bound), 0 when the bandwidth is unknown. */
    int64_t batch;               /* min(concurrency, max_num_seqs) */
    double tok_s_single;         /* one sequence */
    double tok_s_batch;          /* all `batch` sequences together */
    bool compute_bound;          /* the batch estimate is limited by tensor throughput */
} qt_estimate;

/* Validates every input (QT_ERR_ARG naming the option) and computes. */
QT_API qt_status qt_plan_estimate(const qt_estimate_req *req, qt_estimate *out);
/* The estimate as JSON (docs/plan.md), malloc'd. */
QT_API qt_status qt_plan_estimate_json(const qt_estimate_req *req, const qt_estimate *e, char **out);

/* ---- plan ---------------------------------------------------------------------------- */

typedef enum qt_goal {
    QT_GOAL_FIT = 0,             /* least lossy scheme that serves the load */
    QT_GOAL_THROUGHPUT,          /* most decode tokens/s (roofline) */
    QT_GOAL_CONCURRENCY,         /* most sequences at the context */
    QT_GOAL_LONG_CONTEXT,        /* longest context for the sequences */
    QT_GOAL_QUALITY,             /* least lossy scheme that fits one sequence */
    QT_GOAL_COUNT
} qt_goal;
QT_API const char *qt_goal_name(qt_goal g);
QT_API qt_status qt_goal_parse(const char *s, qt_goal *out);

#define QT_PLAN_MAX_ROWS 24
#define QT_PLAN_MAX_NOTES 12
#define QT_PLAN_NOTE 400

typedef struct qt_plan_row {
    const qt_scheme_info *scheme;
    qt_estimate est;
    int rank;                    /* 1 = best; 0 = refused (cannot run here) */
    double score;                /* goal-specific, higher is better */
    bool encoders_8bit;          /* diffusion: the text encoders go 8-bit for this row to fit */
} qt_plan_row;

/* Memory of the quantization job itself (layer by layer). */
typedef struct qt_quant_job {
    const char *method;          /* "gptq", "awq", "rtn", "imatrix" */
    int64_t n_samples, seq_len;  /* calibration set */
    double layer_bytes;          /* one decoder layer's weights in bf16 (the largest) */
    double work_bytes;           /* f32 working copy of the largest Linear */
    double hessian_bytes;        /* GPTQ: in_features^2 x 4 bytes per Linear of the layer */
    double activation_bytes;     /* layer inputs and outputs for every calibration token, bf16 */
    double total_bytes;
    double host_bytes;           /* the whole model in bf16, unless streamed from disk */
} qt_quant_job;

typedef struct qt_plan {
    qt_estimate_req req;         /* scheme field unused */
    qt_goal goal;
    int n_rows;
    qt_plan_row rows[QT_PLAN_MAX_ROWS];  /* sorted: ranked rows first, then refused */
    int best;                    /* index into rows, -1 when nothing fits */
    const char *constraint;      /* "weights", "cache" or "none" (at 16-bit) */
    /* KV-cache advice for the best scheme: the same plan with an 8-bit cache. */
    qt_kv_type kv_alt_dtype;    /* QT_KV_TYPE_AUTO when no quantized cache applies */
    qt_estimate kv_alt;
    qt_support kv_alt_support;
    char kv_alt_reason[256];
    qt_quant_job job;
    int n_warnings;
    char warnings[QT_PLAN_MAX_NOTES][QT_PLAN_NOTE];
    int n_commands;
    char commands[4][QT_PLAN_NOTE];
    /* Diffusion pipelines: per component, bytes at 16-bit / 8-bit / 4-bit. */
    int n_components;
    double comp_bytes[QT_PLAN_MAX_COMPONENTS][3];
} qt_plan;

/* req->scheme is ignored: every scheme is estimated and ranked for `goal`. */
/* Diffusion: the precision component c is kept in under row r ("fp8", "16-bit", "8-bit"):
 * the denoiser takes the row's scheme, the VAE stays 16-bit, the text encoders go
 * 8-bit only when that is needed to fit. "-" when r is NULL. */
QT_API const char *qt_plan_component_precision(const qt_plan *p, const qt_plan_row *r, int c);
QT_API qt_status qt_plan_make(const qt_estimate_req *req, qt_goal goal, qt_plan *out);
QT_API qt_status qt_plan_json(const qt_plan *p, char **out);
/* The seeds' memory figure: one stacked bar per scheme (weights, overhead,
 * KV cache) against the budget line, overflow marked, concurrency annotated. */
QT_API qt_status qt_plan_svg(const qt_plan *p, char **out);
/* A self-contained HTML report (tables, notes, commands, the SVG inline). */
QT_API qt_status qt_plan_html(const qt_plan *p, char **out);

#ifdef __cplusplus
}
#endif
#endif
