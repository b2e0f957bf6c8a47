/* Round trips through the writers: stories260K.gguf -> HF directory -> GGUF
 * restores every tensor byte for byte (Q/K un-permuted on the way out and
 * re-permuted on the way back, docs/formats.md §2.10) and the vocabulary; the
 * intermediate HF Q/K rows really are in rotate-half order. */
#include "io/io_internal.h"
#include "qtest.h"
#include "quanta.h"

static void test_gguf_hf_gguf_restores_tensors(void) {
    qt_model *src, *hf, *back;
    CHECK_OK(qt_model_open(qt_test_shared("models/stories260K.gguf"), &src));
    if (!src) return;
    char dir[600], out[600];
    snprintf(dir, sizeof dir, "%s/hf", qt_test_tmpdir());
    snprintf(out, sizeof out, "%s/back.gguf", qt_test_tmpdir());
    CHECK_OK(qt_hf_write(src, dir, NULL));
    CHECK_OK(qt_model_open(dir, &hf));
    if (!hf) { qt_model_free(src); return; }
    CHECK(qt_model_hparams(hf)->rope_neox);

    /* The HF copy holds rotate-half rows: HF row r is GGUF row gguf_row_for_hf_row(r). */
    const qt_tensor *gq = qt_model_find_tensor(src, "blk.2.attn_k.weight"), *hq = qt_model_find_tensor(hf, "blk.2.attn_k.weight");
    CHECK(gq && hq);
    if (gq && hq) {
        CHECK(memcmp(gq->data, hq->data, gq->nbytes) != 0);
        int64_t row = gq->ne[0] * 4, hd = qt_model_hparams(src)->head_dim, bad = 0;
        for (int64_t r = 0; r < gq->ne[1]; r++)
            bad += memcmp((const char *)hq->data + r * row, (const char *)gq->data + qt__qk_gguf_row_for_hf_row(r, hd) * row, (size_t)row) != 0;
        CHECK_EQ_INT(bad, 0);
    }

    CHECK_OK(qt_gguf_write(hf, out, NULL));
    CHECK_OK(qt_model_open(out, &back));
    if (back) {
        CHECK_EQ_INT(qt_model_n_tensors(back), qt_model_n_tensors(src));
        int same = 0;
        for (int32_t i = 0; i < qt_model_n_tensors(src); i++) {
            const qt_tensor *a = qt_model_tensor(src, i), *b = qt_model_find_tensor(back, a->name);
            CHECK_MSG(b != NULL, "%s missing after the round trip", a->name);
            if (!b) continue;
            bool eq = a->type == b->type && a->nbytes == b->nbytes && !memcmp(a->ne, b->ne, sizeof a->ne) &&
                      !memcmp(a->data, b->data, a->nbytes);
            CHECK_MSG(eq, "tensor %s differs after GGUF -> HF -> GGUF", a->name);
            same += eq;
        }
        CHECK_EQ_INT(same, 48);
        const qt_vocab *va = qt_model_vocab(src), *vb = qt_model_vocab(back);
        CHECK_EQ_INT(vb->n_tokens, va->n_tokens);
        int diff = 0;
        for (int32_t i = 0; i < va->n_tokens && i < vb->n_tokens; i++)
            diff += strcmp(va->tokens[i], vb->tokens[i]) != 0 || va->token_types[i] != vb->token_types[i] ||
                    va->scores[i] != vb->scores[i];
        CHECK_EQ_INT(diff, 0);
        CHECK_EQ_INT(vb->bos_id, 1);
        CHECK_EQ_INT(vb->eos_id, 2);
        const qt_hparams *ha = qt_model_hparams(src), *hb = qt_model_hparams(back);
        CHECK_EQ_INT(hb->n_ctx_train, ha->n_ctx_train);
        CHECK_EQ_INT(hb->n_head_kv, ha->n_head_kv);
        CHECK(!hb->rope_neox);
        qt_model_free(back);
    }
    qt_model_free(hf);
    qt_model_free(src);
}

/* HF -> GGUF with --outtype f16: the permutation and the conversion commute
 * (row permutation, element-wise conversion). */
static void test_hf_to_gguf_f16(void) {
    qt_model *src, *hf, *h16;
    CHECK_OK(qt_model_open(qt_test_shared("models/stories260K.gguf"), &src));
    if (!src) return;
    char dir[600], out[600];
    snprintf(dir, sizeof dir, "%s/hf16", qt_test_tmpdir());
    snprintf(out, sizeof out, "%s/h16.gguf", qt_test_tmpdir());
    CHECK_OK(qt_hf_write(src, dir, NULL));
    CHECK_OK(qt_model_open(dir, &hf));
    qt_gguf_write_opts o = qt_gguf_write_opts_default();
    o.outtype = QT_TYPE_F16;
    if (hf) CHECK_OK(qt_gguf_write(hf, out, &o));
    CHECK_OK(qt_model_open(out, &h16));
    if (h16) {
        const qt_tensor *a = qt_model_find_tensor(src, "blk.0.attn_q.weight"), *b = qt_model_find_tensor(h16, "blk.0.attn_q.weight");
        CHECK(a && b && b->type == QT_TYPE_F16);
        int bad = 0;
        for (int64_t j = 0; a && b && j < a->ne[0] * a->ne[1]; j++)
            bad += ((const uint16_t *)b->data)[j] != qt_f32_to_fp16(((const float *)a->data)[j]);
        CHECK_EQ_INT(bad, 0);
        CHECK_EQ_INT(qt_model_find_tensor(h16, "blk.0.attn_norm.weight")->type, QT_TYPE_F32);
        qt_model_free(h16);
    }
    qt_model_free(hf);
    qt_model_free(src);
}

int main(void) {
    QT_RUN(test_gguf_hf_gguf_restores_tensors);
    QT_RUN(test_hf_to_gguf_f16);
    return qt_test_finish("test_convert_roundtrip");
}
