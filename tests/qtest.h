/* tests/qtest.h — a tiny test harness.
 *
 * Each test file defines test functions and lists them in main via
 * QT_RUN(fn). Checks never abort the process: they count failures and print
 * file:line and the values. The run ends with the line
 *   "<name>: N passed, N failed[, N skipped]"
 * and exit status 0 only if nothing failed.
 */
#ifndef QT_TEST_H
#define QT_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern int qt_test_current_failed;
extern int qt_test_passed, qt_test_failed, qt_test_skipped;
extern int qt_test_skip_flag;

void qt_test_run(const char *name, void (*fn)(void));
int qt_test_finish(const char *suite);

/* Path helpers: QT_SHARED_DIR/rel, in a static rotating buffer. */
const char *qt_test_shared(const char *rel);
/* Read a whole file (exits the test as failed if missing). Caller frees. */
void *qt_test_read(const char *path, size_t *size);
/* A fresh temporary directory for this process (removed at exit). */
const char *qt_test_tmpdir(void);

#define QT_RUN(fn) qt_test_run(#fn, fn)

#define QT_FAIL_AT(...)                                                           \
    do {                                                                          \
        fprintf(stderr, "  FAIL %s:%d: ", __FILE__, __LINE__);                    \
        fprintf(stderr, __VA_ARGS__);                                             \
        fprintf(stderr, "\n");                                                    \
        qt_test_current_failed++;                                                 \
    } while (0)

#define CHECK(cond)                                                               \
    do { if (!(cond)) QT_FAIL_AT("CHECK(%s)", #cond); } while (0)
#define CHECK_MSG(cond, ...)                                                      \
    do { if (!(cond)) QT_FAIL_AT(__VA_ARGS__); } while (0)
#define CHECK_EQ_INT(a, b)                                                        \
    do { long long _a = (long long)(a), _b = (long long)(b);                      \
         if (_a != _b) QT_FAIL_AT("%s == %s: %lld != %lld", #a, #b, _a, _b); } while (0)
#define CHECK_EQ_STR(a, b)                                                        \
    do { const char *_a = (a), *_b = (b);                                         \
         if (!_a || !_b || strcmp(_a, _b) != 0)                                   \
             QT_FAIL_AT("%s == %s: \"%s\" != \"%s\"", #a, #b, _a ? _a : "(null)", _b ? _b : "(null)"); } while (0)
#define CHECK_NEAR(a, b, tol)                                                     \
    do { double _a = (double)(a), _b = (double)(b);                               \
         if (!(fabs(_a - _b) <= (tol)))                                           \
             QT_FAIL_AT("%s ~ %s: %.9g vs %.9g (tol %g)", #a, #b, _a, _b, (double)(tol)); } while (0)
#define CHECK_OK(expr)                                                            \
    do { qt_status _s = (expr);                                                   \
         if (_s != QT_OK) QT_FAIL_AT("%s -> %s: %s", #expr, qt_status_name(_s), qt_last_error()); } while (0)
#define CHECK_STATUS(expr, want)                                                  \
    do { qt_status _s = (expr);                                                   \
         if (_s != (want)) QT_FAIL_AT("%s -> %s (want %s): %s", #expr, qt_status_name(_s), qt_status_name(want), qt_last_error()); } while (0)
/* Mark the running test as skipped, with a loud reason. */
#define SKIP(...)                                                                 \
    do { fprintf(stderr, "  SKIP: "); fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); \
         qt_test_skip_flag = 1; return; } while (0)

#endif
