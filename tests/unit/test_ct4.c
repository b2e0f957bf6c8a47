/* The weight-only 4-bit compressed-tensors rows (lib/quant/ct4.h): the E2M1
 * table against qt_e2m1_to_f32; on random rows of every ct4 type and awkward
 * lengths, the references equal to the f32 dots on the dequantized row and
 * every SIMD variant equal to its reference bit for bit; and real exported
 * w4a16 / w4a16-asym / nvfp4 / mxfp4 checkpoints kept packed by the reader,
 * their q_proj run by the engine (batch 1 and 5, 1 and 3 threads) equal bit for
 * bit to the f32 dots on the weights dequantized from the stored safetensors
 * (what the dequantize-on-load path computed); and the int4 packing the reader and GPTQ's
 * binding share decodes to qt_ct_int_dequantize's values bit for bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/cpu_level.h"
#include "engine/engine_internal.h"
#include "fixtures.h"
#include "qtest.h"
#include "quant/ct4.h"
#include "quant/dot.h"
#include "quant/variants.h"
#include "quanta.h"

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint32_t next_u32(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}
static float frand(void) { return (float)(next_u32() & 0xFFFFFF) / 16777216.0f * 2.0f - 1.0f; }

static const qt_type types[] = {QT_TYPE_CT_W4_G32, QT_TYPE_CT_W4_G64, QT_TYPE_CT_W4_G128, QT_TYPE_CT_NVFP4,
                                QT_TYPE_CT_MXFP4};
#define N_TYPES ((int)(sizeof types / sizeof types[0]))

static void test_e2m1_table(void) {
    for (int c = 0; c < 16; c++) {
        const float a = qt__e2m1_values[c], b = qt_e2m1_to_f32((uint8_t)c);
        CHECK_MSG(memcmp(&a, &b, 4) == 0, "e2m1 code %d: table %g, qt_e2m1_to_f32 %g", c, (double)a, (double)b);
    }
}

/* A random row: random codes and group parameters (int4: a random dtype, scales, zero points). */
static void random_row(qt_type t, uint8_t *row, int64_t n) {
    qt__ct4_form f;
    qt__ct4_form_of(t, &f);
    memset(row, 0, qt_row_size(t, n));
    const qt_ct_dtype dt = (qt_ct_dtype)(next_u32() % 3);
    if (f.kind == QT_CT4_INT4) qt__ct4_set_header(row, (uint32_t)dt);
    else {
        const float gs = f.kind == QT_CT4_NVFP4 ? 448.0f * 6.0f / (0.5f + 3.0f * (frand() + 1.0f)) : 0.0f;
        uint32_t w;
        memcpy(&w, &gs, 4);
        qt__ct4_set_header(row, w);
    }
    for (int64_t g = 0; g < n / f.group; g++) {
        const float s = qt_ct_round_dtype(ldexpf(1.0f + frand() * 0.99f, -(int)(next_u32() % 28)) /* down to f16 subnormals */, dt);
        const int8_t zp = (next_u32() % 2) ? (int8_t)((int)(next_u32() % 16) - 8) : 0;
        uint8_t b = (uint8_t)(next_u32() % 256);
        if (f.kind == QT_CT4_NVFP4) b = (uint8_t)(next_u32() % 0x7e); /* positive, not NaN */
        if (f.kind == QT_CT4_MXFP4) b = (uint8_t)(110 + next_u32() % 30);
        qt__ct4_set_param(row, &f, g, s, zp, b);
    }
    uint8_t *codes = malloc((size_t)n);
    for (int64_t i = 0; i < n; i++) codes[i] = (uint8_t)(next_u32() % 16);
    qt__ct4_set_codes(row, n, &f, codes);
    free(codes);
}

static void test_dots(void) {
    static const int64_t lengths[] = {32, 64, 96, 128, 160, 256, 288, 384, 640, 1024, 2080, 4096, 4224};
    int variants_run = 0;
    for (int k = 0; k < N_TYPES; k++) {
        const qt_type t = types[k];
        const qt_type_traits *r = qt__traits_ref(t);
        qt__ct4_form f;
        CHECK(r && r->engine_only && r->vec_dot && r->vec_dot_gemm && qt__ct4_form_of(t, &f));
        if (!r || !qt__ct4_form_of(t, &f)) continue;
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
            const int64_t n = lengths[li];
            if (n % f.group) continue;
            uint8_t *w = malloc(qt_row_size(t, n));
            float *deq = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
            for (int rep = 0; rep < 3; rep++) {
                random_row(t, w, n);
                for (int64_t i = 0; i < n; i++) y[i] = frand() * (i % 13 == 0 ? 8.0f : 1.0f);
                r->to_float_ref(w, deq, n);
                const float d_ref = r->vec_dot(w, y, n), g_ref = r->vec_dot_gemm(w, y, n);
                const float d_f32 = qt__dot_f32_ref(deq, y, n), g_f32 = qt__gemm_f32_ref(deq, y, n);
                CHECK_MSG(memcmp(&d_ref, &d_f32, 4) == 0 && memcmp(&g_ref, &g_f32, 4) == 0,
                          "%s n=%lld: references %.9g / %.9g, f32 dots on the dequantized row %.9g / %.9g", r->name,
                          (long long)n, (double)d_ref, (double)g_ref, (double)d_f32, (double)g_f32);
                for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
                    if (v->type != t || !v->vec_dot || v->level > qt__cpu_level_get()) continue;
                    float *vd = malloc((size_t)n * 4);
                    v->to_float(w, vd, n);
                    CHECK_MSG(memcmp(vd, deq, (size_t)n * 4) == 0, "%s %s n=%lld: to_float differs from the reference",
                              r->name, qt__cpu_level_str(v->level), (long long)n);
                    free(vd);
                    const float gd = v->vec_dot(w, y, n), gg = v->vec_dot_gemm(w, y, n);
                    CHECK_MSG(memcmp(&gd, &d_ref, 4) == 0 && memcmp(&gg, &g_ref, 4) == 0,
                              "%s %s n=%lld: %.9g / %.9g, references %.9g / %.9g", r->name, qt__cpu_level_str(v->level),
                              (long long)n, (double)gd, (double)gg, (double)d_ref, (double)g_ref);
                    variants_run++;
                }
            }
            free(w);
            free(deq);
            free(y);
        }
    }
    if (qt__cpu_level_get() >= QT__CPU_AVX2) CHECK(variants_run > 0);
    else SKIP("no SIMD variant runs at this level: references checked only");
}

/* The blocked kernels against vec_dot_gemm's reference per element, on tile remainders. */
static void test_gemm_tiles(void) {
    const int64_t rows[] = {1, 2, 3, 4, 5, 7, 17}, batch[] = {1, 2, 3, 4, 5, 7, 9, 64, 65};
    const int64_t n = 256, max_nr = 17, max_nc = 65, ldo = max_nr + 2;
    int ran = 0;
    for (int k = 0; k < N_TYPES; k++) {
        const qt_type t = types[k];
        const qt_type_traits *r = qt__traits_ref(t);
        const size_t ldw = qt_row_size(t, n);
        uint8_t *w = malloc(ldw * max_nr);
        float *a = malloc((size_t)(n * max_nc) * 4), *out = malloc((size_t)(ldo * max_nc) * 4);
        for (int64_t i = 0; i < max_nr; i++) random_row(t, w + i * ldw, n);
        for (int64_t i = 0; i < n * max_nc; i++) a[i] = frand();
        for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
            if (v->type != t || !v->gemm || v->level > qt__cpu_level_get()) continue;
            long bad = 0;
            for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++)
                for (size_t bi = 0; bi < sizeof batch / sizeof batch[0]; bi++) {
                    const int64_t nr = rows[ri], nc = batch[bi];
                    for (int64_t i = 0; i < ldo * nc; i++) out[i] = -1234.5f;
                    v->gemm(w, ldw, nr, a, (size_t)n * 4, nc, n, out, ldo);
                    for (int64_t c = 0; c < nc; c++)
                        for (int64_t rr = 0; rr < ldo; rr++) {
                            const float want = rr < nr ? r->vec_dot_gemm(w + rr * ldw, a + c * n, n) : -1234.5f;
                            bad += memcmp(&out[c * ldo + rr], &want, 4) != 0;
                        }
                }
            CHECK_MSG(bad == 0, "%s gemm %s: %ld elements differ from vec_dot_gemm", r->name,
                      qt__cpu_level_str(v->level), bad);
            ran++;
        }
        free(w); free(a); free(out);
    }
    if (qt__cpu_level_get() >= QT__CPU_AVX512) CHECK(ran > 0);
    else SKIP("the blocked kernels are AVX-512 only: batches dequantize each row at this level");
}

/* ---- real checkpoints in the engine ---------------------------------------------- */

/* --numerics fast on int4 g128 rows (ct4.h "int8 activations"): the reference against
 * the exact product of the dequantized weights and int8 activations (in double) and
 * against the f32 dot within the activation rounding; every SIMD kernel equal to the
 * reference bit for bit on row and batch remainders and lengths of 1 to 33 groups. */
static void test_fast_int8(void) {
    const qt_type t = QT_TYPE_CT_W4_G128;
    const int64_t lens[] = {128, 256, 384, 2048, 4224}, rows[] = {1, 2, 3, 4, 5, 7, 17, 37}, batch[] = {1, 2, 3, 4, 5, 9};
    const int64_t max_nr = 37, max_nc = 9, ldo = max_nr + 2; /* rows past a 32-row block, batches past a 4-row tile */
    int ran = 0;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        const int64_t n = lens[li], ng = n / QT_CT4_Q8_GROUP;
        const size_t ldw = qt_row_size(t, n), lda = qt__ct4_q8_row_size(n);
        uint8_t *w = malloc(ldw * max_nr), *a = malloc(lda * max_nc);
        float *x = malloc((size_t)(n * max_nc) * 4), *deq = malloc((size_t)n * 4), *out = malloc((size_t)(ldo * max_nc) * 4);
        for (int64_t r = 0; r < max_nr; r++) random_row(t, w + r * ldw, n);
        for (int64_t i = 0; i < n * max_nc; i++) x[i] = frand() * (i % 13 == 0 ? 8.0f : 1.0f);
        for (int64_t c = 0; c < max_nc; c++) qt__ct4_q8_quantize(x + c * n, a + c * lda, n);
        for (int64_t r = 0; r < max_nr; r++)
            for (int64_t c = 0; c < max_nc; c++) {
                const uint8_t *row = w + r * ldw, *ac = a + c * lda;
                const qt__ct4_q8_head *h = (const qt__ct4_q8_head *)ac;
                const int8_t *q = (const int8_t *)(h + ng);
                const qt__ct4_form f = {QT_CT4_INT4, 128, 5};
                const uint8_t *codes = qt__ct4_codes(row, n, &f);
                qt__traits_ref(t)->to_float_ref(row, deq, n);
                double exact = 0.0, mag = 0.0, bound = 0.0;
                for (int64_t i = 0; i < n; i++) {
                    const int64_t g = i / 128, k = i % 128 / 32, j = i % 32;
                    float s;
                    memcpy(&s, qt__ct4_params(row) + 5 * g, 4);
                    const int zp = (int8_t)qt__ct4_params(row)[5 * g + 4];
                    const uint8_t b = codes[i / 32 * 16 + j % 16];
                    const double wv = (double)(((j < 16 ? b & 15 : b >> 4) - 8 - zp)) * s;
                    const int8_t qa = q[128 * g + (j < 16 ? 16 * k + j : 64 + 16 * k + j - 16)];
                    exact += wv * (double)qa * h[g].d;
                    mag += fabs(wv * (double)qa * h[g].d);
                    /* vs f32: activation rounding (d/2) and the dequantizer's dtype rounding (2^-8) */
                    bound += fabs(wv) * h[g].d * 0.5 + fabs((double)deq[i] * x[c * n + i]) * 0x1p-8;
                }
                const float ref = qt__dot_ct4_w4g128_fast_ref(row, ac, n);
                CHECK_MSG(fabs(ref - exact) <= 1e-5 * mag + 1e-30, "n=%lld r=%lld c=%lld: fast reference %.9g, exact %.9g",
                          (long long)n, (long long)r, (long long)c, (double)ref, exact);
                const float f32 = qt__dot_f32_ref(deq, x + c * n, n);
                CHECK_MSG(fabs(ref - f32) <= bound + 1e-5 * mag + 1e-30,
                          "n=%lld r=%lld c=%lld: fast %.9g, f32 dot %.9g (bound %.3g)", (long long)n, (long long)r,
                          (long long)c, (double)ref, (double)f32, bound);
            }
        for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
            if (v->type != t || !v->gemm_fast || v->level > qt__cpu_level_get()) continue;
            CHECK(v->gemm_fast_ref == qt__dot_ct4_w4g128_fast_ref);
            long bad = 0;
            for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++)
                for (size_t bi = 0; bi < sizeof batch / sizeof batch[0]; bi++) {
                    const int64_t nr = rows[ri], nc = batch[bi];
                    for (int64_t i = 0; i < ldo * nc; i++) out[i] = -1234.5f;
                    v->gemm_fast(w, ldw, nr, a, lda, nc, n, out, ldo);
                    for (int64_t c = 0; c < nc; c++)
                        for (int64_t rr = 0; rr < ldo; rr++) {
                            const float want = rr < nr ? qt__dot_ct4_w4g128_fast_ref(w + rr * ldw, a + c * lda, n) : -1234.5f;
                            bad += memcmp(&out[c * ldo + rr], &want, 4) != 0;
                        }
                }
            CHECK_MSG(bad == 0, "ct_w4_g128 fast %s n=%lld: %ld elements differ from the reference",
                      qt__cpu_level_str(v->level), (long long)n, bad);
            ran++;
        }
        free(w); free(a); free(x); free(deq); free(out);
    }
    if (qt__cpu_level_get() >= QT__CPU_AVX2) CHECK(ran > 0);
    else SKIP("no int8 kernel at this level: the reference checked only");
}

static const fx_spec spec = {"ct4x", "LlamaForCausalLM", "llama", 64, 128, 1, 4, 2, 256, 256, 32, false, false, false,
                             false, false, 1e-5f, 10000.0f, 0, QT_ST_BF16, 1, NULL, false};

/* q_proj dequantized from the stored safetensors with the public ct.h dequantizers. */
static bool stored_weights(const char *scheme, const qt_safetensors *st, int64_t R, int64_t C, float *out) {
    const char *mod = "model.layers.0.self_attn.q_proj";
    char name[256];
    snprintf(name, sizeof name, "%s.weight_packed", mod);
    const qt_st_tensor *wp = qt_st_find(st, name);
    snprintf(name, sizeof name, "%s.weight_scale", mod);
    const qt_st_tensor *ws = qt_st_find(st, name);
    CHECK(wp && ws);
    if (!wp || !ws) return false;
    if (!strcmp(scheme, "mxfp4")) return qt_ct_mxfp4_dequantize(wp->data, ws->data, R, C, out) == QT_OK;
    if (!strcmp(scheme, "nvfp4")) {
        snprintf(name, sizeof name, "%s.weight_global_scale", mod);
        const qt_st_tensor *gs = qt_st_find(st, name);
        float g;
        memcpy(&g, gs->data, 4);
        return qt_ct_nvfp4_dequantize(wp->data, ws->data, g, R, C, out) == QT_OK;
    }
    const bool asym = !strcmp(scheme, "w4a16-asym");
    const int64_t ng = R * (C / 128);
    int8_t *q = malloc((size_t)(R * C)), *zp = calloc((size_t)ng, 1);
    float *sc = malloc((size_t)ng * 4);
    bool ok = qt_ct_unpack_rows(wp->data, R, C, 4, q) == QT_OK;
    for (int64_t i = 0; i < ng; i++) {
        uint16_t b;
        memcpy(&b, (const uint8_t *)ws->data + 2 * i, 2);
        sc[i] = qt_bf16_to_f32(b);
    }
    if (asym) {
        snprintf(name, sizeof name, "%s.weight_zero_point", mod);
        const qt_st_tensor *z = qt_st_find(st, name);
        ok = ok && z && qt_ct_unpack_cols(z->data, R, C / 128, 4, zp) == QT_OK;
    }
    const qt_ct_int_args a = {.bits = 4, .symmetric = !asym, .strategy = QT_CT_GROUP, .group_size = 128,
                              .dtype = QT_CT_BF16};
    ok = ok && qt_ct_int_dequantize(q, sc, asym ? zp : NULL, R, C, &a, out) == QT_OK;
    free(q);
    free(zp);
    free(sc);
    return ok;
}

/* --numerics fast in the engine: int4 g128 q_proj takes the int8 kernel, its outputs the
 * reference's on the quantized activations whatever the batch and thread count. */
static void check_fast_engine(const qt_model *ct, const float *x, int nb, int threads) {
    enum { R = 128, C = 128 };
    qt_engine_opts o;
    qt_engine_opts_default(&o);
    o.n_ctx = 32;
    o.n_threads = threads;
    o.numerics = QT_NUMERICS_FAST;
    qt_engine_ctx *e = NULL;
    CHECK_OK(qt_engine_new(ct, &o, &e));
    if (!e) return;
    const qt__mat *m = &e->layers[0].wq;
    CHECK(m->act_ct4_q8 == (qt__cpu_level_get() >= QT__CPU_AVX2));
    if (!m->act_ct4_q8) { /* scalar level: no int8 kernel, the f32 path above */
        qt_engine_free(e);
        return;
    }
    float got[5 * R];
    qt__matmul(e, got, x, nb, m);
    uint8_t a[sizeof(qt__ct4_q8_head) + C];
    int diff = 0;
    for (int b = 0; b < nb; b++) {
        qt__ct4_q8_quantize(x + b * C, a, C);
        for (int r = 0; r < R; r++) {
            const float want = qt__dot_ct4_w4g128_fast_ref(m->data + (size_t)r * m->row_bytes, a, C);
            diff += memcmp(&got[b * R + r], &want, 4) != 0;
        }
    }
    CHECK_MSG(diff == 0, "fast, batch %d, %d threads: %d outputs differ from the int8 reference",
              nb, threads, diff);
    qt_engine_free(e);
}

static void test_layer_in_engine(void) {
    char src[1024];
    snprintf(src, sizeof src, "%s/ct4_src", qt_test_tmpdir());
    mkdir(src, 0755);
    CHECK_EQ_INT(fx_write_hf(src, &spec, 11), 0);
    qt_model *m = NULL;
    CHECK_OK(qt_model_open(src, &m));
    if (!m) return;
    static const struct { const char *scheme; qt_type type; } cases[] = {
        {"w4a16", QT_TYPE_CT_W4_G128}, {"w4a16-asym", QT_TYPE_CT_W4_G128}, {"nvfp4", QT_TYPE_CT_NVFP4},
        {"mxfp4", QT_TYPE_CT_MXFP4}};
    enum { B = 5, R = 128, C = 128 };
    float x[B * C], got[B * R], want[B * R], *wf = malloc((size_t)R * C * 4);
    for (int i = 0; i < B * C; i++) x[i] = frand() * (i % 17 == 0 ? 9.0f : 1.0f);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char dir[1100];
        snprintf(dir, sizeof dir, "%s/ct4_%s", qt_test_tmpdir(), cases[k].scheme);
        qt_ct_export_opts eo = {0};
        CHECK_OK(qt_ct_export(m, cases[k].scheme, dir, &eo, NULL));
        qt_model *ct = NULL;
        CHECK_OK(qt_model_open(dir, &ct));
        if (!ct) continue;
        const qt_tensor *t = qt_model_find_tensor(ct, "blk.0.attn_q.weight");
        CHECK_MSG(t && t->type == cases[k].type, "%s: q_proj kept as %s", cases[k].scheme,
                  t ? qt_type_get(t->type)->name : "?");
        if (t) CHECK_EQ_INT((int64_t)t->nbytes, (int64_t)R * (int64_t)qt_row_size(cases[k].type, C));
        char st_path[1200];
        snprintf(st_path, sizeof st_path, "%s/model.safetensors", dir);
        qt_safetensors *st = NULL;
        CHECK_OK(qt_st_open(st_path, &st));
        const bool have = st && stored_weights(cases[k].scheme, st, R, C, wf);
        CHECK(have);
        for (int nb = 1; have && nb <= B; nb += nb == 1 ? 1 : B - 2) { /* 1, 2, 5 */
            for (int b = 0; b < nb; b++)
                for (int r = 0; r < R; r++)
                    want[b * R + r] = (nb == 1 ? qt__dot_f32_ref : qt__gemm_f32_ref)(wf + (size_t)r * C, x + b * C, C);
            for (int threads = 1; threads <= 3; threads += 2) {
                qt_engine_opts o;
                qt_engine_opts_default(&o);
                o.n_ctx = 32;
                o.n_threads = threads;
                o.numerics = QT_NUMERICS_LLAMA; /* the f32 path's bits; fast: below */
                qt_engine_ctx *e = NULL;
                CHECK_OK(qt_engine_new(ct, &o, &e));
                if (!e) continue;
                memset(got, 0, sizeof got);
                qt__matmul(e, got, x, nb, &e->layers[0].wq);
                int diff = 0;
                for (int i = 0; i < nb * R; i++) diff += memcmp(&got[i], &want[i], 4) != 0;
                CHECK_MSG(diff == 0, "%s, batch %d, %d threads: %d of %d outputs differ from the f32 path (first %.9g vs %.9g)",
                          cases[k].scheme, nb, threads, diff, nb * R, (double)got[0], (double)want[0]);
                qt_engine_free(e);
                if (cases[k].type == QT_TYPE_CT_W4_G128) check_fast_engine(ct, x, nb, threads);
            }
        }
        if (st) qt_st_close(st);
        qt_model_free(ct);
    }
    free(wf);
    qt_model_free(m);
}

/* qt__ct4_pack_int4 (the reader's packing, and GPTQ's binding for its quantized forward):
 * rows that decode to exactly what qt_ct_int_dequantize gives from the same codes. */
static void test_pack_int4(void) {
    static const int64_t groups[] = {32, 64, 128};
    static const qt_ct_dtype dts[] = {QT_CT_BF16, QT_CT_F16};
    const int64_t R = 3, C = 384;
    float *w = malloc((size_t)(R * C) * sizeof *w), *ref = malloc((size_t)(R * C) * sizeof *ref),
          *got = malloc((size_t)(R * C) * sizeof *got), *sc = malloc((size_t)R * 12 * sizeof *sc);
    int8_t *q = malloc((size_t)(R * C)), *zp = malloc((size_t)R * 12);
    uint8_t *codes = malloc((size_t)C), *rows = malloc((size_t)R * qt_row_size(QT_TYPE_CT_W4_G32, C));
    for (int64_t i = 0; i < R * C; i++) w[i] = frand() * (1.0f + (float)(i % 7));
    for (int gi = 0; gi < 3; gi++)
        for (int di = 0; di < 2; di++)
            for (int asym = 0; asym < 2; asym++) {
                const qt_ct_int_args a = {4, !asym, QT_CT_GROUP, groups[gi], dts[di]};
                const qt_type t = qt__ct4_int4_type(groups[gi]);
                CHECK(qt_ct_int_quantize(w, R, C, &a, q, sc, asym ? zp : NULL) == QT_OK);
                CHECK(qt_ct_int_dequantize(q, sc, asym ? zp : NULL, R, C, &a, ref) == QT_OK);
                qt__ct4_pack_int4(t, dts[di], q, sc, asym ? zp : NULL, R, C, rows, codes);
                CHECK(qt_dequantize_rows(t, rows, got, R, C) == QT_OK);
                CHECK_MSG(memcmp(got, ref, (size_t)(R * C) * sizeof *got) == 0,
                          "group %lld dtype %d asym %d: packed rows decode differently", (long long)groups[gi], di, asym);
            }
    free(w), free(ref), free(got), free(sc), free(q), free(zp), free(codes), free(rows);
}

int main(void) {
    QT_RUN(test_pack_int4);
    QT_RUN(test_e2m1_table);
    QT_RUN(test_dots);
    QT_RUN(test_gemm_tiles);
    QT_RUN(test_fast_int8);
    QT_RUN(test_layer_in_engine);
    return qt_test_finish("test_ct4");
}
