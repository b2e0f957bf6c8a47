/* lib/quant/gemm_f16.c — the scalar reference of the BF16 --numerics fast
 * order (gemm_f16.h); F16's is dot.c's qt__gemm_f16_ref. */
#include <math.h>
#include <string.h>

#include "dot.h"
#include "gemm_f16.h"
#include "quanta/num.h"

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

void qt__act_f16_ref(const float *x, void *vy, int64_t n) {
    uint16_t *y = vy;
    for (int64_t i = 0; i < n; i++) y[i] = qt_f32_to_fp16(x[i]);
}

void qt__act_f16_f32_ref(const float *x, void *vy, int64_t n) {
    float *y = vy;
    for (int64_t i = 0; i < n; i++) y[i] = qt_fp16_to_f32(qt_f32_to_fp16(x[i]));
}

/* qt__gemm_f16_ref with the activation's f16 bits recovered (its values are f16's, so exactly) */
float qt__gemm_f16_a32_ref(const void *vw, const void *va, int64_t n) {
    const uint16_t *w = vw;
    const float *a = va;
    if (n % 16 != 0) { /* qt__dot_f16_ref's order, as qt__gemm_f16_ref falls back to it */
        const int64_t np = n & ~(int64_t)63;
        float acc[4][16] = {{0}};
        for (int64_t i = 0; i < np; i += 64)
            for (int j = 0; j < 4; j++)
                for (int l = 0; l < 16; l++)
                    acc[j][l] = fmaf(qt_fp16_to_f32(w[i + 16 * j + l]), a[i + 16 * j + l], acc[j][l]);
        for (int l = 0; l < 16; l++) acc[0][l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
        double sum = (double)reduce16(acc[0]);
        for (int64_t i = np; i < n; i++) sum += (double)(qt_fp16_to_f32(w[i]) * a[i]);
        return (float)sum;
    }
    float acc[16] = {0};
    for (int64_t i = 0; i < n; i += 16)
        for (int l = 0; l < 16; l++) acc[l] = fmaf(qt_fp16_to_f32(w[i + l]), a[i + l], acc[l]);
    return reduce16(acc);
}
