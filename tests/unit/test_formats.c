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

/* One table: every scheme names a format row whose facts it carries; GGUF schemes
 * name a file type with rules; the writer's file-type ids are llama.h's. */
static void test_schemes_join_formats(void) {
    for (int i = 0; i < qt_scheme_count(); i++) {
        const qt_scheme_info *s = qt_scheme_get(i);
        const qt_format_info *f = qt_format_find(s->format);
        CHECK_MSG(f != NULL, "scheme %s: format '%s' is not a listed row", s->key, s->format ? s->format : "(null)");
        if (!f) continue;
        CHECK_EQ_INT(s->bits, f->bits);
        CHECK_EQ_INT(s->zero_bits, f->zero_bits);
        CHECK(s->g_idx == f->g_idx);
        if (s->kind == QT_SCHEME_GGUF) {
            CHECK_MSG(s->gguf && s->gguf->has_rules, "scheme %s: no GGUF file type with rules", s->key);
            if (s->gguf) CHECK_EQ_INT(s->gguf->base, f->ggml_type);
        } else {
            CHECK(s->gguf == NULL);
            if (s->kind == QT_SCHEME_GROUP_INT || s->kind == QT_SCHEME_MICROFLOAT || s->kind == QT_SCHEME_NF4)
                CHECK_EQ_INT(s->group, f->block_elems);
        }
    }
    CHECK_EQ_INT(qt_scheme_find("w4a16")->group, 128);
    CHECK_EQ_INT(qt_scheme_find("awq")->zero_bits, 4);
    CHECK(qt_scheme_find("gptq")->g_idx);
    /* general.file_type ids (llama.h enum llama_ftype) */
    CHECK_EQ_INT(qt_gguf_ftype_of_type(QT_TYPE_F32), 0);
    CHECK_EQ_INT(qt_gguf_ftype_of_type(QT_TYPE_Q8_0), 7);
    CHECK_EQ_INT(qt_gguf_ftype_of_type(QT_TYPE_Q3_K), 12);
    CHECK_EQ_INT(qt_gguf_ftype_of_type(QT_TYPE_Q4_K), 15);
    CHECK_EQ_INT(qt_gguf_ftype_of_type(QT_TYPE_Q5_K), 17);
    CHECK_EQ_INT(qt_gguf_ftype_of_type(QT_TYPE_IQ3_S), 26);
    CHECK_EQ_INT(qt_gguf_ftype_of_type(QT_TYPE_BF16), 32);
    CHECK_EQ_INT(qt_gguf_ftype_of_type(QT_TYPE_MXFP4), 38);
    CHECK_EQ_INT(qt_gguf_ftype_of_type(QT_TYPE_Q8_K), 1024);
    CHECK(qt_gguf_ftype_find("q4_k_s") && qt_gguf_ftype_find("Q4_K_S")->id == 14);
    CHECK(qt_gguf_ftype_find("Q4_K_X") == NULL);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* Every compressed-tensors row's tensor codec gives the same bytes as the
 * numeric cores it is built on, and dequantizes back within its step. */
static void test_tensor_codecs(void) {
    enum { R = 8, C = 256 };
    static float w[R * C], back[R * C], ref[R * C];
    for (int i = 0; i < R * C; i++) w[i] = rnd() * (1.0f + (float)(i % 13));
    int n_codecs = 0;
    for (int i = 0; i < qt_format_count(); i++) {
        const qt_format_info *f = qt_format_at(i);
        if (f->family != QT_FAMILY_COMPRESSED_TENSORS) continue;
        CHECK_MSG(f->quantize && f->dequantize, "%s: a compressed-tensors row without a tensor codec", f->name);
        if (!f->quantize) continue;
        n_codecs++;
        qt_ct_tensor_sizes z;
        CHECK_OK(qt_format_tensor_sizes(f, R, C, &z));
        qt_ct_tensors t = {malloc((size_t)z.weight_bytes), z.n_scales ? malloc((size_t)z.n_scales * 4) : NULL,
                           z.scale_code_bytes ? malloc((size_t)z.scale_code_bytes) : NULL,
                           z.zero_point_bytes ? malloc((size_t)z.zero_point_bytes) : NULL, 0};
        CHECK_OK(f->quantize(f, w, R, C, QT_CT_BF16, &t));
        CHECK_OK(f->dequantize(f, &t, R, C, QT_CT_BF16, back));
        /* the same tensor through the cores directly */
        const int bits = f->bits;
        if (!strcmp(f->ct_format, "pack-quantized") || !strcmp(f->ct_format, "int-quantized")) {
            const qt_ct_int_args a = {bits, f->symmetric, f->block_elems == 1 ? QT_CT_CHANNEL : QT_CT_GROUP,
                                      f->block_elems > 1 ? f->block_elems : 0, QT_CT_BF16};
            int8_t *q = malloc(R * C), *zp = malloc((size_t)z.n_scales);
            float *sc = malloc((size_t)z.n_scales * 4);
            CHECK_OK(qt_ct_int_quantize(w, R, C, &a, q, sc, f->symmetric ? NULL : zp));
            CHECK(memcmp(sc, t.scales, (size_t)z.n_scales * 4) == 0);
            if (!strcmp(f->ct_format, "pack-quantized")) {
                int32_t *packed = malloc((size_t)z.weight_bytes);
                CHECK_OK(qt_ct_pack_rows(q, R, C, bits, packed));
                CHECK_MSG(memcmp(packed, t.weight, (size_t)z.weight_bytes) == 0, "%s: packed codes differ", f->name);
                if (!f->symmetric) {
                    int32_t *pz = malloc((size_t)z.zero_point_bytes);
                    CHECK_OK(qt_ct_pack_cols(zp, R, z.n_scales / R, bits, pz));
                    CHECK(memcmp(pz, t.zero_points, (size_t)z.zero_point_bytes) == 0);
                    free(pz);
                }
                free(packed);
            } else {
                CHECK(memcmp(q, t.weight, R * C) == 0);
            }
            CHECK_OK(qt_ct_int_dequantize(q, sc, f->symmetric ? NULL : zp, R, C, &a, ref));
            free(q);
            free(zp);
            free(sc);
        } else if (!strcmp(f->ct_format, "float-quantized")) {
            uint8_t *q = malloc(R * C);
            float sc[R];
            const qt_ct_strategy st = f->block_elems == 0 ? QT_CT_TENSOR : QT_CT_CHANNEL;
            CHECK_OK(qt_ct_fp8_quantize(w, R, C, st, QT_CT_BF16, q, sc));
            CHECK(memcmp(q, t.weight, R * C) == 0 && memcmp(sc, t.scales, (size_t)z.n_scales * 4) == 0);
            CHECK_OK(qt_ct_fp8_dequantize(q, sc, R, C, st, QT_CT_BF16, ref));
            free(q);
        } else if (!strcmp(f->ct_format, "nvfp4-pack-quantized")) {
            uint8_t *p = malloc(R * C / 2), *sc = malloc(R * C / 16);
            float g;
            CHECK_OK(qt_ct_nvfp4_quantize(w, R, C, QT_CT_BF16, p, sc, &g));
            CHECK(memcmp(p, t.weight, R * C / 2) == 0 && memcmp(sc, t.scale_codes, R * C / 16) == 0);
            CHECK(g == t.global_scale && g > 0);
            CHECK_OK(qt_ct_nvfp4_dequantize(p, sc, g, R, C, ref));
            free(p);
            free(sc);
        } else {
            CHECK_EQ_STR(f->ct_format, "mxfp4-pack-quantized");
            uint8_t *p = malloc(R * C / 2), *sc = malloc(R * C / 32);
            CHECK_OK(qt_ct_mxfp4_quantize(w, R, C, p, sc));
            CHECK(memcmp(p, t.weight, R * C / 2) == 0 && memcmp(sc, t.scale_codes, R * C / 32) == 0);
            CHECK_OK(qt_ct_mxfp4_dequantize(p, sc, R, C, ref));
            free(p);
            free(sc);
        }
        CHECK_MSG(memcmp(ref, back, sizeof back) == 0, "%s: tensor dequantizer differs from the core's", f->name);
        /* and the round trip is close: relative RMS error below the format's step */
        double e = 0, s2 = 0;
        for (int k = 0; k < R * C; k++) {
            e += (double)(back[k] - w[k]) * (back[k] - w[k]);
            s2 += (double)w[k] * w[k];
        }
        CHECK_MSG(e / s2 < (bits >= 8 ? 1e-3 : 2e-2), "%s: relative squared error %g", f->name, e / s2);
        free(t.weight);
        free(t.scales);
        free(t.scale_codes);
        free(t.zero_points);
    }
    CHECK(n_codecs >= 9);
    qt_ct_tensor_sizes z;
    CHECK_STATUS(qt_format_tensor_sizes(qt_format_find("w4a16-g128"), 4, 100, &z), QT_ERR_SHAPE);
    CHECK_STATUS(qt_format_tensor_sizes(qt_format_find("q4_K"), 4, 256, &z), QT_ERR_UNSUPPORTED);
}

int main(void) {
    QT_RUN(test_schemes_join_formats);
    QT_RUN(test_tensor_codecs);
    QT_RUN(test_quantize_rejects_non_finite);
    QT_RUN(test_gguf_rows_match_traits);
    QT_RUN(test_known_bits_per_weight);
    QT_RUN(test_names_unique);
    return qt_test_finish("test_formats");
}
