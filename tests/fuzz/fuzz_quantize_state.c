/* libFuzzer target: the quantize state file (OUT.partial.state) read by
 * --resume (qt__resume_state_check, lib/quantize/resume.c), checked against
 * a fixed run: input identity, options and output size. An accepted state
 * must give a resume point inside the plan (tensors 0..n+1, bytes 1..size)
 * and finite-or-infinite numbers only for tensors it claims complete. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quantize/quantize_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The run the seeds in corpus/fuzz_quantize_state/ describe. */
static const char now_text[] =
    "{\"quanta_quantize_state\": 1, \"input\": {\"path\": \"/m/in.gguf\", \"bytes\": 6062400, \"mtime_ns\": 1,"
    " \"head_sha256\": \"00\"}, \"options\": {\"scheme\": \"Q4_K_M\", \"imatrix_sha256\": \"\", \"tensor-type\": [],"
    " \"keep\": [], \"output-tensor-type\": null, \"token-embedding-type\": null, \"pure\": false,"
    " \"leave-output-tensor\": false, \"allow-requantize\": false, \"command_line\": \"quanta quantize in.gguf out.gguf\"},"
    " \"output_bytes\": 1048576}";

enum { N_TENSORS = 8 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static json_t *now;
    if (!now && !(now = json_loads(now_text, 0, NULL))) abort();
    qt_quantize_tensor t[N_TENSORS];
    memset(t, 0, sizeof t);
    qt_quantize_plan p;
    memset(&p, 0, sizeof p);
    p.n_tensors = N_TENSORS;
    p.tensors = t;
    p.output_bytes = 1048576;
    int32_t done = -1;
    uint64_t bytes = 0;
    if (qt__resume_state_check("out.gguf.partial.state", (const char *)data, size, now, &p, &done, &bytes) != QT_OK) {
        if (!strstr(qt_last_error(), "out.gguf.partial.state")) abort();
        return 0;
    }
    if (done < 0 || done > N_TENSORS + 1 || bytes == 0 || bytes > p.output_bytes) abort();
    for (int i = 0; i < N_TENSORS; i++)
        if (t[i].measured && (i >= done || isnan(t[i].snr_db))) abort();
    return 0;
}
