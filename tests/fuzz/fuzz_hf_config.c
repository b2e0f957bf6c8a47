/* libFuzzer target: config.json parsing (lib/io/hf_config.c). Accepted
 * configs must give hyperparameters the rest of quanta can rely on. */
#include <stdint.h>
#include <stdlib.h>

#include "io/hf_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    qt_hparams hp;
    if (qt__hf_config_parse((const char *)data, size, "config.json", &hp) != QT_OK) {
        if (!qt_last_error()[0]) abort();
        return 0;
    }
    if (hp.n_vocab < 1 || hp.n_embd < 1 || hp.n_layer < 1 || hp.n_head < 1 || hp.n_head_kv < 1 || hp.n_ff < 1) abort();
    if (hp.n_head % hp.n_head_kv || hp.head_dim < 2 || hp.head_dim % 2 || hp.n_rot != hp.head_dim) abort();
    if (!(hp.rms_eps > 0) || !(hp.rope_theta > 0) || hp.sliding_window < 0 || hp.arch == QT_ARCH_UNKNOWN) abort();
    if (hp.rope_scaling == QT_ROPE_SCALING_LLAMA3 && (hp.rope_orig_ctx < 1 || !(hp.rope_high_freq_factor > hp.rope_low_freq_factor)))
        abort();
    return 0;
}
