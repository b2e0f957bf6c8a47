/* FP8 KV cache scales of vLLM / llm-compressor (compressed-tensors) checkpoints
 * (docs/formats.md §4.3, §4.8): model.layers.N.self_attn.k_scale / v_scale ([], [1] or
 * [num_kv_heads]), vLLM's k_proj.k_scale / v_proj.v_scale and the legacy single
 * kv_scale are read as blk.N.attn_k_scale / attn_v_scale; the engine uses them
 * as they are in the file; the GGUF writer leaves them out (llama.cpp refuses
 * unused tensors) and the HF writer keeps them.
 *
 * Fixture: fx_llama (2 layers, n_head_kv 2, F32) rewritten with extra tensors
 * and, for the accuracy check, K and V made large without changing the f32
 * model's function (k_proj x1000 with q_proj /1000, v_proj x1000 with o_proj /1000). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "qtest.h"
#include "quanta.h"
#include "quanta/num.h"

enum { N_TOK = 12 };

typedef struct extra {
    char name[96];
    qt_st_dtype dtype;
    int32_t n_dims;
    int64_t shape[2];
    float values[4];
} extra;

typedef struct rescale {
    const char *suffix; /* of the HF name, e.g. "self_attn.k_proj.weight" */
    float factor;
} rescale;

/* Rewrites dir/model.safetensors: every tensor whose name ends in a rescale
 * suffix multiplied by its factor (F32 fixtures only), the extras appended. */
static int rewrite(const char *dir, const extra *x, int n_x, const rescale *r, int n_r) {
    char path[1200], tmp[1200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    snprintf(tmp, sizeof tmp, "%s/rewritten.tmp", dir);
    qt_safetensors *st = NULL;
    if (qt_st_open(path, &st) != QT_OK) return 1;
    int32_t n = qt_st_n_tensors(st);
    qt_st_entry *e = calloc((size_t)(n + n_x), sizeof *e);
    void **bufs = calloc((size_t)(n + n_x), sizeof *bufs);
    int rc = !e || !bufs;
    for (int32_t i = 0; !rc && i < n; i++) {
        const qt_st_tensor *t = qt_st_tensor_at(st, i);
        size_t nb = (size_t)(t->end - t->begin);
        e[i] = (qt_st_entry){.name = t->name, .dtype = t->dtype, .n_dims = t->n_dims};
        memcpy(e[i].shape, t->shape, sizeof e[i].shape);
        if (!(bufs[i] = malloc(nb ? nb : 1))) { rc = 1; break; }
        memcpy(bufs[i], t->data, nb);
        for (int k = 0; k < n_r; k++) {
            size_t ln = strlen(t->name), ls = strlen(r[k].suffix);
            if (ln < ls || strcmp(t->name + ln - ls, r[k].suffix) || t->dtype != QT_ST_F32) continue;
            float *f = bufs[i];
            for (size_t j = 0; j < nb / 4; j++) f[j] *= r[k].factor;
        }
        e[i].data = bufs[i];
    }
    for (int k = 0; !rc && k < n_x; k++) {
        int64_t cnt = x[k].n_dims == 0 ? 1 : x[k].shape[0] * (x[k].n_dims > 1 ? x[k].shape[1] : 1);
        size_t es = x[k].dtype == QT_ST_F32 ? 4 : 2;
        uint8_t *b = bufs[n + k] = malloc((size_t)cnt * es);
        if (!b) { rc = 1; break; }
        for (int64_t j = 0; j < cnt; j++) {
            float v = x[k].values[j % 4];
            uint16_t h = x[k].dtype == QT_ST_F16 ? qt_f32_to_fp16(v) : qt_f32_to_bf16(v);
            if (es == 4) memcpy(b + 4 * j, &v, 4);
            else memcpy(b + 2 * j, &h, 2);
        }
        e[n + k] = (qt_st_entry){.name = x[k].name, .dtype = x[k].dtype, .n_dims = x[k].n_dims, .data = b};
        e[n + k].shape[0] = x[k].shape[0];
        e[n + k].shape[1] = x[k].shape[1];
    }
    if (!rc) rc = qt_st_write(tmp, e, n + n_x, &(qt_st_kv){"format", "pt"}, 1) != QT_OK;
    if (rc) fprintf(stderr, "  rewrite %s: %s\n", path, qt_last_error());
    for (int32_t i = 0; bufs && i < n + n_x; i++) free(bufs[i]);
    free(bufs);
    free(e);
    qt_st_close(st);
    if (!rc) rc = rename(tmp, path) != 0;
    return rc;
}

/* A fresh fx_llama directory with the extras (and rescaled weights). */
static const char *make_dir(const char *name, const extra *x, int n_x, const rescale *r, int n_r) {
    static char dir[1000];
    snprintf(dir, sizeof dir, "%s/%s", qt_test_tmpdir(), name);
    if (fx_write_hf(dir, &fx_llama, 3) != 0 || rewrite(dir, x, n_x, r, n_r) != 0) {
        QT_FAIL_AT("fixture %s not written", name);
        return NULL;
    }
    return dir;
}

static extra scale1(const char *suffix, int layer, qt_st_dtype dt, int n_dims, int64_t n, float a, float b) {
    extra x = {.dtype = dt, .n_dims = n_dims, .shape = {n, 0}, .values = {a, b, a, b}};
    snprintf(x.name, sizeof x.name, "model.layers.%d.%s", layer, suffix);
    return x;
}

static qt_engine_ctx *engine(const qt_model *m, qt_kv_type kv, qt_kv_scale_source src, qt_kv_scale_gran gran,
                             qt_status *st) {
    qt_engine_opts o;
    qt_engine_opts_default(&o);
    o.n_ctx = 32;
    o.n_threads = 1;
    o.kv_type = kv;
    o.kv_scale_source = src;
    o.kv_scale_gran = gran;
    qt_engine_ctx *e = NULL;
    *st = qt_engine_new(m, &o, &e);
    return e;
}

static float *logits(qt_engine_ctx *e) {
    int32_t t[N_TOK];
    for (int i = 0; i < N_TOK; i++) t[i] = (int32_t)((i * 37 + 5) % fx_llama.n_vocab);
    float *lg = malloc((size_t)N_TOK * fx_llama.n_vocab * sizeof *lg);
    CHECK_OK(qt_engine_eval(e, t, N_TOK, 0, lg));
    return lg;
}

/* Values as the file holds them, widened to f32. */
static float stored(qt_st_dtype dt, float v) {
    return dt == QT_ST_F16 ? qt_fp16_to_f32(qt_f32_to_fp16(v)) : dt == QT_ST_BF16 ? qt_bf16_to_f32(qt_f32_to_bf16(v)) : v;
}

/* Per-tensor scales, as self_attn.k_scale / v_scale: [1] f32 in layer 0, [] bf16 and [1] f16 in layer 1. */
static void test_per_tensor(void) {
    const extra x[] = {
        scale1("self_attn.k_scale", 0, QT_ST_F32, 1, 1, 0.0125f, 0), scale1("self_attn.v_scale", 0, QT_ST_F32, 1, 1, 0.02f, 0),
        scale1("self_attn.k_scale", 1, QT_ST_BF16, 0, 0, 0.0375f, 0), scale1("self_attn.v_scale", 1, QT_ST_F16, 1, 1, 0.03f, 0),
    };
    const char *dir = make_dir("per_tensor", x, 4, NULL, 0);
    qt_model *m = NULL;
    CHECK_OK(qt_model_open(dir, &m));
    if (!m) return;
    const qt_tensor *t = qt_model_find_tensor(m, "blk.1.attn_k_scale");
    CHECK(t && t->n_dims == 1 && t->ne[0] == 1 && t->type == QT_TYPE_BF16);
    qt_status st;
    qt_engine_ctx *e = engine(m, QT_KV_TYPE_FP8_E4M3, QT_KV_SCALE_AUTO, QT_KV_SCALE_PER_TENSOR, &st);
    CHECK_OK(st);
    if (e) {
        CHECK(strstr(qt_engine_describe(e), "per-tensor scales from the model file") != NULL);
        for (int l = 0; l < 2; l++)
            for (int h = 0; h < fx_llama.n_head_kv; h++) {
                CHECK(qt_engine_kv_scales(e, l, false)[h] == stored(x[2 * l].dtype, x[2 * l].values[0]));
                CHECK(qt_engine_kv_scales(e, l, true)[h] == stored(x[2 * l + 1].dtype, x[2 * l + 1].values[0]));
            }
        CHECK(qt_engine_kv_scales(e, 1, true)[0] != 0.03f); /* f16 really widened from f16, not faked */
        free(logits(e));
        qt_engine_free(e);
    }
    /* --kv-scale one overrides the file */
    e = engine(m, QT_KV_TYPE_FP8_E4M3, QT_KV_SCALE_ONE, QT_KV_SCALE_PER_TENSOR, &st);
    CHECK_OK(st);
    if (e) CHECK(qt_engine_kv_scales(e, 0, false)[0] == 1.0f);
    qt_engine_free(e);
    qt_model_free(m);
}

/* Per-head scales under vLLM's other names (k_proj.k_scale / v_proj.v_scale), and the legacy kv_scale. */
static void test_per_head_and_legacy(void) {
    extra x[4];
    for (int l = 0; l < 2; l++) {
        x[2 * l] = scale1("self_attn.k_proj.k_scale", l, QT_ST_F32, 1, 2, 0.01f * (l + 1), 0.02f * (l + 1));
        x[2 * l + 1] = scale1("self_attn.v_proj.v_scale", l, QT_ST_BF16, 1, 2, 0.25f * (l + 1), 0.5f * (l + 1));
    }
    const char *dir = make_dir("per_head", x, 4, NULL, 0);
    qt_model *m = NULL;
    CHECK_OK(qt_model_open(dir, &m));
    if (!m) return;
    qt_status st;
    qt_engine_ctx *e = engine(m, QT_KV_TYPE_FP8_E4M3, QT_KV_SCALE_FILE, QT_KV_SCALE_PER_TENSOR, &st);
    CHECK_STATUS(st, QT_ERR_UNSUPPORTED); /* per-head values, per-tensor cache */
    CHECK(strstr(qt_last_error(), "blk.0.attn_k_scale' holds per-head KV scales") != NULL);
    e = engine(m, QT_KV_TYPE_FP8_E4M3, QT_KV_SCALE_FILE, QT_KV_SCALE_PER_HEAD, &st);
    CHECK_OK(st);
    if (e) {
        CHECK(strstr(qt_engine_describe(e), "per-head scales from the model file") != NULL);
        for (int l = 0; l < 2; l++)
            for (int h = 0; h < 2; h++) {
                CHECK(qt_engine_kv_scales(e, l, false)[h] == x[2 * l].values[h]);
                CHECK(qt_engine_kv_scales(e, l, true)[h] == stored(QT_ST_BF16, x[2 * l + 1].values[h]));
            }
        qt_engine_free(e);
    }
    qt_model_free(m);

    /* legacy: one kv_scale per layer, for K and V */
    extra y[2] = {scale1("self_attn.kv_scale", 0, QT_ST_F16, 1, 1, 0.0625f, 0),
                  scale1("self_attn.kv_scale", 1, QT_ST_F32, 0, 0, 0.125f, 0)};
    dir = make_dir("legacy", y, 2, NULL, 0);
    CHECK_OK(qt_model_open(dir, &m));
    if (!m) return;
    CHECK(qt_model_find_tensor(m, "blk.0.attn_k_scale") && qt_model_find_tensor(m, "blk.0.attn_v_scale"));
    e = engine(m, QT_KV_TYPE_FP8_E5M2, QT_KV_SCALE_AUTO, QT_KV_SCALE_PER_HEAD, &st);
    CHECK_OK(st);
    if (e) {
        for (int l = 0; l < 2; l++)
            for (int h = 0; h < 2; h++) {
                CHECK(qt_engine_kv_scales(e, l, false)[h] == y[l].values[0]);
                CHECK(qt_engine_kv_scales(e, l, true)[h] == y[l].values[0]);
            }
        qt_engine_free(e);
    }
    qt_model_free(m);
}

static double rel_diff(const float *a, const float *b, int n) {
    double mx = 0, scale = 0;
    for (int i = 0; i < n; i++) { mx = fmax(mx, fabs(a[i] - b[i])); scale = fmax(scale, fabs(b[i])); }
    return mx / scale;
}

/* K and V 1000x larger than the fixture's (same f32 function): at scale 1.0 an
 * fp8 cache saturates at 448; the file's scales (1000 x 1/64 = 15.625: q = k / s
 * keeps |q| well inside e4m3's range) give the f32-cache logits within e4m3's
 * usual error (test_kv_formats' 0.2 on the unscaled model). */
static void test_scales_rescue_fp8(void) {
    const rescale r[] = {{"self_attn.k_proj.weight", 1000.0f}, {"self_attn.q_proj.weight", 0.001f},
                         {"self_attn.v_proj.weight", 1000.0f}, {"self_attn.o_proj.weight", 0.001f}};
    extra x[4];
    for (int l = 0; l < 2; l++) {
        x[2 * l] = scale1("self_attn.k_scale", l, QT_ST_F32, 1, 1, 15.625f, 0);
        x[2 * l + 1] = scale1("self_attn.v_scale", l, QT_ST_BF16, 1, 1, 15.625f, 0);
    }
    const char *dir = make_dir("loud", x, 4, r, 4);
    qt_model *m = NULL;
    CHECK_OK(qt_model_open(dir, &m));
    if (!m) return;
    qt_status st;
    const int n = N_TOK * fx_llama.n_vocab;
    qt_engine_ctx *ref = engine(m, QT_KV_TYPE_F32, QT_KV_SCALE_AUTO, QT_KV_SCALE_PER_TENSOR, &st);
    CHECK_OK(st);
    qt_engine_ctx *file = engine(m, QT_KV_TYPE_FP8_E4M3, QT_KV_SCALE_FILE, QT_KV_SCALE_PER_TENSOR, &st);
    CHECK_OK(st);
    qt_engine_ctx *one = engine(m, QT_KV_TYPE_FP8_E4M3, QT_KV_SCALE_ONE, QT_KV_SCALE_PER_TENSOR, &st);
    CHECK_OK(st);
    if (ref && file && one) {
        float *want = logits(ref), *got_file = logits(file), *got_one = logits(one);
        double d_file = rel_diff(got_file, want, n), d_one = rel_diff(got_one, want, n);
        printf("  fp8-e4m3 KV vs f32 KV, max |diff| / max |logit|: file scales %.4f, scale 1.0 %.4f\n", d_file, d_one);
        CHECK_MSG(d_file < 0.2, "file scales: relative diff %.3g", d_file);
        CHECK_MSG(d_one > 5 * d_file, "scale 1.0 (%.3g) should be far worse than the file's (%.3g)", d_one, d_file);
        CHECK(memcmp(got_file, got_one, (size_t)n * sizeof(float)) != 0);
        free(want); free(got_file); free(got_one);
    }
    qt_engine_free(ref); qt_engine_free(file); qt_engine_free(one);
    qt_model_free(m);
}

static void expect_open_error(const char *name, const extra *x, int n_x, qt_status want, const char *msg) {
    const char *dir = make_dir(name, x, n_x, NULL, 0);
    qt_model *m = NULL;
    CHECK_STATUS(qt_model_open(dir, &m), want);
    CHECK_MSG(strstr(qt_last_error(), msg) != NULL, "%s: '%s' lacks '%s'", name, qt_last_error(), msg);
    CHECK_MSG(strstr(qt_last_error(), dir) != NULL, "%s: '%s' does not name the directory", name, qt_last_error());
    qt_model_free(m);
}

static void test_bad_shapes(void) {
    extra x = scale1("self_attn.k_scale", 1, QT_ST_F32, 1, 3, 0.5f, 0.5f);
    expect_open_error("three", &x, 1, QT_ERR_SHAPE,
                      "tensor 'model.layers.1.self_attn.k_scale': field 'shape': [3], but a KV cache scale must be [] or "
                      "[1] (per tensor) or [2] (num_key_value_heads, per head)");
    x = scale1("self_attn.v_proj.v_scale", 0, QT_ST_F32, 2, 2, 0.5f, 0.5f);
    x.shape[1] = 1;
    expect_open_error("two_dims", &x, 1, QT_ERR_SHAPE, "tensor 'model.layers.0.self_attn.v_proj.v_scale': field 'shape': [2, 1]");
    extra both[2] = {scale1("self_attn.k_scale", 0, QT_ST_F32, 1, 1, 0.5f, 0),
                     scale1("self_attn.kv_scale", 0, QT_ST_F32, 1, 1, 0.5f, 0)};
    expect_open_error("both", both, 2, QT_ERR_FORMAT,
                      "tensors 'model.layers.0.self_attn.k_scale' and 'model.layers.0.self_attn.kv_scale' both give "
                      "'blk.0.attn_k_scale'");
    /* a scale the engine cannot use: reported when the engine starts */
    extra neg[2] = {scale1("self_attn.k_scale", 0, QT_ST_F32, 1, 1, -1.0f, 0),
                    scale1("self_attn.v_scale", 0, QT_ST_F32, 1, 1, 1.0f, 0)};
    const char *dir = make_dir("negative", neg, 2, NULL, 0);
    qt_model *m = NULL;
    CHECK_OK(qt_model_open(dir, &m));
    qt_status st = QT_OK;
    if (m) qt_engine_free(engine(m, QT_KV_TYPE_FP8_E4M3, QT_KV_SCALE_FILE, QT_KV_SCALE_PER_TENSOR, &st));
    CHECK_STATUS(st, QT_ERR_RANGE);
    CHECK(strstr(qt_last_error(), "'blk.0.attn_k_scale': KV scale -1 is not a positive finite number") != NULL);
    qt_model_free(m);
}

/* GGUF output leaves the scales out; HF output keeps them under vLLM's names;
 * a KV-cache-only compressed-tensors config.json is readable. */
static void test_writers_and_config(void) {
    extra y[2] = {scale1("self_attn.kv_scale", 0, QT_ST_F32, 1, 1, 0.25f, 0),
                  scale1("self_attn.k_proj.k_scale", 1, QT_ST_F32, 1, 2, 0.5f, 0.75f)};
    const char *dir = make_dir("writers", y, 2, NULL, 0);
    qt_model *m = NULL;
    CHECK_OK(qt_model_open(dir, &m));
    if (!m) return;
    CHECK(qt_gguf_write_drops("blk.0.attn_k_scale") && qt_gguf_write_drops("blk.12.attn_v_scale"));
    CHECK(!qt_gguf_write_drops("blk.0.attn_k.weight") && !qt_gguf_write_drops("blk.0.attn_k_scale.weight") &&
          !qt_gguf_write_drops("attn_k_scale") && !qt_gguf_write_drops("blk.x.attn_v_scale"));
    char path[1200], hf2[1100];
    snprintf(path, sizeof path, "%s/out.gguf", qt_test_tmpdir());
    qt_gguf_write_opts wo = qt_gguf_write_opts_default();
    CHECK_OK(qt_gguf_write(m, path, &wo));
    qt_model *g = NULL;
    CHECK_OK(qt_model_open(path, &g));
    if (g) {
        CHECK_EQ_INT(qt_model_n_tensors(g), qt_model_n_tensors(m) - 3); /* blk.0 k, v; blk.1 k */
        for (int32_t i = 0; i < qt_model_n_tensors(g); i++) CHECK(!strstr(qt_model_tensor(g, i)->name, "_scale"));
    }
    qt_model_free(g);

    snprintf(hf2, sizeof hf2, "%s/writers_hf", qt_test_tmpdir());
    qt_hf_write_opts ho;
    memset(&ho, 0, sizeof ho);
    CHECK_OK(qt_hf_write(m, hf2, &ho));
    snprintf(path, sizeof path, "%s/model.safetensors", hf2);
    qt_safetensors *st = NULL;
    CHECK_OK(qt_st_open(path, &st));
    if (st) {
        const qt_st_tensor *k0 = qt_st_find(st, "model.layers.0.self_attn.k_scale");
        const qt_st_tensor *v0 = qt_st_find(st, "model.layers.0.self_attn.v_scale");
        const qt_st_tensor *k1 = qt_st_find(st, "model.layers.1.self_attn.k_scale");
        CHECK(k0 && v0 && k1 && !qt_st_find(st, "model.layers.1.self_attn.v_scale"));
        if (k1) {
            float f[2];
            memcpy(f, k1->data, sizeof f);
            CHECK(k1->n_dims == 1 && k1->shape[0] == 2 && f[0] == 0.5f && f[1] == 0.75f);
        }
        qt_st_close(st);
    }
    qt_model_free(m);

    /* config.json of llm-compressor's KV-cache-only recipe (docs/formats.md §4.1) */
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *text = NULL;
    size_t len;
    CHECK_OK(qt_read_file(path, &text, &len));
    if (!text) return;
    char *end = strrchr(text, '}');
    *end = 0;
    char cfg[8192];
    const char *kv = "\"kv_cache_scheme\": {\"num_bits\": 8, \"type\": \"float\", \"symmetric\": true, "
                     "\"strategy\": \"tensor\", \"dynamic\": false}";
    snprintf(cfg, sizeof cfg, "%s,\n  \"quantization_config\": {\"quant_method\": \"compressed-tensors\", "
             "\"format\": \"dense\", \"config_groups\": {}, %s}\n}\n", text, kv);
    CHECK(fx_write_file(path, cfg, strlen(cfg)) == 0);
    CHECK_OK(qt_model_open(dir, &m));
    CHECK(m && qt_model_find_tensor(m, "blk.1.attn_k_scale"));
    qt_model_free(m);
    /* ... but quantized weights are still refused */
    snprintf(cfg, sizeof cfg, "%s,\n  \"quantization_config\": {\"quant_method\": \"compressed-tensors\", "
             "\"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"]}}, %s}\n}\n", text, kv);
    CHECK(fx_write_file(path, cfg, strlen(cfg)) == 0);
    m = NULL;
    CHECK_STATUS(qt_model_open(dir, &m), QT_ERR_UNSUPPORTED);
    CHECK(strstr(qt_last_error(), "quantization_config") != NULL);
    qt_model_free(m);
    free(text);
}

int main(void) {
    QT_RUN(test_per_tensor);
    QT_RUN(test_per_head_and_legacy);
    QT_RUN(test_scales_rescue_fp8);
    QT_RUN(test_bad_shapes);
    QT_RUN(test_writers_and_config);
    return qt_test_finish("test_hf_kv_scales");
}
