/* libFuzzer target: compressed-tensors quantization_config parsing
 * (lib/io/ct_read.c). An accepted layout must be one the dequantizers can
 * be handed safely: bits 1..8, a positive group for group strategies, a
 * positive block for the block strategy, a known format. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/ct_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    json_t *root = json_loadb((const char *)data, size, 0, NULL);
    if (!root) return 0;
    json_t *qc = json_object_get(root, "quantization_config");
    qt__ct_layout L;
    if (qt__ct_layout_parse("config.json", qc ? qc : root, &L) != QT_OK) {
        if (!qt_last_error()[0]) abort();
    } else if (L.active) {
        if (L.bits < 1 || L.bits > 8 || !L.format[0]) abort();
        if (L.strategy == QT_CT_GROUP && L.group_size <= 0) abort();
        if (L.block && (L.bh <= 0 || L.bw <= 0)) abort();
        /* every group's weights are valid, and a module's layout comes from one of them */
        for (int32_t i = 0; i < L.n_targets; i++)
            if (L.targets[i].strategy == QT_CT_GROUP && L.targets[i].group_size <= 0) abort();
        qt__ct_layout M;
        if (qt__ct_layout_for("config.json", &L, "model.layers.0.mlp.down_proj", &M) != QT_OK) {
            if (!qt_last_error()[0]) abort();
        } else if (M.strategy == QT_CT_GROUP && M.group_size <= 0) {
            abort();
        }
    }
    json_decref(root);
    return 0;
}
