/* lib/engine/forward.c — the transformer forward pass for one batch.
 *
 * Read top to bottom it is the Llama block (llama2.c's run.c, batched):
 *
 *   x = embed(tokens)
 *   for each layer:
 *     h = rmsnorm(x) * attn_norm
 *     q, k, v = Wq h (+bq), Wk h (+bk), Wv h (+bv)       qwen2 adds the biases
 *     q, k = rmsnorm_per_head(q) * q_norm, ...            qwen3 only
 *     q, k = rope(q, pos), rope(k, pos)                   pairs or halves (hp.rope_neox)
 *     cache[pos] = k, v                                   in the KV cache's format
 *     a = softmax(q K^T / sqrt(head_dim), causal) V       GQA: n_rep query heads per KV head
 *     x = x + Wo a
 *     h = rmsnorm(x) * ffn_norm
 *     x = x + W_down (silu(W_gate h) * W_up h)            SwiGLU (+ biases: Llama's mlp_bias)
 *   logits = W_out (rmsnorm(x) * output_norm)
 *
 * Architecture differences are flags in qt_hparams (data from the arch table
 * and the file), never tests of the architecture's name. The numerics mirror
 * ggml's CPU ops (its x86-64 AVX-512 build) where that matters for agreement
 * with llama.cpp: RMSNorm's sum of squares in double, rope angles by repeated
 * multiplication, SwiGLU's vectorised expf, the dot orders of lib/quant/dot.c,
 * and ggml's flash-attention order (Q rounded to f16 and an f16 value
 * accumulator against an f16 KV cache). With these the F32 stories260K logits
 * are bit-identical to llama.cpp's reference file.
 */
#include <math.h>
#include <string.h>

#include "core/cpu_level.h"
#include "quant/dot.h"
#include "engine_internal.h"
#include "model/model_internal.h"
#include "quanta/num.h"

/* ggml_compute_forward_rms_norm_f32 followed by ggml_mul with the weight. */
static void rmsnorm(float *out, const float *x, const float *w, int32_t n, float eps) {
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / n);
    const float scale = 1.0f / sqrtf(mean + eps);
    for (int32_t i = 0; i < n; i++) out[i] = (x[i] * scale) * w[i];
}

static void add_bias(float *x, const float *bias, int32_t B, int32_t n) {
    if (!bias) return;
    for (int32_t b = 0; b < B; b++)
        for (int32_t i = 0; i < n; i++) x[(size_t)b * n + i] += bias[i];
}

/* Rotates each head of rows (B, n_heads*head_dim) by its token's position.
 * NORM convention (GGUF llama): pairs (2i, 2i+1); NEOX (HF layout, qwen):
 * pairs (i, i + n_rot/2). Dims past n_rot are left alone. The products are
 * grouped as llama.cpp's x86 build computes them (x0's product fused with the
 * subtraction/addition, x1's rounded first), which matters once K is rounded
 * to f16 in the cache. */
static void rope(const qt_engine_ctx *e, float *rows, int32_t B, int32_t n_heads) {
    const int32_t hd = e->hp.head_dim, half = e->hp.n_rot / 2;
    const int32_t stride = e->hp.rope_neox ? 1 : 2, other = e->hp.rope_neox ? half : 1;
    for (int32_t b = 0; b < B; b++) {
        const float *cs = e->rope_cos + (size_t)e->row_pos[b] * half;
        const float *sn = e->rope_sin + (size_t)e->row_pos[b] * half;
        for (int32_t h = 0; h < n_heads; h++) {
            float *v = rows + ((size_t)b * n_heads + h) * hd;
            for (int32_t i = 0; i < half; i++) {
                float *p0 = v + i * stride, *p1 = p0 + other;
                const float x0 = *p0, x1 = *p1;
                *p0 = fmaf(cs[i], x0, -(x1 * sn[i]));
                *p1 = fmaf(sn[i], x0, x1 * cs[i]);
            }
        }
    }
}

/* qwen3: RMSNorm over each head's head_dim values, one weight shared by all heads. */
static void head_norm(const qt_engine_ctx *e, float *rows, int32_t B, int32_t n_heads, const float *w) {
    if (!w) return;
    const int32_t hd = e->hp.head_dim;
    for (int64_t i = 0; i < (int64_t)B * n_heads; i++) rmsnorm(rows + i * hd, rows + i * hd, w, hd, e->hp.rms_eps);
}

/* ---- attention ------------------------------------------------------------------ */

/* The float nearest x among f16 values (round to nearest even, overflow to
 * infinity): f16(x) widened back, without the round trip through 16 bits. */
static inline float round_to_f16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    const uint32_t a = u & 0x7fffffffu;
    if (a >= 0x477ff000u) { /* >= 65520 (rounds to Inf), Inf or NaN: the exact converter */
        return qt_fp16_to_f32(qt_f32_to_fp16(x));
    }
    if (a < 0x38800000u) { /* below 2^-14: f16 subnormals are multiples of 2^-24 */
        const float c = x < 0 ? -0.5f : 0.5f; /* ulp(0.5) = 2^-24 */
        const float r = (x + c) - c;
        return r == 0.0f ? (x < 0 ? -0.0f : 0.0f) : r;
    }
    u += 0x0fffu + ((u >> 13) & 1u); /* keep 10 mantissa bits, ties to even */
    u &= 0xffffe000u;
    float r;
    memcpy(&r, &u, 4);
    return r;
}

void qt__attn_axpy_ref(float *acc, const float *v, float w, int32_t n) {
    for (int32_t d = 0; d < n; d++) acc[d] = fmaf(v[d], w, acc[d]);
}

typedef void (*attn_axpy_fn)(float *acc, const float *v, float w, int32_t n);

typedef struct attn_job {
    qt_engine_ctx *e;
    int il;
    int32_t B;
} attn_job;

/* One (token, query head) pair per item, computed the way ggml's CPU flash
 * attention (ggml_compute_forward_flash_attn_ext_f16_one_chunk, which
 * llama.cpp runs by default) does: Q converted to the K cache's type, one
 * score per cached key up to the token's own position (s = dot * scale), an
 * online softmax (running max M and sum S, rescaling by expf(M_old - M)), and
 * a value accumulator that is f16 when the V cache is f16 (each update
 * rounded: acc = f16(fma(v, w, acc))) and f32 otherwise; finally acc * (1/S).
 * Where the C source leaves `a*b + c` to the compiler, the reference build
 * fused it (the accumulator update and S); a build that does not fuse S
 * (node-llama-cpp 3.21.1's) parts from the reference file at the first
 * position where a running maximum is replaced.
 * With --act-quant off, Q stays f32 against dequantized keys and the
 * accumulator is always f32. */
static void attention_items(void *ctx, int64_t i0, int64_t i1, int ti) {
    const attn_job *j = ctx;
    qt_engine_ctx *e = j->e;
    qt__scratch *sc = &e->scratch[ti];
    const int32_t hd = e->hp.head_dim, n_head = e->hp.n_head, hkv = e->hp.n_head_kv;
    const qt__kv_format *f = e->kvf;
    const size_t eb = f->elem_bytes, row_stride = (size_t)e->n_kv * eb;
    const bool llama_numerics = !e->opts.act_quant_off;
    /* K rows are dotted in place when Q can be converted to their type (f32, f16, bf16) */
    const bool k_in_place = f->ggml_type != QT_TYPE_COUNT && (llama_numerics || f->ggml_type == QT_TYPE_F32);
    const qt_vec_dot_fn kdot = qt_type_get(k_in_place ? f->ggml_type : QT_TYPE_F32)->vec_dot;
    const bool acc_f16 = llama_numerics && f->dtype == QT_KV_TYPE_F16;
#if QT_ARCH_X86
    const attn_axpy_fn axpy = qt__cpu_level_get() >= QT__CPU_AVX2 ? qt__attn_axpy_avx2 : qt__attn_axpy_ref;
#else
    const attn_axpy_fn axpy = qt__attn_axpy_ref;
#endif

    for (int64_t it = i0; it < i1; it++) {
        const int32_t b = (int32_t)(it / n_head), h = (int32_t)(it % n_head), kvh = h / e->n_rep;
        const int32_t n_keys = e->row_pos[b] + 1; /* causal: keys 0 .. own position, own sequence */
        const float ks = e->k_scale ? e->k_scale[j->il * hkv + kvh] : 1.0f;
        const float vs = e->v_scale ? e->v_scale[j->il * hkv + kvh] : 1.0f;
        const float *q = e->q + (size_t)b * e->n_q + (size_t)h * hd;
        const void *qv = q;
        if (k_in_place && f->ggml_type != QT_TYPE_F32) {
            qt__act_quantize(f->ggml_type, q, sc->q_conv, hd);
            qv = sc->q_conv;
        }
        const size_t base = (size_t)j->il * e->kv_layer_bytes + (size_t)e->row_seq[b] * e->kv_slot_bytes + (size_t)kvh * hd * eb;
        const uint8_t *krow = e->k_cache + base, *vrow = e->v_cache + base;
        float S = 0.0f, M = -INFINITY;
        for (int32_t d = 0; d < hd; d++) sc->acc[d] = 0.0f;

        for (int32_t p = 0; p < n_keys; p++, krow += row_stride, vrow += row_stride) {
            float s;
            if (k_in_place) {
                s = kdot(krow, qv, hd);
            } else {
                f->load(krow, sc->kv_row, hd, ks);
                s = kdot(sc->kv_row, q, hd);
            }
            s *= e->kq_scale;
            float ms = 1.0f, w = 1.0f; /* rescale of the old state, weight of this value */
            if (s > M) {
                ms = expf(M - s);
                M = s;
            } else {
                w = expf(s - M);
            }
            if (acc_f16) { /* acc holds f16 values (ggml's VKQ16), each update rounded */
                if (ms != 1.0f)
                    for (int32_t d = 0; d < hd; d++) sc->acc[d] = round_to_f16(sc->acc[d] * ms);
                f->load(vrow, sc->kv_row, hd, vs);
                for (int32_t d = 0; d < hd; d++) sc->acc[d] = round_to_f16(fmaf(sc->kv_row[d], w, sc->acc[d]));
            } else {
                if (ms != 1.0f)
                    for (int32_t d = 0; d < hd; d++) sc->acc[d] *= ms;
                f->load(vrow, sc->kv_row, hd, vs);
                axpy(sc->acc, sc->kv_row, w, hd);
            }
            S = fmaf(S, ms, w); /* `S = S*ms + vs`, contracted to an FMA by the compiler */
        }
        const float inv = S == 0.0f ? 0.0f : 1.0f / S;
        float *out = e->att + (size_t)b * e->n_q + (size_t)h * hd;
        for (int32_t d = 0; d < hd; d++) out[d] = sc->acc[d] * inv;
    }
}

void qt__engine_attention(qt_engine_ctx *e, int il, int32_t B) {
    if (e->opts.numerics == QT_NUMERICS_FAST) { /* split-K over the stored cache (attn.c) */
        qt__attn_fast(e, il, B);
        return;
    }
    attn_job j = {e, il, B};
    int64_t keys = 0;
    for (int32_t b = 0; b < B; b++) keys += e->row_pos[b] + 1;
    const int64_t work = keys * e->hp.n_head * e->hp.head_dim;
    qt_parallel_for(work < 32768 ? NULL : e->pool, (int64_t)B * e->hp.n_head, attention_items, &j);
}

/* ---- the block ------------------------------------------------------------------- */

/* ggml_v_expf as llama.cpp's AVX-512 build evaluates it (vec.h, after ARM's
 * optimized-routines expf; max error 1.45 ulp + 0.5): x = n ln2 + b with
 * n = round(x / ln2), a degree-5 polynomial in b, scaled by 2^n (scalef).
 * swiglu_avx512.c takes the same steps 16 at a time. */
static float expf_ggml_avx512(float x) {
    const float shift = 0x1.8p23f;
    const float n = fmaf(x, 0x1.715476p+0f, shift) - shift;
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                         fmaf(0x1.ffffecp-1f, b, 1.0f));
    if (fabsf(n) > 192.0f) return n <= 0.0f ? 0.0f : INFINITY;
    return ldexpf(j, (int)n);
}

/* SwiGLU of one row: silu(gate) * up, silu(x) = x / (1 + exp(-x)).
 * ggml_vec_swiglu_f32 (AVX-512) takes 16 elements at a time through
 * expf_ggml_avx512 and the last n % 16 through the C library's expf. */
void qt__swiglu_ref(float *g, const float *u, int64_t n) {
    const int64_t n_vec = n - n % 16;
    int64_t i = 0;
    for (; i < n_vec; i++) g[i] = (g[i] / (1.0f + expf_ggml_avx512(0.0f - g[i]))) * u[i];
    for (; i < n; i++) g[i] = (g[i] / (1.0f + expf(-g[i]))) * u[i];
}

typedef struct swiglu_job {
    float *g;                   /* (rows, n): gate in, result out */
    const float *u;             /* (rows, n) */
    int64_t n;
} swiglu_job;

static void swiglu_rows(void *ctx, int64_t r0, int64_t r1, int ti) {
    (void)ti;
    const swiglu_job *j = ctx;
#if QT_ARCH_X86
    const bool v512 = qt__cpu_level_get() >= QT__CPU_AVX512;
#endif
    for (int64_t r = r0; r < r1; r++) {
#if QT_ARCH_X86
        if (v512) {
            qt__swiglu_avx512(j->g + r * j->n, j->u + r * j->n, j->n);
            continue;
        }
#endif
        qt__swiglu_ref(j->g + r * j->n, j->u + r * j->n, j->n);
    }
}

/* Rows split over the pool: each element's result is the same whoever computes it. */
static void swiglu(qt_engine_ctx *e, float *g, const float *u, int64_t rows, int64_t n) {
    swiglu_job j = {g, u, n};
    qt_parallel_for(rows * n < 32768 ? NULL : e->pool, rows, swiglu_rows, &j);
}

static void residual_add(float *x, const float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] += y[i];
}

/* The calibration seam: a linear's input rows, before its matmul (layerwise.c). */
static void observe(const qt_engine_ctx *e, int il, const char *linear, const float *x, int32_t B, int32_t n_in) {
    if (e->observer) e->observer(e->observer_user, il, linear, x, B, n_in);
}

/* gate/up, SwiGLU, down and the residual for the n rows of x (the chunk's rows of
 * e->x), their normed input in e->xb. True: observe_only stopped it. */
static bool ffn_rows(qt_engine_ctx *e, const qt__layer *L, int il, float *x, int32_t n) {
    const int32_t n_embd = e->hp.n_embd;
    for (int32_t b = 0; b < n; b++)
        rmsnorm(e->xb + (size_t)b * n_embd, x + (size_t)b * n_embd, L->ffn_norm, n_embd, e->hp.rms_eps);
    observe(e, il, "ffn_gate", e->xb, n, n_embd);
    observe(e, il, "ffn_up", e->xb, n, n_embd);
    qt__matmul_shared(e, e->xb, n, 2, (float *const[]){e->hb, e->hb2}, (const qt__mat *const[]){&L->w_gate, &L->w_up});
    add_bias(e->hb, L->b_gate, n, e->hp.n_ff);
    add_bias(e->hb2, L->b_up, n, e->hp.n_ff);
    swiglu(e, e->hb, e->hb2, n, e->hp.n_ff);
    observe(e, il, "ffn_down", e->hb, n, e->hp.n_ff);
    if (e->observe_only) return true; /* e->x is not this layer's output: nobody reads it */
    qt__matmul(e, e->xb2, e->hb, n, &L->w_down);
    add_bias(e->xb2, L->b_down, n, n_embd);
    residual_add(x, e->xb2, (int64_t)n * n_embd);
    return false;
}

/* The attention half for the n rows of x: their q, k, v, rope, the cache store
 * (rows placed by row_pos / row_seq, already pointing at the chunk), attention
 * over everything the cache holds up to each row, Wo and the residual. */
static void attn_rows(qt_engine_ctx *e, const qt__layer *L, int il, float *x, int32_t n) {
    const int32_t n_embd = e->hp.n_embd;
    for (int32_t b = 0; b < n; b++)
        rmsnorm(e->xb + (size_t)b * n_embd, x + (size_t)b * n_embd, L->attn_norm, n_embd, e->hp.rms_eps);
    observe(e, il, "attn_q", e->xb, n, n_embd);
    observe(e, il, "attn_k", e->xb, n, n_embd);
    observe(e, il, "attn_v", e->xb, n, n_embd);
    qt__matmul_shared(e, e->xb, n, 3, (float *const[]){e->q, e->k, e->v}, (const qt__mat *const[]){&L->wq, &L->wk, &L->wv});
    add_bias(e->q, L->bq, n, e->n_q);
    add_bias(e->k, L->bk, n, e->n_kv);
    add_bias(e->v, L->bv, n, e->n_kv);
    head_norm(e, e->q, n, e->hp.n_head, L->q_norm);
    head_norm(e, e->k, n, e->hp.n_head_kv, L->k_norm);
    rope(e, e->q, n, e->hp.n_head);
    rope(e, e->k, n, e->hp.n_head_kv);
    qt__engine_kv_store(e, il, n);
    qt__engine_attention(e, il, n);
    observe(e, il, "attn_output", e->att, n, e->n_q);
    qt__matmul(e, e->xb2, e->att, n, &L->wo);
    add_bias(e->xb2, L->bo, n, n_embd);
    residual_add(x, e->xb2, (int64_t)n * n_embd);
}

int32_t qt__engine_chunk_rows(const qt_engine_ctx *e, int32_t B) {
    /* an observer sees a linear's whole batch at once; the KV observer and scales computed
     * on the fly (absmax of the first batch) need every row's K and V of the layer together */
    if (e->observer || e->kv_observer || !e->scales_ready) return B;
    return B < QT__CHUNK_ROWS ? B : QT__CHUNK_ROWS;
}

void qt__engine_layer(qt_engine_ctx *e, int il, int32_t B) {
    const qt__layer *L = &e->layers[il];
    const int32_t n_embd = e->hp.n_embd;
    /* Rows of a long batch go through the layer in chunks of QT__CHUNK_ROWS (the F16 and
     * x16 kernels' 64-row activation panel, so no weight is streamed more often than in
     * one batch): a chunk's K and V reach the cache before its attention, which reads the
     * earlier chunks' there, so each row sees exactly the keys it sees in one batch, and
     * every kernel's bits for a row are independent of the rows beside it (a chunk is
     * never one row, whose F16 llama order would be decode's). Only e->x holds the whole
     * batch; every other buffer holds one chunk, so a 512-token prompt touches 64 rows of
     * them (calloc's untouched pages stay unmapped; docs/performance.md, the table of
     * buffers). row_pos / row_seq / gemm_rows point at the chunk's rows meanwhile. */
    const int32_t chunk = qt__engine_chunk_rows(e, B);
    int32_t *const pos = e->row_pos, *const seq = e->row_seq;
    const uint8_t *const rows_kernel = e->gemm_rows;
    for (int32_t b0 = 0; b0 < B;) {
        int32_t n = B - b0 <= chunk ? B - b0 : chunk;
        if (B - b0 - n == 1) n++; /* never a last chunk of one row */
        e->row_pos = pos + b0;
        e->row_seq = seq + b0;
        if (rows_kernel) e->gemm_rows = rows_kernel + b0;
        float *x = e->x + (size_t)b0 * n_embd;
        attn_rows(e, L, il, x, n);
        const bool stop = ffn_rows(e, L, il, x, n);
        b0 += n;
        if (stop) break;
    }
    e->row_pos = pos;
    e->row_seq = seq;
    e->gemm_rows = rows_kernel;
}

/* Fault-around: a read fault on a file mapping maps the page-cache pages of
 * the aligned 64 KiB around it (Linux's default fault_around_bytes), and where the
 * file's page cache holds large folios (ext4 on Linux 6.18 here) a whole folio, up
 * to a 2 MiB PMD: dropping only 64 KiB left 11 MiB of a Q6_K embedding resident
 * after a 512-token prompt, the aligned 2 MiB leaves none (pagemap at peak RSS). */
#define EMBED_DROP_WINDOW ((size_t)2 << 20)

void qt__engine_embed(qt_engine_ctx *e, const int32_t *tokens, int32_t B) {
    const int32_t n_embd = e->hp.n_embd;
    const qt__mat *emb = &e->tok_embd;
    /* Nothing else reads the embedding's mapped pages when it is untied or its
     * tied output runs on a packed copy (qt__mat_drop_source dropped them at
     * load): each looked-up row's pages are dropped again, so a prompt's
     * lookups do not fault the table back into RSS. A tied output that reads
     * the file's rows keeps them resident, unless the caller keeps the weights
     * mapped (keep_mapped: a calibration, which computes no logits, or few). */
    const bool drop = e->model && (e->output.data != emb->data || e->output.x16_data || e->opts.keep_mapped);
    const size_t table = (size_t)emb->n_out * emb->row_bytes;
    for (int32_t b = 0; b < B; b++) {
        const uint8_t *row = emb->data + (size_t)tokens[b] * emb->row_bytes;
        emb->tr->to_float(row, e->x + (size_t)b * n_embd, n_embd);
        if (drop) qt__model_drop_window(e->model, row, emb->row_bytes, emb->data, table, EMBED_DROP_WINDOW);
    }
}

void qt__engine_logits(qt_engine_ctx *e, const float *x, int32_t n, float *logits) {
    const int32_t n_embd = e->hp.n_embd;
    for (int32_t b = 0; b < n; b++)
        rmsnorm(e->xb + (size_t)b * n_embd, x + (size_t)b * n_embd, e->out_norm, n_embd, e->hp.rms_eps);
    if (e->observe_output) observe(e, -1, "output", e->xb, n, n_embd);
    if (!logits) return; /* observed only (qt_layerwise_logits_observed) */
    qt__matmul(e, logits, e->xb, n, &e->output);
}

void qt__engine_rows_single(qt_engine_ctx *e, int32_t B) {
    for (int32_t b = 0; b < B; b++) {
        e->row_pos[b] = e->n_past + b;
        e->row_seq[b] = 0;
    }
    e->gemm_rows = NULL;
}

qt_status qt__engine_forward(qt_engine_ctx *e, const int32_t *tokens, int32_t B, int32_t first_logit, float *logits) {
    qt__engine_rows_single(e, B);
    qt__engine_embed(e, tokens, B);
    for (int il = 0; il < e->hp.n_layer; il++) {
        if (qt_cancelled()) return qt_error(QT_ERR_INTERRUPTED, "evaluation interrupted");
        qt__engine_layer(e, il, B);
    }
    qt__engine_kv_finish_batch(e);
    e->n_past += B;

    if (logits && first_logit < B)
        qt__engine_logits(e, e->x + (size_t)first_logit * e->hp.n_embd, B - first_logit, logits);
    return QT_OK;
}
