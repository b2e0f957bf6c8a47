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

static void test_null_pool_runs_inline(void) {
    int hits[10] = {0};
    visit_ctx c = {hits};
    qt_parallel_for(NULL, 10, visit, &c);
    for (int i = 0; i < 10; i++) CHECK_EQ_INT(hits[i], 1);
}

int main(void) {
    QT_RUN(test_parallel_for_covers_range_once);
    QT_RUN(test_null_pool_runs_inline);
    return qt_test_finish("test_threads");
}
