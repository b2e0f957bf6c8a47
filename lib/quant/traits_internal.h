/* lib/quant/traits_internal.h — the mutable table behind qt_type_get(). */
#ifndef QT_QUANT_TRAITS_INTERNAL_H
#define QT_QUANT_TRAITS_INTERNAL_H

#include "quanta/quant.h"
#include "quanta/num.h"
#include "blocks.h"

extern qt_type_traits qt__traits[QT_TYPE_COUNT];

/* Fills the dispatched fields (to_float) once; called by qt_type_get(). */
void qt_quant_dispatch_init(void);

#endif
