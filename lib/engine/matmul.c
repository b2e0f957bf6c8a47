/* lib/engine/matmul.c — y = W x for a batch of B activation rows, with W in
 * its stored format.
 *
 * With activation quantization on, the B rows are first converted to the row
 * type's vec_dot_type (llama.cpp: ggml_compute_forward_mul_mat converts src1
 * with from_float of vec_dot_type, then vec_dot per pair); otherwise each
 * weight row is dequantized once into per-thread scratch and dotted in f32
 * with every activation row.
 *
 * Quantized rows with a blocked kernel (lib/quant/gemm.h: q8_0, q4_0, q4_K,
 * q6_K) go through it for decode (B = 1: several rows share each activation
 * load; not q4_K/q6_K, whose vec_dot bench_gemm measured faster for one row)
 * and prefill (tiles of rows x activations share every load): its bits
 * are vec_dot's for every element, so the engine's results are the same with
 * and without it. With --numerics fast a type may instead take a kernel in
 * its own float order (gemm_fast: AVX-512 q8_0/q4_0, two blocks per vector;
 * q2_K..q6_K and iq4_xs, lib/quant/gemm_k.h; f16/bf16, lib/quant/gemm_f16.h), from one
 * activation row on, the same at every batch size and thread count but not
 * llama.cpp's bits.
 * Where the CPU level has an x16 kernel (q4_0, q4_1, q5_0, q5_1, iq4_nl, q8_0: gemm.h) fast mode packs
 * the rows once, here at load, into groups of 16 rows with their scales
 * side by side, and every matmul (decode and prefill) streams that copy with
 * q8s activations (f32 scale and code sum per block); Q4_K, Q5_K and Q6_K where
 * the level has a k16 kernel are packed the same way (lib/quant/gemm_k16.h) and
 * keep their Q8_K activations and gemm_fast's bits. The caller may then drop
 * the file's pages (qt__mat_drop_source) so resident memory stays the weights'.
 * Other types loop over vec_dot / vec_dot_gemm per element.
 * Weight-only compressed-tensors 4-bit rows (lib/quant/ct4.h) take f32
 * activations: one activation row runs their fused dots on the packed rows,
 * a batch runs their blocked kernel (tiles of rows x activations decoded once
 * per tile, each element in tinyBLAS's order) or, without one (scalar level, a
 * multi-sequence batch, rows not a multiple of 4), dequantizes each row once
 * into scratch; all give the bits of the f32 dots on the dequantized weights,
 * i.e. of the old dequantize-on-load path. A calibration may instead send the
 * batches of f32 values it binds through sgemm (m->blas, matmul_blas.c).
 *
 * Work is split across threads by fixed units of MATMUL_ROW_UNIT output rows
 * (qt_parallel_for_balanced hands each thread a contiguous range of units,
 * claimed a few at a time, and a thread that is done takes what a late one
 * has not begun); every output element is computed by the same code whatever
 * the split, so results do not depend on the thread count or on who ran what.
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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bigalloc.h"
#include "quant/ct4.h"
#include "quant/ct_rows.h"
#include "quant/dot.h"
#include "quant/gemm.h"
#include "quant/gemm_f16.h"
#include "quant/gemm_k16.h"
#include "engine_internal.h"
#include "model/model_internal.h"

/* The x16 copy (lib/quant/gemm.h) of a type that has one at this CPU's level:
 * packed once here, then every matmul streams it. */
typedef struct pack_job {
    const qt__mat *m;
    bool k16;
    int64_t g_base;             /* the slice's first group */
} pack_job;

static void pack_groups(void *ctx, int64_t g0, int64_t g1, int ti) {
    (void)ti;
    const pack_job *j = ctx;
    const qt__mat *m = j->m;
    g0 += j->g_base;
    g1 += j->g_base;
    if (j->k16) qt__k16_pack_groups(m->t->type, m->data, m->row_bytes, m->n_out, m->n_in, m->x16_data, g0, g1);
    else qt__x16_pack_groups(m->t->type, m->data, m->row_bytes, m->n_out, m->n_in, m->x16_data, g0, g1);
}

/* Groups packed between page drops: 64 x 16 rows (about 1.7 MB of a 2048-wide Q6_K matrix). */
#define PACK_SLICE_GROUPS 64

/* The packed copy, groups split over the pool's threads (NULL: this thread); each
 * group's bytes are its rows' whatever the split. With drop_from set, each slice's source
 * pages are dropped as soon as it is packed, so the copy never sits beside the whole
 * source (peak RSS: weights + one slice, not weights + the largest matrix). */
static void pack_all(qt__mat *m, bool k16, qt_threadpool *pool, const qt_model *drop_from) {
    const int64_t ng = (m->n_out + QT_X16_ROWS - 1) / QT_X16_ROWS;
    for (int64_t g = 0; g < ng; g += PACK_SLICE_GROUPS) {
        const int64_t n = ng - g < PACK_SLICE_GROUPS ? ng - g : PACK_SLICE_GROUPS;
        pack_job j = {m, k16, g};
        qt_parallel_for(pool, n, pack_groups, &j);
        if (!drop_from) continue;
        const int64_t r0 = g * QT_X16_ROWS, r1 = (g + n) * QT_X16_ROWS < m->n_out ? (g + n) * QT_X16_ROWS : m->n_out;
        qt__model_drop_pages(drop_from, m->data + (size_t)r0 * m->row_bytes, (size_t)(r1 - r0) * m->row_bytes);
    }
}

static qt_status mat_pack(qt__mat *m, qt_threadpool *pool, const qt_model *drop_from) {
    const qt_type t = m->t->type;
    const bool k16 = !qt__gemm_x16_kernel(t) && qt__gemm_k16_kernel(t) && qt__k16_bytes(t, m->n_out, m->n_in);
    const size_t bytes = k16 ? qt__k16_bytes(t, m->n_out, m->n_in) : qt__x16_bytes(t, m->n_out, m->n_in);
    if (!(k16 || qt__gemm_x16_kernel(t)) || !bytes) return QT_OK;
    m->x16_data = qt__weights_alloc(bytes);
    if (!m->x16_data)
        return qt_error(QT_ERR_NOMEM, "tensor '%s': out of memory packing %zu bytes of rows", m->t->name, bytes);
    if (k16) {
        /* Q8_K activations as for gemm_fast, whose bits these are (gemm_k16.h) */
        pack_all(m, true, pool, drop_from);
        m->x16 = qt__gemm_k16_kernel(t);
        m->x16_group = qt__k16_group_bytes(t, m->n_in);
        m->gemm = NULL;
        m->own_order = true;
        return QT_OK;
    }
    pack_all(m, false, pool, drop_from);
    m->x16 = qt__gemm_x16_kernel(t);
    m->act_q8s = true;
    m->x16_group = qt__x16_group_bytes(t, m->n_in);
    m->act_row_bytes = (size_t)(m->n_in / 32) * sizeof(qt__block_q8s);
    m->gemm = NULL;
    m->own_order = true;
    return QT_OK;
}

/* Bytes copied between page drops: whole huge pages, few enough that the copy never sits
 * beside much of the source. */
#define COPY_SLICE_BYTES ((size_t)8 << 20)

/* F16 / BF16 rows the kernels stream as stored: copied once into a huge-page buffer
 * (lib/core/bigalloc.h), the file's pages dropped slice by slice as they are copied, so
 * decode streams 2 MiB pages, not the file mapping's 4 KiB ones (docs/performance.md,
 * "F16 rows in huge pages"). Only for tensors in a file mapping of drop_from (peak RSS stays
 * the weights' plus one slice) and while memory allows (qt__weights_copy_fits: a model larger
 * than memory stays mapped); QUANTA_WEIGHTS_COPY=0 keeps the mapping, and so does an engine
 * made with keep_mapped (GPTQ's layer-by-layer run, which drops each layer's pages once done:
 * a copy would hold every layer at once). */
static qt_status mat_copy_rows(qt__mat *m, const qt_model *drop_from) {
    const size_t n = (size_t)m->n_out * m->row_bytes;
    const qt_type t = m->t->type;
    if ((t != QT_TYPE_F16 && t != QT_TYPE_BF16) || !drop_from || n < QT__WEIGHTS_HUGE_MIN ||
        !qt__model_in_map(drop_from, m->data, n))
        return QT_OK;
    const char *env = getenv("QUANTA_WEIGHTS_COPY");
    if (env && strcmp(env, "0") == 0) return QT_OK;
    if (!qt__weights_copy_fits(n)) return QT_OK; /* tight memory: the mapping's pages can be evicted */
    m->own_data = qt__weights_alloc(n);
    if (!m->own_data) return qt_error(QT_ERR_NOMEM, "tensor '%s': out of memory copying %zu bytes of rows", m->t->name, n);
    for (size_t o = 0; o < n; o += COPY_SLICE_BYTES) {
        const size_t k = n - o < COPY_SLICE_BYTES ? n - o : COPY_SLICE_BYTES;
        memcpy(m->own_data + o, m->data + o, k);
        qt__model_drop_pages(drop_from, m->data + o, k);
    }
    m->data = m->own_data;
    return QT_OK;
}

qt_status qt__mat_init(qt__mat *m, const qt_tensor *t, bool act_quant, qt_numerics numerics) {
    return qt__mat_init_pool(m, t, act_quant, numerics, NULL, NULL, false);
}

qt_status qt__mat_init_pool(qt__mat *m, const qt_tensor *t, bool act_quant, qt_numerics numerics, qt_threadpool *pool,
                            const qt_model *drop_from, bool copy_f16) {
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

    if (m->tr->engine_only && m->n_in > QT_CT_ROW_MAX_N)
        return qt_error(QT_ERR_SHAPE, "tensor '%s': rows of %lld elements; W8A8 rows are exact up to %d", t->name,
                        (long long)m->n_in, QT_CT_ROW_MAX_N);
    qt_status cs = copy_f16 ? mat_copy_rows(m, drop_from) : QT_OK;
    if (cs != QT_OK) return cs;
    /* fp8-static: every row of a CT_F8 weight carries the checkpoint's input_scale (0: dynamic) */
    if (t->type == QT_TYPE_CT_F8 && m->n_out > 0) m->act_static_scale = qt__ct_hdr(m->data, 1);
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
    /* weight-only packed rows: f32 activations whatever act_quant says (their semantics) */
    if (m->tr->engine_only && vt == QT_TYPE_F32 && m->tr->vec_dot && m->tr->to_float) {
        m->act_type = QT_TYPE_F32;
        m->dot = qt_type_get(QT_TYPE_F32)->vec_dot;
        m->dot_batch = qt_type_get(QT_TYPE_F32)->vec_dot_gemm;
        m->dequant_rows = true;
        m->fused_dot = m->tr->vec_dot;
        m->fused_dot_batch = m->tr->vec_dot_gemm;
        if (!m->dot_batch || !m->fused_dot_batch || m->n_out % 4 != 0) m->fused_dot_batch = m->fused_dot;
        /* a blocked kernel in vec_dot_gemm's order (ct4_avx*.c) for batches taking that order */
        if (m->fused_dot_batch == m->tr->vec_dot_gemm && m->fused_dot_batch != m->fused_dot) {
            m->gemm = qt__gemm_kernel(t->type);
            m->gemm_min_batch = 2;
        }
        /* --numerics fast with activation quantization on: int8 activations per group and integer
         * dots (ct4.h), every batch; --act-quant off keeps them f32 */
        qt__gemm_fn fast = qt__gemm_kernel_fast(t->type);
        if (numerics == QT_NUMERICS_FAST && act_quant && fast && fast != qt__gemm_kernel(t->type) &&
            m->n_in % QT_CT4_Q8_GROUP == 0) {
            m->gemm = fast;
            m->gemm_min_batch = 1;
            m->own_order = true;
            m->fused_dot = m->fused_dot_batch = NULL;
            m->act_ct4_q8 = true;
            m->act_row_bytes = qt__ct4_q8_row_size(m->n_in);
            return QT_OK;
        }
    }
    if (!m->dot_batch || m->n_out % 4 != 0) m->dot_batch = m->dot;
    if (!m->dequant_rows && m->act_type == vt) {
        m->gemm = qt__gemm_kernel(t->type);
        m->gemm_min_batch = qt__gemm_min_batch(t->type);
        if (numerics == QT_NUMERICS_FAST && qt__gemm_kernel_fast(t->type) != m->gemm) {
            m->gemm = qt__gemm_kernel_fast(t->type);
            m->gemm_min_batch = 1;
            m->own_order = true;
        }
        /* F16 under fast: the same order on activations rounded to f16 once but kept as f32, so the
         * kernel converts only weight vectors (gemm_f16.h) */
        if (m->own_order && qt__gemm_kernel_fast_a32(t->type) && m->n_in % 16 == 0) {
            m->gemm = qt__gemm_kernel_fast_a32(t->type);
            m->act_f16_f32 = true;
            m->act_row_bytes = (size_t)m->n_in * sizeof(float);
            return QT_OK;
        }
    }
    m->act_row_bytes = qt_row_size(m->act_type, m->n_in);
    if (numerics == QT_NUMERICS_FAST && !m->dequant_rows && m->act_type == vt) return mat_pack(m, pool, drop_from);
    return QT_OK;
}

void qt__mat_free(qt__mat *m) {
    qt__weights_free(m->x16_data);
    qt__weights_free(m->own_data);
    memset(m, 0, sizeof *m);
}

void qt__mat_drop_source(const qt__mat *m, const qt_model *model) {
    if (m->x16_data) qt__model_drop_pages(model, m->data, (size_t)m->n_out * m->row_bytes);
}

/* Output rows per unit of work: a multiple of every gemm tile's row count,
 * few enough units per thread to balance (2048 rows: 128 units). */
#define MATMUL_ROW_UNIT 16
_Static_assert(MATMUL_ROW_UNIT % QT_X16_ROWS == 0, "a unit of rows is whole x16 groups");

typedef struct matmul_job {
    qt_engine_ctx *e;
    const qt__mat *m;
    float *out;                 /* (B, n_out) */
    const void *act;            /* (B, act_row_bytes) */
    int32_t B;
} matmul_job;

/* nr weight rows (ldw bytes apart) against the job's B activation rows, one vec_dot per
 * element. The float order is vec_dot's for a lone row and vec_dot_gemm's in a batch (they
 * differ for f32/f16 only, where llama.cpp's tinyBLAS takes batches); in a multi-sequence
 * batch (e->gemm_rows, lib/engine/batch.c) each row takes its own sequence's order, so a
 * sequence's results do not depend on what else is in the batch. The blocked kernels above
 * give vec_dot's bits at any batch size, so they need no such choice. */
static void dots(const matmul_job *j, qt_vec_dot_fn dot, qt_vec_dot_fn dot_batch, const void *w, size_t ldw, int64_t nr,
                 float *out) {
    const qt__mat *m = j->m;
    const uint8_t *per_row = j->e->gemm_rows;
    if (!per_row) {
        qt__gemm_dots(j->B >= 2 ? dot_batch : dot, w, ldw, nr, j->act, m->act_row_bytes, j->B, m->n_in, out, m->n_out);
        return;
    }
    const uint8_t *a = j->act;
    for (int32_t b = 0; b < j->B; b++, a += m->act_row_bytes)
        qt__gemm_dots(per_row[b] ? dot_batch : dot, w, ldw, nr, a, m->act_row_bytes, 1, m->n_in,
                      out + (size_t)b * m->n_out, m->n_out);
}

static void matmul_units(void *ctx, int64_t u0, int64_t u1, int ti) {
    const matmul_job *j = ctx;
    const qt__mat *m = j->m;
    const int64_t r0 = u0 * MATMUL_ROW_UNIT, r1 = u1 * MATMUL_ROW_UNIT < m->n_out ? u1 * MATMUL_ROW_UNIT : m->n_out;
    if (m->x16) {
        m->x16(m->x16_data + (size_t)(r0 / QT_X16_ROWS) * m->x16_group, r1 - r0, j->act, m->act_row_bytes, j->B, m->n_in,
               j->out + r0, m->n_out);
        return;
    }
    const uint8_t *w = m->data + (size_t)r0 * m->row_bytes;
    if (m->gemm && j->B >= m->gemm_min_batch && !(m->fused_dot && j->e->gemm_rows)) {
        m->gemm(w, m->row_bytes, r1 - r0, j->act, m->act_row_bytes, j->B, m->n_in, j->out + r0, m->n_out);
        return;
    }
    if (!m->dequant_rows) {
        dots(j, m->dot, m->dot_batch, w, m->row_bytes, r1 - r0, j->out + r0);
        return;
    }
    if (m->fused_dot && j->B == 1) { /* decode: the packed rows stream once, no f32 copy */
        dots(j, m->fused_dot, m->fused_dot_batch, w, m->row_bytes, r1 - r0, j->out + r0);
        return;
    }
    float *row = j->e->scratch[ti].row;
    for (int64_t r = r0; r < r1; r++, w += m->row_bytes) {
        m->tr->to_float(w, row, m->n_in);
        dots(j, m->dot, m->dot_batch, row, 0, 1, j->out + r);
    }
}

typedef struct act_job {
    const qt__mat *m;
    const float *in;            /* (B, n_in) */
    uint8_t *dst;               /* (B, act_row_bytes) */
} act_job;

static void act_rows(void *ctx, int64_t b0, int64_t b1, int ti) {
    (void)ti;
    const act_job *j = ctx;
    const qt__mat *m = j->m;
    for (int64_t b = b0; b < b1; b++) {
        const float *x = j->in + b * m->n_in;
        uint8_t *dst = j->dst + (size_t)b * m->act_row_bytes;
        if (m->act_ct4_q8) qt__ct4_q8_quantize(x, dst, m->n_in);
        else if (m->act_q8s) qt__act_q8s(x, (qt__block_q8s *)dst, m->n_in);
        else if (m->act_f16_f32) qt__act_f16_f32(x, dst, m->n_in);
        else if (m->act_static_scale > 0.0f) qt__ct_f8_act_quantize_static(x, dst, m->n_in, m->act_static_scale);
        else qt__act_quantize(m->act_type, x, dst, m->n_in);
    }
}

/* Whether a and b read the same activation rows: same conversion, same length. */
static bool same_act(const qt__mat *a, const qt__mat *b) {
    return a->act_type == b->act_type && a->act_q8s == b->act_q8s && a->act_f16_f32 == b->act_f16_f32 && a->act_ct4_q8 == b->act_ct4_q8 && a->n_in == b->n_in &&
           a->act_static_scale == b->act_static_scale && a->act_row_bytes == b->act_row_bytes;
}

/* The B input rows as m's activations (in e->act), or in itself for f32. */
static const void *matmul_act(qt_engine_ctx *e, const float *in, int32_t B, const qt__mat *m, bool small) {
    if (m->act_type == QT_TYPE_F32 && !m->act_ct4_q8) return in;
    act_job aj = {m, in, e->act};
    qt_parallel_for(small || B < 8 ? NULL : e->pool, B, act_rows, &aj);
    return e->act;
}

static bool matmul_small(int32_t B, const qt__mat *m) {
    /* below ~32k multiply-adds waking the pool costs more than it saves */
    return (int64_t)B * m->n_out * m->n_in < 32768;
}

/* A calibration's weight-only rows bound for sgemm (qt__layerwise_set_blas): their activations
 * are the f32 input itself (bound with act_quant off). */
static bool matmul_blas_path(const qt_engine_ctx *e, int32_t B, const qt__mat *m) {
    return m->blas && e->blas_w && B >= 2 && !e->gemm_rows;
}

/* Units per claim of a job of n units: a sixteenth of a thread's share, so a thread that is done
 * early takes small pieces of a late one's, between 1 and 16 units (256 rows: a 2048-wide Q4_0
 * matrix's 288 KB, long streams for the prefetchers; one claim is one atomic add). */
static int64_t matmul_grain(const qt_engine_ctx *e, int64_t n) {
    const int64_t g = n / ((int64_t)qt_threadpool_size(e->pool) * 16);
    return g < 1 ? 1 : g > 16 ? 16 : g;
}

static void matmul_run(qt_engine_ctx *e, float *out, const void *act, int32_t B, const qt__mat *m) {
    if (matmul_blas_path(e, B, m)) {
        qt__matmul_blas(e, out, act, B, m, matmul_small(B, m));
        return;
    }
    matmul_job j = {e, m, out, act, B};
    const int64_t n = (m->n_out + MATMUL_ROW_UNIT - 1) / MATMUL_ROW_UNIT;
    qt_parallel_for_balanced(matmul_small(B, m) ? NULL : e->pool, n, matmul_grain(e, n), matmul_units, &j);
}

void qt__matmul(qt_engine_ctx *e, float *out, const float *in, int32_t B, const qt__mat *m) {
    matmul_run(e, out, matmul_act(e, in, B, m, matmul_small(B, m)), B, m);
}

/* Up to QT__MATMUL_SHARED_MAX matrices reading the same activations, run as one job: their
 * units side by side (matrix 0's, then matrix 1's, ...), so the pool wakes once for all of
 * them, not once per matrix (a decode step's q/k/v: one wake-up and one wait instead of three).
 * Each unit is matmul_units' on its own matrix, so the bits are qt__matmul's whoever runs it. */
#define QT__MATMUL_SHARED_MAX 4

typedef struct multi_job {
    matmul_job j[QT__MATMUL_SHARED_MAX];
    int64_t first[QT__MATMUL_SHARED_MAX + 1]; /* first[i]: matrix i's first unit in the joint range */
    int n;
} multi_job;

static void multi_units(void *ctx, int64_t u0, int64_t u1, int ti) {
    const multi_job *mj = ctx;
    for (int i = 0; i < mj->n && u0 < u1; i++) {
        const int64_t a = u0 > mj->first[i] ? u0 : mj->first[i], b = u1 < mj->first[i + 1] ? u1 : mj->first[i + 1];
        if (a < b) matmul_units((void *)&mj->j[i], a - mj->first[i], b - mj->first[i], ti);
    }
}

static int64_t mat_units(const qt__mat *m) { return (m->n_out + MATMUL_ROW_UNIT - 1) / MATMUL_ROW_UNIT; }

/* Linears reading the same input (q/k/v, gate/up): the rows are converted
 * once for each run of matrices with the same activation format, not once per
 * matrix (the conversion is a pure function of the rows, so the bits are
 * qt__matmul's), and each such run is one job over the pool (multi_units). */
void qt__matmul_shared(qt_engine_ctx *e, const float *in, int32_t B, int n, float *const outs[], const qt__mat *const ms[]) {
    for (int i = 0; i < n;) {
        if (matmul_blas_path(e, B, ms[i])) { /* q/k/v, gate/up of a calibration: sgemm, as qt__matmul */
            matmul_run(e, outs[i], in, B, ms[i]);
            i++;
            continue;
        }
        multi_job mj = {.n = 0};
        bool small = true;
        int k = i;
        for (; k < n && k - i < QT__MATMUL_SHARED_MAX && (k == i || (same_act(ms[k], ms[k - 1]) && !matmul_blas_path(e, B, ms[k])));
             k++) {
            mj.j[k - i] = (matmul_job){e, ms[k], outs[k], NULL, B};
            mj.first[k - i + 1] = mj.first[k - i] + mat_units(ms[k]);
            small = small && matmul_small(B, ms[k]);
        }
        mj.n = k - i;
        const void *act = matmul_act(e, in, B, ms[i], matmul_small(B, ms[i]));
        for (int t = 0; t < mj.n; t++) mj.j[t].act = act;
        qt_parallel_for_balanced(small ? NULL : e->pool, mj.first[mj.n], matmul_grain(e, mj.first[mj.n]), multi_units, &mj);
        i = k;
    }
}
