/* lib/quant/gemm_x16.c — the x16 layout of --numerics fast (gemm.h): its
 * activation quantizer, its packer and the scalar references of its float
 * order. The SIMD kernels are in gemm_x16_avx512.c / gemm_x16_avx2.c. */
#include <math.h>
#include <string.h>

#include "blocks.h"
#include "gemm.h"
#include "gemm_x16.h"
#include "quanta/num.h"

static int x16_kind(qt_type t) {
    for (int k = 0; k < X16_KINDS; k++)
        if (qt__x16_formats[k].type == t) return k;
    return -1;
}

size_t qt__x16_group_bytes(qt_type t, int64_t n) {
    const int k = x16_kind(t);
    return k < 0 ? 0 : (size_t)(n / 32) * x16_tile_bytes(k);
}

size_t qt__x16_bytes(qt_type t, int64_t nr, int64_t n) {
    if (x16_kind(t) < 0 || n <= 0 || n % 32 || nr <= 0) return 0;
    return (size_t)((nr + QT_X16_ROWS - 1) / QT_X16_ROWS) * qt__x16_group_bytes(t, n);
}

static uint32_t load32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

void qt__x16_pack(qt_type t, const void *w, size_t ldw, int64_t nr, int64_t n, void *dst) {
    qt__x16_pack_groups(t, w, ldw, nr, n, dst, 0, (nr + QT_X16_ROWS - 1) / QT_X16_ROWS);
}

void qt__x16_pack_groups(qt_type t, const void *w, size_t ldw, int64_t nr, int64_t n, void *dst, int64_t g0, int64_t g1) {
    const int kind = x16_kind(t);
    const qt__x16_format *f = &qt__x16_formats[kind];
    const size_t tile = x16_tile_bytes(kind), qh_off = x16_qh_off(kind), codes = x16_codes_off(kind);
    const uint32_t flip = kind == X16_Q8_0 ? 0x80808080u : 0;
    const int64_t nb = n / 32, r1 = g1 * QT_X16_ROWS < nr ? g1 * QT_X16_ROWS : nr;
    uint8_t *d = dst;
    /* padding rows: zero scales, codes and masks */
    memset(d + (size_t)g0 * (size_t)nb * tile, 0, (size_t)(g1 - g0) * (size_t)nb * tile);
    for (int64_t r = g0 * QT_X16_ROWS; r < r1; r++) {
        const uint8_t *row = (const uint8_t *)w + (size_t)r * ldw;
        const int i = (int)(r % QT_X16_ROWS);
        uint8_t *g = d + (size_t)(r / QT_X16_ROWS) * (size_t)nb * tile;
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = row + (size_t)b * f->block_bytes;
            uint8_t *tl = g + (size_t)b * tile;
            memcpy(tl + 2 * i, blk, 2);
            if (f->m_at) memcpy(tl + x16_m_off(kind) + 2 * i, blk + f->m_at, 2);
            if (f->qh_at) {
                const uint32_t qh = load32(blk + f->qh_at);
                for (int k = 0; k < 4; k++) {
                    tl[qh_off + 16 * k + i / 2] |= (uint8_t)(((qh >> (4 * k)) & 0xF) << (4 * (i % 2)));
                    tl[qh_off + 16 * k + 8 + i / 2] |= (uint8_t)(((qh >> (16 + 4 * k)) & 0xF) << (4 * (i % 2)));
                }
            }
            for (int k = 0; k < f->code_bytes / 4; k++) {
                const uint32_t word = load32(blk + f->qs_at + 4 * k) ^ flip;
                memcpy(tl + codes + 64 * k + 4 * i, &word, 4);
            }
        }
    }
}

/* llama.cpp's CPU quantize_row_q8_0 (id = 127/amax, round half to even, as
 * dot.c's qt__act_q8_0_ref): the same codes and the same f16-rounded scale, and
 * act_q8_1's f16-rounded s, held as f32 so kernels need not convert them,
 * and the code sum. Keeping llama's
 * rounding of d and s keeps fast within rounding of llama (an f32 scale,
 * more exact, moved random-weight logits 5 % of their range away from it). */
void qt__act_q8s_ref(const float *x, qt__block_q8s *y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++, x += 32) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        int32_t s = 0;
        for (int j = 0; j < 32; j++) {
            y[b].qs[j] = (int8_t)nearbyintf(x[j] * id);
            s += y[b].qs[j];
        }
        y[b].d = qt_fp16_to_f32(qt_f32_to_fp16(amax / 127.0f));
        y[b].s = qt_fp16_to_f32(qt_f32_to_fp16(amax / 127.0f * (float)s));
        y[b].sum = s;
    }
}

/* The signed value of a 4- or 5-bit code (nibble | high bit << 4) of `kind`. */
static int x16_value(int kind, int code) {
    return qt__x16_formats[kind].lut ? qt__kvalues_iq4nl[code] : code - qt__x16_formats[kind].offset;
}

/* One block of the order (gemm.h) into acc: q[] the 32 signed weight values. */
static float x16_step(float acc, const int *q, float dw, float mw, bool has_m, const qt__block_q8s *y) {
    int32_t s = 0;
    for (int j = 0; j < 32; j++) s += q[j] * y->qs[j];
    acc = fmaf(dw * y->d, (float)s, acc);
    if (has_m) acc = fmaf(mw, y->s, acc);
    return acc;
}

static float h2f(const uint8_t *p) {
    qt_half h;
    memcpy(&h, p, sizeof h);
    return qt_fp16_to_f32(h);
}

float qt__dot_x16_ref(qt_type t, const void *vx, const void *vy, int64_t n) {
    const int kind = x16_kind(t);
    const qt__x16_format *f = &qt__x16_formats[kind];
    const qt__block_q8s *y = vy;
    float acc = 0.0f;
    for (int64_t b = 0; b < n / 32; b++) {
        const uint8_t *blk = (const uint8_t *)vx + (size_t)b * f->block_bytes, *qs = blk + f->qs_at;
        const uint32_t qh = f->qh_at ? load32(blk + f->qh_at) : 0;
        int q[32];
        for (int j = 0; j < 32; j++) {
            if (kind == X16_Q8_0) {
                q[j] = (int8_t)qs[j];
                continue;
            }
            const int nib = j < 16 ? qs[j] & 0x0F : qs[j - 16] >> 4;
            q[j] = x16_value(kind, nib | (int)((qh >> j) & 1) << 4);
        }
        acc = x16_step(acc, q, h2f(blk), f->m_at ? h2f(blk + f->m_at) : 0.0f, f->m_at != 0, y + b);
    }
    return acc;
}

void qt__gemm_x16_ref(qt_type t, const void *wp, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n,
                      float *out, int64_t ldo) {
    const int kind = x16_kind(t);
    const size_t tile = x16_tile_bytes(kind), qh_off = x16_qh_off(kind), codes = x16_codes_off(kind);
    const int64_t nb = n / 32;
    for (int64_t r = 0; r < nr; r++) {
        const uint8_t *g = (const uint8_t *)wp + (size_t)(r / QT_X16_ROWS) * (size_t)nb * tile;
        const int i = (int)(r % QT_X16_ROWS);
        for (int64_t c = 0; c < nc; c++) {
            const qt__block_q8s *y = (const qt__block_q8s *)((const uint8_t *)a + (size_t)c * lda);
            float acc = 0.0f;
            for (int64_t b = 0; b < nb; b++) {
                const uint8_t *tl = g + (size_t)b * tile;
                int q[32];
                for (int k = 0; k < qt__x16_formats[kind].code_bytes / 4; k++)
                    for (int e = 0; e < 4; e++) {
                        const int u = tl[codes + 64 * k + 4 * i + e];
                        if (kind == X16_Q8_0) {
                            q[4 * k + e] = u - 128;
                            continue;
                        }
                        int lo = u & 0x0F, hi = u >> 4;
                        if (x16_has_qh(kind)) {
                            lo |= (tl[qh_off + 16 * k + (4 * i + e) / 8] >> ((4 * i + e) % 8) & 1) << 4;
                            hi |= (tl[qh_off + 16 * k + 8 + (4 * i + e) / 8] >> ((4 * i + e) % 8) & 1) << 4;
                        }
                        q[4 * k + e] = x16_value(kind, lo);
                        q[16 + 4 * k + e] = x16_value(kind, hi);
                    }
                acc = x16_step(acc, q, h2f(tl + 2 * i), x16_has_m(kind) ? h2f(tl + x16_m_off(kind) + 2 * i) : 0.0f,
                               x16_has_m(kind), y + b);
            }
            out[c * ldo + r] = acc;
        }
    }
}

#define X16_REF(NAME, TYPE)                                                                                   \
    void qt__gemm_x16_##NAME##_ref(const void *wp, int64_t nr, const void *a, size_t lda, int64_t nc, int64_t n, \
                                   float *out, int64_t ldo) {                                                 \
        qt__gemm_x16_ref(TYPE, wp, nr, a, lda, nc, n, out, ldo);                                              \
    }
X16_REF(q4_0, QT_TYPE_Q4_0)
X16_REF(q4_1, QT_TYPE_Q4_1)
X16_REF(q5_0, QT_TYPE_Q5_0)
X16_REF(q5_1, QT_TYPE_Q5_1)
X16_REF(iq4_nl, QT_TYPE_IQ4_NL)
X16_REF(q8_0, QT_TYPE_Q8_0)
