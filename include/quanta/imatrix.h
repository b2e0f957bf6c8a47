/* quanta/imatrix.h — importance matrices as llama.cpp's llama-imatrix writes
 * them and llama-quantize reads them (docs/imatrix.md).
 *
 * Two file formats:
 * - GGUF (llama.cpp PR #9400 / #14842; what llama-imatrix writes by
 *   default): general.type = "imatrix", imatrix.datasets (array of strings),
 *   imatrix.chunk_count and imatrix.chunk_size (uint32), and for each weight
 *   tensor T two F32 tensors: T.in_sum2, shape [n_cols, n_experts], the sum
 *   over tokens of the squared input activation of every column (per expert
 *   for MoE), and T.counts, shape [1, n_experts], the tokens each expert saw.
 *   Read and written.
 * - legacy .dat (`--output-format dat`): int32 entry count; per entry an
 *   int32 name length, the name, int32 ncall (chunks seen), int32 nval and
 *   nval float32 values (sum / count * ncall: already normalized, then scaled
 *   by ncall); then, optionally, int32 chunk count, int32 length and the
 *   dataset name. All little-endian. Read only.
 *
 * The importance weights llama-quantize passes to the quantizers are
 * in_sum2 / counts per expert (GGUF) and values / ncall (legacy);
 * qt_imatrix_get computes exactly those floats.
 */
#ifndef QUANTA_IMATRIX_H
#define QUANTA_IMATRIX_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qt_imatrix_format {
    QT_IMATRIX_GGUF = 0,
    QT_IMATRIX_LEGACY = 1, /* .dat */
} qt_imatrix_format;

/* One weight tensor's statistics, validated: n_values = n_cols * n_counts
 * for GGUF, every value finite and >= 0, every count >= 0. */
typedef struct qt_imatrix_entry {
    const char *name;       /* the weight tensor, e.g. "blk.0.ffn_down.weight" */
    int64_t n_values;       /* floats stored */
    int64_t n_cols;         /* GGUF: input columns (in_sum2's ne[0]); legacy: 0 (not recorded) */
    int64_t n_counts;       /* GGUF: experts, one count each (1 for a dense weight); legacy: 1 */
    const int64_t *counts;  /* (n_counts) GGUF: tokens seen per expert; legacy: ncall (chunks seen) */
} qt_imatrix_entry;

typedef struct qt_imatrix qt_imatrix;

/* Map and parse a file of either format (GGUF when it starts with "GGUF",
 * legacy otherwise). Malformed, truncated or inconsistent files give one
 * QT_ERR_FORMAT message naming the file, the field and the problem. */
QT_API qt_status qt_imatrix_open(const char *path, qt_imatrix **out);
/* The same on bytes in memory (they must outlive the result); `name` is used
 * in messages. */
QT_API qt_status qt_imatrix_parse(const void *data, size_t size, const char *name, qt_imatrix **out);
QT_API void qt_imatrix_close(qt_imatrix *im);

QT_API const char *qt_imatrix_name(const qt_imatrix *im);
QT_API qt_imatrix_format qt_imatrix_format_of(const qt_imatrix *im);
QT_API int64_t qt_imatrix_chunk_count(const qt_imatrix *im);  /* chunks the statistics cover (0: not recorded) */
QT_API int64_t qt_imatrix_chunk_size(const qt_imatrix *im);   /* tokens per chunk; 0 for legacy files (not recorded) */
QT_API int64_t qt_imatrix_n_datasets(const qt_imatrix *im);
QT_API const char *qt_imatrix_dataset(const qt_imatrix *im, int64_t i);

/* Entries in file order; find by weight tensor name (NULL when absent). */
QT_API int64_t qt_imatrix_n_entries(const qt_imatrix *im);
QT_API const qt_imatrix_entry *qt_imatrix_entry_at(const qt_imatrix *im, int64_t i);
QT_API const qt_imatrix_entry *qt_imatrix_find(const qt_imatrix *im, const char *name);

/* The stored values of an entry (e->n_values floats): GGUF in_sum2, legacy
 * values. */
QT_API void qt_imatrix_values(const qt_imatrix *im, const qt_imatrix_entry *e, float *out);

/* The importance weights for weight tensor `name` with rows of n_cols
 * elements and n_experts experts (1 for a dense weight): n_cols * n_experts
 * floats, expert-major, as llama-quantize computes them (in_sum2 / count per
 * expert, 1 where an expert saw no token; legacy: value / ncall).
 * QT_ERR_NOT_FOUND without a message when the file has no entry (llama-imatrix
 * collects none for token_embd.weight, nor for output.weight without
 * --process-output); QT_ERR_SHAPE naming the file and the tensor when the
 * entry's columns or experts do not match. */
QT_API qt_status qt_imatrix_get(const qt_imatrix *im, const char *name, int64_t n_cols, int64_t n_experts, float *weights);

/* ---- writer (GGUF format) -------------------------------------------------- */

typedef struct qt_imatrix_stat {
    const char *name;       /* weight tensor name; name + ".in_sum2" at most 63 bytes (ggml's limit) */
    int64_t n_cols;         /* input columns */
    int64_t n_experts;      /* 1 for a dense weight */
    const float *sums;      /* (n_experts, n_cols) sums of squared activations */
    const int64_t *counts;  /* (n_experts) tokens seen per expert */
} qt_imatrix_stat;

typedef struct qt_imatrix_info {
    const char *const *datasets; /* (n_datasets) the calibration files */
    int64_t n_datasets;
    int64_t chunk_count;         /* 0 .. UINT32_MAX */
    int64_t chunk_size;          /* tokens per chunk, 0 .. UINT32_MAX */
} qt_imatrix_info;

/* Write a GGUF imatrix file as llama-imatrix does: the four metadata keys in
 * its order, entries sorted by name (byte order), T.in_sum2 then T.counts for
 * each, alignment 32. Atomic: a failed write leaves nothing at `path`. */
QT_API qt_status qt_imatrix_write(const char *path, const qt_imatrix_stat *stats, int64_t n_stats, const qt_imatrix_info *info);

/* ---- computing one (lib/quantize/imatrix_calc.c) --------------------------- *
 * llama-imatrix's statistic over a tokenized text (tokenized once, with BOS
 * when the vocabulary adds one): the text is cut into non-overlapping chunks of
 * n_ctx tokens (chunk i = tokens[i*n_ctx, (i+1)*n_ctx)), each chunk's first
 * token replaced by BOS, each chunk evaluated from position 0, and every token
 * of every chunk counted (not only the second half, as perplexity scores).
 * For each linear of every decoder layer (blk.N.attn_q.weight ... ffn_down) the
 * squared input activations are summed per column in f32, token after token in
 * text order (llama-imatrix's float accumulator, so the sums are its sums);
 * output.weight only with process_output and only when the model has its own
 * (a tied model's projection is token_embd, which llama-imatrix never
 * collects). Dense models have one expert. Deterministic at any thread count. */
typedef struct qt_engine_ctx qt_engine_ctx;
typedef struct qt_model qt_model;

typedef struct qt_imatrix_calc_opts {
    int32_t n_ctx;        /* chunk length in tokens (llama-imatrix -c); the engine's batch must hold it */
    int32_t n_chunks;     /* <= 0: every full chunk (llama-imatrix needs at least 2) */
    int32_t bos_id;       /* replaces each chunk's first token; < 0: keep the text's */
    bool process_output;  /* also collect output.weight (llama-imatrix --process-output) */
    int32_t n_batch;      /* llama-imatrix -b (0: 2048): n_batch / n_ctx chunks per decode */
    int32_t n_ubatch;     /* llama-imatrix -ub (0: 512): its micro-batch; with n_batch, the order of the sums */
    qt_progress progress; /* "imatrix", chunks done / total */
} qt_imatrix_calc_opts;

typedef struct qt_imatrix_result {
    qt_imatrix_stat *stats; /* (n_stats) sorted by name, ready for qt_imatrix_write */
    int64_t n_stats;
    int64_t chunk_count;    /* chunks evaluated */
    int64_t chunk_size;     /* n_ctx */
    int64_t n_tokens;       /* chunk_count * chunk_size */
} qt_imatrix_result;

/* m is the model e runs (its layer count and whether output.weight is its own).
 * QT_ERR_ARG when the text holds fewer than 2 chunks (llama-imatrix's rule);
 * QT_ERR_INTERRUPTED on qt_cancel; QT_ERR_FORMAT naming the tensor when a sum
 * is not finite. */
QT_API qt_status qt_imatrix_compute(const qt_model *m, qt_engine_ctx *e, const int32_t *tokens, int64_t n_tokens,
                                    const qt_imatrix_calc_opts *o, qt_imatrix_result *out);
QT_API void qt_imatrix_result_free(qt_imatrix_result *r);

#ifdef __cplusplus
}
#endif
#endif
