/* Number formats (docs/formats.md §5): every fp16, bf16 and fp8 code point, ties,
 * subnormals, overflow, saturation; fp32->fp16 against F16C hardware.
 *
 * The oracle below is independent of lib/num: it rounds in double with
 * nearbyint (round half to even) on an explicit grid of the target format,
 * instead of the bit tricks the library uses.
 */
#include <float.h>
#include <math.h>

#include "qtest.h"
#include "quanta.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

static uint32_t bits_of(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float float_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static bool same_bits(float a, float b) { return bits_of(a) == bits_of(b); }

/* Round x to a binary format with `man` stored mantissa bits and smallest
 * normal exponent `emin` (unbounded above), ties to even. */
static double oracle_round(double x, int man, int emin) {
    if (x == 0.0 || isnan(x) || isinf(x)) return x;
    int e;
    frexp(fabs(x), &e); /* |x| = f * 2^e, f in [0.5, 1) */
    int E = e - 1;
    if (E < emin) E = emin;
    const double quantum = ldexp(1.0, E - man);
    return copysign(nearbyint(fabs(x) / quantum) * quantum, x);
}

/* Values where rounding decisions change: every representable value of a
 * format, the midpoints to its neighbours, and one fp32 ulp either side. */
static int boundary_values(float v, float next, float out[5]) {
    const float mid = (float)(((double)v + (double)next) / 2.0);
    out[0] = v;
    out[1] = mid;
    out[2] = nextafterf(mid, -INFINITY);
    out[3] = nextafterf(mid, INFINITY);
    out[4] = next;
    return 5;
}

/* ---- fp16 ----------------------------------------------------------------- */

static double fp16_decode_oracle(uint16_t h) {
    const int e = (h >> 10) & 31, m = h & 1023;
    const double s = (h & 0x8000) ? -1.0 : 1.0;
    if (e == 31) return m ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp(m, -24);
    return s * ldexp(1024 + m, e - 25);
}

static uint16_t fp16_encode_oracle(float x) {
    if (isnan(x)) return (uint16_t)(0x7E00 | (signbit(x) ? 0x8000 : 0)); /* ggml's canonical NaN */
    const double r = oracle_round(x, 10, -14);
    if (fabs(r) > 65504.0) return signbit(x) ? 0xFC00 : 0x7C00;
    /* find the code: the value grid is monotone in the magnitude bits */
    int e;
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    const double a = fabs(r);
    if (a == 0.0) return sign;
    frexp(a, &e);
    if (e - 1 < -14) return (uint16_t)(sign | (uint16_t)(a / ldexp(1.0, -24)));
    const int m = (int)(a / ldexp(1.0, e - 1 - 10)) - 1024;
    return (uint16_t)(sign | ((e - 1 + 15) << 10) | m);
}

static void test_fp16_every_code_point(void) {
    int bad_decode = 0, bad_roundtrip = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        const float f = qt_fp16_to_f32((uint16_t)h);
        const double want = fp16_decode_oracle((uint16_t)h);
        if (isnan(want)) {
            if (!isnan(f) || (signbit(f) != 0) != ((h & 0x8000) != 0)) bad_decode++;
            /* NaN re-encodes to ggml's quiet NaN with the sign kept */
            if (qt_f32_to_fp16(f) != (uint16_t)(0x7E00 | (h & 0x8000))) bad_roundtrip++;
            continue;
        }
        if (!same_bits(f, (float)want)) bad_decode++;
        if (qt_f32_to_fp16(f) != h) bad_roundtrip++;
    }
    CHECK_EQ_INT(bad_decode, 0);
    CHECK_EQ_INT(bad_roundtrip, 0);
}

static void test_fp16_rounding_boundaries(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 0x7C00; h++) { /* positive finite codes and their next neighbour */
        float vals[5];
        const int n = boundary_values(qt_fp16_to_f32((uint16_t)h),
                                      h + 1 == 0x7C00 ? 65536.0f : qt_fp16_to_f32((uint16_t)(h + 1)), vals);
        for (int i = 0; i < n; i++)
            for (int s = 0; s < 2; s++) {
                const float x = s ? -vals[i] : vals[i];
                const uint16_t got = qt_f32_to_fp16(x), want = fp16_encode_oracle(x);
                if (got != want && bad++ < 5)
                    fprintf(stderr, "  fp16(%a) = 0x%04x, want 0x%04x\n", (double)x, got, want);
            }
    }
    CHECK_EQ_INT(bad, 0);
    /* docs/formats.md §5.3 */
    CHECK_EQ_INT(qt_f32_to_fp16(1.0f), 0x3C00);
    CHECK_EQ_INT(qt_f32_to_fp16(65504.0f), 0x7BFF);
    CHECK_EQ_INT(qt_f32_to_fp16(65519.99f), 0x7BFF);
    CHECK_EQ_INT(qt_f32_to_fp16(65520.0f), 0x7C00);
    CHECK_EQ_INT(qt_f32_to_fp16(-1e10f), 0xFC00);
    CHECK_EQ_INT(qt_f32_to_fp16(INFINITY), 0x7C00);
    CHECK_EQ_INT(qt_f32_to_fp16(0x1.0p-24f), 0x0001);
    CHECK_EQ_INT(qt_f32_to_fp16(0x1.0p-25f), 0x0000);          /* tie to even (0) */
    CHECK_EQ_INT(qt_f32_to_fp16(0x1.8p-24f), 0x0002);          /* tie to even (2) */
    CHECK_EQ_INT(qt_f32_to_fp16(1.0f + 0x1.0p-11f), 0x3C00);   /* tie: 1.0 is even */
    CHECK_EQ_INT(qt_f32_to_fp16(1.0f + 0x1.8p-10f), 0x3C02);   /* tie: up to even */
    CHECK_EQ_INT(qt_f32_to_fp16(-0.0f), 0x8000);
    CHECK_EQ_INT(qt_f32_to_fp16(float_of(0x7F800001u)), 0x7E00);
    CHECK_EQ_INT(qt_f32_to_fp16(float_of(0xFFC12345u)), 0xFE00);
}

/* A sparse walk over all 2^32 fp32 bit patterns. */
#define WALK_STRIDE 1021u

static void test_fp16_fp32_walk(void) {
    int bad = 0;
    uint64_t n = 0;
    for (uint64_t u = 0; u <= 0xFFFFFFFFu; u += WALK_STRIDE, n++) {
        const float x = float_of((uint32_t)u);
        const uint16_t got = qt_f32_to_fp16(x), want = fp16_encode_oracle(x);
        if (got != want && bad++ < 5) fprintf(stderr, "  fp16(%a) = 0x%04x, want 0x%04x\n", (double)x, got, want);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(n > 4000000);
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("f16c"))) static uint16_t f16c_convert(float x) {
    return (uint16_t)_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT);
}

static int f16c_compare(float x) {
    if (isnan(x)) return 0; /* F16C keeps the payload, ggml canonicalises: by design */
    const uint16_t hw = f16c_convert(x), sw = qt_f32_to_fp16(x);
    if (hw == sw) return 0;
    fprintf(stderr, "  fp16(%a): quanta 0x%04x, F16C 0x%04x\n", (double)x, sw, hw);
    return 1;
}
#endif

static void test_fp16_matches_f16c(void) {
#if defined(__x86_64__) || defined(__i386__)
    if (!qt_cpu()->f16c) SKIP("this CPU (or QUANTA_CPU) has no F16C: hardware cross-check not run");
    int bad = 0;
    for (uint64_t u = 0; u <= 0xFFFFFFFFu && bad < 5; u += WALK_STRIDE) bad += f16c_compare(float_of((uint32_t)u));
    for (uint32_t h = 0; h < 0x7C00 && bad < 5; h++) {
        float vals[5];
        const int n = boundary_values(qt_fp16_to_f32((uint16_t)h),
                                      h + 1 == 0x7C00 ? 65536.0f : qt_fp16_to_f32((uint16_t)(h + 1)), vals);
        for (int i = 0; i < n; i++) bad += f16c_compare(vals[i]) + f16c_compare(-vals[i]);
    }
    CHECK_EQ_INT(bad, 0);
#else
    SKIP("not an x86 CPU: no F16C to compare with");
#endif
}

/* ---- bf16 ------------------------------------------------------------------- */

static uint16_t bf16_encode_oracle(float x) {
    const uint32_t u = bits_of(x);
    if (isnan(x)) return (uint16_t)((u >> 16) | 0x40); /* ggml: keep sign/payload, set quiet bit */
    const double r = oracle_round(x, 7, -126);
    if (fabs(r) > (double)float_of(0x7F7F0000u)) return signbit(x) ? 0xFF80 : 0x7F80;
    return (uint16_t)(bits_of((float)r) >> 16); /* r is exact in fp32 with 16 zero low bits */
}

static void test_bf16(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        const float f = qt_bf16_to_f32((uint16_t)h);
        if (bits_of(f) != h << 16) bad++;
        const uint16_t back = qt_f32_to_bf16(f);
        if (isnan(f) ? back != (uint16_t)(h | 0x40) : back != h) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    bad = 0;
    for (uint64_t u = 0; u <= 0xFFFFFFFFu; u += WALK_STRIDE) {
        const float x = float_of((uint32_t)u);
        if (qt_f32_to_bf16(x) != bf16_encode_oracle(x) && bad++ < 5)
            fprintf(stderr, "  bf16(%a) = 0x%04x, want 0x%04x\n", (double)x, qt_f32_to_bf16(x), bf16_encode_oracle(x));
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(qt_f32_to_bf16(1.0f), 0x3F80);                     /* docs/formats.md §5.2 */
    CHECK_EQ_INT(qt_f32_to_bf16(float_of(0x3F808000u)), 0x3F80);    /* tie, even stays */
    CHECK_EQ_INT(qt_f32_to_bf16(float_of(0x3F818000u)), 0x3F82);    /* tie, odd goes up */
    CHECK_EQ_INT(qt_f32_to_bf16(float_of(0x3F808001u)), 0x3F81);
    CHECK_EQ_INT(qt_f32_to_bf16(float_of(0x7F7F8000u)), 0x7F80);    /* overflow to Inf */
    CHECK_EQ_INT(qt_f32_to_bf16(float_of(0x7F800001u)), 0x7FC0);    /* sNaN quieted, not Inf */
    CHECK_EQ_INT(qt_f32_to_bf16(float_of(0xFFA5A5A5u)), 0xFFE5);    /* sign and payload kept */
    CHECK_EQ_INT(qt_f32_to_bf16(float_of(0x00008000u)), 0x0000);    /* subnormal tie to even */
}

/* ---- FP8 --------------------------------------------------------------------- */

static double e4m3_decode_oracle(uint8_t v) {
    const int e = (v >> 3) & 15, m = v & 7;
    const double s = (v & 0x80) ? -1.0 : 1.0;
    if ((v & 0x7F) == 0x7F) return NAN;
    return e == 0 ? s * ldexp(m, -9) : s * ldexp(8 + m, e - 10);
}

static double e5m2_decode_oracle(uint8_t v) {
    const int e = (v >> 2) & 31, m = v & 3;
    const double s = (v & 0x80) ? -1.0 : 1.0;
    if (e == 31) return m ? NAN : s * INFINITY;
    return e == 0 ? s * ldexp(m, -16) : s * ldexp(4 + m, e - 17);
}

/* Code of an exactly representable value (searching the decode table). */
static uint8_t code_of(double v, double (*decode)(uint8_t), bool negative) {
    for (int c = 0; c < 256; c++) {
        const double d = decode((uint8_t)c);
        if (d == v && (signbit(d) != 0) == negative) return (uint8_t)c;
    }
    return 0xEE; /* not found: makes the comparison fail */
}

/* torch semantics (docs/formats.md §5.1): E4M3FN has no Inf, anything that rounds
 * past 448 (x >= 464 exclusive of the tie) is NaN 0x7F|sign. */
static uint8_t e4m3_encode_oracle(float x, bool saturate) {
    const uint8_t sign = signbit(x) ? 0x80 : 0;
    if (isnan(x)) return (uint8_t)(0x7F | sign);
    if (saturate) x = fminf(fmaxf(x, -448.0f), 448.0f);
    const double r = oracle_round(x, 3, -6);
    if (fabs(r) > 448.0) return (uint8_t)(0x7F | sign);
    return code_of(r, e4m3_decode_oracle, sign != 0);
}

static uint8_t e5m2_encode_oracle(float x, bool saturate) {
    const uint8_t sign = signbit(x) ? 0x80 : 0;
    if (isnan(x)) return (uint8_t)(0x7F | sign);
    if (saturate) x = fminf(fmaxf(x, -57344.0f), 57344.0f);
    const double r = oracle_round(x, 2, -14);
    if (fabs(r) > 57344.0) return (uint8_t)(0x7C | sign);
    return code_of(r, e5m2_decode_oracle, sign != 0);
}

typedef struct {
    const char *name;
    float (*decode)(uint8_t);
    uint8_t (*encode)(float);
    uint8_t (*encode_sat)(float);
    double (*decode_oracle)(uint8_t);
    uint8_t (*encode_oracle)(float, bool);
    uint8_t max_code; /* largest finite positive code */
    float past_max;   /* the grid value after the max (for boundary midpoints) */
} fp8_format;

static const fp8_format formats8[2] = {
    {"e4m3", qt_e4m3_to_f32, qt_f32_to_e4m3, qt_f32_to_e4m3_sat, e4m3_decode_oracle, e4m3_encode_oracle, 0x7E, 480.0f},
    {"e5m2", qt_e5m2_to_f32, qt_f32_to_e5m2, qt_f32_to_e5m2_sat, e5m2_decode_oracle, e5m2_encode_oracle, 0x7B, 65536.0f},
};

static int check_fp8_value(const fp8_format *f, float x) {
    int bad = 0;
    const uint8_t got = f->encode(x), want = f->encode_oracle(x, false);
    const uint8_t got_sat = f->encode_sat(x), want_sat = f->encode_oracle(x, true);
    if (got != want) {
        bad++;
        fprintf(stderr, "  %s(%a) = 0x%02x, want 0x%02x\n", f->name, (double)x, got, want);
    }
    if (got_sat != want_sat) {
        bad++;
        fprintf(stderr, "  %s_sat(%a) = 0x%02x, want 0x%02x\n", f->name, (double)x, got_sat, want_sat);
    }
    return bad;
}

static void test_fp8_every_code_point(void) {
    for (int k = 0; k < 2; k++) {
        const fp8_format *f = &formats8[k];
        int bad = 0;
        for (int c = 0; c < 256; c++) {
            const float v = f->decode((uint8_t)c);
            const double want = f->decode_oracle((uint8_t)c);
            if (isnan(want)) {
                if (!isnan(v) && bad++ < 5) fprintf(stderr, "  %s 0x%02x should be NaN\n", f->name, c);
                if (f->encode(v) != (uint8_t)(0x7F | (c & 0x80)) && bad++ < 5)
                    fprintf(stderr, "  %s NaN 0x%02x re-encodes to 0x%02x\n", f->name, c, f->encode(v));
                continue;
            }
            if (!same_bits(v, (float)want) && bad++ < 5)
                fprintf(stderr, "  %s 0x%02x decodes to %a, want %a\n", f->name, c, (double)v, want);
            if (f->encode(v) != c && bad++ < 5)
                fprintf(stderr, "  %s 0x%02x round trip gives 0x%02x\n", f->name, c, f->encode(v));
        }
        CHECK_MSG(bad == 0, "%s: %d code points wrong", f->name, bad);
    }
}

static void test_fp8_rounding_boundaries(void) {
    for (int k = 0; k < 2; k++) {
        const fp8_format *f = &formats8[k];
        int bad = 0;
        for (int c = 0; c <= f->max_code && bad < 10; c++) {
            float vals[5];
            const float next = c == f->max_code ? f->past_max : f->decode((uint8_t)(c + 1));
            const int n = boundary_values(f->decode((uint8_t)c), next, vals);
            for (int i = 0; i < n; i++) bad += check_fp8_value(f, vals[i]) + check_fp8_value(f, -vals[i]);
        }
        const float specials[] = {INFINITY, -INFINITY, NAN, -NAN, 1e30f, FLT_MAX, FLT_TRUE_MIN, 0x1.0p-30f};
        for (size_t i = 0; i < sizeof specials / sizeof *specials; i++) bad += check_fp8_value(f, specials[i]);
        for (uint64_t u = 0; u <= 0xFFFFFFFFu && bad < 10; u += WALK_STRIDE * 16)
            bad += check_fp8_value(f, float_of((uint32_t)u));
        CHECK_MSG(bad == 0, "%s: %d conversions wrong", f->name, bad);
    }
}

static void test_fp8_worked_examples(void) {
    /* docs/formats.md §5.1 */
    CHECK_EQ_INT(qt_f32_to_e4m3(1.0f), 0x38);
    CHECK_EQ_INT(qt_f32_to_e4m3(-2.0f), 0xC0);
    CHECK_EQ_INT(qt_f32_to_e4m3(0.3f), 0x2A);
    CHECK(qt_e4m3_to_f32(0x2A) == 0.3125f);
    CHECK(qt_e4m3_to_f32(0x7E) == 448.0f);
    CHECK(qt_e4m3_to_f32(0x08) == 0x1.0p-6f);
    CHECK(qt_e4m3_to_f32(0x01) == 0x1.0p-9f);
    CHECK(isnan(qt_e4m3_to_f32(0x7F)) && isnan(qt_e4m3_to_f32(0xFF)));
    CHECK_EQ_INT(qt_f32_to_e4m3(464.0f), 0x7E);                       /* tie to even: 448 */
    CHECK_EQ_INT(qt_f32_to_e4m3(nextafterf(464.0f, 1e9f)), 0x7F);     /* (464, 480) -> NaN */
    CHECK_EQ_INT(qt_f32_to_e4m3(479.9f), 0x7F);
    CHECK_EQ_INT(qt_f32_to_e4m3(480.0f), 0x7F);
    CHECK_EQ_INT(qt_f32_to_e4m3(-1000.0f), 0xFF);
    CHECK_EQ_INT(qt_f32_to_e4m3(INFINITY), 0x7F);
    CHECK_EQ_INT(qt_f32_to_e4m3_sat(470.0f), 0x7E);
    CHECK_EQ_INT(qt_f32_to_e4m3_sat(-INFINITY), 0xFE);
    CHECK_EQ_INT(qt_f32_to_e4m3_sat(NAN), 0x7F);
    CHECK_EQ_INT(qt_f32_to_e4m3(0x1.0p-10f), 0x00);                   /* subnormal tie to even */
    CHECK_EQ_INT(qt_f32_to_e4m3(0x1.8p-9f), 0x02);
    CHECK_EQ_INT(qt_f32_to_e4m3(-0.0f), 0x80);

    CHECK_EQ_INT(qt_f32_to_e5m2(1.0f), 0x3C);
    CHECK_EQ_INT(qt_f32_to_e5m2(0.3f), 0x35);
    CHECK(qt_e5m2_to_f32(0x35) == 0.3125f);
    CHECK(qt_e5m2_to_f32(0x7B) == 57344.0f);
    CHECK(qt_e5m2_to_f32(0x04) == 0x1.0p-14f);
    CHECK(qt_e5m2_to_f32(0x01) == 0x1.0p-16f);
    CHECK(isinf(qt_e5m2_to_f32(0x7C)) && isinf(qt_e5m2_to_f32(0xFC)) && qt_e5m2_to_f32(0xFC) < 0);
    CHECK(isnan(qt_e5m2_to_f32(0x7D)) && isnan(qt_e5m2_to_f32(0x7F)));
    CHECK_EQ_INT(qt_f32_to_e5m2(nextafterf(61440.0f, 0.0f)), 0x7B);
    CHECK_EQ_INT(qt_f32_to_e5m2(61440.0f), 0x7C);                     /* >= 61440 -> Inf */
    CHECK_EQ_INT(qt_f32_to_e5m2(-INFINITY), 0xFC);
    CHECK_EQ_INT(qt_f32_to_e5m2(NAN), 0x7F);
    CHECK_EQ_INT(qt_f32_to_e5m2_sat(1e9f), 0x7B);
    CHECK_EQ_INT(qt_f32_to_e5m2_sat(-INFINITY), 0xFB);
}

/* ---- FP4 E2M1, E8M0, NF4 ----------------------------------------------------------- */

static void test_e2m1(void) {
    static const float mags[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
    for (int c = 0; c < 16; c++) {
        const float v = qt_e2m1_to_f32((uint8_t)c);
        CHECK(v == ((c & 8) ? -mags[c & 7] : mags[c & 7]));
        CHECK_EQ_INT(qt_f32_to_e2m1(v), (c == 8) ? 0 : c); /* -0.0 has torch.sign 0: code 0 */
    }
    /* nearest with ties to the even mantissa (docs/formats.md §4.7), checked
     * against a brute-force search on a fine grid */
    int bad = 0;
    for (int i = -8 * 256; i <= 8 * 256; i++) {
        const float x = (float)i / 256.0f;
        int best = 0;
        float best_d = INFINITY;
        for (int k = 0; k < 8; k++) {
            const float d = fabsf(fabsf(x) - mags[k]);
            if (d < best_d || (d == best_d && (k & 1) == 0)) { best_d = d; best = k; }
        }
        const uint8_t want = (uint8_t)(best | (x < 0 ? 8 : 0));
        if (qt_f32_to_e2m1(x) != want && bad++ < 5)
            fprintf(stderr, "  e2m1(%g) = %d, want %d\n", (double)x, qt_f32_to_e2m1(x), want);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(qt_f32_to_e2m1(0.25f), 0);
    CHECK_EQ_INT(qt_f32_to_e2m1(nextafterf(0.25f, 1)), 1);
    CHECK_EQ_INT(qt_f32_to_e2m1(0.75f), 2);
    CHECK_EQ_INT(qt_f32_to_e2m1(1.25f), 2);
    CHECK_EQ_INT(qt_f32_to_e2m1(1.75f), 4);
    CHECK_EQ_INT(qt_f32_to_e2m1(2.5f), 4);
    CHECK_EQ_INT(qt_f32_to_e2m1(3.5f), 6);
    CHECK_EQ_INT(qt_f32_to_e2m1(5.0f), 6);
    CHECK_EQ_INT(qt_f32_to_e2m1(nextafterf(5.0f, 9)), 7);
    CHECK_EQ_INT(qt_f32_to_e2m1(1e30f), 7);            /* saturates */
    CHECK_EQ_INT(qt_f32_to_e2m1(-INFINITY), 15);
    CHECK_EQ_INT(qt_f32_to_e2m1(-0.1f), 8);            /* rounds to -0 */
    CHECK_EQ_INT(qt_f32_to_e2m1(-3.0f), 13);
}

static void test_e8m0(void) {
    for (int e = 0; e < 255; e++) CHECK(qt_e8m0_to_f32((uint8_t)e) == ldexpf(1.0f, e - 127));
    CHECK(qt_e8m0_to_f32(127) == 1.0f);
    CHECK(qt_e8m0_to_f32(0) == 0x1.0p-127f);
    CHECK(qt_e8m0_to_f32(254) == 0x1.0p127f);
    CHECK(isnan(qt_e8m0_to_f32(255)));
}

static void test_nf4(void) {
    CHECK(qt_nf4_codebook[0] == -1.0f && qt_nf4_codebook[7] == 0.0f && qt_nf4_codebook[15] == 1.0f);
    for (int i = 0; i < 16; i++) {
        CHECK_EQ_INT(qt_f32_to_nf4(qt_nf4_codebook[i]), i);
        if (i < 15) {
            CHECK(qt_nf4_codebook[i] < qt_nf4_codebook[i + 1]);
            const float a = qt_nf4_codebook[i], b = qt_nf4_codebook[i + 1];
            const float mid = a + (b - a) / 2;
            CHECK_EQ_INT(qt_f32_to_nf4(nextafterf(mid, -2)), i);
            CHECK_EQ_INT(qt_f32_to_nf4(nextafterf(mid, 2)), i + 1);
        }
    }
    CHECK_EQ_INT(qt_f32_to_nf4(-5.0f), 0);
    CHECK_EQ_INT(qt_f32_to_nf4(5.0f), 15);
    CHECK_EQ_INT(qt_f32_to_nf4(0.03f), 7);
    CHECK_EQ_INT(qt_f32_to_nf4(0.05f), 8);
    CHECK_EQ_INT(qt_f32_to_nf4(NAN), 7);
}

int main(void) {
    QT_RUN(test_fp16_every_code_point);
    QT_RUN(test_fp16_rounding_boundaries);
    QT_RUN(test_fp16_fp32_walk);
    QT_RUN(test_fp16_matches_f16c);
    QT_RUN(test_bf16);
    QT_RUN(test_fp8_every_code_point);
    QT_RUN(test_fp8_rounding_boundaries);
    QT_RUN(test_fp8_worked_examples);
    QT_RUN(test_e2m1);
    QT_RUN(test_e8m0);
    QT_RUN(test_nf4);
    return qt_test_finish("test_num");
}
