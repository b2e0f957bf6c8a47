/* `quanta inspect PATH [--json]`: what a checkpoint holds — architecture and
 * hyperparameters, tokenizer, every tensor, totals, quantization and
 * provenance metadata. JSON schema: docs/cli-inspect.md. */
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "inspect_imatrix.h"

static void help(void) {
    printf("usage: quanta inspect PATH [--json[=FILE]] [-q]\n\n"
           "Describe a checkpoint: a GGUF file, a llama2.c .bin (tokenizer beside it),\n"
           "or a Hugging Face directory (config.json + safetensors); or an importance\n"
           "matrix (llama-imatrix's GGUF or legacy .dat file): its datasets, chunks and\n"
           "per entry the columns, experts and counts.\n\n"
           "Prints the architecture and hyperparameters, the tokenizer, every tensor\n"
           "(name, shape in ggml order, format, bytes, bits per weight), totals\n"
           "(parameters stored and unique, bytes, average bits per weight) and the\n"
           "quantization / provenance metadata when the file carries any.\n\n"
           "  --json[=FILE]  one JSON object on stdout, or in FILE (schema: docs/cli-inspect.md)\n"
           "  -q, --quiet    accepted for uniformity (inspect writes nothing on stderr)\n"
           "  --help    this text\n\n"
           "exit status: 0 ok, 1 unreadable or malformed input, 2 usage error\n");
}

/* llama_ftype names (docs/formats.md §3.6), for general.file_type. */
static const char *ftype_name(uint32_t ft) {
    static const char *const names[] = {
        [0] = "ALL_F32", [1] = "MOSTLY_F16", [2] = "MOSTLY_Q4_0", [3] = "MOSTLY_Q4_1", [7] = "MOSTLY_Q8_0",
        [8] = "MOSTLY_Q5_0", [9] = "MOSTLY_Q5_1", [10] = "MOSTLY_Q2_K", [11] = "MOSTLY_Q3_K_S", [12] = "MOSTLY_Q3_K_M",
        [13] = "MOSTLY_Q3_K_L", [14] = "MOSTLY_Q4_K_S", [15] = "MOSTLY_Q4_K_M", [16] = "MOSTLY_Q5_K_S",
        [17] = "MOSTLY_Q5_K_M", [18] = "MOSTLY_Q6_K", [19] = "MOSTLY_IQ2_XXS", [20] = "MOSTLY_IQ2_XS",
        [21] = "MOSTLY_Q2_K_S", [22] = "MOSTLY_IQ3_XS", [23] = "MOSTLY_IQ3_XXS", [24] = "MOSTLY_IQ1_S",
        [25] = "MOSTLY_IQ4_NL", [26] = "MOSTLY_IQ3_S", [27] = "MOSTLY_IQ3_M", [28] = "MOSTLY_IQ2_S",
        [29] = "MOSTLY_IQ2_M", [30] = "MOSTLY_IQ4_XS", [31] = "MOSTLY_IQ1_M", [32] = "MOSTLY_BF16",
        [36] = "MOSTLY_TQ1_0", [37] = "MOSTLY_TQ2_0", [38] = "MOSTLY_MXFP4_MOE",
        [39] = "MOSTLY_NVFP4", [40] = "MOSTLY_Q1_0", [41] = "MOSTLY_Q2_0",
    };
    if (ft == 1024) return "GUESSED";
    return (ft < sizeof names / sizeof names[0] && names[ft]) ? names[ft] : "unknown";
}

static const char *vocab_kind(qt_vocab_kind k) {
    return k == QT_VOCAB_SPM ? "spm" : k == QT_VOCAB_BPE ? "bpe" : "none";
}

static int64_t nelements(const qt_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->n_dims; d++) n *= t->ne[d];
    return n;
}

/* A float32 as the shortest decimal that reads back to it (1e-05, not 9.99999975e-06). */
static json_t *json_float(float f) {
    char buf[32];
    for (int prec = 6; prec <= 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
        if (strtof(buf, NULL) == f) break;
    }
    return json_real(strtod(buf, NULL));
}

static double bpw(size_t bytes, int64_t n) { return n > 0 ? 8.0 * (double)bytes / (double)n : 0.0; }

/* "1,234,567" */
static const char *commas(uint64_t v, char *buf) {
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%" PRIu64, v), o = 0;
    for (int i = 0; i < n; i++) {
        if (i && (n - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o] = '\0';
    return buf;
}

typedef struct summary {
    uint64_t n_params, n_unique, bytes;
    const qt_tensor *dup, *dup_of; /* output.weight stored as a byte copy of token_embd.weight */
    uint64_t per_type_tensors[QT_TYPE_COUNT], per_type_params[QT_TYPE_COUNT], per_type_bytes[QT_TYPE_COUNT];
} summary;

static void summarize(const qt_model *m, summary *s) {
    memset(s, 0, sizeof *s);
    for (int32_t i = 0; i < qt_model_n_tensors(m); i++) {
        const qt_tensor *t = qt_model_tensor(m, i);
        int64_t n = nelements(t);
        s->n_params += (uint64_t)n;
        s->bytes += t->nbytes;
        if ((unsigned)t->type < QT_TYPE_COUNT) {
            s->per_type_tensors[t->type]++;
            s->per_type_params[t->type] += (uint64_t)n;
            s->per_type_bytes[t->type] += t->nbytes;
        }
    }
    s->n_unique = s->n_params;
    /* A tied classifier written out as its own tensor (llama2.c, some converters):
     * same type, shape and bytes as the embedding. Compared byte for byte. */
    const qt_tensor *out = qt_model_find_tensor(m, "output.weight"), *emb = qt_model_find_tensor(m, "token_embd.weight");
    if (out && emb && out->type == emb->type && out->nbytes == emb->nbytes &&
        !memcmp(out->ne, emb->ne, sizeof out->ne) && out->data && emb->data &&
        (out->data == emb->data || !memcmp(out->data, emb->data, out->nbytes))) {
        s->dup = out;
        s->dup_of = emb;
        s->n_unique -= (uint64_t)nelements(out);
    }
}

static const char *type_name(qt_type t) {
    const qt_type_traits *tr = qt_type_get(t);
    return tr ? tr->name : "?";
}

/* ---- metadata values as JSON / text --------------------------------------------- */
static json_t *value_json(const qt_gguf_value *v) {
    switch (v->type) {
    case QT_GGUF_UINT8: case QT_GGUF_UINT16: case QT_GGUF_UINT32: case QT_GGUF_UINT64:
        return v->u64 > (uint64_t)INT64_MAX ? json_real((double)v->u64) : json_integer((json_int_t)v->u64);
    case QT_GGUF_INT8: case QT_GGUF_INT16: case QT_GGUF_INT32: case QT_GGUF_INT64:
        return json_integer((json_int_t)v->i64);
    case QT_GGUF_FLOAT32: case QT_GGUF_FLOAT64:
        return json_real(v->f64);
    case QT_GGUF_BOOL:
        return json_boolean(v->b);
    case QT_GGUF_STRING: {
        json_t *s = json_stringn(v->str.ptr, (size_t)v->str.len); /* NULL for invalid UTF-8 */
        return s ? s : json_string("(invalid UTF-8)");
    }
    default: {
        /* Arrays (token lists...) are summarized, not dumped. */
        json_t *o = json_object();
        json_object_set_new(o, "type", json_string("array"));
        json_object_set_new(o, "element_type", json_string(qt_gguf_type_name(v->arr.type)));
        json_object_set_new(o, "n", json_integer((json_int_t)v->arr.n));
        return o;
    }
    }
}

static void value_text(const qt_gguf_value *v, char *buf, size_t cap) {
    switch (v->type) {
    case QT_GGUF_UINT8: case QT_GGUF_UINT16: case QT_GGUF_UINT32: case QT_GGUF_UINT64:
        snprintf(buf, cap, "%" PRIu64, v->u64); break;
    case QT_GGUF_INT8: case QT_GGUF_INT16: case QT_GGUF_INT32: case QT_GGUF_INT64:
        snprintf(buf, cap, "%" PRId64, v->i64); break;
    case QT_GGUF_FLOAT32: case QT_GGUF_FLOAT64:
        snprintf(buf, cap, "%g", v->f64); break;
    case QT_GGUF_BOOL:
        snprintf(buf, cap, "%s", v->b ? "true" : "false"); break;
    case QT_GGUF_STRING: {
        /* one line, at most 60 characters */
        size_t o = 0;
        buf[o++] = '"';
        for (uint64_t i = 0; i < v->str.len && o + 6 < cap && i < 60; i++) {
            char c = v->str.ptr[i];
            buf[o++] = (c == '\n' || c == '\r' || c == '\t' || c == '\0') ? ' ' : c;
        }
        if (v->str.len > 60 && o + 4 < cap) { memcpy(buf + o, "...", 3); o += 3; }
        buf[o++] = '"';
        buf[o] = '\0';
        break;
    }
    default:
        snprintf(buf, cap, "[%" PRIu64 " x %s]", v->arr.n, qt_gguf_type_name(v->arr.type)); break;
    }
}

/* Keys that describe quantization or where the file came from. */
/* An HF directory's config.json quantization_config (compressed-tensors), or NULL. */
static json_t *ct_config(const char *path) {
    char cfg[4096];
    snprintf(cfg, sizeof cfg, "%s/config.json", path);
    json_t *root = json_load_file(cfg, 0, NULL);
    json_t *qc = json_incref(json_object_get(root, "quantization_config"));
    json_decref(root);
    return qc;
}

/* The compressed-tensors provenance: format, llm-compressor preset, quanta's
 * scheme and the calibration record (quantization_config.quanta). */
static bool print_ct_config(const char *path) {
    json_t *qc = ct_config(path);
    if (!qc) return false;
    json_t *prov = json_object_get(qc, "quanta"), *cal = json_object_get(prov, "calibration");
    const char *fmt = json_string_value(json_object_get(qc, "format"));
    printf("compressed-tensors  format %s", fmt ? fmt : "?");
    if (prov) printf(", preset %s, written by quanta %s as --scheme %s", json_string_value(json_object_get(prov, "preset")),
                     json_string_value(json_object_get(prov, "version")), json_string_value(json_object_get(prov, "scheme")));
    printf("\n");
    const char *k;
    json_t *v;
    json_object_foreach(cal, k, v) {
        char *t = json_is_array(v) ? NULL : json_dumps(v, JSON_ENCODE_ANY);
        if (json_is_array(v)) printf("  quanta.calibration.%-17s [%zu hashes]\n", k, json_array_size(v));
        else printf("  quanta.calibration.%-17s %s\n", k, t ? t : "?");
        free(t);
    }
    json_decref(qc);
    return true;
}

static bool provenance_key(const char *k) {
    return !strncmp(k, "general.", 8) || !strncmp(k, "quantize.", 9) || !strncmp(k, "quanta.", 7);
}

/* ---- text ----------------------------------------------------------------------------- */
static void print_text(const qt_model *m, const summary *s) {
    const qt_hparams *hp = qt_model_hparams(m);
    const qt_vocab *v = qt_model_vocab(m);
    const qt_gguf *g = qt_model_gguf(m);
    char a[32], b[32];
    printf("file          %s\n", qt_model_path(m));
    if (g)
        printf("format        gguf v%" PRIu32 ", %s bytes, %" PRId64 " metadata keys, alignment %" PRIu32 "\n",
               qt_gguf_version(g), commas(qt_gguf_file_size(g), a), qt_gguf_n_kv(g), qt_gguf_alignment(g));
    else
        printf("format        %s\n", qt_model_source_format(m));
    printf("architecture  %s%s\n", hp->arch_name[0] ? hp->arch_name : "?", hp->arch == QT_ARCH_UNKNOWN ? " (not runnable by quanta)" : "");
    printf("  vocab %d, embedding %d, layers %d, heads %d (kv %d, head_dim %d), ffn %d\n", hp->n_vocab, hp->n_embd,
           hp->n_layer, hp->n_head, hp->n_head_kv, hp->head_dim, hp->n_ff);
    printf("  context %d, rope dims %d, rope base %g, rope %s, rms eps %g\n", hp->n_ctx_train, hp->n_rot,
           (double)hp->rope_theta, hp->rope_neox ? "rotate-half (neox)" : "adjacent pairs (norm)", (double)hp->rms_eps);
    if (hp->rope_scaling != QT_ROPE_SCALING_NONE)
        printf("  rope scaling %s, factor %g\n", hp->rope_scaling == QT_ROPE_SCALING_LINEAR ? "linear" : "llama3",
               (double)hp->rope_factor);
    printf("  embeddings %s%s%s\n", hp->tie_embeddings ? "tied (no output.weight)" : "separate output.weight",
           hp->attn_qkv_bias ? ", q/k/v bias" : "", hp->attn_qk_norm ? ", q/k norm" : "");
    if (v->n_tokens > 0) {
        int n_type[7] = {0};
        for (int32_t i = 0; v->token_types && i < v->n_tokens; i++)
            if (v->token_types[i] >= 0 && v->token_types[i] < 7) n_type[v->token_types[i]]++;
        printf("tokenizer     %s%s%s, %d tokens", vocab_kind(v->kind), v->pre[0] ? " pre " : "", v->pre, v->n_tokens);
        if (v->token_types) printf(" (%d normal, %d control, %d byte, %d user-defined, %d unused)", n_type[1], n_type[3],
                                   n_type[6], n_type[4], n_type[5]);
        if (v->n_merges) printf(", %d merges", v->n_merges);
        printf("\n  bos %d, eos %d, unk %d, pad %d, add_bos %s, add_eos %s%s\n", v->bos_id, v->eos_id, v->unk_id,
               v->pad_id, v->add_bos ? "yes" : "no", v->add_eos ? "yes" : "no", v->chat_template ? ", chat template" : "");
    } else {
        printf("tokenizer     none\n");
    }

    printf("tensors\n  %-34s %-18s %-7s %12s %7s\n", "name", "shape", "format", "bytes", "bpw");
    for (int32_t i = 0; i < qt_model_n_tensors(m); i++) {
        const qt_tensor *t = qt_model_tensor(m, i);
        char shape[64] = "";
        for (int d = 0, o = 0; d < (t->n_dims ? t->n_dims : 1); d++)
            o += snprintf(shape + o, sizeof shape - (size_t)o, "%s%" PRId64, d ? " x " : "", t->ne[d]);
        printf("  %-34s %-18s %-7s %12s %7.2f\n", t->name, shape, type_name(t->type), commas(t->nbytes, a),
               bpw(t->nbytes, nelements(t)));
    }
    printf("totals        %d tensors, %s parameters stored", qt_model_n_tensors(m), commas(s->n_params, a));
    if (s->dup) printf(", %s unique\n              (%s duplicates %s byte for byte)", commas(s->n_unique, b), s->dup->name, s->dup_of->name);
    printf("\n              %s bytes of tensor data, %.2f bits per weight on average\n", commas(s->bytes, a),
           bpw(s->bytes, (int64_t)s->n_params));
    printf("formats      ");
    for (int t = 0; t < QT_TYPE_COUNT; t++)
        if (s->per_type_tensors[t])
            printf(" %s: %" PRIu64 " tensor%s, %s params;", type_name((qt_type)t), s->per_type_tensors[t],
                   s->per_type_tensors[t] == 1 ? "" : "s", commas(s->per_type_params[t], a));
    printf("\n");
    if (g) {
        bool any = false;
        for (int64_t i = 0; i < qt_gguf_n_kv(g); i++) {
            const qt_gguf_kv *kv = qt_gguf_kv_at(g, i);
            if (!provenance_key(kv->key) || !strcmp(kv->key, "general.architecture")) continue;
            if (!any) printf("metadata\n");
            any = true;
            char val[96];
            value_text(&kv->value, val, sizeof val);
            if (!strcmp(kv->key, "general.file_type") && kv->value.type == QT_GGUF_UINT32)
                printf("  %-36s %s (%s)\n", kv->key, val, ftype_name((uint32_t)kv->value.u64));
            else
                printf("  %-36s %s\n", kv->key, val);
        }
    }
    const bool ct = !g && print_ct_config(qt_model_path(m));
    bool quantized = false;
    for (int t = 0; t < QT_TYPE_COUNT; t++)
        if (s->per_type_tensors[t] && qt_type_get((qt_type)t) && qt_type_get((qt_type)t)->is_quantized) quantized = true;
    printf("quantization  %s\n", quantized ? "block-quantized tensors present (see formats)"
                                  : ct ? "compressed-tensors, dequantized to the formats above on load"
                                       : "none (floating-point tensors only)");
}

/* ---- JSON ------------------------------------------------------------------------------ */
static json_t *build_json(const qt_model *m, const summary *s) {
    const qt_hparams *hp = qt_model_hparams(m);
    const qt_vocab *v = qt_model_vocab(m);
    const qt_gguf *g = qt_model_gguf(m);
    json_t *root = json_object();
    json_object_set_new(root, "path", json_string(qt_model_path(m)));
    json_object_set_new(root, "source_format", json_string(qt_model_source_format(m)));
    json_object_set_new(root, "architecture", json_string(hp->arch_name));
    json_object_set_new(root, "runnable", json_boolean(hp->arch != QT_ARCH_UNKNOWN));

    json_t *h = json_object();
    json_object_set_new(h, "n_vocab", json_integer(hp->n_vocab));
    json_object_set_new(h, "n_embd", json_integer(hp->n_embd));
    json_object_set_new(h, "n_layer", json_integer(hp->n_layer));
    json_object_set_new(h, "n_head", json_integer(hp->n_head));
    json_object_set_new(h, "n_head_kv", json_integer(hp->n_head_kv));
    json_object_set_new(h, "head_dim", json_integer(hp->head_dim));
    json_object_set_new(h, "n_ff", json_integer(hp->n_ff));
    json_object_set_new(h, "n_ctx_train", json_integer(hp->n_ctx_train));
    json_object_set_new(h, "n_rot", json_integer(hp->n_rot));
    json_object_set_new(h, "rms_eps", json_float(hp->rms_eps));
    json_object_set_new(h, "rope_theta", json_float(hp->rope_theta));
    json_object_set_new(h, "rope_neox", json_boolean(hp->rope_neox));
    json_object_set_new(h, "rope_scaling", json_string(hp->rope_scaling == QT_ROPE_SCALING_LINEAR ? "linear"
                                                       : hp->rope_scaling == QT_ROPE_SCALING_LLAMA3 ? "llama3" : "none"));
    json_object_set_new(h, "rope_factor", json_float(hp->rope_factor));
    json_object_set_new(h, "tie_embeddings", json_boolean(hp->tie_embeddings));
    json_object_set_new(h, "attn_qkv_bias", json_boolean(hp->attn_qkv_bias));
    json_object_set_new(h, "attn_qk_norm", json_boolean(hp->attn_qk_norm));
    json_object_set_new(root, "hparams", h);

    json_t *tk = json_object();
    json_object_set_new(tk, "kind", json_string(vocab_kind(v->kind)));
    json_object_set_new(tk, "pre", json_string(v->pre));
    json_object_set_new(tk, "n_tokens", json_integer(v->n_tokens));
    json_object_set_new(tk, "n_merges", json_integer(v->n_merges));
    json_object_set_new(tk, "bos_id", json_integer(v->bos_id));
    json_object_set_new(tk, "eos_id", json_integer(v->eos_id));
    json_object_set_new(tk, "unk_id", json_integer(v->unk_id));
    json_object_set_new(tk, "pad_id", json_integer(v->pad_id));
    json_object_set_new(tk, "add_bos", json_boolean(v->add_bos));
    json_object_set_new(tk, "add_eos", json_boolean(v->add_eos));
    json_object_set_new(tk, "has_chat_template", json_boolean(v->chat_template != NULL));
    json_object_set_new(root, "tokenizer", tk);

    json_object_set_new(root, "n_tensors", json_integer(qt_model_n_tensors(m)));
    json_object_set_new(root, "n_params", json_integer((json_int_t)s->n_params));
    json_object_set_new(root, "n_params_unique", json_integer((json_int_t)s->n_unique));
    json_t *dups = json_array();
    if (s->dup) {
        json_t *d = json_object();
        json_object_set_new(d, "name", json_string(s->dup->name));
        json_object_set_new(d, "same_as", json_string(s->dup_of->name));
        json_array_append_new(dups, d);
    }
    json_object_set_new(root, "duplicates", dups);
    json_object_set_new(root, "bytes_total", json_integer((json_int_t)s->bytes));
    json_object_set_new(root, "bpw", json_real(bpw(s->bytes, (int64_t)s->n_params)));

    json_t *ts = json_array();
    for (int32_t i = 0; i < qt_model_n_tensors(m); i++) {
        const qt_tensor *t = qt_model_tensor(m, i);
        json_t *o = json_object(), *shape = json_array();
        for (int d = 0; d < t->n_dims; d++) json_array_append_new(shape, json_integer(t->ne[d]));
        json_object_set_new(o, "name", json_string(t->name));
        json_object_set_new(o, "shape", shape);
        json_object_set_new(o, "format", json_string(type_name(t->type)));
        json_object_set_new(o, "bytes", json_integer((json_int_t)t->nbytes));
        json_object_set_new(o, "bpw", json_real(bpw(t->nbytes, nelements(t))));
        json_array_append_new(ts, o);
    }
    json_object_set_new(root, "tensors", ts);

    json_t *fm = json_object();
    for (int t = 0; t < QT_TYPE_COUNT; t++) {
        if (!s->per_type_tensors[t]) continue;
        json_t *o = json_object();
        json_object_set_new(o, "tensors", json_integer((json_int_t)s->per_type_tensors[t]));
        json_object_set_new(o, "params", json_integer((json_int_t)s->per_type_params[t]));
        json_object_set_new(o, "bytes", json_integer((json_int_t)s->per_type_bytes[t]));
        json_object_set_new(fm, type_name((qt_type)t), o);
    }
    json_object_set_new(root, "formats", fm);

    if (g) {
        json_t *gg = json_object(), *meta = json_object(), *prov = json_object();
        json_object_set_new(gg, "version", json_integer(qt_gguf_version(g)));
        json_object_set_new(gg, "file_bytes", json_integer((json_int_t)qt_gguf_file_size(g)));
        json_object_set_new(gg, "alignment", json_integer(qt_gguf_alignment(g)));
        json_object_set_new(gg, "data_offset", json_integer((json_int_t)qt_gguf_data_offset(g)));
        for (int64_t i = 0; i < qt_gguf_n_kv(g); i++) {
            const qt_gguf_kv *kv = qt_gguf_kv_at(g, i);
            json_object_set_new(meta, kv->key, value_json(&kv->value));
            if (provenance_key(kv->key)) json_object_set_new(prov, kv->key, value_json(&kv->value));
        }
        json_object_set_new(gg, "metadata", meta);
        json_object_set_new(root, "gguf", gg);
        const qt_gguf_value *ft = qt_gguf_find(g, "general.file_type");
        if (ft && ft->type == QT_GGUF_UINT32)
            json_object_set_new(prov, "file_type_name", json_string(ftype_name((uint32_t)ft->u64)));
        json_object_set_new(root, "quantization", prov);
    } else {
        json_t *qc = ct_config(qt_model_path(m));
        json_object_set_new(root, "quantization", qc ? qc : json_object());
    }
    return root;
}

int cmd_inspect(int argc, char **argv) {
    const char *path = NULL;
    cli_json json = {0};
    for (int i = 1; i < argc; i++) {
        int j = cli_json_arg("inspect", argv[i], &json);
        if (j < 0) return CLI_USAGE;
        if (j || cli_is_quiet(argv[i])) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { help(); return CLI_OK; }
        else if (argv[i][0] == '-' && argv[i][1]) return cli_usage("inspect", "unknown option '%s'", argv[i]);
        else if (path) return cli_usage("inspect", "one PATH only (got '%s' and '%s')", path, argv[i]);
        else path = argv[i];
    }
    if (!path) return cli_usage("inspect", "missing PATH");
    if (inspect_is_imatrix(path)) return inspect_imatrix(path, &json);
    qt_model *m;
    qt_status st = qt_model_open(path, &m);
    if (st != QT_OK) return cli_fail(st);
    summary s;
    summarize(m, &s);
    int rc = CLI_OK;
    if (json.on) {
        rc = cli_json_emit_tree(&json, build_json(m, &s), JSON_REAL_PRECISION(9), path);
    }
    if (!rc && (!json.on || json.file)) print_text(m, &s);
    qt_model_free(m);
    return rc;
}
