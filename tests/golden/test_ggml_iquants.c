/* i-quants below 4 bits (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
 * IQ3_S) against whole llama-quantize outputs.
 *
 * ../shared/reference/llamacpp-quantize/files/tiny256-<FTYPE>-imatrix.gguf
 * are llama-quantize's files for tiny256-random.gguf (F16, every row 256
 * wide) with imatrix-tiny256.gguf (README.md there). For every tensor of
 * those files whose type is one of the seven, the F16 source tensor becomes
 * F32, the importance weights are the imatrix's T.in_sum2 / T.counts
 * (llama-quantize's normalisation, counts rounded to integers), and our
 * quantizer's bytes must equal the file's. Mismatches name the tensor, the
 * row, the block and the byte. Dequantization is checked against a decoder
 * written element by element from ggml-common.h's layout description, and
 * through quantize/dequantize properties.
 *
 * `test_ggml_iquants --ggml LIBGGML_BASE_SO` instead runs a differential
 * check against ggml itself (tests/interop/test_iquants_ggml.sh passes
 * node-llama-cpp's prebuilt libggml-base.so): ggml_quantize_chunk and
 * dequantize_row_* from that library against ours, on rows built to hit the
 * corners (ties, zeros, outliers, tiny and huge values, zero weights), with
 * and without importance weights.
 *
 * `test_ggml_iquants --logits DIR` writes, for test_iquants_ggml.mjs, our
 * engine's logits on 32 fixed tokens for each of the seven reference files
 * (DIR/<FTYPE>.logits.f32, DIR/tokens.txt), to compare with llama.cpp
 * running the same files.
 *
 * (heavy under sanitizers: minutes under ASan, so `make test-asan` leaves it out; test-release
 * runs it; test-avx2 too leaves the heavy ones out, to keep CI under 30 min. CMakeLists.txt reads this line.)
 */
#include <dlfcn.h>
#include <pthread.h>

#include "qtest.h"
#include "quanta.h"
#include "quant/blocks.h"
#include "quant/dot.h"
#include "quant/iq_grids.h"

static const qt_type IQ_TYPES[] = {QT_TYPE_IQ1_S,   QT_TYPE_IQ1_M,   QT_TYPE_IQ2_XXS, QT_TYPE_IQ2_XS,
                                   QT_TYPE_IQ2_S,   QT_TYPE_IQ3_XXS, QT_TYPE_IQ3_S};
#define N_IQ (int)(sizeof IQ_TYPES / sizeof IQ_TYPES[0])

static int is_iq(qt_type t) {
    for (int i = 0; i < N_IQ; i++)
        if (IQ_TYPES[i] == t) return 1;
    return 0;
}

static qt_gguf *g_src, *g_imat;

static int open_inputs(void) {
    if (!g_src) CHECK_OK(qt_gguf_open(qt_test_shared("models/tiny256-random.gguf"), &g_src));
    if (!g_imat) CHECK_OK(qt_gguf_open(qt_test_shared("reference/llamacpp-quantize/imatrix-tiny256.gguf"), &g_imat));
    return g_src && g_imat;
}

static int64_t n_rows_of(const qt_gguf_tensor *t) {
    int64_t r = 1;
    for (uint32_t d = 1; d < t->n_dims; d++) r *= t->ne[d];
    return r;
}

/* The source tensor as F32, (rows, ne0). Caller frees. */
static float *source_f32(const char *name, int64_t n_per_row, int64_t n_rows) {
    const qt_gguf_tensor *s = qt_gguf_find_tensor(g_src, name);
    CHECK_MSG(s != NULL, "%s: not in tiny256-random.gguf", name);
    if (!s) return NULL;
    CHECK_EQ_INT(s->ne[0], n_per_row);
    CHECK_EQ_INT(n_rows_of(s), n_rows);
    float *x = malloc(sizeof(float) * (size_t)(n_per_row * n_rows));
    CHECK_OK(qt_dequantize_rows(s->type, s->data, x, n_rows, n_per_row));
    return x;
}

/* llama-quantize's importance weights for tensor name: in_sum2 / counts
 * (float division by the rounded count; 1 where the count is 0). */
static float *importance(const char *name, int64_t n_per_row) {
    char key[256];
    snprintf(key, sizeof key, "%s.in_sum2", name);
    const qt_gguf_tensor *sums = qt_gguf_find_tensor(g_imat, key);
    snprintf(key, sizeof key, "%s.counts", name);
    const qt_gguf_tensor *counts = qt_gguf_find_tensor(g_imat, key);
    CHECK_MSG(sums && counts, "%s: no in_sum2/counts in the imatrix", name);
    if (!sums || !counts) return NULL;
    CHECK_EQ_INT(sums->type, QT_TYPE_F32);
    CHECK_EQ_INT(counts->type, QT_TYPE_F32);
    CHECK_EQ_INT(sums->ne[0], n_per_row);
    float *w = malloc(sizeof(float) * (size_t)n_per_row);
    float c;
    memcpy(&c, counts->data, sizeof c);
    const float count = (float)lroundf(c);
    for (int64_t i = 0; i < n_per_row; i++) {
        float s;
        memcpy(&s, (const uint8_t *)sums->data + 4 * i, sizeof s);
        w[i] = count > 0 ? s / count : 1.0f;
    }
    return w;
}

/* Per type: tensors compared and tensors byte-identical, over all files. */
static int g_seen[QT_TYPE_COUNT], g_same[QT_TYPE_COUNT];

static void check_tensor(const char *file, const qt_gguf_tensor *t) {
    const int64_t n_per_row = t->ne[0], n_rows = n_rows_of(t);
    const size_t row_bytes = qt_row_size(t->type, n_per_row);
    CHECK_EQ_INT(row_bytes * (size_t)n_rows, t->nbytes);
    float *x = source_f32(t->name, n_per_row, n_rows);
    float *w = importance(t->name, n_per_row);
    uint8_t *got = malloc(t->nbytes);
    if (x && w && got) {
        memset(got, 0xA5, t->nbytes);
        CHECK_OK(qt_quantize_rows(t->type, x, got, n_rows, n_per_row, w));
        const uint8_t *want = t->data;
        size_t n_diff = 0, first = 0, n_blocks_diff = 0;
        const size_t bb = qt_type_get(t->type)->block_bytes;
        for (size_t b = 0; b < t->nbytes / bb; b++) {
            int blk = 0;
            for (size_t i = b * bb; i < (b + 1) * bb; i++)
                if (got[i] != want[i]) {
                    if (n_diff++ == 0) first = i;
                    blk = 1;
                }
            n_blocks_diff += blk;
        }
        g_seen[t->type]++;
        g_same[t->type] += n_diff == 0;
        CHECK_MSG(n_diff == 0,
                  "%s %s (%s): %zu bytes in %zu of %zu blocks differ; first at row %zu block %zu byte %zu: got 0x%02x "
                  "want 0x%02x",
                  file, t->name, qt_type_get(t->type)->name, n_diff, n_blocks_diff, t->nbytes / bb, first / row_bytes,
                  (first % row_bytes) / bb, (first % row_bytes) % bb, got[first], want[first]);
    }
    free(x);
    free(w);
    free(got);
}

static void check_file(const char *ftype) {
    if (!open_inputs()) return;
    char rel[256];
    snprintf(rel, sizeof rel, "reference/llamacpp-quantize/files/tiny256-%s-imatrix.gguf", ftype);
    qt_gguf *g = NULL;
    CHECK_OK(qt_gguf_open(qt_test_shared(rel), &g));
    if (!g) return;
    int n = 0;
    for (int64_t i = 0; i < qt_gguf_n_tensors(g); i++) {
        const qt_gguf_tensor *t = qt_gguf_tensor_at(g, i);
        if (!is_iq(t->type)) continue;
        check_tensor(rel, t);
        n++;
    }
    CHECK_MSG(n > 0, "%s: no i-quant tensors", rel);
    qt_gguf_close(g);
}

static void test_file_iq1_s(void) { check_file("IQ1_S"); }
static void test_file_iq1_m(void) { check_file("IQ1_M"); }
static void test_file_iq2_xxs(void) { check_file("IQ2_XXS"); }
static void test_file_iq2_xs(void) { check_file("IQ2_XS"); }
static void test_file_iq2_s(void) { check_file("IQ2_S"); }
static void test_file_iq3_xxs(void) { check_file("IQ3_XXS"); }
static void test_file_iq3_s(void) { check_file("IQ3_S"); }

/* Every one of the seven types occurred in the files, and the tally. */
static void test_summary(void) {
    for (int i = 0; i < N_IQ; i++) {
        const qt_type t = IQ_TYPES[i];
        fprintf(stderr, "  %-8s %3d of %3d tensors byte-identical with llama-quantize\n", qt_type_get(t)->name,
                g_same[t], g_seen[t]);
        CHECK_MSG(g_seen[t] > 0, "%s: no tensor of this type in the reference files", qt_type_get(t)->name);
        CHECK_EQ_INT(g_same[t], g_seen[t]);
    }
}

/* ---- dequantization ----------------------------------------------------------------- */

static float half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return qt_fp16_to_f32(h);
}
static uint32_t u32_at(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static uint32_t u16_at(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
/* 8 sign bits from 7 stored ones: the eighth makes the count of negatives even. */
static int sign7(uint32_t s7, int j) {
    return j < 7 ? (int)((s7 >> j) & 1) : __builtin_popcount(s7 & 127) & 1;
}
static float signed_val(float db, int level_value, int neg) {
    const float v = db * (float)level_value;
    return neg ? -v : v;
}

/* Element j (0..255) of one block b, read straight from ggml-common.h's
 * description of the layout (byte offsets, not the block structs). */
static float decode_one(qt_type t, const uint8_t *b, int j) {
    const int ib = j / 32, l = (j % 32) / 8, e8 = j % 8;
    switch (t) {
    case QT_TYPE_IQ2_XXS: {
        const uint8_t *q = b + 2 + 8 * ib;
        const uint32_t aux = u32_at(q + 4);
        const float db = half_at(b) * (0.5f + (float)(aux >> 28)) * 0.25f;
        const uint16_t code = qt__iq_codes_2xxs[q[l]];
        return signed_val(db, qt__iq_levels_2[(code >> (2 * e8)) & 3], sign7((aux >> (7 * l)) & 127, e8));
    }
    case QT_TYPE_IQ2_XS: {
        const uint32_t q = u16_at(b + 2 + 2 * (j / 8));
        const uint8_t sc = b[2 + 64 + ib];
        const float db = half_at(b) * (0.5f + (float)(l < 2 ? sc & 15 : sc >> 4)) * 0.25f;
        const uint16_t code = qt__iq_codes_2xs[q & 511];
        return signed_val(db, qt__iq_levels_2[(code >> (2 * e8)) & 3], sign7(q >> 9, e8));
    }
    case QT_TYPE_IQ2_S: {
        const int g = j / 8;
        const int index = b[2 + g] | (((b[2 + 64 + ib] >> (2 * l)) & 3) << 8);
        const uint8_t sc = b[2 + 64 + 8 + ib];
        const float db = half_at(b) * (0.5f + (float)(l < 2 ? sc & 15 : sc >> 4)) * 0.25f;
        const uint16_t code = qt__iq_codes_2s[index];
        return signed_val(db, qt__iq_levels_2[(code >> (2 * e8)) & 3], (b[2 + 32 + g] >> e8) & 1);
    }
    case QT_TYPE_IQ3_XXS: {
        const uint32_t aux = u32_at(b + 2 + 64 + 4 * ib);
        const float db = half_at(b) * (0.5f + (float)(aux >> 28)) * 0.5f;
        const uint16_t code = qt__iq_codes_3xxs[b[2 + j / 4]];
        return signed_val(db, qt__iq_levels_3xxs[(code >> (3 * (j % 4))) & 7], sign7((aux >> (7 * l)) & 127, e8));
    }
    case QT_TYPE_IQ3_S: {
        const int g = j / 4;
        const int index = b[2 + g] | (((b[2 + 64 + g / 8] >> (g % 8)) & 1) << 8);
        const uint8_t sc = b[2 + 64 + 8 + 32 + ib / 2];
        const float db = half_at(b) * (float)(1 + 2 * (ib % 2 ? sc >> 4 : sc & 15));
        const uint16_t code = qt__iq_codes_3s[index];
        return signed_val(db, qt__iq_levels_3s[(code >> (3 * (j % 4))) & 7], (b[2 + 64 + 8 + j / 8] >> e8) & 1);
    }
    case QT_TYPE_IQ1_S: {
        const uint32_t qh = u16_at(b + 2 + 32 + 2 * ib);
        const int index = b[2 + j / 8] | (((qh >> (3 * l)) & 7) << 8);
        const float dl = half_at(b) * (float)(2 * ((qh >> 12) & 7) + 1);
        const float delta = qh & 0x8000 ? -0.125f : 0.125f;
        const uint16_t code = qt__iq_codes_1s[index];
        return dl * ((float)qt__iq_levels_1[(code >> (2 * e8)) & 3] + delta);
    }
    case QT_TYPE_IQ1_M: {
        const int i16 = j / 16, half = (j / 8) % 2;
        const uint8_t qh = b[32 + i16];
        const int index = b[j / 8] | (((qh >> (4 * half)) & 7) << 8);
        uint32_t dbits = 0;
        for (int k = 0; k < 4; k++) dbits |= (u16_at(b + 48 + 2 * k) >> 12) << (4 * k);
        const uint32_t sc = u16_at(b + 48 + 2 * (i16 / 4));
        const float dl = qt_fp16_to_f32((uint16_t)dbits) * (float)(2 * ((sc >> (3 * (i16 % 4))) & 7) + 1);
        const float delta = (qh >> (4 * half)) & 8 ? -0.125f : 0.125f;
        const uint16_t code = qt__iq_codes_1s[index];
        return dl * ((float)qt__iq_levels_1[(code >> (2 * e8)) & 3] + delta);
    }
    default: return NAN;
    }
}

/* Dequantize llama-quantize's bytes of every i-quant tensor in the IQ1_M and
 * IQ3_S files (all seven types occur in the seven files; these two carry
 * IQ1_M, IQ2_XXS.. and IQ3_S, IQ3_XXS, IQ2_S between them) and compare bit
 * for bit with the element-wise decoder. */
static void check_dequant_file(const char *ftype, int *types_seen) {
    char rel[256];
    snprintf(rel, sizeof rel, "reference/llamacpp-quantize/files/tiny256-%s-imatrix.gguf", ftype);
    qt_gguf *g = NULL;
    CHECK_OK(qt_gguf_open(qt_test_shared(rel), &g));
    if (!g) return;
    for (int64_t i = 0; i < qt_gguf_n_tensors(g); i++) {
        const qt_gguf_tensor *t = qt_gguf_tensor_at(g, i);
        if (!is_iq(t->type)) continue;
        types_seen[t->type] = 1;
        const int64_t n_per_row = t->ne[0], n_rows = n_rows_of(t);
        const size_t bb = qt_type_get(t->type)->block_bytes;
        float *y = malloc(sizeof(float) * (size_t)(n_per_row * n_rows));
        for (int64_t k = 0; k < n_per_row * n_rows; k++) y[k] = NAN;
        CHECK_OK(qt_dequantize_rows(t->type, t->data, y, n_rows, n_per_row));
        size_t n_diff = 0, first = 0, n_nonzero = 0;
        for (size_t k = 0; k < (size_t)(n_per_row * n_rows); k++) {
            const float want = decode_one(t->type, (const uint8_t *)t->data + (k / 256) * bb, (int)(k % 256));
            if (memcmp(&want, &y[k], sizeof want) != 0 && n_diff++ == 0) first = k;
            n_nonzero += y[k] != 0;
        }
        CHECK_MSG(n_diff == 0, "%s %s: %zu values differ, first at %zu: got %.9g", rel, t->name, n_diff, first,
                  y[first]);
        CHECK(n_nonzero > (size_t)(n_per_row * n_rows) / 2);
        free(y);
    }
    qt_gguf_close(g);
}

static void test_dequantize_reference_bytes(void) {
    int seen[QT_TYPE_COUNT] = {0};
    static const char *ftypes[] = {"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S"};
    for (int i = 0; i < 7; i++) check_dequant_file(ftypes[i], seen);
    for (int i = 0; i < N_IQ; i++) CHECK_MSG(seen[IQ_TYPES[i]], "%s not seen", qt_type_get(IQ_TYPES[i])->name);
}

/* ---- properties on our own output ----------------------------------------------------- */

/* Deterministic Gaussian-ish rows: sum of 4 uniforms, centred. */
static void synth(float *x, int64_t n, uint32_t seed) {
    uint32_t s = seed * 2654435761u + 1;
    for (int64_t i = 0; i < n; i++) {
        float acc = 0;
        for (int k = 0; k < 4; k++) {
            s = s * 1664525u + 1013904223u;
            acc += (float)(s >> 8) / 16777216.0f;
        }
        x[i] = (acc - 2.0f) * 0.03f;
    }
}

#define PR_ROWS 16
#define PR_COLS 512

/* Quantize -> dequantize of Gaussian rows: relative RMSE within what each
 * format reaches (bounds about 20 % above what this build measures),
 * ordered by bits per weight, and every value finite. Weights: an uneven
 * per-column profile for every type. */
static void test_round_trip_error(void) {
    static const qt_type by_bits[] = {QT_TYPE_IQ1_S,  QT_TYPE_IQ1_M,   QT_TYPE_IQ2_XXS, QT_TYPE_IQ2_XS,
                                      QT_TYPE_IQ2_S,  QT_TYPE_IQ3_XXS, QT_TYPE_IQ3_S};
    /* measured 0.497, 0.469, 0.351, 0.311, 0.253, 0.194, 0.140 */
    static const double max_rel[] = {0.6, 0.56, 0.42, 0.37, 0.3, 0.23, 0.17};
    float *x = malloc(sizeof(float) * PR_ROWS * PR_COLS), *y = malloc(sizeof(float) * PR_ROWS * PR_COLS);
    float w[PR_COLS];
    uint8_t *q = malloc(PR_ROWS * PR_COLS);
    synth(x, PR_ROWS * PR_COLS, 7);
    for (int i = 0; i < PR_COLS; i++) w[i] = 0.5f + (float)(i % 5);
    double prev = 1e9, ref = 0;
    for (int i = 0; i < PR_ROWS * PR_COLS; i++) ref += (double)x[i] * x[i];
    for (int k = 0; k < 7; k++) {
        CHECK_OK(qt_quantize_rows(by_bits[k], x, q, PR_ROWS, PR_COLS, w));
        CHECK_OK(qt_dequantize_rows(by_bits[k], q, y, PR_ROWS, PR_COLS));
        double err = 0;
        int bad = 0;
        for (int i = 0; i < PR_ROWS * PR_COLS; i++) {
            bad += !isfinite(y[i]);
            err += ((double)y[i] - x[i]) * ((double)y[i] - x[i]);
        }
        const double rel = sqrt(err / ref);
        fprintf(stderr, "  %-8s %.3f bpw  relative RMSE %.4f\n", qt_type_get(by_bits[k])->name,
                qt_type_bits_per_weight(by_bits[k]), rel);
        CHECK_EQ_INT(bad, 0);
        CHECK_MSG(rel < max_rel[k], "%s: relative RMSE %.4f >= %.2f", qt_type_get(by_bits[k])->name, rel, max_rel[k]);
        CHECK_MSG(rel < prev, "%s: relative RMSE %.4f not below the smaller format's %.4f",
                  qt_type_get(by_bits[k])->name, rel, prev);
        prev = rel;
    }
    free(x);
    free(y);
    free(q);
}

/* Bits per weight are ggml's: block bytes * 8 / 256. */
static void test_bits_per_weight(void) {
    CHECK_NEAR(qt_type_bits_per_weight(QT_TYPE_IQ1_S), 1.5625, 1e-12);
    CHECK_NEAR(qt_type_bits_per_weight(QT_TYPE_IQ1_M), 1.75, 1e-12);
    CHECK_NEAR(qt_type_bits_per_weight(QT_TYPE_IQ2_XXS), 2.0625, 1e-12);
    CHECK_NEAR(qt_type_bits_per_weight(QT_TYPE_IQ2_XS), 2.3125, 1e-12);
    CHECK_NEAR(qt_type_bits_per_weight(QT_TYPE_IQ2_S), 2.5625, 1e-12);
    CHECK_NEAR(qt_type_bits_per_weight(QT_TYPE_IQ3_XXS), 3.0625, 1e-12);
    CHECK_NEAR(qt_type_bits_per_weight(QT_TYPE_IQ3_S), 3.4375, 1e-12);
    CHECK(qt_type_by_name("IQ2_XXS") == qt_type_get(QT_TYPE_IQ2_XXS));
    CHECK(qt_type_by_name("iq1_m") == qt_type_get(QT_TYPE_IQ1_M));
}

/* IQ2_XXS, IQ2_XS and IQ1_S have no quantizer without importance weights in
 * ggml (it asserts): refused, naming the type, nothing written. The other
 * four quantize without them. */
static void test_requires_imatrix(void) {
    float x[QK_K];
    uint8_t out[sizeof(block_iq3_s)];
    synth(x, QK_K, 3);
    for (int i = 0; i < N_IQ; i++) {
        const qt_type t = IQ_TYPES[i];
        const int needs = t == QT_TYPE_IQ2_XXS || t == QT_TYPE_IQ2_XS || t == QT_TYPE_IQ1_S;
        CHECK_EQ_INT(qt_type_requires_imatrix(t), needs);
        memset(out, 0x77, sizeof out);
        if (needs) {
            CHECK_STATUS(qt_quantize_rows(t, x, out, 1, QK_K, NULL), QT_ERR_ARG);
            CHECK(strstr(qt_last_error(), qt_type_get(t)->name) != NULL);
            CHECK(strstr(qt_last_error(), "imatrix") != NULL);
            int touched = 0;
            for (size_t k = 0; k < sizeof out; k++) touched += out[k] != 0x77;
            CHECK_EQ_INT(touched, 0);
        } else {
            CHECK_OK(qt_quantize_rows(t, x, out, 1, QK_K, NULL));
            float y[QK_K];
            CHECK_OK(qt_dequantize_rows(t, out, y, 1, QK_K));
            double e = 0, r = 0;
            for (int k = 0; k < QK_K; k++) {
                e += ((double)y[k] - x[k]) * ((double)y[k] - x[k]);
                r += (double)x[k] * x[k];
            }
            CHECK_MSG(sqrt(e / r) < 0.8, "%s without imatrix: relative RMSE %.3f", qt_type_get(t)->name, sqrt(e / r));
        }
    }
    CHECK(!qt_type_requires_imatrix(QT_TYPE_Q4_K));
}

/* All-zero super-blocks give all-zero blocks and exact zeros back; a block
 * of one non-zero value and a block of huge values stay finite. */
static void test_edge_blocks(void) {
    float x[3 * QK_K], y[3 * QK_K], w[3 * QK_K];
    uint8_t q[3 * sizeof(block_iq3_s)];
    for (int i = 0; i < 3 * QK_K; i++) {
        x[i] = 0;
        w[i] = 1;
    }
    x[QK_K + 17] = -0.25f;
    for (int i = 2 * QK_K; i < 3 * QK_K; i++) x[i] = (i % 3 ? 1e4f : -3e4f) * (float)(1 + i % 7);
    for (int k = 0; k < N_IQ; k++) {
        const qt_type t = IQ_TYPES[k];
        const size_t bb = qt_type_get(t)->block_bytes;
        memset(q, 0x5A, sizeof q);
        CHECK_OK(qt_quantize_rows(t, x, q, 1, 3 * QK_K, w));
        int nz = 0;
        for (size_t i = 0; i < bb; i++) nz += q[i] != 0;
        CHECK_MSG(nz == 0, "%s: zero block has %d non-zero bytes", qt_type_get(t)->name, nz);
        CHECK_OK(qt_dequantize_rows(t, q, y, 1, 3 * QK_K));
        int bad = 0;
        for (int i = 0; i < 3 * QK_K; i++) bad += !isfinite(y[i]) || (i < QK_K && y[i] != 0);
        CHECK_MSG(bad == 0, "%s: %d bad values", qt_type_get(t)->name, bad);
        /* the lone value keeps its sign */
        CHECK_MSG(y[QK_K + 17] < 0, "%s: lone -0.25 came back as %g", qt_type_get(t)->name, y[QK_K + 17]);
    }
}

/* vec_dot (q8_K activations) equals the dot product of the two dequantized
 * rows: the kernels sum exactly in integers, so only float rounding of the
 * per-block products separates them (bound: 1e-5 of sum |w||a|). */
static void test_vec_dot(void) {
    float *x = malloc(sizeof(float) * PR_ROWS * PR_COLS), *a = malloc(sizeof(float) * PR_COLS);
    float *wx = malloc(sizeof(float) * PR_ROWS * PR_COLS), *wa = malloc(sizeof(float) * PR_COLS), w[PR_COLS];
    uint8_t *q = malloc(PR_ROWS * PR_COLS), *qa = malloc(qt_row_size(QT_TYPE_Q8_K, PR_COLS));
    synth(x, PR_ROWS * PR_COLS, 5);
    synth(a, PR_COLS, 9);
    for (int i = 0; i < PR_COLS; i++) w[i] = 1.0f + (float)(i % 4);
    CHECK_OK(qt_quantize_rows(QT_TYPE_Q8_K, a, qa, 1, PR_COLS, NULL));
    CHECK_OK(qt_dequantize_rows(QT_TYPE_Q8_K, qa, wa, 1, PR_COLS));
    for (int k = 0; k < N_IQ; k++) {
        const qt_type_traits *tr = qt_type_get(IQ_TYPES[k]);
        CHECK(tr->vec_dot != NULL && tr->vec_dot_type == QT_TYPE_Q8_K);
        if (!tr->vec_dot) continue;
        CHECK_OK(qt_quantize_rows(tr->type, x, q, PR_ROWS, PR_COLS, w));
        CHECK_OK(qt_dequantize_rows(tr->type, q, wx, PR_ROWS, PR_COLS));
        const size_t rb = qt_row_size(tr->type, PR_COLS);
        int bad = 0;
        double worst = 0;
        for (int r = 0; r < PR_ROWS; r++) {
            double ref = 0, mag = 0;
            for (int i = 0; i < PR_COLS; i++) {
                ref += (double)wx[r * PR_COLS + i] * wa[i];
                mag += fabs((double)wx[r * PR_COLS + i] * wa[i]);
            }
            const double got = tr->vec_dot(q + r * rb, qa, PR_COLS), err = fabs(got - ref) / mag;
            worst = err > worst ? err : worst;
            bad += !(err <= 1e-5);
        }
        CHECK_MSG(bad == 0, "%s: %d of %d rows off by more than 1e-5 (worst %.3g)", tr->name, bad, PR_ROWS, worst);
    }
    free(x), free(a), free(wx), free(wa), free(q), free(qa);
}

/* The code-book tables are built on first use; threads racing for them get
 * the same bytes as one thread alone. */
typedef struct {
    qt_type t;
    const float *x, *w;
    uint8_t *out;
    qt_status s;
} race_job;

static void *race(void *p) {
    race_job *j = p;
    j->s = qt_quantize_rows(j->t, j->x, j->out, PR_ROWS, PR_COLS, j->w);
    return NULL;
}

static void test_threads_same_bytes(void) {
    float *x = malloc(sizeof(float) * PR_ROWS * PR_COLS);
    float w[PR_COLS];
    synth(x, PR_ROWS * PR_COLS, 11);
    for (int i = 0; i < PR_COLS; i++) w[i] = 1.0f + (float)(i % 3);
    enum { NT = 7 };
    race_job jobs[NT];
    pthread_t th[NT];
    const size_t max_bytes = PR_ROWS * qt_row_size(QT_TYPE_IQ3_S, PR_COLS);
    for (int i = 0; i < NT; i++) {
        jobs[i] = (race_job){IQ_TYPES[i % N_IQ], x, w, malloc(max_bytes), QT_OK};
        pthread_create(&th[i], NULL, race, &jobs[i]);
    }
    for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
    uint8_t *again = malloc(max_bytes);
    for (int i = 0; i < NT; i++) {
        CHECK_OK(jobs[i].s);
        CHECK_OK(qt_quantize_rows(jobs[i].t, x, again, PR_ROWS, PR_COLS, w));
        CHECK(memcmp(again, jobs[i].out, PR_ROWS * qt_row_size(jobs[i].t, PR_COLS)) == 0);
        free(jobs[i].out);
    }
    free(again);
    free(x);
}

/* ---- differential check against a ggml library (--ggml) ------------------------------ */

typedef size_t (*ggml_quantize_chunk_fn)(int type, const float *src, void *dst, int64_t start, int64_t nrows,
                                         int64_t n_per_row, const float *imatrix);
typedef void (*ggml_dequantize_fn)(const void *src, float *dst, int64_t k);

#define DF_COLS 1024
#define DF_ROWS 48

static uint32_t df_rand(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}
static float df_unif(uint32_t *s) { return (float)df_rand(s) / 16777216.0f; }

/* Row r of the differential inputs; kind = r % 12. */
static void df_row(int r, float *x) {
    uint32_t s = 0x9E3779B9u * (uint32_t)(r + 1);
    const int kind = r % 12;
    for (int i = 0; i < DF_COLS; i++) {
        float g = df_unif(&s) + df_unif(&s) + df_unif(&s) + df_unif(&s) - 2.0f;
        switch (kind) {
        case 0: x[i] = 0.02f * g; break;                                    /* Gaussian-ish */
        case 1: x[i] = 0.05f * g * g * g; break;                            /* heavy tails */
        case 2: x[i] = 0.01f * (float)(int)(4 * g); break;                  /* few levels: many ties */
        case 3: x[i] = df_unif(&s) < 0.8f ? 0.0f : g; break;                /* sparse */
        case 4: x[i] = 0.125f; break;                                       /* constant */
        case 5: x[i] = 1e-9f * g; break;                                    /* tiny */
        case 6: x[i] = 3e3f * g; break;                                     /* huge */
        case 7: x[i] = (i % 97 == 0 ? 5.0f : 0.01f) * g; break;             /* outliers */
        case 8: x[i] = i < 256 ? 0.0f : 0.02f * g; break;                   /* a zero super-block */
        case 9: x[i] = qt_fp16_to_f32(qt_f32_to_fp16(0.02f * g)); break;    /* fp16 values (ties) */
        case 10: x[i] = i % 2 ? -fabsf(0.03f * g) : fabsf(0.03f * g); break; /* alternating signs */
        default: x[i] = (i % 32 < 4 ? 1e-3f : 0.04f) * g; break;            /* small sub-blocks */
        }
    }
}

/* Importance weights; variant 0: uneven positive, 1: some exactly 0, 2: huge range. */
static void df_imatrix(int variant, float *w) {
    uint32_t s = 12345u + (uint32_t)variant;
    for (int i = 0; i < DF_COLS; i++) {
        const float u = df_unif(&s);
        w[i] = variant == 0 ? 0.1f + u : variant == 1 ? (u < 0.2f ? 0.0f : u) : powf(10.0f, 6.0f * u - 3.0f);
    }
}

static int run_ggml_diff(const char *lib) {
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "test_ggml_iquants: cannot load %s: %s\n", lib, dlerror());
        return 1;
    }
    ggml_quantize_chunk_fn chunk = (ggml_quantize_chunk_fn)dlsym(h, "ggml_quantize_chunk");
    static const char *deq_names[] = {"dequantize_row_iq1_s",  "dequantize_row_iq1_m",  "dequantize_row_iq2_xxs",
                                      "dequantize_row_iq2_xs", "dequantize_row_iq2_s",  "dequantize_row_iq3_xxs",
                                      "dequantize_row_iq3_s"};
    int failed = !chunk;
    float *x = malloc(sizeof(float) * DF_ROWS * DF_COLS), *w = malloc(sizeof(float) * DF_COLS);
    float *y_ours = malloc(sizeof(float) * DF_ROWS * DF_COLS), *y_ggml = malloc(sizeof(float) * DF_ROWS * DF_COLS);
    const size_t max_bytes = DF_ROWS * qt_row_size(QT_TYPE_IQ3_S, DF_COLS);
    uint8_t *q_ours = malloc(max_bytes), *q_ggml = malloc(max_bytes);
    for (int r = 0; r < DF_ROWS; r++) df_row(r, x + (size_t)r * DF_COLS);
    for (int k = 0; chunk && k < N_IQ; k++) {
        const qt_type t = IQ_TYPES[k];
        ggml_dequantize_fn deq = (ggml_dequantize_fn)dlsym(h, deq_names[k]);
        const size_t row_bytes = qt_row_size(t, DF_COLS), bytes = row_bytes * DF_ROWS;
        for (int variant = qt_type_requires_imatrix(t) ? 0 : -1; variant < 3; variant++) {
            if (variant >= 0) df_imatrix(variant, w);
            const float *im = variant >= 0 ? w : NULL;
            memset(q_ggml, 0, bytes);
            chunk((int)t, x, q_ggml, 0, DF_ROWS, DF_COLS, im);
            if (qt_quantize_rows(t, x, q_ours, DF_ROWS, DF_COLS, im) != QT_OK) {
                fprintf(stderr, "  %s: %s\n", qt_type_get(t)->name, qt_last_error());
                failed++;
                continue;
            }
            int rows_diff = 0, first = -1;
            for (int r = 0; r < DF_ROWS; r++)
                if (memcmp(q_ours + r * row_bytes, q_ggml + r * row_bytes, row_bytes) != 0) {
                    rows_diff++;
                    if (first < 0) first = r;
                    if (getenv("QT_IQ_DEBUG"))
                        for (size_t b = 0; b < row_bytes; b++)
                            if (q_ours[r * row_bytes + b] != q_ggml[r * row_bytes + b])
                                fprintf(stderr, "    row %d byte %zu (block %zu +%zu): ours %02x ggml %02x\n", r, b,
                                        b / qt_type_get(t)->block_bytes, b % qt_type_get(t)->block_bytes,
                                        q_ours[r * row_bytes + b], q_ggml[r * row_bytes + b]);
                }
            int vals_diff = -1;
            if (deq) {
                deq(q_ggml, y_ggml, (int64_t)DF_ROWS * DF_COLS);
                qt_dequantize_rows(t, q_ggml, y_ours, DF_ROWS, DF_COLS);
                vals_diff = 0;
                for (size_t i = 0; i < (size_t)DF_ROWS * DF_COLS; i++)
                    vals_diff += memcmp(&y_ours[i], &y_ggml[i], sizeof(float)) != 0;
            }
            fprintf(stderr, "  %-8s imatrix %-4s: %2d of %d rows differ (first: row kind %d); dequantize: %d values differ\n",
                    qt_type_get(t)->name, variant < 0 ? "none" : variant == 0 ? "A" : variant == 1 ? "B" : "C",
                    rows_diff, DF_ROWS, first >= 0 ? first % 12 : -1, vals_diff);
            failed += rows_diff != 0 || vals_diff != 0;
        }
    }
    free(x), free(w), free(y_ours), free(y_ggml), free(q_ours), free(q_ggml);
    dlclose(h);
    fprintf(stderr, "test_ggml_iquants --ggml: %s\n", failed ? "FAILED" : "every row identical");
    return failed ? 1 : 0;
}

/* ---- engine logits on the reference files (--logits) ---------------------------------- */

/* 16 tokens: on this random-weight model a last-bit difference eventually
 * turns one f16 rounding of K/V the other way (IQ3_XXS: at position 21 with
 * llama.cpp's batch of 1, at 27 with a batch of 64; llama.cpp's two runs then
 * differ from each other by 1e-2 as well), which says nothing about the
 * codecs. Before that the two engines agree to about 1e-6. */
#define LG_TOKENS 16

static int export_logits(const char *dir) {
    static const char *ftypes[] = {"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S"};
    int32_t tok[LG_TOKENS];
    uint32_t s = 2024;
    tok[0] = 1; /* BOS */
    for (int i = 1; i < LG_TOKENS; i++) tok[i] = 3 + (int32_t)(df_rand(&s) % 509u);
    char path[1024];
    snprintf(path, sizeof path, "%s/tokens.txt", dir);
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    for (int i = 0; i < LG_TOKENS; i++) fprintf(f, "%d ", tok[i]);
    fclose(f);
    for (int k = 0; k < 7; k++) {
        char rel[256];
        snprintf(rel, sizeof rel, "reference/llamacpp-quantize/files/tiny256-%s-imatrix.gguf", ftypes[k]);
        qt_model *m = NULL;
        qt_engine_ctx *e = NULL;
        qt_engine_opts o;
        qt_engine_opts_default(&o);
        o.n_ctx = 64;
        o.n_threads = 1;
        o.numerics = QT_NUMERICS_LLAMA; /* compared with llama.cpp: its attention order (f16 Q and accumulator) */
        if (qt_model_open(qt_test_shared(rel), &m) != QT_OK || qt_engine_new(m, &o, &e) != QT_OK) {
            fprintf(stderr, "test_ggml_iquants --logits: %s: %s\n", rel, qt_last_error());
            qt_model_free(m);
            return 1;
        }
        const int32_t V = qt_engine_n_vocab(e);
        float *lg = malloc(sizeof(float) * (size_t)LG_TOKENS * (size_t)V);
        const qt_status st = qt_engine_eval(e, tok, LG_TOKENS, 0, lg);
        snprintf(path, sizeof path, "%s/%s.logits.f32", dir, ftypes[k]);
        f = st == QT_OK ? fopen(path, "wb") : NULL;
        const int ok = f && fwrite(lg, sizeof(float), (size_t)LG_TOKENS * (size_t)V, f) == (size_t)LG_TOKENS * (size_t)V;
        if (f) fclose(f);
        free(lg);
        qt_engine_free(e);
        qt_model_free(m);
        if (!ok) return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--ggml")) return run_ggml_diff(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "--logits")) return export_logits(argv[2]);
    QT_RUN(test_threads_same_bytes); /* first: the tables are not built yet */
    QT_RUN(test_file_iq1_s);
    QT_RUN(test_file_iq1_m);
    QT_RUN(test_file_iq2_xxs);
    QT_RUN(test_file_iq2_xs);
    QT_RUN(test_file_iq2_s);
    QT_RUN(test_file_iq3_xxs);
    QT_RUN(test_file_iq3_s);
    QT_RUN(test_summary);
    QT_RUN(test_dequantize_reference_bytes);
    QT_RUN(test_round_trip_error);
    QT_RUN(test_bits_per_weight);
    QT_RUN(test_requires_imatrix);
    QT_RUN(test_edge_blocks);
    QT_RUN(test_vec_dot);
    qt_gguf_close(g_src);
    qt_gguf_close(g_imat);
    return qt_test_finish("test_ggml_iquants");
}
