/* libFuzzer target: the layer state of a calibrated run onto compressed-tensors
 * (OUT.partial.layers.state) read by --resume (qt__ct_layers_check,
 * lib/quantize/gptq_ct_state.c), checked against a fixed run's identity with KV
 * maxima for 8 values. An accepted state must have records whose bytes (codes
 * offset, the f32 values, a vector's values) lie within its bytes_done. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quantize/quantize_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The run the seed in corpus/fuzz_ct_layers/ describes. */
static const char identity_text[] =
    "{\"input\": {\"path\": \"/m/in.gguf\", \"bytes\": 1185376, \"mtime_ns\": 1, \"head_sha256\": \"00\"},"
    " \"options\": {\"scheme\": \"w4a16\", \"algo\": \"awq\", \"command_line\": \"quanta quantize in.gguf out --algo awq\","
    " \"calibration\": {\"quanta.calibration.sha256\": \"ab\"}, \"group-size\": 64}, \"output_bytes\": 0}";

enum { N_AMAX = 8 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static json_t *id;
    if (!id && !(id = json_loads(identity_text, 0, NULL))) abort();
    json_t *st = NULL;
    if (qt__ct_layers_check("out.partial.layers.state", (const char *)data, size, id, N_AMAX, &st) != QT_OK) {
        if (st || !strstr(qt_last_error(), "out.partial.layers.state")) abort();
        return 0;
    }
    const json_int_t bytes = json_integer_value(json_object_get(st, "bytes_done"));
    const json_t *rec = json_object_get(st, "records"), *e;
    size_t i;
    json_array_foreach(rec, i, e) {
        const json_t *n = json_object_get(e, "n");
        const json_int_t end = json_is_string(json_object_get(e, "vector")) ? json_integer_value(json_object_get(e, "off")) + 4 * json_integer_value(n)
                                 : json_integer_value(json_object_get(e, "f32")) +
                                       4 * json_integer_value(json_object_get(e, "rows")) *
                                           json_integer_value(json_object_get(e, "cols"));
        if (end > bytes) abort();
    }
    json_decref(st);
    return 0;
}
