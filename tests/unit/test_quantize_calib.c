/* quantize: the calibration text's fingerprint (lib/quantize/calib.c): SHA-256
 * (FIPS 180-2 appendix vectors), byte ranges, and the bottom-k shingle sample
 * on the shared TinyStories slice. The held-out check that reads fingerprints
 * is eval's (test_eval_heldout). */
#include "qtest.h"
#include "quanta.h"

#include <math.h>

static void test_sha256_vectors(void) {
    char hex[65];
    qt_sha256_hex("", 0, hex);
    CHECK_EQ_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    qt_sha256_hex("abc", 3, hex);
    CHECK_EQ_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes: padding spills into a 2nd block */
    qt_sha256_hex(two, strlen(two), hex);
    CHECK_EQ_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char *a = malloc(1000000);
    memset(a, 'a', 1000000);
    qt_sha256_hex(a, 1000000, hex);
    CHECK_EQ_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(a);
    /* the published sha256 of the shared TinyStories file (its README) */
    size_t n;
    void *t = qt_test_read(qt_test_shared("data/tinystories-valid-first1000.txt"), &n);
    qt_sha256_hex(t, n, hex);
    CHECK_EQ_STR(hex, "5fc1fb0113df62b567fb271806cd645ce8d75f59c58ca0b764c03d3b6ff34ca6");
    free(t);
}

static void test_ranges(void) {
    qt_calib_fingerprint fp;
    memset(&fp, 0, sizeof fp);
    CHECK_OK(qt_calib_parse_ranges("0-4096,8192-16384", &fp));
    CHECK_EQ_INT(fp.n_ranges, 2);
    CHECK_EQ_INT(fp.ranges[1][0], 8192);
    CHECK_EQ_INT(fp.ranges[1][1], 16384);
    char buf[128];
    qt_calib_format_ranges(&fp, buf, sizeof buf);
    CHECK_EQ_STR(buf, "0-4096,8192-16384");
    CHECK_OK(qt_calib_parse_ranges("", &fp));
    CHECK_EQ_INT(fp.n_ranges, 0);
    const char *bad[] = {"x", "1-", "-5", "5-3", "1-2,", "1-2;3-4", "1 - 2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_MSG(qt_calib_parse_ranges(bad[i], &fp) == QT_ERR_FORMAT, "\"%s\" accepted", bad[i]);
        CHECK(strstr(qt_last_error(), QT_CALIB_KEY_RANGES) != NULL);
    }
}

/* The second half of TinyStories as calibration: a full sample of shingle
 * hashes, sorted and distinct; ranges past the end of the file are refused. */
static void test_fingerprint_tinystories(void) {
    size_t n;
    char *t = qt_test_read(qt_test_shared("data/tinystories-valid-first1000.txt"), &n);
    uint64_t second[1][2] = {{n / 2, n}};
    qt_calib_fingerprint fp;
    CHECK_OK(qt_calib_fingerprint_make(t, n, second, 1, &fp));
    CHECK_EQ_INT(fp.n_shingles, QT_CALIB_MAX_SHINGLES);
    for (int i = 1; i < fp.n_shingles; i++) CHECK(fp.shingles[i - 1] < fp.shingles[i]);
    qt_calib_fingerprint_free(&fp);
    uint64_t past[1][2] = {{10, n + 1}};
    CHECK_STATUS(qt_calib_fingerprint_make(t, n, past, 1, &fp), QT_ERR_ARG);
    free(t);
}

static void test_shingles_ignore_whitespace_layout(void) {
    const char *a = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen";
    const char *b = "one  two\nthree four five six seven\n\neight nine ten eleven twelve thirteen\tfourteen";
    uint64_t *ha, *hb;
    int32_t na, nb;
    CHECK_OK(qt_calib_shingles(a, strlen(a), UINT64_MAX, 100, &ha, &na));
    CHECK_OK(qt_calib_shingles(b, strlen(b), UINT64_MAX, 100, &hb, &nb));
    CHECK_EQ_INT(na, 2); /* 14 words: two 13-word windows */
    CHECK_EQ_INT(nb, 2);
    CHECK(na == nb && memcmp(ha, hb, sizeof *ha * (size_t)na) == 0);
    free(ha); free(hb);
    CHECK_OK(qt_calib_shingles("too few words", 13, UINT64_MAX, 100, &ha, &na));
    CHECK_EQ_INT(na, 0);
    free(ha);
}

/* The cutting rule (quanta/quantize.h, "calibration samples"). The seed-7
 * and seed-8 draws were computed independently with a transcription of the
 * documented rule (splitmix64, Fisher-Yates from the top, sorted), so a
 * change of the rule, which would change every recorded seed's meaning, fails. */
static void test_windows_rule(void) {
    int64_t *st;
    int32_t n;
    CHECK_OK(qt_calib_windows(1000, 100, 3, 0, &st, &n));
    CHECK_EQ_INT(n, 3);
    CHECK(st[0] == 0 && st[1] == 100 && st[2] == 200);
    free(st);
    CHECK_OK(qt_calib_windows(1099, 100, 0, 0, &st, &n)); /* every whole window; the tail is dropped */
    CHECK_EQ_INT(n, 10);
    CHECK_EQ_INT(st[9], 900);
    free(st);
    const int64_t want7[4] = {100, 500, 800, 900}, want8[4] = {0, 300, 500, 700};
    CHECK_OK(qt_calib_windows(1000, 100, 4, 7, &st, &n));
    CHECK(n == 4 && !memcmp(st, want7, sizeof want7));
    free(st);
    CHECK_OK(qt_calib_windows(1000, 100, 4, 8, &st, &n));
    CHECK(n == 4 && !memcmp(st, want8, sizeof want8));
    free(st);
    CHECK_OK(qt_calib_windows(1000, 100, 10, 7, &st, &n)); /* all of them, in order */
    for (int32_t i = 0; i < n; i++) CHECK_EQ_INT(st[i], 100 * i);
    free(st);
    CHECK_STATUS(qt_calib_windows(1000, 100, 11, 0, &st, &n), QT_ERR_ARG);
    CHECK(strstr(qt_last_error(), "11 samples asked for") != NULL);
    CHECK_STATUS(qt_calib_windows(99, 100, 0, 0, &st, &n), QT_ERR_ARG);
    CHECK(strstr(qt_last_error(), "no window of 100 fits") != NULL);
    CHECK(st == NULL);
}

/* The samples as loaded: windows of the tokenized file, BOS first in each. */
static qt_model *stories(void) {
    qt_model *m = NULL;
    CHECK_OK(qt_model_open(qt_test_shared("models/stories260K.gguf"), &m));
    return m;
}

static void test_calib_load(void) {
    qt_model *m = stories();
    if (!m) return;
    const char *path = qt_test_shared("data/tinystories-valid-first1000.txt");
    qt_calib_opts o = {.path = path, .n_samples = 3, .seq_len = 64, .seed = 0};
    qt_calib_set s;
    CHECK_OK(qt_calib_load(m, &o, &s));
    CHECK_EQ_INT(s.n_samples, 3);
    CHECK_EQ_INT(s.seq_len, 64);
    /* the same text tokenized whole: sample i = tokens [64 i, 64 i + 64), BOS in front */
    size_t len;
    char *text = qt_test_read(path, &len);
    qt_tokenizer *tok;
    int32_t *ids, n_ids;
    CHECK_OK(qt_tokenizer_new(qt_model_vocab(m), &tok));
    CHECK_OK(qt_tokenize(tok, text, len, true, &ids, &n_ids));
    CHECK_EQ_INT(s.file_tokens, n_ids);
    for (int32_t i = 0; i < 3; i++) {
        CHECK_EQ_INT(s.tokens[64 * i], qt_model_vocab(m)->bos_id);
        CHECK(!memcmp(s.tokens + 64 * i + 1, ids + 64 * i + 1, 63 * sizeof *ids));
    }
    char hex[65];
    qt_sha256_hex(text, len, hex);
    CHECK_EQ_STR(s.fp.sha256, hex);
    CHECK(s.fp.n_ranges == 0 && s.fp.n_shingles == QT_CALIB_MAX_SHINGLES);
    qt_gguf_kv kv[QT_CALIB_MAX_KV];
    CHECK_EQ_INT(qt_calib_set_gguf_kv(&s, kv), 8); /* file, tokens, nsamples, seqlen, seed, sha256, scheme, shingles */
    CHECK_EQ_STR(kv[0].key, QT_CALIB_KEY_FILE);
    CHECK_EQ_INT(kv[2].value.u64, 3);
    free(ids);
    free(text);
    qt_tokenizer_free(tok);
    qt_calib_set_free(&s);
    o.n_samples = 100000;
    CHECK_STATUS(qt_calib_load(m, &o, &s), QT_ERR_ARG);
    CHECK(strstr(qt_last_error(), "tinystories-valid-first1000.txt") != NULL);
    qt_model_free(m);
}

/* Layer 0's q/k/v input is rmsnorm(embedding) * attn_norm, computable from the
 * weights alone: the observer's absmax must equal it (f32 engine vs double here). */
static float layer0_amax(const qt_model *m, const qt_calib_set *s) {
    const qt_tensor *emb = qt_model_find_tensor(m, "token_embd.weight"), *nw = qt_model_find_tensor(m, "blk.0.attn_norm.weight");
    const int64_t d = emb->ne[0];
    float *x = malloc((size_t)d * sizeof *x), *w = malloc((size_t)d * sizeof *w);
    CHECK_OK(qt_dequantize_rows(nw->type, nw->data, w, 1, d));
    double amax = 0;
    for (int64_t i = 0; i < (int64_t)s->n_samples * s->seq_len; i++) {
        CHECK_OK(qt_dequantize_rows(emb->type, (const uint8_t *)emb->data + (size_t)s->tokens[i] * qt_row_size(emb->type, d), x, 1, d));
        double ss = 0;
        for (int64_t j = 0; j < d; j++) ss += (double)x[j] * x[j];
        const double r = 1.0 / sqrt(ss / (double)d + qt_model_hparams(m)->rms_eps);
        for (int64_t j = 0; j < d; j++) if (fabs(x[j] * r * w[j]) > amax) amax = fabs(x[j] * r * w[j]);
    }
    free(x);
    free(w);
    return (float)amax;
}

static void test_act_amax(void) {
    qt_model *m = stories();
    if (!m) return;
    qt_calib_opts o = {.path = qt_test_shared("data/tinystories-valid-first1000.txt"), .n_samples = 4, .seq_len = 64, .seed = 3};
    qt_calib_set s;
    CHECK_OK(qt_calib_load(m, &o, &s));
    qt_act_amax a[2];
    for (int t = 0; t < 2; t++) {
        qt_engine_opts eo;
        qt_engine_opts_default(&eo);
        eo.n_ctx = eo.n_batch = 64;
        eo.n_threads = t + 1;
        qt_engine_ctx *e;
        CHECK_OK(qt_engine_new(m, &eo, &e));
        CHECK_OK(qt_calib_act_amax(m, e, &s, (qt_progress){0}, &a[t]));
        qt_engine_free(e);
    }
    CHECK_EQ_INT(a[0].n, 5 * 7);
    CHECK(a[0].n == a[1].n && !memcmp(a[0].amax, a[1].amax, sizeof(float) * (size_t)a[0].n)); /* any thread count */
    const float q = qt_act_amax_get(&a[0], "blk.0.attn_q.weight"), want = layer0_amax(m, &s);
    CHECK(fabsf(q - want) <= 1e-5f * want);
    CHECK(q == qt_act_amax_get(&a[0], "blk.0.attn_k.weight") && q == qt_act_amax_get(&a[0], "blk.0.attn_v.weight"));
    CHECK(qt_act_amax_get(&a[0], "blk.3.ffn_gate.weight") == qt_act_amax_get(&a[0], "blk.3.ffn_up.weight"));
    CHECK(qt_act_amax_get(&a[0], "blk.3.ffn_down.weight") > 0);
    CHECK(isnan(qt_act_amax_get(&a[0], "output.weight")));
    qt_act_amax_free(&a[0]);
    qt_act_amax_free(&a[1]);
    qt_calib_set_free(&s);
    qt_model_free(m);
}

int main(void) {
    QT_RUN(test_windows_rule);
    QT_RUN(test_calib_load);
    QT_RUN(test_act_amax);
    QT_RUN(test_sha256_vectors);
    QT_RUN(test_ranges);
    QT_RUN(test_fingerprint_tinystories);
    QT_RUN(test_shingles_ignore_whitespace_layout);
    return qt_test_finish("test_quantize_calib");
}
