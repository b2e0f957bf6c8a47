/* lib/core/cpu.c — CPU feature detection, done once.
 *
 * AMX tiles need the kernel's permission before first use: without
 * arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) the first tile
 * instruction faults (this is why llama.cpp's AMX path crashes on machines
 * like ours). We ask once here and report `amx_usable`; each thread that runs
 * tile code must still load its own tile configuration (ldtilecfg).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_level.h"
#include "quanta/core.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define ARCH_GET_XCOMP_PERM 0x1022
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static char amx_off[160]; /* why a CPU with AMX-INT8 does not run the amx level ("": it does, or has none) */

static uint64_t xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static void detect(qt_cpu_features *f) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    f->sse42 = (c >> 20) & 1;
    f->fma = (c >> 12) & 1;
    f->f16c = (c >> 29) & 1;
    bool osxsave = (c >> 27) & 1, avx_hw = (c >> 28) & 1;
    uint64_t xcr0 = osxsave ? xgetbv0() : 0;
    bool ymm_os = (xcr0 & 0x6) == 0x6;
    bool zmm_os = (xcr0 & 0xE6) == 0xE6;
    bool amx_os = (xcr0 & (3u << 17)) == (3u << 17);
    f->avx = avx_hw && ymm_os;
    if (!f->avx) { f->fma = f->f16c = false; }
    if (__get_cpuid_max(0, NULL) < 7) return;
    __cpuid_count(7, 0, a, b, c, d);
    f->avx2 = f->avx && ((b >> 5) & 1);
    f->avx512f = zmm_os && ((b >> 16) & 1);
    f->avx512dq = f->avx512f && ((b >> 17) & 1);
    f->avx512bw = f->avx512f && ((b >> 30) & 1);
    f->avx512vl = f->avx512f && ((b >> 31) & 1);
    f->avx512_vnni = f->avx512f && ((c >> 11) & 1);
    f->amx_bf16 = amx_os && ((d >> 22) & 1);
    f->amx_tile = amx_os && ((d >> 24) & 1);
    f->amx_int8 = amx_os && ((d >> 25) & 1);
    const bool amx_int8_hw = (d >> 25) & 1;
    __cpuid_count(7, 1, a, b, c, d);
    f->avx_vnni = f->avx2 && ((a >> 4) & 1);
    f->avx512_bf16 = f->avx512f && ((a >> 5) & 1);
    if (f->amx_tile) {
        unsigned long bits = 0;
        if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0)
            snprintf(amx_off, sizeof amx_off, "the kernel refused tile data: arch_prctl(ARCH_REQ_XCOMP_PERM): %s",
                     strerror(errno));
        else if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &bits) != 0)
            snprintf(amx_off, sizeof amx_off, "arch_prctl(ARCH_GET_XCOMP_PERM): %s", strerror(errno));
        else if (!((bits >> XFEATURE_XTILEDATA) & 1))
            snprintf(amx_off, sizeof amx_off, "the kernel did not grant tile data (ARCH_GET_XCOMP_PERM)");
        else
            f->amx_usable = true;
    } else if (amx_int8_hw && !amx_os) {
        snprintf(amx_off, sizeof amx_off, "the OS does not enable tile state (XCR0)");
    }
}
#else
static char amx_off[1];
static void detect(qt_cpu_features *f) { (void)f; }
#endif

static qt__cpu_level level_of(const qt_cpu_features *f);
static qt_cpu_features features;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* QUANTA_CPU caps the level so the fallbacks can be tested on a big machine. */
static void cap_from_env(qt_cpu_features *f) {
    const char *cap = getenv("QUANTA_CPU");
    if (!cap) return;
    if (!strcmp(cap, "scalar")) {
        memset(f, 0, sizeof *f);
    } else if (!strcmp(cap, "avx2")) {
        if (f->amx_int8) snprintf(amx_off, sizeof amx_off, "QUANTA_CPU=avx2");
        f->avx512f = f->avx512bw = f->avx512vl = f->avx512dq = f->avx512_vnni = f->avx512_bf16 = false;
        f->amx_tile = f->amx_int8 = f->amx_bf16 = f->amx_usable = false;
    } else if (!strcmp(cap, "avx512")) {
        if (f->amx_int8) snprintf(amx_off, sizeof amx_off, "QUANTA_CPU=avx512");
        f->amx_tile = f->amx_int8 = f->amx_bf16 = f->amx_usable = false;
    }
}

static char level_detail[256]; /* qt_cpu_level_detail */

static void init(void) {
    detect(&features);
    cap_from_env(&features);
    snprintf(level_detail, sizeof level_detail, amx_off[0] ? "%s (AMX off: %s)" : "%s",
             qt__cpu_level_str(level_of(&features)), amx_off);
}

const qt_cpu_features *qt_cpu(void) {
    pthread_once(&once, init);
    return &features;
}

qt__cpu_level qt__cpu_level_get(void) { return level_of(qt_cpu()); }

static qt__cpu_level level_of(const qt_cpu_features *f) {
    /* VNNI too: the AVX-512 gemm kernels use vpdpbusd (Ice Lake, Zen 4 and later;
     * Skylake-X runs the AVX2 kernels) */
    /* AMX: only once the kernel granted tile data (detect), else the first tile instruction faults */
    if (f->avx512f && f->avx512bw && f->avx512vl && f->avx512_vnni)
        return f->amx_tile && f->amx_int8 && f->amx_usable ? QT__CPU_AMX : QT__CPU_AVX512;
    if (f->avx2 && f->fma && f->f16c) return QT__CPU_AVX2;
    return QT__CPU_SCALAR;
}

const char *qt__cpu_level_str(qt__cpu_level l) {
    static const char *const names[QT__CPU_LEVEL_COUNT] = {"scalar", "avx2", "avx512", "amx"};
    return (unsigned)l < QT__CPU_LEVEL_COUNT ? names[l] : "?";
}

const char *qt_cpu_level_name(void) { return qt__cpu_level_str(qt__cpu_level_get()); }

const char *qt_cpu_level_detail(void) {
    qt_cpu();
    return level_detail;
}
