/* lib/quant/dot_k_avx2.c — AVX2 + FMA dot kernels of the 256-element
 * super-block formats (Q2_K..Q6_K, IQ4_XS) against Q8_K activations.
 *
 * Each gives its scalar reference's bits (dot.c, "K-quant super-blocks"): the
 * same eight int32 lanes per super-block (element e in lane (e % 32) / 4,
 * which is where maddubs + madd over a 32-byte vector put it), exact integer
 * sums, then the reference's float steps in its order. test_engine_dot
 * compares them for equality.
 */
#include <string.h>

#include "dot.h"
#include "blocks.h"
#include "dot_x86.h"
#include "simd_x86.h"

/* maddubs of unsigned codes by signed q8, then madd by int16 scales: the
 * eight int32 lanes of one 32-element group. */
static inline __m256i scaled_u8(__m256i codes, const int8_t *q8, __m256i scales) {
    const __m256i p16 = _mm256_maddubs_epi16(codes, _mm256_loadu_si256((const __m256i *)q8));
    return _mm256_madd_epi16(scales, p16);
}

static inline float d_of(const block_q8_K *y, qt_half h) { return y->d * _cvtsh_ss(h); }

float qt__dot_q2_K_q8_K_avx2(const void *vx, const void *vy, int64_t n) {
    const block_q2_K *x = vx;
    const block_q8_K *y = vy;
    const __m256i three = _mm256_set1_epi8(3);
    const __m128i low4 = _mm_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        const float d = d_of(&y[b], x[b].d), dmin = -y[b].d * _cvtsh_ss(x[b].dmin);
        const __m128i packed = _mm_loadu_si128((const __m128i *)x[b].scales);
        const __m128i sc = _mm_and_si128(packed, low4);
        const __m256i m = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), low4));
        const __m256i mins = _mm256_madd_epi16(m, _mm256_loadu_si256((const __m256i *)y[b].bsums));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(mins), acc);
        __m256i sum = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(x[b].qs + 32 * h));
            for (int k = 0; k < 4; k++) {
                const __m256i codes = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * k), three);
                sum = _mm256_add_epi32(sum, scaled_u8(codes, y[b].qs + 128 * h + 32 * k, qt__k_pair_scales(sc, 8 * h + 2 * k)));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sum), acc);
    }
    return qt__hsum8_avx(acc);
}

float qt__dot_q3_K_q8_K_avx2(const void *vx, const void *vy, int64_t n) {
    const block_q3_K *x = vx;
    const block_q8_K *y = vy;
    const __m256i three = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        const __m128i sc = qt__q3_K_scales(x[b].scales);
        const __m256i hm = _mm256_loadu_si256((const __m256i *)x[b].hmask);
        __m256i sum = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(x[b].qs + 32 * h));
            for (int k = 0; k < 4; k++) {
                const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * k), three);
                const __m256i high = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + k), one);
                /* q - 4 where the high bit is clear: -4..3 */
                const __m256i q = _mm256_sub_epi8(lo, _mm256_slli_epi16(_mm256_xor_si256(high, one), 2));
                const __m256i qy = _mm256_loadu_si256((const __m256i *)(y[b].qs + 128 * h + 32 * k));
                const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(qy, q));
                sum = _mm256_add_epi32(sum, _mm256_madd_epi16(qt__k_pair_scales(sc, 8 * h + 2 * k), p16));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d_of(&y[b], x[b].d)), _mm256_cvtepi32_ps(sum), acc);
    }
    return qt__hsum8_avx(acc);
}

/* The min terms of one super-block: lane k = m[2k] * S[2k] + m[2k+1] * S[2k+1],
 * S[j] the 32-element sum of Q8_K (two bsums). */
static inline __m128i k4_mins(const uint8_t m[8], const int16_t bsums[16]) {
    const __m128i lo = _mm_loadu_si128((const __m128i *)bsums), hi = _mm_loadu_si128((const __m128i *)(bsums + 8));
    const __m128i s32 = _mm_hadd_epi16(lo, hi);
    return _mm_madd_epi16(_mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)m)), s32);
}

/* The eight int32 lanes of one Q4_K/Q5_K super-block; qh NULL for Q4_K. */
static inline __m256i k4_lanes(const uint8_t *qs, const uint8_t *qh, const uint8_t sc[8], const int8_t *q8) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    const __m256i hb = qh ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
    __m256i sum = _mm256_setzero_si256();
    for (int c = 0; c < 4; c++) {
        const __m256i bytes = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
        __m256i lo = _mm256_and_si256(bytes, low4), hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low4);
        if (qh) {
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * c), one), 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * c + 1), one), 4));
        }
        sum = _mm256_add_epi32(sum, scaled_u8(lo, q8 + 64 * c, _mm256_set1_epi16(sc[2 * c])));
        sum = _mm256_add_epi32(sum, scaled_u8(hi, q8 + 64 * c + 32, _mm256_set1_epi16(sc[2 * c + 1])));
    }
    return sum;
}

float qt__dot_q4_K_q8_K_avx2(const void *vx, const void *vy, int64_t n) {
    const block_q4_K *x = vx;
    const block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps();
    __m128 accm = _mm_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        const float d = d_of(&y[b], x[b].d), dmin = -y[b].d * _cvtsh_ss(x[b].dmin);
        uint8_t sc[8], m[8];
        qt__k4_scales(x[b].scales, sc, m);
        accm = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(k4_mins(m, y[b].bsums)), accm);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(k4_lanes(x[b].qs, NULL, sc, y[b].qs)), acc);
    }
    accm = _mm_add_ps(accm, _mm_movehl_ps(accm, accm));
    accm = _mm_add_ss(accm, _mm_movehdup_ps(accm));
    return qt__hsum8_avx(acc) + _mm_cvtss_f32(accm);
}

float qt__dot_q5_K_q8_K_avx2(const void *vx, const void *vy, int64_t n) {
    const block_q5_K *x = vx;
    const block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps();
    float summs = 0.0f;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const float d = d_of(&y[b], x[b].d), dmin = -y[b].d * _cvtsh_ss(x[b].dmin);
        uint8_t sc[8], m[8];
        qt__k4_scales(x[b].scales, sc, m);
        __m128i mins = k4_mins(m, y[b].bsums);
        mins = _mm_add_epi32(mins, _mm_unpackhi_epi64(mins, mins));
        mins = _mm_add_epi32(mins, _mm_shuffle_epi32(mins, 1));
        summs = fmaf(dmin, (float)_mm_cvtsi128_si32(mins), summs);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(k4_lanes(x[b].qs, x[b].qh, sc, y[b].qs)), acc);
    }
    return qt__hsum8_avx(acc) + summs;
}

float qt__dot_q6_K_q8_K_avx2(const void *vx, const void *vy, int64_t n) {
    const block_q6_K *x = vx;
    const block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        const __m128i sc = _mm_loadu_si128((const __m128i *)x[b].scales);
        /* the -32 offset: 32 * (scale * bsum), pairs of 16-element sub-blocks per lane */
        const __m256i offset = _mm256_slli_epi32(
            _mm256_madd_epi16(_mm256_cvtepi8_epi16(sc), _mm256_loadu_si256((const __m256i *)y[b].bsums)), 5);
        __m256i sum = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            __m256i codes[4];
            qt__q6_K_codes_avx2(x[b].ql + 64 * h, x[b].qh + 32 * h, codes);
            for (int k = 0; k < 4; k++)
                sum = _mm256_add_epi32(sum, scaled_u8(codes[k], y[b].qs + 128 * h + 32 * k, qt__k_pair_scales(sc, 8 * h + 2 * k)));
        }
        sum = _mm256_sub_epi32(sum, offset);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d_of(&y[b], x[b].d)), _mm256_cvtepi32_ps(sum), acc);
    }
    return qt__hsum8_avx(acc);
}

float qt__dot_iq4_xs_q8_K_avx2(const void *vx, const void *vy, int64_t n) {
    const block_iq4_xs *x = vx;
    const block_q8_K *y = vy;
    const __m128i book = _mm_loadu_si128((const __m128i *)qt__kvalues_iq4nl), low = _mm_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        __m256i sum = _mm256_setzero_si256();
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const int ls = ((x[b].scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) | ((x[b].scales_h >> (2 * ib)) & 3) << 4;
            const __m128i q = _mm_loadu_si128((const __m128i *)(x[b].qs + 16 * ib));
            const __m256i qx = _mm256_set_m128i(_mm_shuffle_epi8(book, _mm_and_si128(_mm_srli_epi16(q, 4), low)),
                                                _mm_shuffle_epi8(book, _mm_and_si128(q, low)));
            const __m256i qy = _mm256_loadu_si256((const __m256i *)(y[b].qs + 32 * ib));
            const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(qx, qx), _mm256_sign_epi8(qy, qx));
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_set1_epi16((short)(ls - 32)), p16));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(x[b].d) * y[b].d), _mm256_cvtepi32_ps(sum), acc);
    }
    return qt__hsum8_avx(acc);
}
