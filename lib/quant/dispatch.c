/* lib/quant/dispatch.c — the one place where CPU features pick kernels.
 *
 * Runs once (pthread_once in qt_type_get). Every row starts with its scalar
 * reference; SIMD variants replace `to_float` where the CPU supports them.
 */
#include "traits_internal.h"
#include "engine/dot.h"

void qt_quant_dispatch_init(void) {
    for (int t = 0; t < QT_TYPE_COUNT; t++) qt__traits[t].to_float = qt__traits[t].to_float_ref;
    qt__engine_dot_dispatch(); /* SIMD vec_dot kernels (lib/engine/dot_dispatch.c) */
}
