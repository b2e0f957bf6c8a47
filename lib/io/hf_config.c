/* lib/io/hf_config.c — config.json -> qt_hparams (docs/formats.md §7).
 *
 * The architecture comes from the arch table (lib/model/arch.c) by
 * "architectures"[i] (or "model_type" when that list is absent); absent fields
 * take the transformers class defaults from the table below. JSON null counts
 * as absent. Every field is type- and range-checked.
 */
#include <jansson.h>
#include <math.h>
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

typedef struct cfg {
    const char *path;
    json_t *root;
} cfg;

/* Field lookup in an object; NULL for absent or JSON null. */
static json_t *field(json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    return (v && !json_is_null(v)) ? v : NULL;
}

static qt_status get_int(const cfg *c, json_t *obj, const char *prefix, const char *key, int32_t def, int32_t lo,
                         int32_t *out) {
    json_t *v = field(obj, key);
    if (!v) { *out = def; return QT_OK; }
    if (!json_is_integer(v))
        return qt_error(QT_ERR_FORMAT, "%s: field '%s%s': must be an integer", c->path, prefix, key);
    json_int_t x = json_integer_value(v);
    if (x < lo || x > INT32_MAX)
        return qt_error(QT_ERR_FORMAT, "%s: field '%s%s': %lld out of range [%d, %d]", c->path, prefix, key, (long long)x,
                        lo, INT32_MAX);
    *out = (int32_t)x;
    return QT_OK;
}

/* A positive finite number (integers allowed: "rope_theta": 500000). */
static qt_status get_float(const cfg *c, json_t *obj, const char *prefix, const char *key, float def, bool required,
                           float *out) {
    json_t *v = field(obj, key);
    if (!v) {
        if (required) return qt_error(QT_ERR_FORMAT, "%s: field '%s%s': missing", c->path, prefix, key);
        *out = def;
        return QT_OK;
    }
    if (!json_is_number(v)) return qt_error(QT_ERR_FORMAT, "%s: field '%s%s': must be a number", c->path, prefix, key);
    double x = json_number_value(v);
    float f = (float)x; /* checked after rounding: 1e-50 would become 0 */
    if (!(f > 0) || !isfinite(f))
        return qt_error(QT_ERR_FORMAT, "%s: field '%s%s': %g must be positive and finite as a float32", c->path, prefix, key, x);
    *out = f;
    return QT_OK;
}

static qt_status get_bool(const cfg *c, const char *key, bool def, bool *out) {
    json_t *v = field(c->root, key);
    if (!v) { *out = def; return QT_OK; }
    if (!json_is_boolean(v)) return qt_error(QT_ERR_FORMAT, "%s: field '%s': must be true or false", c->path, key);
    *out = json_is_true(v);
    return QT_OK;
}

static qt_status get_string(const cfg *c, json_t *obj, const char *prefix, const char *key, const char **out) {
    json_t *v = field(obj, key);
    *out = NULL;
    if (!v) return QT_OK;
    if (!json_is_string(v)) return qt_error(QT_ERR_FORMAT, "%s: field '%s%s': must be a string", c->path, prefix, key);
    *out = json_string_value(v);
    return QT_OK;
}

/* "architectures": the first entry the arch table knows; else "model_type". */
static qt_status find_arch(const cfg *c, const qt_arch_info **out) {
    json_t *archs = field(c->root, "architectures");
    if (archs) {
        if (!json_is_array(archs) || json_array_size(archs) == 0)
            return qt_error(QT_ERR_FORMAT, "%s: field 'architectures': must be a non-empty array of class names", c->path);
        for (size_t i = 0; i < json_array_size(archs); i++) {
            json_t *a = json_array_get(archs, i);
            if (!json_is_string(a))
                return qt_error(QT_ERR_FORMAT, "%s: field 'architectures'[%zu]: must be a string", c->path, i);
            if ((*out = qt__arch_by_hf_class(json_string_value(a)))) return QT_OK;
        }
        return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'architectures': \"%s\" is not a supported architecture "
                        "(LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, MistralForCausalLM)", c->path,
                        json_string_value(json_array_get(archs, 0)));
    }
    const char *mt;
    qt_status s = get_string(c, c->root, "", "model_type", &mt);
    if (s != QT_OK) return s;
    if (!mt) return qt_error(QT_ERR_FORMAT, "%s: fields 'architectures' and 'model_type' both missing", c->path);
    if (!(*out = qt__arch_by_hf_model_type(mt)))
        return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'model_type': \"%s\" is not a supported architecture", c->path, mt);
    return QT_OK;
}

/* Rope: v5 "rope_parameters" or legacy "rope_theta" + "rope_scaling" (§7.2, §7.3). */
static qt_status parse_rope(const cfg *c, const qt_hf_defaults *d, qt_hparams *hp) {
    json_t *params = field(c->root, "rope_parameters");
    const char *pname = "rope_parameters.";
    qt_status s;
    if (params && !json_is_object(params))
        return qt_error(QT_ERR_FORMAT, "%s: field 'rope_parameters': must be an object", c->path);
    if (params && field(params, "rope_theta"))
        s = get_float(c, params, pname, "rope_theta", d->rope_theta, false, &hp->rope_theta);
    else
        s = get_float(c, c->root, "", "rope_theta", d->rope_theta, false, &hp->rope_theta);
    if (s != QT_OK) return s;

    json_t *rs = params;
    if (!rs) { rs = field(c->root, "rope_scaling"); pname = "rope_scaling."; }
    hp->rope_scaling = QT_ROPE_SCALING_NONE;
    hp->rope_factor = 1.0f;
    if (!rs) return QT_OK;
    if (!json_is_object(rs)) return qt_error(QT_ERR_FORMAT, "%s: field 'rope_scaling': must be an object or null", c->path);
    const char *type;
    const char *tkey = field(rs, "rope_type") ? "rope_type" : "type";
    if ((s = get_string(c, rs, pname, tkey, &type)) != QT_OK) return s;
    if (!type || !strcmp(type, "default")) return QT_OK;
    if (!strcmp(type, "linear")) {
        hp->rope_scaling = QT_ROPE_SCALING_LINEAR;
        return get_float(c, rs, pname, "factor", 1.0f, true, &hp->rope_factor);
    }
    if (!strcmp(type, "llama3")) {
        hp->rope_scaling = QT_ROPE_SCALING_LLAMA3;
        if ((s = get_float(c, rs, pname, "factor", 0, true, &hp->rope_factor)) != QT_OK) return s;
        if ((s = get_float(c, rs, pname, "low_freq_factor", 0, true, &hp->rope_low_freq_factor)) != QT_OK) return s;
        if ((s = get_float(c, rs, pname, "high_freq_factor", 0, true, &hp->rope_high_freq_factor)) != QT_OK) return s;
        if (!field(rs, "original_max_position_embeddings"))
            return qt_error(QT_ERR_FORMAT, "%s: field '%soriginal_max_position_embeddings': missing", c->path, pname);
        if ((s = get_int(c, rs, pname, "original_max_position_embeddings", 0, 1, &hp->rope_orig_ctx)) != QT_OK) return s;
        if (hp->rope_high_freq_factor <= hp->rope_low_freq_factor)
            return qt_error(QT_ERR_FORMAT, "%s: field '%shigh_freq_factor': %g must exceed low_freq_factor %g", c->path,
                            pname, (double)hp->rope_high_freq_factor, (double)hp->rope_low_freq_factor);
        return QT_OK;
    }
    return qt_error(QT_ERR_UNSUPPORTED, "%s: field '%s%s': rope scaling \"%s\" is not supported (default, linear, llama3)",
                    c->path, pname, tkey, type);
}

static qt_status parse_dims(const cfg *c, const qt_hf_defaults *d, qt_hparams *hp) {
    qt_status s;
    json_t *r = c->root;
    if ((s = get_int(c, r, "", "vocab_size", d->vocab_size, 1, &hp->n_vocab)) ||
        (s = get_int(c, r, "", "hidden_size", d->hidden_size, 1, &hp->n_embd)) ||
        (s = get_int(c, r, "", "intermediate_size", d->intermediate_size, 1, &hp->n_ff)) ||
        (s = get_int(c, r, "", "num_hidden_layers", d->num_hidden_layers, 1, &hp->n_layer)) ||
        (s = get_int(c, r, "", "num_attention_heads", d->num_attention_heads, 1, &hp->n_head)) ||
        (s = get_int(c, r, "", "num_key_value_heads", d->num_key_value_heads ? d->num_key_value_heads : hp->n_head, 1,
                     &hp->n_head_kv)) ||
        (s = get_int(c, r, "", "max_position_embeddings", d->max_position_embeddings, 1, &hp->n_ctx_train)))
        return s;
    if (hp->n_head % hp->n_head_kv)
        return qt_error(QT_ERR_FORMAT, "%s: field 'num_key_value_heads': %d does not divide num_attention_heads %d", c->path,
                        hp->n_head_kv, hp->n_head);
    bool explicit_hd = field(r, "head_dim") != NULL;
    if (!explicit_hd && !d->head_dim && hp->n_embd % hp->n_head)
        return qt_error(QT_ERR_FORMAT, "%s: field 'hidden_size': %d is not a multiple of num_attention_heads %d (and no "
                        "head_dim is given)", c->path, hp->n_embd, hp->n_head);
    int32_t hd_default = d->head_dim ? d->head_dim : hp->n_embd / hp->n_head;
    if ((s = get_int(c, r, "", "head_dim", hd_default, 1, &hp->head_dim))) return s;
    if (hp->head_dim % 2)
        return qt_error(QT_ERR_FORMAT, "%s: field 'head_dim': %d must be even for rotary embeddings", c->path, hp->head_dim);
    hp->n_rot = hp->head_dim;
    json_t *prf = field(r, "partial_rotary_factor");
    if (prf && (!json_is_number(prf) || json_number_value(prf) != 1.0))
        return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'partial_rotary_factor': only 1.0 is supported", c->path);
    return get_float(c, r, "", "rms_norm_eps", d->rms_norm_eps, false, &hp->rms_eps);
}

static qt_status parse_options(const cfg *c, const qt_arch_info *ai, const qt_hf_defaults *d, qt_hparams *hp) {
    qt_status s;
    const char *act;
    if ((s = get_string(c, c->root, "", "hidden_act", &act))) return s;
    if (act && strcmp(act, "silu"))
        return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'hidden_act': \"%s\" is not supported (silu)", c->path, act);
    if ((s = get_bool(c, "tie_word_embeddings", ai->default_tie_embeddings, &hp->tie_embeddings))) return s;
    bool bias = false;
    if (d->has_attention_bias_field && (s = get_bool(c, "attention_bias", false, &bias))) return s;
    hp->attn_qkv_bias = ai->qkv_bias || bias;
    hp->attn_qk_norm = ai->qk_norm;
    bool mlp_bias = false;
    if ((s = get_bool(c, "mlp_bias", false, &mlp_bias))) return s;
    (void)mlp_bias; /* the biases, if present, are loaded as optional tensors */

    hp->sliding_window = 0;
    if (d->has_sliding_window) {
        bool use = true;
        if (d->sliding_window_gated && (s = get_bool(c, "use_sliding_window", false, &use))) return s;
        int32_t sw = 0;
        if ((s = get_int(c, c->root, "", "sliding_window", d->sliding_window, 0, &sw))) return s;
        /* An explicit null means "no window"; absent means the class default. */
        json_t *raw = json_object_get(c->root, "sliding_window");
        if (raw && json_is_null(raw)) sw = 0;
        hp->sliding_window = use ? sw : 0;
    }
    return QT_OK;
}

qt_status qt__hf_config_parse(const char *text, size_t len, const char *path, qt_hparams *hp) {
    memset(hp, 0, sizeof *hp);
    json_error_t jerr;
    cfg c = {path, json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr)};
    if (!c.root)
        return qt_error(QT_ERR_FORMAT, "%s: invalid JSON at line %d column %d: %s", path, jerr.line, jerr.column, jerr.text);
    qt_status s = QT_OK;
    const qt_arch_info *ai = NULL;
    const qt_hf_defaults *d = NULL;
    if (!json_is_object(c.root)) s = qt_error(QT_ERR_FORMAT, "%s: must be a JSON object", path);
    if (s == QT_OK) s = find_arch(&c, &ai);
    if (s == QT_OK && !(d = qt__hf_defaults(ai->arch)))
        s = qt_error(QT_ERR_INTERNAL, "%s: no config defaults for architecture %s", path, ai->hf_class);
    if (s == QT_OK) {
        hp->arch = ai->arch;
        snprintf(hp->arch_name, sizeof hp->arch_name, "%s", ai->gguf_name);
        hp->rope_neox = true; /* HF checkpoints store Q/K rows for rotate-half rope (§7.4) */
        s = parse_dims(&c, d, hp);
    }
    if (s == QT_OK) s = parse_rope(&c, d, hp);
    if (s == QT_OK) s = parse_options(&c, ai, d, hp);
    json_decref(c.root);
    return s;
}

qt_status qt_hf_read_config(const char *path, qt_hparams *hp) {
    char *text;
    size_t len;
    qt_status s = qt_read_file(path, &text, &len);
    if (s != QT_OK) return s;
    s = qt__hf_config_parse(text, len, path, hp);
    free(text);
    return s;
}
