/* lib/engine/attn.c — attention over the KV cache in its stored format
 * (--numerics fast), split across threads by heads and key blocks.
 *
 * One row (token) and query head attends to keys 0 .. its position. The keys
 * are cut into blocks (32 keys in rows up to 512 keys, 64 up to 1024, beyond that
 * QT_ATTN_BLOCK = 128); a work item is (row, KV head, block)
 * and covers the n_rep query heads that share the KV head (GQA: the block's K
 * and V rows are read from memory once and stay in L1 for the other heads).
 * Per item and head, two passes over the block (flash-decoding's split-K):
 *   s_p = (q . k_p) * kq_scale * k_scale          kdot on the stored rows
 *   m = max_p s_p,  w_p = e^(s_p - m),  S = sum_p w_p      (in order of p)
 *   acc = sum_p (w_p * v_scale) v_p                 vacc on the stored rows
 * and a row's blocks are merged in block order:
 *   M = max_c m_c,  out = (sum_c e^(m_c - M) acc_c) / (sum_c e^(m_c - M) S_c).
 * The partition depends only on the row's number of keys, never on the thread
 * count, and every kernel gives its scalar reference's bits (attn.h), so the
 * result is the same at any --threads and on any CPU level. Rows are taken in
 * waves that fit the partial-state buffer sized at engine creation (nothing is
 * allocated here); a row with one block writes its output directly (the merge
 * of one state is the identity: e^0 = 1 exactly).
 *
 * --numerics llama keeps forward.c's sequential online softmax: its order
 * (ggml's flash attention) cannot be split across positions.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "core/cpu_level.h"
#include "engine_internal.h"
#include "quanta/num.h"

/* ---- scalar references (the float order every variant reproduces) ---------------- */

static inline float dec_f32(const void *p, int32_t i) { return ((const float *)p)[i]; }
static inline float dec_f16(const void *p, int32_t i) { return qt_fp16_to_f32(((const uint16_t *)p)[i]); }
static inline float dec_bf16(const void *p, int32_t i) { return qt_bf16_to_f32(((const uint16_t *)p)[i]); }
static inline float dec_e4m3(const void *p, int32_t i) { return qt_e4m3_to_f32(((const uint8_t *)p)[i]); }
static inline float dec_e5m2(const void *p, int32_t i) { return qt_e5m2_to_f32(((const uint8_t *)p)[i]); }
static inline float dec_i8(const void *p, int32_t i) { return (float)((const int8_t *)p)[i]; }

#define KV_REF(t)                                                                               \
    static void kdot_##t##_ref(const void *k, size_t stride, const float *q, int32_t n, int32_t np, float *out) { \
        const int32_t n8 = n - n % 8;                                                           \
        for (int32_t p = 0; p < np; p++) {                                                      \
            const void *kp = (const uint8_t *)k + (size_t)p * stride;                           \
            float l[8] = {0};                                                                   \
            for (int32_t i = 0; i < n8; i++) l[i % 8] = fmaf(q[i], dec_##t(kp, i), l[i % 8]);   \
            float s = ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));        \
            for (int32_t i = n8; i < n; i++) s = fmaf(q[i], dec_##t(kp, i), s);                 \
            out[p] = s;                                                                         \
        }                                                                                       \
    }                                                                                           \
    static void vacc_##t##_ref(float *acc, const void *v, size_t stride, const float *w, int32_t np, int32_t n) { \
        for (int32_t p = 0; p < np; p++) {                                                      \
            const void *vp = (const uint8_t *)v + (size_t)p * stride;                           \
            for (int32_t i = 0; i < n; i++) acc[i] = fmaf(dec_##t(vp, i), w[p], acc[i]);        \
        }                                                                                       \
    }                                                                                           \
    static void kdot_heads_##t##_ref(const void *k, size_t stride, const float *q, size_t q_stride, int32_t nh, \
                                     int32_t n, int32_t np, float *out, size_t out_stride) {    \
        for (int32_t h = 0; h < nh; h++) kdot_##t##_ref(k, stride, q + h * q_stride, n, np, out + h * out_stride); \
    }                                                                                           \
    static void vacc_heads_##t##_ref(float *acc, size_t acc_stride, const void *v, size_t stride, const float *w, \
                                     size_t w_stride, int32_t nh, int32_t np, int32_t n) {      \
        for (int32_t h = 0; h < nh; h++) vacc_##t##_ref(acc + h * acc_stride, v, stride, w + h * w_stride, np, n); \
    }
KV_REF(f32)
KV_REF(f16)
KV_REF(bf16)
KV_REF(e4m3)
KV_REF(e5m2)
KV_REF(i8)

/* e^x for x <= 0: x = n ln2 + b, n = round(x / ln2), a degree-5 polynomial in b
 * (the coefficients of ARM's optimized-routines expf, as ggml_v_expf uses them;
 * max error about 1.5 ulp), times 2^n built from its bits; 0 below 2^-125. */
float qt__attn_exp1(float x) {
    const float shift = 0x1.8p23f;
    const float n = fmaf(x, 0x1.715476p+0f, shift) - shift;
    if (n < -125.0f) return 0.0f;
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                         fmaf(0x1.ffffecp-1f, b, 1.0f));
    const uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
    float p;
    memcpy(&p, &bits, 4);
    return j * p;
}

static void exp_ref(float *x, int32_t n) {
    for (int32_t i = 0; i < n; i++) x[i] = qt__attn_exp1(x[i]);
}

/* ---- the table: references first, then faster variants of the same bits ---------- */

#define REF(kv, t) {kv, QT__CPU_SCALAR, kdot_##t##_ref, vacc_##t##_ref, exp_ref, kdot_heads_##t##_ref, vacc_heads_##t##_ref}
#define AVX2(kv, t)                                                                                                  \
    {kv, QT__CPU_AVX2, qt__attn_kdot_##t##_avx2, qt__attn_vacc_##t##_avx2, qt__attn_exp_avx2,                       \
     qt__attn_kdot_heads_##t##_avx2, qt__attn_vacc_heads_##t##_avx2}
const qt__attn_kernels qt__attn_variants[] = {
    REF(QT_KV_TYPE_F32, f32),       REF(QT_KV_TYPE_F16, f16),       REF(QT_KV_TYPE_BF16, bf16),
    REF(QT_KV_TYPE_FP8_E4M3, e4m3), REF(QT_KV_TYPE_FP8_E5M2, e5m2), REF(QT_KV_TYPE_INT8, i8),
#ifdef QT_ARCH_X86
    AVX2(QT_KV_TYPE_F32, f32),       AVX2(QT_KV_TYPE_F16, f16),       AVX2(QT_KV_TYPE_BF16, bf16),
    AVX2(QT_KV_TYPE_FP8_E4M3, e4m3), AVX2(QT_KV_TYPE_FP8_E5M2, e5m2), AVX2(QT_KV_TYPE_INT8, i8),
#endif
    {QT_KV_TYPE_COUNT, QT__CPU_LEVEL_COUNT, NULL, NULL, NULL, NULL, NULL},
};

const qt__attn_kernels *qt__attn_kernels_get(qt_kv_type kv) {
    const qt__cpu_level cpu = qt__cpu_level_get();
    const qt__attn_kernels *best = NULL;
    for (const qt__attn_kernels *v = qt__attn_variants; v->kv != QT_KV_TYPE_COUNT; v++)
        if (v->kv == kv && v->level <= cpu && (!best || v->level > best->level)) best = v;
    return best;
}

/* ---- buffers (engine creation) ------------------------------------------------------ */

/* Keys per block for a row of n_keys: short rows in smaller blocks, so that one decode
 * token at context 512 still has 16 x n_head_kv items for many threads; a function of
 * the row's length only. */
static int32_t block_keys(int32_t n_keys) { return n_keys <= 512 ? 32 : n_keys <= 1024 ? 64 : QT_ATTN_BLOCK; }
static int64_t row_blocks(int32_t n_keys) { return (n_keys + block_keys(n_keys) - 1) / block_keys(n_keys); }
/* The most blocks a row of at most n_ctx keys has (row_blocks grows within each regime). */
static int64_t max_blocks(int32_t n_ctx) {
    int64_t m = row_blocks(n_ctx < 512 ? n_ctx : 512);
    if (n_ctx > 512) m = m > row_blocks(n_ctx < 1024 ? n_ctx : 1024) ? m : row_blocks(n_ctx < 1024 ? n_ctx : 1024);
    return m > row_blocks(n_ctx) ? m : row_blocks(n_ctx);
}

/* Floats of one item's partial states: per query head of the group, m, S and acc (head_dim). */
static size_t item_floats(const qt_engine_ctx *e) { return (size_t)e->n_rep * (size_t)(e->hp.head_dim + 2); }

/* Floats of one thread's scores: one block of keys for each query head of a group. */
static size_t attn_score_floats(const qt_engine_ctx *e) { return (size_t)e->n_rep * QT_ATTN_BLOCK; }

qt_status qt__attn_init(qt_engine_ctx *e) {
    e->attn = qt__attn_kernels_get(e->kvf->dtype);
    /* one row at full context always fits, and a batch of short rows in one wave */
    e->attn_cap_items = (int64_t)e->hp.n_head_kv * (max_blocks(e->n_ctx) + e->n_rows);
    e->attn_parts = malloc((size_t)e->attn_cap_items * item_floats(e) * sizeof(float));
    e->attn_prefix = malloc(((size_t)e->n_rows + 1) * sizeof *e->attn_prefix);
    e->attn_scores = malloc((size_t)e->n_threads * attn_score_floats(e) * sizeof(float));
    if (!e->attn) return qt_error(QT_ERR_UNSUPPORTED, "attention: no kernels for KV cache format %s", e->kvf->name);
    if (!e->attn_parts || !e->attn_prefix || !e->attn_scores)
        return qt_error(QT_ERR_NOMEM, "attention: out of memory (%lld partial states)", (long long)e->attn_cap_items);
    return QT_OK;
}

void qt__attn_free(qt_engine_ctx *e) {
    free(e->attn_parts);
    free(e->attn_prefix);
    free(e->attn_scores);
}

/* ---- the split-K attention ------------------------------------------------------------ */

typedef struct fast_job {
    qt_engine_ctx *e;
    int il;
    int32_t b0;               /* first row of the wave */
    const int64_t *prefix;    /* (rows of the wave + 1) first item of each row */
    int32_t n_rows;           /* rows in the wave */
} fast_job;

/* Heads whose sums and maxima one pass keeps on the stack (more: several passes). */
#define QT_ATTN_MAX_REP_STACK 16

/* Keys [p0, p1) of one row for query heads h0 .. h0 + n_rep - 1 (one KV head). */
static void block_states(const fast_job *j, int32_t b, int32_t kvh, int32_t p0, int32_t p1, bool whole, float *part,
                         float *sc) {
    qt_engine_ctx *e = j->e;
    const qt__attn_kernels *kn = e->attn;
    const int32_t hd = e->hp.head_dim, hkv = e->hp.n_head_kv, np = p1 - p0;
    const size_t eb = e->kvf->elem_bytes, row_stride = (size_t)e->n_kv * eb;
    const float ks = e->k_scale ? e->k_scale[j->il * hkv + kvh] : 1.0f;
    const float vs = e->v_scale ? e->v_scale[j->il * hkv + kvh] : 1.0f;
    const float qs = e->kq_scale * ks;
    const size_t base = (size_t)j->il * e->kv_layer_bytes + (size_t)e->row_seq[b] * e->kv_slot_bytes +
                        (size_t)p0 * row_stride + (size_t)kvh * hd * eb;
    const uint8_t *kb = e->k_cache + base, *vb = e->v_cache + base;
    const int32_t nh = e->n_rep, h0 = kvh * nh;
    /* all the group's heads at once: each K / V row is decoded once for them (attn.h) */
    kn->kdot_heads(kb, row_stride, e->q + (size_t)b * e->n_q + (size_t)h0 * hd, (size_t)hd, nh, hd, np, sc, (size_t)np);
    float *acc0 = whole ? e->att + (size_t)b * e->n_q + (size_t)h0 * hd : part + 2;
    const size_t acc_stride = whole ? (size_t)hd : (size_t)hd + 2;
    float S[QT_ATTN_MAX_REP_STACK], M[QT_ATTN_MAX_REP_STACK];
    for (int32_t r0 = 0; r0 < nh; r0 += QT_ATTN_MAX_REP_STACK) {
        const int32_t r1 = r0 + QT_ATTN_MAX_REP_STACK < nh ? r0 + QT_ATTN_MAX_REP_STACK : nh;
        const int32_t nr = r1 - r0;
        float *s0 = sc + (size_t)r0 * np;
        for (int32_t r = 0; r < nr; r++) {
            float *s = s0 + (size_t)r * np;
            for (int32_t p = 0; p < np; p++) s[p] *= qs;
            M[r] = -INFINITY, S[r] = 0.0f;
        }
        /* the heads' maxima and sums side by side: each head's chain is in order of p, as
         * before, but the chains of several heads now overlap instead of waiting on each other.
         * fmaxf(m, s) without the libm call: m is never NaN, a NaN score is skipped as fmaxf
         * skips it, and which zero wins cannot change a result (only s - m and e^(m - M) read
         * it, and e^(+-0) = 1). */
        for (int32_t p = 0; p < np; p++)
            for (int32_t r = 0; r < nr; r++) {
                const float x = s0[(size_t)r * np + p];
                M[r] = x > M[r] ? x : M[r];
            }
        for (int32_t r = 0; r < nr; r++)
            for (int32_t p = 0; p < np; p++) s0[(size_t)r * np + p] -= M[r];
        kn->exp(s0, nr * np);
        for (int32_t p = 0; p < np; p++)
            for (int32_t r = 0; r < nr; r++) S[r] += s0[(size_t)r * np + p];
        for (int32_t r = 0; r < nr; r++) {
            float *s = s0 + (size_t)r * np, *acc = acc0 + (size_t)(r0 + r) * acc_stride;
            for (int32_t p = 0; p < np; p++) s[p] *= vs;
            for (int32_t d = 0; d < hd; d++) acc[d] = 0.0f;
        }
        kn->vacc_heads(acc0 + (size_t)r0 * acc_stride, acc_stride, vb, row_stride, sc + (size_t)r0 * np, (size_t)np,
                       r1 - r0, np, hd);
        for (int32_t r = r0; r < r1; r++) {
            float *acc = acc0 + (size_t)r * acc_stride;
            if (whole) {
                const float inv = S[r - r0] == 0.0f ? 0.0f : 1.0f / S[r - r0];
                for (int32_t d = 0; d < hd; d++) acc[d] *= inv;
            } else {
                part[(size_t)r * (hd + 2)] = M[r - r0];
                part[(size_t)r * (hd + 2) + 1] = S[r - r0];
            }
        }
    }
}

/* The wave row holding item it (prefix is increasing). */
static int32_t item_row(const fast_job *j, int64_t it) {
    int32_t lo = 0, hi = j->n_rows - 1;
    while (lo < hi) {
        const int32_t mid = (lo + hi + 1) / 2;
        if (j->prefix[mid] <= it) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

static void fast_items(void *ctx, int64_t i0, int64_t i1, int ti) {
    const fast_job *j = ctx;
    qt_engine_ctx *e = j->e;
    float *sc = e->attn_scores + (size_t)ti * attn_score_floats(e);
    int32_t r = i0 < i1 ? item_row(j, i0) : 0;
    for (int64_t it = i0; it < i1; it++) {
        while (it >= j->prefix[r + 1]) r++;
        const int32_t b = j->b0 + r, n_keys = e->row_pos[b] + 1;
        const int64_t nb = row_blocks(n_keys), k = it - j->prefix[r];
        const int32_t kvh = (int32_t)(k / nb), c = (int32_t)(k % nb);
        const int32_t bk = block_keys(n_keys), p0 = c * bk, p1 = p0 + bk < n_keys ? p0 + bk : n_keys;
        block_states(j, b, kvh, p0, p1, nb == 1, e->attn_parts + (size_t)it * item_floats(e), sc);
    }
}

/* Rows with two or more blocks: merge their states in block order. */
static void merge_items(void *ctx, int64_t i0, int64_t i1, int ti) {
    (void)ti;
    const fast_job *j = ctx;
    qt_engine_ctx *e = j->e;
    const int32_t hd = e->hp.head_dim, n_head = e->hp.n_head;
    for (int64_t it = i0; it < i1; it++) {
        const int32_t r = (int32_t)(it / n_head), h = (int32_t)(it % n_head), b = j->b0 + r;
        const int64_t nb = row_blocks(e->row_pos[b] + 1);
        if (nb == 1) continue; /* written by its item */
        const int32_t kvh = h / e->n_rep, rep = h % e->n_rep;
        const float *first = e->attn_parts + (size_t)(j->prefix[r] + kvh * nb) * item_floats(e) + (size_t)rep * (hd + 2);
        const size_t step = item_floats(e);
#if QT_ARCH_X86
        void (*const axpy)(float *, const float *, float, int32_t) =
            qt__cpu_level_get() >= QT__CPU_AVX2 ? qt__attn_axpy_avx2 : qt__attn_axpy_ref;
#else
        void (*const axpy)(float *, const float *, float, int32_t) = qt__attn_axpy_ref;
#endif
        float M = -INFINITY;
        for (int64_t c = 0; c < nb; c++) M = first[c * step] > M ? first[c * step] : M; /* fmaxf: see block_states */
        float S = 0.0f, *out = e->att + (size_t)b * e->n_q + (size_t)h * hd;
        for (int32_t d = 0; d < hd; d++) out[d] = 0.0f;
        for (int64_t c = 0; c < nb; c++) {
            const float *st = first + c * step, f = qt__attn_exp1(st[0] - M);
            S = fmaf(st[1], f, S);
            axpy(out, st + 2, f, hd); /* out[d] = fmaf(st[2 + d], f, out[d]): the same single rounding */
        }
        const float inv = S == 0.0f ? 0.0f : 1.0f / S;
        for (int32_t d = 0; d < hd; d++) out[d] *= inv;
    }
}

void qt__attn_fast(qt_engine_ctx *e, int il, int32_t B) {
    const int32_t hkv = e->hp.n_head_kv;
    int64_t *prefix = e->attn_prefix;
    for (int32_t b0 = 0, b1; b0 < B; b0 = b1) {
        int64_t total = 0, keys = 0, merge_blocks = 0;
        bool merge = false;
        for (b1 = b0; b1 < B; b1++) {
            const int64_t nb = row_blocks(e->row_pos[b1] + 1);
            if (b1 > b0 && total + hkv * nb > e->attn_cap_items) break;
            prefix[b1 - b0] = total;
            total += hkv * nb;
            keys += e->row_pos[b1] + 1;
            merge |= nb > 1;
            merge_blocks += nb > 1 ? nb : 0;
        }
        prefix[b1 - b0] = total;
        fast_job j = {e, il, b0, prefix, b1 - b0};
        /* small work runs inline: waking the pool costs more than it saves */
        qt_threadpool *pool = keys * e->hp.n_head * e->hp.head_dim < 32768 ? NULL : e->pool;
        qt_parallel_for(pool, total, fast_items, &j);
        /* a decode row's merge (32 heads x up to 16 blocks x 64 floats below 512 keys) is a few
         * microseconds: inline, one pool hand-off per layer less (each item's code is the same) */
        qt_threadpool *mpool = merge_blocks * e->hp.n_head * e->hp.head_dim < 32768 ? NULL : pool;
        if (merge) qt_parallel_for(mpool, (int64_t)(b1 - b0) * e->hp.n_head, merge_items, &j);
    }
}
