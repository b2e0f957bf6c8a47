/* lib/io/hf_read.c — a Hugging Face directory -> the in-memory model.
 *
 * config.json gives the hyperparameters (hf_config.c); model.safetensors or an
 * index with shards gives the tensors (safetensors.c), which are renamed to
 * canonical GGUF names through the tensor-name table (lib/model/tensor_names.c),
 * checked against the shapes the config implies, and reshaped to ggml order
 * ([out, in] row-major is ne[0] = in, ne[1] = out: same bytes, reversed dims).
 * Data stays in the read-only mappings (no copies). Q/K rows keep the HF
 * rotate-half order, so hp.rope_neox is true (docs/formats.md §2.10).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ct_read.h"
#include "hf_internal.h"
#include "model/model_internal.h"
#include "model/tensor_names.h"
#include "quanta/safetensors.h"

static bool file_exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* "[a, b]" in PyTorch order, for messages. */
static void shape_text(const int64_t *dims, int32_t n, bool reverse, char *buf, size_t cap) {
    size_t off = (size_t)snprintf(buf, cap, "[");
    for (int32_t i = 0; i < n && off < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%lld", i ? ", " : "", (long long)dims[reverse ? n - 1 - i : i]);
    if (off < cap) snprintf(buf + off, cap - off, "]");
}

/* Quantized HF checkpoints other than compressed-tensors weights (GPTQ, AWQ,
 * bitsandbytes) have tensors our model cannot hold; say so up front rather
 * than per tensor. compressed-tensors weights are dequantized on load
 * (ct_read.c); a compressed-tensors config quantizing only the KV cache has
 * dense weights. */
static qt_status refuse_quantized(const qt_hf_config *c) {
    if (!c->quant.present || c->quant.kv_only || c->quant.ct.active) return QT_OK;
    return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'quantization_config': quantized checkpoints (quant_method \"%s\") "
                    "cannot be read; only unquantized F32/F16/BF16 checkpoints are", c->path,
                    c->quant.method[0] ? c->quant.method : "?");
}

/* Every tensor of the checkpoint must have a known name, layer and dtype. */
static qt_status check_names(const qt_model *m, const qt_st_checkpoint *ck, const qt__ct_layout *ct) {
    for (int32_t i = 0; i < qt_st_checkpoint_n_tensors(ck); i++) {
        int32_t file, layer;
        const qt_st_tensor *t = qt_st_checkpoint_tensor(ck, i, &file);
        const char *fp = qt_st_path(qt_st_checkpoint_file(ck, file));
        char base[QT_MAX_NAME + 64];
        const bool ct_piece = ct->active && qt__ct_piece_base(t->name, base, sizeof base);
        const qt_tn_info *ti = qt__tn_from_hf(ct_piece ? base : t->name, &layer);
        if (!ti)
            return qt_error(QT_ERR_UNSUPPORTED, "%s: tensor '%s': not a tensor of the %s architecture that quanta knows", fp,
                            t->name, m->hp.arch_name);
        if (ti->place == QT_TN_PER_LAYER && layer >= m->hp.n_layer)
            return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': layer %d but config.json has num_hidden_layers %d", fp, t->name,
                            layer, m->hp.n_layer);
        qt_type type;
        if (ct_piece || (ct->active && (t->dtype == QT_ST_I8 || t->dtype == QT_ST_F8_E4M3))) continue; /* ct_read.c checks */
        if (qt_st_dtype_to_type(t->dtype, &type) != QT_OK)
            return qt_error(QT_ERR_UNSUPPORTED, "%s: tensor '%s': field 'dtype': %s has no quanta tensor type (F32, F16, "
                            "BF16 expected)", fp, t->name, qt_st_dtype_name(t->dtype));
    }
    return QT_OK;
}

static qt_status add_tensor(qt_model *m, const qt_st_checkpoint *ck, const qt_tn_info *ti, int32_t layer,
                            const qt_st_tensor *t, int32_t file) {
    const char *fp = qt_st_path(qt_st_checkpoint_file(ck, file));
    qt_tensor out;
    memset(&out, 0, sizeof out);
    if (!qt__tn_gguf_name(ti, layer, out.name, sizeof out.name))
        return qt_error(QT_ERR_INTERNAL, "%s: tensor '%s': canonical name does not fit", fp, t->name);
    qt_status s = qt_st_dtype_to_type(t->dtype, &out.type); /* checked in check_names */
    if (s != QT_OK) return s;
    char got[128];
    shape_text(t->shape, t->n_dims, false, got, sizeof got);
    if (ti->ne[0] == QT_TN_DIM_KV_SCALE) {
        /* [] / [1] per tensor, [n_head_kv] per head (docs/formats.md §4.3); held as 1-D. */
        int64_t n = t->n_dims == 0 ? 1 : t->shape[0];
        if (t->n_dims > 1 || !qt__tn_dim_ok(ti->ne[0], &m->hp, n))
            return qt_error(QT_ERR_SHAPE, "%s: tensor '%s': field 'shape': %s, but a KV cache scale must be [] or [1] "
                            "(per tensor) or [%d] (num_key_value_heads, per head)", fp, t->name, got, m->hp.n_head_kv);
        out.n_dims = 1;
        out.ne[0] = n;
        out.ne[1] = out.ne[2] = out.ne[3] = 1;
    } else {
        int64_t want[2];
        for (int32_t d = 0; d < ti->n_dims; d++) want[d] = qt__tn_dim(ti->ne[d], &m->hp);
        bool ok = t->n_dims == ti->n_dims;
        for (int32_t d = 0; ok && d < ti->n_dims; d++) ok = t->shape[t->n_dims - 1 - d] == want[d];
        if (!ok) {
            char exp[128];
            shape_text(want, ti->n_dims, true, exp, sizeof exp);
            return qt_error(QT_ERR_SHAPE, "%s: tensor '%s': field 'shape': %s but config.json implies %s", fp, t->name, got,
                            exp);
        }
        out.n_dims = t->n_dims;
        for (int32_t d = 0; d < QT_MAX_DIMS; d++) out.ne[d] = d < t->n_dims ? t->shape[t->n_dims - 1 - d] : 1;
    }
    out.nbytes = (size_t)(t->end - t->begin);
    out.data = t->data;
    out.source = file;
    out.offset = t->file_offset;
    return qt__model_add_tensor(m, &out);
}

/* The checkpoint's tensor for a row: its HF name, else one of its aliases
 * (e.g. vLLM's k_proj.k_scale or legacy kv_scale); two present is ambiguous. */
static qt_status find_row_tensor(const qt_model *m, const qt_st_checkpoint *ck, const qt_tn_info *ti, int32_t layer,
                                 const qt_st_tensor **t, int32_t *file) {
    char hf[QT_MAX_NAME + 32], first[QT_MAX_NAME + 32];
    qt__tn_hf_name(ti, layer, hf, sizeof hf);
    *t = qt_st_checkpoint_find(ck, hf, file);
    if (*t) snprintf(first, sizeof first, "%s", hf);
    for (const char *const *a = ti->hf_alias; a && *a; a++) {
        snprintf(hf, sizeof hf, QT_TN_HF_LAYER_PREFIX "%d.%s", layer, *a);
        int32_t f;
        const qt_st_tensor *alt = qt_st_checkpoint_find(ck, hf, &f);
        if (!alt) continue;
        if (*t)
            return qt_error(QT_ERR_FORMAT, "%s: tensors '%s' and '%s' both give '" QT_TN_GGUF_LAYER_PREFIX "%d.%s'; "
                            "keep one", m->path, first, hf, layer, ti->gguf);
        *t = alt;
        *file = f;
        snprintf(first, sizeof first, "%s", hf);
    }
    return QT_OK;
}

/* Canonical order: table rows before the blocks, each block in table order, rows after. */
/* A quantized Linear of a compressed-tensors checkpoint, dequantized. */
static qt_status add_ct_tensor(qt_model *m, const qt_st_checkpoint *ck, const qt__ct_layout *ct, const qt_tn_info *ti,
                               int32_t layer, bool *found) {
    *found = false;
    if (!ct->active || ti->n_dims != 2 || !ti->gguf) return QT_OK;
    char hf[QT_MAX_NAME + 32];
    qt__tn_hf_name(ti, layer, hf, sizeof hf);
    qt_tensor out;
    memset(&out, 0, sizeof out);
    qt_status s = qt__ct_load_module(m, ct, ck, hf, qt__tn_dim(ti->ne[1], &m->hp), qt__tn_dim(ti->ne[0], &m->hp), &out, found);
    if (s != QT_OK || !*found) return s;
    if (!qt__tn_gguf_name(ti, layer, out.name, sizeof out.name))
        return qt_error(QT_ERR_INTERNAL, "%s: tensor '%s': canonical name does not fit", m->path, hf);
    return qt__model_add_tensor(m, &out);
}

static qt_status add_tensors(qt_model *m, const qt_st_checkpoint *ck, const qt__ct_layout *ct) {
    int32_t n_rows;
    const qt_tn_info *table = qt__tn_table(&n_rows);
    for (int place = QT_TN_BEFORE_LAYERS; place <= QT_TN_AFTER_LAYERS; place++) {
        int32_t n_layers = place == QT_TN_PER_LAYER ? m->hp.n_layer : 1;
        for (int32_t l = 0; l < n_layers; l++) {
            for (int32_t r = 0; r < n_rows; r++) {
                const qt_tn_info *ti = &table[r];
                if ((int)ti->place != place || !ti->hf) continue;
                int32_t layer = place == QT_TN_PER_LAYER ? l : -1, file;
                const qt_st_tensor *t;
                bool done;
                qt_status s = add_ct_tensor(m, ck, ct, ti, layer, &done);
                if (s != QT_OK || done) {
                    if (s != QT_OK) return s;
                    continue;
                }
                s = find_row_tensor(m, ck, ti, layer, &t, &file);
                if (s != QT_OK) return s;
                if (!t) {
                    char hf[QT_MAX_NAME + 32];
                    qt__tn_hf_name(ti, layer, hf, sizeof hf);
                    if (qt__tn_required(ti, &m->hp))
                        return qt_error(QT_ERR_FORMAT, "%s: tensor '%s' missing (required by config.json for %s)", m->path,
                                        hf, m->hp.arch_name);
                    continue;
                }
                if (!ti->gguf) continue; /* dropped, e.g. rotary_emb.inv_freq */
                if ((s = add_tensor(m, ck, ti, layer, t, file)) != QT_OK) return s;
            }
        }
    }
    return QT_OK;
}

/* Tokenizers often have fewer entries than the embedding has rows (Qwen);
 * llama.cpp's converter fills ids up to vocab_size with "[PAD<id>]", type
 * UNUSED, score -10000 (docs/formats.md §8.1), so every token_embd row has a token. */
static qt_status pad_vocab(qt_model *m) {
    qt_vocab *v = &m->vocab;
    int32_t n = m->hp.n_vocab;
    if (v->kind == QT_VOCAB_NONE || v->n_tokens >= n) return QT_OK;
    char **tokens = qt__model_alloc(m, (size_t)n * sizeof *tokens);
    int32_t *types = qt__model_alloc(m, (size_t)n * sizeof *types);
    float *scores = v->scores ? qt__model_alloc(m, (size_t)n * sizeof *scores) : NULL;
    if (!tokens || !types || (v->scores && !scores)) return QT_ERR_NOMEM; /* message set by qt__model_alloc */
    for (int32_t i = 0; i < n; i++) {
        bool old = i < v->n_tokens;
        char pad[32];
        snprintf(pad, sizeof pad, "[PAD%d]", i);
        tokens[i] = old ? v->tokens[i] : qt__model_strdup(m, pad);
        if (!tokens[i]) return QT_ERR_NOMEM;
        types[i] = old ? (v->token_types ? v->token_types[i] : QT_TOKEN_NORMAL) : QT_TOKEN_UNUSED;
        if (scores) scores[i] = old ? v->scores[i] : -10000.0f;
    }
    v->tokens = tokens;
    v->token_types = types;
    if (scores) v->scores = scores;
    v->n_tokens = n;
    return QT_OK;
}

static qt_status read_vocab(qt_model *m, const char *dir) {
    char tj[4096], tc[4096];
    snprintf(tj, sizeof tj, "%s/tokenizer.json", dir);
    snprintf(tc, sizeof tc, "%s/tokenizer_config.json", dir);
    if (!file_exists(tj)) return QT_OK; /* no vocabulary: fine for inspect and convert of weights */
    qt_status s = qt__vocab_load_hf(m, tj, file_exists(tc) ? tc : NULL);
    if (s != QT_OK) return s;
    if (m->vocab.n_tokens > m->hp.n_vocab)
        return qt_error(QT_ERR_FORMAT, "%s: %d tokens but config.json field 'vocab_size' is %d (the embedding rows)", tj,
                        m->vocab.n_tokens, m->hp.n_vocab);
    return pad_vocab(m);
}

qt_status qt__read_hf_dir(qt_model *m, const char *dir) {
    char cfg[4096];
    if ((size_t)snprintf(cfg, sizeof cfg, "%s/config.json", dir) >= sizeof cfg)
        return qt_error(QT_ERR_ARG, "%s: path too long", dir);
    qt_hf_config c;
    qt_status s = qt__hf_config_read(cfg, &c);
    if (s == QT_OK) s = qt__hf_config_hparams(&c, &m->hp);
    if (s == QT_OK) s = refuse_quantized(&c);
    const qt__ct_layout ct = c.quant.ct;
    if (s != QT_OK) return s;

    qt_st_checkpoint *ck;
    if ((s = qt_st_checkpoint_open(dir, &ck)) != QT_OK) return s;
    m->reader_state = ck;
    m->reader_free = (void (*)(void *))qt_st_checkpoint_close;
    if ((s = check_names(m, ck, &ct)) != QT_OK) return s;
    if ((s = add_tensors(m, ck, &ct)) != QT_OK) return s;
    return read_vocab(m, dir);
}
