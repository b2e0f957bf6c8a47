#define _GNU_SOURCE
#include "qtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "quanta/core.h"

int qt_test_current_failed, qt_test_passed, qt_test_failed, qt_test_skipped, qt_test_skip_flag;

void qt_test_run(const char *name, void (*fn)(void)) {
    qt_test_current_failed = 0;
    qt_test_skip_flag = 0;
    qt_clear_error();
    fn();
    if (qt_test_current_failed) {
        qt_test_failed++;
        fprintf(stderr, "not ok  %s (%d failed checks)\n", name, qt_test_current_failed);
    } else if (qt_test_skip_flag) {
        qt_test_skipped++;
        fprintf(stderr, "skip    %s\n", name);
    } else {
        qt_test_passed++;
        fprintf(stderr, "ok      %s\n", name);
    }
}

static char tmpdir[256];

static void rm_tmpdir(void) {
    if (tmpdir[0]) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    }
}

const char *qt_test_tmpdir(void) {
    if (!tmpdir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/qtest.XXXXXX", base ? base : "/tmp");
        if (!mkdtemp(tmpdir)) { perror("mkdtemp"); exit(1); }
        atexit(rm_tmpdir);
    }
    return tmpdir;
}

int qt_test_finish(const char *suite) {
    if (qt_test_skipped)
        printf("%s: %d passed, %d failed, %d skipped\n", suite, qt_test_passed, qt_test_failed, qt_test_skipped);
    else
        printf("%s: %d passed, %d failed\n", suite, qt_test_passed, qt_test_failed);
    return qt_test_failed ? 1 : 0;
}

const char *qt_test_shared(const char *rel) {
    static char bufs[8][1024];
    static int i;
    char *b = bufs[i++ & 7];
    snprintf(b, 1024, "%s/%s", QT_SHARED_DIR, rel);
    return b;
}

void *qt_test_read(const char *path, size_t *size) {
    char *buf;
    size_t n;
    if (qt_read_file(path, &buf, &n) != QT_OK) {
        fprintf(stderr, "  cannot read test input %s: %s\n", path, qt_last_error());
        exit(1);
    }
    if (size) *size = n;
    return buf;
}
