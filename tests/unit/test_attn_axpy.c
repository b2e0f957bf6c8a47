/* The attention's value update (lib/engine/forward.c attention_items): the
 * AVX2 + FMA kernel equals the scalar reference bit for bit, for every length
 * up to a few vectors and the tails, on values whose products need the fused
 * rounding (a separate multiply and add would differ in the last bit). */
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

static void test_axpy_avx2_equals_reference(void) {
#if QT_ARCH_X86
    if (qt__cpu_level_get() < QT__CPU_AVX2) {
        fprintf(stderr, "SKIPPED: this CPU has no AVX2 + FMA: the kernel cannot run here\n");
        return;
    }
    float acc_ref[80], acc[80], v[80];
    int64_t fused_differs = 0;
    for (int32_t n = 0; n <= 80; n++)
        for (int rep = 0; rep < 20; rep++) {
            const float w = frand() * 3.0f;
            for (int32_t d = 0; d < n; d++) {
                v[d] = frand() * 100.0f;
                acc_ref[d] = acc[d] = frand() * 1e3f;
                fused_differs += fmaf(v[d], w, acc_ref[d]) != (float)(v[d] * w) + acc_ref[d];
            }
            qt__attn_axpy_ref(acc_ref, v, w, n);
            qt__attn_axpy_avx2(acc, v, w, n);
            CHECK_MSG(memcmp(acc_ref, acc, (size_t)n * sizeof *acc) == 0, "n = %d", n);
        }
    CHECK(fused_differs > 0); /* the data exercise the single rounding */
#else
    fprintf(stderr, "SKIPPED: not an x86 build: no AVX2 kernel\n");
#endif
}

int main(void) {
    QT_RUN(test_axpy_avx2_equals_reference);
    return qt_test_finish("test_attn_axpy");
}
