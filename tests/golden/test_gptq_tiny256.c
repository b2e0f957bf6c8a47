/* Issue 15's gate for the K-quant and IQ4 grids, on tiny256-random.gguf (every
 * row 256 wide, so every K- and I-quant applies), layer by layer: each linear
 * of each decoder layer is rounded three ways onto Q2_K, Q3_K, Q4_K, Q5_K,
 * Q6_K, IQ4_XS and IQ4_NL:
 *   RTN          the type's quantizer, no importance (llama-quantize's bytes);
 *   imatrix RTN  the same with ../shared/reference/llamacpp-quantize's
 *                imatrix-tiny256.gguf (llama-imatrix on the calibration slice);
 *   GPTQ         qt_gptq_quantize onto the type's grid, its Hessian from the
 *                calibration slice (the block quantizer's importance = diag H,
 *                as `quanta quantize --algo gptq` does);
 * and the layer output error ||W X - Q X||^2 is measured on held-out
 * activations: the evaluation slice's, through the F16 model (each layer sees
 * the unquantized model's inputs, so the rows compare the grids alone).
 * Summed over the 56 linears, GPTQ's error must be below imatrix-RTN's, and
 * imatrix-RTN's below RTN's, for every type. The slices are the README's
 * (calibration: lines 4331-; evaluation: lines 1-4330); the samples are the
 * first N windows (seed 0), so the test is deterministic.
 * (heavy under sanitizers: GPTQ on 56 x 7 linears is minutes under ASan, so
 * `make test-asan` leaves it out; test-release runs it; test-avx2 leaves heavy tests out too.) */
#include "fixtures.h"
#include "qtest.h"
#include "quanta.h"

enum { N_CAL = 64, N_EVAL = 32, SEQ = 128, N_LIN = 7, N_IN = 4 };

static const qt_type types[] = {QT_TYPE_Q2_K, QT_TYPE_Q3_K, QT_TYPE_Q4_K, QT_TYPE_Q5_K,
                                QT_TYPE_Q6_K, QT_TYPE_IQ4_XS, QT_TYPE_IQ4_NL};
enum { N_TYPES = sizeof types / sizeof types[0] };

/* The linears and which input each sees (q/k/v one, gate/up one). */
static const struct { const char *name; int input; } linears[N_LIN] = {
    {"attn_q", 0}, {"attn_k", 0}, {"attn_v", 0}, {"attn_output", 1}, {"ffn_gate", 2}, {"ffn_up", 2}, {"ffn_down", 3},
};

typedef struct hess_obs {
    qt_gptq_hessian h[N_IN];
    qt_status err;
} hess_obs;

static void observe(void *user, int32_t layer, const char *linear, const float *x, int32_t n_tokens, int32_t n_in) {
    hess_obs *o = user;
    (void)layer;
    for (int k = 0; k < N_LIN; k++) {
        if (strcmp(linears[k].name, linear) || (k > 0 && linears[k - 1].input == linears[k].input)) continue;
        qt_gptq_hessian *h = &o->h[linears[k].input];
        if (!h->s && o->err == QT_OK) o->err = qt_gptq_hessian_init(h, n_in);
        if (o->err == QT_OK) o->err = qt_gptq_hessian_add(h, x, n_tokens);
    }
}

/* The byte offset where 1-based line n starts (len past the last line). */
static size_t line_start(const char *text, size_t len, int n) {
    int line = 1;
    for (size_t i = 0; i < len && line < n; i++)
        if (text[i] == '\n' && ++line == n) return i + 1;
    return line == n ? 0 : len;
}

/* Lines [from, to) of the text (to = 0: to the end) into a file in the test's directory. */
static const char *slice(const char *text, size_t len, int from, int to, size_t want, const char *name) {
    static char paths[2][512];
    static int k;
    char *path = paths[k++ & 1];
    snprintf(path, 512, "%s/%s", qt_test_tmpdir(), name);
    const size_t a = line_start(text, len, from), b = to ? line_start(text, len, to) : len;
    CHECK_MSG(b - a == want, "%s: %zu bytes, the README says %zu", name, b - a, want);
    CHECK(fx_write_file(path, text + a, b - a) == 0);
    return path;
}

typedef struct totals {
    double rtn[N_TYPES], imat[N_TYPES], gptq[N_TYPES];
} totals;

/* Dequantized bytes of one rounding. */
static void rtn_values(qt_type t, const float *W, int64_t rows, int64_t cols, const float *imp, uint8_t *bytes, float *Q) {
    CHECK_OK(qt_quantize_rows(t, W, bytes, rows, cols, imp));
    CHECK_OK(qt_dequantize_rows(t, bytes, Q, rows, cols));
}

static void one_linear(const qt_model *m, const qt_imatrix *im, int32_t il, int k, const double *Hc, const double *Ht,
                       totals *tot, double *layer_err /* (N_TYPES, 3) */) {
    char name[64];
    snprintf(name, sizeof name, "blk.%d.%s.weight", il, linears[k].name);
    const qt_tensor *t = qt_model_find_tensor(m, name);
    CHECK_MSG(t != NULL, "%s missing", name);
    if (!t) return;
    const int64_t cols = t->ne[0], rows = t->ne[1];
    float *W = malloc((size_t)(rows * cols) * sizeof *W), *Q = malloc((size_t)(rows * cols) * sizeof *Q);
    float *Wg = malloc((size_t)(rows * cols) * sizeof *Wg), *imat = malloc((size_t)cols * sizeof *imat);
    float *diag = malloc((size_t)cols * sizeof *diag);
    uint8_t *bytes = malloc((size_t)(rows * cols) * 2);
    CHECK_OK(qt_dequantize_rows(t->type, t->data, W, rows, cols));
    CHECK_OK(qt_imatrix_get(im, name, cols, 1, imat));
    for (int64_t c = 0; c < cols; c++) diag[c] = (float)Hc[c * cols + c];
    for (int ti = 0; ti < N_TYPES; ti++) {
        double e[3];
        rtn_values(types[ti], W, rows, cols, NULL, bytes, Q);
        CHECK_OK(qt_gptq_output_error_h(W, Q, rows, cols, Ht, &e[0]));
        rtn_values(types[ti], W, rows, cols, imat, bytes, Q);
        CHECK_OK(qt_gptq_output_error_h(W, Q, rows, cols, Ht, &e[1]));
        qt_gptq_gguf g;
        CHECK_OK(qt_gptq_gguf_init(&g, types[ti], rows, cols, diag));
        qt_gptq_grid grid = qt_gptq_gguf_grid(&g);
        memcpy(Wg, W, (size_t)(rows * cols) * sizeof *Wg);
        CHECK_OK(qt_gptq_quantize(Wg, rows, cols, Hc, &grid, NULL, NULL));
        CHECK_OK(qt_dequantize_rows(types[ti], g.bytes, Q, rows, cols)); /* what llama.cpp decodes */
        CHECK_OK(qt_gptq_output_error_h(W, Q, rows, cols, Ht, &e[2]));
        qt_gptq_gguf_free(&g);
        tot->rtn[ti] += e[0];
        tot->imat[ti] += e[1];
        tot->gptq[ti] += e[2];
        for (int j = 0; j < 3; j++) layer_err[ti * 3 + j] += e[j];
    }
    free(W);
    free(Q);
    free(Wg);
    free(imat);
    free(diag);
    free(bytes);
}

static void test_tiny256_layer_error(void) {
    const char *text_path = qt_test_shared("data/tinystories-valid-first1000.txt");
    size_t len;
    char *text = qt_test_read(text_path, &len);
    CHECK(text != NULL);
    if (!text) return;
    const char *cal_path = slice(text, len, 4331, 0, 390443, "calib.txt");
    const char *eval_path = slice(text, len, 1, 4331, 403932, "eval.txt");
    free(text);
    qt_model *m;
    CHECK_OK(qt_model_open(qt_test_shared("models/tiny256-random.gguf"), &m));
    qt_imatrix *im;
    CHECK_OK(qt_imatrix_open(qt_test_shared("reference/llamacpp-quantize/imatrix-tiny256.gguf"), &im));
    qt_calib_set cal, ev;
    qt_calib_opts co = {.path = cal_path, .n_samples = N_CAL, .seq_len = SEQ};
    CHECK_OK(qt_calib_load(m, &co, &cal));
    qt_calib_opts eo_ = {.path = eval_path, .n_samples = N_EVAL, .seq_len = SEQ};
    CHECK_OK(qt_calib_load(m, &eo_, &ev));
    qt_engine_opts eo;
    qt_engine_opts_default(&eo);
    eo.n_ctx = eo.n_batch = SEQ;
    eo.n_threads = 2;
    eo.kv_type = QT_KV_TYPE_F32;
    qt_engine_ctx *e;
    CHECK_OK(qt_engine_new(m, &eo, &e));
    qt_layerwise *lc, *le;
    CHECK_OK(qt_layerwise_new(e, cal.tokens, N_CAL, SEQ, &lc));
    CHECK_OK(qt_layerwise_new(e, ev.tokens, N_EVAL, SEQ, &le));
    const int32_t n_layer = qt_model_hparams(m)->n_layer;
    totals tot = {0};
    double *Hc = malloc(256 * 256 * sizeof *Hc), *Ht = malloc(256 * 256 * sizeof *Ht);
    printf("  layer output error ||WX - QX||^2 on %d x %d held-out tokens, summed over the layer's 7 linears\n"
           "  (RTN / imatrix RTN / GPTQ):\n", N_EVAL, SEQ);
    for (int32_t il = 0; il < n_layer; il++) {
        hess_obs oc = {.err = QT_OK}, ot = {.err = QT_OK};
        CHECK_OK(qt_layerwise_run_layer(lc, observe, &oc));
        CHECK_OK(qt_layerwise_run_layer(le, observe, &ot));
        CHECK_OK(oc.err);
        CHECK_OK(ot.err);
        double layer_err[N_TYPES * 3] = {0};
        for (int k = 0; k < N_LIN; k++) {
            const int in = linears[k].input;
            CHECK_EQ_INT(oc.h[in].n, 256);
            if (oc.h[in].n != 256 || ot.h[in].n != 256) continue;
            CHECK_OK(qt_gptq_hessian_get(&oc.h[in], Hc));
            CHECK_OK(qt_gptq_hessian_get(&ot.h[in], Ht));
            one_linear(m, im, il, k, Hc, Ht, &tot, layer_err);
        }
        printf("  layer %d:", il);
        for (int ti = 0; ti < N_TYPES; ti++)
            printf(" %s %.3g/%.3g/%.3g", qt_type_get(types[ti])->name, layer_err[ti * 3], layer_err[ti * 3 + 1],
                   layer_err[ti * 3 + 2]);
        printf("\n");
        for (int k = 0; k < N_IN; k++) {
            qt_gptq_hessian_free(&oc.h[k]);
            qt_gptq_hessian_free(&ot.h[k]);
        }
    }
    printf("  %-7s %12s %12s %12s %10s %10s\n", "type", "RTN", "imatrix RTN", "GPTQ", "imat/RTN", "GPTQ/RTN");
    for (int ti = 0; ti < N_TYPES; ti++) {
        const char *nm = qt_type_get(types[ti])->name;
        printf("  %-7s %12.5g %12.5g %12.5g %10.3f %10.3f\n", nm, tot.rtn[ti], tot.imat[ti], tot.gptq[ti],
               tot.imat[ti] / tot.rtn[ti], tot.gptq[ti] / tot.rtn[ti]);
        CHECK_MSG(tot.imat[ti] < tot.rtn[ti], "%s: imatrix RTN %g is not below RTN %g", nm, tot.imat[ti], tot.rtn[ti]);
        CHECK_MSG(tot.gptq[ti] < tot.imat[ti], "%s: GPTQ %g is not below imatrix RTN %g", nm, tot.gptq[ti],
                  tot.imat[ti]);
    }
    free(Hc);
    free(Ht);
    qt_layerwise_free(lc);
    qt_layerwise_free(le);
    qt_engine_free(e);
    qt_calib_set_free(&cal);
    qt_calib_set_free(&ev);
    qt_imatrix_close(im);
    qt_model_free(m);
}

int main(void) {
    QT_RUN(test_tiny256_layer_error);
    return qt_test_finish("gptq_tiny256");
}
