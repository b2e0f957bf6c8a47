/* Thread pool: every index visited exactly once, any pool size, reuse. */
#include "qtest.h"
#include "quanta.h"

typedef struct { int *hits; } visit_ctx;

static void visit(void *p, int64_t b, int64_t e, int ti) {
    visit_ctx *c = p;
    (void)ti;
    for (int64_t i = b; i < e; i++) __atomic_fetch_add(&c->hits[i], 1, __ATOMIC_RELAXED);
}

static void test_parallel_for_covers_range_once(void) {
    for (int nt = 1; nt <= 5; nt++) {
        qt_threadpool *tp;
        CHECK_OK(qt_threadpool_create(nt, &tp));
        CHECK_EQ_INT(qt_threadpool_size(tp), nt);
        for (int64_t n = 0; n < 40; n += 7) {
            for (int rep = 0; rep < 3; rep++) {
                int hits[64] = {0};
                visit_ctx c = {hits};
                qt_parallel_for(tp, n, visit, &c);
                for (int64_t i = 0; i < 64; i++) CHECK_EQ_INT(hits[i], i < n ? 1 : 0);
            }
        }
        qt_threadpool_free(tp);
    }
}

/* Balanced jobs: every index once, and every range fn sees whole grains inside one thread's
 * chunk (what matmul relies on: its units are cut the same way whoever runs them). */
typedef struct { int *hits; int64_t n, per, grain; _Atomic int bad; } grain_ctx;

static void visit_grains(void *p, int64_t b, int64_t e, int ti) {
    grain_ctx *c = p;
    (void)ti;
    const int64_t chunk = b / c->per, start = chunk * c->per, end = start + c->per < c->n ? start + c->per : c->n;
    if ((b - start) % c->grain != 0 || e > end || (e - b != c->grain && e != end)) c->bad = 1;
    for (int64_t i = b; i < e; i++) __atomic_fetch_add(&c->hits[i], 1, __ATOMIC_RELAXED);
}

static void test_balanced_covers_range_once_in_grains(void) {
    for (int nt = 1; nt <= 5; nt++) {
        qt_threadpool *tp;
        CHECK_OK(qt_threadpool_create(nt, &tp));
        for (int64_t n = 0; n < 200; n += 13) {
            for (int64_t grain = 0; grain <= 7; grain += 3) {
                for (int rep = 0; rep < 3; rep++) {
                    int hits[256] = {0};
                    const int64_t g = grain > 0 ? grain : 1;
                    grain_ctx c = {hits, n, n > 1 && nt > 1 ? (n + nt - 1) / nt : (n > 0 ? n : 1), n > 1 && nt > 1 ? g : (n > 0 ? n : 1), 0};
                    qt_parallel_for_balanced(tp, n, grain, visit_grains, &c);
                    for (int64_t i = 0; i < 256; i++) CHECK_EQ_INT(hits[i], i < n ? 1 : 0);
                    CHECK_EQ_INT(c.bad, 0);
                }
            }
        }
        qt_threadpool_free(tp);
    }
    int hits[10] = {0};
    grain_ctx c = {hits, 10, 10, 10, 0};
    qt_parallel_for_balanced(NULL, 10, 4, visit_grains, &c); /* no pool: one call, inline */
    for (int i = 0; i < 10; i++) CHECK_EQ_INT(hits[i], 1);
    CHECK_EQ_INT(c.bad, 0);
}

static void test_null_pool_runs_inline(void) {
    int hits[10] = {0};
    visit_ctx c = {hits};
    qt_parallel_for(NULL, 10, visit, &c);
    for (int i = 0; i < 10; i++) CHECK_EQ_INT(hits[i], 1);
}

int main(void) {
    QT_RUN(test_parallel_for_covers_range_once);
    QT_RUN(test_null_pool_runs_inline);
    QT_RUN(test_balanced_covers_range_once_in_grains);
    return qt_test_finish("test_threads");
}
