/* Error metrics on hand-computable cases (quanta/metrics.h). */
#include <math.h>

#include "qtest.h"
#include "quanta.h"

static void test_tensor_by_hand(void) {
    const float ref[4] = {1, 2, 3, 4}, approx[4] = {1, 2, 3, 5};
    qt_qerr_stats s;
    CHECK_OK(qt_qerr_compare(ref, approx, 4, &s));
    CHECK_EQ_INT(s.n, 4);
    CHECK(s.sum_sq_err == 1.0 && s.sum_sq_ref == 30.0);
    CHECK(s.rmse == 0.5);                       /* sqrt(1/4) */
    CHECK(s.max_abs == 1.0);
    CHECK_NEAR(s.snr_db, 10.0 * log10(30.0), 1e-12); /* 14.771 dB */
    /* exact approximation: infinite SNR, zero errors */
    CHECK_OK(qt_qerr_compare(ref, ref, 4, &s));
    CHECK(s.rmse == 0.0 && s.max_abs == 0.0 && isinf(s.snr_db) && s.snr_db > 0);
    /* zero signal, non-zero error: -Inf */
    const float zero[2] = {0, 0}, noise[2] = {0.5f, -0.5f};
    CHECK_OK(qt_qerr_compare(zero, noise, 2, &s));
    CHECK(isinf(s.snr_db) && s.snr_db < 0);
    CHECK(s.rmse == 0.5 && s.max_abs == 0.5);
    /* 20 dB = error amplitude one tenth of the signal */
    const float sig[2] = {10, -10}, off[2] = {11, -9};
    CHECK_OK(qt_qerr_compare(sig, off, 2, &s));
    CHECK_NEAR(s.snr_db, 20.0, 1e-12);
}

static void test_rows_by_hand(void) {
    const float ref[6] = {1, 2, 3, 3, 4, 0}, approx[6] = {1, 2, 3, 3, 5, 2};
    qt_qerr_stats rows[2], total;
    CHECK_OK(qt_qerr_compare_rows(ref, approx, 2, 3, rows, &total));
    CHECK(rows[0].rmse == 0.0 && isinf(rows[0].snr_db) && rows[0].snr_db > 0);
    CHECK_NEAR(rows[1].rmse, sqrt(5.0 / 3.0), 1e-12);  /* errors 0, 1, 2 */
    CHECK(rows[1].max_abs == 2.0);
    CHECK_NEAR(rows[1].snr_db, 10.0 * log10(25.0 / 5.0), 1e-12);
    CHECK_EQ_INT(total.n, 6);
    CHECK_NEAR(total.rmse, sqrt(5.0 / 6.0), 1e-12);
    CHECK(total.max_abs == 2.0);
    CHECK_NEAR(total.snr_db, 10.0 * log10(39.0 / 5.0), 1e-12);
    /* total equals the whole-array comparison */
    qt_qerr_stats flat;
    CHECK_OK(qt_qerr_compare(ref, approx, 6, &flat));
    CHECK(flat.rmse == total.rmse && flat.snr_db == total.snr_db);
    CHECK_OK(qt_qerr_compare_rows(ref, approx, 2, 3, NULL, &total)); /* per_row optional */
}

static void test_non_finite_refused(void) {
    const float ref[3] = {1, 2, 3}, approx[3] = {1, NAN, 3};
    qt_qerr_stats s;
    CHECK_STATUS(qt_qerr_compare(ref, approx, 3, &s), QT_ERR_RANGE);
    CHECK(strstr(qt_last_error(), "element 1") != NULL);
    CHECK_STATUS(qt_qerr_compare_rows(approx, ref, 1, 3, NULL, &s), QT_ERR_RANGE);
    CHECK_STATUS(qt_qerr_compare(NULL, ref, 3, &s), QT_ERR_ARG);
}

static void test_of_type(void) {
    float src[2 * 64];
    for (int i = 0; i < 128; i++) src[i] = sinf((float)i * 0.37f);
    qt_qerr_stats rows[2], total;
    /* a row that is not a multiple of the block is refused by the codec */
    CHECK_STATUS(qt_qerr_of_type(QT_TYPE_Q8_0, src, 2, 48 + 1, NULL, rows, &total), QT_ERR_SHAPE);
    CHECK(strstr(qt_last_error(), "block size 32") != NULL);
    CHECK_STATUS(qt_qerr_of_type((qt_type)5, src, 2, 64, NULL, rows, &total), QT_ERR_UNSUPPORTED);
    const qt_type_traits *tr = qt_type_get(QT_TYPE_Q8_0);
    if (!tr || !tr->from_float || !tr->to_float) {
        CHECK_STATUS(qt_qerr_of_type(QT_TYPE_Q8_0, src, 2, 64, NULL, rows, &total), QT_ERR_UNSUPPORTED);
        SKIP("q8_0 has no codec in this build yet: only the refusal was checked");
    }
    CHECK_OK(qt_qerr_of_type(QT_TYPE_Q8_0, src, 2, 64, NULL, rows, &total));
    /* q8_0: per block d = amax/127, error <= d/2 (+ the fp16 rounding of d: 127 * 2^-11 d) */
    CHECK(total.max_abs <= (1.0 / 127.0) * (0.5 + 127.0 / 2048.0));
    CHECK(total.max_abs > 0.0);
    CHECK(total.snr_db > 35.0);
}

int main(void) {
    QT_RUN(test_tensor_by_hand);
    QT_RUN(test_rows_by_hand);
    QT_RUN(test_non_finite_refused);
    QT_RUN(test_of_type);
    return qt_test_finish("test_metrics");
}
