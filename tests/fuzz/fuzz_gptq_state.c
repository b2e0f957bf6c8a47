/* libFuzzer target: GPTQ's layer state file (OUT.partial.layers.state) read by
 * --resume (qt__gptq_state_check, lib/quantize/gptq_state.c), checked against a
 * fixed run: identity, calibration SHA-256, a plan of 8 tensors of 100 bytes
 * each, KV maxima for 4 values. An accepted state must name distinct tensors of
 * the plan adding up to its bytes_done, and no more layers than it may. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quantize/quantize_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The run the seed in corpus/fuzz_gptq_state/ describes. */
static const char now_text[] =
    "{\"quanta_gptq_layers\": 1, \"identity\": {\"quanta_quantize_state\": 1, \"input\": {\"path\": \"/m/in.gguf\","
    " \"bytes\": 1185376, \"mtime_ns\": 1, \"head_sha256\": \"00\"}, \"options\": {\"scheme\": \"Q4_0\","
    " \"command_line\": \"quanta quantize in.gguf out.gguf --algo gptq\"}, \"output_bytes\": 4096},"
    " \"calibration_sha256\": \"ab\"}";

enum { N_TENSORS = 8, TENSOR_BYTES = 100, N_AMAX = 4 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static json_t *now;
    if (!now && !(now = json_loads(now_text, 0, NULL))) abort();
    qt_quantize_tensor t[N_TENSORS];
    memset(t, 0, sizeof t);
    for (int i = 0; i < N_TENSORS; i++) t[i].bytes = TENSOR_BYTES;
    qt_quantize_plan p;
    memset(&p, 0, sizeof p);
    p.n_tensors = N_TENSORS;
    p.tensors = t;
    json_t *st = NULL;
    int32_t layers = -1;
    uint64_t bytes = 0;
    if (qt__gptq_state_check("out.gguf.partial.layers.state", (const char *)data, size, now, &p, N_AMAX, &st, &layers,
                             &bytes) != QT_OK) {
        if (st || !strstr(qt_last_error(), "out.gguf.partial.layers.state")) abort();
        return 0;
    }
    if (!st || layers < 0 || bytes > (uint64_t)N_TENSORS * TENSOR_BYTES || bytes % TENSOR_BYTES) abort();
    json_decref(st);
    return 0;
}
