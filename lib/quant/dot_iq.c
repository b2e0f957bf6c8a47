/* lib/quant/dot_iq.c — dot kernels of the i-quants below 4 bits with q8_K
 * activations (the traits' vec_dot for IQ1_S..IQ3_S).
 *
 * Semantics of llama.cpp's CPU backend (ggml-cpu ggml_vec_dot_iq*_q8_K):
 * per 32 (IQ1_M: 16) weights an exact int32 sum of code-book value * sign *
 * activation, times the odd sub-block scale, summed exactly per super-block,
 * then one float multiply by d_weight * d_activation and the format's
 * constant factor (IQ2: 1/8, IQ3_XXS: 1/4; the dequantizers' 0.25/0.5 with
 * the 2s+1 scales halved). IQ1 adds the shift as +-DELTA times the sub-block
 * activation sums (q8_K bsums). Value grids come from iq_grids.c.
 */
#include <string.h>

#include "blocks.h"
#include "dot.h"
#include "iq_grids.h"
#include "quanta/num.h"

/* sum over n of vals[j] * q8[j], negated where bit j of s is set. */
static inline int32_t signed_dot(const int8_t *vals, const int8_t *q8, uint32_t s, const int n) {
    int32_t sum = 0;
    for (int j = 0; j < n; j++) {
        const int32_t p = vals[j] * q8[j];
        sum += (s >> j) & 1 ? -p : p;
    }
    return sum;
}

float qt__dot_iq2_xxs_q8_K_ref(const void *vx, const void *vy, int64_t n) {
    const block_iq2_xxs *x = vx;
    const block_q8_K *y = vy;
    const int8_t *grid = qt__iq_values(QT_IQ_LATTICE_2XXS);
    float sum = 0;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const uint8_t *q = (const uint8_t *)x[b].qs;
        const int8_t *q8 = y[b].qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < QK_K / 32; ib++, q += 8) {
            uint32_t sc;
            memcpy(&sc, q + 4, sizeof sc);
            int32_t sumi = 0;
            for (int l = 0; l < 4; l++, q8 += 8) sumi += signed_dot(grid + 8 * q[l], q8, qt__iq_signs8((sc >> (7 * l)) & 127), 8);
            bsum += sumi * (int32_t)(2 * (sc >> 28) + 1);
        }
        sum += qt_fp16_to_f32(x[b].d) * y[b].d * (float)bsum;
    }
    return 0.125f * sum;
}

/* IQ2_XS and IQ2_S (is_s): same scales, groups read by qt__iq2_16_group. */
static float dot_iq2_16(const uint8_t *x, const block_q8_K *y, int64_t n, int is_s) {
    const int8_t *grid = qt__iq_values(is_s ? QT_IQ_LATTICE_2S : QT_IQ_LATTICE_2XS);
    const size_t bb = is_s ? sizeof(block_iq2_s) : sizeof(block_iq2_xs);
    float sum = 0;
    for (int64_t b = 0; b < n / QK_K; b++, x += bb) {
        qt_half dh;
        memcpy(&dh, x, sizeof dh); /* d leads both blocks */
        const uint8_t *scales = is_s ? ((const block_iq2_s *)x)->scales : ((const block_iq2_xs *)x)->scales;
        const int8_t *q8 = y[b].qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            int32_t half[2] = {0, 0};
            for (int l = 0; l < 4; l++, q8 += 8) {
                uint32_t signs;
                const int index = qt__iq2_16_group(x, is_s, 4 * ib + l, &signs);
                half[l / 2] += signed_dot(grid + 8 * index, q8, signs, 8);
            }
            bsum += half[0] * (2 * (scales[ib] & 0xf) + 1) + half[1] * (2 * (scales[ib] >> 4) + 1);
        }
        sum += qt_fp16_to_f32(dh) * y[b].d * (float)bsum;
    }
    return 0.125f * sum;
}

float qt__dot_iq2_xs_q8_K_ref(const void *vx, const void *vy, int64_t n) { return dot_iq2_16(vx, vy, n, 0); }

float qt__dot_iq2_s_q8_K_ref(const void *vx, const void *vy, int64_t n) { return dot_iq2_16(vx, vy, n, 1); }

float qt__dot_iq3_xxs_q8_K_ref(const void *vx, const void *vy, int64_t n) {
    const block_iq3_xxs *x = vx;
    const block_q8_K *y = vy;
    const int8_t *grid = qt__iq_values(QT_IQ_LATTICE_3XXS);
    float sum = 0;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const uint8_t *qs = x[b].qs;
        const int8_t *q8 = y[b].qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < QK_K / 32; ib++, qs += 8) {
            uint32_t sc;
            memcpy(&sc, x[b].qs + QK_K / 4 + 4 * ib, sizeof sc);
            int32_t sumi = 0;
            for (int l = 0; l < 4; l++, q8 += 8) {
                const uint32_t s = qt__iq_signs8((sc >> (7 * l)) & 127);
                sumi += signed_dot(grid + 4 * qs[2 * l], q8, s, 4) + signed_dot(grid + 4 * qs[2 * l + 1], q8 + 4, s >> 4, 4);
            }
            bsum += sumi * (int32_t)(2 * (sc >> 28) + 1);
        }
        sum += qt_fp16_to_f32(x[b].d) * y[b].d * (float)bsum;
    }
    return 0.25f * sum;
}

float qt__dot_iq3_s_q8_K_ref(const void *vx, const void *vy, int64_t n) {
    const block_iq3_s *x = vx;
    const block_q8_K *y = vy;
    const int8_t *grid = qt__iq_values(QT_IQ_LATTICE_3S);
    float sum = 0;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const int8_t *q8 = y[b].qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const uint8_t *qs = x[b].qs + 8 * ib, qh = x[b].qh[ib], sc = x[b].scales[ib / 2];
            int32_t sumi = 0;
            for (int l = 0; l < 4; l++, q8 += 8) {
                const uint8_t s = x[b].signs[4 * ib + l];
                const int i1 = qs[2 * l] | (((qh >> (2 * l)) & 1) << 8);
                const int i2 = qs[2 * l + 1] | (((qh >> (2 * l + 1)) & 1) << 8);
                sumi += signed_dot(grid + 4 * i1, q8, s, 4) + signed_dot(grid + 4 * i2, q8 + 4, (uint32_t)s >> 4, 4);
            }
            bsum += sumi * (2 * (ib % 2 ? sc >> 4 : sc & 0xf) + 1);
        }
        sum += qt_fp16_to_f32(x[b].d) * y[b].d * (float)bsum;
    }
    return sum;
}

float qt__dot_iq1_s_q8_K_ref(const void *vx, const void *vy, int64_t n) {
    const block_iq1_s *x = vx;
    const block_q8_K *y = vy;
    const int8_t *grid = qt__iq_values(QT_IQ_LATTICE_1S);
    float sum = 0;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const int8_t *q8 = y[b].qs;
        int32_t sumi = 0, sumd = 0;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const uint16_t qh = x[b].qh[ib];
            const int ls = 2 * ((qh >> 12) & 7) + 1;
            int32_t lsum = 0;
            for (int l = 0; l < 4; l++, q8 += 8)
                lsum += signed_dot(grid + 8 * (x[b].qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)), q8, 0, 8);
            sumi += ls * lsum;
            sumd += ls * (qh & 0x8000 ? -1 : 1) * (y[b].bsums[2 * ib] + y[b].bsums[2 * ib + 1]);
        }
        sum += qt_fp16_to_f32(x[b].d) * y[b].d * ((float)sumi + QT_IQ1S_DELTA * (float)sumd);
    }
    return sum;
}

float qt__dot_iq1_m_q8_K_ref(const void *vx, const void *vy, int64_t n) {
    const block_iq1_m *x = vx;
    const block_q8_K *y = vy;
    const int8_t *grid = qt__iq_values(QT_IQ_LATTICE_1S);
    float sum = 0;
    for (int64_t b = 0; b < n / QK_K; b++) {
        uint16_t sc[4];
        memcpy(sc, x[b].scales, sizeof sc);
        const uint16_t h = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
        const int8_t *q8 = y[b].qs;
        int32_t sumi = 0, sumd = 0;
        for (int ib = 0; ib < QK_K / 16; ib++) {
            const uint8_t qh = x[b].qh[ib];
            const int ls = 2 * ((sc[ib / 4] >> (3 * (ib % 4))) & 7) + 1;
            for (int k = 0; k < 2; k++, q8 += 8) {
                const int index = x[b].qs[2 * ib + k] | (((qh >> (4 * k)) & 7) << 8);
                int32_t act = 0;
                for (int j = 0; j < 8; j++) act += q8[j];
                sumi += ls * signed_dot(grid + 8 * index, q8, 0, 8);
                sumd += ls * ((qh >> (4 * k)) & 8 ? -act : act);
            }
        }
        sum += qt_fp16_to_f32(h) * y[b].d * ((float)sumi + QT_IQ1S_DELTA * (float)sumd);
    }
    return sum;
}
