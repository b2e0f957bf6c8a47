/* quanta/safetensors.h — the safetensors container (docs/formats.md §1).
 *
 * Reader: one file, or a sharded checkpoint (model.safetensors.index.json plus
 * shards). It enforces everything the reference reader (huggingface/safetensors
 * `read_metadata` / `Metadata::validate`) enforces — header length bounds, UTF-8
 * JSON of the right schema, known dtype strings, offsets contiguous from 0 and
 * covering the data section exactly, byte span == prod(shape) * dtype bits / 8,
 * `__metadata__` a string->string map — plus, for shards, coverage: every tensor
 * of the index is in its shard, every shard exists, no tensor is in two shards.
 * Tensor data is never copied: views point into the read-only mapping.
 *
 * Writer: the reference writer's conventions (§1.4): tensors sorted by dtype
 * (descending enum order) then name, laid out back to back, compact JSON with
 * `__metadata__` first, header padded with spaces to a multiple of 8. Atomic
 * (qt_afile): a failed write leaves nothing under the real name.
 */
#ifndef QUANTA_SAFETENSORS_H
#define QUANTA_SAFETENSORS_H

#include "core.h"
#include "quant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The reference's `Dtype` enum, in its declaration order: the writer's sort
 * (wider types first) depends on this order, so never reorder it. */
typedef enum qt_st_dtype {
    QT_ST_BOOL = 0, QT_ST_F4, QT_ST_F6_E2M3, QT_ST_F6_E3M2, QT_ST_U8, QT_ST_I8,
    QT_ST_F8_E5M2, QT_ST_F8_E4M3, QT_ST_F8_E8M0, QT_ST_F8_E4M3FNUZ, QT_ST_F8_E5M2FNUZ,
    QT_ST_I16, QT_ST_U16, QT_ST_F16, QT_ST_BF16, QT_ST_I32, QT_ST_U32, QT_ST_F32,
    QT_ST_C64, QT_ST_F64, QT_ST_I64, QT_ST_U64,
    QT_ST_DTYPE_COUNT
} qt_st_dtype;

#define QT_ST_MAX_DIMS 8
#define QT_ST_MAX_HEADER 100000000u /* the reference's MAX_HEADER_SIZE */

QT_API const char *qt_st_dtype_name(qt_st_dtype d);          /* "F32", ...; NULL if out of range */
QT_API bool qt_st_dtype_from_name(const char *name, qt_st_dtype *out); /* exact, case-sensitive */
QT_API int qt_st_dtype_bits(qt_st_dtype d);                  /* 4, 6, 8, 16, 32 or 64 */
/* The quanta element type holding this dtype (F32, F16, BF16, F64, I8, I16, I32, I64);
 * QT_ERR_UNSUPPORTED naming the dtype otherwise (U8, F8_*, BOOL, ...). */
QT_API qt_status qt_st_dtype_to_type(qt_st_dtype d, qt_type *out);
/* The dtype for a quanta type; QT_ERR_UNSUPPORTED for block-quantized types. */
QT_API qt_status qt_st_dtype_from_type(qt_type t, qt_st_dtype *out);

/* ---- reader ------------------------------------------------------------------ */
typedef struct qt_st_tensor {
    const char *name;
    qt_st_dtype dtype;
    int32_t n_dims;                 /* 0 = scalar */
    int64_t shape[QT_ST_MAX_DIMS];  /* as stored: row-major, shape[0] outermost (PyTorch order) */
    uint64_t begin, end;            /* data_offsets, relative to the data section */
    uint64_t file_offset;           /* absolute: 8 + header length + begin */
    const void *data;               /* end - begin bytes (NULL when 0 bytes) */
} qt_st_tensor;

typedef struct qt_safetensors qt_safetensors;

/* Map and validate one file. */
QT_API qt_status qt_st_open(const char *path, qt_safetensors **out);
/* Validate a buffer the caller keeps alive (label names it in messages). */
QT_API qt_status qt_st_parse(const void *buf, size_t size, const char *label, qt_safetensors **out);
QT_API void qt_st_close(qt_safetensors *st);

QT_API const char *qt_st_path(const qt_safetensors *st);
QT_API uint64_t qt_st_header_len(const qt_safetensors *st);        /* N, the JSON header's byte length */
QT_API int32_t qt_st_n_tensors(const qt_safetensors *st);
QT_API const qt_st_tensor *qt_st_tensor_at(const qt_safetensors *st, int32_t i); /* in data order */
QT_API const qt_st_tensor *qt_st_find(const qt_safetensors *st, const char *name); /* NULL if absent */
/* `__metadata__` entries, sorted by key. */
QT_API int32_t qt_st_n_metadata(const qt_safetensors *st);
QT_API const char *qt_st_metadata_key(const qt_safetensors *st, int32_t i);
QT_API const char *qt_st_metadata_value(const qt_safetensors *st, int32_t i);
QT_API const char *qt_st_metadata_get(const qt_safetensors *st, const char *key); /* NULL if absent */

/* ---- checkpoints: one file, or an index and its shards ------------------------ */
typedef struct qt_st_checkpoint qt_st_checkpoint;

#define QT_ST_SINGLE_NAME "model.safetensors"
#define QT_ST_INDEX_NAME "model.safetensors.index.json"

/* path: a .safetensors file, an index .json, or a directory (model.safetensors is
 * preferred over the index, as transformers does). Shard names in the index must be
 * plain file names in the index's directory. */
QT_API qt_status qt_st_checkpoint_open(const char *path, qt_st_checkpoint **out);
QT_API void qt_st_checkpoint_close(qt_st_checkpoint *c);
QT_API bool qt_st_checkpoint_sharded(const qt_st_checkpoint *c);
QT_API int32_t qt_st_checkpoint_n_files(const qt_st_checkpoint *c);
QT_API const qt_safetensors *qt_st_checkpoint_file(const qt_st_checkpoint *c, int32_t i);
/* All tensors of all files, sorted by name. */
QT_API int32_t qt_st_checkpoint_n_tensors(const qt_st_checkpoint *c);
QT_API const qt_st_tensor *qt_st_checkpoint_tensor(const qt_st_checkpoint *c, int32_t i, int32_t *file_index);
QT_API const qt_st_tensor *qt_st_checkpoint_find(const qt_st_checkpoint *c, const char *name, int32_t *file_index);

/* ---- writer -------------------------------------------------------------------- */
typedef struct qt_st_entry {
    const char *name;
    qt_st_dtype dtype;
    int32_t n_dims;
    int64_t shape[QT_ST_MAX_DIMS];  /* row-major, PyTorch order */
    const void *data;               /* qt_st_write only; streamed writers ignore it */
} qt_st_entry;

typedef struct qt_st_kv {
    const char *key, *value;
} qt_st_kv;

typedef struct qt_st_writer qt_st_writer;

/* Checks the entries (unique UTF-8 names, sizes without overflow, at most
 * QT_ST_MAX_DIMS dims), orders them as the reference writer does and writes the
 * length and header to a temporary file next to `path`. meta may be NULL. */
QT_API qt_status qt_st_writer_open(const char *path, const qt_st_entry *entries, int32_t n,
                            const qt_st_kv *meta, int32_t n_meta, qt_st_writer **out);
/* The same through a staging file (qt_afile_open_staged: resumable runs). With
 * stage->resume_at > 0 the staging file is reopened, must begin with the header
 * this call would write (QT_ERR_FORMAT otherwise: another run's file) and is
 * kept up to resume_at, a boundary between tensors the caller recorded; the
 * caller then writes the tensors after it (qt_st_writer_data_written says how
 * many data bytes are already there). */
QT_API qt_status qt_st_writer_open_staged(const char *path, const qt_st_entry *entries, int32_t n,
                                          const qt_st_kv *meta, int32_t n_meta, const qt_afile_stage *stage,
                                          qt_st_writer **out);
/* Bytes in the file so far (header included), data bytes so far, and an fdatasync of them. */
QT_API uint64_t qt_st_writer_tell(const qt_st_writer *w);
QT_API uint64_t qt_st_writer_data_written(const qt_st_writer *w);
QT_API qt_status qt_st_writer_sync(qt_st_writer *w);
/* Index into `entries` of the k-th tensor in file order: the caller writes data in that order. */
QT_API int32_t qt_st_writer_order(const qt_st_writer *w, int32_t k);
QT_API uint64_t qt_st_entry_nbytes(const qt_st_entry *e); /* prod(shape) * bits / 8; 0 on overflow */
/* Appends tensor bytes (any chunking). */
QT_API qt_status qt_st_writer_write(qt_st_writer *w, const void *buf, size_t n);
/* Checks that exactly the declared bytes were written, fsyncs and renames into place. Frees w. */
QT_API qt_status qt_st_writer_commit(qt_st_writer *w);
QT_API void qt_st_writer_abort(qt_st_writer *w); /* removes the temporary file; NULL ok */
/* Split commit for multi-file writers: finish (fsync) without renaming, then
 * rename every file once all are complete. */
QT_API qt_status qt_st_writer_finish(qt_st_writer *w, qt_afile **file_out);

/* Whole file in one call (entries carry data). */
QT_API qt_status qt_st_write(const char *path, const qt_st_entry *entries, int32_t n,
                      const qt_st_kv *meta, int32_t n_meta);

#ifdef __cplusplus
}
#endif
#endif
