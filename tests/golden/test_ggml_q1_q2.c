/* Q1_0 and Q2_0 (ggml 2026) against llama-quantize's output on tiny256
 * (../shared/reference/llamacpp-quantize, README.md there):
 *
 * - every tensor of tiny256-Q1_0-{imatrix,none} and tiny256-Q2_0-{imatrix,none}
 *   in MANIFEST.tsv: the source tensor (tiny256-random.gguf, F16 -> F32)
 *   quantized to the type llama-quantize chose, with importance weights from
 *   imatrix-tiny256.gguf where the file was made with it and the imatrix has
 *   the tensor, has the recorded sha256;
 * - files/tiny256-Q{1,2}_0-imatrix.gguf: the same tensors byte for byte;
 * - dequantization: hand-made blocks decode to the documented values, and
 *   re-quantizing llama-quantize's bytes after decoding them gives them back;
 * - ggml ignores importance weights for both types, and so does quanta;
 * - the engine runs both files through their q8_0 dot kernels (which
 *   tests/unit/test_engine_dot.c checks against the dequantized dot).
 */

#include "qtest.h"
#include "quant/blocks.h"
#include "quanta.h"

#define REF "reference/llamacpp-quantize/"

typedef struct mrow {
    char file[64], tensor[64], type[16], sha[65];
    long bytes;
} mrow;

static mrow *rows;
static int n_rows;

static void load_manifest(void) {
    size_t size;
    char *text = qt_test_read(qt_test_shared(REF "MANIFEST.tsv"), &size), *save = NULL;
    int cap = 0;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        mrow r;
        if (sscanf(line, "%63s %63s %15s %ld %64s", r.file, r.tensor, r.type, &r.bytes, r.sha) != 5) continue;
        if (strncmp(r.file, "tiny256-Q1_0-", 13) && strncmp(r.file, "tiny256-Q2_0-", 13)) continue;
        if (n_rows == cap) rows = realloc(rows, (size_t)(cap = cap ? cap * 2 : 256) * sizeof *rows);
        rows[n_rows++] = r;
    }
    free(text);
}

/* The source tensor as F32 (llama-quantize converts F16 exactly the same way). */
static float *source_f32(const qt_gguf *src, const char *name, int64_t *n_cols, int64_t *n_rows_out) {
    const qt_gguf_tensor *t = qt_gguf_find_tensor(src, name);
    if (!t) return NULL;
    int64_t rows_ = t->ne[1] * t->ne[2] * t->ne[3];
    float *f = malloc((size_t)(t->ne[0] * rows_) * sizeof *f);
    CHECK_OK(qt_dequantize_rows(t->type, t->data, f, rows_, t->ne[0]));
    *n_cols = t->ne[0];
    *n_rows_out = rows_;
    return f;
}

/* Quantize one MANIFEST row; returns the bytes (caller frees) or NULL. */
static uint8_t *quantize_row(const qt_gguf *src, const qt_imatrix *im, const mrow *r, size_t *nbytes) {
    const qt_type_traits *tr = qt_type_by_name(r->type);
    CHECK_MSG(tr != NULL, "%s: unknown type %s", r->tensor, r->type);
    int64_t nc = 0, nr = 0;
    float *x = tr ? source_f32(src, r->tensor, &nc, &nr) : NULL;
    CHECK_MSG(x != NULL, "%s: not in the source model", r->tensor);
    if (!x) return NULL;
    float *w = NULL;
    if (strstr(r->file, "-imatrix")) {
        w = malloc((size_t)nc * sizeof *w);
        qt_status s = qt_imatrix_get(im, r->tensor, nc, 1, w);
        if (s == QT_ERR_NOT_FOUND) { free(w); w = NULL; } /* token_embd: quantized without, as llama-quantize does */
        else CHECK_OK(s);
    }
    *nbytes = qt_row_size(tr->type, nc) * (size_t)nr;
    uint8_t *q = malloc(*nbytes);
    CHECK_OK(qt_quantize_rows(tr->type, x, q, nr, nc, w));
    free(x);
    free(w);
    return q;
}

static void test_manifest_hashes(void) {
    qt_gguf *src = NULL;
    qt_imatrix *im = NULL;
    CHECK_OK(qt_gguf_open(qt_test_shared("models/tiny256-random.gguf"), &src));
    CHECK_OK(qt_imatrix_open(qt_test_shared(REF "imatrix-tiny256.gguf"), &im));
    if (!src || !im) { qt_gguf_close(src); qt_imatrix_close(im); return; }
    int n_ok = 0, n_q1 = 0, n_q2 = 0;
    for (int i = 0; i < n_rows; i++) {
        size_t nb = 0;
        uint8_t *q = quantize_row(src, im, &rows[i], &nb);
        if (!q) continue;
        char hex[65];
        qt_sha256_hex(q, nb, hex);
        CHECK_EQ_INT(nb, rows[i].bytes);
        const bool same = strcmp(hex, rows[i].sha) == 0;
        CHECK_MSG(same, "%s %s (%s): sha256 %s, llama-quantize %s", rows[i].file, rows[i].tensor, rows[i].type, hex, rows[i].sha);
        n_ok += same;
        n_q1 += same && !strcmp(rows[i].type, "Q1_0");
        n_q2 += same && !strcmp(rows[i].type, "Q2_0");
        free(q);
    }
    printf("  %d of %d MANIFEST rows identical (%d Q1_0 and %d Q2_0 tensors, the rest F32 and Q6_K)\n", n_ok, n_rows, n_q1, n_q2);
    CHECK_EQ_INT(n_rows, 4 * 74);
    CHECK_EQ_INT(n_q1, 2 * 56);
    CHECK_EQ_INT(n_q2, 2 * 56);
    qt_gguf_close(src);
    qt_imatrix_close(im);
}

/* The whole files: every tensor's type and bytes, and decode -> encode
 * giving llama-quantize's bytes back. */
static void test_reference_files(void) {
    static const char *const files[2] = {"tiny256-Q1_0-imatrix", "tiny256-Q2_0-imatrix"};
    qt_gguf *src = NULL;
    qt_imatrix *im = NULL;
    CHECK_OK(qt_gguf_open(qt_test_shared("models/tiny256-random.gguf"), &src));
    CHECK_OK(qt_imatrix_open(qt_test_shared(REF "imatrix-tiny256.gguf"), &im));
    for (int f = 0; f < 2 && src && im; f++) {
        char rel[128];
        snprintf(rel, sizeof rel, REF "files/%s.gguf", files[f]);
        qt_gguf *ref = NULL;
        CHECK_OK(qt_gguf_open(qt_test_shared(rel), &ref));
        if (!ref) continue;
        int checked = 0, roundtrip = 0;
        for (int i = 0; i < n_rows; i++) {
            if (strcmp(rows[i].file, files[f])) continue;
            const qt_gguf_tensor *t = qt_gguf_find_tensor(ref, rows[i].tensor);
            CHECK_MSG(t != NULL, "%s: no tensor %s", files[f], rows[i].tensor);
            if (!t) continue;
            CHECK_EQ_STR(qt_type_get(t->type)->name, qt_type_by_name(rows[i].type)->name);
            size_t nb = 0;
            uint8_t *q = quantize_row(src, im, &rows[i], &nb);
            if (!q) continue;
            CHECK_MSG(nb == t->nbytes && !memcmp(q, t->data, nb), "%s: %s differs", files[f], t->name);
            checked++;
            if (t->type == QT_TYPE_Q1_0 || t->type == QT_TYPE_Q2_0) {
                const int64_t nr = t->ne[1];
                float *x = malloc((size_t)(t->ne[0] * nr) * sizeof *x);
                uint8_t *back = malloc(t->nbytes);
                CHECK_OK(qt_dequantize_rows(t->type, t->data, x, nr, t->ne[0]));
                CHECK_OK(qt_quantize_rows(t->type, x, back, nr, t->ne[0], NULL));
                roundtrip += !memcmp(back, t->data, t->nbytes);
                free(x);
                free(back);
            }
            free(q);
        }
        CHECK_EQ_INT(checked, 74);
        CHECK_EQ_INT(roundtrip, 56);
        qt_gguf_close(ref);
    }
    qt_gguf_close(src);
    qt_imatrix_close(im);
}

static void test_traits_rows(void) {
    const qt_type_traits *q1 = qt_type_by_name("Q1_0"), *q2 = qt_type_by_name("q2_0");
    CHECK(q1 && q1->type == 41 && q1->block_elems == 128 && q1->block_bytes == 18 && q1->is_quantized);
    CHECK(q2 && q2->type == 42 && q2->block_elems == 64 && q2->block_bytes == 18 && q2->is_quantized);
    CHECK_NEAR(qt_type_bits_per_weight(QT_TYPE_Q1_0), 1.125, 1e-12);
    CHECK_NEAR(qt_type_bits_per_weight(QT_TYPE_Q2_0), 2.25, 1e-12);
    CHECK_EQ_INT(qt_row_size(QT_TYPE_Q1_0, 256), 36);
    CHECK_EQ_INT(qt_row_size(QT_TYPE_Q1_0, 64), 0); /* not a multiple of 128 */
}

/* Hand-made blocks: d = 0.5 (fp16 0x3800). */
static void test_decode_layout(void) {
    block_q1_0 b1;
    b1.d = 0x3800;
    for (int i = 0; i < 16; i++) b1.qs[i] = (uint8_t)(i == 0 ? 0x05 : i == 15 ? 0x80 : 0x00);
    float y[128];
    CHECK_OK(qt_dequantize_rows(QT_TYPE_Q1_0, &b1, y, 1, 128));
    CHECK(y[0] == 0.5f && y[1] == -0.5f && y[2] == 0.5f && y[3] == -0.5f && y[8] == -0.5f && y[127] == 0.5f &&
          y[126] == -0.5f);
    block_q2_0 b2;
    b2.d = 0x3800;
    memset(b2.qs, 0x55, sizeof b2.qs);  /* every code 1: zero */
    b2.qs[0] = 0xE4;                    /* codes 0,1,2,3 for elements 0..3 */
    b2.qs[15] = 0x1B;                   /* codes 3,2,1,0 for elements 60..63 */
    CHECK_OK(qt_dequantize_rows(QT_TYPE_Q2_0, &b2, y, 1, 64));
    CHECK(y[0] == -0.5f && y[1] == 0.0f && y[2] == 0.5f && y[3] == 1.0f && y[4] == 0.0f);
    CHECK(y[60] == 1.0f && y[61] == 0.5f && y[62] == 0.0f && y[63] == -0.5f);
}

/* Encoder rules: Q1_0's scale is the mean |x| and -0.0 counts as >= 0;
 * Q2_0's scale is max |x| and codes round halves away from zero; an all-zero
 * block stays zero. Importance weights change nothing. */
static void test_encode_rules(void) {
    float x[128], w[128];
    for (int i = 0; i < 128; i++) {
        x[i] = (i % 3 == 0 ? -1.0f : 1.0f) * (float)(i + 1) / 128.0f;
        w[i] = (float)(i * 7 % 13) + 0.25f;
    }
    x[5] = -0.0f;
    block_q1_0 a, b;
    CHECK_OK(qt_quantize_rows(QT_TYPE_Q1_0, x, &a, 1, 128, NULL));
    CHECK_OK(qt_quantize_rows(QT_TYPE_Q1_0, x, &b, 1, 128, w));
    CHECK(!memcmp(&a, &b, sizeof a));
    float mean = 0.0f;
    for (int i = 0; i < 128; i++) mean += fabsf(x[i]);
    CHECK_EQ_INT(a.d, qt_f32_to_fp16(mean / 128.0f));
    CHECK((a.qs[0] >> 5) & 1);   /* -0.0 */
    CHECK(!((a.qs[0] >> 0) & 1)); /* x[0] < 0 */
    CHECK((a.qs[0] >> 1) & 1);

    float z[64] = {0}, h[64];
    block_q2_0 c, d2;
    CHECK_OK(qt_quantize_rows(QT_TYPE_Q2_0, z, &c, 1, 64, NULL));
    CHECK_EQ_INT(c.d, 0);
    for (int i = 0; i < 16; i++) CHECK_EQ_INT(c.qs[i], 0x55);
    for (int i = 0; i < 64; i++) h[i] = 0.0f;
    h[0] = 2.0f;   /* the scale */
    h[1] = 1.0f;   /* x/d = 0.5 rounds away from zero: code 2 */
    h[2] = -1.0f;  /* -0.5: code 0 */
    h[3] = 0.98f;  /* 0.49: code 1 */
    CHECK_OK(qt_quantize_rows(QT_TYPE_Q2_0, h, &c, 1, 64, NULL));
    CHECK_OK(qt_quantize_rows(QT_TYPE_Q2_0, h, &d2, 1, 64, w));
    CHECK(!memcmp(&c, &d2, sizeof c));
    CHECK_EQ_INT(c.d, 0x4000);
    CHECK_EQ_INT(c.qs[0], 2 | 2 << 2 | 0 << 4 | 1 << 6);
}

enum { N_TOK = 48 };

static void test_engine_uses_the_dot_kernels(void) {
    static const char *const names[2] = {"tiny256-Q1_0-imatrix", "tiny256-Q2_0-imatrix"};
    int32_t tok[N_TOK];
    uint32_t st = 2026;
    tok[0] = 1; /* BOS */
    for (int i = 1; i < N_TOK; i++) {
        st = st * 1664525u + 1013904223u;
        tok[i] = 3 + (int32_t)((st >> 8) % 509u);
    }
    for (int f = 0; f < 2; f++) {
        char rel[128];
        snprintf(rel, sizeof rel, REF "files/%s.gguf", names[f]);
        qt_model *m = NULL;
        CHECK_OK(qt_model_open(qt_test_shared(rel), &m));
        if (!m) continue;
        qt_engine_opts o;
        qt_engine_opts_default(&o);
        o.n_ctx = 64;
        o.n_threads = 1;
        qt_engine_ctx *e = NULL;
        CHECK_OK(qt_engine_new(m, &o, &e));
        if (!e) { qt_model_free(m); continue; }
        char want[64];
        snprintf(want, sizeof want, "q8_0 for %s rows", f ? "q2_0" : "q1_0");
        CHECK_MSG(strstr(qt_engine_describe(e), want), "%s: %s", names[f], qt_engine_describe(e));
        float *lg = malloc((size_t)N_TOK * 512 * sizeof *lg);
        CHECK_OK(qt_engine_eval(e, tok, N_TOK, 0, lg));
        int finite = 1;
        for (int i = 0; i < N_TOK * 512; i++) finite &= isfinite(lg[i]) != 0;
        CHECK(finite);
        free(lg);
        qt_engine_free(e);
        qt_model_free(m);
    }
}

int main(void) {
    load_manifest();
    QT_RUN(test_traits_rows);
    QT_RUN(test_decode_layout);
    QT_RUN(test_encode_rules);
    QT_RUN(test_manifest_hashes);
    QT_RUN(test_reference_files);
    QT_RUN(test_engine_uses_the_dot_kernels);
    free(rows);
    return qt_test_finish("test_ggml_q1_q2");
}
