/* `quanta imatrix`: llama-imatrix's importance matrix with quanta's engine
 * (quanta/imatrix.h, "computing one"), written as llama.cpp's GGUF imatrix. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine_opts.h"

static void help(void) {
    printf("usage: quanta imatrix -m MODEL --calib TEXT -o FILE [options]\n\n"
           "The importance matrix llama.cpp's llama-imatrix computes, with the same method: the text\n"
           "is tokenized once with BOS and cut into non-overlapping windows of L tokens whose first\n"
           "token is replaced by BOS (the calibration rule every verb shares; docs/imatrix.md);\n"
           "for every linear of every layer (blk.N.attn_q.weight ...), the sum over all tokens of\n"
           "each input column's squared activation and the token count are written as a GGUF\n"
           "imatrix (T.in_sum2, T.counts, imatrix.datasets/chunk_count/chunk_size) that\n"
           "llama-quantize --imatrix reads. token_embd gets no entry; output.weight only with\n"
           "--process-output. llama-imatrix's -f, --chunks and -c are synonyms of --calib,\n"
           "--nsamples and --seqlen (--seqlen wins over -c).\n\n"
           "  -m, --model PATH     GGUF file, HF directory or llama2.c .bin\n"
           CLI_CALIB_HELP
           "  -f, --file PATH      = --calib PATH (recorded in imatrix.datasets as given)\n"
           "  --chunks N           = --nsamples N (the text needs 2 windows or more)\n"
           "  -c, --ctx-size N     = --seqlen N (default 512, as llama-imatrix)\n"
           "  -o, --output FILE    the imatrix (.gguf), written atomically (default imatrix.gguf)\n"
           "  --process-output     also collect output.weight (untied output projections only)\n"
           "  --json[=FILE]        summary (chunks, chunk_size, tokens, entries, output) on stdout or in FILE\n"
           "  -q, --quiet          no progress\n"
           ENGINE_OPTS_HELP);
}

typedef struct imx_args {
    const char *model, *out;
    cli_calib calib;
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
        if ((j = cli_calib_arg("imatrix", argc, argv, &i, &a->calib)) < 0) return CLI_USAGE;
        if (j) continue;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) { help(); return -1; }
        else if (!strcmp(o, "-m") || !strcmp(o, "--model")) { if (!v) return cli_usage("imatrix", "%s needs a value", o); a->model = v; i++; }
        else if (!strcmp(o, "-f") || !strcmp(o, "--file")) { if (!v) return cli_usage("imatrix", "%s needs a value", o); a->calib.file = v; i++; }
        else if (!strcmp(o, "-o") || !strcmp(o, "--output")) { if (!v || !*v) return cli_usage("imatrix", "%s needs a value", o); a->out = v; i++; }
        else if (!strcmp(o, "--chunks")) { if (cli_parse_int("imatrix", o, v, 1, 1 << 30, &a->calib.n_samples)) return CLI_USAGE; i++; }
        else if (!strcmp(o, "--process-output")) a->process_output = true;
        else if (cli_is_quiet(o)) a->quiet = true;
        else return cli_usage("imatrix", "unknown option '%s'", o);
    }
    if (!a->model) return cli_usage("imatrix", "missing -m MODEL");
    if (!a->calib.file) return cli_usage("imatrix", "missing --calib TEXT (or -f TEXT)");
    if (a->calib.seq_len) a->eng.n_ctx = a->calib.seq_len;
    a->calib.seq_len = a->eng.n_ctx;
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
        json_object_set_new(o, "text", json_string(a->calib.file));
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

static int compute(const imx_args *a, qt_model *m, const qt_calib_set *cs) {
    qt_engine_ctx *e = NULL;
    qt_status s = engine_cli_create(m, &a->eng, &e);
    if (s != QT_OK) return cli_fail(s);
    const qt_vocab *v = qt_model_vocab(m);
    qt_imatrix_calc_opts o = {.n_ctx = cs->seq_len,
                              .bos_id = v->add_bos ? v->bos_id : -1, .process_output = a->process_output,
                              .progress = cli_progress(a->quiet || (a->json.on && !a->json.file))};
    qt_imatrix_result r;
    s = qt_imatrix_compute(m, e, cs->tokens, (int64_t)cs->n_samples * cs->seq_len, &o, &r);
    cli_progress_end();
    qt_engine_free(e);
    if (s != QT_OK) return cli_fail(s);
    const char *datasets[1] = {a->calib.file};
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
    qt_status s = qt_model_open(a.model, &m);
    if (s != QT_OK) return cli_fail(s);
    const qt_calib_opts co = cli_calib_lib(&a.calib);
    qt_calib_set cs;
    s = qt_calib_load(m, &co, &cs);
    rc = s == QT_OK ? compute(&a, m, &cs) : cli_fail(s);
    qt_calib_set_free(&cs);
    qt_model_free(m);
    return rc;
}
