/* lib/quant/dispatch.c — the one place where CPU features pick kernels.
 *
 * Runs once (pthread_once in qt_type_get). Every row starts with its scalar
 * reference; SIMD variants replace `to_float` where the CPU supports them.
 */
#include <pthread.h>

#include "ct_internal.h"
#include "traits_internal.h"

void qt_quant_dispatch_init(void) {
    for (int t = 0; t < QT_TYPE_COUNT; t++) qt__traits[t].to_float = qt__traits[t].to_float_ref;
}

/* ---- compressed-tensors int4 group dequantization ---------------------------- */

static qt__ct_int4_row_fn ct_int4_kernel = qt__ct_int4_row_ref;
static pthread_once_t ct_once = PTHREAD_ONCE_INIT;

static void ct_dispatch_init(void) {
    ct_int4_kernel = qt__ct_int4_row_ref;
}

qt__ct_int4_row_fn qt__ct_int4_row_kernel(void) {
    pthread_once(&ct_once, ct_dispatch_init);
    return ct_int4_kernel;
}
