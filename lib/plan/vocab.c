/* lib/plan/vocab.c — one scheme vocabulary for every verb: the planner's
 * scheme keys and aliases, and the weight-format names `quanta formats`
 * prints, resolved to the scheme that stores that format.
 *
 * The format -> scheme links below are the one place this fact lives until the
 * single format/scheme table (the groundwork issue) carries it per row; then
 * format_links[] becomes a column of that table and this file reads it.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan_internal.h"
#include "quanta/formats.h"

typedef struct format_link {
    const char *format;  /* a name of lib/quant/catalog.c */
    const char *scheme;  /* the scheme key it means, or is the nearest planned relative of */
    bool same;           /* true: the scheme stores exactly this format; false: only related */
} format_link;

static const format_link format_links[] = {
    {"f16", "fp16", true},
    {"w8a16-channel", "w8a16", true},
    {"w8a8-int8", "int8", true},
    {"w8a8-fp8", "fp8", true},
    {"w4a16-g128", "w4a16", true},
    {"w4a16-g128-asym", "w4a16-asym", true},
    {"mxfp4-ct", "mxfp4", true},
    {"q6_K", "q6_k", true},
    {"q4_K", "q4_k_m", false},    /* Q4_K_M is llama.cpp's mix of mostly q4_K with q6_K */
    {"q5_K", "q5_k_m", false},
    {"fp8-e4m3-tensor", "fp8", false},
    {"w4a16-g32", "w4a16", false},
    {"mxfp4", "mxfp4", false},    /* GGUF's MXFP4 block; the planned scheme is compressed-tensors' */
};
static const int n_format_links = (int)(sizeof format_links / sizeof format_links[0]);

const qt_scheme_info *qt_scheme_resolve(const char *name) {
    const qt_scheme_info *s = qt_scheme_find(name);
    if (s) return s;
    for (int i = 0; i < n_format_links; i++)
        if (format_links[i].same && qt__name_in_list(name, format_links[i].format, NULL))
            return qt_scheme_find(format_links[i].scheme);
    return NULL;
}

static void add_unique(const char **out, int *k, int n, const char *key) {
    for (int i = 0; i < *k; i++)
        if (!strcmp(out[i], key)) return;
    if (*k < n) out[(*k)++] = key;
}

int qt_scheme_suggest(const char *name, const char **out, int n, const char **note) {
    static char why[256];
    int k = 0;
    *note = NULL;
    for (int i = 0; i < n_format_links; i++)
        if (!format_links[i].same && qt__name_in_list(name, format_links[i].format, NULL))
            add_unique(out, &k, n, qt_scheme_find(format_links[i].scheme)->key);
    const qt_format_info *f = qt_format_find(name);
    if (f) {
        snprintf(why, sizeof why, "%s is a weight format (quanta formats) that the planner does not plan as a scheme",
                 f->name);
        *note = why;
        /* the planned schemes of the same ecosystem (GGUF or not) nearest in bits per weight */
        const bool gguf = f->ggml_type >= 0;
        for (double tol = 0.5; k < 2 && tol <= 4; tol += 0.5)
            for (int i = 0; i < qt_scheme_count() && k < 2; i++) {
                const qt_scheme_info *s = qt_scheme_get(i);
                if ((s->runtime == QT_RUNTIME_LLAMACPP) == gguf && fabs(s->bits - f->bits_per_weight) <= tol)
                    add_unique(out, &k, n, s->key);
            }
    }
    char norm[96];
    qt__norm_name(name, norm, sizeof norm);
    const int limit = (int)strlen(norm) / 3 + 1;
    for (int d = 0; d <= limit && k < n; d++)
        for (int i = 0; i < qt_scheme_count(); i++) {
            const qt_scheme_info *s = qt_scheme_get(i);
            char cand[96];
            qt__norm_name(s->key, cand, sizeof cand);
            bool prefix = strlen(norm) >= 2 && !strncmp(cand, norm, strlen(norm));
            if (qt_plan_name_distance(name, s->key) == d || (d == limit && prefix)) add_unique(out, &k, n, s->key);
        }
    return k;
}
