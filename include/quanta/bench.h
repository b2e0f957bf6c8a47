/* quanta/bench.h — speed measurement of the engine (`quanta bench`, the
 * speed columns of `quanta eval`; docs/performance.md).
 *
 * Decode on a CPU is bound by memory bandwidth: every generated token reads
 * every weight once. So beside tokens per second the bench reports the
 * weight bytes a token reads, the bandwidth that implies, and its ratio to
 * the machine's read bandwidth, which it measures itself (a streaming read
 * with all threads over a buffer much larger than the last-level cache).
 * Results are medians over repetitions. Nothing here is ever asserted in a
 * test: tests check structure, counts and signs only.
 */
#ifndef QUANTA_BENCH_H
#define QUANTA_BENCH_H

#include "core.h"
#include "engine.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the machine ----------------------------------------------------------- */

typedef struct qt_bandwidth {
    double read_gbps;        /* median over reps: bytes / seconds / 1e9 */
    double read_gbps_max;    /* the best rep */
    uint64_t buffer_bytes;   /* the buffer read */
    uint64_t llc_bytes;      /* the last-level cache the OS reports (0: unknown) */
    int threads;
    int reps;
} qt_bandwidth;

/* Reads a buffer of `bytes` (0: max(1 GiB, 8 x the last-level cache)) with
 * `threads` threads (<= 0: all CPUs), each thread a contiguous slice, `reps`
 * times (<= 0: 5) after one untimed pass. */
QT_API qt_status qt_bench_read_bandwidth(uint64_t bytes, int threads, int reps, qt_bandwidth *out);

/* VmHWM of this process (bytes; 0 if /proc is unavailable), and resetting it
 * (writes 5 to /proc/self/clear_refs; false where the kernel refuses). */
QT_API uint64_t qt_bench_peak_rss(void);
QT_API bool qt_bench_reset_peak_rss(void);

/* ---- one engine --------------------------------------------------------------- */

/* Weight bytes one decode step reads: every tensor, except that an untied
 * token embedding contributes one row (a tied one is read whole by the output
 * projection). */
QT_API uint64_t qt_bench_weight_bytes_per_token(const qt_model *m);

/* One timed run from an empty cache: the prompt in one qt_engine_eval (its
 * time, up to the logits of the last prompt token, is the time to first
 * token), then n_gen greedy decode steps, each timed (inter-token latencies,
 * itl_s[n_gen], seconds). The engine's context must hold n_prompt + n_gen. */
QT_API qt_status qt_bench_engine_run(qt_engine_ctx *e, const int32_t *prompt, int32_t n_prompt, int32_t n_gen,
                                     double *prefill_s, double *itl_s);

/* ---- one model ---------------------------------------------------------------- */

typedef struct qt_bench_opts {
    int32_t n_prompt;        /* prompt tokens (default 512) */
    int32_t n_gen;           /* generated tokens (default 128) */
    int32_t reps;            /* repetitions (default 3), after one warm-up run */
    int threads;             /* <= 0: all CPUs */
    qt_kv_type kv_type;      /* default f16 */
    double machine_read_gbps;/* from qt_bench_read_bandwidth; 0: bandwidth_ratio is NAN */
    uint64_t seed;           /* the prompt's token ids (uniform over the vocabulary) */
    qt_progress progress;
} qt_bench_opts;

QT_API qt_bench_opts qt_bench_opts_default(void);

typedef struct qt_bench_result {
    double prefill_tps, prefill_tps_sd;  /* median and standard deviation over reps */
    double decode_tps, decode_tps_sd;
    double decode_tps_cpu;               /* median decode tokens per process CPU-second (all threads'
                                            CPU time over the decode steps): the cost per token on a
                                            shared machine, where wall time counts others' turns too */
    double prefill_tps_cpu;              /* median prompt tokens per process CPU-second of the prompt's
                                            one batch (all threads, as decode_tps_cpu) */
    double ttft_ms;                      /* median prompt time */
    double itl_p50_ms, itl_p99_ms;       /* over every decode step of every rep */
    uint64_t peak_rss_bytes;             /* VmHWM after the runs */
    bool peak_rss_is_model;              /* true: the high-water mark was reset just before the model
                                            was opened (qt_bench_file), so it is this model's alone */
    uint64_t weight_bytes;               /* read per token: qt_bench_weight_bytes_per_token */
    uint64_t model_bytes;                /* all tensor data */
    uint64_t n_params;
    double read_gbps;                    /* weight_bytes x decode_tps / 1e9 */
    double read_gb_per_cpu_s;            /* weight_bytes x decode_tps_cpu / 1e9 */
    double bandwidth_ratio;              /* read_gbps / machine_read_gbps */
    char type_name[16];                  /* the type of most weight elements ("q4_K") */
    char file_type[16];                  /* GGUF general.file_type by name ("Q4_K_M"); "" when none */
    char arch[32];
    int32_t n_prompt, n_gen, reps, threads;
} qt_bench_result;

/* Benchmarks a model already open (peak RSS is the process's). */
QT_API qt_status qt_bench_model(const qt_model *m, const qt_bench_opts *o, qt_bench_result *out);
/* Resets the peak RSS, opens path, benchmarks it, closes it. */
QT_API qt_status qt_bench_file(const char *path, const qt_bench_opts *o, qt_bench_result *out);

#ifdef __cplusplus
}
#endif
#endif
