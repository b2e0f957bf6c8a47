/* F16 / BF16 rows copied into huge pages at engine load (lib/engine/matmul.c,
 * mat_copy_rows): every matrix of at least 2 MiB in a file mapping gets its own
 * copy (smaller ones and the embedding table keep the mapping), and the logits
 * are those of the mapped rows bit for bit (QUANTA_WEIGHTS_COPY=0), under both
 * numerics and in one batch and 1-row steps. F16 and BF16 GGUF files, one layer
 * with 2 MiB feed-forward matrices. (An HF directory's safetensors mappings belong
 * to its checkpoint reader, not the model's maps, so its rows stay mapped.) */
#define _GNU_SOURCE
#include <stdlib.h>

#include "engine/engine_internal.h"
#include "fixtures.h"
#include "qtest.h"
#include "quanta.h"

enum { N_TOK = 6 };

/* 256 x 4096 halves = 2 MiB for gate, up and down; q, k, v, o and the output below it */
static const fx_spec shape = {"copy", "LlamaForCausalLM", "llama", 512, 256, 1, 4, 2, 4096, 64, 64, false, false, false,
                              false, false, 1e-5f, 10000.0f, 0, QT_ST_F16, 1, NULL, false};

static float *run(const qt_model *m, qt_numerics nm, bool copy, bool stepwise) {
    setenv("QUANTA_WEIGHTS_COPY", copy ? "1" : "0", 1);
    qt_engine_opts o;
    qt_engine_opts_default(&o);
    o.n_ctx = 16;
    o.n_threads = 2;
    o.numerics = nm;
    qt_engine_ctx *e = NULL;
    CHECK_OK(qt_engine_new(m, &o, &e));
    unsetenv("QUANTA_WEIGHTS_COPY");
    if (!e) return NULL;
    const qt__layer *L = &e->layers[0];
    CHECK_MSG((L->w_gate.own_data != NULL) == copy && (L->w_up.own_data != NULL) == copy &&
                  (L->w_down.own_data != NULL) == copy,
              "feed-forward copies: expected %s", copy ? "all three" : "none");
    CHECK(copy ? L->w_gate.data == L->w_gate.own_data : L->w_gate.data == L->w_gate.t->data);
    CHECK(L->wq.own_data == NULL && e->output.own_data == NULL && e->tok_embd.own_data == NULL); /* < 2 MiB */
    int32_t tok[N_TOK];
    for (int i = 0; i < N_TOK; i++) tok[i] = 1 + (i * 97 + 5) % 500;
    float *lg = malloc((size_t)N_TOK * 512 * sizeof *lg);
    if (!stepwise) CHECK_OK(qt_engine_eval(e, tok, N_TOK, 0, lg));
    else
        for (int i = 0; i < N_TOK; i++) CHECK_OK(qt_engine_eval(e, tok + i, 1, 0, lg + (size_t)i * 512));
    qt_engine_free(e);
    return lg;
}

static void check(const char *path) {
    qt_model *m = NULL;
    CHECK_OK(qt_model_open(path, &m));
    if (!m) return;
    for (int nmi = 0; nmi < 2; nmi++)
        for (int step = 0; step < 2; step++) {
            const qt_numerics nm = nmi ? QT_NUMERICS_LLAMA : QT_NUMERICS_FAST;
            float *mapped = run(m, nm, false, step), *copied = run(m, nm, true, step);
            if (mapped && copied)
                CHECK_MSG(memcmp(mapped, copied, (size_t)N_TOK * 512 * sizeof(float)) == 0,
                          "%s --numerics %s%s: copied rows give other logits", path, qt_numerics_name(nm),
                          step ? ", 1-row steps" : "");
            free(mapped);
            free(copied);
        }
    qt_model_free(m);
}

/* The fixture as an HF directory, then as GGUF (the matrices keep their dtype). */
static void check_gguf(qt_st_dtype dtype, const char *name) {
    char dir[512], gguf[512];
    snprintf(dir, sizeof dir, "%s/%s", qt_test_tmpdir(), name);
    snprintf(gguf, sizeof gguf, "%s/%s.gguf", qt_test_tmpdir(), name);
    fx_spec s = shape;
    s.dtype = dtype;
    if (fx_write_hf(dir, &s, 3) != 0) {
        QT_FAIL_AT("fixture %s not written", name);
        return;
    }
    qt_model *hf = NULL;
    CHECK_OK(qt_model_open(dir, &hf));
    if (!hf) return;
    CHECK_OK(qt_gguf_write(hf, gguf, NULL));
    qt_model_free(hf);
    check(gguf);
}

static void test_f16_gguf(void) { check_gguf(QT_ST_F16, "copy_f16"); }
static void test_bf16_gguf(void) { check_gguf(QT_ST_BF16, "copy_bf16"); }

int main(void) {
    QT_RUN(test_f16_gguf);
    QT_RUN(test_bf16_gguf);
    return qt_test_finish("test_engine_copy");
}
