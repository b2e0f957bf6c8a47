/* K-quants (Q2_K..Q6_K, Q8_K) against llama.cpp's own output.
 *
 * ../shared/testvectors/ggml/ holds 8 rows x 512 floats quantized by
 * llama.cpp's ggml_quantize_chunk, with and without an importance matrix
 * (README.md there). Every byte of our quantizers and every bit of our
 * dequantizers must match. All calls go through the traits table via the
 * checked wrappers qt_quantize_rows / qt_dequantize_rows.
 */
#include "qtest.h"
#include "quanta.h"
#include "quant/blocks.h"

#define N_ROWS 8
#define N_COLS 512

static float *g_input;   /* (N_ROWS, N_COLS) */
static float *g_imatrix; /* (N_COLS) */

static void *read_vector(const char *name, size_t want) {
    char rel[256];
    snprintf(rel, sizeof rel, "testvectors/ggml/%s", name);
    size_t n;
    void *buf = qt_test_read(qt_test_shared(rel), &n);
    if (n != want) {
        QT_FAIL_AT("%s: %zu bytes, expected %zu", rel, n, want);
        free(buf);
        return NULL;
    }
    return buf;
}

static void load_inputs(void) {
    if (!g_input) g_input = read_vector("input.f32", sizeof(float) * N_ROWS * N_COLS);
    if (!g_imatrix) g_imatrix = read_vector("imatrix.f32", sizeof(float) * N_COLS);
}

/* Quantize input.f32 (optionally with imatrix.f32) and compare with
 * <name><suffix>.bin byte for byte; dequantize that file and compare with
 * <name><suffix>.dequant.f32 bit for bit. Prints the first mismatch. */
static void check_type(qt_type t, int with_imatrix) {
    load_inputs();
    if (!g_input || !g_imatrix) return;
    const qt_type_traits *tr = qt_type_get(t);
    CHECK(tr != NULL);
    if (!tr) return;
    const char *suffix = with_imatrix ? ".imatrix" : "";
    const size_t row_bytes = qt_row_size(t, N_COLS);
    CHECK(row_bytes > 0);
    if (row_bytes == 0) return;
    char name[128];

    snprintf(name, sizeof name, "%s%s.bin", tr->name, suffix);
    uint8_t *want = read_vector(name, row_bytes * N_ROWS);
    uint8_t *got = malloc(row_bytes * N_ROWS);
    memset(got, 0xA5, row_bytes * N_ROWS);
    CHECK_OK(qt_quantize_rows(t, g_input, got, N_ROWS, N_COLS, with_imatrix ? g_imatrix : NULL));
    if (want) {
        size_t n_diff = 0, first = 0;
        for (size_t i = 0; i < row_bytes * N_ROWS; i++)
            if (got[i] != want[i] && n_diff++ == 0) first = i;
        CHECK_MSG(n_diff == 0, "%s: %zu bytes differ; first at row %zu byte %zu (block %zu, offset %zu): got 0x%02x want 0x%02x",
                  name, n_diff, first / row_bytes, first % row_bytes, (first % row_bytes) / tr->block_bytes,
                  (first % row_bytes) % tr->block_bytes, got[first], want[first]);
    }

    snprintf(name, sizeof name, "%s%s.dequant.f32", tr->name, suffix);
    float *want_f = read_vector(name, sizeof(float) * N_ROWS * N_COLS);
    float *got_f = malloc(sizeof(float) * N_ROWS * N_COLS);
    for (int i = 0; i < N_ROWS * N_COLS; i++) got_f[i] = NAN; /* unwritten outputs must fail */
    if (want && want_f) {
        CHECK_OK(qt_dequantize_rows(t, want, got_f, N_ROWS, N_COLS));
        size_t n_diff = 0, first = 0;
        for (size_t i = 0; i < (size_t)N_ROWS * N_COLS; i++)
            if (memcmp(&got_f[i], &want_f[i], sizeof(float)) != 0 && n_diff++ == 0) first = i;
        CHECK_MSG(n_diff == 0, "%s: %zu values differ; first at row %zu col %zu: got %.9g want %.9g",
                  name, n_diff, first / N_COLS, first % N_COLS, got_f[first], want_f[first]);
    }
    free(want);
    free(got);
    free(want_f);
    free(got_f);
}

static void test_q2_K(void) { check_type(QT_TYPE_Q2_K, 0); }
static void test_q2_K_imatrix(void) { check_type(QT_TYPE_Q2_K, 1); }
static void test_q3_K(void) { check_type(QT_TYPE_Q3_K, 0); }
static void test_q3_K_imatrix(void) { check_type(QT_TYPE_Q3_K, 1); }
static void test_q4_K(void) { check_type(QT_TYPE_Q4_K, 0); }
static void test_q4_K_imatrix(void) { check_type(QT_TYPE_Q4_K, 1); }
static void test_q5_K(void) { check_type(QT_TYPE_Q5_K, 0); }
static void test_q5_K_imatrix(void) { check_type(QT_TYPE_Q5_K, 1); }
static void test_q6_K(void) { check_type(QT_TYPE_Q6_K, 0); }
static void test_q6_K_imatrix(void) { check_type(QT_TYPE_Q6_K, 1); }

/* Q8_K: per element |dequant - x| <= d/2 (nearest rounding), the largest-
 * magnitude element maps to exactly -127, bsums are the sums of each 16 qs. */
static void test_q8_K_round_trip(void) {
    load_inputs();
    if (!g_input) return;
    const size_t row_bytes = qt_row_size(QT_TYPE_Q8_K, N_COLS);
    CHECK_EQ_INT(row_bytes, 2 * sizeof(block_q8_K));
    block_q8_K *q = malloc(row_bytes * N_ROWS);
    float *y = malloc(sizeof(float) * N_ROWS * N_COLS);
    for (int i = 0; i < N_ROWS * N_COLS; i++) y[i] = NAN;
    CHECK_OK(qt_quantize_rows(QT_TYPE_Q8_K, g_input, q, N_ROWS, N_COLS, NULL));
    CHECK_OK(qt_dequantize_rows(QT_TYPE_Q8_K, q, y, N_ROWS, N_COLS));
    int bad_err = 0, bad_sum = 0, n_at_min = 0;
    for (int b = 0; b < N_ROWS * N_COLS / QK_K; b++) {
        const float *x = g_input + b * QK_K;
        const float d = q[b].d;
        for (int j = 0; j < QK_K; j++) {
            const float e = fabsf(y[b * QK_K + j] - x[j]);
            /* half a step, plus fp32 rounding of d and of the product */
            if (!(e <= 0.5f * fabsf(d) * (1 + 1e-5f) + 1e-6f * fabsf(x[j]))) bad_err++;
            if (q[b].qs[j] == -127 && d != 0) n_at_min++;
        }
        for (int k = 0; k < QK_K / 16; k++) {
            int s = 0;
            for (int l = 0; l < 16; l++) s += q[b].qs[16 * k + l];
            if (s != q[b].bsums[k]) bad_sum++;
        }
    }
    CHECK_EQ_INT(bad_err, 0);
    CHECK_EQ_INT(bad_sum, 0);
    /* every non-zero block has at least its extreme element at -127 */
    CHECK(n_at_min >= 14);
    free(q);
    free(y);
}

/* Q8_K rounding is round-half-to-even (ggml's nearest_int), not roundf. */
static void test_q8_K_ties_to_even(void) {
    float x[QK_K];
    for (int j = 0; j < QK_K; j++) x[j] = 0;
    x[0] = -127.0f; /* iscale = 1 */
    x[1] = 2.5f; x[2] = 3.5f; x[3] = -2.5f; x[4] = 0.5f; x[5] = 1.5f; x[16] = 100.0f;
    block_q8_K q;
    CHECK_OK(qt_quantize_rows(QT_TYPE_Q8_K, x, &q, 1, QK_K, NULL));
    CHECK_EQ_INT(q.qs[0], -127);
    CHECK_EQ_INT(q.qs[1], 2);
    CHECK_EQ_INT(q.qs[2], 4);
    CHECK_EQ_INT(q.qs[3], -2);
    CHECK_EQ_INT(q.qs[4], 0);
    CHECK_EQ_INT(q.qs[5], 2);
    CHECK_EQ_INT(q.bsums[0], -127 + 2 + 4 - 2 + 0 + 2);
    CHECK_EQ_INT(q.bsums[1], 100);
    CHECK(q.d == 1.0f);
}

static void test_q8_K_zero_block(void) {
    float x[2 * QK_K];
    for (int j = 0; j < 2 * QK_K; j++) x[j] = j < QK_K ? 0.0f : (float)(j % 7) - 3.0f;
    block_q8_K q[2];
    memset(q, 0x5A, sizeof q);
    CHECK_OK(qt_quantize_rows(QT_TYPE_Q8_K, x, q, 1, 2 * QK_K, NULL));
    CHECK(q[0].d == 0.0f);
    int nz = 0;
    for (int j = 0; j < QK_K; j++) nz += q[0].qs[j] != 0;
    for (int k = 0; k < QK_K / 16; k++) nz += q[0].bsums[k] != 0;
    CHECK_EQ_INT(nz, 0);
    float y[2 * QK_K];
    CHECK_OK(qt_dequantize_rows(QT_TYPE_Q8_K, q, y, 1, 2 * QK_K));
    for (int j = 0; j < QK_K; j++) nz += y[j] != 0.0f;
    CHECK_EQ_INT(nz, 0);
    CHECK(q[1].d != 0.0f);
}

/* A 64-element row is not a multiple of QK_K: refused with a message naming
 * the length, the type and its block size; nothing is written. */
static void test_refuses_short_row(void) {
    float x[64];
    for (int j = 0; j < 64; j++) x[j] = (float)j;
    uint8_t out[sizeof(block_q4_K)];
    memset(out, 0x77, sizeof out);
    CHECK_STATUS(qt_quantize_rows(QT_TYPE_Q4_K, x, out, 1, 64, NULL), QT_ERR_SHAPE);
    const char *msg = qt_last_error();
    CHECK(strstr(msg, "64") != NULL);
    CHECK(strstr(msg, "q4_K") != NULL);
    CHECK(strstr(msg, "256") != NULL);
    int touched = 0;
    for (size_t i = 0; i < sizeof out; i++) touched += out[i] != 0x77;
    CHECK_EQ_INT(touched, 0);
    float y[64];
    CHECK_STATUS(qt_dequantize_rows(QT_TYPE_Q4_K, out, y, 1, 64), QT_ERR_SHAPE);
    CHECK_EQ_INT(qt_row_size(QT_TYPE_Q6_K, 300), 0);
    CHECK_STATUS(qt_quantize_rows(QT_TYPE_Q8_K, x, out, 1, 64, NULL), QT_ERR_SHAPE);
}

/* Edge rows, one super-block each: all zeros must dequantize to exact zeros;
 * 1e-8 (fp16-subnormal scales) and 1e4 rows must stay finite, and the 1e4
 * row must keep the relative error of a normal row. */
static void test_edge_rows(void) {
    static const qt_type types[] = {QT_TYPE_Q2_K, QT_TYPE_Q3_K, QT_TYPE_Q4_K, QT_TYPE_Q5_K, QT_TYPE_Q6_K};
    /* relative RMSE bound per type for a Gaussian block (well above what the
     * formats achieve: about 0.35, 0.18, 0.09, 0.045, 0.02) */
    static const double max_rel_rmse[] = {0.5, 0.3, 0.15, 0.08, 0.04};
    float x[QK_K], y[QK_K];
    uint8_t q[256];
    load_inputs();
    if (!g_input || !g_imatrix) return;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const qt_type t = types[ti];
        const char *name = qt_type_get(t)->name;
        for (int imat = 0; imat < 2; imat++) {
            const float *w = imat ? g_imatrix : NULL;
            for (int j = 0; j < QK_K; j++) x[j] = 0.0f;
            CHECK_OK(qt_quantize_rows(t, x, q, 1, QK_K, w));
            CHECK_OK(qt_dequantize_rows(t, q, y, 1, QK_K));
            int nz = 0;
            for (int j = 0; j < QK_K; j++) nz += y[j] != 0.0f;
            CHECK_MSG(nz == 0, "%s%s: zero row dequantized to %d non-zero values", name, imat ? " (imatrix)" : "", nz);

            for (int scale_i = 0; scale_i < 3; scale_i++) {
                const float scale = scale_i == 0 ? 1e-8f : scale_i == 1 ? 1.0f : 1e4f;
                /* input row 0 (Gaussian sigma 1) rescaled */
                for (int j = 0; j < QK_K; j++) x[j] = g_input[j] * scale;
                CHECK_OK(qt_quantize_rows(t, x, q, 1, QK_K, w));
                CHECK_OK(qt_dequantize_rows(t, q, y, 1, QK_K));
                double se = 0, sx = 0;
                int n_bad = 0;
                for (int j = 0; j < QK_K; j++) {
                    if (!isfinite(y[j])) n_bad++;
                    se += ((double)y[j] - x[j]) * ((double)y[j] - x[j]);
                    sx += (double)x[j] * x[j];
                }
                CHECK_MSG(n_bad == 0, "%s scale %g: %d non-finite values", name, (double)scale, n_bad);
                if (scale_i > 0) {
                    const double rel = sqrt(se / sx);
                    CHECK_MSG(rel < max_rel_rmse[ti], "%s%s scale %g: relative RMSE %.4f >= %.2f", name,
                              imat ? " (imatrix)" : "", (double)scale, rel, max_rel_rmse[ti]);
                }
            }
        }
    }
}

int main(void) {
    QT_RUN(test_q2_K);
    QT_RUN(test_q2_K_imatrix);
    QT_RUN(test_q3_K);
    QT_RUN(test_q3_K_imatrix);
    QT_RUN(test_q4_K);
    QT_RUN(test_q4_K_imatrix);
    QT_RUN(test_q5_K);
    QT_RUN(test_q5_K_imatrix);
    QT_RUN(test_q6_K);
    QT_RUN(test_q6_K_imatrix);
    QT_RUN(test_q8_K_round_trip);
    QT_RUN(test_q8_K_ties_to_even);
    QT_RUN(test_q8_K_zero_block);
    QT_RUN(test_refuses_short_row);
    QT_RUN(test_edge_rows);
    free(g_input);
    free(g_imatrix);
    return qt_test_finish("test_ggml_kquants");
}
