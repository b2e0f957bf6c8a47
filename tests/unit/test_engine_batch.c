/* Several sequences in one forward pass (qt_engine_batch_eval, lib/engine/batch.c):
 * each sequence's logits equal, bit for bit, what qt_engine_eval gives it
 * alone with the same chunks (prompt at once, then one token at a time),
 * whatever else shares the batch and at 1 or 2 threads; on stories260K (F32
 * weights: the batch and decode kernels round differently, so a kernel picked
 * by batch size instead of by sequence would show) and the F16 tiny256 model;
 * also a 130-row batch of interleaved sequences across forward.c's 64-row layer
 * chunks, both numerics. Also every refusal, each leaving the sequences as they were. */
#include "qtest.h"
#include "quanta.h"

enum { N_SEQ = 3, N_GEN = 6, MAX_PROMPT = 9 };

static const int32_t prompt_len[N_SEQ] = {9, 1, 5};
/* step at which each sequence starts (its prompt is the batch's prefill chunk) */
static const int start_step[N_SEQ] = {0, 1, 3};

static int32_t prompt_tok(int s, int i) { return 1 + (int32_t)((s * 97 + i * 31 + 7) % 500); }

static int32_t argmax(const float *l, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (l[i] > l[best]) best = i;
    return best;
}

/* The reference: each sequence alone through qt_engine_eval; logits after the
 * prompt and after each of N_GEN - 1 greedy tokens. */
static void reference(const qt_model *m, int threads, float *ref, int32_t n_vocab) {
    qt_engine_opts o;
    qt_engine_opts_default(&o);
    o.n_ctx = 32;
    o.n_threads = threads;
    qt_engine_ctx *e;
    CHECK_OK(qt_engine_new(m, &o, &e));
    if (!e) return;
    for (int s = 0; s < N_SEQ; s++) {
        int32_t toks[MAX_PROMPT];
        for (int i = 0; i < prompt_len[s]; i++) toks[i] = prompt_tok(s, i);
        qt_engine_reset(e);
        float *l = ref + (size_t)s * N_GEN * n_vocab;
        CHECK_OK(qt_engine_eval(e, toks, prompt_len[s], prompt_len[s] - 1, l));
        for (int g = 1; g < N_GEN; g++) {
            const int32_t next = argmax(l + (size_t)(g - 1) * n_vocab, n_vocab);
            CHECK_OK(qt_engine_eval(e, &next, 1, 0, l + (size_t)g * n_vocab));
        }
    }
    qt_engine_free(e);
}

/* The same sequences interleaved: each step one decode row per running
 * sequence, plus the prompt of the sequence starting at that step. */
static void batched(const qt_model *m, int threads, const float *ref, int32_t n_vocab) {
    qt_engine_opts o;
    qt_engine_opts_default(&o);
    o.n_ctx = 32;
    o.n_seq = N_SEQ;
    o.n_threads = threads;
    qt_engine_ctx *e;
    CHECK_OK(qt_engine_new(m, &o, &e));
    if (!e) return;
    CHECK_EQ_INT(qt_engine_n_seq(e), N_SEQ);
    CHECK_EQ_INT(qt_engine_max_rows(e), 32 + N_SEQ - 1);
    float *logits = malloc((size_t)N_SEQ * n_vocab * sizeof(float));
    int done[N_SEQ] = {0}, next[N_SEQ] = {0};
    int mismatches = 0;
    for (int step = 0; step < 12; step++) {
        int32_t tok[N_SEQ + MAX_PROMPT], seq[N_SEQ + MAX_PROMPT], owner[N_SEQ];
        bool want[N_SEQ + MAX_PROMPT];
        int32_t n = 0, n_out = 0;
        for (int s = 0; s < N_SEQ; s++) { /* decode rows first, then a prompt: any order is allowed */
            if (step <= start_step[s] || done[s] >= N_GEN) continue;
            tok[n] = next[s], seq[n] = s, want[n++] = true;
            owner[n_out++] = s;
        }
        for (int s = 0; s < N_SEQ; s++) {
            if (step != start_step[s]) continue;
            for (int i = 0; i < prompt_len[s]; i++)
                tok[n] = prompt_tok(s, i), seq[n] = s, want[n++] = i == prompt_len[s] - 1;
            owner[n_out++] = s;
        }
        if (n == 0) break;
        CHECK_OK(qt_engine_batch_eval(e, tok, seq, want, n, logits));
        for (int k = 0; k < n_out; k++) {
            const int s = owner[k];
            const float *got = logits + (size_t)k * n_vocab;
            const float *want_l = ref + ((size_t)s * N_GEN + done[s]) * n_vocab;
            if (memcmp(got, want_l, (size_t)n_vocab * sizeof(float))) mismatches++;
            next[s] = argmax(got, n_vocab);
            done[s]++;
        }
    }
    CHECK_EQ_INT(mismatches, 0);
    for (int s = 0; s < N_SEQ; s++) {
        CHECK_EQ_INT(done[s], N_GEN);
        CHECK_EQ_INT(qt_engine_seq_len(e, s), prompt_len[s] + N_GEN - 1);
    }
    free(logits);
    qt_engine_free(e);
}

static void check_model(const char *rel) {
    qt_model *m;
    CHECK_OK(qt_model_open(qt_test_shared(rel), &m));
    if (!m) return;
    const int32_t n_vocab = qt_model_hparams(m)->n_vocab;
    float *ref = malloc((size_t)N_SEQ * N_GEN * n_vocab * sizeof(float));
    reference(m, 1, ref, n_vocab);
    batched(m, 1, ref, n_vocab);
    batched(m, 2, ref, n_vocab);
    free(ref);
    qt_model_free(m);
}

static void test_stories_f32(void) { check_model("models/stories260K.gguf"); }
static void test_tiny256_f16(void) { check_model("models/tiny256-random.gguf"); }

/* A batch longer than forward.c's 64-row chunks (QT__CHUNK_ROWS) with two prompts
 * interleaved row by row and a decode row of a third sequence among them: 130 rows go
 * through each layer as chunks [0,64) [64,128) [128,130), so each prompt's rows sit in
 * all three, and a row's attention in chunk 2 must see its sequence's keys that
 * chunks 0 and 1 wrote to the cache. Every logits row equals, bit for bit, the
 * prompt's row evaluated alone by qt_engine_eval in one call (one chunk of <= 64
 * rows there), and the decode row (and one more decode step of each sequence
 * afterwards, reading the cache the long batch wrote) that of 1-row steps; fast and
 * llama numerics, 1 and 2 threads. */
enum { LONG_ROWS = 130, LONG_CTX = 160 };
static const int32_t long_prompt[N_SEQ] = {60, 69, 7}; /* seq 2: prefilled, then 1 row */

/* Row r's sequence: 0 and 1 interleaved unevenly (5 of every 11 rows to 0), both in each
 * chunk, and 2 at row 100. */
static void long_rows(int32_t *seq, int32_t *tok) {
    int32_t used[N_SEQ] = {0, 0, long_prompt[2]};
    for (int32_t r = 0; r < LONG_ROWS; r++) {
        int s = r == 100 ? 2 : r % 11 < 5 ? 0 : 1;
        if (s < 2 && used[s] == long_prompt[s]) s = 1 - s;
        seq[r] = s;
        tok[r] = prompt_tok(s, used[s]++);
    }
    CHECK_EQ_INT(used[0], long_prompt[0]);
    CHECK_EQ_INT(used[1], long_prompt[1]);
    CHECK_EQ_INT(used[2], long_prompt[2] + 1);
}

static qt_engine_ctx *long_engine(const qt_model *m, qt_numerics nm, int threads, int32_t n_seq) {
    qt_engine_opts o;
    qt_engine_opts_default(&o);
    o.n_ctx = LONG_CTX;
    o.n_batch = LONG_ROWS;
    o.n_seq = n_seq;
    o.n_threads = threads;
    o.numerics = nm;
    qt_engine_ctx *e = NULL;
    CHECK_OK(qt_engine_new(m, &o, &e));
    return e;
}

/* ref[s]: logits of sequence s's rows of the long batch (all prompt rows for 0 and 1,
 * the one decode row for 2), then of one more decode step. Each alone, slot 0. */
static void long_reference(const qt_model *m, qt_numerics nm, const int32_t *nexts, float *ref[N_SEQ], int32_t V) {
    qt_engine_ctx *e = long_engine(m, nm, 1, 1);
    if (!e) return;
    for (int s = 0; s < N_SEQ; s++) {
        int32_t toks[LONG_ROWS];
        const int32_t n = long_prompt[s] + (s == 2);
        for (int i = 0; i < n; i++) toks[i] = prompt_tok(s, i);
        qt_engine_reset(e);
        if (s < 2) CHECK_OK(qt_engine_eval(e, toks, n, 0, ref[s]));
        else {
            CHECK_OK(qt_engine_eval(e, toks, n - 1, 0, NULL));
            CHECK_OK(qt_engine_eval(e, toks + n - 1, 1, 0, ref[s]));
        }
        const int32_t rows = s < 2 ? n : 1;
        CHECK_OK(qt_engine_eval(e, &nexts[s], 1, 0, ref[s] + (size_t)rows * V));
    }
    qt_engine_free(e);
}

static void check_long(const char *rel) {
    qt_model *m;
    CHECK_OK(qt_model_open(qt_test_shared(rel), &m));
    if (!m) return;
    const int32_t V = qt_model_hparams(m)->n_vocab;
    int32_t seq[LONG_ROWS], tok[LONG_ROWS];
    long_rows(seq, tok);
    const int32_t nexts[N_SEQ] = {11, 22, 33}; /* the extra decode step's tokens */
    float *logits = malloc((size_t)LONG_ROWS * V * sizeof(float));
    for (int nmi = 0; nmi < 2; nmi++) {
        const qt_numerics nm = nmi ? QT_NUMERICS_LLAMA : QT_NUMERICS_FAST;
        float *ref[N_SEQ];
        for (int s = 0; s < N_SEQ; s++) ref[s] = malloc((size_t)(long_prompt[s] + 1) * V * sizeof(float));
        long_reference(m, nm, nexts, ref, V);
        for (int threads = 1; threads <= 2; threads++) {
            qt_engine_ctx *e = long_engine(m, nm, threads, N_SEQ);
            if (!e) continue;
            CHECK_EQ_INT(qt_engine_max_rows(e), LONG_ROWS + N_SEQ - 1);
            int32_t pre[LONG_ROWS], pre_seq[LONG_ROWS];
            for (int i = 0; i < long_prompt[2]; i++) pre[i] = prompt_tok(2, i), pre_seq[i] = 2;
            CHECK_OK(qt_engine_batch_eval(e, pre, pre_seq, NULL, long_prompt[2], NULL));
            CHECK_OK(qt_engine_batch_eval(e, tok, seq, NULL, LONG_ROWS, logits));
            int32_t row_of[N_SEQ] = {0, 0, 0}, bad[N_SEQ] = {0, 0, 0};
            for (int32_t r = 0; r < LONG_ROWS; r++) {
                const int s = seq[r];
                bad[s] += memcmp(logits + (size_t)r * V, ref[s] + (size_t)row_of[s]++ * V, (size_t)V * sizeof(float)) != 0;
            }
            /* one decode row of each: attention over the cache the chunks wrote */
            const int32_t step_seq[N_SEQ] = {2, 0, 1};
            const int32_t step_tok[N_SEQ] = {nexts[2], nexts[0], nexts[1]};
            CHECK_OK(qt_engine_batch_eval(e, step_tok, step_seq, NULL, N_SEQ, logits));
            for (int k = 0; k < N_SEQ; k++) {
                const int s = step_seq[k];
                bad[s] += memcmp(logits + (size_t)k * V, ref[s] + (size_t)row_of[s] * V, (size_t)V * sizeof(float)) != 0;
            }
            for (int s = 0; s < N_SEQ; s++) {
                CHECK_MSG(bad[s] == 0, "%s --numerics %s, %d threads: sequence %d: %d rows differ from it alone", rel,
                          qt_numerics_name(nm), threads, s, bad[s]);
                CHECK_EQ_INT(qt_engine_seq_len(e, s), long_prompt[s] + 1 + (s == 2));
            }
            qt_engine_free(e);
        }
        for (int s = 0; s < N_SEQ; s++) free(ref[s]);
    }
    free(logits);
    qt_model_free(m);
}

static void test_long_batch_chunks_stories_f32(void) { check_long("models/stories260K.gguf"); }
static void test_long_batch_chunks_tiny256_f16(void) { check_long("models/tiny256-random.gguf"); }

static void test_refusals(void) {
    qt_model *m;
    CHECK_OK(qt_model_open(qt_test_shared("models/stories260K.gguf"), &m));
    if (!m) return;
    qt_engine_opts o;
    qt_engine_opts_default(&o);
    o.n_ctx = 8;
    o.n_seq = 2;
    qt_engine_ctx *e;
    CHECK_OK(qt_engine_new(m, &o, &e));
    if (!e) { qt_model_free(m); return; }
    int32_t tok[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, seq[12] = {0};
    CHECK_OK(qt_engine_batch_eval(e, tok, seq, NULL, 6, NULL));
    seq[0] = 2;
    CHECK_STATUS(qt_engine_batch_eval(e, tok, seq, NULL, 1, NULL), QT_ERR_ARG);
    CHECK(strstr(qt_last_error(), "sequence 2") != NULL);
    seq[0] = 0;
    tok[1] = 512;
    CHECK_STATUS(qt_engine_batch_eval(e, tok, seq, NULL, 2, NULL), QT_ERR_ARG);
    CHECK(strstr(qt_last_error(), "vocabulary") != NULL);
    tok[1] = 2;
    CHECK_STATUS(qt_engine_batch_eval(e, tok, seq, NULL, 3, NULL), QT_ERR_ARG); /* 6 + 3 > 8 */
    CHECK(strstr(qt_last_error(), "do not fit the context") != NULL);
    CHECK_STATUS(qt_engine_batch_eval(e, tok, seq, NULL, 10, NULL), QT_ERR_ARG); /* > 8 + 2 - 1 rows */
    CHECK_STATUS(qt_engine_batch_eval(e, tok, seq, NULL, 0, NULL), QT_ERR_ARG);
    CHECK_EQ_INT(qt_engine_seq_len(e, 0), 6);
    CHECK_EQ_INT(qt_engine_n_past(e), 6); /* slot 0 is the single-sequence calls' */
    CHECK_EQ_INT(qt_engine_seq_len(e, 1), 0);
    qt_engine_seq_reset(e, 0);
    CHECK_EQ_INT(qt_engine_n_past(e), 0);
    o.n_seq = -1;
    qt_engine_ctx *bad = NULL;
    CHECK_STATUS(qt_engine_new(m, &o, &bad), QT_ERR_ARG);
    CHECK(bad == NULL);
    qt_engine_free(e);
    qt_model_free(m);
}

int main(void) {
    QT_RUN(test_stories_f32);
    QT_RUN(test_tiny256_f16);
    QT_RUN(test_long_batch_chunks_stories_f32);
    QT_RUN(test_long_batch_chunks_tiny256_f16);
    QT_RUN(test_refusals);
    return qt_test_finish("test_engine_batch");
}
