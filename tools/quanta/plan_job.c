/* `quanta plan`'s quanta job: the peak of `quanta quantize --algo gptq` onto the
 * recommended scheme on this machine, from the checkpoint's own tensors and
 * plan (qt_gptq_memory_estimate, the same estimate `quantize --dry-run`
 * prints; docs/gptq.md "Memory"). Only for a local checkpoint: a preset or a
 * config.json has no tensors to plan. */
#include <string.h>

#include "plan_cli.h"

/* The estimate for `scheme` (a GGUF file type or a compressed-tensors scheme) with
 * n_seq x n_tok calibration tokens, without the process's own resident memory
 * (base 0: quantize adds its VmRSS at the start). false when the model cannot
 * be opened or the scheme has no GPTQ run. */
bool plan_gptq_job(const char *path, const char *scheme, int32_t n_seq, int32_t n_tok, qt_gptq_memory *out) {
    qt_model *m;
    if (qt_model_open(path, &m) != QT_OK) return false;
    bool ok = false;
    const int threads = qt_default_threads();
    qt_ct_int_args ia;
    if (qt_gguf_ftype_find(scheme)) {
        qt_quantize_opts o = qt_quantize_opts_default();
        o.scheme = scheme;
        o.algorithm = "gptq";
        qt_quantize_plan *p = NULL;
        if (qt_quantize_plan_make(m, &o, &p) == QT_OK) {
            qt_gptq_memory_estimate(m, p, 0, NULL, n_seq, n_tok, threads, 0, 0, out);
            ok = true;
        }
        qt_quantize_plan_free(p);
    } else if (qt_ct_int_scheme(m, scheme, &ia) == QT_OK) {
        qt_gptq_memory_estimate(m, NULL, ia.strategy == QT_CT_GROUP ? ia.group_size : 0, NULL, n_seq, n_tok, threads, 0,
                                0, out);
        ok = true;
    }
    qt_model_free(m);
    return ok;
}
