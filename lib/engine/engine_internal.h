/* lib/engine/engine_internal.h — the engine object behind qt_engine_ctx.
 *
 * Shapes: B = tokens in the current batch (<= n_batch), n_q = n_head*head_dim,
 * n_kv = n_head_kv*head_dim. Matrices keep ggml's convention: a weight has
 * n_out rows of n_in elements (ne = [n_in, n_out]) and y = W x means
 * y[r] = dot(row r, x).
 */
#ifndef QT_ENGINE_INTERNAL_H
#define QT_ENGINE_INTERNAL_H

#include "quanta/engine.h"
#include "quanta/quant.h"

/* One weight matrix, used in its stored format. */
typedef struct qt__mat {
    const qt_tensor *t;
    const qt_type_traits *tr;   /* the stored type's row of the traits table */
    const uint8_t *data;        /* (n_out, row_bytes): the tensor's, or own_data */
    uint8_t *own_data;          /* F16/BF16 rows copied into huge pages at load (matmul.c), owned; or NULL */
    int64_t n_in, n_out;
    size_t row_bytes;
    /* How rows meet activations (decided once at qt_engine_new):
     * act_type == the stored type's vec_dot_type and dot = its vec_dot, or
     * act_type = f32 and rows dequantized with to_float (dot = f32 kernel). */
    qt_type act_type;
    size_t act_row_bytes;       /* bytes of one activation row converted to act_type */
    float act_static_scale;     /* > 0: activations quantized with this fixed scale (fp8-static's
                                   input_scale, lib/quant/ct_rows.h), else dynamically per row */
    bool dequant_rows;          /* true: to_float each row, dot in f32 */
    qt_vec_dot_fn dot;          /* one activation row (decode) */
    qt_vec_dot_fn dot_batch;    /* two or more rows: llama.cpp's tinyBLAS order where it has one */
    /* Weight-only packed rows (lib/quant/ct4.h, dequant_rows set): one activation row runs these on
     * the packed row (dot's / dot_batch's bits, dequantization fused), batches dequantize per row. */
    qt_vec_dot_fn fused_dot, fused_dot_batch;
    /* the blocked kernel (lib/quant/gemm.h, vec_dot's bits) for act_type == vec_dot_type, or NULL */
    void (*gemm)(const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                 float *out, int64_t ldo);
    bool own_order;             /* gemm is a --numerics fast kernel with its own float order */
    int32_t gemm_min_batch;     /* below this many activation rows, vec_dot per element instead */
    /* --numerics fast on packed rows (lib/quant/gemm.h, x16 layout), preferred over gemm when set:
     * activations are q8s rows (act_row_bytes is theirs), the weights this engine's own copy */
    void (*x16)(const void *wp, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n, float *out,
                int64_t ldo);
    uint8_t *x16_data;          /* (ceil(n_out / 16) groups, x16_group bytes), owned; NULL without x16 */
    size_t x16_group;           /* bytes of one group of 16 packed rows */
    bool act_q8s;               /* x16 formats: q8s activations; false for the k16 K-quants (Q8_K, gemm_k16.h) */
    bool act_f16_f32;           /* F16 rows under --numerics fast: f16-rounded activations kept as f32
                                   (qt__act_f16_f32) for gemm_fast_a32, gemm_fast's bits */
    bool act_ct4_q8;            /* int4 g128 rows under --numerics fast: activations as qt__ct4_q8 rows
                                   (lib/quant/ct4.h), gemm their kernel for every batch */
    bool blas;                  /* f32 values (F32 or weight-only packed rows) bound by a calibration
                                   (qt__layerwise_set_blas): batches go through sgemm (matmul_blas.c) */
} qt__mat;

typedef struct qt__layer {
    float *attn_norm;           /* (n_embd) */
    qt__mat wq, wk, wv;         /* (n_q|n_kv rows, n_embd) */
    float *bq, *bk, *bv;        /* (n_q), (n_kv), (n_kv) or NULL */
    float *q_norm, *k_norm;     /* (head_dim) or NULL: per-head RMSNorm (qwen3) */
    qt__mat wo;                 /* (n_embd rows, n_q) */
    float *bo;                  /* (n_embd) or NULL */
    float *ffn_norm;            /* (n_embd) */
    qt__mat w_gate, w_up;       /* (n_ff rows, n_embd) */
    qt__mat w_down;             /* (n_embd rows, n_ff) */
    float *b_gate, *b_up;       /* (n_ff) or NULL: Llama's mlp_bias */
    float *b_down;              /* (n_embd) or NULL */
} qt__layer;

/* A KV cache storage format: element codec and, for scaled formats, the
 * largest representable magnitude (scale = absmax / max_value on the fly). */
typedef struct qt__kv_format {
    const char *name;
    qt_kv_type dtype;
    size_t elem_bytes;
    bool scaled;
    float max_value;
    /* The ggml type with the same bits (f32, f16, bf16) or QT_TYPE_COUNT:
     * with activation quantization on, Q is converted to it and dotted with
     * K rows in place, as llama.cpp's KQ matmul does. */
    qt_type ggml_type;
    void (*store)(const float *x, void *dst, int64_t n, float scale);
    void (*load)(const void *src, float *dst, int64_t n, float scale);
} qt__kv_format;

const qt__kv_format *qt__kv_format_get(qt_kv_type d);

/* Per-thread scratch, sized at creation. */
typedef struct qt__scratch {
    float *row;                 /* (max n_in) a dequantized weight row */
    float *kv_row;              /* (head_dim) a K or V row loaded from the cache */
    void *q_conv;               /* (head_dim) Q converted to the K cache type */
    float *acc;                 /* (head_dim) attention output accumulator */
} qt__scratch;

struct qt_engine_ctx {
    const qt_model *model;
    qt_hparams hp;
    qt_engine_opts opts;
    int32_t n_ctx, n_batch, n_q, n_kv, n_rep; /* n_rep = n_head / n_head_kv (GQA) */
    int32_t n_past;             /* positions held by KV slot 0 (the single-sequence API's) */
    int32_t n_seq;              /* KV slots, one per sequence (qt_engine_opts.n_seq) */
    int32_t n_rows;             /* most rows in one forward batch: n_batch + n_seq - 1 (batch.c) */
    int32_t *seq_len;           /* (n_seq) positions held by slots 1.. (slot 0: n_past) */
    float kq_scale;             /* 1/sqrt(head_dim) */

    /* weights */
    qt__mat tok_embd;           /* (n_vocab rows, n_embd): rows read with to_float */
    qt__layer *layers;          /* (n_layer) */
    float *out_norm;            /* (n_embd) */
    qt__mat output;             /* (n_vocab rows, n_embd); token_embd when tied */
    bool output_tied;

    /* rotary tables, computed as ggml's rope does (theta = p * base^(-2i/n_rot) by
     * repeated multiplication, divided by the llama3 frequency factors) */
    float *rope_cos, *rope_sin; /* (n_ctx, n_rot/2) */

    /* KV cache */
    const qt__kv_format *kvf;
    uint8_t *k_cache, *v_cache; /* (n_layer, n_seq, n_ctx, n_head_kv, head_dim) elements */
    size_t kv_slot_bytes;       /* n_ctx * n_kv * elem_bytes: one sequence's rows of one layer */
    size_t kv_layer_bytes;      /* n_seq * kv_slot_bytes */
    float *k_scale, *v_scale;   /* (n_layer, n_head_kv) dequantization multipliers, or NULL */
    qt_kv_scale_source scale_source; /* resolved: FILE, ONE or DYNAMIC */
    bool scales_ready;          /* DYNAMIC scales computed (first batch) */
    bool scales_from_meta;      /* FILE: from quanta.kv_cache.* metadata, not blk.N.attn_k_scale tensors */

    /* --numerics fast attention (attn.c), sized at creation */
    const struct qt__attn_kernels *attn; /* this CPU's kernels for the cache format */
    int64_t attn_cap_items;     /* partial states one wave of rows may hold, in (row, KV head, block) items */
    float *attn_parts;          /* (attn_cap_items, n_rep, 2 + head_dim) per query head: max, sum, acc */
    int64_t *attn_prefix;       /* (n_rows + 1) first item of each row of a wave */
    float *attn_scores;         /* (n_threads, QT_ATTN_BLOCK) one block's scores, then weights */

    /* activations of one batch (B <= n_rows rows): x holds the whole batch, the others one
     * chunk of it (qt__engine_chunk_rows: at most QT__CHUNK_ROWS + 1 rows but for observers and
     * on-the-fly KV scales, hence sized n_rows; a chunk touches only its rows' pages) */
    float *x;                   /* (n_rows, n_embd) residual stream */
    float *xb;                  /* (n_rows, n_embd) normed input of a sub-layer */
    float *xb2;                 /* (n_rows, n_embd) sub-layer output */
    float *q;                   /* (n_rows, n_q) */
    float *k, *v;               /* (n_rows, n_kv) */
    float *att;                 /* (n_rows, n_q) attention output */
    float *hb, *hb2;            /* (n_rows, n_ff) */
    void *act;                  /* (n_rows, act_row_cap) activations converted for vec_dot */
    size_t act_row_cap;         /* bytes of one act row: the largest act_row_bytes, at least n_in f32 */
    /* where each row of the batch belongs (qt__engine_rows_single, or batch.c for several sequences) */
    /* (during qt__engine_layer row_pos, row_seq and gemm_rows point at the current chunk's rows) */
    int32_t *row_pos;           /* (n_rows) the row's position in its sequence */
    int32_t *row_seq;           /* (n_rows) the row's KV slot */
    uint8_t *row_gemm;          /* (n_rows) batch.c: 1 when the row's sequence has 2+ rows in the batch */
    /* The kernel each activation row of the next matmuls takes: NULL: the batch
     * kernels (dot_batch) for every row when B >= 2, else the decode kernel (one
     * sequence, as llama.cpp); else gemm_rows[b] != 0 picks dot_batch for row b. */
    const uint8_t *gemm_rows;
    qt__scratch *scratch;       /* (n_threads) */
    float *blas_w;              /* (n_threads, QT__BLAS_ROWS, blas_w_n) dequantized rows for matmul_blas.c, or NULL */
    int64_t blas_w_n;           /* the widest row blas_w holds: the layer's largest n_in */
    int n_threads;
    qt_threadpool *pool;

    /* the calibration seam (layerwise.c): called before every linear of a layer with its
     * input rows; NULL in ordinary evaluation */
    qt_linear_observer observer;
    void *observer_user;
    bool observe_output;             /* qt_layerwise_logits_observed: the output projection too */
    bool observe_only;               /* qt_layerwise_observe_layer: the layer's outputs are not kept, so it
                                        stops once the observer has seen ffn_down's input */
    qt_kv_observer kv_observer;      /* K (after RoPE) and V rows before the cache stores them, or NULL */
    void *kv_observer_user;

    char describe[1024];
};

/* lib/engine/weights.c: bind and check every tensor; free what was allocated. */
qt_status qt__engine_bind_weights(qt_engine_ctx *e);
/* Rebinds the token embedding (same shape, a type with a dequantizer; t outlives the use):
 * --sensitivity measured. QT_ERR_UNSUPPORTED when it is also the (tied) output. */
qt_status qt__engine_set_token_embd(qt_engine_ctx *e, const qt_tensor *t);
void qt__engine_free_weights(qt_engine_ctx *e);

/* lib/engine/kv.c: allocate the cache and resolve its scales. */
qt_status qt__engine_kv_init(qt_engine_ctx *e);
void qt__engine_kv_free(qt_engine_ctx *e);
/* Writes K and V of batch rows [0, B) at their slots and positions (row_seq, row_pos) of layer il
 * (computing on-the-fly scales first if they are still pending). */
void qt__engine_kv_store(qt_engine_ctx *e, int il, int32_t B);
void qt__engine_kv_finish_batch(qt_engine_ctx *e);

/* lib/engine/attn.c: the --numerics fast attention of batch rows [0, B) at layer il
 * (heads x key blocks across threads), and its buffers (called by kv_init / kv_free). */
void qt__attn_fast(qt_engine_ctx *e, int il, int32_t B);
qt_status qt__attn_init(qt_engine_ctx *e);
void qt__attn_free(qt_engine_ctx *e);

/* lib/engine/matmul_blas.c: the calibration's sgemm path for f32 weight values (mats with blas set):
 * units of QT__BLAS_ROWS output rows, each one single-threaded sgemm; small: on this thread. */
#define QT__BLAS_ROWS 128
void qt__matmul_blas(qt_engine_ctx *e, float *out, const float *in, int32_t B, const qt__mat *m, bool small);
/* Whether t's rows are f32 values matmul_blas.c can take: F32, or weight-only packed rows with f32 activations. */
bool qt__mat_blas_type(qt_type t);
/* lib/engine/layerwise.c: from now on, linears bound by qt_layerwise_set_weight with f32 values
 * (qt__mat_blas_type) take the sgemm path for batches; the model's own tensors keep their kernels. */
qt_status qt__layerwise_set_blas(qt_layerwise *lw, bool on);
/* Sequence s's residual stream (n_tok, n_embd), the input of layer qt_layerwise_next_layer (NULL: no such sequence). */
float *qt__layerwise_hidden(qt_layerwise *lw, int32_t s);
/* Sequence s's residual stream set to `hidden` (n_tok, n_embd), the input of `layer` (n_layer: of the logits),
 * which runs next: a run resumed where another one's stream was kept (lib/quantize/mix_measure.c). With more
 * than one sequence the others must hold that layer's input too. */
qt_status qt__layerwise_resume(qt_layerwise *lw, int32_t s, const float *hidden, int32_t layer);

/* lib/engine/matmul.c: out (B, m->n_out) = in (B, m->n_in) x W^T, threaded over rows. */
void qt__matmul(qt_engine_ctx *e, float *out, const float *in, int32_t B, const qt__mat *m);
/* n matmuls of the same input rows: outs[i] = ms[i] in, the conversion of `in` shared where formats agree. */
void qt__matmul_shared(qt_engine_ctx *e, const float *in, int32_t B, int n, float *const outs[], const qt__mat *const ms[]);
/* Fill a qt__mat from a tensor with ne = [n_in, n_out] (checked by the caller);
 * QT_NUMERICS_FAST lets it take a kernel with its own float order. */
qt_status qt__mat_init(qt__mat *m, const qt_tensor *t, bool act_quant, qt_numerics numerics);
/* The same, packing (x16 / k16) on pool's threads (NULL: this thread); the same bytes either way.
 * drop_from (may be NULL): the model whose file pages of t are dropped slice by slice as they are
 * packed (qt__model_drop_pages), so the copy replaces them rather than sitting beside them.
 * copy_f16: F16/BF16 rows in drop_from's mapping copied into huge pages (false: kept mapped,
 * qt_engine_opts.keep_mapped). */
qt_status qt__mat_init_pool(qt__mat *m, const qt_tensor *t, bool act_quant, qt_numerics numerics, qt_threadpool *pool,
                            const qt_model *drop_from, bool copy_f16);
/* Free what qt__mat_init allocated (the packed copy); the mat is then empty. */
void qt__mat_free(qt__mat *m);
/* After packing: drop the source tensor's whole pages from memory (for a read-only
 * file mapping only: they read back from the file if touched), so the packed
 * copy does not double the resident weights. No-op without a packed copy. */
void qt__mat_drop_source(const qt__mat *m, const qt_model *model);

/* lib/engine/forward.c */
qt_status qt__engine_forward(qt_engine_ctx *e, const int32_t *tokens, int32_t B, int32_t first_logit, float *logits);
/* The pieces of one forward pass, for layerwise.c: embed B tokens into e->x, run
 * decoder layer il on e->x (rows placed by row_pos/row_seq), and logits of rows of x. */
void qt__engine_embed(qt_engine_ctx *e, const int32_t *tokens, int32_t B);
void qt__engine_layer(qt_engine_ctx *e, int il, int32_t B);
/* Rows per chunk a layer takes a batch of B rows in (forward.c): QT__CHUNK_ROWS, or B
 * where the whole batch must be seen at once (observers, scales computed on the fly). */
#define QT__CHUNK_ROWS 64
int32_t qt__engine_chunk_rows(const qt_engine_ctx *e, int32_t B);
/* Rows [0, B) are one sequence in slot 0 at positions n_past.. (the single-sequence API). */
void qt__engine_rows_single(qt_engine_ctx *e, int32_t B);
void qt__engine_logits(qt_engine_ctx *e, const float *x, int32_t n, float *logits);
/* softmax(q K^T / sqrt(head_dim)) V for rows [0, B) from layer il's cache into e->att:
 * --numerics llama in ggml's order (one thread per row and head), fast split-K (attn.c). */
void qt__engine_attention(qt_engine_ctx *e, int il, int32_t B);

/* The attention's value update, acc[d] = fmaf(v[d], w, acc[d]) for d < n
 * (forward.c): the scalar reference, and the AVX2 + FMA kernel (attn_axpy_avx2.c),
 * equal bit for bit (one rounding per element either way). */
void qt__attn_axpy_ref(float *acc, const float *v, float w, int32_t n);
void qt__attn_axpy_avx2(float *acc, const float *v, float w, int32_t n);
/* SwiGLU of one row, g = silu(g) * u in llama.cpp's AVX-512 order (forward.c): the scalar
 * reference, and the AVX-512F kernel (swiglu_avx512.c) with its bits. */
void qt__swiglu_ref(float *g, const float *u, int64_t n);
void qt__swiglu_avx512(float *g, const float *u, int64_t n);

#endif
