/* tools/quanta/cli_vocab.c — the option vocabulary every verb shares:
 * --json / --json=FILE, -q/--quiet, KV cache dtypes and scheme names, each
 * spelled and checked one way (bad values are usage errors, exit 2). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

int cli_json_arg(const char *verb, const char *a, cli_json *j) {
    if (!strcmp(a, "--json")) {
        j->on = true;
        j->file = NULL;
        return 1;
    }
    if (strncmp(a, "--json=", 7)) return 0;
    if (!a[7]) {
        cli_usage(verb, "--json=FILE needs a file name (or give --json for standard output)");
        return -1;
    }
    j->on = true;
    j->file = a + 7;
    return 1;
}

int cli_calib_arg(const char *verb, int argc, char **argv, int *i, cli_calib *c) {
    const char *o = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!strcmp(o, "--allow-short-calib")) {
        c->allow_short = c->tuned = true;
        return 1;
    }
    if (strcmp(o, "--calib") && strcmp(o, "--nsamples") && strcmp(o, "--seqlen") && strcmp(o, "--seed")) return 0;
    if (!v || !*v) { cli_usage(verb, "%s needs a value", o); return -1; }
    if (!strcmp(o, "--calib")) c->file = v;
    else if (!strcmp(o, "--nsamples")) { if (cli_parse_int(verb, o, v, 1, 1 << 30, &c->n_samples)) return -1; }
    else if (!strcmp(o, "--seqlen")) { if (cli_parse_int(verb, o, v, 2, 1 << 20, &c->seq_len)) return -1; }
    else {
        char *end;
        errno = 0;
        c->seed = strtoull(v, &end, 10);
        if (v[0] < '0' || v[0] > '9' || *end || errno) {
            cli_usage(verb, "%s: '%s' is not an integer from 0 to 2^64-1", o, v);
            return -1;
        }
    }
    if (strcmp(o, "--calib")) c->tuned = true;
    ++*i;
    return 1;
}

qt_calib_opts cli_calib_lib(const cli_calib *c) {
    return (qt_calib_opts){.path = c->file, .n_samples = (int32_t)c->n_samples,
                           .seq_len = c->seq_len > 0 ? (int32_t)c->seq_len : QT_CALIB_DEFAULT_SEQLEN, .seed = c->seed,
                           .allow_short = c->allow_short};
}

bool cli_is_quiet(const char *a) { return !strcmp(a, "-q") || !strcmp(a, "--quiet"); }

FILE *cli_json_open(const cli_json *j, char **buf, size_t *len) {
    *buf = NULL;
    *len = 0;
    if (!j->file || !strcmp(j->file, "-")) return stdout;
    return open_memstream(buf, len);
}

int cli_json_close(const cli_json *j, FILE *f, char **buf, size_t *len) {
    if (f == stdout) return fflush(stdout) == 0 ? CLI_OK : cli_fail(qt_error(QT_ERR_IO, "standard output: write failed"));
    if (!f || fclose(f) != 0 || !*buf) {
        free(*buf);
        return cli_fail(qt_error(QT_ERR_NOMEM, "%s: cannot build the JSON text", j->file));
    }
    int rc = write_text_file(j->file, *buf);
    free(*buf);
    *buf = NULL;
    return rc;
}

int cli_json_emit(const cli_json *j, const char *text) {
    if (!j->file || !strcmp(j->file, "-")) {
        fputs(text, stdout);
        return CLI_OK;
    }
    return write_text_file(j->file, text);
}

int cli_json_emit_tree(const cli_json *j, void *root, size_t extra_flags, const char *what) {
    char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | extra_flags) : NULL;
    json_decref(root);
    char *nl = text ? realloc(text, strlen(text) + 2) : NULL;
    if (!nl) {
        free(text);
        return cli_fail(qt_error(QT_ERR_NOMEM, "%s: cannot build the JSON text (out of memory, or a string that is not valid UTF-8)", what));
    }
    strcat(nl, "\n");
    int rc = cli_json_emit(j, nl);
    free(nl);
    return rc;
}

int write_text_file(const char *path, const char *text) {
    qt_afile *f;
    qt_status st = qt_afile_open(path, &f);
    if (st) return cli_fail(st);
    if ((st = qt_afile_write(f, text, strlen(text)))) {
        qt_afile_abort(f);
        return cli_fail(st);
    }
    if ((st = qt_afile_commit(f))) return cli_fail(st);
    return CLI_OK;
}

int cli_kv_engine(const char *verb, const char *opt, const char *name) {
    qt_kv_type t;
    if (qt_kv_type_parse(name, &t) != QT_OK) return cli_usage(verb, "%s: %s", opt, qt_last_error());
    return CLI_OK;
}

int cli_kv_plan(const char *verb, const char *name, qt_kv_type *out) {
    if (!strcasecmp(name, "auto")) { *out = QT_KV_TYPE_AUTO; return CLI_OK; }
    /* llama.cpp's block cache is what the planner means by an 8-bit cache on llama.cpp */
    if (!strcasecmp(name, "q8_0") || !strcasecmp(name, "q8")) { *out = QT_KV_TYPE_INT8; return CLI_OK; }
    if (qt_kv_type_parse(name, out) != QT_OK)
        return cli_usage(verb, "--kv-dtype: '%s' is not one of auto, f16 (fp16), bf16, fp8 (fp8-e4m3, fp8-e5m2), int8, q8_0",
                         name);
    if (*out == QT_KV_TYPE_F32)
        return cli_usage(verb, "--kv-dtype %s: serving engines keep 16- or 8-bit caches; the planner sizes auto, f16, bf16, "
                               "fp8, int8 and q8_0", name);
    /* both fp8 flavours take one byte; vLLM's "fp8" cache is E4M3 */
    if (*out == QT_KV_TYPE_FP8_E5M2) *out = QT_KV_TYPE_FP8_E4M3;
    return CLI_OK;
}

int cli_scheme(const char *verb, const char *name, const qt_scheme_info **out) {
    *out = qt_scheme_resolve(name);
    if (*out) return CLI_OK;
    const char *near[4], *note;
    int k = qt_scheme_suggest(name, near, 4, &note);
    char list[256] = "";
    for (int i = 0; i < k; i++) {
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, near[i], sizeof list - strlen(list) - 1);
    }
    if (k)
        return cli_usage(verb, "unknown scheme '%s'%s%s; did you mean %s? (quanta estimate --help lists them)", name,
                         note ? ": " : "", note ? note : "", list);
    return cli_usage(verb, "unknown scheme '%s'%s%s (quanta estimate --help lists them)", name, note ? ": " : "",
                     note ? note : "");
}

int cli_open_tokenized(const char *model, const char *file, qt_model **m, int32_t **ids, int32_t *n_ids) {
    char *text = NULL;
    size_t len = 0;
    *m = NULL;
    *ids = NULL;
    *n_ids = 0;
    qt_status s = qt_read_file(file, &text, &len);
    if (s != QT_OK) return cli_fail(s);
    qt_tokenizer *tok = NULL;
    if ((s = qt_model_open(model, m)) == QT_OK && (s = qt_tokenizer_new(qt_model_vocab(*m), &tok)) == QT_OK)
        s = qt_tokenize(tok, text, len, qt_model_vocab(*m)->add_bos, ids, n_ids);
    free(text);
    if (tok) qt_tokenizer_free(tok);
    if (s == QT_OK) return CLI_OK;
    free(*ids);
    *ids = NULL;
    qt_model_free(*m);
    *m = NULL;
    return cli_fail(s);
}
