/* lib/plan/plan_internal.h — what the planner's files share. */
#ifndef QT_PLAN_INTERNAL_H
#define QT_PLAN_INTERNAL_H

#include <stdio.h>

#include "core/strbuf.h"
#include "quant/recipe.h"
#include "quanta/plan.h"

/* Tensor roles (qt__role) and llama-quantize's type rules are lib/quant/recipe.h's. */

/* One weight tensor of a model shape, named like GGUF (docs/formats.md §2.9) so the
 * llama.cpp type rules can be applied by name. */
typedef struct qt__ptensor {
    char name[32];        /* base name without "blk.N.": "attn_v", "ffn_down_exps", "token_embd" */
    int32_t layer;        /* block index, -1 outside blocks */
    qt__role role;
    int64_t in;           /* ne[0]: row length (in_features) */
    int64_t out;          /* ne[1]: rows (out_features); 1 for vectors */
    int64_t n_mat;        /* experts stacked (ne[2]); 1 otherwise */
    bool replicated;      /* not split by tensor parallelism (norms, routers, MLA down-projections) */
    bool expert;          /* a routed expert's weight: only n_expert_used of n_expert are active */
} qt__ptensor;

/* The tensor list of a model shape (malloc'd; caller frees). */
qt_status qt__plan_tensors(const qt_model_spec *m, qt__ptensor **out, int *n);

/* Bytes one tensor occupies under a scheme (realistic accounting). *scale gets
 * the part that is scales / zero points / indices; *kept16 is set when the
 * tensor stays in 16-bit (or f32) under this scheme. */
double qt__tensor_bytes(const qt_scheme_info *s, const qt_model_spec *m, const qt__ptensor *t,
                        double *scale, bool *kept16);

/* llama.cpp's per-tensor type for a GGUF file type (docs/formats.md §3.6). */
qt_type qt__gguf_tensor_type(const qt_gguf_ftype_info *ft, const qt_model_spec *m, const qt__ptensor *t);

/* Name helpers. */
void qt__norm_name(const char *in, char *out, size_t n);   /* lower-case letters and digits only */
bool qt__name_in_list(const char *name, const char *key, const char *aliases);

/* The SVG/HTML renderers build text in the growable string of lib/core/strbuf.h. */

/* "15.23 GB" (decimal) into buf. */
const char *qt__fmt_gb(double bytes, char *buf, size_t n);

/* Runnability of a scheme on a target (wraps the support matrix with the
 * target-specific rules: bf16 below SM 8.0, planner engines on CPU/Apple). */
qt_support qt__scheme_support(const qt_scheme_info *s, const qt_hw_info *hw, char *reason, size_t n);

#endif
