/* `quanta run`: generate text from a prompt with quanta's own engine. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "engine_opts.h"

static void help(void) {
    printf("usage: quanta run -m MODEL -p PROMPT [options]\n\n"
           "Generate text after PROMPT, streaming it to stdout (the prompt is echoed first).\n"
           "Numerics, speed and the reason generation stopped go to stderr.\n\n"
           "  -m, --model PATH     GGUF file, HF directory or llama2.c .bin\n"
           "  -p, --prompt TEXT    the prompt (BOS is added when the vocabulary asks for it)\n"
           "  -n, --n-predict N    tokens to generate (default 128; stops early at EOS)\n"
           "  --temp T             temperature; 0 = greedy (default 0.8)\n"
           "  --top-k K            keep the K most likely tokens; 0 = off (default 40)\n"
           "  --top-p P            nucleus sampling threshold; 1 = off (default 0.95)\n"
           "  --seed S             random seed (default 42): the same seed gives the same text\n"
           "  --no-bos             do not add BOS\n"
           "  --chat               PROMPT is a user's message: rendered with the model's own chat template\n"
           "                       (its control tokens parsed; BOS added only when the template does not\n"
           "                       write it), so generation is the assistant's reply (quanta template shows it)\n"
           "  --system TEXT        with --chat: a system message first\n"
           "  --json[=FILE]        one JSON object (prompt, text, token counts, speeds, why it stopped)\n"
           "                       instead of the streamed text, or in FILE beside it\n"
           "  -q, --quiet          no numerics/speed report on stderr\n"
           ENGINE_OPTS_HELP_CTX ENGINE_OPTS_HELP);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct run_args {
    const char *model, *prompt, *system;
    const char *text;           /* what is tokenized and echoed: the prompt, or the rendered chat */
    bool chat;
    long long n_predict;
    double temp, top_p;
    long long top_k, seed;
    bool no_bos, quiet;
    cli_json json;
    engine_cli_opts eng;
} run_args;

static int parse(int argc, char **argv, run_args *a) {
    *a = (run_args){.n_predict = 128, .temp = 0.8, .top_p = 0.95, .top_k = 40, .seed = 42};
    engine_cli_defaults(&a->eng);
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int r = engine_cli_parse("run", argc, argv, &i, &a->eng);
        if (r < 0) return CLI_USAGE;
        if (r > 0) continue;
        int j = cli_json_arg("run", o, &a->json);
        if (j < 0) return CLI_USAGE;
        if (j) continue;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) { help(); return -1; }
        else if (!strcmp(o, "-m") || !strcmp(o, "--model")) { if (!v) return cli_usage("run", "%s needs a value", o); a->model = v; i++; }
        else if (!strcmp(o, "-p") || !strcmp(o, "--prompt")) { if (!v) return cli_usage("run", "%s needs a value", o); a->prompt = v; i++; }
        else if (!strcmp(o, "-n") || !strcmp(o, "--n-predict")) { if (cli_parse_int("run", o, v, 0, 1 << 24, &a->n_predict)) return CLI_USAGE; i++; }
        else if (!strcmp(o, "--temp")) { if (cli_parse_double("run", o, v, 0.0, 100.0, &a->temp)) return CLI_USAGE; i++; }
        else if (!strcmp(o, "--top-p")) { if (cli_parse_double("run", o, v, 1e-6, 1.0, &a->top_p)) return CLI_USAGE; i++; }
        else if (!strcmp(o, "--top-k")) { if (cli_parse_int("run", o, v, 0, 1 << 30, &a->top_k)) return CLI_USAGE; i++; }
        else if (!strcmp(o, "--seed")) { if (cli_parse_int("run", o, v, 0, 0x7fffffffffffffffLL, &a->seed)) return CLI_USAGE; i++; }
        else if (!strcmp(o, "--no-bos")) a->no_bos = true;
        else if (!strcmp(o, "--chat")) a->chat = true;
        else if (!strcmp(o, "--system")) { if (!v) return cli_usage("run", "%s needs a value", o); a->system = v; i++; }
        else if (!strcmp(o, "-q") || !strcmp(o, "--quiet")) a->quiet = true;
        else return cli_usage("run", "unknown option '%s'", o);
    }
    if (!a->model) return cli_usage("run", "missing -m MODEL");
    if (!a->prompt) return cli_usage("run", "missing -p PROMPT");
    if (a->system && !a->chat) return cli_usage("run", "--system needs --chat");
    return CLI_OK;
}

/* Writes the bytes token `id` stands for to out. */
static void emit(FILE *out, const qt_tokenizer *tok, int32_t id) {
    char buf[256];
    int32_t n = qt_token_to_piece(tok, id, buf, (int32_t)sizeof buf);
    if (n > (int32_t)sizeof buf) {
        char *big = malloc((size_t)n);
        if (big && qt_token_to_piece(tok, id, big, n) == n) fwrite(big, 1, (size_t)n, out);
        free(big);
    } else if (n > 0) {
        fwrite(buf, 1, (size_t)n, out);
    }
    fflush(out);
}

static int report_json(const run_args *a, const qt_engine_ctx *e, const char *text, size_t len, int32_t n_prompt,
                       int64_t n_gen, double t_prefill, double t_decode, const char *why) {
    /* JSON strings are UTF-8: a generation may stop inside a character, or
     * sample byte tokens that never form one (U+FFFD, as llama-server does) */
    char *clean = NULL, *prompt = NULL;
    size_t clean_len = 0;
    qt_status s = qt_utf8_repair(text, len, &clean, &clean_len);
    if (s == QT_OK) s = qt_utf8_repair(a->prompt, strlen(a->prompt), &prompt, NULL);
    if (s != QT_OK) {
        free(clean);
        return cli_fail(s);
    }
    json_t *o = json_pack("{s:s, s:s, s:s%, s:i, s:I, s:s, s:f, s:f, s:s}", "model", a->model, "prompt", prompt,
                          "text", clean, clean_len, "n_prompt", n_prompt, "n_generated", (json_int_t)n_gen, "stopped", why,
                          "prompt_seconds", t_prefill, "decode_seconds", t_decode, "numerics", qt_engine_describe(e));
    free(clean);
    free(prompt);
    return cli_json_emit_tree(&a->json, o, 0, "run");
}

static int generate(const run_args *a, qt_model *m, qt_tokenizer *tok) {
    const qt_vocab *voc = qt_model_vocab(m);
    int32_t *ids = NULL, n_ids = 0;
    const char *bos = voc->bos_id >= 0 && voc->bos_id < voc->n_tokens ? voc->tokens[voc->bos_id] : NULL;
    const bool has_bos = a->chat && bos && *bos && !strncmp(a->text, bos, strlen(bos)); /* the template wrote it */
    const unsigned flags = (!a->no_bos && voc->add_bos && !has_bos ? QT_TOKENIZE_ADD_BOS : 0u) | (a->chat ? QT_TOKENIZE_PARSE_SPECIAL : 0u);
    qt_status s = qt_tokenize_ex(tok, a->text, strlen(a->text), flags, &ids, &n_ids);
    if (s != QT_OK) return cli_fail(s);
    if (n_ids == 0) { free(ids); return cli_fail(qt_error(QT_ERR_ARG, "the prompt is empty (no tokens)")); }

    qt_engine_ctx *e = NULL;
    qt_sampler *smp = NULL;
    float *logits = NULL;
    int rc = CLI_OK;
    char *gen = NULL;
    size_t gen_len = 0;
    FILE *out = NULL;
    if ((s = engine_cli_create(m, &a->eng, &e)) != QT_OK) { rc = cli_fail(s); goto done; }
    if (n_ids > qt_engine_n_ctx(e)) {
        rc = cli_fail(qt_error(QT_ERR_ARG, "the prompt is %d tokens but the context holds %d (raise -c)", n_ids,
                               qt_engine_n_ctx(e)));
        goto done;
    }
    qt_sampler_opts so = {.temp = (float)a->temp, .top_k = (int32_t)a->top_k, .top_p = (float)a->top_p,
                          .seed = (uint64_t)a->seed};
    const int32_t n_vocab = qt_engine_n_vocab(e);
    if ((s = qt_sampler_new(&so, n_vocab, &smp)) != QT_OK) { rc = cli_fail(s); goto done; }
    if (!(logits = malloc((size_t)n_vocab * sizeof *logits))) { rc = cli_fail(qt_error(QT_ERR_NOMEM, "out of memory")); goto done; }
    if (!a->quiet) fprintf(stderr, "quanta run: %s\n", qt_engine_describe(e));

    /* --json: the text is collected and reported at the end; else streamed after the prompt */
    out = a->json.on ? open_memstream(&gen, &gen_len) : stdout;
    if (!out) { rc = cli_fail(qt_error(QT_ERR_NOMEM, "out of memory")); goto done; }
    if (!a->json.on) {
        fputs(a->text, stdout);
        fflush(stdout);
    }
    const double t0 = now_s();
    if ((s = qt_engine_eval(e, ids, n_ids, n_ids - 1, logits)) != QT_OK) { rc = cli_fail(s); goto done; }
    const double t_prefill = now_s() - t0;

    int64_t n_gen = 0;
    const char *why = "reached -n";
    const double t1 = now_s();
    while (n_gen < a->n_predict) {
        const int32_t next = qt_sampler_sample(smp, logits);
        if (next == voc->eos_id) { why = "end of text (EOS)"; break; }
        emit(out, tok, next);
        n_gen++;
        if (n_gen == a->n_predict) break;
        if (qt_engine_n_past(e) >= qt_engine_n_ctx(e)) { why = "the context is full"; break; }
        if ((s = qt_engine_eval(e, &next, 1, 0, logits)) != QT_OK) { rc = cli_fail(s); goto done; }
    }
    const double t_decode = now_s() - t1;
    if (a->json.on) {
        fclose(out);
        out = NULL;
        rc = report_json(a, e, gen ? gen : "", gen_len, n_ids, n_gen, t_prefill, t_decode, why);
        if (a->json.file) printf("%s%.*s\n", a->text, (int)gen_len, gen ? gen : "");
    } else {
        fputc('\n', stdout);
    }
    if (!a->quiet)
        fprintf(stderr, "quanta run: prompt %d tokens in %.3f s (%.1f tok/s), generated %lld tokens in %.3f s "
                "(%.1f tok/s), stopped: %s\n", n_ids, t_prefill, n_ids / (t_prefill > 0 ? t_prefill : 1e-9),
                (long long)n_gen, t_decode, n_gen / (t_decode > 0 ? t_decode : 1e-9), why);
done:
    if (out && out != stdout) fclose(out);
    free(gen);
    free(logits);
    qt_sampler_free(smp);
    qt_engine_free(e);
    free(ids);
    return rc;
}

int cmd_run(int argc, char **argv) {
    run_args a;
    int rc = parse(argc, argv, &a);
    if (rc < 0) return CLI_OK;
    if (rc != CLI_OK) return rc;
    qt_model *m = NULL;
    qt_status s = qt_model_open(a.model, &m);
    if (s != QT_OK) return cli_fail(s);
    qt_tokenizer *tok = NULL;
    if ((s = qt_tokenizer_new(qt_model_vocab(m), &tok)) != QT_OK) {
        qt_model_free(m);
        return cli_fail(s);
    }
    char *chat = NULL;
    a.text = a.prompt;
    if (a.chat) {
        json_t *msgs = a.system ? json_pack("[{s:s, s:s}, {s:s, s:s}]", "role", "system", "content", a.system, "role", "user",
                                            "content", a.prompt)
                                : json_pack("[{s:s, s:s}]", "role", "user", "content", a.prompt);
        char *text = msgs ? json_dumps(msgs, JSON_COMPACT) : NULL;
        json_decref(msgs);
        const qt_chat_opts o = {.add_generation_prompt = true, .now = (int64_t)time(NULL)};
        s = text ? qt_chat_apply_vocab(qt_model_vocab(m), text, &o, &chat) : qt_error(QT_ERR_ARG, "--prompt/--system: not valid UTF-8");
        free(text);
        if (s != QT_OK) rc = cli_fail(s);
        a.text = chat;
    }
    if (rc == CLI_OK) rc = generate(&a, m, tok);
    free(chat);
    qt_tokenizer_free(tok);
    qt_model_free(m);
    return rc;
}
