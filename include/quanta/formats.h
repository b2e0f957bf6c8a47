/* quanta/formats.h — THE table of weight formats and quantization schemes
 * (lib/quant/schemes.c). One vocabulary for `quanta formats`, `quanta hw`, the
 * planner, the GGUF writer and quantization:
 *
 *   formats   how one weight tensor is stored: every GGUF block type (its row
 *             codec is the traits table's, quant.h) and every compressed-tensors,
 *             AWQ, GPTQ and bitsandbytes layout (compressed-tensors rows carry a
 *             tensor-level codec: NVFP4's global scale, FP8's per-tensor scale
 *             and zero points packed along dim 0 need the whole tensor).
 *   GGUF file types   llama-quantize's names (Q4_K_M ...) and general.file_type ids.
 *   schemes   what the planner ranks and `--scheme` names: a format plus the
 *             runtime that serves it, its kernels' needs and a quality rank.
 *
 * Bits per weight include the scales and zero points each format stores.
 * docs/architecture.md, "Adding a weight format", lists the steps.
 */
#ifndef QUANTA_FORMATS_H
#define QUANTA_FORMATS_H

#include "ct.h"
#include "quant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- weight formats ------------------------------------------------------ */

typedef enum qt_format_family {
    QT_FAMILY_DENSE = 0,           /* f32/f16/bf16 */
    QT_FAMILY_GGUF,                /* ggml block types (llama.cpp) */
    QT_FAMILY_COMPRESSED_TENSORS,  /* vLLM / llm-compressor checkpoints */
    QT_FAMILY_BITSANDBYTES,
    QT_FAMILY_AWQ,                 /* AutoAWQ GEMM checkpoints (qweight, qzeros, scales) */
    QT_FAMILY_GPTQ,                /* AutoGPTQ checkpoints (qweight, qzeros, scales, g_idx) */
} qt_format_family;

/* What one quantized weight tensor becomes (compressed-tensors names,
 * docs/formats.md §4.3). Buffers are the caller's, sized by qt_format_tensor_sizes. */
typedef struct qt_ct_tensors {
    void *weight;              /* weight_packed int32 words (pack-quantized), int8 codes (int-quantized),
                                  E4M3 bytes (float-quantized) or fp4 pairs (nvfp4/mxfp4) */
    float *scales;             /* weight_scale as floats in the model dtype (int, fp8); else NULL */
    uint8_t *scale_codes;      /* nvfp4: raw E4M3 scale bytes; mxfp4: raw E8M0 exponents; else NULL */
    void *zero_points;         /* asymmetric: weight_zero_point, int32 words packed along dim 0
                                  (pack-quantized) or int8 (int-quantized); else NULL */
    float global_scale;        /* nvfp4 weight_global_scale; else 0 */
} qt_ct_tensors;

typedef struct qt_ct_tensor_sizes {
    int64_t weight_bytes;      /* bytes of `weight` */
    int64_t n_scales;          /* floats of `scales` */
    int64_t scale_code_bytes;  /* bytes of `scale_codes` */
    int64_t zero_point_bytes;  /* bytes of `zero_points` */
} qt_ct_tensor_sizes;

struct qt_format_info;
/* Tensor-level codecs, one signature for every compressed-tensors format:
 * w is (rows, cols) = (out_features, in_features) row-major. */
typedef qt_status (*qt_tensor_quantize_fn)(const struct qt_format_info *f, const float *w, int64_t rows,
                                           int64_t cols, qt_ct_dtype dt, qt_ct_tensors *out);
typedef qt_status (*qt_tensor_dequantize_fn)(const struct qt_format_info *f, const qt_ct_tensors *in, int64_t rows,
                                             int64_t cols, qt_ct_dtype dt, float *out);

typedef struct qt_format_info {
    const char *name;          /* "q4_K", "w4a16-g128", "fp8-e4m3-tensor", "nvfp4", ... */
    qt_format_family family;
    int ggml_type;             /* qt_type for GGUF/dense rows, -1 otherwise */
    const char *ct_format;     /* compressed-tensors "format": "pack-quantized", ...; NULL otherwise */
    int bits;                  /* bits of one weight code (4 for q4_K, 8 for fp8) */
    bool symmetric;            /* false: a zero point or a min per group */
    const char *scale;         /* scale type: "f16", "bf16", "e4m3", "e8m0", "f32", "f16 + 6-bit sub-scales" */
    int scale_bits;            /* bits of one stored scale (GGUF rows: 0, the block size says it all) */
    int zero_bits;             /* bits of one stored zero point (0: none stored) */
    bool g_idx;                /* GPTQ act-order index: one int32 per input column */
    int64_t block_elems;       /* elements sharing one scale (1 = per channel, 0 = per tensor) */
    double bits_per_weight;    /* storage incl. scales and zero points; for per-channel/per-tensor
                                  formats the scale share of a 4096-wide row is included */
    const char *use;           /* what it is for */
    const char *engines;       /* which engines read it, on what hardware */
    qt_tensor_quantize_fn quantize;     /* compressed-tensors rows; NULL elsewhere (GGUF rows: traits) */
    qt_tensor_dequantize_fn dequantize;
} qt_format_info;

/* Rows `quanta formats` lists: GGUF rows whose traits row has a quantizer, and
 * every other family. */
QT_API int qt_format_count(void);
QT_API const qt_format_info *qt_format_at(int i);
QT_API const qt_format_info *qt_format_find(const char *name); /* case-insensitive; NULL if unknown */
QT_API const char *qt_format_family_name(qt_format_family f);
/* Buffer sizes for a (rows, cols) weight in a compressed-tensors format
 * (QT_ERR_SHAPE if the group does not divide cols, QT_ERR_UNSUPPORTED for other rows). */
QT_API qt_status qt_format_tensor_sizes(const qt_format_info *f, int64_t rows, int64_t cols, qt_ct_tensor_sizes *out);

/* ---- GGUF file types (llama_ftype, docs/formats.md §3.6) ---------------------- */

typedef struct qt_gguf_ftype_info {
    const char *name;          /* llama-quantize's name: "Q4_K_M" */
    int32_t id;                /* general.file_type */
    qt_type base;              /* the type most linear weights get */
    bool mix;                  /* _M: attn_v and ffn_down get more bits in some layers */
    bool labels_base;          /* the file type a file of mostly `base` tensors is labelled */
    bool has_rules;            /* lib/quant/recipe.c reproduces llama-quantize's per-tensor choices */
} qt_gguf_ftype_info;

QT_API const qt_gguf_ftype_info *qt_gguf_ftype_find(const char *name); /* case-insensitive */
QT_API const qt_gguf_ftype_info *qt_gguf_ftype_by_id(int32_t id);       /* general.file_type; NULL if unknown */
/* general.file_type for a file whose predominant type is t (1024, "guessed", when none). */
QT_API int32_t qt_gguf_ftype_of_type(qt_type t);

/* ---- schemes ------------------------------------------------------------- */

typedef enum qt_scheme_kind {
    QT_SCHEME_FLOAT16 = 0,       /* bf16 / fp16 */
    QT_SCHEME_CHANNEL8,          /* 8-bit weights, one scale per output channel (fp8, int8 W8A8) */
    QT_SCHEME_GROUP_INT,         /* int-N weights, groups of `group` inputs (W4A16, W8A16, AWQ, GPTQ) */
    QT_SCHEME_MICROFLOAT,        /* fp4 e2m1 with a block scale (NVFP4, MXFP4) */
    QT_SCHEME_NF4,               /* bitsandbytes NF4 */
    QT_SCHEME_GGUF,              /* llama.cpp file type */
} qt_scheme_kind;

/* Which runtime serves a scheme (not quanta's own engine, engine.h). */
typedef enum qt_runtime { QT_RUNTIME_VLLM = 0, QT_RUNTIME_LLAMACPP, QT_RUNTIME_BNB } qt_runtime;

typedef struct qt_scheme_info {
    const char *key;             /* --scheme value: "w4a16", "fp8", "q4_k_m", ... */
    const char *aliases;
    const char *title;           /* "INT4 W4A16, group 128, symmetric (compressed-tensors)" */
    qt_scheme_kind kind;
    qt_runtime runtime;
    const char *support_row;     /* key of the support-matrix row that decides where it runs */
    const char *format;          /* the weight format row (qt_format_find) */
    const qt_gguf_ftype_info *gguf;  /* GGUF schemes: the file type; else NULL */
    double simple_bytes;         /* the seed's flat bytes per parameter */
    int bits;                    /* weight bits (16, 8, 4, ...): the format's */
    int group;                   /* elements per scale (0 = per output channel): the format's */
    int scale_bytes;             /* bytes per scale as the runtime holds it in memory */
    int zero_bits;               /* bits per zero point (0 = symmetric): the format's */
    bool g_idx;                  /* GPTQ act-order index (int32 per input column) */
    int act_bits;                /* activation bits in the matmul: 16, 8 or 4 */
    bool act_float;              /* fp8/fp4 activations (needs fp8/fp4 tensor cores) */
    int quality;                 /* coarse loss ranking: 0 lossless .. 6 most lossy */
    const char *gguf_ftype;      /* "Q4_K_M" for GGUF schemes (gguf->name) */
    const char *method;          /* quantization method quanta would use: "gptq", "awq", "rtn", ... */
    const char *note;
} qt_scheme_info;

QT_API int qt_scheme_count(void);
QT_API const qt_scheme_info *qt_scheme_get(int i);
QT_API const qt_scheme_info *qt_scheme_find(const char *name);

#ifdef __cplusplus
}
#endif
#endif
