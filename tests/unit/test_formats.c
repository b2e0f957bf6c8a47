/* The format catalogue agrees with the traits table and has sane overheads. */
#include "qtest.h"
#include "quanta.h"

static void test_gguf_rows_match_traits(void) {
    int n_gguf = 0;
    for (int i = 0; i < qt_format_count(); i++) {
        const qt_format_info *f = qt_format_at(i);
        CHECK(f && f->name && f->use && f->engines);
        if (f->ggml_type < 0) continue;
        n_gguf++;
        const qt_type_traits *tr = qt_type_get((qt_type)f->ggml_type);
        CHECK_MSG(tr != NULL, "%s: ggml type %d unknown", f->name, f->ggml_type);
        if (!tr) continue;
        CHECK_EQ_STR(f->name, tr->name);
        CHECK_NEAR(f->bits_per_weight, 8.0 * tr->block_bytes / tr->block_elems, 1e-12);
        CHECK_EQ_INT(f->block_elems, tr->block_elems);
    }
    CHECK(n_gguf >= 17);
}

static void test_known_bits_per_weight(void) {
    CHECK_NEAR(qt_format_find("q4_K")->bits_per_weight, 4.5, 1e-12);
    CHECK_NEAR(qt_format_find("Q6_K")->bits_per_weight, 6.5625, 1e-12);
    CHECK_NEAR(qt_format_find("w4a16-g128")->bits_per_weight, 4.125, 1e-12);
    CHECK_NEAR(qt_format_find("nvfp4")->bits_per_weight, 4.5, 1e-12);
    CHECK_NEAR(qt_format_find("mxfp4-ct")->bits_per_weight, 4.25, 1e-12);
    CHECK(qt_format_find("w4a16-g128-asym")->bits_per_weight > qt_format_find("w4a16-g128")->bits_per_weight);
    CHECK(qt_format_find("no-such-format") == NULL);
    CHECK(qt_format_at(-1) == NULL && qt_format_at(qt_format_count()) == NULL);
}

static void test_names_unique(void) {
    for (int i = 0; i < qt_format_count(); i++)
        for (int j = i + 1; j < qt_format_count(); j++)
            CHECK_MSG(strcasecmp(qt_format_at(i)->name, qt_format_at(j)->name) != 0, "duplicate %s",
                      qt_format_at(i)->name);
}

static void test_quantize_rejects_non_finite(void) {
    float row[64];
    for (int i = 0; i < 64; i++) row[i] = (float)i / 64.0f;
    row[37] = NAN;
    unsigned char out[64 * 4];
    CHECK_STATUS(qt_quantize_rows(QT_TYPE_Q8_0, row, out, 1, 64, NULL), QT_ERR_RANGE);
    CHECK(strstr(qt_last_error(), "column 37") != NULL);
    row[37] = INFINITY;
    CHECK_STATUS(qt_quantize_rows(QT_TYPE_Q4_0, row, out, 1, 64, NULL), QT_ERR_RANGE);
    CHECK_OK(qt_quantize_rows(QT_TYPE_F16, row, out, 1, 64, NULL)); /* plain floats keep Inf */
    row[37] = 0.5f;
    CHECK_OK(qt_quantize_rows(QT_TYPE_Q8_0, row, out, 1, 64, NULL));
}

int main(void) {
    QT_RUN(test_quantize_rejects_non_finite);
    QT_RUN(test_gguf_rows_match_traits);
    QT_RUN(test_known_bits_per_weight);
    QT_RUN(test_names_unique);
    return qt_test_finish("test_formats");
}
