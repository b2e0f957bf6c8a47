/* `quanta formats`: every weight format quanta knows (the planner's vocabulary). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(void) {
    printf("usage: quanta formats [--json[=FILE]] [-q]\n\n"
           "List every weight format quanta knows: family, bits per weight (scales and zero\n"
           "points included), elements per block/group, what it is for, which engines read it.\n\n"
           "  --json[=FILE]  machine-readable output (array of objects) on stdout, or in FILE\n"
           "  -q, --quiet    accepted for uniformity (formats writes nothing on stderr)\n\n"
           "Every name here is accepted as a --scheme where a planned scheme stores that format\n"
           "(w4a16-g128 = w4a16, f16 = fp16); the others get the nearest planned scheme.\n");
}

static int print_json(const cli_json *j) {
    json_t *arr = json_array();
    for (int i = 0; i < qt_format_count(); i++) {
        const qt_format_info *f = qt_format_at(i);
        json_t *o = json_pack("{s:s, s:s, s:f, s:I, s:s, s:s}", "name", f->name, "family",
                              qt_format_family_name(f->family), "bits_per_weight", f->bits_per_weight,
                              "block_elems", (json_int_t)f->block_elems, "use", f->use, "engines", f->engines);
        if (f->ggml_type >= 0) json_object_set_new(o, "ggml_type", json_integer(f->ggml_type));
        else json_object_set_new(o, "ggml_type", json_null());
        json_object_set_new(o, "compressed_tensors_format", f->ct_format ? json_string(f->ct_format) : json_null());
        json_object_set_new(o, "bits", json_integer(f->bits));
        json_object_set_new(o, "symmetric", json_boolean(f->symmetric));
        json_object_set_new(o, "scale", json_string(f->scale));
        json_object_set_new(o, "tensor_codec", json_boolean(f->quantize != NULL));
        json_array_append_new(arr, o);
    }
    return cli_json_emit_tree(j, arr, 0, "formats");
}

static void print_table(void) {
    printf("%-16s %-19s %7s %6s  %-60s %s\n", "format", "family", "bpw", "block", "use", "engines");
    for (int i = 0; i < qt_format_count(); i++) {
        const qt_format_info *f = qt_format_at(i);
        char block[24];
        if (f->block_elems > 0) snprintf(block, sizeof block, "%lld", (long long)f->block_elems);
        else snprintf(block, sizeof block, "tensor");
        printf("%-16s %-19s %7.4f %6s  %-60s %s\n", f->name, qt_format_family_name(f->family),
               f->bits_per_weight, block, f->use, f->engines);
    }
    printf("\nbpw = bits per weight including scales/zero points; per-channel scale overhead assumes\n"
           "4096-wide rows. block = elements sharing one scale (1 = per channel, tensor = one scale).\n");
}

int cmd_formats(int argc, char **argv) {
    cli_json json = {0};
    for (int i = 1; i < argc; i++) {
        int j = cli_json_arg("formats", argv[i], &json);
        if (j < 0) return CLI_USAGE;
        if (j || cli_is_quiet(argv[i])) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { help(); return CLI_OK; }
        return cli_usage("formats", "unknown option '%s'", argv[i]);
    }
    int rc = json.on ? print_json(&json) : CLI_OK;
    if (!rc && (!json.on || json.file)) print_table();
    return rc;
}
