/* bench_ct8 — the weight-only 8-bit rows (lib/quant/ct8.h: ct_w8_g128, ct_w8_ch) on
 * Llama-3.2-1B's matrix shapes, single thread, f32 activations as the engine runs them:
 *   "f32 rows"      the old dequantize-on-load path (f32 weights, the dispatched f32 dots),
 *   "fused ref"     the scalar reference on the packed rows (decode only),
 *   "fused L"       each fused dot variant of lib/quant/variants.c at level L (decode),
 *   "dequant rows"  the engine's batch path (each packed row dequantized once, then f32 dots).
 * All give the same bits (test_ct8). Prints one JSON document: per type, shape, batch and
 * path the median over --reps of thread CPU seconds, weight_gbps (that path's weight
 * bytes / cpu_s / 1e9) and vs_f32 (the f32 rows' cpu_s / this cpu_s).
 *
 *   bench_ct8 [--reps N] [--batch B ...]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quanta.h"
#include "bench_util.h"
#include "core/cpu_level.h"
#include "quant/ct8.h"
#include "quant/gemm.h"
#include "quant/variants.h"

typedef struct { const char *name; int64_t rows, cols; } shape;
static const shape shapes[] = {{"attn_q 2048x2048", 2048, 2048}, {"ffn_up 8192x2048", 8192, 2048},
                               {"ffn_down 2048x8192", 2048, 8192}};

typedef struct {
    int kind;            /* 0 f32 rows, 1 fused dot, 2 dequantized rows */
    qt_vec_dot_fn dot;
    qt_type t;
    const uint8_t *w;
    size_t ldw;
    float *scratch;
} run;

static void call(const run *c, int64_t rows, const float *a, int64_t B, int64_t cols, float *out) {
    const qt_type_traits *f32 = qt_type_get(QT_TYPE_F32);
    const qt_vec_dot_fn fd = B >= 2 ? f32->vec_dot_gemm : f32->vec_dot;
    if (c->kind == 0) { qt__gemm_dots(fd, c->w, c->ldw, rows, a, (size_t)cols * 4, B, cols, out, rows); return; }
    if (c->kind == 1) { qt__gemm_dots(c->dot, c->w, c->ldw, rows, a, (size_t)cols * 4, B, cols, out, rows); return; }
    const qt_type_traits *tr = qt_type_get(c->t);
    for (int64_t r = 0; r < rows; r++) {
        tr->to_float(c->w + (size_t)r * c->ldw, c->scratch, cols);
        qt__gemm_dots(fd, c->scratch, 0, 1, a, (size_t)cols * 4, B, cols, out + r, rows);
    }
}

int main(int argc, char **argv) {
    int reps = 5, nb = 0;
    int64_t batches[8];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc && nb < 8) batches[nb++] = atoll(argv[++i]);
        else { fprintf(stderr, "usage: bench_ct8 [--reps N] [--batch B ...]\n"); return 2; }
    }
    if (!nb) batches[nb++] = 1;
    if (reps < 1 || reps > 64) reps = 5;
    static const qt_type types[] = {QT_TYPE_CT_W8_G128, QT_TYPE_CT_W8_CH};
    printf("{\"bench\": \"ct8\", \"cpu_level\": \"%s\", \"reps\": %d, \"results\": [", qt__cpu_level_str(qt__cpu_level_get()), reps);
    int first = 1;
    for (size_t ti = 0; ti < 2; ti++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const qt_type t = types[ti];
            const int64_t R = shapes[si].rows, C = shapes[si].cols, ng = qt__ct8_groups(t, C);
            const size_t ldw = qt_row_size(t, C);
            uint8_t *w = xmalloc(ldw * (size_t)R);
            float *sc = xmalloc((size_t)(R * ng) * 4), *wf = xmalloc((size_t)(R * C) * 4), *scratch = xmalloc((size_t)C * 4);
            int8_t *q = xmalloc((size_t)(R * C)), *zp = xmalloc((size_t)(R * ng));
            for (int64_t i = 0; i < R * C; i++) q[i] = (int8_t)((i * 37 + i / 7) % 255 - 127);
            for (int64_t i = 0; i < R * ng; i++) {
                sc[i] = qt_ct_round_dtype(0.001f * (float)(1 + i % 7), QT_CT_BF16);
                zp[i] = (int8_t)(i % 5 - 2);
            }
            qt__ct8_pack(t, QT_CT_BF16, q, sc, zp, R * ng, R, C, w);
            qt_dequantize_rows(t, w, wf, R, C);
            int64_t maxb = 1;
            for (int b = 0; b < nb; b++) maxb = batches[b] > maxb ? batches[b] : maxb;
            float *a = xmalloc((size_t)(maxb * C) * 4), *out = xmalloc((size_t)(maxb * R) * 4);
            for (int64_t i = 0; i < maxb * C; i++) a[i] = (float)((i * 13) % 17) / 17.0f - 0.5f;
            for (int b = 0; b < nb; b++) {
                const int64_t B = batches[b];
                run runs[8];
                const char *names[8];
                int n = 0;
                runs[n] = (run){0, NULL, t, (const uint8_t *)wf, (size_t)C * 4, NULL}, names[n++] = "f32 rows";
                if (B == 1) {
                    runs[n] = (run){1, qt__traits_ref(t)->vec_dot, t, w, ldw, NULL}, names[n++] = "fused ref";
                    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++)
                        if (v->type == t && v->vec_dot && v->level <= qt__cpu_level_get() && n < 7)
                            runs[n] = (run){1, v->vec_dot, t, w, ldw, NULL},
                            names[n++] = v->level == QT__CPU_AVX2 ? "fused avx2" : "fused avx512";
                } else {
                    runs[n] = (run){2, NULL, t, w, ldw, scratch}, names[n++] = "dequant rows";
                }
                double f32_cpu = 0;
                for (int k = 0; k < n; k++) {
                    double tc[64];
                    call(&runs[k], R, a, B, C, out); /* warm-up */
                    for (int r = 0; r < reps; r++) {
                        const double c0 = thread_cpu_s();
                        call(&runs[k], R, a, B, C, out);
                        tc[r] = thread_cpu_s() - c0;
                    }
                    const double cpu = median(tc, reps);
                    if (k == 0) f32_cpu = cpu;
                    const double bytes = runs[k].kind == 0 ? (double)R * C * 4 : (double)ldw * R;
                    printf("%s\n  {\"type\": \"%s\", \"shape\": \"%s\", \"batch\": %lld, \"path\": \"%s\", \"cpu_s\": %.6g, "
                           "\"weight_gbps\": %.4g, \"vs_f32\": %.4g}", first ? "" : ",", qt_type_get(t)->name,
                           shapes[si].name, (long long)B, names[k], cpu, bytes / cpu / 1e9, f32_cpu / cpu);
                    first = 0;
                }
            }
            free(w), free(sc), free(wf), free(scratch), free(q), free(zp), free(a), free(out);
        }
    printf("\n]}\n");
    return 0;
}
