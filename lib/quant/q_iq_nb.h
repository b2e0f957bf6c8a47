/* lib/quant/q_iq_nb.h — the neighbour search of the IQ2 / IQ3 quantizers
 * (q_iq.c, ggml iq2/iq3_find_best_neighbour), shared by its scalar reference
 * (q_iq.c) and its SIMD forms (q_iq_avx2.c, q_iq_avx512.c: many neighbours at
 * a time, one per lane), which give the same index for every input.
 *
 * The search: the neighbour of off-lattice code u closest to xval at this
 * scale, error weighted by w, the first one on ties. ggml's error of a point p
 * is sum_i w[i]*diff*diff with diff = scale*p[i] - xval[i], summed over i in
 * order from 0 (starting at 0); a coordinate takes one of kmaxq odd values, so
 * the term of each (i, level) is formed once (nb_terms: the same two products
 * of the same operands) and a neighbour's error is the sum of its coordinates'
 * terms in the same order: the same floats as ggml's. The winner is the first
 * neighbour whose error is below every earlier one and FLT_MAX (a NaN error
 * never wins; none winning leaves the first neighbour). */
#ifndef QT_QUANT_Q_IQ_NB_H
#define QT_QUANT_Q_IQ_NB_H

#include <stdint.h>

#include "blocks.h"
#include "iq_grids.h"
#include "kernels.h"

/* Writes the winner's levels (0..kmaxq-1) to L[0..dims) and returns its point index. */
typedef int (*qt__iq_neighbour_fn)(const qt__iq_lattice *lat, uint32_t u, const float *xval, const float *w,
                                   float scale, int kmaxq, int8_t *L);

/* term[i][l], i < DIMS, l < kmaxq (the rest of the 8 x 8 left as it is) */
static inline __attribute__((always_inline)) void qt__iq_nb_terms(float term[8][8], const float *xval, const float *w,
                                                                  float scale, int kmaxq, const int DIMS) {
    for (int i = 0; i < DIMS; i++)
        for (int l = 0; l < kmaxq; l++) {
            const float diff = scale * (float)(2 * l + 1) - xval[i];
            term[i][l] = w[i] * diff * diff;
        }
}

/* the levels of point best into L; returns best */
static inline int qt__iq_nb_levels(const qt__iq_lattice *lat, int best, int8_t *L, const int DIMS) {
    const int8_t *p = lat->pos + (size_t)best * DIMS;
    for (int i = 0; i < DIMS; i++) L[i] = (int8_t)((p[i] - 1) / 2);
    return best;
}

/* The IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S quantizers (qt_type t; the IQ1 types and every
 * other type write nothing) with the neighbour search nb: q_iq.c's qt__quantize_* are these
 * with the scalar one. */
void qt__quantize_iq_lattice(qt_type t, const float *src, void *dst, int64_t n, const float *imatrix,
                             qt__iq_neighbour_fn nb);

/* The lattice types once, as X(name, qt_type), and a SIMD file's quantizer of one of them:
 * qt__quantize_<name>_<isa>, which is qt__quantize_iq_lattice with qt__iq_best_neighbour_<isa>. */
#define QT__IQ_LATTICE_TYPES(X) \
    X(iq2_xxs, QT_TYPE_IQ2_XXS) X(iq2_xs, QT_TYPE_IQ2_XS) X(iq2_s, QT_TYPE_IQ2_S) X(iq3_xxs, QT_TYPE_IQ3_XXS) X(iq3_s, QT_TYPE_IQ3_S)
#define QT__IQ_LATTICE_QUANTIZER(isa, name, T)                                                   \
    void qt__quantize_##name##_##isa(const float *src, void *dst, int64_t n, const float *imatrix) { \
        qt__quantize_iq_lattice(T, src, dst, n, imatrix, qt__iq_best_neighbour_##isa);            \
    }

#ifdef QT_ARCH_X86
int qt__iq_best_neighbour_avx2(const qt__iq_lattice *lat, uint32_t u, const float *xval, const float *w, float scale,
                               int kmaxq, int8_t *L);
int qt__iq_best_neighbour_avx512(const qt__iq_lattice *lat, uint32_t u, const float *xval, const float *w,
                                 float scale, int kmaxq, int8_t *L);
#endif

#endif
