/* lib/io/check.c — does the tensor table match the hyperparameters?
 *
 * llama.cpp refuses a model whose tensors are missing or have another shape
 * than the hyperparameters imply ("wrong shape", formats.md §2.9); we check
 * the same at load time so every consumer can trust the table. Expected
 * shapes are ggml-ordered: [row length, rows].
 */
#include <inttypes.h>
#include <stdio.h>

#include "io_internal.h"
#include "model/arch.h"

static qt_status expect(qt_model *m, const char *name, bool required, int64_t ne0, int64_t ne1, int n_dims,
                        const qt_tensor **out) {
    const qt_tensor *t = qt_model_find_tensor(m, name);
    if (out) *out = t;
    if (!t) {
        if (!required) return QT_OK;
        return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': missing (required by architecture '%s')", m->path, name,
                        m->hp.arch_name);
    }
    int64_t nel = qt__tensor_nelements(t);
    bool ok = t->ne[0] == ne0 && (n_dims == 1 ? nel == ne0 : (t->ne[1] == ne1 && nel == ne0 * ne1));
    if (!ok) {
        if (n_dims == 1)
            return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': shape [%" PRId64 ", %" PRId64 "], expected [%" PRId64 "]",
                            m->path, name, t->ne[0], t->ne[1], ne0);
        return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': shape [%" PRId64 ", %" PRId64 "], expected [%" PRId64 ", %" PRId64 "]",
                        m->path, name, t->ne[0], t->ne[1], ne0, ne1);
    }
    return QT_OK;
}

qt_status qt__model_check_tensors(qt_model *m) {
    qt_hparams *hp = &m->hp;
    const qt_arch_info *ai = qt__arch_info(hp->arch);
    if (!ai) return QT_OK;
    const int64_t E = hp->n_embd, V = hp->n_vocab, F = hp->n_ff, HD = hp->head_dim;
    const int64_t Q = (int64_t)hp->n_head * HD, KV = (int64_t)hp->n_head_kv * HD;
    const qt_tensor *out_t;
    qt_status s;
    if ((s = expect(m, "token_embd.weight", true, E, V, 2, NULL)) != QT_OK) return s;
    if ((s = expect(m, "output_norm.weight", true, E, 0, 1, NULL)) != QT_OK) return s;
    if ((s = expect(m, "output.weight", false, E, V, 2, &out_t)) != QT_OK) return s;
    hp->tie_embeddings = out_t == NULL;
    if ((s = expect(m, "rope_freqs.weight", false, hp->n_rot / 2, 0, 1, NULL)) != QT_OK) return s;

    char name[QT_MAX_NAME];
#define T(suffix, req, a, b, nd)                                                   \
    do {                                                                            \
        snprintf(name, sizeof name, "blk.%d." suffix, layer);                       \
        if ((s = expect(m, name, (req), (a), (b), (nd), NULL)) != QT_OK) return s;  \
    } while (0)
    /* Biases and q/k norms: required where the architecture has them
     * (formats.md §2.7); llama may carry biases (attention_bias), checked if present. */
    snprintf(name, sizeof name, "blk.0.attn_q.bias");
    hp->attn_qkv_bias = ai->qkv_bias || qt_model_find_tensor(m, name) != NULL;
    hp->attn_qk_norm = ai->qk_norm;
    for (int layer = 0; layer < hp->n_layer; layer++) {
        T("attn_norm.weight", true, E, 0, 1);
        T("attn_q.weight", true, E, Q, 2);
        T("attn_k.weight", true, E, KV, 2);
        T("attn_v.weight", true, E, KV, 2);
        T("attn_output.weight", true, Q, E, 2);
        T("ffn_norm.weight", true, E, 0, 1);
        T("ffn_gate.weight", true, E, F, 2);
        T("ffn_up.weight", true, E, F, 2);
        T("ffn_down.weight", true, F, E, 2);
        T("attn_q.bias", hp->attn_qkv_bias, Q, 0, 1);
        T("attn_k.bias", hp->attn_qkv_bias, KV, 0, 1);
        T("attn_v.bias", hp->attn_qkv_bias, KV, 0, 1);
        T("attn_q_norm.weight", ai->qk_norm, HD, 0, 1);
        T("attn_k_norm.weight", ai->qk_norm, HD, 0, 1);
    }
#undef T
    return QT_OK;
}
