/* lib/io/hf_write.c — the in-memory model -> a Hugging Face directory
 * (config.json, model.safetensors, tokenizer.json, tokenizer_config.json).
 *
 * Tensors get HF names from the tensor-name table and [out, in] shapes (the
 * ggml dims reversed; same bytes). Q/K rows in llama.cpp's adjacent-pairs
 * order (hp.rope_neox == false: a GGUF llama or a llama2.c checkpoint) are put
 * back in HF rotate-half order, the inverse of docs/formats.md §2.10, so that
 * GGUF -> HF -> GGUF reproduces the original bytes. Every file is written to a
 * temporary first and all are renamed only when all are complete.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hf_internal.h"
#include "io_internal.h"
#include "model/arch.h"
#include "model/model_internal.h"
#include "model/tensor_names.h"
#include "model/tok_internal.h"
#include "quanta/num.h"
#include "quanta/safetensors.h"

typedef struct plan_tensor {
    const qt_tensor *src;
    const qt_tn_info *ti;
    char name[QT_MAX_NAME + 32];  /* HF name */
    qt_type out_type;
    bool permute;                 /* pairs -> rotate-half row order */
} plan_tensor;

typedef struct hf_writer {
    const qt_model *m;
    const char *dir;
    qt_hf_write_opts opts;
    plan_tensor *plan;   /* (n_plan) */
    qt_st_entry *entries;/* (n_plan) */
    int32_t n_plan;
    qt_type narrow_to;   /* F16/BF16: widened GGUF norms and biases go back to it; QT_TYPE_COUNT: none */
    bool has_o_bias, has_mlp_bias;
    qt_afile **files;    /* (n_files) complete temporaries awaiting rename */
    int32_t n_files, cap_files;
} hf_writer;

/* ---- tensors ---------------------------------------------------------------- */

/* GGUF keeps 1-D tensors, norms and biases F32 even when the checkpoint was
 * F16/BF16 (docs/formats.md §2.9 "Rules"; our GGUF writer widens them). When every
 * matrix of a GGUF model is of one half type, that was the checkpoint's type:
 * such tensors go back to it, so HF -> GGUF -> HF is byte-identical. */
static qt_type checkpoint_half_type(const qt_model *m) {
    if (!qt_model_gguf(m)) return QT_TYPE_COUNT;
    qt_type half = QT_TYPE_COUNT;
    for (int32_t i = 0; i < m->n_tensors; i++) {
        qt_type t = m->tensors[i].type;
        if (m->tensors[i].n_dims < 2) continue;
        if ((t != QT_TYPE_F16 && t != QT_TYPE_BF16) || (half != QT_TYPE_COUNT && t != half)) return QT_TYPE_COUNT;
        half = t;
    }
    return half;
}

/* True when every value of the F32 tensor t survives f32 -> half -> f32
 * bit for bit: narrowing then loses nothing (f16/bf16 -> f32 -> f16/bf16 is exact). */
static bool narrows_exactly(const qt_tensor *t, qt_type half) {
    const uint8_t *p = t->data;
    int64_t n = qt__tensor_nelements(t);
    for (int64_t i = 0; i < n; i++) {
        float x, back;
        memcpy(&x, p + (size_t)i * sizeof x, sizeof x);
        back = half == QT_TYPE_F16 ? qt_fp16_to_f32(qt_f32_to_fp16(x)) : qt_bf16_to_f32(qt_f32_to_bf16(x));
        if (memcmp(&x, &back, sizeof x) != 0) return false;
    }
    return true;
}

/* The type a tensor keeps when types are not converted. */
static qt_type kept_type(const hf_writer *w, const qt_tensor *t) {
    const qt_type_traits *tr = qt_type_get(t->type);
    if (tr && tr->engine_only) return QT_TYPE_F32; /* packed compressed-tensors rows: their values */
    bool narrow = w->narrow_to != QT_TYPE_COUNT && t->type == QT_TYPE_F32 && t->data &&
                  qt__gguf_wants_f32(t->name, t->n_dims) && narrows_exactly(t, w->narrow_to);
    return narrow ? w->narrow_to : t->type;
}

static qt_status plan_one(hf_writer *w, const qt_tensor *t, plan_tensor *p) {
    const qt_hparams *hp = &w->m->hp;
    int32_t layer;
    const qt_tn_info *ti = qt__tn_from_gguf(t->name, &layer);
    if (!ti || !ti->hf) {
        if (ti && !strcmp(ti->gguf, "rope_freqs.weight")) {
            if (hp->rope_scaling == QT_ROPE_SCALING_LLAMA3) return QT_ERR_NOT_FOUND; /* regenerated from config.json */
            return qt_error(QT_ERR_UNSUPPORTED, "%s: tensor 'rope_freqs.weight': rope frequency factors without llama3 "
                            "rope scaling in the hyperparameters cannot be expressed in config.json", w->m->path);
        }
        return qt_error(QT_ERR_UNSUPPORTED, "%s: tensor '%s' has no Hugging Face name", w->m->path, t->name);
    }
    if (layer >= hp->n_layer)
        return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': layer %d but the model has %d", w->m->path, t->name, layer, hp->n_layer);
    p->src = t;
    p->ti = ti;
    qt__tn_hf_name(ti, layer, p->name, sizeof p->name);
    p->out_type = w->opts.convert_types ? w->opts.outtype : kept_type(w, t);
    const qt_type_traits *tr = qt_type_get(t->type);
    if (!tr) return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': unknown type %d", w->m->path, t->name, (int)t->type);
    if (!w->opts.convert_types && tr->is_quantized && !tr->engine_only)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: tensor '%s' is %s, which safetensors cannot hold; write with outtype "
                        "f32, f16 or bf16", w->m->path, t->name, tr->name);
    if (w->opts.convert_types && !tr->is_quantized && t->type != QT_TYPE_F32 && t->type != QT_TYPE_F16 &&
        t->type != QT_TYPE_BF16 && t->type != p->out_type)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: tensor '%s': cannot convert %s to %s", w->m->path, t->name, tr->name,
                        qt_type_get(p->out_type)->name);
    /* The shape config.json will imply: never write what our reader (or transformers) would refuse. */
    bool ok = t->n_dims == ti->n_dims;
    for (int32_t d = 0; ok && d < ti->n_dims; d++) ok = qt__tn_dim_ok(ti->ne[d], hp, t->ne[d]);
    if (!ok)
        return qt_error(QT_ERR_SHAPE, "%s: tensor '%s': shape [%lld, %lld] does not match the hyperparameters "
                        "(expected [%lld, %lld])", w->m->path, t->name, (long long)t->ne[0],
                        (long long)(t->n_dims > 1 ? t->ne[1] : 1), (long long)qt__tn_dim(ti->ne[0], hp),
                        (long long)(ti->n_dims > 1 ? qt__tn_dim(ti->ne[1], hp) : 1));
    p->permute = !hp->rope_neox && ti->rows != QT_TN_ROWS_PLAIN;
    if (p->permute) {
        int64_t rows = t->n_dims == 1 ? t->ne[0] : t->ne[1];
        if (hp->head_dim <= 0 || hp->head_dim % 2 || rows % hp->head_dim)
            return qt_error(QT_ERR_SHAPE, "%s: tensor '%s': %lld rows are not whole heads of head_dim %d", w->m->path,
                            t->name, (long long)rows, hp->head_dim);
    }
    if (strstr(ti->gguf, "attn_output.bias")) w->has_o_bias = true;
    if (strstr(ti->gguf, "ffn_") && strstr(ti->gguf, ".bias")) w->has_mlp_bias = true;
    return QT_OK;
}

static qt_status plan_tensors(hf_writer *w) {
    const qt_model *m = w->m;
    w->plan = calloc((size_t)(m->n_tensors ? m->n_tensors : 1), sizeof *w->plan);
    w->entries = calloc((size_t)(m->n_tensors ? m->n_tensors : 1), sizeof *w->entries);
    if (!w->plan || !w->entries) return qt_error(QT_ERR_NOMEM, "%s: out of memory", w->dir);
    w->narrow_to = checkpoint_half_type(m);
    for (int32_t i = 0; i < m->n_tensors; i++) {
        plan_tensor *p = &w->plan[w->n_plan];
        qt_status s = plan_one(w, &m->tensors[i], p);
        if (s == QT_ERR_NOT_FOUND) continue;
        if (s != QT_OK) return s;
        qt_st_entry *e = &w->entries[w->n_plan++];
        e->name = p->name;
        if ((s = qt_st_dtype_from_type(p->out_type, &e->dtype)) != QT_OK)
            return qt_error(s, "%s: tensor '%s': %s", m->path, p->src->name, qt_last_error());
        e->n_dims = p->src->n_dims;
        for (int32_t d = 0; d < e->n_dims; d++) e->shape[d] = p->src->ne[e->n_dims - 1 - d];
    }
    return QT_OK;
}

static qt_status write_rows(hf_writer *w, qt_st_writer *sw, const plan_tensor *p, const qt_tensor *t);

/* Row by row: optional row permutation, optional type conversion. A 1-D
 * tensor (a bias) is a column of one-element rows. Through the data hook when there is one: the tensor made in its output type. */
static qt_status write_tensor(hf_writer *w, qt_st_writer *sw, const plan_tensor *p) {
    if (!w->opts.tensor_data) return write_rows(w, sw, p, p->src);
    qt_tensor made = *p->src;
    made.type = p->out_type;
    made.nbytes = qt_row_size(made.type, made.ne[0]) * (size_t)(qt__tensor_nelements(&made) / (made.ne[0] ? made.ne[0] : 1));
    void *buf = malloc(made.nbytes ? made.nbytes : 1);
    if (!buf) return qt_error(QT_ERR_NOMEM, "%s: tensor '%s': out of memory", w->m->path, made.name);
    qt_status s = w->opts.tensor_data(w->opts.user, p->src, made.type, buf, made.nbytes);
    made.data = buf;
    if (s == QT_OK) s = write_rows(w, sw, p, &made);
    free(buf);
    return s;
}

static qt_status write_rows(hf_writer *w, qt_st_writer *sw, const plan_tensor *p, const qt_tensor *t) {
    if (!p->permute && p->out_type == t->type) return qt_st_writer_write(sw, t->data, t->nbytes);
    int64_t row_len = t->n_dims == 1 ? 1 : t->ne[0];
    int64_t rows = qt__tensor_nelements(t) / (row_len ? row_len : 1);
    size_t in_bytes = qt_row_size(t->type, row_len), out_bytes = qt_row_size(p->out_type, row_len);
    if (t->n_dims == 1 && qt_type_get(t->type)->block_elems != 1)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: tensor '%s': 1-D block-quantized tensors are not converted", w->m->path, t->name);
    if (p->out_type != t->type && qt_type_get(t->type)->is_quantized && !qt_type_get(t->type)->to_float)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: tensor '%s': no dequantizer for %s", w->m->path, t->name,
                        qt_type_get(t->type)->name);
    float *f = malloc((size_t)row_len * sizeof *f);
    uint8_t *out = malloc(out_bytes ? out_bytes : 1);
    qt_status s = (f && out) ? QT_OK : qt_error(QT_ERR_NOMEM, "%s: out of memory", w->m->path);
    for (int64_t r = 0; r < rows && s == QT_OK; r++) {
        int64_t src_row = p->permute ? qt__tn_permuted_row(r, w->m->hp.head_dim, false) : r;
        const uint8_t *in = (const uint8_t *)t->data + (size_t)src_row * in_bytes;
        if (p->out_type == t->type) {
            s = qt_st_writer_write(sw, in, in_bytes);
        } else {
            if ((s = qt__row_to_f32(t->type, in, f, row_len)) == QT_OK &&
                (s = qt__row_from_f32(p->out_type, f, out, row_len)) == QT_OK)
                s = qt_st_writer_write(sw, out, out_bytes);
        }
    }
    free(f);
    free(out);
    return s;
}

static qt_status push_file(hf_writer *w, qt_afile *f) {
    if (w->n_files == w->cap_files) {
        int32_t cap = w->cap_files ? 2 * w->cap_files : 8;
        qt_afile **nf = realloc(w->files, (size_t)cap * sizeof *nf);
        if (!nf) { qt_afile_abort(f); return qt_error(QT_ERR_NOMEM, "%s: out of memory", w->dir); }
        w->files = nf;
        w->cap_files = cap;
    }
    w->files[w->n_files++] = f;
    return QT_OK;
}

/* One safetensors file holding plan tensors [first, first + count). */
static qt_status write_st_file(hf_writer *w, const char *path, int32_t first, int32_t count, int32_t *done) {
    static const qt_st_kv meta[] = {{"format", "pt"}}; /* transformers requires it (docs/formats.md §1.4) */
    qt_st_writer *sw;
    qt_status s = qt__refuse_input(w->m, path);
    if (s == QT_OK) s = qt_st_writer_open(path, w->entries + first, count, meta, 1, &sw);
    if (s != QT_OK) return s;
    for (int32_t k = 0; k < count && s == QT_OK; k++) {
        s = write_tensor(w, sw, &w->plan[first + qt_st_writer_order(sw, k)]);
        qt_progress_report(&w->opts.progress, "writing safetensors", ++*done, w->n_plan);
    }
    if (s != QT_OK) { qt_st_writer_abort(sw); return s; }
    qt_afile *f;
    s = qt_st_writer_finish(sw, &f);
    return s == QT_OK ? push_file(w, f) : s;
}

typedef struct named_shard {
    const char *name;
    int32_t shard;
} named_shard;

static int cmp_named_shard(const void *a, const void *b) {
    return strcmp(((const named_shard *)a)->name, ((const named_shard *)b)->name);
}

/* model.safetensors.index.json as transformers writes it: total_size and a weight_map sorted by name. */
static qt_status stage_json(hf_writer *w, const char *name, json_t *j);
static qt_status stage_index(hf_writer *w, const int32_t *shard_of, int32_t n_shards, uint64_t total) {
    named_shard *sorted = malloc((size_t)(w->n_plan ? w->n_plan : 1) * sizeof *sorted);
    if (!sorted) return qt_error(QT_ERR_NOMEM, "%s: out of memory", w->dir);
    for (int32_t i = 0; i < w->n_plan; i++) sorted[i] = (named_shard){w->entries[i].name, shard_of[i]};
    qsort(sorted, (size_t)w->n_plan, sizeof *sorted, cmp_named_shard);
    json_t *map = json_object();
    for (int32_t i = 0; map && i < w->n_plan; i++) {
        char file[64];
        snprintf(file, sizeof file, "model-%05d-of-%05d.safetensors", sorted[i].shard + 1, n_shards);
        if (json_object_set_new(map, sorted[i].name, json_string(file))) { json_decref(map); map = NULL; }
    }
    free(sorted);
    json_t *idx = map ? json_pack("{s:{s:I}, s:o}", "metadata", "total_size", (json_int_t)total, "weight_map", map) : NULL;
    return stage_json(w, QT_ST_INDEX_NAME, idx);
}

/* One model.safetensors, or shards of at most max_shard_bytes (a bigger
 * tensor gets a shard of its own) in canonical tensor order plus the index. */
static qt_status write_weights(hf_writer *w) {
    int32_t *shard_of = calloc((size_t)(w->n_plan ? w->n_plan : 1), sizeof *shard_of);
    if (!shard_of) return qt_error(QT_ERR_NOMEM, "%s: out of memory", w->dir);
    uint64_t max = w->opts.max_shard_bytes, total = 0, cur = 0;
    int32_t n_shards = 1;
    for (int32_t i = 0; i < w->n_plan; i++) {
        uint64_t b = qt_st_entry_nbytes(&w->entries[i]);
        if (max && cur > 0 && cur + b > max) { n_shards++; cur = 0; }
        shard_of[i] = n_shards - 1;
        cur += b;
        total += b;
    }
    char path[4096];
    int32_t done = 0;
    qt_status s = QT_OK;
    if (n_shards == 1) {
        snprintf(path, sizeof path, "%s/%s", w->dir, QT_ST_SINGLE_NAME);
        s = write_st_file(w, path, 0, w->n_plan, &done);
    } else {
        snprintf(path, sizeof path, "%s/%s", w->dir, QT_ST_SINGLE_NAME);
        if (access(path, F_OK) == 0)
            s = qt_error(QT_ERR_ARG, "%s: already holds %s, which loaders would prefer to the shards; write into another "
                         "directory", w->dir, QT_ST_SINGLE_NAME);
        for (int32_t k = 0, first = 0; s == QT_OK && k < n_shards; k++) {
            int32_t count = 0;
            while (first + count < w->n_plan && shard_of[first + count] == k) count++;
            snprintf(path, sizeof path, "%s/model-%05d-of-%05d.safetensors", w->dir, k + 1, n_shards);
            s = write_st_file(w, path, first, count, &done);
            first += count;
        }
        if (s == QT_OK) s = stage_index(w, shard_of, n_shards, total);
    }
    free(shard_of);
    return s;
}

/* ---- config.json ------------------------------------------------------------------ */

/* transformers writes json.dumps(indent=2, sort_keys=True); we do the same. */
typedef struct kv_text {
    const char *key;
    char value[512];
} kv_text;

static int cmp_kv(const void *a, const void *b) { return strcmp(((const kv_text *)a)->key, ((const kv_text *)b)->key); }

static const char *torch_dtype_name(qt_type t) {
    return t == QT_TYPE_F16 ? "float16" : t == QT_TYPE_BF16 ? "bfloat16" : "float32";
}

static qt_status config_text(hf_writer *w, char **out) {
    const qt_hparams *hp = &w->m->hp;
    const qt_arch_info *ai = qt__arch_info(hp->arch);
    const qt_hf_defaults *d = qt__hf_defaults(hp->arch);
    if (!ai || !d) return qt_error(QT_ERR_UNSUPPORTED, "%s: architecture '%s' has no Hugging Face class", w->m->path, hp->arch_name);
    if (!d->has_attention_bias_field && hp->attn_qkv_bias != ai->qkv_bias)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: %s %s q/k/v biases", w->m->path, ai->hf_class,
                        ai->qkv_bias ? "always has" : "cannot have");
    if ((w->has_o_bias && !(d->has_attention_bias_field && hp->attn_qkv_bias)) || (w->has_mlp_bias && hp->arch != QT_ARCH_LLAMA))
        return qt_error(QT_ERR_UNSUPPORTED, "%s: %s cannot express these attention-output / MLP biases", w->m->path, ai->hf_class);
    const qt_tensor *emb = qt_model_find_tensor(w->m, "token_embd.weight");
    qt_type dt = w->opts.convert_types ? w->opts.outtype : (emb ? emb->type : QT_TYPE_F32);
    kv_text kv[40];
    int n = 0;
    char f[32];
#define KV(k, ...) do { kv[n].key = (k); snprintf(kv[n].value, sizeof kv[n].value, __VA_ARGS__); n++; } while (0)
    KV("architectures", "[\n    \"%s\"\n  ]", ai->hf_class);
    if (d->has_attention_bias_field) KV("attention_bias", "%s", hp->attn_qkv_bias ? "true" : "false");
    if (hp->arch == QT_ARCH_LLAMA) KV("mlp_bias", "%s", w->has_mlp_bias ? "true" : "false");
    if (w->m->vocab.bos_id >= 0) KV("bos_token_id", "%d", w->m->vocab.bos_id);
    if (w->m->vocab.eos_id >= 0) KV("eos_token_id", "%d", w->m->vocab.eos_id);
    KV("head_dim", "%d", hp->head_dim);
    KV("hidden_act", "\"silu\"");
    KV("hidden_size", "%d", hp->n_embd);
    KV("intermediate_size", "%d", hp->n_ff);
    KV("max_position_embeddings", "%d", hp->n_ctx_train);
    KV("model_type", "\"%s\"", ai->hf_model_type);
    KV("num_attention_heads", "%d", hp->n_head);
    KV("num_hidden_layers", "%d", hp->n_layer);
    KV("num_key_value_heads", "%d", hp->n_head_kv);
    qt__hf_format_float(hp->rms_eps, f, sizeof f);
    KV("rms_norm_eps", "%s", f);
    qt__hf_format_float(hp->rope_theta > 0 ? hp->rope_theta : 10000.0f, f, sizeof f);
    KV("rope_theta", "%s", f);
    char fa[32], fb[32], fc[32];
    qt__hf_format_float(hp->rope_factor, fa, sizeof fa);
    if (hp->rope_scaling == QT_ROPE_SCALING_LINEAR) {
        KV("rope_scaling", "{\n    \"factor\": %s,\n    \"rope_type\": \"linear\"\n  }", fa);
    } else if (hp->rope_scaling == QT_ROPE_SCALING_LLAMA3) {
        qt__hf_format_float(hp->rope_high_freq_factor, fb, sizeof fb);
        qt__hf_format_float(hp->rope_low_freq_factor, fc, sizeof fc);
        KV("rope_scaling", "{\n    \"factor\": %s,\n    \"high_freq_factor\": %s,\n    \"low_freq_factor\": %s,\n"
           "    \"original_max_position_embeddings\": %d,\n    \"rope_type\": \"llama3\"\n  }", fa, fb, fc, hp->rope_orig_ctx);
    } else {
        KV("rope_scaling", "null");
    }
    if (d->has_sliding_window) {
        if (hp->sliding_window > 0) KV("sliding_window", "%d", hp->sliding_window);
        else KV("sliding_window", "null");
        if (d->sliding_window_gated) KV("use_sliding_window", "%s", hp->sliding_window > 0 ? "true" : "false");
    } else if (hp->sliding_window > 0) {
        return qt_error(QT_ERR_UNSUPPORTED, "%s: %s has no sliding window", w->m->path, ai->hf_class);
    }
    KV("tie_word_embeddings", "%s", hp->tie_embeddings ? "true" : "false");
    KV("torch_dtype", "\"%s\"", torch_dtype_name(dt));
    KV("use_cache", "true");
    KV("vocab_size", "%d", hp->n_vocab);
#undef KV
    qsort(kv, (size_t)n, sizeof kv[0], cmp_kv);
    size_t cap = 64;
    for (int i = 0; i < n; i++) cap += strlen(kv[i].key) + strlen(kv[i].value) + 16;
    char *text = malloc(cap);
    if (!text) return qt_error(QT_ERR_NOMEM, "%s: out of memory", w->dir);
    size_t off = (size_t)snprintf(text, cap, "{\n");
    for (int i = 0; i < n; i++)
        off += (size_t)snprintf(text + off, cap - off, "  \"%s\": %s%s\n", kv[i].key, kv[i].value, i + 1 < n ? "," : "");
    snprintf(text + off, cap - off, "}\n");
    *out = text;
    return QT_OK;
}

/* ---- tokenizer.json --------------------------------------------------------------- */


#define SPM_SPACE "\xe2\x96\x81" /* U+2581 */

static bool is_trailing_pad(const qt_vocab *v, int32_t i) {
    char pad[32];
    snprintf(pad, sizeof pad, "[PAD%d]", i);
    return v->token_types && v->token_types[i] == QT_TOKEN_UNUSED && !strcmp(v->tokens[i], pad);
}

/* Tokens written: all but trailing "[PAD<id>]" fillers, which the reader regenerates (hf_read.c pad_vocab). */
static int32_t written_tokens(const qt_vocab *v) {
    int32_t n = v->n_tokens;
    while (n > 0 && is_trailing_pad(v, n - 1)) n--;
    return n;
}

static json_t *added_tokens(const qt_vocab *v, int32_t n) {
    json_t *arr = json_array();
    for (int32_t i = 0; arr && i < n; i++) {
        int32_t t = v->token_types ? v->token_types[i] : QT_TOKEN_NORMAL;
        if (t != QT_TOKEN_CONTROL && t != QT_TOKEN_UNKNOWN && t != QT_TOKEN_USER_DEFINED) continue;
        json_t *o = json_pack("{s:i, s:s, s:b, s:b, s:b, s:b, s:b}", "id", i, "content", v->tokens[i], "single_word", 0,
                              "lstrip", 0, "rstrip", 0, "normalized", 0, "special", t != QT_TOKEN_USER_DEFINED);
        if (!o || json_array_append_new(arr, o)) { json_decref(arr); return NULL; }
    }
    return arr;
}

static json_t *template_processor(const qt_vocab *v) {
    if (!v->add_bos || v->bos_id < 0) return json_null();
    const char *bos = v->tokens[v->bos_id];
    return json_pack("{s:s, s:[{s:{s:s, s:i}}, {s:{s:s, s:i}}], s:[{s:{s:s, s:i}}, {s:{s:s, s:i}}, {s:{s:s, s:i}}, {s:{s:s, s:i}}],"
                     " s:{s:{s:s, s:[i], s:[s]}}}",
                     "type", "TemplateProcessing",
                     "single", "SpecialToken", "id", bos, "type_id", 0, "Sequence", "id", "A", "type_id", 0,
                     "pair", "SpecialToken", "id", bos, "type_id", 0, "Sequence", "id", "A", "type_id", 0,
                     "SpecialToken", "id", bos, "type_id", 1, "Sequence", "id", "B", "type_id", 1,
                     "special_tokens", bos, "id", bos, "ids", v->bos_id, "tokens", bos);
}

/* SentencePiece vocabularies: a Unigram model keeps every piece's score. */
static json_t *spm_tokenizer(const qt_vocab *v, int32_t n) {
    json_t *vocab = json_array();
    for (int32_t i = 0; vocab && i < n; i++) {
        json_t *pair = json_pack("[s, f]", v->tokens[i], v->scores ? (double)v->scores[i] : 0.0);
        if (!pair || json_array_append_new(vocab, pair)) { json_decref(vocab); return NULL; }
    }
    if (!vocab) return NULL;
    json_t *replace_space = json_pack("{s:s, s:{s:s}, s:s}", "type", "Replace", "pattern", "String", " ", "content", SPM_SPACE);
    json_t *normalizer = v->add_space_prefix
        ? json_pack("{s:s, s:[{s:s, s:s}, o]}", "type", "Sequence", "normalizers", "type", "Prepend", "prepend", SPM_SPACE,
                    replace_space)
        : replace_space;
    json_t *decoder = json_pack("{s:s, s:[{s:s, s:{s:s}, s:s}, {s:s}, {s:s}, {s:s, s:s, s:i, s:i}]}", "type", "Sequence",
                                "decoders", "type", "Replace", "pattern", "String", SPM_SPACE, "content", " ",
                                "type", "ByteFallback", "type", "Fuse", "type", "Strip", "content", " ", "start", 1, "stop", 0);
    json_t *unk = v->unk_id >= 0 ? json_integer(v->unk_id) : json_null();
    json_t *model = json_pack("{s:s, s:o, s:o, s:b}", "type", "Unigram", "unk_id", unk, "vocab", vocab, "byte_fallback", 1);
    return json_pack("{s:s, s:n, s:n, s:o, s:o, s:n, s:o, s:o, s:o}", "version", "1.0", "truncation", "padding",
                     "added_tokens", added_tokens(v, n), "normalizer", normalizer, "pre_tokenizer",
                     "post_processor", template_processor(v), "decoder", decoder, "model", model);
}

static json_t *bpe_pre_tokenizer(const char *regex) {
    json_t *bl = json_pack("{s:s, s:b, s:b, s:b}", "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets", 1,
                           "use_regex", regex ? 0 : 1);
    if (!regex) return bl;
    return json_pack("{s:s, s:[{s:s, s:{s:s}, s:s, s:b}, o]}", "type", "Sequence", "pretokenizers", "type", "Split",
                     "pattern", "Regex", regex, "behavior", "Isolated", "invert", 0, bl);
}

static qt_status bpe_tokenizer(const qt_model *m, const qt_vocab *v, int32_t n, json_t **out) {
    /* The pre-tokenizer table of lib/model/tok_pretok.c; no name (or "default") is written
     * as HF's ByteLevel with its own GPT-2 pattern. */
    const bool gpt2 = !v->pre[0] || !strcmp(v->pre, "default");
    const qt__pretok *pre = qt__pretok_by_name(gpt2 ? "gpt-2" : v->pre);
    if (!pre)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: BPE pre-tokenizer '%s' has no tokenizer.json form here (llama-bpe, qwen2, "
                        "default)", m->path, v->pre);
    json_t *vocab = json_object(), *merges = json_array();
    for (int32_t i = 0; vocab && i < n; i++)
        if (json_object_set_new(vocab, v->tokens[i], json_integer(i))) { json_decref(vocab); vocab = NULL; }
    if (vocab && json_object_size(vocab) != (size_t)n) {
        json_decref(vocab);
        json_decref(merges);
        return qt_error(QT_ERR_FORMAT, "%s: BPE vocabulary has duplicate token strings", m->path);
    }
    for (int32_t i = 0; merges && i < v->n_merges; i++)
        if (json_array_append_new(merges, json_string(v->merges[i]))) { json_decref(merges); merges = NULL; }
    if (!vocab || !merges) {
        json_decref(vocab);
        json_decref(merges);
        return qt_error(QT_ERR_FORMAT, "%s: vocabulary has a token or merge that is not valid UTF-8", m->path);
    }
    json_t *model = json_pack("{s:s, s:n, s:n, s:n, s:n, s:b, s:b, s:b, s:o, s:o}", "type", "BPE", "dropout", "unk_token",
                              "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk", 0, "byte_fallback", 0,
                              "ignore_merges", pre->ignore_merges, "vocab", vocab, "merges", merges);
    json_t *decoder = json_pack("{s:s, s:b, s:b, s:b}", "type", "ByteLevel", "add_prefix_space", 1, "trim_offsets", 1,
                                "use_regex", 1);
    *out = json_pack("{s:s, s:n, s:n, s:o, s:o, s:o, s:o, s:o, s:o}", "version", "1.0", "truncation", "padding",
                     "added_tokens", added_tokens(v, n), "normalizer", pre->nfc ? json_pack("{s:s}", "type", "NFC") : json_null(),
                     "pre_tokenizer", bpe_pre_tokenizer(pre->hf_split), "post_processor", template_processor(v), "decoder", decoder,
                     "model", model);
    return *out ? QT_OK : qt_error(QT_ERR_NOMEM, "%s: cannot build tokenizer.json", m->path);
}

static json_t *token_or_null(const qt_vocab *v, int32_t id) {
    return (id >= 0 && id < v->n_tokens) ? json_string(v->tokens[id]) : json_null();
}

static json_t *tokenizer_config(const qt_model *m) {
    const qt_vocab *v = &m->vocab;
    json_t *o = json_pack("{s:b, s:b, s:o, s:o, s:o, s:o, s:b, s:i, s:s}", "add_bos_token", v->add_bos, "add_eos_token",
                          v->add_eos, "bos_token", token_or_null(v, v->bos_id), "eos_token", token_or_null(v, v->eos_id),
                          "unk_token", token_or_null(v, v->unk_id), "pad_token", token_or_null(v, v->pad_id),
                          "clean_up_tokenization_spaces", 0, "model_max_length", m->hp.n_ctx_train, "tokenizer_class",
                          "PreTrainedTokenizerFast");
    if (o && v->chat_template) json_object_set_new(o, "chat_template", json_string(v->chat_template));
    return o;
}

/* ---- files ------------------------------------------------------------------------ */

static qt_status stage_text(hf_writer *w, const char *name, const char *text) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", w->dir, name);
    qt_afile *f = NULL;
    qt_status s = qt__refuse_input(w->m, path);
    if (s == QT_OK) s = qt_afile_open(path, &f);
    if (s == QT_OK) s = qt_afile_write(f, text, strlen(text));
    if (s != QT_OK) { qt_afile_abort(f); return s; }
    return push_file(w, f);
}

static qt_status stage_json(hf_writer *w, const char *name, json_t *j) {
    if (!j) return qt_error(QT_ERR_FORMAT, "%s/%s: cannot encode (a token is not valid UTF-8 or a score is not finite)",
                            w->dir, name);
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
    json_decref(j);
    if (!text) return qt_error(QT_ERR_NOMEM, "%s/%s: out of memory", w->dir, name);
    size_t n = strlen(text);
    char *nl = realloc(text, n + 2);
    if (!nl) { free(text); return qt_error(QT_ERR_NOMEM, "%s/%s: out of memory", w->dir, name); }
    memcpy(nl + n, "\n", 2);
    qt_status s = stage_text(w, name, nl);
    free(nl);
    return s;
}

/* tokenizer.json and tokenizer_config.json as JSON trees (*tok NULL: no vocabulary). */
static qt_status tokenizer_trees(const qt_model *m, json_t **tok, json_t **cfg) {
    const qt_vocab *v = &m->vocab;
    *tok = *cfg = NULL;
    if (v->kind == QT_VOCAB_NONE) return QT_OK;
    int32_t n = written_tokens(v);
    if (n > m->hp.n_vocab)
        return qt_error(QT_ERR_SHAPE, "%s: %d tokens but the embedding has %d rows", m->path, n, m->hp.n_vocab);
    qt_status s = QT_OK;
    if (v->kind == QT_VOCAB_SPM) {
        for (int32_t i = 0; v->scores && i < n; i++)
            if (!isfinite(v->scores[i]))
                return qt_error(QT_ERR_RANGE, "%s: token %d has a non-finite score", m->path, i);
        *tok = spm_tokenizer(v, n);
    } else {
        s = bpe_tokenizer(m, v, n, tok);
    }
    if (s == QT_OK) *cfg = tokenizer_config(m);
    return s;
}

static qt_status stage_tokenizer(hf_writer *w) {
    json_t *tok, *cfg;
    qt_status s = tokenizer_trees(w->m, &tok, &cfg);
    if (s != QT_OK || (!tok && !cfg)) return s;
    s = stage_json(w, "tokenizer.json", tok);
    if (s == QT_OK) s = stage_json(w, "tokenizer_config.json", cfg);
    else json_decref(cfg);
    return s;
}

/* The output rule for a directory (the file rule is lib/core/file.c's): OUT
 * may be missing (it is created; its parent must exist, as a GGUF output's
 * directory must), empty, or non-empty with opts.force (files of the same
 * names are then replaced atomically, others left alone). Never the input. */
static qt_status prepare_dir(const qt_model *m, const char *dir, bool force, bool *created) {
    *created = false;
    if (!*dir) return qt_error(QT_ERR_ARG, "output directory name is empty");
    if (!strcmp(dir, "-")) return qt_error(QT_ERR_ARG, "-: a Hugging Face directory cannot be written to standard output");
    qt_status s = qt__refuse_input(m, dir);
    if (s != QT_OK) return s;
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode)) return qt_error(QT_ERR_IO, "%s: exists and is not a directory", dir);
        DIR *d = opendir(dir);
        if (!d) return qt_error(QT_ERR_IO, "%s: cannot read directory: %s", dir, strerror(errno));
        const struct dirent *e;
        const char *found = NULL;
        while (!found && (e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) found = e->d_name;
        s = found && !force ? qt_error(QT_ERR_ARG, "%s: directory is not empty (it holds %s); pass --force to write into it",
                                       dir, found)
                            : QT_OK;
        closedir(d);
        return s;
    }
    if (mkdir(dir, 0755) != 0) return qt_error(QT_ERR_IO, "%s: cannot create directory: %s", dir, strerror(errno));
    *created = true;
    return QT_OK;
}

static qt_status check_opts(const qt_hf_write_opts *o, const char *dir) {
    if (o->convert_types && o->outtype != QT_TYPE_F32 && o->outtype != QT_TYPE_F16 && o->outtype != QT_TYPE_BF16)
        return qt_error(QT_ERR_ARG, "%s: outtype must be f32, f16 or bf16", dir);
    return QT_OK;
}

qt_status qt_hf_write(const qt_model *m, const char *dir, const qt_hf_write_opts *opts) {
    hf_writer w;
    memset(&w, 0, sizeof w);
    w.m = m;
    w.dir = dir;
    if (opts) w.opts = *opts;
    qt_status s = *dir ? check_opts(&w.opts, dir) : qt_error(QT_ERR_ARG, "output directory name is empty");
    char path[4096];
    if (s == QT_OK && (size_t)snprintf(path, sizeof path, "%s/%s", dir, QT_ST_INDEX_NAME) >= sizeof path - 32)
        s = qt_error(QT_ERR_ARG, "%s: path too long", dir);
    if (s == QT_OK && access(path, F_OK) == 0)
        s = qt_error(QT_ERR_ARG, "%s: already holds a sharded checkpoint (%s); write into another directory", dir,
                     QT_ST_INDEX_NAME);
    char *config = NULL;
    bool created = false;
    if (s == QT_OK) s = plan_tensors(&w);
    if (s == QT_OK) s = config_text(&w, &config);
    if (s == QT_OK) s = prepare_dir(m, dir, w.opts.force, &created);
    if (s == QT_OK) s = write_weights(&w);
    if (s == QT_OK) s = stage_text(&w, "config.json", config);
    if (s == QT_OK) s = stage_tokenizer(&w);
    for (int i = 0; i < w.n_files; i++) {
        if (s == QT_OK) s = qt_afile_commit(w.files[i]);
        else qt_afile_abort(w.files[i]);
    }
    if (s != QT_OK && created) rmdir(dir); /* only succeeds if we left it empty */
    free(config);
    free(w.files);
    free(w.plan);
    free(w.entries);
    return s;
}

/* ---- for other HF-directory writers (lib/io/ct_write.c) ----------------------------- */

qt_status qt__hf_config_text(const qt_model *m, qt_type dtype, char **out) {
    hf_writer w;
    memset(&w, 0, sizeof w);
    w.m = m;
    w.dir = m->path;
    w.opts.convert_types = true;
    w.opts.outtype = dtype;
    qt_status s = plan_tensors(&w);
    if (s == QT_OK) s = config_text(&w, out);
    free(w.plan);
    free(w.entries);
    return s;
}

static char *json_text(json_t *j) {
    char *text = j ? json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(9)) : NULL;
    json_decref(j);
    return text;
}

qt_status qt__hf_tokenizer_texts(const qt_model *m, char **tok, char **cfg) {
    json_t *t, *c;
    *tok = *cfg = NULL;
    qt_status s = tokenizer_trees(m, &t, &c);
    if (s != QT_OK || (!t && !c)) return s;
    *tok = json_text(t);
    *cfg = json_text(c);
    if (!*tok || !*cfg) {
        free(*tok);
        free(*cfg);
        *tok = *cfg = NULL;
        return qt_error(QT_ERR_FORMAT, "%s: cannot encode the tokenizer (a token is not valid UTF-8)", m->path);
    }
    return QT_OK;
}

qt_status qt__hf_prepare_dir(const qt_model *m, const char *dir, bool force, bool *created) {
    return prepare_dir(m, dir, force, created);
}
