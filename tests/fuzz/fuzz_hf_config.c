/* libFuzzer target: the one config.json reader (lib/io/hf_config.c) and both
 * of its consumers' paths: the shape every consumer resolves (required fields,
 * as plan's spec.c asks) and the engine's hyperparameters (class defaults).
 * Accepted configs must give values the rest of quanta can rely on. */
#include <stdint.h>
#include <stdlib.h>

#include "io/hf_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_shape(const qt_hparams *hp) {
    if (hp->n_vocab < 1 || hp->n_embd < 1 || hp->n_layer < 1 || hp->n_head < 1 || hp->n_head_kv < 1 || hp->n_ff < 1) abort();
    if (hp->n_head % hp->n_head_kv || hp->head_dim < 1 || hp->n_ctx_train < 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    qt_hf_config c;
    qt_clear_error();
    if (qt__hf_config_read_text((const char *)data, size, "config.json", &c) != QT_OK) {
        if (!qt_last_error()[0]) abort();
        return 0;
    }
    qt_hparams hp = {0};
    qt_clear_error();
    if (qt__hf_config_dims(&c, NULL, &hp) == QT_OK) check_shape(&hp);
    else if (!qt_last_error()[0]) abort();
    qt_clear_error();
    if (qt__hf_config_hparams(&c, &hp) != QT_OK) {
        if (!qt_last_error()[0]) abort();
        return 0;
    }
    check_shape(&hp);
    if (hp.head_dim < 2 || hp.head_dim % 2 || hp.n_rot != hp.head_dim) abort();
    if (!(hp.rms_eps > 0) || !(hp.rope_theta > 0) || hp.sliding_window < 0 || hp.arch == QT_ARCH_UNKNOWN) abort();
    if (hp.rope_scaling == QT_ROPE_SCALING_LLAMA3 && (hp.rope_orig_ctx < 1 || !(hp.rope_high_freq_factor > hp.rope_low_freq_factor)))
        abort();
    return 0;
}
