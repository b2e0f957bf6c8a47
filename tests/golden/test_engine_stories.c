/* The engine against llama.cpp on stories260K (../shared/reference/llamacpp/README.md):
 * logits of 128 tokens evaluated as one batch, greedy continuations, and
 * perplexity with llama-perplexity's method.
 *
 * Logits (F32 model, f16 KV cache as llama.cpp uses by default): the issue
 * asks for 1e-4. The engine reproduces the float order of the llama.cpp
 * build that wrote the file (x86-64 AVX-512: tinyBLAS and ggml_vec_dot
 * orders, SwiGLU's vectorised expf, fused RoPE products, flash attention with
 * Q rounded to f16, an f16 value accumulator and a fused softmax sum), and
 * then every one of the 128 x 512 logits is bit-identical. The order matters
 * far beyond the last bit: llama.cpp rounds K, V, Q and the attention
 * accumulator to f16, so a one-ulp difference upstream can turn one of those
 * roundings the other way and move later logits by ~1e-3 on this model. The
 * F32 test asserts the 1e-4 and prints how many logits are
 * bit-identical.
 *
 * Perplexity: the whole TinyStories file (393k tokens) takes about a minute
 * per model and context, so the default run scores 1 chunk in 32 and checks
 * the method (counts) plus agreement within the sampling spread; set
 * QT_FULL_PPL=1 to run every chunk and check the tolerances (0.1 %
 * F32, 0.5 % Q8_0/Q4_0) against llama.cpp's table.
 *
 * (heavy under sanitizers: minutes under ASan, so `make test-asan` leaves it out; test-release
 * runs it; test-avx2 too leaves the heavy ones out, to keep CI under 30 min. CMakeLists.txt reads this line.)
 */
#include <math.h>
#include <time.h>

#include "qtest.h"
#include "quanta.h"

/* The F16 row of llama.cpp's table came from its converter's --outtype f16; ours
 * is written here the same way (2-D weights to f16, norms stay f32). */
static const char *f16_model(void) {
    static char path[600];
    if (path[0]) return path;
    snprintf(path, sizeof path, "%s/stories260K-F16.gguf", qt_test_tmpdir());
    qt_model *m = NULL;
    CHECK_OK(qt_model_open(qt_test_shared("models/stories260K.gguf"), &m));
    qt_gguf_write_opts wo = qt_gguf_write_opts_default();
    wo.outtype = QT_TYPE_F16;
    if (m) CHECK_OK(qt_gguf_write(m, path, &wo));
    qt_model_free(m);
    return path;
}

static const char *model_path(const char *file) {
    if (!strcmp(file, "stories260K.gguf")) return qt_test_shared("models/stories260K.gguf");
    if (!strcmp(file, "stories260K-F16.gguf")) return f16_model();
    static char buf[8][512];
    static int i;
    char *b = buf[i++ & 7];
    snprintf(b, 512, "%s", qt_test_shared("reference/llamacpp/"));
    strncat(b, file, 511 - strlen(b));
    return b;
}

static qt_engine_ctx *open_engine(qt_model **m, const char *file, int32_t n_ctx) {
    *m = NULL;
    if (qt_model_open(model_path(file), m) != QT_OK) {
        QT_FAIL_AT("open %s: %s", file, qt_last_error());
        return NULL;
    }
    qt_engine_opts o;
    qt_engine_opts_default(&o); /* f16 KV cache, llama.cpp's activation quantization */
    o.numerics = QT_NUMERICS_LLAMA; /* the golden comparisons keep llama.cpp's float order */
    o.n_ctx = n_ctx;
    o.n_threads = 2;
    qt_engine_ctx *e = NULL;
    CHECK_OK(qt_engine_new(*m, &o, &e));
    return e;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void logits_vs(const char *file, const char *ref, double max_tol, double mean_tol, double first_tol) {
    qt_model *m;
    qt_engine_ctx *e = open_engine(&m, file, 256);
    if (!e) return;
    char *txt = qt_test_read(qt_test_shared("reference/llamacpp/logits-tokens-128.txt"), NULL);
    int32_t tok[128];
    char *p = txt;
    for (int i = 0; i < 128; i++) tok[i] = (int32_t)strtol(p, &p, 10);
    free(txt);
    size_t size;
    float *want = qt_test_read(qt_test_shared(ref), &size);
    CHECK_EQ_INT(size, 128 * 512 * sizeof(float));
    float *got = malloc(128 * 512 * sizeof *got);
    CHECK_OK(qt_engine_eval(e, tok, 128, 0, got));
    double mx = 0, sum = 0, first = 0;
    int within = 0;
    for (int pos = 0; pos < 128; pos++) {
        double pm = 0;
        for (int v = 0; v < 512; v++) {
            const double d = fabs((double)got[pos * 512 + v] - want[pos * 512 + v]);
            pm = fmax(pm, d);
            sum += d;
        }
        mx = fmax(mx, pm);
        if (pos < 2) first = fmax(first, pm);
        within += pm <= 1e-4;
    }
    int same = 0;
    for (int i = 0; i < 128 * 512; i++) same += got[i] == want[i];
    printf("  %s logits vs llama.cpp: max |diff| %.3g, mean %.3g, positions within 1e-4: %d/128, bit-identical %d/65536\n",
           file, mx, sum / (128 * 512), within, same);
    CHECK_MSG(mx <= max_tol, "%s: max diff %.3g > %.3g", file, mx, max_tol);
    CHECK_MSG(sum / (128 * 512) <= mean_tol, "%s: mean diff %.3g > %.3g", file, sum / (128 * 512), mean_tol);
    CHECK_MSG(first <= first_tol, "%s: positions 0-1 differ by %.3g > %.3g", file, first, first_tol);
    free(got); free(want);
    qt_engine_free(e);
    qt_model_free(m);
}

static void test_logits_f32(void) { logits_vs("stories260K.gguf", "reference/llamacpp/logits-F32-128.f32", 1e-4, 1e-5, 1e-5); }
/* Quantized files: llama.cpp's own Q8_0/Q4_0 logits are 0.44 / 7.3 away from F32 at worst. */
static void test_logits_q8_0(void) { logits_vs("stories260K-Q8_0.gguf", "reference/llamacpp/logits-Q8_0-128.f32", 0.5, 0.1, 0.5); }
static void test_logits_q4_0(void) { logits_vs("stories260K-Q4_0.gguf", "reference/llamacpp/logits-Q4_0-128.f32", 0.5, 0.1, 0.5); }

/* greedy.tsv: model, prompt, "prompt ids | 48 greedy ids" */
static void test_greedy(void) {
    char *tsv = qt_test_read(qt_test_shared("reference/llamacpp/greedy.tsv"), NULL);
    int rows = 0;
    for (char *line = strtok(tsv, "\n"); line; line = strtok(NULL, "\n")) {
        char file[128], rest[4096];
        if (sscanf(line, "%127[^\t]\t%*[^\t]\t%4095[^\n]", file, rest) != 2) continue;
        int32_t ids[256];
        int n_prompt = 0, n_all = 0;
        for (char *q = rest; *q;) {
            while (*q == ' ') q++;
            if (*q == '|') { n_prompt = n_all; q++; continue; }
            if (!*q) break;
            ids[n_all++] = (int32_t)strtol(q, &q, 10);
        }
        qt_model *m;
        qt_engine_ctx *e = open_engine(&m, file, 128);
        if (!e) break;
        float logits[512];
        CHECK_OK(qt_engine_eval(e, ids, n_prompt, n_prompt - 1, logits));
        int agree = 0;
        for (int i = n_prompt; i < n_all; i++) {
            int32_t best = 0;
            for (int v = 1; v < 512; v++) best = logits[v] > logits[best] ? v : best;
            if (best != ids[i]) {
                /* Diverging is accepted only at a near tie: llama.cpp's token within 0.05 of our
                 * best (below the logit differences activation quantization leaves, see above);
                 * the two continuations then go separate ways, so the row ends here. */
                const float gap = logits[best] - logits[ids[i]];
                printf("  %s row %d diverges at token %d: ours %d, llama.cpp %d, logit gap %.4f\n", file, rows,
                       i - n_prompt, best, ids[i], gap);
                CHECK_MSG(gap < 0.05f, "%s row %d: greedy token %d is %d, llama.cpp chose %d (gap %.4f)", file, rows,
                          i - n_prompt, best, ids[i], gap);
                break;
            }
            agree++;
            CHECK_OK(qt_engine_eval(e, &best, 1, 0, logits));
        }
        printf("  greedy %s: %d/%d tokens as llama.cpp\n", file, agree, n_all - n_prompt);
        if (strstr(file, "Q4_0") == NULL) CHECK_EQ_INT(agree, n_all - n_prompt); /* F32, Q8_0: every token */
        qt_engine_free(e);
        qt_model_free(m);
        rows++;
    }
    CHECK_EQ_INT(rows, 9);
    free(tsv);
}

/* llama.cpp's table (README): ppl at c = 128 and 256 */
static const struct { const char *file; double c128, c256, tol; } table[] = {
    {"stories260K.gguf", 4.9693, 4.8753, 0.001},
    {"stories260K-F16.gguf", 4.9692, 4.8751, 0.001},
    {"stories260K-Q8_0.gguf", 4.9757, 4.8821, 0.005},
    {"stories260K-Q4_0.gguf", 5.2620, 5.2261, 0.005},
};

static void test_perplexity(void) {
    const bool full = getenv("QT_FULL_PPL") && atoi(getenv("QT_FULL_PPL"));
    char *text;
    size_t len;
    CHECK_OK(qt_read_file(qt_test_shared("data/tinystories-valid-first1000.txt"), &text, &len));
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        qt_model *m;
        qt_engine_ctx *e = open_engine(&m, table[i].file, 256);
        if (!e) break;
        qt_tokenizer *tok;
        CHECK_OK(qt_tokenizer_new(qt_model_vocab(m), &tok));
        int32_t *ids, n;
        CHECK_OK(qt_tokenize(tok, text, len, true, &ids, &n));
        for (int c = 128; c <= 256; c *= 2) {
            const double want = c == 128 ? table[i].c128 : table[i].c256;
            qt_ppl_result r;
            qt_ppl_opts po = {.n_ctx = c, .bos_id = qt_model_vocab(m)->bos_id};
            if (full) {
                CHECK_OK(qt_perplexity(e, ids, n, &po, &r));
                CHECK_EQ_INT(r.n_chunks, n / c);
            } else {
                /* 1 chunk in 32: the tokens of chunks 0, 32, 64, ... laid end to end */
                const int64_t n_full = n / c, n_sub = (n_full + 31) / 32;
                int32_t *sub = malloc((size_t)(n_sub * c) * sizeof *sub);
                for (int64_t k = 0; k < n_sub; k++) memcpy(sub + k * c, ids + 32 * k * c, (size_t)c * sizeof *sub);
                CHECK_OK(qt_perplexity(e, sub, n_sub * c, &po, &r));
                CHECK_EQ_INT(r.n_chunks, n_sub);
                free(sub);
            }
            CHECK_EQ_INT(r.n_scored, (int64_t)r.n_chunks * (c / 2 - 1));
            const double rel = fabs(r.ppl - want) / want;
            printf("  ppl %s c=%d (%s): %.4f +/- %.5f, llama.cpp %.4f (%+.3f %%), %.0f tokens/s\n", table[i].file, c,
                   full ? "all chunks" : "1 chunk in 32", r.ppl, r.ppl_stderr, want, 100 * (r.ppl - want) / want,
                   r.n_evaluated / r.seconds);
            if (full)
                CHECK_MSG(rel <= table[i].tol, "%s c=%d: %.4f vs %.4f", table[i].file, c, r.ppl, want);
            else /* a subset differs from the whole by its sampling spread: 4 of its standard errors */
                CHECK_MSG(fabs(r.ppl - want) <= 4 * r.ppl_stderr,
                          "%s c=%d: subset %.4f vs full-file %.4f", table[i].file, c, r.ppl, want);
        }
        free(ids);
        qt_tokenizer_free(tok);
        qt_engine_free(e);
        qt_model_free(m);
    }
    free(text);
}

/* Throughput on stories260K, printed for the report (never asserted: timing). */
static void test_speed(void) {
    qt_model *m;
    qt_engine_ctx *e = open_engine(&m, "stories260K.gguf", 512);
    if (!e) return;
    int32_t ids[256];
    for (int i = 0; i < 256; i++) ids[i] = 3 + (i * 37) % 500;
    ids[0] = 1;
    float *logits = malloc(512 * sizeof *logits);
    double t0 = now_s();
    CHECK_OK(qt_engine_eval(e, ids, 256, 255, logits));
    const double prefill = 256 / (now_s() - t0);
    t0 = now_s();
    for (int i = 0; i < 128; i++) CHECK_OK(qt_engine_eval(e, &ids[i], 1, 0, logits));
    const double decode = 128 / (now_s() - t0);
    printf("  stories260K (2 threads, f16 KV): prefill %.0f tokens/s, decode %.0f tokens/s (kernels: %s)\n", prefill,
           decode, qt_cpu_level_name());
    free(logits);
    qt_engine_free(e);
    qt_model_free(m);
}

/* tiny256-random quantized to `scheme` in the test's temporary directory. */
static const char *tiny256_as(const char *scheme) {
    static char path[8][600];
    static int k;
    char *out = path[k++ & 7];
    snprintf(out, 600, "%s/tiny256-%s.gguf", qt_test_tmpdir(), scheme);
    qt_model *m = NULL;
    CHECK_OK(qt_model_open(qt_test_shared("models/tiny256-random.gguf"), &m));
    qt_quantize_opts o = qt_quantize_opts_default();
    o.scheme = scheme;
    o.threads = 2;
    qt_quantize_plan *p = NULL;
    if (m) CHECK_OK(qt_quantize_plan_make(m, &o, &p));
    if (p) CHECK_OK(qt_quantize_run(m, out, &o, p));
    qt_quantize_plan_free(p);
    qt_model_free(m);
    return out;
}

/* Mean KL(llama || fast) over positions of the next-token distributions, and
 * the largest logit difference, for one model file over 128 tokens. */
static void fast_vs_llama(const char *path, const int32_t *tok, int32_t n_vocab_expect) {
    float *lg[2] = {NULL, NULL};
    int32_t V = 0;
    for (int nm = 0; nm < 2; nm++) {
        qt_model *m = NULL;
        CHECK_OK(qt_model_open(path, &m));
        if (!m) return;
        qt_engine_opts o;
        qt_engine_opts_default(&o);
        o.numerics = nm ? QT_NUMERICS_LLAMA : QT_NUMERICS_FAST;
        o.n_ctx = 256;
        o.n_threads = 2;
        qt_engine_ctx *e = NULL;
        CHECK_OK(qt_engine_new(m, &o, &e));
        if (e) {
            V = qt_engine_n_vocab(e);
            lg[nm] = malloc((size_t)128 * V * sizeof(float));
            CHECK_OK(qt_engine_eval(e, tok, 128, 0, lg[nm]));
            if (!nm) printf("  %s: %s\n", path, qt_engine_describe(e));
        }
        qt_engine_free(e);
        qt_model_free(m);
    }
    CHECK_EQ_INT(V, n_vocab_expect);
    if (!lg[0] || !lg[1]) { free(lg[0]); free(lg[1]); return; }
    double kl = 0, mx = 0;
    int64_t same = 0;
    for (int pos = 0; pos < 128; pos++) {
        const float *a = lg[1] + (size_t)pos * V, *b = lg[0] + (size_t)pos * V; /* a: llama, b: fast */
        double ma = -INFINITY, mb = -INFINITY, za = 0, zb = 0, k = 0;
        for (int v = 0; v < V; v++) ma = fmax(ma, a[v]), mb = fmax(mb, b[v]);
        for (int v = 0; v < V; v++) za += exp(a[v] - ma), zb += exp(b[v] - mb);
        for (int v = 0; v < V; v++) {
            const double la = a[v] - ma - log(za), lb = b[v] - mb - log(zb);
            k += exp(la) * (la - lb);
            mx = fmax(mx, fabs((double)a[v] - b[v]));
            same += a[v] == b[v];
        }
        kl += k / 128;
    }
    printf("  fast vs llama: mean KL %.3g, max |logit diff| %.3g, bit-identical %lld/%lld\n", kl, mx, (long long)same,
           (long long)128 * V);
    /* The stated bound (docs/engine.md, "Numerics"): mean KL <= 1e-3 nats and no logit
     * more than 0.5 away, the tolerance test_logits_q8_0/q4_0 give llama.cpp's own
     * files. Measured on this machine's AVX-512 kernels: KL 2e-4 (stories260K), 4e-6
     * (tiny256); the differences start as last-bit rounding and grow where they flip
     * an activation's int8 rounding in a later layer, as between llama.cpp and us. */
    CHECK_MSG(kl <= 1e-3, "%s: fast vs llama mean KL %.3g > 1e-3", path, kl);
    CHECK_MSG(mx <= 0.5, "%s: fast vs llama max logit diff %.3g > 0.5", path, mx);
    free(lg[0]); free(lg[1]);
}

/* --numerics fast against llama: within the KL bound on stories260K (llama.cpp's
 * Q8_0 and Q4_0 files) and tiny256 (quantized here to Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q6_K). */
static void test_numerics_fast_within_kl_bound(void) {
    char *txt = qt_test_read(qt_test_shared("reference/llamacpp/logits-tokens-128.txt"), NULL);
    int32_t tok[128];
    char *p = txt;
    for (int i = 0; i < 128; i++) tok[i] = (int32_t)strtol(p, &p, 10);
    free(txt);
    fast_vs_llama(model_path("stories260K-Q8_0.gguf"), tok, 512);
    fast_vs_llama(model_path("stories260K-Q4_0.gguf"), tok, 512);
    const char *schemes[] = {"q8_0", "q4_0", "q4_k_m", "q5_k_m", "q6_k"};
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) fast_vs_llama(tiny256_as(schemes[i]), tok, 512);
}

int main(void) {
    QT_RUN(test_logits_f32);
    QT_RUN(test_logits_q8_0);
    QT_RUN(test_logits_q4_0);
    QT_RUN(test_numerics_fast_within_kl_bound);
    QT_RUN(test_greedy);
    QT_RUN(test_perplexity);
    QT_RUN(test_speed);
    return qt_test_finish("test_engine_stories");
}
