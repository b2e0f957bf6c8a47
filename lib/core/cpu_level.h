/* lib/core/cpu_level.h — the SIMD level kernels are chosen by (internal).
 *
 * Levels are ordered: a CPU at a level runs every kernel of the levels below.
 * The level comes from qt_cpu() once, so QUANTA_CPU=scalar|avx2|avx512 caps it
 * (tests and benchmarks use that to run the fallbacks on a big machine).
 */
#ifndef QT_CORE_CPU_LEVEL_H
#define QT_CORE_CPU_LEVEL_H

typedef enum qt__cpu_level {
    QT__CPU_SCALAR = 0,
    QT__CPU_AVX2,      /* AVX2 + FMA + F16C */
    QT__CPU_AVX512,    /* AVX-512 F + BW + VL + VNNI */
    QT__CPU_AMX,       /* AVX512 + AMX-TILE + AMX-INT8, tile data granted by the kernel */
    QT__CPU_LEVEL_COUNT
} qt__cpu_level;

qt__cpu_level qt__cpu_level_get(void);
const char *qt__cpu_level_str(qt__cpu_level l); /* "scalar", "avx2", "avx512", "amx" */

#endif
