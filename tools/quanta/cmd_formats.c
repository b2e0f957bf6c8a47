/* `quanta formats`: the weight formats quanta knows, from the traits table. */
#include <string.h>

#include "cli.h"

static void help(void) {
    printf("usage: quanta formats [--json]\n\n"
           "List every tensor storage format with its block size and bits per weight.\n\n"
           "  --json    machine-readable output\n");
}

int cmd_formats(int argc, char **argv) {
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { help(); return CLI_OK; }
        else if (!strcmp(argv[i], "--json")) json = 1;
        else return cli_usage("formats", "unknown option '%s'", argv[i]);
    }
    if (json) printf("[\n");
    int first = 1;
    for (int t = 0; t < QT_TYPE_COUNT; t++) {
        const qt_type_traits *tr = qt_type_get((qt_type)t);
        if (!tr) continue;
        if (json) {
            printf("%s  {\"name\": \"%s\", \"ggml_type\": %d, \"block_elems\": %lld, \"block_bytes\": %zu, \"bpw\": %.4f}",
                   first ? "" : ",\n", tr->name, t, (long long)tr->block_elems, tr->block_bytes,
                   qt_type_bits_per_weight((qt_type)t));
        } else {
            if (first) printf("%-8s %5s %6s %6s %8s\n", "format", "id", "block", "bytes", "bpw");
            printf("%-8s %5d %6lld %6zu %8.4f\n", tr->name, t, (long long)tr->block_elems, tr->block_bytes,
                   qt_type_bits_per_weight((qt_type)t));
        }
        first = 0;
    }
    if (json) printf("\n]\n");
    return CLI_OK;
}
