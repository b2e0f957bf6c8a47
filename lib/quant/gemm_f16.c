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

/* v rounded to bf16, nearest even (a NaN stays a NaN), as vcvtneps2bf16 */
static float bf16_round(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    if (isnan(v)) u |= 0x00400000u;
    else u += 0x7FFFu + ((u >> 16) & 1u);
    u &= 0xFFFF0000u;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The AMX-BF16 order (gemm_f16_amx.c): per 32-element step (zeros past n) three tile products
 * ahi.whi, ahi.wlo, alo.whi, each adding (E + O) to acc, E and O the even and odd elements'
 * exact products summed in order from 0 */
float qt__gemm_f16_a32_amx_ref(const void *vw, const void *va, int64_t n) {
    const uint16_t *w = vw;
    const float *a = va;
    float acc = 0.0f;
    for (int64_t i0 = 0; i0 < n; i0 += 32) {
        float e[3] = {0}, o[3] = {0};
        for (int64_t i = i0; i < i0 + 32; i++) {
            const float wv = i < n ? qt_fp16_to_f32(w[i]) : 0.0f, av = i < n ? a[i] : 0.0f;
            const float wh = bf16_round(wv), ah = bf16_round(av);
            const float wl = isfinite(wv) ? wv - wh : 0.0f, al = isfinite(av) ? av - ah : 0.0f;
            const float p[3] = {ah * wh, ah * wl, al * wh}; /* exact: 8 x 8 significant bits at most */
            for (int t = 0; t < 3; t++) {
                if ((i - i0) % 2 == 0) e[t] += p[t];
                else o[t] += p[t];
            }
        }
        for (int t = 0; t < 3; t++) acc += e[t] + o[t];
    }
    return acc;
}
