/* `quanta hw`: the hardware table and the support matrix, or one cell of it with the reason. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "plan_cli.h"

static void help(void) {
    printf("usage: quanta hw [--gpu G] [--scheme S] [--list] [--json[=FILE]] [-q]\n\n"
           "Without options: the support matrix (which formats run on which GPU generation).\n"
           "  --list       the hardware table: memory (vendor GB = 1e9 bytes), bandwidth, compute capability,\n"
           "               dense tensor throughput\n"
           "  --gpu G      every format on that hardware, with the reason\n"
           "  --scheme S   that format (a --scheme of quanta estimate, or a matrix row such as fp8-kv) on\n"
           "               every listed hardware\n"
           "  --gpu G --scheme S   one cell, with the reason\n"
           "  --json[=FILE] machine-readable output on stdout, or in FILE (the text then still on stdout)\n"
           "  -q, --quiet  accepted for uniformity (hw writes nothing on stderr)\n\n"
           "Sources: vLLM's quantization supported-hardware table and FP8 pages, llama.cpp's backends,\n"
           "vendor datasheets (docs/plan.md). Y = runs, ~ = runs with a caveat, - = does not run.\n");
}

static char mark(qt_support s) { return s == QT_SUPPORT_YES ? 'Y' : (s == QT_SUPPORT_PARTIAL ? '~' : '-'); }
static const char *sname(qt_support s) { return s == QT_SUPPORT_YES ? "yes" : (s == QT_SUPPORT_PARTIAL ? "partial" : "no"); }

static void print_matrix(void) {
    printf("%-48s", "format \\ hardware");
    for (int c = 0; c < QT_HW_CLASS_COUNT; c++) printf(" %-9s", qt_hw_class_name((qt_hw_class)c));
    printf("\n");
    for (int i = 0; i < qt_support_row_count(); i++) {
        const qt_support_row *r = qt_support_row_get(i);
        printf("%-48s", r->title);
        for (int c = 0; c < QT_HW_CLASS_COUNT; c++) printf(" %-9c", mark(r->cell[c].s));
        printf("\n");
    }
    printf("\nVolta = SM 7.0, Turing = 7.5, Ampere = 8.0/8.6, Ada = 8.9, Hopper = 9.0, Blackwell = 10.0/12.0;\n"
           "CDNA2 = AMD MI200, CDNA3 = MI300. The FP8 KV cache is keyed to CUDA >= 11.8 (or ROCm), not to the\n"
           "compute capability. 'quanta hw --gpu G --scheme S' gives the reason for one cell.\n");
}

static void print_list(void) {
    printf("%-11s %-22s %-10s %4s %7s %-8s %8s %7s %7s %7s %7s\n", "key", "name", "class", "cc", "memory", "type",
           "GB/s", "TF16", "INT8", "FP8", "FP4");
    for (int i = 0; i < qt_hw_count(); i++) {
        const qt_hw_info *h = qt_hw_get(i);
        char cc[32] = "-";
        if (h->cc) snprintf(cc, sizeof cc, "%d.%d", h->cc / 10, h->cc % 10);
        char mem[16] = "(RAM)";
        if (h->mem_gb > 0) snprintf(mem, sizeof mem, "%.0f GB", h->mem_gb);
        printf("%-11s %-22s %-10s %4s %7s %-8s %8.0f %7.0f %7.0f %7.0f %7.0f\n", h->key, h->name,
               qt_hw_class_name(h->cls), cc, mem, h->mem_type, h->bw_gbs, h->tflops_16, h->tops_int8, h->tflops_fp8,
               h->tflops_fp4);
    }
    printf("(memory: vendor GB = 1e9 bytes; throughput: dense TFLOPS/TOPS from datasheets, 0 = none or unpublished)\n");
}

/* A --scheme value names a scheme (its support row) or a matrix row directly. */
static int resolve_row(const char *name, qt_scheme_info *tmp, const qt_scheme_info **out) {
    const qt_scheme_info *s = qt_scheme_resolve(name);
    if (s) { *out = s; return CLI_OK; }
    const qt_support_row *r = qt_support_row_find(name);
    if (!r) return cli_scheme("hw", name, out); /* the usage error, with suggestions */
    memset(tmp, 0, sizeof *tmp);
    tmp->key = r->key;
    tmp->title = r->title;
    tmp->support_row = r->key;
    *out = tmp;
    return CLI_OK;
}

static int find_hw(const char *name, const qt_hw_info **out) {
    *out = qt_hw_find(name);
    if (*out) return CLI_OK;
    const char *near[3];
    int k = qt_plan_suggest(name, 0, near, 3);
    if (!k) return cli_usage("hw", "unknown GPU '%s' (quanta hw --list shows them)", name);
    return cli_usage("hw", "unknown GPU '%s'; did you mean %s%s%s%s%s?", name, near[0], k > 1 ? ", " : "",
                     k > 1 ? near[1] : "", k > 2 ? ", " : "", k > 2 ? near[2] : "");
}

static json_t *cell_json(const qt_scheme_info *s, const qt_hw_info *h) {
    char reason[400];
    qt_support v = qt_support_check(s, h, reason, sizeof reason);
    json_t *o = json_object();
    json_object_set_new(o, "scheme", json_string(s->key));
    json_object_set_new(o, "hardware", json_string(h->key));
    json_object_set_new(o, "support", json_string(sname(v)));
    json_object_set_new(o, "reason", json_string(reason));
    return o;
}

static json_t *matrix_json(void) {
    json_t *rows = json_array();
    for (int i = 0; i < qt_support_row_count(); i++) {
        const qt_support_row *r = qt_support_row_get(i);
        json_t *o = json_object(), *cells = json_object();
        json_object_set_new(o, "key", json_string(r->key));
        json_object_set_new(o, "title", json_string(r->title));
        json_object_set_new(o, "source", json_string(r->source));
        for (int c = 0; c < QT_HW_CLASS_COUNT; c++) {
            json_t *x = json_object();
            json_object_set_new(x, "support", json_string(sname(r->cell[c].s)));
            json_object_set_new(x, "note", r->cell[c].note ? json_string(r->cell[c].note) : json_null());
            json_object_set_new(cells, qt_hw_class_name((qt_hw_class)c), x);
        }
        json_object_set_new(o, "cells", cells);
        json_array_append_new(rows, o);
    }
    return rows;
}

static json_t *list_json(void) {
    json_t *a = json_array();
    for (int i = 0; i < qt_hw_count(); i++) {
        const qt_hw_info *h = qt_hw_get(i);
        json_t *o = json_object();
        json_object_set_new(o, "key", json_string(h->key));
        json_object_set_new(o, "name", json_string(h->name));
        json_object_set_new(o, "class", json_string(qt_hw_class_name(h->cls)));
        json_object_set_new(o, "compute_capability", h->cc ? json_real(h->cc / 10.0) : json_null());
        json_object_set_new(o, "memory_bytes", json_integer((json_int_t)(h->mem_gb * 1e9)));
        json_object_set_new(o, "bandwidth_bytes_per_s", json_integer((json_int_t)(h->bw_gbs * 1e9)));
        json_object_set_new(o, "tflops_16", json_real(h->tflops_16));
        json_object_set_new(o, "tops_int8", json_real(h->tops_int8));
        json_object_set_new(o, "tflops_fp8", json_real(h->tflops_fp8));
        json_object_set_new(o, "tflops_fp4", json_real(h->tflops_fp4));
        json_object_set_new(o, "source", json_string(h->source));
        json_array_append_new(a, o);
    }
    return a;
}

static int emit(const cli_json *o, json_t *j) {
    return cli_json_emit_tree(o, j, 0, "hw");
}

/* The JSON of what was asked: the list, one cell, a GPU's column, a scheme's row, or the matrix. */
static json_t *build_json(bool list, const qt_hw_info *h, const qt_scheme_info *s) {
    if (list) return list_json();
    if (h && s) return cell_json(s, h);
    json_t *a = json_array();
    if (h)
        for (int i = 0; i < qt_scheme_count(); i++) json_array_append_new(a, cell_json(qt_scheme_get(i), h));
    else if (s)
        for (int i = 0; i < qt_hw_count(); i++) json_array_append_new(a, cell_json(s, qt_hw_get(i)));
    else { json_decref(a); return matrix_json(); }
    return a;
}

static void print_text(bool list, const qt_hw_info *h, const qt_scheme_info *s) {
    char reason[400];
    qt_scheme_info tmp;
    if (list) { print_list(); return; }
    if (h && s) {
        qt_support v = qt_support_check(s, h, reason, sizeof reason);
        printf("%s on %s: %s\n  %s\n", s->key, h->name, v == QT_SUPPORT_YES ? "yes" : v == QT_SUPPORT_NO ? "NO" : "partly",
               reason);
    } else if (h) {
        printf("%s: %s, %s", h->name, h->arch_name, h->cc ? "compute capability " : "");
        if (h->cc) printf("%d.%d, ", h->cc / 10, h->cc % 10);
        if (h->mem_gb > 0) printf("%.0f GB %s", h->mem_gb, h->mem_type);
        else printf("RAM of this machine");
        if (h->bw_gbs > 0) printf(", %.0f GB/s", h->bw_gbs);
        printf("\n");
        for (int i = 0; i < qt_scheme_count(); i++) {
            qt_support v = qt_support_check(qt_scheme_get(i), h, reason, sizeof reason);
            printf("  %c %-11s %s\n", mark(v), qt_scheme_get(i)->key, reason);
        }
        for (const char *kv = "fp8-kv"; kv; kv = strcmp(kv, "fp8-kv") ? NULL : "q8-kv") {
            const qt_scheme_info *row;
            resolve_row(kv, &tmp, &row);
            qt_support v = qt_support_check(row, h, reason, sizeof reason);
            printf("  %c %-11s %s\n", mark(v), kv, reason);
        }
    } else if (s) {
        for (int i = 0; i < qt_hw_count(); i++) {
            qt_support v = qt_support_check(s, qt_hw_get(i), reason, sizeof reason);
            printf("  %c %-11s %s\n", mark(v), qt_hw_get(i)->key, reason);
        }
    } else {
        print_matrix();
    }
}

int cmd_hw(int argc, char **argv) {
    const char *gpu = NULL, *scheme = NULL;
    cli_json json = {0};
    bool list = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { help(); return CLI_OK; }
        int j = cli_json_arg("hw", a, &json);
        if (j < 0) return CLI_USAGE;
        if (j) continue;
        if (cli_is_quiet(a)) continue; /* hw prints nothing on stderr */
        if (!strcmp(a, "--list")) { list = true; continue; }
        if (!strcmp(a, "--gpu") || !strcmp(a, "--scheme")) {
            if (i + 1 >= argc) return cli_usage("hw", "%s needs a value", a);
            if (!strcmp(a, "--gpu")) gpu = argv[++i];
            else scheme = argv[++i];
            continue;
        }
        return cli_usage("hw", "unknown option '%s'", a);
    }
    const qt_hw_info *h = NULL;
    const qt_scheme_info *s = NULL;
    qt_scheme_info tmp;
    int rc;
    if (!list && gpu && (rc = find_hw(gpu, &h))) return rc;
    if (!list && scheme && (rc = resolve_row(scheme, &tmp, &s))) return rc;
    if (json.on && (rc = emit(&json, build_json(list, h, s)))) return rc;
    if (!json.on || json.file) print_text(list, h, s);
    return CLI_OK;
}
