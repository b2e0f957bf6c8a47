/* lib/quant/variants.h — THE table of SIMD kernel variants (internal).
 *
 * The traits table (traits.c) is const and holds the scalar references. Each
 * row here names one faster kernel for one traits row, and the lowest CPU
 * level it needs. dispatch.c resolves the table once: a type gets, field by
 * field, the kernel of the highest level at or below the CPU's (QUANTA_CPU
 * caps it), else its reference. Tests (test_simd, test_engine_dot) and the
 * benchmarks (bench_quant, bench_dot) loop over this same table, so a new
 * variant is one row here plus its kernel, and it is tested and measured.
 * Every variant gives its reference's bits: the choice changes speed only.
 */
#ifndef QT_QUANT_VARIANTS_H
#define QT_QUANT_VARIANTS_H

#include "core/cpu_level.h"
#include "ct_internal.h"
#include "gemm.h"
#include "gemm_f16.h"
#include "gemm_k16.h"
#include "quanta/quant.h"

typedef struct qt__kernel_variant {
    qt_type type;                   /* the traits row; QT_TYPE_COUNT for ct_int4_row */
    qt__cpu_level level;            /* runs where qt__cpu_level_get() >= level */
    qt_to_float_fn to_float;        /* NULL: this variant does not replace it */
    qt_from_float_fn from_float;    /* quantizer; reference: qt__traits_ref(type)->from_float */
    qt_vec_dot_fn vec_dot;
    qt_vec_dot_fn vec_dot_gemm;
    qt__ct_int4_row_fn ct_int4_row; /* compressed-tensors int4 group rows (qt__ct_int4_row_ref) */
    qt__gemm_fn gemm;               /* blocked rows x activations (gemm.h); reference: vec_dot per element
                                       (weight-only ct4 rows, f32 activations: vec_dot_gemm per element,
                                       their batch order; test_ct4) */
    int gemm_min_batch;             /* 0/1: use gemm from one activation row (decode) on; 2: from two
                                       (bench_gemm: slower than vec_dot for one row) */
    qt__gemm_fn gemm_fast;          /* the same in its own float order, for --numerics fast only */
    qt_vec_dot_fn gemm_fast_ref;    /* gemm_fast's order, one element (scalar reference) */
    qt__gemm_x16_fn gemm_x16;       /* --numerics fast on rows packed by qt__x16_pack (gemm.h); preferred
                                       over gemm_fast where both run */
    qt__gemm_x16_fn gemm_x16_ref;   /* its scalar reference on packed rows (qt__gemm_x16_*_ref) */
    qt__gemm_x16_fn gemm_k16;       /* --numerics fast on K-quant rows packed by qt__k16_pack (gemm_k16.h), Q8_K
                                       activations; gemm_fast's bits, preferred over it */
    qt__gemm_x16_fn gemm_k16_ref;   /* its scalar reference on packed rows (qt__gemm_k16_*_ref) */
    qt__act_q8s_fn act_q8s;         /* the x16 kernels' activation quantizer (row type QT_TYPE_Q8_0 only;
                                       reference qt__act_q8s_ref) */
    qt__act_q8_0_fn act_q8_0;       /* the llama-order paths' Q8_0 activations (row type QT_TYPE_Q8_0 only;
                                       reference qt__act_q8_0_ref) */
    qt__act_row_fn act_f16;         /* F16 activations (row type QT_TYPE_F16 only; reference qt__act_f16_ref) */
    qt__act_row_fn act_f16_f32;     /* the same values as f32 (row type QT_TYPE_F16; qt__act_f16_f32_ref) */
    qt__gemm_fn gemm_fast_a32;      /* --numerics fast F16 rows x qt__act_f16_f32 rows (gemm_f16.h): gemm_fast's
                                       bits, preferred over it; reference gemm_fast_a32_ref per element */
    qt_vec_dot_fn gemm_fast_a32_ref;
} qt__kernel_variant;

/* Ends with a row whose level is QT__CPU_LEVEL_COUNT. */
extern const qt__kernel_variant qt__variants[];

/* The fields of one variant beside their scalar references, for the loops in
 * tests and benchmarks: which reference a variant field must equal. */
const qt_type_traits *qt__traits_ref(qt_type t); /* the const row, NULL if none */

#endif
