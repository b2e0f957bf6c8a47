/* bench_gemm — the engine's matmul kernels on Llama-3.2-1B's matrix shapes:
 * a weight matrix (rows x cols) against a batch of B quantized activation
 * rows (B = 1 is decode, larger B prefill), single thread. For each weight
 * type with a blocked kernel (lib/quant/gemm.h) it times
 *   "dots": one vec_dot call per output element (the dispatched kernel;
 *           the engine's path before the blocked kernels), and
 *   each gemm variant of lib/quant/variants.c that runs here, and each
 *   gemm_fast variant ("fast": --numerics fast's own float order), for F16
 *   each gemm_fast_a32 variant ("fast a32": the same order on f32 rows of the
 *   activations' f16 values, qt__act_f16_f32; conversion not timed), and each
 *   x16 variant ("x16": --numerics fast on rows packed once, with q8s
 *   activations; its bits are its own order's, test_engine_dot), and at
 *   batch 1 the x16 order's scalar reference on the packed rows ("x16 ref",
 *   vs_ref = its cpu_s / the variant's), and
 *   each k16 variant ("k16": the K-quants packed 16 rows per tile, gemm_k16.h,
 *           gemm_fast's bits) and at batch 1 its scalar reference ("k16 ref").
 * --output adds Llama-3.2-1B's output matrix (128256 x 2048; try --batch 1).
 * Both give the same bits (test_engine_dot); only speed differs. The
 * weight-only compressed-tensors 4-bit rows (lib/quant/ct4.h: ct_w4_g128,
 * ct_nvfp4, ct_mxfp4) are timed against f32 activations as the engine runs
 * them: "f32 rows" is the old dequantize-on-load path (the f32 weights, the
 * f32 dots), "fused L" each fused dot variant on the packed rows (decode),
 * "dequant rows" the engine's batch path (each packed row dequantized once,
 * then the f32 dots), "gemm L" the blocked kernels (batches); weight_gbps counts each path's own
 * weight bytes. Prints one
 * JSON document on stdout: per type, shape and batch, the median over --reps
 * of thread CPU seconds (cpu_s: the kernel's cost even on a shared machine)
 * and wall seconds, with gflops (2 * multiply-adds / cpu_s / 1e9),
 * weight_gbps (the weight matrix's bytes / cpu_s / 1e9: the read rate a decode
 * step needs, to set against the machine's bandwidth) and vs_dots (the dots
 * cpu_s / this cpu_s).
 *
 * --small-pages puts the x16/k16 copies in 4 KiB pages instead of the engine's huge pages
 * (config.pages in the JSON), to measure what the pages cost decode.
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
#include "core/bigalloc.h"
#include "quant/ct4.h"
#include "quant/dot.h"
#include "quant/gemm.h"
#include "quant/gemm_f16.h"
#include "quant/gemm_k16.h"
#include "quant/variants.h"

typedef struct { const char *name; int64_t rows, cols; int named_only; } shape;

/* Llama-3.2-1B (config.json: hidden 2048, intermediate 8192, 8 KV heads of 64) */
static const shape shapes[] = {
    {"attn_q/attn_output 2048x2048", 2048, 2048, 0},
    {"ffn_gate/ffn_up 8192x2048", 8192, 2048, 0},
    {"ffn_down 2048x8192", 2048, 8192, 0},
    {"output 128256x2048", 128256, 2048, 1}, /* only with --output or --shape output: 0.5 s a call at B = 512 */
};

/* The packed copies as the engine holds them (2 MiB pages asked for, core/bigalloc.h), or with
 * --small-pages in ordinary 4 KiB pages: the difference is decode's TLB and prefetch cost. */
static uint8_t *packed_alloc(size_t n, int small_pages) {
    uint8_t *p = small_pages ? malloc(n) : qt__weights_alloc(n);
    if (!p) { fprintf(stderr, "bench_gemm: out of memory\n"); exit(1); }
    return p;
}

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

/* One ct4 timing: kind 0 the f32 rows, 1 a fused dot, 2 the packed rows dequantized once each,
 * 3 a blocked kernel, 4 --numerics fast's int8 kernel (its activation quantization timed too). */
typedef struct {
    int kind;
    qt_vec_dot_fn dot;     /* kind 1 */
    qt__gemm_fn gemm;      /* kind 3 */
    qt_type t;
    const uint8_t *w;      /* packed rows (kinds 1, 2) or f32 rows (kind 0) */
    size_t ldw;
    float *scratch;        /* one dequantized row (kind 2) */
    uint8_t *q8;           /* B int8 activation rows (kind 4) */
} ct4_run;

static void ct4_call(const ct4_run *c, int64_t rows, const float *a, int64_t B, int64_t cols, float *out) {
    const qt_type_traits *f32 = qt_type_get(QT_TYPE_F32);
    const qt_vec_dot_fn fd = B >= 2 ? f32->vec_dot_gemm : f32->vec_dot;
    if (c->kind == 0) { qt__gemm_dots(fd, c->w, c->ldw, rows, a, (size_t)cols * 4, B, cols, out, rows); return; }
    if (c->kind == 1) { qt__gemm_dots(c->dot, c->w, c->ldw, rows, a, (size_t)cols * 4, B, cols, out, rows); return; }
    if (c->kind == 3) { c->gemm(c->w, c->ldw, rows, a, (size_t)cols * 4, B, cols, out, rows); return; }
    if (c->kind == 4) {
        const size_t lq = qt__ct4_q8_row_size(cols);
        for (int64_t b = 0; b < B; b++) qt__ct4_q8_quantize(a + b * cols, c->q8 + (size_t)b * lq, cols);
        c->gemm(c->w, c->ldw, rows, c->q8, lq, B, cols, out, rows);
        return;
    }
    const qt_type_traits *tr = qt_type_get(c->t);
    for (int64_t r = 0; r < rows; r++) {
        tr->to_float(c->w + (size_t)r * c->ldw, c->scratch, cols);
        qt__gemm_dots(fd, c->scratch, 0, 1, a, (size_t)cols * 4, B, cols, out + r, rows);
    }
}

static void bench_ct4(qt_type t, const shape *sh, const int64_t *batches, int nbatch, int reps, int small_pages, int *first) {
    const qt_type_traits *tr = qt_type_get(t);
    qt__ct4_form f;
    qt__ct4_form_of(t, &f);
    int64_t maxb = 1;
    for (int i = 0; i < nbatch; i++) maxb = batches[i] > maxb ? batches[i] : maxb;
    const int64_t rows = sh->rows, cols = sh->cols;
    const size_t ldw = qt_row_size(t, cols);
    /* the packed rows where the engine holds them (converted at load into core/bigalloc.h's buffers) */
    uint8_t *w = packed_alloc(ldw * (size_t)rows, small_pages), *codes = xmalloc((size_t)cols);
    float *wf = xmalloc((size_t)(rows * cols) * 4), *a = xmalloc((size_t)(maxb * cols) * 4);
    float *out = xmalloc((size_t)(rows * maxb) * 4), *scratch = xmalloc((size_t)cols * 4);
    uint8_t *q8 = xmalloc(qt__ct4_q8_row_size(cols) * (size_t)maxb);
    const float gs = 2000.0f;
    uint32_t word = f.kind == QT_CT4_INT4 ? (uint32_t)QT_CT_BF16 : 0;
    if (f.kind == QT_CT4_NVFP4) memcpy(&word, &gs, 4);
    for (int64_t r = 0; r < rows; r++) {
        uint8_t *row = w + (size_t)r * ldw;
        qt__ct4_set_header(row, word);
        for (int64_t g = 0; g < cols / f.group; g++)
            qt__ct4_set_param(row, &f, g, qt_ct_round_dtype(0.01f * (float)(1 + (r + g) % 7), QT_CT_BF16),
                              (int8_t)((r + g) % 3 - 1), (uint8_t)(f.kind == QT_CT4_NVFP4 ? 0x30 + (r + g) % 9 : 120 + (r + g) % 5));
        for (int64_t i = 0; i < cols; i++) codes[i] = (uint8_t)((r * 131 + i * 31) % 16);
        qt__ct4_set_codes(row, cols, &f, codes);
        tr->to_float(row, wf + (size_t)(r * cols), cols);
    }
    for (int64_t i = 0; i < maxb * cols; i++) a[i] = 0.1f * (float)((i * 7) % 23 - 11);
    for (int bi = 0; bi < nbatch; bi++) {
        const int64_t B = batches[bi];
        const double flop = 2.0 * (double)rows * (double)cols * (double)B;
        ct4_run runs[8];
        const char *names[8];
        int nr = 0;
        runs[nr] = (ct4_run){0, NULL, NULL, t, (const uint8_t *)wf, (size_t)cols * 4, NULL, NULL};
        names[nr++] = "f32 rows";
        for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT && nr < 6; v++) {
            if (v->type != t || v->level > qt__cpu_level_get() || !v->vec_dot || B != 1) continue;
            runs[nr] = (ct4_run){1, v->vec_dot, NULL, t, w, ldw, NULL, NULL};
            names[nr++] = qt__cpu_level_str(v->level);
        }
        for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT && nr < 6; v++) {
            if (v->type != t || v->level > qt__cpu_level_get() || !v->gemm || B == 1) continue;
            runs[nr] = (ct4_run){3, NULL, v->gemm, t, w, ldw, NULL, NULL};
            names[nr++] = qt__cpu_level_str(v->level);
        }
        for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT && nr < 7; v++) {
            if (v->type != t || v->level > qt__cpu_level_get() || !v->gemm_fast) continue;
            runs[nr] = (ct4_run){4, NULL, v->gemm_fast, t, w, ldw, NULL, q8};
            names[nr++] = qt__cpu_level_str(v->level);
        }
        runs[nr] = (ct4_run){2, NULL, NULL, t, w, ldw, scratch, NULL};
        names[nr++] = "dequant rows";
        double base = 0;
        for (int k = 0; k < nr; k++) {
            double tc[MAX_REPS], tw[MAX_REPS];
            for (int rep = 0; rep < reps; rep++) {
                const double c0 = thread_cpu_s(), w0 = now_s();
                ct4_call(&runs[k], rows, a, B, cols, out);
                tc[rep] = thread_cpu_s() - c0;
                tw[rep] = now_s() - w0;
            }
            const double cpu = median(tc, reps), wall = median(tw, reps);
            if (k == 0) base = cpu;
            const double wbytes = (double)runs[k].ldw * (double)rows;
            printf("%s\n    {\"type\": \"%s\", \"shape\": \"%s\", \"batch\": %lld, \"kernel\": \"%s%s\", "
                   "\"cpu_s\": %.6f, \"wall_s\": %.6f, \"gflops\": %.3f, \"weight_gbps\": %.2f, \"vs_f32_rows\": %.2f}",
                   *first ? "" : ",", tr->name, sh->name, (long long)B, runs[k].kind == 1 ? "fused " : runs[k].kind == 3 ? "gemm " : runs[k].kind == 4 ? "fast int8 " : "", names[k], cpu,
                   wall, flop / cpu / 1e9, wbytes / cpu / 1e9, base / cpu);
            *first = 0;
        }
        fflush(stdout);
    }
    if (small_pages) free(w);
    else qt__weights_free(w);
    free(codes); free(wf); free(a); free(out); free(scratch); free(q8);
}

/* Whether a shape runs: every shape not named_only by default (the output matrix too with --output), else
 * those whose name contains one of the --shape strings. */
static int shape_picked(const shape *sh, const char *const *names, int n, int with_output) {
    int pick = !n && (!sh->named_only || with_output);
    for (int k = 0; k < n; k++) pick |= strstr(sh->name, names[k]) != NULL;
    return pick;
}

int main(int argc, char **argv) {
    int reps = 3, nbatch = 0, ntypes = 0, nshapes = 0, x16_only = 0, with_output = 0, small_pages = 0;
    int64_t batches[16];
    const char *types[16], *shape_names[16];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc && nbatch < 16) batches[nbatch++] = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--type") && i + 1 < argc && ntypes < 16) types[ntypes++] = argv[++i];
        else if (!strcmp(argv[i], "--shape") && i + 1 < argc && nshapes < 16) shape_names[nshapes++] = argv[++i];
        else if (!strcmp(argv[i], "--x16-only")) x16_only = 1;
        else if (!strcmp(argv[i], "--output")) with_output = 1;
        else if (!strcmp(argv[i], "--small-pages")) small_pages = 1;
        else {
            fprintf(stderr, "usage: bench_gemm [--reps N (1-%d)] [--batch B]... [--type NAME]... [--shape SUBSTR]... "
                            "[--x16-only] [--output] [--small-pages]\n", MAX_REPS);
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
    printf("{\n  \"machine\": {\"cpu_level\": \"%s\", \"threads\": 1},\n  \"config\": {\"reps\": %d, \"pages\": \"%s\"},\n"
           "  \"results\": [", qt_cpu_level_name(), reps, small_pages ? "4k" : "huge");
    int first = 1;
    for (size_t ti = 0; ti < sizeof all / sizeof all[0]; ti++) {
        const qt_type t = all[ti];
        const qt_type_traits *tr = qt_type_get(t), *vt = qt_type_get(tr->vec_dot_type);
        int want = !ntypes;
        for (int k = 0; k < ntypes; k++) want |= !strcmp(types[k], tr->name);
        if (!want) continue;
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const shape *sh = &shapes[si];
            if (!shape_picked(sh, shape_names, nshapes, with_output) || (x16_only && !qt__x16_bytes(t, sh->rows, sh->cols)))
                continue;
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
            /* the k16 copy (K-quants), against the same Q8_K activations as the gemm kernels */
            const size_t kb = qt__k16_bytes(t, sh->rows, sh->cols);
            uint8_t *kp = kb ? packed_alloc(kb, small_pages) : NULL;
            if (kp) qt__k16_pack(t, w, ldw, sh->rows, sh->cols, kp);
            uint8_t *wp = xb ? packed_alloc(xb, small_pages) : NULL, *xs = xb ? xmalloc(lds * (size_t)maxb) : NULL;
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
                    /* F16 under fast: the same order on f32 rows of the activations' f16 values */
                    float *a32 = NULL;
                    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
                        if (v->type != t || v->level > qt__cpu_level_get() || !v->gemm_fast_a32) continue;
                        if (!a32) {
                            a32 = xmalloc((size_t)(B * sh->cols) * sizeof *a32);
                            for (int64_t b = 0; b < B; b++) {
                                for (int64_t i = 0; i < sh->cols; i++) src[i] = 0.1f * (float)((b * 17 + i * 7) % 23 - 11);
                                qt__act_f16_f32(src, a32 + b * sh->cols, sh->cols);
                            }
                        }
                        double cpu;
                        time_gemm(v->gemm_fast_a32, w, ldw, sh->rows, (const uint8_t *)a32, (size_t)sh->cols * 4, B, sh->cols,
                                  out, reps, &cpu, &wall);
                        printf(",\n    {\"type\": \"%s\", \"shape\": \"%s\", \"batch\": %lld, \"kernel\": \"gemm fast a32 %s\", "
                               "\"cpu_s\": %.6f, \"wall_s\": %.6f, \"gflops\": %.3f, \"weight_gbps\": %.2f, \"vs_dots\": %.2f}",
                               tr->name, sh->name, (long long)B, qt__cpu_level_str(v->level), cpu, wall, flop / cpu / 1e9,
                               wbytes / cpu / 1e9, dots_cpu / cpu);
                    }
                    free(a32);
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
                               "\"cpu_s\": %.6f, \"wall_s\": %.6f, \"gflops\": %.3f, \"weight_gbps\": %.2f",
                               first ? "" : ",", tr->name, sh->name, (long long)B, qt__cpu_level_str(v->level), cpu, wall,
                               flop / cpu / 1e9, (double)xb / cpu / 1e9);
                        first = 0;
                        if (!x16_only) printf(", \"vs_dots\": %.2f", dots_cpu / cpu);
                        if (B == 1 && !x16_only) printf(", \"vs_ref\": %.2f", ref_cpu / cpu);
                        printf("}");
                    }
                }
                if (kp) {
                    double ref_cpu = 0;
                    qt__gemm_x16_fn ref = NULL;
                    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++)
                        if (v->type == t && v->gemm_k16_ref) ref = v->gemm_k16_ref;
                    if (B == 1 && ref && sh->rows < 100000) {
                        time_x16(ref, kp, sh->rows, a, lda, B, sh->cols, out, reps, &ref_cpu, &wall);
                        printf(",\n    {\"type\": \"%s\", \"shape\": \"%s\", \"batch\": 1, \"kernel\": \"k16 ref\", "
                               "\"cpu_s\": %.6f, \"wall_s\": %.6f, \"gflops\": %.3f, \"vs_dots\": %.2f}",
                               tr->name, sh->name, ref_cpu, wall, flop / ref_cpu / 1e9, dots_cpu / ref_cpu);
                    }
                    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
                        if (v->type != t || v->level > qt__cpu_level_get() || !v->gemm_k16) continue;
                        double cpu;
                        time_x16(v->gemm_k16, kp, sh->rows, a, lda, B, sh->cols, out, reps, &cpu, &wall);
                        printf(",\n    {\"type\": \"%s\", \"shape\": \"%s\", \"batch\": %lld, \"kernel\": \"k16 %s\", "
                               "\"cpu_s\": %.6f, \"wall_s\": %.6f, \"gflops\": %.3f, \"weight_gbps\": %.2f, \"vs_dots\": %.2f",
                               tr->name, sh->name, (long long)B, qt__cpu_level_str(v->level), cpu, wall, flop / cpu / 1e9,
                               wbytes / cpu / 1e9, dots_cpu / cpu);
                        if (B == 1 && ref_cpu > 0) printf(", \"vs_ref\": %.2f", ref_cpu / cpu);
                        printf("}");
                    }
                }
                fflush(stdout);
            }
            free(w); free(a); free(src); free(out); qt__weights_free(wp); free(xs); qt__weights_free(kp);
        }
        fprintf(stderr, "bench_gemm: %s done\n", tr->name);
    }
    const qt_type ct4[] = {QT_TYPE_CT_W4_G128, QT_TYPE_CT_NVFP4, QT_TYPE_CT_MXFP4};
    for (size_t ti = 0; ti < sizeof ct4 / sizeof ct4[0]; ti++) {
        int want = !ntypes;
        for (int k = 0; k < ntypes; k++) want |= !strcmp(types[k], qt_type_get(ct4[ti])->name);
        if (!want || x16_only) continue;
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            if (shape_picked(&shapes[si], shape_names, nshapes, with_output)) bench_ct4(ct4[ti], &shapes[si], batches, nbatch, reps, small_pages, &first);
        fprintf(stderr, "bench_gemm: %s done\n", qt_type_get(ct4[ti])->name);
    }
    printf("\n  ]\n}\n");
    return 0;
}
