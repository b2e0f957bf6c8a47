/* The output projection's move for the measured sensitivity (lib/quantize/mix_delta.h): every kernel
 * this CPU runs gives the scalar reference's doubles bit for bit, on shapes that reach each kernel's
 * blocks and tails (tokens 1..69 around the lane widths, rows 1..9 around the row blocks), and the
 * reference is the plain sum over j in order of h (untransposed) times b. */
#include <stdlib.h>
#include <string.h>

#include "core/cpu_level.h"
#include "qtest.h"
#include "quantize/mix_delta.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) { /* xorshift64*, uniform in [-1, 1), some exponents apart */
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    const uint64_t x = rng * 0x2545F4914F6CDD1Dull;
    const float u = (float)(x >> 40) / (float)(1u << 24) * 2.0f - 1.0f;
    return (x & 3) == 0 ? u * 1e-3f : (x & 3) == 1 ? u * 37.0f : u;
}

static void check_shape(int32_t n_tok, int64_t ne0, int32_t nv) {
    float *h = malloc((size_t)n_tok * (size_t)ne0 * sizeof *h), *ht = malloc((size_t)n_tok * (size_t)ne0 * sizeof *ht);
    float *b = malloc((size_t)nv * (size_t)ne0 * sizeof *b);
    double *ref = malloc((size_t)nv * n_tok * sizeof *ref), *got = malloc((size_t)nv * n_tok * sizeof *got);
    for (int64_t i = 0; i < (int64_t)n_tok * ne0; i++) h[i] = frand();
    for (int64_t i = 0; i < (int64_t)nv * ne0; i++) b[i] = frand();
    for (int32_t r = 0; r < n_tok; r++)
        for (int64_t j = 0; j < ne0; j++) ht[j * n_tok + r] = h[r * ne0 + j];
    qt__mix_delta_scalar(ht, n_tok, ne0, b, nv, ref);
    for (int32_t v = 0; v < nv; v++)
        for (int32_t r = 0; r < n_tok; r++) {
            double s = 0;
            for (int64_t j = 0; j < ne0; j++) s += (double)h[r * ne0 + j] * (double)b[v * ne0 + j];
            CHECK_MSG(memcmp(&s, &ref[(int64_t)v * n_tok + r], sizeof s) == 0, "scalar %d x %lld x %d at (%d, %d)", n_tok,
                      (long long)ne0, nv, v, r);
        }
    struct { const char *name; qt__mix_delta_fn fn; qt__cpu_level level; } k[] = {
#ifdef QT_ARCH_X86
        {"avx2", qt__mix_delta_avx2, QT__CPU_AVX2},
        {"avx512", qt__mix_delta_avx512, QT__CPU_AVX512},
#endif
        {"chosen", qt__mix_delta_kernel(), QT__CPU_SCALAR},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        if (k[i].level > qt__cpu_level_get()) continue;
        memset(got, 0xff, (size_t)nv * n_tok * sizeof *got);
        k[i].fn(ht, n_tok, ne0, b, nv, got);
        CHECK_MSG(memcmp(got, ref, (size_t)nv * n_tok * sizeof *got) == 0, "%s: %d tokens x %lld x %d rows differ from scalar",
                  k[i].name, n_tok, (long long)ne0, nv);
    }
    free(h);
    free(ht);
    free(b);
    free(ref);
    free(got);
}

static void test_kernels_match_scalar(void) {
    const int32_t toks[] = {1, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 40, 64, 69};
    const int32_t rows[] = {1, 2, 3, 4, 5, 9};
    for (size_t t = 0; t < sizeof toks / sizeof toks[0]; t++)
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) check_shape(toks[t], 1 + (int64_t)(t * 37 + r * 11) % 300, rows[r]);
}

int main(void) {
    qt_test_run("kernels_match_scalar", test_kernels_match_scalar);
    return qt_test_finish("test_mix_delta");
}
