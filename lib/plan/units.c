/* lib/plan/units.c — sizes with explicit units, name matching, a string builder. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

/* Units are mandatory: "16" could be GB or GiB, and that 7% is exactly the
 * kind of error the planner exists to prevent. */
static const struct {
    const char *unit;
    double scale;
} size_units[] = {
    {"b", 1.0},
    {"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
    {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0},
};

qt_status qt_plan_parse_size(const char *s, double *bytes) {
    if (!s || !*s) return qt_error(QT_ERR_ARG, "size: empty (give a number and a unit, e.g. 16GB or 15360MiB)");
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v)) return qt_error(QT_ERR_ARG, "size '%s': not a number", s);
    while (*end == ' ') end++;
    char unit[8];
    size_t k = 0;
    for (; end[k] && k < sizeof unit - 1; k++) unit[k] = (char)tolower((unsigned char)end[k]);
    unit[k] = 0;
    if (end[k]) return qt_error(QT_ERR_ARG, "size '%s': unknown unit '%s'", s, end);
    if (!k)
        return qt_error(QT_ERR_ARG, "size '%s': needs a unit: GB (1e9 bytes) or GiB (2^30 bytes), MB/MiB, TB/TiB, B", s);
    for (size_t i = 0; i < sizeof size_units / sizeof size_units[0]; i++) {
        if (!strcmp(unit, size_units[i].unit)) {
            if (v < 0) return qt_error(QT_ERR_ARG, "size '%s': must not be negative", s);
            /* 1 EB: far above any device, and every count derived from it stays inside int64 */
            if (v * size_units[i].scale > 1e18)
                return qt_error(QT_ERR_ARG, "size '%s': %g bytes is more than any device holds (at most 1e18 bytes, 1 EB)",
                                s, v * size_units[i].scale);
            *bytes = v * size_units[i].scale;
            return QT_OK;
        }
    }
    return qt_error(QT_ERR_ARG, "size '%s': unknown unit '%s' (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", s, end);
}

void qt__norm_name(const char *in, char *out, size_t n) {
    size_t k = 0;
    for (; in && *in && k + 1 < n; in++)
        if (isalnum((unsigned char)*in)) out[k++] = (char)tolower((unsigned char)*in);
    if (n) out[k] = 0;
}

int qt_plan_name_distance(const char *a, const char *b) {
    char x[96], y[96];
    qt__norm_name(a, x, sizeof x);
    qt__norm_name(b, y, sizeof y);
    size_t la = strlen(x), lb = strlen(y);
    int row[96];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int cost = x[i - 1] == y[j - 1] ? 0 : 1;
            int best = diag + cost;
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* True when `name` equals the key or one of the comma-separated aliases,
 * compared on letters and digits only ("A100 80GB" == "a100-80gb"). */
bool qt__name_in_list(const char *name, const char *key, const char *aliases) {
    char want[96], cand[96];
    qt__norm_name(name, want, sizeof want);
    if (!want[0]) return false;
    qt__norm_name(key, cand, sizeof cand);
    if (!strcmp(want, cand)) return true;
    for (const char *p = aliases; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char one[96];
        if (len >= sizeof one) len = sizeof one - 1;
        memcpy(one, p, len);
        one[len] = 0;
        qt__norm_name(one, cand, sizeof cand);
        if (!strcmp(want, cand)) return true;
        p = comma ? comma + 1 : p + len;
    }
    return false;
}

const char *qt__fmt_gb(double bytes, char *buf, size_t n) {
    snprintf(buf, n, "%.2f GB", bytes / QT_GB);
    return buf;
}
