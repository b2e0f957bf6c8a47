/* lib/quant/recipe.c — llama-quantize's per-tensor type choices
 * (llama-quant.cpp llama_tensor_get_type; docs/formats.md §3.6), for the file types
 * whose row in lib/quant/schemes.c says has_rules, and the tensor roles they
 * key on. */
#include <string.h>

#include "recipe.h"

static bool ends_with(const char *s, const char *tail) {
    const size_t n = strlen(s), k = strlen(tail);
    return n >= k && !strcmp(s + n - k, tail);
}

qt__role qt__recipe_role(const char *name, int n_dims) {
    if (!strcmp(name, "token_embd")) return QT__ROLE_EMBED;
    if (!strcmp(name, "output")) return QT__ROLE_OUTPUT;
    if (!strcmp(name, "ffn_gate_inp")) return QT__ROLE_ROUTER;
    if (n_dims < 2 || ends_with(name, "_norm") || ends_with(name, ".bias") || !strcmp(name, "exp_probs_b"))
        return QT__ROLE_SMALL;
    return QT__ROLE_LINEAR;
}

/* Layers that get more bits in the _M mixes: the first and last eighth, and
 * every third in between. */
static bool use_more_bits(int64_t i, int64_t n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static int64_t block_of(qt_type t) {
    const qt_type_traits *tr = qt_type_get(t);
    return tr ? tr->block_elems : 1;
}

/* llama-quantize's fallback when the row length is not a multiple of the block. */
static qt_type fallback(qt_type t, int64_t ne0) {
    if (ne0 % block_of(t) == 0) return t;
    switch (t) {
    case QT_TYPE_Q4_K: t = QT_TYPE_Q5_0; break;
    case QT_TYPE_Q5_K: t = QT_TYPE_Q5_1; break;
    case QT_TYPE_Q6_K: t = QT_TYPE_Q8_0; break;
    default: break;
    }
    return ne0 % block_of(t) == 0 ? t : QT_TYPE_F16;
}

/* llama.cpp calls an 80-layer llama/qwen2 a "70B" and gives its attn_v Q5_K instead of Q4_K. */
static bool is_70b_type(const qt__recipe_model *m) {
    return m->n_layer == 80 && m->arch && (!strcmp(m->arch, "llama") || !strcmp(m->arch, "qwen2"));
}

qt_type qt__recipe_gguf_type(const qt_gguf_ftype_info *ft, const qt__recipe_model *m, const qt__recipe_tensor *t) {
    if (t->role == QT__ROLE_SMALL || t->role == QT__ROLE_ROUTER) return QT_TYPE_F32;
    const qt_type base = ft ? ft->base : QT_TYPE_F16;
    if (!ft || !ft->has_rules) return fallback(base, t->row_len);
    const bool mix = ft->mix;
    qt_type ty = base;
    const bool is_output = t->role == QT__ROLE_OUTPUT || (t->role == QT__ROLE_EMBED && m->tie_embeddings);
    if (is_output) {
        /* Q6_K for every K/legacy type, Q8_0 stays Q8_0; a row length the base type cannot
         * block goes to Q8_0. */
        if (base == QT_TYPE_Q8_0) return fallback(QT_TYPE_Q8_0, t->row_len);
        if (t->row_len % block_of(base) != 0) return fallback(QT_TYPE_Q8_0, t->row_len);
        return fallback(QT_TYPE_Q6_K, t->row_len);
    }
    if (t->role == QT__ROLE_EMBED) return fallback(base, t->row_len);
    const bool attn_v = !strcmp(t->name, "attn_v") || !strcmp(t->name, "attn_kv_b");
    const bool ffn_down = !strncmp(t->name, "ffn_down", 8);
    if (m->n_expert == 8 && (attn_v || !strcmp(t->name, "attn_k"))) {
        ty = QT_TYPE_Q8_0; /* 8-expert models: attention is small next to the experts */
    } else if (mix && attn_v) {
        ty = use_more_bits(t->layer, m->n_layer) ? QT_TYPE_Q6_K : base;
        if (base == QT_TYPE_Q4_K && ty == QT_TYPE_Q4_K && is_70b_type(m)) ty = QT_TYPE_Q5_K;
    } else if (mix && ffn_down) {
        ty = use_more_bits(t->layer, m->n_layer) ? QT_TYPE_Q6_K : base;
    }
    return fallback(ty, t->row_len);
}
