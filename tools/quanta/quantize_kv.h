/* tools/quanta/quantize_kv.h — `quanta quantize --kv-dtype D --kv-calib M
 * --kv-scale-gran G`: KV-cache scales fitted at quantize time and written
 * with the weights (quanta/quantize.h "KV-cache scales", docs/quantize.md). */
#ifndef QT_CLI_QUANTIZE_KV_H
#define QT_CLI_QUANTIZE_KV_H

#include <jansson.h>

#include "cli.h"

typedef struct qkv {
    const char *dtype, *calib, *gran; /* the options as given, NULL when absent */
    qt_kv_type type;
    qt_kv_calib_mode mode;
    qt_kv_scale_gran g;
    bool on;                          /* --kv-dtype was given */
    qt_kv_scales s;
} qkv;

#define QKV_HELP                                                                                            \
    "  --kv-dtype D               also fit KV-cache scales for cache format D (fp8-e4m3 (fp8), fp8-e5m2,\n"  \
    "                             int8; the engine's names) and write them: GGUF metadata\n"                \
    "                             quanta.kv_cache.*, or compressed-tensors k_scale / v_scale tensors\n"    \
    "                             with kv_cache_scheme (fp8-e4m3 and int8)\n"                               \
    "  --kv-calib none|random|data  data (default with --calib): absmax of K (after RoPE) and V over\n"     \
    "                             the --calib samples; random: over --nsamples (16) sequences of\n"         \
    "                             --seqlen tokens drawn uniformly from the vocabulary (seed --seed);\n"     \
    "                             none: every scale 1.0, with a warning (nothing is fitted)\n"             \
    "  --kv-scale-gran tensor|head  one scale per layer (default), or per layer and KV head\n"

/* 1: opt is a KV option (its value parsed); 0: not one; -1: usage error printed. */
int qkv_arg(const char *verb, const char *opt, const char *v, qkv *k);
/* After parsing: the options agree with each other and with --calib. */
int qkv_check(const char *verb, qkv *k, bool have_calib);
/* Every scale 1.0, sized for m (before the plan: the file's size is known). */
int qkv_init(qkv *k, const qt_model *m);
/* none: the warning; random: fit on random tokens; data: fit on set (unless
 * gptq: GPTQ's observe passes fit them). Prints errors. */
int qkv_fit(qkv *k, const qt_model *m, const qt_calib_set *set, const cli_calib *c, bool gptq, int threads, int quiet);
void qkv_report(const qkv *k);
json_t *qkv_json(const qkv *k);
/* The compressed-tensors writer's fields (o NULL: only the check); fp8-e5m2 refused (no such kv_cache_scheme). */
int qkv_ct(const char *verb, qkv *k, qt_ct_export_opts *o);
void qkv_free(qkv *k);

#endif
