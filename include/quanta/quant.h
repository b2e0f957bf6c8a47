/* quanta/quant.h — tensor element types and the one traits table.
 *
 * Every weight/activation storage format is one row of the traits table
 * (lib/quant/traits.c): name, ggml type id, elements and bytes per block,
 * dequantize, reference quantize (with optional per-column importance
 * weights), and the kernels the engine uses. Every loop over formats goes
 * through this table; adding a format is adding a row plus its tests.
 *
 * Type ids equal ggml's `enum ggml_type` (docs/formats.md §3.1) so they can be
 * written to GGUF unchanged.
 */
#ifndef QUANTA_QUANT_H
#define QUANTA_QUANT_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qt_type {
    QT_TYPE_F32 = 0,
    QT_TYPE_F16 = 1,
    QT_TYPE_Q4_0 = 2,
    QT_TYPE_Q4_1 = 3,
    QT_TYPE_Q5_0 = 6,
    QT_TYPE_Q5_1 = 7,
    QT_TYPE_Q8_0 = 8,
    QT_TYPE_Q8_1 = 9,
    QT_TYPE_Q2_K = 10,
    QT_TYPE_Q3_K = 11,
    QT_TYPE_Q4_K = 12,
    QT_TYPE_Q5_K = 13,
    QT_TYPE_Q6_K = 14,
    QT_TYPE_Q8_K = 15,
    QT_TYPE_IQ2_XXS = 16,
    QT_TYPE_IQ2_XS = 17,
    QT_TYPE_IQ3_XXS = 18,
    QT_TYPE_IQ1_S = 19,
    QT_TYPE_IQ4_NL = 20,
    QT_TYPE_IQ3_S = 21,
    QT_TYPE_IQ2_S = 22,
    QT_TYPE_IQ4_XS = 23,
    QT_TYPE_I8 = 24,
    QT_TYPE_I16 = 25,
    QT_TYPE_I32 = 26,
    QT_TYPE_I64 = 27,
    QT_TYPE_F64 = 28,
    QT_TYPE_IQ1_M = 29,
    QT_TYPE_BF16 = 30,
    QT_TYPE_TQ1_0 = 34,
    QT_TYPE_TQ2_0 = 35,
    QT_TYPE_MXFP4 = 39,
    QT_TYPE_Q1_0 = 41,  /* ggml 2026: 1 sign bit per weight, 128-blocks */
    QT_TYPE_Q2_0 = 42,  /* ggml 2026: 2 bits per weight, 64-blocks */
    /* Engine-only row formats (never in a GGUF file; ids far above ggml's):
     * compressed-tensors weights kept packed for W8A8, and their activation
     * rows (lib/quant/ct_rows.h, docs/w8a8.md). */
    QT_TYPE_CT_I8 = 60,       /* int8 per channel, W8A8 with int8 per-token activations */
    QT_TYPE_CT_F8 = 61,       /* E4M3 per channel / per tensor, + static or dynamic input scale */
    QT_TYPE_CT_F8_ACT = 62,   /* E4M3 activations, one scale per row (token) */
    QT_TYPE_CT_F8_BLOCK = 63, /* E4M3, one scale per 128 columns (weights: 128x128 blocks) */
    /* Weight-only 4-bit compressed-tensors rows, f32 activations (lib/quant/ct4.h). */
    QT_TYPE_CT_W4_G32 = 64,   /* w4a16 int4, groups of 32, optional zero points */
    QT_TYPE_CT_W4_G64 = 65,   /* w4a16 int4, groups of 64 */
    QT_TYPE_CT_W4_G128 = 66,  /* w4a16 int4, groups of 128 */
    QT_TYPE_CT_NVFP4 = 67,    /* E2M1, E4M3 scale per 16, f32 global scale */
    QT_TYPE_CT_MXFP4 = 68,    /* E2M1, E8M0 scale per 32 */
    /* Weight-only 8-bit compressed-tensors rows, f32 activations (lib/quant/ct8.h). */
    QT_TYPE_CT_W8_G128 = 69,  /* w8a16 int8, groups of 128, optional zero points */
    QT_TYPE_CT_W8_CH = 70,    /* w8a16 int8, one scale per row (channel or tensor) */
    QT_TYPE_COUNT = 71  /* one past the largest id */
} qt_type;

/* Dequantize n elements (n a multiple of block_elems). */
typedef void (*qt_to_float_fn)(const void *src, float *dst, int64_t n);
/* Quantize one row of n elements (n a multiple of block_elems).
 * imatrix: NULL, or n per-column importance weights (llama.cpp's imatrix). */
typedef void (*qt_from_float_fn)(const float *src, void *dst, int64_t n, const float *imatrix);
/* Dot product of one quantized row x (type T) with one row y already
 * quantized to the type's vec_dot_type; n elements. */
typedef float (*qt_vec_dot_fn)(const void *x, const void *y, int64_t n);

typedef struct qt_type_traits {
    const char *name;          /* ggml's name: "f32", "q4_0", "q4_K", "iq4_nl", ... */
    qt_type type;
    int64_t block_elems;       /* elements per block (1 for plain types) */
    size_t block_bytes;        /* bytes per block */
    bool is_quantized;
    bool runtime_only;         /* Q8_1, Q8_K: activation types, never stored by llama-quantize */
    bool imatrix_aware;        /* the reference quantizer uses importance weights */
    qt_to_float_fn to_float;       /* dispatched (fastest for this CPU) */
    qt_to_float_fn to_float_ref;   /* scalar reference */
    qt_from_float_fn from_float;   /* reference quantizer, bit-exact with ggml */
    qt_type vec_dot_type;          /* activation type for vec_dot */
    qt_vec_dot_fn vec_dot;         /* NULL until the engine supplies one */
    qt_vec_dot_fn vec_dot_gemm;    /* the order llama.cpp uses when two or more activation
                                      rows meet the same weights (tinyBLAS); NULL: vec_dot */
    /* Engine-only row formats (QT_TYPE_CT_*): each row carries its own scales
     * in a header, so its size is this function of n, not whole blocks
     * (block_elems 1, block_bytes 1: the codes); never written to a file. */
    bool engine_only;
    size_t (*row_size)(int64_t n);
} qt_type_traits;

/* NULL for ids that are not (or no longer) a type. */
QT_API const qt_type_traits *qt_type_get(qt_type t);
/* By ggml name, case-insensitive ("Q4_K", "q4_k", "f16"). NULL if unknown. */
QT_API const qt_type_traits *qt_type_by_name(const char *name);
QT_API double qt_type_bits_per_weight(qt_type t);
/* True when ggml cannot quantize to t without importance weights (IQ2_XXS,
 * IQ2_XS, IQ1_S: ggml_quantize_requires_imatrix); qt_quantize_rows refuses
 * them with imatrix NULL. llama-quantize's per-tensor rule asks for an imatrix
 * for more types (IQ1_M, IQ2_S, IQ3_XXS too); that policy is the caller's. */
QT_API bool qt_type_requires_imatrix(qt_type t);

/* Bytes of one row of n elements; 0 with an error set if n is not a multiple
 * of the block size or the type is unknown. */
QT_API size_t qt_row_size(qt_type t, int64_t n);

/* Checked wrappers around the traits: refuse rows whose length is not a
 * multiple of the block size ("row of 172 elements is not a multiple of
 * q4_0's block size 32"), unknown types and types without a codec. */
QT_API qt_status qt_quantize_rows(qt_type t, const float *src, void *dst,
                           int64_t n_rows, int64_t n_per_row, const float *imatrix);
QT_API qt_status qt_dequantize_rows(qt_type t, const void *src, float *dst,
                             int64_t n_rows, int64_t n_per_row);

#ifdef __cplusplus
}
#endif
#endif
