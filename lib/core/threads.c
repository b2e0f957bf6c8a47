/* lib/core/threads.c — a fixed thread pool for data-parallel loops.
 *
 * One job at a time: the caller publishes (fn, ctx, n), bumps a generation
 * counter and takes chunk 0 itself while the workers take chunks 1..T-1.
 * Chunks are contiguous ranges so each thread streams its own rows (the
 * engine splits matmuls by output rows). No allocation per call.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "quanta/core.h"

struct qt_threadpool {
    int n_threads;            /* including the caller */
    pthread_t *workers;       /* (n_threads - 1) */
    pthread_mutex_t mu;
    pthread_cond_t start_cv, done_cv;
    uint64_t generation;
    int pending;              /* workers still running the current job */
    bool stop;
    qt_range_fn fn;
    void *ctx;
    int64_t n;
};

typedef struct { qt_threadpool *tp; int index; } worker_arg;

static void run_chunk(qt_threadpool *tp, int index) {
    int64_t per = (tp->n + tp->n_threads - 1) / tp->n_threads;
    int64_t begin = per * index, end = begin + per;
    if (end > tp->n) end = tp->n;
    if (begin < end) tp->fn(tp->ctx, begin, end, index);
}

static void *worker_main(void *p) {
    worker_arg a = *(worker_arg *)p;
    free(p);
    qt_threadpool *tp = a.tp;
    uint64_t seen = 0;
    pthread_mutex_lock(&tp->mu);
    for (;;) {
        while (!tp->stop && tp->generation == seen) pthread_cond_wait(&tp->start_cv, &tp->mu);
        if (tp->stop) break;
        seen = tp->generation;
        pthread_mutex_unlock(&tp->mu);
        run_chunk(tp, a.index);
        pthread_mutex_lock(&tp->mu);
        if (--tp->pending == 0) pthread_cond_signal(&tp->done_cv);
    }
    pthread_mutex_unlock(&tp->mu);
    return NULL;
}

int qt_default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

qt_status qt_threadpool_create(int n_threads, qt_threadpool **out) {
    *out = NULL;
    if (n_threads <= 0) n_threads = qt_default_threads();
    if (n_threads > 1024) return qt_error(QT_ERR_ARG, "threads: %d is too many (max 1024)", n_threads);
    qt_threadpool *tp = calloc(1, sizeof *tp);
    if (!tp) return qt_error(QT_ERR_NOMEM, "thread pool: out of memory");
    tp->n_threads = n_threads;
    pthread_mutex_init(&tp->mu, NULL);
    pthread_cond_init(&tp->start_cv, NULL);
    pthread_cond_init(&tp->done_cv, NULL);
    tp->workers = calloc((size_t)n_threads, sizeof *tp->workers);
    if (!tp->workers) { free(tp); return qt_error(QT_ERR_NOMEM, "thread pool: out of memory"); }
    for (int i = 1; i < n_threads; i++) {
        worker_arg *a = malloc(sizeof *a);
        if (!a || (a->tp = tp, a->index = i, pthread_create(&tp->workers[i - 1], NULL, worker_main, a) != 0)) {
            free(a);
            tp->n_threads = i; /* workers 1..i-1 exist */
            qt_threadpool_free(tp);
            return qt_error(QT_ERR_INTERNAL, "thread pool: cannot start thread %d", i);
        }
    }
    *out = tp;
    return QT_OK;
}

void qt_threadpool_free(qt_threadpool *tp) {
    if (!tp) return;
    pthread_mutex_lock(&tp->mu);
    tp->stop = true;
    pthread_cond_broadcast(&tp->start_cv);
    pthread_mutex_unlock(&tp->mu);
    for (int i = 1; i < tp->n_threads; i++) pthread_join(tp->workers[i - 1], NULL);
    pthread_mutex_destroy(&tp->mu);
    pthread_cond_destroy(&tp->start_cv);
    pthread_cond_destroy(&tp->done_cv);
    free(tp->workers);
    free(tp);
}

int qt_threadpool_size(const qt_threadpool *tp) { return tp ? tp->n_threads : 1; }

void qt_parallel_for(qt_threadpool *tp, int64_t n, qt_range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (!tp || tp->n_threads == 1 || n == 1) {
        fn(ctx, 0, n, 0);
        return;
    }
    pthread_mutex_lock(&tp->mu);
    tp->fn = fn;
    tp->ctx = ctx;
    tp->n = n;
    tp->pending = tp->n_threads - 1;
    tp->generation++;
    pthread_cond_broadcast(&tp->start_cv);
    pthread_mutex_unlock(&tp->mu);
    run_chunk(tp, 0);
    pthread_mutex_lock(&tp->mu);
    while (tp->pending > 0) pthread_cond_wait(&tp->done_cv, &tp->mu);
    pthread_mutex_unlock(&tp->mu);
}
