/* `quanta imatrix`: llama-imatrix's importance matrix with quanta's engine
 * (quanta/imatrix.h, "computing one"), written as llama.cpp's GGUF imatrix. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine_opts.h"

static void help(void) {
    printf("usage: quanta imatrix -m MODEL -f TEXT -o FILE [options]\n\n"
           "The importance matrix llama.cpp's llama-imatrix computes, with the same method: the text\n"
           "is tokenized once with BOS and cut into non-overlapping chunks of CTX tokens whose first\n"
           "token is replaced by BOS; for every linear of every layer (blk.N.attn_q.weight ...), the\n"
           "sum over all tokens of each input column's squared activation and the token count are\n"
           "written as a GGUF imatrix (T.in_sum2, T.counts, imatrix.datasets/chunk_count/chunk_size)\n"
           "that llama-quantize --imatrix reads. token_embd gets no entry; output.weight only with\n"
           "--process-output.\n\n"
           "  -m, --model PATH     GGUF file, HF directory or llama2.c .bin\n"
           "  -f, --file PATH      UTF-8 calibration text (recorded in imatrix.datasets as given)\n"
           "  -o, --output FILE    the imatrix (.gguf), written atomically (default imatrix.gguf)\n"
           "  -c, --ctx-size N     chunk length in tokens (default 512, as llama-imatrix)\n"
           "  --chunks N           use only the first N chunks (default: all; the text needs 2 or more)\n"
           "  --process-output     also collect output.weight (untied output projections only)\n"
           "  --json[=FILE]        summary (chunks, chunk_size, tokens, entries, output) on stdout or in FILE\n"
           "  -q, --quiet          no progress\n"
           ENGINE_OPTS_HELP);
}

typedef struct imx_args {
    const char *model, *file, *out;
    long long n_chunks;
    bool process_output, quiet;
    cli_json json;
    engine_cli_opts eng;
} imx_args;

static int parse(int argc, char **argv, imx_args *a) {
    *a = (imx_args){.out = "imatrix.gguf"};
    engine_cli_defaults(&a->eng);
    a->eng.n_ctx = 512;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int r = engine_cli_parse("imatrix", argc, argv, &i, &a->eng);
        if (r < 0) return CLI_USAGE;
        if (r > 0) continue;
        int j = cli_json_arg("imatrix", o, &a->json);
        if (j < 0) return CLI_USAGE;
        if (j) continue;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) { help(); return -1; }
        else if (!strcmp(o, "-m") || !strcmp(o, "--model")) { if (!v) return cli_usage("imatrix", "%s needs a value", o); a->model = v; i++; }
        else if (!strcmp(o, "-f") || !strcmp(o, "--file")) { if (!v) return cli_usage("imatrix", "%s needs a value", o); a->file = v; i++; }
        else if (!strcmp(o, "-o") || !strcmp(o, "--output")) { if (!v || !*v) return cli_usage("imatrix", "%s needs a value", o); a->out = v; i++; }
        else if (!strcmp(o, "--chunks")) { if (cli_parse_int("imatrix", o, v, 1, 1 << 30, &a->n_chunks)) return CLI_USAGE; i++; }
        else if (!strcmp(o, "--process-output")) a->process_output = true;
        else if (cli_is_quiet(o)) a->quiet = true;
        else return cli_usage("imatrix", "unknown option '%s'", o);
    }
    if (!a->model) return cli_usage("imatrix", "missing -m MODEL");
    if (!a->file) return cli_usage("imatrix", "missing -f TEXT");
    if (!strcmp(a->out, "-")) return cli_usage("imatrix", "-o -: an imatrix is binary; name a file");
    /* A chunk runs as one batch through the layer-wise seam. */
    if (a->eng.n_batch < a->eng.n_ctx) a->eng.n_batch = a->eng.n_ctx;
    return CLI_OK;
}

static int summary(const imx_args *a, const qt_imatrix_result *r) {
    int rc = CLI_OK;
    if (a->json.on) {
        char *buf;
        size_t len;
        FILE *out = cli_json_open(&a->json, &buf, &len);
        if (!out) return cli_fail(qt_error(QT_ERR_NOMEM, "imatrix: out of memory"));
        json_t *o = json_object();
        json_object_set_new(o, "model", json_string(a->model));
        json_object_set_new(o, "text", json_string(a->file));
        json_object_set_new(o, "output", json_string(a->out));
        json_object_set_new(o, "chunks", json_integer(r->chunk_count));
        json_object_set_new(o, "chunk_size", json_integer(r->chunk_size));
        json_object_set_new(o, "tokens", json_integer(r->n_tokens));
        json_object_set_new(o, "entries", json_integer(r->n_stats));
        char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(o);
        if (text) fprintf(out, "%s\n", text);
        free(text);
        rc = cli_json_close(&a->json, out, &buf, &len);
    }
    if (!a->json.on || a->json.file)
        printf("imatrix: %s: %lld entries from %lld chunks of %lld tokens (%lld tokens)\n", a->out,
               (long long)r->n_stats, (long long)r->chunk_count, (long long)r->chunk_size, (long long)r->n_tokens);
    return rc;
}

static int compute(const imx_args *a, qt_model *m, const int32_t *ids, int32_t n_ids) {
    qt_engine_ctx *e = NULL;
    qt_status s = engine_cli_create(m, &a->eng, &e);
    if (s != QT_OK) return cli_fail(s);
    const qt_vocab *v = qt_model_vocab(m);
    qt_imatrix_calc_opts o = {.n_ctx = (int32_t)a->eng.n_ctx, .n_chunks = (int32_t)a->n_chunks,
                              .bos_id = v->add_bos ? v->bos_id : -1, .process_output = a->process_output,
                              .progress = cli_progress(a->quiet || (a->json.on && !a->json.file))};
    qt_imatrix_result r;
    s = qt_imatrix_compute(m, e, ids, n_ids, &o, &r);
    cli_progress_end();
    qt_engine_free(e);
    if (s != QT_OK) return cli_fail(s);
    const char *datasets[1] = {a->file};
    qt_imatrix_info info = {datasets, 1, r.chunk_count, r.chunk_size};
    s = qt_imatrix_write(a->out, r.stats, r.n_stats, &info);
    int rc = s == QT_OK ? summary(a, &r) : cli_fail(s);
    qt_imatrix_result_free(&r);
    return rc;
}

int cmd_imatrix(int argc, char **argv) {
    imx_args a;
    int rc = parse(argc, argv, &a);
    if (rc < 0) return CLI_OK;
    if (rc != CLI_OK) return rc;
    qt_model *m;
    int32_t *ids, n_ids;
    if ((rc = cli_open_tokenized(a.model, a.file, &m, &ids, &n_ids)) != CLI_OK) return rc;
    rc = compute(&a, m, ids, n_ids);
    free(ids);
    qt_model_free(m);
    return rc;
}
