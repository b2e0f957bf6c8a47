/* lib/quant/dot.c — scalar reference dot kernels and activation quantizers.
 *
 * Semantics follow llama.cpp's CPU backend (ggml-cpu: vec_dot_* and
 * quantize_row_q8_*), written from the block layouts in docs/formats.md §3.2/§3.4:
 * per block (or K-quant sub-block) an exact int32 sum of products, then one
 * float multiply by the block scales; the float kernels follow the order
 * described below.
 */
#include <math.h>
#include <string.h>

#include "ct_rows.h"
#include "dot.h"
#include "gemm_f16.h"
#include "gemm.h"
#include "blocks.h"
#include "quanta/num.h"
#include "traits_internal.h"

static inline float h2f(qt_half h) { return qt_fp16_to_f32(h); }

/* ---- float kernels ------------------------------------------------------------ */
/*
 * f32 and f16 rows are dotted in the float order of llama.cpp's x86-64 CPU
 * backend built for AVX-512 (the build the reference outputs in
 * ../shared/reference/llamacpp come from; node-llama-cpp's AVX-512 variants
 * compute the same), because llama.cpp rounds Q, K and V to f16 downstream and
 * a last-bit difference here turns some of those roundings the other way.
 * That backend has two orders:
 *
 *   ggml_vec_dot_f32 / _f16 (one activation row, or a row length that is not a
 *     multiple of 16): four 16-lane FMA accumulators over 64-element steps,
 *     added (0+2, 1+3, then 0+1) and reduced by reduce16. The f32 tail is what
 *     GCC made of `sumf += x[i]*y[i]`: products of 16- and then 8-element
 *     chunks rounded and added in element order, the last < 8 elements fused
 *     (vfmadd231ss); the f16 tail adds f32 products in double.
 *   tinyBLAS (llamafile_sgemm; two or more activation rows, weights with a
 *     multiple of 4 rows — matmul.c checks those two — and a row length that
 *     is a multiple of 16, checked here): one 16-lane FMA chain per output
 *     over 16-element steps, reduce16.
 *
 * reduce16 is _mm512_reduce_add_ps: lanes i and i+8 added, then i and i+4,
 * then (0+2) + (1+3). fmaf is exact everywhere, so the bits do not depend on
 * the machine; dot_avx2.c computes the same bits with vector registers.
 */
static inline float reduce16(const float a[16]) {
    float t[8], u[4];
    for (int i = 0; i < 8; i++) t[i] = a[i + 8] + a[i];
    for (int i = 0; i < 4; i++) u[i] = t[i + 4] + t[i];
    return (u[0] + u[2]) + (u[1] + u[3]);
}

/* ggml_vec_dot's 64-element steps: acc[j][l] accumulates element 16j + l of each step. */
static float vec_dot_steps(const float *x, const float *y, int64_t np) {
    float acc[4][16] = {{0}};
    for (int64_t i = 0; i < np; i += 64)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 16; l++) acc[j][l] = fmaf(x[i + 16 * j + l], y[i + 16 * j + l], acc[j][l]);
    for (int l = 0; l < 16; l++) acc[0][l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
    return reduce16(acc[0]);
}

float qt__dot_f32_ref(const void *vx, const void *vy, int64_t n) {
    const float *x = vx, *y = vy;
    const int64_t np = n & ~(int64_t)63;
    return qt__dot_f32_tail(vec_dot_steps(x, y, np), x, y, np, n);
}

float qt__gemm_f32_ref(const void *vx, const void *vy, int64_t n) {
    if (n % 16 != 0) return qt__dot_f32_ref(vx, vy, n);
    const float *x = vx, *y = vy;
    float acc[16] = {0};
    for (int64_t i = 0; i < n; i += 16)
        for (int l = 0; l < 16; l++) acc[l] = fmaf(x[i + l], y[i + l], acc[l]);
    return reduce16(acc);
}

float qt__dot_f16_ref(const void *vx, const void *vy, int64_t n) {
    const uint16_t *x = vx, *y = vy;
    const int64_t np = n & ~(int64_t)63;
    float acc[4][16] = {{0}};
    for (int64_t i = 0; i < np; i += 64)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 16; l++)
                acc[j][l] = fmaf(h2f(x[i + 16 * j + l]), h2f(y[i + 16 * j + l]), acc[j][l]);
    for (int l = 0; l < 16; l++) acc[0][l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
    double sum = (double)reduce16(acc[0]);
    for (int64_t i = np; i < n; i++) sum += (double)(h2f(x[i]) * h2f(y[i]));
    return (float)sum;
}

float qt__gemm_f16_ref(const void *vx, const void *vy, int64_t n) {
    if (n % 16 != 0) return qt__dot_f16_ref(vx, vy, n);
    const uint16_t *x = vx, *y = vy;
    float acc[16] = {0};
    for (int64_t i = 0; i < n; i += 16)
        for (int l = 0; l < 16; l++) acc[l] = fmaf(h2f(x[i + l]), h2f(y[i + l]), acc[l]);
    return reduce16(acc);
}

/* ggml_vec_dot_bf16's scalar path: products in f32, summed in double. */
float qt__dot_bf16_ref(const void *vx, const void *vy, int64_t n) {
    const uint16_t *x = vx, *y = vy;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += (double)(qt_bf16_to_f32(x[i]) * qt_bf16_to_f32(y[i]));
    return (float)sum;
}

/* ---- 32-element blocks against q8_0 / q8_1 ------------------------------------- */

/* Horizontal sums of 8 lanes: qt__hsum8_ref (dot.h), the order x86 code
 * reduces a __m256 (hsum_float_8). */

/* The AVX2 structure of ggml's vec_dot_q4_0_q8_0 & co.: per block an exact
 * int32 sum for each of 8 lanes (lane l covers elements 4l..4l+3), converted
 * to float and accumulated with one FMA by the block's combined scale
 * d = d_x * d_y; hsum8 at the end. q[] holds the 32 weight values as ints in
 * element order. */
static inline void block_lanes(float acc[8], const int8_t q[32], const int8_t *y, float d) {
    for (int l = 0; l < 8; l++) {
        int32_t s = 0;
        for (int e = 4 * l; e < 4 * l + 4; e++) s += q[e] * y[e];
        acc[l] = fmaf(d, (float)s, acc[l]);
    }
}

/* 4-bit values of a q4_0/q4_1 block: low nibbles are elements 0-15, high
 * nibbles 16-31 (docs/formats.md §3.4), minus `offset`. */
static inline void q4_values(const uint8_t qs[16], int offset, int8_t q[32]) {
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)((qs[j] & 0x0F) - offset);
        q[j + 16] = (int8_t)((qs[j] >> 4) - offset);
    }
}

float qt__dot_q4_0_q8_0_ref(const void *vx, const void *vy, int64_t n) {
    const block_q4_0 *x = vx;
    const block_q8_0 *y = vy;
    float acc[8] = {0};
    for (int64_t b = 0; b < n / QK4_0; b++) {
        int8_t q[32];
        q4_values(x[b].qs, 8, q);
        block_lanes(acc, q, y[b].qs, h2f(x[b].d) * h2f(y[b].d));
    }
    return qt__hsum8_ref(acc);
}

float qt__dot_q4_1_q8_1_ref(const void *vx, const void *vy, int64_t n) {
    const block_q4_1 *x = vx;
    const block_q8_1 *y = vy;
    float acc[8] = {0}, mins = 0.0f;
    for (int64_t b = 0; b < n / QK4_1; b++) {
        int8_t q[32];
        q4_values(x[b].qs, 0, q);
        /* y.s = d_y * sum(q_y) carries the min term: sum(m * d_y * q_y) = m * s */
        mins = fmaf(h2f(x[b].m), h2f(y[b].s), mins);
        block_lanes(acc, q, y[b].qs, h2f(x[b].d) * h2f(y[b].d));
    }
    return qt__hsum8_ref(acc) + mins;
}

static inline uint32_t load_qh(const uint8_t qh[4]) {
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
}

/* 5-bit values of a q5_0/q5_1 block: nibble | high bit << 4 (docs/formats.md §3.4), minus `offset`. */
static inline void q5_values(const uint8_t qs[16], const uint8_t qh4[4], int offset, int8_t q[32]) {
    const uint32_t qh = load_qh(qh4);
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)(((qs[j] & 0x0F) | (int)((qh >> j) & 1) << 4) - offset);
        q[j + 16] = (int8_t)(((qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4) - offset);
    }
}

float qt__dot_q5_0_q8_0_ref(const void *vx, const void *vy, int64_t n) {
    const block_q5_0 *x = vx;
    const block_q8_0 *y = vy;
    float acc[8] = {0};
    for (int64_t b = 0; b < n / QK5_0; b++) {
        int8_t q[32];
        q5_values(x[b].qs, x[b].qh, 16, q);
        block_lanes(acc, q, y[b].qs, h2f(x[b].d) * h2f(y[b].d));
    }
    return qt__hsum8_ref(acc);
}

float qt__dot_q5_1_q8_1_ref(const void *vx, const void *vy, int64_t n) {
    const block_q5_1 *x = vx;
    const block_q8_1 *y = vy;
    float acc[8] = {0}, mins = 0.0f;
    for (int64_t b = 0; b < n / QK5_1; b++) {
        int8_t q[32];
        q5_values(x[b].qs, x[b].qh, 0, q);
        mins = fmaf(h2f(x[b].m), h2f(y[b].s), mins);
        block_lanes(acc, q, y[b].qs, h2f(x[b].d) * h2f(y[b].d));
    }
    return qt__hsum8_ref(acc) + mins;
}

float qt__dot_q8_0_q8_0_ref(const void *vx, const void *vy, int64_t n) {
    const block_q8_0 *x = vx;
    const block_q8_0 *y = vy;
    float acc[8] = {0};
    for (int64_t b = 0; b < n / QK8_0; b++) block_lanes(acc, x[b].qs, y[b].qs, h2f(x[b].d) * h2f(y[b].d));
    return qt__hsum8_ref(acc);
}

/* IQ4_NL / IQ4_XS non-linear code book (docs/formats.md §3.4), defined in q_iq4.c. */

static inline void iq4_nl_values(const uint8_t qs[16], int8_t q[32]) {
    for (int j = 0; j < 16; j++) {
        q[j] = qt__kvalues_iq4nl[qs[j] & 0x0F];
        q[j + 16] = qt__kvalues_iq4nl[qs[j] >> 4];
    }
}

/* llama.cpp's x86 kernel takes the blocks in pairs, even blocks into one
 * 8-lane accumulator and odd ones into another, adds the two lane by lane
 * before hsum8, and adds a last unpaired block as one int32 sum with one FMA. */
float qt__dot_iq4_nl_q8_0_ref(const void *vx, const void *vy, int64_t n) {
    const block_iq4_nl *x = vx;
    const block_q8_0 *y = vy;
    const int64_t nb = n / QK4_NL;
    float acc[2][8] = {{0}};
    int64_t b = 0;
    int8_t q[32];
    for (; b + 1 < nb; b += 2)
        for (int p = 0; p < 2; p++) {
            iq4_nl_values(x[b + p].qs, q);
            block_lanes(acc[p], q, y[b + p].qs, h2f(y[b + p].d) * h2f(x[b + p].d));
        }
    for (int l = 0; l < 8; l++) acc[0][l] = acc[0][l] + acc[1][l];
    float sum = qt__hsum8_ref(acc[0]);
    if (b < nb) {
        iq4_nl_values(x[b].qs, q);
        int32_t s = 0;
        for (int e = 0; e < 32; e++) s += q[e] * y[b].qs[e];
        sum = fmaf(h2f(y[b].d) * h2f(x[b].d), (float)s, sum);
    }
    return sum;
}

/* MXFP4: E2M1 code book doubled to integers, so the E8M0 scale is halved
 * (2^(e-128)); docs/formats.md §3.4, §5.5. */
static const int8_t kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

float qt__dot_mxfp4_q8_0_ref(const void *vx, const void *vy, int64_t n) {
    const block_mxfp4 *x = vx;
    const block_q8_0 *y = vy;
    float acc[8] = {0};
    for (int64_t b = 0; b < n / QK_MXFP4; b++) {
        int8_t q[32];
        for (int j = 0; j < 16; j++) {
            q[j] = kvalues_mxfp4[x[b].qs[j] & 0x0F];
            q[j + 16] = kvalues_mxfp4[x[b].qs[j] >> 4];
        }
        block_lanes(acc, q, y[b].qs, ldexpf(1.0f, (int)x[b].e - 128) * h2f(y[b].d));
    }
    return qt__hsum8_ref(acc);
}

/* ---- Q1_0 (128 elements) and Q2_0 (64) against q8_0 (llama.cpp 2026) --------------- */

/* ggml's x86 ggml_vec_dot_q1_0_q8_0 (AVX2; AVX-512 builds take the same
 * path): per block, lane l of each of its four q8_0 sub-blocks K holds the
 * exact int32 sum over elements 4l..4l+3 of +-y (the sign bit picks); the
 * lanes are scaled by d_y (the first multiplied, the others fused), then
 * fused into the accumulator by d_x; hsum8 at the end. */
float qt__dot_q1_0_q8_0_ref(const void *vx, const void *vy, int64_t n) {
    const block_q1_0 *x = vx;
    const block_q8_0 *y = vy;
    float acc[8] = {0};
    for (int64_t b = 0; b < n / QK1_0; b++) {
        float blk[8];
        for (int k = 0; k < QK1_0 / QK8_0; k++) {
            const block_q8_0 *yk = &y[b * (QK1_0 / QK8_0) + k];
            const float dy = h2f(yk->d);
            for (int l = 0; l < 8; l++) {
                int32_t s = 0;
                for (int e = 32 * k + 4 * l; e < 32 * k + 4 * l + 4; e++)
                    s += (x[b].qs[e / 8] >> (e % 8)) & 1 ? yk->qs[e % 32] : -yk->qs[e % 32];
                blk[l] = k == 0 ? dy * (float)s : fmaf(dy, (float)s, blk[l]);
            }
        }
        const float dx = h2f(x[b].d);
        for (int l = 0; l < 8; l++) acc[l] = fmaf(dx, blk[l], acc[l]);
    }
    return qt__hsum8_ref(acc);
}

/* x86 has no SIMD ggml_vec_dot_q2_0_q8_0: llama.cpp runs the generic C,
 * contracted by its compiler (GCC's default -ffp-contract=fast, -mfma) into
 * one fused multiply-add per q8_0 sub-block (by d_y) and one per block (by
 * d_x). Codes 0..3 stand for -1..2. */
float qt__dot_q2_0_q8_0_ref(const void *vx, const void *vy, int64_t n) {
    const block_q2_0 *x = vx;
    const block_q8_0 *y = vy;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / QK2_0; b++) {
        float sumi = 0.0f;
        for (int k = 0; k < QK2_0 / QK8_0; k++) {
            const block_q8_0 *yk = &y[b * (QK2_0 / QK8_0) + k];
            int32_t s = 0;
            for (int e = 32 * k; e < 32 * k + 32; e++) s += (((x[b].qs[e / 4] >> (2 * (e % 4))) & 3) - 1) * yk->qs[e % 32];
            sumi = fmaf(h2f(yk->d), (float)s, sumi);
        }
        sum = fmaf(h2f(x[b].d), sumi, sum);
    }
    return sum;
}

/* ---- 256-element K-quant super-blocks against q8_K ------------------------------ */
/*
 * The float order of llama.cpp's x86 kernels (ggml-cpu/arch/x86/quants.c, the
 * AVX2 paths, which its AVX-512 builds run too). Per super-block, eight int32
 * lanes: lane l sums, each times its sub-block scale, the products of the
 * elements e with (e % 32) / 4 == l (maddubs + madd over 32-byte vectors).
 * Integer sums are exact, so only that split matters. Each lane goes to float
 * once per super-block and accumulates with one FMA by d = d_y * d_x; hsum8 at
 * the end. Where the mins go differs by format (below). dot_k_avx2.c computes
 * the same bits.
 */
static inline int k_lane(int e) { return (e % 32) / 4; }

static inline void k_lanes(float acc[8], float d, const int32_t lanes[8]) {
    for (int l = 0; l < 8; l++) acc[l] = fmaf(d, (float)lanes[l], acc[l]);
}

/* Q2_K: the mins enter the same accumulator first, lane l holding 16-element
 * sub-blocks 2l and 2l+1 (min times Q8_K's bsum), with -d_y * dmin. */
float qt__dot_q2_K_q8_K_ref(const void *vx, const void *vy, int64_t n) {
    const block_q2_K *x = vx;
    const block_q8_K *y = vy;
    float acc[8] = {0};
    for (int64_t b = 0; b < n / QK_K; b++) {
        const float d = y[b].d * h2f(x[b].d), dmin = -y[b].d * h2f(x[b].dmin);
        int32_t mins[8], lanes[8] = {0};
        for (int l = 0; l < 8; l++)
            mins[l] = (x[b].scales[2 * l] >> 4) * y[b].bsums[2 * l] + (x[b].scales[2 * l + 1] >> 4) * y[b].bsums[2 * l + 1];
        k_lanes(acc, dmin, mins);
        for (int e = 0; e < QK_K; e++) {
            const int h = e / 128, k = (e % 128) / 32, l = e % 32;
            const int q = (x[b].qs[32 * h + l] >> (2 * k)) & 3;
            lanes[k_lane(e)] += (x[b].scales[e / 16] & 0x0F) * q * y[b].qs[e];
        }
        k_lanes(acc, d, lanes);
    }
    return qt__hsum8_ref(acc);
}

/* Q3_K's sixteen 6-bit scales (docs/formats.md §3.4), minus 32. */
static void q3_K_scales(const uint8_t s[12], int sc[16]) {
    for (int j = 0; j < 16; j++) {
        const int lo = j < 8 ? (s[j] & 0x0F) : (s[j - 8] >> 4);
        const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        sc[j] = (lo | hi << 4) - 32;
    }
}

float qt__dot_q3_K_q8_K_ref(const void *vx, const void *vy, int64_t n) {
    const block_q3_K *x = vx;
    const block_q8_K *y = vy;
    float acc[8] = {0};
    for (int64_t b = 0; b < n / QK_K; b++) {
        int sc[16];
        q3_K_scales(x[b].scales, sc);
        int32_t lanes[8] = {0};
        for (int e = 0; e < QK_K; e++) {
            const int h = e / 128, k = (e % 128) / 32, l = e % 32;
            const int q2 = (x[b].qs[32 * h + l] >> (2 * k)) & 3;
            const int high = (x[b].hmask[l] >> (4 * h + k)) & 1;
            lanes[k_lane(e)] += sc[e / 16] * (q2 - (high ? 0 : 4)) * y[b].qs[e];
        }
        k_lanes(acc, y[b].d * h2f(x[b].d), lanes);
    }
    return qt__hsum8_ref(acc);
}

/* One Q4_K/Q5_K super-block against Q8_K: eight 32-element sub-blocks with
 * 6-bit scales and mins (docs/formats.md §3.4); qh is the Q5_K fifth-bit plane or
 * NULL for Q4_K. lanes[] as above; mins[k] = the min terms of sub-blocks 2k
 * and 2k+1 (min times the 32-element sum of Q8_K's bsums). */
static void k4_block(const uint8_t scales[12], const uint8_t *qs, const uint8_t *qh, const block_q8_K *y,
                     int32_t lanes[8], int32_t mins[4]) {
    for (int l = 0; l < 8; l++) lanes[l] = 0;
    for (int k = 0; k < 4; k++) mins[k] = 0;
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        qt__get_scale_min_k4(j, scales, &sc, &m);
        const int c = j / 2, shift = 4 * (j % 2);
        for (int l = 0; l < 32; l++) {
            int q = (qs[32 * c + l] >> shift) & 0x0F;
            if (qh) q |= ((qh[l] >> j) & 1) << 4;
            lanes[l / 4] += sc * q * y->qs[32 * j + l];
        }
        mins[j / 2] += m * (y->bsums[2 * j] + y->bsums[2 * j + 1]);
    }
}

/* Q4_K: the mins in a 4-lane accumulator of their own, FMA by -d_y * dmin,
 * reduced (0+2) + (1+3) and added after hsum8. */
float qt__dot_q4_K_q8_K_ref(const void *vx, const void *vy, int64_t n) {
    const block_q4_K *x = vx;
    const block_q8_K *y = vy;
    float acc[8] = {0}, accm[4] = {0};
    for (int64_t b = 0; b < n / QK_K; b++) {
        const float d = y[b].d * h2f(x[b].d), dmin = -y[b].d * h2f(x[b].dmin);
        int32_t lanes[8], mins[4];
        k4_block(x[b].scales, x[b].qs, NULL, &y[b], lanes, mins);
        for (int k = 0; k < 4; k++) accm[k] = fmaf(dmin, (float)mins[k], accm[k]);
        k_lanes(acc, d, lanes);
    }
    return qt__hsum8_ref(acc) + ((accm[0] + accm[2]) + (accm[1] + accm[3]));
}

/* Q5_K: the mins as one int32 per super-block into a scalar, FMA by -d_y * dmin. */
float qt__dot_q5_K_q8_K_ref(const void *vx, const void *vy, int64_t n) {
    const block_q5_K *x = vx;
    const block_q8_K *y = vy;
    float acc[8] = {0}, summs = 0.0f;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const float d = y[b].d * h2f(x[b].d), dmin = -y[b].d * h2f(x[b].dmin);
        int32_t lanes[8], mins[4];
        k4_block(x[b].scales, x[b].qs, x[b].qh, &y[b], lanes, mins);
        summs = fmaf(dmin, (float)(mins[0] + mins[1] + mins[2] + mins[3]), summs);
        k_lanes(acc, d, lanes);
    }
    return qt__hsum8_ref(acc) + summs;
}

/* Q6_K: codes 0..63 in the lanes, the -32 offset through Q8_K's bsums: lane l
 * less 32 * (scale * bsum) of 16-element sub-blocks 2l and 2l+1. */
float qt__dot_q6_K_q8_K_ref(const void *vx, const void *vy, int64_t n) {
    const block_q6_K *x = vx;
    const block_q8_K *y = vy;
    float acc[8] = {0};
    for (int64_t b = 0; b < n / QK_K; b++) {
        const int8_t *sc = x[b].scales;
        int32_t lanes[8];
        for (int l = 0; l < 8; l++) lanes[l] = -32 * (sc[2 * l] * y[b].bsums[2 * l] + sc[2 * l + 1] * y[b].bsums[2 * l + 1]);
        for (int e = 0; e < QK_K; e++) {
            const int h = e / 128, k = (e % 128) / 32, l = e % 32;
            const uint8_t ql = x[b].ql[64 * h + 32 * (k % 2) + l];
            const int q = ((k < 2 ? ql : ql >> 4) & 0x0F) | ((x[b].qh[32 * h + l] >> (2 * k)) & 3) << 4;
            lanes[k_lane(e)] += sc[e / 16] * q * y[b].qs[e];
        }
        k_lanes(acc, y[b].d * h2f(x[b].d), lanes);
    }
    return qt__hsum8_ref(acc);
}

float qt__dot_iq4_xs_q8_K_ref(const void *vx, const void *vy, int64_t n) {
    const block_iq4_xs *x = vx;
    const block_q8_K *y = vy;
    float acc[8] = {0};
    for (int64_t b = 0; b < n / QK_K; b++) {
        int32_t lanes[8] = {0};
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const int ls = ((x[b].scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) |
                           ((x[b].scales_h >> (2 * ib)) & 3) << 4;
            const uint8_t *qs = x[b].qs + 16 * ib;
            const int8_t *q8 = y[b].qs + 32 * ib;
            for (int j = 0; j < 16; j++) {
                lanes[j / 4] += (ls - 32) * qt__kvalues_iq4nl[qs[j] & 0x0F] * q8[j];
                lanes[4 + j / 4] += (ls - 32) * qt__kvalues_iq4nl[qs[j] >> 4] * q8[j + 16];
            }
        }
        k_lanes(acc, h2f(x[b].d) * y[b].d, lanes);
    }
    return qt__hsum8_ref(acc);
}

float qt__dot_tq2_0_q8_K_ref(const void *vx, const void *vy, int64_t n) {
    const block_tq2_0 *x = vx;
    const block_q8_K *y = vy;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / QK_K; b++) {
        int32_t isum = 0;
        for (int g = 0; g < 2; g++)
            for (int lane = 0; lane < 4; lane++)
                for (int m = 0; m < 32; m++)
                    isum += (((x[b].qs[32 * g + m] >> (2 * lane)) & 3) - 1) * y[b].qs[128 * g + 32 * lane + m];
        sum += (float)isum * (h2f(x[b].d) * y[b].d);
    }
    return sum;
}

/* ---- activation quantizers --------------------------------------------------- */

/* Round half to even, as the CPU backend's _mm256_round_ps(.., NEAREST) and
 * ggml's nearest_int (the 1.5*2^23 trick) both do. */
static inline int round_even(float v) { return (int)nearbyintf(v); }

/* quantize_row_q8_0 as ggml-cpu runs it on x86 (the AVX path: id = 127/amax,
 * round half to even), not the reference (1/d, round half away). */
void qt__act_q8_0_ref(const float *x, void *vy, int64_t n) {
    block_q8_0 *y = vy;
    for (int64_t b = 0; b < n / QK8_0; b++, x += QK8_0) {
        float amax = 0.0f;
        for (int j = 0; j < QK8_0; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f;
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        y[b].d = qt_f32_to_fp16(d);
        for (int j = 0; j < QK8_0; j++) y[b].qs[j] = (int8_t)round_even(x[j] * id);
    }
}

static void act_q8_1(const float *x, block_q8_1 *y, int64_t n) {
    for (int64_t b = 0; b < n / QK8_1; b++, x += QK8_1) {
        float amax = 0.0f;
        for (int j = 0; j < QK8_1; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f;
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        int32_t s = 0;
        for (int j = 0; j < QK8_1; j++) {
            y[b].qs[j] = (int8_t)round_even(x[j] * id);
            s += y[b].qs[j];
        }
        y[b].d = qt_f32_to_fp16(d);
        y[b].s = qt_f32_to_fp16(d * (float)s);
    }
}

/* quantize_row_q8_K_ref (docs/formats.md §3.4) is the Q8_K row's from_float
 * (q_k.c qt__quantize_q8_K), its SIMD variants chosen once from variants.c. */
static void act_q8_K(const float *x, block_q8_K *y, int64_t n) {
    qt__traits_dispatched(QT_TYPE_Q8_K)->from_float(x, y, n, NULL);
}

bool qt__act_type_supported(qt_type type) {
    switch (type) {
    case QT_TYPE_F32: case QT_TYPE_F16: case QT_TYPE_BF16:
    case QT_TYPE_Q8_0: case QT_TYPE_Q8_1: case QT_TYPE_Q8_K:
    case QT_TYPE_CT_I8: case QT_TYPE_CT_F8_ACT: case QT_TYPE_CT_F8_BLOCK:
        return true;
    default:
        return false;
    }
}

bool qt__act_quantize(qt_type type, const float *x, void *y, int64_t n) {
    switch (type) {
    case QT_TYPE_F32: memcpy(y, x, (size_t)n * sizeof *x); return true;
    case QT_TYPE_F16: qt__act_f16(x, y, n); return true;
    case QT_TYPE_BF16: {
        uint16_t *h = y;
        for (int64_t i = 0; i < n; i++) h[i] = qt_f32_to_bf16(x[i]);
        return true;
    }
    case QT_TYPE_Q8_0: qt__act_q8_0(x, y, n); return true;
    case QT_TYPE_Q8_1: act_q8_1(x, y, n); return true;
    case QT_TYPE_Q8_K: act_q8_K(x, y, n); return true;
    /* compressed-tensors W8A8 activations, as vLLM quantizes them (ct_rows.c) */
    case QT_TYPE_CT_I8: qt__ct_i8_act_quantize(x, y, n, NULL); return true;
    case QT_TYPE_CT_F8_ACT: qt__ct_f8_act_quantize(x, y, n, NULL); return true;
    case QT_TYPE_CT_F8_BLOCK: qt__ct_f8_block_act_quantize(x, y, n, NULL); return true;
    default: return false;
    }
}
