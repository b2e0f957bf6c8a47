/* lib/bench/bench_internal.h — small helpers shared by the bench files. */
#ifndef QT_BENCH_INTERNAL_H
#define QT_BENCH_INTERNAL_H

/* CLOCK_MONOTONIC in seconds. */
double qt__now_s(void);
/* Median of v[0..n) (sorts v); NAN when n is 0. */
double qt__median(double *v, int n);

#endif
