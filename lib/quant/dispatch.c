/* lib/quant/dispatch.c — the one place where CPU features pick kernels.
 *
 * Runs once (pthread_once in qt_type_get, and its own once for the
 * compressed-tensors int4 kernel). Every row starts with its scalar
 * reference; SIMD variants (lib/quant/simd.h) replace `to_float` for the
 * level qt_cpu_level_name() reports, which honours QUANTA_CPU=scalar|avx2.
 */
#include <pthread.h>
#include <string.h>

#include "ct_internal.h"
#include "simd.h"
#include "traits_internal.h"
#include "dot.h"

typedef enum { LEVEL_SCALAR, LEVEL_AVX2, LEVEL_AVX512 } simd_level;

static simd_level current_level(void) {
    const char *name = qt_cpu_level_name();
    if (!strcmp(name, "avx512")) return LEVEL_AVX512;
    if (!strcmp(name, "avx2")) return LEVEL_AVX2;
    return LEVEL_SCALAR;
}

void qt_quant_dispatch_init(void) {
    for (int t = 0; t < QT_TYPE_COUNT; t++) qt__traits[t].to_float = qt__traits[t].to_float_ref;
#ifdef QT_ARCH_X86
    const simd_level level = current_level();
    if (level == LEVEL_AVX512) {
        qt__traits[QT_TYPE_Q4_0].to_float = qt__dequantize_q4_0_avx512;
        qt__traits[QT_TYPE_Q8_0].to_float = qt__dequantize_q8_0_avx512;
        qt__traits[QT_TYPE_Q4_K].to_float = qt__dequantize_q4_K_avx512;
        qt__traits[QT_TYPE_Q6_K].to_float = qt__dequantize_q6_K_avx512;
    } else if (level == LEVEL_AVX2) {
        qt__traits[QT_TYPE_Q4_0].to_float = qt__dequantize_q4_0_avx2;
        qt__traits[QT_TYPE_Q8_0].to_float = qt__dequantize_q8_0_avx2;
        qt__traits[QT_TYPE_Q4_K].to_float = qt__dequantize_q4_K_avx2;
        qt__traits[QT_TYPE_Q6_K].to_float = qt__dequantize_q6_K_avx2;
    }
#endif
    qt__engine_dot_dispatch(); /* SIMD vec_dot kernels (lib/quant/dot_dispatch.c) */
}

/* ---- compressed-tensors int4 group dequantization ---------------------------- */

static qt__ct_int4_row_fn ct_int4_kernel = qt__ct_int4_row_ref;
static pthread_once_t ct_once = PTHREAD_ONCE_INIT;

static void ct_dispatch_init(void) {
    ct_int4_kernel = qt__ct_int4_row_ref;
#ifdef QT_ARCH_X86
    const simd_level level = current_level();
    if (level == LEVEL_AVX512) ct_int4_kernel = qt__ct_int4_row_avx512;
    else if (level == LEVEL_AVX2) ct_int4_kernel = qt__ct_int4_row_avx2;
#endif
}

qt__ct_int4_row_fn qt__ct_int4_row_kernel(void) {
    pthread_once(&ct_once, ct_dispatch_init);
    return ct_int4_kernel;
}
