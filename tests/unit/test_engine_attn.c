/* Attention over every KV-cache format (lib/engine/attn.c, --numerics fast).
 *
 *  - kernels: every SIMD variant gives its scalar reference's bits (kdot, vacc, exp)
 *    on lengths that are not multiples of the unroll; the references agree with
 *    a double-precision computation on the decoded rows;
 *  - kdot_heads / vacc_heads (several GQA heads per call) = kdot / vacc head by head, bit for bit;
 *  - the split-K attention on a hand-built engine (one layer's cache and Q): every
 *    KV format x context 1, 17, 300, 700, 2048 x GQA 1, 2, 8 x head_dim 64 and 20, a
 *    decode row and a batch of rows: within 1e-5 of a double-precision softmax over
 *    the decoded cache; the same bits at 1, 2, 3 and 7 threads and with the scalar
 *    kernels in place of this CPU's;
 *  - stories260K with every KV format, 300 tokens: fast on 1 thread in one batch =
 *    fast on 3 threads in batches of 7 (not int8: its dynamic scales come from the
 *    first batch); a prefill of 40 then token-by-token decode on 2 threads = on 7;
 *    llama on 2 threads = on 7; fast vs llama within the KL bound (docs/engine.md).
 *    (Decode against one batch is not compared: the f32 weights' matmul takes
 *    another order for one row than for a batch, lib/engine/matmul.c.)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attn.h"
#include "engine/engine_internal.h"
#include "qtest.h"
#include "quanta.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t urand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}
static float frand(void) { return (float)((double)urand() * 0x1.0p-31 - 1.0); } /* [-1, 1) */

static const qt_kv_type kv_all[] = {QT_KV_TYPE_F32,      QT_KV_TYPE_F16,      QT_KV_TYPE_BF16,
                                    QT_KV_TYPE_FP8_E4M3, QT_KV_TYPE_FP8_E5M2, QT_KV_TYPE_INT8};

static const qt__attn_kernels *ref_of(qt_kv_type kv) {
    for (const qt__attn_kernels *v = qt__attn_variants; v->kv != QT_KV_TYPE_COUNT; v++)
        if (v->kv == kv && v->level == QT__CPU_SCALAR) return v;
    return NULL;
}

/* A random row in the format's codes, finite (no Inf / NaN codes), and the values it decodes to. */
static void random_row(const qt__kv_format *f, void *dst, float *dec, int32_t n) {
    float *x = malloc((size_t)n * sizeof *x);
    for (int32_t i = 0; i < n; i++) x[i] = frand() * (f->scaled ? f->max_value : 4.0f) * (i % 13 == 0 ? 1.0f : 0.3f);
    f->store(x, dst, n, 1.0f);
    f->load(dst, dec, n, 1.0f);
    free(x);
}

/* np rows of n elements, stride bytes apart (padded past the row), every variant = its reference. */
static void test_kernels_match_reference(void) {
    const int32_t lens[] = {1, 3, 7, 8, 9, 16, 20, 64, 80, 127, 128, 133};
    const int32_t rows[] = {1, 5, 8, 13, 17};
    enum { NMAX = 133, PMAX = 17, STRIDE = (NMAX + 3) * 4 };
    for (size_t fi = 0; fi < sizeof kv_all / sizeof kv_all[0]; fi++) {
        const qt__kv_format *f = qt__kv_format_get(kv_all[fi]);
        const qt__attn_kernels *ref = ref_of(kv_all[fi]);
        CHECK(ref != NULL);
        if (!ref) continue;
        static uint8_t row[PMAX * STRIDE];
        static float dec[PMAX][NMAX];
        float q[NMAX], w[PMAX], got[PMAX], out[PMAX], acc0[NMAX], acc_ref[NMAX], acc[NMAX];
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
            for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
                const int32_t n = lens[li], np = rows[ri];
                for (int32_t p = 0; p < np; p++) random_row(f, row + (size_t)p * STRIDE, dec[p], n);
                for (int32_t i = 0; i < n; i++) q[i] = frand(), acc0[i] = frand();
                for (int32_t p = 0; p < np; p++) w[p] = frand();
                /* the reference against double and its own definition */
                ref->kdot(row, STRIDE, q, n, np, got);
                memcpy(acc_ref, acc0, sizeof acc0);
                ref->vacc(acc_ref, row, STRIDE, w, np, n);
                for (int32_t p = 0; p < np; p++) {
                    double want = 0, mag = 0;
                    for (int32_t i = 0; i < n; i++) want += (double)q[i] * dec[p][i], mag += fabs((double)q[i] * dec[p][i]);
                    CHECK_MSG(fabs(got[p] - want) <= 1e-6 * mag + 1e-30, "%s kdot ref n=%d: %.9g vs %.9g", f->name, n,
                              got[p], want);
                }
                for (int32_t i = 0; i < n; i++) {
                    float a = acc0[i];
                    for (int32_t p = 0; p < np; p++) a = fmaf(dec[p][i], w[p], a);
                    CHECK_MSG(acc_ref[i] == a, "%s vacc ref n=%d i=%d", f->name, n, i);
                }
                /* every variant: the reference's bits */
                for (const qt__attn_kernels *v = qt__attn_variants; v->kv != QT_KV_TYPE_COUNT; v++) {
                    if (v->kv != kv_all[fi] || v == ref || v->level > qt__cpu_level_get()) continue;
                    v->kdot(row, STRIDE, q, n, np, out);
                    CHECK_MSG(memcmp(out, got, (size_t)np * sizeof *out) == 0, "%s kdot level %d n=%d rows %d",
                              f->name, v->level, n, np);
                    memcpy(acc, acc0, sizeof acc0);
                    v->vacc(acc, row, STRIDE, w, np, n);
                    CHECK_MSG(memcmp(acc, acc_ref, (size_t)n * sizeof *acc) == 0, "%s vacc level %d n=%d rows %d",
                              f->name, v->level, n, np);
                }
            }
    }
}

/* kdot_heads / vacc_heads: nh heads (strided apart, strides not multiples of the unroll) in
 * one call = kdot / vacc of the level's own kernels head by head, bit for bit, every variant. */
static void test_heads_match_one_head(void) {
    const int32_t lens[] = {1, 7, 8, 20, 64, 133};
    const int32_t rows[] = {1, 3, 8, 13, 32};
    const int32_t heads[] = {1, 2, 3, 4, 5, 8};
    enum { NMAX = 133, PMAX = 32, HMAX = 8, STRIDE = (NMAX + 3) * 4, QS = NMAX + 3, OS = PMAX + 1, AS = NMAX + 2,
           WS = PMAX + 3 };
    static uint8_t row[PMAX * STRIDE];
    static float dec[PMAX][NMAX], q[HMAX * QS], w[HMAX * WS], acc0[HMAX * AS];
    static float want[HMAX * OS], got[HMAX * OS], acc_want[HMAX * AS], acc_got[HMAX * AS];
    for (size_t fi = 0; fi < sizeof kv_all / sizeof kv_all[0]; fi++) {
        const qt__kv_format *f = qt__kv_format_get(kv_all[fi]);
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
            for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++)
                for (size_t hi = 0; hi < sizeof heads / sizeof heads[0]; hi++) {
                    const int32_t n = lens[li], np = rows[ri], nh = heads[hi];
                    for (int32_t p = 0; p < np; p++) random_row(f, row + (size_t)p * STRIDE, dec[p], n);
                    for (int i = 0; i < HMAX * QS; i++) q[i] = frand();
                    for (int i = 0; i < HMAX * WS; i++) w[i] = frand();
                    for (int i = 0; i < HMAX * AS; i++) acc0[i] = frand();
                    for (const qt__attn_kernels *v = qt__attn_variants; v->kv != QT_KV_TYPE_COUNT; v++) {
                        if (v->kv != kv_all[fi] || v->level > qt__cpu_level_get()) continue;
                        CHECK(v->kdot_heads != NULL && v->vacc_heads != NULL);
                        if (!v->kdot_heads || !v->vacc_heads) continue;
                        memset(want, 0, sizeof want), memset(got, 0, sizeof got);
                        memcpy(acc_want, acc0, sizeof acc0), memcpy(acc_got, acc0, sizeof acc0);
                        for (int32_t h = 0; h < nh; h++) {
                            v->kdot(row, STRIDE, q + h * QS, n, np, want + h * OS);
                            v->vacc(acc_want + h * AS, row, STRIDE, w + h * WS, np, n);
                        }
                        v->kdot_heads(row, STRIDE, q, QS, nh, n, np, got, OS);
                        v->vacc_heads(acc_got, AS, row, STRIDE, w, WS, nh, np, n);
                        CHECK_MSG(memcmp(got, want, sizeof got) == 0, "%s kdot_heads level %d n=%d rows %d heads %d",
                                  f->name, v->level, n, np, nh);
                        CHECK_MSG(memcmp(acc_got, acc_want, sizeof acc_got) == 0,
                                  "%s vacc_heads level %d n=%d rows %d heads %d", f->name, v->level, n, np, nh);
                    }
                }
    }
}

/* exp: every variant = qt__attn_exp1 bit for bit; qt__attn_exp1 within 2 ulp of e^x. */
static void test_exp(void) {
    enum { N = 4099 };
    float *x = malloc(N * sizeof *x), *ref = malloc(N * sizeof *ref), *y = malloc(N * sizeof *y);
    const float special[] = {0.0f, -0.0f, -1e-30f, -0.5f, -86.0f, -86.7f, -87.0f, -87.5f, -88.0f, -100.0f, -1e30f};
    for (int i = 0; i < N; i++) x[i] = i < 11 ? special[i] : -fabsf(frand()) * (i % 3 ? 20.0f : 100.0f);
    for (int i = 0; i < N; i++) ref[i] = qt__attn_exp1(x[i]);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        const double e = exp((double)x[i]);
        if (e < 0x1p-125) CHECK_MSG(ref[i] < 0x1p-124f, "exp(%g) = %g", x[i], ref[i]);
        else worst = fmax(worst, fabs(ref[i] - e) / e);
    }
    CHECK_MSG(worst < 2.5e-7, "exp: relative error %.3g", worst);
    for (const qt__attn_kernels *v = qt__attn_variants; v->kv != QT_KV_TYPE_COUNT; v++) {
        if (v->level > qt__cpu_level_get()) continue;
        memcpy(y, x, N * sizeof *y);
        v->exp(y, N);
        CHECK_MSG(memcmp(y, ref, N * sizeof *y) == 0, "exp level %d differs from qt__attn_exp1", v->level);
    }
    free(x); free(ref); free(y);
}

/* ---- the split-K attention on a hand-built engine: one layer's cache and Q rows ---------- */

enum { CTX = 2048, ROWS = 24 };

typedef struct harness {
    qt_engine_ctx e;
    float *kf, *vf; /* (CTX, n_kv) the values stored, before the format */
} harness;

static void harness_init(harness *t, qt_kv_type kv, int32_t n_head, int32_t hkv, int32_t hd) {
    memset(t, 0, sizeof *t);
    qt_engine_ctx *e = &t->e;
    e->opts.numerics = QT_NUMERICS_FAST;
    e->hp.n_layer = 1, e->hp.n_head = n_head, e->hp.n_head_kv = hkv, e->hp.head_dim = hd;
    e->n_q = n_head * hd, e->n_kv = hkv * hd, e->n_rep = n_head / hkv, e->kq_scale = 1.0f / sqrtf((float)hd);
    e->n_ctx = CTX, e->n_seq = 1, e->n_rows = ROWS, e->n_threads = 7;
    e->kvf = qt__kv_format_get(kv);
    e->kv_slot_bytes = e->kv_layer_bytes = (size_t)CTX * e->n_kv * e->kvf->elem_bytes;
    e->k_cache = malloc(e->kv_layer_bytes);
    e->v_cache = malloc(e->kv_layer_bytes);
    t->kf = malloc((size_t)CTX * e->n_kv * sizeof(float));
    t->vf = malloc((size_t)CTX * e->n_kv * sizeof(float));
    e->q = malloc((size_t)ROWS * e->n_q * sizeof(float));
    e->att = malloc((size_t)ROWS * e->n_q * sizeof(float));
    e->row_pos = calloc(ROWS, sizeof *e->row_pos);
    e->row_seq = calloc(ROWS, sizeof *e->row_seq);
    if (e->kvf->scaled) {
        e->k_scale = malloc((size_t)hkv * sizeof(float));
        e->v_scale = malloc((size_t)hkv * sizeof(float));
    }
    /* K with a shared direction per head so some scores are large (peaked softmax) */
    for (int64_t i = 0; i < (int64_t)CTX * e->n_kv; i++) {
        t->kf[i] = frand() * 1.5f + ((i % hd) == 3 ? 2.0f : 0.0f);
        t->vf[i] = frand() * (1.0f + (float)(i % 7));
    }
    for (int32_t h = 0; h < hkv && e->kvf->scaled; h++) {
        float ka = 0, va = 0;
        for (int32_t p = 0; p < CTX; p++)
            for (int32_t d = 0; d < hd; d++) {
                ka = fmaxf(ka, fabsf(t->kf[(size_t)p * e->n_kv + h * hd + d]));
                va = fmaxf(va, fabsf(t->vf[(size_t)p * e->n_kv + h * hd + d]));
            }
        e->k_scale[h] = ka / e->kvf->max_value * (1.0f + 0.1f * h);
        e->v_scale[h] = va / e->kvf->max_value * (1.0f + 0.05f * h);
    }
    const size_t eb = e->kvf->elem_bytes;
    for (int32_t p = 0; p < CTX; p++)
        for (int32_t h = 0; h < hkv; h++) {
            const size_t o = (size_t)p * e->n_kv + (size_t)h * hd;
            e->kvf->store(t->kf + o, e->k_cache + o * eb, hd, e->k_scale ? e->k_scale[h] : 1.0f);
            e->kvf->store(t->vf + o, e->v_cache + o * eb, hd, e->v_scale ? e->v_scale[h] : 1.0f);
        }
    for (int64_t i = 0; i < (int64_t)ROWS * e->n_q; i++) e->q[i] = frand() * 1.2f;
    CHECK_OK(qt__attn_init(e));
}

static void harness_free(harness *t) {
    qt_engine_ctx *e = &t->e;
    qt__attn_free(e);
    free(e->k_cache); free(e->v_cache); free(e->q); free(e->att); free(e->row_pos); free(e->row_seq);
    free(e->k_scale); free(e->v_scale); free(t->kf); free(t->vf);
}

/* max |att - softmax(q K^T) V| / max |V| over rows [0, B), in double on the decoded cache. */
static double err_vs_double(const harness *t, int32_t B) {
    const qt_engine_ctx *e = &t->e;
    const int32_t hd = e->hp.head_dim, hkv = e->hp.n_head_kv;
    const size_t eb = e->kvf->elem_bytes;
    float *kd = malloc((size_t)hd * sizeof *kd), *vd = malloc((size_t)hd * sizeof *vd);
    double *s = malloc((size_t)CTX * sizeof *s), *o = malloc((size_t)hd * sizeof *o), worst = 0;
    for (int32_t b = 0; b < B; b++)
        for (int32_t h = 0; h < e->hp.n_head; h++) {
            const int32_t kvh = h / e->n_rep, n = e->row_pos[b] + 1;
            const float ks = e->k_scale ? e->k_scale[kvh] : 1.0f, vs = e->v_scale ? e->v_scale[kvh] : 1.0f;
            const float *q = e->q + (size_t)b * e->n_q + (size_t)h * hd;
            double m = -INFINITY, S = 0, vmax = 0;
            for (int32_t p = 0; p < n; p++) {
                e->kvf->load(e->k_cache + ((size_t)p * e->n_kv + (size_t)kvh * hd) * eb, kd, hd, ks);
                double d = 0;
                for (int32_t i = 0; i < hd; i++) d += (double)q[i] * kd[i];
                s[p] = d / sqrt((double)hd);
                m = fmax(m, s[p]);
            }
            for (int32_t i = 0; i < hd; i++) o[i] = 0;
            for (int32_t p = 0; p < n; p++) {
                const double w = exp(s[p] - m);
                S += w;
                e->kvf->load(e->v_cache + ((size_t)p * e->n_kv + (size_t)kvh * hd) * eb, vd, hd, vs);
                for (int32_t i = 0; i < hd; i++) o[i] += w * vd[i], vmax = fmax(vmax, fabs(vd[i]));
            }
            const float *got = e->att + (size_t)b * e->n_q + (size_t)h * hd;
            for (int32_t i = 0; i < hd; i++) worst = fmax(worst, fabs(got[i] - o[i] / S) / vmax);
        }
    (void)hkv;
    free(kd); free(vd); free(s); free(o);
    return worst;
}

static void run_threads(harness *t, int32_t B, int threads, float *out) {
    qt_engine_ctx *e = &t->e;
    CHECK_OK(qt_threadpool_create(threads, &e->pool));
    memset(e->att, 0xff, (size_t)ROWS * e->n_q * sizeof(float)); /* NaN: every output must be written */
    qt__attn_fast(e, 0, B);
    memcpy(out, e->att, (size_t)B * e->n_q * sizeof(float));
    qt_threadpool_free(e->pool);
    e->pool = NULL;
}

static void check_case(qt_kv_type kv, int32_t n_head, int32_t hkv, int32_t hd, int32_t L, bool batch) {
    harness t;
    harness_init(&t, kv, n_head, hkv, hd);
    qt_engine_ctx *e = &t.e;
    const int32_t B = batch ? (L < ROWS ? L : ROWS) : 1;
    for (int32_t b = 0; b < B; b++) e->row_pos[b] = L - B + b;
    const size_t n = (size_t)B * e->n_q;
    float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    const int threads[] = {1, 2, 3, 7};
    run_threads(&t, B, threads[0], want);
    const double err = err_vs_double(&t, B);
    CHECK_MSG(err < 1e-5, "%s heads %d/%d hd %d context %d %s: error %.3g vs double", e->kvf->name, n_head, hkv, hd,
              L, batch ? "batch" : "decode", err);
    for (size_t i = 1; i < sizeof threads / sizeof threads[0]; i++) {
        run_threads(&t, B, threads[i], got);
        CHECK_MSG(memcmp(got, want, n * sizeof *got) == 0, "%s heads %d/%d hd %d context %d: %d threads differ",
                  e->kvf->name, n_head, hkv, hd, L, threads[i]);
    }
    e->attn = ref_of(kv); /* the scalar references: the same bits */
    run_threads(&t, B, 3, got);
    CHECK_MSG(memcmp(got, want, n * sizeof *got) == 0, "%s heads %d/%d hd %d context %d: scalar kernels differ",
              e->kvf->name, n_head, hkv, hd, L);
    free(want); free(got);
    harness_free(&t);
}

static void test_split_attention(void) {
    const int32_t lens[] = {1, 17, 300, 700, 2048}; /* blocks of 32, 64 and 128 keys (attn.c) */
    const struct { int32_t n_head, hkv; } gqa[] = {{4, 4}, {4, 2}, {8, 1}};
    for (size_t fi = 0; fi < sizeof kv_all / sizeof kv_all[0]; fi++)
        for (size_t g = 0; g < sizeof gqa / sizeof gqa[0]; g++)
            for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
                check_case(kv_all[fi], gqa[g].n_head, gqa[g].hkv, 64, lens[li], false);
                check_case(kv_all[fi], gqa[g].n_head, gqa[g].hkv, 64, lens[li], true);
                if (lens[li] <= 300) check_case(kv_all[fi], gqa[g].n_head, gqa[g].hkv, 20, lens[li], true);
            }
}

/* ---- stories260K: every KV format, both numerics ------------------------------------------ */

enum { NTOK = 300 };

static float *eval_stories(qt_kv_type kv, qt_numerics nm, int threads, int n_batch, bool one_by_one) {
    qt_model *m = NULL;
    CHECK_OK(qt_model_open(qt_test_shared("models/stories260K.gguf"), &m));
    if (!m) return NULL;
    qt_engine_opts o;
    qt_engine_opts_default(&o);
    o.kv_type = kv;
    o.numerics = nm;
    o.n_ctx = 512;
    o.n_threads = threads;
    o.n_batch = n_batch;
    qt_engine_ctx *e = NULL;
    CHECK_OK(qt_engine_new(m, &o, &e));
    float *lg = NULL;
    if (e) {
        const int32_t V = qt_engine_n_vocab(e);
        int32_t tok[NTOK];
        for (int i = 0; i < NTOK; i++) tok[i] = 1 + (int32_t)((i * 37 + 11) % (V - 1));
        lg = malloc((size_t)NTOK * V * sizeof *lg);
        if (one_by_one) { /* a prefill of 40, then decode */
            CHECK_OK(qt_engine_eval(e, tok, 40, 0, lg));
            for (int i = 40; i < NTOK; i++) CHECK_OK(qt_engine_eval(e, tok + i, 1, 0, lg + (size_t)i * V));
        } else {
            CHECK_OK(qt_engine_eval(e, tok, NTOK, 0, lg));
        }
    }
    qt_engine_free(e);
    qt_model_free(m);
    return lg;
}

static void test_stories_every_format(void) {
    const int32_t V = 512;
    for (size_t fi = 0; fi < sizeof kv_all / sizeof kv_all[0]; fi++) {
        const qt_kv_type kv = kv_all[fi];
        float *fast = eval_stories(kv, QT_NUMERICS_FAST, 1, NTOK, false);
        float *fast3 = eval_stories(kv, QT_NUMERICS_FAST, 3, 7, false);
        float *dec2 = eval_stories(kv, QT_NUMERICS_FAST, 2, 64, true);
        float *dec7 = eval_stories(kv, QT_NUMERICS_FAST, 7, 64, true);
        float *llama = eval_stories(kv, QT_NUMERICS_LLAMA, 2, 0, false);
        float *llama7 = eval_stories(kv, QT_NUMERICS_LLAMA, 7, 0, false);
        if (!fast || !fast3 || !dec2 || !dec7 || !llama || !llama7) goto next;
        const size_t n = (size_t)NTOK * V * sizeof(float);
        /* int8's dynamic scales come from the first batch: batches of 7 fill another cache */
        if (kv != QT_KV_TYPE_INT8)
            CHECK_MSG(memcmp(fast, fast3, n) == 0, "%s fast: 3 threads, batches of 7 differ", qt_kv_type_name(kv));
        CHECK_MSG(memcmp(dec2, dec7, n) == 0, "%s fast decode: 7 threads differ from 2", qt_kv_type_name(kv));
        CHECK_MSG(memcmp(llama, llama7, n) == 0, "%s llama: 7 threads differ", qt_kv_type_name(kv));
        double kl = 0, mx = 0;
        for (int pos = 0; pos < NTOK; pos++) {
            const float *a = llama + (size_t)pos * V, *b = fast + (size_t)pos * V;
            double ma = -INFINITY, mb = -INFINITY, za = 0, zb = 0, k = 0;
            for (int v = 0; v < V; v++) ma = fmax(ma, a[v]), mb = fmax(mb, b[v]);
            for (int v = 0; v < V; v++) za += exp(a[v] - ma), zb += exp(b[v] - mb);
            for (int v = 0; v < V; v++) {
                const double la = a[v] - ma - log(za), lb = b[v] - mb - log(zb);
                k += exp(la) * (la - lb);
                mx = fmax(mx, fabs((double)a[v] - b[v]));
            }
            kl += k / NTOK;
        }
        printf("  %-8s fast vs llama over %d tokens: mean KL %.3g, max |logit diff| %.3g\n", qt_kv_type_name(kv), NTOK,
               kl, mx);
        /* the bound of docs/engine.md ("Numerics") */
        CHECK_MSG(kl <= 1e-3 && mx <= 0.5, "%s: fast vs llama mean KL %.3g, max logit diff %.3g", qt_kv_type_name(kv),
                  kl, mx);
    next:
        free(fast); free(fast3); free(dec2); free(dec7); free(llama); free(llama7);
    }
}

int main(void) {
    QT_RUN(test_kernels_match_reference);
    QT_RUN(test_heads_match_one_head);
    QT_RUN(test_exp);
    QT_RUN(test_split_attention);
    QT_RUN(test_stories_every_format);
    return qt_test_finish("test_engine_attn");
}
