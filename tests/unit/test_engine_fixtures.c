/* The engine on the tiny random-weight Hugging Face fixtures of every
 * architecture variant (tests/fixtures.c: llama, llama3 rope scaling + tied,
 * qwen2 q/k/v bias, qwen3 q/k norm with head_dim != hidden/heads, mistral),
 * read two ways: straight from the HF directory (HF row order, rotate-half
 * RoPE) and after conversion to GGUF (llama.cpp's Q/K permutation, pairs
 * RoPE, rope_freqs for llama3). Both must give the same logits — the RoPE
 * convention, the permutation, tied output and the biases/norms all have to
 * line up for that.
 *
 * With `--export DIR` it also writes, for tests/interop/test_engine_llamacpp.sh,
 * each fixture as GGUF (vocabulary: stories260K's 512-token SentencePiece
 * vocabulary, so llama.cpp can load it; the fixtures' n_vocab is set to 512),
 * the token ids evaluated, and our next-token log-probabilities, which the
 * interop test compares with llama.cpp's (node-llama-cpp). */
#define _GNU_SOURCE
#include <math.h>
#include <sys/stat.h>

#include "fixtures.h"
#include "model/model_internal.h"
#include "qtest.h"
#include "quanta.h"

enum { N_TOK = 48 };

static const fx_spec *variants[] = {&fx_llama, &fx_llama3_rope, &fx_qwen2_bias, &fx_qwen3_qknorm, &fx_mistral, &fx_llama_mlp_bias};

static void tokens(int32_t *t, int n, int32_t n_vocab) {
    uint32_t x = 12345;
    t[0] = 1; /* BOS */
    for (int i = 1; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        t[i] = 3 + (int32_t)((x >> 8) % (uint32_t)(n_vocab - 3));
    }
}

/* logits (n, n_vocab) with the default engine options (f16 KV, llama.cpp activation handling) */
static float *logits_of(const qt_model *m, const int32_t *t, int n) {
    qt_engine_opts o;
    qt_engine_opts_default(&o);
    o.n_ctx = 64;
    o.n_threads = 1;
    qt_engine_ctx *e = NULL;
    qt_status s = qt_engine_new(m, &o, &e);
    CHECK_OK(s);
    if (s != QT_OK) return NULL;
    float *lg = malloc((size_t)n * qt_engine_n_vocab(e) * sizeof *lg);
    CHECK_OK(qt_engine_eval(e, t, n, 0, lg));
    qt_engine_free(e);
    return lg;
}

/* Writes the fixture as an HF directory (n_vocab = 512) and, with stories260K's
 * vocabulary attached, as a GGUF file. Returns the HF model (caller frees) or NULL. */
static qt_model *make(const fx_spec *v, const char *dir, const char *gguf, const qt_model *vocab_src) {
    fx_spec s = *v;
    s.n_vocab = 512;
    if (fx_write_hf(dir, &s, 7) != 0) {
        QT_FAIL_AT("fixture %s not written", v->name);
        return NULL;
    }
    qt_model *hf = NULL;
    CHECK_OK(qt_model_open(dir, &hf));
    if (!hf) return NULL;
    hf->vocab = *qt_model_vocab(vocab_src); /* borrowed for the write; restored below */
    /* default options: the matrices keep the fixture's own F32/F16/BF16 (activations are
     * converted to the weight type, so another type would change the numbers); the writer
     * widens F16/BF16 norms and biases to F32 as llama.cpp's converter does (docs/formats.md
     * §2.9) -- llama.cpp cannot add or multiply by f16 vectors */
    CHECK_OK(qt_gguf_write(hf, gguf, NULL));
    memset(&hf->vocab, 0, sizeof hf->vocab);
    hf->vocab.bos_id = hf->vocab.eos_id = hf->vocab.unk_id = hf->vocab.pad_id = -1;
    return hf;
}

static void export_floats(const char *path, const float *x, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(x, sizeof *x, n, f) != n) QT_FAIL_AT("cannot write %s", path);
    if (f) fclose(f);
}

static const char *export_dir;

static void test_hf_and_gguf_agree(void) {
    qt_model *stories = NULL;
    CHECK_OK(qt_model_open(qt_test_shared("models/stories260K.gguf"), &stories));
    if (!stories) return;
    const char *root = export_dir ? export_dir : qt_test_tmpdir();
    int32_t t[N_TOK];
    tokens(t, N_TOK, 512);
    char path[1024];
    if (export_dir) {
        snprintf(path, sizeof path, "%s/tokens.txt", root);
        FILE *f = fopen(path, "w");
        for (int i = 0; f && i < N_TOK; i++) fprintf(f, "%d%c", t[i], i + 1 < N_TOK ? ' ' : '\n');
        if (f) fclose(f);
    }
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        char dir[1024], gguf[1024];
        snprintf(dir, sizeof dir, "%s/%s-hf", root, variants[i]->name);
        snprintf(gguf, sizeof gguf, "%s/%s.gguf", root, variants[i]->name);
        qt_model *hf = make(variants[i], dir, gguf, stories);
        if (!hf) continue;
        qt_model *gg = NULL;
        CHECK_OK(qt_model_open(gguf, &gg));
        if (!gg) { qt_model_free(hf); continue; }
        CHECK_EQ_INT(qt_model_hparams(gg)->rope_neox, variants[i]->qk_norm || variants[i]->qkv_bias);
        float *a = logits_of(hf, t, N_TOK), *b = logits_of(gg, t, N_TOK);
        if (a && b) {
            double mx = 0, scale = 0;
            for (int k = 0; k < N_TOK * 512; k++) {
                mx = fmax(mx, fabs(a[k] - b[k]));
                scale = fmax(scale, fabs(a[k]));
            }
            printf("  %-13s HF dir vs converted GGUF: max |logit diff| %.3g (logits up to %.3g)\n", variants[i]->name,
                   mx, scale);
            /* same weights, same math, rows permuted: only f16 KV roundings may differ */
            CHECK_MSG(mx <= 2e-3 * scale, "%s: HF and GGUF logits differ by %.3g", variants[i]->name, mx);
            if (export_dir) {
                snprintf(path, sizeof path, "%s/%s.logits.f32", root, variants[i]->name);
                export_floats(path, b, (size_t)N_TOK * 512);
            }
        }
        free(a); free(b);
        qt_model_free(gg);
        qt_model_free(hf);
    }
    qt_model_free(stories);
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--export")) {
        export_dir = argv[2];
        mkdir(export_dir, 0755);
    }
    QT_RUN(test_hf_and_gguf_agree);
    return qt_test_finish("test_engine_fixtures");
}
