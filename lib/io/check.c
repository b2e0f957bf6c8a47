/* lib/io/check.c — does the tensor table match the hyperparameters?
 *
 * llama.cpp refuses a model whose tensors are missing or have another shape
 * than the hyperparameters imply ("wrong shape", docs/formats.md §2.9); we check
 * the same at load time so every consumer can trust the table. What a model
 * holds, and in which shape, is the data of lib/model/tensor_names.c (the
 * same rows the HF reader and writer use); this file only walks it. Shapes
 * are ggml-ordered: [row length, rows].
 */
#include <inttypes.h>
#include <stdio.h>

#include "io_internal.h"
#include "model/arch.h"
#include "model/tensor_names.h"

static bool shape_ok(const qt_tn_info *ti, const qt_hparams *hp, const qt_tensor *t) {
    const int64_t nel = qt__tensor_nelements(t);
    if (ti->n_dims == 1) return nel == t->ne[0] && qt__tn_dim_ok(ti->ne[0], hp, t->ne[0]);
    return t->ne[0] == qt__tn_dim(ti->ne[0], hp) && t->ne[1] == qt__tn_dim(ti->ne[1], hp) && nel == t->ne[0] * t->ne[1];
}

static qt_status check_one(const qt_model *m, const qt_tn_info *ti, const char *name) {
    const qt_hparams *hp = &m->hp;
    const qt_tensor *t = qt_model_find_tensor(m, name);
    if (!t) {
        if (!qt__tn_required(ti, hp)) return QT_OK;
        return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': missing (required by architecture '%s')", m->path, name,
                        hp->arch_name);
    }
    if (shape_ok(ti, hp, t)) return QT_OK;
    const int64_t e0 = qt__tn_dim(ti->ne[0], hp);
    if (ti->n_dims == 1)
        return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': shape [%" PRId64 ", %" PRId64 "], expected [%" PRId64 "]%s",
                        m->path, name, t->ne[0], t->ne[1], e0, ti->ne[0] == QT_TN_DIM_KV_SCALE ? " or [1]" : "");
    return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': shape [%" PRId64 ", %" PRId64 "], expected [%" PRId64 ", %" PRId64 "]",
                    m->path, name, t->ne[0], t->ne[1], e0, qt__tn_dim(ti->ne[1], hp));
}

qt_status qt__model_check_tensors(qt_model *m) {
    qt_hparams *hp = &m->hp;
    const qt_arch_info *ai = qt__arch_info(hp->arch);
    if (!ai) return QT_OK;
    /* The flags the table's "required" column reads, as the file shows them: a
     * missing output.weight means tied embeddings; biases and q/k norms are
     * required where the architecture has them (docs/formats.md §2.7), and llama
     * may carry biases (attention_bias), checked when present. */
    hp->tie_embeddings = qt_model_find_tensor(m, "output.weight") == NULL;
    hp->attn_qkv_bias = ai->qkv_bias || qt_model_find_tensor(m, "blk.0.attn_q.bias") != NULL;
    hp->attn_qk_norm = ai->qk_norm;

    int32_t n;
    const qt_tn_info *table = qt__tn_table(&n);
    char name[QT_MAX_NAME];
    for (int32_t i = 0; i < n; i++) {
        const qt_tn_info *ti = &table[i];
        if (!ti->gguf) continue; /* HF-only rows (dropped buffers) */
        const int32_t layers = ti->place == QT_TN_PER_LAYER ? hp->n_layer : 1;
        for (int32_t layer = 0; layer < layers; layer++) {
            if (!qt__tn_gguf_name(ti, layer, name, sizeof name)) continue;
            const qt_status s = check_one(m, ti, name);
            if (s != QT_OK) return s;
        }
    }
    return QT_OK;
}
