/* lib/bench/bandwidth.c — the machine's memory read bandwidth, measured as
 * the decode limit it is: every thread streams its own contiguous slice of a
 * buffer far larger than the last-level cache, summing 64-bit words in
 * 16-byte vectors (GCC vector extensions: baseline SSE2 on x86-64, and any
 * other target), four independent accumulators to keep loads in flight.
 * Medians over reps; the first pass (page faults, TLB) is not timed. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "quanta/bench.h"
#include "bench_internal.h"

typedef uint64_t u64x2 __attribute__((vector_size(16)));

/* Bytes read per chunk handed to a thread (the pool splits chunks into one contiguous range per thread). */
#define BW_CHUNK (1u << 20)

typedef struct bw_job {
    const u64x2 *buf;
    size_t chunk_vecs;
    uint64_t sums[256];   /* one per thread, so the reads cannot be optimised away */
} bw_job;

static void bw_range(void *ctx, int64_t begin, int64_t end, int thread_index) {
    bw_job *j = ctx;
    const u64x2 *p = j->buf + (size_t)begin * j->chunk_vecs, *e = j->buf + (size_t)end * j->chunk_vecs;
    u64x2 a = {0, 0}, b = a, c = a, d = a;
    for (; p + 4 <= e; p += 4) {
        a += p[0];
        b += p[1];
        c += p[2];
        d += p[3];
    }
    u64x2 t = a + b + c + d;
    j->sums[thread_index & 255] += t[0] + t[1];
}

double qt__now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double qt__median(double *v, int n) {
    if (n <= 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The last-level cache: sysconf, else sysfs (index3, then index2). */
static uint64_t llc_bytes(void) {
#ifdef _SC_LEVEL3_CACHE_SIZE
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l3 > 0) return (uint64_t)l3;
#endif
    for (int idx = 3; idx >= 2; idx--) {
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        unsigned long long v = 0;
        char unit = 0;
        int n = fscanf(f, "%llu%c", &v, &unit);
        fclose(f);
        if (n >= 1 && v > 0) return v * (unit == 'K' ? 1024ull : unit == 'M' ? 1048576ull : 1ull);
    }
    return 0;
}

qt_status qt_bench_read_bandwidth(uint64_t bytes, int threads, int reps, qt_bandwidth *out) {
    memset(out, 0, sizeof *out);
    out->llc_bytes = llc_bytes();
    if (!bytes) bytes = out->llc_bytes * 8 > (1ull << 30) ? out->llc_bytes * 8 : (1ull << 30);
    if (bytes < BW_CHUNK) return qt_error(QT_ERR_ARG, "bandwidth: a buffer of %llu bytes is below one chunk (%u bytes)",
                                          (unsigned long long)bytes, BW_CHUNK);
    bytes -= bytes % BW_CHUNK;
    if (reps <= 0) reps = 5;
    qt_threadpool *tp;
    qt_status s = qt_threadpool_create(threads, &tp);
    if (s != QT_OK) return s;
    bw_job j = {.chunk_vecs = BW_CHUNK / sizeof(u64x2)};
    void *buf = aligned_alloc(64, (size_t)bytes);
    double *t = malloc((size_t)reps * sizeof *t);
    if (!buf || !t) {
        free(buf);
        free(t);
        qt_threadpool_free(tp);
        return qt_error(QT_ERR_NOMEM, "bandwidth: cannot allocate %llu bytes", (unsigned long long)bytes);
    }
    memset(buf, 1, (size_t)bytes); /* real pages, not the shared zero page */
    j.buf = buf;
    const int64_t chunks = (int64_t)(bytes / BW_CHUNK);
    qt_parallel_for(tp, chunks, bw_range, &j);
    double best = INFINITY;
    for (int r = 0; r < reps; r++) {
        double t0 = qt__now_s();
        qt_parallel_for(tp, chunks, bw_range, &j);
        t[r] = qt__now_s() - t0;
        if (t[r] < best) best = t[r];
    }
    out->read_gbps = (double)bytes / qt__median(t, reps) / 1e9;
    out->read_gbps_max = (double)bytes / best / 1e9;
    out->buffer_bytes = bytes;
    out->threads = qt_threadpool_size(tp);
    out->reps = reps;
    uint64_t total = 0;
    for (int i = 0; i < 256; i++) total += j.sums[i];
    if (total == 42) out->reps = reps; /* uses the sums: the reads stay */
    free(t);
    free(buf);
    qt_threadpool_free(tp);
    return QT_OK;
}

uint64_t qt_bench_peak_rss(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %llu kB", &kb) == 1) break;
    fclose(f);
    return (uint64_t)kb * 1024;
}

bool qt_bench_reset_peak_rss(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}
