/* lib/core/progress.c — the terminal renderer for qt_progress.
 *
 * On a TTY: one line redrawn in place, "what [#####.....] 45% 1234/2741 ETA 0:12".
 * Otherwise: a plain line at most every 10 % (logs stay short). Quiet: nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "quanta/core.h"

struct qt_progress_term {
    FILE *out;
    int mode;              /* 1 bar, 2 lines, 3 quiet */
    double t0;
    char what[64];
    int last_decile;
    double last_draw;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

qt_progress_term *qt_progress_term_new(void *file_stream, int mode) {
    qt_progress_term *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->out = file_stream ? file_stream : stderr;
    if (mode == 0) mode = isatty(fileno(t->out)) ? 1 : 2;
    t->mode = mode;
    t->last_decile = -1;
    return t;
}

void qt_progress_term_free(qt_progress_term *t) { free(t); }

static void fmt_time(char *buf, size_t n, double s) {
    if (s < 0 || s > 1e7) { snprintf(buf, n, "?"); return; }
    long v = (long)(s + 0.5);
    if (v >= 3600) snprintf(buf, n, "%ld:%02ld:%02ld", v / 3600, (v / 60) % 60, v % 60);
    else snprintf(buf, n, "%ld:%02ld", v / 60, v % 60);
}

static void term_report(void *user, const char *what, int64_t done, int64_t total) {
    qt_progress_term *t = user;
    if (t->mode == 3) return;
    double now = now_s();
    if (strncmp(t->what, what, sizeof t->what - 1) != 0 || done == 0) {
        snprintf(t->what, sizeof t->what, "%s", what);
        t->t0 = now;
        t->last_decile = -1;
    }
    double frac = total > 0 ? (double)done / (double)total : 0.0;
    double elapsed = now - t->t0;
    double eta = frac > 0 ? elapsed * (1.0 - frac) / frac : -1;
    char eta_s[32], el_s[32];
    fmt_time(eta_s, sizeof eta_s, eta);
    fmt_time(el_s, sizeof el_s, elapsed);
    if (t->mode == 1) {
        if (done != total && now - t->last_draw < 0.1) return;
        t->last_draw = now;
        char bar[31];
        int fill = (int)(frac * 30);
        for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
        bar[30] = '\0';
        fprintf(t->out, "\r%s [%s] %3d%% %lld/%lld %s ETA %s\033[K", what, bar, (int)(frac * 100),
                (long long)done, (long long)total, el_s, eta_s);
        if (done >= total) fputc('\n', t->out);
        fflush(t->out);
    } else {
        int decile = (int)(frac * 10);
        if (decile == t->last_decile && done != total) return;
        t->last_decile = decile;
        fprintf(t->out, "%s: %lld/%lld (%d%%) elapsed %s ETA %s\n", what, (long long)done, (long long)total,
                (int)(frac * 100), el_s, eta_s);
        fflush(t->out);
    }
}

qt_progress qt_progress_term_sink(qt_progress_term *t) {
    qt_progress p = {t ? term_report : NULL, t};
    return p;
}
