/* lib/quantize/act_amax.c — static activation ranges (quanta/quantize.h,
 * qt_calib_act_amax): the absmax of every linear's input over the whole
 * calibration set, llm-compressor's static minmax observer for per-tensor
 * input_activations (the FP8 preset), observed through the engine's
 * layer-wise seam (qt_layerwise_*). A maximum does not depend on the order
 * rows arrive in, so neither batching nor threads change a bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quanta/engine.h"
#include "quanta/model.h"
#include "quanta/quantize.h"

typedef struct amax_acc {
    qt_act_amax *a;
    int32_t cap;
    qt_status err;
} amax_acc;

static int32_t slot(amax_acc *c, const char *name) {
    qt_act_amax *a = c->a;
    for (int32_t i = 0; i < a->n; i++)
        if (!strcmp(a->names[i], name)) return i;
    if (a->n == c->cap) {
        const int32_t cap = c->cap ? 2 * c->cap : 64;
        char (*nn)[64] = realloc(a->names, (size_t)cap * sizeof *nn);
        if (nn) a->names = nn;
        float *na = realloc(a->amax, (size_t)cap * sizeof *na);
        if (na) a->amax = na;
        if (!nn || !na) return -1;
        c->cap = cap;
    }
    snprintf(a->names[a->n], sizeof a->names[0], "%s", name);
    a->amax[a->n] = 0.0f;
    return a->n++;
}

static void observe(void *user, int32_t layer, const char *linear, const float *x, int32_t n_tokens, int32_t n_in) {
    amax_acc *c = user;
    if (c->err != QT_OK || layer < 0) return;
    char name[64];
    snprintf(name, sizeof name, "blk.%d.%s.weight", layer, linear);
    const int32_t k = slot(c, name);
    if (k < 0) { c->err = qt_error(QT_ERR_NOMEM, "calibration: out of memory"); return; }
    float m = c->a->amax[k];
    for (int64_t i = 0; i < (int64_t)n_tokens * n_in; i++) {
        const float v = fabsf(x[i]);
        if (!(v <= m)) m = v; /* a NaN sticks, and is refused below */
    }
    c->a->amax[k] = m;
}

void qt_act_amax_free(qt_act_amax *a) {
    if (!a) return;
    free(a->names);
    free(a->amax);
    memset(a, 0, sizeof *a);
}

float qt_act_amax_get(const qt_act_amax *a, const char *name) {
    for (int32_t i = 0; i < a->n; i++)
        if (!strcmp(a->names[i], name)) return a->amax[i];
    return NAN;
}

qt_status qt_calib_act_amax(const qt_model *m, qt_engine_ctx *e, const qt_calib_set *s, qt_progress progress,
                            qt_act_amax *out) {
    memset(out, 0, sizeof *out);
    amax_acc c = {.a = out};
    const int32_t n_layer = qt_model_hparams(m)->n_layer;
    qt_status st = QT_OK;
    for (int32_t i = 0; st == QT_OK && i < s->n_samples; i++) {
        qt_layerwise *lw = NULL;
        st = qt_layerwise_new(e, s->tokens + (size_t)i * s->seq_len, 1, s->seq_len, &lw);
        for (int32_t l = 0; st == QT_OK && l < n_layer; l++) {
            st = qt_layerwise_run_layer(lw, observe, &c);
            if (st == QT_OK) st = c.err;
        }
        qt_layerwise_free(lw);
        if (st == QT_OK) qt_progress_report(&progress, "activation ranges", i + 1, s->n_samples);
    }
    for (int32_t i = 0; st == QT_OK && i < out->n; i++)
        if (!isfinite(out->amax[i]))
            st = qt_error(QT_ERR_FORMAT, "calibration: %s: an input activation is not finite", out->names[i]);
    if (st == QT_OK && out->n == 0) st = qt_error(QT_ERR_FORMAT, "calibration: the model has no linear to observe");
    if (st != QT_OK) qt_act_amax_free(out);
    return st;
}
