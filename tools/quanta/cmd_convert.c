/* `quanta convert IN OUT [--outtype f32|f16|bf16]`: between GGUF, Hugging Face
 * directories and llama2.c checkpoints. Tensor bytes are kept unless
 * --outtype asks for another type; Q/K rows are permuted between HF order
 * and llama.cpp's order as each format requires (docs/formats.md §2.10). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static void help(void) {
    printf("usage: quanta convert IN OUT [--outtype f32|f16|bf16] [--to gguf|hf] [--tokenizer PATH] [--force] [--json[=FILE]] [-q]\n\n"
           "Convert a checkpoint:\n"
           "  Hugging Face directory -> GGUF       (Q/K rows permuted for llama.cpp, tokenizer included)\n"
           "  GGUF                   -> HF directory (config.json, model.safetensors, tokenizer files)\n"
           "  GGUF                   -> GGUF       (e.g. with --outtype)\n"
           "  llama2.c .bin          -> GGUF       (tokenizer: tok<vocab>.bin or tokenizer.bin beside it)\n\n"
           "The output kind is --to, else GGUF when OUT ends in .gguf, else an HF directory\n"
           "for GGUF input and GGUF for the others. Output is written atomically: a failed\n"
           "or interrupted conversion leaves nothing at OUT. A GGUF OUT of '-' is standard\n"
           "output; a symlink is followed and its target replaced; OUT is never the input.\n"
           "An HF OUT directory is created if missing (its parent must exist) and must be\n"
           "empty unless --force. KV cache scales of vLLM checkpoints\n"
           "(self_attn.k_scale / v_scale) are kept in HF output and left out of GGUF output.\n\n"
           "  --outtype T       f32, f16 or bf16 for 2-D weights (norms and biases stay f32);\n"
           "                    default: keep every tensor's type and bytes, except that GGUF\n"
           "                    gets f16/bf16 norms and biases as f32 (llama.cpp needs them so)\n"
           "  --to gguf|hf      output kind\n"
           "  --tokenizer PATH  llama2.c input: the tokenizer.bin to use\n"
           "  --force           write an HF directory into a non-empty OUT (same-named files replaced)\n"
           "  --json[=FILE]     a JSON summary (input, output, kind, source, tensors) on stdout or in FILE\n"
           "  -q, --quiet       no progress on stderr\n"
           "  --help            this text\n\n"
           "exit status: 0 ok, 1 failed (nothing written), 2 usage error\n");
}

static int write_hf(const qt_model *m, const char *out, qt_type outtype, bool force, qt_progress progress);

int cmd_convert(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *to = NULL, *tokenizer = NULL;
    qt_type outtype = QT_TYPE_COUNT;
    int quiet = 0;
    bool force = false;
    cli_json json = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int j = cli_json_arg("convert", a, &json);
        if (j < 0) return CLI_USAGE;
        if (j) continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { help(); return CLI_OK; }
        else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) quiet = 1;
        else if (!strcmp(a, "--force")) force = true;
        else if (!strcmp(a, "--outtype") || !strcmp(a, "--to") || !strcmp(a, "--tokenizer")) {
            if (i + 1 >= argc) return cli_usage("convert", "%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--to")) {
                if (strcmp(v, "gguf") && strcmp(v, "hf")) return cli_usage("convert", "--to: '%s' is not gguf or hf", v);
                to = v;
            } else if (!strcmp(a, "--tokenizer")) {
                tokenizer = v;
            } else {
                const qt_type_traits *tr = qt_type_by_name(v);
                if (!tr || (tr->type != QT_TYPE_F32 && tr->type != QT_TYPE_F16 && tr->type != QT_TYPE_BF16))
                    return cli_usage("convert", "--outtype: '%s' is not f32, f16 or bf16 (quantize with 'quanta quantize')", v);
                outtype = tr->type;
            }
        } else if (a[0] == '-' && a[1]) return cli_usage("convert", "unknown option '%s'", a);
        else if (!in) in = a;
        else if (!out) out = a;
        else return cli_usage("convert", "too many arguments ('%s')", a);
    }
    if (!in || !out) return cli_usage("convert", "need IN and OUT");
    if (!strcmp(out, "-") && json.on && (!json.file || !strcmp(json.file, "-")))
        return cli_usage("convert", "OUT '-' is standard output already: give --json=FILE for the summary");

    qt_model *m;
    qt_status st = tokenizer ? qt_model_open_llama2c(in, tokenizer, &m) : qt_model_open(in, &m);
    if (st != QT_OK) return cli_fail(st);
    const char *src = qt_model_source_format(m);
    bool to_gguf = to ? !strcmp(to, "gguf") : (cli_ends_with(out, ".gguf") || !strcmp(out, "-") || strcmp(src, "gguf") != 0);
    int rc = CLI_OK;
    if (qt_model_vocab(m)->n_tokens == 0 && (to_gguf || !strcmp(src, "llama2c"))) {
        /* A GGUF without a vocabulary does not load in llama.cpp, nor in quanta run. */
        if (!strcmp(src, "llama2c"))
            fprintf(stderr, "quanta: error: %s: no tokenizer found (looked for tok%d.bin and tokenizer.bin beside it); "
                            "pass --tokenizer PATH\n", in, qt_model_hparams(m)->n_vocab);
        else
            fprintf(stderr, "quanta: error: %s: no vocabulary (%s); a GGUF without one loads neither in llama.cpp "
                            "nor in quanta run: %s\n", in,
                    strcmp(src, "gguf") ? "no tokenizer.json in the directory" : "no tokenizer.ggml.tokens",
                    strcmp(src, "gguf") ? "put the model's tokenizer.json (and tokenizer_config.json) beside config.json"
                                        : "convert from a checkpoint that has one");
        qt_model_free(m);
        return CLI_FAIL;
    }
    /* vLLM's KV cache scales (blk.N.attn_k_scale / attn_v_scale) mean nothing to llama.cpp,
     * which refuses files with tensors it does not use: the writer leaves them out. */
    int32_t n_dropped = 0;
    for (int32_t i = 0; to_gguf && i < qt_model_n_tensors(m); i++) n_dropped += qt_gguf_write_drops(qt_model_tensor(m, i)->name);
    if (n_dropped)
        fprintf(stderr, "quanta: note: leaving out %d KV cache scale tensors (blk.N.attn_k_scale / attn_v_scale): "
                        "llama.cpp refuses tensors it does not use; quanta run/eval on %s uses them\n", n_dropped, in);
    qt_progress progress = cli_progress(quiet);
    if (to_gguf) {
        qt_gguf_write_opts o = qt_gguf_write_opts_default();
        o.outtype = outtype;
        o.progress = progress;
        st = qt_gguf_write(m, out, &o);
        rc = st == QT_OK ? CLI_OK : cli_fail(st);
    } else {
        rc = write_hf(m, out, outtype, force, progress);
    }
    cli_progress_end();
    if (rc == CLI_OK && !quiet)
        fprintf(stderr, "quanta: wrote %s (%s, %d tensors, from %s)\n", out, to_gguf ? "gguf" : "hf directory",
                qt_model_n_tensors(m) - n_dropped, src);
    if (rc == CLI_OK && json.on) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i}", "input", in, "output", out, "kind", to_gguf ? "gguf" : "hf",
                              "source", src, "tensors", qt_model_n_tensors(m) - n_dropped, "dropped_kv_scales", n_dropped);
        rc = cli_json_emit_tree(&json, o, 0, "convert");
    }
    qt_model_free(m);
    return rc;
}

static int write_hf(const qt_model *m, const char *out, qt_type outtype, bool force, qt_progress progress) {
    qt_hf_write_opts o;
    memset(&o, 0, sizeof o);
    o.force = force;
    o.convert_types = outtype != QT_TYPE_COUNT;
    o.outtype = outtype;
    o.progress = progress;
    qt_status st = qt_hf_write(m, out, &o);
    return st == QT_OK ? CLI_OK : cli_fail(st);
}
