/* libFuzzer target: the task file of `quanta eval --tasks` (qt_tasks_parse,
 * lib/eval/tasks.c), and every accepted item's checks run on the input itself
 * as if it were a model's output. A failure must name the file and leave no
 * set; an accepted set must have items with an id and checks, and each check
 * must run without error (the parser validated it). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quanta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    qt_task_set *set = NULL;
    if (qt_tasks_parse((const char *)data, size, "fuzz.jsonl", &set) != QT_OK) {
        if (!strstr(qt_last_error(), "fuzz.jsonl") || set) abort();
        return 0;
    }
    char *out = malloc(size + 1);
    if (!out) abort();
    memcpy(out, data, size);
    out[size] = '\0';
    for (int32_t i = 0; i < set->n_items; i++) {
        const qt_task_item *it = &set->items[i];
        if (!it->id || it->n_checks < 1 || (!it->prompt == !it->messages)) abort();
        for (int32_t j = 0; j < it->n_checks; j++) {
            bool pass;
            char why[QT_CHECK_WHY_LEN];
            if (it->checks[j].type != QT_CHECK_CHOICE && qt_task_check_run(&it->checks[j], out, &pass, why) != QT_OK) abort();
        }
    }
    free(out);
    qt_tasks_free(set);
    return 0;
}
