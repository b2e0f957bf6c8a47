/* lib/bench/bench.c — timing the engine: prefill, time to first token,
 * inter-token latencies, medians over reps, and the bandwidth a decode step
 * implies (quanta/bench.h, docs/performance.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quanta/bench.h"
#include "quanta/formats.h"
#include "quanta/gguf.h"
#include "bench_internal.h"

qt_bench_opts qt_bench_opts_default(void) {
    qt_bench_opts o;
    memset(&o, 0, sizeof o);
    o.n_prompt = 512;
    o.n_gen = 128;
    o.reps = 3;
    o.kv_type = QT_KV_TYPE_F16;
    o.seed = 1;
    return o;
}

uint64_t qt_bench_weight_bytes_per_token(const qt_model *m) {
    const bool tied = qt_model_find_tensor(m, "output.weight") == NULL;
    uint64_t b = 0;
    for (int32_t i = 0; i < qt_model_n_tensors(m); i++) {
        const qt_tensor *t = qt_model_tensor(m, i);
        bool embd = !strcmp(t->name, "token_embd.weight");
        b += embd && !tied ? qt_row_size(t->type, t->ne[0]) : t->nbytes;
    }
    return b;
}

/* Process CPU seconds (all threads): what a decode step costs on a shared machine, where
 * wall time also counts other processes' turns on the cores. */
static double process_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* qt_bench_engine_run, and the process CPU seconds of its prompt in *prefill_cpu_s and of its
 * decode steps in *decode_cpu_s. */
static qt_status engine_run(qt_engine_ctx *e, const int32_t *prompt, int32_t n_prompt, int32_t n_gen, double *prefill_s,
                            double *itl_s, double *prefill_cpu_s, double *decode_cpu_s) {
    if (n_prompt < 1 || n_gen < 0) return qt_error(QT_ERR_ARG, "bench: %d prompt tokens, %d generated", n_prompt, n_gen);
    const int32_t n_vocab = qt_engine_n_vocab(e);
    float *row = malloc(sizeof(float) * (size_t)n_vocab);
    qt_sampler *greedy = NULL;
    qt_sampler_opts so = {.temp = 0, .top_k = 0, .top_p = 1.0f}; /* greedy */
    qt_status s = row ? qt_sampler_new(&so, n_vocab, &greedy) : qt_error(QT_ERR_NOMEM, "bench: out of memory");
    if (s == QT_OK) {
        qt_engine_reset(e);
        double t0 = qt__now_s(), c0 = process_cpu_s();
        s = qt_engine_eval(e, prompt, n_prompt, n_prompt - 1, row);
        *prefill_s = qt__now_s() - t0;
        *prefill_cpu_s = process_cpu_s() - c0;
    }
    *decode_cpu_s = 0;
    for (int32_t i = 0; i < n_gen && s == QT_OK; i++) {
        int32_t tok = qt_sampler_sample(greedy, row);
        double t0 = qt__now_s(), c0 = process_cpu_s();
        s = qt_engine_eval(e, &tok, 1, 0, row);
        *decode_cpu_s += process_cpu_s() - c0;
        itl_s[i] = qt__now_s() - t0;
        if (qt_cancelled()) s = qt_error(QT_ERR_INTERRUPTED, "bench: interrupted");
    }
    qt_sampler_free(greedy);
    free(row);
    return s;
}

qt_status qt_bench_engine_run(qt_engine_ctx *e, const int32_t *prompt, int32_t n_prompt, int32_t n_gen,
                              double *prefill_s, double *itl_s) {
    double pcpu, cpu;
    return engine_run(e, prompt, n_prompt, n_gen, prefill_s, itl_s, &pcpu, &cpu);
}

static double sd(const double *v, int n) {
    if (n < 2) return 0;
    double mean = 0, ss = 0;
    for (int i = 0; i < n; i++) mean += v[i] / n;
    for (int i = 0; i < n; i++) ss += (v[i] - mean) * (v[i] - mean);
    return sqrt(ss / (n - 1));
}

/* Nearest-rank percentile of sorted v. */
static double percentile(const double *sorted, int64_t n, double p) {
    int64_t k = (int64_t)ceil(p / 100.0 * (double)n);
    return sorted[k < 1 ? 0 : k > n ? n - 1 : k - 1];
}

static void describe(const qt_model *m, qt_bench_result *r) {
    uint64_t per_type[QT_TYPE_COUNT] = {0};
    qt_type best = QT_TYPE_F32;
    for (int32_t i = 0; i < qt_model_n_tensors(m); i++) {
        const qt_tensor *t = qt_model_tensor(m, i);
        uint64_t n = 1;
        for (int d = 0; d < t->n_dims; d++) n *= (uint64_t)t->ne[d];
        r->model_bytes += t->nbytes;
        if (t->n_dims >= 2 && t->type < QT_TYPE_COUNT && (per_type[t->type] += n) > per_type[best]) best = t->type;
    }
    snprintf(r->type_name, sizeof r->type_name, "%s", qt_type_get(best)->name);
    int32_t ft;
    const qt_gguf *g = qt_model_gguf(m);
    const qt_gguf_ftype_info *fi = g && qt_gguf_get_i32(g, "general.file_type", &ft) == QT_OK ? qt_gguf_ftype_by_id(ft) : NULL;
    snprintf(r->file_type, sizeof r->file_type, "%s", fi ? fi->name : "");
    snprintf(r->arch, sizeof r->arch, "%s", qt_model_hparams(m)->arch_name);
    r->n_params = qt_model_n_params(m);
    r->weight_bytes = qt_bench_weight_bytes_per_token(m);
}

typedef struct bench_bufs {
    int32_t *prompt;
    double *itl;      /* (reps + 1) x n_gen: the warm-up row first */
    double *pp, *tg, *ttft, *tg_cpu, *pp_cpu;
} bench_bufs;

static qt_status timed_reps(qt_engine_ctx *e, const qt_bench_opts *o, bench_bufs *b, qt_bench_result *r) {
    qt_status s = QT_OK;
    for (int32_t k = 0; k <= o->reps && s == QT_OK; k++) { /* k == 0: warm-up (weights paged in), not counted */
        qt_progress_report(&o->progress, "bench", k, o->reps + 1);
        double pre = 0, dec = 0, pcpu = 0, cpu = 0, *itl = b->itl + (size_t)k * (size_t)o->n_gen;
        s = engine_run(e, b->prompt, o->n_prompt, o->n_gen, &pre, itl, &pcpu, &cpu);
        for (int32_t i = 0; i < o->n_gen; i++) dec += itl[i];
        if (k == 0) continue;
        b->pp[k - 1] = o->n_prompt / fmax(pre, 1e-12);
        b->tg[k - 1] = o->n_gen > 0 ? o->n_gen / fmax(dec, 1e-12) : NAN;
        b->ttft[k - 1] = pre * 1e3;
        b->tg_cpu[k - 1] = o->n_gen > 0 ? o->n_gen / fmax(cpu, 1e-12) : NAN;
        b->pp_cpu[k - 1] = o->n_prompt / fmax(pcpu, 1e-12);
    }
    if (s != QT_OK) return s;
    qt_progress_report(&o->progress, "bench", o->reps + 1, o->reps + 1);
    r->prefill_tps_sd = sd(b->pp, o->reps);
    r->decode_tps_sd = sd(b->tg, o->reps);
    r->prefill_tps = qt__median(b->pp, o->reps);
    r->decode_tps = qt__median(b->tg, o->reps);
    r->decode_tps_cpu = qt__median(b->tg_cpu, o->reps);
    r->prefill_tps_cpu = qt__median(b->pp_cpu, o->reps);
    r->ttft_ms = qt__median(b->ttft, o->reps);
    const int64_t n_itl = (int64_t)o->reps * o->n_gen;
    double *itl = b->itl + o->n_gen;
    for (int64_t i = 0; i < n_itl; i++) itl[i] *= 1e3;
    qt__median(itl, (int)n_itl); /* sorts */
    r->itl_p50_ms = n_itl ? percentile(itl, n_itl, 50) : NAN;
    r->itl_p99_ms = n_itl ? percentile(itl, n_itl, 99) : NAN;
    return QT_OK;
}

qt_status qt_bench_model(const qt_model *m, const qt_bench_opts *opts, qt_bench_result *r) {
    qt_bench_opts o = opts ? *opts : qt_bench_opts_default();
    memset(r, 0, sizeof *r);
    if (o.n_prompt < 1 || o.n_gen < 0 || o.reps < 1)
        return qt_error(QT_ERR_ARG, "bench: -p %d, -n %d, -r %d: need at least one prompt token and one rep", o.n_prompt,
                        o.n_gen, o.reps);
    describe(m, r);
    qt_engine_opts eo;
    qt_engine_opts_default(&eo);
    eo.n_ctx = o.n_prompt + o.n_gen + 1;
    eo.n_threads = o.threads;
    eo.kv_type = o.kv_type;
    qt_engine_ctx *e = NULL;
    qt_status s = qt_engine_new(m, &eo, &e);
    if (s != QT_OK) return s;
    bench_bufs b = {0};
    b.prompt = malloc(sizeof *b.prompt * (size_t)o.n_prompt);
    b.itl = malloc(sizeof *b.itl * (size_t)(o.reps + 1) * (size_t)(o.n_gen ? o.n_gen : 1));
    b.pp = malloc(sizeof(double) * 5 * (size_t)o.reps);
    if (!b.prompt || !b.itl || !b.pp) s = qt_error(QT_ERR_NOMEM, "bench: out of memory");
    else {
        b.tg = b.pp + o.reps;
        b.ttft = b.tg + o.reps;
        b.tg_cpu = b.ttft + o.reps;
        b.pp_cpu = b.tg_cpu + o.reps;
        uint64_t x = o.seed; /* splitmix64: uniform token ids, as llama-bench's random prompt */
        const int32_t n_vocab = qt_engine_n_vocab(e);
        for (int32_t i = 0; i < o.n_prompt; i++) {
            uint64_t z = (x += 0x9E3779B97F4A7C15ull);
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            b.prompt[i] = (int32_t)((z ^ (z >> 31)) % (uint64_t)n_vocab);
        }
        s = timed_reps(e, &o, &b, r);
    }
    r->n_prompt = o.n_prompt;
    r->n_gen = o.n_gen;
    r->reps = o.reps;
    r->threads = o.threads > 0 ? o.threads : qt_default_threads();
    r->peak_rss_bytes = qt_bench_peak_rss();
    r->read_gbps = (double)r->weight_bytes * r->decode_tps / 1e9;
    r->read_gb_per_cpu_s = (double)r->weight_bytes * r->decode_tps_cpu / 1e9;
    r->bandwidth_ratio = o.machine_read_gbps > 0 ? r->read_gbps / o.machine_read_gbps : NAN;
    free(b.prompt);
    free(b.itl);
    free(b.pp);
    qt_engine_free(e);
    return s;
}

qt_status qt_bench_file(const char *path, const qt_bench_opts *o, qt_bench_result *r) {
    const bool reset = qt_bench_reset_peak_rss();
    qt_model *m;
    qt_status s = qt_model_open(path, &m);
    if (s != QT_OK) return s;
    s = qt_bench_model(m, o, r);
    r->peak_rss_is_model = reset;
    qt_model_free(m);
    return s;
}
