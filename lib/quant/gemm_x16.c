/* lib/quant/gemm_x16.c — the x16 layout of --numerics fast (gemm.h): its
 * activation quantizer, its packer and the scalar references of its float
 * order. The SIMD kernels are in gemm_x16_avx512.c / gemm_x16_avx2.c. */
#include <math.h>
#include <string.h>

#include "blocks.h"
#include "gemm.h"
#include "quanta/num.h"

/* Code bytes per row per block in the packed tile, and the tile's bytes. */
static int x16_code_bytes(qt_type t) { return t == QT_TYPE_Q4_0 ? 16 : t == QT_TYPE_Q8_0 ? 32 : 0; }

size_t qt__x16_group_bytes(qt_type t, int64_t n) {
    const int cb = x16_code_bytes(t);
    return cb ? (size_t)(n / 32) * (size_t)(QT_X16_ROWS * (2 + cb)) : 0;
}

size_t qt__x16_bytes(qt_type t, int64_t nr, int64_t n) {
    if (n <= 0 || n % 32 || nr <= 0) return 0;
    return (size_t)((nr + QT_X16_ROWS - 1) / QT_X16_ROWS) * qt__x16_group_bytes(t, n);
}

void qt__x16_pack(qt_type t, const void *w, size_t ldw, int64_t nr, int64_t n, void *dst) {
    const int cb = x16_code_bytes(t);
    const size_t bb = (size_t)(2 + cb), tile = QT_X16_ROWS * bb; /* plain block bytes; packed tile bytes */
    const uint8_t flip = t == QT_TYPE_Q8_0 ? 0x80 : 0x00;
    const int64_t nb = n / 32, ng = (nr + QT_X16_ROWS - 1) / QT_X16_ROWS;
    uint8_t *d = dst;
    memset(d, 0, (size_t)ng * (size_t)nb * tile); /* padding rows: zero scales (and codes) */
    for (int64_t r = 0; r < nr; r++) {
        const uint8_t *row = (const uint8_t *)w + (size_t)r * ldw;
        const int i = (int)(r % QT_X16_ROWS);
        uint8_t *g = d + (size_t)(r / QT_X16_ROWS) * (size_t)nb * tile;
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = row + (size_t)b * bb;
            uint8_t *tl = g + (size_t)b * tile;
            memcpy(tl + 2 * i, blk, 2);
            for (int k = 0; k < cb / 4; k++)
                for (int e = 0; e < 4; e++) tl[32 + 64 * k + 4 * i + e] = (uint8_t)(blk[2 + 4 * k + e] ^ flip);
        }
    }
}

/* llama.cpp's CPU quantize_row_q8_0 codes (id = 127/amax, round half to even,
 * as dot.c's act_q8_0), with the scale kept in f32 and the code sum. */
void qt__act_q8s(const float *x, qt__block_q8s *y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++, x += 32) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        int32_t s = 0;
        for (int j = 0; j < 32; j++) {
            y[b].qs[j] = (int8_t)nearbyintf(x[j] * id);
            s += y[b].qs[j];
        }
        y[b].d = amax / 127.0f;
        y[b].sum = s;
    }
}

/* ---- the float order (gemm.h), one element ---- */

float qt__dot_x16_q4_0_ref(const void *vx, const void *vy, int64_t n) {
    const block_q4_0 *x = vx;
    const qt__block_q8s *y = vy;
    float acc = 0.0f;
    for (int64_t b = 0; b < n / 32; b++) {
        int32_t s = 0;
        for (int j = 0; j < 16; j++)
            s += ((x[b].qs[j] & 0x0F) - 8) * y[b].qs[j] + ((x[b].qs[j] >> 4) - 8) * y[b].qs[j + 16];
        acc = fmaf(qt_fp16_to_f32(x[b].d) * y[b].d, (float)s, acc);
    }
    return acc;
}

float qt__dot_x16_q8_0_ref(const void *vx, const void *vy, int64_t n) {
    const block_q8_0 *x = vx;
    const qt__block_q8s *y = vy;
    float acc = 0.0f;
    for (int64_t b = 0; b < n / 32; b++) {
        int32_t s = 0;
        for (int j = 0; j < 32; j++) s += x[b].qs[j] * y[b].qs[j];
        acc = fmaf(qt_fp16_to_f32(x[b].d) * y[b].d, (float)s, acc);
    }
    return acc;
}

/* ---- the same order on packed tiles ---- */

static void x16_ref(qt_type t, const void *wp, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                    float *out, int64_t ldo) {
    const int cb = x16_code_bytes(t);
    const size_t tile = QT_X16_ROWS * (size_t)(2 + cb);
    const int64_t nb = n / 32;
    for (int64_t r = 0; r < nr; r++) {
        const uint8_t *g = (const uint8_t *)wp + (size_t)(r / QT_X16_ROWS) * (size_t)nb * tile;
        const int i = (int)(r % QT_X16_ROWS);
        for (int64_t c = 0; c < nc; c++) {
            const qt__block_q8s *y = (const qt__block_q8s *)((const uint8_t *)a + (size_t)c * lda);
            float acc = 0.0f;
            for (int64_t b = 0; b < nb; b++) {
                const uint8_t *tl = g + (size_t)b * tile;
                int32_t s = 0;
                for (int k = 0; k < cb / 4; k++)
                    for (int e = 0; e < 4; e++) {
                        const uint8_t u = tl[32 + 64 * k + 4 * i + e];
                        if (t == QT_TYPE_Q4_0)
                            s += ((u & 0x0F) - 8) * y[b].qs[4 * k + e] + ((u >> 4) - 8) * y[b].qs[16 + 4 * k + e];
                        else
                            s += (u - 128) * y[b].qs[4 * k + e];
                    }
                qt_half h;
                memcpy(&h, tl + 2 * i, sizeof h);
                acc = fmaf(qt_fp16_to_f32(h) * y[b].d, (float)s, acc);
            }
            out[c * ldo + r] = acc;
        }
    }
}

void qt__gemm_x16_q4_0_ref(const void *wp, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n, float *out,
                           int64_t ldo) {
    x16_ref(QT_TYPE_Q4_0, wp, nr, a, lda, nc, n, out, ldo);
}

void qt__gemm_x16_q8_0_ref(const void *wp, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n, float *out,
                           int64_t ldo) {
    x16_ref(QT_TYPE_Q8_0, wp, nr, a, lda, nc, n, out, ldo);
}
