/* `quanta tokenize`: the llama-tokenize of quanta. Prints the token ids of a
 * text with a model's tokenizer, one line of ids by default. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(void) {
    printf("usage: quanta tokenize -m MODEL (-p TEXT | -f FILE) [--no-bos] [--parse-special] [--batch] [--json[=FILE]] [-q]\n\n"
           "Print the token ids of TEXT (or of FILE's bytes) with MODEL's tokenizer, on one line.\n\n"
           "  -m, --model MODEL   a GGUF file, a Hugging Face model directory, a llama2.c .bin,\n"
           "                      or a bare tokenizer.json (its tokenizer_config.json beside it is read too)\n"
           "  -p, --prompt TEXT   the text to tokenize\n"
           "  -f, --file FILE     read the text from FILE, byte for byte ('-' = standard input)\n"
           "  --no-bos            do not prepend BOS (default: prepend it when the model asks, add_bos)\n"
           "  --parse-special     also turn control tokens written in the text (\"<s>\", \"<|im_start|>\")\n"
           "                      into their ids; user-defined added tokens are always recognised\n"
           "  --batch             the text holds several texts separated by the byte 0x1E (record separator):\n"
           "                      print one line of ids per text\n"
           "  --json[=FILE]       print ids and pieces as JSON (on stdout, or in FILE): {\"n_tokens\", \"ids\", \"tokens\": [{\"id\", \"text\",\n"
           "                      \"piece\"}]}; \"text\" is the vocabulary entry, \"piece\" the decoded bytes\n"
           "                      (null, with \"bytes\", when they are not valid UTF-8 on their own)\n");
}

/* Whole stream into a heap buffer. */
static int read_stream(FILE *f, char **out, size_t *size) {
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *b = realloc(buf, cap * 2);
        if (!b) { free(buf); buf = NULL; break; }
        buf = b;
        cap *= 2;
    }
    if (!buf || ferror(f)) {
        free(buf);
        fprintf(stderr, "quanta: error: standard input: read failed\n");
        return CLI_FAIL;
    }
    *out = buf;
    *size = n;
    return CLI_OK;
}

static bool utf8_valid(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t k;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) k = 1;
        else if (c >= 0xE0 && c <= 0xEF) { k = 2; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
        else if (c >= 0xF0 && c <= 0xF4) { k = 3; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
        else return false;
        for (size_t j = 1; j <= k; j++) {
            if (i + j >= n) return false;
            unsigned char d = s[i + j];
            if (j == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF)) return false;
        }
        i += k + 1;
    }
    return true;
}

/* A JSON string, or null (and the bytes) when s is not valid UTF-8. */
static void print_json_text(FILE *out, const char *key, const char *s, size_t n) {
    if (!utf8_valid((const unsigned char *)s, n)) {
        fprintf(out, "\"%s\": null, \"bytes\": [", key);
        for (size_t i = 0; i < n; i++) fprintf(out, "%s%u", i ? ", " : "", (unsigned char)s[i]);
        fprintf(out, "]");
        return;
    }
    fprintf(out, "\"%s\": \"", key);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
        else if (c == '\n') fprintf(out, "\\n");
        else if (c == '\t') fprintf(out, "\\t");
        else if (c == '\r') fprintf(out, "\\r");
        else if (c < 0x20 || c == 0x7F) fprintf(out, "\\u%04x", c);
        else fputc(c, out);
    }
    fputc('"', out);
}

static void print_ids(FILE *out, const qt_tokenizer *tok, const qt_vocab *v, const int32_t *ids, int32_t n, bool json) {
    if (!json) {
        for (int32_t i = 0; i < n; i++) fprintf(out, i ? " %d" : "%d", ids[i]);
        fputc('\n', out);
        return;
    }
    fprintf(out, "{\"n_tokens\": %d, \"ids\": [", n);
    for (int32_t i = 0; i < n; i++) fprintf(out, i ? ", %d" : "%d", ids[i]);
    fprintf(out, "], \"tokens\": [");
    char small[256];
    for (int32_t i = 0; i < n; i++) {
        int32_t len = qt_token_to_piece(tok, ids[i], small, sizeof small);
        char *piece = small;
        if (len > (int32_t)sizeof small) {
            piece = malloc((size_t)len);
            if (!piece) { fprintf(stderr, "quanta: error: out of memory\n"); exit(CLI_FAIL); }
            qt_token_to_piece(tok, ids[i], piece, len);
        }
        fprintf(out, "%s\n  {\"id\": %d, ", i ? "," : "", ids[i]);
        print_json_text(out, "text", v->tokens[ids[i]], strlen(v->tokens[ids[i]]));
        fprintf(out, ", ");
        print_json_text(out, "piece", piece, (size_t)len);
        fprintf(out, "}");
        if (piece != small) free(piece);
    }
    fprintf(out, "%s]}\n", n ? "\n" : "");
}

int cmd_tokenize(int argc, char **argv) {
    const char *model_path = NULL, *prompt = NULL, *file = NULL;
    bool no_bos = false, batch = false, parse_special = false;
    cli_json json = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        int j = cli_json_arg("tokenize", a, &json);
        if (j < 0) return CLI_USAGE;
        if (j || cli_is_quiet(a)) continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { help(); return CLI_OK; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { if (!has_value) return cli_usage("tokenize", "%s needs a value", a); model_path = argv[++i]; }
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) { if (!has_value) return cli_usage("tokenize", "%s needs a value", a); prompt = argv[++i]; }
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) { if (!has_value) return cli_usage("tokenize", "%s needs a value", a); file = argv[++i]; }
        else if (!strcmp(a, "--no-bos")) no_bos = true;
        else if (!strcmp(a, "--parse-special")) parse_special = true;
        else if (!strcmp(a, "--batch")) batch = true;
        else return cli_usage("tokenize", "unknown option '%s'", a);
    }
    if (!model_path) return cli_usage("tokenize", "-m MODEL is required");
    if (!prompt == !file) return cli_usage("tokenize", "give exactly one of -p TEXT and -f FILE");

    char *text = NULL;
    size_t len = 0;
    if (prompt) {
        len = strlen(prompt);
    } else if (!strcmp(file, "-")) {
        if (read_stream(stdin, &text, &len) != CLI_OK) return CLI_FAIL;
    } else {
        qt_status s = qt_read_file(file, &text, &len);
        if (s != QT_OK) return cli_fail(s);
    }
    const char *input = prompt ? prompt : text;

    qt_model *m = NULL;
    qt_tokenizer *tok = NULL;
    int rc = CLI_OK;
    qt_status s = cli_ends_with(model_path, ".json") ? qt_model_open_tokenizer_json(model_path, &m) : qt_model_open(model_path, &m);
    if (s == QT_OK) s = qt_tokenizer_new(qt_model_vocab(m), &tok);
    if (s != QT_OK) { rc = cli_fail(s); goto done; }
    const qt_vocab *v = qt_model_vocab(m);
    unsigned flags = (v->add_bos && !no_bos ? QT_TOKENIZE_ADD_BOS : 0u) | (parse_special ? QT_TOKENIZE_PARSE_SPECIAL : 0u);

    char *jbuf = NULL;
    size_t jlen = 0;
    FILE *out = json.on ? cli_json_open(&json, &jbuf, &jlen) : stdout;
    if (!out) { rc = cli_fail(qt_error(QT_ERR_NOMEM, "tokenize: out of memory")); goto done; }
    if (json.on && batch) fprintf(out, "[");
    size_t start = 0;
    for (int record = 0;; record++) {
        size_t end = len;
        if (batch) {
            const char *sep = memchr(input + start, 0x1E, len - start);
            if (sep) end = (size_t)(sep - input);
        }
        int32_t *ids;
        int32_t n;
        if ((s = qt_tokenize_ex(tok, input + start, end - start, flags, &ids, &n)) != QT_OK) { rc = cli_fail(s); break; }
        if (json.on && batch) fprintf(out, record ? ",\n" : "\n");
        print_ids(out, tok, v, ids, n, json.on);
        if (json.file) print_ids(stdout, tok, v, ids, n, false);
        free(ids);
        if (!batch || end == len) break;
        start = end + 1;
    }
    if (json.on && batch && rc == CLI_OK) fprintf(out, "]\n");
    if (out != stdout) {
        int jrc = cli_json_close(&json, out, &jbuf, &jlen);
        if (rc == CLI_OK) rc = jrc;
    }
    if (fflush(stdout) != 0 && rc == CLI_OK) {
        fprintf(stderr, "quanta: error: writing the output failed\n");
        rc = CLI_FAIL;
    }
done:
    qt_tokenizer_free(tok);
    qt_model_free(m);
    free(text);
    return rc;
}
