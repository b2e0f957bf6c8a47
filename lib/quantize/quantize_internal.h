/* lib/quantize/quantize_internal.h — what the plan hands the run. */
#ifndef QT_QUANTIZE_INTERNAL_H
#define QT_QUANTIZE_INTERNAL_H

#include "quanta/imatrix.h"
#include "quanta/quantize.h"

typedef struct qt__qplan_priv {
    qt_imatrix *im;              /* NULL without --imatrix */
    const qt_tensor *first;      /* the model's tensor array: plan index = tensor - first */
    int32_t *plan_index;         /* (model tensors) index into tensors[], -1: not written */
    int32_t n_model_tensors;
    char **fallback_strs;        /* (n_fallbacks) "name: wanted -> type" for quanta.fallbacks */
} qt__qplan_priv;

/* The writer options both the estimate and the run use (types, metadata). */
qt_status qt__quantize_write(const qt_model *m, const char *path, const qt_quantize_opts *o, qt_quantize_plan *p,
                             uint64_t *size_only);

#endif
