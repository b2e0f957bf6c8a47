/* The calibration seam (qt_layerwise_*, lib/engine/layerwise.c) on stories260K:
 * running the model layer by layer over a batch of sequences observes exactly
 * the activations a full forward pass of each sequence feeds its linears (the
 * same hook, fired from an ordinary qt_engine_eval), bit for bit, in the same
 * order per layer, and ends with the same logits. */
#include "qtest.h"
#include "quanta.h"

enum { N_SEQ = 3, N_TOK = 24, MAX_OBS = 4096 };

/* Every observation: which layer/linear, and a checksum-free copy of the rows. */
typedef struct obs {
    int32_t layer, seq;
    char linear[16];
    int32_t n_tokens, n_in;
    float *x;
} obs;

typedef struct recorder {
    obs o[MAX_OBS];
    int n;
    int32_t seq;     /* set by the caller for full passes; counted for layerwise */
    int32_t calls_per_layer;
} recorder;

static void record(void *user, int32_t layer, const char *linear, const float *x, int32_t n_tokens, int32_t n_in) {
    recorder *r = user;
    if (r->n >= MAX_OBS) return;
    obs *o = &r->o[r->n++];
    o->layer = layer;
    o->seq = r->seq;
    snprintf(o->linear, sizeof o->linear, "%s", linear);
    o->n_tokens = n_tokens;
    o->n_in = n_in;
    o->x = malloc((size_t)n_tokens * n_in * sizeof(float));
    memcpy(o->x, x, (size_t)n_tokens * n_in * sizeof(float));
}

static void free_rec(recorder *r) {
    for (int i = 0; i < r->n; i++) free(r->o[i].x);
    r->n = 0;
}

/* the hook is internal to the engine for ordinary evaluation */
#include "engine/engine_internal.h"

static void test_layerwise_equals_full_forward(void) {
    qt_model *m;
    CHECK_OK(qt_model_open(qt_test_shared("models/stories260K.gguf"), &m));
    qt_engine_opts o;
    qt_engine_opts_default(&o);
    o.n_ctx = 64;
    o.n_threads = 2;
    qt_engine_ctx *e;
    CHECK_OK(qt_engine_new(m, &o, &e));
    const int32_t n_vocab = qt_engine_n_vocab(e), n_layer = qt_model_hparams(m)->n_layer;
    int32_t tokens[N_SEQ * N_TOK];
    for (int i = 0; i < N_SEQ * N_TOK; i++) tokens[i] = 1 + (i * 37 + i / N_TOK * 11) % (n_vocab - 1);

    /* full forward passes, one sequence at a time, with the hook set */
    static recorder full, lw;
    float *want = malloc(sizeof(float) * N_SEQ * N_TOK * n_vocab), *got = malloc(sizeof(float) * N_SEQ * N_TOK * n_vocab);
    for (int32_t s = 0; s < N_SEQ; s++) {
        qt_engine_reset(e);
        full.seq = s;
        e->observer = record;
        e->observer_user = &full;
        CHECK_OK(qt_engine_eval(e, tokens + s * N_TOK, N_TOK, 0, want + (size_t)s * N_TOK * n_vocab));
        e->observer = NULL;
    }
    CHECK_EQ_INT(full.n, N_SEQ * n_layer * 7);

    /* layer by layer over all sequences */
    qt_layerwise *L;
    CHECK_OK(qt_layerwise_new(e, tokens, N_SEQ, N_TOK, &L));
    CHECK_STATUS(qt_layerwise_logits(L, got), QT_ERR_ARG); /* not before the last layer */
    for (int32_t il = 0; il < n_layer; il++) {
        CHECK_EQ_INT(qt_layerwise_next_layer(L), il);
        const int before = lw.n;
        CHECK_OK(qt_layerwise_run_layer(L, record, &lw));
        for (int i = before; i < lw.n; i++) lw.o[i].seq = (i - before) / 7; /* 7 linears per sequence */
    }
    CHECK_STATUS(qt_layerwise_run_layer(L, record, &lw), QT_ERR_ARG);
    CHECK_OK(qt_layerwise_logits(L, got));
    CHECK_EQ_INT(lw.n, full.n);

    /* every layerwise observation equals the full pass's for the same (sequence, layer, linear) */
    int matched = 0;
    for (int i = 0; i < lw.n; i++) {
        const obs *a = &lw.o[i];
        const obs *b = NULL;
        for (int j = 0; j < full.n && !b; j++)
            if (full.o[j].seq == a->seq && full.o[j].layer == a->layer && !strcmp(full.o[j].linear, a->linear)) b = &full.o[j];
        CHECK_MSG(b != NULL, "layer %d %s seq %d: not seen in the full pass", a->layer, a->linear, a->seq);
        if (!b) continue;
        CHECK(a->n_tokens == N_TOK && b->n_tokens == N_TOK && a->n_in == b->n_in);
        CHECK_MSG(memcmp(a->x, b->x, (size_t)a->n_tokens * a->n_in * sizeof(float)) == 0,
                  "layer %d %s seq %d: activations differ", a->layer, a->linear, a->seq);
        matched++;
    }
    CHECK_EQ_INT(matched, N_SEQ * n_layer * 7);
    /* the inputs really differ between linears and sequences (the check above can fail) */
    CHECK(memcmp(lw.o[0].x, lw.o[7].x, sizeof(float) * N_TOK * lw.o[0].n_in) != 0);
    CHECK_EQ_STR(lw.o[3].linear, "attn_output");
    CHECK_EQ_STR(lw.o[6].linear, "ffn_down");
    CHECK_EQ_INT(lw.o[6].n_in, qt_model_hparams(m)->n_ff);
    CHECK_MSG(memcmp(want, got, sizeof(float) * N_SEQ * N_TOK * n_vocab) == 0, "layerwise logits differ from the full pass");

    /* and the engine still evaluates normally afterwards */
    qt_engine_reset(e);
    CHECK_OK(qt_engine_eval(e, tokens, N_TOK, 0, got));
    CHECK(memcmp(want, got, sizeof(float) * N_TOK * n_vocab) == 0);

    /* bad batches */
    qt_layerwise *bad;
    CHECK_STATUS(qt_layerwise_new(e, tokens, 0, N_TOK, &bad), QT_ERR_ARG);
    CHECK_STATUS(qt_layerwise_new(e, tokens, 1, 65, &bad), QT_ERR_ARG);
    int32_t oov[2] = {1, n_vocab};
    CHECK_STATUS(qt_layerwise_new(e, oov, 1, 2, &bad), QT_ERR_RANGE);

    qt_layerwise_free(L);
    free_rec(&full);
    free_rec(&lw);
    free(want);
    free(got);
    qt_engine_free(e);
    qt_model_free(m);
}

/* observe_layer runs a layer for its observer only (the same rows twice, the
 * hidden states unchanged); set_weight rebinds a linear: the model's own
 * tensor changes nothing, a Q8_0 copy changes the logits, a wrong shape is refused. */
static void counter(void *user, int32_t layer, const char *linear, const float *x, int32_t n_tokens, int32_t n_in) {
    (void)layer; (void)linear; (void)x; (void)n_in;
    *(int64_t *)user += n_tokens;
}

static void run_all(qt_layerwise *lw, int32_t n_layer, bool observe_first, float *logits) {
    for (int32_t l = 0; l < n_layer; l++) {
        if (observe_first) {
            int64_t seen = 0;
            CHECK_OK(qt_layerwise_observe_layer(lw, counter, &seen));
            CHECK_EQ_INT(seen, 7 * N_SEQ * N_TOK);
            CHECK_EQ_INT(qt_layerwise_next_layer(lw), l);
        }
        CHECK_OK(qt_layerwise_run_layer(lw, NULL, NULL));
    }
    CHECK_OK(qt_layerwise_logits(lw, logits));
}

static void test_observe_and_rebind(void) {
    qt_model *m;
    CHECK_OK(qt_model_open(qt_test_shared("models/stories260K.gguf"), &m));
    qt_engine_opts o;
    qt_engine_opts_default(&o);
    o.n_ctx = 64;
    o.n_threads = 2;
    qt_engine_ctx *e;
    CHECK_OK(qt_engine_new(m, &o, &e));
    const int32_t n_vocab = qt_engine_n_vocab(e), n_layer = qt_model_hparams(m)->n_layer;
    int32_t tokens[N_SEQ * N_TOK];
    for (int i = 0; i < N_SEQ * N_TOK; i++) tokens[i] = 1 + (i * 29 + 5) % (n_vocab - 1);
    const size_t nl = (size_t)N_SEQ * N_TOK * n_vocab;
    float *a = malloc(nl * sizeof *a), *b = malloc(nl * sizeof *b);
    qt_layerwise *lw;
    CHECK_OK(qt_layerwise_new(e, tokens, N_SEQ, N_TOK, &lw));
    run_all(lw, n_layer, false, a);
    qt_layerwise_free(lw);
    CHECK_OK(qt_layerwise_new(e, tokens, N_SEQ, N_TOK, &lw));
    run_all(lw, n_layer, true, b);
    CHECK(memcmp(a, b, nl * sizeof *a) == 0);
    /* rebinding to the model's own tensor changes nothing */
    const qt_tensor *t = qt_model_find_tensor(m, "blk.2.ffn_up.weight");
    CHECK_OK(qt_layerwise_set_weight(lw, 2, "ffn_up", t));
    qt_layerwise_free(lw);
    CHECK_OK(qt_layerwise_new(e, tokens, N_SEQ, N_TOK, &lw));
    run_all(lw, n_layer, false, b);
    CHECK(memcmp(a, b, nl * sizeof *a) == 0);
    qt_layerwise_free(lw);
    /* a Q8_0 copy of blk.1.attn_q */
    const qt_tensor *wq = qt_model_find_tensor(m, "blk.1.attn_q.weight");
    qt_tensor q8 = *wq;
    q8.type = QT_TYPE_Q8_0;
    q8.nbytes = qt_row_size(QT_TYPE_Q8_0, wq->ne[0]) * (size_t)wq->ne[1];
    void *d = malloc(q8.nbytes);
    CHECK_OK(qt_quantize_rows(QT_TYPE_Q8_0, wq->data, d, wq->ne[1], wq->ne[0], NULL));
    q8.data = d;
    CHECK_OK(qt_layerwise_new(e, tokens, N_SEQ, N_TOK, &lw));
    CHECK_OK(qt_layerwise_set_weight(lw, 1, "attn_q", &q8));
    run_all(lw, n_layer, false, b);
    CHECK(memcmp(a, b, nl * sizeof *a) != 0);
    CHECK_STATUS(qt_layerwise_set_weight(lw, 1, "attn_k", wq), QT_ERR_SHAPE);
    CHECK_STATUS(qt_layerwise_set_weight(lw, 1, "attn_z", wq), QT_ERR_ARG);
    CHECK_STATUS(qt_layerwise_set_weight(lw, 99, "attn_q", wq), QT_ERR_ARG);
    qt_layerwise_free(lw);
    free(d);
    free(a);
    free(b);
    qt_engine_free(e);
    qt_model_free(m);
}

int main(void) {
    QT_RUN(test_layerwise_equals_full_forward);
    QT_RUN(test_observe_and_rebind);
    return qt_test_finish("test_engine_layerwise");
}
