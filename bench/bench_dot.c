/* bench_dot — the engine's dot kernels (lib/quant/dot*.c): one weight matrix
 * (rows x 4096) against one activation row (decode:
 * ggml_vec_dot's order) and against 8 rows (prefill: the tinyBLAS order where
 * the type has one), at each SIMD level this CPU runs, single thread. Prints
 * one JSON document on stdout.
 *
 *   weights_gbps   = bytes of weight rows read per second
 *   gflops         = 2 * multiply-adds per second / 1e9
 *   vs_scalar      = the same figure for the scalar reference = 1
 *   vs_bandwidth   = weights_gbps / the measured read bandwidth (decode is
 *                    bound by it on real models)
 * Every figure is the median of --reps runs (default 5); the default matrix
 * (16384 rows, 256 MiB as f32) is meant to exceed the caches, so decode
 * figures near vs_bandwidth 1 are memory-bound. The kernels give the
 * same bits at every level (test_engine_dot); only speed differs.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quanta.h"
#include "bench_util.h"
#include "quant/dot.h"
#include "quant/variants.h"

#define COLS 4096
#define BATCH 8

typedef struct {
    const char *level;
    qt_vec_dot_fn dot, gemm; /* gemm NULL: the type has one order */
} kernels;

/* Seconds for all rows against `batch` activation rows. */
static double time_matmul(qt_vec_dot_fn f, const uint8_t *w, size_t row_bytes, int64_t rows, const uint8_t *act,
                          size_t act_bytes, int batch, float *out) {
    const double t0 = now_s();
    for (int64_t r = 0; r < rows; r++)
        for (int b = 0; b < batch; b++) out[b] += f(w + (size_t)r * row_bytes, act + (size_t)b * act_bytes, COLS);
    return now_s() - t0;
}

/* A compressed-tensors row (lib/quant/ct_rows.h) from f32: per-row scales as the activation
 * quantizer of the same layout computes them (ct_f8: its act row, input scale 0 = dynamic). */
static void ct_weight_row(qt_type t, const float *src, uint8_t *dst) {
    if (t != QT_TYPE_CT_F8) {
        if (!qt__act_quantize(t, src, dst, COLS)) exit(1);
        return;
    }
    uint8_t tmp[4 + COLS];
    if (!qt__act_quantize(QT_TYPE_CT_F8_ACT, src, tmp, COLS)) exit(1);
    memcpy(dst, tmp, 4);
    memset(dst + 4, 0, 4);
    memcpy(dst + 8, tmp + 4, COLS);
}

static void bench_type(qt_type t, const kernels *k, int nk, int64_t rows, int reps, double bw, bool first) {
    const qt_type_traits *tr = qt_type_get(t), *vt = qt_type_get(tr->vec_dot_type);
    const size_t row_bytes = qt_row_size(t, COLS), act_bytes = qt_row_size(vt->type, COLS);
    float *src = xmalloc(COLS * sizeof *src);
    uint8_t *w = xmalloc(row_bytes * (size_t)rows), *act = xmalloc(act_bytes * BATCH);
    for (int64_t r = 0; r < rows; r++) {
        for (int i = 0; i < COLS; i++) src[i] = 0.01f * (float)((r * 131 + i * 31) % 97 - 48);
        if (tr->engine_only) ct_weight_row(t, src, w + (size_t)r * row_bytes);
        else if (qt_quantize_rows(t, src, w + (size_t)r * row_bytes, 1, COLS, NULL) != QT_OK) exit(1);
    }
    for (int b = 0; b < BATCH; b++) {
        for (int i = 0; i < COLS; i++) src[i] = 0.1f * (float)((b * 17 + i * 7) % 23 - 11);
        if (!qt__act_quantize(vt->type, src, act + (size_t)b * act_bytes, COLS)) exit(1);
    }
    printf("%s    {\"type\": \"%s\", \"rows\": %lld, \"cols\": %d, \"results\": [", first ? "" : ",\n", tr->name,
           (long long)rows, COLS);
    double base[2] = {0, 0};
    float out[BATCH] = {0};
    for (int i = 0; i < nk; i++) {
        for (int mode = 0; mode < 2; mode++) { /* 0: decode (1 row, vec_dot), 1: prefill (BATCH rows) */
            const int batch = mode ? BATCH : 1;
            const qt_vec_dot_fn f = mode && k[i].gemm ? k[i].gemm : k[i].dot;
            double tm[MAX_REPS];
            for (int r = 0; r < reps; r++) tm[r] = time_matmul(f, w, row_bytes, rows, act, act_bytes, batch, out);
            const double s = median(tm, reps);
            const double gflops = 2.0 * (double)rows * COLS * batch / s / 1e9;
            const double gbps = (double)row_bytes * (double)rows / s / 1e9;
            if (i == 0) base[mode] = gflops;
            printf("%s\n       {\"level\": \"%s\", \"mode\": \"%s\", \"gflops\": %.3f, \"weights_gbps\": %.3f, "
                   "\"vs_scalar\": %.2f, \"vs_bandwidth\": %.3f}",
                   i || mode ? "," : "", k[i].level, mode ? "prefill" : "decode", gflops, gbps, gflops / base[mode],
                   gbps / bw);
        }
    }
    printf("]}");
    fprintf(stderr, "bench_dot: %s done (checksum %g)\n", tr->name, (double)out[0]);
    free(src); free(w); free(act);
}

int main(int argc, char **argv) {
    int reps = 5;
    int64_t rows = 16384; /* 256 MiB of f32 weights: beyond the caches */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc) rows = atoll(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_dot [--reps N (1-%d)] [--rows N]\n", MAX_REPS);
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    if (reps < 1 || reps > MAX_REPS || rows < 1) {
        fprintf(stderr, "bench_dot: --reps must be 1..%d and --rows positive\n", MAX_REPS);
        return 2;
    }
    const double bw = read_bandwidth_gbps(reps);
    printf("{\n  \"machine\": {\"cpu_level\": \"%s\", \"read_bandwidth_gbps\": %.3f, \"threads\": 1},\n",
           qt_cpu_level_name(), bw);
    printf("  \"config\": {\"rows\": %lld, \"cols\": %d, \"prefill_batch\": %d, \"reps\": %d},\n  \"types\": [\n",
           (long long)rows, COLS, BATCH, reps);
    /* the scalar references, then every dot variant of lib/quant/variants.c that runs here */
    const qt_type types[] = {QT_TYPE_F32,  QT_TYPE_F16,  QT_TYPE_Q8_0, QT_TYPE_Q4_0, QT_TYPE_Q4_1,   QT_TYPE_Q5_0,
                             QT_TYPE_Q5_1, QT_TYPE_Q2_K, QT_TYPE_Q3_K, QT_TYPE_Q4_K, QT_TYPE_Q5_K,   QT_TYPE_Q6_K,
                             QT_TYPE_IQ4_NL, QT_TYPE_IQ4_XS,
                             QT_TYPE_CT_I8, QT_TYPE_CT_F8, QT_TYPE_CT_F8_BLOCK}; /* W8A8 rows (docs/w8a8.md) */
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        kernels k[QT__CPU_LEVEL_COUNT] = {{"scalar", qt__traits_ref(types[ti])->vec_dot, qt__traits_ref(types[ti])->vec_dot_gemm}};
        int nk = 1;
        for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++)
            if (v->type == types[ti] && v->vec_dot && v->level <= qt__cpu_level_get() && nk < QT__CPU_LEVEL_COUNT)
                k[nk++] = (kernels){qt__cpu_level_str(v->level), v->vec_dot, v->vec_dot_gemm};
        bench_type(types[ti], k, nk, rows, reps, bw, ti == 0);
    }
    printf("\n  ]\n}\n");
    return 0;
}
