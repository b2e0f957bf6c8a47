/* ggml block formats against llama.cpp's own reference output
 * (../shared/testvectors/ggml, README.md there): for every type in scope,
 * quantize input.f32 (8 rows x 512) and compare with <type>.bin byte for
 * byte, dequantize <type>.bin and compare with <type>.dequant.f32 bit for bit,
 * and the same with imatrix.f32 where MANIFEST.tsv says the weights matter.
 * Everything goes through qt_quantize_rows / qt_dequantize_rows so the traits
 * table is what is tested. The K-quants have their own test file.
 */
#include <math.h>

#include "qtest.h"
#include "quant/blocks.h"
#include "quanta.h"

#define N_ROWS 8
#define N_COLS 512
#define N_VALS (N_ROWS * N_COLS)

/* Types this file covers; the rest of MANIFEST.tsv is only checked for sizes. */
static const qt_type scope[] = {
    QT_TYPE_F32,  QT_TYPE_F16,    QT_TYPE_BF16,   QT_TYPE_Q4_0,  QT_TYPE_Q4_1,
    QT_TYPE_Q5_0, QT_TYPE_Q5_1,   QT_TYPE_Q8_0,   QT_TYPE_Q8_1,  QT_TYPE_IQ4_NL,
    QT_TYPE_IQ4_XS, QT_TYPE_MXFP4, QT_TYPE_TQ1_0, QT_TYPE_TQ2_0,
};
#define N_SCOPE (int)(sizeof scope / sizeof scope[0])

typedef struct {
    char name[32];
    int type_id;
    int block_elems, block_bytes, row_bytes;
    int imatrix_changes_output;
} manifest_row;

static manifest_row manifest[64];
static int n_manifest;
static float *input, *imatrix;

static void load_manifest(void) {
    size_t size;
    char *text = qt_test_read(qt_test_shared("testvectors/ggml/MANIFEST.tsv"), &size);
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        manifest_row r;
        char yn[8];
        if (sscanf(line, "%31s %d %d %d %d %7s", r.name, &r.type_id, &r.block_elems, &r.block_bytes,
                   &r.row_bytes, yn) != 6)
            continue; /* header */
        r.imatrix_changes_output = strcmp(yn, "yes") == 0;
        if (n_manifest < 64) manifest[n_manifest++] = r;
    }
    free(text);
}

static const manifest_row *manifest_find(const char *name) {
    for (int i = 0; i < n_manifest; i++)
        if (strcmp(manifest[i].name, name) == 0) return &manifest[i];
    return NULL;
}

static float *read_f32(const char *rel, size_t want_count) {
    size_t size;
    float *p = qt_test_read(qt_test_shared(rel), &size);
    if (size != want_count * sizeof(float)) {
        fprintf(stderr, "  %s: %zu bytes, expected %zu\n", rel, size, want_count * sizeof(float));
        exit(1);
    }
    return p;
}

static void fill_nan(float *p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = NAN;
}

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* First differing byte, reported as row / block / byte within the block. */
static int compare_blocks(const char *what, const qt_type_traits *tr, const uint8_t *got,
                          const uint8_t *want, size_t row_bytes, int n_rows) {
    for (size_t i = 0; i < row_bytes * (size_t)n_rows; i++) {
        if (got[i] != want[i]) {
            const size_t row = i / row_bytes, in_row = i % row_bytes;
            QT_FAIL_AT("%s %s: first mismatch at row %zu, block %zu, byte %zu of %zu: got 0x%02x want 0x%02x",
                       tr->name, what, row, in_row / tr->block_bytes, in_row % tr->block_bytes,
                       tr->block_bytes, got[i], want[i]);
            return 0;
        }
    }
    return 1;
}

static int compare_floats(const char *what, const qt_type_traits *tr, const float *got, const float *want,
                          size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (bits_of(got[i]) != bits_of(want[i])) {
            QT_FAIL_AT("%s %s: first mismatch at row %zu, element %zu: got %.9g (0x%08x) want %.9g (0x%08x)",
                       tr->name, what, i / N_COLS, i % N_COLS, got[i], bits_of(got[i]), want[i],
                       bits_of(want[i]));
            return 0;
        }
    }
    return 1;
}

/* One vector set: <stem>.bin and <stem>.dequant.f32, quantized with weights w. */
static void check_vector_set(const qt_type_traits *tr, const manifest_row *m, const char *stem,
                             const float *w) {
    char rel[256];
    const size_t row_bytes = qt_row_size(tr->type, N_COLS);
    CHECK_EQ_INT(row_bytes, m->row_bytes);

    snprintf(rel, sizeof rel, "testvectors/ggml/%s.bin", stem);
    size_t size;
    uint8_t *want = qt_test_read(qt_test_shared(rel), &size);
    CHECK_EQ_INT(size, row_bytes * N_ROWS);

    uint8_t *got = malloc(row_bytes * N_ROWS);
    memset(got, 0xA5, row_bytes * N_ROWS); /* unwritten bytes show up */
    CHECK_OK(qt_quantize_rows(tr->type, input, got, N_ROWS, N_COLS, w));
    if (size == row_bytes * N_ROWS && compare_blocks(w ? "quantize (imatrix)" : "quantize", tr, got, want, row_bytes, N_ROWS))
        printf("  %-8s %-22s %zu bytes identical\n", tr->name, w ? "quantize imatrix" : "quantize", size);

    snprintf(rel, sizeof rel, "testvectors/ggml/%s.dequant.f32", stem);
    float *want_f = read_f32(rel, N_VALS);
    float *got_f = malloc(N_VALS * sizeof(float));
    fill_nan(got_f, N_VALS);
    CHECK_OK(qt_dequantize_rows(tr->type, want, got_f, N_ROWS, N_COLS));
    if (compare_floats(w ? "dequantize (imatrix)" : "dequantize", tr, got_f, want_f, N_VALS))
        printf("  %-8s %-22s %d values bit-identical\n", tr->name, w ? "dequantize imatrix" : "dequantize", N_VALS);

    /* Rows are independent (per-row statistics such as sigma2 included):
     * quantizing row 5 (1e-8 scale, fp16-subnormal scales) alone gives the
     * same bytes, and its dequantized values are finite. */
    memset(got, 0xA5, row_bytes);
    CHECK_OK(qt_quantize_rows(tr->type, input + 5 * N_COLS, got, 1, N_COLS, w));
    compare_blocks("row 5 alone", tr, got, want + 5 * row_bytes, row_bytes, 1);
    for (int i = 0; i < N_COLS; i++)
        if (!isfinite(got_f[5 * N_COLS + i])) {
            QT_FAIL_AT("%s: row 5 element %d dequantizes to %g", tr->name, i, got_f[5 * N_COLS + i]);
            break;
        }

    free(want);
    free(got);
    free(want_f);
    free(got_f);
}

static const qt_type_traits *current;

static void test_type_vectors(void) {
    const qt_type_traits *tr = current;
    CHECK(tr->from_float != NULL);
    CHECK(tr->to_float_ref != NULL);
    const manifest_row *m = manifest_find(tr->name);
    if (!m) SKIP("%s: no test vectors (MANIFEST.tsv)", tr->name);
    CHECK_EQ_INT(m->type_id, tr->type);
    CHECK_EQ_INT(m->block_elems, tr->block_elems);
    CHECK_EQ_INT(m->block_bytes, tr->block_bytes);
    check_vector_set(tr, m, tr->name, NULL);
    char stem[64];
    snprintf(stem, sizeof stem, "%s.imatrix", tr->name);
    if (m->imatrix_changes_output) {
        CHECK(tr->imatrix_aware);
        check_vector_set(tr, m, stem, imatrix);
    } else {
        /* Weights must not change the output of types that ignore them. */
        const size_t row_bytes = qt_row_size(tr->type, N_COLS);
        uint8_t *a = malloc(row_bytes * N_ROWS), *b = malloc(row_bytes * N_ROWS);
        CHECK_OK(qt_quantize_rows(tr->type, input, a, N_ROWS, N_COLS, NULL));
        CHECK_OK(qt_quantize_rows(tr->type, input, b, N_ROWS, N_COLS, imatrix));
        CHECK_MSG(memcmp(a, b, row_bytes * N_ROWS) == 0, "%s: imatrix changed the output", tr->name);
        free(a);
        free(b);
    }
}

/* Every manifest row (K-quants included) agrees with the traits table. */
static void test_manifest_matches_traits(void) {
    CHECK(n_manifest >= 17);
    for (int i = 0; i < n_manifest; i++) {
        const qt_type_traits *tr = qt_type_by_name(manifest[i].name);
        CHECK_MSG(tr != NULL, "manifest type %s unknown to the traits table", manifest[i].name);
        if (!tr) continue;
        CHECK_EQ_INT(tr->type, manifest[i].type_id);
        CHECK_EQ_INT(tr->block_elems, manifest[i].block_elems);
        CHECK_EQ_INT(tr->block_bytes, manifest[i].block_bytes);
        CHECK_EQ_INT(qt_row_size(tr->type, N_COLS), manifest[i].row_bytes);
    }
}

static void test_f32_round_trip(void) {
    float src[8] = {1.0f, -0.0f, 0x1p-149f, -3.0e38f, INFINITY, -INFINITY, NAN, 0.1f};
    uint32_t nan_payload = 0x7fa12345u; /* signalling NaN with a payload */
    memcpy(&src[6], &nan_payload, 4);
    uint8_t packed[sizeof src];
    float back[8];
    CHECK_OK(qt_quantize_rows(QT_TYPE_F32, src, packed, 1, 8, NULL));
    CHECK(memcmp(packed, src, sizeof src) == 0);
    fill_nan(back, 8);
    CHECK_OK(qt_dequantize_rows(QT_TYPE_F32, packed, back, 1, 8));
    CHECK(memcmp(back, src, sizeof src) == 0);
}

/* Q8_1 (activation type, no vectors): its d and qs are Q8_0's, s = d*sum(qs),
 * and dequantization is within half a step (plus the fp16 scale error). */
static void test_q8_1_round_trip(void) {
    const int nb = N_VALS / 32;
    block_q8_1 *q81 = malloc((size_t)nb * sizeof *q81);
    block_q8_0 *q80 = malloc((size_t)nb * sizeof *q80);
    float *back = malloc(N_VALS * sizeof(float));
    CHECK_OK(qt_quantize_rows(QT_TYPE_Q8_1, input, q81, N_ROWS, N_COLS, NULL));
    CHECK_OK(qt_quantize_rows(QT_TYPE_Q8_0, input, q80, N_ROWS, N_COLS, NULL));
    fill_nan(back, N_VALS);
    CHECK_OK(qt_dequantize_rows(QT_TYPE_Q8_1, q81, back, N_ROWS, N_COLS));
    int bad = 0;
    for (int b = 0; b < nb && !bad; b++) {
        if (q81[b].d != q80[b].d || memcmp(q81[b].qs, q80[b].qs, 32) != 0) {
            QT_FAIL_AT("q8_1 block %d: d/qs differ from q8_0's", b);
            bad = 1;
        }
        const float d = qt_fp16_to_f32(q81[b].d);
        int sum = 0;
        float amax = 0;
        for (int j = 0; j < 32; j++) {
            sum += q81[b].qs[j];
            amax = fmaxf(amax, fabsf(input[32 * b + j]));
        }
        /* s was rounded from the fp32 d: within one fp16 rounding of d*sum
         * computed from the stored d, plus |sum| times d's own rounding. */
        const double s = qt_fp16_to_f32(q81[b].s), s_ref = (double)d * sum;
        const double d32 = amax / 127.0;
        const double tol_s = fabs(s_ref) * 1e-3 + fabs((double)sum) * fabs(d - d32) + 6e-8;
        if (fabs(s_ref) > 66000) { /* beyond fp16: ggml stores +-Inf too */
            if (!(isinf(s) && (s > 0) == (s_ref > 0))) {
                QT_FAIL_AT("q8_1 block %d: s = %g, expected an fp16 overflow of %g", b, s, s_ref);
                bad = 1;
            }
        } else if (fabs(s_ref) < 65000 && !(fabs(s - s_ref) <= tol_s)) {
            QT_FAIL_AT("q8_1 block %d: s = %g, d*sum(qs) = %g", b, s, s_ref);
            bad = 1;
        }
        const double tol = d32 / 2 + 127 * fabs(d - d32) + 1e-30;
        for (int j = 0; j < 32; j++)
            if (!(fabs((double)back[32 * b + j] - input[32 * b + j]) <= tol)) {
                QT_FAIL_AT("q8_1 block %d element %d: %g -> %g (tol %g)", b, j, input[32 * b + j],
                           back[32 * b + j], tol);
                bad = 1;
                break;
            }
    }
    free(q81);
    free(q80);
    free(back);
}

static void test_refuses_ragged_rows(void) {
    float src[172] = {0};
    uint8_t dst[256];
    float back[172];
    CHECK_STATUS(qt_quantize_rows(QT_TYPE_Q4_0, src, dst, 1, 172, NULL), QT_ERR_SHAPE);
    CHECK_EQ_STR(qt_last_error(), "row of 172 elements is not a multiple of q4_0's block size 32");
    CHECK_STATUS(qt_dequantize_rows(QT_TYPE_Q4_0, dst, back, 1, 172), QT_ERR_SHAPE);
    CHECK(strstr(qt_last_error(), "172") != NULL);
    CHECK_EQ_INT(qt_row_size(QT_TYPE_Q4_0, 172), 0);
    /* Super-block types refuse rows that are a multiple of 32 but not 256. */
    CHECK_STATUS(qt_quantize_rows(QT_TYPE_IQ4_XS, src, dst, 1, 160, NULL), QT_ERR_SHAPE);
    CHECK(strstr(qt_last_error(), "iq4_xs") != NULL && strstr(qt_last_error(), "256") != NULL);
}

/* All-zero input (and all-zero blocks inside row 4) quantize and dequantize to
 * exact zeros for every type, with and without weights; nothing is NaN. */
static void test_zero_blocks(void) {
    float *zeros = calloc(N_COLS, sizeof(float));
    float *back = malloc(N_COLS * sizeof(float));
    uint8_t *q = malloc(4 * N_COLS + 64);
    for (int s = 0; s < N_SCOPE; s++) {
        const qt_type_traits *tr = qt_type_get(scope[s]);
        for (int use_w = 0; use_w < 2; use_w++) {
            const float *w = use_w ? imatrix : NULL;
            const float *rows[2] = {zeros, input + 4 * N_COLS};
            for (int r = 0; r < 2; r++) {
                CHECK_OK(qt_quantize_rows(tr->type, rows[r], q, 1, N_COLS, w));
                fill_nan(back, N_COLS);
                CHECK_OK(qt_dequantize_rows(tr->type, q, back, 1, N_COLS));
                const int n_zero = r == 0 ? N_COLS : N_COLS / 2; /* row 4: first half is zero */
                for (int i = 0; i < n_zero; i++)
                    if (back[i] != 0.0f) {
                        QT_FAIL_AT("%s%s: zero input element %d (row %s) -> %g", tr->name,
                                   use_w ? " (imatrix)" : "", i, r ? "4" : "zeros", back[i]);
                        break;
                    }
                for (int i = n_zero; i < N_COLS; i++)
                    if (!isfinite(back[i])) {
                        QT_FAIL_AT("%s: element %d not finite", tr->name, i);
                        break;
                    }
            }
        }
    }
    free(zeros);
    free(back);
    free(q);
}

/* Far below the row-5 case: fp32-subnormal and 1e-30 inputs (fp16 scales
 * underflow to zero, MXFP4 would need a negative exponent) stay finite and
 * tiny for every type, with and without weights. */
static void test_tiny_values(void) {
    float *x = malloc(N_COLS * sizeof(float));
    float *back = malloc(N_COLS * sizeof(float));
    uint8_t *q = malloc(4 * N_COLS + 64);
    const float scales[2] = {1e-40f, 1e-30f};
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < N_COLS; i++) x[i] = scales[k] * (float)((i * 37) % 11 - 5);
        for (int s = 0; s < N_SCOPE; s++) {
            const qt_type_traits *tr = qt_type_get(scope[s]);
            for (int use_w = 0; use_w < 2; use_w++) {
                CHECK_OK(qt_quantize_rows(tr->type, x, q, 1, N_COLS, use_w ? imatrix : NULL));
                fill_nan(back, N_COLS);
                CHECK_OK(qt_dequantize_rows(tr->type, q, back, 1, N_COLS));
                for (int i = 0; i < N_COLS; i++)
                    if (!(fabsf(back[i]) <= 1e-6f)) {
                        QT_FAIL_AT("%s%s: %g -> %g", tr->name, use_w ? " (imatrix)" : "", x[i], back[i]);
                        break;
                    }
            }
        }
    }
    free(x);
    free(back);
    free(q);
}

int main(void) {
    load_manifest();
    input = read_f32("testvectors/ggml/input.f32", N_VALS);
    imatrix = read_f32("testvectors/ggml/imatrix.f32", N_COLS);

    QT_RUN(test_manifest_matches_traits);
    for (int s = 0; s < N_SCOPE; s++) {
        current = qt_type_get(scope[s]);
        if (!manifest_find(current->name)) continue; /* f32, q8_1: round trips below */
        char name[64];
        snprintf(name, sizeof name, "vectors_%s", current->name);
        qt_test_run(name, test_type_vectors);
    }
    QT_RUN(test_f32_round_trip);
    QT_RUN(test_q8_1_round_trip);
    QT_RUN(test_refuses_ragged_rows);
    QT_RUN(test_zero_blocks);
    QT_RUN(test_tiny_values);

    free(input);
    free(imatrix);
    return qt_test_finish("test_ggml_blocks");
}
