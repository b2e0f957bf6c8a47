/* libFuzzer target: the state file of a resumable compressed-tensors run
 * (OUT.partial.state, qt__ct_resume_state_check, lib/io/ct_resume.c) checked
 * against a fixed run: input identity, options, output size, 3 shards, 20
 * stored tensors. An accepted state must give a resume point inside that
 * plan: complete shards with positive sizes, a shard begun only with bytes
 * recorded for it, and no more tensors done than the run stores. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/ct_resume.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The run the seeds in corpus/fuzz_ct_state/ describe. */
static const char now_text[] =
    "{\"quanta_quantize_state\": 1, \"output\": \"compressed-tensors\", \"quanta_version\": \"0.1.0\","
    " \"input\": {\"path\": \"/m/in.gguf\", \"bytes\": 6062400, \"mtime_ns\": 1, \"head_sha256\": \"00\"},"
    " \"options\": {\"scheme\": \"w4a16\", \"keep\": [], \"max-shard-size\": 150000, \"algo\": \"rtn\","
    " \"command_line\": \"quanta quantize in.gguf out --scheme w4a16\"}, \"output_bytes\": 400000,"
    " \"shards\": 3, \"stored_tensors\": 20}";

enum { N_SHARDS = 3, N_STORED = 20 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static json_t *now;
    if (!now && !(now = json_loads(now_text, 0, NULL))) abort();
    uint64_t shard_bytes[N_SHARDS + 1] = {0};
    qt__ct_progress at = {.shard_bytes = shard_bytes};
    if (qt__ct_resume_state_check("out.partial.state", (const char *)data, size, now, N_SHARDS, &at) != QT_OK) {
        if (!strstr(qt_last_error(), "out.partial.state")) abort();
        return 0;
    }
    if (at.shards_done < 0 || at.shards_done > N_SHARDS) abort();
    for (int32_t i = 0; i < at.shards_done; i++)
        if (shard_bytes[i] == 0) abort();
    if (at.shard_tensors < 0 || at.shard_tensors > N_STORED || (at.shard_tensors == 0) != (at.shard_at == 0)) abort();
    if (at.shards_done == N_SHARDS && at.shard_tensors) abort();
    if (at.tensors_done < at.shard_tensors || at.tensors_done > N_STORED) abort();
    return 0;
}
