/* lib/serve/sched.c — continuous batching over one engine (quanta/serve.h).
 *
 * One thread owns the engine. Jobs wait in a FIFO queue until a KV slot is
 * free; each step is one qt_engine_batch_eval holding a decode row of every
 * running job whose prompt is in, plus the next chunk of the oldest prompt
 * still being read (chunks of n_batch from its start, as qt_engine_eval cuts
 * them, so the engine's batch invariance makes the job's tokens equal to
 * `quanta run`'s). A step holds at most n_seq - 1 decode rows beside a chunk,
 * which qt_engine_max_rows allows for.
 *
 * Locking: `mu` guards the queue, the slot table, the counters and the flags.
 * The engine, the step buffers and each running job's progress fields belong
 * to the scheduler thread alone. A job leaves the slot table under `mu` before
 * its on_done runs, so qt_sched_cancel can never reach a job that is gone.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "quanta/eval.h"
#include "quanta/serve.h"

typedef struct job {
    struct job *next;          /* queue link */
    uint64_t id;               /* submission order: the oldest prompt is prefilled first */
    qt_sched_job j;            /* j.prompt points at `prompt` */
    int32_t *prompt;           /* (n_prompt) own copy */
    atomic_bool cancel;
    int32_t n_done;            /* prompt tokens evaluated */
    int32_t n_gen;             /* tokens generated */
    int32_t last;              /* the token the next decode row feeds */
    qt_sampler *smp;
    qt_sched_finish why;
    char error[256];           /* QT_FINISH_ERROR's message */
} job;

struct qt_sched {
    qt_engine_ctx *e;
    int32_t eos, n_slots, max_queue, n_vocab, n_batch, n_ctx;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work;       /* a job was queued or cancelled, or stop was asked */
    pthread_cond_t idle;       /* nothing queued or running */
    job *head, *tail;          /* the queue */
    job **slots;               /* (n_slots) running jobs, NULL for a free slot */
    int32_t n_running, n_queued;
    bool draining, stopping;
    uint64_t next_id;
    qt_sched_stats st;
    char error[256];           /* the last engine error */

    /* step buffers, sized once: rows (max_rows) and logits rows (n_slots; max_rows from the
     * first job that asks for its prompt's logprobs, whose chunk wants every row) */
    int32_t *tok, *seq;
    bool *want;
    float *logits;
    int32_t logit_rows;        /* rows `logits` holds */
    double *logp;              /* (n_vocab) one row's log-softmax, for logprobs */
    job **owner;               /* (n_slots) the job of each sampled logits row */
    int32_t *orow;             /* (n_slots) ... and that row's index in `logits` */
    job **finished;            /* (n_slots) jobs that ended in this step */
    int32_t n_finished;
};

static void job_free(job *jb) {
    if (!jb) return;
    qt_sampler_free(jb->smp);
    free(jb->prompt);
    free(jb);
}

/* Scheduler thread: note that jb ended; it leaves its slot after the step. */
static void finish(qt_sched *s, job *jb, qt_sched_finish why, const char *error) {
    jb->why = why;
    if (error) snprintf(jb->error, sizeof jb->error, "%s", error);
    s->finished[s->n_finished++] = jb;
}

/* Runs on_done and frees, outside the lock. */
static void report(job *jb) {
    jb->j.on_done(jb->j.user, jb->why, jb->j.n_prompt, jb->n_gen, jb->why == QT_FINISH_ERROR ? jb->error : NULL);
    job_free(jb);
}

/* Under mu: the queue's cancelled jobs are unlinked into *out (a list). */
static void take_cancelled_queued(qt_sched *s, job **out) {
    for (job **pp = &s->head; *pp;) {
        job *jb = *pp;
        if (!atomic_load(&jb->cancel)) { pp = &jb->next; continue; }
        *pp = jb->next;
        s->n_queued--;
        jb->why = QT_FINISH_CANCELLED;
        jb->next = *out;
        *out = jb;
    }
    s->tail = NULL;
    for (job *q = s->head; q; q = q->next) s->tail = q;
}

/* Under mu: queued jobs into free slots. Jobs that cannot start go to *out. */
static void admit(qt_sched *s, job **out) {
    for (int32_t slot = 0; slot < s->n_slots && s->head; slot++) {
        if (s->slots[slot]) continue;
        job *jb = s->head;
        s->head = jb->next;
        if (!s->head) s->tail = NULL;
        s->n_queued--;
        jb->next = NULL;
        const bool nothing = jb->j.max_tokens == 0 && !jb->j.prompt_logprobs; /* echo with logprobs still reads its prompt */
        if (nothing || qt_sampler_new(&jb->j.sampling, s->n_vocab, &jb->smp) != QT_OK) {
            jb->why = nothing ? QT_FINISH_LENGTH : QT_FINISH_ERROR;
            if (jb->why == QT_FINISH_ERROR) snprintf(jb->error, sizeof jb->error, "sampler: %s", qt_last_error());
            jb->next = *out;
            *out = jb;
            slot--; /* the slot is still free */
            continue;
        }
        qt_engine_seq_reset(s->e, slot);
        s->slots[slot] = jb;
        s->n_running++;
        s->st.prompt_tokens += (uint64_t)jb->j.n_prompt;
    }
}

/* Reports token `token` at position pos of jb under one logits row; false when the row
 * is not finite (the job then ends with an error). */
static bool report_logprob(qt_sched *s, job *jb, int32_t pos, int32_t token, const float *logits) {
    if (qt_eval_log_softmax(logits, s->n_vocab, s->logp) != QT_OK) {
        finish(s, jb, QT_FINISH_ERROR, qt_last_error());
        return false;
    }
    int32_t ids[QT_SCHED_MAX_TOP_LOGPROBS], n = 0;
    double lp[QT_SCHED_MAX_TOP_LOGPROBS];
    const int32_t k = jb->j.top_logprobs < QT_SCHED_MAX_TOP_LOGPROBS ? jb->j.top_logprobs : QT_SCHED_MAX_TOP_LOGPROBS;
    for (int32_t v = 0; v < s->n_vocab && k > 0; v++) { /* insertion into the k best: most likely first, lowest id on ties */
        if (n == k && !(s->logp[v] > lp[n - 1])) continue;
        int32_t i = n < k ? n++ : n - 1;
        while (i > 0 && s->logp[v] > lp[i - 1]) ids[i] = ids[i - 1], lp[i] = lp[i - 1], i--;
        ids[i] = v, lp[i] = s->logp[v];
    }
    jb->j.on_logprob(jb->j.user, pos, token, s->logp[token], ids, lp, n);
    return true;
}

/* Picks the token after one logits row and decides whether the job goes on. */
static void take_token(qt_sched *s, job *jb, int32_t slot, const float *logits) {
    if (jb->j.max_tokens == 0) { finish(s, jb, QT_FINISH_LENGTH, NULL); return; } /* a prompt read for its logprobs */
    const int32_t t = qt_sampler_sample(jb->smp, logits);
    if (t == s->eos && !jb->j.ignore_eos) { finish(s, jb, QT_FINISH_STOP, NULL); return; }
    if (jb->j.logprobs && !report_logprob(s, jb, jb->j.n_prompt + jb->n_gen, t, logits)) return;
    jb->j.on_token(jb->j.user, t);
    jb->n_gen++;
    jb->last = t;
    if (jb->n_gen >= jb->j.max_tokens || qt_engine_seq_len(s->e, slot) >= s->n_ctx) finish(s, jb, QT_FINISH_LENGTH, NULL);
}

/* One engine batch: decode rows, then one prefill chunk; then a token for each logits row. */
static void step(qt_sched *s) {
    int32_t n = 0, n_out = 0, pre = -1;
    for (int32_t slot = 0; slot < s->n_slots; slot++) {
        job *jb = s->slots[slot];
        if (!jb) continue;
        if (atomic_load(&jb->cancel)) { finish(s, jb, QT_FINISH_CANCELLED, NULL); continue; }
        if (jb->n_done < jb->j.n_prompt) {
            if (pre < 0 || jb->id < s->slots[pre]->id) pre = slot;
            continue;
        }
        s->orow[n_out] = n;
        s->tok[n] = jb->last, s->seq[n] = slot, s->want[n++] = true;
        s->owner[n_out++] = jb;
    }
    int32_t chunk = 0, chunk_row = n; /* chunk_row: the logits row of the chunk's first token, when all are wanted */
    if (pre >= 0) {
        job *jb = s->slots[pre];
        chunk = jb->j.n_prompt - jb->n_done < s->n_batch ? jb->j.n_prompt - jb->n_done : s->n_batch;
        const int32_t rows = n + chunk;
        if (jb->j.prompt_logprobs && rows > s->logit_rows) { /* sized once, by the first job that needs it */
            const int32_t max_rows = qt_engine_max_rows(s->e);
            float *p = realloc(s->logits, (size_t)max_rows * s->n_vocab * sizeof *p);
            if (!p) {
                finish(s, jb, QT_FINISH_ERROR, "scheduler: out of memory for the prompt's logprobs");
                return;
            }
            s->logits = p, s->logit_rows = max_rows;
        }
        for (int32_t i = 0; i < chunk; i++)
            s->tok[n] = jb->prompt[jb->n_done + i], s->seq[n] = pre,
            s->want[n++] = jb->j.prompt_logprobs || jb->n_done + i == jb->j.n_prompt - 1;
        if (jb->n_done + chunk == jb->j.n_prompt) {
            s->orow[n_out] = jb->j.prompt_logprobs ? n - 1 : chunk_row;
            s->owner[n_out++] = jb;
        }
    }
    if (n == 0) return;
    if (qt_engine_batch_eval(s->e, s->tok, s->seq, s->want, n, s->logits) != QT_OK) {
        snprintf(s->error, sizeof s->error, "%s", qt_last_error());
        for (int32_t k = 0; k < n_out; k++) finish(s, s->owner[k], QT_FINISH_ERROR, s->error);
        if (pre >= 0 && s->slots[pre]->n_done + chunk < s->slots[pre]->j.n_prompt) finish(s, s->slots[pre], QT_FINISH_ERROR, s->error);
        return;
    }
    s->st.steps++;
    s->st.step_rows += (uint64_t)n;
    if (pre >= 0) {
        job *jb = s->slots[pre];
        /* row i predicts prompt token n_done + i + 1; the prompt's last row predicts the first generated token */
        bool ok = true;
        for (int32_t i = 0; jb->j.prompt_logprobs && ok && i < chunk && jb->n_done + i + 1 < jb->j.n_prompt; i++)
            ok = report_logprob(s, jb, jb->n_done + i + 1, jb->prompt[jb->n_done + i + 1],
                                s->logits + (size_t)(chunk_row + i) * s->n_vocab);
        jb->n_done += chunk;
        if (!ok) { /* finished with an error: it takes no token */
            for (int32_t k = 0; k < n_out; k++)
                if (s->owner[k] == jb) s->owner[k] = NULL;
        }
    }
    for (int32_t k = 0; k < n_out; k++) {
        job *jb = s->owner[k];
        if (!jb) continue;
        int32_t slot = 0;
        while (s->slots[slot] != jb) slot++;
        take_token(s, jb, slot, s->logits + (size_t)s->orow[k] * s->n_vocab);
    }
}

/* Under mu: the step's finished jobs leave their slots; they are reported after unlocking. */
static job *release_finished(qt_sched *s) {
    job *list = NULL;
    for (int32_t k = 0; k < s->n_finished; k++) {
        job *jb = s->finished[k];
        for (int32_t slot = 0; slot < s->n_slots; slot++)
            if (s->slots[slot] == jb) {
                s->slots[slot] = NULL;
                qt_engine_seq_reset(s->e, slot);
                s->n_running--;
            }
        jb->next = list;
        list = jb;
    }
    s->n_finished = 0;
    return list;
}

/* Under mu: counters that follow a step. */
static void account(qt_sched *s, job *done) {
    for (job *jb = done; jb; jb = jb->next) {
        s->st.finished[jb->why]++;
        s->st.generated_tokens += (uint64_t)jb->n_gen;
    }
    int64_t used = 0;
    for (int32_t slot = 0; slot < s->n_slots; slot++)
        if (s->slots[slot]) used += qt_engine_seq_len(s->e, slot);
    s->st.kv_used = used;
    const double ratio = (double)used / (double)s->st.kv_capacity;
    if (ratio > s->st.kv_usage_max) s->st.kv_usage_max = ratio;
    s->st.running = s->n_running;
    s->st.queued = s->n_queued;
}

static void report_all(job *list) {
    while (list) {
        job *next = list->next;
        report(list);
        list = next;
    }
}

static void *sched_main(void *arg) {
    qt_sched *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        job *done = NULL;
        take_cancelled_queued(s, &done);
        admit(s, &done);
        account(s, done);
        if (done) {
            pthread_mutex_unlock(&s->mu);
            report_all(done);
            pthread_mutex_lock(&s->mu);
            continue;
        }
        if (s->n_running == 0 && !s->head) {
            pthread_cond_broadcast(&s->idle);
            if (s->stopping) break;
            pthread_cond_wait(&s->work, &s->mu);
            continue;
        }
        pthread_mutex_unlock(&s->mu);
        step(s);
        pthread_mutex_lock(&s->mu);
        done = release_finished(s);
        account(s, done);
        pthread_mutex_unlock(&s->mu);
        report_all(done);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void free_buffers(qt_sched *s) {
    free(s->tok), free(s->seq), free(s->want), free(s->logits), free(s->logp);
    free(s->owner), free(s->orow), free(s->finished), free(s->slots);
}

qt_status qt_sched_new(qt_engine_ctx *engine, int32_t eos_id, const qt_sched_opts *o, qt_sched **out) {
    *out = NULL;
    qt_sched *s = calloc(1, sizeof *s);
    if (!s) return qt_error(QT_ERR_NOMEM, "scheduler: out of memory");
    s->e = engine;
    s->eos = eos_id;
    s->n_slots = qt_engine_n_seq(engine);
    s->max_queue = o && o->max_queue > 0 ? o->max_queue : 4 * s->n_slots;
    s->n_vocab = qt_engine_n_vocab(engine);
    s->n_batch = qt_engine_n_batch(engine);
    s->n_ctx = qt_engine_n_ctx(engine);
    s->st.n_slots = s->n_slots;
    s->st.kv_capacity = (int64_t)s->n_slots * s->n_ctx;
    const size_t rows = (size_t)qt_engine_max_rows(engine);
    s->tok = malloc(rows * sizeof *s->tok);
    s->seq = malloc(rows * sizeof *s->seq);
    s->want = malloc(rows * sizeof *s->want);
    s->logits = malloc((size_t)s->n_slots * s->n_vocab * sizeof *s->logits);
    s->logit_rows = s->n_slots;
    s->logp = malloc((size_t)s->n_vocab * sizeof *s->logp);
    s->owner = calloc((size_t)s->n_slots, sizeof *s->owner);
    s->orow = calloc((size_t)s->n_slots, sizeof *s->orow);
    s->finished = calloc((size_t)s->n_slots, sizeof *s->finished);
    s->slots = calloc((size_t)s->n_slots, sizeof *s->slots);
    if (!s->tok || !s->seq || !s->want || !s->logits || !s->logp || !s->owner || !s->orow || !s->finished || !s->slots) {
        free_buffers(s);
        free(s);
        return qt_error(QT_ERR_NOMEM, "scheduler: out of memory");
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->idle, NULL);
    if (pthread_create(&s->thread, NULL, sched_main, s) != 0) {
        pthread_mutex_destroy(&s->mu);
        free_buffers(s);
        free(s);
        return qt_error(QT_ERR_INTERNAL, "scheduler: cannot start its thread");
    }
    *out = s;
    return QT_OK;
}

qt_status qt_sched_submit(qt_sched *s, const qt_sched_job *j, uint64_t *id) {
    if (j->n_prompt < 1 || j->n_prompt > s->n_ctx || j->max_tokens < 0 || !j->on_token || !j->on_done)
        return qt_error(QT_ERR_ARG, "scheduler: a job needs 1..%d prompt tokens (has %d), max_tokens >= 0 and both callbacks",
                        s->n_ctx, j->n_prompt);
    if ((j->prompt_logprobs || j->logprobs) && (!j->on_logprob || j->top_logprobs < 0 || j->top_logprobs > QT_SCHED_MAX_TOP_LOGPROBS))
        return qt_error(QT_ERR_ARG, "scheduler: logprobs need on_logprob and 0..%d top logprobs (has %d)",
                        QT_SCHED_MAX_TOP_LOGPROBS, j->top_logprobs);
    for (int32_t i = 0; i < j->n_prompt; i++)
        if (j->prompt[i] < 0 || j->prompt[i] >= s->n_vocab)
            return qt_error(QT_ERR_ARG, "prompt token %d at index %d is outside the vocabulary (%d tokens)", j->prompt[i], i,
                            s->n_vocab);
    job *jb = calloc(1, sizeof *jb);
    if (jb) jb->prompt = malloc((size_t)j->n_prompt * sizeof *jb->prompt);
    if (!jb || !jb->prompt) {
        free(jb);
        return qt_error(QT_ERR_NOMEM, "scheduler: out of memory");
    }
    memcpy(jb->prompt, j->prompt, (size_t)j->n_prompt * sizeof *jb->prompt);
    jb->j = *j;
    jb->j.prompt = jb->prompt;
    atomic_init(&jb->cancel, false);
    pthread_mutex_lock(&s->mu);
    qt_status st = QT_OK;
    if (s->draining || s->stopping) st = qt_error(QT_ERR_INTERRUPTED, "the server is shutting down");
    else if (s->n_queued >= s->max_queue)
        st = qt_error(QT_ERR_RANGE, "the queue is full (%d waiting for %d slots)", s->n_queued, s->n_slots);
    if (st != QT_OK) {
        s->st.refused++;
        pthread_mutex_unlock(&s->mu);
        job_free(jb);
        return st;
    }
    jb->id = ++s->next_id;
    if (s->tail) s->tail->next = jb;
    else s->head = jb;
    s->tail = jb;
    s->n_queued++;
    s->st.submitted++;
    s->st.queued = s->n_queued;
    *id = jb->id;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    return QT_OK;
}

void qt_sched_cancel(qt_sched *s, uint64_t id) {
    pthread_mutex_lock(&s->mu);
    for (job *jb = s->head; jb; jb = jb->next)
        if (jb->id == id) atomic_store(&jb->cancel, true);
    for (int32_t slot = 0; slot < s->n_slots; slot++)
        if (s->slots[slot] && s->slots[slot]->id == id) atomic_store(&s->slots[slot]->cancel, true);
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
}

void qt_sched_get_stats(qt_sched *s, qt_sched_stats *st) {
    pthread_mutex_lock(&s->mu);
    *st = s->st;
    pthread_mutex_unlock(&s->mu);
}

void qt_sched_drain(qt_sched *s) {
    pthread_mutex_lock(&s->mu);
    s->draining = true;
    while (s->n_running > 0 || s->head) pthread_cond_wait(&s->idle, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

void qt_sched_free(qt_sched *s) {
    if (!s) return;
    qt_sched_drain(s);
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->idle);
    free_buffers(s);
    free(s);
}
