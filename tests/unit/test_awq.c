/* AWQ's and SmoothQuant's numeric core (lib/quant/awq.c, lib/quant/smoothquant.c)
 * on small matrices: the Hessian form of the output error equals the direct
 * one, the candidate scales' normalisation, AWQ's search beats plain RTN on
 * held-out rows of inputs with outlier channels, folding keeps the float
 * function, SmoothQuant's formula and its dead channels, determinism. */
#include <math.h>

#include "qtest.h"
#include "quanta.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
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

/* Inputs whose channels j % 16 == 3 are 12x larger (activation outliers, the paper's Fig. 2). */
static float *outlier_inputs(int64_t n_rows, int64_t n) {
    float *x = malloc((size_t)(n_rows * n) * sizeof *x);
    for (int64_t t = 0; t < n_rows; t++)
        for (int64_t j = 0; j < n; j++) x[t * n + j] = gauss() * (j % 16 == 3 ? 12.0f : 1.0f);
    return x;
}

static double *hessian_of(const float *x, int64_t n_rows, int64_t n) {
    qt_gptq_hessian h;
    double *H = malloc((size_t)(n * n) * sizeof *H);
    CHECK_OK(qt_gptq_hessian_init(&h, n));
    CHECK_OK(qt_gptq_hessian_add(&h, x, n_rows));
    CHECK_OK(qt_gptq_hessian_get(&h, H));
    qt_gptq_hessian_free(&h);
    return H;
}

/* int4 symmetric groups of 32 (w4a16's arithmetic), through the GPTQ grid's RTN */
static qt_status int4_fake_quant(void *ctx, int k, float *W, int64_t rows, int64_t cols) {
    (void)ctx;
    (void)k;
    qt_gptq_ct_int g;
    qt_status s = qt_gptq_ct_int_init(&g, 4, true, QT_CT_BF16, rows, cols, 32);
    qt_gptq_grid grid = qt_gptq_ct_int_grid(&g);
    if (s == QT_OK) s = qt_gptq_rtn(W, rows, cols, &grid);
    qt_gptq_ct_int_free(&g);
    return s;
}

static void test_output_error(void) {
    const int64_t R = 8, C = 32, N = 300;
    float *x = outlier_inputs(N, C), *W = malloc(R * C * sizeof *W), *Q = malloc(R * C * sizeof *Q);
    for (int64_t i = 0; i < R * C; i++) W[i] = gauss(), Q[i] = W[i] + 0.1f * gauss();
    double *H = hessian_of(x, N, C);
    const double a = qt_awq_output_error(W, Q, R, C, H), b = qt_gptq_output_error(W, Q, R, C, x, N); /* mean ||(W - Q) x||^2, directly */
    /* H's chunks are summed in float (test_gptq.c test_hessian's bound: about 1.5e-5 relative per entry) */
    CHECK_MSG(fabs(a - b) < 1e-5 * b, "Hessian form %.12g, direct %.12g", a, b);
    CHECK(qt_awq_output_error(W, W, R, C, H) == 0.0);
    free(x), free(W), free(Q), free(H);
}

/* Wider than one panel of the Gram matrix (256 columns), with a short last panel and an odd panel
 * count (608 = 256 + 256 + 96): the panelled <E^T E, H> / 2 against the direct mean ||(W - Q) x||^2,
 * and the search's bits at 1 and 3 threads (the panels are paired over the threads). */
static void test_output_error_panels(void) {
    const int64_t R = 5, C = 608, N = 700;
    float *x = outlier_inputs(N, C), *W = malloc(R * C * sizeof *W), *Q = malloc(R * C * sizeof *Q);
    for (int64_t i = 0; i < R * C; i++) W[i] = gauss(), Q[i] = W[i] + 0.1f * gauss();
    double *H = hessian_of(x, N, C);
    const double a = qt_awq_output_error(W, Q, R, C, H), b = qt_gptq_output_error(W, Q, R, C, x, N);
    CHECK_MSG(fabs(a - b) < 1e-5 * b, "Gram form %.12g, direct %.12g", a, b);
    float *x_mean = malloc((size_t)C * sizeof *x_mean), s1[608], s3[608];
    qt_act_stats st;
    CHECK_OK(qt_act_stats_init(&st, C));
    qt_act_stats_add(&st, x, N);
    qt_act_stats_mean(&st, x_mean);
    qt_act_stats_free(&st);
    const int64_t rows[1] = {R}, group[1] = {32};
    const float *Ws[1] = {W};
    qt_threadpool *tp = NULL;
    CHECK_OK(qt_threadpool_create(3, &tp));
    qt_awq_problem p = {.n_linears = 1, .W = Ws, .rows = rows, .group = group, .cols = C, .H = H, .x_mean = x_mean,
                        .n_grid = 4, .duo = true, .quant = int4_fake_quant};
    qt_awq_result r1, r3;
    CHECK_OK(qt_awq_search(&p, s1, &r1));
    p.pool = tp;
    CHECK_OK(qt_awq_search(&p, s3, &r3));
    CHECK(memcmp(s1, s3, sizeof s1) == 0 && r1.loss == r3.loss && r1.loss_rtn == r3.loss_rtn);
    qt_threadpool_free(tp);
    free(x), free(W), free(Q), free(H), free(x_mean);
}

static void test_scales(void) {
    const int64_t n = 6;
    const float x[6] = {0.5f, 2, 8, 1, 0, 3}, w[6] = {0.3f, 0.2f, 0.9f, 0.5f, 0.4f, 0.1f};
    float s[6];
    qt_awq_scales(x, NULL, n, 0.0, s); /* x^0 = 1 everywhere */
    for (int j = 0; j < n; j++) CHECK_NEAR(s[j], 1.0, 1e-6);
    for (int d = 0; d < 2; d++)
        for (double r = 0.05; r < 1; r += 0.3) {
            qt_awq_scales(x, d ? w : NULL, n, r, s);
            float lo = INFINITY, hi = 0;
            for (int j = 0; j < n; j++) lo = fminf(lo, s[j]), hi = fmaxf(hi, s[j]);
            CHECK_NEAR(hi * lo, 1.0, 1e-5); /* centred in log scale */
            CHECK(lo > 0 && isfinite(hi));   /* the zero channel is clamped, not 0 */
            if (!d) CHECK(s[2] > s[0]);      /* larger activations, larger scales */
        }
    /* duo at ratio 0.5: x^0.5 / (w^0.5 + 1e-4), up to the normalisation */
    qt_awq_scales(x, w, n, 0.5, s);
    const double r01 = (sqrt(0.5) / (sqrt(0.3) + 1e-4)) / (sqrt(2.0) / (sqrt(0.2) + 1e-4));
    CHECK_NEAR(s[0] / s[1], r01, 1e-5);
}

typedef struct awq_case {
    int64_t rows[3], cols, n_cal, n_test;
    float *W[3], *xc, *xt;
    double *H;
    float *x_mean;
} awq_case;

static awq_case make_case(void) {
    awq_case c = {{48, 16, 16}, 64, 1024, 512, {0}, NULL, NULL, NULL, NULL};
    c.xc = outlier_inputs(c.n_cal, c.cols);
    c.xt = outlier_inputs(c.n_test, c.cols);
    for (int k = 0; k < 3; k++) {
        c.W[k] = malloc((size_t)(c.rows[k] * c.cols) * sizeof *c.W[k]);
        for (int64_t i = 0; i < c.rows[k] * c.cols; i++) c.W[k][i] = 0.05f * gauss();
    }
    c.H = hessian_of(c.xc, c.n_cal, c.cols);
    qt_act_stats a;
    CHECK_OK(qt_act_stats_init(&a, c.cols));
    qt_act_stats_add(&a, c.xc, c.n_cal);
    c.x_mean = malloc((size_t)c.cols * sizeof *c.x_mean);
    qt_act_stats_mean(&a, c.x_mean);
    qt_act_stats_free(&a);
    return c;
}

static void free_case(awq_case *c) {
    for (int k = 0; k < 3; k++) free(c->W[k]);
    free(c->xc), free(c->xt), free(c->H), free(c->x_mean);
}

/* Three linears sharing an input with outlier channels (q/k/v): AWQ's scales,
 * folded as the driver folds them, lower the held-out output error well below
 * plain RTN's; the search is deterministic. */
static void test_awq_beats_rtn(void) {
    awq_case c = make_case();
    const int64_t group[3] = {32, 32, 32};
    qt_awq_problem p = {.n_linears = 3, .W = (const float *const *)c.W, .rows = c.rows, .group = group, .cols = c.cols,
                        .H = c.H, .x_mean = c.x_mean, .n_grid = 20, .duo = true, .quant = int4_fake_quant};
    float s[64], s2[64];
    qt_awq_result r, r2;
    CHECK_OK(qt_awq_search(&p, s, &r));
    CHECK_OK(qt_awq_search(&p, s2, &r2));
    CHECK(memcmp(s, s2, sizeof s) == 0 && r.loss == r2.loss);
    CHECK_MSG(r.ratio > 0 && r.loss < 0.8 * r.loss_rtn, "ratio %g, loss %g against RTN %g", r.ratio, r.loss, r.loss_rtn);
    /* held out: y = W x against Q(W s) (x / s), the folded form */
    double e_awq = 0, e_rtn = 0;
    float *xs = malloc((size_t)(c.n_test * c.cols) * sizeof *xs);
    for (int64_t t = 0; t < c.n_test; t++)
        for (int64_t j = 0; j < c.cols; j++) xs[t * c.cols + j] = c.xt[t * c.cols + j] / s[j];
    for (int k = 0; k < 3; k++) {
        const int64_t R = c.rows[k], C = c.cols;
        float *rtn = malloc((size_t)(R * C) * sizeof *rtn), *aw = malloc((size_t)(R * C) * sizeof *aw);
        memcpy(rtn, c.W[k], (size_t)(R * C) * sizeof *rtn);
        memcpy(aw, c.W[k], (size_t)(R * C) * sizeof *aw);
        CHECK_OK(int4_fake_quant(NULL, k, rtn, R, C));
        qt_smooth_scale_cols(aw, R, C, s);
        CHECK_OK(int4_fake_quant(NULL, k, aw, R, C));
        for (int64_t t = 0; t < c.n_test; t++)
            for (int64_t i = 0; i < R; i++) {
                double y = 0, yr = 0, ya = 0;
                for (int64_t j = 0; j < C; j++) {
                    y += (double)c.W[k][i * C + j] * c.xt[t * C + j];
                    yr += (double)rtn[i * C + j] * c.xt[t * C + j];
                    ya += (double)aw[i * C + j] * xs[t * C + j];
                }
                e_rtn += (y - yr) * (y - yr);
                e_awq += (y - ya) * (y - ya);
            }
        free(rtn);
        free(aw);
    }
    printf("  awq: ratio %.2f; held-out output error AWQ / RTN = %.3f (calibration %.3f)\n", r.ratio, e_awq / e_rtn,
           r.loss / r.loss_rtn);
    CHECK_MSG(e_awq < 0.8 * e_rtn, "held out: AWQ %g, RTN %g", e_awq, e_rtn);
    free(xs);
    free_case(&c);
}

/* Uniform inputs and weights: no scale helps much, and the search never
 * returns one that is worse than s = 1 on the calibration rows. */
static void test_awq_never_worse(void) {
    const int64_t R = 16, C = 64, N = 512;
    float *x = malloc((size_t)(N * C) * sizeof *x), *W = malloc((size_t)(R * C) * sizeof *W);
    for (int64_t i = 0; i < N * C; i++) x[i] = gauss();
    for (int64_t i = 0; i < R * C; i++) W[i] = gauss();
    double *H = hessian_of(x, N, C);
    qt_act_stats a;
    CHECK_OK(qt_act_stats_init(&a, C));
    qt_act_stats_add(&a, x, N);
    float xm[64], s[64];
    qt_act_stats_mean(&a, xm);
    CHECK(a.n_rows == N && a.abs_max[0] > 0);
    qt_act_stats_free(&a);
    const float *Ws[1] = {W};
    const int64_t rows[1] = {R}, group[1] = {32};
    qt_awq_problem p = {.n_linears = 1, .W = Ws, .rows = rows, .group = group, .cols = C, .H = H, .x_mean = xm,
                        .n_grid = 20, .duo = true, .quant = int4_fake_quant};
    qt_awq_result r;
    CHECK_OK(qt_awq_search(&p, s, &r));
    CHECK(r.loss <= r.loss_rtn);
    for (int64_t j = 0; j < C && r.ratio < 0; j++) CHECK(s[j] == 1.0f);
    p.n_grid = 0;
    CHECK_STATUS(qt_awq_search(&p, s, &r), QT_ERR_ARG);
    free(x), free(W), free(H);
}

/* Folding: the norm (or producing linear) divided by s and the consumer's
 * columns multiplied by s give the same outputs in float; the Hessian of the
 * smoothed input is diag(1/s) H diag(1/s). */
static void test_fold(void) {
    const int64_t R = 5, C = 8, N = 40;
    float W[40], Ws[40], norm[8], s[8], x[N * 8];
    for (int i = 0; i < 40; i++) Ws[i] = W[i] = gauss();
    for (int j = 0; j < 8; j++) norm[j] = 1.0f + 0.1f * gauss(), s[j] = 0.5f + (float)unif() * 3;
    for (int i = 0; i < N * 8; i++) x[i] = gauss();
    float nf[8];
    memcpy(nf, norm, sizeof nf);
    qt_smooth_unscale_rows(nf, C, 1, s);
    qt_smooth_scale_cols(Ws, R, C, s);
    double worst = 0;
    for (int64_t t = 0; t < N; t++)
        for (int64_t i = 0; i < R; i++) {
            double y = 0, ys = 0;
            for (int64_t j = 0; j < C; j++) {
                y += (double)W[i * C + j] * norm[j] * x[t * C + j];
                ys += (double)Ws[i * C + j] * nf[j] * x[t * C + j];
            }
            worst = fmax(worst, fabs(y - ys));
        }
    CHECK_MSG(worst < 1e-5, "folded output differs by %g", worst);
    float xs[N * 8];
    for (int64_t t = 0; t < N; t++)
        for (int64_t j = 0; j < C; j++) xs[t * C + j] = x[t * C + j] / s[j];
    double *H = hessian_of(x, N, C), *Hs = hessian_of(xs, N, C);
    qt_smooth_hessian(H, C, s);
    for (int64_t i = 0; i < C * C; i++) CHECK_NEAR(H[i], Hs[i], 1e-5 * (fabs(Hs[i]) + 1));
    free(H), free(Hs);
}

/* s_j = amax^a / wmax^(1-a); with a = 0.5 the smoothed activation and weight
 * maxima are equal; a channel that never saw a token gets 1, counted. */
static void test_smoothquant(void) {
    const int64_t R = 4, C = 5;
    float W[20], wmax[5] = {0}, s[5];
    for (int i = 0; i < 20; i++) W[i] = gauss();
    const float amax[5] = {4, 0.25f, 30, 0, 1};
    qt_smooth_weight_absmax(W, R, C, wmax);
    for (int64_t j = 0; j < C; j++) {
        float m = 0;
        for (int64_t i = 0; i < R; i++) m = fmaxf(m, fabsf(W[i * C + j]));
        CHECK(wmax[j] == m);
    }
    CHECK_EQ_INT(qt_smoothquant_scales(amax, wmax, C, 0.5, s), 1);
    CHECK(s[3] == 1.0f);
    for (int64_t j = 0; j < C; j++) {
        CHECK(isfinite(s[j]) && s[j] > 0);
        if (j != 3) CHECK_NEAR(amax[j] / s[j], wmax[j] * s[j], 1e-4 * amax[j] / s[j]);
    }
    CHECK_EQ_INT(qt_smoothquant_scales(amax, wmax, C, 1.0, s), 1); /* alpha 1: s = amax */
    CHECK_NEAR(s[2], 30.0, 1e-4);
    CHECK_EQ_INT(qt_smoothquant_scales(amax, wmax, C, 0.0, s), 1); /* alpha 0: s = 1 / wmax */
    CHECK_NEAR(s[0], 1.0 / wmax[0], 1e-5);
}

int main(void) {
    QT_RUN(test_output_error);
    QT_RUN(test_output_error_panels);
    QT_RUN(test_scales);
    QT_RUN(test_awq_beats_rtn);
    QT_RUN(test_awq_never_worse);
    QT_RUN(test_fold);
    QT_RUN(test_smoothquant);
    return qt_test_finish("awq");
}
