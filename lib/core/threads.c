/* lib/core/threads.c — a fixed thread pool for data-parallel loops.
 *
 * One job at a time: the caller publishes (fn, ctx, n), bumps a generation
 * counter and takes chunk 0 itself while the workers take chunks 1..T-1.
 * Chunks are contiguous ranges so each thread streams its own rows (the
 * engine splits matmuls by output rows). No allocation per call.
 * qt_parallel_for_balanced keeps those shares but hands them out in grains,
 * so a thread that finished its share takes the rest of a late one's
 * (run_balanced): on a shared machine one of the two threads is often off
 * its core for milliseconds, and with fixed chunks every job then waited for
 * it to run its half. Which thread runs a grain then varies from run to run,
 * so it is only for work whose results do not depend on the split.
 *
 * Waiting is spin-then-sleep: a worker that finished polls the generation,
 * and the caller the count of workers still running, for up to
 * QT_POOL_SPIN_US microseconds (pause instructions, the clock read every 64)
 * before sleeping on the condition variable. A decode step runs ~5 jobs per
 * layer a few microseconds apart, and waking a sleeping thread costs a futex
 * call and, in a VM, an inter-processor interrupt through the hypervisor
 * (tens of microseconds each time, every job): the spin keeps that off the
 * critical path, and the bound gives the core back between tokens and when
 * the pool is idle. Each waiter adapts its bound (spin_until): on a loaded
 * machine, where the thread waited for is often off its core, polling
 * shrinks towards sleeping at once; with more threads than CPUs it never
 * polls. QUANTA_POOL_SPIN_US (0..10000) overrides it, 0 = always
 * sleep (the old behaviour). Which thread runs which chunk is unchanged, so
 * results do not depend on it.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define POOL_PAUSE() _mm_pause()
#else
#define POOL_PAUSE() ((void)0)
#endif

#include "quanta/core.h"

/* Default spin bound (microseconds): longer than the gaps between a decode step's jobs
 * (norms, RoPE, attention: a few microseconds at 1B) and short beside a token (~30 ms). */
#define QT_POOL_SPIN_US 100

struct qt_threadpool {
    int n_threads;            /* including the caller */
    pthread_t *workers;       /* (n_threads - 1) */
    pthread_mutex_t mu;
    pthread_cond_t start_cv, done_cv;
    _Atomic uint64_t generation;
    _Atomic int pending;      /* workers still running the current job */
    _Atomic bool stop;
    int64_t spin_ns;          /* the most a waiting thread polls before it sleeps */
    int64_t caller_spin_ns;   /* the caller's current bound (spin_until); each worker keeps its own */
    qt_range_fn fn;
    void *ctx;
    int64_t n;
    int64_t grain;            /* qt_parallel_for_balanced: units per claim; 0: one chunk per thread */
    struct pool_cursor *cursor; /* (n_threads): each thread's next unclaimed unit (balanced jobs) */
};

/* A thread's share of a balanced job: the next unit anyone may claim from it, alone on its
 * cache line so the owner's claims do not bounce the others' lines (64 bytes: x86's line). */
struct pool_cursor {
    _Alignas(64) _Atomic int64_t next;
};

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Poll until done(tp, arg) or *bound_ns pass; whether done. The bound adapts: a wait that
 * ended while polling doubles it (up to the pool's spin_ns), one that had to sleep quarters it,
 * so where the other threads are often off their cores (a loaded machine) polling dies away
 * instead of burning the bound at every job, and comes back when hand-offs are quick again. */
static bool spin_until(const qt_threadpool *tp, bool (*done)(const qt_threadpool *, uint64_t), uint64_t arg,
                       int64_t *bound_ns) {
    if (tp->spin_ns <= 0) return done(tp, arg);
    const int64_t bound = *bound_ns;
    int64_t t0 = -1;
    for (unsigned i = 0;; i++) {
        if (done(tp, arg)) {
            const int64_t grown = 2 * bound + 1000;
            *bound_ns = grown < tp->spin_ns ? grown : tp->spin_ns;
            return true;
        }
        if ((i & 63) == 0) {
            const int64_t t = now_ns();
            if (t0 < 0) t0 = t;
            else if (t - t0 > bound) break;
        }
        POOL_PAUSE();
    }
    *bound_ns = bound / 4;
    return false;
}

static bool new_job(const qt_threadpool *tp, uint64_t seen) {
    return atomic_load_explicit(&tp->stop, memory_order_acquire) ||
           atomic_load_explicit(&tp->generation, memory_order_acquire) != seen;
}

static bool all_done(const qt_threadpool *tp, uint64_t unused) {
    (void)unused;
    return atomic_load_explicit(&tp->pending, memory_order_acquire) == 0;
}

static int64_t spin_setting(void) {
    const char *v = getenv("QUANTA_POOL_SPIN_US");
    if (!v || !*v) return (int64_t)QT_POOL_SPIN_US * 1000;
    char *end = NULL;
    const long us = strtol(v, &end, 10);
    if (*end || us < 0 || us > 10000) return (int64_t)QT_POOL_SPIN_US * 1000; /* malformed: the default */
    return (int64_t)us * 1000;
}

typedef struct { qt_threadpool *tp; int index; } worker_arg;

/* A balanced job: thread `index` claims grains from the front of its own share first (so it
 * streams that share in order, as with one chunk), then from the others' shares in turn. A
 * claim is one fetch-add on the share's cursor; claims past the share's end are void, so
 * every unit runs exactly once. A thread the OS has not yet run (asleep, preempted on a busy
 * machine) thus costs the job only its start-up latency: the others take its share grain
 * by grain, and it finds nothing left (the caller still waits for it, as the job's context
 * lives on the caller's stack). */
static void run_balanced(qt_threadpool *tp, int index, int64_t per) {
    for (int k = 0; k < tp->n_threads; k++) {
        const int v = (index + k) % tp->n_threads;
        const int64_t end = per * (v + 1) < tp->n ? per * (v + 1) : tp->n;
        for (;;) {
            const int64_t b = atomic_fetch_add_explicit(&tp->cursor[v].next, tp->grain, memory_order_relaxed);
            if (b >= end) break;
            tp->fn(tp->ctx, b, b + tp->grain < end ? b + tp->grain : end, index);
        }
    }
}

static void run_chunk(qt_threadpool *tp, int index) {
    int64_t per = (tp->n + tp->n_threads - 1) / tp->n_threads;
    if (tp->grain > 0) {
        run_balanced(tp, index, per);
        return;
    }
    int64_t begin = per * index, end = begin + per;
    if (end > tp->n) end = tp->n;
    if (begin < end) tp->fn(tp->ctx, begin, end, index);
}

static void *worker_main(void *p) {
    worker_arg a = *(worker_arg *)p;
    free(p);
    qt_threadpool *tp = a.tp;
    uint64_t seen = 0;
    int64_t bound = tp->spin_ns;
    for (;;) {
        if (!spin_until(tp, new_job, seen, &bound)) {
            pthread_mutex_lock(&tp->mu);
            while (!new_job(tp, seen)) pthread_cond_wait(&tp->start_cv, &tp->mu);
            pthread_mutex_unlock(&tp->mu);
        }
        if (atomic_load_explicit(&tp->stop, memory_order_acquire)) break;
        seen = atomic_load_explicit(&tp->generation, memory_order_acquire);
        run_chunk(tp, a.index);
        if (atomic_fetch_sub_explicit(&tp->pending, 1, memory_order_acq_rel) == 1) {
            /* under the mutex: a caller that saw pending > 0 holding it is then already waiting */
            pthread_mutex_lock(&tp->mu);
            pthread_cond_signal(&tp->done_cv);
            pthread_mutex_unlock(&tp->mu);
        }
    }
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
    /* more threads than CPUs: a poller holds the core the thread it waits for needs */
    tp->spin_ns = tp->caller_spin_ns = n_threads > qt_default_threads() ? 0 : spin_setting();
    pthread_mutex_init(&tp->mu, NULL);
    pthread_cond_init(&tp->start_cv, NULL);
    pthread_cond_init(&tp->done_cv, NULL);
    tp->workers = calloc((size_t)n_threads, sizeof *tp->workers);
    tp->cursor = aligned_alloc(64, (size_t)n_threads * sizeof *tp->cursor);
    if (!tp->workers || !tp->cursor) {
        free(tp->workers);
        free(tp->cursor);
        free(tp);
        return qt_error(QT_ERR_NOMEM, "thread pool: out of memory");
    }
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
    atomic_store_explicit(&tp->stop, true, memory_order_release);
    pthread_cond_broadcast(&tp->start_cv);
    pthread_mutex_unlock(&tp->mu);
    for (int i = 1; i < tp->n_threads; i++) pthread_join(tp->workers[i - 1], NULL);
    pthread_mutex_destroy(&tp->mu);
    pthread_cond_destroy(&tp->start_cv);
    pthread_cond_destroy(&tp->done_cv);
    free(tp->workers);
    free(tp->cursor);
    free(tp);
}

int qt_threadpool_size(const qt_threadpool *tp) { return tp ? tp->n_threads : 1; }

static void run_job(qt_threadpool *tp, int64_t n, int64_t grain, qt_range_fn fn, void *ctx) {
    /* no worker reads these until it sees the new generation (release / acquire) */
    tp->fn = fn;
    tp->ctx = ctx;
    tp->n = n;
    tp->grain = grain;
    if (grain > 0) {
        const int64_t per = (n + tp->n_threads - 1) / tp->n_threads;
        for (int i = 0; i < tp->n_threads; i++) atomic_store_explicit(&tp->cursor[i].next, per * i, memory_order_relaxed);
    }
    atomic_store_explicit(&tp->pending, tp->n_threads - 1, memory_order_relaxed);
    /* the store and the broadcast under the mutex: a worker that checked the generation under it
     * and found it unchanged is already waiting, so it is woken */
    pthread_mutex_lock(&tp->mu);
    atomic_fetch_add_explicit(&tp->generation, 1, memory_order_release);
    pthread_cond_broadcast(&tp->start_cv);
    pthread_mutex_unlock(&tp->mu);
    run_chunk(tp, 0);
    if (spin_until(tp, all_done, 0, &tp->caller_spin_ns)) return;
    pthread_mutex_lock(&tp->mu);
    while (!all_done(tp, 0)) pthread_cond_wait(&tp->done_cv, &tp->mu);
    pthread_mutex_unlock(&tp->mu);
}

void qt_parallel_for(qt_threadpool *tp, int64_t n, qt_range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (!tp || tp->n_threads == 1 || n == 1) {
        fn(ctx, 0, n, 0);
        return;
    }
    run_job(tp, n, 0, fn, ctx);
}

void qt_parallel_for_balanced(qt_threadpool *tp, int64_t n, int64_t grain, qt_range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (!tp || tp->n_threads == 1 || n == 1) {
        fn(ctx, 0, n, 0);
        return;
    }
    run_job(tp, n, grain > 0 ? grain : 1, fn, ctx);
}
