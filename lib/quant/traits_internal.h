/* lib/quant/traits_internal.h — the const traits table behind qt_type_get(). */
#ifndef QT_QUANT_TRAITS_INTERNAL_H
#define QT_QUANT_TRAITS_INTERNAL_H

#include "quanta/quant.h"
#include "quanta/num.h"
#include "blocks.h"

/* The scalar references; `to_float` is left NULL here (dispatch.c fills it). */
extern const qt_type_traits qt__traits[QT_TYPE_COUNT];

/* Row t with the kernels dispatch.c chose for this CPU (t a valid row). */
const qt_type_traits *qt__traits_dispatched(qt_type t);

#endif
