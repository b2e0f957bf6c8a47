/* GPTQ's numeric core (lib/quant/gptq.c) and its grids (lib/quant/gptq_grid.c)
 * on small matrices: H = I is round-to-nearest exactly, the grids' RTN is the
 * codecs' own, GPTQ beats RTN on correlated inputs (held-out rows), dead
 * columns, the Cholesky retry, act order, run-to-run determinism, and the
 * inverse factor over several tiles (LAPACK's within rounding; any thread count), and the
 * column loop's row panels (the same bits as all rows at once, at any thread count), and a
 * work kept across calls (the same bits, the factor reused on the same H). */
#include <lapacke.h>
#undef I /* <complex.h>'s, through lapacke.h: the tests name identity matrices I */
#include <math.h>

#include "qtest.h"
#include "core/cpu_level.h"
#include "quant/gptq_internal.h"
#include "quanta.h"

static uint64_t rng = 88172645463325252ull;
static double unif(void) { /* xorshift64 in [0, 1) */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}
static float gauss(void) {
    const double u = unif() + 1e-12, v = unif();
    return (float)(sqrt(-2 * log(u)) * cos(6.283185307179586 * v));
}

/* Correlated inputs: x = z M with M (k, n) dense, and one strong column. */
static float *make_inputs(int64_t n_rows, int64_t n, const float *M, int64_t k) {
    float *x = malloc((size_t)(n_rows * n) * sizeof *x);
    float *z = malloc((size_t)k * sizeof *z);
    for (int64_t t = 0; t < n_rows; t++) {
        for (int64_t i = 0; i < k; i++) z[i] = gauss();
        for (int64_t j = 0; j < n; j++) {
            float s = 0;
            for (int64_t i = 0; i < k; i++) s += z[i] * M[i * n + j];
            x[t * n + j] = s + 0.1f * gauss();
        }
    }
    free(z);
    return x;
}

typedef struct problem {
    int64_t rows, cols, n_cal, n_test;
    float *W, *xc, *xt;
    double *H;
} problem;

static problem make_problem(int64_t rows, int64_t cols) {
    problem p = {rows, cols, 512, 256, NULL, NULL, NULL, NULL};
    const int64_t k = cols / 4;
    float *M = malloc((size_t)(k * cols) * sizeof *M);
    for (int64_t i = 0; i < k * cols; i++) M[i] = gauss();
    p.xc = make_inputs(p.n_cal, cols, M, k);
    p.xt = make_inputs(p.n_test, cols, M, k);
    free(M);
    p.W = malloc((size_t)(rows * cols) * sizeof *p.W);
    for (int64_t i = 0; i < rows * cols; i++) p.W[i] = 0.05f * gauss();
    qt_gptq_hessian h;
    CHECK_OK(qt_gptq_hessian_init(&h, cols));
    CHECK_OK(qt_gptq_hessian_add(&h, p.xc, 200));
    CHECK_OK(qt_gptq_hessian_add(&h, p.xc + 200 * cols, p.n_cal - 200));
    p.H = malloc((size_t)(cols * cols) * sizeof *p.H);
    CHECK_OK(qt_gptq_hessian_get(&h, p.H));
    qt_gptq_hessian_free(&h);
    return p;
}

static void free_problem(problem *p) {
    free(p->W);
    free(p->xc);
    free(p->xt);
    free(p->H);
}

static float *copy(const float *w, int64_t n) {
    float *c = malloc((size_t)n * sizeof *c);
    memcpy(c, w, (size_t)n * sizeof *c);
    return c;
}

/* The Hessian equals 2 X^T X / n computed directly in double, within the float
 * summation bound: each chunk of at most 256 rows is summed in float (gptq.c
 * HESS_CHUNK), |error| <= gamma_256 * sum |x_i x_j| with gamma_k = k u / (1 - k u),
 * u = 2^-24, and the chunks are added in double. */
static void test_hessian(void) {
    problem p = make_problem(4, 16);
    const double u = ldexp(1.0, -24), gamma = 256 * u / (1 - 256 * u);
    double worst = 0;
    for (int64_t i = 0; i < 16; i++)
        for (int64_t j = 0; j < 16; j++) {
            double s = 0, a = 0;
            for (int64_t t = 0; t < p.n_cal; t++) {
                const double v = (double)p.xc[t * 16 + i] * p.xc[t * 16 + j];
                s += v, a += fabs(v);
            }
            const double f = 2.0 / (double)p.n_cal;
            worst = fmax(worst, fabs(s * f - p.H[i * 16 + j]) / (gamma * a * f + 1e-300));
        }
    CHECK_MSG(worst <= 1.0, "error %g times the float summation bound", worst);
    qt_gptq_hessian h;
    CHECK_OK(qt_gptq_hessian_init(&h, 4));
    CHECK_STATUS(qt_gptq_hessian_get(&h, p.H), QT_ERR_ARG); /* no rows */
    qt_gptq_hessian_free(&h);
    free_problem(&p);
}

/* The ct int grid's RTN gives qt_ct_int_quantize's codes and scales exactly,
 * and GPTQ with H = I gives the RTN values exactly. */
static void test_ct_int_identity(void) {
    const int64_t R = 24, C = 64;
    problem p = make_problem(R, C);
    double *I = calloc((size_t)(C * C), sizeof *I);
    for (int64_t i = 0; i < C; i++) I[i * C + i] = 1.0;
    const bool syms[2] = {true, false};
    for (int k = 0; k < 2; k++) {
        qt_gptq_ct_int g;
        CHECK_OK(qt_gptq_ct_int_init(&g, 4, syms[k], QT_CT_BF16, R, C, 32));
        qt_gptq_grid grid = qt_gptq_ct_int_grid(&g);
        float *rtn = copy(p.W, R * C), *gq = copy(p.W, R * C);
        CHECK_OK(qt_gptq_rtn(rtn, R, C, &grid));
        int8_t *q = malloc((size_t)(R * C)), *zp = malloc((size_t)(R * 2));
        float *sc = malloc((size_t)(R * 2) * sizeof *sc);
        qt_ct_int_args a = {.bits = 4, .symmetric = syms[k], .strategy = QT_CT_GROUP, .group_size = 32, .dtype = QT_CT_BF16};
        CHECK_OK(qt_ct_int_quantize(p.W, R, C, &a, q, sc, zp));
        CHECK(memcmp(q, g.q, (size_t)(R * C)) == 0);
        CHECK(memcmp(sc, g.scales, (size_t)(R * 2) * sizeof *sc) == 0);
        if (!syms[k]) CHECK(memcmp(zp, g.zero_points, (size_t)(R * 2)) == 0);
        qt_gptq_stats st;
        CHECK_OK(qt_gptq_quantize(gq, R, C, I, &grid, NULL, &st));
        CHECK(memcmp(gq, rtn, (size_t)(R * C) * sizeof *gq) == 0);
        CHECK(memcmp(q, g.q, (size_t)(R * C)) == 0);
        CHECK_EQ_INT(st.retries, 0);
        CHECK_NEAR(st.damp, 0.01, 1e-15);
        free(q);
        free(zp);
        free(sc);
        free(rtn);
        free(gq);
        qt_gptq_ct_int_free(&g);
    }
    free(I);
    free_problem(&p);
}

static const qt_type gguf_types[] = {QT_TYPE_Q4_0, QT_TYPE_Q4_1, QT_TYPE_Q5_0, QT_TYPE_Q5_1, QT_TYPE_Q8_0,
                                     QT_TYPE_Q2_K, QT_TYPE_Q3_K, QT_TYPE_Q4_K, QT_TYPE_Q5_K, QT_TYPE_Q6_K,
                                     QT_TYPE_IQ4_NL, QT_TYPE_IQ4_XS};
enum { N_GGUF = sizeof gguf_types / sizeof gguf_types[0] };

/* A GGUF grid's RTN writes the codec's own bytes (scales and codes), its
 * values are what the type's decoder gives for them, and H = I is RTN. */
static void test_gguf_identity(void) {
    const int64_t R = 8, C = 512;
    problem p = make_problem(R, C);
    double *I = calloc((size_t)(C * C), sizeof *I);
    for (int64_t i = 0; i < C; i++) I[i * C + i] = 1.0;
    for (int t = 0; t < N_GGUF; t++) {
        const qt_type_traits *tr = qt_type_get(gguf_types[t]);
        CHECK(qt_gptq_gguf_supported(gguf_types[t]));
        qt_gptq_gguf g;
        CHECK_OK(qt_gptq_gguf_init(&g, gguf_types[t], R, C, NULL));
        qt_gptq_grid grid = qt_gptq_gguf_grid(&g);
        float *rtn = copy(p.W, R * C), *dec = malloc((size_t)(R * C) * sizeof *dec);
        CHECK_OK(qt_gptq_rtn(rtn, R, C, &grid));
        const size_t nb = g.row_bytes * (size_t)R;
        uint8_t *ref = malloc(nb);
        CHECK_OK(qt_quantize_rows(gguf_types[t], p.W, ref, R, C, NULL));
        CHECK_MSG(memcmp(ref, g.bytes, nb) == 0, "%s: RTN bytes differ from the codec's", tr->name);
        CHECK_OK(qt_dequantize_rows(gguf_types[t], g.bytes, dec, R, C));
        double worst = 0;
        for (int64_t i = 0; i < R * C; i++) worst = fmax(worst, fabs((double)dec[i] - rtn[i]));
        CHECK_MSG(worst < 1e-6, "%s: grid values differ from the decoder's by %g", tr->name, worst);
        float *gq = copy(p.W, R * C);
        qt_gptq_stats st;
        CHECK_OK(qt_gptq_quantize(gq, R, C, I, &grid, NULL, &st));
        CHECK_MSG(memcmp(gq, rtn, (size_t)(R * C) * sizeof *gq) == 0, "%s: H = I is not RTN", tr->name);
        CHECK_MSG(memcmp(ref, g.bytes, nb) == 0, "%s: H = I bytes differ", tr->name);
        /* with importance weights: the codec's imatrix bytes, for every type whose
         * quantizer weighs a block by the block's own statistics (ggml's
         * Q4_0/Q4_1/Q5_0/Q5_1 take sigma2 over the whole row, which a grid
         * choosing one block's scales at a time does not see) */
        const qt_type legacy[] = {QT_TYPE_Q4_0, QT_TYPE_Q4_1, QT_TYPE_Q5_0, QT_TYPE_Q5_1};
        bool row_stats = false;
        for (int k = 0; k < 4; k++) row_stats |= gguf_types[t] == legacy[k];
        float *imp = malloc((size_t)C * sizeof *imp);
        for (int64_t i = 0; i < C; i++) imp[i] = (float)p.H[i * C + i];
        qt_gptq_gguf gi;
        CHECK_OK(qt_gptq_gguf_init(&gi, gguf_types[t], R, C, imp));
        qt_gptq_grid gridi = qt_gptq_gguf_grid(&gi);
        float *rtni = copy(p.W, R * C);
        CHECK_OK(qt_gptq_rtn(rtni, R, C, &gridi));
        CHECK_OK(qt_quantize_rows(gguf_types[t], p.W, ref, R, C, imp));
        CHECK_MSG(row_stats || memcmp(ref, gi.bytes, nb) == 0, "%s: RTN bytes with importance differ from the codec's",
                  tr->name);
        free(rtni);
        free(imp);
        qt_gptq_gguf_free(&gi);
        free(ref);
        free(rtn);
        free(dec);
        free(gq);
        qt_gptq_gguf_free(&g);
    }
    CHECK(!qt_gptq_gguf_supported(QT_TYPE_F16));
    CHECK(!qt_gptq_gguf_supported(QT_TYPE_IQ3_S));
    qt_gptq_gguf g;
    CHECK_STATUS(qt_gptq_gguf_init(&g, QT_TYPE_Q4_0, 2, 48, NULL), QT_ERR_SHAPE);
    free(I);
    free_problem(&p);
}

/* The float grids' RTN gives the compressed-tensors codecs' codes and scales
 * exactly, their values are the dequantizers', and H = I is RTN. 136 rows:
 * a partial 128-row block for fp8-block. */
static const qt_gptq_float_kind float_kinds[] = {QT_GPTQ_FP8_TENSOR, QT_GPTQ_FP8_CHANNEL, QT_GPTQ_FP8_BLOCK,
                                                 QT_GPTQ_NVFP4, QT_GPTQ_MXFP4};
static const char *const float_names[] = {"fp8 tensor", "fp8 channel", "fp8-block", "nvfp4", "mxfp4"};
enum { N_FLOAT = sizeof float_kinds / sizeof float_kinds[0] };

static float nvfp4_gs(const float *W, int64_t n) { return qt_ct_nvfp4_global_scale(qt_ct_amax(W, n, QT_CT_BF16), QT_CT_BF16); }

static void test_ct_float_identity(void) {
    const int64_t R = 136, C = 256, n = R * C;
    problem p = make_problem(R, C);
    double *I = calloc((size_t)(C * C), sizeof *I);
    for (int64_t i = 0; i < C; i++) I[i * C + i] = 1.0;
    uint8_t *q = malloc((size_t)n), *packed = malloc((size_t)n / 2), *mine = malloc((size_t)n / 2);
    uint8_t *sc8 = malloc((size_t)n / 16);
    float *sc = malloc((size_t)R * 2 * sizeof *sc), *dec = malloc((size_t)n * sizeof *dec);
    for (int k = 0; k < N_FLOAT; k++) {
        const qt_gptq_float_kind kind = float_kinds[k];
        const float shared = kind == QT_GPTQ_NVFP4 ? nvfp4_gs(p.W, n) : 0.0f;
        qt_gptq_ct_float g;
        CHECK_OK(qt_gptq_ct_float_init(&g, kind, QT_CT_BF16, R, C, shared));
        qt_gptq_grid grid = qt_gptq_ct_float_grid(&g);
        float *rtn = copy(p.W, n), *gq = copy(p.W, n);
        CHECK_OK(qt_gptq_rtn(rtn, R, C, &grid));
        bool same_codes = false, same_scales = false;
        switch (kind) {
        case QT_GPTQ_FP8_TENSOR:
        case QT_GPTQ_FP8_CHANNEL: {
            const qt_ct_strategy st = kind == QT_GPTQ_FP8_TENSOR ? QT_CT_TENSOR : QT_CT_CHANNEL;
            CHECK_OK(qt_ct_fp8_quantize(p.W, R, C, st, QT_CT_BF16, q, sc));
            same_codes = memcmp(q, g.q, (size_t)n) == 0;
            same_scales = memcmp(sc, g.scales, (size_t)(st == QT_CT_TENSOR ? 1 : R) * sizeof *sc) == 0;
            CHECK_OK(qt_ct_fp8_dequantize(q, sc, R, C, st, QT_CT_BF16, dec));
            break;
        }
        case QT_GPTQ_FP8_BLOCK:
            CHECK_OK(qt_ct_fp8_block_quantize(p.W, R, C, 128, 128, QT_CT_BF16, q, sc));
            same_codes = memcmp(q, g.q, (size_t)n) == 0;
            same_scales = memcmp(sc, g.scales, 4 * sizeof *sc) == 0; /* 2 x 2 blocks */
            CHECK_OK(qt_ct_fp8_block_dequantize(q, sc, R, C, 128, 128, QT_CT_BF16, dec));
            break;
        case QT_GPTQ_NVFP4:
            CHECK_OK(qt_ct_nvfp4_quantize_gs(p.W, R, C, QT_CT_BF16, shared, packed, sc8));
            qt_ct_pack_fp4(g.q, n, mine);
            same_codes = memcmp(packed, mine, (size_t)n / 2) == 0;
            same_scales = memcmp(sc8, g.scale_codes, (size_t)n / 16) == 0;
            CHECK_OK(qt_ct_nvfp4_dequantize(packed, sc8, shared, R, C, dec));
            break;
        case QT_GPTQ_MXFP4:
            CHECK_OK(qt_ct_mxfp4_quantize(p.W, R, C, packed, sc8));
            qt_ct_pack_fp4(g.q, n, mine);
            same_codes = memcmp(packed, mine, (size_t)n / 2) == 0;
            same_scales = memcmp(sc8, g.scale_codes, (size_t)n / 32) == 0;
            CHECK_OK(qt_ct_mxfp4_dequantize(packed, sc8, R, C, dec));
            break;
        }
        CHECK_MSG(same_codes, "%s: RTN codes differ from the codec's", float_names[k]);
        CHECK_MSG(same_scales, "%s: RTN scales differ from the codec's", float_names[k]);
        CHECK_MSG(memcmp(dec, rtn, (size_t)n * sizeof *dec) == 0, "%s: grid values differ from the dequantizer's",
                  float_names[k]);
        uint8_t *codes = malloc((size_t)n);
        memcpy(codes, g.q, (size_t)n);
        CHECK_OK(qt_gptq_quantize(gq, R, C, I, &grid, NULL, NULL));
        CHECK_MSG(memcmp(gq, rtn, (size_t)n * sizeof *gq) == 0, "%s: H = I is not RTN", float_names[k]);
        CHECK_MSG(memcmp(codes, g.q, (size_t)n) == 0, "%s: H = I codes differ", float_names[k]);
        free(codes);
        free(rtn);
        free(gq);
        qt_gptq_ct_float_free(&g);
    }
    qt_gptq_ct_float g;
    CHECK_STATUS(qt_gptq_ct_float_init(&g, QT_GPTQ_FP8_BLOCK, QT_CT_BF16, 4, 192, 0), QT_ERR_SHAPE);
    CHECK_STATUS(qt_gptq_ct_float_init(&g, QT_GPTQ_NVFP4, QT_CT_BF16, 4, 24, 1.0f), QT_ERR_SHAPE);
    CHECK_STATUS(qt_gptq_ct_float_init(&g, QT_GPTQ_NVFP4, QT_CT_BF16, 4, 32, 0.0f), QT_ERR_ARG);
    free(q);
    free(packed);
    free(mine);
    free(sc8);
    free(sc);
    free(dec);
    free(I);
    free_problem(&p);
}

/* The output error from the held-out Hessian equals the one from the rows. */
static void test_output_error_h(void) {
    problem p = make_problem(12, 64);
    float *q = copy(p.W, 12 * 64);
    for (int64_t i = 0; i < 12 * 64; i++) q[i] += 0.01f * gauss();
    qt_gptq_hessian h;
    CHECK_OK(qt_gptq_hessian_init(&h, 64));
    CHECK_OK(qt_gptq_hessian_add(&h, p.xt, p.n_test));
    double *Ht = malloc(64 * 64 * sizeof *Ht), e;
    CHECK_OK(qt_gptq_hessian_get(&h, Ht));
    CHECK_OK(qt_gptq_output_error_h(p.W, q, 12, 64, Ht, &e));
    const double want = qt_gptq_output_error(p.W, q, 12, 64, p.xt, p.n_test);
    /* H's chunks are summed in float (test_hessian's bound: about 1.5e-5 relative per entry) */
    CHECK_MSG(fabs(e - want) <= 1e-5 * want, "%.12g vs %.12g", e, want);
    qt_gptq_hessian_free(&h);
    free(Ht);
    free(q);
    free_problem(&p);
}

/* Layer-output error on held-out rows: GPTQ below RTN, with and without act order. */
static void compare(const char *what, problem *p, const qt_gptq_grid *grid, bool act_order) {
    float *rtn = copy(p->W, p->rows * p->cols), *gq = copy(p->W, p->rows * p->cols);
    CHECK_OK(qt_gptq_rtn(rtn, p->rows, p->cols, grid));
    qt_gptq_opts o = qt_gptq_opts_default();
    o.act_order = act_order;
    o.block = 64; /* two lazy blocks and more on 256 columns */
    qt_gptq_stats st;
    CHECK_OK(qt_gptq_quantize(gq, p->rows, p->cols, p->H, grid, &o, &st));
    const double e_rtn = qt_gptq_output_error(p->W, rtn, p->rows, p->cols, p->xt, p->n_test);
    const double e_gptq = qt_gptq_output_error(p->W, gq, p->rows, p->cols, p->xt, p->n_test);
    printf("  %-22s act_order=%d  held-out output error: RTN %.5g  GPTQ %.5g  (ratio %.3f)\n", what, act_order, e_rtn,
           e_gptq, e_gptq / e_rtn);
    CHECK_MSG(e_gptq < 0.9 * e_rtn, "%s: GPTQ %g vs RTN %g", what, e_gptq, e_rtn);
    free(rtn);
    free(gq);
}

static void test_gptq_beats_rtn(void) {
    const int64_t R = 32, C = 256;
    problem p = make_problem(R, C);
    for (int ao = 0; ao < 2; ao++) {
        const int bits[2] = {4, 8};
        for (int k = 0; k < 2; k++) {
            qt_gptq_ct_int g;
            CHECK_OK(qt_gptq_ct_int_init(&g, bits[k], k == 0 ? false : true, QT_CT_BF16, R, C, 128));
            qt_gptq_grid grid = qt_gptq_ct_int_grid(&g);
            compare(bits[k] == 4 ? "w4a16-asym g128" : "w8a16 g128", &p, &grid, ao);
            qt_gptq_ct_int_free(&g);
        }
        qt_gptq_ct_int g;
        CHECK_OK(qt_gptq_ct_int_init(&g, 4, true, QT_CT_BF16, R, C, C));
        qt_gptq_grid grid = qt_gptq_ct_int_grid(&g);
        compare("w4a16 per channel", &p, &grid, ao);
        qt_gptq_ct_int_free(&g);
        for (int k = 0; k < N_FLOAT; k++) {
            qt_gptq_ct_float fg;
            CHECK_OK(qt_gptq_ct_float_init(&fg, float_kinds[k], QT_CT_BF16, R, C,
                                           float_kinds[k] == QT_GPTQ_NVFP4 ? nvfp4_gs(p.W, R * C) : 0.0f));
            qt_gptq_grid gr = qt_gptq_ct_float_grid(&fg);
            compare(float_names[k], &p, &gr, ao);
            qt_gptq_ct_float_free(&fg);
        }
        for (int t = 0; t < N_GGUF; t++) {
            qt_gptq_gguf gg;
            CHECK_OK(qt_gptq_gguf_init(&gg, gguf_types[t], R, C, NULL));
            qt_gptq_grid gr = qt_gptq_gguf_grid(&gg);
            compare(qt_type_get(gguf_types[t])->name, &p, &gr, ao);
            qt_gptq_gguf_free(&gg);
        }
    }
    free_problem(&p);
}

/* An input column that is always 0: H_ii = 0, so W[:, i] = 0 and its codes
 * are the grid's zero (llm-compressor's handling). */
static void test_dead_columns(void) {
    const int64_t R = 8, C = 64;
    problem p = make_problem(R, C);
    for (int64_t j = 0; j < C; j++) p.H[5 * C + j] = p.H[j * C + 5] = 0.0;
    qt_gptq_ct_int g;
    CHECK_OK(qt_gptq_ct_int_init(&g, 4, true, QT_CT_F32, R, C, 32));
    qt_gptq_grid grid = qt_gptq_ct_int_grid(&g);
    float *w = copy(p.W, R * C);
    qt_gptq_stats st;
    CHECK_OK(qt_gptq_quantize(w, R, C, p.H, &grid, NULL, &st));
    CHECK_EQ_INT(st.dead_cols, 1);
    for (int64_t r = 0; r < R; r++) {
        CHECK(w[r * C + 5] == 0.0f);
        CHECK_EQ_INT(g.q[r * C + 5], 0);
    }
    free(w);
    qt_gptq_ct_int_free(&g);
    free_problem(&p);
}

/* An indefinite Hessian: the damping is raised (x10) until the Cholesky
 * factorization succeeds, and the retries are reported; with too few retries
 * it is an error, never a silent RTN. */
static void test_cholesky_retry(void) {
    const int64_t R = 2, C = 2;
    double H[4] = {1.0, 3.0, 3.0, 1.0}; /* eigenvalues 4 and -2 */
    float W0[4] = {0.3f, -0.2f, 0.1f, 0.05f}, w[4];
    qt_gptq_ct_int g;
    CHECK_OK(qt_gptq_ct_int_init(&g, 8, true, QT_CT_F32, R, C, 2));
    qt_gptq_grid grid = qt_gptq_ct_int_grid(&g);
    qt_gptq_stats st;
    memcpy(w, W0, sizeof w);
    CHECK_OK(qt_gptq_quantize(w, R, C, H, &grid, NULL, &st));
    CHECK_EQ_INT(st.retries, 3); /* 0.01, 0.1, 1 fail; 10 works */
    CHECK_NEAR(st.damp, 10.0, 1e-9);
    qt_gptq_opts o = qt_gptq_opts_default();
    o.max_retries = 2;
    memcpy(w, W0, sizeof w);
    CHECK_STATUS(qt_gptq_quantize(w, R, C, H, &grid, &o, &st), QT_ERR_RANGE);
    CHECK(strstr(qt_last_error(), "not positive definite") != NULL);
    double Hn[4] = {1.0, 0.0, 0.0, NAN};
    CHECK_STATUS(qt_gptq_quantize(w, R, C, Hn, &grid, NULL, &st), QT_ERR_RANGE);
    qt_gptq_ct_int_free(&g);
}

/* The same inputs give the same bits, run after run. */
static void test_deterministic(void) {
    uint64_t seed = rng;
    problem a = make_problem(16, 256);
    rng = seed;
    problem b = make_problem(16, 256);
    CHECK(memcmp(a.H, b.H, 256 * 256 * sizeof(double)) == 0);
    uint8_t *bytes[2];
    for (int k = 0; k < 2; k++) {
        qt_gptq_gguf g;
        CHECK_OK(qt_gptq_gguf_init(&g, QT_TYPE_Q4_K, 16, 256, NULL));
        qt_gptq_grid grid = qt_gptq_gguf_grid(&g);
        qt_gptq_opts o = qt_gptq_opts_default();
        o.act_order = true;
        float *w = copy(k ? b.W : a.W, 16 * 256);
        CHECK_OK(qt_gptq_quantize(w, 16, 256, k ? b.H : a.H, &grid, &o, NULL));
        bytes[k] = malloc(g.row_bytes * 16);
        memcpy(bytes[k], g.bytes, g.row_bytes * 16);
        free(w);
        qt_gptq_gguf_free(&g);
    }
    CHECK(memcmp(bytes[0], bytes[1], qt_row_size(QT_TYPE_Q4_K, 256) * 16) == 0);
    free(bytes[0]);
    free(bytes[1]);
    free_problem(&a);
    free_problem(&b);
}

/* Widths past one 256-column tile (gptq.c CHOL_NB): n = 600 takes steps of
 * 256, 256 and 88 columns, and the inverse's 64-column tiles end on one of 24.
 * The factor is LAPACK's (H + damp I)^-1 = U^T U computed the long way round
 * (dpotrf, dpotri, dpotrf: llm-compressor's order) within float rounding, and
 * the same bits with no pool and with pools of 2 and 3 threads; so is GPTQ's
 * output on those columns. */
static void test_factor_tiles(void) {
    const int64_t R = 24, n = 600;
    problem p = make_problem(R, n);
    double mean = 0;
    for (int64_t i = 0; i < n; i++) mean += p.H[i * n + i];
    const double damp = 0.01 * mean / (double)n;
    double *ref = malloc((size_t)(n * n) * sizeof *ref);
    for (int64_t i = 0; i < n * n; i++) ref[i] = p.H[i];
    for (int64_t i = 0; i < n; i++) ref[i * n + i] += damp;
    CHECK_EQ_INT(LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', (lapack_int)n, ref, (lapack_int)n), 0);
    CHECK_EQ_INT(LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'L', (lapack_int)n, ref, (lapack_int)n), 0);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = i + 1; j < n; j++) ref[i * n + j] = ref[j * n + i];
    CHECK_EQ_INT(LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', (lapack_int)n, ref, (lapack_int)n), 0);
    double amax = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = i; j < n; j++) amax = fmax(amax, fabs(ref[i * n + j]));
    qt_threadpool *pools[3] = {NULL, NULL, NULL};
    CHECK_OK(qt_threadpool_create(2, &pools[1]));
    CHECK_OK(qt_threadpool_create(3, &pools[2]));
    float *U[3], *w[3];
    uint8_t *codes[3];
    double *Hk = malloc((size_t)(n * n) * sizeof *Hk);
    for (int k = 1; k < 3; k++) { /* the Hessian's panels and its mirrored copy's tiles on a pool: the same H */
        qt_gptq_hessian h;
        CHECK_OK(qt_gptq_hessian_init(&h, n));
        h.pool = pools[k];
        CHECK_OK(qt_gptq_hessian_add(&h, p.xc, 200));
        CHECK_OK(qt_gptq_hessian_add(&h, p.xc + 200 * n, p.n_cal - 200));
        CHECK_OK(qt_gptq_hessian_get(&h, Hk));
        CHECK(memcmp(Hk, p.H, (size_t)(n * n) * sizeof *Hk) == 0);
        qt_gptq_hessian_free(&h);
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) CHECK(p.H[i * n + j] == p.H[j * n + i]);
    free(Hk);
    for (int k = 0; k < 3; k++) {
        U[k] = malloc((size_t)(n * n) * sizeof *U[k]);
        CHECK(qt__gptq_inverse_factor(p.H, n, damp, U[k], pools[k]));
        qt_gptq_ct_int g;
        CHECK_OK(qt_gptq_ct_int_init(&g, 4, true, QT_CT_BF16, R, n, 120));
        qt_gptq_grid grid = qt_gptq_ct_int_grid(&g);
        qt_gptq_opts o = qt_gptq_opts_default();
        o.pool = pools[k];
        o.act_order = true;
        w[k] = copy(p.W, R * n);
        CHECK_OK(qt_gptq_quantize(w[k], R, n, p.H, &grid, &o, NULL));
        codes[k] = malloc((size_t)(R * n));
        for (int64_t i = 0; i < R * n; i++) codes[k][i] = (uint8_t)g.q[i];
        qt_gptq_ct_int_free(&g);
    }
    double worst = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            const double want = j >= i ? ref[i * n + j] : 0.0;
            worst = fmax(worst, fabs((double)U[0][i * n + j] - want));
        }
    printf("  n = %lld: max |U - LAPACK's| = %.3g (max |U| %.3g)\n", (long long)n, worst, amax);
    CHECK_MSG(worst <= 1e-6 * amax, "%.3g vs %.3g", worst, amax);
    for (int k = 1; k < 3; k++) {
        CHECK(memcmp(U[0], U[k], (size_t)(n * n) * sizeof *U[0]) == 0);
        CHECK(memcmp(w[0], w[k], (size_t)(R * n) * sizeof *w[0]) == 0);
        CHECK(memcmp(codes[0], codes[k], (size_t)(R * n)) == 0);
    }
    for (int k = 0; k < 3; k++) free(U[k]), free(w[k]), free(codes[k]), qt_threadpool_free(pools[k]);
    free(ref);
    free_problem(&p);
}

/* The grids of test_row_panels: a GGUF K-quant, integer groups (asym, and
 * per channel: begun before the loop), FP8 blocks (128-row panels), NVFP4,
 * and FP8 per tensor (a scale from every row: begun before the loop). */
enum { PG_Q4_K, PG_INT4_G32, PG_INT8_CHANNEL, PG_FP8_BLOCK, PG_NVFP4, PG_FP8_TENSOR, N_PG };
typedef struct panel_grid { qt_gptq_gguf gg; qt_gptq_ct_int ci; qt_gptq_ct_float cf; } panel_grid;

static qt_gptq_grid panel_grid_init(panel_grid *a, int kind, int64_t rows, int64_t cols, float nvfp4_scale) {
    *a = (panel_grid){0};
    switch (kind) {
    case PG_Q4_K: CHECK_OK(qt_gptq_gguf_init(&a->gg, QT_TYPE_Q4_K, rows, cols, NULL)); return qt_gptq_gguf_grid(&a->gg);
    case PG_INT4_G32: CHECK_OK(qt_gptq_ct_int_init(&a->ci, 4, false, QT_CT_BF16, rows, cols, 32)); break;
    case PG_INT8_CHANNEL: CHECK_OK(qt_gptq_ct_int_init(&a->ci, 8, true, QT_CT_BF16, rows, cols, cols)); break;
    case PG_FP8_BLOCK: CHECK_OK(qt_gptq_ct_float_init(&a->cf, QT_GPTQ_FP8_BLOCK, QT_CT_BF16, rows, cols, 0.0f)); break;
    case PG_NVFP4: CHECK_OK(qt_gptq_ct_float_init(&a->cf, QT_GPTQ_NVFP4, QT_CT_BF16, rows, cols, nvfp4_scale)); break;
    default: CHECK_OK(qt_gptq_ct_float_init(&a->cf, QT_GPTQ_FP8_TENSOR, QT_CT_BF16, rows, cols, 0.0f)); break;
    }
    return kind == PG_INT4_G32 || kind == PG_INT8_CHANNEL ? qt_gptq_ct_int_grid(&a->ci) : qt_gptq_ct_float_grid(&a->cf);
}

static void panel_grid_free(panel_grid *a) {
    qt_gptq_gguf_free(&a->gg);
    qt_gptq_ct_int_free(&a->ci);
    qt_gptq_ct_float_free(&a->cf);
}

/* GPTQ's column loop runs over panels of rows on the pool (64 rows, 128 for
 * FP8 blocks; gptq.c panel_rows): rows are independent in the loop, so on 300
 * rows (panels ending on 44 rows) every grid gives the same bits with no pool
 * and pools of 2 and 3, and, where a row's scales are its own, each panel's
 * rows are those of the panel quantized as a matrix of its own: the loop over
 * all rows at once (the split is exact, not just within rounding). */
static void test_row_panels(void) {
    const int64_t R = 300, C = 256;
    problem p = make_problem(R, C);
    const float gs = nvfp4_gs(p.W, R * C);
    qt_threadpool *pools[3] = {NULL, NULL, NULL};
    CHECK_OK(qt_threadpool_create(2, &pools[1]));
    CHECK_OK(qt_threadpool_create(3, &pools[2]));
    for (int kind = 0; kind < N_PG; kind++)
        for (int ao = 0; ao < 2; ao++) {
            qt_gptq_opts o = qt_gptq_opts_default();
            o.act_order = ao;
            o.block = 64; /* four lazy blocks */
            float *w[3];
            for (int k = 0; k < 3; k++) {
                panel_grid a;
                qt_gptq_grid grid = panel_grid_init(&a, kind, R, C, gs);
                o.pool = pools[k];
                w[k] = copy(p.W, R * C);
                CHECK_OK(qt_gptq_quantize(w[k], R, C, p.H, &grid, &o, NULL));
                panel_grid_free(&a);
                if (k) CHECK_MSG(memcmp(w[0], w[k], (size_t)(R * C) * sizeof *w[0]) == 0, "grid %d, act order %d, %d threads", kind, ao, k + 1);
            }
            const int64_t P = kind == PG_FP8_BLOCK ? 128 : 64;
            for (int64_t a0 = 0; kind != PG_FP8_TENSOR && a0 < R; a0 += P) { /* FP8_TENSOR's scale is every row's */
                const int64_t m = R - a0 < P ? R - a0 : P;
                panel_grid a;
                qt_gptq_grid grid = panel_grid_init(&a, kind, m, C, gs);
                o.pool = NULL;
                float *sub = copy(p.W + a0 * C, m * C);
                CHECK_OK(qt_gptq_quantize(sub, m, C, p.H, &grid, &o, NULL));
                CHECK_MSG(memcmp(sub, w[0] + a0 * C, (size_t)(m * C) * sizeof *sub) == 0, "grid %d, act order %d, rows %lld..",
                          kind, ao, (long long)a0);
                free(sub);
                panel_grid_free(&a);
            }
            for (int k = 0; k < 3; k++) free(w[k]);
        }
    for (int k = 0; k < 3; k++) qt_threadpool_free(pools[k]);
    free_problem(&p);
}

/* One linear through a work (or none): W's grid values, its stats. */
static float *work_run(const problem *p, const float *W, bool act_order, qt_gptq_work *w, qt_gptq_stats *st) {
    qt_gptq_ct_int g;
    CHECK_OK(qt_gptq_ct_int_init(&g, 4, true, QT_CT_BF16, p->rows, p->cols, 32));
    qt_gptq_grid grid = qt_gptq_ct_int_grid(&g);
    qt_gptq_opts o = qt_gptq_opts_default();
    o.act_order = act_order;
    o.work = w;
    float *q = copy(W, p->rows * p->cols);
    CHECK_OK(qt_gptq_quantize(q, p->rows, p->cols, p->H, &grid, &o, st));
    qt_gptq_ct_int_free(&g);
    return q;
}

static bool same_run(const problem *p, const float *W, bool act_order, qt_gptq_work *w, bool reused) {
    qt_gptq_stats sa, sb;
    float *a = work_run(p, W, act_order, NULL, &sa), *b = work_run(p, W, act_order, w, &sb);
    const bool same = !memcmp(a, b, (size_t)(p->rows * p->cols) * sizeof *a) && sa.loss == sb.loss &&
                      sa.damp == sb.damp && sa.retries == sb.retries && sa.dead_cols == sb.dead_cols &&
                      sb.factor_reused == reused && !sa.factor_reused;
    free(a);
    free(b);
    return same;
}

/* A work kept across calls (qt_gptq_work): the same bits as a call without
 * one, whether it factors or reuses the factor (the same h_id, width and
 * options), grows (a wider linear after a narrower one), or is handed a new
 * H; a second linear on the same H (q/k/v, gate/up) reuses the factor. And
 * the Hessian's caller-owned scratch gives the same sums as its own. */
static void test_work_reuse(void) {
    problem a = make_problem(16, 256), b = make_problem(8, 128), c = make_problem(12, 512);
    float *a2 = malloc(16 * 256 * sizeof *a2); /* another linear on a's input */
    for (int64_t i = 0; i < 16 * 256; i++) a2[i] = 0.05f * gauss();
    qt_gptq_work w = {0};
    w.h_id = 1;
    CHECK(same_run(&a, a.W, false, &w, false));
    CHECK(same_run(&a, a2, false, &w, true));
    CHECK(same_run(&a, a2, true, &w, false)); /* act order: another factor */
    CHECK(same_run(&a, a.W, true, &w, true));
    w.h_id = 2;
    CHECK(same_run(&b, b.W, false, &w, false)); /* narrower */
    CHECK(same_run(&b, b.W, false, &w, true));
    w.h_id = 3;
    CHECK(same_run(&c, c.W, true, &w, false)); /* wider: the buffers grow */
    CHECK(same_run(&c, c.W, true, &w, true));
    w.h_id = 4;
    CHECK(same_run(&a, a2, false, &w, false));
    qt_gptq_work_free(&w);
    /* the retries and the damping are the factor's, reported again when it is reused */
    double H[4] = {1.0, 3.0, 3.0, 1.0}; /* eigenvalues 4 and -2 */
    problem r = {.rows = 2, .cols = 2, .H = H};
    float W0[4] = {0.3f, -0.2f, 0.1f, 0.05f};
    qt_gptq_ct_int g;
    CHECK_OK(qt_gptq_ct_int_init(&g, 8, true, QT_CT_F32, 2, 2, 2));
    qt_gptq_grid grid = qt_gptq_ct_int_grid(&g);
    qt_gptq_opts o = qt_gptq_opts_default();
    o.work = &w;
    for (int k = 0; k < 2; k++) {
        qt_gptq_stats st;
        float q[4];
        memcpy(q, W0, sizeof q);
        CHECK_OK(qt_gptq_quantize(q, 2, 2, r.H, &grid, &o, &st));
        CHECK_EQ_INT(st.retries, 3);
        CHECK_NEAR(st.damp, 10.0, 1e-9);
        CHECK(st.factor_reused == (k == 1));
    }
    qt_gptq_ct_int_free(&g);
    qt_gptq_work_free(&w);
    /* the Hessian with a scratch buffer of the caller's */
    qt_gptq_hessian h[2];
    for (int k = 0; k < 2; k++) {
        CHECK_OK(qt_gptq_hessian_init(&h[k], 256));
        float *sc = k ? malloc((size_t)qt_gptq_hessian_scratch_floats(&h[k]) * sizeof *sc) : NULL;
        h[k].scratch = sc;
        CHECK_OK(qt_gptq_hessian_add(&h[k], a.xc, 200));
        CHECK_OK(qt_gptq_hessian_add(&h[k], a.xc + 200 * 256, a.n_cal - 200));
        free(sc);
        h[k].scratch = NULL;
    }
    double *H0 = malloc(256 * 256 * sizeof *H0), *H1 = malloc(256 * 256 * sizeof *H1);
    CHECK_OK(qt_gptq_hessian_get(&h[0], H0));
    CHECK_OK(qt_gptq_hessian_get(&h[1], H1));
    CHECK(memcmp(H0, H1, 256 * 256 * sizeof *H0) == 0);
    CHECK(memcmp(H0, a.H, 256 * 256 * sizeof *H0) == 0);
    free(H0);
    free(H1);
    qt_gptq_hessian_free(&h[0]);
    qt_gptq_hessian_free(&h[1]);
    free(a2);
    free_problem(&a);
    free_problem(&b);
    free_problem(&c);
}

/* The ct int grid's column kernel (gptq_grid_avx2.c) gives its scalar reference's codes and values
 * bit for bit: every dtype, 2/4/8 bits, symmetric and not, lengths around the 8 lanes, values past
 * the clamp, ties, subnormal and signed-zero values, tiny and huge scales. */
static void test_ct_int_col_kernel(void) {
#if QT_ARCH_X86
    if (qt__cpu_level_get() < QT__CPU_AVX2) SKIP("this CPU (or QUANTA_CPU) has no AVX2");
    const int dts[3] = {QT_CT_BF16, QT_CT_F16, QT_CT_F32}, bits[3] = {2, 4, 8};
    const int64_t lens[6] = {1, 7, 8, 9, 64, 70};
    float w[70], sc[70], q0[70], q1[70];
    int8_t zp[70], c0[70], c1[70];
    int cases = 0;
    for (int d = 0; d < 3; d++)
        for (int b = 0; b < 3; b++)
            for (int sym = 0; sym < 2; sym++)
                for (int l = 0; l < 6; l++)
                    for (int rep = 0; rep < 20; rep++) {
                        const int64_t n = lens[l];
                        const int half = 1 << (bits[b] - 1);
                        for (int64_t r = 0; r < n; r++) {
                            const float u = (float)unif();
                            sc[r] = rep % 5 == 0 ? 0x1.0p-7f : rep % 5 == 1 ? 1e-30f : (float)(0.001 + unif());
                            w[r] = (float)((unif() * 2.0 - 1.0) * 1.5 * half) * sc[r]; /* past the clamp too */
                            if (rep % 4 == 1) w[r] = sc[r] * (float)((int)(u * 2 * half) - half) * 0.5f * 3.0f; /* ties */
                            if (rep % 7 == 3) w[r] = r % 2 ? -0.0f : 1e-40f;
                            if (rep % 9 == 5) w[r] = (float)(unif() - 0.5) * 1e30f;
                            zp[r] = (int8_t)((int)(unif() * 2 * half) - half);
                        }
                        const int8_t *z = sym ? NULL : zp;
                        qt__ct_int_col_ref(w, sc, z, n, bits[b], dts[d], c0, q0);
                        qt__ct_int_col_avx2(w, sc, z, n, bits[b], dts[d], c1, q1);
                        CHECK_MSG(!memcmp(c0, c1, (size_t)n) && !memcmp(q0, q1, (size_t)n * sizeof *q0),
                                  "dtype %d, %d bits, symmetric %d, %lld rows: not the reference's bits", dts[d], bits[b],
                                  sym, (long long)n);
                        cases++;
                    }
    CHECK(cases == 3 * 3 * 2 * 6 * 20);
#else
    SKIP("not an x86 build");
#endif
}

int main(void) {
    QT_RUN(test_hessian);
    QT_RUN(test_ct_int_identity);
    QT_RUN(test_gguf_identity);
    QT_RUN(test_ct_float_identity);
    QT_RUN(test_output_error_h);
    QT_RUN(test_gptq_beats_rtn);
    QT_RUN(test_dead_columns);
    QT_RUN(test_cholesky_retry);
    QT_RUN(test_deterministic);
    QT_RUN(test_factor_tiles);
    QT_RUN(test_row_panels);
    QT_RUN(test_work_reuse);
    QT_RUN(test_ct_int_col_kernel);
    return qt_test_finish("gptq");
}
