/* bench_mix_delta — the measured sensitivity's output-projection move (lib/quantize/mix_delta.h:
 * logits += H (Wq - W)^T, each dot product summed in double in the order of j) on Llama-3.2-1B's
 * output shape: n_tok tokens (default 512) of 2048 against --rows rows of the 128256-row vocabulary
 * (default 1024; the time is linear in the rows), single thread. For main's loop before the kernels
 * ("old loop": per row of W, per token, a dot product over H's row, H untransposed), the scalar reference and each
 * SIMD kernel that runs here: the median over --reps of thread CPU seconds, GFLOP per CPU-s
 * (2 x multiply-adds), vs_scalar (the reference's cpu_s / this one's) and per_seq_s, the kernel's
 * CPU seconds for one sequence over the whole vocabulary (scaled by 128256 / rows). Every kernel's
 * doubles are checked against the reference's (same_bits). Prints one JSON document.
 *
 *   bench_mix_delta [--reps N] [--rows R] [--tokens T]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "core/cpu_level.h"
#include "quantize/mix_delta.h"

/* The loop output_delta ran before mix_delta.h (main fc23063), on h untransposed (set up by main()). */
static const float *old_h;
static void old_loop(const float *ht, int32_t n_tok, int64_t ne0, const float *b, int32_t nv, double *d) {
    (void)ht;
    for (int32_t v = 0; v < nv; v++)
        for (int32_t r = 0; r < n_tok; r++) {
            double s = 0;
            const float *hr = old_h + (int64_t)r * ne0, *bv = b + (int64_t)v * ne0;
            for (int64_t j = 0; j < ne0; j++) s += (double)hr[j] * (double)bv[j];
            d[(int64_t)v * n_tok + r] = s;
        }
}

int main(int argc, char **argv) {
    int reps = 3, rows = 1024, n_tok = 512;
    const int64_t ne0 = 2048, vocab = 128256;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rows")) rows = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--tokens")) n_tok = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: bench_mix_delta [--reps N] [--rows R] [--tokens T]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > MAX_REPS || rows < 1 || n_tok < 1) {
        fprintf(stderr, "bench_mix_delta: --reps 1..%d, --rows and --tokens >= 1\n", MAX_REPS);
        return 2;
    }
    float *ht = xmalloc((size_t)ne0 * (size_t)n_tok * sizeof *ht), *b = xmalloc((size_t)rows * (size_t)ne0 * sizeof *b);
    uint32_t x = 12345;
    for (int64_t i = 0; i < ne0 * n_tok; i++) ht[i] = (float)((x = x * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
    for (int64_t i = 0; i < (int64_t)rows * ne0; i++) b[i] = ((float)((x = x * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f) * 1e-3f;
    float *h = xmalloc((size_t)ne0 * (size_t)n_tok * sizeof *h);
    for (int32_t r = 0; r < n_tok; r++)
        for (int64_t j = 0; j < ne0; j++) h[r * ne0 + j] = ht[j * n_tok + r];
    old_h = h;
    double *ref = xmalloc((size_t)rows * n_tok * sizeof *ref), *d = xmalloc((size_t)rows * n_tok * sizeof *d);
    struct { const char *name; qt__mix_delta_fn fn; qt__cpu_level level; } k[] = {
        {"scalar", qt__mix_delta_scalar, QT__CPU_SCALAR},
        {"old loop", old_loop, QT__CPU_SCALAR},
#ifdef QT_ARCH_X86
        {"avx2", qt__mix_delta_avx2, QT__CPU_AVX2},
        {"avx512", qt__mix_delta_avx512, QT__CPU_AVX512},
#endif
    };
    printf("{\"bench\": \"mix_delta\", \"level\": \"%s\", \"tokens\": %d, \"ne0\": %lld, \"rows\": %d, \"reps\": %d, \"kernels\": [",
           qt__cpu_level_str(qt__cpu_level_get()), n_tok, (long long)ne0, rows, reps);
    double scalar_s = 0;
    int first = 1;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        if (k[i].level > qt__cpu_level_get()) continue;
        double t[MAX_REPS];
        for (int r = 0; r < reps; r++) {
            const double t0 = thread_cpu_s();
            k[i].fn(ht, n_tok, ne0, b, rows, i == 0 ? ref : d);
            t[r] = thread_cpu_s() - t0;
        }
        const double s = median(t, reps);
        if (i == 0) scalar_s = s;
        const int same = i == 0 || !memcmp(d, ref, (size_t)rows * n_tok * sizeof *d);
        printf("%s\n  {\"kernel\": \"%s\", \"cpu_s\": %.4f, \"gflops\": %.2f, \"vs_scalar\": %.2f, \"per_seq_s\": %.1f, \"same_bits\": %s}",
               first ? "" : ",", k[i].name, s, 2.0 * (double)rows * (double)n_tok * (double)ne0 / s / 1e9, scalar_s / s,
               s * (double)vocab / rows, same ? "true" : "false");
        first = 0;
    }
    printf("\n]}\n");
    free(ht);
    free(h);
    free(b);
    free(ref);
    free(d);
    return 0;
}
