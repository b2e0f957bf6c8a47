/* bench_pool — what one qt_parallel_for costs beyond its work: the thread
 * pool's hand-off (lib/core/threads.c), with the waiting threads sleeping at
 * once (QUANTA_POOL_SPIN_US=0) and spinning first (the default bound).
 *
 * A decode step of a 1B model is ~80 jobs (q/k/v, attention output, gate/up,
 * down per layer, the output matrix) a few microseconds of serial work apart;
 * here each job is --units units of --work-us microseconds of arithmetic
 * split over the pool's threads, with --gap-us of serial arithmetic between
 * jobs. Per spin setting it prints, as JSON, the median over --reps of the
 * wall microseconds per job, the ideal (the units' work divided over the
 * threads, plus the gap), the overhead (wall - ideal) and the process CPU
 * microseconds per job (spinning costs CPU time; sleeping costs wake-ups).
 * On a machine shared with other work the wall figures include waiting for
 * a core: compare the two settings in one run.
 *
 *   bench_pool [-t THREADS] [--jobs N] [--units N] [--work-us US] [--gap-us US] [--reps N]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quanta.h"
#include "bench_util.h"

static double proc_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile double sink;
static long iters_per_us = 1;

/* About us microseconds of dependent floating-point work on this thread. */
static void work(double us) {
    double x = 1.0;
    const long n = (long)(us * (double)iters_per_us);
    for (long i = 0; i < n; i++) x = x * 0.999999 + 1e-7;
    sink = x;
}

static void calibrate(void) {
    iters_per_us = 1000;
    double best = 1e9;
    for (int r = 0; r < 5; r++) { /* the fastest of five: the least disturbed */
        const double t0 = thread_cpu_s();
        work(10000.0);
        const double dt = thread_cpu_s() - t0;
        if (dt < best) best = dt;
    }
    iters_per_us = (long)(1000.0 * 10000.0 / (best * 1e6));
    if (iters_per_us < 1) iters_per_us = 1;
}

typedef struct { double unit_us; } job;

static void run_units(void *ctx, int64_t u0, int64_t u1, int ti) {
    (void)ti;
    const job *j = ctx;
    for (int64_t u = u0; u < u1; u++) work(j->unit_us);
}

int main(int argc, char **argv) {
    int threads = 2, jobs = 800, units = 64, reps = 7;
    double work_us = 400.0, gap_us = 5.0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--jobs") && i + 1 < argc) jobs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--units") && i + 1 < argc) units = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--work-us") && i + 1 < argc) work_us = atof(argv[++i]);
        else if (!strcmp(argv[i], "--gap-us") && i + 1 < argc) gap_us = atof(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_pool [-t THREADS] [--jobs N] [--units N] [--work-us US] [--gap-us US] "
                            "[--reps N (1-%d)]\n", MAX_REPS);
            return 2;
        }
    }
    if (threads < 2 || jobs < 1 || units < 1 || reps < 1 || reps > MAX_REPS || work_us < 0 || gap_us < 0) {
        fprintf(stderr, "bench_pool: need -t >= 2, --jobs/--units >= 1, --reps 1-%d, times >= 0\n", MAX_REPS);
        return 2;
    }
    calibrate();
    const char *settings[] = {"0", NULL}; /* NULL: the default bound */
    const char *before = getenv("QUANTA_POOL_SPIN_US");
    job j = {work_us / units};
    const int64_t per = (units + threads - 1) / threads; /* the largest chunk qt_parallel_for hands out */
    const double ideal = (double)per * j.unit_us + gap_us;
    printf("{\n  \"threads\": %d, \"jobs\": %d, \"units\": %d, \"work_us\": %.1f, \"gap_us\": %.1f, \"reps\": %d,\n"
           "  \"ideal_us_per_job\": %.2f,\n  \"results\": [",
           threads, jobs, units, work_us, gap_us, reps, ideal);
    for (int s = 0; s < 2; s++) {
        if (settings[s]) setenv("QUANTA_POOL_SPIN_US", settings[s], 1);
        else if (before) setenv("QUANTA_POOL_SPIN_US", before, 1);
        else unsetenv("QUANTA_POOL_SPIN_US");
        qt_threadpool *tp = NULL;
        if (qt_threadpool_create(threads, &tp) != QT_OK) {
            fprintf(stderr, "bench_pool: %s\n", qt_last_error());
            return 1;
        }
        double wall[MAX_REPS], cpu[MAX_REPS];
        for (int r = 0; r < reps; r++) {
            const double w0 = now_s(), c0 = proc_cpu_s();
            for (int k = 0; k < jobs; k++) {
                qt_parallel_for(tp, units, run_units, &j);
                work(gap_us);
            }
            wall[r] = (now_s() - w0) * 1e6 / jobs;
            cpu[r] = (proc_cpu_s() - c0) * 1e6 / jobs;
        }
        qt_threadpool_free(tp);
        const double wm = median(wall, reps), cm = median(cpu, reps);
        printf("%s\n    {\"spin\": \"%s\", \"wall_us_per_job\": %.2f, \"overhead_us_per_job\": %.2f, "
               "\"cpu_us_per_job\": %.2f}",
               s ? "," : "", settings[s] ? "0 (sleep at once)" : "default", wm, wm - ideal, cm);
    }
    printf("\n  ]\n}\n");
    return 0;
}
