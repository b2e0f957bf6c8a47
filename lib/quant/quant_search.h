/* lib/quant/quant_search.h — ggml's weighted scale searches, shared by the
 * legacy (q_legacy.c) and K-quant (q_k.c) codecs.
 *
 * Pure functions on plain arrays: one group of n values x, optional weights,
 * integer levels out in L, the fitted scale returned. Each one reproduces one
 * of ggml-quants.c's helpers bit for bit (docs/formats.md §3.4 "Helper
 * algorithms"): same candidates, same float expressions in the same order,
 * same tie-breaking. Groups whose largest |x| is below QT_GROUP_MAX_EPS count
 * as all zero.
 */
#ifndef QT_QUANT_SEARCH_H
#define QT_QUANT_SEARCH_H

#include <stdbool.h>
#include <stdint.h>

/* Symmetric fit x ~ scale*l, l in [-nmax, nmax-1] (ggml make_qx_quants with
 * rmse_type 1): start from scale = max/-nmax (max = the signed value of
 * largest |x|), try 18 nearby inverse scales -(nmax + 0.1*is)/max and keep the
 * best weighted least-squares objective (sum w*x*l)^2 / sum w*l^2.
 * w: n weights, or NULL for w = x^2. Writes L[i] = l + nmax. */
float qt__fit_symmetric(int n, int nmax, const float *x, const float *w, int8_t *L);

/* Symmetric fit by coordinate descent (ggml make_q3_quants, do_rmse, w = x^2):
 * start as qt__fit_symmetric, then up to 5 sweeps moving one l at a time to
 * its optimum given the others while the objective improves.
 * Writes L[i] = l + nmax. */
float qt__fit_symmetric_descent(int n, int nmax, const float *x, int8_t *L);

/* Candidate schedule and error measure of qt__fit_affine. */
typedef struct {
    float rmin, rdelta; /* inverse scales (rmin + rdelta*is + nmax)/(max - min) */
    int nstep;          /* is = 0..nstep */
    bool use_mad;       /* error w*|diff| (true) or w*diff^2 */
    /* How a candidate level is rounded: false = ggml's clamp(nearest_int(v),
     * 0, nmax); true = clamp v to (0, nmax] first, then round. The two agree
     * whenever |v| <= 4194303, nearest_int's valid range. v leaves it only
     * after an accepted fit has moved min within a tiny fraction of max-min
     * (seen: an all-negative, near-constant block with one far outlier of
     * zero importance); there ggml's nearest_int gives a meaningless level
     * and the pre-clamp 0 or nmax. q_legacy.c was written with the
     * pre-clamp; it now follows ggml too (false). The option stays for callers
     * that prefer a defined level in that corner. */
    bool clamp_before_round;
} qt__affine_search;

/* Affine fit x ~ scale*l + min, l in [0, nmax], min <= 0 (ggml
 * make_qkx2_quants; make_qkx3_quants is the same computation when weights are
 * given, the only way it is called here): start from the range, then for each
 * candidate inverse scale solve the 2x2 weighted least-squares problem for
 * (scale, min) and keep the candidate with the smallest weighted error. As in
 * ggml, an accepted min is used by the following candidates.
 * w: n weights. Laux: n bytes of scratch. Writes L, stores -min (>= 0) in
 * *neg_min, returns scale. */
float qt__fit_affine(int n, int nmax, const float *x, const float *w, const qt__affine_search *search,
                     uint8_t *L, uint8_t *Laux, float *neg_min);

/* Non-negative values x (sub-block scales or mins) as l*step, l in [0, nmax]
 * (ggml make_qp_quants): best of 9 inverse steps (nmax + 0.1*is)/max by
 * weighted squared error, then coordinate descent as in
 * qt__fit_symmetric_descent. w: n weights. Writes L, returns the step.
 * The uint8_t stores wrap exactly as ggml's do (only reachable for negative
 * inputs, which the affine fit does not produce in practice). */
float qt__fit_scales(int n, int nmax, const float *x, const float *w, uint8_t *L);

/* The searches over many groups at once: ngroups groups of n values, group g
 * at x + g*n (its weights at w + g*n), its levels written at L + g*n and its
 * results at scales[g] (and neg_mins[g]). Each entry gives exactly the bytes
 * of the single-group function above applied group by group; the K-quants
 * (q_k.c) call their searches through one of these so that a SIMD form can
 * put different groups in different lanes (fit_lanes.h). */
typedef struct qt__fit_batch {
    void (*affine)(int ngroups, int n, int nmax, const float *x, const float *w, const qt__affine_search *search,
                   uint8_t *L, float *scales, float *neg_mins);
    void (*symmetric)(int ngroups, int n, int nmax, const float *x, const float *w, int8_t *L, float *scales);
    void (*symmetric_descent)(int ngroups, int n, int nmax, const float *x, int8_t *L, float *scales);
} qt__fit_batch;

/* The scalar reference: the functions above in a loop. */
extern const qt__fit_batch qt__fit_batch_ref;

#endif
