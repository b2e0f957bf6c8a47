/* lib/quantize/quantize_internal.h — what lib/quantize shares with eval (internal). */
#ifndef QT_QUANTIZE_INTERNAL_H
#define QT_QUANTIZE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* Calls fn(ctx, hash) for the FNV-1a hash of every 13-word shingle of t, in
 * text order (the held-out check samples evaluation text with the same rule). */
void qt__calib_shingle_scan(const uint8_t *t, size_t len, void (*fn)(void *, uint64_t), void *ctx);

#endif
