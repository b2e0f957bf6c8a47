/* lib/io/imatrix_internal.h — the importance-matrix object shared by the GGUF
 * reader and writer (imatrix.c) and the legacy .dat reader (imatrix_dat.c). */
#ifndef QT_IO_IMATRIX_INTERNAL_H
#define QT_IO_IMATRIX_INTERNAL_H

#include "io_internal.h"
#include "quanta/imatrix.h"

struct qt_imatrix {
    char *name;                 /* path or given name, for messages */
    qt_imatrix_format format;
    qt_mmap map;                /* owned when opened from a path */
    qt_gguf *gguf;              /* GGUF files: the container the values live in */
    int64_t chunk_count, chunk_size;
    int64_t n_datasets;
    const char **datasets;      /* (n_datasets) */
    int64_t n, cap;
    qt_imatrix_entry *entries;  /* (n) */
    const uint8_t **values;     /* (n) little-endian f32 in the file, not necessarily aligned */
    qt__name_index index;
    qt__arena arena;            /* names, counts, datasets */
};

/* Append an entry (name copied, counts copied); checks that every value is
 * finite and >= 0 and every count >= 0, and that the name is new. `what`
 * names the entry in messages ("entry 3", "tensor 'x.in_sum2'"). */
qt_status qt__imatrix_add(qt_imatrix *im, const char *what, const char *name, size_t name_len, int64_t n_values,
                          int64_t n_cols, int64_t n_counts, const int64_t *counts, const uint8_t *values);

/* Parse a legacy .dat image into im (imatrix_dat.c). */
qt_status qt__imatrix_parse_dat(qt_imatrix *im, const uint8_t *data, size_t size);

#endif
