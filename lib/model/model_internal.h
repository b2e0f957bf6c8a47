/* lib/model/model_internal.h — the model object behind the opaque qt_model,
 * and the builder functions readers use to fill it. */
#ifndef QT_MODEL_INTERNAL_H
#define QT_MODEL_INTERNAL_H

#include "quanta/model.h"

struct qt_model {
    char *path;                /* what the user opened */
    const char *source_format; /* "gguf", "safetensors", "llama2c" (static string) */
    qt_hparams hp;
    qt_vocab vocab;            /* strings owned by the model */
    qt_tensor *tensors;        /* (n_tensors) */
    int32_t n_tensors, cap_tensors;
    qt_mmap *maps;             /* (n_maps) source files, mapped read-only */
    int32_t n_maps;
    void **owned;              /* (n_owned) heap buffers freed with the model */
    int32_t n_owned, cap_owned;
    void *reader_state;        /* optional: reader-specific data (e.g. the parsed GGUF) */
    void (*reader_free)(void *);
};

qt_status qt__model_new(const char *path, const char *source_format, qt_model **out);
/* Appends a copy of *t; refuses duplicate names (QT_ERR_FORMAT, naming the tensor). */
qt_status qt__model_add_tensor(qt_model *m, const qt_tensor *t);
/* Takes ownership of an open map; returns its index (source id) or -1 on OOM. */
int32_t qt__model_add_map(qt_model *m, qt_mmap *map);
/* True if [p, p + n) lies inside one of the model's read-only file mappings
 * (so its pages may be dropped: they read back from the file). */
bool qt__model_in_map(const qt_model *m, const void *p, size_t n);
/* Drop the whole pages inside [p, p + n) when that range lies in one of the
 * model's read-only file mappings (they read back from the file if touched
 * again, so this only bounds residency); anything else (an owned buffer, which
 * MADV_DONTNEED would zero) is left alone. */
void qt__model_drop_pages(const qt_model *m, const void *p, size_t n);
/* Drop the pages of the window-aligned span around [p, p + n) (window a power
 * of two; partial pages included) that lie wholly inside [lo, lo + lo_n), a
 * tensor in a read-only file mapping: the rows a lookup read, with the
 * neighbours the kernel's fault-around mapped beside them. Nothing outside
 * the tensor is touched; anything not in a mapping is left alone. */
void qt__model_drop_window(const qt_model *m, const void *p, size_t n, const void *lo, size_t lo_n, size_t window);
/* Heap memory freed with the model (zeroed). NULL on OOM (error set). */
void *qt__model_alloc(qt_model *m, size_t n);
char *qt__model_strdup(qt_model *m, const char *s);
/* Element count of a tensor (product of ne). */
int64_t qt__tensor_nelements(const qt_tensor *t);

/* Readers (one per source format). Each fills hp, vocab and the tensor table. */
qt_status qt__read_gguf(qt_model *m, const char *path);
qt_status qt__read_llama2c(qt_model *m, const char *path);
qt_status qt__read_hf_dir(qt_model *m, const char *dir);

/* HF tokenizer.json (+ optional tokenizer_config.json) -> m->vocab
 * (lib/model/vocab_hf.c). Called by qt__read_hf_dir after m->hp is set.
 * Besides real byte-level BPE files it must read back what qt_hf_write
 * writes for SentencePiece vocabularies (docs/hf.md "tokenizer.json we
 * write"): a "Unigram" model with [piece, score] pairs, byte_fallback true,
 * unk_id, added_tokens marking CONTROL (special) / USER_DEFINED (not special)
 * ids, "<0xNN>" pieces = BYTE, a Prepend("\u2581") normalizer = add_space_prefix,
 * bos/eos/unk/pad and add_bos/add_eos from tokenizer_config.json. */
qt_status qt__vocab_load_hf(qt_model *m, const char *tokenizer_json_path, const char *tokenizer_config_path_or_NULL);

#endif
