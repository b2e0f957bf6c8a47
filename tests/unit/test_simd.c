/* SIMD dequantizers equal their scalar references bit for bit
 * (lib/quant/simd.h). Outputs are pre-filled with a NaN sentinel that no
 * dequantizer can produce (its low payload bits cannot come from an fp16
 * NaN), so an element a kernel forgets to write fails the comparison.
 * Every kernel comes from the one variants table (lib/quant/variants.c);
 * variants the CPU (or QUANTA_CPU) does not support are skipped, loudly.
 */
#include <math.h>

#include "qtest.h"
#include "quanta.h"
#include "quant/ct_internal.h"
#include "quant/simd.h"
#include "quant/traits_internal.h"
#include "quant/variants.h"

#define SENTINEL 0x7FC0DEADu

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint32_t rnd32(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

typedef void (*to_float_fn)(const void *, float *, int64_t);

static bool runs_here(const qt__kernel_variant *v) { return v->level <= qt__cpu_level_get(); }

static void fill_sentinel(float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) memcpy(&y[i], &(uint32_t){SENTINEL}, 4);
}

/* Bitwise equality; NaN results only need to agree on being NaN (the payload of
 * a NaN scale times a code is the scale's either way, but this keeps the test
 * independent of operand order), and the sentinel never counts as written. */
static int compare_outputs(const char *what, const float *want, const float *got, int64_t n) {
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t a, b;
        memcpy(&a, &want[i], 4);
        memcpy(&b, &got[i], 4);
        const bool ok = b != SENTINEL && a != SENTINEL && (a == b || (isnan(want[i]) && isnan(got[i])));
        if (!ok && bad++ < 3)
            fprintf(stderr, "  %s: element %lld: reference 0x%08x (%g), simd 0x%08x (%g)\n", what, (long long)i, a,
                    (double)want[i], b, (double)got[i]);
    }
    return bad;
}

/* Random finite fp16 over the whole exponent range (subnormals included). */
static uint16_t random_finite_half(void) {
    uint16_t h;
    do h = (uint16_t)rnd32(); while ((h & 0x7C00) == 0x7C00);
    return h;
}

static const uint16_t edge_halves[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00,
                                       0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x7D01, 0xFE3F};
#define N_EDGE (sizeof edge_halves / sizeof edge_halves[0])

/* Offsets of the fp16 scale fields inside each block type with a to_float
 * variant (blocks.h), so the tests can put edge-case scales there. */
typedef struct {
    qt_type type;
    size_t half_offsets[2];
    int n_halves;
} ggml_case;

static const ggml_case layouts[] = {
    {QT_TYPE_Q4_0, {0, 0}, 1},
    {QT_TYPE_Q8_0, {0, 0}, 1},
    {QT_TYPE_Q4_K, {0, 2}, 2},
    {QT_TYPE_Q6_K, {208, 0}, 1},
    {QT_TYPE_F16, {0, 0}, 1}, /* a "block" is one half: every value an edge or random half */
    {QT_TYPE_BF16, {0, 0}, 1},
};

static const ggml_case *layout_of(qt_type t) {
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (layouts[i].type == t) return &layouts[i];
    return NULL;
}

static void randomize_blocks(const ggml_case *c, uint8_t *blocks, int64_t nblocks, int edge_mode) {
    const size_t bb = qt_type_get(c->type)->block_bytes;
    for (int64_t b = 0; b < nblocks; b++) {
        uint8_t *blk = blocks + b * bb;
        for (size_t i = 0; i < bb; i++) blk[i] = (uint8_t)rnd32();
        if (edge_mode == 1) { /* all codes at an extreme, alternating per block */
            memset(blk, (b & 1) ? 0xFF : 0x00, bb);
        }
        for (int k = 0; k < c->n_halves; k++) {
            const uint16_t h = edge_mode ? edge_halves[(size_t)(b + k) % N_EDGE] : random_finite_half();
            memcpy(blk + c->half_offsets[k], &h, 2);
        }
    }
}

#ifdef QT_ARCH_X86
static void check_to_float_variant(const qt__kernel_variant *v) {
    const qt_type_traits *tr = qt__traits_ref(v->type);
    const ggml_case *c = layout_of(v->type);
    const char *level = qt__cpu_level_str(v->level);
    CHECK_MSG(tr && tr->to_float_ref, "variant %s: no scalar reference to compare with", level);
    CHECK_MSG(c, "%s %s: add the block's fp16 field offsets to layouts[]", tr ? tr->name : "?", level);
    if (!tr || !tr->to_float_ref || !c) return;
    const int64_t block_counts[] = {1, 3, 17, 64};
    for (size_t bc = 0; bc < sizeof block_counts / sizeof *block_counts; bc++)
        for (int mode = 0; mode < 3; mode++) {
            const int64_t nb = block_counts[bc], n = nb * tr->block_elems;
            uint8_t *blocks = malloc((size_t)nb * tr->block_bytes);
            float *want = malloc(sizeof(float) * (size_t)n), *got = malloc(sizeof(float) * (size_t)n);
            randomize_blocks(c, blocks, nb, mode);
            fill_sentinel(want, n);
            fill_sentinel(got, n);
            tr->to_float_ref(blocks, want, n);
            v->to_float(blocks, got, n);
            char what[64];
            snprintf(what, sizeof what, "%s %s (%lld blocks, mode %d)", tr->name, level, (long long)nb, mode);
            CHECK_MSG(compare_outputs(what, want, got, n) == 0, "%s differs from the scalar reference", what);
            free(blocks);
            free(want);
            free(got);
        }
}

/* Every to_float variant of the table equals its reference. */
static void test_to_float_variants(void) {
    int ran = 0;
    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
        if (!v->to_float) continue;
        const qt_type_traits *tr = qt__traits_ref(v->type);
        if (tr && tr->engine_only) continue; /* the weight-only ct4 rows: test_ct4 */
        if (!runs_here(v)) {
            fprintf(stderr, "  SKIPPED %s %s: this CPU (or QUANTA_CPU) lacks it\n", tr ? tr->name : "?",
                    qt__cpu_level_str(v->level));
            continue;
        }
        fprintf(stderr, "  %s %s\n", tr ? tr->name : "?", qt__cpu_level_str(v->level));
        check_to_float_variant(v);
        ran++;
    }
    if (!ran) SKIP("no to_float variant runs on this CPU");
}

/* The F16 and BF16 rows' variants on every one of the 65536 halves, NaNs included, bit for bit
 * (compare_outputs lets one NaN stand for another; here even the payloads must agree). */
static void test_half_rows_exhaustive(void) {
    int ran = 0;
    uint16_t *h = malloc(65536 * sizeof *h);
    float *want = malloc(65536 * sizeof *want), *got = malloc(65536 * sizeof *got);
    for (uint32_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
        if (!v->to_float || (v->type != QT_TYPE_F16 && v->type != QT_TYPE_BF16) || !runs_here(v)) continue;
        qt__traits_ref(v->type)->to_float_ref(h, want, 65536);
        v->to_float(h, got, 65536);
        CHECK_MSG(memcmp(want, got, 65536 * sizeof *want) == 0, "%s %s: not the reference's bits",
                  qt__traits_ref(v->type)->name, qt__cpu_level_str(v->level));
        ran++;
    }
    free(h);
    free(want);
    free(got);
    if (!ran) SKIP("no F16/BF16 to_float variant runs on this CPU");
}

static void test_ct_int4_group(void) {
    const int64_t shapes[][2] = {{8, 8}, {24, 8}, {48, 16}, {64, 32}, {136, 8}, {256, 128}, {384, 128}, {1024, 64}};
    int ran = 0;
    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
        if (!v->ct_int4_row) continue;
        const char *level = qt__cpu_level_str(v->level);
        if (!runs_here(v)) {
            fprintf(stderr, "  SKIPPED int4-group %s: this CPU (or QUANTA_CPU) lacks it\n", level);
            continue;
        }
        ran++;
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int with_zp = 0; with_zp < 2; with_zp++) {
                const int64_t cols = shapes[s][0], G = shapes[s][1], groups = cols / G;
                int32_t *packed = malloc(sizeof(int32_t) * (size_t)(cols / 8));
                float *scales = malloc(sizeof(float) * (size_t)groups);
                int8_t *zp = malloc((size_t)groups);
                float *want = malloc(sizeof(float) * (size_t)cols), *got = malloc(sizeof(float) * (size_t)cols);
                for (int64_t w = 0; w < cols / 8; w++) packed[w] = (int32_t)rnd32();
                for (int64_t g = 0; g < groups; g++) {
                    const uint32_t r = rnd32();
                    float f;
                    memcpy(&f, &r, 4);
                    scales[g] = (g % 5 == 4) ? -0.0f : isfinite(f) ? f : 1.5f; /* any finite scale */
                    zp[g] = (int8_t)((int)(rnd32() % 16) - 8);
                }
                fill_sentinel(want, cols);
                fill_sentinel(got, cols);
                qt__ct_int4_row_ref(packed, scales, with_zp ? zp : NULL, cols, G, want);
                v->ct_int4_row(packed, scales, with_zp ? zp : NULL, cols, G, got);
                char what[64];
                snprintf(what, sizeof what, "int4-group %s cols %lld G %lld%s", level, (long long)cols,
                         (long long)G, with_zp ? " asym" : "");
                CHECK_MSG(compare_outputs(what, want, got, cols) == 0, "%s differs from the scalar reference", what);
                free(packed);
                free(scales);
                free(zp);
                free(want);
                free(got);
            }
    }
    if (!ran) SKIP("int4-group: no SIMD level available on this CPU");
}

/* ---- quantizers: the lane-parallel scale searches (fit_lanes.h) ---------------------- */

static float rnd_unit(void) { return (float)(rnd32() & 0xFFFFFF) / 16777216.0f; } /* [0, 1) */

/* One super-block of adversarial or random data, pattern p: the corners of the
 * scale searches (all zero, constant, near-constant with an outlier, ties on
 * the rounding grid, huge, tiny and subnormal magnitudes, sparse rows). */
static void fill_block(float *x, int p) {
    const float big = 1e8f * (1.0f + rnd_unit()), tiny = 1e-30f * (1.0f + rnd_unit());
    for (int i = 0; i < 256; i++) {
        const float g = (rnd_unit() - 0.5f) + (rnd_unit() - 0.5f) + (rnd_unit() - 0.5f);
        switch (p) {
        case 0: x[i] = 0.0f; break;
        case 1: x[i] = 0.75f; break;
        case 2: x[i] = -1.25f; break;
        case 3: x[i] = -2.0f - 1e-6f * g; break;                          /* all negative, near constant */
        case 4: x[i] = (float)((int)(rnd32() % 17) - 8) * 0.5f; break;      /* ties */
        case 5: x[i] = big * g; break;
        case 6: x[i] = tiny * g; break;
        case 7: x[i] = 1e-39f * g; break;                                   /* subnormal */
        case 8: x[i] = rnd32() % 23 ? 0.0f : g; break;                      /* sparse */
        case 9: x[i] = rnd_unit() * 3.0f; break;                            /* all positive */
        default: x[i] = g * (1.0f + (float)(rnd32() % 4)); break;
        }
    }
    if (p == 3 || p == 1 || p == 9) x[rnd32() % 256] = (p == 3 ? 50.0f : -30.0f) * (1.0f + rnd_unit());
}

/* An importance row: positive, with zeros and a few huge ones. */
static void fill_imatrix(float *w, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        const uint32_t r = rnd32() % 64;
        w[i] = r == 0 ? 0.0f : r == 1 ? 1e6f * rnd_unit() : rnd_unit() * 4.0f;
    }
}

static void check_from_float_variant(const qt__kernel_variant *v) {
    const qt_type_traits *ref = qt__traits_ref(v->type);
    static const int64_t sizes[] = {256, 512, 1280, 2048, 4352}; /* partial batches and partial vectors */
    int bad = 0, rows = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        const int64_t n = sizes[k];
        const size_t bytes = (size_t)(n / 256) * ref->block_bytes;
        float *x = malloc(sizeof(float) * (size_t)n), *w = malloc(sizeof(float) * (size_t)n);
        uint8_t *want = malloc(bytes), *got = malloc(bytes);
        for (int trial = 0; trial < 40; trial++)
            for (int with_w = 0; with_w < 2; with_w++) {
                for (int64_t b = 0; b < n / 256; b++) fill_block(x + 256 * b, (int)(rnd32() % 12));
                fill_imatrix(w, n);
                memset(want, 0xA5, bytes);
                memset(got, 0x5A, bytes);
                ref->from_float(x, want, n, with_w ? w : NULL);
                v->from_float(x, got, n, with_w ? w : NULL);
                rows++;
                for (size_t i = 0; i < bytes; i++)
                    if (want[i] != got[i]) {
                        if (bad++ < 3)
                            fprintf(stderr, "  %s %s n %lld%s: block %zu byte %zu: reference 0x%02x, simd 0x%02x\n",
                                    ref->name, qt__cpu_level_str(v->level), (long long)n, with_w ? " imatrix" : "",
                                    i / ref->block_bytes, i % ref->block_bytes, want[i], got[i]);
                        break;
                    }
            }
        free(x);
        free(w);
        free(want);
        free(got);
    }
    CHECK_MSG(bad == 0, "%s quantizer (%s): %d of %d rows differ from the scalar reference", ref->name,
              qt__cpu_level_str(v->level), bad, rows);
}

static void test_from_float_variants(void) {
    int ran = 0;
    for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
        if (!v->from_float) continue;
        if (!runs_here(v)) {
            fprintf(stderr, "  SKIPPED %s quantizer %s: this CPU (or QUANTA_CPU) lacks it\n", qt__traits_ref(v->type)->name,
                    qt__cpu_level_str(v->level));
            continue;
        }
        ran++;
        check_from_float_variant(v);
    }
    if (!ran) SKIP("quantizers: no SIMD level available on this CPU");
}

static void test_dispatch_follows_cpu_level(void) {
    const qt__cpu_level cpu = qt__cpu_level_get();
    fprintf(stderr, "  dispatch level: %s\n", qt_cpu_level_name());
    CHECK(!strcmp(qt_cpu_level_name(), qt__cpu_level_str(cpu)));
    /* Known choices, written out: q4_0 and q6_K dequantize with the level's own kernel. */
    const qt_type_traits *q4 = qt_type_get(QT_TYPE_Q4_0), *q6 = qt_type_get(QT_TYPE_Q6_K);
    if (cpu >= QT__CPU_AVX512) {
        CHECK(q4->to_float == qt__dequantize_q4_0_avx512);
        CHECK(q6->to_float == qt__dequantize_q6_K_avx512);
        CHECK(qt__ct_int4_row_kernel() == qt__ct_int4_row_avx512);
    } else if (cpu == QT__CPU_AVX2) {
        CHECK(q4->to_float == qt__dequantize_q4_0_avx2);
        CHECK(q6->to_float == qt__dequantize_q6_K_avx2);
        CHECK(qt__ct_int4_row_kernel() == qt__ct_int4_row_avx2);
    } else {
        CHECK(q4->to_float == q4->to_float_ref);
        CHECK(q6->to_float == q6->to_float_ref);
        CHECK(qt__ct_int4_row_kernel() == qt__ct_int4_row_ref);
    }
    /* Every dispatched kernel is the reference or a variant of that type that runs here, and the
     * reference only when no variant of the type supplies that field at this level. */
    for (int t = 0; t < QT_TYPE_COUNT; t++) {
        const qt_type_traits *d = qt_type_get((qt_type)t), *r = qt__traits_ref((qt_type)t);
        if (!d) continue;
        CHECK(d->to_float_ref == r->to_float_ref);
        qt_to_float_fn want_tf = r->to_float_ref;
        qt_from_float_fn want_ff = r->from_float;
        qt_vec_dot_fn want_dot = r->vec_dot, want_gemm = r->vec_dot_gemm;
        for (int level = QT__CPU_AVX2; level <= (int)cpu; level++)
            for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
                if ((int)v->level != level || v->type != (qt_type)t) continue;
                if (v->to_float) want_tf = v->to_float;
                if (v->from_float) want_ff = v->from_float;
                if (v->vec_dot) want_dot = v->vec_dot;
                if (v->vec_dot_gemm) want_gemm = v->vec_dot_gemm;
            }
        CHECK_MSG(d->to_float == want_tf && d->from_float == want_ff && d->vec_dot == want_dot && d->vec_dot_gemm == want_gemm,
                  "%s: dispatched kernels are not the table's choice for %s", d->name, qt__cpu_level_str(cpu));
    }
    /* types without a SIMD variant keep their reference */
    const qt_type_traits *q5 = qt_type_get(QT_TYPE_Q5_K);
    CHECK(q5->to_float == q5->to_float_ref);
}
#endif

/* The dispatched path through the public API equals the reference on real
 * quantized data (whatever level was chosen). */
static void test_public_path_matches_reference(void) {
    const qt_type types[] = {QT_TYPE_Q4_0, QT_TYPE_Q8_0, QT_TYPE_Q4_K, QT_TYPE_Q6_K};
    const int64_t rows = 3, cols = 512;
    float src[3 * 512];
    for (int i = 0; i < rows * cols; i++) src[i] = sinf((float)i * 0.731f) * (1.0f + (float)(i % 7));
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        const qt_type_traits *tr = qt_type_get(types[k]);
        if (!tr->from_float || !tr->to_float_ref) continue;
        uint8_t *codes = malloc(qt_row_size(types[k], cols) * (size_t)rows);
        float want[3 * 512], got[3 * 512];
        fill_sentinel(got, rows * cols);
        CHECK_OK(qt_quantize_rows(types[k], src, codes, rows, cols, NULL));
        for (int r = 0; r < rows; r++)
            tr->to_float_ref(codes + (size_t)r * qt_row_size(types[k], cols), want + r * cols, cols);
        CHECK_OK(qt_dequantize_rows(types[k], codes, got, rows, cols));
        CHECK_MSG(compare_outputs(tr->name, want, got, rows * cols) == 0, "%s: dispatched dequantizer differs", tr->name);
        free(codes);
    }
}

int main(void) {
    fprintf(stderr, "SIMD levels: avx2 %s, avx512 %s (QUANTA_CPU=%s)\n",
            qt__cpu_level_get() >= QT__CPU_AVX2 ? "tested" : "NOT TESTED",
            qt__cpu_level_get() >= QT__CPU_AVX512 ? "tested" : "NOT TESTED", getenv("QUANTA_CPU") ? getenv("QUANTA_CPU") : "unset");
#ifdef QT_ARCH_X86
    QT_RUN(test_to_float_variants);
    QT_RUN(test_half_rows_exhaustive);
    QT_RUN(test_ct_int4_group);
    QT_RUN(test_from_float_variants);
    QT_RUN(test_dispatch_follows_cpu_level);
#else
    fprintf(stderr, "  SKIPPED every SIMD kernel: not an x86 build\n");
#endif
    QT_RUN(test_public_path_matches_reference);
    return qt_test_finish("test_simd");
}
