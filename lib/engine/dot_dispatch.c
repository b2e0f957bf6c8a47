/* lib/engine/dot_dispatch.c — SIMD vec_dot kernels replace the scalar
 * references in the traits table where the CPU supports them (called once
 * from qt_quant_dispatch_init). */
#include "dot.h"
#include "quant/traits_internal.h"

void qt__engine_dot_dispatch(void) {
}
