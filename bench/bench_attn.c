/* bench_attn — one layer's attention at decode (one token at the end of a
 * context of 512, 2048 or 8192 keys) on Llama-3.2-1B's shape (32 query heads,
 * 8 KV heads, head_dim 64), for every KV-cache format, with
 *   llama: --numerics llama's path (forward.c: ggml's sequential online softmax,
 *          one (row, head) item per thread, K/V rows through the scalar load_*;
 *          before the split-K kernels this was the only path, in both modes);
 *   fast:  --numerics fast (attn.c: split-K blocks of QT_ATTN_BLOCK keys, the
 *          cache read in its format by this CPU's kernels);
 *   fast_scalar: the same with the scalar reference kernels.
 * on 1 and 2 threads. Prints one JSON document: per case the median over --reps
 * of the process CPU seconds (all threads, user + sys) and the wall seconds of
 * one call, and the KV bytes read per second of wall time. On a machine shared
 * with other work, compare CPU times (and ratios within one run), not walls.
 * With --prefill each context is instead a prompt of that many tokens in one
 * batch (rows at positions 0 .. ctx-1, a prefill's attention), and each case
 * also reports its multiply-adds as GFLOP per CPU second (QK and PV, 2 flops each).
 *
 *   bench_attn [--reps N] [--ctx N] [--prefill] [--kv F] [--fast-only]
 *   (--ctx: one context length instead of the three; --kv: one KV format, its name as
 *   --kv-dtype prints it; --fast-only: no llama mode, the slow one at --prefill)
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "engine/attn.h"
#include "engine/engine_internal.h"
#include "quanta.h"

enum { N_HEAD = 32, N_HEAD_KV = 8, HEAD_DIM = 64, MAX_THREADS = 2 };

static double process_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int prefill; /* --prefill: ctx rows at positions 0 .. ctx-1 instead of one at ctx-1 */

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float frand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((double)(rng >> 11) * 0x1.0p-52 - 1.0);
}

/* A one-layer engine holding only what attention reads: cache, scales, Q, rows, scratch. */
static void setup(qt_engine_ctx *e, qt_kv_type kv, int32_t ctx) {
    memset(e, 0, sizeof *e);
    e->hp.n_layer = 1, e->hp.n_head = N_HEAD, e->hp.n_head_kv = N_HEAD_KV, e->hp.head_dim = HEAD_DIM;
    e->n_q = N_HEAD * HEAD_DIM, e->n_kv = N_HEAD_KV * HEAD_DIM, e->n_rep = N_HEAD / N_HEAD_KV;
    e->kq_scale = 1.0f / sqrtf((float)HEAD_DIM);
    e->n_ctx = ctx, e->n_seq = 1, e->n_rows = prefill ? ctx : 1, e->n_threads = MAX_THREADS;
    e->kvf = qt__kv_format_get(kv);
    e->kv_slot_bytes = e->kv_layer_bytes = (size_t)ctx * e->n_kv * e->kvf->elem_bytes;
    e->k_cache = xmalloc(e->kv_layer_bytes);
    e->v_cache = xmalloc(e->kv_layer_bytes);
    float *row = xmalloc(HEAD_DIM * sizeof *row);
    if (e->kvf->scaled) {
        e->k_scale = xmalloc(N_HEAD_KV * sizeof(float));
        e->v_scale = xmalloc(N_HEAD_KV * sizeof(float));
        for (int h = 0; h < N_HEAD_KV; h++) e->k_scale[h] = e->v_scale[h] = 2.0f / e->kvf->max_value;
    }
    for (int32_t p = 0; p < ctx; p++)
        for (int32_t h = 0; h < N_HEAD_KV; h++) {
            const size_t off = ((size_t)p * e->n_kv + (size_t)h * HEAD_DIM) * e->kvf->elem_bytes;
            for (int d = 0; d < HEAD_DIM; d++) row[d] = frand();
            e->kvf->store(row, e->k_cache + off, HEAD_DIM, e->k_scale ? e->k_scale[h] : 1.0f);
            for (int d = 0; d < HEAD_DIM; d++) row[d] = frand();
            e->kvf->store(row, e->v_cache + off, HEAD_DIM, e->v_scale ? e->v_scale[h] : 1.0f);
        }
    free(row);
    const size_t nq = (size_t)e->n_rows * e->n_q;
    e->q = xmalloc(nq * sizeof(float));
    for (size_t i = 0; i < nq; i++) e->q[i] = frand();
    e->att = xmalloc(nq * sizeof(float));
    e->row_pos = xmalloc((size_t)e->n_rows * sizeof *e->row_pos);
    e->row_seq = xmalloc((size_t)e->n_rows * sizeof *e->row_seq);
    for (int32_t b = 0; b < e->n_rows; b++) e->row_pos[b] = prefill ? b : ctx - 1, e->row_seq[b] = 0;
    e->scratch = xmalloc(MAX_THREADS * sizeof *e->scratch);
    for (int t = 0; t < MAX_THREADS; t++) {
        e->scratch[t].kv_row = xmalloc(HEAD_DIM * sizeof(float));
        e->scratch[t].q_conv = xmalloc(HEAD_DIM * sizeof(float));
        e->scratch[t].acc = xmalloc(HEAD_DIM * sizeof(float));
    }
    if (qt__attn_init(e) != QT_OK) {
        fprintf(stderr, "bench_attn: %s\n", qt_last_error());
        exit(1);
    }
}

static void teardown(qt_engine_ctx *e) {
    qt__attn_free(e);
    for (int t = 0; t < MAX_THREADS; t++) {
        free(e->scratch[t].kv_row); free(e->scratch[t].q_conv); free(e->scratch[t].acc);
    }
    free(e->scratch); free(e->k_cache); free(e->v_cache); free(e->k_scale); free(e->v_scale);
    free(e->q); free(e->att); free(e->row_pos); free(e->row_seq);
}

static const qt__attn_kernels *reference(qt_kv_type kv) {
    for (const qt__attn_kernels *v = qt__attn_variants; v->kv != QT_KV_TYPE_COUNT; v++)
        if (v->kv == kv && v->level == QT__CPU_SCALAR) return v;
    return NULL;
}

/* Median CPU and wall seconds of one call over reps, each rep long enough to time. */
static void time_case(qt_engine_ctx *e, int reps, double *cpu, double *wall) {
    const int32_t B = e->n_rows;
    qt__engine_attention(e, 0, B); /* warm the caches and the pool */
    double t0 = now_s();
    int calls = 0;
    while (now_s() - t0 < 0.05 || calls < 2) qt__engine_attention(e, 0, B), calls++;
    double c[MAX_REPS], w[MAX_REPS];
    for (int r = 0; r < reps; r++) {
        const double c0 = process_cpu_s(), w0 = now_s();
        for (int i = 0; i < calls; i++) qt__engine_attention(e, 0, B);
        c[r] = (process_cpu_s() - c0) / calls;
        w[r] = (now_s() - w0) / calls;
    }
    *cpu = median(c, reps);
    *wall = median(w, reps);
}

int main(int argc, char **argv) {
    int reps = 5, fast_only = 0;
    const char *only_kv = NULL;
    int32_t ctxs[3] = {512, 2048, 8192}, n_ctx = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ctx") && i + 1 < argc) ctxs[0] = atoi(argv[++i]), n_ctx = 1;
        else if (!strcmp(argv[i], "--prefill")) prefill = 1;
        else if (!strcmp(argv[i], "--kv") && i + 1 < argc) only_kv = argv[++i];
        else if (!strcmp(argv[i], "--fast-only")) fast_only = 1;
        else {
            fprintf(stderr, "usage: bench_attn [--reps N] [--ctx N] [--prefill] [--kv F] [--fast-only]\n");
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    if (reps > MAX_REPS) reps = MAX_REPS;
    const qt_kv_type kvs[] = {QT_KV_TYPE_F32,      QT_KV_TYPE_F16,      QT_KV_TYPE_BF16,
                              QT_KV_TYPE_FP8_E4M3, QT_KV_TYPE_FP8_E5M2, QT_KV_TYPE_INT8};
    const char *modes[] = {"llama", "fast", "fast_scalar"};
    printf("{\n  \"bench\": \"%s\",\n  \"cpu_level\": \"%s\",\n  \"shape\": {\"n_head\": %d, \"n_head_kv\": %d, "
           "\"head_dim\": %d, \"block\": %d},\n  \"reps\": %d,\n  \"cases\": [",
           prefill ? "attn_prefill" : "attn", qt_cpu_level_name(), N_HEAD, N_HEAD_KV, HEAD_DIM, QT_ATTN_BLOCK, reps);
    int first = 1;
    for (int ci = 0; ci < n_ctx; ci++)
        for (size_t ki = 0; ki < sizeof kvs / sizeof kvs[0]; ki++) {
            if (only_kv && strcmp(only_kv, qt_kv_type_name(kvs[ki]))) continue;
            qt_engine_ctx e;
            setup(&e, kvs[ki], ctxs[ci]);
            const qt__attn_kernels *best = e.attn;
            for (int threads = 1; threads <= MAX_THREADS; threads++) {
                if (qt_threadpool_create(threads, &e.pool) != QT_OK) return 1;
                for (int m = fast_only; m < 3; m++) {
                    e.opts.numerics = m ? QT_NUMERICS_FAST : QT_NUMERICS_LLAMA;
                    e.attn = m == 2 ? reference(kvs[ki]) : best;
                    double cpu, wall;
                    time_case(&e, reps, &cpu, &wall);
                    const double bytes = 2.0 * e.kv_layer_bytes;
                    double keys = 0;
                    for (int32_t b = 0; b < e.n_rows; b++) keys += e.row_pos[b] + 1;
                    const double flops = 4.0 * keys * N_HEAD * HEAD_DIM;
                    printf("%s\n    {\"kv\": \"%s\", \"ctx\": %d, \"rows\": %d, \"threads\": %d, \"mode\": \"%s\", "
                           "\"cpu_us\": %.1f, \"wall_us\": %.1f, \"kv_gbps\": %.2f, \"gflop_per_cpu_s\": %.2f}",
                           first ? "" : ",", qt_kv_type_name(kvs[ki]), ctxs[ci], e.n_rows, threads, modes[m], cpu * 1e6,
                           wall * 1e6, bytes / wall / 1e9, flops / cpu / 1e9);
                    first = 0;
                    fflush(stdout);
                }
                qt_threadpool_free(e.pool);
                e.pool = NULL;
            }
            e.attn = best;
            teardown(&e);
        }
    printf("\n  ]\n}\n");
    return 0;
}
