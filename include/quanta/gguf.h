/* quanta/gguf.h — GGUF v2/v3 files: a validating reader with a generic
 * metadata API, and the v3 writer that turns any qt_model into a file
 * llama.cpp loads (docs/formats.md §2).
 *
 * The reader checks every count, length, type id, dimension, offset and
 * alignment against the file before trusting it (docs/io.md lists them);
 * a malformed file gets one QT_ERR_FORMAT message naming the file, the
 * field and the problem. Tensor data is never copied: qt_gguf_tensor.data
 * points into the mapped file.
 */
#ifndef QUANTA_GGUF_H
#define QUANTA_GGUF_H

#include "core.h"
#include "model.h"
#include "quant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Metadata value types, numbered as in the file (docs/formats.md §2.1). */
typedef enum qt_gguf_type {
    QT_GGUF_UINT8 = 0,
    QT_GGUF_INT8 = 1,
    QT_GGUF_UINT16 = 2,
    QT_GGUF_INT16 = 3,
    QT_GGUF_UINT32 = 4,
    QT_GGUF_INT32 = 5,
    QT_GGUF_FLOAT32 = 6,
    QT_GGUF_BOOL = 7,
    QT_GGUF_STRING = 8,
    QT_GGUF_ARRAY = 9,
    QT_GGUF_UINT64 = 10,
    QT_GGUF_INT64 = 11,
    QT_GGUF_FLOAT64 = 12,
    QT_GGUF_TYPE_COUNT
} qt_gguf_type;

/* "uint32", "string", "array", ...; "?" for ids outside the enum. */
QT_API const char *qt_gguf_type_name(qt_gguf_type t);
/* Bytes of one element of a fixed-size type; 0 for STRING, ARRAY and unknown ids. */
QT_API size_t qt_gguf_type_size(qt_gguf_type t);

/* One metadata value. Scalars are widened (the type keeps the stored width,
 * so a writer reproduces it exactly). Strings are NUL-terminated copies that
 * also carry their length (GGUF strings may contain NUL bytes). */
typedef struct qt_gguf_value {
    qt_gguf_type type;
    union {
        uint64_t u64;  /* UINT8, UINT16, UINT32, UINT64 */
        int64_t i64;   /* INT8, INT16, INT32, INT64 */
        double f64;    /* FLOAT32 (exactly representable), FLOAT64 */
        bool b;        /* BOOL */
        struct { const char *ptr; uint64_t len; } str;           /* STRING */
        struct {
            qt_gguf_type type;                   /* element type */
            uint64_t n;                          /* element count */
            const void *raw;                     /* fixed-size elements: n packed little-endian values (unaligned) */
            const struct qt_gguf_value *items;   /* STRING / ARRAY elements: (n) values */
        } arr;                                                     /* ARRAY */
    };
} qt_gguf_value;

typedef struct qt_gguf_kv {
    const char *key;
    qt_gguf_value value;
} qt_gguf_kv;

/* One tensor info, validated: ne[0] is a multiple of the type's block size,
 * the element count does not overflow, and data..data+nbytes lies in the file. */
typedef struct qt_gguf_tensor {
    const char *name;
    uint32_t n_dims;             /* 0..4 */
    int64_t ne[QT_MAX_DIMS];     /* ggml order; unused dims are 1 */
    qt_type type;
    uint64_t offset;             /* relative to the data section */
    size_t nbytes;
    const void *data;            /* into the file */
} qt_gguf_tensor;

typedef struct qt_gguf qt_gguf;

/* Map and parse a file. The result owns the mapping. */
QT_API qt_status qt_gguf_open(const char *path, qt_gguf **out);
/* Parse bytes already in memory (they must outlive the result); `name` is
 * used in messages. */
QT_API qt_status qt_gguf_parse(const void *data, size_t size, const char *name, qt_gguf **out);
QT_API void qt_gguf_close(qt_gguf *g);

QT_API const char *qt_gguf_name(const qt_gguf *g);   /* the path or name given */
QT_API uint32_t qt_gguf_version(const qt_gguf *g);
QT_API uint32_t qt_gguf_alignment(const qt_gguf *g); /* general.alignment or 32 */
QT_API uint64_t qt_gguf_data_offset(const qt_gguf *g); /* absolute offset of the data section */
QT_API uint64_t qt_gguf_file_size(const qt_gguf *g);

/* Metadata, in file order. */
QT_API int64_t qt_gguf_n_kv(const qt_gguf *g);
QT_API const qt_gguf_kv *qt_gguf_kv_at(const qt_gguf *g, int64_t i);
/* NULL when the key is absent. */
QT_API const qt_gguf_value *qt_gguf_find(const qt_gguf *g, const char *key);

/* Typed getters. QT_ERR_NOT_FOUND when absent (no message set: absent is
 * often fine); QT_ERR_FORMAT naming file and key when present with a type
 * that does not fit. Integer getters accept any integer type whose value
 * fits the requested one (so a UINT64 count of 7 reads as int32 7). */
QT_API qt_status qt_gguf_get_i64(const qt_gguf *g, const char *key, int64_t *out);
QT_API qt_status qt_gguf_get_u64(const qt_gguf *g, const char *key, uint64_t *out);
QT_API qt_status qt_gguf_get_i32(const qt_gguf *g, const char *key, int32_t *out);
QT_API qt_status qt_gguf_get_u32(const qt_gguf *g, const char *key, uint32_t *out);
QT_API qt_status qt_gguf_get_f64(const qt_gguf *g, const char *key, double *out);  /* FLOAT32/FLOAT64 */
QT_API qt_status qt_gguf_get_f32(const qt_gguf *g, const char *key, float *out);
QT_API qt_status qt_gguf_get_bool(const qt_gguf *g, const char *key, bool *out);
QT_API qt_status qt_gguf_get_str(const qt_gguf *g, const char *key, const char **out);
/* An ARRAY; elem_type may be QT_GGUF_TYPE_COUNT for "any". */
QT_API qt_status qt_gguf_get_arr(const qt_gguf *g, const char *key, qt_gguf_type elem_type, const qt_gguf_value **out);

/* Element i (< arr.n) of a fixed-size numeric array, converted. */
QT_API int64_t qt_gguf_arr_i64(const qt_gguf_value *arr, uint64_t i);
QT_API uint64_t qt_gguf_arr_u64(const qt_gguf_value *arr, uint64_t i);
QT_API double qt_gguf_arr_f64(const qt_gguf_value *arr, uint64_t i);

/* Tensor infos, in file order. */
QT_API int64_t qt_gguf_n_tensors(const qt_gguf *g);
QT_API const qt_gguf_tensor *qt_gguf_tensor_at(const qt_gguf *g, int64_t i);
QT_API const qt_gguf_tensor *qt_gguf_find_tensor(const qt_gguf *g, const char *name);

/* The parsed file behind a model opened from GGUF; NULL for other sources. */
QT_API const qt_gguf *qt_model_gguf(const qt_model *m);

/* ---- writer ------------------------------------------------------------ */

/* Converts one tensor's data to the output type: fill dst (nbytes) with the
 * tensor `src` (in the model's layout; Q/K permutation is applied by the
 * writer afterwards, rows being independent) stored as `type`. Lets the
 * quantizers plug their own (imatrix-aware) quantization into the writer. */
typedef qt_status (*qt_gguf_tensor_data_fn)(void *user, const qt_tensor *src, qt_type type,
                                            void *dst, size_t nbytes);

typedef struct qt_gguf_write_opts {
    /* Output type for floating-point weights: QT_TYPE_COUNT (default) keeps
     * every tensor's type; F32/F16/BF16 convert 2-D weights as llama.cpp's
     * converter does. Always: 1-D tensors, *_norm.weight and biases that
     * would be F16/BF16 are written as F32 (exact; llama.cpp needs them F32). */
    qt_type outtype;
    /* Optional per-tensor override (return QT_TYPE_COUNT for "default");
     * an F16/BF16 answer for a norm or bias is widened to F32 as above. */
    qt_type (*tensor_type)(void *user, const qt_tensor *t);
    qt_gguf_tensor_data_fn tensor_data; /* optional; NULL = built-in conversion */
    void *user;
    /* Extra metadata (provenance, quantization config); replaces keys of the
     * same name, otherwise appended in order. */
    const qt_gguf_kv *extra_kv;
    int32_t n_extra_kv;
    /* general.file_type to write (a llama_ftype, docs/formats.md §3.6); -1 derives it. */
    int32_t file_type;
    uint32_t alignment;   /* 0: the source file's, else 32 */
    qt_progress progress;
    /* Non-NULL: write nothing (path unused), store the exact size the file would have. */
    uint64_t *size_only;
    /* Staged output (qt_afile_open_staged; `quanta quantize`'s OUT.partial);
     * NULL: the atomic rule's hidden temporary. With stage->resume_at > 0 the
     * first resume_tensors tensors (file order) are already in the staging
     * file, which must end where the next one starts (resume_at); the header
     * this run would write is compared with the file's instead of written,
     * and a difference is an error (another input, other options). */
    const qt_afile_stage *stage;
    int32_t resume_tensors;
    /* Optional: called once the header (n_done 0) and then each tensor with its
     * padding (n_done = tensors complete) are written -- flushed, and synced to
     * disk when stage->keep, so the first `bytes` bytes survive a crash. A
     * non-OK return stops the write with that status. */
    qt_status (*checkpoint)(void *user, int32_t n_done, uint64_t bytes);
} qt_gguf_write_opts;

/* Defaults: outtype QT_TYPE_COUNT, file_type -1, everything else zero. */
QT_API qt_gguf_write_opts qt_gguf_write_opts_default(void);

/* Write `m` as a GGUF v3 file, atomically (a failed write leaves nothing at
 * `path`). Metadata: a model read from GGUF keeps its metadata verbatim and
 * in order (only general.file_type / general.quantization_version follow
 * changed tensor types); other sources get llama.cpp's keys generated from
 * the hyperparameters and vocabulary with the exact types llama.cpp expects
 * (docs/formats.md §2.5-§2.8). Tensors keep the model's order; offsets are
 * cumulative and every tensor is padded to the alignment (§2.2). Q/K rows of
 * llama-architecture models held in HF order (hparams.rope_neox) are
 * permuted to llama.cpp's order (§2.10). */
QT_API qt_status qt_gguf_write(const qt_model *m, const char *path, const qt_gguf_write_opts *opts);

/* Does qt_gguf_write leave this tensor out? True for the KV cache scales
 * blk.N.attn_k_scale / blk.N.attn_v_scale (from vLLM checkpoints; quanta's
 * engine uses them, llama.cpp refuses files with tensors it does not use). */
QT_API bool qt_gguf_write_drops(const char *tensor_name);

#ifdef __cplusplus
}
#endif
#endif
