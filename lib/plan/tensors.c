/* lib/plan/tensors.c — a model shape as a list of weight tensors, and what
 * each scheme stores for each of them.
 *
 * Shapes follow the Hugging Face modules (docs/formats.md §7.4) and are named like
 * GGUF tensors (docs/formats.md §2.9) so that llama.cpp's per-tensor type rules
 * (docs/formats.md §3.6) apply by name. Fused checkpoints (Phi-3's qkv_proj and
 * gate_up_proj) hold the same parameters as the split form used here.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/arch.h"
#include "plan_internal.h"

typedef struct tlist {
    qt__ptensor *t;
    int n, cap;
    bool oom;
} tlist;

static void add(tlist *l, const char *name, int32_t layer, qt__role role, int64_t in, int64_t out, int64_t n_mat,
                bool replicated) {
    if (l->oom || in <= 0 || out <= 0 || n_mat <= 0) return;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 256;
        qt__ptensor *t = realloc(l->t, (size_t)cap * sizeof *t);
        if (!t) { l->oom = true; return; }
        l->t = t;
        l->cap = cap;
    }
    qt__ptensor *t = &l->t[l->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->layer = layer;
    t->role = role;
    t->in = in;
    t->out = out;
    t->n_mat = n_mat;
    t->replicated = replicated;
    t->expert = n_mat > 1;
}

static bool is_moe_layer(const qt_model_spec *m, int64_t l) { return m->n_expert > 0 && l >= m->n_dense_lead; }

static void add_attention(tlist *l, const qt_model_spec *m, int32_t b) {
    const int64_t h = m->n_embd;
    if (m->kv_lora_rank > 0) {
        /* Multi-head latent attention (DeepSeek-V2/V3): low-rank q and a shared kv latent.
         * vLLM keeps q_a / kv_a down-projections replicated across tensor-parallel ranks. */
        const int64_t qk = m->qk_nope_dim + m->qk_rope_dim;
        if (m->q_lora_rank > 0) {
            add(l, "attn_q_a", b, QT__ROLE_LINEAR, h, m->q_lora_rank, 1, true);
            add(l, "attn_q_a_norm", b, QT__ROLE_SMALL, m->q_lora_rank, 1, 1, true);
            add(l, "attn_q_b", b, QT__ROLE_LINEAR, m->q_lora_rank, m->n_head * qk, 1, false);
        } else {
            add(l, "attn_q", b, QT__ROLE_LINEAR, h, m->n_head * qk, 1, false);
        }
        add(l, "attn_kv_a_mqa", b, QT__ROLE_LINEAR, h, m->kv_lora_rank + m->qk_rope_dim, 1, true);
        add(l, "attn_kv_a_norm", b, QT__ROLE_SMALL, m->kv_lora_rank, 1, 1, true);
        add(l, "attn_kv_b", b, QT__ROLE_LINEAR, m->kv_lora_rank, m->n_head * (m->qk_nope_dim + m->v_head_dim), 1, false);
        add(l, "attn_output", b, QT__ROLE_LINEAR, m->n_head * m->v_head_dim, h, 1, false);
        return;
    }
    const int64_t q = m->n_head * m->head_dim, kv = m->n_head_kv * m->head_dim;
    add(l, "attn_q", b, QT__ROLE_LINEAR, h, q, 1, false);
    add(l, "attn_k", b, QT__ROLE_LINEAR, h, kv, 1, false);
    add(l, "attn_v", b, QT__ROLE_LINEAR, h, kv, 1, false);
    add(l, "attn_output", b, QT__ROLE_LINEAR, q, h, 1, false);
    if (m->attn_bias) {
        add(l, "attn_q.bias", b, QT__ROLE_SMALL, q, 1, 1, false);
        add(l, "attn_k.bias", b, QT__ROLE_SMALL, kv, 1, 1, false);
        add(l, "attn_v.bias", b, QT__ROLE_SMALL, kv, 1, 1, false);
    }
    if (m->qk_norm) {
        add(l, "attn_q_norm", b, QT__ROLE_SMALL, m->head_dim, 1, 1, true);
        add(l, "attn_k_norm", b, QT__ROLE_SMALL, m->head_dim, 1, 1, true);
    }
}

static void add_mlp(tlist *l, const qt_model_spec *m, int32_t b) {
    const int64_t h = m->n_embd;
    if (!is_moe_layer(m, b)) {
        add(l, "ffn_gate", b, QT__ROLE_LINEAR, h, m->n_ff, 1, false);
        add(l, "ffn_up", b, QT__ROLE_LINEAR, h, m->n_ff, 1, false);
        add(l, "ffn_down", b, QT__ROLE_LINEAR, m->n_ff, h, 1, false);
        return;
    }
    add(l, "ffn_gate_inp", b, QT__ROLE_ROUTER, h, m->n_expert, 1, true);
    if (qt__hf_family_find(m->arch)->score_bias) /* e_score_correction_bias (noaux_tc routing) */
        add(l, "exp_probs_b", b, QT__ROLE_SMALL, m->n_expert, 1, 1, true);
    add(l, "ffn_gate_exps", b, QT__ROLE_LINEAR, h, m->n_ff_expert, m->n_expert, false);
    add(l, "ffn_up_exps", b, QT__ROLE_LINEAR, h, m->n_ff_expert, m->n_expert, false);
    add(l, "ffn_down_exps", b, QT__ROLE_LINEAR, m->n_ff_expert, h, m->n_expert, false);
    if (m->n_expert_shared > 0) {
        const int64_t w = m->n_ff_expert * m->n_expert_shared;
        add(l, "ffn_gate_shexp", b, QT__ROLE_LINEAR, h, w, 1, false);
        add(l, "ffn_up_shexp", b, QT__ROLE_LINEAR, h, w, 1, false);
        add(l, "ffn_down_shexp", b, QT__ROLE_LINEAR, w, h, 1, false);
    }
}

qt_status qt__plan_tensors(const qt_model_spec *m, qt__ptensor **out, int *n) {
    *out = NULL;
    *n = 0;
    if (m->kind != QT_SPEC_LLM) return qt_error(QT_ERR_ARG, "%s: not a language model", m->key);
    tlist l = {0};
    add(&l, "token_embd", -1, QT__ROLE_EMBED, m->n_embd, m->n_vocab, 1, false);
    for (int32_t b = 0; b < m->n_layer; b++) {
        add(&l, "attn_norm", b, QT__ROLE_SMALL, m->n_embd, 1, 1, true);
        add_attention(&l, m, b);
        if (m->norms_per_layer >= 4) add(&l, "post_attention_norm", b, QT__ROLE_SMALL, m->n_embd, 1, 1, true);
        add(&l, "ffn_norm", b, QT__ROLE_SMALL, m->n_embd, 1, 1, true);
        add_mlp(&l, m, b);
        if (m->norms_per_layer >= 4) add(&l, "post_ffw_norm", b, QT__ROLE_SMALL, m->n_embd, 1, 1, true);
    }
    add(&l, "output_norm", -1, QT__ROLE_SMALL, m->n_embd, 1, 1, true);
    if (!m->tie_embeddings) add(&l, "output", -1, QT__ROLE_OUTPUT, m->n_embd, m->n_vocab, 1, false);
    if (l.oom) {
        free(l.t);
        return qt_error(QT_ERR_NOMEM, "%s: out of memory listing tensors", m->key);
    }
    *out = l.t;
    *n = l.n;
    return QT_OK;
}

static uint64_t nelem(const qt__ptensor *t) { return (uint64_t)t->in * (uint64_t)t->out * (uint64_t)t->n_mat; }

qt_status qt_plan_param_counts(const qt_model_spec *m, qt_param_counts *out) {
    memset(out, 0, sizeof *out);
    if (m->kind == QT_SPEC_DIFFUSION) {
        for (int i = 0; i < m->n_components; i++) out->total += m->comp[i].n_params;
        out->linear = out->active = out->total;
        return QT_OK;
    }
    qt__ptensor *t;
    int n;
    qt_status s = qt__plan_tensors(m, &t, &n);
    if (s) return s;
    for (int i = 0; i < n; i++) {
        uint64_t e = nelem(&t[i]);
        out->total += e;
        switch (t[i].role) {
        case QT__ROLE_EMBED: out->embed += e; break;
        case QT__ROLE_OUTPUT: out->lm_head += e; break;
        case QT__ROLE_LINEAR: out->linear += e; break;
        case QT__ROLE_ROUTER: out->router += e; break;
        case QT__ROLE_SMALL: out->small += e; break;
        }
        /* Per token only n_expert_used of n_expert routed experts run. */
        if (t[i].expert) out->active += e / (uint64_t)t[i].n_mat * (uint64_t)m->n_expert_used;
        else if (t[i].role != QT__ROLE_EMBED || m->tie_embeddings) out->active += e;
    }
    free(t);
    return QT_OK;
}

/* ---- llama.cpp's tensor types for a GGUF file type: lib/quant/recipe.c ---------- */

qt_type qt__gguf_tensor_type(const qt_gguf_ftype_info *ft, const qt_model_spec *m, const qt__ptensor *t) {
    const qt__recipe_model rm = {m->arch, m->n_layer, m->n_expert, m->tie_embeddings,
                                 m->n_head_kv > 0 ? m->n_head / m->n_head_kv : 1, false};
    const qt__recipe_tensor rt = {t->name, t->layer, t->role, t->in, t->n_mat};
    return qt__recipe_gguf_type(ft, &rm, &rt);
}

/* ---- bytes per tensor under a scheme ---------------------------------------------- */

static double ceil_div(double a, double b) { return ceil(a / b); }

double qt__tensor_bytes(const qt_scheme_info *s, const qt_model_spec *m, const qt__ptensor *t, double *scale,
                        bool *kept16) {
    const double n = (double)nelem(t);
    const double rows = (double)t->out * (double)t->n_mat; /* output channels over all experts */
    *scale = 0;
    *kept16 = false;
    if (s->kind == QT_SCHEME_GGUF) {
        qt_type ty = qt__gguf_tensor_type(s->gguf, m, t);
        *kept16 = ty == QT_TYPE_F32 || ty == QT_TYPE_F16;
        return (double)qt_row_size(ty, t->in) * rows;
    }
    /* vLLM / bitsandbytes: embeddings, lm_head, norms, biases and routers stay in the
     * model's 16-bit dtype. */
    if (t->role != QT__ROLE_LINEAR || s->kind == QT_SCHEME_FLOAT16) {
        *kept16 = true;
        return 2.0 * n;
    }
    const double in = (double)t->in;
    switch (s->kind) {
    case QT_SCHEME_CHANNEL8:
        *scale = rows * s->scale_bytes;
        return n + *scale;
    case QT_SCHEME_GROUP_INT: {
        /* pack-quantized: int32 words along the row; scales (out, groups); zero points packed
         * along the output dimension (docs/formats.md §4.3); GPTQ's g_idx is one int32 per input. */
        const double groups = s->group ? ceil_div(in, s->group) : 1;
        const double packed = rows * ceil_div(in * s->bits, 32) * 4;
        double extra = rows * groups * s->scale_bytes;
        if (s->zero_bits) extra += (double)t->n_mat * ceil_div((double)t->out * s->zero_bits, 32) * 4 * groups;
        if (s->g_idx) extra += (double)t->n_mat * in * 4;
        *scale = extra;
        return packed + extra;
    }
    case QT_SCHEME_MICROFLOAT: {
        /* e2m1 pairs per byte, one 8-bit block scale per `group`; NVFP4 adds the f32 weight
         * and input global scales per tensor (docs/formats.md §4.3). */
        double extra = rows * ceil_div(in, s->group) * s->scale_bytes;
        if (s->act_float && s->act_bits == 4) extra += 8.0 * (double)t->n_mat;
        *scale = extra;
        return rows * ceil_div(in, 2) + extra;
    }
    case QT_SCHEME_NF4:
        /* bitsandbytes flattens the weight: 4-bit codes plus one f32 absmax per 64 values. */
        *scale = ceil_div(n, s->group) * s->scale_bytes;
        return ceil_div(n, 2) + *scale;
    default:
        *kept16 = true;
        return 2.0 * n;
    }
}
