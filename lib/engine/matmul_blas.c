/* lib/engine/matmul_blas.c — the calibration's products on f32 weight values
 * through OpenBLAS sgemm (qt__layerwise_set_blas; docs/gptq.md "Where the time goes").
 *
 * A calibrated run onto a compressed-tensors scheme runs the rest of its
 * calibration batch on the quantized layer: the 4-bit rows of lib/quant/ct4.h
 * or their f32 values (a replayed layer, W8A8/FP8 schemes). Those products
 * are weight-only, f32 activations (vLLM's w*a16); the engine's own f32 order
 * (tinyBLAS's, one dot per element) reached ~25 GFLOP per CPU second where this
 * path reaches ~65 with the dequantization (docs/gptq.md "Where the time goes",
 * the Zen 4 VM, loaded), and the engine's int8-activation kernel for groups of
 * 128 is not w4a16's arithmetic. Here the output rows go in fixed
 * units of QT__BLAS_ROWS: each unit's weight rows are dequantized once into
 * the thread's scratch (f32 rows are used in place), then one single-threaded
 * sgemm multiplies the B activation rows by them. The unit split depends on
 * the shape only, and every unit is one sgemm call of the same shape whatever
 * thread runs it, so the bits are the same at any --threads; a packed row and
 * its f32 values give the same bits too (the same arrays reach sgemm), so a
 * resumed run's replayed layer matches the live one. The bits are OpenBLAS's:
 * they can differ across CPUs (its kernel is chosen per CPU at run time).
 */
#include <cblas.h>
#include <stdlib.h>

#include "core/blas.h"
#include "engine_internal.h"

typedef struct blas_job {
    qt_engine_ctx *e;
    const qt__mat *m;
    float *out;                 /* (B, n_out) */
    const float *in;            /* (B, n_in) */
    int32_t B;
} blas_job;

static void blas_units(void *ctx, int64_t u0, int64_t u1, int ti) {
    const blas_job *j = ctx;
    const qt__mat *m = j->m;
    const int64_t K = m->n_in;
    for (int64_t u = u0; u < u1; u++) {
        const int64_t r0 = u * QT__BLAS_ROWS, nr = m->n_out - r0 < QT__BLAS_ROWS ? m->n_out - r0 : QT__BLAS_ROWS;
        const uint8_t *src = m->data + (size_t)r0 * m->row_bytes;
        const float *w = (const float *)src;
        if (m->dequant_rows) { /* packed rows (F32 rows are used in place; m->t may not outlive the bind) */
            float *buf = j->e->blas_w + (size_t)ti * QT__BLAS_ROWS * (size_t)j->e->blas_w_n;
            for (int64_t r = 0; r < nr; r++) m->tr->to_float(src + (size_t)r * m->row_bytes, buf + r * K, K);
            w = buf;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)j->B, (int)nr, (int)K, 1.0f, j->in, (int)K, w, (int)K,
                    0.0f, j->out + r0, (int)m->n_out);
    }
}

bool qt__mat_blas_type(qt_type t) {
    const qt_type_traits *tr = qt_type_get(t);
    return t == QT_TYPE_F32 || (tr && tr->engine_only && tr->vec_dot_type == QT_TYPE_F32 && tr->to_float);
}

void qt__matmul_blas(qt_engine_ctx *e, float *out, const float *in, int32_t B, const qt__mat *m, bool small) {
    qt__blas_pin(); /* one thread: its own would split the sums by their count (lib/core/blas.c) */
    blas_job j = {e, m, out, in, B};
    qt_parallel_for(small ? NULL : e->pool, (m->n_out + QT__BLAS_ROWS - 1) / QT__BLAS_ROWS, blas_units, &j);
}
