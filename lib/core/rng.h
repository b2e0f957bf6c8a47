/* lib/core/rng.h — a small seeded generator for code that must draw the same
 * numbers on every machine (internal). splitmix64 (Steele, Lea, Flood 2014):
 * full period, one 64-bit state word, no platform dependence. */
#ifndef QT_CORE_RNG_H
#define QT_CORE_RNG_H

#include <stdint.h>

typedef struct qt__rng {
    uint64_t s;
} qt__rng;

static inline uint64_t qt__rng_next(qt__rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* uniform in [0, 1) with 53 random bits */
static inline double qt__rng_unit(qt__rng *r) { return (double)(qt__rng_next(r) >> 11) * 0x1.0p-53; }
/* uniform integer in [lo, hi] (hi - lo < 2^63); the modulo bias is below 2^-40 for ranges under 2^24 */
static inline int64_t qt__rng_range(qt__rng *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)(qt__rng_next(r) % (uint64_t)(hi - lo + 1));
}

#endif
