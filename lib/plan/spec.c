/* lib/plan/spec.c — model specs from a preset, a config.json, or a checkpoint.
 *
 * config.json fields and defaults: docs/formats.md §7.1 (transformers'
 * configuration classes). Beyond the four architectures the engine runs, the
 * planner reads the fields that decide memory for the families in the
 * preset table: Gemma 2 (explicit head_dim, alternating sliding window),
 * Mixtral / Qwen3-MoE / DeepSeek (experts), DeepSeek (MLA ranks).
 */
#include <dirent.h>
#include <jansson.h>
#include <string.h>
#include <sys/stat.h>

#include "model/arch.h"
#include "plan_internal.h"

typedef struct cfg {
    const char *path;
    json_t *root;   /* the object holding the text-model fields (root or text_config) */
} cfg;

static qt_status get_int(const cfg *c, const char *field, bool required, int64_t dflt, int64_t *out) {
    json_t *v = json_object_get(c->root, field);
    if (!v || json_is_null(v)) {
        if (required) return qt_error(QT_ERR_FORMAT, "%s: field '%s': missing", c->path, field);
        *out = dflt;
        return QT_OK;
    }
    if (!json_is_integer(v)) return qt_error(QT_ERR_FORMAT, "%s: field '%s': not an integer", c->path, field);
    json_int_t x = json_integer_value(v);
    if (x < 0 || x > ((json_int_t)1 << 40))
        return qt_error(QT_ERR_FORMAT, "%s: field '%s': %lld is out of range", c->path, field, (long long)x);
    *out = x;
    return QT_OK;
}

static bool get_bool(const cfg *c, const char *field, bool dflt) {
    json_t *v = json_object_get(c->root, field);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

static const char *get_str(const cfg *c, const char *field) {
    json_t *v = json_object_get(c->root, field);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static qt_status fill_from_json(const cfg *c, qt_model_spec *m) {
    qt_status st;
    const char *mt = get_str(c, "model_type");
    if (!mt) return qt_error(QT_ERR_FORMAT, "%s: field 'model_type': missing", c->path);
    snprintf(m->arch, sizeof m->arch, "%s", mt);
    m->kind = QT_SPEC_LLM;
    if ((st = get_int(c, "vocab_size", true, 0, &m->n_vocab))) return st;
    if ((st = get_int(c, "hidden_size", true, 0, &m->n_embd))) return st;
    if ((st = get_int(c, "num_hidden_layers", true, 0, &m->n_layer))) return st;
    if ((st = get_int(c, "num_attention_heads", true, 0, &m->n_head))) return st;
    if ((st = get_int(c, "num_key_value_heads", false, m->n_head, &m->n_head_kv))) return st;
    if ((st = get_int(c, "intermediate_size", true, 0, &m->n_ff))) return st;
    if ((st = get_int(c, "max_position_embeddings", false, 0, &m->n_ctx_train))) return st;
    if (!m->n_vocab || !m->n_embd || !m->n_layer || !m->n_head || !m->n_head_kv)
        return qt_error(QT_ERR_FORMAT, "%s: a size field is 0", c->path);
    if (m->n_head % m->n_head_kv)
        return qt_error(QT_ERR_FORMAT, "%s: field 'num_key_value_heads': %lld does not divide num_attention_heads %lld",
                        c->path, (long long)m->n_head_kv, (long long)m->n_head);
    /* head_dim is its own field for Qwen3 and Gemma (hidden / heads would be wrong). */
    if ((st = get_int(c, "head_dim", false, 0, &m->head_dim))) return st;
    if (!m->head_dim) {
        if (m->n_embd % m->n_head)
            return qt_error(QT_ERR_FORMAT, "%s: field 'head_dim': missing and hidden_size %% num_attention_heads != 0", c->path);
        m->head_dim = m->n_embd / m->n_head;
    }
    /* What the model_type implies beyond its fields: a row of lib/model/arch.c. */
    const qt__hf_family *fam = qt__hf_family_find(mt);
    m->tie_embeddings = get_bool(c, "tie_word_embeddings", fam->tie_default);
    m->attn_bias = fam->attn_bias || get_bool(c, "attention_bias", false);
    m->qk_norm = fam->qk_norm;
    m->norms_per_layer = fam->norms_per_layer;
    int64_t sw = 0;
    if ((st = get_int(c, "sliding_window", false, 0, &sw))) return st;
    const bool swa_on = fam->swa == QT__SWA_ALL || fam->swa == QT__SWA_ALTERNATE ||
                        (fam->swa == QT__SWA_GATED && get_bool(c, "use_sliding_window", false));
    if (sw > 0 && swa_on) {
        m->sliding_window = sw;
        m->swa_period = fam->swa == QT__SWA_ALTERNATE ? 2 : 1;
    }
    /* Experts: Mixtral names them num_local_experts (width intermediate_size), Qwen3-MoE
     * num_experts + moe_intermediate_size, DeepSeek n_routed_experts + shared experts. */
    int64_t e = 0;
    if ((st = get_int(c, "num_local_experts", false, 0, &e))) return st;
    if (!e && (st = get_int(c, "num_experts", false, 0, &e))) return st;
    if (!e && (st = get_int(c, "n_routed_experts", false, 0, &e))) return st;
    if (e > 0) {
        m->n_expert = e;
        if ((st = get_int(c, "num_experts_per_tok", true, 0, &m->n_expert_used))) return st;
        if ((st = get_int(c, "moe_intermediate_size", false, m->n_ff, &m->n_ff_expert))) return st;
        if ((st = get_int(c, "n_shared_experts", false, 0, &m->n_expert_shared))) return st;
        if ((st = get_int(c, "first_k_dense_replace", false, 0, &m->n_dense_lead))) return st;
        if (m->n_expert_used < 1 || m->n_expert_used > m->n_expert)
            return qt_error(QT_ERR_FORMAT, "%s: field 'num_experts_per_tok': %lld is not in 1..%lld", c->path,
                            (long long)m->n_expert_used, (long long)m->n_expert);
    }
    if ((st = get_int(c, "kv_lora_rank", false, 0, &m->kv_lora_rank))) return st;
    if (m->kv_lora_rank > 0) {
        if ((st = get_int(c, "q_lora_rank", false, 0, &m->q_lora_rank))) return st;
        if ((st = get_int(c, "qk_rope_head_dim", true, 0, &m->qk_rope_dim))) return st;
        if ((st = get_int(c, "qk_nope_head_dim", true, 0, &m->qk_nope_dim))) return st;
        if ((st = get_int(c, "v_head_dim", true, 0, &m->v_head_dim))) return st;
        m->head_dim = m->qk_nope_dim + m->qk_rope_dim;
    }
    return QT_OK;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

qt_status qt_plan_spec_from_config(const char *path, qt_model_spec *out) {
    memset(out, 0, sizeof *out);
    char file[1024];
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) snprintf(file, sizeof file, "%s/config.json", path);
    else snprintf(file, sizeof file, "%s", path);
    char *text;
    size_t size;
    qt_status st = qt_read_file(file, &text, &size);
    if (st) return st;
    json_error_t jerr;
    json_t *root = json_loadb(text, size, 0, &jerr);
    free(text);
    if (!root) return qt_error(QT_ERR_FORMAT, "%s: line %d: %s", file, jerr.line, jerr.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return qt_error(QT_ERR_FORMAT, "%s: not a JSON object", file);
    }
    /* Multimodal configs keep the language model under text_config. */
    cfg c = {file, root};
    json_t *text_cfg = json_object_get(root, "text_config");
    if (!json_object_get(root, "hidden_size") && json_is_object(text_cfg)) c.root = text_cfg;
    st = fill_from_json(&c, out);
    if (!st && c.root != root && !out->arch[0]) st = qt_error(QT_ERR_FORMAT, "%s: no model_type", file);
    json_decref(root);
    if (st) return st;
    /* A directory names the model; a bare config.json file is named by its directory. */
    char name[1024];
    snprintf(name, sizeof name, "%s", S_ISDIR(sb.st_mode) ? path : file);
    size_t len = strlen(name);
    while (len > 1 && name[len - 1] == '/') name[--len] = 0;
    if (!S_ISDIR(sb.st_mode)) {
        char *slash = strrchr(name, '/');
        if (slash) *slash = 0;
        else snprintf(name, sizeof name, "model");
    }
    snprintf(out->key, sizeof out->key, "%.47s", base_name(name));
    snprintf(out->display, sizeof out->display, "%.63s", base_name(name));
    snprintf(out->hf_repo, sizeof out->hf_repo, "%.95s", S_ISDIR(sb.st_mode) ? path : name);
    snprintf(out->source, sizeof out->source, "%.223s", file);
    return QT_OK;
}

/* Most common storage type among the tensors, for the report. */
static void describe_format(const qt_model *mdl, char *buf, size_t n) {
    double bytes_by_type[QT_TYPE_COUNT] = {0};
    for (int32_t i = 0; i < qt_model_n_tensors(mdl); i++) {
        const qt_tensor *t = qt_model_tensor(mdl, i);
        if (t->type >= 0 && t->type < QT_TYPE_COUNT) bytes_by_type[t->type] += (double)t->nbytes;
    }
    int best = 0;
    for (int i = 1; i < QT_TYPE_COUNT; i++)
        if (bytes_by_type[i] > bytes_by_type[best]) best = i;
    const qt_type_traits *tr = qt_type_get((qt_type)best);
    snprintf(buf, n, "%s %s (mostly)", qt_model_source_format(mdl), tr ? tr->name : "?");
}

qt_status qt_plan_spec_from_model(const qt_model *mdl, qt_model_spec *out) {
    memset(out, 0, sizeof *out);
    const qt_hparams *hp = qt_model_hparams(mdl);
    const char *path = qt_model_path(mdl);
    if (hp->n_layer < 1 || hp->n_embd < 1 || hp->n_head < 1 || hp->n_vocab < 1)
        return qt_error(QT_ERR_FORMAT, "%s: model has an incomplete shape (layers %d, hidden %d, heads %d, vocab %d)",
                        path, hp->n_layer, hp->n_embd, hp->n_head, hp->n_vocab);
    out->kind = QT_SPEC_LLM;
    snprintf(out->key, sizeof out->key, "%.47s", base_name(path));
    snprintf(out->display, sizeof out->display, "%.63s", base_name(path));
    snprintf(out->hf_repo, sizeof out->hf_repo, "%.95s", path);
    snprintf(out->source, sizeof out->source, "%.223s", path);
    snprintf(out->arch, sizeof out->arch, "%s", hp->arch_name[0] ? hp->arch_name : "llama");
    out->n_vocab = hp->n_vocab;
    out->n_embd = hp->n_embd;
    out->n_layer = hp->n_layer;
    out->n_head = hp->n_head;
    out->n_head_kv = hp->n_head_kv > 0 ? hp->n_head_kv : hp->n_head;
    out->head_dim = hp->head_dim > 0 ? hp->head_dim : hp->n_embd / hp->n_head;
    out->n_ff = hp->n_ff;
    out->n_ctx_train = hp->n_ctx_train;
    out->tie_embeddings = hp->tie_embeddings;
    out->attn_bias = hp->attn_qkv_bias;
    out->qk_norm = hp->attn_qk_norm;
    out->norms_per_layer = 2;
    if (hp->sliding_window > 0 && hp->arch == QT_ARCH_MISTRAL) {
        out->sliding_window = hp->sliding_window;
        out->swa_period = 1;
    }
    /* The tensors themselves: exact counts and the bytes as stored. */
    out->measured = true;
    for (int32_t i = 0; i < qt_model_n_tensors(mdl); i++) out->measured_bytes += qt_model_tensor(mdl, i)->nbytes;
    out->measured_params = qt_model_n_params(mdl);
    describe_format(mdl, out->measured_format, sizeof out->measured_format);
    return QT_OK;
}

static bool has_safetensors(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return false;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        found = n > 12 && !strcmp(e->d_name + n - 12, ".safetensors");
    }
    closedir(d);
    return found;
}

static bool is_config_file(const char *path) {
    size_t n = strlen(path);
    return n >= 5 && !strcmp(path + n - 5, ".json");
}

qt_status qt_plan_spec_resolve(const char *name, qt_model_spec *out) {
    if (!name || !*name) return qt_error(QT_ERR_ARG, "--model: empty");
    struct stat sb;
    if (stat(name, &sb) == 0) {
        if (is_config_file(name)) return qt_plan_spec_from_config(name, out);
        const bool dir = S_ISDIR(sb.st_mode);
        char cfgpath[1024];
        snprintf(cfgpath, sizeof cfgpath, "%s/config.json", name);
        const bool has_config = dir && stat(cfgpath, &sb) == 0;
        /* A directory with a config.json but no weights (just downloaded the config, as the
         * seeds advise) is planned from the config alone. */
        if (has_config && !has_safetensors(name)) return qt_plan_spec_from_config(name, out);
        qt_model *mdl;
        qt_status st = qt_model_open(name, &mdl);
        if (st == QT_OK) {
            st = qt_plan_spec_from_model(mdl, out);
            qt_model_free(mdl);
            return st;
        }
        /* An architecture the readers do not run may still be planned from its config. */
        if (has_config && st == QT_ERR_UNSUPPORTED) {
            qt_clear_error();
            return qt_plan_spec_from_config(name, out);
        }
        return st;
    }
    const qt_model_spec *p = qt_plan_preset_find(name);
    if (p) {
        *out = *p;
        return QT_OK;
    }
    const char *near[3];
    int k = qt_plan_suggest(name, 1, near, 3);
    if (k == 0)
        return qt_error(QT_ERR_NOT_FOUND, "unknown model '%s' (not a file; 'quanta plan --list-models' shows the presets)", name);
    return qt_error(QT_ERR_NOT_FOUND, "unknown model '%s'; did you mean %s%s%s%s%s?", name, near[0], k > 1 ? ", " : "",
                    k > 1 ? near[1] : "", k > 2 ? ", " : "", k > 2 ? near[2] : "");
}
