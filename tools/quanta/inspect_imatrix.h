/* tools/quanta/inspect_imatrix.h — `quanta inspect` for importance matrices. */
#ifndef QT_CLI_INSPECT_IMATRIX_H
#define QT_CLI_INSPECT_IMATRIX_H

#include <stdbool.h>

#include "cli.h"

/* A GGUF with general.type "imatrix" (or imatrix.* keys and no architecture),
 * a .dat file, or a file that parses as a legacy imatrix. */
bool inspect_is_imatrix(const char *path);
/* Print it (text, and/or JSON where --json asks); returns the exit code. */
int inspect_imatrix(const char *path, const cli_json *json);

#endif
