/* lib/engine/perplexity.c — llama-perplexity's default method, so numbers are
 * directly comparable with llama.cpp's (../shared/reference/llamacpp/README.md;
 * llama.cpp tools/perplexity: perplexity(), process_logits(), log_softmax()).
 *
 * Chunks of n_ctx tokens, no overlap, each starting with BOS in place of its
 * first token and evaluated from an empty cache; only the second half is
 * scored (positions first = n_ctx/2 .. n_ctx-2 predicting the next token), so
 * every scored token has at least n_ctx/2 tokens of context.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine_internal.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* log p(tok) from one row of logits, as llama.cpp's log_softmax: float max,
 * double sum of expf(l - max). */
static double log_softmax_at(const float *logits, int32_t n_vocab, int32_t tok) {
    float max = logits[0];
    for (int32_t i = 1; i < n_vocab; i++) max = logits[i] > max ? logits[i] : max;
    double sum = 0.0;
    for (int32_t i = 0; i < n_vocab; i++) sum += expf(logits[i] - max);
    return (double)(logits[tok] - max) - log(sum);
}

qt_status qt_perplexity(qt_engine_ctx *e, const int32_t *tokens, int64_t n_tokens, const qt_ppl_opts *o, qt_ppl_result *r) {
    memset(r, 0, sizeof *r);
    const int32_t n_ctx = o->n_ctx;
    if (n_ctx < 4 || n_ctx > qt_engine_n_ctx(e))
        return qt_error(QT_ERR_ARG, "perplexity: context %d must be between 4 and the engine's context %d", n_ctx,
                        qt_engine_n_ctx(e));
    if (n_tokens < 2 * (int64_t)n_ctx)
        return qt_error(QT_ERR_ARG, "perplexity: the text has %lld tokens; a context of %d needs at least %d "
                        "(two chunks, as llama-perplexity requires)", (long long)n_tokens, n_ctx, 2 * n_ctx);
    const int32_t n_vocab = qt_engine_n_vocab(e);
    if (o->bos_id >= n_vocab) return qt_error(QT_ERR_ARG, "perplexity: BOS id %d outside the vocabulary", o->bos_id);
    const int64_t max_chunks = n_tokens / n_ctx;
    const int32_t n_chunks = (int32_t)(o->n_chunks > 0 && o->n_chunks < max_chunks ? o->n_chunks : max_chunks);
    const int32_t first = n_ctx / 2, n_score = n_ctx - 1 - first;

    int32_t *chunk = malloc((size_t)n_ctx * sizeof *chunk);
    float *logits = malloc((size_t)(n_ctx - first) * n_vocab * sizeof *logits);
    if (!chunk || !logits) {
        free(chunk); free(logits);
        return qt_error(QT_ERR_NOMEM, "perplexity: out of memory");
    }
    const double t0 = now_s();
    double nll = 0.0, nll2 = 0.0;
    int64_t count = 0;
    qt_status s = QT_OK;
    qt_progress_report(&o->progress, "perplexity", 0, n_chunks);
    for (int32_t c = 0; c < n_chunks && s == QT_OK; c++) {
        memcpy(chunk, tokens + (int64_t)c * n_ctx, (size_t)n_ctx * sizeof *chunk);
        if (o->bos_id >= 0) chunk[0] = o->bos_id;
        qt_engine_reset(e);
        s = qt_engine_eval(e, chunk, n_ctx, first, logits);
        if (s != QT_OK) break;
        for (int32_t i = 0; i < n_score; i++) {
            const double v = -log_softmax_at(logits + (size_t)i * n_vocab, n_vocab, chunk[first + i + 1]);
            nll += v;
            nll2 += v * v;
        }
        count += n_score;
        r->n_evaluated += n_ctx;
        qt_progress_report(&o->progress, "perplexity", c + 1, n_chunks);
        if (o->on_chunk) o->on_chunk(o->user, c + 1, n_chunks, exp(nll / (double)count));
    }
    free(chunk);
    free(logits);
    qt_engine_reset(e);
    if (s != QT_OK) return s;

    /* llama.cpp: ppl = exp(mean), stderr of the mean nll times ppl (delta method). */
    const double mean = nll / (double)count, mean2 = nll2 / (double)count;
    const double var = mean2 - mean * mean;
    r->nll_mean = mean;
    r->ppl = exp(mean);
    r->ppl_stderr = var > 0.0 && count > 1 ? sqrt(var / (double)(count - 1)) * r->ppl : 0.0;
    r->n_ctx = n_ctx;
    r->n_chunks = n_chunks;
    r->n_scored = count;
    r->seconds = now_s() - t0;
    return QT_OK;
}
