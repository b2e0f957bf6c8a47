/* lib/io/hf_config.c — THE config.json reader (lib/io/hf_config.h), and
 * config.json -> qt_hparams for the engine's architectures (docs/formats.md §7).
 *
 * qt__hf_config_read_text type- and range-checks every field quanta uses, for
 * io and plan alike (JSON null counts as absent). For qt_hparams the
 * architecture comes from the arch table (lib/model/arch.c) by
 * "architectures"[i] (or "model_type" when that list is absent); absent fields
 * take the transformers class defaults from the table below.
 */
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hf_internal.h"
#include "model/arch.h"

/* transformers configuration_{llama,qwen2,qwen3,mistral}.py class defaults (§7.1). */
static const qt_hf_defaults hf_defaults[] = {
    /* arch            vocab   hidden inter  layers heads kv  hd   max_pos  eps    theta     attn_bias sw?    sw    gated */
    {QT_ARCH_LLAMA,   32000,  4096, 11008, 32,    32,   0,  0,   2048,    1e-6f, 10000.0f, true,     false, 0,    false},
    {QT_ARCH_QWEN2,   151936, 4096, 22016, 32,    32,   32, 0,   32768,   1e-6f, 10000.0f, false,    true,  4096, true},
    {QT_ARCH_QWEN3,   151936, 4096, 22016, 32,    32,   32, 128, 32768,   1e-6f, 10000.0f, true,     true,  4096, true},
    {QT_ARCH_MISTRAL, 32000,  4096, 14336, 32,    32,   8,  0,   131072,  1e-6f, 10000.0f, false,    true,  4096, false},
};

const qt_hf_defaults *qt__hf_defaults(qt_arch arch) {
    for (size_t i = 0; i < sizeof hf_defaults / sizeof hf_defaults[0]; i++)
        if (hf_defaults[i].arch == arch) return &hf_defaults[i];
    return NULL;
}

void qt__hf_format_float(float v, char *buf, size_t cap) {
    if (!isfinite(v)) { snprintf(buf, cap, "%s", isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity")); return; }
    if (v == truncf(v) && fabsf(v) < 1e16f) { snprintf(buf, cap, "%.1f", (double)v); return; }
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, cap, "%.*g", prec, (double)v);
        if (strtof(buf, NULL) == v) break;
    }
    if (!strpbrk(buf, ".e")) {
        size_t n = strlen(buf);
        if (n + 2 < cap) memcpy(buf + n, ".0", 3);
    }
}

/* ---- the reader ------------------------------------------------------------------ */

typedef struct reader {
    qt_hf_config *c;
    json_t *root;   /* the whole file */
    json_t *text;   /* the object holding the language model's fields: root or text_config */
} reader;

/* Field lookup in an object; NULL for absent or JSON null. */
static json_t *field(json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    return (v && !json_is_null(v)) ? v : NULL;
}

static qt_status get_int(const reader *r, json_t *obj, const char *sub, const char *key, int32_t lo, qt_hf_int *out) {
    const qt_hf_config *c = r->c;
    json_t *v = field(obj, key);
    if (!v) return QT_OK;
    if (!json_is_integer(v))
        return qt_error(QT_ERR_FORMAT, "%s: field '%s%s%s': must be an integer", c->path, c->prefix, sub, key);
    json_int_t x = json_integer_value(v);
    if (x < lo || x > INT32_MAX)
        return qt_error(QT_ERR_FORMAT, "%s: field '%s%s%s': %lld out of range [%d, %d]", c->path, c->prefix, sub, key,
                        (long long)x, lo, INT32_MAX);
    *out = (qt_hf_int){(int32_t)x, true};
    return QT_OK;
}

/* A positive finite number (integers allowed: "rope_theta": 500000). */
static qt_status get_float(const reader *r, json_t *obj, const char *sub, const char *key, qt_hf_float *out) {
    const qt_hf_config *c = r->c;
    json_t *v = field(obj, key);
    if (!v) return QT_OK;
    if (!json_is_number(v))
        return qt_error(QT_ERR_FORMAT, "%s: field '%s%s%s': must be a number", c->path, c->prefix, sub, key);
    double x = json_number_value(v);
    float f = (float)x; /* checked after rounding: 1e-50 would become 0 */
    if (!(f > 0) || !isfinite(f))
        return qt_error(QT_ERR_FORMAT, "%s: field '%s%s%s': %g must be positive and finite as a float32", c->path,
                        c->prefix, sub, key, x);
    *out = (qt_hf_float){f, true};
    return QT_OK;
}

static qt_status get_bool(const reader *r, const char *key, qt_hf_bool *out) {
    json_t *v = field(r->text, key);
    if (!v) return QT_OK;
    if (!json_is_boolean(v))
        return qt_error(QT_ERR_FORMAT, "%s: field '%s%s': must be true or false", r->c->path, r->c->prefix, key);
    *out = (qt_hf_bool){json_is_true(v), true};
    return QT_OK;
}

static qt_status get_string(const reader *r, json_t *obj, const char *sub, const char *key, char *out, size_t cap) {
    json_t *v = field(obj, key);
    out[0] = 0;
    if (!v) return QT_OK;
    if (!json_is_string(v))
        return qt_error(QT_ERR_FORMAT, "%s: field '%s%s%s': must be a string", r->c->path, r->c->prefix, sub, key);
    snprintf(out, cap, "%s", json_string_value(v));
    return QT_OK;
}

/* The integer fields of the language model: key, where it goes, smallest value. */
#define INT_FIELD(key, lo) {#key, offsetof(qt_hf_config, key), lo}
static const struct { const char *key; size_t offset; int32_t lo; } int_fields[] = {
    INT_FIELD(vocab_size, 1), INT_FIELD(hidden_size, 1), INT_FIELD(intermediate_size, 1),
    INT_FIELD(num_hidden_layers, 1), INT_FIELD(num_attention_heads, 1), INT_FIELD(num_key_value_heads, 1),
    INT_FIELD(head_dim, 1), INT_FIELD(max_position_embeddings, 1), INT_FIELD(sliding_window, 0),
    INT_FIELD(num_local_experts, 0), INT_FIELD(num_experts, 0), INT_FIELD(n_routed_experts, 0),
    INT_FIELD(num_experts_per_tok, 0), INT_FIELD(moe_intermediate_size, 1), INT_FIELD(n_shared_experts, 0),
    INT_FIELD(first_k_dense_replace, 0), INT_FIELD(q_lora_rank, 0), INT_FIELD(kv_lora_rank, 0),
    INT_FIELD(qk_rope_head_dim, 1), INT_FIELD(qk_nope_head_dim, 1), INT_FIELD(v_head_dim, 1),
};
#undef INT_FIELD

static qt_status read_scalars(const reader *r) {
    qt_hf_config *c = r->c;
    qt_status s;
    for (size_t i = 0; i < sizeof int_fields / sizeof int_fields[0]; i++)
        if ((s = get_int(r, r->text, "", int_fields[i].key, int_fields[i].lo,
                         (qt_hf_int *)((char *)c + int_fields[i].offset))))
            return s;
    /* An explicit null window means "no window"; absent means the class default. */
    json_t *sw = json_object_get(r->text, "sliding_window");
    if (sw && json_is_null(sw)) c->sliding_window = (qt_hf_int){0, true};
    if ((s = get_float(r, r->text, "", "rms_norm_eps", &c->rms_norm_eps)) ||
        (s = get_float(r, r->text, "", "partial_rotary_factor", &c->partial_rotary_factor)) ||
        (s = get_bool(r, "tie_word_embeddings", &c->tie_word_embeddings)) ||
        (s = get_bool(r, "attention_bias", &c->attention_bias)) || (s = get_bool(r, "mlp_bias", &c->mlp_bias)) ||
        (s = get_bool(r, "use_sliding_window", &c->use_sliding_window)))
        return s;
    return get_string(r, r->text, "", "hidden_act", c->hidden_act, sizeof c->hidden_act);
}

/* "architectures" (root level): the first entry the arch table knows; else "model_type". */
static qt_status read_arch(const reader *r) {
    qt_hf_config *c = r->c;
    qt_status s = get_string(r, r->text, "", "model_type", c->model_type, sizeof c->model_type);
    if (s != QT_OK) return s;
    json_t *archs = field(r->root, "architectures");
    if (!archs) {
        c->arch = c->model_type[0] ? qt__arch_by_hf_model_type(c->model_type) : NULL;
        return QT_OK;
    }
    c->has_architectures = true;
    if (!json_is_array(archs) || json_array_size(archs) == 0)
        return qt_error(QT_ERR_FORMAT, "%s: field 'architectures': must be a non-empty array of class names", c->path);
    for (size_t i = 0; i < json_array_size(archs); i++) {
        json_t *a = json_array_get(archs, i);
        if (!json_is_string(a))
            return qt_error(QT_ERR_FORMAT, "%s: field 'architectures'[%zu]: must be a string", c->path, i);
        if (i == 0) snprintf(c->first_class, sizeof c->first_class, "%s", json_string_value(a));
        if (!c->arch) c->arch = qt__arch_by_hf_class(json_string_value(a));
    }
    return QT_OK;
}

/* Rope: v5 "rope_parameters" or legacy "rope_theta" + "rope_scaling" (§7.2, §7.3). */
static qt_status read_rope(const reader *r) {
    qt_hf_config *c = r->c;
    json_t *params = field(r->text, "rope_parameters");
    if (params && !json_is_object(params))
        return qt_error(QT_ERR_FORMAT, "%s: field '%srope_parameters': must be an object", c->path, c->prefix);
    qt_status s;
    bool theta_in_params = params && field(params, "rope_theta");
    c->rope.theta_key = theta_in_params ? "rope_parameters.rope_theta" : "rope_theta";
    if ((s = get_float(r, theta_in_params ? params : r->text, theta_in_params ? "rope_parameters." : "", "rope_theta",
                       &c->rope.theta)))
        return s;
    json_t *rs = params;
    c->rope.key = "rope_parameters.";
    if (!rs) { rs = field(r->text, "rope_scaling"); c->rope.key = "rope_scaling."; }
    c->rope.type_key = "type";
    if (!rs) return QT_OK;
    if (!json_is_object(rs))
        return qt_error(QT_ERR_FORMAT, "%s: field '%srope_scaling': must be an object or null", c->path, c->prefix);
    c->rope.scaled = true;
    if (field(rs, "rope_type")) c->rope.type_key = "rope_type";
    const char *k = c->rope.key;
    if ((s = get_string(r, rs, k, c->rope.type_key, c->rope.type, sizeof c->rope.type)) ||
        (s = get_float(r, rs, k, "factor", &c->rope.factor)) ||
        (s = get_float(r, rs, k, "low_freq_factor", &c->rope.low_freq_factor)) ||
        (s = get_float(r, rs, k, "high_freq_factor", &c->rope.high_freq_factor)))
        return s;
    return get_int(r, rs, k, "original_max_position_embeddings", 1, &c->rope.original_max_position_embeddings);
}

/* quantization_config (root level). compressed-tensors with a kv_cache_scheme and
 * no config_groups quantizes only the KV cache (docs/formats.md §4.1): the weights
 * are dense and the k_scale / v_scale tensors are read like any other. */
static qt_status read_quant(const reader *r) {
    qt_hf_config *c = r->c;
    json_t *qc = field(r->root, "quantization_config");
    if (!qc) return QT_OK;
    c->quant.present = true;
    const char *method = json_string_value(json_object_get(qc, "quant_method"));
    snprintf(c->quant.method, sizeof c->quant.method, "%s", method ? method : "");
    json_t *groups = json_object_get(qc, "config_groups");
    const bool ct = method && !strcmp(method, "compressed-tensors");
    c->quant.kv_only = ct && json_is_object(json_object_get(qc, "kv_cache_scheme")) &&
                       (!groups || json_is_null(groups) || (json_is_object(groups) && json_object_size(groups) == 0));
    if (ct && json_is_object(groups) && json_object_size(groups) > 0) return qt__ct_layout_parse(c->path, qc, &c->quant.ct);
    return QT_OK;
}

qt_status qt__hf_config_read_text(const char *text, size_t len, const char *path, qt_hf_config *out) {
    memset(out, 0, sizeof *out);
    out->path = path;
    out->prefix = "";
    json_error_t jerr;
    reader r = {out, json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr), NULL};
    if (!r.root)
        return qt_error(QT_ERR_FORMAT, "%s: invalid JSON at line %d column %d: %s", path, jerr.line, jerr.column, jerr.text);
    qt_status s = QT_OK;
    if (!json_is_object(r.root)) s = qt_error(QT_ERR_FORMAT, "%s: must be a JSON object", path);
    if (s == QT_OK) {
        /* Multimodal configs keep the language model under text_config. */
        json_t *tc = json_object_get(r.root, "text_config");
        r.text = !json_object_get(r.root, "hidden_size") && json_is_object(tc) ? tc : r.root;
        if (r.text != r.root) out->prefix = "text_config.";
        s = read_quant(&r);
        if (s == QT_OK) s = read_arch(&r);
    }
    if (s == QT_OK) s = read_scalars(&r);
    if (s == QT_OK) s = read_rope(&r);
    json_decref(r.root);
    return s;
}

qt_status qt__hf_config_read(const char *path, qt_hf_config *out) {
    char *text;
    size_t len;
    qt_status s = qt_read_file(path, &text, &len);
    if (s != QT_OK) return s;
    s = qt__hf_config_read_text(text, len, path, out);
    free(text);
    return s;
}

qt_status qt__hf_config_missing(const qt_hf_config *c, const char *key) {
    return qt_error(QT_ERR_FORMAT, "%s: field '%s%s': missing", c->path, c->prefix, key);
}

/* ---- shared checks ------------------------------------------------------------- */

static qt_status dim(const qt_hf_config *c, qt_hf_int f, const char *key, const int32_t *dflt, int32_t *out) {
    if (!f.set && !dflt) return qt__hf_config_missing(c, key);
    *out = f.set ? f.v : *dflt;
    return QT_OK;
}

qt_status qt__hf_config_dims(const qt_hf_config *c, const qt_hf_defaults *d, qt_hparams *hp) {
    qt_status s;
    if ((s = dim(c, c->vocab_size, "vocab_size", d ? &d->vocab_size : NULL, &hp->n_vocab)) ||
        (s = dim(c, c->hidden_size, "hidden_size", d ? &d->hidden_size : NULL, &hp->n_embd)) ||
        (s = dim(c, c->intermediate_size, "intermediate_size", d ? &d->intermediate_size : NULL, &hp->n_ff)) ||
        (s = dim(c, c->num_hidden_layers, "num_hidden_layers", d ? &d->num_hidden_layers : NULL, &hp->n_layer)) ||
        (s = dim(c, c->num_attention_heads, "num_attention_heads", d ? &d->num_attention_heads : NULL, &hp->n_head)))
        return s;
    hp->n_head_kv = qt__hf_int_or(c->num_key_value_heads, d && d->num_key_value_heads ? d->num_key_value_heads : hp->n_head);
    hp->n_ctx_train = qt__hf_int_or(c->max_position_embeddings, d ? d->max_position_embeddings : 0);
    if (hp->n_head % hp->n_head_kv)
        return qt_error(QT_ERR_FORMAT, "%s: field '%snum_key_value_heads': %d does not divide num_attention_heads %d",
                        c->path, c->prefix, hp->n_head_kv, hp->n_head);
    const int32_t class_hd = d ? d->head_dim : 0;
    if (!c->head_dim.set && !class_hd && hp->n_embd % hp->n_head)
        return qt_error(QT_ERR_FORMAT, "%s: field '%shidden_size': %d is not a multiple of num_attention_heads %d (and no "
                        "head_dim is given)", c->path, c->prefix, hp->n_embd, hp->n_head);
    hp->head_dim = qt__hf_int_or(c->head_dim, class_hd ? class_hd : hp->n_embd / hp->n_head);
    return QT_OK;
}

/* ---- config.json -> qt_hparams (the engine's architectures) ----------------------- */

/* The field naming a routed-expert count, or NULL for a dense model. */
static const char *experts_field(const qt_hf_config *c, int32_t *n) {
    const struct { const qt_hf_int *v; const char *name; } f[] = {
        {&c->num_local_experts, "num_local_experts"}, {&c->num_experts, "num_experts"},
        {&c->n_routed_experts, "n_routed_experts"}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].v->set && f[i].v->v > 0) { *n = f[i].v->v; return f[i].name; }
    return NULL;
}

static qt_status check_arch(const qt_hf_config *c) {
    int32_t n_exp = 0;
    const char *exp = experts_field(c, &n_exp);
    if (exp) /* say what is missing, not only that the class is unknown */
        return qt_error(QT_ERR_UNSUPPORTED, "%s: field '%s%s': %d routed experts: a mixture-of-experts model; quanta's "
                        "engine has no expert routing (router, per-expert feed-forward), so it cannot run, evaluate or "
                        "calibrate it (GPTQ, imatrix, KV scales)", c->path, c->prefix, exp, n_exp);
    if (c->arch) return QT_OK;
    if (c->has_architectures)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'architectures': \"%s\" is not a supported architecture "
                        "(LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, MistralForCausalLM)", c->path,
                        c->first_class);
    if (!c->model_type[0])
        return qt_error(QT_ERR_FORMAT, "%s: fields 'architectures' and 'model_type' both missing", c->path);
    return qt_error(QT_ERR_UNSUPPORTED, "%s: field '%smodel_type': \"%s\" is not a supported architecture", c->path,
                    c->prefix, c->model_type);
}

static qt_status rope_need(const qt_hf_config *c, bool set, const char *key) {
    if (set) return QT_OK;
    char k[96];
    snprintf(k, sizeof k, "%s%s", c->rope.key, key);
    return qt__hf_config_missing(c, k);
}

static qt_status hparams_rope(const qt_hf_config *c, const qt_hf_defaults *d, qt_hparams *hp) {
    hp->rope_theta = c->rope.theta.set ? c->rope.theta.v : d->rope_theta;
    hp->rope_scaling = QT_ROPE_SCALING_NONE;
    hp->rope_factor = 1.0f;
    const char *type = c->rope.type;
    if (!c->rope.scaled || !type[0] || !strcmp(type, "default")) return QT_OK;
    qt_status s;
    if ((s = rope_need(c, c->rope.factor.set, "factor"))) return s;
    hp->rope_factor = c->rope.factor.v;
    if (!strcmp(type, "linear")) {
        hp->rope_scaling = QT_ROPE_SCALING_LINEAR;
        return QT_OK;
    }
    if (!strcmp(type, "llama3")) {
        hp->rope_scaling = QT_ROPE_SCALING_LLAMA3;
        if ((s = rope_need(c, c->rope.low_freq_factor.set, "low_freq_factor")) ||
            (s = rope_need(c, c->rope.high_freq_factor.set, "high_freq_factor")) ||
            (s = rope_need(c, c->rope.original_max_position_embeddings.set, "original_max_position_embeddings")))
            return s;
        hp->rope_low_freq_factor = c->rope.low_freq_factor.v;
        hp->rope_high_freq_factor = c->rope.high_freq_factor.v;
        hp->rope_orig_ctx = c->rope.original_max_position_embeddings.v;
        if (hp->rope_high_freq_factor <= hp->rope_low_freq_factor)
            return qt_error(QT_ERR_FORMAT, "%s: field '%s%shigh_freq_factor': %g must exceed low_freq_factor %g", c->path,
                            c->prefix, c->rope.key, (double)hp->rope_high_freq_factor, (double)hp->rope_low_freq_factor);
        return QT_OK;
    }
    return qt_error(QT_ERR_UNSUPPORTED, "%s: field '%s%s%s': rope scaling \"%s\" is not supported (default, linear, llama3)",
                    c->path, c->prefix, c->rope.key, c->rope.type_key, type);
}

static qt_status hparams_options(const qt_hf_config *c, const qt_hf_defaults *d, qt_hparams *hp) {
    if (c->hidden_act[0] && strcmp(c->hidden_act, "silu"))
        return qt_error(QT_ERR_UNSUPPORTED, "%s: field '%shidden_act': \"%s\" is not supported (silu)", c->path, c->prefix,
                        c->hidden_act);
    if (c->partial_rotary_factor.set && c->partial_rotary_factor.v != 1.0f)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: field '%spartial_rotary_factor': only 1.0 is supported", c->path, c->prefix);
    hp->tie_embeddings = qt__hf_bool_or(c->tie_word_embeddings, c->arch->default_tie_embeddings);
    hp->attn_qkv_bias = c->arch->qkv_bias || (d->has_attention_bias_field && qt__hf_bool_or(c->attention_bias, false));
    hp->attn_qk_norm = c->arch->qk_norm;
    /* mlp_bias: the biases, if present, are loaded as optional tensors. */
    hp->sliding_window = 0;
    if (d->has_sliding_window) {
        bool use = !d->sliding_window_gated || qt__hf_bool_or(c->use_sliding_window, false);
        hp->sliding_window = use ? qt__hf_int_or(c->sliding_window, d->sliding_window) : 0;
    }
    return QT_OK;
}

qt_status qt__hf_config_hparams(const qt_hf_config *c, qt_hparams *hp) {
    memset(hp, 0, sizeof *hp);
    qt_status s = check_arch(c);
    if (s != QT_OK) return s;
    const qt_hf_defaults *d = qt__hf_defaults(c->arch->arch);
    if (!d) return qt_error(QT_ERR_INTERNAL, "%s: no config defaults for architecture %s", c->path, c->arch->hf_class);
    hp->arch = c->arch->arch;
    snprintf(hp->arch_name, sizeof hp->arch_name, "%s", c->arch->gguf_name);
    hp->rope_neox = true; /* HF checkpoints store Q/K rows for rotate-half rope (§7.4) */
    if ((s = qt__hf_config_dims(c, d, hp))) return s;
    if (hp->head_dim % 2)
        return qt_error(QT_ERR_FORMAT, "%s: field '%shead_dim': %d must be even for rotary embeddings", c->path, c->prefix,
                        hp->head_dim);
    hp->n_rot = hp->head_dim;
    hp->rms_eps = c->rms_norm_eps.set ? c->rms_norm_eps.v : d->rms_norm_eps;
    if ((s = hparams_rope(c, d, hp))) return s;
    return hparams_options(c, d, hp);
}

qt_status qt__hf_config_parse(const char *text, size_t len, const char *path, qt_hparams *hp) {
    qt_hf_config c;
    qt_status s = qt__hf_config_read_text(text, len, path, &c);
    if (s == QT_OK) s = qt__hf_config_hparams(&c, hp);
    else memset(hp, 0, sizeof *hp);
    return s;
}

qt_status qt_hf_read_config(const char *path, qt_hparams *hp) {
    qt_hf_config c;
    qt_status s = qt__hf_config_read(path, &c);
    if (s == QT_OK) s = qt__hf_config_hparams(&c, hp);
    return s;
}
