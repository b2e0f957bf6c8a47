/* bench/bench_util.h — what every benchmark shares: a monotonic clock, the
 * median of repeated runs, page-faulted allocation, and the machine's
 * single-thread memory read bandwidth (the yardstick for memory-bound
 * kernels). Header-only: each bench_*.c is its own program. */
#ifndef QT_BENCH_UTIL_H
#define QT_BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_REPS 101

static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU seconds of the calling thread: on a machine shared with other work,
 * a single-threaded kernel's cost without the time it waited for a core. */
static inline double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static inline void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "bench: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    memset(p, 0, n); /* fault the pages in before timing */
    return p;
}

/* ---- memory read bandwidth ---------------------------------------------------- */

static inline double read_bandwidth_gbps(int reps) {
    const size_t bytes = (size_t)256 << 20;
    const size_t n = bytes / sizeof(uint64_t);
    uint64_t *buf = xmalloc(bytes);
    for (size_t i = 0; i < n; i++) buf[i] = i;
    double t[MAX_REPS];
    volatile uint64_t sink = 0;
    for (int r = 0; r < reps; r++) {
        const double t0 = now_s();
        /* four independent integer sums: the compiler vectorises them (integer
         * addition is associative), so the loop is limited by memory, not adds */
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (size_t i = 0; i < n; i += 4) {
            s0 += buf[i];
            s1 += buf[i + 1];
            s2 += buf[i + 2];
            s3 += buf[i + 3];
        }
        t[r] = now_s() - t0;
        sink += s0 + s1 + s2 + s3;
    }
    (void)sink;
    free(buf);
    return (double)bytes / median(t, reps) / 1e9;
}

#endif
