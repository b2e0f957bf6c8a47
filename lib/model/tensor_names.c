/* lib/model/tensor_names.c — the GGUF <-> HF tensor-name table (docs/formats.md
 * §2.9 GGUF names and ggml shapes, §7.4 HF names; llama.cpp's llama-arch.cpp
 * and convert_hf_to_gguf.py for the correspondence). */
#include <stdio.h>
#include <string.h>

#include "tensor_names.h"

#define E QT_TN_DIM_EMBD
#define V QT_TN_DIM_VOCAB
#define Q QT_TN_DIM_Q
#define KV QT_TN_DIM_KV
#define FF QT_TN_DIM_FF
#define HD QT_TN_DIM_HEAD
#define RH QT_TN_DIM_ROT_HALF
#define NONE QT_TN_DIM_NONE
#define KVS QT_TN_DIM_KV_SCALE

/* Other names vLLM accepts for the KV scales (maybe_remap_kv_scale_name, docs/formats.md §4.8):
 * under the projection, or the legacy single kv_scale used for both K and V. */
static const char *const k_scale_alias[] = {"self_attn.k_proj.k_scale", "self_attn.kv_scale", NULL};
static const char *const v_scale_alias[] = {"self_attn.v_proj.v_scale", "self_attn.kv_scale", NULL};

static const qt_tn_info tn_table[] = {
    /* id (= row index)          place                gguf                   hf                                dims  ne            need               rows            hf_alias */
    [QT_TN_TOKEN_EMBD] =         {QT_TN_BEFORE_LAYERS, "token_embd.weight",   "model.embed_tokens.weight",      2, {E, V},      QT_TN_ALWAYS,      QT_TN_ROWS_PLAIN, NULL},
    /* llama3 rope scaling: llama.cpp's converter generates it from config.json (§7.3); no HF tensor. */
    [QT_TN_ROPE_FREQS] =         {QT_TN_BEFORE_LAYERS, "rope_freqs.weight",   NULL,                             1, {RH, NONE},  QT_TN_OPTIONAL,    QT_TN_ROWS_PLAIN, NULL},
    [QT_TN_ATTN_NORM] =          {QT_TN_PER_LAYER,     "attn_norm.weight",    "input_layernorm.weight",         1, {E, NONE},   QT_TN_ALWAYS,      QT_TN_ROWS_PLAIN, NULL},
    [QT_TN_ATTN_Q] =             {QT_TN_PER_LAYER,     "attn_q.weight",       "self_attn.q_proj.weight",        2, {E, Q},      QT_TN_ALWAYS,      QT_TN_ROWS_Q, NULL},
    [QT_TN_ATTN_Q_BIAS] =        {QT_TN_PER_LAYER,     "attn_q.bias",         "self_attn.q_proj.bias",          1, {Q, NONE},   QT_TN_IF_QKV_BIAS, QT_TN_ROWS_Q, NULL},
    [QT_TN_ATTN_K] =             {QT_TN_PER_LAYER,     "attn_k.weight",       "self_attn.k_proj.weight",        2, {E, KV},     QT_TN_ALWAYS,      QT_TN_ROWS_K, NULL},
    [QT_TN_ATTN_K_BIAS] =        {QT_TN_PER_LAYER,     "attn_k.bias",         "self_attn.k_proj.bias",          1, {KV, NONE},  QT_TN_IF_QKV_BIAS, QT_TN_ROWS_K, NULL},
    [QT_TN_ATTN_V] =             {QT_TN_PER_LAYER,     "attn_v.weight",       "self_attn.v_proj.weight",        2, {E, KV},     QT_TN_ALWAYS,      QT_TN_ROWS_PLAIN, NULL},
    [QT_TN_ATTN_V_BIAS] =        {QT_TN_PER_LAYER,     "attn_v.bias",         "self_attn.v_proj.bias",          1, {KV, NONE},  QT_TN_IF_QKV_BIAS, QT_TN_ROWS_PLAIN, NULL},
    [QT_TN_ATTN_Q_NORM] =        {QT_TN_PER_LAYER,     "attn_q_norm.weight",  "self_attn.q_norm.weight",        1, {HD, NONE},  QT_TN_IF_QK_NORM,  QT_TN_ROWS_PLAIN, NULL},
    [QT_TN_ATTN_K_NORM] =        {QT_TN_PER_LAYER,     "attn_k_norm.weight",  "self_attn.k_norm.weight",        1, {HD, NONE},  QT_TN_IF_QK_NORM,  QT_TN_ROWS_PLAIN, NULL},
    [QT_TN_ATTN_OUTPUT] =        {QT_TN_PER_LAYER,     "attn_output.weight",  "self_attn.o_proj.weight",        2, {Q, E},      QT_TN_ALWAYS,      QT_TN_ROWS_PLAIN, NULL},
    /* Llama's attention_bias also biases o_proj (§7.1). */
    [QT_TN_ATTN_OUTPUT_BIAS] =   {QT_TN_PER_LAYER,     "attn_output.bias",    "self_attn.o_proj.bias",          1, {E, NONE},   QT_TN_OPTIONAL,    QT_TN_ROWS_PLAIN, NULL},
    /* HF's non-persistent rotary buffer in old Llama checkpoints: dropped, as the converter does. */
    [QT_TN_ROTARY_INV_FREQ] =    {QT_TN_PER_LAYER,     NULL,                  "self_attn.rotary_emb.inv_freq",  1, {RH, NONE},  QT_TN_OPTIONAL,    QT_TN_ROWS_PLAIN, NULL},
    [QT_TN_FFN_NORM] =           {QT_TN_PER_LAYER,     "ffn_norm.weight",     "post_attention_layernorm.weight", 1, {E, NONE},  QT_TN_ALWAYS,      QT_TN_ROWS_PLAIN, NULL},
    [QT_TN_FFN_GATE] =           {QT_TN_PER_LAYER,     "ffn_gate.weight",     "mlp.gate_proj.weight",           2, {E, FF},     QT_TN_ALWAYS,      QT_TN_ROWS_PLAIN, NULL},
    [QT_TN_FFN_GATE_BIAS] =      {QT_TN_PER_LAYER,     "ffn_gate.bias",       "mlp.gate_proj.bias",             1, {FF, NONE},  QT_TN_OPTIONAL,    QT_TN_ROWS_PLAIN, NULL},
    [QT_TN_FFN_UP] =             {QT_TN_PER_LAYER,     "ffn_up.weight",       "mlp.up_proj.weight",             2, {E, FF},     QT_TN_ALWAYS,      QT_TN_ROWS_PLAIN, NULL},
    [QT_TN_FFN_UP_BIAS] =        {QT_TN_PER_LAYER,     "ffn_up.bias",         "mlp.up_proj.bias",               1, {FF, NONE},  QT_TN_OPTIONAL,    QT_TN_ROWS_PLAIN, NULL},
    [QT_TN_FFN_DOWN] =           {QT_TN_PER_LAYER,     "ffn_down.weight",     "mlp.down_proj.weight",           2, {FF, E},     QT_TN_ALWAYS,      QT_TN_ROWS_PLAIN, NULL},
    [QT_TN_FFN_DOWN_BIAS] =      {QT_TN_PER_LAYER,     "ffn_down.bias",       "mlp.down_proj.bias",             1, {E, NONE},   QT_TN_OPTIONAL,    QT_TN_ROWS_PLAIN, NULL},
    /* FP8 KV cache scales of compressed-tensors / vLLM checkpoints (docs/formats.md §4.3, §4.8):
     * dequantization multipliers, [] / [1] per tensor or [n_head_kv] per head. quanta's
     * engine reads them (lib/engine/kv.c); llama.cpp has no use for them, so the GGUF
     * writer leaves them out (qt_gguf_write_drops). */
    [QT_TN_ATTN_K_SCALE] =       {QT_TN_PER_LAYER,     "attn_k_scale",        "self_attn.k_scale",              1, {KVS, NONE}, QT_TN_OPTIONAL,    QT_TN_ROWS_PLAIN, k_scale_alias},
    [QT_TN_ATTN_V_SCALE] =       {QT_TN_PER_LAYER,     "attn_v_scale",        "self_attn.v_scale",              1, {KVS, NONE}, QT_TN_OPTIONAL,    QT_TN_ROWS_PLAIN, v_scale_alias},
    [QT_TN_OUTPUT_NORM] =        {QT_TN_AFTER_LAYERS,  "output_norm.weight",  "model.norm.weight",              1, {E, NONE},   QT_TN_ALWAYS,      QT_TN_ROWS_PLAIN, NULL},
    [QT_TN_OUTPUT] =             {QT_TN_AFTER_LAYERS,  "output.weight",       "lm_head.weight",                 2, {E, V},      QT_TN_IF_UNTIED,   QT_TN_ROWS_PLAIN, NULL},
};
static const int32_t tn_count = (int32_t)(sizeof tn_table / sizeof tn_table[0]);
_Static_assert(sizeof tn_table / sizeof tn_table[0] == QT_TN_COUNT, "one row per qt_tn_id");

const qt_tn_info *qt__tn_table(int32_t *n) {
    *n = tn_count;
    return tn_table;
}

const qt_tn_info *qt__tn_row(qt_tn_id id) { return id >= 0 && id < QT_TN_COUNT ? &tn_table[id] : NULL; }

/* "<prefix><decimal>.<rest>": layer number without sign or leading zeros, < 1e6. */
static const char *split_layer(const char *name, const char *prefix, int32_t *layer) {
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl)) return NULL;
    const char *p = name + pl;
    if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] != '.')) return NULL;
    int32_t v = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (++digits > 6) return NULL;
        v = v * 10 + (*p - '0');
    }
    if (*p != '.') return NULL;
    *layer = v;
    return p + 1;
}

static const qt_tn_info *lookup(const char *name, int32_t *layer, bool hf) {
    const char *prefix = hf ? QT_TN_HF_LAYER_PREFIX : QT_TN_GGUF_LAYER_PREFIX;
    int32_t l = -1;
    const char *suffix = split_layer(name, prefix, &l);
    for (int32_t i = 0; i < tn_count; i++) {
        const qt_tn_info *ti = &tn_table[i];
        const char *n = hf ? ti->hf : ti->gguf;
        if (!n) continue;
        bool per_layer = ti->place == QT_TN_PER_LAYER;
        if (per_layer && suffix && !strcmp(suffix, n)) { *layer = l; return ti; }
        if (!per_layer && !strcmp(name, n)) { *layer = -1; return ti; }
    }
    /* HF aliases (per-layer only): the first row naming one wins, so the legacy
     * kv_scale, an alias of both K and V, looks up as K. */
    for (int32_t i = 0; hf && suffix && i < tn_count; i++) {
        const qt_tn_info *ti = &tn_table[i];
        for (const char *const *a = ti->hf_alias; a && *a; a++)
            if (ti->place == QT_TN_PER_LAYER && !strcmp(suffix, *a)) { *layer = l; return ti; }
    }
    return NULL;
}

const qt_tn_info *qt__tn_from_hf(const char *name, int32_t *layer) { return lookup(name, layer, true); }
const qt_tn_info *qt__tn_from_gguf(const char *name, int32_t *layer) { return lookup(name, layer, false); }

static bool format_name(const qt_tn_info *ti, const char *n, const char *prefix, int32_t layer, char *buf, size_t cap) {
    if (!n) return false;
    int w = ti->place == QT_TN_PER_LAYER ? snprintf(buf, cap, "%s%d.%s", prefix, layer, n) : snprintf(buf, cap, "%s", n);
    return w >= 0 && (size_t)w < cap;
}

bool qt__tn_gguf_name(const qt_tn_info *ti, int32_t layer, char *buf, size_t cap) {
    return format_name(ti, ti->gguf, QT_TN_GGUF_LAYER_PREFIX, layer, buf, cap);
}

bool qt__tn_hf_name(const qt_tn_info *ti, int32_t layer, char *buf, size_t cap) {
    return format_name(ti, ti->hf, QT_TN_HF_LAYER_PREFIX, layer, buf, cap);
}

int64_t qt__tn_dim(qt_tn_dim d, const qt_hparams *hp) {
    switch (d) {
    case QT_TN_DIM_EMBD: return hp->n_embd;
    case QT_TN_DIM_VOCAB: return hp->n_vocab;
    case QT_TN_DIM_Q: return (int64_t)hp->n_head * hp->head_dim;
    case QT_TN_DIM_KV: return (int64_t)hp->n_head_kv * hp->head_dim;
    case QT_TN_DIM_FF: return hp->n_ff;
    case QT_TN_DIM_HEAD: return hp->head_dim;
    case QT_TN_DIM_ROT_HALF: return hp->n_rot / 2;
    case QT_TN_DIM_KV_SCALE: return hp->n_head_kv;
    case QT_TN_DIM_NONE: break;
    }
    return 1;
}

bool qt__tn_dim_ok(qt_tn_dim d, const qt_hparams *hp, int64_t n) {
    if (d == QT_TN_DIM_KV_SCALE) return n == 1 || n == hp->n_head_kv;
    return n == qt__tn_dim(d, hp);
}

bool qt__tn_required(const qt_tn_info *ti, const qt_hparams *hp) {
    switch (ti->need) {
    case QT_TN_ALWAYS: return true;
    case QT_TN_IF_UNTIED: return !hp->tie_embeddings;
    case QT_TN_IF_QKV_BIAS: return hp->attn_qkv_bias;
    case QT_TN_IF_QK_NORM: return hp->attn_qk_norm;
    case QT_TN_OPTIONAL: break;
    }
    return false;
}

int64_t qt__tn_permuted_row(int64_t r, int64_t head_dim, bool to_pairs) {
    int64_t h = r / head_dim, i = r % head_dim, half = head_dim / 2;
    if (to_pairs) /* pairs row h*hd + 2j + s comes from rotate-half row h*hd + s*hd/2 + j */
        return h * head_dim + (i % 2) * half + i / 2;
    /* rotate-half row h*hd + s*hd/2 + j comes from pairs row h*hd + 2j + s */
    return h * head_dim + 2 * (i % half) + i / half;
}
