/* lib/quant/gemm_f16.c — the scalar reference of the BF16 --numerics fast
 * order (gemm_f16.h); F16's is dot.c's qt__gemm_f16_ref. */
#include <math.h>
#include <string.h>

#include "dot.h"
#include "gemm_f16.h"

static float bf16_to_f32(uint16_t h) {
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* dot.c's reduce16: lanes i and i+8 added, then hsum8 */
static float reduce16(const float a[16]) {
    float t[8];
    for (int i = 0; i < 8; i++) t[i] = a[i + 8] + a[i];
    return qt__hsum8_ref(t);
}

float qt__dot_fast_bf16_ref(const void *vx, const void *vy, int64_t n) {
    const uint16_t *x = vx, *y = vy;
    const int64_t np = n & ~(int64_t)15;
    float acc[16] = {0};
    for (int64_t i = 0; i < np; i += 16)
        for (int l = 0; l < 16; l++) acc[l] = fmaf(bf16_to_f32(x[i + l]), bf16_to_f32(y[i + l]), acc[l]);
    float sum = reduce16(acc);
    for (int64_t i = np; i < n; i++) sum = fmaf(bf16_to_f32(x[i]), bf16_to_f32(y[i]), sum);
    return sum;
}
