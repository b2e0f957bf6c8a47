/* tools/quanta/serve_http.c — the endpoints of `quanta serve` (docs/serve.md).
 *
 * libmicrohttpd runs one thread per connection, so a handler may wait: a
 * non-streamed request waits in the access handler for its job to finish, a
 * streamed one in the response's content reader for its next token. While
 * waiting each polls its socket every 100 ms; a client that has gone away
 * cancels its own job (qt_sched_cancel) and nothing else. The scheduler's
 * callbacks only append token ids and signal; text and JSON are made on the
 * connection's thread.
 *
 * A request's state (struct req) is shared by the connection (con_cls) and a
 * streamed response (its reader); it is reference counted, and the last one
 * to let go cancels an unfinished job, waits for its on_done and frees.
 */
#define _GNU_SOURCE /* POLLRDHUP */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include "serve_http.h"

/* ---- small pieces ------------------------------------------------------------- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Prometheus buckets (seconds): from 1 ms to 30 s. */
static const double bucket_le[SERVE_N_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                  0.25,  0.5,    1.0,   2.5,  5.0,   10.0, 30.0};

static void hist_add(serve_hist *h, double v) {
    int i = 0;
    while (i < SERVE_N_BUCKETS && v > bucket_le[i]) i++;
    h->count[i]++;
    h->sum += v;
}

/* The statuses counted per endpoint in /metrics. */
static const int codes[9] = {200, 400, 401, 404, 405, 413, 422, 500, 503};

static void count_answer(serve_ctx *s, int ep, int status) {
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < 9; i++)
        if (codes[i] == status) s->http[ep][i]++;
    pthread_mutex_unlock(&s->mu);
}

/* A growable byte buffer. */
typedef struct buf {
    char *p;
    size_t n, cap;
    bool failed;
} buf;

static void buf_add(buf *b, const char *s, size_t n) {
    if (b->failed) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) { b->failed = true; return; }
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

/* Bytes of the UTF-8 sequence a lead byte starts (0: not a lead byte). */
static int utf8_len(unsigned char c) {
    return c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
}

/* Whether s[0..len) is one valid UTF-8 character (no overlong form, surrogate or value past U+10FFFF). */
static bool utf8_valid(const unsigned char *s, int len) {
    for (int i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return false;
    if (len == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] > 0x9F))) return false;
    if (len == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] > 0x8F))) return false;
    return true;
}

/* Moves the complete characters at the front of pend[0..*n) to out. A token
 * may end inside a character (byte tokens): its first bytes wait for the next
 * token unless `flush`. Bytes that cannot become a character are U+FFFD. */
static void utf8_drain(unsigned char *pend, size_t *n, buf *out, bool flush) {
    size_t i = 0;
    while (i < *n) {
        const int len = utf8_len(pend[i]);
        if (len > 0 && i + (size_t)len > *n && !flush) {
            bool prefix = true;
            for (size_t k = i + 1; k < *n; k++) prefix &= (pend[k] & 0xC0) == 0x80;
            if (prefix) break;
        }
        if (len > 0 && i + (size_t)len <= *n && utf8_valid(pend + i, len)) {
            buf_add(out, (const char *)pend + i, (size_t)len);
            i += (size_t)len;
        } else {
            buf_add(out, "\xEF\xBF\xBD", 3);
            i++;
        }
    }
    memmove(pend, pend + i, *n - i);
    *n -= i;
}

/* ---- requests ------------------------------------------------------------------ */

typedef struct req {
    serve_ctx *s;
    struct MHD_Connection *conn;
    int ep;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;                   /* con_cls, and a streamed response's reader */
    buf body;
    bool too_large, answered;

    qt_serve_request r;
    char id[48];
    bool submitted, done, gone;
    uint64_t job;
    double t0, t_last;
    /* written by the scheduler thread under mu */
    int32_t *toks;
    int32_t n_toks, cap_toks;
    qt_sched_finish why;
    int32_t n_prompt, n_gen;
    int32_t max_gen;            /* the job's max_tokens: that token's chunk carries finish_reason "length" */
    char err[256];
    /* the connection thread's */
    int32_t n_fmt;              /* tokens already turned into text */
    unsigned char pend[8];      /* an incomplete UTF-8 character */
    size_t n_pend;
    buf out;                    /* stream: bytes not yet handed to libmicrohttpd */
    size_t out_pos;
    bool ended;                 /* stream: the last chunk is in `out` */
    bool fin_sent;              /* stream: finish_reason went out with the last token */
    /* logprobs (r.logprobs >= 0), by position in the sequence (prompt, then generated);
     * written by the scheduler thread under mu, read once done */
    int32_t lp_cap;             /* positions held: n_prompt + max_tokens, at most n_ctx */
    bool *lp_set;
    double *lp;
    int32_t *lp_ntop, *lp_top;  /* lp_top: (lp_cap, QT_SERVE_MAX_LOGPROBS) ids */
    double *lp_toplp;
    int32_t *echo_ids, n_echo;  /* the prompt's tokens, for an echo */
} req;

static req *req_new(serve_ctx *s, struct MHD_Connection *c, int ep) {
    req *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    q->s = s, q->conn = c, q->ep = ep, q->refs = 1;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    return q;
}

static void req_release(req *q) {
    pthread_mutex_lock(&q->mu);
    const int left = --q->refs;
    if (left > 0) {
        pthread_mutex_unlock(&q->mu);
        return;
    }
    if (q->submitted && !q->done) {
        pthread_mutex_unlock(&q->mu);
        qt_sched_cancel(q->s->sched, q->job);
        pthread_mutex_lock(&q->mu);
        while (!q->done) pthread_cond_wait(&q->cv, &q->mu);
    }
    pthread_mutex_unlock(&q->mu);
    if (q->submitted) atomic_fetch_sub(&q->s->in_flight, 1);
    qt_serve_request_free(&q->r);
    free(q->body.p);
    free(q->out.p);
    free(q->toks);
    free(q->lp_set), free(q->lp), free(q->lp_ntop), free(q->lp_top), free(q->lp_toplp), free(q->echo_ids);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    free(q);
}

/* Scheduler thread: one more token. */
static void on_token(void *user, int32_t token) {
    req *q = user;
    const double t = now_s();
    pthread_mutex_lock(&q->mu);
    if (q->n_toks == q->cap_toks) {
        const int32_t cap = q->cap_toks ? 2 * q->cap_toks : 64;
        int32_t *p = realloc(q->toks, (size_t)cap * sizeof *p);
        if (p) q->toks = p, q->cap_toks = cap;
    }
    if (q->n_toks < q->cap_toks) q->toks[q->n_toks++] = token;
    pthread_mutex_lock(&q->s->mu);
    hist_add(q->n_toks == 1 ? &q->s->ttft : &q->s->itl, t - (q->n_toks == 1 ? q->t0 : q->t_last));
    pthread_mutex_unlock(&q->s->mu);
    q->t_last = t;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* Scheduler thread: one token's log-probability (quanta/serve.h). */
static void on_logprob(void *user, int32_t pos, int32_t token, double lp, const int32_t *top, const double *top_lp, int32_t n_top) {
    req *q = user;
    (void)token;
    pthread_mutex_lock(&q->mu);
    if (pos >= 0 && pos < q->lp_cap) {
        const int32_t k = n_top < QT_SERVE_MAX_LOGPROBS ? n_top : QT_SERVE_MAX_LOGPROBS;
        q->lp_set[pos] = true, q->lp[pos] = lp, q->lp_ntop[pos] = k;
        memcpy(q->lp_top + (size_t)pos * QT_SERVE_MAX_LOGPROBS, top, (size_t)k * sizeof *top);
        memcpy(q->lp_toplp + (size_t)pos * QT_SERVE_MAX_LOGPROBS, top_lp, (size_t)k * sizeof *top_lp);
    }
    pthread_mutex_unlock(&q->mu);
}

/* Scheduler thread: the job is over. */
static void on_done(void *user, qt_sched_finish why, int32_t n_prompt, int32_t n_gen, const char *error) {
    req *q = user;
    const double t = now_s();
    pthread_mutex_lock(&q->mu);
    q->done = true;
    q->why = why, q->n_prompt = n_prompt, q->n_gen = n_gen;
    if (error) snprintf(q->err, sizeof q->err, "%s", error);
    if (why == QT_FINISH_LENGTH || why == QT_FINISH_STOP) {
        pthread_mutex_lock(&q->s->mu);
        hist_add(&q->s->e2el, t - q->t0);
        pthread_mutex_unlock(&q->s->mu);
    }
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* Whether the peer has closed its end of the connection. */
static bool client_gone(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return false;
    struct pollfd p = {.fd = ci->connect_fd, .events = POLLIN | POLLRDHUP};
    if (poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL)) return true;
    char byte;
    const ssize_t r = recv(ci->connect_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Waits until there are tokens not yet formatted, or the job is done. A
 * client that goes away meanwhile cancels the job: returns false once done. */
static bool wait_progress(req *q, bool want_tokens) {
    pthread_mutex_lock(&q->mu);
    while (!q->done && (!want_tokens || q->n_toks == q->n_fmt)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        if (pthread_cond_timedwait(&q->cv, &q->mu, &ts) == ETIMEDOUT && !q->gone && client_gone(q->conn)) {
            q->gone = true;
            pthread_mutex_unlock(&q->mu);
            qt_sched_cancel(q->s->sched, q->job);
            pthread_mutex_lock(&q->mu);
        }
    }
    const bool ok = !q->gone;
    pthread_mutex_unlock(&q->mu);
    return ok;
}

/* Appends the text of tokens [n_fmt, upto) to text; flush: also the bytes of
 * an incomplete last character (as U+FFFD), once no token can complete it. */
static void take_text(req *q, int32_t upto, buf *text, bool flush) {
    for (int32_t i = q->n_fmt; i < upto; i++) {
        pthread_mutex_lock(&q->mu); /* on_token may move toks while growing it */
        const int32_t id = q->toks[i];
        pthread_mutex_unlock(&q->mu);
        char small[256], *piece = small;
        int32_t len = qt_token_to_piece(q->s->tok, id, small, (int32_t)sizeof small);
        if (len > (int32_t)sizeof small) {
            piece = malloc((size_t)len);
            if (!piece || qt_token_to_piece(q->s->tok, id, piece, len) != len) len = 0;
        }
        for (int32_t k = 0; k < len; k++) {
            q->pend[q->n_pend++] = (unsigned char)piece[k];
            if (q->n_pend >= 4) utf8_drain(q->pend, &q->n_pend, text, false); /* keeps at most 3 bytes */
        }
        if (piece != small) free(piece);
        utf8_drain(q->pend, &q->n_pend, text, false);
    }
    q->n_fmt = upto;
    if (flush) utf8_drain(q->pend, &q->n_pend, text, true);
}

static const char *finish_name(qt_sched_finish why) {
    return why == QT_FINISH_STOP ? "stop" : why == QT_FINISH_LENGTH ? "length" : why == QT_FINISH_CANCELLED ? "cancelled" : "error";
}

/* ---- answers ------------------------------------------------------------------- */

static enum MHD_Result answer(req *q, int status, const char *type, const char *body, size_t len, bool retry_after) {
    q->answered = true;
    count_answer(q->s, q->ep, status);
    struct MHD_Response *rsp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!rsp) return MHD_NO;
    MHD_add_response_header(rsp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (retry_after) MHD_add_response_header(rsp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (status == 401) MHD_add_response_header(rsp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    const enum MHD_Result r = MHD_queue_response(q->conn, (unsigned)status, rsp);
    MHD_destroy_response(rsp);
    return r;
}

static enum MHD_Result answer_json(req *q, int status, json_t *o, bool retry_after) {
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (!text) return answer(q, 500, "application/json", "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\"}}", 57, false);
    const enum MHD_Result r = answer(q, status, "application/json", text, strlen(text), retry_after);
    free(text);
    return r;
}

/* OpenAI's error object: {"error": {"message", "type", "param", "code"}}. */
static enum MHD_Result answer_error(req *q, int status, const char *code, const char *msg) {
    const char *type = status == 401 ? "authentication_error" : status >= 500 ? "server_error" : "invalid_request_error";
    json_t *o = json_pack("{s:{s:s, s:s, s:n, s:s}}", "error", "message", msg, "type", type, "param", "code", code);
    return answer_json(q, status, o, status == 503);
}

static json_t *usage_json(const req *q) {
    return json_pack("{s:i, s:i, s:i}", "prompt_tokens", q->n_prompt, "completion_tokens", q->n_gen, "total_tokens",
                     q->n_prompt + q->n_gen);
}

/* One choice (or stream chunk choice) holding text. */
static json_t *choice_json(const req *q, const char *text, size_t len, const char *finish, bool stream, bool first) {
    json_t *fin = finish ? json_string(finish) : json_null();
    if (q->r.kind == QT_SERVE_COMPLETION)
        return json_pack("{s:i, s:s%, s:n, s:o}", "index", 0, "text", text, len, "logprobs", "finish_reason", fin);
    json_t *msg = json_object();
    if (!stream || first) json_object_set_new(msg, "role", json_string("assistant"));
    if (text) json_object_set_new(msg, "content", json_stringn(text, len));
    return json_pack("{s:i, s:o, s:n, s:o}", "index", 0, stream ? "delta" : "message", msg, "logprobs", "finish_reason", fin);
}

static json_t *envelope(const req *q, bool stream, json_t *choices) {
    const char *object = q->r.kind == QT_SERVE_COMPLETION ? "text_completion" : stream ? "chat.completion.chunk" : "chat.completion";
    return json_pack("{s:s, s:s, s:I, s:s, s:o}", "id", q->id, "object", object, "created", (json_int_t)q->s->created,
                     "model", q->s->model_name, "choices", choices);
}

static void sse(buf *b, json_t *o) {
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (!text) { b->failed = true; return; }
    buf_add(b, "data: ", 6);
    buf_add(b, text, strlen(text));
    buf_add(b, "\n\n", 2);
    free(text);
}

/* Stream: one chunk per token not yet sent; once done the finish chunk, usage, [DONE]. */
static void stream_format(req *q) {
    pthread_mutex_lock(&q->mu);
    const int32_t n = q->n_toks;
    const bool done = q->done; /* when done, n is final */
    pthread_mutex_unlock(&q->mu);
    while (q->n_fmt < n) {
        const bool first = q->n_fmt == 0;
        /* The max_tokens-th token is the last, finished by length: it carries finish_reason
         * itself, as vLLM's stream does, so a client counts one chunk per token (an extra empty
         * chunk would be one more, near-zero, inter-token latency in vLLM's metrics). */
        const bool last = q->n_fmt + 1 == q->max_gen;
        buf text = {0};
        take_text(q, q->n_fmt + 1, &text, last);
        sse(&q->out, envelope(q, true, json_pack("[o]", choice_json(q, text.p ? text.p : "", text.n,
                                                                    last ? "length" : NULL, true, first))));
        q->fin_sent = last;
        free(text.p);
    }
    if (!done || q->ended) return;
    buf text = {0};
    take_text(q, q->n_fmt, &text, true); /* the end of an incomplete character, if any */
    if (q->why == QT_FINISH_ERROR) {
        sse(&q->out, json_pack("{s:{s:s, s:s}}", "error", "message", q->err, "type", "server_error"));
    } else {
        if (!q->fin_sent) {
            json_t *c = choice_json(q, text.p ? text.p : "", text.n, finish_name(q->why), true, n == 0);
            sse(&q->out, envelope(q, true, json_pack("[o]", c)));
        }
        if (q->r.include_usage) {
            json_t *o = envelope(q, true, json_array());
            json_object_set_new(o, "usage", usage_json(q));
            sse(&q->out, o);
        }
    }
    free(text.p);
    buf_add(&q->out, "data: [DONE]\n\n", 14);
    q->ended = true;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *dst, size_t max) {
    req *q = cls;
    (void)pos;
    for (;;) {
        if (q->out.failed) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (q->out_pos < q->out.n) {
            const size_t k = q->out.n - q->out_pos < max ? q->out.n - q->out_pos : max;
            memcpy(dst, q->out.p + q->out_pos, k);
            q->out_pos += k;
            if (q->out_pos == q->out.n) q->out_pos = q->out.n = 0;
            return (ssize_t)k;
        }
        if (q->ended) return MHD_CONTENT_READER_END_OF_STREAM;
        if (!wait_progress(q, true)) return MHD_CONTENT_READER_END_WITH_ERROR;
        stream_format(q);
    }
}

static void stream_free(void *cls) { req_release(cls); }

/* ---- generation ------------------------------------------------------------------ */

static bool model_known(const serve_ctx *s, const char *name) {
    return !name || !strcmp(name, s->model_name) || !strcmp(name, s->model_path);
}

/* The prompt's token ids (malloc'd), or an answer already queued (returns false, *rc set). */
static bool prompt_tokens(req *q, int32_t **ids, int32_t *n, enum MHD_Result *rc) {
    serve_ctx *s = q->s;
    char msg[512];
    if (q->r.prompt_ids) {
        for (int32_t i = 0; i < q->r.n_prompt_ids; i++)
            if (q->r.prompt_ids[i] >= qt_engine_n_vocab(s->engine)) {
                snprintf(msg, sizeof msg, "'prompt': token id %d at index %d is outside the vocabulary (%d tokens)",
                         q->r.prompt_ids[i], i, qt_engine_n_vocab(s->engine));
                *rc = answer_error(q, 400, "invalid_prompt", msg);
                return false;
            }
        *ids = q->r.prompt_ids, *n = q->r.n_prompt_ids;
        q->r.prompt_ids = NULL;
        return true;
    }
    /* chat templates write control tokens as text: those are parsed, as HF tokenizers do; a template
     * that writes BOS itself (Llama 3's) does not get a second one */
    const bool chat = q->r.kind == QT_SERVE_CHAT;
    const bool bos = s->add_bos && !(chat && s->bos_text && *s->bos_text && !strncmp(q->r.prompt, s->bos_text, strlen(s->bos_text)));
    const unsigned flags = (bos ? QT_TOKENIZE_ADD_BOS : 0) | (chat ? QT_TOKENIZE_PARSE_SPECIAL : 0);
    if (qt_tokenize_ex(s->tok, q->r.prompt, strlen(q->r.prompt), flags, ids, n) != QT_OK) {
        snprintf(msg, sizeof msg, "the prompt cannot be tokenized: %s", qt_last_error());
        *rc = answer_error(q, 400, "invalid_prompt", msg);
        return false;
    }
    return true;
}

/* A token's bytes (raw: a byte token may hold part of a character), appended to b. */
static void piece_raw(const serve_ctx *s, int32_t id, buf *b) {
    char small[256], *piece = small;
    int32_t len = qt_token_to_piece(s->tok, id, small, (int32_t)sizeof small);
    if (len > (int32_t)sizeof small) {
        piece = malloc((size_t)len);
        if (!piece || qt_token_to_piece(s->tok, id, piece, len) != len) len = 0;
    }
    if (len > 0) buf_add(b, piece, (size_t)len);
    if (piece != small) free(piece);
}

/* A token's text as a JSON string: bytes that are no character become U+FFFD. */
static json_t *piece_json(const serve_ctx *s, int32_t id) {
    buf raw = {0}, text = {0};
    piece_raw(s, id, &raw);
    size_t n = raw.n;
    if (n) utf8_drain((unsigned char *)raw.p, &n, &text, true);
    json_t *j = json_stringn(text.p ? text.p : "", text.n);
    free(raw.p), free(text.p);
    return j;
}

/* Characters (code points) in t[0..bytes): OpenAI's Python servers count text_offset in characters. */
static json_int_t char_offset(const char *t, size_t bytes) {
    json_int_t n = 0;
    for (size_t i = 0; i < bytes; i++) n += ((unsigned char)t[i] & 0xC0) != 0x80;
    return n;
}

/* OpenAI's completions logprobs: {tokens, token_logprobs, top_logprobs, text_offset} over the
 * echoed prompt (when echo) and the generated tokens. text is the answer's text, of which the
 * first n_head bytes are the echoed prompt. A token's offset is where its piece starts in the
 * concatenated pieces, less what the pieces of the prompt hold before the prompt's own text (a
 * BOS, SentencePiece's leading space), clamped into its part of the text. */
static json_t *logprobs_json(req *q, const char *text, size_t n_text, size_t n_head) {
    serve_ctx *s = q->s;
    json_t *tokens = json_array(), *lps = json_array(), *tops = json_array(), *offs = json_array();
    const int32_t first = q->r.echo ? 0 : q->n_echo, end = q->n_echo + q->n_toks;
    buf pieces = {0};
    for (int32_t pos = 0; pos < q->n_echo && q->r.echo; pos++) piece_raw(s, q->echo_ids[pos], &pieces);
    const bool tail = pieces.n >= n_head && pieces.p && !memcmp(pieces.p + pieces.n - n_head, text, n_head);
    const size_t delta = tail ? pieces.n - n_head : 0;
    size_t cum = 0, gen_cum = 0;
    for (int32_t pos = first; pos < end; pos++) {
        const int32_t id = pos < q->n_echo ? q->echo_ids[pos] : q->toks[pos - q->n_echo];
        size_t off;
        buf one = {0};
        piece_raw(s, id, &one);
        if (pos < q->n_echo) off = cum > delta ? cum - delta : 0, off = off < n_head ? off : n_head, cum += one.n;
        else off = n_head + gen_cum, off = off < n_text ? off : n_text, gen_cum += one.n;
        free(one.p);
        json_array_append_new(tokens, piece_json(s, id));
        json_array_append_new(offs, json_integer(char_offset(text, off)));
        if (pos == 0 || pos >= q->lp_cap || !q->lp_set[pos]) { /* nothing predicts the first token */
            json_array_append_new(lps, json_null());
            json_array_append_new(tops, json_null());
            continue;
        }
        json_array_append_new(lps, json_real(q->lp[pos]));
        json_t *top = json_object(); /* the N most likely and the token itself, as vLLM gives them */
        for (int32_t k = 0; k < q->lp_ntop[pos] && k < q->r.logprobs; k++) {
            json_t *p = piece_json(s, q->lp_top[(size_t)pos * QT_SERVE_MAX_LOGPROBS + k]);
            if (p) json_object_set_new(top, json_string_value(p), json_real(q->lp_toplp[(size_t)pos * QT_SERVE_MAX_LOGPROBS + k]));
            json_decref(p);
        }
        json_t *self = piece_json(s, id);
        if (self && !json_object_get(top, json_string_value(self))) json_object_set_new(top, json_string_value(self), json_real(q->lp[pos]));
        json_decref(self);
        json_array_append_new(tops, top);
    }
    free(pieces.p);
    return json_pack("{s:o, s:o, s:o, s:o}", "tokens", tokens, "token_logprobs", lps, "top_logprobs", tops, "text_offset", offs);
}

/* The prompt as echoed: the prompt string, or the text of its token ids. */
static void echo_text(req *q, buf *b) {
    if (q->r.prompt) { buf_add(b, q->r.prompt, strlen(q->r.prompt)); return; }
    buf raw = {0};
    for (int32_t i = 0; i < q->n_echo; i++) piece_raw(q->s, q->echo_ids[i], &raw);
    size_t n = raw.n;
    if (n) utf8_drain((unsigned char *)raw.p, &n, b, true);
    free(raw.p);
}

/* The whole answer of a finished, non-streamed job. */
static enum MHD_Result answer_whole(req *q) {
    if (q->why == QT_FINISH_ERROR) return answer_error(q, 500, "engine_error", q->err);
    buf text = {0};
    if (q->r.echo) echo_text(q, &text);
    const size_t n_head = text.n;
    take_text(q, q->n_toks, &text, true);
    if (text.failed) { free(text.p); return answer_error(q, 500, "out_of_memory", "out of memory"); }
    json_t *c = choice_json(q, text.p ? text.p : "", text.n, finish_name(q->why), false, true);
    if (q->r.logprobs >= 0) json_object_set_new(c, "logprobs", logprobs_json(q, text.p ? text.p : "", text.n, n_head));
    json_t *o = envelope(q, false, json_pack("[o]", c));
    free(text.p);
    json_object_set_new(o, "usage", usage_json(q));
    return answer_json(q, 200, o, false);
}

static enum MHD_Result start_stream(req *q) {
    struct MHD_Response *rsp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, q, stream_free);
    if (!rsp) return MHD_NO;
    pthread_mutex_lock(&q->mu);
    q->refs++; /* the reader's */
    pthread_mutex_unlock(&q->mu);
    MHD_add_response_header(rsp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(rsp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    q->answered = true;
    count_answer(q->s, q->ep, 200);
    const enum MHD_Result r = MHD_queue_response(q->conn, MHD_HTTP_OK, rsp);
    MHD_destroy_response(rsp);
    return r;
}

static enum MHD_Result generate(req *q, qt_serve_kind kind) {
    serve_ctx *s = q->s;
    char msg[768];
    if (q->too_large) {
        snprintf(msg, sizeof msg, "the body is larger than the limit of %zu bytes (--max-body)", s->max_body);
        return answer_error(q, 413, "body_too_large", msg);
    }
    if (atomic_load(&s->draining)) return answer_error(q, 503, "shutting_down", "the server is shutting down");
    int status;
    if (qt_serve_request_parse(q->body.p ? q->body.p : "", q->body.n, kind, s->chat, qt_model_vocab(s->model), &q->r,
                               &status) != QT_OK)
        return answer_error(q, status, "invalid_request", qt_last_error());
    if (!model_known(s, q->r.model)) {
        snprintf(msg, sizeof msg, "the model '%.300s' does not exist; this server serves '%.300s'", q->r.model, s->model_name);
        return answer_error(q, 404, "model_not_found", msg);
    }
    int32_t *ids = NULL, n = 0;
    enum MHD_Result rc;
    if (!prompt_tokens(q, &ids, &n, &rc)) return rc;
    if (n == 0) {
        free(ids);
        return answer_error(q, 400, "invalid_prompt", "the prompt is empty (no tokens)");
    }
    if (n > s->n_ctx) {
        free(ids);
        snprintf(msg, sizeof msg, "the prompt is %d tokens but the context holds %d (--ctx-size)", n, s->n_ctx);
        return answer_error(q, 400, "context_length_exceeded", msg);
    }
    const int32_t max_tokens = q->r.max_tokens >= 0 ? q->r.max_tokens : kind == QT_SERVE_COMPLETION ? 16 : s->n_ctx - n;
    q->max_gen = max_tokens;
    const bool lp = q->r.logprobs >= 0;
    if (lp || q->r.echo) {
        q->lp_cap = n + (max_tokens < s->n_ctx - n ? max_tokens : s->n_ctx - n);
        const size_t c = (size_t)q->lp_cap, t = c * QT_SERVE_MAX_LOGPROBS;
        q->echo_ids = malloc((size_t)n * sizeof *q->echo_ids), q->n_echo = n;
        q->lp_set = calloc(c, 1), q->lp = calloc(c, sizeof *q->lp), q->lp_ntop = calloc(c, sizeof *q->lp_ntop);
        q->lp_top = calloc(t, sizeof *q->lp_top), q->lp_toplp = calloc(t, sizeof *q->lp_toplp);
        if (!q->echo_ids || !q->lp_set || !q->lp || !q->lp_ntop || !q->lp_top || !q->lp_toplp) {
            free(ids);
            return answer_error(q, 500, "out_of_memory", "out of memory");
        }
        memcpy(q->echo_ids, ids, (size_t)n * sizeof *ids);
    }
    qt_sched_job job = {.prompt = ids, .n_prompt = n, .max_tokens = max_tokens, .ignore_eos = q->r.ignore_eos,
                        .sampling = {.temp = q->r.temperature, .top_k = q->r.top_k, .top_p = q->r.top_p, .seed = q->r.seed},
                        .prompt_logprobs = lp && q->r.echo, .logprobs = lp, .top_logprobs = lp ? q->r.logprobs : 0,
                        .on_logprob = on_logprob, .on_token = on_token, .on_done = on_done, .user = q};
    snprintf(q->id, sizeof q->id, "%s-%llu", kind == QT_SERVE_CHAT ? "chatcmpl" : "cmpl",
             (unsigned long long)atomic_fetch_add(&s->next_id, 1));
    q->t0 = now_s();
    atomic_fetch_add(&s->in_flight, 1);
    const qt_status st = qt_sched_submit(s->sched, &job, &q->job);
    free(ids);
    if (st != QT_OK) {
        atomic_fetch_sub(&s->in_flight, 1);
        return answer_error(q, st == QT_ERR_ARG ? 400 : 503, st == QT_ERR_ARG ? "invalid_request" : "overloaded",
                            qt_last_error());
    }
    q->submitted = true;
    if (q->r.stream) return start_stream(q);
    if (!wait_progress(q, false)) return MHD_NO; /* the client left: its job was cancelled */
    return answer_whole(q);
}

/* ---- routes ------------------------------------------------------------------------ */

static int endpoint(const char *url) {
    static const char *const paths[] = {"/v1/completions", "/v1/chat/completions", "/v1/models", "/health", "/metrics"};
    for (int i = 0; i < EP_OTHER; i++)
        if (!strcmp(url, paths[i])) return i;
    return EP_OTHER;
}

/* Constant-time comparison of the bearer token with --api-key. */
static bool authorized(const serve_ctx *s, struct MHD_Connection *c) {
    if (!s->api_key) return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncmp(h, "Bearer ", 7)) return false;
    const char *k = h + 7;
    const size_t a = strlen(k), b = strlen(s->api_key);
    unsigned char diff = a != b;
    for (size_t i = 0; i < a && i < b; i++) diff |= (unsigned char)(k[i] ^ s->api_key[i]);
    return diff == 0;
}

static enum MHD_Result route(req *q, const char *url, const char *method) {
    serve_ctx *s = q->s;
    const bool get = !strcmp(method, MHD_HTTP_METHOD_GET), post = !strcmp(method, MHD_HTTP_METHOD_POST);
    if (q->ep != EP_HEALTH && !authorized(s, q->conn))
        return answer_error(q, 401, "invalid_api_key", "missing or wrong API key (send 'Authorization: Bearer KEY')");
    char msg[700];
    switch (q->ep) {
    case EP_COMPLETIONS:
    case EP_CHAT:
        if (!post) break;
        return generate(q, q->ep == EP_CHAT ? QT_SERVE_CHAT : QT_SERVE_COMPLETION);
    case EP_MODELS:
        if (!get) break;
        return answer_json(q, 200, json_pack("{s:s, s:[{s:s, s:s, s:I, s:s, s:i}]}", "object", "list", "data", "id", s->model_name,
                                             "object", "model", "created", (json_int_t)s->created, "owned_by", "quanta",
                                             "max_model_len", s->n_ctx), false);
    case EP_HEALTH:
        if (!get) break;
        if (atomic_load(&s->draining)) return answer_json(q, 503, json_pack("{s:s}", "status", "draining"), true);
        return answer_json(q, 200, json_pack("{s:s}", "status", "ok"), false);
    case EP_METRICS: {
        if (!get) break;
        char *text = serve_metrics_text(s);
        if (!text) return answer_error(q, 500, "out_of_memory", "out of memory");
        const enum MHD_Result r = answer(q, 200, "text/plain; version=0.0.4", text, strlen(text), false);
        free(text);
        return r;
    }
    default:
        snprintf(msg, sizeof msg, "no endpoint %.500s (quanta serve has /v1/completions, /v1/chat/completions, /v1/models, "
                                  "/health, /metrics)", url);
        return answer_error(q, 404, "not_found", msg);
    }
    snprintf(msg, sizeof msg, "%.20s is not allowed on %.500s", method, url);
    return answer_error(q, 405, "method_not_allowed", msg);
}

enum MHD_Result serve_http_access(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    serve_ctx *s = cls;
    req *q = *con_cls;
    (void)version;
    if (!q) {
        if (!(q = req_new(s, c, endpoint(url)))) return MHD_NO;
        *con_cls = q;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > s->max_body) q->too_large = true; /* answered 413 once the body is skipped */
        return MHD_YES;
    }
    if (*upload_size) {
        if (!q->too_large && q->body.n + *upload_size > s->max_body) q->too_large = true;
        if (!q->too_large) buf_add(&q->body, upload, *upload_size);
        if (q->body.failed) q->too_large = true;
        *upload_size = 0;
        return MHD_YES;
    }
    if (q->answered) return MHD_YES;
    return route(q, url, method);
}

void serve_http_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)cls, (void)c, (void)toe;
    if (*con_cls) req_release(*con_cls);
    *con_cls = NULL;
}

/* ---- /metrics ------------------------------------------------------------------------ */

static void put_hist(FILE *f, const char *name, const char *help, const serve_hist *h) {
    fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (int i = 0; i < SERVE_N_BUCKETS; i++) {
        cum += h->count[i];
        fprintf(f, "%s_bucket{le=\"%g\"} %llu\n", name, bucket_le[i], (unsigned long long)cum);
    }
    cum += h->count[SERVE_N_BUCKETS];
    fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name, (unsigned long long)cum, name, h->sum, name,
            (unsigned long long)cum);
}

char *serve_metrics_text(serve_ctx *s) {
    static const char *const ep_names[] = {"/v1/completions", "/v1/chat/completions", "/v1/models", "/health", "/metrics", "other"};
    static const char *const fin[] = {"length", "stop", "cancelled", "error"};
    qt_sched_stats st;
    qt_sched_get_stats(s->sched, &st);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    pthread_mutex_lock(&s->mu);
    fprintf(f, "# HELP quanta_http_requests_total HTTP requests answered, by endpoint and status.\n"
               "# TYPE quanta_http_requests_total counter\n");
    for (int e = 0; e < EP_COUNT; e++)
        for (int i = 0; i < 9; i++)
            if (s->http[e][i])
                fprintf(f, "quanta_http_requests_total{endpoint=\"%s\",code=\"%d\"} %llu\n", ep_names[e], codes[i],
                        (unsigned long long)s->http[e][i]);
    fprintf(f, "# HELP quanta_requests_finished_total Generation requests finished, by reason.\n"
               "# TYPE quanta_requests_finished_total counter\n");
    for (int i = 0; i < 4; i++)
        fprintf(f, "quanta_requests_finished_total{reason=\"%s\"} %llu\n", fin[i], (unsigned long long)st.finished[i]);
    fprintf(f, "# HELP quanta_requests_refused_total Generation requests refused (queue full or shutting down: 503).\n"
               "# TYPE quanta_requests_refused_total counter\nquanta_requests_refused_total %llu\n"
               "# HELP quanta_requests_running Requests holding a KV slot.\n# TYPE quanta_requests_running gauge\n"
               "quanta_requests_running %d\n"
               "# HELP quanta_requests_waiting Requests queued for a slot.\n# TYPE quanta_requests_waiting gauge\n"
               "quanta_requests_waiting %d\n"
               "# HELP quanta_slots KV slots (--parallel).\n# TYPE quanta_slots gauge\nquanta_slots %d\n",
            (unsigned long long)st.refused, st.running, st.queued, st.n_slots);
    fprintf(f, "# HELP quanta_prompt_tokens_total Prompt tokens of admitted requests.\n# TYPE quanta_prompt_tokens_total counter\n"
               "quanta_prompt_tokens_total %llu\n"
               "# HELP quanta_generation_tokens_total Tokens generated by finished requests.\n"
               "# TYPE quanta_generation_tokens_total counter\nquanta_generation_tokens_total %llu\n"
               "# HELP quanta_engine_steps_total Engine batches evaluated.\n# TYPE quanta_engine_steps_total counter\n"
               "quanta_engine_steps_total %llu\n"
               "# HELP quanta_engine_step_rows_total Token rows in those batches.\n# TYPE quanta_engine_step_rows_total counter\n"
               "quanta_engine_step_rows_total %llu\n",
            (unsigned long long)st.prompt_tokens, (unsigned long long)st.generated_tokens, (unsigned long long)st.steps,
            (unsigned long long)st.step_rows);
    fprintf(f, "# HELP quanta_kv_cache_usage_ratio KV cache positions in use over all slots' capacity (0..1).\n"
               "# TYPE quanta_kv_cache_usage_ratio gauge\nquanta_kv_cache_usage_ratio %.6f\n"
               "# HELP quanta_kv_cache_usage_max_ratio The highest KV cache usage seen (0..1).\n"
               "# TYPE quanta_kv_cache_usage_max_ratio gauge\nquanta_kv_cache_usage_max_ratio %.6f\n"
               "# HELP quanta_peak_rss_bytes Peak resident set size of the server process (getrusage ru_maxrss).\n"
               "# TYPE quanta_peak_rss_bytes gauge\nquanta_peak_rss_bytes %lld\n",
            (double)st.kv_used / (double)(st.kv_capacity > 0 ? st.kv_capacity : 1), st.kv_usage_max,
            (long long)ru.ru_maxrss * 1024);
    put_hist(f, "quanta_time_to_first_token_seconds", "From the request's submission to its first token.", &s->ttft);
    put_hist(f, "quanta_inter_token_latency_seconds", "Between consecutive tokens of a request.", &s->itl);
    put_hist(f, "quanta_e2e_request_latency_seconds", "From submission to the last token, for requests that finished.", &s->e2el);
    pthread_mutex_unlock(&s->mu);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}
