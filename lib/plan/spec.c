/* lib/plan/spec.c — model specs from a preset, a config.json, or a checkpoint.
 *
 * config.json is read by the one reader, lib/io/hf_config.c (fields:
 * docs/formats.md §7.1, transformers' configuration classes). Beyond the four architectures the engine runs, the
 * planner reads the fields that decide memory for the families in the
 * preset table: Gemma 2 (explicit head_dim, alternating sliding window),
 * Mixtral / Qwen3-MoE / DeepSeek (experts), DeepSeek (MLA ranks).
 */
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

#include "io/hf_config.h"
#include "model/arch.h"
#include "plan_internal.h"

/* The transformer's shape, from a config's or a checkpoint's hyperparameters
 * (n_head >= 1; kv heads and head_dim may be 0 in a checkpoint: derived). */
static void set_shape(const qt_hparams *hp, qt_model_spec *m) {
    m->n_vocab = hp->n_vocab;
    m->n_embd = hp->n_embd;
    m->n_layer = hp->n_layer;
    m->n_head = hp->n_head;
    m->n_head_kv = hp->n_head_kv > 0 ? hp->n_head_kv : hp->n_head;
    m->head_dim = hp->head_dim > 0 ? hp->head_dim : hp->n_embd / hp->n_head;
    m->n_ff = hp->n_ff;
    m->n_ctx_train = hp->n_ctx_train;
}

/* The spec of any family the planner sizes, from the one config.json reader
 * (lib/io/hf_config.c): its shape fields are required, not class defaults. */
static qt_status fill_from_config(const qt_hf_config *c, qt_model_spec *m) {
    if (!c->model_type[0]) return qt__hf_config_missing(c, "model_type");
    snprintf(m->arch, sizeof m->arch, "%s", c->model_type);
    m->kind = QT_SPEC_LLM;
    qt_hparams hp;
    qt_status st = qt__hf_config_dims(c, NULL, &hp);
    if (st) return st;
    set_shape(&hp, m); /* head_dim is its own field for Qwen3 and Gemma (hidden / heads would be wrong) */
    /* What the model_type implies beyond its fields: a row of lib/model/arch.c. */
    const qt__hf_family *fam = qt__hf_family_find(c->model_type);
    m->tie_embeddings = qt__hf_bool_or(c->tie_word_embeddings, fam->tie_default);
    m->attn_bias = fam->attn_bias || qt__hf_bool_or(c->attention_bias, false);
    m->qk_norm = fam->qk_norm;
    m->norms_per_layer = fam->norms_per_layer;
    const bool swa_on = fam->swa == QT__SWA_ALL || fam->swa == QT__SWA_ALTERNATE ||
                        (fam->swa == QT__SWA_GATED && qt__hf_bool_or(c->use_sliding_window, false));
    if (c->sliding_window.v > 0 && swa_on) {
        m->sliding_window = c->sliding_window.v;
        m->swa_period = fam->swa == QT__SWA_ALTERNATE ? 2 : 1;
    }
    return QT_OK;
}

/* Experts: Mixtral names them num_local_experts (width intermediate_size), Qwen3-MoE
 * num_experts + moe_intermediate_size, DeepSeek n_routed_experts + shared experts. */
static qt_status fill_experts(const qt_hf_config *c, qt_model_spec *m) {
    const int32_t e = c->num_local_experts.v ? c->num_local_experts.v
                      : c->num_experts.v     ? c->num_experts.v
                                             : c->n_routed_experts.v;
    if (e > 0) {
        if (!c->num_experts_per_tok.set) return qt__hf_config_missing(c, "num_experts_per_tok");
        m->n_expert = e;
        m->n_expert_used = c->num_experts_per_tok.v;
        m->n_ff_expert = qt__hf_int_or(c->moe_intermediate_size, (int32_t)m->n_ff);
        m->n_expert_shared = c->n_shared_experts.v;
        m->n_dense_lead = c->first_k_dense_replace.v;
        if (m->n_expert_used < 1 || m->n_expert_used > m->n_expert)
            return qt_error(QT_ERR_FORMAT, "%s: field '%snum_experts_per_tok': %lld is not in 1..%lld", c->path, c->prefix,
                            (long long)m->n_expert_used, (long long)m->n_expert);
    }
    return QT_OK;
}

/* Multi-head latent attention (DeepSeek): the cache holds the compressed KV. */
static qt_status fill_mla(const qt_hf_config *c, qt_model_spec *m) {
    if (c->kv_lora_rank.v > 0) {
        if (!c->qk_rope_head_dim.set) return qt__hf_config_missing(c, "qk_rope_head_dim");
        if (!c->qk_nope_head_dim.set) return qt__hf_config_missing(c, "qk_nope_head_dim");
        if (!c->v_head_dim.set) return qt__hf_config_missing(c, "v_head_dim");
        m->kv_lora_rank = c->kv_lora_rank.v;
        m->q_lora_rank = c->q_lora_rank.v;
        m->qk_rope_dim = c->qk_rope_head_dim.v;
        m->qk_nope_dim = c->qk_nope_head_dim.v;
        m->v_head_dim = c->v_head_dim.v;
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
    qt_hf_config c;
    qt_status st = qt__hf_config_read(file, &c);
    if (!st) st = fill_from_config(&c, out);
    if (!st) st = fill_experts(&c, out);
    if (!st) st = fill_mla(&c, out);
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
    set_shape(hp, out);
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
