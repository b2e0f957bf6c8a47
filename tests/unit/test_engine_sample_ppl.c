/* Sampling (greedy, top-k, top-p, temperature, seeds) and the perplexity
 * method (chunking, BOS replacement, second-half scoring, llama.cpp's
 * standard error) on a small synthetic model. */
#include <math.h>

#include "model/model_internal.h"
#include "qtest.h"
#include "quanta.h"

static void test_greedy_and_ties(void) {
    qt_sampler *s;
    qt_sampler_opts o = {.temp = 0.0f, .top_k = 0, .top_p = 1.0f, .seed = 1};
    CHECK_OK(qt_sampler_new(&o, 5, &s));
    const float l[5] = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
    CHECK_EQ_INT(qt_sampler_sample(s, l), 1); /* first of the tied maxima */
    qt_sampler_free(s);
    /* top-k 1 is greedy at any temperature */
    o.temp = 5.0f;
    o.top_k = 1;
    CHECK_OK(qt_sampler_new(&o, 5, &s));
    for (int i = 0; i < 20; i++) CHECK_EQ_INT(qt_sampler_sample(s, l), 1);
    qt_sampler_free(s);
}

static void counts(const qt_sampler_opts *o, const float *l, int n, int draws, int *c) {
    qt_sampler *s;
    CHECK_OK(qt_sampler_new(o, n, &s));
    for (int i = 0; i < n; i++) c[i] = 0;
    for (int i = 0; i < draws; i++) c[qt_sampler_sample(s, l)]++;
    qt_sampler_free(s);
}

static void test_distribution_temperature_top_p(void) {
    const float l[4] = {logf(0.5f), logf(0.3f), logf(0.15f), logf(0.05f)};
    int c[4];
    qt_sampler_opts o = {.temp = 1.0f, .top_k = 0, .top_p = 1.0f, .seed = 7};
    counts(&o, l, 4, 20000, c);
    const double p[4] = {0.5, 0.3, 0.15, 0.05};
    for (int i = 0; i < 4; i++) CHECK_NEAR(c[i] / 20000.0, p[i], 0.015);
    /* temperature 0.5 squares the probabilities (renormalised) */
    o.temp = 0.5f;
    counts(&o, l, 4, 20000, c);
    const double z = 0.25 + 0.09 + 0.0225 + 0.0025;
    CHECK_NEAR(c[0] / 20000.0, 0.25 / z, 0.015);
    CHECK_NEAR(c[1] / 20000.0, 0.09 / z, 0.015);
    /* top-p 0.6: 0.5 alone is not enough, 0.5 + 0.3 is; the rest never drawn */
    o.temp = 1.0f;
    o.top_p = 0.6f;
    counts(&o, l, 4, 5000, c);
    CHECK_EQ_INT(c[2] + c[3], 0);
    CHECK_NEAR(c[0] / 5000.0, 0.5 / 0.8, 0.03);
    /* top-k 3 */
    o.top_p = 1.0f;
    o.top_k = 3;
    counts(&o, l, 4, 5000, c);
    CHECK_EQ_INT(c[3], 0);
    CHECK(c[2] > 0);
}

static void test_seed_determinism(void) {
    float l[100];
    for (int i = 0; i < 100; i++) l[i] = 0.01f * (float)(i % 7);
    qt_sampler_opts o = {.temp = 1.0f, .top_k = 0, .top_p = 1.0f, .seed = 42};
    int a[50], b[50], c[50];
    qt_sampler *s;
    for (int k = 0; k < 3; k++) {
        o.seed = k == 2 ? 43 : 42;
        CHECK_OK(qt_sampler_new(&o, 100, &s));
        for (int i = 0; i < 50; i++) (k == 0 ? a : k == 1 ? b : c)[i] = qt_sampler_sample(s, l);
        qt_sampler_free(s);
    }
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK(memcmp(a, c, sizeof a) != 0); /* 50 draws among ~100 tokens: equal by chance ~1e-100 */
    o.temp = -1.0f;
    CHECK_STATUS(qt_sampler_new(&o, 100, &s), QT_ERR_ARG);
}

/* ---- perplexity -------------------------------------------------------------------- */

static uint64_t rng = 99;
static float frand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((double)(rng >> 11) * 0x1.0p-52 - 1.0);
}

static void add(qt_model *m, const char *name, int64_t ne0, int64_t ne1, float scale, float offset) {
    qt_tensor t = {0};
    snprintf(t.name, sizeof t.name, "%s", name);
    t.type = QT_TYPE_F32;
    t.n_dims = ne1 > 1 ? 2 : 1;
    t.ne[0] = ne0; t.ne[1] = ne1; t.ne[2] = t.ne[3] = 1;
    t.nbytes = (size_t)(ne0 * ne1) * 4;
    float *d = qt__model_alloc(m, t.nbytes);
    for (int64_t i = 0; i < ne0 * ne1; i++) d[i] = offset + scale * frand();
    t.data = d;
    CHECK_OK(qt__model_add_tensor(m, &t));
}

static qt_model *tiny_model(void) {
    qt_model *m;
    CHECK_OK(qt__model_new("tiny.gguf", "gguf", &m));
    qt_hparams *hp = (qt_hparams *)qt_model_hparams(m);
    hp->arch = QT_ARCH_LLAMA;
    snprintf(hp->arch_name, sizeof hp->arch_name, "llama");
    hp->n_vocab = 24; hp->n_embd = 16; hp->n_layer = 1; hp->n_head = 2; hp->n_head_kv = 1; hp->head_dim = 8;
    hp->n_ff = 24; hp->n_ctx_train = 64; hp->n_rot = 8; hp->rms_eps = 1e-5f; hp->rope_theta = 10000.0f;
    add(m, "token_embd.weight", 16, 24, 1.0f, 0.0f);
    add(m, "output_norm.weight", 16, 1, 0.1f, 1.0f);
    add(m, "output.weight", 16, 24, 1.0f, 0.0f);
    add(m, "blk.0.attn_norm.weight", 16, 1, 0.1f, 1.0f);
    add(m, "blk.0.attn_q.weight", 16, 16, 0.5f, 0.0f);
    add(m, "blk.0.attn_k.weight", 16, 8, 0.5f, 0.0f);
    add(m, "blk.0.attn_v.weight", 16, 8, 0.5f, 0.0f);
    add(m, "blk.0.attn_output.weight", 16, 16, 0.5f, 0.0f);
    add(m, "blk.0.ffn_norm.weight", 16, 1, 0.1f, 1.0f);
    add(m, "blk.0.ffn_gate.weight", 16, 24, 0.5f, 0.0f);
    add(m, "blk.0.ffn_up.weight", 16, 24, 0.5f, 0.0f);
    add(m, "blk.0.ffn_down.weight", 24, 16, 0.5f, 0.0f);
    return m;
}

static void test_perplexity_method(void) {
    qt_model *m = tiny_model();
    qt_engine_opts eo;
    qt_engine_opts_default(&eo);
    eo.n_ctx = 16;
    eo.n_threads = 2;
    qt_engine_ctx *e;
    CHECK_OK(qt_engine_new(m, &eo, &e));
    enum { N = 70, C = 16, BOS = 1 };
    int32_t text[N];
    for (int i = 0; i < N; i++) text[i] = 2 + (i * 7 + i / 3) % 22;

    /* by hand: 4 full chunks of 16 (70/16), first token -> BOS, score 8 .. 15 from 7 .. 14 */
    double nll = 0, nll2 = 0;
    int64_t count = 0;
    float logits[C * 24];
    for (int c = 0; c < N / C; c++) {
        int32_t chunk[C];
        memcpy(chunk, text + c * C, sizeof chunk);
        chunk[0] = BOS;
        qt_engine_reset(e);
        CHECK_OK(qt_engine_eval(e, chunk, C, 0, logits));
        for (int p = C / 2; p < C - 1; p++) {
            const float *l = logits + p * 24;
            double mx = l[0], z = 0;
            for (int v = 1; v < 24; v++) mx = fmax(mx, l[v]);
            for (int v = 0; v < 24; v++) z += exp(l[v] - mx);
            const double lp = l[chunk[p + 1]] - mx - log(z);
            nll -= lp;
            nll2 += lp * lp;
            count++;
        }
    }
    const double mean = nll / count, ppl = exp(mean);
    const double se = sqrt((nll2 / count - mean * mean) / (count - 1)) * ppl;

    qt_ppl_opts po = {.n_ctx = C, .bos_id = BOS};
    qt_ppl_result r;
    CHECK_OK(qt_perplexity(e, text, N, &po, &r));
    CHECK_EQ_INT(r.n_chunks, 4);
    CHECK_EQ_INT(r.n_scored, 4 * 7);
    CHECK_EQ_INT(r.n_evaluated, 4 * 16);
    CHECK_NEAR(r.ppl, ppl, 1e-6 * ppl);
    CHECK_NEAR(r.ppl_stderr, se, 1e-6 * se);
    CHECK_NEAR(r.nll_mean, mean, 1e-7); /* expf and a float max (llama.cpp's log_softmax) vs exp in double */

    po.n_chunks = 2;
    CHECK_OK(qt_perplexity(e, text, N, &po, &r));
    CHECK_EQ_INT(r.n_chunks, 2);
    /* llama-perplexity needs two full chunks */
    CHECK_STATUS(qt_perplexity(e, text, 31, &po, &r), QT_ERR_ARG);
    CHECK(strstr(qt_last_error(), "needs at least 32") != NULL);
    po.n_ctx = 32; /* longer than the engine's context */
    CHECK_STATUS(qt_perplexity(e, text, N, &po, &r), QT_ERR_ARG);
    qt_engine_free(e);
    qt_model_free(m);
}

int main(void) {
    QT_RUN(test_greedy_and_ties);
    QT_RUN(test_distribution_temperature_top_p);
    QT_RUN(test_seed_determinism);
    QT_RUN(test_perplexity_method);
    return qt_test_finish("test_engine_sample_ppl");
}
