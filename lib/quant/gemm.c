/* lib/quant/gemm.c — the reference form of a gemm kernel (gemm.h): one
 * vec_dot per output element. The engine uses it for types without a blocked
 * kernel; tests compare the kernels with it over the scalar vec_dot. */
#include "gemm.h"

void qt__gemm_dots(qt_vec_dot_fn dot, const void *w, size_t ldw, int64_t nr, const void *a, size_t lda, int64_t nc,
                   int64_t n, float *out, int64_t ldo) {
    for (int64_t r = 0; r < nr; r++) {
        const uint8_t *wr = (const uint8_t *)w + (size_t)r * ldw;
        for (int64_t c = 0; c < nc; c++) out[c * ldo + r] = dot(wr, (const uint8_t *)a + (size_t)c * lda, n);
    }
}
