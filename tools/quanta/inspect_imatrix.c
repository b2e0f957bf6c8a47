/* `quanta inspect` on an importance matrix (llama-imatrix's GGUF or legacy
 * .dat file): datasets, chunks, and per entry its columns, experts and
 * counts. JSON schema: docs/cli-inspect.md ("Importance matrices"). */
#include <inttypes.h>
#include <jansson.h>
#include <string.h>
#include <sys/stat.h>

#include "inspect_imatrix.h"

bool inspect_is_imatrix(const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return false;
    qt_gguf *g;
    if (qt_gguf_open(path, &g) == QT_OK) {
        const char *type = NULL;
        /* llama-imatrix sets general.type; files without it are recognized by their keys */
        bool yes = qt_gguf_get_str(g, "general.type", &type) == QT_OK
                       ? !strcmp(type, "imatrix")
                       : !qt_gguf_find(g, "general.architecture") && qt_gguf_find(g, "imatrix.chunk_count");
        qt_gguf_close(g);
        return yes;
    }
    /* The legacy format has no magic: a .dat name, or a file that parses as one. */
    if (cli_ends_with(path, ".dat")) return true;
    qt_imatrix *im;
    if (qt_imatrix_open(path, &im) != QT_OK) return false;
    qt_imatrix_close(im);
    return true;
}

static const char *format_name(const qt_imatrix *im) {
    return qt_imatrix_format_of(im) == QT_IMATRIX_GGUF ? "imatrix-gguf" : "imatrix-dat";
}

static void print_text(const qt_imatrix *im, int64_t file_bytes) {
    const bool gguf = qt_imatrix_format_of(im) == QT_IMATRIX_GGUF;
    printf("file          %s\n", qt_imatrix_name(im));
    printf("format        importance matrix, llama.cpp %s, %" PRId64 " bytes\n",
           gguf ? "GGUF (general.type \"imatrix\")" : "legacy .dat", file_bytes);
    printf("datasets     ");
    for (int64_t i = 0; i < qt_imatrix_n_datasets(im); i++) printf(" \"%s\"", qt_imatrix_dataset(im, i));
    printf("%s\n", qt_imatrix_n_datasets(im) ? "" : " none recorded");
    if (qt_imatrix_chunk_size(im))
        printf("chunks        %" PRId64 " of %" PRId64 " tokens\n", qt_imatrix_chunk_count(im), qt_imatrix_chunk_size(im));
    else
        printf("chunks        %" PRId64 " (chunk size not recorded in this format)\n", qt_imatrix_chunk_count(im));
    printf("entries       %" PRId64 "\n", qt_imatrix_n_entries(im));
    printf("  %-40s %8s %8s %8s  %s\n", "name", "values", "columns", "experts", gguf ? "tokens per expert" : "chunks (ncall)");
    for (int64_t i = 0; i < qt_imatrix_n_entries(im); i++) {
        const qt_imatrix_entry *e = qt_imatrix_entry_at(im, i);
        char cols[24] = "-", exps[24] = "-";
        if (gguf) {
            snprintf(cols, sizeof cols, "%" PRId64, e->n_cols);
            snprintf(exps, sizeof exps, "%" PRId64, e->n_counts);
        }
        printf("  %-40s %8" PRId64 " %8s %8s  %" PRId64, e->name, e->n_values, cols, exps, e->counts[0]);
        for (int64_t j = 1; j < e->n_counts && j < 8; j++) printf(" %" PRId64, e->counts[j]);
        printf("%s\n", e->n_counts > 8 ? " ..." : "");
    }
}

static json_t *build_json(const qt_imatrix *im, int64_t file_bytes) {
    const bool gguf = qt_imatrix_format_of(im) == QT_IMATRIX_GGUF;
    json_t *root = json_object(), *ds = json_array(), *es = json_array();
    json_object_set_new(root, "path", json_string(qt_imatrix_name(im)));
    json_object_set_new(root, "source_format", json_string(format_name(im)));
    json_object_set_new(root, "file_bytes", json_integer((json_int_t)file_bytes));
    for (int64_t i = 0; i < qt_imatrix_n_datasets(im); i++) {
        json_t *s = json_string(qt_imatrix_dataset(im, i));
        json_array_append_new(ds, s ? s : json_string("(invalid UTF-8)"));
    }
    json_object_set_new(root, "datasets", ds);
    json_object_set_new(root, "chunk_count", json_integer((json_int_t)qt_imatrix_chunk_count(im)));
    json_object_set_new(root, "chunk_size", gguf ? json_integer((json_int_t)qt_imatrix_chunk_size(im)) : json_null());
    json_object_set_new(root, "count_unit", json_string(gguf ? "tokens" : "chunks"));
    json_object_set_new(root, "n_entries", json_integer((json_int_t)qt_imatrix_n_entries(im)));
    for (int64_t i = 0; i < qt_imatrix_n_entries(im); i++) {
        const qt_imatrix_entry *e = qt_imatrix_entry_at(im, i);
        json_t *o = json_object(), *c = json_array();
        json_t *name = json_string(e->name);
        json_object_set_new(o, "name", name ? name : json_string("(invalid UTF-8)"));
        json_object_set_new(o, "n_values", json_integer((json_int_t)e->n_values));
        json_object_set_new(o, "n_cols", gguf ? json_integer((json_int_t)e->n_cols) : json_null());
        json_object_set_new(o, "n_experts", gguf ? json_integer((json_int_t)e->n_counts) : json_null());
        for (int64_t j = 0; j < e->n_counts; j++) json_array_append_new(c, json_integer((json_int_t)e->counts[j]));
        json_object_set_new(o, "counts", c);
        json_array_append_new(es, o);
    }
    json_object_set_new(root, "entries", es);
    return root;
}

int inspect_imatrix(const char *path, const cli_json *json) {
    qt_imatrix *im;
    qt_status st = qt_imatrix_open(path, &im);
    if (st != QT_OK) return cli_fail(st);
    struct stat sb;
    const int64_t bytes = stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1;
    int rc = CLI_OK;
    if (json->on) rc = cli_json_emit_tree(json, build_json(im, bytes), 0, path);
    if (!rc && (!json->on || json->file)) print_text(im, bytes);
    qt_imatrix_close(im);
    return rc;
}
