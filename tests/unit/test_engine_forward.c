/* The forward pass on small synthetic models of every supported family,
 * against an independent double-precision implementation of the same
 * architecture written from its definition (docs/formats.md §2.7, §2.10, §7.3,
 * §7.4): RMSNorm, Q/K/V (+bias), per-head Q/K RMSNorm, RoPE on pairs or
 * halves with linear or llama3 scaling, GQA causal attention, SwiGLU, tied
 * or separate output. Also: batching and threads do not change a bit,
 * KV formats and their scales, and every bad-input error. */
#include <math.h>

#include "engine/engine_internal.h"
#include "quant/gemm.h"
#include "model/model_internal.h"
#include "qtest.h"
#include "quanta.h"

static uint64_t rng;
static float frand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((double)(rng >> 11) * 0x1.0p-52 - 1.0);
}

typedef struct spec {
    qt_arch arch;
    const char *name;
    int n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_rot;
    bool neox, tie, bias, qk_norm;
    qt_rope_scaling scaling;
    float rope_factor;
    qt_type wtype;     /* matrices */
} spec;

static void add(qt_model *m, const char *name, qt_type type, int64_t ne0, int64_t ne1, float scale, float offset) {
    qt_tensor t = {0};
    snprintf(t.name, sizeof t.name, "%s", name);
    t.type = ne1 > 1 ? type : QT_TYPE_F32;
    t.n_dims = ne1 > 1 ? 2 : 1;
    t.ne[0] = ne0; t.ne[1] = ne1; t.ne[2] = t.ne[3] = 1;
    float *f = malloc((size_t)(ne0 * ne1) * sizeof *f);
    for (int64_t i = 0; i < ne0 * ne1; i++) f[i] = offset + scale * frand();
    t.nbytes = qt_row_size(t.type, ne0) * (size_t)ne1;
    void *d = qt__model_alloc(m, t.nbytes);
    CHECK_OK(qt_quantize_rows(t.type, f, d, ne1, ne0, NULL));
    t.data = d;
    free(f);
    CHECK_OK(qt__model_add_tensor(m, &t));
}

static qt_model *make_model(const spec *s, uint64_t seed) {
    rng = seed;
    qt_model *m;
    CHECK_OK(qt__model_new("synthetic.gguf", "gguf", &m));
    qt_hparams *hp = (qt_hparams *)qt_model_hparams(m);
    hp->arch = s->arch;
    snprintf(hp->arch_name, sizeof hp->arch_name, "%s", s->name);
    hp->n_vocab = s->n_vocab; hp->n_embd = s->n_embd; hp->n_layer = s->n_layer;
    hp->n_head = s->n_head; hp->n_head_kv = s->n_head_kv; hp->head_dim = s->head_dim;
    hp->n_ff = s->n_ff; hp->n_ctx_train = 64; hp->n_rot = s->n_rot;
    hp->rms_eps = 1e-5f; hp->rope_theta = 10000.0f; hp->rope_neox = s->neox;
    hp->rope_scaling = s->scaling; hp->rope_factor = s->rope_factor;
    hp->rope_low_freq_factor = 1.0f; hp->rope_high_freq_factor = 4.0f; hp->rope_orig_ctx = 16;
    hp->tie_embeddings = s->tie; hp->attn_qkv_bias = s->bias; hp->attn_qk_norm = s->qk_norm;
    const int nq = s->n_head * s->head_dim, nkv = s->n_head_kv * s->head_dim;
    add(m, "token_embd.weight", s->wtype, s->n_embd, s->n_vocab, 1.0f, 0.0f);
    add(m, "output_norm.weight", QT_TYPE_F32, s->n_embd, 1, 0.2f, 1.0f);
    if (!s->tie) add(m, "output.weight", s->wtype, s->n_embd, s->n_vocab, 0.5f, 0.0f);
    for (int l = 0; l < s->n_layer; l++) {
        char n[64];
#define T(suffix, type, a, b, sc, off) (snprintf(n, sizeof n, "blk.%d." suffix, l), add(m, n, type, a, b, sc, off))
        T("attn_norm.weight", QT_TYPE_F32, s->n_embd, 1, 0.2f, 1.0f);
        T("attn_q.weight", s->wtype, s->n_embd, nq, 0.4f, 0.0f);
        T("attn_k.weight", s->wtype, s->n_embd, nkv, 0.4f, 0.0f);
        T("attn_v.weight", s->wtype, s->n_embd, nkv, 0.4f, 0.0f);
        if (s->bias) {
            T("attn_q.bias", QT_TYPE_F32, nq, 1, 0.3f, 0.0f);
            T("attn_k.bias", QT_TYPE_F32, nkv, 1, 0.3f, 0.0f);
            T("attn_v.bias", QT_TYPE_F32, nkv, 1, 0.3f, 0.0f);
        }
        if (s->qk_norm) {
            T("attn_q_norm.weight", QT_TYPE_F32, s->head_dim, 1, 0.2f, 1.0f);
            T("attn_k_norm.weight", QT_TYPE_F32, s->head_dim, 1, 0.2f, 1.0f);
        }
        T("attn_output.weight", s->wtype, nq, s->n_embd, 0.3f, 0.0f);
        T("ffn_norm.weight", QT_TYPE_F32, s->n_embd, 1, 0.2f, 1.0f);
        T("ffn_gate.weight", s->wtype, s->n_embd, s->n_ff, 0.4f, 0.0f);
        T("ffn_up.weight", s->wtype, s->n_embd, s->n_ff, 0.4f, 0.0f);
        T("ffn_down.weight", s->wtype, s->n_ff, s->n_embd, 0.3f, 0.0f);
#undef T
    }
    return m;
}

/* ---- the reference: plain double arithmetic, weights dequantized ------------------ */

static double *deq(const qt_model *m, const char *name, int64_t n) {
    const qt_tensor *t = qt_model_find_tensor(m, name);
    if (!t) return NULL;
    float *f = malloc((size_t)n * sizeof *f);
    qt_type_get(t->type)->to_float(t->data, f, n);
    double *d = malloc((size_t)n * sizeof *d);
    for (int64_t i = 0; i < n; i++) d[i] = f[i];
    free(f);
    return d;
}

static double *deq_layer(const qt_model *m, int l, const char *suffix, int64_t n) {
    char name[64];
    snprintf(name, sizeof name, "blk.%d.%s", l, suffix);
    return deq(m, name, n);
}

static void ref_rmsnorm(double *out, const double *x, const double *w, int n) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    const double r = 1.0 / sqrt(ss / n + 1e-5);
    for (int i = 0; i < n; i++) out[i] = x[i] * r * w[i];
}

static void ref_matvec(double *y, const double *W, const double *x, int n_in, int n_out) {
    for (int r = 0; r < n_out; r++) {
        double s = 0;
        for (int i = 0; i < n_in; i++) s += W[(size_t)r * n_in + i] * x[i];
        y[r] = s;
    }
}

/* Inverse frequency of pair i, with the scaling rules of docs/formats.md §7.3. */
static double ref_freq(const spec *s, int i) {
    double f = pow(10000.0, -2.0 * i / s->n_rot);
    if (s->scaling == QT_ROPE_SCALING_LINEAR) f /= s->rope_factor;
    if (s->scaling == QT_ROPE_SCALING_LLAMA3) {
        const double wl = 2 * M_PI / f, lo = 16.0 / 1.0, hi = 16.0 / 4.0;
        if (wl > lo) f /= s->rope_factor;
        else if (wl >= hi) {
            const double sm = (16.0 / wl - 1.0) / (4.0 - 1.0);
            f = (1 - sm) * f / s->rope_factor + sm * f;
        }
    }
    return f;
}

static void ref_rope(const spec *s, double *v, int pos) {
    for (int i = 0; i < s->n_rot / 2; i++) {
        const double a = pos * ref_freq(s, i);
        const int i0 = s->neox ? i : 2 * i, i1 = s->neox ? i + s->n_rot / 2 : 2 * i + 1;
        const double x0 = v[i0], x1 = v[i1];
        v[i0] = x0 * cos(a) - x1 * sin(a);
        v[i1] = x0 * sin(a) + x1 * cos(a);
    }
}

/* logits (n, n_vocab) for tokens[0..n) */
static double *ref_forward(const qt_model *m, const spec *s, const int32_t *tok, int n) {
    const int E = s->n_embd, hd = s->head_dim, nq = s->n_head * hd, nkv = s->n_head_kv * hd, F = s->n_ff;
    double *emb = deq(m, "token_embd.weight", (int64_t)E * s->n_vocab);
    double *x = calloc((size_t)n * E, sizeof *x);
    for (int t = 0; t < n; t++) memcpy(x + (size_t)t * E, emb + (size_t)tok[t] * E, E * sizeof *x);
    double *K = malloc((size_t)n * nkv * sizeof *K), *V = malloc((size_t)n * nkv * sizeof *V);
    double *h = malloc(E * sizeof *h), *q = malloc(nq * sizeof *q), *att = malloc(nq * sizeof *att);
    double *g = malloc(F * sizeof *g), *u = malloc(F * sizeof *u), *o = malloc(E * sizeof *o);
    double *sc = malloc(n * sizeof *sc);
    for (int l = 0; l < s->n_layer; l++) {
        double *an = deq_layer(m, l, "attn_norm.weight", E), *fn = deq_layer(m, l, "ffn_norm.weight", E);
        double *wq = deq_layer(m, l, "attn_q.weight", (int64_t)E * nq), *wk = deq_layer(m, l, "attn_k.weight", (int64_t)E * nkv);
        double *wv = deq_layer(m, l, "attn_v.weight", (int64_t)E * nkv), *wo = deq_layer(m, l, "attn_output.weight", (int64_t)nq * E);
        double *bq = deq_layer(m, l, "attn_q.bias", nq), *bk = deq_layer(m, l, "attn_k.bias", nkv), *bv = deq_layer(m, l, "attn_v.bias", nkv);
        double *qn = deq_layer(m, l, "attn_q_norm.weight", hd), *kn = deq_layer(m, l, "attn_k_norm.weight", hd);
        double *wg = deq_layer(m, l, "ffn_gate.weight", (int64_t)E * F), *wu = deq_layer(m, l, "ffn_up.weight", (int64_t)E * F);
        double *wd = deq_layer(m, l, "ffn_down.weight", (int64_t)F * E);
        for (int t = 0; t < n; t++) { /* K, V of every position first: causal attention needs only past ones */
            ref_rmsnorm(h, x + (size_t)t * E, an, E);
            double *k = K + (size_t)t * nkv, *v = V + (size_t)t * nkv;
            ref_matvec(k, wk, h, E, nkv);
            ref_matvec(v, wv, h, E, nkv);
            for (int i = 0; bk && i < nkv; i++) { k[i] += bk[i]; v[i] += bv[i]; }
            for (int hh = 0; hh < s->n_head_kv; hh++) {
                if (kn) ref_rmsnorm(k + hh * hd, k + hh * hd, kn, hd);
                ref_rope(s, k + hh * hd, t);
            }
        }
        for (int t = 0; t < n; t++) {
            double *xt = x + (size_t)t * E;
            ref_rmsnorm(h, xt, an, E);
            ref_matvec(q, wq, h, E, nq);
            for (int i = 0; bq && i < nq; i++) q[i] += bq[i];
            for (int hh = 0; hh < s->n_head; hh++) {
                double *qh = q + hh * hd;
                if (qn) ref_rmsnorm(qh, qh, qn, hd);
                ref_rope(s, qh, t);
                const int kvh = hh / (s->n_head / s->n_head_kv);
                double mx = -1e300, sum = 0;
                for (int p = 0; p <= t; p++) {
                    double d = 0;
                    for (int i = 0; i < hd; i++) d += qh[i] * K[(size_t)p * nkv + kvh * hd + i];
                    sc[p] = d / sqrt((double)hd);
                    if (sc[p] > mx) mx = sc[p];
                }
                for (int p = 0; p <= t; p++) sum += (sc[p] = exp(sc[p] - mx));
                for (int i = 0; i < hd; i++) {
                    double a = 0;
                    for (int p = 0; p <= t; p++) a += sc[p] / sum * V[(size_t)p * nkv + kvh * hd + i];
                    att[hh * hd + i] = a;
                }
            }
            ref_matvec(o, wo, att, nq, E);
            for (int i = 0; i < E; i++) xt[i] += o[i];
            ref_rmsnorm(h, xt, fn, E);
            ref_matvec(g, wg, h, E, F);
            ref_matvec(u, wu, h, E, F);
            for (int i = 0; i < F; i++) g[i] = g[i] / (1 + exp(-g[i])) * u[i];
            ref_matvec(o, wd, g, F, E);
            for (int i = 0; i < E; i++) xt[i] += o[i];
        }
        free(an); free(fn); free(wq); free(wk); free(wv); free(wo); free(bq); free(bk); free(bv);
        free(qn); free(kn); free(wg); free(wu); free(wd);
    }
    double *on = deq(m, "output_norm.weight", E);
    double *wout = s->tie ? emb : deq(m, "output.weight", (int64_t)E * s->n_vocab);
    double *logits = malloc((size_t)n * s->n_vocab * sizeof *logits);
    for (int t = 0; t < n; t++) {
        ref_rmsnorm(h, x + (size_t)t * E, on, E);
        ref_matvec(logits + (size_t)t * s->n_vocab, wout, h, E, s->n_vocab);
    }
    if (!s->tie) free(wout);
    free(on); free(emb); free(x); free(K); free(V); free(h); free(q); free(att); free(g); free(u); free(o); free(sc);
    return logits;
}

/* ---- helpers ------------------------------------------------------------------------- */

static qt_engine_ctx *engine(const qt_model *m, qt_kv_type kv, bool act_off, int threads, int n_batch) {
    qt_engine_opts o;
    qt_engine_opts_default(&o);
    o.n_ctx = 32;
    o.kv_type = kv;
    o.act_quant_off = act_off;
    o.n_threads = threads;
    o.n_batch = n_batch;
    qt_engine_ctx *e = NULL;
    CHECK_OK(qt_engine_new(m, &o, &e));
    return e;
}

static const int32_t prompt[12] = {1, 7, 3, 30, 12, 5, 5, 19, 2, 31, 8, 16};

static float *eval_all(qt_engine_ctx *e, int n) {
    float *lg = malloc((size_t)n * qt_engine_n_vocab(e) * sizeof *lg);
    CHECK_OK(qt_engine_eval(e, prompt, n, 0, lg));
    return lg;
}

static double max_rel_diff(const float *a, const double *b, int64_t n) {
    double mx = 0, scale = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(b[i]));
    for (int64_t i = 0; i < n; i++) mx = fmax(mx, fabs(a[i] - b[i]));
    return mx / scale;
}

static const spec specs[] = {
    /* arch             name       V   E  L  H Hkv hd  F  rot  neox   tie   bias   qknorm scaling                  factor wtype */
    {QT_ARCH_LLAMA,   "llama",   32, 32, 2, 4, 2,  8, 48, 8,  false, false, false, false, QT_ROPE_SCALING_NONE,   0, QT_TYPE_F32},
    {QT_ARCH_LLAMA,   "llama",   32, 32, 2, 4, 4,  8, 48, 8,  false, true,  false, false, QT_ROPE_SCALING_LLAMA3, 8, QT_TYPE_F32},
    {QT_ARCH_MISTRAL, "llama",   32, 32, 1, 4, 1,  8, 40, 8,  false, false, false, false, QT_ROPE_SCALING_LINEAR, 2, QT_TYPE_F32},
    {QT_ARCH_QWEN2,   "qwen2",   32, 32, 2, 4, 2,  8, 48, 8,  true,  true,  true,  false, QT_ROPE_SCALING_NONE,   0, QT_TYPE_F32},
    {QT_ARCH_QWEN3,   "qwen3",   32, 32, 2, 4, 2, 16, 48, 16, true,  false, false, true,  QT_ROPE_SCALING_NONE,   0, QT_TYPE_F32},
    {QT_ARCH_LLAMA,   "llama",   32, 32, 1, 4, 2,  8, 40, 4,  false, false, false, false, QT_ROPE_SCALING_NONE,   0, QT_TYPE_F32},
};

/* Engine (f32 cache, f32 activations) = reference to float precision, for every family. */
static void test_families_match_reference(void) {
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        qt_model *m = make_model(&specs[i], 0x1234 + i);
        qt_engine_ctx *e = engine(m, QT_KV_TYPE_F32, true, 1, 0);
        float *got = eval_all(e, 12);
        double *want = ref_forward(m, &specs[i], prompt, 12);
        const double d = max_rel_diff(got, want, 12L * specs[i].n_vocab);
        CHECK_MSG(d < 2e-5, "spec %zu (%s): max |diff| / max |logit| = %.3g", i, specs[i].name, d);
        free(got); free(want);
        qt_engine_free(e);
        qt_model_free(m);
    }
}

/* Quantized weights: with --act-quant off the engine equals the reference on the
 * dequantized weights; with activation quantization it stays close. */
static void test_quantized_weights(void) {
    const qt_type types[] = {QT_TYPE_Q8_0, QT_TYPE_Q4_0, QT_TYPE_Q5_1, QT_TYPE_F16, QT_TYPE_BF16, QT_TYPE_IQ4_NL};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        spec s = specs[0];
        s.wtype = types[i];
        s.n_ff = 64; /* a multiple of 32 for the block formats */
        qt_model *m = make_model(&s, 99 + i);
        double *want = ref_forward(m, &s, prompt, 12);
        qt_engine_ctx *off = engine(m, QT_KV_TYPE_F32, true, 2, 0), *on = engine(m, QT_KV_TYPE_F32, false, 2, 0);
        float *a = eval_all(off, 12), *b = eval_all(on, 12);
        const double doff = max_rel_diff(a, want, 12L * s.n_vocab), don = max_rel_diff(b, want, 12L * s.n_vocab);
        CHECK_MSG(doff < 2e-5, "%s, act-quant off: %.3g", qt_type_get(types[i])->name, doff);
        CHECK_MSG(don < 0.05, "%s, act-quant auto: %.3g", qt_type_get(types[i])->name, don);
        free(a); free(b); free(want);
        qt_engine_free(off); qt_engine_free(on);
        qt_model_free(m);
    }
}

/* Prefill in one batch, in small batches, token by token, on 1 or 3 threads:
 * the same bits (each output row is one dot, whoever computes it). */
static void test_batching_and_threads_do_not_change_bits(void) {
    spec s = specs[3];
    s.wtype = QT_TYPE_Q8_0;
    s.n_ff = 64;
    qt_model *m = make_model(&s, 7);
    qt_engine_ctx *e1 = engine(m, QT_KV_TYPE_F16, false, 1, 0);
    float *full = eval_all(e1, 12);
    const int V = s.n_vocab;
    qt_engine_ctx *e2 = engine(m, QT_KV_TYPE_F16, false, 3, 5);
    float *batched = eval_all(e2, 12);
    CHECK(memcmp(full, batched, 12 * V * sizeof(float)) == 0);
    qt_engine_ctx *e3 = engine(m, QT_KV_TYPE_F16, false, 2, 0);
    float *one = malloc(V * sizeof *one);
    for (int t = 0; t < 12; t++) {
        CHECK_OK(qt_engine_eval(e3, prompt + t, 1, 0, one));
        CHECK_MSG(memcmp(one, full + (size_t)t * V, V * sizeof(float)) == 0, "token %d decoded alone differs", t);
    }
    CHECK_EQ_INT(qt_engine_n_past(e3), 12);
    /* first_logit: only the tail rows */
    qt_engine_reset(e3);
    CHECK_OK(qt_engine_eval(e3, prompt, 12, 10, batched));
    CHECK(memcmp(batched, full + 10 * V, 2 * V * sizeof(float)) == 0);
    free(full); free(batched); free(one);
    qt_engine_free(e1); qt_engine_free(e2); qt_engine_free(e3);
    qt_model_free(m);
}

/* The blocked kernels (lib/quant/gemm.h) on shapes big enough to be threaded
 * (rows not a multiple of the 16-row work unit: n_vocab 301): for q8_0, q4_0,
 * q2_K..q6_K, f16 and bf16, and q4_1, q5_0, q5_1, iq4_nl (x16-packed in fast
 * mode), and both float orders, prefill on 1, 2 and 3 threads in
 * batches of 129, 7 and 1 tokens gives the same bits (129 rows: the layer's
 * chunks of 64, 65 rows, forward.c). With --numerics llama
 * each element is vec_dot's; fast differs from it by rounding (and its consequences). */
static void test_gemm_kernels_threads_batches_numerics(void) {
    enum { N = 129 };
    const qt_type types[] = {QT_TYPE_Q8_0, QT_TYPE_Q4_0, QT_TYPE_Q4_K, QT_TYPE_Q6_K,
                             QT_TYPE_Q4_1, QT_TYPE_Q5_0, QT_TYPE_Q5_1, QT_TYPE_IQ4_NL,
                             QT_TYPE_Q5_K, QT_TYPE_Q3_K, QT_TYPE_Q2_K, QT_TYPE_F16,  QT_TYPE_BF16};
    int32_t tok[N];
    for (int i = 0; i < N; i++) tok[i] = (int32_t)((i * 37 + 11) % 301);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        spec s = {QT_ARCH_LLAMA, "llama", 301, 256, 2, 4, 2, 64, 512, 64, false, false, false, false,
                  QT_ROPE_SCALING_NONE, 0, types[ti]};
        qt_model *m = make_model(&s, 500 + ti);
        float *want[2] = {NULL, NULL};
        for (int nm = 0; nm < 2; nm++) {
            const qt_numerics numerics = nm ? QT_NUMERICS_LLAMA : QT_NUMERICS_FAST;
            const struct { int threads, batch; } runs[] = {{1, N}, {2, 7}, {3, 1}, {3, N}};
            for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
                /* llama's f16 order is vec_dot's for one row and tinyBLAS's in a batch (matmul.c);
                 * fast has it too where this CPU level has no fast f16 kernel (scalar) */
                const bool llama_order = nm || qt__gemm_kernel_fast(types[ti]) == qt__gemm_kernel(types[ti]);
                if (llama_order && types[ti] == QT_TYPE_F16 && runs[r].batch == 1) continue;
                qt_engine_opts o;
                qt_engine_opts_default(&o);
                o.n_ctx = 160;
                /* an f32 cache: with f16, llama's attention rounds Q and its accumulator to f16 and
                 * fast's does not, a difference of its own (test_engine_attn measures it) */
                o.kv_type = QT_KV_TYPE_F32;
                o.n_threads = runs[r].threads;
                o.n_batch = runs[r].batch;
                o.numerics = numerics;
                qt_engine_ctx *e = NULL;
                CHECK_OK(qt_engine_new(m, &o, &e));
                if (!e) continue;
                float *lg = malloc((size_t)N * s.n_vocab * sizeof *lg);
                CHECK_OK(qt_engine_eval(e, tok, N, 0, lg));
                if (!want[nm]) want[nm] = lg;
                else {
                    CHECK_MSG(memcmp(lg, want[nm], (size_t)N * s.n_vocab * sizeof *lg) == 0,
                              "%s --numerics %s: %d threads, batch %d differ from 1 thread, one batch",
                              qt_type_get(types[ti])->name, qt_numerics_name(numerics), runs[r].threads, runs[r].batch);
                    free(lg);
                }
                qt_engine_free(e);
            }
        }
        double mx = 0, scale = 0;
        for (int64_t i = 0; want[0] && want[1] && i < (int64_t)N * s.n_vocab; i++) {
            mx = fmax(mx, fabs((double)want[0][i] - want[1][i]));
            scale = fmax(scale, fabs((double)want[1][i]));
        }
        /* rounding differences (~1e-6), amplified where they flip an activation's int8
         * rounding in a later layer: random weights, measured up to 3.6 % of the logit
         * range (q4_K; q5_K 1.5 %, q6_K 0.9 %, q8_0 0.7 %, bf16 0.25 %). The KL bound on
         * a real model's distributions is test_engine_stories's. */
        CHECK_MSG(mx <= 0.05 * scale, "%s: fast and llama logits differ by %.3g (max |logit| %.3g)",
                  qt_type_get(types[ti])->name, mx, scale);
        free(want[0]); free(want[1]);
        qt_model_free(m);
    }
}

/* qt__matmul_shared runs q/k/v (and gate/up) as one job over the pool, their units side by
 * side: every output the bits of qt__matmul on that matrix alone, at 1-3 threads, batch 1 and 5
 * (q 256 rows, k/v 128: one thread's share starts inside q or k at 3 threads). */
static void test_shared_matmul_equals_separate(void) {
    const qt_type types[] = {QT_TYPE_Q4_0, QT_TYPE_Q8_0, QT_TYPE_Q4_K, QT_TYPE_Q6_K, QT_TYPE_F16};
    enum { E = 256, NQ = 256, NKV = 128, F = 512, BMAX = 5 };
    static float x[BMAX * F], got[3][BMAX * F], want[3][BMAX * F];
    for (int i = 0; i < BMAX * F; i++) x[i] = frand();
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        spec s = {QT_ARCH_LLAMA, "llama", 301, E, 1, 4, 2, 64, F, 64, false, false, false, false,
                  QT_ROPE_SCALING_NONE, 0, types[ti]};
        qt_model *m = make_model(&s, 900 + ti);
        for (int nm = 0; nm < 2; nm++)
            for (int threads = 1; threads <= 3; threads++)
                for (int B = 1; B <= BMAX; B += BMAX - 1) {
                    qt_engine_opts o;
                    qt_engine_opts_default(&o);
                    o.n_ctx = 16;
                    o.n_threads = threads;
                    o.numerics = nm ? QT_NUMERICS_LLAMA : QT_NUMERICS_FAST;
                    qt_engine_ctx *e = NULL;
                    CHECK_OK(qt_engine_new(m, &o, &e));
                    if (!e) continue;
                    const qt__layer *L = &e->layers[0];
                    const qt__mat *qkv[3] = {&L->wq, &L->wk, &L->wv}, *gu[2] = {&L->w_gate, &L->w_up};
                    const int64_t n_qkv[3] = {NQ, NKV, NKV};
                    for (int set = 0; set < 2; set++) {
                        const int n = set ? 2 : 3;
                        const qt__mat *const *ms = set ? gu : qkv;
                        memset(got, 0xff, sizeof got);
                        qt__matmul_shared(e, x, B, n, (float *const[]){got[0], got[1], got[2]}, ms);
                        for (int k = 0; k < n; k++) qt__matmul(e, want[k], x, B, ms[k]);
                        for (int k = 0; k < n; k++) {
                            const int64_t rows = set ? F : n_qkv[k];
                            CHECK_MSG(memcmp(got[k], want[k], sizeof(float) * (size_t)(B * rows)) == 0,
                                      "%s %s, %d threads, batch %d: shared matrix %d differs from qt__matmul",
                                      qt_type_get(types[ti])->name, nm ? "llama" : "fast", threads, B, k);
                        }
                    }
                    qt_engine_free(e);
                }
        qt_model_free(m);
    }
}

/* Every KV format runs and stays near the f32-cache result; scales behave as stated. */
static void test_kv_formats(void) {
    spec s = specs[0];
    qt_model *m = make_model(&s, 4242);
    qt_engine_ctx *ref = engine(m, QT_KV_TYPE_F32, true, 1, 0);
    float *want = eval_all(ref, 12);
    const struct { qt_kv_type d; double tol; } f[] = {
        {QT_KV_TYPE_F16, 0.01}, {QT_KV_TYPE_BF16, 0.05}, {QT_KV_TYPE_FP8_E4M3, 0.2}, {QT_KV_TYPE_FP8_E5M2, 0.3}, {QT_KV_TYPE_INT8, 0.1}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        qt_engine_ctx *e = engine(m, f[i].d, true, 1, 0);
        float *got = eval_all(e, 12);
        double mx = 0, scale = 0;
        for (int k = 0; k < 12 * s.n_vocab; k++) { mx = fmax(mx, fabs(got[k] - want[k])); scale = fmax(scale, fabs(want[k])); }
        CHECK_MSG(mx / scale < f[i].tol, "%s: relative diff %.3g", qt_kv_type_name(f[i].d), mx / scale);
        CHECK_MSG(mx > 0 || f[i].d == QT_KV_TYPE_F16, "%s: no effect at all?", qt_kv_type_name(f[i].d));
        const float *ks = qt_engine_kv_scales(e, 0, false);
        CHECK((ks != NULL) == (f[i].d >= QT_KV_TYPE_FP8_E4M3));
        free(got);
        qt_engine_free(e);
    }
    /* int8 without file scales: computed on the fly from the first batch, one per layer */
    qt_engine_ctx *e = engine(m, QT_KV_TYPE_INT8, true, 1, 0);
    CHECK(strstr(qt_engine_describe(e), "computed on the fly") != NULL);
    free(eval_all(e, 12));
    const float *ks = qt_engine_kv_scales(e, 1, false), *vs = qt_engine_kv_scales(e, 1, true);
    CHECK(ks[0] > 0 && ks[0] == ks[1] && ks[0] != 1.0f && vs[0] != ks[0]);
    qt_engine_free(e);
    /* fp8 without file scales: 1.0, as vLLM runs it */
    e = engine(m, QT_KV_TYPE_FP8_E4M3, true, 1, 0);
    CHECK(strstr(qt_engine_describe(e), "fixed at 1.0") != NULL);
    CHECK(qt_engine_kv_scales(e, 0, true)[1] == 1.0f);
    qt_engine_free(e);
    free(want);
    qt_engine_free(ref);
    qt_model_free(m);
}

static void add_scales(qt_model *m, int n_layer, int n) {
    for (int l = 0; l < n_layer; l++) {
        for (int v = 0; v < 2; v++) {
            qt_tensor t = {0};
            snprintf(t.name, sizeof t.name, v ? QT_KV_V_SCALE_FMT : QT_KV_K_SCALE_FMT, l);
            t.type = QT_TYPE_F32; t.n_dims = 1; t.ne[0] = n; t.ne[1] = t.ne[2] = t.ne[3] = 1;
            t.nbytes = (size_t)n * 4;
            float *d = qt__model_alloc(m, t.nbytes);
            for (int i = 0; i < n; i++) d[i] = 0.01f * (float)(1 + i + 10 * v + 100 * l);
            t.data = d;
            CHECK_OK(qt__model_add_tensor(m, &t));
        }
    }
}

static void test_kv_scales_from_file(void) {
    spec s = specs[0];
    qt_model *m = make_model(&s, 5);
    add_scales(m, s.n_layer, s.n_head_kv);
    qt_engine_opts o;
    qt_engine_opts_default(&o);
    o.n_ctx = 16;
    o.kv_type = QT_KV_TYPE_FP8_E4M3;
    qt_engine_ctx *e = NULL;
    /* per-head scales in the file, per-tensor cache requested: refused */
    CHECK_STATUS(qt_engine_new(m, &o, &e), QT_ERR_UNSUPPORTED);
    CHECK(strstr(qt_last_error(), "blk.0.attn_k_scale") != NULL);
    o.kv_scale_gran = QT_KV_SCALE_PER_HEAD;
    CHECK_OK(qt_engine_new(m, &o, &e));
    CHECK(strstr(qt_engine_describe(e), "from the model file") != NULL);
    CHECK_NEAR(qt_engine_kv_scales(e, 1, true)[1], 0.01f * (1 + 1 + 10 + 100), 1e-7);
    free(eval_all(e, 4));
    qt_engine_free(e);
    qt_model_free(m);

    /* asking for file scales when there are none */
    m = make_model(&s, 6);
    o.kv_scale_source = QT_KV_SCALE_FILE;
    CHECK_STATUS(qt_engine_new(m, &o, &e), QT_ERR_NOT_FOUND);
    CHECK(strstr(qt_last_error(), "attn_k_scale") != NULL);
    qt_model_free(m);
}

static void test_bad_input(void) {
    spec s = specs[0];
    qt_engine_ctx *e = NULL;
    qt_model *m = make_model(&s, 11);
    qt_engine_opts o;
    qt_engine_opts_default(&o);
    o.n_ctx = 8;
    CHECK_OK(qt_engine_new(m, &o, &e));
    float *lg = malloc(12 * 32 * sizeof *lg);
    CHECK_STATUS(qt_engine_eval(e, prompt, 12, 0, lg), QT_ERR_ARG); /* longer than the context */
    CHECK(strstr(qt_last_error(), "do not fit the context") != NULL);
    CHECK_EQ_INT(qt_engine_n_past(e), 0);
    const int32_t bad[2] = {1, 32};
    CHECK_STATUS(qt_engine_eval(e, bad, 2, 0, lg), QT_ERR_ARG);
    CHECK(strstr(qt_last_error(), "outside the vocabulary") != NULL);
    qt_engine_free(e);
    free(lg);

    /* unknown architecture */
    qt_hparams *hp = (qt_hparams *)qt_model_hparams(m);
    hp->arch = QT_ARCH_UNKNOWN;
    snprintf(hp->arch_name, sizeof hp->arch_name, "gpt2");
    CHECK_STATUS(qt_engine_new(m, &o, &e), QT_ERR_UNSUPPORTED);
    CHECK(strstr(qt_last_error(), "architecture 'gpt2'") != NULL);
    qt_model_free(m);

    /* a missing tensor */
    m = make_model(&specs[0], 12);
    ((qt_hparams *)qt_model_hparams(m))->attn_qkv_bias = true; /* requires blk.N.attn_q.bias, absent */
    CHECK_STATUS(qt_engine_new(m, &o, &e), QT_ERR_NOT_FOUND);
    CHECK(strstr(qt_last_error(), "tensor 'blk.0.attn_q.bias' is missing") != NULL);
    qt_model_free(m);

    /* a wrong shape */
    m = make_model(&specs[0], 13);
    ((qt_hparams *)qt_model_hparams(m))->n_ff = 50;
    CHECK_STATUS(qt_engine_new(m, &o, &e), QT_ERR_SHAPE);
    CHECK(strstr(qt_last_error(), "'blk.0.ffn_gate.weight': shape [32, 48], expected [32, 50]") != NULL);
    qt_model_free(m);

    /* impossible hyper-parameters */
    m = make_model(&specs[0], 14);
    ((qt_hparams *)qt_model_hparams(m))->n_head_kv = 3;
    CHECK_STATUS(qt_engine_new(m, &o, &e), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "n_head 4 is not a positive multiple of n_head_kv 3") != NULL);
    qt_model_free(m);

    qt_kv_type d;
    CHECK_STATUS(qt_kv_type_parse("q4_0", &d), QT_ERR_UNSUPPORTED);
    CHECK(strstr(qt_last_error(), "'q4_0' is not supported") != NULL);
    CHECK_OK(qt_kv_type_parse("fp8", &d));
    CHECK_EQ_INT(d, QT_KV_TYPE_FP8_E4M3);
}

int main(void) {
    QT_RUN(test_families_match_reference);
    QT_RUN(test_quantized_weights);
    QT_RUN(test_batching_and_threads_do_not_change_bits);
    QT_RUN(test_gemm_kernels_threads_batches_numerics);
    QT_RUN(test_shared_matmul_equals_separate);
    QT_RUN(test_kv_formats);
    QT_RUN(test_kv_scales_from_file);
    QT_RUN(test_bad_input);
    return qt_test_finish("test_engine_forward");
}
