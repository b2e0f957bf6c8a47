/* lib/quant/q_q1_q2.c — ggml's Q1_0 and Q2_0 (type ids 41 and 42, added to
 * llama.cpp in 2026; layouts in blocks.h).
 *
 * Both are plain round-to-nearest formats with one fp16 scale per block and
 * no scale search. ggml's quantize_q1_0 / quantize_q2_0 accept importance
 * weights and ignore them (ggml-quants.c at llama.cpp 3f545bec), so the
 * imatrix argument is unused here too: with and without an imatrix the bytes
 * are the same.
 */
#include <math.h>
#include <string.h>

#include "blocks.h"
#include "kernels.h"
#include "quant_util.h"
#include "quanta/num.h"

/* Q1_0: the scale is the block's mean |x| (summed in element order, as ggml
 * does: the order decides the last bit of the sum), each element keeps only
 * its sign. x >= 0 (so also -0.0) sets the bit. */
void qt__quantize_q1_0(const float *x, void *dst, int64_t n, const float *imatrix) {
    (void)imatrix;
    block_q1_0 *y = dst;
    for (int64_t ib = 0; ib < n / QK1_0; ib++) {
        const float *xb = x + QK1_0 * ib;
        float sum_abs = 0.0f;
        for (int j = 0; j < QK1_0; j++) sum_abs += fabsf(xb[j]);
        y[ib].d = qt_f32_to_fp16(sum_abs / QK1_0);
        memset(y[ib].qs, 0, sizeof y[ib].qs);
        for (int j = 0; j < QK1_0; j++)
            if (xb[j] >= 0.0f) y[ib].qs[j / 8] |= (uint8_t)(1u << (j % 8));
    }
}

void qt__dequantize_q1_0(const void *src, float *y, int64_t n) {
    const block_q1_0 *x = src;
    for (int64_t ib = 0; ib < n / QK1_0; ib++) {
        const float d = qt_fp16_to_f32(x[ib].d);
        for (int j = 0; j < QK1_0; j++) y[QK1_0 * ib + j] = (x[ib].qs[j / 8] >> (j % 8)) & 1 ? d : -d;
    }
}

/* Q2_0: the scale is the block's max |x|; codes are roundf(x/d) + 1 clamped
 * to 0..3 (roundf: halves away from zero). Since |x/d| <= 1 the code 3 (+2d)
 * never comes out of ggml's quantizer, but it decodes. When 1/d overflows
 * (a subnormal d) x*id is +-Inf or NaN; ggml's (int) cast of those is
 * cvttss2si's INT32_MIN on x86-64, which clamps to code 0, and
 * qt__cvtt_i32 reproduces that without undefined behaviour. */
void qt__quantize_q2_0(const float *x, void *dst, int64_t n, const float *imatrix) {
    (void)imatrix;
    block_q2_0 *y = dst;
    for (int64_t ib = 0; ib < n / QK2_0; ib++) {
        const float *xb = x + QK2_0 * ib;
        const float amax = qt__absmax(xb, QK2_0); /* inputs are finite (quant.c checks) */
        const float id = amax > 0.0f ? 1.0f / amax : 0.0f;
        y[ib].d = qt_f32_to_fp16(amax);
        memset(y[ib].qs, 0, sizeof y[ib].qs);
        for (int j = 0; j < QK2_0; j++) {
            int64_t q = (int64_t)qt__cvtt_i32(roundf(xb[j] * id)) + 1;
            q = q < 0 ? 0 : q > 3 ? 3 : q;
            y[ib].qs[j / 4] |= (uint8_t)(q << (2 * (j % 4)));
        }
    }
}

void qt__dequantize_q2_0(const void *src, float *y, int64_t n) {
    const block_q2_0 *x = src;
    for (int64_t ib = 0; ib < n / QK2_0; ib++) {
        const float d = qt_fp16_to_f32(x[ib].d);
        for (int j = 0; j < QK2_0; j++) y[QK2_0 * ib + j] = (float)(((x[ib].qs[j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
    }
}
