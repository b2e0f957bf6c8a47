/* lib/quant/recipe.c — llama-quantize's per-tensor type choices, for every
 * file type of lib/quant/schemes.c (llama.cpp src/llama-quant.cpp at commit
 * 3f545bec: llama_tensor_get_type, llama_tensor_get_type_impl,
 * tensor_type_fallback, tensor_requires_imatrix; docs/formats.md §3.6), and the
 * tensor roles they key on. Rewritten from reading that code: the branches
 * below follow its order, since the first matching rule wins.
 *
 * llama.cpp counts attn_v / ffn_down / ffn_gate / ffn_up tensors as it meets
 * them; for a dense model in block order that count is the block index,
 * which is what callers pass as `layer`. */
#include <string.h>

#include "recipe.h"

/* llama_ftype ids (general.file_type), as in schemes.c's ftypes[]. */
enum {
    FT_Q4_0 = 2, FT_Q4_1 = 3, FT_Q8_0 = 7, FT_Q5_0 = 8, FT_Q5_1 = 9, FT_Q2_K = 10, FT_Q3_K_S = 11, FT_Q3_K_M = 12,
    FT_Q3_K_L = 13, FT_Q4_K_S = 14, FT_Q4_K_M = 15, FT_Q5_K_S = 16, FT_Q5_K_M = 17, FT_Q6_K = 18, FT_IQ2_XXS = 19,
    FT_IQ2_XS = 20, FT_Q2_K_S = 21, FT_IQ3_XS = 22, FT_IQ3_XXS = 23, FT_IQ1_S = 24, FT_IQ4_NL = 25, FT_IQ3_S = 26,
    FT_IQ3_M = 27, FT_IQ2_S = 28, FT_IQ2_M = 29, FT_IQ4_XS = 30, FT_IQ1_M = 31, FT_TQ1_0 = 36, FT_TQ2_0 = 37,
    FT_MXFP4_MOE = 38, FT_Q2_0 = 41,
};

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

/* llama.cpp's tensor categories (tensor_get_category), by base name. */
typedef enum cat { C_OTHER, C_OUTPUT, C_EMBD, C_QKV, C_KV_B, C_V, C_K, C_Q, C_O, C_UP, C_GATE, C_DOWN } cat;

static cat category(const qt__recipe_tensor *t) {
    if (t->role == QT__ROLE_OUTPUT) return C_OUTPUT;
    if (t->role == QT__ROLE_EMBED) return C_EMBD;
    static const struct { const char *name; cat c; } exact[] = {
        {"attn_qkv", C_QKV}, {"attn_kv_b", C_KV_B}, {"attn_v", C_V}, {"attn_k", C_K}, {"attn_q", C_Q}, {"attn_output", C_O},
    };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (!strcmp(t->name, exact[i].name)) return exact[i].c;
    if (strstr(t->name, "ffn_up")) return C_UP;
    if (strstr(t->name, "ffn_gate")) return C_GATE;
    if (strstr(t->name, "ffn_down")) return C_DOWN;
    return C_OTHER;
}

/* Layers that get more bits in the mixes: the first and last eighth, and
 * every third in between. */
static bool use_more_bits(int64_t i, int64_t n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static int64_t block_of(qt_type t) {
    const qt_type_traits *tr = qt_type_get(t);
    return tr ? tr->block_elems : 1;
}

/* tensor_type_fallback: a row length the type cannot block. */
static qt_type fallback(qt_type t, int64_t ne0, qt__recipe_note *note) {
    if (note) *note = (qt__recipe_note){.wanted = t};
    if (ne0 % block_of(t) == 0) return t;
    qt_type r;
    switch (t) {
    case QT_TYPE_IQ1_S: case QT_TYPE_IQ1_M: case QT_TYPE_IQ2_XXS: case QT_TYPE_IQ2_XS: case QT_TYPE_IQ2_S:
    case QT_TYPE_IQ3_XXS: case QT_TYPE_IQ3_S: case QT_TYPE_IQ4_XS: r = QT_TYPE_IQ4_NL; break;
    case QT_TYPE_Q2_0: case QT_TYPE_Q2_K: case QT_TYPE_Q3_K: case QT_TYPE_TQ1_0: case QT_TYPE_TQ2_0: r = QT_TYPE_Q4_0; break;
    case QT_TYPE_Q4_K: r = QT_TYPE_Q5_0; break;
    case QT_TYPE_Q5_K: r = QT_TYPE_Q5_1; break;
    case QT_TYPE_Q6_K: r = QT_TYPE_Q8_0; break;
    default:
        /* llama-quantize throws here; quanta writes F16 (exact for F16 inputs,
         * what llama.cpp itself does when its fallback does not divide either). */
        r = QT_TYPE_F16;
        if (note) note->quanta_fallback = true;
        break;
    }
    if (note) note->fell_back = true;
    return ne0 % block_of(r) == 0 ? r : QT_TYPE_F16;
}

/* llama.cpp calls an 80-layer llama/qwen2 a "70B". */
static bool is_70b_type(const qt__recipe_model *m) {
    return m->n_layer == 80 && m->arch && (!strcmp(m->arch, "llama") || !strcmp(m->arch, "qwen2"));
}

static bool is_ft(int32_t id, const int32_t *set, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (set[i] == id) return true;
    return false;
}
#define IS(id, ...) is_ft((id), (const int32_t[]){__VA_ARGS__}, sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t))

static qt_type rule_output(int32_t f, const qt__recipe_model *m, const qt__recipe_tensor *t, qt_type ty, bool falcon) {
    if (f == FT_MXFP4_MOE) return QT_TYPE_Q8_0;
    if (falcon || t->row_len % block_of(ty) != 0) return QT_TYPE_Q8_0;
    if (IS(f, FT_IQ2_XXS, FT_IQ2_XS, FT_IQ3_XXS, FT_IQ1_S, FT_IQ2_S, FT_IQ2_M, FT_IQ1_M)) return QT_TYPE_Q5_K;
    (void)m;
    return ty != QT_TYPE_Q8_0 ? QT_TYPE_Q6_K : ty;
}

static qt_type rule_embd(int32_t f, qt_type ty) {
    if (IS(f, FT_IQ2_XXS, FT_IQ2_XS, FT_IQ1_S, FT_IQ1_M)) return QT_TYPE_Q2_K;
    if (IS(f, FT_IQ2_S, FT_IQ2_M, FT_IQ3_XXS)) return QT_TYPE_IQ3_S;
    if (IS(f, FT_TQ1_0, FT_TQ2_0, FT_Q2_0)) return QT_TYPE_Q4_K;
    return ty;
}

/* The very-low-bit i-quant mixes (IQ1_*, IQ2_*). */
static qt_type rule_iq_low(int32_t f, const qt__recipe_model *m, const qt__recipe_tensor *t, cat c, qt_type ty) {
    const bool s_or_m = IS(f, FT_IQ2_S, FT_IQ2_M);
    if (c == C_V || c == C_QKV || c == C_KV_B) {
        if (m->n_gqa >= 4 || m->n_expert >= 4) return QT_TYPE_Q4_K;
        return s_or_m ? QT_TYPE_IQ3_S : QT_TYPE_Q2_K;
    }
    if (m->n_expert == 8 && c == C_K) return QT_TYPE_Q4_K;
    if (c == C_DOWN) return t->layer < m->n_layer / 8 ? (s_or_m ? QT_TYPE_IQ3_S : QT_TYPE_Q2_K) : ty;
    if (c == C_O) {
        if (m->n_expert == 8) return QT_TYPE_Q5_K;
        if (IS(f, FT_IQ1_S, FT_IQ1_M)) return QT_TYPE_IQ2_XXS;
        if (s_or_m) return QT_TYPE_IQ3_S;
    }
    return ty;
}

static qt_type rule_attn_v(int32_t f, const qt__recipe_model *m, const qt__recipe_tensor *t, qt_type ty) {
    const bool gqa4 = m->n_gqa >= 4;
    const int64_t i = t->layer, n = m->n_layer;
    if (f == FT_Q2_K) ty = gqa4 ? QT_TYPE_Q4_K : QT_TYPE_Q3_K;
    else if (f == FT_Q2_K_S && gqa4) ty = QT_TYPE_Q4_K;
    else if (f == FT_IQ3_XXS) ty = gqa4 ? QT_TYPE_Q4_K : !m->has_imatrix ? QT_TYPE_IQ3_S : QT_TYPE_IQ3_XXS;
    else if (IS(f, FT_IQ3_XS, FT_IQ3_S) && gqa4) ty = QT_TYPE_Q4_K;
    else if (f == FT_IQ3_M) ty = QT_TYPE_Q4_K;
    else if (f == FT_Q3_K_M) ty = i < 2 ? QT_TYPE_Q5_K : QT_TYPE_Q4_K;
    else if (f == FT_Q3_K_L) ty = QT_TYPE_Q5_K;
    else if (IS(f, FT_IQ4_NL, FT_IQ4_XS) && gqa4) ty = QT_TYPE_Q5_K;
    else if (IS(f, FT_Q4_K_M, FT_Q5_K_M) && use_more_bits(i, n)) ty = QT_TYPE_Q6_K;
    else if (f == FT_Q4_K_S && i < 4) ty = QT_TYPE_Q5_K;
    if (is_70b_type(m) && (ty == QT_TYPE_Q3_K || ty == QT_TYPE_Q4_K)) ty = QT_TYPE_Q5_K;
    if (m->n_expert == 8) ty = QT_TYPE_Q8_0;
    return ty;
}

static qt_type rule_ffn_down(int32_t f, const qt__recipe_model *m, const qt__recipe_tensor *t, qt_type ty, bool falcon) {
    const int64_t i = t->layer, n = m->n_layer;
    if (f == FT_Q2_K) return QT_TYPE_Q3_K;
    if (f == FT_Q2_K_S) return i < n / 8 ? QT_TYPE_Q4_K : ty;
    if (f == FT_IQ3_XXS && !m->has_imatrix) return i < n / 8 ? QT_TYPE_Q4_K : QT_TYPE_Q3_K;
    if (f == FT_Q3_K_M)
        return i < n / 16 ? QT_TYPE_Q5_K : !falcon || use_more_bits(i, n) ? QT_TYPE_Q4_K : QT_TYPE_Q3_K;
    if (f == FT_IQ3_M && (i < n / 8 || (m->n_expert == 8 && use_more_bits(i, n)))) return QT_TYPE_Q4_K;
    if (f == FT_Q3_K_L) return falcon ? QT_TYPE_Q4_K : QT_TYPE_Q5_K;
    if (f == FT_Q4_K_M) {
        if (falcon) return i < n / 16 ? QT_TYPE_Q6_K : use_more_bits(i, n) ? QT_TYPE_Q5_K : QT_TYPE_Q4_K;
        return use_more_bits(i, n) ? QT_TYPE_Q6_K : ty;
    }
    if (i < n / 8 && IS(f, FT_IQ4_NL, FT_IQ4_XS) && !m->has_imatrix) return QT_TYPE_Q5_K;
    if (f == FT_Q5_K_M && use_more_bits(i, n)) return QT_TYPE_Q6_K;
    if (f == FT_Q4_K_S && !falcon && i < n / 8) return QT_TYPE_Q5_K;
    if (IS(f, FT_Q4_0, FT_Q5_0) && m->has_imatrix && i < n / 8) return f == FT_Q4_0 ? QT_TYPE_Q4_1 : QT_TYPE_Q5_1;
    return ty;
}

static qt_type rule_attn_output(int32_t f, const qt__recipe_model *m, qt_type ty, bool falcon) {
    if (falcon) return f == FT_Q3_K_L ? QT_TYPE_Q4_K : ty;
    if (m->n_expert == 8)
        return IS(f, FT_Q2_K, FT_IQ3_XS, FT_IQ3_XXS, FT_Q3_K_S, FT_Q3_K_M, FT_IQ4_NL, FT_Q4_K_S, FT_Q4_K_M, FT_IQ3_S,
                  FT_IQ3_M, FT_IQ4_XS) ? QT_TYPE_Q5_K : ty;
    if (f == FT_Q2_K) return QT_TYPE_Q3_K;
    if (f == FT_IQ3_XXS) return QT_TYPE_IQ3_S;
    if (f == FT_Q3_K_M || f == FT_IQ3_M) return QT_TYPE_Q4_K;
    if (f == FT_Q3_K_L) return QT_TYPE_Q5_K;
    return ty;
}

/* llama_tensor_get_type_impl. */
static qt_type rule(int32_t f, const qt__recipe_model *m, const qt__recipe_tensor *t, qt_type ty, const qt__recipe_opts *o) {
    const bool falcon = m->arch && !strcmp(m->arch, "falcon");
    const cat c = category(t);
    if (c == C_OUTPUT || (m->tie_embeddings && c == C_EMBD))
        return o && o->output_type != QT_TYPE_COUNT ? o->output_type : rule_output(f, m, t, ty, falcon);
    if (f == FT_MXFP4_MOE) return t->n_slices > 1 ? QT_TYPE_MXFP4 : QT_TYPE_Q8_0;
    if (c == C_EMBD) return o && o->embd_type != QT_TYPE_COUNT ? o->embd_type : rule_embd(f, ty);
    if (IS(f, FT_IQ2_XXS, FT_IQ2_XS, FT_IQ1_S, FT_IQ2_S, FT_IQ2_M, FT_IQ1_M)) return rule_iq_low(f, m, t, c, ty);
    switch (c) {
    case C_V: case C_QKV: case C_KV_B:
        return rule_attn_v(f, m, t, ty);
    case C_K:
        if (m->n_expert == 8) return QT_TYPE_Q8_0;
        /* fall through - attn_q's rules */
    case C_Q:
        return f == FT_IQ3_XS ? QT_TYPE_IQ3_XXS : f == FT_IQ3_XXS ? QT_TYPE_IQ2_S : ty;
    case C_DOWN:
        return rule_ffn_down(f, m, t, ty, falcon);
    case C_O:
        return rule_attn_output(f, m, ty, falcon);
    case C_GATE: case C_UP:
        return f == FT_IQ3_XS && t->layer >= m->n_layer / 8 && t->layer < 7 * m->n_layer / 8 ? QT_TYPE_IQ3_XXS : ty;
    default:
        return ty;
    }
}

qt_type qt__recipe_gguf_type_ex(const qt_gguf_ftype_info *ft, const qt__recipe_model *m, const qt__recipe_tensor *t,
                                const qt__recipe_opts *o, qt__recipe_note *note) {
    if (note) *note = (qt__recipe_note){.wanted = QT_TYPE_F32};
    if (t->role == QT__ROLE_SMALL || t->role == QT__ROLE_ROUTER) return QT_TYPE_F32;
    /* Direct overrides skip the rules and the fallback, as in llama_tensor_get_type. */
    if (o && o->embd_type != QT_TYPE_COUNT && t->role == QT__ROLE_EMBED) return fallback(o->embd_type, 1, note);
    if (o && o->output_type != QT_TYPE_COUNT && t->role == QT__ROLE_OUTPUT) return fallback(o->output_type, 1, note);
    const qt_type base = ft ? ft->base : QT_TYPE_F16;
    const qt_type_traits *tr = qt_type_get(base);
    if (!tr || !tr->is_quantized) return fallback(base, 1, note);
    qt_type ty = base;
    if (o && o->manual != QT_TYPE_COUNT) ty = o->manual;
    else if (!(o && o->pure)) ty = rule(ft->id, m, t, base, o);
    return fallback(ty, t->row_len, note);
}

qt_type qt__recipe_gguf_type(const qt_gguf_ftype_info *ft, const qt__recipe_model *m, const qt__recipe_tensor *t) {
    return qt__recipe_gguf_type_ex(ft, m, t, NULL, NULL);
}

bool qt__recipe_requires_imatrix(const qt_gguf_ftype_info *ft, const qt__recipe_tensor *t, qt_type type) {
    if (t->role == QT__ROLE_EMBED || t->role == QT__ROLE_OUTPUT) return false;
    switch (type) {
    case QT_TYPE_IQ3_XXS: case QT_TYPE_IQ2_XXS: case QT_TYPE_IQ2_XS: case QT_TYPE_IQ2_S: case QT_TYPE_IQ1_M:
    case QT_TYPE_IQ1_S:
        return true;
    case QT_TYPE_Q2_K:
        return ft && ft->id == FT_Q2_K_S;
    default:
        return false;
    }
}
