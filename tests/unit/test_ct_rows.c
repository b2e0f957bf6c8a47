/* The engine's compressed-tensors W8A8 / FP8 rows (lib/quant/ct_rows.h,
 * docs/w8a8.md): vLLM's activation quantizers spelled out on values whose
 * answers are known (ties to even, saturation, the scale floors); every SIMD
 * variant of the dots equal to its scalar reference bit for bit on awkward
 * lengths; the references equal to an independent exact integer computation;
 * and a real exported checkpoint's layer run by the engine (1 and 2 threads)
 * equal bit for bit to a straightforward emulation from the stored tensors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/cpu_level.h"
#include "engine/engine_internal.h"
#include "fixtures.h"
#include "qtest.h"
#include "quant/ct_rows.h"
#include "quant/dot.h"
#include "quant/variants.h"
#include "quanta.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next_u32(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}
static float frand(void) { return (float)(next_u32() & 0xFFFFFF) / 16777216.0f * 2.0f - 1.0f; }

/* ---- activation quantizers ------------------------------------------------------- */

static void test_int8_token_quantizer(void) {
    /* absmax 127: the multiplier 127 / 127 is 1, so codes are x rounded half to even */
    const float x[8] = {2.5f, 3.5f, -2.5f, -127.0f, 0.5f, 1.5f, 126.4f, -0.49f};
    const int8_t want[8] = {2, 4, -2, -127, 0, 2, 126, 0};
    uint8_t row[4 + 8];
    qt__ct_i8_act_quantize(x, row, 8, NULL);
    CHECK(qt__ct_hdr(row, 0) == 1.0f);
    CHECK(memcmp(row + 4, want, 8) == 0);
    /* an all-zero token: scale 0, codes 0 (vLLM: 0 * inf = NaN, converted to 0) */
    const float z[3] = {0, 0, 0};
    memset(row, 0x55, sizeof row);
    qt__ct_i8_act_quantize(z, row, 3, NULL);
    CHECK(qt__ct_hdr(row, 0) == 0.0f && row[4] == 0 && row[5] == 0 && row[6] == 0);
    /* codes stay within [-127, 127] (the AVX2 kernel relies on it) */
    float r[300];
    uint8_t big[4 + 300];
    for (int rep = 0; rep < 20; rep++) {
        for (int i = 0; i < 300; i++) r[i] = frand() * (rep + 1) * 3.0f;
        qt__ct_i8_act_quantize(r, big, 300, NULL);
        int bad = 0;
        for (int i = 0; i < 300; i++) bad += ((const int8_t *)big)[4 + i] == -128;
        CHECK_EQ_INT(bad, 0);
    }
}

static void test_fp8_quantizers(void) {
    /* per token: absmax 448 gives scale 1, codes are the saturating cast */
    const float x[4] = {448.0f, 0.3f, -17.0f, 1e-3f};
    uint8_t row[4 + 4];
    qt__ct_f8_act_quantize(x, row, 4, NULL);
    CHECK(qt__ct_hdr(row, 0) == 1.0f);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(row[4 + i], qt_f32_to_e4m3_sat(x[i]));
    /* a tiny token: the scale floors at 1 / (448 * 512) */
    const float t[2] = {1e-9f, -1e-9f};
    qt__ct_f8_act_quantize(t, row, 2, NULL);
    CHECK(qt__ct_hdr(row, 0) == 1.0f / (448.0f * 512.0f));
    /* static: the checkpoint's scale, multiplied by its reciprocal, saturated */
    const float s[3] = {1.0f, -1000.0f, 0.0625f};
    qt__ct_f8_act_quantize_static(s, row, 3, 0.5f);
    CHECK(qt__ct_hdr(row, 0) == 0.5f);
    CHECK_EQ_INT(row[4], qt_f32_to_e4m3_sat(2.0f));
    CHECK_EQ_INT(row[5], qt_f32_to_e4m3_sat(-448.0f));
    CHECK_EQ_INT(row[6], qt_f32_to_e4m3_sat(0.125f));
    /* groups of 128: three groups for 300 columns, each its own absmax / 448; a zero group
     * floors at 1e-10 / 448 */
    float g[300];
    for (int i = 0; i < 300; i++) g[i] = i < 128 ? 0.0f : (float)(i % 7) * (i < 256 ? 1.0f : 8.0f);
    uint8_t grow[12 + 300];
    qt__ct_f8_block_act_quantize(g, grow, 300, NULL);
    CHECK(qt__ct_hdr(grow, 0) == 1e-10f / 448.0f);
    CHECK(qt__ct_hdr(grow, 1) == 6.0f / 448.0f);
    CHECK(qt__ct_hdr(grow, 2) == 48.0f / 448.0f);
    CHECK_EQ_INT(grow[12 + 260], qt_f32_to_e4m3_sat(g[260] / (48.0f / 448.0f)));
    CHECK_EQ_INT((int)qt_row_size(QT_TYPE_CT_F8_BLOCK, 300), 312);
    CHECK_EQ_INT((int)qt_row_size(QT_TYPE_CT_F8, 300), 308);
    CHECK_EQ_INT((int)qt_row_size(QT_TYPE_CT_I8, 300), 304);
}

/* ---- the dots: variants = references = exact integer arithmetic ------------------ */

static const int64_t lengths[] = {1, 7, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 172, 255, 300, 1000, 4099};

/* a random weight row of type t (finite codes: no e4m3 NaN) with positive header scales */
static void weight_row(qt_type t, uint8_t *row, int64_t n) {
    const size_t h = qt__ct_header_bytes(t, n);
    for (size_t i = 0; i < h / 4; i++) qt__ct_hdr_set(row, (int)i, 0.01f + fabsf(frand()));
    if (t == QT_TYPE_CT_F8) qt__ct_hdr_set(row, 1, 0.0f);
    for (int64_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)next_u32();
        if (t != QT_TYPE_CT_I8 && (c & 0x7F) == 0x7F) c ^= 1;
        row[h + i] = c;
    }
}

static void act_row(qt_type wt, uint8_t *row, int64_t n) {
    float *x = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = frand() * (i % 13 == 0 ? 40.0f : 1.0f);
    const qt_type at = qt_type_get(wt)->vec_dot_type;
    CHECK(qt__act_quantize(at, x, row, n));
    free(x);
}

/* e4m3 as an integer multiple of 2^-9 (exact: every e4m3 value is) */
static int64_t e4m3_k(uint8_t c) { return (int64_t)ldexp((double)qt_e4m3_to_f32(c), 9); }

/* The dot computed independently: integer sums (e4m3 products as multiples of 2^-18), the
 * stated epilogues. */
static float spelled(qt_type t, const uint8_t *w, const uint8_t *a, int64_t n) {
    if (t == QT_TYPE_CT_I8) {
        int64_t s = 0;
        for (int64_t i = 0; i < n; i++) s += (int64_t)((const int8_t *)w)[4 + i] * ((const int8_t *)a)[4 + i];
        return qt__ct_hdr(a, 0) * (qt__ct_hdr(w, 0) * (float)s);
    }
    if (t == QT_TYPE_CT_F8) {
        int64_t s = 0;
        for (int64_t i = 0; i < n; i++) s += e4m3_k(w[8 + i]) * e4m3_k(a[4 + i]);
        return qt__ct_hdr(a, 0) * (qt__ct_hdr(w, 0) * (float)ldexp((double)s, -18));
    }
    const int64_t ng = (n + 127) / 128;
    float acc = 0.0f;
    for (int64_t g = 0; g < ng; g++) {
        int64_t s = 0;
        for (int64_t i = g * 128; i < n && i < (g + 1) * 128; i++) s += e4m3_k(w[4 * ng + i]) * e4m3_k(a[4 * ng + i]);
        acc += ((float)ldexp((double)s, -18) * qt__ct_hdr(a, (int)g)) * qt__ct_hdr(w, (int)g);
    }
    return acc;
}

static void test_dots(void) {
    const qt_type types[] = {QT_TYPE_CT_I8, QT_TYPE_CT_F8, QT_TYPE_CT_F8_BLOCK};
    int variants_run = 0;
    for (size_t k = 0; k < 3; k++) {
        const qt_type t = types[k];
        const qt_type_traits *r = qt__traits_ref(t);
        CHECK(r && r->engine_only && r->vec_dot);
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
            const int64_t n = lengths[li];
            uint8_t *w = malloc(qt_row_size(t, n)), *a = malloc(qt_row_size(r->vec_dot_type, n));
            for (int rep = 0; rep < 3; rep++) {
                weight_row(t, w, n);
                act_row(t, a, n);
                const float ref = r->vec_dot(w, a, n), sp = spelled(t, w, a, n);
                CHECK_MSG(memcmp(&ref, &sp, 4) == 0, "%s n=%lld: reference %.9g, exact integer sum %.9g", r->name,
                          (long long)n, (double)ref, (double)sp);
                for (const qt__kernel_variant *v = qt__variants; v->level != QT__CPU_LEVEL_COUNT; v++) {
                    if (v->type != t || !v->vec_dot || v->level > qt__cpu_level_get()) continue;
                    const float got = v->vec_dot(w, a, n);
                    CHECK_MSG(memcmp(&got, &ref, 4) == 0, "%s %s n=%lld: %.9g, reference %.9g", r->name,
                              qt__cpu_level_str(v->level), (long long)n, (double)got, (double)ref);
                    variants_run++;
                }
            }
            free(w);
            free(a);
        }
    }
    if (qt__cpu_level_get() >= QT__CPU_AVX2) CHECK(variants_run > 0);
    else SKIP("no SIMD variant runs at this level: references checked only");
    /* the dispatched row is one of them */
    const qt_type_traits *d = qt_type_get(QT_TYPE_CT_I8);
    CHECK(d->to_float == qt__ct_i8_to_float);
}

/* Saturated codes everywhere: int8 -128 weights x +-127 activations, e4m3 +-448 x +-448 over the
 * longest row the exact sums allow: still exact (the bound in ct_rows.h). */
static void test_extreme_sums(void) {
    const int64_t n = QT_CT_ROW_MAX_N;
    uint8_t *w = malloc(qt_row_size(QT_TYPE_CT_I8, n)), *a = malloc(qt_row_size(QT_TYPE_CT_I8, n));
    qt__ct_hdr_set(w, 0, 1.0f);
    qt__ct_hdr_set(a, 0, 1.0f);
    memset(w + 4, 0x80, (size_t)n);              /* -128 */
    memset(a + 4, 0x81, (size_t)n);              /* -127 */
    const float want = (float)(128.0 * 127.0 * (double)n);
    CHECK(qt__dot_ct_i8_ref(w, a, n) == want);
    CHECK(qt_type_get(QT_TYPE_CT_I8)->vec_dot(w, a, n) == want);
    free(w);
    free(a);
    uint8_t *fw = malloc(qt_row_size(QT_TYPE_CT_F8, n)), *fa = malloc(qt_row_size(QT_TYPE_CT_F8_ACT, n));
    qt__ct_hdr_set(fw, 0, 1.0f);
    qt__ct_hdr_set(fw, 1, 0.0f);
    qt__ct_hdr_set(fa, 0, 1.0f);
    for (int64_t i = 0; i < n; i++) {
        fw[8 + i] = i % 3 ? 0x7E : 0x01;          /* 448, or the smallest subnormal 2^-9 */
        fa[4 + i] = i % 2 ? 0xFE : 0x01;          /* -448, or 2^-9 */
    }
    const float ref = qt__dot_ct_f8_ref(fw, fa, n), sp = spelled(QT_TYPE_CT_F8, fw, fa, n);
    CHECK(memcmp(&ref, &sp, 4) == 0);
    const float got = qt_type_get(QT_TYPE_CT_F8)->vec_dot(fw, fa, n);
    CHECK(memcmp(&got, &ref, 4) == 0);
    free(fw);
    free(fa);
}

/* ---- a real checkpoint's layer in the engine ------------------------------------- */

static const fx_spec spec = {"w8a8x", "LlamaForCausalLM", "llama", 64, 128, 1, 4, 2, 256, 256, 32, false, false, false,
                             false, false, 1e-5f, 10000.0f, 0, QT_ST_BF16, 1, NULL, false};

static float amax_cb(void *ctx, const char *name) {
    (void)ctx;
    (void)name;
    return 3.0f;
}

static float scale_at(const qt_st_tensor *s, int64_t i) {
    uint16_t b;
    memcpy(&b, (const uint8_t *)s->data + 2 * i, 2);
    return qt_bf16_to_f32(b);
}

/* out[b][r] for the stored q_proj of scheme, spelled from the safetensors file. */
static void emulate(const char *scheme, const qt_safetensors *st, const float *x, int B, int R, int C, float *out) {
    const qt_st_tensor *w = qt_st_find(st, "model.layers.0.self_attn.q_proj.weight");
    const qt_st_tensor *ws = qt_st_find(st, "model.layers.0.self_attn.q_proj.weight_scale");
    const qt_st_tensor *is = qt_st_find(st, "model.layers.0.self_attn.q_proj.input_scale");
    CHECK(w && ws);
    if (!w || !ws) return;
    const int8_t *qi = w->data;
    const uint8_t *qf = w->data;
    for (int b = 0; b < B; b++) {
        const float *xb = x + (size_t)b * C;
        float am = 0;
        for (int c = 0; c < C; c++) am = fmaxf(am, fabsf(xb[c]));
        for (int r = 0; r < R; r++) {
            float y;
            if (!strcmp(scheme, "w8a8-int8")) {
                int64_t s = 0;
                for (int c = 0; c < C; c++) s += (int64_t)qi[r * C + c] * (int8_t)nearbyintf(xb[c] * (127.0f / am));
                y = (am / 127.0f) * (scale_at(ws, r) * (float)s);
            } else if (!strcmp(scheme, "fp8-block")) {
                y = 0;
                for (int g = 0; g * 128 < C; g++) {
                    float gm = 0;
                    for (int c = g * 128; c < C && c < g * 128 + 128; c++) gm = fmaxf(gm, fabsf(xb[c]));
                    const float sa = fmaxf(gm, 1e-10f) / 448.0f;
                    double s = 0;
                    for (int c = g * 128; c < C && c < g * 128 + 128; c++)
                        s += (double)qt_e4m3_to_f32(qf[r * C + c]) * qt_e4m3_to_f32(qt_f32_to_e4m3_sat(xb[c] / sa));
                    y += ((float)s * sa) * scale_at(ws, (r / 128) * ((C + 127) / 128) + g);
                }
            } else {
                const bool stat = !strcmp(scheme, "fp8-static");
                const float sa = stat ? scale_at(is, 0) : fmaxf(am / 448.0f, 1.0f / (448.0f * 512.0f));
                double s = 0;
                for (int c = 0; c < C; c++) {
                    const float v = stat ? xb[c] * (1.0f / sa) : xb[c] / sa;
                    s += (double)qt_e4m3_to_f32(qf[r * C + c]) * qt_e4m3_to_f32(qt_f32_to_e4m3_sat(v));
                }
                y = sa * (scale_at(ws, stat ? 0 : r) * (float)s);
            }
            out[(size_t)b * R + r] = y;
        }
    }
}

static void test_layer_in_engine(void) {
    char src[1024];
    snprintf(src, sizeof src, "%s/w8a8_src", qt_test_tmpdir());
    mkdir(src, 0755);
    CHECK_EQ_INT(fx_write_hf(src, &spec, 7), 0);
    qt_model *m = NULL;
    CHECK_OK(qt_model_open(src, &m));
    if (!m) return;
    static const struct { const char *scheme; qt_type type; } cases[] = {
        {"w8a8-int8", QT_TYPE_CT_I8}, {"fp8-dynamic", QT_TYPE_CT_F8}, {"fp8-static", QT_TYPE_CT_F8},
        {"fp8-block", QT_TYPE_CT_F8_BLOCK}};
    enum { B = 5, R = 128, C = 128 };
    float x[B * C], got[B * R], want[B * R];
    for (int i = 0; i < B * C; i++) x[i] = frand() * (i % 17 == 0 ? 9.0f : 1.0f);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char dir[1100];
        snprintf(dir, sizeof dir, "%s/w8a8_%s", qt_test_tmpdir(), cases[k].scheme);
        qt_ct_export_opts eo = {.input_amax = !strcmp(cases[k].scheme, "fp8-static") ? amax_cb : NULL};
        CHECK_OK(qt_ct_export(m, cases[k].scheme, dir, &eo, NULL));
        qt_model *ct = NULL;
        CHECK_OK(qt_model_open(dir, &ct));
        if (!ct) continue;
        const qt_tensor *t = qt_model_find_tensor(ct, "blk.0.attn_q.weight");
        CHECK_MSG(t && t->type == cases[k].type, "%s: q_proj kept as %s", cases[k].scheme,
                  t ? qt_type_get(t->type)->name : "?");
        /* no f32 copy: one code byte per weight plus the row headers */
        if (t) CHECK_EQ_INT((int64_t)t->nbytes, (int64_t)R * (int64_t)qt_row_size(cases[k].type, C));
        char st_path[1200];
        snprintf(st_path, sizeof st_path, "%s/model.safetensors", dir);
        qt_safetensors *st = NULL;
        CHECK_OK(qt_st_open(st_path, &st));
        if (st) emulate(cases[k].scheme, st, x, B, R, C, want);
        for (int threads = 1; threads <= 2; threads++) {
            qt_engine_opts o;
            qt_engine_opts_default(&o);
            o.n_ctx = 32;
            o.n_threads = threads;
            qt_engine_ctx *e = NULL;
            CHECK_OK(qt_engine_new(ct, &o, &e));
            if (!e) continue;
            memset(got, 0, sizeof got);
            qt__matmul(e, got, x, B, &e->layers[0].wq);
            int diff = 0;
            for (int i = 0; i < B * R; i++) diff += memcmp(&got[i], &want[i], 4) != 0;
            CHECK_MSG(diff == 0, "%s, %d threads: %d of %d outputs differ from the emulation (first %.9g vs %.9g)",
                      cases[k].scheme, threads, diff, B * R, (double)got[0], (double)want[0]);
            qt_engine_free(e);
        }
        if (st) qt_st_close(st);
        qt_model_free(ct);
    }
    qt_model_free(m);
}

int main(void) {
    QT_RUN(test_int8_token_quantizer);
    QT_RUN(test_fp8_quantizers);
    QT_RUN(test_dots);
    QT_RUN(test_extreme_sums);
    QT_RUN(test_layer_in_engine);
    return qt_test_finish("test_ct_rows");
}
