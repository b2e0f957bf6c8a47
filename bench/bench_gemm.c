/* bench_gemm — the engine's matmul kernels on Llama-3.2-1B's matrix shapes:
 * a weight matrix (rows x cols) against a batch of B quantized activation
 * rows (B = 1 is decode, larger B prefill), single thread. For each weight
 * type with a blocked kernel (lib/quant/gemm.h) it times
 *   "dots": one vec_dot call per output element (the dispatched kernel;
 *           the engine's path before the blocked kernels), and
 *   each gemm variant of lib/quant/variants.c that runs here, and each
 *   gemm_fast variant ("fast": --numerics fast's own float order), and each
 *   x16 variant ("x16": --numerics fast on rows packed once, with q8s
 *   activations; its bits are its own order's, test_engine_dot), and at
 *   batch 1 the x16 order's scalar reference on the packed rows ("x16 ref",
 *   vs_ref = its cpu_s / the variant's).
 * Both give the same bits (test_engine_dot); only speed differs. Prints one
 * JSON document on stdout: per type, shape and batch, the median over --reps
 * of thread CPU seconds (cpu_s: the kernel's cost even on a shared machine)
 * and wall seconds, with gflops (2 * multiply-adds / cpu_s / 1e9),
 * weight_gbps (the weight matrix's bytes / cpu_s / 1e9: the read rate a decode
 * step needs, to set against the machine's bandwidth) and vs_dots (the dots
 * cpu_s / this cpu_s).
 *
 * --x16-only times only the x16 kernels (vs_dots is then absent); --shape
 * SUBSTR (repeatable) picks shapes by name; "output" (the 128256 x 2048 tied
 * embedding, 263 MB as q8_0) runs only when named so.
 *
 *   bench_gemm [--reps N] [--batch B ...] [--type NAME ...] [--shape SUBSTR ...] [--x16-only]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quanta.h"
#include "bench_util.h"
#include "quant/dot.h"
#include "quant/gemm.h"
#include "quant/variants.h"

typedef struct { const char *name; int64_t rows, cols; int named_only; } shape;

/* Llama-3.2-1B (config.json: hidden 2048, intermediate 8192, 8 KV heads of 64) */
static const shape shapes[] = {
    {"attn_q/attn_output 2048x2048", 2048, 2048, 0},
    {"ffn_gate/ffn_up 8192x2048", 8192, 2048, 0},
    {"ffn_down 2048x8192", 2048, 8192, 0},
    {"output 128256x2048", 128256, 2048, 1}, /* only with --shape output: 0.5 s a call at B = 512 */
};

static qt_vec_dot_fn dots_fn; /* the vec_dot the "dots" loop calls */
static void gemm_by_dots(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                         float *out, int64_t ldo) {
    qt__gemm_dots(dots_fn, w, ldw, nr, a, lda, nc, n, out, ldo);
}

static void time_x16(qt__gemm_x16_fn g, const uint8_t *wp, int64_t rows, const uint8_t *a, size_t lda, int64_t B,
                     int64_t cols, float *out, int reps, double *cpu, double *wall) {
    double tc[MAX_REPS], tw[MAX_REPS];
    for (int r = 0; r < reps; r++) {
        const double c0 = thread_cpu_s(), w0 = now_s();
        g(wp, rows, a, lda, B, cols, out, rows);
        tc[r] = thread_cpu_s() - c0;
        tw[r] = now_s() - w0;
    }
    *cpu = median(tc, reps);
    *wall = median(tw, reps);
}

static void time_gemm(qt__gemm_fn g, const uint8_t *w, size_t ldw, int64_t rows, const uint8_t *a, size_t lda, int64_t B,
                      int64_t cols, float *out, int reps, double *cpu, double *wall) {
    double tc[MAX_REPS], tw[MAX_REPS];
    for (int r = 0; r < reps; r++) {
        const double c0 = thread_cpu_s(), w0 = now_s();
        g(w, ldw, rows, a, lda, B, cols, out, rows);
        tc[r] = thread_cpu_s() - c0;
        tw[r] = now_s() - w0;
    }
    *cpu = median(tc, reps);
    *wall = median(tw, reps);
}

int main(int argc, char **argv) {
    int reps = 3, nbatch = 0, ntypes = 0, nshapes = 0, x16_only = 0;
    int64_t batches[16];
    const char *types[16], *shape_names[16];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc && nbatch < 16) batches[nbatch++] = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--type") && i + 1 < argc && ntypes < 16) types[ntypes++] = argv[++i];
        else if (!strcmp(argv[i], "--shape") && i + 1 < argc && nshapes < 16) shape_names[nshapes++] = argv[++i];
        else if (!strcmp(argv[i], "--x16-only")) x16_only = 1;
        else {
            fprintf(stderr, "usage: bench_gemm [--reps N (1-%d)] [--batch B]... [--type NAME]... [--shape SUBSTR]... "
                            "[--x16-only]\n", MAX_REPS);
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    if (reps < 1 || reps > MAX_REPS) { fprintf(stderr, "bench_gemm: --reps must be 1..%d\n", MAX_REPS); return 2; }
    if (!nbatch) { batches[0] = 1; batches[1] = 16; batches[2] = 128; nbatch = 3; }
    for (int i = 0; i < nbatch; i++)
        if (batches[i] < 1 || batches[i] > 4096) { fprintf(stderr, "bench_gemm: --batch must be 1..4096\n"); return 2; }
    const qt_type all[] = {QT_TYPE_F16,  QT_TYPE_BF16,   QT_TYPE_Q8_0, QT_TYPE_Q4_0, QT_TYPE_Q4_1, QT_TYPE_Q5_0,
                           QT_TYPE_Q5_1, QT_TYPE_IQ4_NL, QT_TYPE_Q2_K, QT_TYPE_Q3_K, QT_TYPE_Q4_K, QT_TYPE_Q5_K,
                           QT_TYPE_Q6_K, QT_TYPE_IQ4_XS};
    printf("{\n  \"machine\": {\"cpu_level\": \"%s\", \"threads\": 1},\n  \"config\": {\"reps\": %d},\n  \"results\": [",
           qt_cpu_level_name(), reps);
    int first = 1;
    for (size_t ti = 0; ti < sizeof all / sizeof all[0]; ti++) {
        const qt_type t = all[ti];
        const qt_type_traits *tr = qt_type_get(t), *vt = qt_type_get(tr->vec_dot_type);
        int want = !ntypes;
        for (int k = 0; k < ntypes; k++) want |= !strcmp(types[k], tr->name);
        if (!want) continue;
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const shape *sh = &shapes[si];
            int pick = !nshapes && !sh->named_only;
            for (int k = 0; k < nshapes; k++) pick |= strstr(sh->name, shape_names[k]) != NULL;
            if (!pick || (x16_only && !qt__x16_bytes(t, sh->rows, sh->cols))) continue;
            int64_t maxb = 1;
            for (int i = 0; i < nbatch; i++) maxb = batches[i] > maxb ? batches[i] : maxb;
            const size_t ldw = qt_row_size(t, sh->cols), lda = qt_row_size(vt->type, sh->cols);
            uint8_t *w = xmalloc(ldw * (size_t)sh->rows), *a = xmalloc(lda * (size_t)maxb);
            float *src = xmalloc((size_t)sh->cols * sizeof *src), *out = xmalloc((size_t)(sh->rows * maxb) * sizeof *out);
            for (int64_t r = 0; r < sh->rows; r++) {
                for (int64_t i = 0; i < sh->cols; i++) src[i] = 0.01f * (float)((r * 131 + i * 31) % 97 - 48);
                if (qt_quantize_rows(t, src, w + (size_t)r * ldw, 1, sh->cols, NULL) != QT_OK) return 1;
            }
            for (int64_t b = 0; b < maxb; b++) {
                for (int64_t i = 0; i < sh->cols; i++) src[i] = 0.1f * (float)((b * 17 + i * 7) % 23 - 11);
                if (!qt__act_quantize(vt->type, src, a + (size_t)b * lda, sh->cols)) return 1;
            }
            /* the x16 copy and q8s activations, where the type has a packer */
            const size_t xb = qt__x16_bytes(t, sh->rows, sh->cols), lds = (size_t)(sh->cols / 32) * sizeof(qt__block_q8s);
            uint8_t *wp = xb ? xmalloc(xb) : NULL, *xs = xb ? xmalloc(lds * (size_t)maxb) : NULL;
            if (wp) {
                qt__x16_pack(t, w, ldw, sh->rows, sh->cols, wp);
                for (int64_t b = 0; b < maxb; b++) {
                    for (int64_t i = 0; i < sh->cols; i++) src[i] = 0.1f * (float)((b * 17 + i * 7) % 23 - 11);
                    qt__act_q8s(src, (qt__block_q8s *)(xs + (size_t)b * lds), sh->cols);
                }
            }
            for (int bi = 0; bi < nbatch; bi++) {
                const int64_t B = batches[bi];
                const double flop = 2.0 * (double)sh->rows * (double)sh->cols * (double)B;
                const double wbytes = (double)ldw * (double)sh->rows; /* weight bytes streamed per call */
                dots_fn = tr->vec_dot;
                double dots_cpu = 0, wall;
                if (!x16_only) {
                    time_gemm(gemm_by_dots, w, ldw, sh->rows, a, lda, B, sh->cols, out, reps, &dots_cpu, &wall);
                    printf("%s\n    {\"type\": \"%s\", \"shape\": \"%s\", \"batch\": %lld, \"kernel\": \"dots %s\", "
                           "\"cpu_s\": %.6f, \"wall_s\": %.6f, \"gflops\": %.3f, \"weight_gbps\": %.2f, \"vs_dots\": 1.00}",
                           first ? "" : ",", tr->name, sh->name, (long long)B, qt_cpu_level_name(), dots_cpu, wall,
                           flop / dots_cpu / 1e9, wbytes / dots_cpu / 1e9);
                    first = 0;
                    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
                        if (v->type != t || v->level > qt__cpu_level_get()) continue;
                        for (int fast = 0; fast < 2; fast++) {
                            const qt__gemm_fn g = fast ? v->gemm_fast : v->gemm;
                            if (!g) continue;
                            double cpu;
                            time_gemm(g, w, ldw, sh->rows, a, lda, B, sh->cols, out, reps, &cpu, &wall);
                            printf(",\n    {\"type\": \"%s\", \"shape\": \"%s\", \"batch\": %lld, \"kernel\": \"gemm%s %s\", "
                                   "\"cpu_s\": %.6f, \"wall_s\": %.6f, \"gflops\": %.3f, \"weight_gbps\": %.2f, \"vs_dots\": %.2f}",
                                   tr->name, sh->name, (long long)B, fast ? " fast" : "", qt__cpu_level_str(v->level), cpu, wall,
                                   flop / cpu / 1e9, wbytes / cpu / 1e9, dots_cpu / cpu);
                        }
                    }
                } /* !x16_only */
                if (xs) {
                    double ref_cpu = 0;
                    qt__gemm_x16_fn ref = NULL;
                    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++)
                        if (v->type == t && v->gemm_x16_ref) ref = v->gemm_x16_ref;
                    if (B == 1 && ref && !x16_only) {
                        time_x16(ref, wp, sh->rows, xs, lds, B, sh->cols, out, reps, &ref_cpu, &wall);
                        printf(",\n    {\"type\": \"%s\", \"shape\": \"%s\", \"batch\": 1, \"kernel\": \"x16 ref\", "
                               "\"cpu_s\": %.6f, \"wall_s\": %.6f, \"gflops\": %.3f, \"vs_dots\": %.2f}",
                               tr->name, sh->name, ref_cpu, wall, flop / ref_cpu / 1e9, dots_cpu / ref_cpu);
                    }
                    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
                        if (v->type != t || v->level > qt__cpu_level_get() || !v->gemm_x16) continue;
                        double cpu;
                        time_x16(v->gemm_x16, wp, sh->rows, xs, lds, B, sh->cols, out, reps, &cpu, &wall);
                        printf("%s\n    {\"type\": \"%s\", \"shape\": \"%s\", \"batch\": %lld, \"kernel\": \"x16 %s\", "
                               "\"cpu_s\": %.6f, \"wall_s\": %.6f, \"gflops\": %.3f",
                               first ? "" : ",", tr->name, sh->name, (long long)B, qt__cpu_level_str(v->level), cpu, wall,
                               flop / cpu / 1e9);
                        first = 0;
                        if (!x16_only) printf(", \"vs_dots\": %.2f", dots_cpu / cpu);
                        if (B == 1 && !x16_only) printf(", \"vs_ref\": %.2f", ref_cpu / cpu);
                        printf("}");
                    }
                }
                fflush(stdout);
            }
            free(w); free(a); free(src); free(out); free(wp); free(xs);
        }
        fprintf(stderr, "bench_gemm: %s done\n", tr->name);
    }
    printf("\n  ]\n}\n");
    return 0;
}
