/* libFuzzer target: the calibration file reader (qt__calib_text,
 * lib/quantize/calib_set.c): plain text, or JSONL with a "text" string per
 * line ("messages" lines are refused: no model, no chat template). A failure must name the file; a success gives NUL-terminated text no
 * longer than the input (JSON escapes only shrink; one "\n\n" joins lines of
 * at least 11 bytes). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quantize/quantize_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = NULL;
    size_t len = 0;
    if (qt__calib_text("fuzz.jsonl", (const char *)data, size, NULL, &text, &len, NULL, NULL) != QT_OK) {
        if (!strstr(qt_last_error(), "fuzz.jsonl")) abort();
        if (text) abort();
        return 0;
    }
    if (!text || len > size || text[len] != '\0') abort();
    free(text);
    return 0;
}
