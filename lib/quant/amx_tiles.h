/* lib/quant/amx_tiles.h — the tile configuration every AMX kernel loads
 * (internal; include only from *_amx.c, which are built with -mamx-*).
 *
 * Why every call loads its own: the kernel grants tile data once per process
 * (lib/core/cpu.c, arch_prctl(ARCH_REQ_XCOMP_PERM)), but the configuration is
 * per thread, and a tile instruction without one faults (llama.cpp's AMX path
 * crashes on our VMs for lack of it). The kernels load it at the start of each
 * call, on whichever thread runs it, and release it at the end (_tile_release),
 * so no idle thread keeps tile state for the OS to save on context switches.
 */
#ifndef QT_QUANT_AMX_TILES_H
#define QT_QUANT_AMX_TILES_H

#include <immintrin.h>
#include <stdalign.h>
#include <stdint.h>
#include <string.h>

/* LDTILECFG's 64-byte memory operand (Intel SDM vol. 2, LDTILECFG): palette 1,
 * then per tile register its bytes per row and its rows. */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} qt__amx_tilecfg;
_Static_assert(sizeof(qt__amx_tilecfg) == 64, "LDTILECFG reads 64 bytes");

/* A shape per tile register 0..7: rows[t] rows of colsb[t] bytes. */
typedef struct {
    uint8_t rows;
    uint16_t colsb;
} qt__amx_shape;

/* Loads palette 1 with tiles 0..n-1 shaped as shape[t] (n <= 8). */
static inline void qt__amx_configure(const qt__amx_shape *shape, int n) {
    alignas(64) qt__amx_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < n; t++) cfg.rows[t] = shape[t].rows, cfg.colsb[t] = shape[t].colsb;
    /* GCC 12 does not see that LDTILECFG reads all 64 bytes: without this barrier it dropped the
     * shape stores as dead (a tile instruction then faults with SIGILL: test_engine_dot) */
    __asm__ __volatile__("" : : "r"(&cfg) : "memory");
    _tile_loadconfig(&cfg);
}

#endif
