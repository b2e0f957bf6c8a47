/* lib/quant/mxfp4_avx2.c — AVX2 form of the GGUF MXFP4 x Q8_0 dot
 * (qt__dot_mxfp4_q8_0_ref, dot.c): the 4-bit codes looked up in the doubled
 * E2M1 code book with one pshufb per nibble half (as llama.cpp's x86 kernel
 * and dot_avx2.c's iq4_nl do), exact int32 lane sums (maddubs + madd), and the
 * reference's one 8-lane accumulator fused with 2^(e-128) * d_y per block, so
 * the bits are the reference's (test_engine_dot compares every variant).
 */
#include <immintrin.h>
#include <string.h>

#include "blocks.h"
#include "dot.h"
#include "dot_x86.h"

/* dot.c's kvalues_mxfp4: E2M1 values times 2 */
static const int8_t book_values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* ldexpf(1, e - 128) from the bits (exact: 2^-128 and 2^-127 are f32 subnormals) */
static inline float half_e8m0(uint8_t e) {
    const uint32_t u = e >= 2 ? (uint32_t)(e - 1) << 23 : 0x00200000u << e;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float qt__dot_mxfp4_q8_0_avx2(const void *vx, const void *vy, int64_t n) {
    const block_mxfp4 *x = vx;
    const block_q8_0 *y = vy;
    const __m128i book = _mm_loadu_si128((const __m128i *)book_values), low = _mm_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_MXFP4; b++) {
        const __m128i q = _mm_loadu_si128((const __m128i *)x[b].qs);
        const __m256i qx = _mm256_set_m128i(_mm_shuffle_epi8(book, _mm_and_si128(_mm_srli_epi16(q, 4), low)),
                                            _mm_shuffle_epi8(book, _mm_and_si128(q, low)));
        const __m256i qy = _mm256_loadu_si256((const __m256i *)y[b].qs);
        const __m256 d = _mm256_set1_ps(half_e8m0(x[b].e) * _cvtsh_ss(y[b].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(qt__lane_sums_i8(qx, qy)), acc);
    }
    return qt__hsum8_avx(acc);
}
