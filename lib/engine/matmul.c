/* lib/engine/matmul.c — y = W x for a batch of B activation rows, with W in
 * its stored format.
 *
 * Work is split across threads by output rows (qt_parallel_for). Each row of
 * W is touched once per call and met with all B activation rows, so prefill
 * is matrix-matrix: with activation quantization on, the B rows are first
 * converted to the row type's vec_dot_type (llama.cpp: ggml_compute_forward_mul_mat
 * converts src1 with from_float of vec_dot_type, then vec_dot per pair);
 * otherwise each weight row is dequantized once into per-thread scratch and
 * dotted in f32 with every activation row.
 *
 * Like llama.cpp, the float order depends on the batch: llamafile_sgemm
 * (tinyBLAS) takes f32/f16 products with two or more activation rows when the
 * weights have a multiple of 4 rows (and rows a multiple of 16 elements, which
 * the kernel checks), ggml_vec_dot the rest. The two orders round differently
 * in the last bit, so a token decoded alone need not give the bits it gets in
 * a batch, in llama.cpp and here alike. With several sequences in one batch
 * (batch.c) the choice is made per activation row (e->gemm_rows): a row takes
 * the kernel its sequence would get evaluated alone, so sequences never change
 * each other's bits.
 */
#include <stdio.h>
#include <string.h>

#include "quant/dot.h"
#include "engine_internal.h"

qt_status qt__mat_init(qt__mat *m, const qt_tensor *t, bool act_quant) {
    memset(m, 0, sizeof *m);
    m->t = t;
    m->tr = qt_type_get(t->type);
    if (!m->tr) return qt_error(QT_ERR_UNSUPPORTED, "tensor '%s': unknown type id %d", t->name, (int)t->type);
    m->data = t->data;
    m->n_in = t->ne[0];
    m->n_out = t->ne[1];
    m->row_bytes = qt_row_size(t->type, m->n_in);
    if (m->row_bytes == 0) {
        char why[256];
        snprintf(why, sizeof why, "%s", qt_last_error());
        return qt_error(QT_ERR_SHAPE, "tensor '%s': %s", t->name, why);
    }
    if ((size_t)m->n_out * m->row_bytes > t->nbytes)
        return qt_error(QT_ERR_SHAPE, "tensor '%s': %zu bytes of data, shape needs %zu", t->name, t->nbytes,
                        (size_t)m->n_out * m->row_bytes);

    const qt_type vt = m->tr->vec_dot_type;
    const qt_type_traits *vtr = qt_type_get(vt);
    const bool can_vec_dot = m->tr->vec_dot && vtr && qt__act_type_supported(vt) && m->n_in % vtr->block_elems == 0;
    if (can_vec_dot && (act_quant || t->type == QT_TYPE_F32)) {
        m->act_type = vt;
        m->dot = m->tr->vec_dot;
        m->dot_batch = m->tr->vec_dot_gemm;
        m->dequant_rows = false;
    } else {
        if (!m->tr->to_float)
            return qt_error(QT_ERR_UNSUPPORTED, "tensor '%s': type %s has no dequantizer%s", t->name, m->tr->name,
                            m->tr->vec_dot ? " and no usable dot kernel" : "");
        m->act_type = QT_TYPE_F32;
        m->dot = qt_type_get(QT_TYPE_F32)->vec_dot;
        m->dot_batch = qt_type_get(QT_TYPE_F32)->vec_dot_gemm;
        m->dequant_rows = t->type != QT_TYPE_F32;
    }
    if (!m->dot_batch || m->n_out % 4 != 0) m->dot_batch = m->dot;
    m->act_row_bytes = qt_row_size(m->act_type, m->n_in);
    return QT_OK;
}

typedef struct matmul_job {
    qt_engine_ctx *e;
    const qt__mat *m;
    float *out;                 /* (B, n_out) */
    const void *act;            /* (B, act_row_bytes) */
    int32_t B;
} matmul_job;

static void matmul_rows(void *ctx, int64_t r0, int64_t r1, int ti) {
    const matmul_job *j = ctx;
    const qt__mat *m = j->m;
    float *row = j->e->scratch[ti].row;
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *w = m->data + (size_t)r * m->row_bytes;
        if (m->dequant_rows) {
            m->tr->to_float(w, row, m->n_in);
            w = (const uint8_t *)row;
        }
        const uint8_t *a = j->act, *gemm = j->e->gemm_rows;
        for (int32_t b = 0; b < j->B; b++, a += m->act_row_bytes) {
            const qt_vec_dot_fn dot = (gemm ? gemm[b] : j->B >= 2) ? m->dot_batch : m->dot;
            j->out[(size_t)b * m->n_out + r] = dot(w, a, m->n_in);
        }
    }
}

void qt__matmul(qt_engine_ctx *e, float *out, const float *in, int32_t B, const qt__mat *m) {
    const void *act = in;
    if (m->act_type != QT_TYPE_F32) {
        uint8_t *dst = e->act;
        for (int32_t b = 0; b < B; b++) qt__act_quantize(m->act_type, in + (size_t)b * m->n_in, dst + (size_t)b * m->act_row_bytes, m->n_in);
        act = e->act;
    }
    matmul_job j = {e, m, out, act, B};
    /* below ~32k multiply-adds waking the pool costs more than it saves */
    const bool small = (int64_t)B * m->n_out * m->n_in < 32768;
    qt_parallel_for(small ? NULL : e->pool, m->n_out, matmul_rows, &j);
}
