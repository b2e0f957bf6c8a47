/* lib/engine/attn.h — attention kernels that read the KV cache in its stored
 * format, and the split-K attention of --numerics fast (internal).
 *
 * A kernel set serves one KV format. Its float order is fixed and written out
 * in the scalar reference (attn.c), and every SIMD variant computes exactly
 * those bits, so the CPU level changes speed only:
 *   kdot: for each of np rows k_p (stride bytes apart), out[p] = sum_i q[i] k_p[i]
 *         over n elements: eight lanes (lane l takes i = l mod 8 below n - n % 8,
 *         fmaf in order of i), a_j = l_j + l_(j+4), (a0+a1) + (a2+a3), then the
 *         tail fmaf'ed on in order of i;
 *   vacc: acc[i] = fmaf(v_p[i], w[p], acc[i]) for p = 0 .. np-1 in order, element
 *         by element (a SIMD kernel keeps acc in registers across the rows);
 *   exp:  x[i] = e^x[i] for x[i] <= 0 (qt__attn_exp_ref's polynomial);
 *   kdot_heads / vacc_heads: kdot / vacc for nh query heads that share the same
 *         K / V rows (GQA), head h's q, out, acc and w at h times their stride:
 *         head by head the bits of kdot / vacc (each element keeps its own chain),
 *         but a SIMD kernel decodes each cache element once for all the heads and
 *         keeps several heads' accumulators in registers (the decode, not the FMA,
 *         bounded the one-head kernels in a 512-token prefill).
 * Elements are decoded exactly (f16 / bf16 / fp8 widen to f32, int8 to its
 * integer); per-tensor or per-head scales are the caller's (folded into q's
 * multiplier and w).
 */
#ifndef QT_ENGINE_ATTN_H
#define QT_ENGINE_ATTN_H

#include <stddef.h>
#include <stdint.h>

#include "core/cpu_level.h"
#include "quanta/engine.h"

typedef void (*qt__attn_kdot_fn)(const void *k, size_t stride, const float *q, int32_t n, int32_t np, float *out);
typedef void (*qt__attn_vacc_fn)(float *acc, const void *v, size_t stride, const float *w, int32_t np, int32_t n);
typedef void (*qt__attn_exp_fn)(float *x, int32_t n);
typedef void (*qt__attn_kdot_heads_fn)(const void *k, size_t stride, const float *q, size_t q_stride, int32_t nh,
                                       int32_t n, int32_t np, float *out, size_t out_stride);
typedef void (*qt__attn_vacc_heads_fn)(float *acc, size_t acc_stride, const void *v, size_t stride, const float *w,
                                       size_t w_stride, int32_t nh, int32_t np, int32_t n);

typedef struct qt__attn_kernels {
    qt_kv_type kv;                  /* QT_KV_TYPE_COUNT: the row that ends the table */
    qt__cpu_level level;            /* runs where qt__cpu_level_get() >= level */
    qt__attn_kdot_fn kdot;
    qt__attn_vacc_fn vacc;
    qt__attn_exp_fn exp;
    qt__attn_kdot_heads_fn kdot_heads;
    qt__attn_vacc_heads_fn vacc_heads;
} qt__attn_kernels;

/* Every variant, scalar references (level QT__CPU_SCALAR) included, for tests and benchmarks. */
extern const qt__attn_kernels qt__attn_variants[];
/* The kernels of the highest level at or below the CPU's for format kv. */
const qt__attn_kernels *qt__attn_kernels_get(qt_kv_type kv);

/* Keys per work item of the split-K (flash-decoding) attention for rows of more than
 * 1024 keys (shorter rows: 32 or 64, attn.c): a function of the row's length only, so
 * the partition, and with it every bit, is the same at any thread count. */
#define QT_ATTN_BLOCK 128

/* AVX2 + FMA + F16C variants (attn_avx2.c) */
void qt__attn_kdot_f32_avx2(const void *k, size_t stride, const float *q, int32_t n, int32_t np, float *out);
void qt__attn_kdot_f16_avx2(const void *k, size_t stride, const float *q, int32_t n, int32_t np, float *out);
void qt__attn_kdot_bf16_avx2(const void *k, size_t stride, const float *q, int32_t n, int32_t np, float *out);
void qt__attn_kdot_e4m3_avx2(const void *k, size_t stride, const float *q, int32_t n, int32_t np, float *out);
void qt__attn_kdot_e5m2_avx2(const void *k, size_t stride, const float *q, int32_t n, int32_t np, float *out);
void qt__attn_kdot_i8_avx2(const void *k, size_t stride, const float *q, int32_t n, int32_t np, float *out);
void qt__attn_vacc_f32_avx2(float *acc, const void *v, size_t stride, const float *w, int32_t np, int32_t n);
void qt__attn_vacc_f16_avx2(float *acc, const void *v, size_t stride, const float *w, int32_t np, int32_t n);
void qt__attn_vacc_bf16_avx2(float *acc, const void *v, size_t stride, const float *w, int32_t np, int32_t n);
void qt__attn_vacc_e4m3_avx2(float *acc, const void *v, size_t stride, const float *w, int32_t np, int32_t n);
void qt__attn_vacc_e5m2_avx2(float *acc, const void *v, size_t stride, const float *w, int32_t np, int32_t n);
void qt__attn_vacc_i8_avx2(float *acc, const void *v, size_t stride, const float *w, int32_t np, int32_t n);
void qt__attn_exp_avx2(float *x, int32_t n);
void qt__attn_kdot_heads_f32_avx2(const void *k, size_t stride, const float *q, size_t q_stride, int32_t nh, int32_t n,
                                  int32_t np, float *out, size_t out_stride);
void qt__attn_vacc_heads_f32_avx2(float *acc, size_t acc_stride, const void *v, size_t stride, const float *w,
                                  size_t w_stride, int32_t nh, int32_t np, int32_t n);
void qt__attn_kdot_heads_f16_avx2(const void *k, size_t stride, const float *q, size_t q_stride, int32_t nh, int32_t n,
                                  int32_t np, float *out, size_t out_stride);
void qt__attn_vacc_heads_f16_avx2(float *acc, size_t acc_stride, const void *v, size_t stride, const float *w,
                                  size_t w_stride, int32_t nh, int32_t np, int32_t n);
void qt__attn_kdot_heads_bf16_avx2(const void *k, size_t stride, const float *q, size_t q_stride, int32_t nh, int32_t n,
                                  int32_t np, float *out, size_t out_stride);
void qt__attn_vacc_heads_bf16_avx2(float *acc, size_t acc_stride, const void *v, size_t stride, const float *w,
                                  size_t w_stride, int32_t nh, int32_t np, int32_t n);
void qt__attn_kdot_heads_e4m3_avx2(const void *k, size_t stride, const float *q, size_t q_stride, int32_t nh, int32_t n,
                                  int32_t np, float *out, size_t out_stride);
void qt__attn_vacc_heads_e4m3_avx2(float *acc, size_t acc_stride, const void *v, size_t stride, const float *w,
                                  size_t w_stride, int32_t nh, int32_t np, int32_t n);
void qt__attn_kdot_heads_e5m2_avx2(const void *k, size_t stride, const float *q, size_t q_stride, int32_t nh, int32_t n,
                                  int32_t np, float *out, size_t out_stride);
void qt__attn_vacc_heads_e5m2_avx2(float *acc, size_t acc_stride, const void *v, size_t stride, const float *w,
                                  size_t w_stride, int32_t nh, int32_t np, int32_t n);
void qt__attn_kdot_heads_i8_avx2(const void *k, size_t stride, const float *q, size_t q_stride, int32_t nh, int32_t n,
                                  int32_t np, float *out, size_t out_stride);
void qt__attn_vacc_heads_i8_avx2(float *acc, size_t acc_stride, const void *v, size_t stride, const float *w,
                                  size_t w_stride, int32_t nh, int32_t np, int32_t n);

/* The exp polynomial, one value (the reference the vector versions equal). */
float qt__attn_exp1(float x);

#endif
