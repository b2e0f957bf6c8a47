/* lib/plan/hardware.c — accelerators and hosts, as data.
 *
 * Memory is the vendor's figure in GB, used as decimal GB (the seed's
 * convention; the driver reports a slightly different total, which --memory
 * can give exactly). Tensor throughput is the datasheet's DENSE figure (the
 * "with sparsity" numbers are twice these); 0 means the vendor does not
 * publish it or the card has no such unit. Compute capability is NVIDIA's
 * (CUDA C Programming Guide, compute-capabilities appendix).
 */
#include <string.h>
#include <unistd.h>

#include "plan_internal.h"

static const qt_hw_info hw_table[] = {
    /* key          aliases                                   name                    class            arch                 cc   GB     type      GB/s   TF16   INT8   FP8    FP4   util  source */
    {"t4",        "tesla-t4,nvidia-t4",                      "NVIDIA T4",            QT_HW_TURING,    "Turing (TU104)",     75,  16,    "GDDR6",   320,   65,    130,   0,     0,    0.90, "NVIDIA T4 datasheet"},
    {"v100",      "v100-16gb,v100-sxm2,tesla-v100",          "NVIDIA V100 16GB",     QT_HW_VOLTA,     "Volta (GV100)",      70,  16,    "HBM2",    900,   125,   0,     0,     0,    0.90, "NVIDIA V100 datasheet (SXM2)"},
    {"v100-32gb", "v100-sxm2-32gb",                          "NVIDIA V100 32GB",     QT_HW_VOLTA,     "Volta (GV100)",      70,  32,    "HBM2",    900,   125,   0,     0,     0,    0.90, "NVIDIA V100 datasheet (SXM2)"},
    {"a10g",      "nvidia-a10g",                             "NVIDIA A10G",          QT_HW_AMPERE,    "Ampere (GA102)",     86,  24,    "GDDR6",   600,   0,     0,     0,     0,    0.90, "AWS EC2 G5 (24 GB GDDR6, 600 GB/s); tensor throughput not published for the A10G"},
    {"l4",        "nvidia-l4",                               "NVIDIA L4",            QT_HW_ADA,       "Ada (AD104)",        89,  24,    "GDDR6",   300,   121,   242,   242,   0,    0.90, "NVIDIA L4 datasheet"},
    {"l40s",      "nvidia-l40s",                             "NVIDIA L40S",          QT_HW_ADA,       "Ada (AD102)",        89,  48,    "GDDR6",   864,   362,   733,   733,   0,    0.90, "NVIDIA L40S datasheet"},
    {"a100-40gb", "a100,a100-40g,a100-sxm4-40gb,a100-pcie-40gb", "NVIDIA A100 40GB", QT_HW_AMPERE,    "Ampere (GA100)",     80,  40,    "HBM2",    1555,  312,   624,   0,     0,    0.90, "NVIDIA A100 datasheet"},
    {"a100-80gb", "a100-80g,a100-sxm4-80gb,a100-sxm",        "NVIDIA A100 80GB",     QT_HW_AMPERE,    "Ampere (GA100)",     80,  80,    "HBM2e",   2039,  312,   624,   0,     0,    0.90, "NVIDIA A100 datasheet (SXM4; PCIe 1,935 GB/s)"},
    {"h100-sxm",  "h100,h100-80gb,h100-sxm5",                "NVIDIA H100 SXM",      QT_HW_HOPPER,    "Hopper (GH100)",     90,  80,    "HBM3",    3350,  989,   1979,  1979,  0,    0.90, "NVIDIA H100 datasheet"},
    {"h100-pcie", "h100-pcie-80gb",                          "NVIDIA H100 PCIe",     QT_HW_HOPPER,    "Hopper (GH100)",     90,  80,    "HBM2e",   2000,  756,   1513,  1513,  0,    0.90, "NVIDIA H100 datasheet"},
    {"h200",      "h200-sxm,h200-141gb",                     "NVIDIA H200",          QT_HW_HOPPER,    "Hopper (GH100)",     90,  141,   "HBM3e",   4800,  989,   1979,  1979,  0,    0.90, "NVIDIA H200 datasheet"},
    {"b200",      "hgx-b200,nvidia-b200",                    "NVIDIA B200",          QT_HW_BLACKWELL, "Blackwell (GB100)",  100, 180,   "HBM3e",   8000,  2250,  4500,  4500,  9000, 0.90, "NVIDIA DGX/HGX B200 (1,440 GB over 8 GPUs; 192 GB physical)"},
    {"rtx-3090",  "3090,geforce-rtx-3090",                   "NVIDIA RTX 3090",      QT_HW_AMPERE,    "Ampere (GA102)",     86,  24,    "GDDR6X",  936,   71,    284,   0,     0,    0.90, "NVIDIA Ampere GA102 whitepaper (FP16 tensor with FP32 accumulate)"},
    {"rtx-4090",  "4090,geforce-rtx-4090",                   "NVIDIA RTX 4090",      QT_HW_ADA,       "Ada (AD102)",        89,  24,    "GDDR6X",  1008,  165,   661,   330,   0,    0.90, "NVIDIA Ada whitepaper (FP32 accumulate)"},
    {"rtx-5090",  "5090,geforce-rtx-5090",                   "NVIDIA RTX 5090",      QT_HW_BLACKWELL, "Blackwell (GB202)",  120, 32,    "GDDR7",   1792,  0,     0,     0,     0,    0.90, "NVIDIA GeForce RTX 5090 specifications (dense tensor figures not published)"},
    {"mi250x",    "instinct-mi250x",                         "AMD Instinct MI250X",  QT_HW_CDNA2,     "CDNA2 (gfx90a)",     0,   128,   "HBM2e",   3277,  383,   383,   0,     0,    0.90, "AMD Instinct MI250X datasheet (two GCDs of 64 GB)"},
    {"mi300x",    "instinct-mi300x",                         "AMD Instinct MI300X",  QT_HW_CDNA3,     "CDNA3 (gfx942)",     0,   192,   "HBM3",    5300,  1307,  2615,  2615,  0,    0.90, "AMD Instinct MI300X datasheet"},
    /* Hosts. "cpu" is this machine (qt_hw_local_cpu fills the RAM); Apple figures are the
     * largest memory configuration; the runtime may wire only ~75% of it for the GPU
     * (Metal's recommendedMaxWorkingSetSize, an allowance: pass --util to change). */
    {"cpu",       "host,local,x86",                          "this machine (CPU)",   QT_HW_CPU,       "x86-64",             0,   0,     "DDR",     0,     0,     0,     0,     0,    0.90, "RAM from the operating system, features from CPUID"},
    {"m1-max",    "apple-m1-max",                            "Apple M1 Max 64GB",    QT_HW_APPLE,     "Apple M1 Max",       0,   64,    "unified", 400,   0,     0,     0,     0,    0.75, "Apple M1 Max specifications"},
    {"m2-max",    "apple-m2-max",                            "Apple M2 Max 96GB",    QT_HW_APPLE,     "Apple M2 Max",       0,   96,    "unified", 400,   0,     0,     0,     0,    0.75, "Apple M2 Max specifications"},
    {"m2-ultra",  "apple-m2-ultra",                          "Apple M2 Ultra 192GB", QT_HW_APPLE,     "Apple M2 Ultra",     0,   192,   "unified", 800,   0,     0,     0,     0,    0.75, "Apple M2 Ultra specifications"},
    {"m3-max",    "apple-m3-max",                            "Apple M3 Max 128GB",   QT_HW_APPLE,     "Apple M3 Max",       0,   128,   "unified", 400,   0,     0,     0,     0,    0.75, "Apple M3 Max specifications (16-core CPU variant)"},
    {"m3-ultra",  "apple-m3-ultra",                          "Apple M3 Ultra 512GB", QT_HW_APPLE,     "Apple M3 Ultra",     0,   512,   "unified", 819,   0,     0,     0,     0,    0.75, "Apple M3 Ultra specifications"},
    {"m4-pro",    "apple-m4-pro",                            "Apple M4 Pro 64GB",    QT_HW_APPLE,     "Apple M4 Pro",       0,   64,    "unified", 273,   0,     0,     0,     0,    0.75, "Apple M4 Pro specifications"},
    {"m4-max",    "apple-m4-max",                            "Apple M4 Max 128GB",   QT_HW_APPLE,     "Apple M4 Max",       0,   128,   "unified", 546,   0,     0,     0,     0,    0.75, "Apple M4 Max specifications"},
};
static const int n_hw = (int)(sizeof hw_table / sizeof hw_table[0]);

static const char *const class_names[QT_HW_CLASS_COUNT] = {
    "Volta", "Turing", "Ampere", "Ada", "Hopper", "Blackwell", "CDNA2", "CDNA3", "CPU", "Apple",
};

const char *qt_hw_class_name(qt_hw_class c) {
    return (c >= 0 && c < QT_HW_CLASS_COUNT) ? class_names[c] : "unknown";
}

int qt_hw_count(void) { return n_hw; }

const qt_hw_info *qt_hw_get(int i) { return (i >= 0 && i < n_hw) ? &hw_table[i] : NULL; }

const qt_hw_info *qt_hw_find(const char *name) {
    for (int i = 0; i < n_hw; i++)
        if (qt__name_in_list(name, hw_table[i].key, hw_table[i].aliases)) return &hw_table[i];
    return NULL;
}

qt_status qt_hw_local_cpu(qt_hw_info *out, char *name_buf, size_t name_size) {
    const qt_hw_info *tmpl = qt_hw_find("cpu");
    *out = *tmpl;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return qt_error(QT_ERR_UNSUPPORTED, "cpu: cannot read the amount of RAM from the OS; give --memory");
    out->mem_gb = (double)pages * (double)page / QT_GB;
    const qt_cpu_features *f = qt_cpu();
#if defined(__x86_64__) || defined(_M_X64)
    const char *isa = "x86-64";
#elif defined(__aarch64__)
    const char *isa = "arm64";
#else
    const char *isa = "CPU";
#endif
    out->arch_name = isa;
    snprintf(name_buf, name_size, "this machine (%s%s%s%s, %.1f GB RAM)", isa, f->avx2 ? ", AVX2" : "",
             f->avx512f ? ", AVX-512" : "", f->amx_bf16 ? ", AMX-BF16" : "", out->mem_gb);
    out->name = name_buf;
    return QT_OK;
}

static int alias_distance(const char *name, const char *key, const char *aliases) {
    int d = qt_plan_name_distance(name, key);
    char one[64];
    for (const char *p = aliases; p && *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len >= sizeof one) len = sizeof one - 1;
        memcpy(one, p, len);
        one[len] = 0;
        int da = qt_plan_name_distance(name, one);
        if (da < d) d = da;
        p = c ? c + 1 : p + len;
    }
    return d;
}

int qt_plan_suggest(const char *name, int models, const char **out, int n) {
    /* Every known key by edit distance (aliases count for hardware: "a100"
     * is closer to "a10" than "a100-40gb" is); keep the n closest that still
     * look like a typo of the same thing, ties in table order. */
    enum { MAX_KEYS = 128 };
    const char *keys[MAX_KEYS];
    int dist[MAX_KEYS];
    int count = models ? qt_plan_preset_count() : n_hw;
    if (count > MAX_KEYS) count = MAX_KEYS;
    char norm[96];
    qt__norm_name(name, norm, sizeof norm);
    int limit = (int)strlen(norm) / 2 + 2;
    int k = 0;
    for (int i = 0; i < count; i++) {
        const char *key = models ? qt_plan_preset_get(i)->key : hw_table[i].key;
        int d = models ? qt_plan_name_distance(name, key) : alias_distance(name, key, hw_table[i].aliases);
        if (d > limit) continue;
        int pos = k++;
        while (pos > 0 && dist[pos - 1] > d) {
            dist[pos] = dist[pos - 1];
            keys[pos] = keys[pos - 1];
            pos--;
        }
        dist[pos] = d;
        keys[pos] = key;
    }
    if (k > n) k = n;
    for (int i = 0; i < k; i++) out[i] = keys[i];
    return k;
}
