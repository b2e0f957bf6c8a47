/* Engine dot kernels and activation quantizers.
 *
 * Every vec_dot kernel is checked against an independent computation: the
 * same quantized weight row dequantized with the traits' to_float (tested
 * bit-exact against llama.cpp elsewhere) dotted in double with the
 * activation row dequantized the same way. Integer kernels must agree to
 * float rounding. The activation quantizers are checked against their
 * definitions (llama.cpp's CPU quantize_row_q8_0/q8_1/q8_K). */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "quant/dot.h"
#include "quant/gemm.h"
#include "quant/gemm_f16.h"
#include "quant/gemm_k.h"
#include "quant/gemm_k16.h"
#include "qtest.h"
#include "quant/blocks.h"
#include "quant/variants.h"
#include "quanta.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float frand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((double)(rng >> 11) * 0x1.0p-52 - 1.0);
}

static void fill(float *x, int64_t n, float scale) {
    for (int64_t i = 0; i < n; i++) x[i] = scale * frand() * (1.0f + 3.0f * (i % 37 == 0)); /* a few outliers */
}

/* vec_dot(quantize(x), act(y)), and the fast orders' references, against
 * dequant(x) . dequant(act(y)) in double. */
static void check_type(qt_type t, int64_t n) {
    const qt_type_traits *tr = qt_type_get(t);
    const qt_type_traits *vt = qt_type_get(tr->vec_dot_type);
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    float *xd = malloc((size_t)n * sizeof *xd), *yd = malloc((size_t)n * sizeof *yd);
    void *xq = malloc(qt_row_size(t, n)), *yq = malloc(qt_row_size(vt->type, n));
    /* IQ2_XXS, IQ2_XS, IQ1_S cannot quantize without importance weights: ones */
    float *im = NULL;
    if (qt_type_requires_imatrix(t)) {
        im = malloc((size_t)n * sizeof *im);
        for (int64_t i = 0; i < n; i++) im[i] = 1.0f;
    }
    for (int rep = 0; rep < 20; rep++) {
        fill(x, n, 0.5f + rep);
        fill(y, n, 2.0f / (1 + rep));
        CHECK_OK(qt_quantize_rows(t, x, xq, 1, n, im));
        CHECK(qt__act_quantize(vt->type, y, yq, n));
        tr->to_float(xq, xd, n);
        vt->to_float(yq, yd, n);
        double want = 0.0, mag = 0.0;
        for (int64_t i = 0; i < n; i++) {
            want += (double)xd[i] * yd[i];
            mag += fabs((double)xd[i] * yd[i]);
        }
        if (vt->type == QT_TYPE_Q8_1) {
            /* q4_1/q5_1: the min term uses y.s = f16(d_y * sum q_y), llama.cpp's stored block sum,
             * in place of the exact sum of the dequantized activations. */
            for (int64_t b = 0; b < n / 32; b++) {
                const qt_half m = t == QT_TYPE_Q4_1 ? ((const block_q4_1 *)xq)[b].m : ((const block_q5_1 *)xq)[b].m;
                double ysum = 0.0;
                for (int j = 0; j < 32; j++) ysum += yd[32 * b + j];
                want += (double)qt_fp16_to_f32(m) * ((double)qt_fp16_to_f32(((const block_q8_1 *)yq)[b].s) - ysum);
            }
        }
        const float got = tr->vec_dot(xq, yq, n);
        CHECK_MSG(fabs(got - want) <= 2e-6 * mag + 1e-30, "%s n=%lld rep %d: vec_dot %.9g, dequantized dot %.9g (sum |xy| %.6g)",
                  tr->name, (long long)n, rep, (double)got, want, mag);
        /* the --numerics fast orders (gemm_fast_ref) compute the same product */
        for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
            if (v->type != t || !v->gemm_fast_ref) continue;
            const float fast = v->gemm_fast_ref(xq, yq, n);
            CHECK_MSG(fabs(fast - want) <= 2e-6 * mag + 1e-30, "%s n=%lld rep %d: fast order %.9g, dequantized dot %.9g",
                      tr->name, (long long)n, rep, (double)fast, want);
        }
    }
    free(x); free(y); free(xd); free(yd); free(xq); free(yq); free(im);
}

static void test_every_kernel_matches_dequantized_dot(void) {
    int checked = 0;
    for (int t = 0; t < QT_TYPE_COUNT; t++) {
        const qt_type_traits *tr = qt_type_get((qt_type)t);
        if (!tr || !tr->vec_dot || tr->engine_only) continue; /* compressed-tensors rows: test_ct_rows */
        CHECK_MSG(qt__act_type_supported(tr->vec_dot_type), "%s: no activation quantizer for %s", tr->name,
                  qt_type_get(tr->vec_dot_type)->name);
        CHECK_MSG(tr->to_float && tr->from_float, "%s: codec missing", tr->name);
        if (!tr->to_float || !tr->from_float) continue;
        check_type((qt_type)t, 256);
        check_type((qt_type)t, 1024);
        if (tr->block_elems == 1) check_type((qt_type)t, 172); /* ffn_down rows of stories260K */
        checked++;
    }
    CHECK(checked >= 17);
}

/* The pairing is llama.cpp's (ggml-cpu type_traits_cpu). */
static void test_vec_dot_types_are_llama_cpp_pairs(void) {
    struct { qt_type t, vt; } pairs[] = {
        {QT_TYPE_F32, QT_TYPE_F32},   {QT_TYPE_F16, QT_TYPE_F16},   {QT_TYPE_BF16, QT_TYPE_BF16},
        {QT_TYPE_Q4_0, QT_TYPE_Q8_0}, {QT_TYPE_Q4_1, QT_TYPE_Q8_1}, {QT_TYPE_Q5_0, QT_TYPE_Q8_0},
        {QT_TYPE_Q5_1, QT_TYPE_Q8_1}, {QT_TYPE_Q8_0, QT_TYPE_Q8_0}, {QT_TYPE_IQ4_NL, QT_TYPE_Q8_0},
        {QT_TYPE_MXFP4, QT_TYPE_Q8_0}, {QT_TYPE_Q2_K, QT_TYPE_Q8_K}, {QT_TYPE_Q3_K, QT_TYPE_Q8_K},
        {QT_TYPE_Q4_K, QT_TYPE_Q8_K}, {QT_TYPE_Q5_K, QT_TYPE_Q8_K}, {QT_TYPE_Q6_K, QT_TYPE_Q8_K},
        {QT_TYPE_IQ4_XS, QT_TYPE_Q8_K}, {QT_TYPE_TQ2_0, QT_TYPE_Q8_K},
        {QT_TYPE_Q1_0, QT_TYPE_Q8_0}, {QT_TYPE_Q2_0, QT_TYPE_Q8_0},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        CHECK_EQ_INT(qt_type_get(pairs[i].t)->vec_dot_type, pairs[i].vt);
}

/* q8_0 activations: d = amax/127 stored as f16; q = nearest-even(x * 127/amax). */
static void test_act_q8_0_definition(void) {
    float x[64];
    fill(x, 64, 3.0f);
    x[5] = 0.0f;
    x[37] = 1.0f;   /* fill()'s outlier slot in block 1 (up to 12), tamed so that */
    x[40] = -7.25f; /* block 1's extreme, negative, whatever the generator's state */
    block_q8_0 q[2];
    CHECK(qt__act_quantize(QT_TYPE_Q8_0, x, q, 64));
    for (int b = 0; b < 2; b++) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[32 * b + j]));
        CHECK_EQ_INT(q[b].d, qt_f32_to_fp16(amax / 127.0f));
        for (int j = 0; j < 32; j++) CHECK_EQ_INT(q[b].qs[j], (int)nearbyintf(x[32 * b + j] * (127.0f / amax)));
    }
    CHECK_EQ_INT(q[1].qs[8], -127);
    float zero[32] = {0};
    CHECK(qt__act_quantize(QT_TYPE_Q8_0, zero, q, 32));
    CHECK_EQ_INT(q[0].d, 0);
    for (int j = 0; j < 32; j++) CHECK_EQ_INT(q[0].qs[j], 0);
}

static void test_act_q8_1_sum(void) {
    float x[64];
    fill(x, 64, 1.5f);
    block_q8_1 q[2];
    block_q8_0 q0[2];
    CHECK(qt__act_quantize(QT_TYPE_Q8_1, x, q, 64));
    CHECK(qt__act_quantize(QT_TYPE_Q8_0, x, q0, 64));
    for (int b = 0; b < 2; b++) {
        int s = 0;
        for (int j = 0; j < 32; j++) {
            CHECK_EQ_INT(q[b].qs[j], q0[b].qs[j]);
            s += q[b].qs[j];
        }
        CHECK_EQ_INT(q[b].d, q0[b].d);
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[32 * b + j]));
        CHECK_EQ_INT(q[b].s, qt_f32_to_fp16(amax / 127.0f * (float)s)); /* s = d * sum(q), d before f16 rounding */
    }
}

/* q8_K: the signed extreme maps to -127 exactly, d = 1/iscale (f32), bsums are 16-sums. */
static void test_act_q8_K_definition(void) {
    float x[256];
    fill(x, 256, 2.0f);
    x[77] = 9.5f;
    block_q8_K q;
    CHECK(qt__act_quantize(QT_TYPE_Q8_K, x, &q, 256));
    CHECK_EQ_INT(q.qs[77], -127);
    CHECK_NEAR(q.d, 9.5f / -127.0f, 1e-9);
    for (int k = 0; k < 16; k++) {
        int s = 0;
        for (int i = 0; i < 16; i++) s += q.qs[16 * k + i];
        CHECK_EQ_INT(q.bsums[k], s);
    }
    for (int i = 0; i < 256; i++) CHECK(fabsf(q.qs[i] * q.d - x[i]) <= fabsf(q.d) * 0.5f + 1e-6f);
}

static void test_act_unsupported_types_refused(void) {
    float x[32] = {0};
    uint8_t buf[64];
    CHECK(!qt__act_quantize(QT_TYPE_Q4_0, x, buf, 32));
    CHECK(!qt__act_type_supported(QT_TYPE_Q4_K));
    CHECK(qt__act_type_supported(QT_TYPE_F16));
}

/* The f32 orders of llama.cpp's AVX-512 build, spelled out here once more,
 * independently, and compared bit for bit:
 *   tinyBLAS (gemm): 16 FMA chains over 16-element steps, then
 *     _mm512_reduce_add_ps (i+8, i+4, then (0+2)+(1+3));
 *   ggml_vec_dot_f32: four such accumulators over 64-element steps, added
 *     (0+2)+(1+3) lane by lane, reduced the same way; the tail in 16/8-element
 *     chunks of rounded products added in order, the last < 8 fused. */
static float reduce16_spelled(const float a[16]) {
    const float s0 = (a[0] + a[8]) + (a[4] + a[12]), s1 = (a[1] + a[9]) + (a[5] + a[13]);
    const float s2 = (a[2] + a[10]) + (a[6] + a[14]), s3 = (a[3] + a[11]) + (a[7] + a[15]);
    return (s0 + s2) + (s1 + s3);
}

static void test_f32_dot_order(void) {
    enum { N = 172 };
    float x[N], y[N];
    int gemm_differs = 0, tail_matters = 0;
    for (int rep = 0; rep < 50; rep++) {
        fill(x, N, 1.0f + rep);
        fill(y, N, 0.5f);
        /* gemm, 64 elements */
        float lane[16] = {0};
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 16; l++) lane[l] = fmaf(x[16 * c + l], y[16 * c + l], lane[l]);
        const float gemm = reduce16_spelled(lane);
        CHECK_MSG(qt__gemm_f32_ref(x, y, 64) == gemm, "gemm order, rep %d", rep);
        /* vec_dot, 64 elements: one step, four accumulators of one product each */
        float acc[16];
        for (int l = 0; l < 16; l++)
            acc[l] = (x[l] * y[l] + x[32 + l] * y[32 + l]) + (x[16 + l] * y[16 + l] + x[48 + l] * y[48 + l]);
        const float vec = reduce16_spelled(acc);
        CHECK_MSG(qt__dot_f32_ref(x, y, 64) == vec, "vec_dot order, rep %d", rep);
        gemm_differs += gemm != vec;
        /* vec_dot, 172 elements: two steps, then 32 + 8 chunked and 4 fused */
        float a4[4][16] = {{0}};
        for (int i = 0; i < 128; i += 64)
            for (int j = 0; j < 4; j++)
                for (int l = 0; l < 16; l++) a4[j][l] = fmaf(x[i + 16 * j + l], y[i + 16 * j + l], a4[j][l]);
        for (int l = 0; l < 16; l++) acc[l] = (a4[0][l] + a4[2][l]) + (a4[1][l] + a4[3][l]);
        float sum = reduce16_spelled(acc), fused = sum;
        for (int i = 128; i < 168; i++) { const float p = x[i] * y[i]; sum += p; }
        for (int i = 168; i < N; i++) sum = fmaf(x[i], y[i], sum);
        for (int i = 128; i < N; i++) fused = fmaf(x[i], y[i], fused);
        CHECK_MSG(qt__dot_f32_ref(x, y, N) == sum, "vec_dot tail, rep %d", rep);
        CHECK_MSG(qt__gemm_f32_ref(x, y, N) == sum, "gemm falls back to vec_dot for n %% 16 != 0, rep %d", rep);
        tail_matters += fused != sum;
    }
    /* the data tells the orders apart, so the checks above could fail */
    CHECK(gemm_differs > 0);
    CHECK(tail_matters > 0);
}

/* A SIMD dot kernel gives its scalar reference's bits over row lengths that hit
 * every branch (64-element steps, 16/8-element tail chunks, the fused
 * remainder, n % 16 != 0 fallbacks). */
static void check_pair(qt_type t, qt_vec_dot_fn ref, qt_vec_dot_fn simd, const char *what) {
    /* ... and block counts 1, 2, 3, 5, 7, 9, 16 (odd counts: iq4_nl pairs its blocks) */
    const int64_t sizes[] = {32, 64, 172, 256, 4096, 8, 40, 61, 16, 24, 79, 95, 127, 191,
                             96, 160, 224, 288, 512, 768, 1280, 1792, 2304};
    float *x = malloc(4096 * sizeof *x), *y = malloc(4096 * sizeof *y);
    uint8_t *xq = malloc(4096 * 4), *yq = malloc(4096 * 4);
    const qt_type_traits *tr = qt_type_get(t), *vt = qt_type_get(tr->vec_dot_type);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const int64_t n = sizes[s];
        if (n % tr->block_elems) continue;
        for (int rep = 0; rep < 10; rep++) {
            fill(x, n, 1.0f + rep);
            fill(y, n, 0.5f);
            CHECK_OK(qt_quantize_rows(t, x, xq, 1, n, NULL));
            CHECK(qt__act_quantize(vt->type, y, yq, n));
            const float a = ref(xq, yq, n), b = simd(xq, yq, n);
            CHECK_MSG(a == b, "%s n=%lld: reference %.9g, %s %.9g", tr->name, (long long)n, (double)a, what, (double)b);
        }
    }
    free(x); free(y); free(xq); free(yq);
}

/* Where the f16 scales of a block sit, so that random bytes make a block with
 * finite scales; types not listed are not filled at random. */
static int half_offsets(qt_type t, size_t off[2]) {
    switch (t) {
    case QT_TYPE_Q4_0: case QT_TYPE_Q5_0: case QT_TYPE_Q8_0: case QT_TYPE_IQ4_NL: case QT_TYPE_IQ4_XS:
        off[0] = 0; return 1;
    case QT_TYPE_Q4_1: case QT_TYPE_Q5_1: case QT_TYPE_Q4_K: case QT_TYPE_Q5_K:
        off[0] = 0; off[1] = 2; return 2;
    case QT_TYPE_Q2_K: off[0] = offsetof(block_q2_K, d); off[1] = offsetof(block_q2_K, dmin); return 2;
    case QT_TYPE_Q3_K: off[0] = offsetof(block_q3_K, d); return 1;
    case QT_TYPE_Q6_K: off[0] = offsetof(block_q6_K, d); return 1;
    default: return 0;
    }
}

/* Random weight bytes (every code, scale and min pattern, q8_0's -128 too)
 * against quantized activations: each integer variant still gives its
 * reference's bits. */
static void check_random_blocks(qt_type t, qt_vec_dot_fn ref, qt_vec_dot_fn simd, const char *what) {
    const qt_type_traits *tr = qt_type_get(t), *vt = qt_type_get(tr->vec_dot_type);
    size_t off[2];
    const int nh = half_offsets(t, off);
    if (!nh) return;
    const int64_t sizes[] = {32, 96, 224, 256, 768, 2304};
    float y[2304];
    uint8_t *xq = malloc(qt_row_size(t, 2304)), *yq = malloc(qt_row_size(vt->type, 2304));
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const int64_t n = sizes[s];
        if (n % tr->block_elems) continue;
        const size_t bytes = qt_row_size(t, n), nb = (size_t)(n / tr->block_elems), bsize = bytes / nb;
        for (int rep = 0; rep < 20; rep++) {
            for (size_t i = 0; i < bytes; i++) xq[i] = (uint8_t)(frand() * 128.0f + 128.0f);
            for (size_t b = 0; b < nb; b++)
                for (int h = 0; h < nh; h++) {
                    const qt_half v = qt_f32_to_fp16(0.05f * frand());
                    memcpy(xq + b * bsize + off[h], &v, sizeof v);
                }
            fill(y, n, 0.5f + rep);
            CHECK(qt__act_quantize(vt->type, y, yq, n));
            const float a = ref(xq, yq, n), b = simd(xq, yq, n);
            CHECK_MSG(memcmp(&a, &b, sizeof a) == 0, "%s random blocks n=%lld: reference %.9g, %s %.9g", tr->name,
                      (long long)n, (double)a, what, (double)b);
        }
    }
    free(xq); free(yq);
}

/* Every vec_dot / vec_dot_gemm variant of lib/quant/variants.c equals its reference
 * (a gemm variant's reference is the row's vec_dot_gemm, or vec_dot where it has none). */
static void test_dot_variants_equal_reference(void) {
    int ran = 0;
    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
        if (!v->vec_dot && !v->vec_dot_gemm) continue;
        const qt_type_traits *r = qt__traits_ref(v->type);
        if (r->engine_only) continue; /* compressed-tensors rows: exact sums, test_ct_rows */
        const char *level = qt__cpu_level_str(v->level);
        if (v->level > qt__cpu_level_get()) {
            fprintf(stderr, "  SKIPPED %s %s: this CPU (or QUANTA_CPU) lacks it\n", r->name, level);
            continue;
        }
        CHECK_MSG(!v->vec_dot || r->vec_dot, "%s %s: a vec_dot variant without a reference", r->name, level);
        if (v->vec_dot && r->vec_dot) {
            check_pair(v->type, r->vec_dot, v->vec_dot, level);
            check_random_blocks(v->type, r->vec_dot, v->vec_dot, level);
        }
        if (v->vec_dot_gemm) check_pair(v->type, r->vec_dot_gemm ? r->vec_dot_gemm : r->vec_dot, v->vec_dot_gemm, level);
        ran++;
    }
    if (!ran) SKIP("no dot variant runs on this CPU");
}

/* Weight rows of random bytes with finite scales (half_offsets), nr rows of n;
 * 16-bit float rows of random finite values. */
static void random_rows(qt_type t, uint8_t *w, int64_t nr, int64_t n) {
    if (qt_type_get(t)->block_elems == 1) { /* f16, bf16: finite values of every magnitude class */
        float *v = malloc((size_t)(n * nr) * sizeof *v);
        for (int64_t i = 0; i < n * nr; i++) v[i] = frand() * (i % 5 ? 1.0f : 1e-3f);
        CHECK_OK(qt_quantize_rows(t, v, w, nr, n, NULL));
        free(v);
        return;
    }
    size_t off[2];
    const int nh = half_offsets(t, off);
    const size_t bytes = qt_row_size(t, n) * (size_t)nr, bsize = qt_type_get(t)->block_bytes;
    for (size_t i = 0; i < bytes; i++) w[i] = (uint8_t)(int)(frand() * 128.0f + 128.0f); /* 256 wraps to 0 */
    for (size_t b = 0; b < bytes / bsize; b++)
        for (int h = 0; h < nh; h++) {
            const qt_half v = qt_f32_to_fp16(0.05f * frand());
            memcpy(w + b * bsize + off[h], &v, sizeof v);
        }
}

/* One gemm variant against the scalar vec_dot, element by element and bit for
 * bit, on awkward shapes: row counts that are not a multiple of any tile (1, 3,
 * 5, 7, 17), batches 1..9 (every column remainder), panel edges (63..65, 129)
 * and 512; the output written with a row stride, the gaps left alone. */
static void check_gemm(qt_type t, qt__gemm_fn gemm, qt_vec_dot_fn ref, const char *level) {
    const qt_type_traits *tr = qt_type_get(t), *vt = qt_type_get(tr->vec_dot_type);
    const int64_t rows[] = {1, 2, 3, 4, 5, 7, 8, 17}, batch[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 63, 64, 65, 129, 512};
    const int64_t lens[] = {tr->block_elems, 3 * tr->block_elems, 2048};
    const int64_t max_nr = 17, max_nc = 512, ldo = max_nr + 3;
    uint8_t *w = malloc(qt_row_size(t, 2048) * max_nr), *a = malloc(qt_row_size(vt->type, 2048) * max_nc);
    float *y = malloc(2048 * sizeof *y), *out = malloc((size_t)(ldo * max_nc) * sizeof *out);
    long mismatches = 0, checked = 0;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        const int64_t n = lens[li];
        const size_t ldw = qt_row_size(t, n), lda = qt_row_size(vt->type, n);
        random_rows(t, w, max_nr, n);
        for (int64_t c = 0; c < max_nc; c++) {
            fill(y, n, 0.25f + (float)(c % 7));
            CHECK(qt__act_quantize(vt->type, y, a + (size_t)c * lda, n));
        }
        for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++)
            for (size_t bi = 0; bi < sizeof batch / sizeof batch[0]; bi++) {
                const int64_t nr = rows[ri], nc = batch[bi];
                for (int64_t i = 0; i < ldo * nc; i++) out[i] = -1234.5f;
                gemm(w, ldw, nr, a, lda, nc, n, out, ldo);
                for (int64_t c = 0; c < nc; c++)
                    for (int64_t r = 0; r < ldo; r++) {
                        const float got = out[c * ldo + r];
                        const float want = r < nr ? ref(w + (size_t)r * ldw, a + (size_t)c * lda, n) : -1234.5f;
                        checked++;
                        if (memcmp(&got, &want, sizeof got) && mismatches++ < 5)
                            CHECK_MSG(0, "%s gemm %s n=%lld rows %lld batch %lld: out[%lld][%lld] = %.9g, vec_dot %.9g",
                                      tr->name, level, (long long)n, (long long)nr, (long long)nc, (long long)c,
                                      (long long)r, (double)got, (double)want);
                    }
            }
    }
    CHECK_MSG(mismatches == 0, "%s gemm %s: %ld of %ld elements differ", tr->name, level, mismatches, checked);
    free(w); free(a); free(y); free(out);
}

/* The engine's loop for types without a kernel (q5_0 here), over the dispatched vec_dot. */
static void gemm_q5_0_dots(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                           float *out, int64_t ldo) {
    qt__gemm_dots(qt_type_get(QT_TYPE_Q5_0)->vec_dot, w, ldw, nr, a, lda, nc, n, out, ldo);
}

/* Every gemm variant of lib/quant/variants.c gives vec_dot's bits. */
static void test_gemm_variants_equal_vec_dot(void) {
    int ran = 0;
    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
        if (!v->gemm && !v->gemm_fast) continue;
        if (qt__traits_ref(v->type)->engine_only) continue; /* ct4 rows: vec_dot_gemm's order, test_ct4 */
        const char *level = qt__cpu_level_str(v->level);
        if (v->level > qt__cpu_level_get()) {
            fprintf(stderr, "  SKIPPED gemm %s %s: this CPU (or QUANTA_CPU) lacks it\n", qt_type_get(v->type)->name, level);
            continue;
        }
        if (v->gemm_fast) {
            /* --numerics fast: its own order, against that order's scalar reference */
            CHECK_MSG(v->gemm_fast_ref != NULL, "%s: a gemm_fast variant without a reference", level);
            if (v->gemm_fast_ref) check_gemm(v->type, v->gemm_fast, v->gemm_fast_ref, "fast");
            ran++;
            continue;
        }
        CHECK_MSG(qt__traits_ref(v->type)->vec_dot != NULL, "%s: gemm without a vec_dot reference", level);
        check_gemm(v->type, v->gemm, qt__traits_ref(v->type)->vec_dot, level);
        ran++;
    }
    /* the resolved kernel is the highest level's, or none at scalar */
    if (qt__cpu_level_get() == QT__CPU_SCALAR) CHECK(qt__gemm_kernel(QT_TYPE_Q4_0) == NULL);
    else CHECK(qt__gemm_kernel(QT_TYPE_Q4_0) != NULL);
    /* the reference loop itself, through the dispatched vec_dot */
    check_gemm(QT_TYPE_Q5_0, gemm_q5_0_dots, qt__traits_ref(QT_TYPE_Q5_0)->vec_dot, "dots");
    /* the fast order is a different order: the data tells it apart from vec_dot's */
    if (qt__gemm_kernel_fast(QT_TYPE_Q4_0) != qt__gemm_kernel(QT_TYPE_Q4_0)) {
        enum { N = 2048 };
        float x[N], y[N];
        uint8_t xq[N], yq[2 * N];
        int differ = 0;
        for (int rep = 0; rep < 20; rep++) {
            fill(x, N, 1.0f);
            fill(y, N, 1.0f);
            CHECK_OK(qt_quantize_rows(QT_TYPE_Q4_0, x, xq, 1, N, NULL));
            CHECK(qt__act_quantize(QT_TYPE_Q8_0, y, yq, N));
            differ += qt__dot_fast_q4_0_ref(xq, yq, N) != qt__traits_ref(QT_TYPE_Q4_0)->vec_dot(xq, yq, N);
        }
        CHECK(differ > 0);
    }
    if (!ran) SKIP("no gemm variant runs on this CPU");
}


/* One x16 kernel (--numerics fast on packed rows, gemm.h) against the order's
 * scalar reference on the plain rows, bit for bit, and against the scalar
 * kernel on the packed rows: rows 1, 3, 15, 16, 17, 33 (partial groups), batch
 * 1..9, 63..65, 129 and 512, three lengths; and started at group 1, as a
 * thread's share of the rows is, it gives those rows' bits. */
static void check_x16(qt_type t, qt__gemm_x16_fn kern, qt__gemm_x16_fn kref, const char *level) {
    const int64_t rows[] = {1, 3, 15, 16, 17, 33}, batch[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 63, 64, 65, 129, 512};
    const int64_t lens[] = {32, 96, 2048}, max_nr = 33, max_nc = 512, ldo = max_nr + 3;
    const size_t lda_max = (size_t)(2048 / 32) * sizeof(qt__block_q8s);
    uint8_t *w = malloc(qt_row_size(t, 2048) * max_nr), *a = malloc(lda_max * max_nc);
    uint8_t *wp = malloc(qt__x16_bytes(t, max_nr, 2048));
    float *y = malloc(2048 * sizeof *y), *out = malloc((size_t)(ldo * max_nc) * sizeof *out);
    float *out2 = malloc((size_t)(ldo * max_nc) * sizeof *out2);
    long mismatches = 0, checked = 0;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        const int64_t n = lens[li];
        const size_t ldw = qt_row_size(t, n), lda = (size_t)(n / 32) * sizeof(qt__block_q8s);
        random_rows(t, w, max_nr, n);
        for (int64_t c = 0; c < max_nc; c++) {
            fill(y, n, 0.25f + (float)(c % 7));
            qt__act_q8s(y, (qt__block_q8s *)(a + (size_t)c * lda), n);
        }
        for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
            const int64_t nr = rows[ri];
            qt__x16_pack(t, w, ldw, nr, n, wp);
            for (size_t bi = 0; bi < sizeof batch / sizeof batch[0]; bi++) {
                const int64_t nc = batch[bi];
                if (nc == 512 && nr != 17) continue; /* the big batch once */
                for (int64_t i = 0; i < ldo * nc; i++) out[i] = out2[i] = -1234.5f;
                kern(wp, nr, a, lda, nc, n, out, ldo);
                if (nc <= 9) kref(wp, nr, a, lda, nc, n, out2, ldo);
                for (int64_t c = 0; c < nc; c++)
                    for (int64_t r = 0; r < ldo; r++) {
                        const float got = out[c * ldo + r];
                        const float want = r < nr ? qt__dot_x16_ref(t, w + (size_t)r * ldw, a + (size_t)c * lda, n) : -1234.5f;
                        checked++;
                        if ((memcmp(&got, &want, sizeof got) || (nc <= 9 && memcmp(&got, &out2[c * ldo + r], sizeof got))) &&
                            mismatches++ < 5)
                            CHECK_MSG(0, "%s x16 %s n=%lld rows %lld batch %lld: out[%lld][%lld] = %.9g, reference %.9g, "
                                      "packed reference %.9g", qt_type_get(t)->name, level, (long long)n, (long long)nr,
                                      (long long)nc, (long long)c, (long long)r, (double)got, (double)want,
                                      (double)out2[c * ldo + r]);
                    }
                if (nr > QT_X16_ROWS) { /* rows 16.. alone, from their group */
                    kern(wp + qt__x16_group_bytes(t, n), nr - QT_X16_ROWS, a, lda, nc, n, out2, ldo);
                    for (int64_t c = 0; c < nc; c++)
                        for (int64_t r = QT_X16_ROWS; r < nr; r++)
                            if (memcmp(&out[c * ldo + r], &out2[c * ldo + r - QT_X16_ROWS], sizeof(float)) &&
                                mismatches++ < 5)
                                CHECK_MSG(0, "%s x16 %s n=%lld rows %lld batch %lld: row %lld differs started at group 1",
                                          qt_type_get(t)->name, level, (long long)n, (long long)nr, (long long)nc,
                                          (long long)r);
                }
            }
        }
    }
    CHECK_MSG(mismatches == 0, "%s x16 %s: %ld of %ld elements differ", qt_type_get(t)->name, level, mismatches, checked);
    CHECK(checked > 0);
    free(w); free(a); free(wp); free(y); free(out); free(out2);
}

/* Every x16 variant of lib/quant/variants.c gives its reference's bits; the
 * order's reference is close to the exact dot of the dequantized rows; q8s
 * rows carry q8_0's codes and scale and q8_1's s. */
static void test_x16_variants_equal_reference(void) {
    int ran = 0;
    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
        if (!v->gemm_x16) continue;
        const char *level = qt__cpu_level_str(v->level);
        if (v->level > qt__cpu_level_get()) {
            fprintf(stderr, "  SKIPPED x16 %s %s: this CPU (or QUANTA_CPU) lacks it\n", qt_type_get(v->type)->name, level);
            continue;
        }
        CHECK_MSG(v->gemm_x16_ref != NULL, "%s: an x16 variant without a reference", level);
        CHECK_MSG(qt__x16_bytes(v->type, 1, 32) > 0, "%s %s: an x16 kernel for a type without a packer",
                  qt_type_get(v->type)->name, level);
        if (v->gemm_x16_ref) check_x16(v->type, v->gemm_x16, v->gemm_x16_ref, level);
        ran++;
    }
    enum { N = 2048 };
    float x[N], y[N], yd[N];
    qt__block_q8s ys[N / 32];
    block_q8_0 yq[N / 32];
    const qt_type types[] = {QT_TYPE_Q4_0, QT_TYPE_Q4_1, QT_TYPE_Q5_0, QT_TYPE_Q5_1, QT_TYPE_IQ4_NL, QT_TYPE_Q8_0};
    for (int rep = 0; rep < 10; rep++) {
        fill(y, N, 1.0f + rep);
        qt__act_q8s(y, ys, N);
        CHECK(qt__act_quantize(QT_TYPE_Q8_0, y, yq, N));
        block_q8_1 y1[N / 32];
        CHECK(qt__act_quantize(QT_TYPE_Q8_1, y, y1, N));
        for (int b = 0; b < N / 32; b++) {
            CHECK(qt_fp16_to_f32(y1[b].s) == ys[b].s);
            int32_t sum = 0;
            for (int j = 0; j < 32; j++) sum += ys[b].qs[j], yd[32 * b + j] = ys[b].d * ys[b].qs[j];
            CHECK(memcmp(ys[b].qs, yq[b].qs, 32) == 0 && sum == ys[b].sum && qt_fp16_to_f32(yq[b].d) == ys[b].d);
        }
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            uint8_t xq[N * 2];
            float xd[N];
            fill(x, N, 0.5f);
            CHECK_OK(qt_quantize_rows(types[ti], x, xq, 1, N, NULL));
            qt_type_get(types[ti])->to_float(xq, xd, N);
            double want = 0, mag = 0;
            for (int i = 0; i < N; i++) want += (double)xd[i] * yd[i], mag += fabs((double)xd[i] * yd[i]);
            if (types[ti] == QT_TYPE_Q4_1 || types[ti] == QT_TYPE_Q5_1) /* the min term takes q8_1's rounded s */
                for (int b = 0; b < N / 32; b++) {
                    const qt_half m = types[ti] == QT_TYPE_Q4_1 ? ((const block_q4_1 *)xq)[b].m : ((const block_q5_1 *)xq)[b].m;
                    want += (double)qt_fp16_to_f32(m) * ((double)ys[b].s - (double)ys[b].d * ys[b].sum);
                }
            const float got = qt__dot_x16_ref(types[ti], xq, ys, N);
            CHECK_MSG(fabs(got - want) <= 2e-6 * mag, "%s x16 order: %.9g, exact %.9g", qt_type_get(types[ti])->name,
                      (double)got, want);
        }
    }
    if (!ran) SKIP("no x16 variant runs on this CPU");
}


/* 32-float blocks for the q8_0-coded activations (test_act_q8s_..., test_act_q8_0_...): random
 * rows at several scales (rep), and blocks of zeros, of -0, of exact halves (amax 127, so x * id
 * is x and nearbyintf's ties go to even), of subnormals beside a tiny normal maximum and of huge
 * values (finite rows whose 127 / amax is finite: beyond that the reference's float-to-int8
 * conversion is undefined). n >= 32 * 7. */
static void fill_q8_blocks(float *x, int n, int rep) {
    fill(x, n, 0.01f + 3.0f * rep);
    for (int j = 0; j < 32; j++) {
        x[32 + j] = 0.0f;
        x[64 + j] = -0.0f;
        x[96 + j] = j == 0 ? 127.0f : (float)(j - 16) + 0.5f; /* ties: -15.5 .. 14.5 */
        x[128 + j] = j == 5 ? 1e-30f : (j % 2 ? -1.0f : 1.0f) * 1e-40f * (float)(j + 1);
        x[160 + j] = (j % 3 ? 1.0f : -1.0f) * (3e37f / 32.0f) * (float)(j + 1);
    }
    if (rep % 2) x[200] = -x[200] * 1000.0f; /* one outlier sets the scale */
}

/* Every act_q8s variant gives qt__act_q8s_ref's bytes on fill_q8_blocks. */
static void test_act_q8s_variants_equal_reference(void) {
    enum { N = 32 * 12 };
    float x[N];
    qt__block_q8s got[N / 32], want[N / 32];
    int ran = 0;
    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
        if (!v->act_q8s) continue;
        const char *level = qt__cpu_level_str(v->level);
        if (v->level > qt__cpu_level_get()) {
            fprintf(stderr, "  SKIPPED act_q8s %s: this CPU (or QUANTA_CPU) lacks it\n", level);
            continue;
        }
        for (int rep = 0; rep < 8; rep++) {
            fill_q8_blocks(x, N, rep);
            memset(got, 0x5A, sizeof got);
            v->act_q8s(x, got, N);
            qt__act_q8s_ref(x, want, N);
            for (int b = 0; b < N / 32; b++)
                CHECK_MSG(memcmp(&got[b], &want[b], sizeof got[b]) == 0, "act_q8s %s rep %d block %d: d %.9g/%.9g sum %d/%d",
                          level, rep, b, (double)got[b].d, (double)want[b].d, got[b].sum, want[b].sum);
        }
        ran++;
    }
    if (!ran) SKIP("no act_q8s variant runs on this CPU");
}

/* Every act_q8_0 variant gives qt__act_q8_0_ref's bytes on fill_q8_blocks, and
 * qt__act_quantize (the llama-order paths, dispatched at this level) gives them too. */
static void test_act_q8_0_variants_equal_reference(void) {
    enum { N = 32 * 12 };
    float x[N];
    block_q8_0 got[N / 32], want[N / 32];
    int ran = 0;
    for (int rep = 0; rep < 8; rep++) {
        fill_q8_blocks(x, N, rep);
        qt__act_q8_0_ref(x, want, N);
        memset(got, 0x5A, sizeof got);
        qt__act_quantize(QT_TYPE_Q8_0, x, got, N);
        CHECK_MSG(memcmp(got, want, sizeof got) == 0, "act_quantize q8_0 rep %d differs from the reference", rep);
        for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
            if (!v->act_q8_0) continue;
            const char *level = qt__cpu_level_str(v->level);
            if (v->level > qt__cpu_level_get()) {
                if (rep == 0) fprintf(stderr, "  SKIPPED act_q8_0 %s: this CPU (or QUANTA_CPU) lacks it\n", level);
                continue;
            }
            memset(got, 0x5A, sizeof got);
            v->act_q8_0(x, got, N);
            for (int b = 0; b < N / 32; b++)
                CHECK_MSG(memcmp(&got[b], &want[b], sizeof got[b]) == 0, "act_q8_0 %s rep %d block %d: d 0x%04x/0x%04x",
                          level, rep, b, (unsigned)got[b].d, (unsigned)want[b].d);
            ran += rep == 0;
        }
    }
    if (!ran) SKIP("no act_q8_0 variant runs on this CPU");
}

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* f16 rounding's awkward inputs: halfway cases between f16 neighbours (both parities),
 * values just below and above the overflow threshold 65520, f16 subnormals and halfway
 * cases among them, f32 subnormals, +-0, +-inf, NaNs with several payloads and signs,
 * then random values of every magnitude; rep moves the specials around. */
static void fill_f16_awkward(float *x, int n, int rep) {
    static const uint32_t bits[] = {
        0x3f801000u, 0x3f803000u, 0x3f800fffu, 0x3f801001u, /* 1 + half an f16 ulp (tie to even, both ways) */
        0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477fffffu, /* 65504 .. 65535: max, below / at the overflow tie */
        0x33800000u, 0x33000000u, 0x33c00000u, 0x387fc000u, /* f16 subnormals: 2^-24, its half (ties to 0), 1.5x */
        0x00000001u, 0x807fffffu, 0x00000000u, 0x80000000u, /* f32 subnormals, +-0 */
        0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, /* +-inf, quiet NaNs */
        0x7f800001u, 0x7fffffffu, 0xff812345u, 0x7fa00000u, /* NaN payloads (signalling, all ones, signed) */
    };
    const int nb = (int)(sizeof bits / sizeof bits[0]);
    for (int i = 0; i < n; i++) {
        const float r = frand();
        x[i] = r * ldexpf(1.0f, (int)(frand() * 40.0f) - 20);
    }
    for (int k = 0; k < nb; k++) {
        const int at = (k * 7 + rep * 5) % n;
        if (rep % 3 == 2 && k >= 16) continue; /* some reps without NaNs or infinities: the vector path throughout */
        memcpy(&x[at], &bits[k], sizeof x[at]);
    }
}

/* Every act_f16 / act_f16_f32 variant gives the scalar references' bits (qt_f32_to_fp16 per
 * element; its f32 value), on lengths with every tail; qt__act_quantize(F16) gives them too. */
static void test_act_f16_variants_equal_reference(void) {
    enum { N = 203 };
    float x[N], got32[N], want32[N];
    uint16_t got[N + 1], want[N];
    int ran = 0;
    for (int rep = 0; rep < 9; rep++) {
        fill_f16_awkward(x, N, rep);
        const int n = N - rep; /* 203 .. 195: every remainder mod 8 */
        qt__act_f16_ref(x, want, n);
        qt__act_f16_f32_ref(x, want32, n);
        for (int i = 0; i < n; i++) {
            const float back = qt_fp16_to_f32(want[i]);
            CHECK_MSG(memcmp(&back, &want32[i], sizeof back) == 0, "act_f16_f32_ref[%d] is not act_f16_ref's value", i);
        }
        memset(got, 0x5A, sizeof got);
        CHECK(qt__act_quantize(QT_TYPE_F16, x, got, n));
        CHECK_MSG(memcmp(got, want, (size_t)n * sizeof got[0]) == 0, "act_quantize f16 rep %d differs", rep);
        for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
            if (!v->act_f16 && !v->act_f16_f32) continue;
            const char *level = qt__cpu_level_str(v->level);
            if (v->level > qt__cpu_level_get()) {
                if (rep == 0) fprintf(stderr, "  SKIPPED act_f16 %s: this CPU (or QUANTA_CPU) lacks it\n", level);
                continue;
            }
            if (v->act_f16) {
                memset(got, 0x5A, sizeof got);
                v->act_f16(x, got, n);
                for (int i = 0; i < n; i++)
                    CHECK_MSG(got[i] == want[i], "act_f16 %s rep %d [%d]: x 0x%08x -> 0x%04x, want 0x%04x", level, rep, i,
                              (unsigned)bits_of(x[i]), got[i], want[i]);
                CHECK(got[n] == 0x5A5A); /* nothing past n */
            }
            if (v->act_f16_f32) {
                memset(got32, 0x5A, sizeof got32);
                v->act_f16_f32(x, got32, n);
                CHECK_MSG(memcmp(got32, want32, (size_t)n * sizeof got32[0]) == 0, "act_f16_f32 %s rep %d differs", level, rep);
            }
            ran += rep == 0;
        }
    }
    if (!ran) SKIP("no act_f16 variant runs on this CPU");
}

/* Every gemm_fast_a32 variant (F16 rows x f32 rows of f16 values) gives, element by element
 * and bit for bit, the F16 fast order's reference (qt__gemm_f16_ref) on the same values as f16
 * rows, and its own reference; awkward shapes as check_gemm's, plus lengths that are not a
 * multiple of 16 or 32 (the prefetch step), or of 64 (784), rows past two 16-row work units
 * (33) and batches beside the tile widths and the 64-row panel; 8192 (ffn_down's rows) takes the
 * narrower panel of 512 KB of activations (gf_panel_a32: 12 rows at AVX-512, 15 at AVX2); 784 is
 * one 512-element chunk of converted weights (GF_KC) and a partial one, 2048 and 8192 whole chunks. */
static void test_gemm_fast_a32_variants_equal_reference(void) {
    const int64_t rows[] = {1, 2, 3, 4, 5, 7, 8, 9, 17, 33}, batch[] = {1, 2, 3, 5, 6, 7, 12, 13, 31, 33, 63, 64, 65, 129};
    const int64_t lens[] = {16, 48, 40, 784, 2048, 8192};
    enum { MAX_NR = 33, MAX_NC = 129, MAX_N = 8192, LDO = MAX_NR + 3 };
    uint16_t *w = malloc(sizeof *w * MAX_NR * MAX_N), *a16 = malloc(sizeof *a16 * MAX_NC * MAX_N);
    float *a32 = malloc(sizeof *a32 * MAX_NC * MAX_N), *y = malloc(sizeof *y * MAX_N);
    float *out = malloc(sizeof *out * LDO * MAX_NC);
    int ran = 0;
    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
        if (!v->gemm_fast_a32) continue;
        const char *level = qt__cpu_level_str(v->level);
        CHECK_MSG(v->type == QT_TYPE_F16 && v->gemm_fast_a32_ref == qt__gemm_f16_a32_ref, "gemm_fast_a32 %s: row", level);
        if (v->level > qt__cpu_level_get()) {
            fprintf(stderr, "  SKIPPED gemm_fast_a32 %s: this CPU (or QUANTA_CPU) lacks it\n", level);
            continue;
        }
        long mismatches = 0, checked = 0;
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            const int64_t n = lens[li];
            random_rows(QT_TYPE_F16, (uint8_t *)w, MAX_NR, n);
            for (int64_t c = 0; c < MAX_NC; c++) {
                fill(y, n, 0.25f + (float)(c % 7));
                qt__act_f16_ref(y, a16 + c * n, n);
                qt__act_f16_f32_ref(y, a32 + c * n, n);
            }
            for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++)
                for (size_t bi = 0; bi < sizeof batch / sizeof batch[0]; bi++) {
                    const int64_t nr = rows[ri], nc = batch[bi];
                    for (int64_t i = 0; i < LDO * nc; i++) out[i] = -1234.5f;
                    v->gemm_fast_a32(w, (size_t)n * 2, nr, a32, (size_t)n * 4, nc, n, out, LDO);
                    for (int64_t c = 0; c < nc; c++)
                        for (int64_t r = 0; r < LDO; r++) {
                            const float got = out[c * LDO + r];
                            const float want = r < nr ? qt__gemm_f16_ref(w + r * n, a16 + c * n, n) : -1234.5f;
                            const float own = r < nr ? qt__gemm_f16_a32_ref(w + r * n, a32 + c * n, n) : -1234.5f;
                            checked++;
                            if ((memcmp(&got, &want, sizeof got) || memcmp(&own, &want, sizeof own)) && mismatches++ < 5)
                                CHECK_MSG(0, "gemm_fast_a32 %s n=%lld rows %lld batch %lld: out[%lld][%lld] = %.9g, "
                                             "f16 reference %.9g, a32 reference %.9g", level, (long long)n, (long long)nr,
                                          (long long)nc, (long long)c, (long long)r, (double)got, (double)want, (double)own);
                        }
                }
        }
        CHECK_MSG(mismatches == 0, "gemm_fast_a32 %s: %ld of %ld elements differ", level, mismatches, checked);
        ran++;
    }
    free(w); free(a16); free(a32); free(y); free(out);
    if (!ran) SKIP("no gemm_fast_a32 variant runs on this CPU");
}



/* The F16 / BF16 gemm_fast variants (f16 / bf16 activations, gemm_f16_x86.h) beyond
 * check_gemm's lengths: multiples of 16 but not of 64 or 256 (784, 272), rows past two 16-row
 * work units (33), batches on both sides of the tile widths (1..7) and of the 64-row panel
 * (63..65); element by element, bit for bit, against gemm_fast_ref. */
static void test_gemm_fast_f16_bf16_lengths(void) {
    const int64_t rows[] = {1, 3, 4, 5, 16, 17, 33}, batch[] = {1, 4, 5, 6, 7, 31, 63, 64, 65};
    const int64_t lens[] = {784, 272};
    enum { MAX_NR = 33, MAX_NC = 65, MAX_N = 784, LDO = MAX_NR + 2 };
    uint8_t *w = malloc(2 * MAX_NR * MAX_N), *a = malloc(2 * MAX_NC * MAX_N);
    float *y = malloc(sizeof *y * MAX_N), *out = malloc(sizeof *out * LDO * MAX_NC);
    int ran = 0;
    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
        if (!v->gemm_fast || (v->type != QT_TYPE_F16 && v->type != QT_TYPE_BF16)) continue;
        const char *level = qt__cpu_level_str(v->level), *name = qt_type_get(v->type)->name;
        if (v->level > qt__cpu_level_get()) {
            fprintf(stderr, "  SKIPPED gemm_fast %s %s: this CPU (or QUANTA_CPU) lacks it\n", name, level);
            continue;
        }
        long mismatches = 0;
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            const int64_t n = lens[li];
            random_rows(v->type, w, MAX_NR, n);
            for (int64_t c = 0; c < MAX_NC; c++) {
                fill(y, n, 0.25f + (float)(c % 7));
                CHECK(qt__act_quantize(v->type, y, a + (size_t)(c * n * 2), n));
            }
            for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++)
                for (size_t bi = 0; bi < sizeof batch / sizeof batch[0]; bi++) {
                    const int64_t nr = rows[ri], nc = batch[bi];
                    for (int64_t i = 0; i < LDO * nc; i++) out[i] = -1234.5f;
                    v->gemm_fast(w, (size_t)n * 2, nr, a, (size_t)n * 2, nc, n, out, LDO);
                    for (int64_t c = 0; c < nc; c++)
                        for (int64_t r = 0; r < LDO; r++) {
                            const float got = out[c * LDO + r];
                            const float want = r < nr ? v->gemm_fast_ref(w + r * n * 2, a + c * n * 2, n) : -1234.5f;
                            if (memcmp(&got, &want, sizeof got) && mismatches++ < 5)
                                CHECK_MSG(0, "gemm_fast %s %s n=%lld rows %lld batch %lld: out[%lld][%lld] = %.9g, ref %.9g",
                                          name, level, (long long)n, (long long)nr, (long long)nc, (long long)c,
                                          (long long)r, (double)got, (double)want);
                        }
                }
        }
        CHECK_MSG(mismatches == 0, "gemm_fast %s %s: %ld elements differ", name, level, mismatches);
        ran++;
    }
    free(w); free(a); free(y); free(out);
    if (!ran) SKIP("no F16/BF16 gemm_fast variant runs on this CPU");
}

/* Awkward Q8_K activation blocks (256 floats each, rep varies the random ones): random, zeros,
 * -0, ties at iscale = +1 and -1 (max -127 / +127 with halves of both signs), subnormals beside
 * a tiny normal maximum, only subnormals (iscale overflows to -inf: NaN and infinite products),
 * huge values up to FLT_MAX, NaN and infinities among random values, NaN beside zeros (amax 0),
 * +-amax ties (the first wins), an outlier in the last lane. */
enum { Q8K_BLOCKS = 12 };
static void fill_q8_K_blocks(float *x, int rep) {
    fill(x, 256 * Q8K_BLOCKS, 0.01f + 3.0f * (float)rep);
    for (int j = 0; j < 256; j++) {
        const float half = (float)(j % 64 - 32) + 0.5f, sgn = j % 3 ? 1.0f : -1.0f;
        x[256 + j] = 0.0f;
        x[512 + j] = -0.0f;
        x[768 + j] = j == 0 ? -127.0f : j == 1 ? 127.0f : half;
        x[1024 + j] = j == 0 ? 127.0f : j == 2 ? -127.0f : half;
        x[1280 + j] = j == 7 ? 1e-30f : sgn * 1e-40f * (float)(j + 1);
        x[1536 + j] = sgn * 1e-42f * (float)(j % 5);
        x[1792 + j] = j == 9 ? -FLT_MAX : sgn * (3e38f / 256.0f) * (float)(j + 1);
        x[2304 + j] = j % 7 ? 0.0f : NAN;
    }
    x[2048 + 3] = NAN;
    x[2048 + 100 + rep % 2] = INFINITY;
    x[2048 + 200] = -INFINITY;
    x[2560 + 10] = -7.0f * (float)(rep + 1);
    x[2560 + 20] = 7.0f * (float)(rep + 1);
    x[2816 + 255] = (rep % 2 ? 1000.0f : -1000.0f) * (float)(rep + 1);
}

/* Every Q8_K from_float variant (the K-quant activation quantizer, variants.c) gives the
 * reference qt__quantize_q8_K's bytes on fill_q8_K_blocks, block by block and as one
 * row; qt__act_quantize (the engine's path, dispatched at this level) gives them too. */
static void test_act_q8_K_variants_equal_reference(void) {
    enum { N = 256 * Q8K_BLOCKS };
    static float x[N];
    static block_q8_K got[Q8K_BLOCKS], want[Q8K_BLOCKS];
    const qt_from_float_fn ref = qt__traits_ref(QT_TYPE_Q8_K)->from_float;
    int ran = 0;
    for (int rep = 0; rep < 8; rep++) {
        fill_q8_K_blocks(x, rep);
        ref(x, want, N, NULL);
        memset(got, 0x5A, sizeof got);
        qt__act_quantize(QT_TYPE_Q8_K, x, got, N);
        CHECK_MSG(memcmp(got, want, sizeof got) == 0, "act_quantize q8_K rep %d differs from the reference", rep);
        for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
            if (v->type != QT_TYPE_Q8_K || !v->from_float) continue;
            const char *level = qt__cpu_level_str(v->level);
            if (v->level > qt__cpu_level_get()) {
                if (rep == 0) fprintf(stderr, "  SKIPPED q8_K %s: this CPU (or QUANTA_CPU) lacks it\n", level);
                continue;
            }
            for (int nb = 1; nb <= Q8K_BLOCKS; nb += Q8K_BLOCKS - 1) /* one block, then the whole row */
                for (int b0 = 0; b0 + nb <= Q8K_BLOCKS; b0 += nb == 1 ? 1 : Q8K_BLOCKS) {
                    memset(got, 0x5A, sizeof got);
                    v->from_float(x + 256 * b0, got, 256 * nb, NULL);
                    for (int b = 0; b < nb; b++)
                        CHECK_MSG(memcmp(&got[b], &want[b0 + b], sizeof got[b]) == 0,
                                  "q8_K %s rep %d block %d: d %.9g/%.9g bsums[0] %d/%d", level, rep, b0 + b,
                                  (double)got[b].d, (double)want[b0 + b].d, got[b].bsums[0], want[b0 + b].bsums[0]);
                }
            ran += rep == 0;
        }
    }
    if (!ran) SKIP("no q8_K variant runs on this CPU");
}
/* The fast K order's one-element reference for a k16 type (gemm_k16.h: the k16 kernels keep its bits). */
static qt_vec_dot_fn k16_order_ref(qt_type t) {
    return t == QT_TYPE_Q4_K ? qt__dot_fast_q4_K_ref : t == QT_TYPE_Q5_K ? qt__dot_fast_q5_K_ref : qt__dot_fast_q6_K_ref;
}

/* One k16 kernel (K-quants on packed rows, gemm_k16.h) against the fast K
 * order's scalar reference on the plain rows, bit for bit, and against the
 * scalar kernel on the packed rows: rows 1, 3, 15, 16, 17, 33 (partial
 * groups), batch 1..9, 63..65, 129 and 512, three lengths; and started at
 * group 1, as a thread's share of the rows is, it gives those rows' bits. */
static void check_k16(qt_type t, qt__gemm_x16_fn kern, qt__gemm_x16_fn kref, const char *level) {
    const int64_t rows[] = {1, 3, 15, 16, 17, 33}, batch[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 63, 64, 65, 129, 512};
    const int64_t lens[] = {256, 512, 2048}, max_nr = 33, max_nc = 512, ldo = max_nr + 3;
    const size_t lda_max = qt_row_size(QT_TYPE_Q8_K, 2048);
    const qt_vec_dot_fn dot = k16_order_ref(t);
    uint8_t *w = malloc(qt_row_size(t, 2048) * max_nr), *a = malloc(lda_max * max_nc);
    uint8_t *wp = malloc(qt__k16_bytes(t, max_nr, 2048));
    float *y = malloc(2048 * sizeof *y), *out = malloc((size_t)(ldo * max_nc) * sizeof *out);
    float *out2 = malloc((size_t)(ldo * max_nc) * sizeof *out2);
    long mismatches = 0, checked = 0;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        const int64_t n = lens[li];
        const size_t ldw = qt_row_size(t, n), lda = qt_row_size(QT_TYPE_Q8_K, n);
        random_rows(t, w, max_nr, n);
        for (int64_t c = 0; c < max_nc; c++) {
            fill(y, n, 0.25f + (float)(c % 7));
            CHECK(qt__act_quantize(QT_TYPE_Q8_K, y, a + (size_t)c * lda, n));
        }
        for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
            const int64_t nr = rows[ri];
            qt__k16_pack(t, w, ldw, nr, n, wp);
            for (size_t bi = 0; bi < sizeof batch / sizeof batch[0]; bi++) {
                const int64_t nc = batch[bi];
                if (nc == 512 && nr != 17) continue; /* the big batch once */
                for (int64_t i = 0; i < ldo * nc; i++) out[i] = out2[i] = -1234.5f;
                kern(wp, nr, a, lda, nc, n, out, ldo);
                if (nc <= 9) kref(wp, nr, a, lda, nc, n, out2, ldo);
                for (int64_t c = 0; c < nc; c++)
                    for (int64_t r = 0; r < ldo; r++) {
                        const float got = out[c * ldo + r];
                        const float want = r < nr ? dot(w + (size_t)r * ldw, a + (size_t)c * lda, n) : -1234.5f;
                        checked++;
                        if ((memcmp(&got, &want, sizeof got) || (nc <= 9 && memcmp(&got, &out2[c * ldo + r], sizeof got))) &&
                            mismatches++ < 5)
                            CHECK_MSG(0, "%s k16 %s n=%lld rows %lld batch %lld: out[%lld][%lld] = %.9g, reference %.9g, "
                                      "packed reference %.9g", qt_type_get(t)->name, level, (long long)n, (long long)nr,
                                      (long long)nc, (long long)c, (long long)r, (double)got, (double)want,
                                      (double)out2[c * ldo + r]);
                    }
                if (nr > QT_X16_ROWS) { /* rows 16.. alone, from their group */
                    kern(wp + qt__k16_group_bytes(t, n), nr - QT_X16_ROWS, a, lda, nc, n, out2, ldo);
                    for (int64_t c = 0; c < nc; c++)
                        for (int64_t r = QT_X16_ROWS; r < nr; r++)
                            if (memcmp(&out[c * ldo + r], &out2[c * ldo + r - QT_X16_ROWS], sizeof(float)) &&
                                mismatches++ < 5)
                                CHECK_MSG(0, "%s k16 %s n=%lld rows %lld batch %lld: row %lld differs started at group 1",
                                          qt_type_get(t)->name, level, (long long)n, (long long)nr, (long long)nc,
                                          (long long)r);
                }
            }
        }
    }
    CHECK_MSG(mismatches == 0, "%s k16 %s: %ld of %ld elements differ", qt_type_get(t)->name, level, mismatches, checked);
    CHECK(checked > 0);
    free(w); free(a); free(wp); free(y); free(out); free(out2);
}

/* Every k16 variant of lib/quant/variants.c gives the fast K order's bits;
 * packing group by group (as threads do) gives the one-call copy's bytes;
 * the scalar packed reference runs at every level. */
static void test_k16_variants_equal_reference(void) {
    int ran = 0;
    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
        if (!v->gemm_k16) continue;
        const char *level = qt__cpu_level_str(v->level);
        if (v->level > qt__cpu_level_get()) {
            fprintf(stderr, "  SKIPPED k16 %s %s: this CPU (or QUANTA_CPU) lacks it\n", qt_type_get(v->type)->name, level);
            continue;
        }
        CHECK_MSG(v->gemm_k16_ref != NULL, "%s: a k16 variant without a reference", level);
        CHECK_MSG(qt__k16_bytes(v->type, 1, 256) > 0, "%s %s: a k16 kernel for a type without a packer",
                  qt_type_get(v->type)->name, level);
        if (v->gemm_k16_ref) check_k16(v->type, v->gemm_k16, v->gemm_k16_ref, level);
        ran++;
    }
    const qt_type types[] = {QT_TYPE_Q4_K, QT_TYPE_Q5_K, QT_TYPE_Q6_K};
    const qt__gemm_x16_fn refs[] = {qt__gemm_k16_q4_K_ref, qt__gemm_k16_q5_K_ref, qt__gemm_k16_q6_K_ref};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const qt_type t = types[ti];
        enum { NR = 37, N = 512 };
        const size_t ldw = qt_row_size(t, N), bytes = qt__k16_bytes(t, NR, N);
        uint8_t *w = malloc(ldw * NR), *p1 = malloc(bytes), *p2 = malloc(bytes);
        random_rows(t, w, NR, N);
        qt__k16_pack(t, w, ldw, NR, N, p1);
        memset(p2, 0xAB, bytes);
        for (int64_t g = 2; g >= 0; g--) qt__k16_pack_groups(t, w, ldw, NR, N, p2, g, g + 1); /* 3 groups, any order */
        CHECK_MSG(memcmp(p1, p2, bytes) == 0, "%s: k16 packed group by group differs", qt_type_get(t)->name);
        if (qt__cpu_level_get() == QT__CPU_SCALAR) check_k16(t, refs[ti], refs[ti], "scalar"), ran++;
        free(w); free(p1); free(p2);
    }
    if (!ran) SKIP("no k16 variant runs on this CPU");
}

/* The AMX x16 kernels at the shapes their tiling has edges at: K chunks of 64
 * blocks (n = 2080: 65 blocks, n = 4128: 129), the 4-block unroll's tail (n =
 * 160), batch 15..17, 31..33, 48, 130 and 257 (16-row tiles, the VNNI rest),
 * panels of 128 batch rows, partial groups; against the AVX-512 kernel on the
 * packed rows and the order's reference on the plain ones, bit for bit; and
 * run from 3 pool workers, each its own share of rows (every thread loads its
 * own tile configuration), the same bits. */
typedef struct {
    qt__gemm_x16_fn kern;
    const uint8_t *wp;
    size_t group;
    const uint8_t *a;
    size_t lda;
    int64_t nr, nc, n, ldo;
    float *out;
} amx_job;

static void amx_share(void *ctx, int64_t g0, int64_t g1, int thread) {
    (void)thread;
    const amx_job *j = ctx;
    const int64_t r0 = g0 * QT_X16_ROWS, r1 = g1 * QT_X16_ROWS < j->nr ? g1 * QT_X16_ROWS : j->nr;
    if (r1 > r0) j->kern(j->wp + (size_t)g0 * j->group, r1 - r0, j->a, j->lda, j->nc, j->n, j->out + r0, j->ldo);
}

static void test_x16_amx_tile_edges(void) {
    if (qt__cpu_level_get() < QT__CPU_AMX) {
        fprintf(stderr, "  SKIPPED AMX x16 edges: level %s (%s)\n", qt_cpu_level_name(), qt_cpu_level_detail());
        return;
    }
    const int64_t lens[] = {160, 2080, 4128}, rows[] = {1, 17, 47}, batch[] = {15, 16, 17, 31, 32, 33, 48, 130, 257};
    const int64_t max_n = 4128, max_nr = 47, max_nc = 257, ldo = max_nr + 1;
    qt_threadpool *tp = NULL;
    CHECK_OK(qt_threadpool_create(3, &tp));
    long bad = 0, checked = 0;
    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
        if (v->level != QT__CPU_AMX || !v->gemm_x16) continue;
        qt__gemm_x16_fn vnni = NULL;
        for (const qt__kernel_variant *u = qt__variants; u->level != QT__CPU_LEVEL_COUNT; u++)
            if (u->type == v->type && u->level == QT__CPU_AVX512 && u->gemm_x16) vnni = u->gemm_x16;
        CHECK_MSG(vnni != NULL, "%s: an AMX x16 kernel without an AVX-512 one", qt_type_get(v->type)->name);
        if (!vnni) continue;
        const qt_type t = v->type;
        const size_t lda_max = (size_t)(max_n / 32) * sizeof(qt__block_q8s);
        uint8_t *w = malloc(qt_row_size(t, max_n) * max_nr), *a = malloc(lda_max * max_nc);
        uint8_t *wp = malloc(qt__x16_bytes(t, max_nr, max_n));
        float *y = malloc(max_n * sizeof *y), *o1 = malloc((size_t)(ldo * max_nc) * sizeof(float));
        float *o2 = malloc((size_t)(ldo * max_nc) * sizeof(float)), *o3 = malloc((size_t)(ldo * max_nc) * sizeof(float));
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            const int64_t n = lens[li];
            const size_t ldw = qt_row_size(t, n), lda = (size_t)(n / 32) * sizeof(qt__block_q8s);
            random_rows(t, w, max_nr, n);
            for (int64_t c = 0; c < max_nc; c++) {
                fill(y, n, c % 11 == 0 ? 1000.0f : 0.25f + (float)(c % 7)); /* some rows of +-127 codes */
                qt__act_q8s(y, (qt__block_q8s *)(a + (size_t)c * lda), n);
            }
            for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
                const int64_t nr = rows[ri];
                qt__x16_pack(t, w, ldw, nr, n, wp);
                for (size_t bi = 0; bi < sizeof batch / sizeof batch[0]; bi++) {
                    const int64_t nc = batch[bi];
                    for (int64_t i = 0; i < ldo * nc; i++) o1[i] = o2[i] = o3[i] = -1234.5f;
                    v->gemm_x16(wp, nr, a, lda, nc, n, o1, ldo);
                    vnni(wp, nr, a, lda, nc, n, o2, ldo);
                    amx_job j = {v->gemm_x16, wp, qt__x16_group_bytes(t, n), a, lda, nr, nc, n, ldo, o3};
                    qt_parallel_for(tp, (nr + QT_X16_ROWS - 1) / QT_X16_ROWS, amx_share, &j);
                    for (int64_t c = 0; c < nc; c++)
                        for (int64_t r = 0; r < ldo; r++) {
                            const size_t i = (size_t)(c * ldo + r);
                            checked++;
                            bool ok = !memcmp(&o1[i], &o2[i], sizeof(float)) && !memcmp(&o1[i], &o3[i], sizeof(float));
                            if (ok && r < nr && (c % 16 == 0 || c == nc - 1)) {
                                const float want = qt__dot_x16_ref(t, w + (size_t)r * ldw, a + (size_t)c * lda, n);
                                ok = !memcmp(&o1[i], &want, sizeof want);
                            }
                            if (!ok && bad++ < 5)
                                CHECK_MSG(0, "%s x16 amx n=%lld rows %lld batch %lld: out[%lld][%lld] = %.9g, avx512 %.9g, "
                                          "3 threads %.9g", qt_type_get(t)->name, (long long)n, (long long)nr, (long long)nc,
                                          (long long)c, (long long)r, (double)o1[i], (double)o2[i], (double)o3[i]);
                        }
                }
            }
        }
        free(w); free(a); free(wp); free(y); free(o1); free(o2); free(o3);
    }
    CHECK_MSG(bad == 0, "x16 amx: %ld of %ld elements differ", bad, checked);
    CHECK(checked > 0);
    qt_threadpool_free(tp);
}

/* The AMX k16 kernels at their tiling's edges: K chunks of 2 (Q4_K, Q5_K) and
 * 4 (Q6_K) super-blocks (n = 256, 768, 1280 and 4352: 1, 3, 5, 17 of them),
 * panels of 512 KiB of activations (n = 4352: 96 batch rows, else up to 256),
 * batch 15..17, 33, 96, 97, 130 and 257 (16-row tiles, the VNNI rest),
 * partial groups; against the AVX-512 kernel on the packed rows and the fast K
 * order's reference on the plain ones, bit for bit, and run from 3 pool
 * workers (each loads its own tile configuration), the same bits. */
static void test_k16_amx_tile_edges(void) {
    if (qt__cpu_level_get() < QT__CPU_AMX) {
        fprintf(stderr, "  SKIPPED AMX k16 edges: level %s (%s)\n", qt_cpu_level_name(), qt_cpu_level_detail());
        return;
    }
    const int64_t lens[] = {256, 768, 1280, 4352}, rows[] = {1, 17, 47}, batch[] = {15, 16, 17, 33, 96, 97, 130, 257};
    const int64_t max_n = 4352, max_nr = 47, max_nc = 257, ldo = max_nr + 1;
    qt_threadpool *tp = NULL;
    CHECK_OK(qt_threadpool_create(3, &tp));
    long bad = 0, checked = 0;
    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
        if (v->level != QT__CPU_AMX || !v->gemm_k16) continue;
        qt__gemm_x16_fn vnni = NULL;
        for (const qt__kernel_variant *u = qt__variants; u->level != QT__CPU_LEVEL_COUNT; u++)
            if (u->type == v->type && u->level == QT__CPU_AVX512 && u->gemm_k16) vnni = u->gemm_k16;
        CHECK_MSG(vnni != NULL, "%s: an AMX k16 kernel without an AVX-512 one", qt_type_get(v->type)->name);
        if (!vnni) continue;
        const qt_type t = v->type;
        const qt_vec_dot_fn dot = k16_order_ref(t);
        const size_t lda_max = qt_row_size(QT_TYPE_Q8_K, max_n);
        uint8_t *w = malloc(qt_row_size(t, max_n) * max_nr), *a = malloc(lda_max * max_nc);
        uint8_t *wp = malloc(qt__k16_bytes(t, max_nr, max_n));
        float *y = malloc(max_n * sizeof *y), *o1 = malloc((size_t)(ldo * max_nc) * sizeof(float));
        float *o2 = malloc((size_t)(ldo * max_nc) * sizeof(float)), *o3 = malloc((size_t)(ldo * max_nc) * sizeof(float));
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            const int64_t n = lens[li];
            const size_t ldw = qt_row_size(t, n), lda = qt_row_size(QT_TYPE_Q8_K, n);
            random_rows(t, w, max_nr, n);
            for (int64_t c = 0; c < max_nc; c++) {
                fill(y, n, c % 11 == 0 ? 1000.0f : 0.25f + (float)(c % 7)); /* some rows of +-127 codes */
                CHECK(qt__act_quantize(QT_TYPE_Q8_K, y, a + (size_t)c * lda, n));
            }
            for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
                const int64_t nr = rows[ri];
                qt__k16_pack(t, w, ldw, nr, n, wp);
                for (size_t bi = 0; bi < sizeof batch / sizeof batch[0]; bi++) {
                    const int64_t nc = batch[bi];
                    for (int64_t i = 0; i < ldo * nc; i++) o1[i] = o2[i] = o3[i] = -1234.5f;
                    v->gemm_k16(wp, nr, a, lda, nc, n, o1, ldo);
                    vnni(wp, nr, a, lda, nc, n, o2, ldo);
                    amx_job j = {v->gemm_k16, wp, qt__k16_group_bytes(t, n), a, lda, nr, nc, n, ldo, o3};
                    qt_parallel_for(tp, (nr + QT_X16_ROWS - 1) / QT_X16_ROWS, amx_share, &j);
                    for (int64_t c = 0; c < nc; c++)
                        for (int64_t r = 0; r < ldo; r++) {
                            const size_t i = (size_t)(c * ldo + r);
                            checked++;
                            bool ok = !memcmp(&o1[i], &o2[i], sizeof(float)) && !memcmp(&o1[i], &o3[i], sizeof(float));
                            if (ok && r < nr && (c % 16 == 0 || c == nc - 1)) {
                                const float want = dot(w + (size_t)r * ldw, a + (size_t)c * lda, n);
                                ok = !memcmp(&o1[i], &want, sizeof want);
                            }
                            if (!ok && bad++ < 5)
                                CHECK_MSG(0, "%s k16 amx n=%lld rows %lld batch %lld: out[%lld][%lld] = %.9g, avx512 %.9g, "
                                          "3 threads %.9g", qt_type_get(t)->name, (long long)n, (long long)nr, (long long)nc,
                                          (long long)c, (long long)r, (double)o1[i], (double)o2[i], (double)o3[i]);
                        }
                }
            }
        }
        free(w); free(a); free(wp); free(y); free(o1); free(o2); free(o3);
    }
    CHECK_MSG(bad == 0, "k16 amx: %ld of %ld elements differ", bad, checked);
    CHECK(checked > 0);
    qt_threadpool_free(tp);
}

/* MXFP4 blocks of random bytes (every E8M0 exponent, 0 and 1 giving f32-subnormal scales, 255
 * the largest): each vec_dot variant gives the reference's bits (check_random_blocks covers the
 * types with f16 scales only). */
static void test_mxfp4_random_blocks(void) {
    const qt_type_traits *r = qt__traits_ref(QT_TYPE_MXFP4);
    const int64_t sizes[] = {32, 64, 96, 256, 2080};
    uint8_t xq[17 * 65], yq[34 * 65];
    float y[2080];
    int ran = 0;
    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
        if (v->type != QT_TYPE_MXFP4 || !v->vec_dot || v->level > qt__cpu_level_get()) continue;
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int rep = 0; rep < 20; rep++) {
                const int64_t n = sizes[s];
                for (size_t i = 0; i < (size_t)(n / 32) * 17; i++) xq[i] = (uint8_t)(frand() * 128.0f + 128.0f);
                for (int64_t b = 0; b < n / 32; b++) xq[17 * b] = (uint8_t)(130.0f + 30.0f * frand()); /* 2^-28 .. 2^31 */
                if (rep < 3) xq[0] = (uint8_t)(rep == 2 ? 255 : rep); /* the extreme exponents (finite sums) */
                fill(y, n, rep < 10 ? 1e-3f : 50.0f);
                CHECK(qt__act_quantize(QT_TYPE_Q8_0, y, yq, n));
                const float a = r->vec_dot(xq, yq, n), b = v->vec_dot(xq, yq, n);
                CHECK_MSG(memcmp(&a, &b, sizeof a) == 0, "mxfp4 random blocks n=%lld rep %d: reference %.9g, %s %.9g",
                          (long long)n, rep, (double)a, qt__cpu_level_str(v->level), (double)b);
            }
        ran++;
    }
    if (!ran) SKIP("no mxfp4 variant runs at this level");
}

int main(void) {
    QT_RUN(test_dot_variants_equal_reference);
    QT_RUN(test_mxfp4_random_blocks);
    QT_RUN(test_gemm_variants_equal_vec_dot);
    QT_RUN(test_x16_variants_equal_reference);
    QT_RUN(test_act_q8s_variants_equal_reference);
    QT_RUN(test_act_q8_0_variants_equal_reference);
    QT_RUN(test_act_f16_variants_equal_reference);
    QT_RUN(test_gemm_fast_a32_variants_equal_reference);
    QT_RUN(test_gemm_fast_f16_bf16_lengths);
    QT_RUN(test_act_q8_K_variants_equal_reference);
    QT_RUN(test_k16_variants_equal_reference);
    QT_RUN(test_x16_amx_tile_edges);
    QT_RUN(test_k16_amx_tile_edges);
    QT_RUN(test_vec_dot_types_are_llama_cpp_pairs);
    QT_RUN(test_every_kernel_matches_dequantized_dot);
    QT_RUN(test_act_q8_0_definition);
    QT_RUN(test_act_q8_1_sum);
    QT_RUN(test_act_q8_K_definition);
    QT_RUN(test_act_unsupported_types_refused);
    QT_RUN(test_f32_dot_order);
    return qt_test_finish("test_engine_dot");
}
