/* tools/quanta/engine_opts.h — the engine options run, perplexity, eval, imatrix and serve share. */
#ifndef QT_CLI_ENGINE_OPTS_H
#define QT_CLI_ENGINE_OPTS_H

#include "cli.h"

typedef struct engine_cli_opts {
    long long n_ctx, n_batch, threads;
    const char *kv_dtype;       /* checked when parsed: an unknown name is a usage error (exit 2) */
    const char *kv_scale;       /* auto|file|one|dynamic */
    bool kv_per_head;
    bool act_quant_off;
    const char *numerics;       /* fast|llama, checked when parsed */
} engine_cli_opts;

/* The context line differs: run's is the context, perplexity/eval score chunks of it. */
#define ENGINE_OPTS_HELP_CTX                                                                           \
    "  -c, --ctx-size N     context length (default: the model's, at most 4096)\n"
#define ENGINE_OPTS_HELP                                                                               \
    "  --kv-dtype D         KV cache format: f32, f16 (default, as llama.cpp; also fp16), bf16,\n"  \
    "                       fp8 (fp8-e4m3), fp8-e5m2, int8 (q8_0 is llama.cpp's; use int8 here)\n"   \
    "  --kv-scale S         scales of fp8/int8 caches: auto (file, else fp8 1.0 / int8 on the fly),\n" \
    "                       file, one (1.0), dynamic (absmax of the first batch)\n"                 \
    "  --kv-scale-gran G    tensor (default) or head: one scale per layer, or per layer and KV head\n" \
    "  --act-quant A        auto (default): activations quantized to each weight type's vec_dot\n"  \
    "                       type as llama.cpp does; off: weights dequantized, f32 activations\n"     \
    "  --numerics N         fast (default): the fastest kernels, in their own float order where\n" \
    "                       that is faster; llama: llama.cpp's order, its F32 logits bit for bit\n" \
    "  -b, --batch N        tokens per forward batch (default min(ctx, 512))\n"                      \
    "  -t, --threads N      threads (default: all CPUs)\n"

void engine_cli_defaults(engine_cli_opts *o);
/* Consumes argv[*i] (and its value) if it is an engine option: returns 1 if
 * consumed, 0 if not an engine option, -1 after printing a usage error. */
int engine_cli_parse(const char *verb, int argc, char **argv, int *i, engine_cli_opts *o);
/* The library's options from the parsed ones (QT_ERR_UNSUPPORTED for a bad name). */
qt_status engine_cli_to_opts(const engine_cli_opts *o, qt_engine_opts *eo);
/* Resolves the options against the model and creates the engine. */
qt_status engine_cli_create(const qt_model *m, const engine_cli_opts *o, qt_engine_ctx **out);
/* The same with n_seq KV slots (`serve --parallel`). */
qt_status engine_cli_create_seqs(const qt_model *m, const engine_cli_opts *o, int32_t n_seq, qt_engine_ctx **out);

#endif
