/* lib/core/blas.c — OpenBLAS set up once: its kernel set and its threads.
 *
 * Debian 12's OpenBLAS 0.3.21 (DYNAMIC_ARCH) picks its kernels from the CPUID
 * family and model (driver/others/dynamic.c, get_coretype). For an Intel
 * family-6 model its table does not list (Emerald Rapids, model 0xCF:
 * extended model 0xC has no case), the inner switch falls through into the
 * outer switch's Pentium 4 case and returns Prescott: SSE3 kernels on an
 * AVX-512 CPU. Measured on such a VM (process CPU seconds, one thread):
 * sgemm 18 -> 72 GFLOP per CPU second, dpotrf + dtrtri 8.7 -> 25 (docs/gptq.md
 * "Where the time goes"). The same library's own fallback for a CPU that it
 * does not recognise at all (get_coretype returning NULL) is the right one:
 * Cooperlake with AVX-512 BF16, else SkylakeX with AVX-512 VL, else Haswell
 * with AVX2. So when OpenBLAS chose a kernel set below the level the CPU runs
 * (quanta's own detection, lib/core/cpu.c, capped by QUANTA_CPU), quanta asks
 * for that fallback through OpenBLAS's own mechanism: OPENBLAS_CORETYPE, read
 * by gotoblas_dynamic_init, re-run once before quanta's first BLAS call (no
 * BLAS buffer exists yet; the variable is removed again so that child
 * processes see the environment they were given). A CPU that OpenBLAS
 * recognises (Zen 4: Cooperlake; Sapphire Rapids: Cooperlake; Zen 2/3: Zen)
 * keeps its choice, and so does anyone who set OPENBLAS_CORETYPE. The bits of
 * GPTQ's Hessians and factors follow the kernels (docs/gptq.md "Determinism"):
 * the same on one machine at any --threads, not across CPUs.
 */
#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "blas.h"
#include "cpu_level.h"
#include "quanta/core.h"

/* Exported by every DYNAMIC_ARCH OpenBLAS, declared in none of its headers;
 * weak, so a build against a single-target OpenBLAS simply keeps its kernels. */
extern void gotoblas_dynamic_init(void) __attribute__((weak));
extern void gotoblas_dynamic_quit(void) __attribute__((weak));

typedef enum { BL_SSE = 0, BL_AVX, BL_AVX2, BL_AVX512 } blas_level;

/* OpenBLAS 0.3.21's x86-64 kernel sets by the widest vectors they use; a name not listed is BL_SSE. */
static const struct { const char *name; blas_level level; } blas_cores[] = {
    {"Sandybridge", BL_AVX}, {"Bulldozer", BL_AVX},  {"Piledriver", BL_AVX}, {"Steamroller", BL_AVX},
    {"Excavator", BL_AVX},   {"Haswell", BL_AVX2},   {"Zen", BL_AVX2},       {"SkylakeX", BL_AVX512},
    {"Cooperlake", BL_AVX512}, {"SapphireRapids", BL_AVX512},
};

static blas_level level_of_core(const char *name) {
    for (size_t i = 0; i < sizeof blas_cores / sizeof blas_cores[0]; i++)
        if (name && !strcasecmp(name, blas_cores[i].name)) return blas_cores[i].level;
    return BL_SSE;
}

static char note[96];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void choose_core(void) {
    if (getenv("OPENBLAS_CORETYPE") || !gotoblas_dynamic_init || !gotoblas_dynamic_quit) return;
    const qt_cpu_features *f = qt_cpu();
    const qt__cpu_level q = qt__cpu_level_get(); /* QUANTA_CPU=avx2|scalar caps what is asked for */
    const char *want = NULL;
    blas_level wl = BL_SSE;
    if (q >= QT__CPU_AVX512 && f->avx512dq) { /* SkylakeX's kernels: AVX-512 F, DQ, BW, VL */
        want = f->avx512_bf16 ? "Cooperlake" : "SkylakeX";
        wl = BL_AVX512;
    } else if (q >= QT__CPU_AVX2) {
        want = "Haswell";
        wl = BL_AVX2;
    }
    char had[32];
    snprintf(had, sizeof had, "%s", openblas_get_corename());
    if (!want || level_of_core(had) >= wl) return;
    setenv("OPENBLAS_CORETYPE", want, 1);
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init();
    unsetenv("OPENBLAS_CORETYPE");
    snprintf(note, sizeof note, "OpenBLAS chose %s kernels; quanta asked for %s", had, openblas_get_corename());
}

void qt__blas_pin(void) {
    pthread_once(&once, choose_core);
    openblas_set_num_threads(1);
}

const char *qt__blas_core(void) {
    pthread_once(&once, choose_core);
    return openblas_get_corename();
}

const char *qt__blas_core_note(void) {
    pthread_once(&once, choose_core);
    return note;
}
