/* lib/quant/ct4_q8.c — --numerics fast for int4 g128 compressed-tensors rows
 * (ct4.h "int8 activations and integer dots"): the activation quantizer, shared
 * by every CPU level (scalar: a few microseconds per matmul input), and the
 * scalar reference of the kernels' float order. */
#include <math.h>

#include "ct4.h"

size_t qt__ct4_q8_row_size(int64_t n) {
    return (size_t)(n / QT_CT4_Q8_GROUP) * sizeof(qt__ct4_q8_head) + (size_t)n;
}

void qt__ct4_q8_quantize(const float *x, void *y, int64_t n) {
    const int64_t ng = n / QT_CT4_Q8_GROUP;
    qt__ct4_q8_head *h = y;
    int8_t *q = (int8_t *)(h + ng);
    for (int64_t g = 0; g < ng; g++, x += QT_CT4_Q8_GROUP, q += QT_CT4_Q8_GROUP) {
        float amax = 0.0f;
        for (int i = 0; i < QT_CT4_Q8_GROUP; i++) amax = fmaxf(amax, fabsf(x[i]));
        const float d = amax / 127.0f, id = d > 0.0f ? 1.0f / d : 0.0f;
        int32_t sum = 0;
        for (int i = 0; i < QT_CT4_Q8_GROUP; i++) {
            long v = lrintf(x[i] * id);
            v = v > 127 ? 127 : v < -127 ? -127 : v;
            /* element 32k + j (j < 16) at byte 16k + j, 32k + 16 + j at 64 + 16k + j */
            const int k = i / 32, j = i % 32;
            q[j < 16 ? 16 * k + j : 64 + 16 * k + (j - 16)] = (int8_t)v;
            sum += (int32_t)v;
        }
        h[g] = (qt__ct4_q8_head){d, sum};
    }
}

/* _mm512_reduce_add_ps's order (ct4.c's reduce16) */
static float reduce16(const float a[16]) {
    float t[8], u[4];
    for (int i = 0; i < 8; i++) t[i] = a[i + 8] + a[i];
    for (int i = 0; i < 4; i++) u[i] = t[i + 4] + t[i];
    return (u[0] + u[2]) + (u[1] + u[3]);
}

float qt__dot_ct4_w4g128_fast_ref(const void *x, const void *y, int64_t n) {
    const qt__ct4_form f = {QT_CT4_INT4, QT_CT4_Q8_GROUP, 5};
    const int64_t ng = n / QT_CT4_Q8_GROUP;
    const uint8_t *p = qt__ct4_params(x), *c = qt__ct4_codes(x, n, &f);
    const qt__ct4_q8_head *h = y;
    const int8_t *a = (const int8_t *)(h + ng);
    float acc[16] = {0}, corr = 0.0f;
    for (int64_t g = 0; g < ng; g++, p += 5, c += 64, a += QT_CT4_Q8_GROUP) {
        float s;
        memcpy(&s, p, 4);
        const float fg = s * h[g].d;
        for (int l = 0; l < 16; l++) {
            int32_t lane = 0;
            for (int b = 4 * l; b < 4 * l + 4; b++) lane += (c[b] & 15) * a[b] + (c[b] >> 4) * a[64 + b];
            acc[l] = fmaf((float)lane, fg, acc[l]);
        }
        corr = fmaf(fg, (float)((8 + (int8_t)p[4]) * h[g].sum), corr);
    }
    return reduce16(acc) - corr;
}
