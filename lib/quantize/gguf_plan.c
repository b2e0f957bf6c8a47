/* lib/quantize/gguf_plan.c — which type every tensor gets and how many bytes
 * the file will have (include/quanta/quantize.h). The per-tensor rules are
 * lib/quant/recipe.c's, shared with the planner; what this file adds is the
 * user's options in llama-quantize's order (llama_tensor_get_type): a tensor
 * llama-quantize does not quantize keeps its type, then --token-embedding-type
 * / --output-tensor-type, then the first matching --tensor-type, then the
 * file type's rules (unless --pure), then the row-length fallbacks. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <inttypes.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/recipe.h"
#include "quanta/eval.h"
#include "quanta/gguf.h"
#include "quantize_internal.h"

qt_quantize_opts qt_quantize_opts_default(void) {
    qt_quantize_opts o;
    memset(&o, 0, sizeof o);
    o.output_type = QT_TYPE_COUNT;
    o.embd_type = QT_TYPE_COUNT;
    return o;
}

/* "blk.3.attn_v.weight" -> base "attn_v", layer 3; "output.weight" -> "output", -1. */
static void base_name(const char *name, char *base, size_t cap, int32_t *layer) {
    int l = -1, end = 0;
    const char *p = name;
    if (sscanf(name, "blk.%d.%n", &l, &end) == 1 && end > 0) p = name + end;
    else l = -1;
    snprintf(base, cap, "%s", p);
    size_t n = strlen(base);
    if (n > 7 && !strcmp(base + n - 7, ".weight")) base[n - 7] = '\0';
    *layer = l;
}

/* llama-quantize quantizes 2-D+ tensors named *weight except norms, routers
 * and (with --leave-output-tensor) the output (tensor_allows_quantization). */
static bool allows_quantization(const qt_tensor *t, const qt_quantize_opts *o, qt__role role) {
    const size_t n = strlen(t->name);
    if (t->n_dims < 2 || n < 6 || strcmp(t->name + n - 6, "weight") != 0) return false;
    if (role == QT__ROLE_SMALL || role == QT__ROLE_ROUTER) return false;
    if (o->leave_output && !strcmp(t->name, "output.weight")) return false;
    return true;
}

typedef struct regex_set {
    pcre2_code **re;
    int32_t n;
    pcre2_match_data *md;
} regex_set;

static void regex_free(regex_set *r) {
    for (int32_t i = 0; i < r->n; i++) pcre2_code_free(r->re[i]);
    free(r->re);
    if (r->md) pcre2_match_data_free(r->md);
    memset(r, 0, sizeof *r);
}

static qt_status regex_compile(regex_set *r, const char *opt, const char *const *pats, int32_t n) {
    memset(r, 0, sizeof *r);
    if (n <= 0) return QT_OK;
    if (!(r->re = calloc((size_t)n, sizeof *r->re)) || !(r->md = pcre2_match_data_create(4, NULL)))
        return qt_error(QT_ERR_NOMEM, "out of memory");
    for (; r->n < n; r->n++) {
        int err;
        PCRE2_SIZE off;
        r->re[r->n] = pcre2_compile((PCRE2_SPTR)pats[r->n], PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
        if (!r->re[r->n]) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(err, msg, sizeof msg);
            return qt_error(QT_ERR_ARG, "%s '%s': bad regular expression at offset %zu: %s", opt, pats[r->n], (size_t)off,
                            (const char *)msg);
        }
    }
    return QT_OK;
}

/* Index of the first pattern found in name, -1 when none. */
static int32_t regex_first(const regex_set *r, const char *name) {
    for (int32_t i = 0; i < r->n; i++)
        if (pcre2_match(r->re[i], (PCRE2_SPTR)name, PCRE2_ZERO_TERMINATED, 0, 0, r->md, NULL) >= 0) return i;
    return -1;
}

static uint64_t tensor_bytes(qt_type ty, const qt_tensor *t) {
    int64_t rows = 1;
    for (int d = 1; d < QT_MAX_DIMS; d++) rows *= t->ne[d];
    return (uint64_t)rows * qt_row_size(ty, t->ne[0]);
}

static int64_t nelem(const qt_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < QT_MAX_DIMS; d++) n *= t->ne[d];
    return n;
}

typedef struct plan_ctx {
    const qt_model *m;
    const qt_quantize_opts *o;
    qt_quantize_plan *p;
    qt__recipe_model rm;
    regex_set over, keep;
    const char *path;
} plan_ctx;

/* --target-size's type for t, or QT_TYPE_COUNT: the rules decide. */
static qt_type mix_type(const plan_ctx *c, const qt_tensor *t) {
    const qt__qplan_priv *pv = c->p->priv;
    return pv->mix_types ? pv->mix_types[t - pv->first] : QT_TYPE_COUNT;
}

/* "name=TYPE" for every tensor the mix chose (quanta.mix.types). */
static qt_status record_mix(qt_quantize_plan *p) {
    qt__qplan_priv *pv = p->priv;
    if (!pv->mix_types) return QT_OK;
    if (!(pv->mix_strs = calloc((size_t)p->n_tensors + 1, sizeof(char *)))) return qt_error(QT_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; i < pv->n_model_tensors; i++) {
        if (pv->plan_index[i] < 0 || pv->mix_types[i] == QT_TYPE_COUNT || p->tensors[pv->plan_index[i]].kept) continue;
        const qt_quantize_tensor *q = &p->tensors[pv->plan_index[i]];
        char buf[QT_MAX_NAME + 32];
        snprintf(buf, sizeof buf, "%s=%s", q->name, qt_type_get(q->type)->name);
        if (!(pv->mix_strs[pv->n_mix++] = strdup(buf))) return qt_error(QT_ERR_NOMEM, "out of memory");
    }
    return QT_OK;
}

/* One tensor's type, with llama-quantize's refusals. */
static qt_status plan_tensor(plan_ctx *c, const qt_tensor *t, qt_quantize_tensor *q) {
    char base[QT_MAX_NAME];
    int32_t layer;
    base_name(t->name, base, sizeof base, &layer);
    const qt__role role = qt__recipe_role(base, t->n_dims);
    snprintf(q->name, sizeof q->name, "%s", t->name);
    q->src_type = t->type;
    q->n_elements = nelem(t);
    q->src_bytes = t->nbytes;
    qt__recipe_tensor rt = {base, layer, role, t->ne[0], t->ne[2]};
    q->type = t->type;
    q->wanted = t->type;
    if (!allows_quantization(t, c->o, role) || regex_first(&c->keep, t->name) >= 0) {
        q->kept = true;
    } else if (mix_type(c, t) != QT_TYPE_COUNT) {
        q->type = q->wanted = mix_type(c, t);
        q->needs_imatrix = qt_type_requires_imatrix(q->type);
    } else {
        int32_t k = regex_first(&c->over, t->name);
        qt__recipe_opts ro = {k >= 0 ? c->o->overrides[k].type : QT_TYPE_COUNT, c->o->output_type, c->o->embd_type,
                              c->o->pure};
        qt__recipe_note note;
        q->type = qt__recipe_gguf_type_ex(c->p->ftype, &c->rm, &rt, &ro, &note);
        q->wanted = note.wanted;
        q->fallback = note.fell_back;
        q->quanta_fallback = note.quanta_fallback;
        q->needs_imatrix = qt__recipe_requires_imatrix(c->p->ftype, &rt, q->type);
    }
    if (t->ne[0] % qt_type_get(q->type)->block_elems != 0)
        return qt_error(QT_ERR_SHAPE, "%s: tensor '%s': row length %" PRId64 " is not a multiple of %s's block size %" PRId64,
                        c->path, t->name, t->ne[0], qt_type_get(q->type)->name, qt_type_get(q->type)->block_elems);
    /* The GGUF writer stores F16/BF16 norms and 1-D tensors as F32 (exact, llama.cpp wants them so). */
    if (q->kept && (q->type == QT_TYPE_F16 || q->type == QT_TYPE_BF16) && (t->n_dims < 2 || role == QT__ROLE_SMALL))
        q->type = QT_TYPE_F32;
    q->bytes = tensor_bytes(q->type, t);
    const qt_type_traits *st = qt_type_get(t->type);
    if (q->type != t->type && st->is_quantized) {
        if (!c->o->allow_requantize)
            return qt_error(QT_ERR_UNSUPPORTED, "%s: tensor '%s' is already quantized (%s); requantizing loses quality "
                            "twice: pass --allow-requantize to do it anyway", c->path, t->name, st->name);
        c->p->n_requantized++;
    }
    return QT_OK;
}

/* llama-quantize's imatrix checks (llama_model_quantize_impl): per tensor. */
static qt_status check_imatrix(plan_ctx *c, const qt_tensor *t, qt_quantize_tensor *q) {
    qt__qplan_priv *pv = c->p->priv;
    if (q->kept || q->type == t->type) return QT_OK;
    if (!pv->im) {
        if (q->needs_imatrix)
            return qt_error(QT_ERR_ARG, "%s: tensor '%s': type %s in a %s file needs an importance matrix (--imatrix FILE), "
                            "as llama-quantize requires", c->path, t->name, qt_type_get(q->type)->name, c->p->ftype->name);
        return QT_OK;
    }
    const qt_imatrix_entry *e = qt_imatrix_find(pv->im, t->name);
    if (!e) {
        if (q->needs_imatrix)
            return qt_error(QT_ERR_FORMAT, "%s: has no entry for tensor '%s', which type %s cannot be quantized without",
                            qt_imatrix_name(pv->im), t->name, qt_type_get(q->type)->name);
        q->imatrix_missing = true;
        return QT_OK;
    }
    if (!strcmp(t->name, "token_embd.weight")) return QT_OK; /* llama-quantize ignores a mismatch there */
    const int64_t n_exp = t->ne[2] > 1 ? t->ne[2] : 1;
    if (e->n_cols ? (e->n_cols != t->ne[0] || e->n_counts != n_exp) : e->n_values != t->ne[0] * n_exp)
        return qt_error(QT_ERR_SHAPE, "%s: entry '%s' has %" PRId64 " values, the tensor needs %" PRId64 " (%" PRId64
                        " columns x %" PRId64 " experts): is the imatrix for another model?", qt_imatrix_name(pv->im),
                        t->name, e->n_values, t->ne[0] * n_exp, t->ne[0], n_exp);
    return QT_OK;
}

static qt_status open_imatrix(plan_ctx *c) {
    qt__qplan_priv *pv = c->p->priv;
    if (!c->o->imatrix) return QT_OK;
    qt_status s = qt_imatrix_open(c->o->imatrix, &pv->im);
    if (s != QT_OK) return s;
    char *buf;
    size_t len;
    if ((s = qt_read_file(c->o->imatrix, &buf, &len)) != QT_OK) return s;
    qt_sha256_hex(buf, len, c->p->imatrix_sha256);
    free(buf);
    return QT_OK;
}

static qt_status record_fallbacks(qt_quantize_plan *p) {
    qt__qplan_priv *pv = p->priv;
    for (int32_t i = 0; i < p->n_tensors; i++) p->n_fallbacks += p->tensors[i].fallback;
    if (!p->n_fallbacks) return QT_OK;
    if (!(pv->fallback_strs = calloc((size_t)p->n_fallbacks, sizeof(char *)))) return qt_error(QT_ERR_NOMEM, "out of memory");
    int32_t k = 0;
    for (int32_t i = 0; i < p->n_tensors; i++) {
        const qt_quantize_tensor *q = &p->tensors[i];
        if (!q->fallback) continue;
        char buf[256];
        snprintf(buf, sizeof buf, "%s: %s -> %s%s", q->name, qt_type_get(q->wanted)->name, qt_type_get(q->type)->name,
                 q->quanta_fallback ? " (quanta; llama-quantize has no fallback and refuses)" : "");
        if (!(pv->fallback_strs[k++] = strdup(buf))) return qt_error(QT_ERR_NOMEM, "out of memory");
    }
    return QT_OK;
}

static qt_status plan_all(plan_ctx *c) {
    qt_quantize_plan *p = c->p;
    qt__qplan_priv *pv = p->priv;
    const int32_t n = qt_model_n_tensors(c->m);
    pv->n_model_tensors = n;
    pv->first = n ? qt_model_tensor(c->m, 0) : NULL;
    if (!(p->tensors = calloc((size_t)n + 1, sizeof *p->tensors)) || !(pv->plan_index = calloc((size_t)n + 1, sizeof(int32_t))))
        return qt_error(QT_ERR_NOMEM, "out of memory");
    uint64_t biggest = 0;
    for (int32_t i = 0; i < n; i++) {
        const qt_tensor *t = qt_model_tensor(c->m, i);
        pv->plan_index[i] = -1;
        if (qt_gguf_write_drops(t->name)) continue;
        qt_quantize_tensor *q = &p->tensors[p->n_tensors];
        qt_status s = plan_tensor(c, t, q);
        if (s == QT_OK) s = check_imatrix(c, t, q);
        if (s != QT_OK) return s;
        pv->plan_index[i] = p->n_tensors++;
        p->input_bytes += t->nbytes;
        p->tensor_bytes += q->bytes;
        p->n_weights += (uint64_t)q->n_elements;
        if (q->src_bytes + q->bytes > biggest) biggest = q->src_bytes + q->bytes;
    }
    p->bits_per_weight = p->n_weights ? 8.0 * (double)p->tensor_bytes / (double)p->n_weights : 0;
    /* Resident at once: one tensor's input pages and its output, the writer's
     * 1 MiB buffer, per-thread row scratch, and the program itself (~16 MiB). */
    p->peak_rss_estimate = biggest + ((uint64_t)1 << 20) + ((uint64_t)16 << 20);
    qt_status s = record_fallbacks(p);
    return s == QT_OK ? record_mix(p) : s;
}

qt_status qt_quantize_plan_make(const qt_model *m, const qt_quantize_opts *o, qt_quantize_plan **out) {
    return qt__quantize_plan_make_mix(m, o, NULL, 0, 0, out);
}

qt_status qt__quantize_plan_make_mix(const qt_model *m, const qt_quantize_opts *o, const qt_type *mix_types,
                                     uint64_t budget, double cost, qt_quantize_plan **out) {
    *out = NULL;
    const qt_gguf_ftype_info *ft = o->scheme ? qt_gguf_ftype_find(o->scheme) : NULL;
    if (!ft) return qt_error(QT_ERR_ARG, "unknown GGUF file type '%s' (llama-quantize's names: q4_k_m, q8_0, iq4_xs, ...; "
                             "see 'quanta formats')", o->scheme ? o->scheme : "");
    qt_quantize_plan *p = calloc(1, sizeof *p);
    qt__qplan_priv *pv = calloc(1, sizeof *pv);
    if (!p || !pv) { free(p); free(pv); return qt_error(QT_ERR_NOMEM, "out of memory"); }
    p->ftype = ft;
    p->priv = pv;
    pv->mix_types = mix_types;
    pv->mix_budget = budget;
    pv->mix_cost = cost;
    const qt_hparams *hp = qt_model_hparams(m);
    plan_ctx c = {.m = m, .o = o, .p = p, .path = qt_model_path(m)};
    c.rm = (qt__recipe_model){hp->arch_name, hp->n_layer, 0, qt_model_find_tensor(m, "output.weight") == NULL,
                              hp->n_head_kv > 0 ? hp->n_head / hp->n_head_kv : 1, o->imatrix != NULL};
    const char **pats = calloc((size_t)o->n_overrides + 1, sizeof *pats);
    if (!pats) { qt_quantize_plan_free(p); return qt_error(QT_ERR_NOMEM, "out of memory"); }
    for (int32_t i = 0; i < o->n_overrides; i++) pats[i] = o->overrides[i].pattern;
    qt_status s = regex_compile(&c.over, "--tensor-type", pats, o->n_overrides);
    free(pats);
    if (s == QT_OK) s = regex_compile(&c.keep, "--keep", o->keep, o->n_keep);
    if (s == QT_OK) s = open_imatrix(&c);
    if (s == QT_OK) s = plan_all(&c);
    pv->mix_types = NULL; /* the caller's: read by plan_all only */
    regex_free(&c.over);
    regex_free(&c.keep);
    if (s == QT_OK) s = qt__quantize_write(m, NULL, o, p, &p->output_bytes, NULL, NULL);
    if (s != QT_OK) { qt_quantize_plan_free(p); return s; }
    *out = p;
    return QT_OK;
}

void qt_quantize_plan_free(qt_quantize_plan *p) {
    if (!p) return;
    qt__qplan_priv *pv = p->priv;
    if (pv) {
        if (pv->im) qt_imatrix_close(pv->im);
        for (int32_t i = 0; i < p->n_fallbacks && pv->fallback_strs; i++) free(pv->fallback_strs[i]);
        free(pv->fallback_strs);
        for (int32_t i = 0; i < pv->n_mix; i++) free(pv->mix_strs[i]);
        free(pv->mix_strs);
        free(pv->plan_index);
        free(pv);
    }
    free(p->tensors);
    free(p);
}
