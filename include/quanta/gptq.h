/* quanta/gptq.h — GPTQ's numeric core (Frantar, Ashkboos, Hoefler, Alistarh,
 * "GPTQ: Accurate Post-Training Quantization for Generative Pre-trained
 * Transformers", ICLR 2023, arXiv:2210.17323) as pure functions on plain
 * arrays, and the target grids it rounds onto (lib/quant/gptq.c,
 * lib/quant/gptq_grid.c; docs/gptq.md).
 *
 * A linear y = W x with W (rows = out features, cols = in features), row-major.
 *   H = 2 X^T X / n over the n calibration rows x of its input (float BLAS syrk/gemm per chunk of 512 rows, the chunks added in double).
 *   Damping: H_ii += damp_frac * mean(diag H) (llm-compressor's dampening_frac 0.01).
 *   Dead columns (H_ii == 0: an input that never saw a non-zero value): H_ii = 1
 *   and W[:, i] = 0, as llm-compressor does.
 *   U = upper Cholesky factor of H^-1 (LAPACKE dpotrf and dtrtri of H with its
 *   order reversed: P L^-1 P, P the exchange matrix).
 *   Columns in order (or by decreasing H_ii with act_order): q = grid(w),
 *   err = (w - q) / U_jj, the later columns of the block of 128 updated at
 *   once, the columns after the block lazily with one GEMM per block.
 * If the Cholesky factorization fails the damping is multiplied by 10 and
 * the factorization retried (stats->retries says how often); after
 * max_retries it is an error. It never falls back to round-to-nearest.
 *
 * Determinism: OpenBLAS is pinned to one thread (openblas_set_num_threads(1))
 * in every call; the Hessian's panels, the inverse Cholesky factor's tiles
 * and the column loop's row panels (64 rows, or the grid's row_block; rows are
 * independent in GPTQ's loop) are split over the caller's pool
 * (qt_gptq_hessian.pool, qt_gptq_opts.pool) in fixed units whose result does
 * not depend on which thread runs them, so results do not depend on any
 * thread count. Across CPUs OpenBLAS may pick other kernels (its own run-time
 * dispatch), so the last bits of H and U, and rarely a rounding decision,
 * can differ between CPU models (docs/gptq.md).
 */
#ifndef QUANTA_GPTQ_H
#define QUANTA_GPTQ_H

#include "core.h"
#include "quant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- target grids ------------------------------------------------------------ *
 * A grid rounds one column of W at a time onto a format whose scales are
 * shared by `group` consecutive columns of a row. begin_group fixes group g's
 * scales for every row from the values the column loop has made of its
 * columns so far (called the first time the loop reaches a column of group g:
 * its first column in natural order); quantize_col then rounds column c with
 * them, writing the dequantized values and remembering the codes. */
typedef struct qt_gptq_grid {
    int64_t group;        /* columns per scale group; divides cols */
    void *ctx;
    /* wg: (rows, group) the group's current values of rows r0..r0+rows-1, row-major */
    qt_status (*begin_group)(void *ctx, const float *wg, int64_t r0, int64_t rows, int64_t g);
    /* w: (rows) column c's current values of rows r0..r0+rows-1; q: (rows) out, their grid values
     * (each row on its own: the column loop may call it on any range of rows) */
    void (*quantize_col)(void *ctx, const float *w, int64_t r0, int64_t rows, int64_t c, float *q);
    /* Rows whose scales begin_group must see together, the ranges it gets starting at a multiple of it:
     * 1 when every row has its own scales, 128 for FP8_BLOCK's 128-row blocks, 0 when a group's scales
     * need every row (FP8_TENSOR). GPTQ's column loop splits the rows into panels of such ranges over
     * its threads (rows are independent in the loop); a grid of one group per row (group == cols) is
     * begun on all rows before the loop, so it splits whatever this says. */
    int64_t row_block;
} qt_gptq_grid;

/* compressed-tensors integer groups (llm-compressor's minmax observer per
 * group, round half to even, every intermediate rounded to the model dtype;
 * ct.h). group == cols is one scale per channel. Codes are kept unpacked
 * (int8, rows x cols), scales and zero points (rows x cols/group). */
typedef struct qt_gptq_ct_int {
    int bits;                /* 4 or 8 */
    bool symmetric;
    int dtype;               /* qt_ct_dtype: the model dtype scales are rounded to */
    int64_t rows, cols, group;
    int8_t *q;               /* (rows, cols) */
    float *scales;           /* (rows, cols / group) */
    int8_t *zero_points;     /* (rows, cols / group), NULL when symmetric */
} qt_gptq_ct_int;

QT_API qt_status qt_gptq_ct_int_init(qt_gptq_ct_int *g, int bits, bool symmetric, int dtype, int64_t rows,
                                     int64_t cols, int64_t group);
QT_API qt_gptq_grid qt_gptq_ct_int_grid(qt_gptq_ct_int *g);
QT_API void qt_gptq_ct_int_free(qt_gptq_ct_int *g);

/* compressed-tensors float formats (ct.h; lib/quant/ct_float.c): begin_group
 * fixes the scales from the group's current values exactly as the RTN codec
 * does, quantize_col rounds each value to the nearest representable one with
 * the codec's arithmetic, so with H = I the codes and scales are the codec's.
 *   FP8_TENSOR  E4M3, one scale (group = cols, all rows): amax / 448, or
 *               `shared` when > 0 (a scale shared with fused shards)
 *   FP8_CHANNEL E4M3, one scale per row (group = cols)
 *   FP8_BLOCK   E4M3, one scale per 128 x 128 block (group = 128 columns;
 *               cols must be a multiple of 128 or at most 128)
 *   NVFP4       E2M1, E4M3 scale per 16, `shared` = the f32 global scale
 *               (required: qt_ct_nvfp4_global_scale of the tensor's amax)
 *   MXFP4       E2M1, E8M0 scale per 32 (bf16 arithmetic) */
typedef enum qt_gptq_float_kind {
    QT_GPTQ_FP8_TENSOR = 0,
    QT_GPTQ_FP8_CHANNEL,
    QT_GPTQ_FP8_BLOCK,
    QT_GPTQ_NVFP4,
    QT_GPTQ_MXFP4,
} qt_gptq_float_kind;

typedef struct qt_gptq_ct_float {
    qt_gptq_float_kind kind;
    int dtype;               /* qt_ct_dtype (MXFP4 computes in bf16 whatever it is) */
    int64_t rows, cols, group;
    uint8_t *q;              /* (rows, cols) E4M3 codes, or E2M1 codes one per byte (qt_ct_pack_fp4 packs) */
    float *scales;           /* FP8: 1, rows, or (ceil(rows / 128), cols / 128) */
    uint8_t *scale_codes;    /* NVFP4: E4M3 (rows, cols / 16); MXFP4: E8M0 (rows, cols / 32) */
    float shared;            /* FP8_TENSOR: the scale (0: from amax); NVFP4: the global scale */
    float *eff;              /* (rows, cols / group) FP4: the scale a code is multiplied by */
} qt_gptq_ct_float;

QT_API qt_status qt_gptq_ct_float_init(qt_gptq_ct_float *g, qt_gptq_float_kind kind, int dtype, int64_t rows,
                                       int64_t cols, float shared);
QT_API qt_gptq_grid qt_gptq_ct_float_grid(qt_gptq_ct_float *g);
QT_API void qt_gptq_ct_float_free(qt_gptq_ct_float *g);

/* A GGUF block type through its traits row: a group is one block (32 or 256
 * columns); begin_group runs the type's own quantizer (from_float, bit-exact
 * with ggml; with importance weights when given) on the block's current
 * values, which chooses its scales (K-quants: the super-block scale and the
 * 6-bit sub-block scales and mins too); quantize_col then sets each code to
 * the nearest value those scales give. `bytes` is the row-major tensor data
 * (rows x row_size) llama.cpp decodes. Types: qt_gptq_gguf_supported. */
typedef struct qt_gptq_gguf {
    qt_type type;
    const qt_type_traits *tr;
    const void *layout;      /* the type's code layout (lib/quant/gptq_grid.c) */
    int64_t rows, cols;
    size_t row_bytes;
    uint8_t *bytes;          /* (rows, row_bytes) */
    float *a, *b;            /* (rows, cols): value of code q = b + a * q, from the chosen scales */
    float *seen;             /* (rows, cols): the value the block quantizer saw */
    int16_t *code;           /* (rows, cols): the code it gave that value */
    const float *importance; /* (cols) or NULL: importance weights for the block quantizer */
} qt_gptq_gguf;

QT_API bool qt_gptq_gguf_supported(qt_type t);
QT_API qt_status qt_gptq_gguf_init(qt_gptq_gguf *g, qt_type t, int64_t rows, int64_t cols, const float *importance);
QT_API qt_gptq_grid qt_gptq_gguf_grid(qt_gptq_gguf *g);
QT_API void qt_gptq_gguf_free(qt_gptq_gguf *g);

/* Round-to-nearest through a grid (every group begun on W as it is):
 * what GPTQ does with H = I. W is replaced by its grid values. */
QT_API qt_status qt_gptq_rtn(float *W, int64_t rows, int64_t cols, const qt_gptq_grid *grid);

/* ---- the Hessian ----------------------------------------------------------------- */
typedef struct qt_gptq_hessian {
    int64_t n;               /* columns (in features) */
    double *s;               /* (n, n) sum of x x^T, upper triangle filled */
    int64_t n_rows;          /* calibration rows added */
    qt_threadpool *pool;     /* set after init, or NULL: the threads that add rows and copy H out (split the
                                same way at any thread count, so S has the same bits) */
    float *scratch;          /* set before an add, or NULL: qt_gptq_hessian_scratch_floats floats of the caller's
                                for the chunks' partial sums (NULL: qt_gptq_hessian_add allocates them per call;
                                a caller adding many batches keeps one buffer instead of faulting in 16 MiB
                                of fresh pages per call for an 8192-wide input on 2 threads) */
} qt_gptq_hessian;

QT_API qt_status qt_gptq_hessian_init(qt_gptq_hessian *h, int64_t n);
/* Adds rows x (n_rows, n) (float, row-major). */
QT_API qt_status qt_gptq_hessian_add(qt_gptq_hessian *h, const float *x, int64_t n_rows);
/* Floats of h->scratch an add needs at h->n columns on h->pool's threads. */
QT_API int64_t qt_gptq_hessian_scratch_floats(const qt_gptq_hessian *h);
/* H = 2 S / n_rows, full symmetric (n, n) into out. */
QT_API qt_status qt_gptq_hessian_get(const qt_gptq_hessian *h, double *out);
QT_API void qt_gptq_hessian_free(qt_gptq_hessian *h);

/* ---- the algorithm --------------------------------------------------------------- */

/* What qt_gptq_quantize keeps from one call to the next (a layer's linears,
 * one after another): its buffers, grown to the widest linear seen and kept,
 * so their pages are faulted in once, not per linear; and the inverse
 * Cholesky factor of the last H. The factor depends on H (and damp_frac,
 * act_order, max_retries) only, so linears that share an input (q/k/v,
 * gate/up) share it: the caller changes h_id whenever H's values may have
 * changed, and a call with the h_id, width and options of the call that
 * factored reuses that factor (the same bits as factoring again).
 * Zero-initialise; qt_gptq_work_free releases it. */
typedef struct qt_gptq_work {
    uint64_t h_id;           /* set by the caller: which H (the same id: the same values) */
    /* the rest is qt_gptq_quantize's */
    double *A, *diag;        /* (n_cap, n_cap) the factorization's workspace; (n_cap) */
    float *U;                /* (n_cap, n_cap) the factor (its first n x n, row-major n wide) */
    int64_t *perm, *pos;     /* (n_cap) the factor's processing order */
    int *bad;                /* (n_cap / 256 + 1) */
    float *Wp;               /* (wp_cap) with act_order: W permuted */
    int64_t n_cap, wp_cap;
    bool have_factor;        /* U, perm, pos, f_* hold the factor of H f_id */
    uint64_t f_id;
    int64_t f_n;
    bool f_act_order;
    double f_damp_frac, f_damp;
    int f_max_retries, f_retries;
} qt_gptq_work;

QT_API void qt_gptq_work_free(qt_gptq_work *w);

typedef struct qt_gptq_opts {
    double damp_frac;        /* 0.01 */
    int64_t block;           /* 128: columns per lazy-update block */
    bool act_order;          /* columns by decreasing H_ii (groups stay contiguous: no g_idx) */
    int max_retries;         /* 6: damping x10 per retry */
    qt_threadpool *pool;     /* or NULL: the threads of the inverse Cholesky factor and the column loop
                                (fixed tiles: the same bits at any thread count) */
    qt_gptq_work *work;      /* or NULL: the buffers allocated and freed per call, H factored every call */
} qt_gptq_opts;

QT_API qt_gptq_opts qt_gptq_opts_default(void);

typedef struct qt_gptq_stats {
    double damp;             /* the damping added to the diagonal (last attempt) */
    int retries;             /* Cholesky failures before success */
    int64_t dead_cols;       /* columns with H_ii == 0 */
    double loss;             /* sum over rows and columns of err^2 (GPTQ's objective / 2) */
    double cpu_factor;       /* process CPU seconds in the inverse Cholesky factorization (profiling only;
                                0 when the work's factor was reused) */
    bool factor_reused;      /* the factor of the previous call's H (qt_gptq_work) */
} qt_gptq_stats;

/* W (rows, cols) in place: on return, its values on the grid (the grid holds
 * the codes; after an error W's values are unspecified). H: (cols, cols)
 * symmetric, not modified. Holds cols^2 x 12 bytes (the factorization's
 * workspace in double, U in float) and, with act_order, a permuted copy of W:
 * in o->work when given (kept, grown to the largest call's), else per call. */
QT_API qt_status qt_gptq_quantize(float *W, int64_t rows, int64_t cols, const double *H, const qt_gptq_grid *grid,
                                  const qt_gptq_opts *o, qt_gptq_stats *stats);

/* The layer-output error sum_t ||(W - Q) x_t||^2 / n over rows x (n, cols):
 * what GPTQ minimises, for tests and reports. */
QT_API double qt_gptq_output_error(const float *W, const float *Q, int64_t rows, int64_t cols, const float *x,
                                   int64_t n);

/* The same error from the held-out rows' Hessian H = 2 X^T X / n (cols, cols):
 * sum over rows of d^T H d / 2 with d = W - Q (one BLAS dsymm). */
QT_API qt_status qt_gptq_output_error_h(const float *W, const float *Q, int64_t rows, int64_t cols, const double *H,
                                        double *out);

#ifdef __cplusplus
}
#endif
#endif
