/* lib/quant/fit_lanes.h — ggml's scale searches with one group per SIMD lane
 * (the batched forms of quant_search.h's qt__fit_affine, qt__fit_symmetric and
 * qt__fit_symmetric_descent, behind the qt__fit_batch interface).
 *
 * Included, once each, by the ISA files q_k_avx2.c (QT_LANES 8) and
 * q_k_avx512.c (QT_LANES 16), which the build compiles with the ISA flags.
 * Written with GCC vector extensions so that one text serves both widths.
 *
 * Why the bits are the scalar reference's: lane k runs exactly the scalar
 * function on group k — the same fp32 operations on the same operands in the
 * same order (the build's -ffp-contract=off keeps vector multiplies and adds
 * unfused, as the scalar ones), IEEE division and conversion per lane,
 * nearest_int's magic-number trick on the lane's bits. A scalar branch
 * becomes a mask: both sides are computed, the lane keeps the side its own
 * condition picks. Work a lane does past its scalar early exit is discarded
 * (a group that is all zero, or flat) or changes nothing (a descent sweep
 * after a sweep without changes repeats it exactly). Lanes beyond the last
 * group hold zeros and are never written back. tests/unit/test_simd.c
 * compares every form with the scalar reference byte for byte.
 */
#ifndef QT_LANES
#error "define QT_LANES (8 or 16) before including fit_lanes.h"
#endif

#include <stdint.h>
#include <string.h>

#include "quant_search.h"
#include "quant_util.h"

typedef float vf __attribute__((vector_size(4 * QT_LANES)));
typedef int32_t vi __attribute__((vector_size(4 * QT_LANES)));

#define FIT_MAX_N 32 /* the longest group the K-quants search (Q4_K/Q5_K sub-blocks) */

static inline vf vsplat(float s) {
    vf r;
    for (int k = 0; k < QT_LANES; k++) r[k] = s;
    return r;
}

static inline vi visplat(int32_t s) {
    vi r;
    for (int k = 0; k < QT_LANES; k++) r[k] = s;
    return r;
}

/* m ? a : b per lane (m: all ones or all zeros, as comparisons give). */
static inline vf vsel(vi m, vf a, vf b) { return (vf)((m & (vi)a) | (~m & (vi)b)); }
static inline vi visel(vi m, vi a, vi b) { return (m & a) | (~m & b); }

static inline bool vany(vi m) {
    int32_t r = 0;
    for (int k = 0; k < QT_LANES; k++) r |= m[k];
    return r != 0;
}

static inline vf vabs(vf x) { return (vf)((vi)x & visplat(0x7fffffff)); }

/* qt__nearest_int per lane. */
static inline vi vnearest(vf x) {
    const vi bits = (vi)(x + vsplat(12582912.0f));
    return (bits & visplat(0x007fffff)) - visplat(0x00400000);
}

/* qt__clamp_int: max(lo, min(hi, v)). */
static inline vi vclamp(vi v, int lo, int hi) {
    const vi h = visplat(hi), l = visplat(lo);
    v = visel(h < v, h, v);
    return visel(l > v, l, v);
}

static inline vf vcvt(vi v) { return __builtin_convertvector(v, vf); }

/* Lanes <- groups g0 .. g0+QT_LANES-1 of n values (zeros past ngroups). */
static void load_lanes(const float *x, int n, int g0, int ngroups, vf *X) {
    for (int i = 0; i < n; i++) X[i] = vsplat(0.0f);
    for (int k = 0; k < QT_LANES && g0 + k < ngroups; k++)
        for (int i = 0; i < n; i++) X[i][k] = x[(size_t)(g0 + k) * (size_t)n + (size_t)i];
}

/* qt__signed_absmax per lane: the first largest |x| wins. */
static vf signed_absmax_lanes(int n, const vf *X, vf *amax) {
    vf a = vsplat(0.0f), max = vsplat(0.0f);
    for (int i = 0; i < n; i++) {
        const vf ax = vabs(X[i]);
        const vi m = ax > a;
        a = vsel(m, ax, a);
        max = vsel(m, X[i], max);
    }
    *amax = a;
    return max;
}

/* ---- qt__fit_affine ------------------------------------------------------------------ */

static void affine_lanes(int n, int nmax, const vf *X, const vf *W, const qt__affine_search *s, vi *L, vf *scale_out,
                         vf *neg_min_out) {
    vf min = X[0], max = X[0], sum_w = W[0];
    vf sum_x = sum_w * X[0];
    for (int i = 1; i < n; i++) {
        min = vsel(X[i] < min, X[i], min);
        max = vsel(X[i] > max, X[i], max);
        sum_w += W[i];
        sum_x += W[i] * X[i];
    }
    const vf zero = vsplat(0.0f);
    min = vsel(min > zero, zero, min);
    const vi flat = max == min; /* scalar: L = 0, return 0 with this min */
    const vf flat_min = min;
    vf iscale = vsplat((float)nmax) / (max - min);
    vf scale = vsplat(1.0f) / iscale;
    vf best_error = zero;
    for (int i = 0; i < n; i++) {
        L[i] = vclamp(vnearest(iscale * (X[i] - min)), 0, nmax);
        vf diff = scale * vcvt(L[i]) + min - X[i];
        diff = s->use_mad ? vabs(diff) : diff * diff;
        best_error += W[i] * diff;
    }
    vi Laux[FIT_MAX_N];
    vf Fl[FIT_MAX_N];
    for (int is = 0; is <= s->nstep; is++) {
        iscale = vsplat(s->rmin + s->rdelta * (float)is + (float)nmax) / (max - min);
        vf sum_l = zero, sum_l2 = zero, sum_xl = zero;
        for (int i = 0; i < n; i++) {
            Laux[i] = vclamp(vnearest(iscale * (X[i] - min)), 0, nmax);
            const vf fl = Fl[i] = vcvt(Laux[i]);
            sum_l += W[i] * fl;
            sum_l2 += W[i] * fl * fl;
            sum_xl += W[i] * fl * X[i];
        }
        const vf D = sum_w * sum_l2 - sum_l * sum_l;
        const vi solvable = D > zero;
        if (!vany(solvable)) continue;
        vf this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
        vf this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        const vi pos = this_min > zero;
        this_scale = vsel(pos, sum_xl / sum_l2, this_scale);
        this_min = vsel(pos, zero, this_min);
        vf cur_error = zero;
        for (int i = 0; i < n; i++) {
            vf diff = this_scale * Fl[i] + this_min - X[i];
            diff = s->use_mad ? vabs(diff) : diff * diff;
            cur_error += W[i] * diff;
        }
        const vi take = solvable & (cur_error < best_error);
        if (!vany(take)) continue;
        for (int i = 0; i < n; i++) L[i] = visel(take, Laux[i], L[i]);
        best_error = vsel(take, cur_error, best_error);
        scale = vsel(take, this_scale, scale);
        min = vsel(take, this_min, min);
    }
    for (int i = 0; i < n; i++) L[i] = visel(flat, visplat(0), L[i]);
    *scale_out = vsel(flat, zero, scale);
    *neg_min_out = -vsel(flat, flat_min, min);
}

static void fit_affine_batch(int ngroups, int n, int nmax, const float *x, const float *w, const qt__affine_search *s,
                             uint8_t *L, float *scales, float *neg_mins) {
    if (s->clamp_before_round || n > FIT_MAX_N) { /* not a K-quant schedule: the scalar form */
        qt__fit_batch_ref.affine(ngroups, n, nmax, x, w, s, L, scales, neg_mins);
        return;
    }
    vf X[FIT_MAX_N], W[FIT_MAX_N], scale, neg_min;
    vi Lv[FIT_MAX_N];
    for (int g0 = 0; g0 < ngroups; g0 += QT_LANES) {
        load_lanes(x, n, g0, ngroups, X);
        load_lanes(w, n, g0, ngroups, W);
        affine_lanes(n, nmax, X, W, s, Lv, &scale, &neg_min);
        for (int k = 0; k < QT_LANES && g0 + k < ngroups; k++) {
            scales[g0 + k] = scale[k];
            neg_mins[g0 + k] = neg_min[k];
            for (int i = 0; i < n; i++) L[(size_t)(g0 + k) * (size_t)n + (size_t)i] = (uint8_t)Lv[i][k];
        }
    }
}

/* ---- qt__fit_symmetric --------------------------------------------------------------- */

/* Sums (w x l, w l^2) of one candidate; C: the candidate levels l. */
static void symmetric_sums(int n, int nmax, const vf *X, const vf *W, vf iscale, vi *C, vf *sumlx, vf *suml2) {
    vf slx = vsplat(0.0f), sl2 = vsplat(0.0f);
    for (int i = 0; i < n; i++) {
        C[i] = vclamp(vnearest(iscale * X[i]), -nmax, nmax - 1);
        const vf fl = vcvt(C[i]);
        const vf wi = W ? W[i] : X[i] * X[i];
        slx += wi * X[i] * fl;
        sl2 += wi * fl * fl;
    }
    *sumlx = slx;
    *suml2 = sl2;
}

static vf symmetric_lanes(int n, int nmax, const vf *X, const vf *W, vi *L) {
    vf amax;
    const vf max = signed_absmax_lanes(n, X, &amax), zero = vsplat(0.0f);
    const vi tiny = amax < vsplat(QT_GROUP_MAX_EPS), off = visplat(nmax);
    vi C[FIT_MAX_N];
    vf sumlx, suml2;
    symmetric_sums(n, nmax, X, W, vsplat((float)-nmax) / max, C, &sumlx, &suml2);
    for (int i = 0; i < n; i++) L[i] = C[i] + off;
    vf scale = vsel(suml2 != zero, sumlx / suml2, zero);
    vf best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        symmetric_sums(n, nmax, X, W, vsplat(-((float)nmax + 0.1f * (float)is)) / max, C, &sumlx, &suml2);
        const vi take = (suml2 > zero) & (sumlx * sumlx > best * suml2);
        if (!vany(take)) continue;
        for (int i = 0; i < n; i++) L[i] = visel(take, C[i] + off, L[i]);
        const vf s = sumlx / suml2;
        scale = vsel(take, s, scale);
        best = vsel(take, s * sumlx, best);
    }
    for (int i = 0; i < n; i++) L[i] = visel(tiny, visplat(0), L[i]);
    return vsel(tiny, zero, scale);
}

static void fit_symmetric_batch(int ngroups, int n, int nmax, const float *x, const float *w, int8_t *L,
                                float *scales) {
    if (n > FIT_MAX_N) {
        qt__fit_batch_ref.symmetric(ngroups, n, nmax, x, w, L, scales);
        return;
    }
    vf X[FIT_MAX_N], W[FIT_MAX_N];
    vi Lv[FIT_MAX_N];
    for (int g0 = 0; g0 < ngroups; g0 += QT_LANES) {
        load_lanes(x, n, g0, ngroups, X);
        if (w) load_lanes(w, n, g0, ngroups, W);
        const vf scale = symmetric_lanes(n, nmax, X, w ? W : NULL, Lv);
        for (int k = 0; k < QT_LANES && g0 + k < ngroups; k++) {
            scales[g0 + k] = scale[k];
            for (int i = 0; i < n; i++) L[(size_t)(g0 + k) * (size_t)n + (size_t)i] = (int8_t)Lv[i][k];
        }
    }
}

/* ---- qt__fit_symmetric_descent ------------------------------------------------------- */

static vf descent_lanes(int n, int nmax, const vf *X, vi *L) {
    vf amax;
    const vf max = signed_absmax_lanes(n, X, &amax), zero = vsplat(0.0f);
    const vi tiny = amax < vsplat(QT_GROUP_MAX_EPS);
    vf sumlx, suml2;
    symmetric_sums(n, nmax, X, NULL, vsplat((float)-nmax) / max, L, &sumlx, &suml2);
    for (int sweep = 0; sweep < 5; sweep++) {
        vi changed = visplat(0);
        for (int i = 0; i < n; i++) {
            const vf w = X[i] * X[i], fl = vcvt(L[i]);
            vf slx = sumlx - w * X[i] * fl;
            const vi pos = slx > zero;
            vf sl2 = suml2 - w * fl * fl;
            const vi new_l = vclamp(vnearest(X[i] * sl2 / slx), -nmax, nmax - 1);
            const vi differs = pos & (new_l != L[i]);
            if (!vany(differs)) continue;
            const vf fnl = vcvt(new_l);
            slx += w * X[i] * fnl;
            sl2 += w * fnl * fnl;
            const vi take = differs & (sl2 > zero) & (slx * slx * suml2 > sumlx * sumlx * sl2);
            L[i] = visel(take, new_l, L[i]);
            sumlx = vsel(take, slx, sumlx);
            suml2 = vsel(take, sl2, suml2);
            changed |= take;
        }
        if (!vany(changed)) break;
    }
    const vi off = visplat(nmax);
    for (int i = 0; i < n; i++) L[i] = visel(tiny, visplat(0), L[i] + off);
    return vsel(tiny | ~(suml2 > zero), zero, sumlx / suml2);
}

static void fit_symmetric_descent_batch(int ngroups, int n, int nmax, const float *x, int8_t *L, float *scales) {
    if (n > FIT_MAX_N) {
        qt__fit_batch_ref.symmetric_descent(ngroups, n, nmax, x, L, scales);
        return;
    }
    vf X[FIT_MAX_N];
    vi Lv[FIT_MAX_N];
    for (int g0 = 0; g0 < ngroups; g0 += QT_LANES) {
        load_lanes(x, n, g0, ngroups, X);
        const vf scale = descent_lanes(n, nmax, X, Lv);
        for (int k = 0; k < QT_LANES && g0 + k < ngroups; k++) {
            scales[g0 + k] = scale[k];
            for (int i = 0; i < n; i++) L[(size_t)(g0 + k) * (size_t)n + (size_t)i] = (int8_t)Lv[i][k];
        }
    }
}

#define QT_FIT_LANES_BATCH \
    {.affine = fit_affine_batch, .symmetric = fit_symmetric_batch, .symmetric_descent = fit_symmetric_descent_batch}
