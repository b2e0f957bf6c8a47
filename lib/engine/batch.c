/* lib/engine/batch.c — several sequences in one forward pass (quanta/engine.h,
 * "several sequences at once"): continuous batching's engine half.
 *
 * The rows of a batch may belong to different sequences. forward.c's pieces
 * run unchanged on them; what differs is where each row sits (row_seq: its KV
 * slot, row_pos: its position there, read by rope, the cache store and
 * attention) and which matmul kernel it takes (gemm_rows, read by matmul.c).
 * The kernel is the one the row's sequence would get alone, which is what
 * makes a sequence's logits independent of its neighbours in the batch.
 */
#include <string.h>

#include "engine_internal.h"

static int32_t *slot_len(qt_engine_ctx *e, int32_t s) { return s == 0 ? &e->n_past : &e->seq_len[s]; }

int32_t qt_engine_n_seq(const qt_engine_ctx *e) { return e->n_seq; }
int32_t qt_engine_max_rows(const qt_engine_ctx *e) { return e->n_rows; }
int32_t qt_engine_n_batch(const qt_engine_ctx *e) { return e->n_batch; }

int32_t qt_engine_seq_len(const qt_engine_ctx *e, int32_t seq) {
    if (seq < 0 || seq >= e->n_seq) return 0;
    return seq == 0 ? e->n_past : e->seq_len[seq];
}

void qt_engine_seq_reset(qt_engine_ctx *e, int32_t seq) {
    if (seq >= 0 && seq < e->n_seq) *slot_len(e, seq) = 0;
}

/* Checks the batch and places its rows: row_seq, row_pos (each sequence's rows
 * after what its slot holds, in order) and row_gemm (batch kernels for a
 * sequence with two or more rows). Changes no sequence's length. */
static qt_status place_rows(qt_engine_ctx *e, const int32_t *tokens, const int32_t *seq, int32_t n) {
    if (n <= 0 || n > e->n_rows)
        return qt_error(QT_ERR_ARG, "batch: %d rows (1..%d: n_batch %d + n_seq %d - 1)", n, e->n_rows, e->n_batch, e->n_seq);
    for (int32_t b = 0; b < n; b++) {
        if (seq[b] < 0 || seq[b] >= e->n_seq)
            return qt_error(QT_ERR_ARG, "batch: row %d names sequence %d; the engine holds 0..%d", b, seq[b], e->n_seq - 1);
        if (tokens[b] < 0 || tokens[b] >= e->hp.n_vocab)
            return qt_error(QT_ERR_ARG, "batch: token %d at row %d is outside the vocabulary (%d tokens)", tokens[b], b,
                            e->hp.n_vocab);
    }
    /* row_pos is the running count of each sequence's rows so far, first as an offset */
    for (int32_t b = 0; b < n; b++) {
        int32_t k = 0;
        for (int32_t c = 0; c < b; c++) k += seq[c] == seq[b];
        e->row_pos[b] = k;
    }
    for (int32_t b = 0; b < n; b++) {
        int32_t rows = 0;
        for (int32_t c = 0; c < n; c++) rows += seq[c] == seq[b];
        const int32_t len = *slot_len(e, seq[b]);
        if (len + rows > e->n_ctx)
            return qt_error(QT_ERR_ARG, "batch: sequence %d: %d tokens do not fit the context: %d of %d positions are free",
                            seq[b], rows, e->n_ctx - len, e->n_ctx);
        e->row_seq[b] = seq[b];
        e->row_gemm[b] = rows >= 2;
    }
    for (int32_t b = 0; b < n; b++) e->row_pos[b] += *slot_len(e, seq[b]);
    return QT_OK;
}

/* Moves the wanted rows of x to its front and sets their logits kernels: a
 * sequence with two or more logits rows takes the batch kernels, as
 * qt_engine_eval's logits of two or more rows do. Returns the row count. */
static int32_t gather_logit_rows(qt_engine_ctx *e, const int32_t *seq, const bool *want, int32_t n) {
    const size_t row = (size_t)e->hp.n_embd;
    int32_t m = 0;
    for (int32_t b = 0; b < n; b++) {
        if (want && !want[b]) continue;
        int32_t same = 0;
        for (int32_t c = 0; c < n; c++) same += seq[c] == seq[b] && (!want || want[c]);
        if (m != b) memmove(e->x + m * row, e->x + b * row, row * sizeof(float));
        e->row_gemm[m++] = same >= 2;
    }
    return m;
}

qt_status qt_engine_batch_eval(qt_engine_ctx *e, const int32_t *tokens, const int32_t *seq, const bool *want_logits,
                               int32_t n, float *logits) {
    qt_status s = place_rows(e, tokens, seq, n);
    if (s != QT_OK) return s;
    e->gemm_rows = e->row_gemm;
    qt__engine_embed(e, tokens, n);
    for (int il = 0; il < e->hp.n_layer; il++) {
        if (qt_cancelled()) {
            e->gemm_rows = NULL;
            return qt_error(QT_ERR_INTERRUPTED, "evaluation interrupted");
        }
        qt__engine_layer(e, il, n);
    }
    qt__engine_kv_finish_batch(e);
    for (int32_t b = 0; b < n; b++) (*slot_len(e, seq[b]))++;
    if (logits) {
        const int32_t m = gather_logit_rows(e, seq, want_logits, n);
        if (m > 0) qt__engine_logits(e, e->x, m, logits);
    }
    e->gemm_rows = NULL;
    return QT_OK;
}
