/* SwiGLU (lib/engine/forward.c): the AVX-512F kernel equals the scalar
 * reference bit for bit for every length up to a few vectors and the tails,
 * on gates from tiny to far past exp's range (|n| > 192 takes the branch
 * to 0 or infinity), zeros of both signs included. */
#include <math.h>
#include <string.h>

#include "qtest.h"
#include "core/cpu_level.h"
#include "engine/engine_internal.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((double)(rng >> 11) * 0x1.0p-52 - 1.0);
}

static void test_swiglu_avx512_equals_reference(void) {
#if QT_ARCH_X86
    if (qt__cpu_level_get() < QT__CPU_AVX512) {
        fprintf(stderr, "SKIPPED: this CPU (or QUANTA_CPU) has no AVX-512: the kernel cannot run here\n");
        return;
    }
    enum { MAX = 80 };
    const float scales[] = {1e-3f, 1.0f, 8.0f, 90.0f, 200.0f};
    float g_ref[MAX], g[MAX], u[MAX];
    for (int32_t n = 0; n <= MAX; n++)
        for (int rep = 0; rep < 10; rep++) {
            const float sc = scales[rep % 5];
            for (int32_t i = 0; i < n; i++) {
                g_ref[i] = g[i] = frand() * sc;
                u[i] = frand() * 4.0f;
            }
            if (n > 3) g_ref[1] = g[1] = 0.0f, g_ref[2] = g[2] = -0.0f, g_ref[3] = g[3] = -150.0f;
            qt__swiglu_ref(g_ref, u, n);
            qt__swiglu_avx512(g, u, n);
            CHECK_MSG(memcmp(g_ref, g, (size_t)n * sizeof *g) == 0, "n = %d, scale %g", n, (double)sc);
        }
#else
    fprintf(stderr, "SKIPPED: not an x86 build: no AVX-512 kernel\n");
#endif
}

int main(void) {
    QT_RUN(test_swiglu_avx512_equals_reference);
    return qt_test_finish("test_swiglu");
}
