/* lib/io/gguf_model.c — a GGUF file as a qt_model: hyperparameters from the
 * `<arch>.*` keys (docs/formats.md §2.6-§2.7), the vocabulary from
 * `tokenizer.ggml.*` (§2.8), tensors pointing into the mapped file.
 *
 * Files of an architecture quanta does not run (phi3, gemma, ...) still open,
 * with hp.arch = QT_ARCH_UNKNOWN and whatever keys are present, so `inspect`
 * and GGUF-to-GGUF conversion work on them.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>

#include "io_internal.h"
#include "model/arch.h"

/* Integer hyperparameters read from "<arch>.<suffix>". */
typedef struct int_key {
    const char *suffix;
    size_t offset;      /* into qt_hparams (an int32_t) */
    bool required;      /* for known architectures (llama.cpp refuses files without it) */
    bool positive;      /* 0 is not a valid value */
    bool per_layer_ok;  /* may be an array with one value per layer (§2.5) */
} int_key;

static const int_key int_keys[] = {
    {"context_length", offsetof(qt_hparams, n_ctx_train), true, true, false},
    {"embedding_length", offsetof(qt_hparams, n_embd), true, true, false},
    {"block_count", offsetof(qt_hparams, n_layer), true, true, false},
    {"feed_forward_length", offsetof(qt_hparams, n_ff), true, true, true},
    {"attention.head_count", offsetof(qt_hparams, n_head), true, true, true},
    {"attention.head_count_kv", offsetof(qt_hparams, n_head_kv), false, true, true},
    {"attention.key_length", offsetof(qt_hparams, head_dim), false, true, false},
    {"rope.dimension_count", offsetof(qt_hparams, n_rot), false, true, false},
    {"vocab_size", offsetof(qt_hparams, n_vocab), false, true, false},
    {"attention.sliding_window", offsetof(qt_hparams, sliding_window), false, false, false},
    {"rope.scaling.original_context_length", offsetof(qt_hparams, rope_orig_ctx), false, false, false},
};

/* A per-layer array is accepted when every layer has the same value
 * (quanta's engine has one value per model). */
static qt_status read_int_key(qt_model *m, const qt_gguf *g, const char *key, const int_key *k, int32_t *out) {
    const qt_gguf_value *v = qt_gguf_find(g, key);
    if (!v) return QT_ERR_NOT_FOUND;
    int64_t val;
    if (v->type == QT_GGUF_ARRAY && k->per_layer_ok) {
        qt_gguf_type et = v->arr.type;
        bool is_int = et == QT_GGUF_UINT8 || et == QT_GGUF_INT8 || et == QT_GGUF_UINT16 || et == QT_GGUF_INT16 ||
                      et == QT_GGUF_UINT32 || et == QT_GGUF_INT32 || et == QT_GGUF_UINT64 || et == QT_GGUF_INT64;
        if (!is_int || v->arr.n == 0)
            return qt_error(QT_ERR_FORMAT, "%s: key '%s': expected an integer or a non-empty array of integers", m->path, key);
        val = qt_gguf_arr_i64(v, 0);
        for (uint64_t i = 1; i < v->arr.n; i++)
            if (qt_gguf_arr_i64(v, i) != val)
                return qt_error(QT_ERR_UNSUPPORTED, "%s: key '%s': per-layer values differ (layer 0: %" PRId64 ", layer %" PRIu64 ": %" PRId64 ")",
                                m->path, key, val, i, qt_gguf_arr_i64(v, i));
    } else {
        qt_status s = qt_gguf_get_i64(g, key, &val);
        if (s != QT_OK) return s;
    }
    if (val < (k->positive ? 1 : 0) || val > INT32_MAX)
        return qt_error(QT_ERR_FORMAT, "%s: key '%s': value %" PRId64 " out of range [%d, %d]", m->path, key, val,
                        k->positive ? 1 : 0, INT32_MAX);
    *out = (int32_t)val;
    return QT_OK;
}

static qt_status read_float_key(qt_model *m, const qt_gguf *g, const char *key, bool required, float *out) {
    qt_status s = qt_gguf_get_f32(g, key, out);
    if (s == QT_ERR_NOT_FOUND && required)
        return qt_error(QT_ERR_FORMAT, "%s: key '%s': missing (required for architecture '%s')", m->path, key, m->hp.arch_name);
    if (s == QT_OK && !(*out == *out && *out > -1e30f && *out < 1e30f))
        return qt_error(QT_ERR_FORMAT, "%s: key '%s': value %g is not finite", m->path, key, (double)*out);
    return s;
}

static qt_status read_hparams(qt_model *m, const qt_gguf *g) {
    qt_hparams *hp = &m->hp;
    const char *arch;
    qt_status s = qt_gguf_get_str(g, "general.architecture", &arch);
    if (s == QT_ERR_NOT_FOUND) return qt_error(QT_ERR_FORMAT, "%s: key 'general.architecture': missing", m->path);
    if (s != QT_OK) return s;
    if (strlen(arch) >= sizeof hp->arch_name || !*arch)
        return qt_error(QT_ERR_FORMAT, "%s: key 'general.architecture': '%.40s' is not an architecture name", m->path, arch);
    snprintf(hp->arch_name, sizeof hp->arch_name, "%s", arch);
    const qt_arch_info *ai = qt__arch_by_gguf_name(arch);
    hp->arch = ai ? ai->arch : QT_ARCH_UNKNOWN;
    hp->rope_neox = ai ? ai->rope_neox : false;

    char key[96];
    for (size_t i = 0; i < sizeof int_keys / sizeof int_keys[0]; i++) {
        const int_key *k = &int_keys[i];
        snprintf(key, sizeof key, "%s.%s", arch, k->suffix);
        int32_t *dst = (int32_t *)((char *)hp + k->offset);
        s = read_int_key(m, g, key, k, dst);
        if (s == QT_ERR_NOT_FOUND) {
            if (ai && k->required) return qt_error(QT_ERR_FORMAT, "%s: key '%s': missing (required for architecture '%s')", m->path, key, arch);
            continue;
        }
        if (s != QT_OK) return s;
    }
    hp->rope_theta = 10000.0f; /* llama.cpp's default when rope.freq_base is absent */
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", arch);
    if ((s = read_float_key(m, g, key, ai != NULL, &hp->rms_eps)) != QT_OK && s != QT_ERR_NOT_FOUND) return s;
    snprintf(key, sizeof key, "%s.rope.freq_base", arch);
    if ((s = read_float_key(m, g, key, false, &hp->rope_theta)) != QT_OK && s != QT_ERR_NOT_FOUND) return s;

    const char *scaling = NULL;
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    if ((s = qt_gguf_get_str(g, key, &scaling)) != QT_OK && s != QT_ERR_NOT_FOUND) return s;
    snprintf(key, sizeof key, "%s.rope.scaling.factor", arch);
    hp->rope_factor = 1.0f;
    if ((s = read_float_key(m, g, key, false, &hp->rope_factor)) != QT_OK && s != QT_ERR_NOT_FOUND) return s;
    if (scaling && !strcmp(scaling, "linear") && hp->rope_factor != 1.0f) hp->rope_scaling = QT_ROPE_SCALING_LINEAR;
    else if (scaling && strcmp(scaling, "none") != 0 && strcmp(scaling, "linear") != 0)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: key '%s.rope.scaling.type': rope scaling '%s' is not supported", m->path, arch, scaling);
    /* Llama 3.1+ rope scaling is not a key: the converter stores the per-frequency
     * divisors as the tensor rope_freqs.weight (docs/formats.md §2.6, §7.3). */
    if (qt_gguf_find_tensor(g, "rope_freqs.weight")) hp->rope_scaling = QT_ROPE_SCALING_LLAMA3;

    if (!ai) return QT_OK;
    if (hp->n_head_kv == 0) hp->n_head_kv = hp->n_head;
    if (hp->n_head % hp->n_head_kv != 0)
        return qt_error(QT_ERR_FORMAT, "%s: key '%s.attention.head_count_kv': %d does not divide head_count %d", m->path, arch,
                        hp->n_head_kv, hp->n_head);
    if (hp->head_dim == 0) {
        if (hp->n_embd % hp->n_head != 0)
            return qt_error(QT_ERR_FORMAT, "%s: key '%s.attention.head_count': %d does not divide embedding_length %d", m->path,
                            arch, hp->n_head, hp->n_embd);
        hp->head_dim = hp->n_embd / hp->n_head;
    }
    if (hp->n_rot == 0) hp->n_rot = hp->head_dim;
    if (hp->n_rot > hp->head_dim || hp->n_rot % 2 != 0)
        return qt_error(QT_ERR_FORMAT, "%s: key '%s.rope.dimension_count': %d is not an even number <= head_dim %d", m->path,
                        arch, hp->n_rot, hp->head_dim);
    return QT_OK;
}

/* ---- vocabulary ------------------------------------------------------------ */
static qt_status read_token_id(qt_model *m, const qt_gguf *g, const char *key, int32_t *id) {
    uint32_t v;
    qt_status s = qt_gguf_get_u32(g, key, &v);
    if (s == QT_ERR_NOT_FOUND) return QT_OK; /* keep the default */
    if (s != QT_OK) return s;
    /* llama.cpp ignores ids outside the vocabulary (0xFFFFFFFF included) and
     * keeps its default, so a file cannot switch off e.g. gpt2's default BOS 11. */
    if (v < (uint32_t)m->vocab.n_tokens) *id = (int32_t)v;
    return QT_OK;
}

static qt_status read_bool(const qt_gguf *g, const char *key, bool *out) {
    qt_status s = qt_gguf_get_bool(g, key, out);
    return s == QT_ERR_NOT_FOUND ? QT_OK : s;
}

static qt_status read_string_array(qt_model *m, const qt_gguf *g, const char *key, int32_t *n, char ***out) {
    const qt_gguf_value *arr;
    qt_status s = qt_gguf_get_arr(g, key, QT_GGUF_STRING, &arr);
    if (s != QT_OK) return s;
    if (arr->arr.n > INT32_MAX)
        return qt_error(QT_ERR_FORMAT, "%s: key '%s': %" PRIu64 " entries is too many", m->path, key, arr->arr.n);
    char **v = qt__model_alloc(m, (arr->arr.n ? arr->arr.n : 1) * sizeof *v);
    if (!v) return QT_ERR_NOMEM;
    /* The strings live in the parsed file, which lives as long as the model. */
    for (uint64_t i = 0; i < arr->arr.n; i++) v[i] = (char *)arr->arr.items[i].str.ptr;
    *n = (int32_t)arr->arr.n;
    *out = v;
    return QT_OK;
}

/* A numeric per-token array (scores, token types) must have one value per token. */
static qt_status read_per_token(qt_model *m, const qt_gguf *g, const char *key, bool want_float, void **out) {
    const qt_gguf_value *arr;
    qt_status s = qt_gguf_get_arr(g, key, QT_GGUF_TYPE_COUNT, &arr);
    if (s != QT_OK) return s;
    qt_gguf_type et = arr->arr.type;
    if (qt_gguf_type_size(et) == 0 || et == QT_GGUF_BOOL || (want_float != (et == QT_GGUF_FLOAT32 || et == QT_GGUF_FLOAT64)))
        return qt_error(QT_ERR_FORMAT, "%s: key '%s': array of %s, expected array of %s", m->path, key,
                        qt_gguf_type_name(et), want_float ? "float32" : "int32");
    if (arr->arr.n != (uint64_t)m->vocab.n_tokens)
        return qt_error(QT_ERR_FORMAT, "%s: key '%s': %" PRIu64 " entries for %d tokens", m->path, key, arr->arr.n,
                        m->vocab.n_tokens);
    size_t n = (size_t)m->vocab.n_tokens;
    if (want_float) {
        float *v = qt__model_alloc(m, (n ? n : 1) * sizeof *v);
        if (!v) return QT_ERR_NOMEM;
        for (size_t i = 0; i < n; i++) v[i] = (float)qt_gguf_arr_f64(arr, i);
        *out = v;
    } else {
        int32_t *v = qt__model_alloc(m, (n ? n : 1) * sizeof *v);
        if (!v) return QT_ERR_NOMEM;
        for (size_t i = 0; i < n; i++) {
            int64_t x = qt_gguf_arr_i64(arr, i);
            if (x < 0 || x > 6)
                return qt_error(QT_ERR_FORMAT, "%s: key '%s': token %zu has type %" PRId64 " (valid: 0..6)", m->path, key, i, x);
            v[i] = (int32_t)x;
        }
        *out = v;
    }
    return QT_OK;
}

static qt_status read_vocab(qt_model *m, const qt_gguf *g) {
    qt_vocab *vc = &m->vocab;
    const char *model;
    qt_status s = qt_gguf_get_str(g, "tokenizer.ggml.model", &model);
    if (s == QT_ERR_NOT_FOUND) return QT_OK; /* no tokenizer: a weights-only file */
    if (s != QT_OK) return s;
    if (!strcmp(model, "llama")) vc->kind = QT_VOCAB_SPM;
    else if (!strcmp(model, "gpt2")) vc->kind = QT_VOCAB_BPE;
    else vc->kind = QT_VOCAB_NONE; /* "none", "bert", "t5", ...: kept for inspect, not tokenized */

    s = read_string_array(m, g, "tokenizer.ggml.tokens", &vc->n_tokens, &vc->tokens);
    if (s == QT_ERR_NOT_FOUND)
        return strcmp(model, "none") && strcmp(model, "no_vocab")
                   ? qt_error(QT_ERR_FORMAT, "%s: key 'tokenizer.ggml.tokens': missing (tokenizer.ggml.model is '%s')", m->path, model)
                   : QT_OK;
    if (s != QT_OK) return s;
    if ((s = read_per_token(m, g, "tokenizer.ggml.scores", true, (void **)&vc->scores)) != QT_OK && s != QT_ERR_NOT_FOUND) return s;
    if ((s = read_per_token(m, g, "tokenizer.ggml.token_type", false, (void **)&vc->token_types)) != QT_OK && s != QT_ERR_NOT_FOUND) return s;
    s = read_string_array(m, g, "tokenizer.ggml.merges", &vc->n_merges, &vc->merges);
    if (s == QT_ERR_NOT_FOUND && vc->kind == QT_VOCAB_BPE)
        return qt_error(QT_ERR_FORMAT, "%s: key 'tokenizer.ggml.merges': missing (required for 'gpt2' tokenizers)", m->path);
    if (s != QT_OK && s != QT_ERR_NOT_FOUND) return s;

    const char *pre = NULL;
    if ((s = qt_gguf_get_str(g, "tokenizer.ggml.pre", &pre)) != QT_OK && s != QT_ERR_NOT_FOUND) return s;
    if (pre && strlen(pre) >= sizeof vc->pre)
        return qt_error(QT_ERR_FORMAT, "%s: key 'tokenizer.ggml.pre': '%.40s' is longer than %zu bytes", m->path, pre, sizeof vc->pre - 1);
    snprintf(vc->pre, sizeof vc->pre, "%s", pre ? pre : (vc->kind == QT_VOCAB_BPE ? "default" : ""));

    /* Defaults when keys are absent (docs/formats.md §2.8). */
    bool spm = vc->kind == QT_VOCAB_SPM;
    vc->bos_id = spm ? 1 : (vc->kind == QT_VOCAB_BPE ? 11 : -1);
    vc->eos_id = spm ? 2 : (vc->kind == QT_VOCAB_BPE ? 11 : -1);
    vc->unk_id = spm ? 0 : -1;
    vc->pad_id = -1;
    int32_t *ids[] = {&vc->bos_id, &vc->eos_id, &vc->unk_id, &vc->pad_id};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (*ids[i] >= vc->n_tokens) *ids[i] = -1;
    vc->add_bos = spm || (pre && (!strcmp(pre, "llama-bpe") || !strcmp(pre, "llama3") || !strcmp(pre, "llama-v3")));
    vc->add_eos = false;
    vc->add_space_prefix = spm;
    if ((s = read_token_id(m, g, "tokenizer.ggml.bos_token_id", &vc->bos_id)) != QT_OK) return s;
    if ((s = read_token_id(m, g, "tokenizer.ggml.eos_token_id", &vc->eos_id)) != QT_OK) return s;
    if ((s = read_token_id(m, g, "tokenizer.ggml.unknown_token_id", &vc->unk_id)) != QT_OK) return s;
    if ((s = read_token_id(m, g, "tokenizer.ggml.padding_token_id", &vc->pad_id)) != QT_OK) return s;
    if ((s = read_bool(g, "tokenizer.ggml.add_bos_token", &vc->add_bos)) != QT_OK) return s;
    if ((s = read_bool(g, "tokenizer.ggml.add_eos_token", &vc->add_eos)) != QT_OK) return s;
    if ((s = read_bool(g, "tokenizer.ggml.add_space_prefix", &vc->add_space_prefix)) != QT_OK) return s;
    const char *tmpl = NULL;
    if ((s = qt_gguf_get_str(g, "tokenizer.chat_template", &tmpl)) != QT_OK && s != QT_ERR_NOT_FOUND) return s;
    vc->chat_template = (char *)tmpl;
    return QT_OK;
}

/* ---- tensors ------------------------------------------------------------------ */
static qt_status read_tensors(qt_model *m, const qt_gguf *g, int32_t source) {
    int64_t n = qt_gguf_n_tensors(g);
    if (n > INT32_MAX) return qt_error(QT_ERR_FORMAT, "%s: header: %" PRId64 " tensors is too many", m->path, n);
    for (int64_t i = 0; i < n; i++) {
        const qt_gguf_tensor *gt = qt_gguf_tensor_at(g, i);
        qt_tensor t = {0};
        snprintf(t.name, sizeof t.name, "%s", gt->name); /* <= 63 bytes, checked by the parser */
        t.type = gt->type;
        t.n_dims = (int32_t)gt->n_dims;
        memcpy(t.ne, gt->ne, sizeof t.ne);
        t.nbytes = gt->nbytes;
        t.data = gt->data;
        t.source = source;
        t.offset = qt_gguf_data_offset(g) + gt->offset;
        qt_status s = qt__model_add_tensor(m, &t);
        if (s != QT_OK) return s;
    }
    return QT_OK;
}

qt_status qt__read_gguf_mem(qt_model *m, const void *data, size_t size, int32_t source) {
    qt_gguf *g;
    qt_status s = qt_gguf_parse(data, size, m->path, &g);
    if (s != QT_OK) return s;
    m->reader_state = g;
    m->reader_free = (void (*)(void *))qt_gguf_close;
    if ((s = read_hparams(m, g)) != QT_OK) return s;
    if ((s = read_vocab(m, g)) != QT_OK) return s;
    /* n_vocab: the token list defines it for llama.cpp; else <arch>.vocab_size; else token_embd. */
    if (m->vocab.n_tokens > 0) m->hp.n_vocab = m->vocab.n_tokens;
    const qt_gguf_tensor *emb = qt_gguf_find_tensor(g, "token_embd.weight");
    if (m->hp.n_vocab == 0 && emb && emb->n_dims == 2 && emb->ne[1] <= INT32_MAX) m->hp.n_vocab = (int32_t)emb->ne[1];
    if ((s = read_tensors(m, g, source)) != QT_OK) return s;
    return qt__model_check_tensors(m);
}

qt_status qt__read_gguf(qt_model *m, const char *path) {
    qt_mmap map;
    qt_status s = qt_mmap_open(path, &map);
    if (s != QT_OK) return s;
    int32_t src = qt__model_add_map(m, &map);
    if (src < 0) {
        qt_mmap_close(&map);
        return QT_ERR_NOMEM;
    }
    return qt__read_gguf_mem(m, m->maps[src].data, m->maps[src].size, src);
}
