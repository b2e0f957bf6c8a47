/* lib/engine/attn_avx2.c — AVX2 + FMA + F16C attention kernels, one per KV
 * format, reading the cache in its stored form (attn.h gives the float order
 * they share with their scalar references in attn.c, bit for bit).
 *
 * Decoding eight elements:
 *   f16   vcvtph2ps (F16C), exact;
 *   bf16  the 16 bits shifted to the top of an f32;
 *   e5m2  the byte shifted to the top of an f16 (E5M2 is binary16 without its
 *         low 8 mantissa bits), then vcvtph2ps;
 *   e4m3  the 7 magnitude bits placed at f32 bits 20..26 (3 mantissa bits below
 *         the exponent) read as a float: 2^(e-127) (1 + m/8), or m 2^-149 for
 *         e = 0; times 2^120 rebias it exactly (E4M3's bias is 7), subnormals
 *         included; the sign bit moved to bit 31; S.1111.111 is NaN;
 *   int8  sign-extended to int32 and converted.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "attn.h"

static inline __m256 dec8_f32(const void *p, int32_t i) { return _mm256_loadu_ps((const float *)p + i); }
static inline __m256 dec8_f16(const void *p, int32_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
}
static inline __m256 dec8_bf16(const void *p, int32_t i) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
static inline __m128i load8_bytes(const void *p, int32_t i) {
    int64_t x;
    memcpy(&x, (const uint8_t *)p + i, 8);
    return _mm_cvtsi64_si128(x);
}
static inline __m256 dec8_e5m2(const void *p, int32_t i) {
    const __m128i h = _mm_slli_epi16(_mm_cvtepu8_epi16(load8_bytes(p, i)), 8);
    return _mm256_cvtph_ps(h);
}
static inline __m256 dec8_e4m3(const void *p, int32_t i) {
    const __m256i b = _mm256_cvtepu8_epi32(load8_bytes(p, i));
    const __m256i mag = _mm256_and_si256(b, _mm256_set1_epi32(0x7f));
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x80)), 24);
    __m256 v = _mm256_mul_ps(_mm256_castsi256_ps(_mm256_slli_epi32(mag, 20)), _mm256_set1_ps(0x1p120f));
    const __m256 nan = _mm256_castsi256_ps(_mm256_cmpeq_epi32(mag, _mm256_set1_epi32(0x7f)));
    v = _mm256_blendv_ps(v, _mm256_set1_ps(NAN), nan);
    return _mm256_or_ps(v, _mm256_castsi256_ps(sign));
}
static inline __m256 dec8_i8(const void *p, int32_t i) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(load8_bytes(p, i)));
}

/* a_j = l_j + l_(j+4), then (a0+a1) + (a2+a3): one row's sum */
static inline float hsum8(__m256 v) {
    const __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 h = _mm_hadd_ps(a, a);
    return _mm_cvtss_f32(_mm_hadd_ps(h, h));
}

/* The same sum for eight rows at once, row p's in lane p. */
static inline __m256 hsum8x8(const __m256 *r) {
    __m256 t[4];
    for (int k = 0; k < 4; k++)
        t[k] = _mm256_add_ps(_mm256_permute2f128_ps(r[2 * k], r[2 * k + 1], 0x20),
                             _mm256_permute2f128_ps(r[2 * k], r[2 * k + 1], 0x31));
    /* (p0 p2 p4 p6 | p1 p3 p5 p7) */
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(t[0], t[1]), _mm256_hadd_ps(t[2], t[3]));
    return _mm256_permutevar8x32_ps(h, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* scalar tails: the reference's own decoders would need the library's
 * converters; these give the same values */
static inline float tail_f32(const void *p, int32_t i) { return ((const float *)p)[i]; }
static inline float tail_f16(const void *p, int32_t i) {
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(((const uint16_t *)p)[i])));
}
static inline float tail_bf16(const void *p, int32_t i) {
    const uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline float tail_e5m2(const void *p, int32_t i) {
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128((int)((const uint8_t *)p)[i] << 8)));
}
static inline float tail_e4m3(const void *p, int32_t i) {
    float l[8];
    uint8_t b[8] = {((const uint8_t *)p)[i]};
    _mm256_storeu_ps(l, dec8_e4m3(b, 0));
    return l[0];
}
static inline float tail_i8(const void *p, int32_t i) { return (float)((const int8_t *)p)[i]; }

#define KV_AVX2(t)                                                                              \
    void qt__attn_kdot_##t##_avx2(const void *k, size_t stride, const float *q, int32_t n, int32_t np, float *out) { \
        const int32_t n8 = n - n % 8;                                                           \
        int32_t p = 0;                                                                          \
        for (; p + 8 <= np; p += 8) { /* eight rows: one reduction for all */                   \
            const uint8_t *k0 = (const uint8_t *)k + (size_t)p * stride;                        \
            __m256 acc[8];                                                                      \
            for (int r = 0; r < 8; r++) acc[r] = _mm256_setzero_ps();                           \
            for (int32_t i = 0; i < n8; i += 8) {                                               \
                const __m256 qv = _mm256_loadu_ps(q + i);                                       \
                for (int r = 0; r < 8; r++) acc[r] = _mm256_fmadd_ps(qv, dec8_##t(k0 + r * stride, i), acc[r]); \
            }                                                                                   \
            _mm256_storeu_ps(out + p, hsum8x8(acc));                                            \
            for (int r = 0; r < 8 && n8 < n; r++)                                               \
                for (int32_t i = n8; i < n; i++) out[p + r] = fmaf(q[i], tail_##t(k0 + r * stride, i), out[p + r]); \
        }                                                                                       \
        for (; p < np; p++) {                                                                   \
            const uint8_t *kp = (const uint8_t *)k + (size_t)p * stride;                        \
            __m256 acc = _mm256_setzero_ps();                                                   \
            for (int32_t i = 0; i < n8; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), dec8_##t(kp, i), acc); \
            float s = hsum8(acc);                                                               \
            for (int32_t i = n8; i < n; i++) s = fmaf(q[i], tail_##t(kp, i), s);                \
            out[p] = s;                                                                         \
        }                                                                                       \
    }                                                                                           \
    void qt__attn_vacc_##t##_avx2(float *acc, const void *v, size_t stride, const float *w, int32_t np, int32_t n) { \
        const int32_t n8 = n - n % 8;                                                           \
        int32_t i = 0;                                                                          \
        for (; i + 32 <= n8; i += 32) { /* 32 accumulators in registers across the rows */       \
            __m256 a0 = _mm256_loadu_ps(acc + i), a1 = _mm256_loadu_ps(acc + i + 8);            \
            __m256 a2 = _mm256_loadu_ps(acc + i + 16), a3 = _mm256_loadu_ps(acc + i + 24);      \
            const uint8_t *vp = v;                                                              \
            for (int32_t p = 0; p < np; p++, vp += stride) {                                    \
                const __m256 wv = _mm256_broadcast_ss(w + p);                                   \
                a0 = _mm256_fmadd_ps(dec8_##t(vp, i), wv, a0);                                  \
                a1 = _mm256_fmadd_ps(dec8_##t(vp, i + 8), wv, a1);                              \
                a2 = _mm256_fmadd_ps(dec8_##t(vp, i + 16), wv, a2);                             \
                a3 = _mm256_fmadd_ps(dec8_##t(vp, i + 24), wv, a3);                             \
            }                                                                                   \
            _mm256_storeu_ps(acc + i, a0), _mm256_storeu_ps(acc + i + 8, a1);                   \
            _mm256_storeu_ps(acc + i + 16, a2), _mm256_storeu_ps(acc + i + 24, a3);             \
        }                                                                                       \
        for (; i < n8; i += 8) {                                                                \
            __m256 a0 = _mm256_loadu_ps(acc + i);                                               \
            const uint8_t *vp = v;                                                              \
            for (int32_t p = 0; p < np; p++, vp += stride)                                      \
                a0 = _mm256_fmadd_ps(dec8_##t(vp, i), _mm256_broadcast_ss(w + p), a0);          \
            _mm256_storeu_ps(acc + i, a0);                                                      \
        }                                                                                       \
        for (; i < n; i++) {                                                                    \
            const uint8_t *vp = v;                                                              \
            for (int32_t p = 0; p < np; p++, vp += stride) acc[i] = fmaf(tail_##t(vp, i), w[p], acc[i]); \
        }                                                                                       \
    }
KV_AVX2(f32)
KV_AVX2(f16)
KV_AVX2(bf16)
KV_AVX2(e4m3)
KV_AVX2(e5m2)
KV_AVX2(i8)

/* qt__attn_exp1 eight at a time */
void qt__attn_exp_avx2(float *x, int32_t n) {
    const __m256 shift = _mm256_set1_ps(0x1.8p23f), log2e = _mm256_set1_ps(0x1.715476p+0f);
    const __m256 ln2_hi = _mm256_set1_ps(0x1.62e4p-1f), ln2_lo = _mm256_set1_ps(0x1.7f7d1cp-20f);
    const __m256 c5 = _mm256_set1_ps(0x1.0e4020p-7f), c4 = _mm256_set1_ps(0x1.573e2ep-5f);
    const __m256 c3 = _mm256_set1_ps(0x1.555e66p-3f), c2 = _mm256_set1_ps(0x1.fffdb6p-2f);
    const __m256 c1 = _mm256_set1_ps(0x1.ffffecp-1f), one = _mm256_set1_ps(1.0f), lim = _mm256_set1_ps(-125.0f);
    const int32_t n8 = n - n % 8;
    for (int32_t i = 0; i < n8; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256 k = _mm256_sub_ps(_mm256_fmadd_ps(v, log2e, shift), shift);
        const __m256 b = _mm256_fnmadd_ps(k, ln2_lo, _mm256_fnmadd_ps(k, ln2_hi, v));
        const __m256 u = _mm256_mul_ps(b, b);
        const __m256 j = _mm256_fmadd_ps(
            _mm256_fmadd_ps(_mm256_fmadd_ps(c5, b, c4), u, _mm256_fmadd_ps(c3, b, c2)), u, _mm256_fmadd_ps(c1, b, one));
        const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
        const __m256 r = _mm256_mul_ps(j, _mm256_castsi256_ps(e));
        _mm256_storeu_ps(x + i, _mm256_andnot_ps(_mm256_cmp_ps(k, lim, _CMP_LT_OQ), r));
    }
    for (int32_t i = n8; i < n; i++) x[i] = qt__attn_exp1(x[i]);
}

/* ---- several query heads on the same rows (GQA): kdot_heads, vacc_heads ----------------
 *
 * Up to four heads per pass. kdot: KEYS = 8 / H rows at a time, each 8-element chunk
 * decoded once and fused into the H heads' accumulators (H x KEYS of them, hsum8x8 reduces
 * all at once); vacc: 16 elements x H heads in registers across the rows, each row's chunk
 * decoded once. Each output keeps the one-head kernel's chain of fused adds, so the bits
 * are kdot's / vacc's head by head. */
#define ATTN_INLINE static inline __attribute__((always_inline))

/* kdot: heads in pairs (4 rows x 2 heads per reduction). The score dot is bound by its FMAs
 * and reductions more than by the decode: in one loaded-machine run of bench_attn --prefill
 * --kv f16 (one thread, GFLOP per CPU second) one head at a time gave 14.2, pairs 22.3, four
 * heads x 2 rows 20.1 (and with scattered outputs and q reloaded per row, four heads had
 * measured slower than one head in perf). */
#define KDOT_HEADS_DISPATCH(t)                                                                  \
    int32_t h = 0;                                                                              \
    for (; h + 2 <= nh; h += 2)                                                                 \
        kdot_h_##t(k, stride, q + h * q_stride, q_stride, 2, n, np, out + h * out_stride, out_stride); \
    if (h < nh) qt__attn_kdot_##t##_avx2(k, stride, q + h * q_stride, n, np, out + h * out_stride);

#define KV_HEADS_AVX2(t)                                                                        \
    ATTN_INLINE void kdot_h_##t(const void *k, size_t stride, const float *q, size_t qs, const int H, int32_t n, \
                                int32_t np, float *out, size_t os) {                            \
        const int32_t n8 = n - n % 8;                                                           \
        const int KEYS = 8 / H;                                                                 \
        int32_t p = 0;                                                                          \
        for (; p + KEYS <= np; p += KEYS) {                                                     \
            const uint8_t *k0 = (const uint8_t *)k + (size_t)p * stride;                        \
            __m256 acc[8]; /* head h, row r: acc[h * KEYS + r], so a head's rows are adjacent lanes */ \
            for (int r = 0; r < 8; r++) acc[r] = _mm256_setzero_ps();                           \
            for (int32_t i = 0; i < n8; i += 8) {                                               \
                __m256 qv[4];                                                                   \
                for (int h = 0; h < H; h++) qv[h] = _mm256_loadu_ps(q + h * qs + i);            \
                for (int r = 0; r < KEYS; r++) {                                                \
                    const __m256 kv = dec8_##t(k0 + r * stride, i);                             \
                    for (int h = 0; h < H; h++) acc[h * KEYS + r] = _mm256_fmadd_ps(qv[h], kv, acc[h * KEYS + r]); \
                }                                                                               \
            }                                                                                   \
            float l[8];                                                                         \
            _mm256_storeu_ps(l, hsum8x8(acc));                                                  \
            for (int h = 0; h < H; h++) memcpy(out + h * os + p, l + h * KEYS, (size_t)KEYS * sizeof(float)); \
            if (n8 < n)                                                                         \
                for (int h = 0; h < H; h++)                                                     \
                    for (int r = 0; r < KEYS; r++) {                                            \
                        float s = out[h * os + p + r];                                          \
                        for (int32_t i = n8; i < n; i++) s = fmaf(q[h * qs + i], tail_##t(k0 + r * stride, i), s); \
                        out[h * os + p + r] = s;                                                \
                    }                                                                           \
        }                                                                                       \
        for (; p < np; p++) {                                                                   \
            const uint8_t *kp = (const uint8_t *)k + (size_t)p * stride;                        \
            __m256 acc[4];                                                                      \
            for (int h = 0; h < H; h++) acc[h] = _mm256_setzero_ps();                           \
            for (int32_t i = 0; i < n8; i += 8) {                                               \
                const __m256 kv = dec8_##t(kp, i);                                              \
                for (int h = 0; h < H; h++) acc[h] = _mm256_fmadd_ps(_mm256_loadu_ps(q + h * qs + i), kv, acc[h]); \
            }                                                                                   \
            for (int h = 0; h < H; h++) {                                                       \
                float s = hsum8(acc[h]);                                                        \
                for (int32_t i = n8; i < n; i++) s = fmaf(q[h * qs + i], tail_##t(kp, i), s);   \
                out[h * os + p] = s;                                                            \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    void qt__attn_kdot_heads_##t##_avx2(const void *k, size_t stride, const float *q, size_t q_stride, int32_t nh, \
                                        int32_t n, int32_t np, float *out, size_t out_stride) { \
        KDOT_HEADS_DISPATCH(t)                                                                  \
    }                                                                                           \
    ATTN_INLINE void vacc_h_##t(float *acc, size_t as, const void *v, size_t stride, const float *w, size_t ws, \
                                const int H, int32_t np, int32_t n) {                           \
        const int32_t n8 = n - n % 8;                                                           \
        int32_t i = 0;                                                                          \
        for (; i + 16 <= n8; i += 16) {                                                         \
            __m256 a[4][2];                                                                     \
            for (int h = 0; h < H; h++)                                                         \
                a[h][0] = _mm256_loadu_ps(acc + h * as + i), a[h][1] = _mm256_loadu_ps(acc + h * as + i + 8); \
            const uint8_t *vp = v;                                                              \
            for (int32_t p = 0; p < np; p++, vp += stride) {                                    \
                const __m256 x0 = dec8_##t(vp, i), x1 = dec8_##t(vp, i + 8);                    \
                for (int h = 0; h < H; h++) {                                                   \
                    const __m256 wv = _mm256_broadcast_ss(w + h * ws + p);                      \
                    a[h][0] = _mm256_fmadd_ps(x0, wv, a[h][0]);                                 \
                    a[h][1] = _mm256_fmadd_ps(x1, wv, a[h][1]);                                 \
                }                                                                               \
            }                                                                                   \
            for (int h = 0; h < H; h++)                                                         \
                _mm256_storeu_ps(acc + h * as + i, a[h][0]), _mm256_storeu_ps(acc + h * as + i + 8, a[h][1]); \
        }                                                                                       \
        for (; i < n8; i += 8) {                                                                \
            __m256 a[4];                                                                        \
            for (int h = 0; h < H; h++) a[h] = _mm256_loadu_ps(acc + h * as + i);               \
            const uint8_t *vp = v;                                                              \
            for (int32_t p = 0; p < np; p++, vp += stride) {                                    \
                const __m256 x0 = dec8_##t(vp, i);                                              \
                for (int h = 0; h < H; h++) a[h] = _mm256_fmadd_ps(x0, _mm256_broadcast_ss(w + h * ws + p), a[h]); \
            }                                                                                   \
            for (int h = 0; h < H; h++) _mm256_storeu_ps(acc + h * as + i, a[h]);               \
        }                                                                                       \
        for (; i < n; i++)                                                                      \
            for (int h = 0; h < H; h++) {                                                       \
                const uint8_t *vp = v;                                                          \
                for (int32_t p = 0; p < np; p++, vp += stride)                                  \
                    acc[h * as + i] = fmaf(tail_##t(vp, i), w[h * ws + p], acc[h * as + i]);    \
            }                                                                                   \
    }                                                                                           \
    void qt__attn_vacc_heads_##t##_avx2(float *acc, size_t acc_stride, const void *v, size_t stride, const float *w, \
                                        size_t w_stride, int32_t nh, int32_t np, int32_t n) {   \
        for (int32_t h = 0; h < nh; h += 4) {                                                   \
            float *ah = acc + h * acc_stride;                                                   \
            const float *wh = w + h * w_stride;                                                 \
            switch (nh - h < 4 ? nh - h : 4) {                                                  \
            case 4: vacc_h_##t(ah, acc_stride, v, stride, wh, w_stride, 4, np, n); break;       \
            case 3: vacc_h_##t(ah, acc_stride, v, stride, wh, w_stride, 3, np, n); break;       \
            case 2: vacc_h_##t(ah, acc_stride, v, stride, wh, w_stride, 2, np, n); break;       \
            default: qt__attn_vacc_##t##_avx2(ah, v, stride, wh, np, n); break;                 \
            }                                                                                   \
        }                                                                                       \
    }
KV_HEADS_AVX2(f32)
KV_HEADS_AVX2(f16)
KV_HEADS_AVX2(bf16)
KV_HEADS_AVX2(e4m3)
KV_HEADS_AVX2(e5m2)
KV_HEADS_AVX2(i8)
