/* lib/quant/gemm.c — the reference form of a gemm kernel (gemm.h): one
 * vec_dot per output element. The engine uses it for types without a blocked
 * kernel; tests compare the kernels with it over the scalar vec_dot. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "blocks.h"
#include "dot.h"
#include "gemm.h"
#include "quanta/num.h"

void qt__gemm_dots(qt_vec_dot_fn dot, const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc,
                   int64_t n, float *out, int64_t ldo) {
    for (int64_t r = 0; r < nr; r++) {
        const uint8_t *wr = (const uint8_t *)w + (size_t)r * ldw;
        for (int64_t c = 0; c < nc; c++) out[c * ldo + r] = dot(wr, (const uint8_t *)a + (size_t)c * lda, n);
    }
}


/* Lane l of one 32-element block product: elements 4l..4l+3 (exact in int32). */
static int32_t block_lane(const int8_t *x, const int8_t *y, int l) {
    int32_t s = 0;
    for (int e = 4 * l; e < 4 * l + 4; e++) s += x[e] * y[e];
    return s;
}

/* The order of the --numerics fast kernels (gemm_avx512.c): 8 lanes for the
 * even blocks and 8 for the odd ones, fused per block, added lane by lane,
 * the last odd block fused into that sum, then hsum8. x's codes as signed
 * bytes with their f16 scale (q4_0: nibble - 8; q8_0: as stored). */
static float fast_pairs(const void *vx, size_t xb, bool q4, const block_q8_0 *y, int64_t n) {
    const int64_t nb = n / 32;
    float acc[2][8] = {{0}}, lanes[8];
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = (const uint8_t *)vx + (size_t)b * xb;
        int8_t q[32];
        for (int j = 0; j < 32; j++)
            q[j] = q4 ? (int8_t)(((j < 16 ? blk[2 + j] & 0x0F : blk[2 + j - 16] >> 4)) - 8) : (int8_t)blk[2 + j];
        qt_half h;
        memcpy(&h, blk, sizeof h);
        const float d = qt_fp16_to_f32(h) * qt_fp16_to_f32(y[b].d);
        if (b == nb - 1 && nb % 2) {
            for (int l = 0; l < 8; l++) lanes[l] = acc[0][l] + acc[1][l];
            for (int l = 0; l < 8; l++) lanes[l] = fmaf(d, (float)block_lane(q, y[b].qs, l), lanes[l]);
            return qt__hsum8_ref(lanes);
        }
        for (int l = 0; l < 8; l++) acc[b % 2][l] = fmaf(d, (float)block_lane(q, y[b].qs, l), acc[b % 2][l]);
    }
    for (int l = 0; l < 8; l++) lanes[l] = acc[0][l] + acc[1][l];
    return qt__hsum8_ref(lanes);
}

float qt__dot_fast_q8_0_ref(const void *x, const void *y, int64_t n) { return fast_pairs(x, sizeof(block_q8_0), false, y, n); }
float qt__dot_fast_q4_0_ref(const void *x, const void *y, int64_t n) { return fast_pairs(x, sizeof(block_q4_0), true, y, n); }
