/* lib/quant/quant_search.c — ggml's weighted scale searches (make_qx_quants,
 * make_q3_quants, make_qkx2/3_quants, make_qp_quants in ggml-quants.c;
 * docs/formats.md §3.4 "Helper algorithms"). Contracts in quant_search.h.
 *
 * Bit-exactness rests on ggml's evaluation order: every expression keeps
 * ggml's left-to-right association (`w * x * l` is (w*x)*l), each operation
 * rounds separately (the build uses -ffp-contract=off), and sums run in
 * element order — so do not "simplify" the arithmetic below.
 */
#include "quant_search.h"

#include <math.h>
#include <string.h>

#include "quant_util.h"

float qt__fit_symmetric(int n, int nmax, const float *x, const float *w, int8_t *L) {
    float amax;
    const float max = qt__signed_absmax(x, n, &amax);
    if (amax < QT_GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = (float)-nmax / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        const int l = qt__clamp_int(qt__nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        const float wi = w ? w[i] : x[i] * x[i];
        sumlx += wi * x[i] * (float)l;
        suml2 += wi * (float)l * (float)l;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0.0f;
        for (int i = 0; i < n; ++i) {
            const int l = qt__clamp_int(qt__nearest_int(iscale * x[i]), -nmax, nmax - 1);
            const float wi = w ? w[i] : x[i] * x[i];
            sumlx += wi * x[i] * (float)l;
            suml2 += wi * (float)l * (float)l;
        }
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i)
                L[i] = (int8_t)(nmax + qt__clamp_int(qt__nearest_int(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

float qt__fit_symmetric_descent(int n, int nmax, const float *x, int8_t *L) {
    float amax;
    const float max = qt__signed_absmax(x, n, &amax);
    if (amax < QT_GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    const float iscale = (float)-nmax / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        const int l = qt__clamp_int(qt__nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)l;
        const float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    for (int sweep = 0; sweep < 5; ++sweep) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * (float)L[i];
            if (slx > 0.0f) {
                float sl2 = suml2 - w * (float)L[i] * (float)L[i];
                const int new_l = qt__clamp_int(qt__nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (new_l != L[i]) {
                    slx += w * x[i] * (float)new_l;
                    sl2 += w * (float)new_l * (float)new_l;
                    if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    for (int i = 0; i < n; ++i) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

float qt__fit_affine(int n, int nmax, const float *x, const float *w, const qt__affine_search *search,
                     uint8_t *L, uint8_t *Laux, float *neg_min) {
    const bool use_mad = search->use_mad, clamp_before_round = search->clamp_before_round;
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0.0f) min = 0.0f;
    /* max >= min here, so this is ggml make_qkx2's max == min and make_qkx3's
     * max <= min alike (NaN fails both). */
    if (max == min) {
        memset(L, 0, (size_t)n);
        *neg_min = -min;
        return 0.0f;
    }
    float iscale = (float)nmax / (max - min);
    float scale = 1.0f / iscale;
    float best_error = 0.0f;
    for (int i = 0; i < n; ++i) {
        L[i] = (uint8_t)qt__clamp_int(qt__nearest_int(iscale * (x[i] - min)), 0, nmax);
        float diff = scale * (float)L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += w[i] * diff;
    }
    for (int is = 0; is <= search->nstep; ++is) {
        iscale = (search->rmin + search->rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
        for (int i = 0; i < n; ++i) {
            const float v = iscale * (x[i] - min);
            const int l = clamp_before_round ? (v > 0 ? qt__nearest_int(v < (float)nmax ? v : (float)nmax) : 0)
                                             : qt__clamp_int(qt__nearest_int(v), 0, nmax);
            Laux[i] = (uint8_t)l;
            const float fl = (float)l;
            sum_l += w[i] * fl;
            sum_l2 += w[i] * fl * fl;
            sum_xl += w[i] * fl * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0.0f) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0.0f) {
                this_min = 0.0f;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0.0f;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * (float)Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                cur_error += w[i] * diff;
            }
            if (cur_error < best_error) {
                memcpy(L, Laux, (size_t)n);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *neg_min = -min;
    return scale;
}

float qt__fit_scales(int n, int nmax, const float *x, const float *w, uint8_t *L) {
    float max = 0.0f;
    for (int i = 0; i < n; ++i) max = max > x[i] ? max : x[i];
    if (max < QT_GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = (float)nmax / max;
    for (int i = 0; i < n; ++i) L[i] = (uint8_t)qt__nearest_int(iscale * x[i]);
    const float scale = 1.0f / iscale;
    float best_mse = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float diff = x[i] - scale * (float)L[i];
        best_mse += w[i] * diff * diff;
    }
    for (int is = -4; is <= 4; ++is) {
        if (is == 0) continue;
        const float iscale_is = (0.1f * (float)is + (float)nmax) / max;
        const float scale_is = 1.0f / iscale_is;
        float mse = 0.0f;
        for (int i = 0; i < n; ++i) {
            const int l = qt__min_int(nmax, qt__nearest_int(iscale_is * x[i]));
            const float diff = x[i] - scale_is * (float)l;
            mse += w[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        const int l = qt__min_int(nmax, qt__nearest_int(iscale * x[i]));
        L[i] = (uint8_t)l;
        sumlx += w[i] * x[i] * (float)l;
        suml2 += w[i] * (float)l * (float)l;
    }
    for (int sweep = 0; sweep < 5; ++sweep) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            float slx = sumlx - w[i] * x[i] * (float)L[i];
            float sl2 = suml2 - w[i] * (float)L[i] * (float)L[i];
            if (slx > 0.0f && sl2 > 0.0f) {
                const int new_l = qt__min_int(nmax, qt__nearest_int(x[i] * sl2 / slx));
                if (new_l != L[i]) {
                    slx += w[i] * x[i] * (float)new_l;
                    sl2 += w[i] * (float)new_l * (float)new_l;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (uint8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

static void affine_batch_ref(int ngroups, int n, int nmax, const float *x, const float *w,
                             const qt__affine_search *search, uint8_t *L, float *scales, float *neg_mins) {
    uint8_t Laux[256];
    for (int g = 0; g < ngroups; ++g) {
        const size_t o = (size_t)g * (size_t)n;
        scales[g] = qt__fit_affine(n, nmax, x + o, w + o, search, L + o, Laux, &neg_mins[g]);
    }
}

static void symmetric_batch_ref(int ngroups, int n, int nmax, const float *x, const float *w, int8_t *L,
                                float *scales) {
    for (int g = 0; g < ngroups; ++g) {
        const size_t o = (size_t)g * (size_t)n;
        scales[g] = qt__fit_symmetric(n, nmax, x + o, w ? w + o : NULL, L + o);
    }
}

static void descent_batch_ref(int ngroups, int n, int nmax, const float *x, int8_t *L, float *scales) {
    for (int g = 0; g < ngroups; ++g) {
        const size_t o = (size_t)g * (size_t)n;
        scales[g] = qt__fit_symmetric_descent(n, nmax, x + o, L + o);
    }
}

const qt__fit_batch qt__fit_batch_ref = {
    .affine = affine_batch_ref, .symmetric = symmetric_batch_ref, .symmetric_descent = descent_batch_ref};
