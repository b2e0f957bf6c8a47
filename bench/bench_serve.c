/* bench_serve — continuous batching's gain: the scheduler of `quanta serve`
 * (lib/serve/sched.c, no HTTP) runs the same set of jobs with 1, 2, 4 and 8
 * KV slots and reports output tokens per second and the ratio to 1 slot.
 * Every job: a 128-token prompt, 64 generated tokens (greedy, EOS ignored),
 * all submitted at once; 2 threads unless --threads. Figures are medians of --reps runs
 * (default 3). Prints one JSON document on stdout.
 *
 *   bench_serve [MODEL] [--jobs N] [--reps R] [--threads T]   MODEL default ../shared/models/stories260K.gguf
 *
 * With more slots every weight matrix is read once per step for all running
 * jobs (one matmul with B rows), so decode approaches bandwidth-bound
 * throughput times the batch; the tokens are the same at every slot count. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "quanta.h"

enum { PROMPT = 128, GEN = 64 };

typedef struct counter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
} counter;

static void on_token(void *u, int32_t t) { (void)u, (void)t; }
static void on_done(void *u, qt_sched_finish why, int32_t np, int32_t ng, const char *err) {
    counter *c = u;
    (void)why, (void)np, (void)ng, (void)err;
    pthread_mutex_lock(&c->mu);
    c->done++;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Seconds to run n_jobs jobs on an engine with n_seq slots. */
static int n_threads = 2;

static double run(const qt_model *m, int n_seq, int n_jobs, int32_t eos) {
    qt_engine_opts o;
    qt_engine_opts_default(&o);
    o.n_ctx = PROMPT + GEN;
    o.n_seq = n_seq;
    o.n_threads = n_threads;
    qt_engine_ctx *e;
    qt_sched *s;
    if (qt_engine_new(m, &o, &e) != QT_OK) return -1;
    qt_sched_opts so = {.max_queue = n_jobs};
    if (qt_sched_new(e, eos, &so, &s) != QT_OK) return -1;
    counter c = {.done = 0};
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    int32_t prompt[PROMPT];
    const double t0 = now_s();
    for (int j = 0; j < n_jobs; j++) {
        for (int i = 0; i < PROMPT; i++) prompt[i] = 1 + (j * 37 + i * 11) % (qt_engine_n_vocab(e) - 1);
        qt_sched_job job = {.prompt = prompt, .n_prompt = PROMPT, .max_tokens = GEN, .ignore_eos = true,
                            .sampling = {.temp = 0, .top_p = 1}, .on_token = on_token, .on_done = on_done, .user = &c};
        uint64_t id;
        if (qt_sched_submit(s, &job, &id) != QT_OK) return -1;
    }
    pthread_mutex_lock(&c.mu);
    while (c.done < n_jobs) pthread_cond_wait(&c.cv, &c.mu);
    pthread_mutex_unlock(&c.mu);
    const double t = now_s() - t0;
    qt_sched_free(s);
    qt_engine_free(e);
    return t;
}

int main(int argc, char **argv) {
    const char *path = "../shared/models/stories260K.gguf";
    int n_jobs = 16, reps = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--jobs") && i + 1 < argc) n_jobs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) n_threads = atoi(argv[++i]);
        else path = argv[i];
    }
    if (reps < 1 || reps > MAX_REPS || n_jobs < 1 || n_threads < 1)
        return fprintf(stderr, "bench_serve: bad --jobs, --reps or --threads\n"), 2;
    qt_model *m;
    if (qt_model_open(path, &m) != QT_OK) {
        printf("{\"bench\": \"serve\", \"skipped\": \"%s\"}\n", qt_last_error());
        return 0;
    }
    const int slots[] = {1, 2, 4, 8};
    double tps[4];
    printf("{\"bench\": \"serve\", \"model\": \"%s\", \"jobs\": %d, \"prompt_tokens\": %d, \"output_tokens\": %d, "
           "\"threads\": %d, \"reps\": %d, \"levels\": [",
           path, n_jobs, PROMPT, GEN, n_threads, reps);
    for (int k = 0; k < 4; k++) {
        double t[MAX_REPS];
        for (int r = 0; r < reps; r++) t[r] = run(m, slots[k], n_jobs, qt_model_vocab(m)->eos_id);
        const double sec = median(t, reps);
        tps[k] = sec > 0 ? (double)n_jobs * GEN / sec : 0;
        printf("%s\n  {\"parallel\": %d, \"seconds\": %.4f, \"output_tokens_per_s\": %.1f, \"vs_parallel_1\": %.3f}",
               k ? "," : "", slots[k], sec, tps[k], tps[0] > 0 ? tps[k] / tps[0] : 0);
    }
    printf("\n]}\n");
    qt_model_free(m);
    return 0;
}
