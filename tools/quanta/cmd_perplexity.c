/* `quanta perplexity`: llama-perplexity's measurement with quanta's engine. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine_opts.h"

static void help(void) {
    printf("usage: quanta perplexity -m MODEL -f TEXT [options]\n\n"
           "Perplexity of MODEL on the text file, measured exactly as llama.cpp's llama-perplexity\n"
           "does (the numbers are directly comparable): the text is tokenized once with BOS, cut into\n"
           "non-overlapping chunks of CTX tokens whose first token is replaced by BOS, and the second\n"
           "half of each chunk is scored. A running estimate goes to stderr; the final\n"
           "'PPL = x +/- stderr' (or --json) to stdout.\n\n"
           "  -m, --model PATH     GGUF file, HF directory or llama2.c .bin\n"
           "  -f, --file PATH      UTF-8 text\n"
           "  -c, --ctx-size N     context length = the chunk length scored (default 512, as llama-perplexity)\n"
           "  --chunks N           evaluate only the first N chunks (default: all)\n"
           "  --json[=FILE]        one JSON object (ppl, ppl_stderr, n_ctx, n_chunks, n_scored, ...) on stdout\n"
           "                       instead of the text, or in FILE beside it\n"
           "  -q, --quiet          no running estimate\n"
           ENGINE_OPTS_HELP);
}

typedef struct ppl_args {
    const char *model, *file;
    long long n_chunks;
    cli_json json;
    bool quiet;
    engine_cli_opts eng;
} ppl_args;

static int parse(int argc, char **argv, ppl_args *a) {
    *a = (ppl_args){0};
    engine_cli_defaults(&a->eng);
    a->eng.n_ctx = 512;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int r = engine_cli_parse("perplexity", argc, argv, &i, &a->eng);
        if (r < 0) return CLI_USAGE;
        if (r > 0) continue;
        int j = cli_json_arg("perplexity", o, &a->json);
        if (j < 0) return CLI_USAGE;
        if (j) continue;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) { help(); return -1; }
        else if (!strcmp(o, "-m") || !strcmp(o, "--model")) { if (!v) return cli_usage("perplexity", "%s needs a value", o); a->model = v; i++; }
        else if (!strcmp(o, "-f") || !strcmp(o, "--file")) { if (!v) return cli_usage("perplexity", "%s needs a value", o); a->file = v; i++; }
        else if (!strcmp(o, "--chunks")) { if (cli_parse_int("perplexity", o, v, 1, 1 << 30, &a->n_chunks)) return CLI_USAGE; i++; }
        else if (!strcmp(o, "-q") || !strcmp(o, "--quiet")) a->quiet = true;
        else return cli_usage("perplexity", "unknown option '%s'", o);
    }
    if (!a->model) return cli_usage("perplexity", "missing -m MODEL");
    if (!a->file) return cli_usage("perplexity", "missing -f TEXT");
    return CLI_OK;
}

/* The running estimate: kept for a partial result on Ctrl-C, printed llama-perplexity
 * style about every 2 % of the chunks unless quiet. */
typedef struct running {
    bool quiet;
    int32_t done, total;
    double ppl;
} running;

static void on_chunk(void *user, int32_t done, int32_t total, double ppl) {
    running *r = user;
    r->done = done;
    r->total = total;
    r->ppl = ppl;
    const int32_t every = total > 50 ? total / 50 : 1;
    if (!r->quiet && (done % every == 0 || done == total))
        fprintf(stderr, "perplexity: [%d/%d] running PPL %.4f\n", done, total, ppl);
}

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", (unsigned char)*s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

/* The canonical name of a KV dtype spelling (fp16 -> f16). */
static const char *kv_name(const char *spelling) {
    qt_kv_type t;
    return qt_kv_type_parse(spelling, &t) == QT_OK ? qt_kv_type_name(t) : spelling;
}

static int measure(const ppl_args *a, qt_model *m, const int32_t *ids, int32_t n_ids) {
    qt_engine_ctx *e = NULL;
    qt_status s = engine_cli_create(m, &a->eng, &e);
    if (s != QT_OK) return cli_fail(s);
    if (!a->quiet && !a->json.on)
        fprintf(stderr, "perplexity: %d tokens in chunks of %lld (the first estimate comes after one chunk); %s\n", n_ids,
                a->eng.n_ctx, qt_engine_describe(e));
    running run = {.quiet = a->quiet};
    qt_ppl_opts po = {.n_ctx = (int32_t)a->eng.n_ctx, .n_chunks = (int32_t)a->n_chunks,
                      .bos_id = qt_model_vocab(m)->add_bos ? qt_model_vocab(m)->bos_id : -1,
                      .on_chunk = on_chunk, .user = &run};
    qt_ppl_result r;
    s = qt_perplexity(e, ids, n_ids, &po, &r);
    if (s != QT_OK) {
        qt_engine_free(e);
        int rc = cli_fail(s);
        if (s == QT_ERR_INTERRUPTED && run.done > 0)
            printf("Interrupted after %d of %d chunks: partial PPL = %.4f (not comparable with a full run)\n", run.done,
                   run.total, run.ppl);
        return rc;
    }
    const double tps = r.seconds > 0 ? (double)r.n_evaluated / r.seconds : 0.0;
    int rc = CLI_OK;
    if (a->json.on) {
        char *buf;
        size_t len;
        FILE *out = cli_json_open(&a->json, &buf, &len);
        if (!out) { qt_engine_free(e); return cli_fail(qt_error(QT_ERR_NOMEM, "perplexity: out of memory")); }
        fprintf(out, "{\"model\": ");
        json_string(out, a->model);
        fprintf(out, ", \"text\": ");
        json_string(out, a->file);
        fprintf(out, ", \"ppl\": %.6f, \"ppl_stderr\": %.6f, \"nll_mean\": %.8f, \"n_ctx\": %d, \"n_chunks\": %d, "
               "\"n_scored\": %lld, \"n_tokens\": %d, \"kv_dtype\": \"%s\", \"act_quant\": \"%s\", "
               "\"seconds\": %.3f, \"tokens_per_second\": %.1f, \"numerics\": ",
               r.ppl, r.ppl_stderr, r.nll_mean, r.n_ctx, r.n_chunks, (long long)r.n_scored, n_ids,
               kv_name(a->eng.kv_dtype), a->eng.act_quant_off ? "off" : "auto", r.seconds, tps);
        json_string(out, qt_engine_describe(e));
        fprintf(out, "}\n");
        rc = cli_json_close(&a->json, out, &buf, &len);
    }
    if (!a->json.on || a->json.file) {
        printf("Final estimate: PPL = %.4f +/- %.5f\n", r.ppl, r.ppl_stderr);
        printf("(%d chunk%s of %d tokens, %lld tokens scored, %.1f s, %.0f tokens/s)\n", r.n_chunks,
               r.n_chunks == 1 ? "" : "s", r.n_ctx, (long long)r.n_scored, r.seconds, tps);
    }
    qt_engine_free(e);
    return rc;
}

int cmd_perplexity(int argc, char **argv) {
    ppl_args a;
    int rc = parse(argc, argv, &a);
    if (rc < 0) return CLI_OK;
    if (rc != CLI_OK) return rc;

    qt_model *m;
    int32_t *ids, n_ids;
    if ((rc = cli_open_tokenized(a.model, a.file, &m, &ids, &n_ids)) != CLI_OK) return rc;
    rc = measure(&a, m, ids, n_ids);
    free(ids);
    qt_model_free(m);
    return rc;
}
