/* bench_quant — quantize and dequantize throughput per weight format, each
 * SIMD level against the scalar reference, and the machine's single-thread
 * memory read bandwidth. Prints one JSON document on stdout.
 *
 *   dequantize GB/s  = bytes of f32 output written per second
 *   quantize GB/s    = bytes of f32 input consumed per second
 *   vs_scalar        = GB/s / the scalar reference's GB/s (same format)
 *   vs_bandwidth     = GB/s / the measured read bandwidth
 *   cached_*         = the same kernel re-run on the quantization slab (1 MiB
 *                      of output by default), i.e. with the output in cache as
 *                      when an engine dequantizes row by row into scratch
 * Every figure is the median of --reps runs (default 7). Dequantization
 * streams a matrix larger than the caches (default 16M elements = 64 MiB of
 * f32 output); quantization runs on a smaller slab because the reference
 * quantizers are slow (default 256K elements). Single thread throughout.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quanta.h"
#include "bench_util.h"
#include "quant/ct_internal.h"
#include "quant/simd.h"
#include "quant/variants.h"

#define COLS 4096 /* row length of every benchmark matrix */

typedef struct {
    int64_t deq_rows, quant_rows;
    int reps;
} bench_config;

/* Deterministic weight-like data: a smooth part plus noise, varying row scale. */
static void fill_weights(float *w, int64_t n) {
    uint64_t s = 0x5851F42D4C957F2Dull;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const float u = (float)((s >> 40) & 0xFFFFFF) / 16777216.0f - 0.5f;
        w[i] = 0.02f * (u + 0.3f * sinf((float)i * 0.01f)) * (1.0f + (float)((i / COLS) % 5));
    }
}

/* ---- one format ------------------------------------------------------------------ */

typedef struct {
    const char *name;
    qt_type type;         /* traits formats */
    int ct_kind;          /* 0 = traits; else a compressed-tensors codec below */
} format_case;

enum { CT_INT4_G128 = 1, CT_INT8_CHANNEL, CT_FP8_CHANNEL, CT_NVFP4, CT_MXFP4 };

/* Compressed-tensors tensors of one matrix (any may be unused). */
typedef struct {
    int8_t *q;
    int32_t *packed;
    uint8_t *bytes, *scale_bytes;
    float *scales;
    float global_scale;
} ct_tensors;

typedef struct {
    const format_case *fc;
    const qt_type_traits *tr;
    qt_to_float_fn to_float;         /* traits formats at this level */
    qt__ct_int4_row_fn int4_row;     /* CT_INT4_G128 at this level */
    const void *codes;               /* traits formats */
    ct_tensors ct;
    int64_t rows;
    float *out;
} deq_job;

static const qt_ct_int_args int4_args = {.bits = 4, .symmetric = true, .strategy = QT_CT_GROUP,
                                         .group_size = 128, .dtype = QT_CT_BF16};
static const qt_ct_int_args int8_args = {.bits = 8, .symmetric = true, .strategy = QT_CT_CHANNEL,
                                         .dtype = QT_CT_BF16};

static void run_dequant(const deq_job *j) {
    switch (j->fc->ct_kind) {
    case 0: {
        const size_t row_bytes = (size_t)(COLS / j->tr->block_elems) * j->tr->block_bytes;
        for (int64_t r = 0; r < j->rows; r++)
            j->to_float((const uint8_t *)j->codes + (size_t)r * row_bytes, j->out + r * COLS, COLS);
        break;
    }
    case CT_INT4_G128:
        for (int64_t r = 0; r < j->rows; r++)
            j->int4_row(j->ct.packed + r * (COLS / 8), j->ct.scales + r * (COLS / 128), NULL, COLS, 128,
                        j->out + r * COLS);
        break;
    case CT_INT8_CHANNEL:
        qt_ct_int_dequantize(j->ct.q, j->ct.scales, NULL, j->rows, COLS, &int8_args, j->out);
        break;
    case CT_FP8_CHANNEL:
        qt_ct_fp8_dequantize(j->ct.bytes, j->ct.scales, j->rows, COLS, QT_CT_CHANNEL, QT_CT_BF16, j->out);
        break;
    case CT_NVFP4:
        qt_ct_nvfp4_dequantize(j->ct.bytes, j->ct.scale_bytes, j->ct.global_scale, j->rows, COLS, j->out);
        break;
    case CT_MXFP4:
        qt_ct_mxfp4_dequantize(j->ct.bytes, j->ct.scale_bytes, j->rows, COLS, j->out);
        break;
    }
}

/* Importance weights for the types that cannot quantize without them
 * (IQ2_XXS, IQ2_XS, IQ1_S): a fixed, mildly uneven per-column profile. */
static const float *bench_imatrix(void) {
    static float im[COLS];
    for (int i = 0; i < COLS; i++) im[i] = 1.0f + 0.5f * (float)(i % 7);
    return im;
}

/* Quantize `rows` rows of w into t (allocated here). */
static qt_status run_quant(const format_case *fc, const float *w, int64_t rows, void *codes, ct_tensors *t) {
    switch (fc->ct_kind) {
    case 0:
        return qt_quantize_rows(fc->type, w, codes, rows, COLS,
                                qt_type_requires_imatrix(fc->type) ? bench_imatrix() : NULL);
    case CT_INT4_G128: {
        qt_status s = qt_ct_int_quantize(w, rows, COLS, &int4_args, t->q, t->scales, NULL);
        return s != QT_OK ? s : qt_ct_pack_rows(t->q, rows, COLS, 4, t->packed);
    }
    case CT_INT8_CHANNEL: return qt_ct_int_quantize(w, rows, COLS, &int8_args, t->q, t->scales, NULL);
    case CT_FP8_CHANNEL: return qt_ct_fp8_quantize(w, rows, COLS, QT_CT_CHANNEL, QT_CT_BF16, t->bytes, t->scales);
    case CT_NVFP4: return qt_ct_nvfp4_quantize(w, rows, COLS, QT_CT_BF16, t->bytes, t->scale_bytes, &t->global_scale);
    case CT_MXFP4: return qt_ct_mxfp4_quantize(w, rows, COLS, t->bytes, t->scale_bytes);
    }
    return QT_ERR_INTERNAL;
}

static void ct_alloc(ct_tensors *t, int64_t rows) {
    const size_t n = (size_t)(rows * COLS);
    t->q = xmalloc(n);
    t->packed = xmalloc(n / 2);
    t->bytes = xmalloc(n);
    t->scale_bytes = xmalloc(n / 16);
    t->scales = xmalloc(sizeof(float) * (size_t)rows * (COLS / 16));
}

static void ct_free(ct_tensors *t) {
    free(t->q);
    free(t->packed);
    free(t->bytes);
    free(t->scale_bytes);
    free(t->scales);
}

/* Bytes each compressed-tensors buffer of `rows` rows really uses (row-major,
 * so a matrix of k slabs is k copies of one slab's buffers). */
typedef struct { size_t q, packed, bytes, scale_bytes, scales; } ct_sizes;

static ct_sizes ct_used(int kind, int64_t rows) {
    const size_t n = (size_t)(rows * COLS), r = (size_t)rows;
    switch (kind) {
    case CT_INT4_G128: return (ct_sizes){.q = n, .packed = n / 2, .scales = r * (COLS / 128) * sizeof(float)};
    case CT_INT8_CHANNEL: return (ct_sizes){.q = n, .scales = r * sizeof(float)};
    case CT_FP8_CHANNEL: return (ct_sizes){.bytes = n, .scales = r * sizeof(float)};
    case CT_NVFP4: return (ct_sizes){.bytes = n / 2, .scale_bytes = n / 16};
    case CT_MXFP4: return (ct_sizes){.bytes = n / 2, .scale_bytes = n / 32};
    }
    return (ct_sizes){0};
}

/* Repeat the slab's rows to fill a bigger matrix (dequantization speed does
 * not depend on the values, and the reference quantizers are slow). */
static void tile(void *dst, const void *src, size_t slab_bytes, int64_t copies) {
    for (int64_t k = 0; k < copies; k++) memcpy((uint8_t *)dst + (size_t)k * slab_bytes, src, slab_bytes);
}

typedef struct {
    const char *level;
    double gbps, cached_gbps;
} level_result;

/* Passes over the cache-resident slab per timed repetition. */
#define CACHED_PASSES 8

static void bench_format(const format_case *fc, const bench_config *cfg, const float *w, double bandwidth,
                         bool first) {
    const qt_type_traits *tr = fc->ct_kind ? NULL : qt_type_get(fc->type);
    if (!fc->ct_kind && (!tr || !tr->from_float || !tr->to_float_ref)) return;
    const int64_t qrows = cfg->quant_rows, drows = cfg->deq_rows, copies = drows / qrows;
    double t[MAX_REPS];

    /* quantize: the slab, reps times */
    void *slab = NULL;
    ct_tensors small = {0}, big = {0};
    size_t slab_bytes = 0;
    if (tr) {
        slab_bytes = qt_row_size(fc->type, COLS) * (size_t)qrows;
        slab = xmalloc(slab_bytes);
    } else {
        ct_alloc(&small, qrows);
    }
    for (int r = 0; r < cfg->reps; r++) {
        const double t0 = now_s();
        const qt_status s = run_quant(fc, w, qrows, slab, &small);
        t[r] = now_s() - t0;
        if (s != QT_OK) {
            fprintf(stderr, "bench_quant: %s: %s\n", fc->name, qt_last_error());
            exit(1);
        }
    }
    const double quant_gbps = (double)(qrows * COLS) * 4.0 / median(t, cfg->reps) / 1e9;

    /* dequantize: a big matrix tiled from the slab */
    deq_job job = {.fc = fc, .tr = tr, .rows = drows};
    job.out = xmalloc(sizeof(float) * (size_t)(drows * COLS));
    void *codes = NULL;
    if (tr) {
        codes = xmalloc(slab_bytes * (size_t)copies);
        tile(codes, slab, slab_bytes, copies);
        job.codes = codes;
    } else {
        ct_alloc(&big, drows);
        const ct_sizes used = ct_used(fc->ct_kind, qrows);
        tile(big.q, small.q, used.q, copies);
        tile(big.packed, small.packed, used.packed, copies);
        tile(big.bytes, small.bytes, used.bytes, copies);
        tile(big.scale_bytes, small.scale_bytes, used.scale_bytes, copies);
        tile(big.scales, small.scales, used.scales, copies);
        big.global_scale = small.global_scale;
        job.ct = big;
    }

    level_result res[3];
    int n_levels = 0;
    for (int lv = 0; lv < 3; lv++) {
        job.to_float = tr ? tr->to_float_ref : NULL;
        job.int4_row = qt__ct_int4_row_ref;
        const char *level = qt__cpu_level_str((qt__cpu_level)lv);
        if (lv > 0) {
            /* this level's kernel from the variants table (lib/quant/variants.c) */
            if (lv > (int)qt__cpu_level_get()) continue;
            const qt__kernel_variant *v = qt__variants;
            for (; v->level != QT__CPU_LEVEL_COUNT; v++) {
                if ((int)v->level != lv) continue;
                if (fc->ct_kind == CT_INT4_G128 && v->ct_int4_row) break;
                if (tr && v->type == fc->type && v->to_float) break;
            }
            if (v->level == QT__CPU_LEVEL_COUNT) continue; /* no SIMD variant for this format at this level */
            if (v->ct_int4_row) job.int4_row = v->ct_int4_row;
            else job.to_float = v->to_float;
        }
        run_dequant(&job); /* warm-up */
        for (int r = 0; r < cfg->reps; r++) {
            const double t0 = now_s();
            run_dequant(&job);
            t[r] = now_s() - t0;
        }
        const double gbps = (double)(drows * COLS) * 4.0 / median(t, cfg->reps) / 1e9;
        /* the same kernel on the slab only (output small enough to stay in
         * cache, as when an engine dequantizes row by row into scratch) */
        deq_job small_job = job;
        small_job.rows = qrows;
        if (tr) small_job.codes = slab;
        else small_job.ct = small;
        run_dequant(&small_job);
        for (int r = 0; r < cfg->reps; r++) {
            const double t0 = now_s();
            for (int p = 0; p < CACHED_PASSES; p++) run_dequant(&small_job);
            t[r] = now_s() - t0;
        }
        const double cached = (double)(qrows * COLS) * 4.0 * CACHED_PASSES / median(t, cfg->reps) / 1e9;
        res[n_levels++] = (level_result){level, gbps, cached};
    }

    printf("%s    {\"name\": \"%s\", \"family\": \"%s\",\n", first ? "" : ",\n", fc->name,
           fc->ct_kind ? "compressed-tensors" : "gguf");
    printf("     \"quantize\": {\"level\": \"scalar\", \"median_gbps\": %.3f},\n", quant_gbps);
    printf("     \"dequantize\": [");
    for (int k = 0; k < n_levels; k++)
        printf("%s\n       {\"level\": \"%s\", \"median_gbps\": %.3f, \"vs_scalar\": %.2f, \"vs_bandwidth\": %.3f, "
               "\"cached_median_gbps\": %.3f, \"cached_vs_scalar\": %.2f}",
               k ? "," : "", res[k].level, res[k].gbps, res[k].gbps / res[0].gbps, res[k].gbps / bandwidth,
               res[k].cached_gbps, res[k].cached_gbps / res[0].cached_gbps);
    printf("]}");
    fflush(stdout);

    free(slab);
    free(codes);
    free(job.out);
    ct_free(&small);
    ct_free(&big);
}

static const format_case formats[] = {
    {"f16", QT_TYPE_F16, 0},       {"bf16", QT_TYPE_BF16, 0},     {"q4_0", QT_TYPE_Q4_0, 0},
    {"q4_1", QT_TYPE_Q4_1, 0},     {"q5_0", QT_TYPE_Q5_0, 0},     {"q5_1", QT_TYPE_Q5_1, 0},
    {"q8_0", QT_TYPE_Q8_0, 0},     {"q2_K", QT_TYPE_Q2_K, 0},     {"q3_K", QT_TYPE_Q3_K, 0},
    {"q4_K", QT_TYPE_Q4_K, 0},     {"q5_K", QT_TYPE_Q5_K, 0},     {"q6_K", QT_TYPE_Q6_K, 0},
    {"iq4_nl", QT_TYPE_IQ4_NL, 0}, {"iq4_xs", QT_TYPE_IQ4_XS, 0}, {"mxfp4", QT_TYPE_MXFP4, 0},
    {"tq1_0", QT_TYPE_TQ1_0, 0},   {"tq2_0", QT_TYPE_TQ2_0, 0},
    {"iq1_s", QT_TYPE_IQ1_S, 0},   {"iq1_m", QT_TYPE_IQ1_M, 0},   {"iq2_xxs", QT_TYPE_IQ2_XXS, 0},
    {"iq2_xs", QT_TYPE_IQ2_XS, 0}, {"iq2_s", QT_TYPE_IQ2_S, 0},   {"iq3_xxs", QT_TYPE_IQ3_XXS, 0},
    {"iq3_s", QT_TYPE_IQ3_S, 0},
    {"ct-int4-g128", 0, CT_INT4_G128}, {"ct-int8-channel", 0, CT_INT8_CHANNEL},
    {"ct-fp8-channel", 0, CT_FP8_CHANNEL}, {"ct-nvfp4", 0, CT_NVFP4}, {"ct-mxfp4", 0, CT_MXFP4},
};

static void usage(FILE *to) {
    fprintf(to, "usage: bench_quant [--dequant-elems N] [--quant-elems N] [--reps N] [--only NAME] [--quick]\n\n"
                "Quantize/dequantize throughput per format (GB/s of f32), each SIMD level vs the\n"
                "scalar reference, and single-thread memory read bandwidth, as JSON on stdout.\n"
                "  --dequant-elems N  elements per dequantization pass (default 16777216)\n"
                "  --quant-elems N    elements per quantization pass (default 262144)\n"
                "  --reps N           repetitions per figure; the median is reported (default 7)\n"
                "  --only NAME        one format (e.g. q4_K, ct-int4-g128)\n"
                "  --quick            small sizes, 3 repetitions (smoke test)\n");
}

int main(int argc, char **argv) {
    int64_t deq_elems = (int64_t)1 << 24, quant_elems = (int64_t)1 << 18;
    int reps = 7;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
        else if (!strcmp(argv[i], "--dequant-elems") && i + 1 < argc) deq_elems = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--quant-elems") && i + 1 < argc) quant_elems = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--quick")) { deq_elems = (int64_t)1 << 20; quant_elems = COLS * 16; reps = 3; }
        else { fprintf(stderr, "bench_quant: unknown option '%s'\n", argv[i]); usage(stderr); return 2; }
    }
    bench_config cfg = {.reps = reps};
    cfg.quant_rows = quant_elems / COLS;
    if (cfg.quant_rows < 1) cfg.quant_rows = 1;
    cfg.deq_rows = deq_elems / COLS / cfg.quant_rows * cfg.quant_rows; /* whole slabs */
    if (cfg.deq_rows < cfg.quant_rows) cfg.deq_rows = cfg.quant_rows;
    if (reps < 1 || reps > MAX_REPS) { fprintf(stderr, "bench_quant: --reps must be 1..%d\n", MAX_REPS); return 2; }

    float *w = xmalloc(sizeof(float) * (size_t)(cfg.quant_rows * COLS));
    fill_weights(w, cfg.quant_rows * COLS);
    const double bandwidth = read_bandwidth_gbps(reps);
    printf("{\n  \"machine\": {\"cpu_level\": \"%s\", \"read_bandwidth_gbps\": %.3f, \"threads\": 1},\n",
           qt_cpu_level_name(), bandwidth);
    printf("  \"config\": {\"dequant_elems\": %lld, \"quant_elems\": %lld, \"row\": %d, \"reps\": %d, "
           "\"statistic\": \"median\"},\n  \"formats\": [\n",
           (long long)(cfg.deq_rows * COLS), (long long)(cfg.quant_rows * COLS), COLS, reps);
    bool first = true;
    for (size_t k = 0; k < sizeof formats / sizeof *formats; k++) {
        if (only && strcmp(only, formats[k].name) != 0) continue;
        bench_format(&formats[k], &cfg, w, bandwidth, first);
        first = false;
    }
    printf("\n  ]\n}\n");
    free(w);
    return 0;
}
