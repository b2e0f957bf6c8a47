/* The weight-only 8-bit compressed-tensors rows (lib/quant/ct8.h): the reader's
 * packing decodes to qt_ct_int_dequantize's values bit for bit (groups of 128,
 * per channel, per tensor; symmetric and with zero points; bf16, f16, f32); on
 * random rows of both ct8 types and awkward lengths (1 to 4224, not multiples
 * of the unrolls) the references equal the f32 dots on the dequantized row and
 * every SIMD variant (to_float, vec_dot, vec_dot_gemm) equals its reference
 * bit for bit; and a real exported w8a16 checkpoint is kept packed by the
 * reader, its q_proj run by the engine (batch 1 to 512, 1, 2 and 3 threads)
 * equal bit for bit to the f32 dots on the weights dequantized from the stored
 * safetensors (what the dequantize-on-load path computed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/cpu_level.h"
#include "engine/engine_internal.h"
#include "fixtures.h"
#include "qtest.h"
#include "quant/ct8.h"
#include "quant/dot.h"
#include "quant/variants.h"
#include "quanta.h"

static uint64_t rng = 0x13198A2E03707344ull;
static uint32_t next_u32(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}
static float frand(void) { return (float)(next_u32() & 0xFFFFFF) / 16777216.0f * 2.0f - 1.0f; }

static const qt_type types[] = {QT_TYPE_CT_W8_G128, QT_TYPE_CT_W8_CH};
#define N_TYPES ((int)(sizeof types / sizeof types[0]))

/* qt__ct8_pack against qt_ct_int_dequantize on the same codes. */
static void test_pack(void) {
    static const qt_ct_dtype dts[] = {QT_CT_BF16, QT_CT_F16, QT_CT_F32};
    static const struct { qt_ct_strategy st; int64_t group; qt_type t; } forms[] = {
        {QT_CT_GROUP, 128, QT_TYPE_CT_W8_G128}, {QT_CT_CHANNEL, 0, QT_TYPE_CT_W8_CH}, {QT_CT_TENSOR, 0, QT_TYPE_CT_W8_CH}};
    const int64_t R = 5, C = 384;
    float *w = malloc((size_t)(R * C) * 4), *ref = malloc((size_t)(R * C) * 4), *got = malloc((size_t)(R * C) * 4),
          *sc = malloc((size_t)R * 3 * 4);
    int8_t *q = malloc((size_t)(R * C)), *zp = malloc((size_t)R * 3);
    uint8_t *rows = malloc((size_t)R * qt_row_size(QT_TYPE_CT_W8_G128, C));
    for (int64_t i = 0; i < R * C; i++) w[i] = frand() * (1.0f + (float)(i % 7)) + (i % 11 == 0 ? 0.7f : 0.0f);
    for (size_t fi = 0; fi < sizeof forms / sizeof forms[0]; fi++)
        for (int di = 0; di < 3; di++)
            for (int asym = 0; asym < 2; asym++) {
                if (asym && forms[fi].st == QT_CT_TENSOR) continue; /* the reader dequantizes that one */
                const qt_ct_int_args a = {8, !asym, forms[fi].st, forms[fi].group, dts[di]};
                int64_t total = 0;
                CHECK_OK(qt_ct_int_scale_count(&a, R, C, NULL, &total));
                CHECK_OK(qt_ct_int_quantize(w, R, C, &a, q, sc, asym ? zp : NULL));
                CHECK_OK(qt_ct_int_dequantize(q, sc, asym ? zp : NULL, R, C, &a, ref));
                qt__ct8_pack(forms[fi].t, dts[di], q, sc, asym ? zp : NULL, total, R, C, rows);
                CHECK_OK(qt_dequantize_rows(forms[fi].t, rows, got, R, C));
                CHECK_MSG(memcmp(got, ref, (size_t)(R * C) * 4) == 0, "%s %s asym %d: packed rows decode differently",
                          qt_ct_strategy_name(forms[fi].st), qt_ct_dtype_name(dts[di]), asym);
            }
    free(w), free(ref), free(got), free(sc), free(q), free(zp), free(rows);
}

/* A random row: a random dtype, random scales (down to f16 subnormals) and zero points, all 256 codes. */
static void random_row(qt_type t, uint8_t *row, int64_t n) {
    const qt_ct_dtype dt = (qt_ct_dtype)(next_u32() % 3);
    const uint32_t word = (uint32_t)dt;
    memcpy(row, &word, 4);
    for (int64_t g = 0; g < qt__ct8_groups(t, n); g++) {
        const float s = qt_ct_round_dtype(ldexpf(1.0f + frand() * 0.99f, -(int)(next_u32() % 28)), dt);
        const int8_t zp = (next_u32() % 2) ? (int8_t)(next_u32() % 256) : 0;
        uint8_t *p = row + 4 + (size_t)g * QT_CT8_PARAM;
        memcpy(p, &s, 4);
        p[4] = (uint8_t)zp;
    }
    int8_t *q = (int8_t *)qt__ct8_codes(t, row, n);
    for (int64_t i = 0; i < n; i++) q[i] = (int8_t)(next_u32() % 256);
}

static void test_dots(void) {
    static const int64_t lengths[] = {1, 7, 15, 16, 17, 48, 63, 64, 65, 127, 128, 129, 200, 256, 383, 384, 1000,
                                      2048, 2112, 4224};
    int variants_run = 0;
    for (int k = 0; k < N_TYPES; k++) {
        const qt_type t = types[k];
        const qt_type_traits *r = qt__traits_ref(t);
        CHECK(r && r->engine_only && r->vec_dot && r->vec_dot_gemm && r->vec_dot_type == QT_TYPE_F32);
        if (!r) continue;
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
            const int64_t n = lengths[li];
            uint8_t *w = malloc(qt_row_size(t, n));
            float *deq = malloc((size_t)n * 4), *y = malloc((size_t)n * 4), *vd = malloc((size_t)n * 4);
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
                    v->to_float(w, vd, n);
                    CHECK_MSG(memcmp(vd, deq, (size_t)n * 4) == 0, "%s %s n=%lld: to_float differs from the reference",
                              r->name, qt__cpu_level_str(v->level), (long long)n);
                    const float gd = v->vec_dot(w, y, n), gg = v->vec_dot_gemm(w, y, n);
                    CHECK_MSG(memcmp(&gd, &d_ref, 4) == 0 && memcmp(&gg, &g_ref, 4) == 0,
                              "%s %s n=%lld: %.9g / %.9g, references %.9g / %.9g", r->name, qt__cpu_level_str(v->level),
                              (long long)n, (double)gd, (double)gg, (double)d_ref, (double)g_ref);
                    variants_run++;
                }
            }
            free(w), free(deq), free(y), free(vd);
        }
    }
    if (qt__cpu_level_get() >= QT__CPU_AVX2) CHECK(variants_run > 0);
    else SKIP("no SIMD variant runs at this level: references checked only");
}

/* ---- a real checkpoint in the engine ---------------------------------------------- */

static const fx_spec spec = {"ct8x", "LlamaForCausalLM", "llama", 64, 128, 1, 4, 2, 256, 256, 32, false, false, false,
                             false, false, 1e-5f, 10000.0f, 0, QT_ST_BF16, 1, NULL, false};

/* q_proj dequantized from the stored safetensors with the public ct.h dequantizer (int8, groups of 128). */
static bool stored_weights(const qt_safetensors *st, int64_t R, int64_t C, float *out) {
    const qt_st_tensor *wp = qt_st_find(st, "model.layers.0.self_attn.q_proj.weight_packed");
    const qt_st_tensor *ws = qt_st_find(st, "model.layers.0.self_attn.q_proj.weight_scale");
    CHECK(wp && ws);
    if (!wp || !ws) return false;
    const int64_t ng = R * (C / 128);
    int8_t *q = malloc((size_t)(R * C));
    float *sc = malloc((size_t)ng * 4);
    bool ok = qt_ct_unpack_rows(wp->data, R, C, 8, q) == QT_OK;
    for (int64_t i = 0; i < ng; i++) {
        uint16_t b;
        memcpy(&b, (const uint8_t *)ws->data + 2 * i, 2);
        sc[i] = qt_bf16_to_f32(b);
    }
    const qt_ct_int_args a = {.bits = 8, .symmetric = true, .strategy = QT_CT_GROUP, .group_size = 128,
                              .dtype = QT_CT_BF16};
    ok = ok && qt_ct_int_dequantize(q, sc, NULL, R, C, &a, out) == QT_OK;
    free(q);
    free(sc);
    return ok;
}

static void test_layer_in_engine(void) {
    char src[1024], dir[1100], st_path[1200];
    snprintf(src, sizeof src, "%s/ct8_src", qt_test_tmpdir());
    mkdir(src, 0755);
    CHECK_EQ_INT(fx_write_hf(src, &spec, 13), 0);
    qt_model *m = NULL;
    CHECK_OK(qt_model_open(src, &m));
    if (!m) return;
    snprintf(dir, sizeof dir, "%s/ct8_w8a16", qt_test_tmpdir());
    qt_ct_export_opts eo = {0};
    CHECK_OK(qt_ct_export(m, "w8a16", dir, &eo, NULL));
    qt_model *ct = NULL;
    CHECK_OK(qt_model_open(dir, &ct));
    enum { BMAX = 512, R = 128, C = 128 };
    float *x = malloc((size_t)BMAX * C * 4), *got = malloc((size_t)BMAX * R * 4), *want = malloc((size_t)BMAX * R * 4),
          *wf = malloc((size_t)R * C * 4);
    for (int i = 0; i < BMAX * C; i++) x[i] = frand() * (i % 17 == 0 ? 9.0f : 1.0f);
    qt_safetensors *st = NULL;
    const qt_tensor *t = ct ? qt_model_find_tensor(ct, "blk.0.attn_q.weight") : NULL;
    CHECK_MSG(t && t->type == QT_TYPE_CT_W8_G128, "w8a16: q_proj kept as %s", t ? qt_type_get(t->type)->name : "?");
    if (t) CHECK_EQ_INT((int64_t)t->nbytes, (int64_t)R * (int64_t)qt_row_size(QT_TYPE_CT_W8_G128, C));
    snprintf(st_path, sizeof st_path, "%s/model.safetensors", dir);
    CHECK_OK(qt_st_open(st_path, &st));
    const bool have = ct && t && st && stored_weights(st, R, C, wf);
    CHECK(have);
    static const int batches[] = {1, 2, 3, 5, 17, 64, 129, 512};
    for (size_t bi = 0; have && bi < sizeof batches / sizeof batches[0]; bi++) {
        const int nb = batches[bi];
        for (int b = 0; b < nb; b++)
            for (int r = 0; r < R; r++)
                want[b * R + r] = (nb == 1 ? qt__dot_f32_ref : qt__gemm_f32_ref)(wf + (size_t)r * C, x + (size_t)b * C, C);
        for (int threads = 1; threads <= 3; threads++) {
            for (int nm = 0; nm < 2; nm++) { /* weight-only rows: the same f32 bits under both numerics */
                qt_engine_opts o;
                qt_engine_opts_default(&o);
                o.n_ctx = 32;
                o.n_threads = threads;
                o.numerics = nm ? QT_NUMERICS_FAST : QT_NUMERICS_LLAMA;
                qt_engine_ctx *e = NULL;
                CHECK_OK(qt_engine_new(ct, &o, &e));
                if (!e) continue;
                memset(got, 0, (size_t)nb * R * 4);
                qt__matmul(e, got, x, nb, &e->layers[0].wq);
                int diff = 0;
                for (int i = 0; i < nb * R; i++) diff += memcmp(&got[i], &want[i], 4) != 0;
                CHECK_MSG(diff == 0, "w8a16 %s, batch %d, %d threads: %d of %d outputs differ from the f32 path "
                          "(first %.9g vs %.9g)", nm ? "fast" : "llama", nb, threads, diff, nb * R, (double)got[0],
                          (double)want[0]);
                qt_engine_free(e);
            }
        }
    }
    if (st) qt_st_close(st);
    qt_model_free(ct);
    qt_model_free(m);
    free(x), free(got), free(want), free(wf);
}

int main(void) {
    QT_RUN(test_pack);
    QT_RUN(test_dots);
    QT_RUN(test_layer_in_engine);
    return qt_test_finish("test_ct8");
}
