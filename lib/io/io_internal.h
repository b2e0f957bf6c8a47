/* lib/io/io_internal.h — helpers shared by the readers and writers in lib/io/. */
#ifndef QT_IO_INTERNAL_H
#define QT_IO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "quanta/core.h"
#include "quanta/gguf.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "quanta's file readers assume a little-endian host (GGUF, safetensors and llama2.c are little-endian)"
#endif

/* ---- bump allocator: many small strings freed at once ------------------- */
typedef struct qt__arena_block qt__arena_block;
typedef struct qt__arena {
    qt__arena_block *head;
} qt__arena;

void *qt__arena_alloc(qt__arena *a, size_t n);   /* zeroed, 16-byte aligned; NULL on OOM */
char *qt__arena_strndup(qt__arena *a, const void *s, size_t n); /* NUL-terminated copy */
void qt__arena_free(qt__arena *a);

/* ---- string -> index hash (names are unique) ---------------------------- */
typedef struct qt__name_index {
    int64_t *slots;   /* (cap) index+1, 0 = empty */
    uint64_t cap;     /* power of two */
} qt__name_index;

/* Builds an index over `n` names got through get(ctx, i). Returns the index of
 * the first name that repeats an earlier one in *dup (or -1), QT_ERR_NOMEM on OOM. */
qt_status qt__name_index_build(qt__name_index *ix, int64_t n, const char *(*get)(const void *ctx, int64_t i),
                               const void *ctx, int64_t *dup);
int64_t qt__name_index_find(const qt__name_index *ix, const char *name,
                            const char *(*get)(const void *ctx, int64_t i), const void *ctx);
void qt__name_index_free(qt__name_index *ix);

/* ---- little-endian loads (the host is little-endian, see above) --------- */
static inline uint16_t qt__ld_u16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t qt__ld_u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t qt__ld_u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* ---- Q/K row permutation for arch "llama" (docs/formats.md §2.10) ------------ */
/* HF stores each head's rows as [first halves | second halves] (rotate-half
 * RoPE); llama.cpp's llama arch wants them interleaved. For GGUF row r (of
 * n_rows = n_heads * head_dim), the HF row it comes from. */
static inline int64_t qt__qk_hf_row_for_gguf_row(int64_t r, int64_t head_dim) {
    int64_t h = r / head_dim, w = r % head_dim;
    return h * head_dim + (w % 2) * (head_dim / 2) + w / 2;
}
/* The inverse: for HF row r, the GGUF row it comes from (llama2.c's permute_reverse). */
static inline int64_t qt__qk_gguf_row_for_hf_row(int64_t r, int64_t head_dim) {
    int64_t h = r / head_dim, w = r % head_dim, half = head_dim / 2;
    return h * head_dim + 2 * (w % half) + w / half;
}

/* ---- tensors llama.cpp needs as F32 (docs/formats.md §2.9 "Rules") ---------- */
/* llama.cpp's converter writes every 1-D tensor, every `*_norm.weight` and
 * every bias (a name not ending in "weight") as F32, and its CPU kernels
 * depend on it: an F16/BF16 norm or bias fails at run time with "binary_op:
 * unsupported types". The GGUF writer widens such F16/BF16 tensors to F32
 * (exact); the HF writer narrows them back for GGUF models whose matrices are
 * F16/BF16, when that too is exact. `name` is the canonical GGUF name. */
static inline bool qt__gguf_wants_f32(const char *name, int32_t n_dims) {
    size_t n = strlen(name);
    bool weight = n >= 6 && !strcmp(name + n - 6, "weight");
    bool norm = n >= 12 && !strcmp(name + n - 12, "_norm.weight");
    return n_dims < 2 || norm || !weight;
}

/* ---- element conversion through f32 ------------------------------------ */
/* Row of n elements of `type` -> f32 (F32/F16/BF16 directly, others through the traits). */
qt_status qt__row_to_f32(qt_type type, const void *src, float *dst, int64_t n);
/* f32 row -> `type` (F32/F16/BF16 directly, others through the traits' reference quantizer). */
qt_status qt__row_from_f32(qt_type type, const float *src, void *dst, int64_t n);


/* ---- GGUF v3 from given metadata and tensors (gguf_write.c) ------------- */
/* For files that are not models (imatrix files): the metadata in order, the
 * tensor infos in order (dimensions as ggml records them: up to the last one
 * above 1), alignment 32 (no general.alignment key), each tensor's data
 * padded to it. Atomic, through qt_afile. */
typedef struct qt__gguf_raw_tensor {
    const char *name;
    int64_t ne[QT_MAX_DIMS];   /* ggml order; unused dims 1 */
    qt_type type;
    const void *data;          /* qt_row_size(type, ne[0]) * ne[1] * ne[2] * ne[3] bytes */
} qt__gguf_raw_tensor;
qt_status qt__gguf_write_raw(const char *path, const qt_gguf_kv *kv, int64_t n_kv, const qt__gguf_raw_tensor *t,
                             int64_t n_t);

/* ---- reader entry points on memory (used by open.c and the fuzzers) ------ */
#include "model/model_internal.h"
/* Parse a GGUF image into m; `source` is the map index the bytes belong to
 * (-1 when they are not one of m's maps). The bytes must outlive m. */
qt_status qt__read_gguf_mem(qt_model *m, const void *data, size_t size, int32_t source);
/* Parse a llama2.c checkpoint image (docs/formats.md §6.1) into m, plus an optional
 * tokenizer image (tok may be NULL; it is copied). The checkpoint bytes must outlive m. */
qt_status qt__read_llama2c_mem(qt_model *m, const void *data, size_t size, int32_t source,
                               const void *tok, size_t tok_size, const char *tok_name);
/* Fill m->vocab from a llama2.c tokenizer.bin image for n_vocab tokens (docs/formats.md §6.2). */
qt_status qt__llama2c_read_tokenizer(qt_model *m, const void *data, size_t size, const char *name, int32_t n_vocab);

/* Check that the tensors a known architecture needs exist with the exact
 * shapes llama.cpp expects (docs/formats.md §2.7, §2.9); sets tie_embeddings,
 * attn_qkv_bias and attn_qk_norm from what is present. Models of unknown
 * architecture pass unchecked. */
qt_status qt__model_check_tensors(qt_model *m);
/* True when data looks like a legacy/v1 llama2.c checkpoint: a plausible
 * header whose implied size is exactly `size`. */
bool qt__llama2c_sniff(const void *data, size_t size);

/* ---- outputs ---------------------------------------------------------- */
/* QT_ERR_ARG when out names the model's path or one of the files it maps
 * (device and inode compared, so links and other spellings are caught). */
typedef struct qt_model qt_model;
qt_status qt__refuse_input(const qt_model *m, const char *out);
/* Removes a compressed-tensors staging directory (OUT.partial, ct_write.c): its regular files,
 * then itself; anything else in it is QT_ERR_IO and nothing is removed past it. Absent: QT_OK. */
qt_status qt__remove_stage_dir(const char *dir);

/* A resume state file (quantize's OUT.partial.state, GPTQ's OUT.partial.layers.state, a
 * compressed-tensors run's): the JSON (json_dumps flags), a newline, written to a temporary
 * beside path and renamed over it, so a reader sees the old state or the new, never half. */
struct json_t;
qt_status qt__json_write_atomic(const char *path, const struct json_t *j, size_t flags);


/* Drop the whole pages of tensor t of checkpoint c from residency (its file mapping is
 * read-only: they read back from the file if touched again); t outside c's maps: nothing. */
struct qt_st_checkpoint;
struct qt_st_tensor;
void qt__st_checkpoint_drop_pages(const struct qt_st_checkpoint *c, const struct qt_st_tensor *t);

#endif
