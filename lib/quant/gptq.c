/* lib/quant/gptq.c — GPTQ (Frantar et al. 2023, arXiv:2210.17323, Algorithm 1)
 * on plain arrays: the Hessian, the inverse Cholesky factor, and the column
 * loop with block-wise lazy updates (quanta/gptq.h). The grids live in
 * gptq_grid.c.
 *
 * Numerics follow llm-compressor's gptq_quantize.py where the paper leaves a
 * choice: H = 2 X^T X / n, damping = dampening_frac * mean(diag H) added to
 * the diagonal, dead columns get H_ii = 1 and W[:, i] = 0, Hinv's upper
 * Cholesky factor U drives the loop (err = (w - q) / U_jj;
 * W[:, j+1:] -= err U[j, j+1:]). The Hessian and the factorization are in
 * double; the column loop in float, as llm-compressor's.
 */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/blas.h"
#include "gptq_internal.h"
#include "quanta/gptq.h"

/* OpenBLAS's own threads would split its reductions differently per thread
 * count; one thread makes H and U the same bits whatever --threads is. The
 * first call also fixes the kernel set OpenBLAS picked (lib/core/blas.c). */
static void blas_pin(void) { qt__blas_pin(); }

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

qt_gptq_opts qt_gptq_opts_default(void) { return (qt_gptq_opts){.damp_frac = 0.01, .block = 128, .max_retries = 6}; }

/* ---- the Hessian ------------------------------------------------------------------ */

#define HESS_CHUNK 512 /* rows summed in float per pass over the panels, then added into S (double): one
                        * 512-token sequence per pass (256 took 1.08-1.17x the CPU time: sgemm at K = 256 and
                        * twice the passes over S, docs/gptq.md "Where the time goes") */
#define HESS_PANEL 256 /* rows of S per unit of work: a fixed split, so the sums never depend on the thread count */

qt_status qt_gptq_hessian_init(qt_gptq_hessian *h, int64_t n) {
    *h = (qt_gptq_hessian){0};
    if (n < 1 || n > (1 << 20)) return qt_error(QT_ERR_ARG, "gptq: Hessian of %lld columns", (long long)n);
    if (!(h->s = calloc((size_t)(n * n), sizeof(double))))
        return qt_error(QT_ERR_NOMEM, "gptq: out of memory for a %lld x %lld Hessian", (long long)n, (long long)n);
    h->n = n;
    return QT_OK;
}

typedef struct hess_job {
    qt_gptq_hessian *h;
    const float *x;           /* (k, n) the chunk's rows */
    int64_t k, n_panel;
    float *part;              /* (threads, HESS_PANEL, n) each thread's panel of the chunk's sum */
} hess_job;

/* Panel p: rows p0..p1-1 of S, upper triangle only (the diagonal block by
 * ssyrk, the rest of the rows by sgemm: the chunk's sum in float, as
 * llm-compressor accumulates H in float32; then added into S in double, so
 * the error does not grow with the number of chunks), so only the pages the
 * memory estimate counts are ever written. */
static void hess_panel(const hess_job *j, int64_t p, int thread) {
    const int64_t n = j->h->n, p0 = p * HESS_PANEL, p1 = p0 + HESS_PANEL < n ? p0 + HESS_PANEL : n, w = n - p0;
    float *t = j->part + (size_t)thread * HESS_PANEL * (size_t)n; /* (p1 - p0, w), the panel from column p0 */
    cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)(p1 - p0), (int)j->k, 1.0f, j->x + p0, (int)n, 0.0f, t,
                (int)w);
    if (p1 < n)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)(p1 - p0), (int)(n - p1), (int)j->k, 1.0f, j->x + p0,
                    (int)n, j->x + p1, (int)n, 0.0f, t + (p1 - p0), (int)w);
    double *s = j->h->s;
    for (int64_t i = 0; i < p1 - p0; i++) {
        double *si = s + (p0 + i) * n + p0;
        const float *ti = t + i * w;
        for (int64_t c = i; c < w; c++) si[c] += ti[c];
    }
}

/* Unit u: panels u and n_panel-1-u, one long and one short row of the
 * triangle, so contiguous ranges of units carry about equal work. */
static void hess_units(void *ctx, int64_t begin, int64_t end, int thread) {
    const hess_job *j = ctx;
    for (int64_t u = begin; u < end; u++) {
        hess_panel(j, u, thread);
        if (j->n_panel - 1 - u != u) hess_panel(j, j->n_panel - 1 - u, thread);
    }
}

int64_t qt_gptq_hessian_scratch_floats(const qt_gptq_hessian *h) {
    return (int64_t)qt_threadpool_size(h->pool) * HESS_PANEL * h->n;
}

qt_status qt_gptq_hessian_add(qt_gptq_hessian *h, const float *x, int64_t n_rows) {
    const int64_t n = h->n;
    float *part = h->scratch ? h->scratch : malloc((size_t)qt_gptq_hessian_scratch_floats(h) * sizeof *part);
    if (!part) return qt_error(QT_ERR_NOMEM, "gptq: out of memory for the Hessian's partial sums");
    blas_pin();
    hess_job j = {.h = h, .part = part, .n_panel = (n + HESS_PANEL - 1) / HESS_PANEL};
    for (int64_t r0 = 0; r0 < n_rows; r0 += HESS_CHUNK) {
        j.k = n_rows - r0 < HESS_CHUNK ? n_rows - r0 : HESS_CHUNK;
        j.x = x + r0 * n;
        qt_parallel_for(h->pool, (j.n_panel + 1) / 2, hess_units, &j);
    }
    if (part != h->scratch) free(part);
    h->n_rows += n_rows;
    return QT_OK;
}

#define GET_TILE 64 /* the mirror copy in square tiles: 64 x 64 doubles read (32 KiB) are written transposed
                      * within a tile, not one 8-byte store per row of `out` (n x 8 bytes apart: 64 KiB for 8192) */

typedef struct get_job { const qt_gptq_hessian *h; double *out, f; int64_t n_tiles; } get_job;

static int64_t tile_end_get(int64_t t0, int64_t n) { return t0 + GET_TILE < n ? t0 + GET_TILE : n; }

/* Tile row t: rows t*GET_TILE.. of the upper triangle, mirrored. */
static void get_tile_row(const get_job *j, int64_t t) {
    const int64_t n = j->h->n, i0 = t * GET_TILE, i1 = tile_end_get(i0, n);
    for (int64_t j0 = i0; j0 < n; j0 += GET_TILE) {
        const int64_t j1 = tile_end_get(j0, n);
        for (int64_t i = i0; i < i1; i++)
            for (int64_t c = j0 > i ? j0 : i; c < j1; c++) j->out[i * n + c] = j->out[c * n + i] = j->f * j->h->s[i * n + c];
    }
}

/* Unit u: tile rows u and n_tiles-1-u (a long and a short one). A copy: any split gives the same bits. */
static void get_units(void *ctx, int64_t begin, int64_t end, int thread) {
    const get_job *j = ctx;
    (void)thread;
    for (int64_t u = begin; u < end; u++) {
        get_tile_row(j, u);
        if (j->n_tiles - 1 - u != u) get_tile_row(j, j->n_tiles - 1 - u);
    }
}

qt_status qt_gptq_hessian_get(const qt_gptq_hessian *h, double *out) {
    if (h->n_rows < 1) return qt_error(QT_ERR_ARG, "gptq: no calibration rows were added to the Hessian");
    get_job j = {h, out, 2.0 / (double)h->n_rows, (h->n + GET_TILE - 1) / GET_TILE};
    qt_parallel_for(h->pool, (j.n_tiles + 1) / 2, get_units, &j);
    return QT_OK;
}

void qt_gptq_hessian_free(qt_gptq_hessian *h) {
    free(h->s);
    *h = (qt_gptq_hessian){0};
}

/* ---- the inverse Cholesky factor ---------------------------------------------------- */

/* U (n, n) upper, with U^T U = (Hd + damp I)^-1. Hd is H in processing order
 * (Hd_ab = H[perm a][perm b]) with its diagonal replaced by diag (the dead
 * columns fixed): read from H as it is, so no copy of H is held. With P the
 * exchange matrix (P_ij = 1 where i + j = n - 1) and
 * P (Hd + damp I) P = L L^T (lower Cholesky), (Hd + damp I)^-1 =
 * (P L^-1 P)^T (P L^-1 P) and P L^-1 P is upper with a positive diagonal: the
 * factor itself. A Cholesky factorization and a triangular inverse (2n^3/3
 * flops) instead of llm-compressor's cholesky, cholesky_inverse, cholesky
 * (4n^3/3).
 *
 * Both are LAPACK's blocked algorithms (dpotrf's right-looking form, dtrtri's)
 * written out over fixed tiles of CHOL_NB (and CHOL_SUB) columns, each tile
 * one single-threaded BLAS call, the tiles of a step shared out over the pool:
 * the split depends on n only, so U is the same bits at any thread count,
 * and the 8192-wide factor of ffn_down (2/3 x 8192^3 = 366 GFLOP, ~90 % of a
 * layer's) no longer runs on one thread. In place in A, n^2 doubles. */
#define CHOL_NB 256 /* columns per block step and per tile */
#define CHOL_SUB 64 /* columns per tile of the inverse's triangular product (4 per step) */

typedef struct chol_job {
    double *A;                /* (n, n) column-major upper = row-major lower */
    int64_t n, k0, k1;        /* the step's block: columns k0..k1-1 */
    const double *H, *diag;   /* fill */
    const int64_t *perm;
    double damp;
    float *U;                 /* out */
    int *bad;                 /* (units) out: a non-finite entry in the unit's rows */
} chol_job;

#define AT(j, r, c) ((j)->A + (size_t)(r) + (size_t)(c) * (size_t)(j)->n) /* column-major (r, c) */

static int64_t tile_end(int64_t c0, int64_t step, int64_t n) { return c0 + step < n ? c0 + step : n; }

/* A's row-major lower triangle (the column-major upper one: LAPACK's own
 * layout, nothing to transpose) from H: rows of unit u and of n_units-1-u. */
static void fill_rows(const chol_job *j, int64_t u) {
    const int64_t n = j->n;
    for (int64_t i = u * CHOL_NB; i < tile_end(u * CHOL_NB, CHOL_NB, n); i++) {
        const double *src = j->H + j->perm[n - 1 - i] * n;
        double *dst = j->A + i * n;
        for (int64_t c = 0; c < i; c++) dst[c] = src[j->perm[n - 1 - c]]; /* the lower triangle is all LAPACK reads */
        dst[i] = j->diag[j->perm[n - 1 - i]] + j->damp;
    }
}

static int64_t n_tiles(int64_t from, int64_t n) { return (n - from + CHOL_NB - 1) / CHOL_NB; }

static void fill_units(void *ctx, int64_t begin, int64_t end, int thread) {
    const chol_job *j = ctx;
    const int64_t t = n_tiles(0, j->n);
    (void)thread;
    for (int64_t u = begin; u < end; u++) {
        fill_rows(j, u);
        if (t - 1 - u != u) fill_rows(j, t - 1 - u);
    }
}

/* dpotrf's step k, tile u right of the diagonal block: A[k0:k1, c] = U_kk^-T A[k0:k1, c]. */
static void panel_units(void *ctx, int64_t begin, int64_t end, int thread) {
    const chol_job *j = ctx;
    (void)thread;
    for (int64_t u = begin; u < end; u++) {
        const int64_t c0 = j->k1 + u * CHOL_NB, cb = tile_end(c0, CHOL_NB, j->n) - c0;
        cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasTrans, CblasNonUnit, (int)(j->k1 - j->k0), (int)cb, 1.0,
                    AT(j, j->k0, j->k0), (int)j->n, AT(j, j->k0, c0), (int)j->n);
    }
}

/* The trailing update of tile u's columns: A[k1:c1, c] -= A[k0:k1, k1:c1]^T A[k0:k1, c]. */
static void update_tile(const chol_job *j, int64_t u) {
    const int64_t c0 = j->k1 + u * CHOL_NB, cb = tile_end(c0, CHOL_NB, j->n) - c0, kb = j->k1 - j->k0, n = j->n;
    if (c0 > j->k1)
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)(c0 - j->k1), (int)cb, (int)kb, -1.0,
                    AT(j, j->k0, j->k1), (int)n, AT(j, j->k0, c0), (int)n, 1.0, AT(j, j->k1, c0), (int)n);
    cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, (int)cb, (int)kb, -1.0, AT(j, j->k0, c0), (int)n, 1.0,
                AT(j, c0, c0), (int)n);
}

/* Units pair tile u (short) with tile t-1-u (long): equal work per unit. */
static void update_units(void *ctx, int64_t begin, int64_t end, int thread) {
    const chol_job *j = ctx;
    const int64_t t = n_tiles(j->k1, j->n);
    (void)thread;
    for (int64_t u = begin; u < end; u++) {
        update_tile(j, u);
        if (t - 1 - u != u) update_tile(j, t - 1 - u);
    }
}

/* dtrtri's step k: A[0:k0, c] = inv(A[0:k0, 0:k0]) A[0:k0, c], one CHOL_SUB-column tile per unit. */
static void trmm_units(void *ctx, int64_t begin, int64_t end, int thread) {
    const chol_job *j = ctx;
    (void)thread;
    for (int64_t u = begin; u < end; u++) {
        const int64_t c0 = j->k0 + u * CHOL_SUB, cb = tile_end(c0, CHOL_SUB, j->k1) - c0;
        cblas_dtrmm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, (int)j->k0, (int)cb, 1.0, j->A,
                    (int)j->n, AT(j, 0, c0), (int)j->n);
    }
}

/* then A[r, k0:k1] = -A[r, k0:k1] A_kk^-1 (A_kk not yet inverted), one CHOL_NB-row tile per unit. */
static void trsm_units(void *ctx, int64_t begin, int64_t end, int thread) {
    const chol_job *j = ctx;
    (void)thread;
    for (int64_t u = begin; u < end; u++) {
        const int64_t r0 = u * CHOL_NB, rh = tile_end(r0, CHOL_NB, j->k0) - r0;
        cblas_dtrsm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, (int)rh, (int)(j->k1 - j->k0),
                    -1.0, AT(j, j->k0, j->k0), (int)j->n, AT(j, r0, j->k0), (int)j->n);
    }
}

/* U's rows of unit u from A (row-major lower L^-1): U[i][c] = L^-1[n-1-i][n-1-c] for c >= i. */
static void out_units(void *ctx, int64_t begin, int64_t end, int thread) {
    const chol_job *j = ctx;
    const int64_t n = j->n;
    (void)thread;
    for (int64_t u = begin; u < end; u++) {
        int bad = 0;
        for (int64_t i = u * CHOL_NB; i < tile_end(u * CHOL_NB, CHOL_NB, n); i++) {
            const double *src = j->A + (n - 1 - i) * n + (n - 1);
            float *dst = j->U + i * n;
            for (int64_t c = 0; c < i; c++) dst[c] = 0.0f;
            for (int64_t c = i; c < n; c++) {
                const double v = src[-c]; /* A[(n-1-i)*n + (n-1-c)] */
                bad |= !isfinite(v);
                dst[c] = (float)v;
            }
        }
        j->bad[u] = bad;
    }
}

/* Returns false when a factorization fails (not positive definite) or the factor is not finite. */
static bool inverse_cholesky(const double *H, const double *diag, const int64_t *perm, int64_t n, double damp,
                             double *A, float *U, int *bad, qt_threadpool *pool) {
    chol_job j = {.A = A, .n = n, .H = H, .diag = diag, .perm = perm, .damp = damp, .U = U, .bad = bad};
    const int64_t t = n_tiles(0, n);
    qt_parallel_for(pool, (t + 1) / 2, fill_units, &j);
    for (j.k0 = 0; j.k0 < n; j.k0 = j.k1) { /* A = U_c^T U_c (column-major upper): dpotrf, right-looking */
        j.k1 = tile_end(j.k0, CHOL_NB, n);
        if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', (lapack_int)(j.k1 - j.k0), AT(&j, j.k0, j.k0), (lapack_int)n) != 0)
            return false;
        if (j.k1 == n) break;
        qt_parallel_for(pool, n_tiles(j.k1, n), panel_units, &j);
        qt_parallel_for(pool, (n_tiles(j.k1, n) + 1) / 2, update_units, &j);
    }
    for (j.k0 = 0; j.k0 < n; j.k0 = j.k1) { /* U_c^-1 in place: dtrtri, block column by block column */
        j.k1 = tile_end(j.k0, CHOL_NB, n);
        if (j.k0 > 0) {
            qt_parallel_for(pool, (j.k1 - j.k0 + CHOL_SUB - 1) / CHOL_SUB, trmm_units, &j);
            qt_parallel_for(pool, n_tiles(0, j.k0), trsm_units, &j);
        }
        if (LAPACKE_dtrtri(LAPACK_COL_MAJOR, 'U', 'N', (lapack_int)(j.k1 - j.k0), AT(&j, j.k0, j.k0), (lapack_int)n) != 0)
            return false;
    }
    qt_parallel_for(pool, t, out_units, &j);
    for (int64_t u = 0; u < t; u++)
        if (bad[u]) return false;
    return true;
}

bool qt__gptq_inverse_factor(const double *H, int64_t n, double damp, float *U, qt_threadpool *pool) {
    double *A = malloc((size_t)(n * n) * sizeof *A), *diag = malloc((size_t)n * sizeof *diag);
    int64_t *perm = malloc((size_t)n * sizeof *perm);
    int *bad = malloc((size_t)n_tiles(0, n) * sizeof *bad);
    bool ok = A && diag && perm && bad;
    for (int64_t i = 0; ok && i < n; i++) diag[i] = H[i * n + i], perm[i] = i;
    if (ok) blas_pin();
    ok = ok && inverse_cholesky(H, diag, perm, n, damp, A, U, bad, pool);
    free(A);
    free(diag);
    free(perm);
    free(bad);
    return ok;
}

/* ---- the column loop ----------------------------------------------------------------- */

typedef struct gptq_run {
    float *W;                 /* (rows, cols) in processing order */
    int64_t rows, cols, block;
    const float *U;           /* (cols, cols) */
    const int64_t *perm;      /* processing position -> original column */
    const int64_t *pos;       /* original column -> processing position */
    const int64_t *first;     /* (cols / group) the position at which group g begins, -1: begun before the loop */
    const qt_gptq_grid *grid;
    int64_t panel;            /* rows per panel: a unit of work, a multiple of LAZY_ROWS and of the grid's row_block */
    float *scratch;           /* (threads, scratch_floats) each thread's buffers of one panel (panel_bufs) */
    int64_t scratch_floats;
    double *loss;             /* (panels) each panel's sum of err^2 */
    qt_status *status;        /* (panels) */
    qt_threadpool *pool;      /* the panels' threads, or NULL */
} gptq_run;

/* One panel's buffers: the block's columns of W contiguous per row (the loop
 * walks them 128 columns wide instead of one row, C floats, apart), their
 * errors, a group's current values, one column and its grid values. */
typedef struct panel_bufs { float *wb, *err, *wg, *col, *q; } panel_bufs;

static int64_t panel_floats(int64_t panel, int64_t block, int64_t group) {
    return panel * (2 * block + group + 2);
}

static panel_bufs panel_bufs_of(const gptq_run *r, int thread) {
    float *p = r->scratch + (size_t)thread * (size_t)r->scratch_floats;
    const int64_t P = r->panel, B = r->block;
    return (panel_bufs){p, p + P * B, p + 2 * P * B, p + P * (2 * B + r->grid->group), p + P * (2 * B + r->grid->group + 1)};
}

/* Group g's current values in rows a..a+m-1: columns at or after the current
 * block's start i1 still owe the lazy update of the block's columns i1..j-1
 * (only with act order can such a column lie beyond the block). */
static qt_status begin_group(const gptq_run *r, const panel_bufs *b, int64_t a, int64_t m, int64_t g, int64_t i1,
                             int64_t i2, int64_t j) {
    const int64_t G = r->grid->group, C = r->cols, nb = i2 - i1;
    for (int64_t k = 0; k < G; k++) {
        const int64_t p = r->pos[g * G + k];
        for (int64_t row = 0; row < m; row++) {
            float v = p >= i1 && p < i2 ? b->wb[row * nb + (p - i1)] : r->W[(a + row) * C + p];
            if (p >= i2)
                for (int64_t t = i1; t < j; t++) v -= b->err[row * nb + (t - i1)] * r->U[t * C + p];
            b->wg[row * G + k] = v;
        }
    }
    return r->grid->begin_group(r->grid->ctx, b->wg, a, m, g);
}

#define LAZY_ROWS 64 /* rows of W per lazy-update sgemm, and per panel where the grid allows: a fixed split */

/* W[a:a+m, i2:] -= err[0:m, :] U[i1:i2, i2:]: the block's lazy update of the
 * columns after it, one sgemm per LAZY_ROWS rows (the same calls at any
 * panel size, so the same bits). */
static void lazy_update(const gptq_run *r, const panel_bufs *b, int64_t a, int64_t m, int64_t i1, int64_t i2) {
    const int64_t C = r->cols, nb = i2 - i1;
    for (int64_t o = 0; o < m; o += LAZY_ROWS) {
        const int64_t k = m - o < LAZY_ROWS ? m - o : LAZY_ROWS;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)k, (int)(C - i2), (int)nb, -1.0f, b->err + o * nb,
                    (int)nb, r->U + i1 * C + i2, (int)C, 1.0f, r->W + (a + o) * C + i2, (int)C);
    }
}

/* The whole column loop for rows a..a+m-1: in GPTQ's loop a row's values
 * depend only on that row (and on U), so a panel needs no other panel's
 * results and the panels run without a barrier. Per row the operations are
 * those of a loop over all rows at once, in the same order. */
static qt_status panel_loop(const gptq_run *r, const panel_bufs *b, int64_t a, int64_t m, double *loss) {
    const int64_t C = r->cols;
    double l2 = 0;
    for (int64_t i1 = 0; i1 < C; i1 += r->block) {
        const int64_t i2 = i1 + r->block < C ? i1 + r->block : C, nb = i2 - i1;
        for (int64_t row = 0; row < m; row++)
            memcpy(b->wb + row * nb, r->W + (a + row) * C + i1, (size_t)nb * sizeof *b->wb);
        for (int64_t j = i1; j < i2; j++) {
            const int64_t c = r->perm[j], g = c / r->grid->group;
            if (r->first[g] == j) {
                qt_status s = begin_group(r, b, a, m, g, i1, i2, j);
                if (s != QT_OK) return s;
            }
            for (int64_t row = 0; row < m; row++) b->col[row] = b->wb[row * nb + (j - i1)];
            r->grid->quantize_col(r->grid->ctx, b->col, a, m, c, b->q);
            const float d = r->U[j * C + j];
            const float *u = r->U + j * C;
            for (int64_t row = 0; row < m; row++) {
                const float e = (b->col[row] - b->q[row]) / d;
                float *w = b->wb + row * nb - i1; /* w[k]: column k of the row */
                w[j] = b->q[row];
                for (int64_t k = j + 1; k < i2; k++) w[k] -= e * u[k];
                b->err[row * nb + (j - i1)] = e;
                l2 += (double)e * e;
            }
        }
        for (int64_t row = 0; row < m; row++)
            memcpy(r->W + (a + row) * C + i1, b->wb + row * nb, (size_t)nb * sizeof *b->wb);
        if (i2 < C) lazy_update(r, b, a, m, i1, i2);
    }
    *loss = l2;
    return QT_OK;
}

static void row_panel_units(void *ctx, int64_t begin, int64_t end, int thread) {
    const gptq_run *r = ctx;
    const panel_bufs b = panel_bufs_of(r, thread);
    for (int64_t p = begin; p < end; p++) {
        const int64_t a = p * r->panel, m = r->rows - a < r->panel ? r->rows - a : r->panel;
        r->status[p] = panel_loop(r, &b, a, m, &r->loss[p]);
    }
}

/* Rows per panel: LAZY_ROWS where the grid's scales are per row (or all
 * begun before the loop), a multiple of its row_block otherwise, all rows
 * when a group needs every row. Depends on the grid and the shape only. */
static int64_t panel_rows(const qt_gptq_grid *grid, int64_t rows, int64_t cols) {
    const int64_t rb = grid->group == cols ? 1 : grid->row_block;
    if (rb < 1) return rows;
    return rb <= LAZY_ROWS && LAZY_ROWS % rb == 0 ? LAZY_ROWS : rb % LAZY_ROWS == 0 ? rb : rows;
}

static qt_status column_loop(gptq_run *r, double *loss) {
    const int64_t R = r->rows, G = r->grid->group, ng = r->cols / G;
    int64_t *first = malloc((size_t)ng * sizeof *first);
    r->panel = panel_rows(r->grid, R, r->cols);
    const int64_t n_panels = (R + r->panel - 1) / r->panel;
    r->scratch_floats = panel_floats(r->panel, r->block, G);
    r->scratch = malloc((size_t)qt_threadpool_size(r->pool) * (size_t)r->scratch_floats * sizeof *r->scratch);
    r->loss = calloc((size_t)n_panels, sizeof *r->loss);
    r->status = malloc((size_t)n_panels * sizeof *r->status);
    qt_status s = first && r->scratch && r->loss && r->status ? QT_OK : qt_error(QT_ERR_NOMEM, "gptq: out of memory");
    for (int64_t g = 0; s == QT_OK && g < ng; g++) { /* the first position of each group's columns */
        first[g] = r->pos[g * G];
        for (int64_t k = 1; k < G; k++) first[g] = r->pos[g * G + k] < first[g] ? r->pos[g * G + k] : first[g];
    }
    if (s == QT_OK && G == r->cols) { /* one group per row, begun at position 0 on W as given: for all rows now */
        float *wg = malloc((size_t)(R * G) * sizeof *wg);
        if (!wg) s = qt_error(QT_ERR_NOMEM, "gptq: out of memory");
        for (int64_t row = 0; s == QT_OK && row < R; row++)
            for (int64_t k = 0; k < G; k++) wg[row * G + k] = r->W[row * G + r->pos[k]];
        if (s == QT_OK) s = r->grid->begin_group(r->grid->ctx, wg, 0, R, 0);
        free(wg);
        first[0] = -1;
    }
    r->first = first;
    if (s == QT_OK) qt_parallel_for(r->pool, n_panels, row_panel_units, r);
    double l2 = 0;
    for (int64_t p = 0; s == QT_OK && p < n_panels; p++) { /* the first failing panel's error, in panel order */
        s = r->status[p];
        l2 += r->loss[p];
    }
    *loss = l2;
    free(first);
    free(r->scratch);
    free(r->loss);
    free(r->status);
    return s;
}

typedef struct diag_key { double h; int64_t i; } diag_key;

static int by_diag_desc(const void *pa, const void *pb) {
    const diag_key *a = pa, *b = pb;
    if (a->h != b->h) return a->h > b->h ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i; /* ties keep column order */
}

/* Processing order: identity, or by decreasing H_ii (llm-compressor's argsort). */
static qt_status order(const double *diag, int64_t n, bool act_order, int64_t *perm, int64_t *pos) {
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    if (act_order) {
        diag_key *k = malloc((size_t)n * sizeof *k);
        if (!k) return qt_error(QT_ERR_NOMEM, "gptq: out of memory");
        for (int64_t i = 0; i < n; i++) k[i] = (diag_key){diag[i], i};
        qsort(k, (size_t)n, sizeof *k, by_diag_desc);
        for (int64_t i = 0; i < n; i++) perm[i] = k[i].i;
        free(k);
    }
    for (int64_t i = 0; i < n; i++) pos[perm[i]] = i;
    return QT_OK;
}

static qt_status check_args(int64_t rows, int64_t cols, const qt_gptq_grid *grid, const qt_gptq_opts *o) {
    if (rows < 1 || cols < 1 || rows > INT32_MAX || cols > (1 << 20))
        return qt_error(QT_ERR_SHAPE, "gptq: weight shape (%lld, %lld)", (long long)rows, (long long)cols);
    if (!grid || grid->group < 1 || cols % grid->group != 0)
        return qt_error(QT_ERR_SHAPE, "gptq: the grid's group of %lld columns does not divide %lld columns",
                        grid ? (long long)grid->group : 0LL, (long long)cols);
    if (o->block < 1 || !(o->damp_frac > 0) || o->max_retries < 0)
        return qt_error(QT_ERR_ARG, "gptq: block %lld, damping fraction %g, %d retries", (long long)o->block,
                        o->damp_frac, o->max_retries);
    return QT_OK;
}

void qt_gptq_work_free(qt_gptq_work *w) {
    free(w->A);
    free(w->diag);
    free(w->U);
    free(w->perm);
    free(w->pos);
    free(w->bad);
    free(w->Wp);
    *w = (qt_gptq_work){0};
}

/* The work's buffers for n columns and wp floats of permuted W: grown (freed first, so the old and the new are
 * never resident together), never shrunk. Growing drops the factor it held. */
static bool work_reserve(qt_gptq_work *w, int64_t n, int64_t wp) {
    if (n > w->n_cap) {
        free(w->A), free(w->diag), free(w->U), free(w->perm), free(w->pos), free(w->bad);
        w->A = malloc((size_t)(n * n) * sizeof *w->A);
        w->U = malloc((size_t)(n * n) * sizeof *w->U);
        w->diag = malloc((size_t)n * sizeof *w->diag);
        w->perm = malloc((size_t)n * sizeof *w->perm);
        w->pos = malloc((size_t)n * sizeof *w->pos);
        w->bad = malloc((size_t)((n + CHOL_NB - 1) / CHOL_NB) * sizeof *w->bad); /* the factor's units: non-finite rows */
        w->have_factor = false;
        w->n_cap = w->A && w->U && w->diag && w->perm && w->pos && w->bad ? n : 0;
        if (!w->n_cap) return false;
    }
    if (wp > w->wp_cap) {
        free(w->Wp);
        w->wp_cap = (w->Wp = malloc((size_t)wp * sizeof *w->Wp)) ? wp : 0;
        if (!w->Wp) return false;
    }
    return true;
}

static bool work_factor_fits(const qt_gptq_work *w, int64_t n, const qt_gptq_opts *o) {
    return w->have_factor && w->f_id == w->h_id && w->f_n == n && w->f_act_order == o->act_order &&
           w->f_damp_frac == o->damp_frac && w->f_max_retries == o->max_retries;
}

/* U (in w) for H: factored, damping x10 per failure, or the work's factor of the same H. */
static qt_status factor(qt_gptq_work *w, const double *H, int64_t n, double mean, const qt_gptq_opts *o,
                        qt_gptq_stats *st) {
    if (work_factor_fits(w, n, o)) { /* perm, pos and U are this H's: only diag was written again, to the same values */
        st->damp = w->f_damp;
        st->retries = w->f_retries;
        st->factor_reused = true;
        return QT_OK;
    }
    w->have_factor = false;
    st->damp = o->damp_frac * mean;
    const double c0 = cpu_seconds();
    while (!inverse_cholesky(H, w->diag, w->perm, n, st->damp, w->A, w->U, w->bad, o->pool)) {
        if (st->retries == o->max_retries)
            return qt_error(QT_ERR_RANGE, "gptq: the Hessian is not positive definite even with damping %g "
                            "(%.3g x the mean diagonal) after %d retries", st->damp, st->damp / mean, st->retries);
        st->retries++;
        st->damp *= 10.0;
    }
    st->cpu_factor = cpu_seconds() - c0;
    *w = (qt_gptq_work){.h_id = w->h_id, .A = w->A, .diag = w->diag, .U = w->U, .perm = w->perm, .pos = w->pos,
                        .bad = w->bad, .Wp = w->Wp, .n_cap = w->n_cap, .wp_cap = w->wp_cap, .have_factor = true,
                        .f_id = w->h_id, .f_n = n, .f_act_order = o->act_order, .f_damp_frac = o->damp_frac,
                        .f_damp = st->damp, .f_max_retries = o->max_retries, .f_retries = st->retries};
    return QT_OK;
}

qt_status qt_gptq_quantize(float *W, int64_t rows, int64_t cols, const double *H, const qt_gptq_grid *grid,
                           const qt_gptq_opts *opts, qt_gptq_stats *stats) {
    const qt_gptq_opts o = opts ? *opts : qt_gptq_opts_default();
    qt_gptq_stats st = {0};
    qt_status s = check_args(rows, cols, grid, &o);
    if (s != QT_OK) return s;
    for (int64_t i = 0; i < rows * cols; i++)
        if (!isfinite(W[i]))
            return qt_error(QT_ERR_RANGE, "gptq: weight[%lld][%lld] is not finite", (long long)(i / cols),
                            (long long)(i % cols));
    const int64_t n = cols, block = o.block < cols ? o.block : cols;
    qt_gptq_work own = {0}, *w = o.work ? o.work : &own; /* W itself is the working copy in natural order */
    gptq_run r = {.rows = rows, .cols = cols, .block = block, .grid = grid, .pool = o.pool};
    if (!work_reserve(w, n, o.act_order ? rows * cols : 0)) {
        s = qt_error(QT_ERR_NOMEM, "gptq: out of memory for a %lld x %lld linear", (long long)rows, (long long)cols);
        goto done;
    }
    blas_pin();
    /* dead columns, then the processing order (on the fixed diagonal) */
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(H[i * n + i])) {
            s = qt_error(QT_ERR_RANGE, "gptq: Hessian entry (%lld, %lld) is not finite", (long long)i, (long long)i);
            goto done;
        }
    }
    double mean = 0;
    double *diag = w->diag;
    for (int64_t i = 0; i < n; i++) {
        diag[i] = H[i * n + i];
        if (diag[i] == 0.0) {
            diag[i] = 1.0;
            for (int64_t row = 0; row < rows; row++) W[row * cols + i] = 0.0f;
            st.dead_cols++;
        }
        mean += diag[i];
    }
    mean /= (double)n;
    if (!work_factor_fits(w, n, &o) && (s = order(diag, n, o.act_order, w->perm, w->pos)) != QT_OK) goto done;
    if ((s = factor(w, H, n, mean, &o, &st)) != QT_OK) goto done;
    const int64_t *perm = w->perm;
    float *Wp = o.act_order ? w->Wp : NULL;
    for (int64_t row = 0; Wp && row < rows; row++)
        for (int64_t j = 0; j < n; j++) Wp[row * n + j] = W[row * n + perm[j]];
    r.W = Wp ? Wp : W;
    r.U = w->U;
    r.perm = perm;
    r.pos = w->pos;
    s = column_loop(&r, &st.loss);
    if (s == QT_OK && Wp)
        for (int64_t row = 0; row < rows; row++)
            for (int64_t j = 0; j < n; j++) W[row * n + perm[j]] = Wp[row * n + j];
done:
    qt_gptq_work_free(&own);
    if (stats) *stats = st;
    return s;
}

qt_status qt_gptq_rtn(float *W, int64_t rows, int64_t cols, const qt_gptq_grid *grid) {
    if (!grid || grid->group < 1 || cols % grid->group != 0)
        return qt_error(QT_ERR_SHAPE, "gptq: the grid's group does not divide %lld columns", (long long)cols);
    const int64_t G = grid->group;
    float *wg = malloc((size_t)(rows * G) * sizeof *wg), *col = malloc((size_t)rows * sizeof *col);
    float *q = malloc((size_t)rows * sizeof *q);
    qt_status s = wg && col && q ? QT_OK : qt_error(QT_ERR_NOMEM, "gptq: out of memory");
    for (int64_t g = 0; s == QT_OK && g < cols / G; g++) {
        for (int64_t row = 0; row < rows; row++) memcpy(wg + row * G, W + row * cols + g * G, (size_t)G * sizeof *wg);
        s = grid->begin_group(grid->ctx, wg, 0, rows, g);
        for (int64_t c = g * G; s == QT_OK && c < (g + 1) * G; c++) {
            for (int64_t row = 0; row < rows; row++) col[row] = W[row * cols + c];
            grid->quantize_col(grid->ctx, col, 0, rows, c, q);
            for (int64_t row = 0; row < rows; row++) W[row * cols + c] = q[row];
        }
    }
    free(wg);
    free(col);
    free(q);
    return s;
}

double qt_gptq_output_error(const float *W, const float *Q, int64_t rows, int64_t cols, const float *x, int64_t n) {
    double sum = 0;
    for (int64_t t = 0; t < n; t++)
        for (int64_t r = 0; r < rows; r++) {
            double y = 0;
            for (int64_t c = 0; c < cols; c++) y += ((double)W[r * cols + c] - Q[r * cols + c]) * x[t * cols + c];
            sum += y * y;
        }
    return n ? sum / (double)n : 0;
}

qt_status qt_gptq_output_error_h(const float *W, const float *Q, int64_t rows, int64_t cols, const double *H,
                                 double *out) {
    double *D = malloc((size_t)(rows * cols) * sizeof *D), *DH = malloc((size_t)(rows * cols) * sizeof *DH);
    if (!D || !DH) {
        free(D);
        free(DH);
        return qt_error(QT_ERR_NOMEM, "gptq: out of memory for a %lld x %lld error", (long long)rows, (long long)cols);
    }
    for (int64_t i = 0; i < rows * cols; i++) D[i] = (double)W[i] - Q[i];
    blas_pin();
    cblas_dsymm(CblasRowMajor, CblasRight, CblasUpper, (int)rows, (int)cols, 1.0, H, (int)cols, D, (int)cols, 0.0, DH,
                (int)cols);
    double sum = 0;
    for (int64_t i = 0; i < rows * cols; i++) sum += D[i] * DH[i];
    *out = sum / 2;
    free(D);
    free(DH);
    return QT_OK;
}
