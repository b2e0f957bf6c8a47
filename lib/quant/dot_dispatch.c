/* lib/quant/dot_dispatch.c — SIMD vec_dot kernels replace the scalar
 * references in the traits table where the CPU supports them (called once
 * from qt_quant_dispatch_init, which honours QUANTA_CPU=scalar|avx2|avx512
 * through qt_cpu_level_name()). The SIMD kernels give the references' bits,
 * so the choice changes speed, never results. */
#include <string.h>

#include "dot.h"
#include "traits_internal.h"

void qt__engine_dot_dispatch(void) {
#ifdef QT_ARCH_X86
    const char *level = qt_cpu_level_name();
    if (!strcmp(level, "avx2") || !strcmp(level, "avx512")) {
        qt__traits[QT_TYPE_F32].vec_dot = qt__dot_f32_avx2;
        qt__traits[QT_TYPE_F16].vec_dot = qt__dot_f16_avx2;
        qt__traits[QT_TYPE_F32].vec_dot_gemm = qt__gemm_f32_avx2;
        qt__traits[QT_TYPE_F16].vec_dot_gemm = qt__gemm_f16_avx2;
        qt__traits[QT_TYPE_Q8_0].vec_dot = qt__dot_q8_0_q8_0_avx2;
        qt__traits[QT_TYPE_Q4_0].vec_dot = qt__dot_q4_0_q8_0_avx2;
    }
#endif
}
