/* compressed-tensors weight formats (docs/formats.md §4.4-§4.7): bit-exact
 * packing against compressed-tensors' own output, the worked example of
 * §4.5, qparams by hand, round-trip error bounds derived from the math. */
#include <jansson.h>
#include <math.h>

#include "qtest.h"
#include "quanta.h"
#include "quant/ct_internal.h"

/* Deterministic data: xorshift64*, uniform in [-1, 1). */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float frand(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    const uint64_t r = rng_state * 0x2545F4914F6CDD1Dull;
    return (float)((double)(r >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

static float *random_matrix(int64_t rows, int64_t cols, float scale, float offset) {
    float *w = malloc(sizeof(float) * (size_t)(rows * cols));
    for (int64_t i = 0; i < rows * cols; i++) w[i] = frand() * scale + offset;
    return w;
}

/* ---- packing: the shared vectors and the worked example ---------------------- */

/* nvfp4's global scale 448*6/amax rounded to the weight dtype: in f16 it
 * overflows below amax 0.041 (typical weights), where the f32 quotient is
 * kept; bf16 rounds as llm-compressor does. */
static void test_nvfp4_global_scale_f16(void) {
    const float amax = 0.0346f, g = 448.0f * 6.0f / amax;
    const float f16 = qt_ct_nvfp4_global_scale(amax, QT_CT_F16), bf16 = qt_ct_nvfp4_global_scale(amax, QT_CT_BF16);
    CHECK(isfinite(f16) && f16 == g);
    CHECK(bf16 == qt_ct_round_dtype(g, QT_CT_BF16) && bf16 != g);
    CHECK(qt_ct_nvfp4_global_scale(1.0f, QT_CT_F16) == qt_ct_round_dtype(2688.0f, QT_CT_F16));
}

static void test_manifest_vectors(void) {
    json_error_t jerr;
    json_t *m = json_load_file(qt_test_shared("testvectors/compressed-tensors/MANIFEST.json"), 0, &jerr);
    CHECK_MSG(m != NULL, "MANIFEST.json: %s", jerr.text);
    if (!m) return;
    const json_t *list = json_is_array(m) ? m : json_object_get(m, "vectors");
    CHECK(json_is_array(list) && json_array_size(list) > 0);
    size_t i;
    json_t *v;
    int n_checked = 0;
    json_array_foreach(list, i, v) {
        const char *name = json_string_value(json_object_get(v, "name"));
        const int bits = (int)json_integer_value(json_object_get(v, "bits"));
        const int64_t rows = json_integer_value(json_object_get(v, "rows"));
        const int64_t cols = json_integer_value(json_object_get(v, "cols"));
        const int dim = (int)json_integer_value(json_object_get(v, "packed_dim"));
        const json_t *shape = json_object_get(v, "packed_shape");
        const int64_t prow = json_integer_value(json_array_get(shape, 0));
        const int64_t pcol = json_integer_value(json_array_get(shape, 1));
        CHECK(name != NULL);
        if (!name) continue;
        char rel[256];
        size_t in_size, packed_size;
        snprintf(rel, sizeof rel, "testvectors/compressed-tensors/%s.in.i8", name);
        int8_t *in = qt_test_read(qt_test_shared(rel), &in_size);
        snprintf(rel, sizeof rel, "testvectors/compressed-tensors/%s.packed.i32", name);
        int32_t *want = qt_test_read(qt_test_shared(rel), &packed_size);
        CHECK_EQ_INT(in_size, rows * cols);
        CHECK_EQ_INT(packed_size, prow * pcol * 4);
        /* our shape rule gives compressed-tensors' packed_shape */
        if (dim == 1) {
            CHECK_EQ_INT(prow, rows);
            CHECK_EQ_INT(pcol, qt_ct_packed_len(cols, bits));
        } else {
            CHECK_EQ_INT(prow, qt_ct_packed_len(rows, bits));
            CHECK_EQ_INT(pcol, cols);
        }
        int32_t *got = calloc((size_t)(prow * pcol), 4);
        int8_t *back = malloc((size_t)(rows * cols));
        memset(back, 0x55, (size_t)(rows * cols));
        if (dim == 1) {
            CHECK_OK(qt_ct_pack_rows(in, rows, cols, bits, got));
            CHECK_OK(qt_ct_unpack_rows(want, rows, cols, bits, back));
        } else {
            CHECK_OK(qt_ct_pack_cols(in, rows, cols, bits, got));
            CHECK_OK(qt_ct_unpack_cols(want, rows, cols, bits, back));
        }
        CHECK_MSG(memcmp(got, want, packed_size) == 0, "%s: packed words differ", name);
        CHECK_MSG(memcmp(back, in, (size_t)(rows * cols)) == 0, "%s: unpacking differs from the input", name);
        free(in);
        free(want);
        free(got);
        free(back);
        n_checked++;
    }
    CHECK_EQ_INT(n_checked, (int)json_array_size(list));
    fprintf(stderr, "  %d compressed-tensors packing vectors checked\n", n_checked);
    json_decref(m);
}

static void test_worked_packing_example(void) {
    /* docs/formats.md §4.5 */
    const int8_t q[8] = {-8, -1, 0, 1, 2, 3, 7, -3};
    int32_t word = 0;
    CHECK_OK(qt_ct_pack_rows(q, 1, 8, 4, &word));
    CHECK_EQ_INT(word, 1606064240);
    CHECK_EQ_INT((uint32_t)word, 0x5FBA9870u);
    uint8_t bytes[4];
    memcpy(bytes, &word, 4); /* little-endian host: the stored bytes */
    CHECK(bytes[0] == 0x70 && bytes[1] == 0x98 && bytes[2] == 0xBA && bytes[3] == 0x5F);
    /* the same values as a zero-point column (packed along dim 0) */
    int32_t col = 0;
    CHECK_OK(qt_ct_pack_cols(q, 8, 1, 4, &col));
    CHECK_EQ_INT(col, 1606064240);
    int8_t back[8];
    CHECK_OK(qt_ct_unpack_rows(&word, 1, 8, 4, back));
    CHECK(memcmp(back, q, 8) == 0);
}

static void test_pack_refuses_out_of_range(void) {
    const int8_t q[2] = {7, 8};
    int32_t word;
    CHECK_STATUS(qt_ct_pack_rows(q, 1, 2, 4, &word), QT_ERR_RANGE);
    CHECK(strstr(qt_last_error(), "does not fit in 4 bits") != NULL);
    CHECK_STATUS(qt_ct_pack_rows(q, 1, 2, 9, &word), QT_ERR_ARG);
    CHECK_STATUS(qt_ct_pack_rows(q, 0, 2, 4, &word), QT_ERR_SHAPE);
    CHECK_EQ_INT(qt_ct_packed_len(100, 3), 10);
    CHECK_EQ_INT(qt_ct_packed_len(128, 4), 16);
}

/* ---- qparams --------------------------------------------------------------------- */

static void test_qparams_by_hand(void) {
    float s;
    int8_t zp;
    /* int4 symmetric: amax / 7.5 */
    qt_ct_int_qparams(-3.0f, 1.5f, 4, true, QT_CT_F32, &s, &zp);
    CHECK(s == 3.0f / 7.5f);
    CHECK_EQ_INT(zp, 0);
    /* int8 symmetric: amax / 127.5 */
    qt_ct_int_qparams(-0.5f, 2.55f, 8, true, QT_CT_F32, &s, &zp);
    CHECK(s == 2.55f / 127.5f);
    /* range widened to include 0: [2, 4] -> [0, 4]; int4 asym scale 4/15, zp = -8 */
    qt_ct_int_qparams(2.0f, 4.0f, 4, false, QT_CT_F32, &s, &zp);
    CHECK(s == 4.0f / 15.0f);
    CHECK_EQ_INT(zp, -8);
    /* int8 asym: scale 4/255, zp = round(-128 + 1/(4/255)) = round(-64.25) = -64 */
    qt_ct_int_qparams(-1.0f, 3.0f, 8, false, QT_CT_F32, &s, &zp);
    CHECK(s == 4.0f / 255.0f);
    CHECK_EQ_INT(zp, -64);
    /* zp ties go to even: scale 0.5, -8 - (-0.75/0.5) = -6.5 -> -6 */
    qt_ct_int_qparams(-0.75f, 6.75f, 4, false, QT_CT_F32, &s, &zp);
    CHECK(s == 0.5f);
    CHECK_EQ_INT(zp, -6);
    /* all-negative range: zp clamps at qmax */
    qt_ct_int_qparams(-3.0f, -1.0f, 4, false, QT_CT_F32, &s, &zp);
    CHECK(s == 3.0f / 15.0f);
    CHECK_EQ_INT(zp, 7);
    /* a zero scale becomes the dtype's eps */
    qt_ct_int_qparams(0.0f, 0.0f, 4, true, QT_CT_F32, &s, &zp);
    CHECK(s == 0x1.0p-23f);
    qt_ct_int_qparams(0.0f, 0.0f, 4, false, QT_CT_BF16, &s, &zp);
    CHECK(s == 0x1.0p-7f);
    CHECK_EQ_INT(zp, 0);
    qt_ct_int_qparams(0.0f, 0.0f, 8, true, QT_CT_F16, &s, &zp);
    CHECK(s == 0x1.0p-10f);
    /* bf16 model: the scale is a bf16 value (1/7.5 rounds) */
    qt_ct_int_qparams(-1.0f, 0.5f, 4, true, QT_CT_BF16, &s, &zp);
    CHECK(s == qt_bf16_to_f32(qt_f32_to_bf16(1.0f / 7.5f)));
    CHECK(s != 1.0f / 7.5f);
}

/* ---- integer quantization round trips ----------------------------------------------- */

/* Independent min/max of one scale's block, for checking the stored scales. */
static void block_minmax(const float *w, int64_t cols, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                         float *mn, float *mx) {
    *mn = INFINITY;
    *mx = -INFINITY;
    for (int64_t r = r0; r < r1; r++)
        for (int64_t c = c0; c < c1; c++) {
            *mn = fminf(*mn, w[r * cols + c]);
            *mx = fmaxf(*mx, w[r * cols + c]);
        }
}

static void check_int_roundtrip(int bits, bool sym, qt_ct_strategy st, int64_t group, int64_t rows, int64_t cols,
                                float offset) {
    qt_ct_int_args a = {.bits = bits, .symmetric = sym, .strategy = st, .group_size = group, .dtype = QT_CT_F32};
    int64_t per_row, total;
    CHECK_OK(qt_ct_int_scale_count(&a, rows, cols, &per_row, &total));
    const int64_t G = st == QT_CT_GROUP ? (group ? group : 128) : cols;
    float *w = random_matrix(rows, cols, 1.0f, offset);
    int8_t *q = malloc((size_t)(rows * cols));
    float *scales = malloc(sizeof(float) * (size_t)total);
    int8_t *zps = malloc((size_t)total);
    float *deq = malloc(sizeof(float) * (size_t)(rows * cols));
    CHECK_OK(qt_ct_int_quantize(w, rows, cols, &a, q, scales, sym ? NULL : zps));
    CHECK_OK(qt_ct_int_dequantize(q, scales, sym ? NULL : zps, rows, cols, &a, deq));
    const int qmin = -(1 << (bits - 1)), qmax = (1 << (bits - 1)) - 1;
    int bad_scale = 0, bad_range = 0, bad_err = 0, bad_zp = 0;
    for (int64_t k = 0; k < total; k++) {
        float mn, mx, want_s;
        int8_t want_zp;
        if (st == QT_CT_TENSOR) block_minmax(w, cols, 0, rows, 0, cols, &mn, &mx);
        else block_minmax(w, cols, k / per_row, k / per_row + 1, (k % per_row) * G, (k % per_row) * G + G, &mn, &mx);
        qt_ct_int_qparams(mn, mx, bits, sym, QT_CT_F32, &want_s, &want_zp);
        if (scales[k] != want_s) bad_scale++;
        if (!sym && zps[k] != want_zp) bad_zp++;
        /* the scale is the full range over the integer range */
        const float span = sym ? fmaxf(fabsf(fminf(mn, 0)), fmaxf(mx, 0)) / ((float)(qmax - qmin) / 2.0f)
                               : (fmaxf(mx, 0) - fminf(mn, 0)) / (float)(qmax - qmin);
        if (fabsf(scales[k] - span) > 1e-6f * span) bad_scale++;
    }
    double max_ratio = 0.0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            const int64_t i = r * cols + c;
            const int64_t k = st == QT_CT_TENSOR ? 0 : r * per_row + c / G;
            if (q[i] < qmin || q[i] > qmax) bad_range++;
            /* every value is inside its block's range: error <= scale/2, up to fp32 rounding */
            const double err = fabs((double)w[i] - (double)deq[i]);
            const double ratio = err / scales[k];
            if (ratio > max_ratio) max_ratio = ratio;
            if (err > scales[k] * 0.5 * (1 + 1e-5) + 1e-7) bad_err++;
        }
    CHECK_MSG(bad_scale == 0 && bad_zp == 0 && bad_range == 0 && bad_err == 0,
              "int%d %s %s G=%lld: %d scales, %d zero points, %d out of range, %d errors above scale/2 (max %.4f)",
              bits, sym ? "sym" : "asym", qt_ct_strategy_name(st), (long long)G, bad_scale, bad_zp, bad_range,
              bad_err, max_ratio);
    /* the bound is reached in practice (the test would notice a coarser quantizer) */
    CHECK(max_ratio > 0.4);
    free(w);
    free(q);
    free(scales);
    free(zps);
    free(deq);
}

static void test_int_roundtrip_bounds(void) {
    const int bits_list[4] = {2, 3, 4, 8};
    for (int b = 0; b < 4; b++)
        for (int sym = 0; sym < 2; sym++) {
            check_int_roundtrip(bits_list[b], sym, QT_CT_TENSOR, 0, 8, 256, 0.0f);
            check_int_roundtrip(bits_list[b], sym, QT_CT_CHANNEL, 0, 8, 256, 0.0f);
            check_int_roundtrip(bits_list[b], sym, QT_CT_GROUP, 0, 8, 256, 0.0f); /* default 128 */
            check_int_roundtrip(bits_list[b], sym, QT_CT_GROUP, 32, 8, 256, 0.0f);
            check_int_roundtrip(bits_list[b], sym, QT_CT_GROUP, 48, 4, 96, 0.0f);
            check_int_roundtrip(bits_list[b], sym, QT_CT_GROUP, 64, 8, 256, 0.7f); /* shifted data */
        }
}

static void test_asymmetric_zero_points(void) {
    /* data in [0.5, 2.5]: range widened to [0, 2.5]; zp = qmin exactly; with
     * data in [-2.5, -0.5] zp = qmax. The zero point shifts codes so the whole
     * integer range is used (symmetric would waste half of it). */
    const int64_t rows = 2, cols = 64;
    float w[128];
    for (int i = 0; i < 64; i++) { w[i] = 0.5f + 2.0f * (float)i / 63.0f; w[64 + i] = -w[i]; }
    qt_ct_int_args a = {.bits = 4, .symmetric = false, .strategy = QT_CT_CHANNEL, .dtype = QT_CT_F32};
    int8_t q[128], zp[2];
    float s[2], deq[128];
    CHECK_OK(qt_ct_int_quantize(w, rows, cols, &a, q, s, zp));
    CHECK_EQ_INT(zp[0], -8);
    CHECK_EQ_INT(zp[1], 7);
    CHECK(s[0] == 2.5f / 15.0f && s[1] == 2.5f / 15.0f);
    CHECK_EQ_INT(q[63], 7);   /* 2.5 -> top code */
    CHECK_EQ_INT(q[127], -8); /* -2.5 -> bottom code */
    CHECK_OK(qt_ct_int_dequantize(q, s, zp, rows, cols, &a, deq));
    double max_err = 0;
    for (int i = 0; i < 128; i++) max_err = fmax(max_err, fabs(w[i] - deq[i]));
    CHECK(max_err <= s[0] / 2 * (1 + 1e-6));
    /* symmetric on the same rows has twice the step */
    a.symmetric = true;
    CHECK_OK(qt_ct_int_quantize(w, rows, cols, &a, q, s, NULL));
    CHECK(s[0] == 2.5f / 7.5f);
    /* zero points round-trip through their packed form (along dim 0) */
    int8_t zps[40 * 3], back[40 * 3];
    for (int i = 0; i < 120; i++) zps[i] = (int8_t)((i * 7) % 16 - 8);
    int32_t packed[5 * 3];
    CHECK_OK(qt_ct_pack_cols(zps, 40, 3, 4, packed));
    CHECK_OK(qt_ct_unpack_cols(packed, 40, 3, 4, back));
    CHECK(memcmp(zps, back, sizeof zps) == 0);
}

static void test_group_size_must_divide_row(void) {
    float w[200] = {0};
    int8_t q[200];
    float s[4];
    qt_ct_int_args a = {.bits = 4, .symmetric = true, .strategy = QT_CT_GROUP, .group_size = 0, .dtype = QT_CT_F32};
    CHECK_STATUS(qt_ct_int_quantize(w, 1, 200, &a, q, s, NULL), QT_ERR_SHAPE);
    CHECK(strstr(qt_last_error(), "group size 128 does not divide the row length 200") != NULL);
    a.group_size = 64;
    CHECK_STATUS(qt_ct_int_quantize(w, 1, 200, &a, q, s, NULL), QT_ERR_SHAPE);
    int64_t per_row, total;
    CHECK_STATUS(qt_ct_int_scale_count(&a, 2, 200, &per_row, &total), QT_ERR_SHAPE);
    a.group_size = 40;
    CHECK_OK(qt_ct_int_scale_count(&a, 2, 200, &per_row, &total));
    CHECK_EQ_INT(per_row, 5);
    CHECK_EQ_INT(total, 10);
    a.group_size = 0;
    CHECK_OK(qt_ct_int_scale_count(&a, 3, 256, &per_row, &total));
    CHECK_EQ_INT(per_row, 2);
    a.bits = 9;
    CHECK_STATUS(qt_ct_int_scale_count(&a, 3, 256, &per_row, &total), QT_ERR_ARG);
    a.bits = 4;
    a.group_size = -5;
    CHECK_STATUS(qt_ct_int_scale_count(&a, 3, 256, &per_row, &total), QT_ERR_ARG);
}

static void test_bad_weights_refused(void) {
    float w[64];
    for (int i = 0; i < 64; i++) w[i] = (float)i;
    w[2 * 32 / 2 + 3] = NAN; /* row 1, col 3 of a (2, 32) matrix */
    int8_t q[64];
    float s[2];
    qt_ct_int_args a = {.bits = 8, .symmetric = true, .strategy = QT_CT_CHANNEL, .dtype = QT_CT_F32};
    CHECK_STATUS(qt_ct_int_quantize(w, 2, 32, &a, q, s, NULL), QT_ERR_RANGE);
    CHECK(strstr(qt_last_error(), "weight[1][3] is NaN") != NULL);
    uint8_t f8[64];
    CHECK_STATUS(qt_ct_fp8_quantize(w, 2, 32, QT_CT_CHANNEL, QT_CT_F32, f8, s), QT_ERR_RANGE);
    w[35] = INFINITY;
    uint8_t packed[32], sc[4];
    float gs;
    CHECK_STATUS(qt_ct_nvfp4_quantize(w, 2, 32, QT_CT_F32, packed, sc, &gs), QT_ERR_RANGE);
    CHECK(strstr(qt_last_error(), "weight[1][3] is infinite") != NULL);
    CHECK_STATUS(qt_ct_mxfp4_quantize(w, 2, 32, packed, sc), QT_ERR_RANGE);
    w[35] = 1.0f;
    CHECK_STATUS(qt_ct_nvfp4_quantize(w, 2, 16 + 8, QT_CT_F32, packed, sc, &gs), QT_ERR_SHAPE);
    CHECK(strstr(qt_last_error(), "not a multiple of the group size 16") != NULL);
    CHECK_STATUS(qt_ct_mxfp4_quantize(w, 1, 48, packed, sc), QT_ERR_SHAPE);
    CHECK_STATUS(qt_ct_fp8_quantize(w, 2, 32, QT_CT_GROUP, QT_CT_F32, f8, s), QT_ERR_UNSUPPORTED);
    a.symmetric = false;
    w[35] = 0.0f;
    CHECK_STATUS(qt_ct_int_quantize(w, 2, 32, &a, q, s, NULL), QT_ERR_ARG); /* asym needs zero points */
}

static void test_bf16_model_dtype(void) {
    /* Scales, and the dequantized values, live in the model dtype. */
    const int64_t rows = 4, cols = 128;
    float *w = random_matrix(rows, cols, 0.05f, 0.0f);
    qt_ct_int_args a = {.bits = 4, .symmetric = false, .strategy = QT_CT_GROUP, .group_size = 32, .dtype = QT_CT_BF16};
    int8_t q[512], zp[16];
    float s[16], deq[512];
    CHECK_OK(qt_ct_int_quantize(w, rows, cols, &a, q, s, zp));
    CHECK_OK(qt_ct_int_dequantize(q, s, zp, rows, cols, &a, deq));
    int not_bf16 = 0;
    for (int k = 0; k < 16; k++) not_bf16 += qt_ct_round_dtype(s[k], QT_CT_BF16) != s[k];
    for (int i = 0; i < 512; i++) not_bf16 += qt_ct_round_dtype(deq[i], QT_CT_BF16) != deq[i];
    CHECK_EQ_INT(not_bf16, 0);
    /* error: half a step, plus the bf16 rounding of x/scale and of x/scale + zp
     * (|t| < 16: at most 2^-5 steps each), plus the bf16 rounding of the weight
     * and of the result (2^-9 relative each) */
    int bad = 0;
    for (int i = 0; i < 512; i++) {
        const float sc = s[(i / cols) * 4 + (i % cols) / 32];
        if (fabs(w[i] - deq[i]) > sc * (0.5 + 2 * 0x1.0p-5) * (1 + 1e-6) + fabs(w[i]) * 0x1.0p-8) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    free(w);
}

static void test_int4_group_packed_path(void) {
    /* quantize -> pack -> qt_ct_int4_group_dequantize equals the unpacked reference */
    const int64_t rows = 6, cols = 256, G = 64;
    float *w = random_matrix(rows, cols, 1.0f, 0.2f);
    for (int sym = 0; sym < 2; sym++) {
        qt_ct_int_args a = {.bits = 4, .symmetric = sym, .strategy = QT_CT_GROUP, .group_size = G, .dtype = QT_CT_F32};
        int8_t q[6 * 256], zp[6 * 4];
        float s[6 * 4], ref[6 * 256], fast[6 * 256];
        int32_t packed[6 * 32];
        CHECK_OK(qt_ct_int_quantize(w, rows, cols, &a, q, s, sym ? NULL : zp));
        CHECK_OK(qt_ct_int_dequantize(q, s, sym ? NULL : zp, rows, cols, &a, ref));
        CHECK_OK(qt_ct_pack_rows(q, rows, cols, 4, packed));
        for (int i = 0; i < rows * cols; i++) fast[i] = NAN;
        CHECK_OK(qt_ct_int4_group_dequantize(packed, s, sym ? NULL : zp, rows, cols, G, fast));
        CHECK(memcmp(ref, fast, sizeof ref) == 0);
    }
    int32_t p[8] = {0};
    float s[2] = {1, 1}, out[64];
    CHECK_STATUS(qt_ct_int4_group_dequantize(p, s, NULL, 1, 64, 12, out), QT_ERR_SHAPE);
    free(w);
}

/* ---- FP8 ------------------------------------------------------------------------------ */

static void test_fp8_weights(void) {
    const int64_t rows = 8, cols = 96;
    float *w = random_matrix(rows, cols, 3.0f, 0.0f);
    w[5] = -7.0f; /* tensor amax */
    for (int st = 0; st < 2; st++) {
        const qt_ct_strategy strategy = st ? QT_CT_CHANNEL : QT_CT_TENSOR;
        uint8_t q[8 * 96];
        float s[8], deq[8 * 96];
        CHECK_OK(qt_ct_fp8_quantize(w, rows, cols, strategy, QT_CT_F32, q, s));
        CHECK_OK(qt_ct_fp8_dequantize(q, s, rows, cols, strategy, QT_CT_F32, deq));
        CHECK(s[0] == 7.0f / 448.0f);
        CHECK_EQ_INT(q[5], 0xFE); /* -amax -> -448 */
        int bad = 0;
        for (int64_t i = 0; i < rows * cols; i++) {
            const float sc = s[st ? i / cols : 0];
            /* 3 mantissa bits: half an ulp is at most 2^-4 of the value; subnormal step 2^-9 */
            const double bound = fmax(fabs(w[i]) * 0x1.0p-4, 0x1.0p-10 * sc) * 1.0001;
            if (fabs(w[i] - deq[i]) > bound) bad++;
            if (q[i] == 0x7F || q[i] == 0xFF) bad++; /* never NaN */
        }
        CHECK_EQ_INT(bad, 0);
        if (st) {
            for (int r = 0; r < rows; r++) {
                float amax = 0;
                for (int c = 0; c < cols; c++) amax = fmaxf(amax, fabsf(w[r * cols + c]));
                CHECK(s[r] == amax / 448.0f);
            }
        }
    }
    /* a zero row gets the dtype's eps as scale */
    float z[32] = {0};
    uint8_t q[32];
    float s1;
    CHECK_OK(qt_ct_fp8_quantize(z, 1, 32, QT_CT_TENSOR, QT_CT_BF16, q, &s1));
    CHECK(s1 == 0x1.0p-7f && q[0] == 0);
    free(w);
}

/* ---- NVFP4 ----------------------------------------------------------------------------- */

static void test_nvfp4_worked(void) {
    /* Row 0 holds the tensor amax 6: global scale 448*6/6 = 448, local
     * 6/6 * 448 = 448 (e4m3 0x7E), effective scale 1: codes are e2m1(x).
     * Row 1 has amax 1: local 448/6 = 74.67 rounds to e4m3 72 (0x69), effective
     * scale 72/448, so 1.0 -> 6.22 saturates to 6. */
    const float w[32] = {0, .5f, 1, 1.5f, 2, 3, 4, 6, -0.25f, -0.3f, 0.75f, 2.5f, 3.5f, 5, 5.5f, -6,
                         1, -1, 0.5f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.08f, 0.09f};
    uint8_t packed[16], scales[2];
    float gs;
    CHECK_OK(qt_ct_nvfp4_quantize(w, 2, 16, QT_CT_F32, packed, scales, &gs));
    CHECK(gs == 448.0f);
    CHECK_EQ_INT(scales[0], 0x7E);
    CHECK_EQ_INT(scales[1], 0x69);
    const uint8_t want0[8] = {0x10, 0x32, 0x54, 0x76, 0x98, 0x42, 0x66, 0xF7};
    CHECK(memcmp(packed, want0, 8) == 0);
    /* row 1: 1 -> 7, -1 -> 15, 0.5/(72/448) = 3.11 -> 3.0 (code 5); 0.08 -> 0.498 -> 0.5 (1); 0.09 -> 0.56 -> 1 */
    CHECK_EQ_INT(packed[8], 0xF7);
    CHECK_EQ_INT(packed[9], 0x05);
    CHECK_EQ_INT(packed[15], 0x11);
    float deq[32];
    CHECK_OK(qt_ct_nvfp4_dequantize(packed, scales, gs, 2, 16, deq));
    for (int j = 0; j < 16; j++) CHECK(deq[j] == qt_e2m1_to_f32(qt_f32_to_e2m1(w[j] > 6 ? 6 : w[j])));
    CHECK(deq[16] == 6.0f * (72.0f / 448.0f));
    CHECK(deq[18] == 3.0f * (72.0f / 448.0f));
}

static double fp4_half_gap(double t) { /* half the distance to the next E2M1 value above |t| */
    t = fabs(t);
    return t < 2 ? 0.25 : t < 4 ? 0.5 : 1.0;
}

static void test_nvfp4_bounds(void) {
    const int64_t rows = 16, cols = 128;
    float *w = random_matrix(rows, cols, 1.0f, 0.0f);
    for (int r = 0; r < rows; r++) /* rows of very different magnitude */
        for (int c = 0; c < cols; c++) w[r * cols + c] *= ldexpf(1.0f, -r / 2);
    uint8_t packed[16 * 64], scales[16 * 8];
    float gs, deq[16 * 128];
    CHECK_OK(qt_ct_nvfp4_quantize(w, rows, cols, QT_CT_F32, packed, scales, &gs));
    CHECK_OK(qt_ct_nvfp4_dequantize(packed, scales, gs, rows, cols, deq));
    float amax = 0;
    for (int i = 0; i < rows * cols; i++) amax = fmaxf(amax, fabsf(w[i]));
    CHECK(gs == 448.0f * 6.0f / amax);
    int bad = 0;
    for (int64_t i = 0; i < rows * cols; i++) {
        const double eff = qt_e4m3_to_f32(scales[i / 16]) / gs;
        if (fabs(w[i] - deq[i]) > fp4_half_gap(w[i] / eff) * eff * 1.0001) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    free(w);
}

/* ---- MXFP4 ------------------------------------------------------------------------------ */

static void test_mxfp4(void) {
    /* round_to_power_2 then 127 + log2 - 2 (docs/formats.md §4.7) */
    CHECK_EQ_INT(qt_ct_mxfp4_scale_exponent(1.0f), 125);
    CHECK_EQ_INT(qt_ct_mxfp4_scale_exponent(1.74f), 125);     /* bf16 1.7421875: mantissa < 1.75 */
    CHECK_EQ_INT(qt_ct_mxfp4_scale_exponent(1.75f), 126);     /* rounds up (ggml would say 125) */
    CHECK_EQ_INT(qt_ct_mxfp4_scale_exponent(6.0f), 127);
    CHECK_EQ_INT(qt_ct_mxfp4_scale_exponent(7.0f), 128);
    CHECK_EQ_INT(qt_ct_mxfp4_scale_exponent(0.0f), 0);
    CHECK_EQ_INT(qt_ct_mxfp4_scale_exponent(1e-38f), 0);      /* clamped to the uint8 range */
    CHECK_EQ_INT(qt_ct_mxfp4_scale_exponent(1e38f), 251);     /* 1e38 = 1.175 * 2^126 */

    const int64_t rows = 8, cols = 128;
    float *w = random_matrix(rows, cols, 2.0f, 0.0f);
    w[0] = 3.5f; /* block (0,0) amax 3.5 -> mantissa 1.75 -> p = 4, e = 127 */
    for (int j = 1; j < 32; j++) w[j] = fminf(fmaxf(w[j], -3.4f), 3.4f);
    uint8_t packed[8 * 64], scales[8 * 4];
    float deq[8 * 128];
    CHECK_OK(qt_ct_mxfp4_quantize(w, rows, cols, packed, scales));
    CHECK_EQ_INT(scales[0], 127);
    CHECK_EQ_INT(packed[0] & 15, 6); /* 3.5 / 1 -> 4.0 (tie to even) */
    CHECK_OK(qt_ct_mxfp4_dequantize(packed, scales, rows, cols, deq));
    int bad = 0;
    for (int64_t i = 0; i < rows * cols; i++) {
        const double sc = qt_e8m0_to_f32(scales[i / 32]);
        const double xb = qt_ct_round_dtype(w[i], QT_CT_BF16); /* inputs are taken as bf16 */
        if (fabs(xb - deq[i]) > fp4_half_gap(xb / sc) * sc) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    free(w);
}

/* sum over the matrix of imp[c] * (w - dequant)^2 (w rounded to bf16 first, as the codec does). */
static double weighted_err(const float *w, const int8_t *q, const float *sc, const int8_t *zp, int64_t R, int64_t C,
                           const qt_ct_int_args *a, const float *imp) {
    float *d = malloc(sizeof(float) * (size_t)(R * C));
    qt_ct_int_dequantize(q, sc, zp, R, C, a, d);
    double e = 0;
    for (int64_t i = 0; i < R * C; i++) {
        const double x = (double)qt_ct_round_dtype(w[i], a->dtype) - d[i];
        e += imp[i % C] * x * x;
    }
    free(d);
    return e;
}

/* imatrix-weighted rounding (qt__ct_int_quantize_weighted): without weights it is the minmax
 * codec bit for bit; with them every group's weighted error is at most minmax's, strictly
 * lower in total on heavy-tailed rows, and the per-channel fallback's arguments
 * (qt_ct_int_args_for) give one scale per row where the group does not divide. */
static void test_int_weighted(void) {
    const int64_t R = 32, C = 128;
    float *w = random_matrix(R, C, 1.0f, 0.0f), imp[128];
    for (int64_t i = 0; i < R * C; i += 37) w[i] *= 6.0f; /* outliers: minmax wastes the range */
    for (int64_t c = 0; c < C; c++) imp[c] = 0.1f + (float)(c % 7);
    int8_t q0[32 * 128], q1[32 * 128], z0[64], z1[64];
    float s0[64], s1[64];
    for (int sym = 0; sym < 2; sym++) {
        const qt_ct_int_args a = {.bits = 4, .symmetric = sym, .strategy = QT_CT_GROUP, .group_size = 64, .dtype = QT_CT_BF16};
        CHECK_OK(qt_ct_int_quantize(w, R, C, &a, q0, s0, sym ? NULL : z0));
        CHECK_OK(qt__ct_int_quantize_weighted(w, R, C, &a, NULL, q1, s1, sym ? NULL : z1));
        CHECK(memcmp(q0, q1, sizeof q0) == 0 && memcmp(s0, s1, sizeof s0) == 0);
        CHECK_OK(qt__ct_int_quantize_weighted(w, R, C, &a, imp, q1, s1, sym ? NULL : z1));
        const double e0 = weighted_err(w, q0, s0, sym ? NULL : z0, R, C, &a, imp);
        const double e1 = weighted_err(w, q1, s1, sym ? NULL : z1, R, C, &a, imp);
        CHECK_MSG(e1 < 0.95 * e0, "sym %d: weighted error %g, minmax %g", sym, e1, e0);
        for (int64_t k = 0; k < R * 2; k++) { /* group by group: never worse */
            const int64_t r = k / 2, c0 = (k % 2) * 64;
            double g0 = 0, g1 = 0;
            for (int64_t c = c0; c < c0 + 64; c++) {
                const double x = qt_ct_round_dtype(w[r * C + c], a.dtype);
                const double d0 = x - qt_ct_round_dtype((float)(q0[r * C + c] - (sym ? 0 : z0[k])) * s0[k], a.dtype);
                const double d1 = x - qt_ct_round_dtype((float)(q1[r * C + c] - (sym ? 0 : z1[k])) * s1[k], a.dtype);
                g0 += imp[c] * d0 * d0;
                g1 += imp[c] * d1 * d1;
            }
            CHECK_MSG(g1 <= g0, "group %lld: %g > %g", (long long)k, g1, g0);
        }
    }
    const qt_ct_int_args g = {.bits = 4, .symmetric = true, .strategy = QT_CT_GROUP, .group_size = 0, .dtype = QT_CT_BF16};
    qt_ct_int_args f = qt_ct_int_args_for(&g, 172);
    CHECK(f.strategy == QT_CT_CHANNEL && f.group_size == 0);
    f = qt_ct_int_args_for(&g, 256);
    CHECK(f.strategy == QT_CT_GROUP && f.group_size == 128);
    free(w);
}

int main(void) {
    QT_RUN(test_int_weighted);
    QT_RUN(test_nvfp4_global_scale_f16);
    QT_RUN(test_manifest_vectors);
    QT_RUN(test_worked_packing_example);
    QT_RUN(test_pack_refuses_out_of_range);
    QT_RUN(test_qparams_by_hand);
    QT_RUN(test_int_roundtrip_bounds);
    QT_RUN(test_asymmetric_zero_points);
    QT_RUN(test_group_size_must_divide_row);
    QT_RUN(test_bad_weights_refused);
    QT_RUN(test_bf16_model_dtype);
    QT_RUN(test_int4_group_packed_path);
    QT_RUN(test_fp8_weights);
    QT_RUN(test_nvfp4_worked);
    QT_RUN(test_nvfp4_bounds);
    QT_RUN(test_mxfp4);
    return qt_test_finish("test_ct");
}
