/* lib/quant/dispatch.c — the one place where CPU features pick kernels.
 *
 * Runs once (pthread_once, on the first qt_type_get or ct int4 call). The
 * traits table (traits.c) and the variants table (variants.c) are both const;
 * the resolved view built here is what qt_type_get() hands out: each row is
 * its traits row with `to_float` = the reference, then, level by level up to
 * the CPU's (qt__cpu_level_get, honouring QUANTA_CPU), every field a variant
 * supplies.
 */
#include <pthread.h>

#include "traits_internal.h"
#include "variants.h"

static qt_type_traits active[QT_TYPE_COUNT];
static qt__ct_int4_row_fn ct_int4_kernel = qt__ct_int4_row_ref;
static qt__gemm_fn gemm_kernels[QT_TYPE_COUNT]; /* NULL: none at this level */
static qt__gemm_fn gemm_fast_kernels[QT_TYPE_COUNT];
static qt__gemm_x16_fn gemm_x16_kernels[QT_TYPE_COUNT];
static qt__gemm_x16_fn gemm_k16_kernels[QT_TYPE_COUNT];
static int gemm_min_batch[QT_TYPE_COUNT];
static qt__act_q8s_fn act_q8s_kernel = qt__act_q8s_ref;
static qt__act_q8_0_fn act_q8_0_kernel = qt__act_q8_0_ref;
static qt__act_row_fn act_f16_kernel = qt__act_f16_ref, act_f16_f32_kernel = qt__act_f16_f32_ref;
static qt__gemm_fn gemm_fast_a32_kernels[QT_TYPE_COUNT];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void apply(const qt__kernel_variant *v) {
    if (v->type == QT_TYPE_COUNT) {
        if (v->ct_int4_row) ct_int4_kernel = v->ct_int4_row;
        return;
    }
    qt_type_traits *t = &active[v->type];
    if (v->to_float) t->to_float = v->to_float;
    if (v->from_float) t->from_float = v->from_float;
    if (v->vec_dot) t->vec_dot = v->vec_dot;
    if (v->vec_dot_gemm) t->vec_dot_gemm = v->vec_dot_gemm;
    if (v->gemm) {
        gemm_kernels[v->type] = v->gemm;
        gemm_min_batch[v->type] = v->gemm_min_batch > 1 ? v->gemm_min_batch : 1;
    }
    if (v->gemm_fast) gemm_fast_kernels[v->type] = v->gemm_fast;
    if (v->gemm_x16) gemm_x16_kernels[v->type] = v->gemm_x16;
    if (v->gemm_k16) gemm_k16_kernels[v->type] = v->gemm_k16;
    if (v->act_q8s) act_q8s_kernel = v->act_q8s;
    if (v->act_q8_0) act_q8_0_kernel = v->act_q8_0;
    if (v->act_f16) act_f16_kernel = v->act_f16;
    if (v->act_f16_f32) act_f16_f32_kernel = v->act_f16_f32;
    if (v->gemm_fast_a32) gemm_fast_a32_kernels[v->type] = v->gemm_fast_a32;
}

static void resolve(void) {
    for (int t = 0; t < QT_TYPE_COUNT; t++) {
        active[t] = qt__traits[t];
        active[t].to_float = qt__traits[t].to_float_ref;
    }
    const qt__cpu_level cpu = qt__cpu_level_get();
    for (int level = QT__CPU_AVX2; level <= (int)cpu; level++)
        for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++)
            if ((int)v->level == level) apply(v);
}

const qt_type_traits *qt__traits_dispatched(qt_type t) {
    pthread_once(&once, resolve);
    return &active[t];
}

qt__ct_int4_row_fn qt__ct_int4_row_kernel(void) {
    pthread_once(&once, resolve);
    return ct_int4_kernel;
}

qt__gemm_fn qt__gemm_kernel(qt_type t) {
    pthread_once(&once, resolve);
    return (unsigned)t < QT_TYPE_COUNT ? gemm_kernels[t] : NULL;
}

qt__gemm_fn qt__gemm_kernel_fast(qt_type t) {
    pthread_once(&once, resolve);
    if ((unsigned)t >= QT_TYPE_COUNT) return NULL;
    return gemm_fast_kernels[t] ? gemm_fast_kernels[t] : gemm_kernels[t];
}

int qt__gemm_min_batch(qt_type t) {
    pthread_once(&once, resolve);
    return (unsigned)t < QT_TYPE_COUNT && gemm_min_batch[t] > 0 ? gemm_min_batch[t] : 1;
}

qt__gemm_x16_fn qt__gemm_x16_kernel(qt_type t) {
    pthread_once(&once, resolve);
    return (unsigned)t < QT_TYPE_COUNT ? gemm_x16_kernels[t] : NULL;
}

qt__gemm_x16_fn qt__gemm_k16_kernel(qt_type t) {
    pthread_once(&once, resolve);
    return (unsigned)t < QT_TYPE_COUNT ? gemm_k16_kernels[t] : NULL;
}

void qt__act_q8s(const float *x, qt__block_q8s *y, int64_t n) {
    pthread_once(&once, resolve);
    act_q8s_kernel(x, y, n);
}

void qt__act_q8_0(const float *x, void *y, int64_t n) {
    pthread_once(&once, resolve);
    act_q8_0_kernel(x, y, n);
}

void qt__act_f16(const float *x, void *y, int64_t n) {
    pthread_once(&once, resolve);
    act_f16_kernel(x, y, n);
}

void qt__act_f16_f32(const float *x, void *y, int64_t n) {
    pthread_once(&once, resolve);
    act_f16_f32_kernel(x, y, n);
}

qt__gemm_fn qt__gemm_kernel_fast_a32(qt_type t) {
    pthread_once(&once, resolve);
    return (unsigned)t < QT_TYPE_COUNT ? gemm_fast_a32_kernels[t] : NULL;
}
