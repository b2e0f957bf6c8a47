/* lib/plan/vocab.c — one scheme vocabulary for every verb: the planner's
 * scheme keys and aliases, and the weight-format names `quanta formats`
 * prints, resolved to the scheme that stores that format.
 *
 * Which scheme stores which format is the scheme table's `format` column
 * (lib/quant/schemes.c); a GGUF scheme whose file type is a mix (Q4_K_M is
 * mostly q4_K with some q6_K) only relates to its base format. The few formats
 * no scheme stores but a planned scheme is the nearest relative of are below.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "plan_internal.h"
#include "quanta/formats.h"

typedef struct format_relative {
    const char *format;  /* a format row (lib/quant/schemes.c formats[]) no scheme stores */
    const char *scheme;  /* the planned scheme nearest to it */
} format_relative;

static const format_relative format_relatives[] = {
    {"w8a16-channel", "w8a16"},   /* the planner's w8a16 has group-128 scales */
    {"fp8-e4m3-tensor", "fp8"},   /* one scale per tensor; the planned fp8 has one per channel */
    {"w4a16-g32", "w4a16"},
    {"mxfp4", "mxfp4"},           /* GGUF's MXFP4 block; the planned scheme is compressed-tensors' */
};
static const int n_format_relatives = (int)(sizeof format_relatives / sizeof format_relatives[0]);

/* True when scheme s stores exactly format `name`; *related when its base format is `name` in a mix. */
static bool scheme_stores(const qt_scheme_info *s, const char *name, bool *related) {
    *related = false;
    if (!s->format || !qt__name_in_list(name, s->format, NULL)) return false;
    if (s->gguf_ftype && strcasecmp(s->gguf_ftype, s->format) != 0) {
        *related = true;
        return false;
    }
    return true;
}

const qt_scheme_info *qt_scheme_resolve(const char *name) {
    const qt_scheme_info *s = qt_scheme_find(name);
    if (s) return s;
    for (int i = 0; i < qt_scheme_count(); i++) {
        bool related;
        if (scheme_stores(qt_scheme_get(i), name, &related)) return qt_scheme_get(i);
    }
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
    for (int i = 0; i < qt_scheme_count(); i++) {
        bool related;
        scheme_stores(qt_scheme_get(i), name, &related);
        if (related) add_unique(out, &k, n, qt_scheme_get(i)->key);
    }
    for (int i = 0; i < n_format_relatives; i++)
        if (qt__name_in_list(name, format_relatives[i].format, NULL))
            add_unique(out, &k, n, qt_scheme_find(format_relatives[i].scheme)->key);
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
