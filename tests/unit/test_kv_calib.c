/* quantize: KV-cache scales fitted at quantize time (lib/quantize/kv_calib.c)
 * and read back by the engine from GGUF metadata (lib/engine/kv.c): the
 * refusals name layer, head and K/V; the layer-wise fit equals the engine's
 * own first-batch (dynamic) scales where both see the same K and V (layer 0);
 * any thread count gives the same bits; the metadata round-trips through a
 * GGUF file and is rescaled for another cache format. */
#include "qtest.h"
#include "quanta.h"

#include <math.h>

static qt_model *stories(void) {
    qt_model *m = NULL;
    CHECK_OK(qt_model_open(qt_test_shared("models/stories260K.gguf"), &m));
    return m;
}

static void test_refusals(void) {
    qt_model *m = stories();
    if (!m) return;
    const qt_hparams *hp = qt_model_hparams(m);
    const int32_t nkv = hp->n_head_kv * hp->head_dim, T = 3;
    float *k = calloc((size_t)T * nkv, sizeof *k), *v = calloc((size_t)T * nkv, sizeof *v);
    qt_kv_scales s;
    CHECK_EQ_INT(qt_kv_scales_init(&s, m, QT_KV_TYPE_F16, QT_KV_SCALE_PER_TENSOR, QT_KV_CALIB_DATA), QT_ERR_ARG);
    CHECK_OK(qt_kv_scales_init(&s, m, QT_KV_TYPE_FP8_E4M3, QT_KV_SCALE_PER_HEAD, QT_KV_CALIB_DATA));
    CHECK_EQ_INT(s.n_per_layer, hp->n_head_kv);
    for (int32_t i = 0; i < s.n_layer * s.n_per_layer; i++) CHECK(s.k[i] == 1.0f && s.v[i] == 1.0f); /* none's scales */
    CHECK_EQ_INT(qt_kv_scales_finish(&s), QT_ERR_ARG); /* nothing observed */

    /* every head of every layer sees 1.0 except layer 2's head 1 of K, all zero */
    for (int32_t i = 0; i < T * nkv; i++) k[i] = v[i] = 1.0f;
    qt_kv_scales_begin(&s);
    for (int32_t il = 0; il < s.n_layer; il++) {
        for (int32_t t = 0; t < T; t++)
            for (int32_t d = 0; d < hp->head_dim; d++) k[(size_t)t * nkv + hp->head_dim + d] = il == 2 ? 0.0f : 1.0f;
        qt_kv_scales_observe(&s, il, k, v, T, hp->n_head_kv, hp->head_dim);
    }
    CHECK_EQ_INT(qt_kv_scales_finish(&s), QT_ERR_RANGE);
    CHECK(strstr(qt_last_error(), "layer 2 head 1 K") != NULL);
    CHECK(strstr(qt_last_error(), "never saw a non-zero") != NULL);

    /* a NaN in layer 0's V is refused, not turned into a scale */
    for (int32_t i = 0; i < T * nkv; i++) k[i] = v[i] = 2.0f;
    v[5] = NAN;
    qt_kv_scales_begin(&s);
    for (int32_t il = 0; il < s.n_layer; il++) qt_kv_scales_observe(&s, il, k, v, T, hp->n_head_kv, hp->head_dim);
    CHECK_EQ_INT(qt_kv_scales_finish(&s), QT_ERR_RANGE);
    CHECK(strstr(qt_last_error(), "layer 0 head 0 V") != NULL && strstr(qt_last_error(), "NaN") != NULL);

    /* per tensor, finite: amax / 448 */
    qt_kv_scales_free(&s);
    CHECK_OK(qt_kv_scales_init(&s, m, QT_KV_TYPE_FP8_E4M3, QT_KV_SCALE_PER_TENSOR, QT_KV_CALIB_DATA));
    v[5] = -896.0f;
    qt_kv_scales_begin(&s);
    for (int32_t il = 0; il < s.n_layer; il++) qt_kv_scales_observe(&s, il, k, v, T, hp->n_head_kv, hp->head_dim);
    CHECK_OK(qt_kv_scales_finish(&s));
    CHECK(s.k[0] == 2.0f / 448.0f && s.v[0] == 2.0f && s.n_tokens == T);
    qt_kv_scales_free(&s);
    free(k);
    free(v);
    qt_model_free(m);
}

static void test_fit_matches_engine(void) {
    qt_model *m = stories();
    if (!m) return;
    const qt_hparams *hp = qt_model_hparams(m);
    enum { T = 64 };
    int32_t tok[T];
    qt_kv_random_tokens(m, 1, T, 7, tok);
    CHECK_EQ_INT(tok[0], qt_model_vocab(m)->bos_id);
    for (int i = 1; i < T; i++) CHECK(tok[i] >= 0 && tok[i] < hp->n_vocab);
    int32_t again[T];
    qt_kv_random_tokens(m, 1, T, 7, again);
    CHECK(!memcmp(tok, again, sizeof tok));

    qt_kv_scales s[2];
    for (int t = 0; t < 2; t++) {
        CHECK_OK(qt_kv_scales_init(&s[t], m, QT_KV_TYPE_FP8_E4M3, QT_KV_SCALE_PER_HEAD, QT_KV_CALIB_RANDOM));
        CHECK_OK(qt_kv_scales_calibrate(&s[t], m, tok, 1, T, t + 1, (qt_progress){0}));
    }
    const size_t n = (size_t)s[0].n_layer * s[0].n_per_layer;
    CHECK(!memcmp(s[0].k, s[1].k, n * sizeof(float)) && !memcmp(s[0].v, s[1].v, n * sizeof(float)));
    CHECK_EQ_INT((int)s[0].n_tokens, T);

    /* the engine's own absmax/448 of its first batch: the same K and V in layer 0
     * (later layers read their fp8 cache, so their inputs differ) */
    qt_engine_opts eo;
    qt_engine_opts_default(&eo);
    eo.n_ctx = eo.n_batch = T;
    eo.kv_type = QT_KV_TYPE_FP8_E4M3;
    eo.kv_scale_gran = QT_KV_SCALE_PER_HEAD;
    eo.kv_scale_source = QT_KV_SCALE_DYNAMIC;
    qt_engine_ctx *e = NULL;
    CHECK_OK(qt_engine_new(m, &eo, &e));
    if (e) {
        CHECK_OK(qt_engine_eval(e, tok, T, T - 1, NULL));
        const float *ek = qt_engine_kv_scales(e, 0, false), *ev = qt_engine_kv_scales(e, 0, true);
        for (int32_t h = 0; h < hp->n_head_kv; h++) CHECK(ek[h] == s[0].k[h] && ev[h] == s[0].v[h]);
        qt_engine_free(e);
    }
    for (size_t i = 0; i < n; i++) CHECK(s[0].k[i] > 0 && isfinite(s[0].k[i]) && s[0].v[i] > 0 && isfinite(s[0].v[i]));
    qt_kv_scales_free(&s[1]);

    /* GGUF metadata -> the engine: fp8 as written, int8 rescaled by 448 / 127 */
    char path[4096];
    snprintf(path, sizeof path, "%s/kv_meta.gguf", qt_test_tmpdir());
    qt_gguf_kv kv[QT_KV_MAX_KV];
    qt_gguf_write_opts wo = qt_gguf_write_opts_default();
    wo.extra_kv = kv;
    wo.n_extra_kv = qt_kv_scales_gguf_kv(&s[0], kv);
    CHECK_OK(qt_gguf_write(m, path, &wo));
    qt_model *w = NULL;
    CHECK_OK(qt_model_open(path, &w));
    for (int f = 0; w && f < 3; f++) {
        eo.kv_type = f == 2 ? QT_KV_TYPE_INT8 : QT_KV_TYPE_FP8_E4M3;
        eo.kv_scale_source = QT_KV_SCALE_AUTO;
        eo.kv_scale_gran = f == 1 ? QT_KV_SCALE_PER_TENSOR : QT_KV_SCALE_PER_HEAD;
        qt_engine_ctx *we = NULL;
        const qt_status st = qt_engine_new(w, &eo, &we);
        if (f == 1) { /* per-head scales in a per-tensor cache: refused */
            CHECK_EQ_INT(st, QT_ERR_UNSUPPORTED);
            CHECK(strstr(qt_last_error(), "quanta.kv_cache.k_scale") != NULL);
            continue;
        }
        CHECK_OK(st);
        if (!we) continue;
        CHECK(strstr(qt_engine_describe(we), "per-head scales from the model file (quanta.kv_cache.k_scale") != NULL);
        const float r = f == 2 ? 448.0f / 127.0f : 1.0f;
        for (int32_t il = 0; il < hp->n_layer; il++)
            for (int32_t h = 0; h < hp->n_head_kv; h++) {
                CHECK(qt_engine_kv_scales(we, il, false)[h] == s[0].k[il * hp->n_head_kv + h] * r);
                CHECK(qt_engine_kv_scales(we, il, true)[h] == s[0].v[il * hp->n_head_kv + h] * r);
            }
        qt_engine_free(we);
    }
    qt_model_free(w);
    remove(path);
    qt_kv_scales_free(&s[0]);
    qt_model_free(m);
}

int main(void) {
    QT_RUN(test_refusals);
    QT_RUN(test_fit_matches_engine);
    return qt_test_finish("test_kv_calib");
}
