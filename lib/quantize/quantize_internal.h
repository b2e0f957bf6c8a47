/* lib/quantize/quantize_internal.h — what lib/quantize shares inside itself and with eval (internal). */
#ifndef QT_QUANTIZE_INTERNAL_H
#define QT_QUANTIZE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "quanta/imatrix.h"
#include "quanta/quantize.h"

/* Calls fn(ctx, hash) for the FNV-1a hash of every 13-word shingle of t, in
 * text order (the held-out check samples evaluation text with the same rule). */
void qt__calib_shingle_scan(const uint8_t *t, size_t len, void (*fn)(void *, uint64_t), void *ctx);
/* The calibration text of a file's bytes (quanta/quantize.h, rule step 1):
 * plain text as it is, JSONL's "text" fields joined by "\n\n"; *out is
 * malloc'd and NUL-terminated; errors name path and line. */
qt_status qt__calib_text(const char *path, const char *data, size_t size, char **out, size_t *out_len);
typedef struct qt__qplan_priv {
    qt_imatrix *im;              /* NULL without --imatrix */
    const qt_tensor *first;      /* the model's tensor array: plan index = tensor - first */
    int32_t *plan_index;         /* (model tensors) index into tensors[], -1: not written */
    int32_t n_model_tensors;
    char **fallback_strs;        /* (n_fallbacks) "name: wanted -> type" for quanta.fallbacks */
} qt__qplan_priv;

/* Tensor data an algorithm computed itself (GPTQ), written instead of the
 * pipeline's rounding. */
typedef struct qt__quantize_given {
    const uint8_t *const *data;  /* (p->n_tensors) in the planned type, or NULL: quantize as usual */
} qt__quantize_given;

/* The writer options both the estimate and the run use (types, metadata).
 * given may be NULL. */
qt_status qt__quantize_write(const qt_model *m, const char *path, const qt_quantize_opts *o, qt_quantize_plan *p,
                             uint64_t *size_only, const qt__quantize_given *given);

#endif
