/* `quanta template`: renders a conversation through a chat template (a
 * model's own, or a template file) and prints the text, exactly as the model
 * would be prompted: what `quanta serve`, `quanta run --chat` and calibration
 * JSONL {"messages": ...} feed the tokenizer. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli.h"

static void help(void) {
    printf("usage: quanta template (-m MODEL | -t FILE) --messages FILE [--add-generation-prompt]\n"
           "                      [--var JSON] [--bos TEXT] [--eos TEXT] [--now SECONDS] [-o FILE]\n"
           "                      [--json[=FILE]] [-q]\n\n"
           "Render a conversation with a chat template (the Jinja subset of docs/serve.md) and print the text.\n\n"
           "  -m, --model MODEL          use MODEL's own template (GGUF tokenizer.chat_template, or\n"
           "                             tokenizer_config.json's chat_template; a bare tokenizer.json works),\n"
           "                             with its BOS and EOS texts\n"
           "  -t, --template FILE        a template file instead (BOS and EOS are \"\" unless given)\n"
           "  --messages FILE            a JSON list of {\"role\", \"content\", ...} ('-' = standard input)\n"
           "  --add-generation-prompt    end with the assistant's header (what a server sends)\n"
           "  --var JSON                 more template variables, a JSON object: '{\"enable_thinking\": false}'\n"
           "  --bos TEXT, --eos TEXT     the bos_token / eos_token the template sees\n"
           "  --now SECONDS              the time strftime_now() formats, seconds since the epoch\n"
           "                             (default: now; templates such as Llama 3.2's print the date)\n"
           "  -o, --output FILE          write the text to FILE (default: standard output)\n"
           "  --json, --json=FILE        instead of the text: {\"text\": ..., \"bytes\": N} (to FILE: beside it)\n"
           "  -q, --quiet                no messages (errors still print)\n");
}

static int read_all(const char *path, char **out) {
    size_t len = 0;
    if (strcmp(path, "-")) {
        qt_status s = qt_read_file(path, out, &len);
        return s == QT_OK ? CLI_OK : cli_fail(s);
    }
    size_t cap = 1 << 16;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len - 1, stdin);
        if (len < cap - 1) break;
        char *b = realloc(buf, cap * 2);
        if (!b) free(buf);
        buf = b, cap *= 2;
    }
    if (!buf) return cli_fail(qt_error(QT_ERR_NOMEM, "standard input: out of memory"));
    buf[len] = 0;
    *out = buf;
    return CLI_OK;
}

int cmd_template(int argc, char **argv) {
    const char *model = NULL, *tfile = NULL, *mfile = NULL, *output = NULL;
    qt_chat_opts o = {.now = (int64_t)time(NULL)};
    cli_json json = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const bool has = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { help(); return CLI_OK; }
        if (!strcmp(a, "--add-generation-prompt")) { o.add_generation_prompt = true; continue; }
        if (cli_is_quiet(a)) continue;
        const int j = cli_json_arg("template", a, &json);
        if (j < 0) return CLI_USAGE;
        if (j > 0) continue;
        const char **dst = !strcmp(a, "-m") || !strcmp(a, "--model") ? &model
                         : !strcmp(a, "-t") || !strcmp(a, "--template") ? &tfile
                         : !strcmp(a, "--messages") ? &mfile
                         : !strcmp(a, "--var") ? &o.extra_json
                         : !strcmp(a, "--bos") ? &o.bos_token
                         : !strcmp(a, "--eos") ? &o.eos_token
                         : !strcmp(a, "-o") || !strcmp(a, "--output") ? &output : NULL;
        if (!strcmp(a, "--now")) {
            long long v;
            if (!has) return cli_usage("template", "%s needs a value", a);
            if (cli_parse_int("template", a, argv[++i], 0, 253402300799LL, &v) != CLI_OK) return CLI_USAGE;
            o.now = v;
            continue;
        }
        if (!dst) return cli_usage("template", "unknown option '%s'", a);
        if (!has) return cli_usage("template", "%s needs a value", a);
        *dst = argv[++i];
    }
    if (!model == !tfile) return cli_usage("template", "give exactly one of -m MODEL and -t FILE");
    if (!mfile) return cli_usage("template", "--messages FILE is required");
    char *tmpl = NULL, *msgs = NULL, *text = NULL;
    qt_model *m = NULL;
    int rc = read_all(mfile, &msgs);
    if (rc == CLI_OK && tfile) rc = read_all(tfile, &tmpl);
    qt_status s = QT_OK;
    if (rc == CLI_OK && model) {
        s = cli_ends_with(model, ".json") ? qt_model_open_tokenizer_json(model, &m) : qt_model_open(model, &m);
        if (s == QT_OK) s = qt_chat_apply_vocab(qt_model_vocab(m), msgs, &o, &text);
    } else if (rc == CLI_OK) {
        s = qt_chat_apply(tmpl, msgs, &o, &text);
    }
    if (rc == CLI_OK && s != QT_OK) rc = cli_fail(s);
    if (rc == CLI_OK && json.on) {
        json_t *root = json_object();
        json_object_set_new(root, "text", json_string(text));
        json_object_set_new(root, "bytes", json_integer((json_int_t)strlen(text)));
        rc = cli_json_emit_tree(&json, root, 0, "template");
    }
    if (rc == CLI_OK && (!json.on || (json.file && strcmp(json.file, "-")))) {
        if (output && strcmp(output, "-")) rc = write_text_file(output, text);
        else if (fputs(text, stdout) < 0 || fflush(stdout) != 0) {
            fprintf(stderr, "quanta: error: writing the output failed\n");
            rc = CLI_FAIL;
        }
    }
    free(text);
    free(tmpl);
    free(msgs);
    qt_model_free(m);
    return rc;
}
