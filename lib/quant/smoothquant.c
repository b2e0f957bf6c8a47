/* lib/quant/smoothquant.c — SmoothQuant's per-channel smoothing factors
 * (Xiao et al., ICML 2023, arXiv:2211.10438, §4 eq. 4):
 * s_j = max|X_j|^alpha / max|W_j|^(1 - alpha), alpha the migration strength
 * (0.5 in the paper and llm-compressor's SmoothQuantModifier). Dividing the
 * input by s and multiplying the weights' columns by s flattens the
 * activation outliers per-token int8 cannot represent (quanta/smooth.h).
 */
#include <math.h>

#include "quanta/smooth.h"

/* llm-compressor clamps both maxima below at 1e-5 before the powers. */
#define SQ_MIN 1e-5f

void qt_smooth_weight_absmax(const float *W, int64_t rows, int64_t cols, float *wmax) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) wmax[j] = fmaxf(wmax[j], fabsf(W[i * cols + j]));
}

int64_t qt_smoothquant_scales(const float *amax, const float *wmax, int64_t n, double alpha, float *s) {
    int64_t dead = 0;
    for (int64_t j = 0; j < n; j++) {
        if (!(amax[j] > 0)) { /* never saw a non-zero value: nothing to migrate */
            s[j] = 1.0f;
            dead++;
            continue;
        }
        const double a = fmax(amax[j], SQ_MIN), w = fmax(wmax[j], SQ_MIN);
        s[j] = (float)(pow(a, alpha) / pow(w, 1.0 - alpha));
    }
    return dead;
}
