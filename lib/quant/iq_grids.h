/* lib/quant/iq_grids.h — the code books of ggml's i-quants below 4 bits and
 * the search structures their quantizers need (lib/quant/q_iq.c).
 *
 * Each code book is a set of points of a small lattice: 8 coordinates of
 * levels 0..2 (IQ1_S/IQ1_M, IQ2_*) or 4 coordinates of levels 0..7 (IQ3_*).
 * A point is stored as its packed level code, coordinate i in bits
 * [bits*i, bits*i + bits). These are the tables ggml's iq2xs_init_impl /
 * iq3xs_init_impl start from (ggml-quants.c, llama.cpp commit 3f545bec); the
 * value grids of ggml-common.h (iq2xxs_grid, iq3s_grid, iq1s_grid, ...) are
 * the same points with each level replaced by one byte value
 * (qt__iq_level_values), which is how the dequantizers read them.
 *
 * Quantizers also need, per lattice, a map from every reachable level code to
 * its point index, and for codes that are not points the list of nearest
 * points (all points at the smallest n_want distinct squared distances, in
 * order of distance, then index — ggml's neighbour lists). Those are built on
 * first use, once per process (pthread_once), and live until exit.
 */
#ifndef QT_QUANT_IQ_GRIDS_H
#define QT_QUANT_IQ_GRIDS_H

#include <stdint.h>

#include "blocks.h"

typedef enum {
    QT_IQ_LATTICE_2XXS, /* IQ2_XXS: 256 points, 8 x 2 bits */
    QT_IQ_LATTICE_2XS,  /* IQ2_XS: 512 points */
    QT_IQ_LATTICE_2S,   /* IQ2_S: 1024 points */
    QT_IQ_LATTICE_1S,   /* IQ1_S and IQ1_M: 2048 points */
    QT_IQ_LATTICE_3XXS, /* IQ3_XXS: 256 points, 4 x 3 bits */
    QT_IQ_LATTICE_3S,   /* IQ3_S: 512 points */
    QT_IQ_LATTICE_COUNT
} qt__iq_lattice_id;

/* Packed level codes of each code book (data from ggml-quants.c). */
extern const uint16_t qt__iq_codes_2xxs[256];
extern const uint16_t qt__iq_codes_2xs[512];
extern const uint16_t qt__iq_codes_2s[1024];
extern const uint16_t qt__iq_codes_1s[2048];
extern const uint16_t qt__iq_codes_3xxs[256];
extern const uint16_t qt__iq_codes_3s[512];

/* Byte value of each level in ggml-common.h's value grids:
 * IQ2_*: 8, 25, 43; IQ3_XXS: 4, 12, ..., 52, 62; IQ3_S: 1, 3, ..., 15;
 * IQ1_*: -1, 0, 1. */
extern const int8_t qt__iq_levels_2[3];
extern const int8_t qt__iq_levels_3xxs[8];
extern const int8_t qt__iq_levels_3s[8];
extern const int8_t qt__iq_levels_1[3];

/* The value grid of code book id, as ggml-common.h holds it: (n_points,
 * dims) level values (qt__iq_levels_*), the dequantizers' lookup. Built on
 * first call (thread-safe, a few KiB, static storage: cannot fail). */
const int8_t *qt__iq_values(qt__iq_lattice_id id);

/* map[] value of a level code the quantizers can never produce (a 2-bit
 * code with a level 3 in it). */
#define QT_IQ_UNREACHABLE INT32_MIN

typedef struct qt__iq_lattice {
    int n_points;
    int dims;                /* coordinates per point: 8 or 4 */
    int bits;                /* bits per level in a code: 2 or 3 */
    const uint16_t *codes;   /* (n_points) packed level codes */
    int8_t *pos;             /* (n_points, dims) 2*level + 1, the quantizers' coordinates */
    float *posf;             /* (n_points, dims) the same as floats (the neighbour searches' hot loop) */
    int32_t *map;            /* (1 << bits*dims) point index, or -(1 + offset into neighbours) */
    uint16_t *neighbours;    /* per off-lattice code: count, then that many point indices */
    uint16_t *neighbour_codes; /* the same offsets: count, then each neighbour's packed code (codes[index]),
                                * so a SIMD search loads a list's codes contiguously (q_iq_nb.h) */
} qt__iq_lattice;

/* The lattice with its map and neighbour lists, built on first call
 * (thread-safe). NULL only if that one build ran out of memory. */
const qt__iq_lattice *qt__iq_lattice_get(qt__iq_lattice_id id);

/* Neighbour list of level code u, which must not be a lattice point:
 * list[0] = n, list[1..n] = point indices. */
static inline const uint16_t *qt__iq_neighbours(const qt__iq_lattice *lat, uint32_t u) {
    return lat->neighbours + (-(int64_t)lat->map[u] - 1);
}

/* 8 sign bits from the 7 stored by IQ2_XXS, IQ2_XS and IQ3_XXS: the eighth
 * makes the number of negatives even (ggml ksigns_iq2xs). Parity by folding:
 * baseline x86-64 has no POPCNT. */
static inline uint32_t qt__iq_signs8(uint32_t s7) {
    uint32_t p = s7 ^ (s7 >> 4);
    p ^= p >> 2;
    p ^= p >> 1;
    return s7 | ((p & 1) << 7);
}

/* IQ2_XS and IQ2_S share their scale layout (two 4-bit scales per 32) and
 * differ in how a group of 8 names its point and signs. Group g (of 32) of
 * an IQ2_S (is_s) or IQ2_XS block: returns its grid index, *signs its 8 sign
 * bits. */
static inline int qt__iq2_16_group(const void *block, int is_s, int g, uint32_t *signs) {
    if (is_s) {
        const block_iq2_s *b = block;
        *signs = b->qs[QK_K / 8 + g];
        return b->qs[g] | (((b->qh[g / 4] >> (2 * (g % 4))) & 3) << 8);
    }
    const uint16_t q = ((const block_iq2_xs *)block)->qs[g];
    *signs = qt__iq_signs8(q >> 9);
    return q & 511;
}

#endif
