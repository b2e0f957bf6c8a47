/* lib/model/vocab_hf.c — a Hugging Face tokenizer.json (+ tokenizer_config.json)
 * into the model's qt_vocab (docs/formats.md §8.1; the accepted shapes are listed in
 * docs/tokenizers.md):
 *   - byte-level BPE (Llama 3, Qwen2/2.5/3, GPT-2): model.vocab, model.merges
 *     ("a b" strings or [a, b] pairs), added_tokens, the Split regex naming the
 *     pre-tokenizer -> kind BPE with pre "llama-bpe" / "qwen2" / "gpt-2";
 *   - SentencePiece written as HF "Unigram" ([piece, score] pairs, byte_fallback)
 *     -> kind SPM with those scores, lossless for GGUF "llama" vocabularies;
 *   - SentencePiece BPE written as HF "BPE" with byte_fallback (Llama 2, Mistral)
 *     -> kind SPM with scores derived from the merge order.
 * Token types follow llama.cpp's converter: special added tokens (and ones that
 * look like "<|...|>") CONTROL, other added tokens USER_DEFINED, ids missing
 * from the file "[PAD<id>]" UNUSED. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model_internal.h"
#include "tok_internal.h"

#define MAX_HF_TOKENS (1 << 24)

typedef struct hf_load {
    qt_model *m;
    const char *path;
    json_t *root, *model;
    qt_vocab_kind kind;
    const char *model_type;  /* "BPE" / "Unigram" */
    int32_t n;               /* token count (max id + 1) */
    const char **text;       /* (n) borrowed from the JSON, NULL = gap */
    int32_t *type;           /* (n) */
    float *score;            /* (n) SPM only */
    bool byte_fallback;
    int32_t unk_id;
} hf_load;

/* ---- small JSON helpers ----------------------------------------------------- */

static const char *jstr(const json_t *o, const char *key) {
    return json_is_object(o) ? json_string_value(json_object_get(o, key)) : NULL;
}

static bool jtype_is(const json_t *o, const char *type) {
    const char *t = jstr(o, "type");
    return t && !strcmp(t, type);
}

/* The component of `type` in node or in its Sequence list (HF nests
 * normalizers / pre_tokenizers / decoders in {"type": "Sequence", <list>: [...]}). */
static const json_t *find_component(const json_t *node, const char *list_key, const char *type) {
    if (!json_is_object(node)) return NULL;
    if (jtype_is(node, type)) return node;
    if (jtype_is(node, "Sequence")) {
        const json_t *arr = json_object_get(node, list_key);
        size_t i;
        const json_t *c;
        json_array_foreach(arr, i, c) {
            const json_t *f = find_component(c, list_key, type);
            if (f) return f;
        }
    }
    return NULL;
}

/* Every component type of node is in allowed (NULL-terminated); else names the first other. */
static const char *unexpected_component(const json_t *node, const char *list_key, const char *const *allowed) {
    if (!node || json_is_null(node)) return NULL;
    const char *t = jstr(node, "type");
    if (!t) return "(no type)";
    if (!strcmp(t, "Sequence")) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(node, list_key), i, c) {
            const char *bad = unexpected_component(c, list_key, allowed);
            if (bad) return bad;
        }
        return NULL;
    }
    for (int i = 0; allowed[i]; i++)
        if (!strcmp(t, allowed[i])) return NULL;
    return t;
}

/* tokenizer_config.json writes special tokens as "text" or {"content": "text", ...}. */
static const char *token_content(const json_t *v) {
    if (json_is_string(v)) return json_string_value(v);
    return jstr(v, "content");
}

static int32_t find_text(const hf_load *h, const char *s) {
    if (!s) return -1;
    for (int32_t i = 0; i < h->n; i++)
        if (h->text[i] && !strcmp(h->text[i], s)) return i;
    return -1;
}

/* llama.cpp converter's does_token_look_special. */
static bool looks_special(const char *s) {
    size_t n = strlen(s);
    if (!strcmp(s, "<pad>") || !strcmp(s, "<mask>") || !strcmp(s, "<2mass>") || !strcmp(s, "[@BOS@]")) return true;
    if (n >= 4 && !strncmp(s, "<|", 2) && !strcmp(s + n - 2, "|>")) return true;
    /* fullwidth vertical bar U+FF5C (EF BD 9C): "<｜...｜>" */
    if (n >= 8 && !strncmp(s, "<\xEF\xBD\x9C", 4) && !strcmp(s + n - 4, "\xEF\xBD\x9C>")) return true;
    return false;
}

static bool is_byte_piece(const char *s) {
    return strlen(s) == 6 && !strncmp(s, "<0x", 3) && s[5] == '>' && strchr("0123456789ABCDEF", s[3]) &&
           strchr("0123456789ABCDEF", s[4]) && s[3] && s[4];
}

/* ---- the token table ----------------------------------------------------------------- */

static qt_status set_text(hf_load *h, int32_t id, const char *s, const char *where) {
    if (id < 0 || id >= h->n) return qt_error(QT_ERR_FORMAT, "%s: %s: token id %d out of range", h->path, where, id);
    if (h->text[id] && strcmp(h->text[id], s) != 0)
        return qt_error(QT_ERR_FORMAT, "%s: %s: id %d used by both '%s' and '%s'", h->path, where, id, h->text[id], s);
    h->text[id] = s;
    return QT_OK;
}

/* Token count: one past the largest id in the model vocabulary and added_tokens. */
static qt_status count_tokens(hf_load *h, const json_t *added) {
    int64_t max_id = -1;
    const json_t *vocab = json_object_get(h->model, "vocab");
    if (json_is_object(vocab)) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)vocab, k, v) {
            if (!json_is_integer(v)) return qt_error(QT_ERR_FORMAT, "%s: field 'model.vocab' entry '%s': id is not an integer", h->path, k);
            if (json_integer_value(v) > max_id) max_id = json_integer_value(v);
        }
    } else if (json_is_array(vocab)) {
        max_id = (int64_t)json_array_size(vocab) - 1;
    } else {
        return qt_error(QT_ERR_FORMAT, "%s: field 'model.vocab' is missing or not an object/array", h->path);
    }
    size_t i;
    const json_t *a;
    json_array_foreach(added, i, a) {
        const json_t *id = json_object_get(a, "id");
        if (!json_is_integer(id) || !jstr(a, "content"))
            return qt_error(QT_ERR_FORMAT, "%s: field 'added_tokens[%zu]': needs an integer 'id' and a string 'content'", h->path, i);
        if (json_integer_value(id) > max_id) max_id = json_integer_value(id);
    }
    if (max_id < 0) return qt_error(QT_ERR_FORMAT, "%s: field 'model.vocab': no tokens", h->path);
    if (max_id >= MAX_HF_TOKENS) return qt_error(QT_ERR_FORMAT, "%s: token id %lld is implausibly large", h->path, (long long)max_id);
    h->n = (int32_t)max_id + 1;
    h->text = calloc((size_t)h->n, sizeof *h->text);
    h->type = malloc((size_t)h->n * sizeof *h->type);
    h->score = calloc((size_t)h->n, sizeof *h->score);
    if (!h->text || !h->type || !h->score) return qt_error(QT_ERR_NOMEM, "%s: out of memory", h->path);
    for (int32_t t = 0; t < h->n; t++) h->type[t] = QT_TOKEN_NORMAL;
    return QT_OK;
}

static qt_status read_vocab(hf_load *h) {
    const json_t *vocab = json_object_get(h->model, "vocab");
    qt_status st;
    if (json_is_object(vocab)) { /* BPE: {"token": id} */
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)vocab, k, v) {
            if (json_integer_value(v) < 0) return qt_error(QT_ERR_FORMAT, "%s: field 'model.vocab' entry '%s': negative id", h->path, k);
            if ((st = set_text(h, (int32_t)json_integer_value(v), k, "model.vocab")) != QT_OK) return st;
        }
        return QT_OK;
    }
    size_t i; /* Unigram: [[piece, score], ...], id = position */
    const json_t *e;
    json_array_foreach(vocab, i, e) {
        const json_t *sc = json_array_get(e, 1);
        const char *piece = json_string_value(json_array_get(e, 0));
        if (!json_is_array(e) || json_array_size(e) != 2 || !piece || !json_is_number(sc))
            return qt_error(QT_ERR_FORMAT, "%s: field 'model.vocab[%zu]': expected [piece, score]", h->path, i);
        if ((st = set_text(h, (int32_t)i, piece, "model.vocab")) != QT_OK) return st;
        h->score[i] = (float)json_number_value(sc);
    }
    return QT_OK;
}

static qt_status read_added(hf_load *h, const json_t *added) {
    size_t i;
    const json_t *a;
    json_array_foreach(added, i, a) {
        int32_t id = (int32_t)json_integer_value(json_object_get(a, "id"));
        const char *s = jstr(a, "content");
        if (id < 0 || id >= h->n) return qt_error(QT_ERR_FORMAT, "%s: field 'added_tokens[%zu]': id %d out of range", h->path, i, id);
        /* An added token may restate a vocabulary entry (Llama 2's <s>); its content wins. */
        h->text[id] = s;
        bool special = json_is_true(json_object_get(a, "special"));
        h->type[id] = (special || looks_special(s)) ? QT_TOKEN_CONTROL : QT_TOKEN_USER_DEFINED;
    }
    return QT_OK;
}

/* ---- merges ---------------------------------------------------------------------------------- */

/* Merge i as the GGUF string "left right". HF pairs may hold spaces inside a
 * part; like gguf-py, those become U+0120 so the string splits unambiguously. */
static size_t merge_text(const json_t *e, char *out) {
    if (json_is_string(e)) {
        size_t n = json_string_length(e);
        if (out) memcpy(out, json_string_value(e), n);
        return n;
    }
    size_t o = 0;
    for (int part = 0; part < 2; part++) {
        const json_t *p = json_array_get(e, (size_t)part);
        const char *s = json_string_value(p);
        size_t n = json_string_length(p);
        if (part == 1) { if (out) out[o] = ' '; o++; }
        for (size_t k = 0; k < n; k++) {
            if (s[k] == ' ') { if (out) memcpy(out + o, "\xC4\xA0", 2); o += 2; }
            else { if (out) out[o] = s[k]; o++; }
        }
    }
    return o;
}

static qt_status check_merges(const hf_load *h, const json_t *merges) {
    if (!json_is_array(merges)) return qt_error(QT_ERR_FORMAT, "%s: field 'model.merges' is missing or not an array", h->path);
    size_t i;
    const json_t *e;
    json_array_foreach(merges, i, e) {
        bool ok = json_is_string(e) ? json_string_length(e) > 0 && strlen(json_string_value(e)) == json_string_length(e)
                                    : json_is_array(e) && json_array_size(e) == 2 && json_is_string(json_array_get(e, 0)) &&
                                          json_is_string(json_array_get(e, 1));
        if (!ok) return qt_error(QT_ERR_FORMAT, "%s: field 'model.merges[%zu]': expected \"a b\" or [\"a\", \"b\"]", h->path, i);
    }
    return QT_OK;
}

/* SentencePiece BPE as HF BPE (Llama 2): a merged token's score is minus the
 * order in which merges first produce it, so SPM's highest-score-first merging
 * replays the merge list; tokens no merge produces score below all of them. */
static void derive_scores(hf_load *h, const json_t *merges) {
    bool *seen = calloc((size_t)h->n, 1);
    char *buf = NULL;
    size_t cap = 0;
    int32_t order = 0;
    for (int32_t t = 0; t < h->n; t++) h->score[t] = 0.0f;
    size_t i;
    const json_t *e;
    json_array_foreach(merges, i, e) {
        size_t n = merge_text(e, NULL);
        if (n + 1 > cap) {
            cap = 2 * (n + 1);
            char *b = realloc(buf, cap);
            if (!b) break;
            buf = b;
        }
        merge_text(e, buf);
        buf[n] = 0;
        char *sp = strchr(buf + 1, ' ');
        if (!sp) continue;
        memmove(sp, sp + 1, strlen(sp + 1) + 1);
        int32_t id = find_text(h, buf);
        if (id >= 0 && seen && !seen[id]) {
            seen[id] = true;
            h->score[id] = -(float)order++;
        }
    }
    for (int32_t t = 0; t < h->n && seen; t++) {
        const char *s = h->text[t];
        if (!seen[t] && h->type[t] == QT_TOKEN_NORMAL && s) {
            uint32_t cp;
            size_t len = strlen(s);
            if (qt__utf8_decode((const uint8_t *)s, len, &cp) < len) h->score[t] = -(float)order - 1.0f;
        }
    }
    free(seen);
    free(buf);
}

/* ---- kinds -------------------------------------------------------------------------------------- */

static bool spm_add_space_prefix(const json_t *root) {
    const json_t *prep = find_component(json_object_get(root, "normalizer"), "normalizers", "Prepend");
    if (prep && jstr(prep, "prepend") && !strcmp(jstr(prep, "prepend"), "\xE2\x96\x81")) return true;
    const json_t *ms = find_component(json_object_get(root, "pre_tokenizer"), "pretokenizers", "Metaspace");
    if (ms) {
        const char *scheme = jstr(ms, "prepend_scheme");
        if (scheme) return strcmp(scheme, "never") != 0;
        return !json_is_false(json_object_get(ms, "add_prefix_space"));
    }
    return false;
}

static qt_status classify_spm(hf_load *h) {
    static const char *const norm_ok[] = {"Prepend", "Replace", NULL};
    static const char *const pre_ok[] = {"Metaspace", NULL};
    const char *bad = unexpected_component(json_object_get(h->root, "normalizer"), "normalizers", norm_ok);
    if (bad) return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'normalizer': '%s' is not supported for SentencePiece vocabularies", h->path, bad);
    bad = unexpected_component(json_object_get(h->root, "pre_tokenizer"), "pretokenizers", pre_ok);
    if (bad) return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'pre_tokenizer': '%s' is not supported for SentencePiece vocabularies", h->path, bad);
    h->kind = QT_VOCAB_SPM;
    for (int32_t t = 0; t < h->n; t++) {
        if (!h->text[t] || h->type[t] != QT_TOKEN_NORMAL) continue;
        if (h->byte_fallback && is_byte_piece(h->text[t])) h->type[t] = QT_TOKEN_BYTE;
    }
    if (h->unk_id >= 0 && h->unk_id < h->n) h->type[h->unk_id] = QT_TOKEN_UNKNOWN;
    return QT_OK;
}

static qt_status classify_bpe(hf_load *h, char pre_name[32]) {
    const json_t *pre = json_object_get(h->root, "pre_tokenizer");
    const json_t *bl = find_component(pre, "pretokenizers", "ByteLevel");
    const json_t *split = find_component(pre, "pretokenizers", "Split");
    static const char *const pre_ok[] = {"ByteLevel", "Split", NULL};
    const char *bad = unexpected_component(pre, "pretokenizers", pre_ok);
    if (bad) return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'pre_tokenizer': '%s' is not supported for byte-level BPE", h->path, bad);
    if (json_is_true(json_object_get(bl, "add_prefix_space")))
        return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'pre_tokenizer': ByteLevel add_prefix_space = true is not supported", h->path);
    const qt__pretok *p;
    if (split) {
        const char *re = jstr(json_object_get(split, "pattern"), "Regex");
        const char *behavior = jstr(split, "behavior");
        if (!re) return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'pre_tokenizer': Split without a Regex pattern is not supported", h->path);
        if ((behavior && strcmp(behavior, "Isolated") != 0) || json_is_true(json_object_get(split, "invert")))
            return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'pre_tokenizer': Split behavior '%s' (invert %s) is not supported",
                            h->path, behavior ? behavior : "?", json_is_true(json_object_get(split, "invert")) ? "true" : "false");
        p = qt__pretok_by_regex(re);
        if (!p)
            return qt_error(QT_ERR_UNSUPPORTED,
                            "%s: field 'pre_tokenizer': Split regex '%s' is not one quanta knows (Llama 3, Qwen2, GPT-2)", h->path, re);
        if (json_is_true(json_object_get(bl, "use_regex")))
            return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'pre_tokenizer': Split followed by ByteLevel use_regex = true is not supported", h->path);
    } else {
        if (json_is_false(json_object_get(bl, "use_regex")))
            return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'pre_tokenizer': ByteLevel without a regex is not supported", h->path);
        p = qt__pretok_by_name("gpt-2");
    }
    /* The normaliser and ignore_merges must be the ones the pre-tokenizer row implies. */
    static const char *const norm_ok[] = {"NFC", NULL};
    const json_t *norm = json_object_get(h->root, "normalizer");
    bad = unexpected_component(norm, "normalizers", norm_ok);
    if (bad) return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'normalizer': '%s' is not supported for byte-level BPE", h->path, bad);
    bool nfc = find_component(norm, "normalizers", "NFC") != NULL;
    if (nfc != p->nfc)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'normalizer': the %s pre-tokenizer %s NFC, this file %s", h->path, p->name,
                        p->nfc ? "comes with" : "comes without", nfc ? "asks for it" : "does not");
    const json_t *im = json_object_get(h->model, "ignore_merges");
    if (json_is_boolean(im) && json_is_true(im) != p->ignore_merges)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'model.ignore_merges': %s with the %s pre-tokenizer is not supported", h->path,
                        json_is_true(im) ? "true" : "false", p->name);
    snprintf(pre_name, 32, "%s", p->name);
    h->kind = QT_VOCAB_BPE;
    return QT_OK;
}

/* ---- copying into the model ---------------------------------------------------------------------- */

static qt_status store_vocab(hf_load *h, const json_t *merges) {
    qt_model *m = h->m;
    qt_vocab *v = &m->vocab;
    size_t total = 0;
    char pad[32];
    for (int32_t t = 0; t < h->n; t++)
        total += (h->text[t] ? strlen(h->text[t]) : (size_t)snprintf(pad, sizeof pad, "[PAD%d]", t)) + 1;
    size_t n_merges = h->kind == QT_VOCAB_BPE ? json_array_size(merges) : 0;
    if (n_merges > INT32_MAX) return qt_error(QT_ERR_FORMAT, "%s: too many merges", h->path);
    for (size_t i = 0; i < n_merges; i++) total += merge_text(json_array_get(merges, i), NULL) + 1;
    char *arena = qt__model_alloc(m, total);
    v->tokens = qt__model_alloc(m, (size_t)h->n * sizeof *v->tokens);
    v->token_types = qt__model_alloc(m, (size_t)h->n * sizeof *v->token_types);
    v->merges = n_merges ? qt__model_alloc(m, n_merges * sizeof *v->merges) : NULL;
    v->scores = h->kind == QT_VOCAB_SPM ? qt__model_alloc(m, (size_t)h->n * sizeof *v->scores) : NULL;
    if (!arena || !v->tokens || !v->token_types || (n_merges && !v->merges) || (h->kind == QT_VOCAB_SPM && !v->scores))
        return QT_ERR_NOMEM; /* message set by qt__model_alloc */
    char *o = arena;
    for (int32_t t = 0; t < h->n; t++) {
        v->tokens[t] = o;
        if (h->text[t]) {
            size_t n = strlen(h->text[t]);
            memcpy(o, h->text[t], n + 1);
            o += n + 1;
            v->token_types[t] = h->type[t];
        } else {
            o += snprintf(o, 32, "[PAD%d]", t) + 1;
            v->token_types[t] = QT_TOKEN_UNUSED;
        }
        if (v->scores) v->scores[t] = h->text[t] ? h->score[t] : -10000.0f;
    }
    for (size_t i = 0; i < n_merges; i++) {
        v->merges[i] = o;
        size_t n = merge_text(json_array_get(merges, i), o);
        o[n] = 0;
        o += n + 1;
    }
    v->n_tokens = h->n;
    v->n_merges = (int32_t)n_merges;
    v->kind = h->kind;
    return QT_OK;
}

/* BOS/EOS/PAD, add_bos/add_eos and the chat template from tokenizer_config.json,
 * with the defaults llama.cpp applies when the keys are absent (docs/formats.md §2.8). */
static qt_status read_config(hf_load *h, const char *config_path) {
    qt_vocab *v = &h->m->vocab;
    json_t *cfg = NULL;
    if (config_path) {
        json_error_t err;
        cfg = json_load_file(config_path, JSON_DECODE_INT_AS_REAL, &err); /* model_max_length can exceed int64 */
        if (!cfg) return qt_error(QT_ERR_FORMAT, "%s: not valid JSON: line %d column %d: %s", config_path, err.line, err.column, err.text);
        if (!json_is_object(cfg)) { json_decref(cfg); return qt_error(QT_ERR_FORMAT, "%s: not a JSON object", config_path); }
    }
    bool spm = h->kind == QT_VOCAB_SPM;
    const json_t *bos = json_object_get(cfg, "bos_token"), *eos = json_object_get(cfg, "eos_token");
    v->bos_id = bos ? find_text(h, token_content(bos)) : (spm ? find_text(h, "<s>") : -1);
    v->eos_id = eos ? find_text(h, token_content(eos)) : (spm ? find_text(h, "</s>") : -1);
    v->pad_id = find_text(h, token_content(json_object_get(cfg, "pad_token")));
    v->unk_id = h->unk_id;
    if (bos && !json_is_null(bos) && v->bos_id < 0)
        return json_decref(cfg), qt_error(QT_ERR_FORMAT, "%s: field 'bos_token': '%s' is not in the vocabulary", config_path,
                                          token_content(bos) ? token_content(bos) : "?");
    if (eos && !json_is_null(eos) && v->eos_id < 0)
        return json_decref(cfg), qt_error(QT_ERR_FORMAT, "%s: field 'eos_token': '%s' is not in the vocabulary", config_path,
                                          token_content(eos) ? token_content(eos) : "?");
    const json_t *ab = json_object_get(cfg, "add_bos_token");
    if (json_is_boolean(ab)) v->add_bos = json_is_true(ab);
    else v->add_bos = spm || !strcmp(v->pre, "llama-bpe"); /* llama.cpp's defaults for "llama" and llama-bpe */
    if (v->bos_id < 0) v->add_bos = false;
    v->add_eos = json_is_true(json_object_get(cfg, "add_eos_token")) && v->eos_id >= 0;
    const char *tmpl = jstr(cfg, "chat_template");
    v->chat_template = tmpl ? qt__model_strdup(h->m, tmpl) : NULL;
    json_decref(cfg);
    if (tmpl && !v->chat_template) return QT_ERR_NOMEM;
    return QT_OK;
}

qt_status qt__vocab_load_hf(qt_model *m, const char *path, const char *config_path) {
    hf_load h = {.m = m, .path = path, .unk_id = -1};
    char *buf = NULL;
    size_t size;
    qt_status st = qt_read_file(path, &buf, &size);
    if (st != QT_OK) return st;
    json_error_t err;
    h.root = json_loadb(buf, size, 0, &err);
    free(buf);
    if (!h.root) return qt_error(QT_ERR_FORMAT, "%s: not valid JSON: line %d column %d: %s", path, err.line, err.column, err.text);
    h.model = json_object_get(h.root, "model");
    const json_t *added = json_object_get(h.root, "added_tokens");
    const json_t *merges = json_object_get(h.model, "merges");
    if (!json_is_object(h.model)) { st = qt_error(QT_ERR_FORMAT, "%s: field 'model' is missing or not an object", path); goto done; }
    if (added && !json_is_array(added) && !json_is_null(added)) { st = qt_error(QT_ERR_FORMAT, "%s: field 'added_tokens' is not an array", path); goto done; }
    h.model_type = jstr(h.model, "type");
    if (!h.model_type) h.model_type = json_is_object(json_object_get(h.model, "vocab")) && merges ? "BPE" : "?";
    bool bpe = !strcmp(h.model_type, "BPE"), unigram = !strcmp(h.model_type, "Unigram");
    if (!bpe && !unigram) {
        st = qt_error(QT_ERR_UNSUPPORTED, "%s: field 'model.type': '%s' is not supported (BPE and Unigram are)", path, h.model_type);
        goto done;
    }
    if (bpe && !json_is_object(json_object_get(h.model, "vocab"))) { st = qt_error(QT_ERR_FORMAT, "%s: field 'model.vocab' is not an object", path); goto done; }
    if (unigram && !json_is_array(json_object_get(h.model, "vocab"))) { st = qt_error(QT_ERR_FORMAT, "%s: field 'model.vocab' is not an array", path); goto done; }
    h.byte_fallback = json_is_true(json_object_get(h.model, "byte_fallback"));
    if ((st = count_tokens(&h, added)) != QT_OK || (st = read_vocab(&h)) != QT_OK || (st = read_added(&h, added)) != QT_OK) goto done;

    char pre_name[32] = "";
    if (unigram) {
        const json_t *unk = json_object_get(h.model, "unk_id");
        h.unk_id = json_is_integer(unk) ? (int32_t)json_integer_value(unk) : -1;
        if (h.unk_id >= h.n) { st = qt_error(QT_ERR_FORMAT, "%s: field 'model.unk_id': %d out of range", path, h.unk_id); goto done; }
        st = classify_spm(&h);
    } else {
        if ((st = check_merges(&h, merges)) != QT_OK) goto done;
        h.unk_id = find_text(&h, jstr(h.model, "unk_token"));
        bool byte_level = find_component(json_object_get(h.root, "pre_tokenizer"), "pretokenizers", "ByteLevel") ||
                          find_component(json_object_get(h.root, "decoder"), "decoders", "ByteLevel");
        if (byte_level) {
            st = classify_bpe(&h, pre_name);
        } else if (h.byte_fallback) {
            if ((st = classify_spm(&h)) == QT_OK) derive_scores(&h, merges);
        } else {
            st = qt_error(QT_ERR_UNSUPPORTED, "%s: BPE without ByteLevel and without byte_fallback is not supported", path);
        }
    }
    if (st != QT_OK) goto done;
    memset(&m->vocab, 0, sizeof m->vocab);
    m->vocab.bos_id = m->vocab.eos_id = m->vocab.unk_id = m->vocab.pad_id = -1;
    snprintf(m->vocab.pre, sizeof m->vocab.pre, "%s", pre_name);
    if ((st = store_vocab(&h, merges)) != QT_OK) goto done;
    m->vocab.add_space_prefix = h.kind == QT_VOCAB_SPM && spm_add_space_prefix(h.root);
    st = read_config(&h, config_path);
done:
    free(h.text);
    free(h.type);
    free(h.score);
    json_decref(h.root);
    return st;
}

qt_status qt_model_open_tokenizer_json(const char *path, qt_model **out) {
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return qt_error(QT_ERR_IO, "%s: not a readable file", path);
    /* tokenizer_config.json beside it, when present. */
    size_t n = strlen(path);
    char *cfg = malloc(n + 32);
    if (!cfg) return qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
    memcpy(cfg, path, dir);
    strcpy(cfg + dir, "tokenizer_config.json");
    bool have_cfg = stat(cfg, &sb) == 0 && S_ISREG(sb.st_mode) && strcmp(cfg, path) != 0;
    qt_model *m = NULL;
    qt_status st = qt__model_new(path, "tokenizer.json", &m);
    if (st == QT_OK) st = qt__vocab_load_hf(m, path, have_cfg ? cfg : NULL);
    free(cfg);
    if (st != QT_OK) {
        qt_model_free(m);
        return st;
    }
    m->hp.n_vocab = m->vocab.n_tokens;
    *out = m;
    return QT_OK;
}
