/* safetensors reader, checkpoints and writer (docs/formats.md §1). */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixtures.h"
#include "qtest.h"
#include "quanta.h"

#define CHECK_ERR_HAS(expr, want_status, needle)                                                    \
    do {                                                                                            \
        qt_status _st = (expr);                                                                     \
        CHECK_MSG(_st == (want_status), "%s -> %s (want %s): %s", #expr, qt_status_name(_st),       \
                  qt_status_name(want_status), qt_last_error());                                    \
        CHECK_MSG(strstr(qt_last_error(), (needle)) != NULL, "message \"%s\" lacks \"%s\"",         \
                  qt_last_error(), (needle));                                                       \
    } while (0)

/* A file image: 8-byte length, header text (unpadded), then `data_len` bytes of 0xAB. */
static uint8_t *image(const char *header, size_t data_len, size_t *size) {
    size_t n = strlen(header);
    *size = 8 + n + data_len;
    uint8_t *b = malloc(*size);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(b + 8, header, n);
    memset(b + 8 + n, 0xAB, data_len);
    return b;
}

static qt_status parse_image(const char *header, size_t data_len) {
    size_t size;
    uint8_t *b = image(header, data_len, &size);
    qt_safetensors *st = NULL;
    qt_status s = qt_st_parse(b, size, "img.safetensors", &st);
    qt_st_close(st);
    free(b);
    return s;
}

static const char *tmp_path(const char *name) {
    static char bufs[4][1024];
    static int i;
    char *b = bufs[i++ & 3];
    snprintf(b, 1024, "%s/%s", qt_test_tmpdir(), name);
    return b;
}

/* docs/formats.md §1.5: one F16 tensor w = [1.0, -2.0], byte for byte. */
static const uint8_t worked_example[68] = {
    0x38, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7b, 0x22, 0x77, 0x22, 0x3a, 0x7b, 0x22, 0x64, 0x74,
    0x79, 0x70, 0x65, 0x22, 0x3a, 0x22, 0x46, 0x31, 0x36, 0x22, 0x2c, 0x22, 0x73, 0x68, 0x61, 0x70, 0x65,
    0x22, 0x3a, 0x5b, 0x32, 0x5d, 0x2c, 0x22, 0x64, 0x61, 0x74, 0x61, 0x5f, 0x6f, 0x66, 0x66, 0x73, 0x65,
    0x74, 0x73, 0x22, 0x3a, 0x5b, 0x30, 0x2c, 0x34, 0x5d, 0x7d, 0x7d, 0x20, 0x20, 0x00, 0x3c, 0x00, 0xc0,
};

static void test_worked_example_write(void) {
    uint16_t w[2] = {qt_f32_to_fp16(1.0f), qt_f32_to_fp16(-2.0f)};
    qt_st_entry e = {.name = "w", .dtype = QT_ST_F16, .n_dims = 1, .shape = {2}, .data = w};
    const char *p = tmp_path("worked.safetensors");
    CHECK_OK(qt_st_write(p, &e, 1, NULL, 0));
    size_t n;
    uint8_t *got = qt_test_read(p, &n);
    CHECK_EQ_INT(n, sizeof worked_example);
    CHECK(n == sizeof worked_example && memcmp(got, worked_example, n) == 0);
    free(got);
}

static void test_worked_example_read(void) {
    qt_safetensors *st;
    CHECK_OK(qt_st_parse(worked_example, sizeof worked_example, "ex", &st));
    if (!st) return;
    CHECK_EQ_INT(qt_st_header_len(st), 56);
    CHECK_EQ_INT(qt_st_n_tensors(st), 1);
    CHECK_EQ_INT(qt_st_n_metadata(st), 0);
    const qt_st_tensor *t = qt_st_find(st, "w");
    CHECK(t != NULL);
    if (t) {
        CHECK_EQ_INT(t->dtype, QT_ST_F16);
        CHECK_EQ_INT(t->n_dims, 1);
        CHECK_EQ_INT(t->shape[0], 2);
        CHECK_EQ_INT(t->file_offset, 64);
        const uint16_t *h = t->data;
        CHECK_EQ_INT(qt_fp16_to_f32(h[0]), 1);
        CHECK_EQ_INT(qt_fp16_to_f32(h[1]), -2);
    }
    CHECK(qt_st_find(st, "x") == NULL);
    qt_st_close(st);
}

/* The reference writer's order (dtype descending, then name), `__metadata__` first. */
static void test_writer_order_and_header(void) {
    float a = 1.5f;
    uint16_t b[2] = {1, 2}, c = 3;
    int8_t d[3] = {-1, 0, 1};
    qt_st_entry e[4] = {
        {.name = "b", .dtype = QT_ST_F16, .n_dims = 1, .shape = {2}, .data = b},
        {.name = "d", .dtype = QT_ST_I8, .n_dims = 1, .shape = {3}, .data = d},
        {.name = "a", .dtype = QT_ST_F32, .n_dims = 1, .shape = {1}, .data = &a},
        {.name = "c", .dtype = QT_ST_F16, .n_dims = 0, .data = &c},
    };
    qt_st_kv meta[2] = {{"format", "pt"}, {"alpha", "1"}};
    const char *p = tmp_path("order.safetensors");
    CHECK_OK(qt_st_write(p, e, 4, meta, 2));
    size_t n;
    uint8_t *got = qt_test_read(p, &n);
    const char *want = "{\"__metadata__\":{\"alpha\":\"1\",\"format\":\"pt\"},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                       "\"b\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[4,8]},"
                       "\"c\":{\"dtype\":\"F16\",\"shape\":[],\"data_offsets\":[8,10]},"
                       "\"d\":{\"dtype\":\"I8\",\"shape\":[3],\"data_offsets\":[10,13]}}";
    size_t wl = strlen(want), padded = (wl + 7) / 8 * 8;
    CHECK_EQ_INT(got[0] | got[1] << 8, padded);
    CHECK(n == 8 + padded + 13);
    CHECK(memcmp(got + 8, want, wl) == 0);
    for (size_t i = wl; i < padded; i++) CHECK_EQ_INT(got[8 + i], ' ');
    CHECK(memcmp(got + 8 + padded, &a, 4) == 0);
    CHECK(memcmp(got + 8 + padded + 4, b, 4) == 0);
    CHECK(memcmp(got + 8 + padded + 10, d, 3) == 0);
    free(got);
}

static void test_round_trip_all_dtypes(void) {
    qt_st_entry e[QT_ST_DTYPE_COUNT + 2];
    uint8_t *bufs[QT_ST_DTYPE_COUNT + 2];
    char names[QT_ST_DTYPE_COUNT + 2][32];
    int n = 0;
    uint32_t x = 12345;
    for (int d = 0; d < QT_ST_DTYPE_COUNT; d++) {
        snprintf(names[n], sizeof names[n], "t.%s", qt_st_dtype_name((qt_st_dtype)d));
        e[n] = (qt_st_entry){.name = names[n], .dtype = (qt_st_dtype)d, .n_dims = 2, .shape = {3, 8}};
        size_t b = qt_st_entry_nbytes(&e[n]);
        bufs[n] = malloc(b);
        for (size_t i = 0; i < b; i++) { x = x * 1664525u + 1013904223u; bufs[n][i] = (uint8_t)(x >> 24); }
        e[n].data = bufs[n];
        n++;
    }
    snprintf(names[n], 32, "empty");
    e[n] = (qt_st_entry){.name = names[n], .dtype = QT_ST_F32, .n_dims = 2, .shape = {0, 3}, .data = NULL};
    bufs[n++] = NULL;
    snprintf(names[n], 32, "\xc3\xa9t\xc3\xa9 \"quoted\"");
    static const int64_t one = 7;
    e[n] = (qt_st_entry){.name = names[n], .dtype = QT_ST_I64, .n_dims = 0, .data = &one};
    bufs[n++] = NULL;

    const char *p = tmp_path("all.safetensors");
    CHECK_OK(qt_st_write(p, e, n, NULL, 0));
    qt_safetensors *st;
    CHECK_OK(qt_st_open(p, &st));
    if (st) {
        CHECK_EQ_INT(qt_st_n_tensors(st), n);
        for (int i = 0; i < n; i++) {
            const qt_st_tensor *t = qt_st_find(st, e[i].name);
            CHECK_MSG(t != NULL, "tensor %s missing", e[i].name);
            if (!t) continue;
            CHECK_EQ_INT(t->dtype, e[i].dtype);
            CHECK_EQ_INT(t->n_dims, e[i].n_dims);
            for (int k = 0; k < e[i].n_dims; k++) CHECK_EQ_INT(t->shape[k], e[i].shape[k]);
            uint64_t b = qt_st_entry_nbytes(&e[i]);
            CHECK_EQ_INT(t->end - t->begin, b);
            CHECK(b == 0 || memcmp(t->data, e[i].data, b) == 0);
            /* alignment convention: wider types first => every tensor starts at a multiple of its element size */
            int bits = qt_st_dtype_bits(t->dtype);
            if (bits >= 8) CHECK_EQ_INT(t->file_offset % (uint64_t)(bits / 8), 0);
        }
        qt_st_close(st);
    }
    for (int i = 0; i < n; i++) free(bufs[i]);
}

static void test_dtype_mapping(void) {
    qt_type t;
    CHECK_OK(qt_st_dtype_to_type(QT_ST_F32, &t)); CHECK_EQ_INT(t, QT_TYPE_F32);
    CHECK_OK(qt_st_dtype_to_type(QT_ST_F16, &t)); CHECK_EQ_INT(t, QT_TYPE_F16);
    CHECK_OK(qt_st_dtype_to_type(QT_ST_BF16, &t)); CHECK_EQ_INT(t, QT_TYPE_BF16);
    CHECK_OK(qt_st_dtype_to_type(QT_ST_I8, &t)); CHECK_EQ_INT(t, QT_TYPE_I8);
    CHECK_OK(qt_st_dtype_to_type(QT_ST_I32, &t)); CHECK_EQ_INT(t, QT_TYPE_I32);
    CHECK_OK(qt_st_dtype_to_type(QT_ST_I64, &t)); CHECK_EQ_INT(t, QT_TYPE_I64);
    CHECK_ERR_HAS(qt_st_dtype_to_type(QT_ST_F8_E4M3, &t), QT_ERR_UNSUPPORTED, "F8_E4M3");
    CHECK_ERR_HAS(qt_st_dtype_to_type(QT_ST_U8, &t), QT_ERR_UNSUPPORTED, "U8");
    qt_st_dtype d;
    CHECK_OK(qt_st_dtype_from_type(QT_TYPE_BF16, &d)); CHECK_EQ_INT(d, QT_ST_BF16);
    CHECK_ERR_HAS(qt_st_dtype_from_type(QT_TYPE_Q4_0, &d), QT_ERR_UNSUPPORTED, "q4_0");
    CHECK(qt_st_dtype_from_name("F8_E5M2FNUZ", &d) && d == QT_ST_F8_E5M2FNUZ);
    CHECK(!qt_st_dtype_from_name("f32", &d));
    CHECK_EQ_INT(qt_st_dtype_bits(QT_ST_F4), 4);
    CHECK_EQ_INT(qt_st_dtype_bits(QT_ST_C64), 64);
}

/* Every prefix of a valid file is refused, with the message for its region. */
static void test_every_truncation(void) {
    const char *hdr = "{\"__metadata__\":{\"format\":\"pt\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                      "\"b\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[8,14]}}";
    size_t size;
    uint8_t *full = image(hdr, 14, &size);
    qt_safetensors *st;
    CHECK_OK(qt_st_parse(full, size, "full", &st));
    qt_st_close(st);
    size_t hl = strlen(hdr);
    for (size_t k = 0; k < size; k++) {
        uint8_t *b = malloc(k ? k : 1); /* exact size: ASan sees any over-read */
        memcpy(b, full, k);
        st = NULL;
        qt_status s = qt_st_parse(b, k, "cut.safetensors", &st);
        CHECK_MSG(s == QT_ERR_FORMAT && st == NULL, "prefix %zu accepted (%s)", k, qt_status_name(s));
        const char *want = k < 8 ? "shorter than the 8-byte length field"
                         : k < 8 + hl ? "runs past the end of the file"
                         : "truncated";
        CHECK_MSG(strstr(qt_last_error(), want) && strstr(qt_last_error(), "cut.safetensors"),
                  "prefix %zu: \"%s\" lacks \"%s\"", k, qt_last_error(), want);
        free(b);
    }
    free(full);
}

static void test_header_length_extremes(void) {
    uint8_t b[16] = {0};
    qt_safetensors *st;
    uint64_t lens[] = {100000001ull, UINT64_MAX, 1ull << 63};
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < 8; k++) b[k] = (uint8_t)(lens[i] >> (8 * k));
        CHECK_ERR_HAS(qt_st_parse(b, sizeof b, "big", &st), QT_ERR_FORMAT, "exceeds the limit of 100000000");
    }
    uint64_t at_limit = 100000000ull;
    for (int k = 0; k < 8; k++) b[k] = (uint8_t)(at_limit >> (8 * k));
    CHECK_ERR_HAS(qt_st_parse(b, sizeof b, "lim", &st), QT_ERR_FORMAT, "runs past the end");
    memset(b, 0, 8);
    CHECK_ERR_HAS(qt_st_parse(b, 8, "zero", &st), QT_ERR_FORMAT, "invalid JSON");
    /* Whitespace padding before and after the object is accepted (§1.3). */
    CHECK_OK(parse_image("  {\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}   ", 1));
    /* An empty object is a valid file with no tensors. */
    CHECK_OK(parse_image("{}", 0));
}

static void test_offsets_rules(void) {
    CHECK_ERR_HAS(parse_image("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                              "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[2,6]}}", 6),
                  QT_ERR_FORMAT, "tensor 'b': field 'data_offsets': [2, 6] overlaps the previous tensor, which ends at 4");
    CHECK_ERR_HAS(parse_image("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                              "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12),
                  QT_ERR_FORMAT, "tensor 'b': field 'data_offsets': begins at 8 but the previous tensor ends at 4 (a hole");
    CHECK_ERR_HAS(parse_image("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8),
                  QT_ERR_FORMAT, "begins at 4 but the previous tensor ends at 0");
    CHECK_ERR_HAS(parse_image("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                              "\"b\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,0]}}", 4),
                  QT_ERR_FORMAT, "tensor 'b': field 'data_offsets': END 0 is before BEGIN 4");
    /* Any key order in the JSON: offsets decide the layout. */
    CHECK_OK(parse_image("{\"z\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
                         "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8));
    CHECK_ERR_HAS(parse_image("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4),
                  QT_ERR_FORMAT, "tensor 'a': field 'data_offsets': spans 4 bytes but shape and dtype F32 need 8");
    CHECK_ERR_HAS(parse_image("{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,1]}}", 1),
                  QT_ERR_FORMAT, "F4 elements do not fill whole bytes");
    CHECK_ERR_HAS(parse_image("{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,8],\"data_offsets\":[0,4]}}", 4),
                  QT_ERR_FORMAT, "overflows");
    CHECK_ERR_HAS(parse_image("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 6),
                  QT_ERR_FORMAT, "6 bytes after the header but the tensors cover 4: 2 trailing bytes");
    CHECK_OK(parse_image("{\"a\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[0,0]},"
                         "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4));
}

static void test_schema_errors(void) {
    CHECK_ERR_HAS(parse_image("{\"a\":{\"dtype\":\"F17\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4),
                  QT_ERR_FORMAT, "tensor 'a': field 'dtype': unknown dtype \"F17\"");
    CHECK_ERR_HAS(parse_image("{\"a\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", 4),
                  QT_ERR_FORMAT, "field 'dtype' must be a string");
    CHECK_ERR_HAS(parse_image("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4), QT_ERR_FORMAT, "field 'dtype' missing");
    CHECK_ERR_HAS(parse_image("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4), QT_ERR_FORMAT, "field 'shape' missing");
    CHECK_ERR_HAS(parse_image("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4), QT_ERR_FORMAT, "field 'data_offsets' missing");
    CHECK_ERR_HAS(parse_image("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4),
                  QT_ERR_FORMAT, "field 'shape'[0]: not a non-negative integer");
    CHECK_ERR_HAS(parse_image("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4),
                  QT_ERR_FORMAT, "field 'shape'[0]");
    CHECK_ERR_HAS(parse_image("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 4),
                  QT_ERR_FORMAT, "field 'data_offsets' must be [BEGIN, END]");
    CHECK_ERR_HAS(parse_image("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4),
                  QT_ERR_UNSUPPORTED, "9 dimensions");
    CHECK_ERR_HAS(parse_image("{\"a\":[1]}", 0), QT_ERR_FORMAT, "tensor 'a': entry must be an object");
    CHECK_ERR_HAS(parse_image("[]", 0), QT_ERR_FORMAT, "header: must be a JSON object");
    CHECK_ERR_HAS(parse_image("{\"a\":", 0), QT_ERR_FORMAT, "header: invalid JSON at line 1");
    CHECK_ERR_HAS(parse_image("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                              "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}", 2),
                  QT_ERR_FORMAT, "duplicate");
    CHECK_ERR_HAS(parse_image("{\"\xff\":{}}", 0), QT_ERR_FORMAT, "invalid UTF-8 at header byte 2");
    CHECK_ERR_HAS(parse_image("{\"\xed\xa0\x80\":{}}", 0), QT_ERR_FORMAT, "invalid UTF-8"); /* a surrogate */
    CHECK_ERR_HAS(parse_image("{\"__metadata__\":{\"format\":1}}", 0), QT_ERR_FORMAT,
                  "field '__metadata__.format': value must be a string");
    CHECK_ERR_HAS(parse_image("{\"__metadata__\":[\"x\"]}", 0), QT_ERR_FORMAT, "field '__metadata__': must be an object");
}

static void test_metadata_read(void) {
    size_t size;
    uint8_t *b = image("{\"__metadata__\":{\"format\":\"pt\",\"b\":\"2\"},\"x\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
                       &size);
    qt_safetensors *st;
    CHECK_OK(qt_st_parse(b, size, "m", &st));
    if (st) {
        CHECK_EQ_INT(qt_st_n_metadata(st), 2);
        CHECK_EQ_STR(qt_st_metadata_key(st, 0), "b");
        CHECK_EQ_STR(qt_st_metadata_value(st, 1), "pt");
        CHECK_EQ_STR(qt_st_metadata_get(st, "format"), "pt");
        CHECK(qt_st_metadata_get(st, "nope") == NULL);
        qt_st_close(st);
    }
    free(b);
}

/* Random byte flips never crash (ASan/UBSan) and either parse or fail with a message. */
static void test_random_byte_flips(void) {
    size_t size;
    uint8_t *full = image("{\"__metadata__\":{\"format\":\"pt\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
                          "\"b\":{\"dtype\":\"I8\",\"shape\":[3],\"data_offsets\":[16,19]}}", 19, &size);
    uint32_t x = 42;
    int ok = 0, bad = 0;
    for (int it = 0; it < 3000; it++) {
        uint8_t *b = malloc(size);
        memcpy(b, full, size);
        int flips = 1 + it % 3;
        for (int f = 0; f < flips; f++) {
            x = x * 1103515245u + 12345u;
            size_t pos = (x >> 8) % size;
            x = x * 1103515245u + 12345u;
            b[pos] ^= (uint8_t)(1u << ((x >> 16) & 7));
        }
        qt_safetensors *st = NULL;
        qt_status s = qt_st_parse(b, size, "flip", &st);
        if (s == QT_OK) ok++;
        else { bad++; CHECK(strlen(qt_last_error()) > 0 && st == NULL); }
        qt_st_close(st);
        free(b);
    }
    CHECK(bad > 0);
    free(full);
}

static void test_writer_refuses(void) {
    uint8_t d[4] = {0};
    qt_st_entry e[2] = {{.name = "x", .dtype = QT_ST_U8, .n_dims = 1, .shape = {4}, .data = d},
                        {.name = "x", .dtype = QT_ST_F32, .n_dims = 1, .shape = {1}, .data = d}};
    const char *p = tmp_path("dup.safetensors");
    CHECK_ERR_HAS(qt_st_write(p, e, 2, NULL, 0), QT_ERR_ARG, "duplicate tensor name 'x'");
    CHECK(access(p, F_OK) != 0);
    e[1].name = "__metadata__";
    CHECK_ERR_HAS(qt_st_write(p, e, 2, NULL, 0), QT_ERR_ARG, "reserved");
    e[1].name = "\xff";
    CHECK_ERR_HAS(qt_st_write(p, e, 2, NULL, 0), QT_ERR_ARG, "not valid UTF-8");
    /* A streamed writer that gets too few bytes leaves nothing behind. */
    qt_st_writer *w;
    CHECK_OK(qt_st_writer_open(p, e, 1, NULL, 0, &w));
    CHECK_OK(qt_st_writer_write(w, d, 3));
    CHECK_ERR_HAS(qt_st_writer_commit(w), QT_ERR_ARG, "3 bytes of tensor data written, header declares 4");
    CHECK(access(p, F_OK) != 0);
    CHECK_OK(qt_st_writer_open(p, e, 1, NULL, 0, &w));
    CHECK_ERR_HAS(qt_st_writer_write(w, d, 5), QT_ERR_ARG, "more tensor data than the header declares");
    qt_st_writer_abort(w);
    CHECK(access(p, F_OK) != 0);
}

/* A staged writer (qt_st_writer_open_staged) interrupted after its first tensor, reopened at
 * that boundary with garbage past it: the same bytes as one uninterrupted write; another
 * header is refused, and so is a boundary outside the file. */
static void test_writer_staged_resume(void) {
    uint8_t a[6] = {1, 2, 3, 4, 5, 6}, b[8] = {9, 8, 7, 6, 5, 4, 3, 2};
    qt_st_entry e[2] = {{.name = "a", .dtype = QT_ST_U8, .n_dims = 1, .shape = {6}, .data = a},
                        {.name = "b", .dtype = QT_ST_U8, .n_dims = 1, .shape = {8}, .data = b}};
    const char *ref = tmp_path("ref.safetensors");
    CHECK_OK(qt_st_write(ref, e, 2, NULL, 0));
    char out[1024], part[1040];
    snprintf(out, sizeof out, "%s", tmp_path("staged.safetensors"));
    snprintf(part, sizeof part, "%s.partial", out);
    qt_afile_stage st = {.path = part, .keep = true};
    qt_st_writer *w;
    CHECK_OK(qt_st_writer_open_staged(out, e, 2, NULL, 0, &st, &w));
    const int32_t first = qt_st_writer_order(w, 0);
    CHECK_OK(qt_st_writer_write(w, e[first].data, 6 + 2 * (size_t)(first == 1)));
    CHECK_OK(qt_st_writer_sync(w));
    const uint64_t at = qt_st_writer_tell(w);
    qt_st_writer_abort(w); /* kept: a resumable run's staging file */
    CHECK(access(part, F_OK) == 0 && access(out, F_OK) != 0);
    FILE *f = fopen(part, "ab");
    fputs("garbage past the boundary", f);
    fclose(f);
    st.resume_at = at;
    CHECK_OK(qt_st_writer_open_staged(out, e, 2, NULL, 0, &st, &w));
    CHECK(qt_st_writer_data_written(w) == (first == 1 ? 8u : 6u));
    const int32_t second = qt_st_writer_order(w, 1);
    CHECK_OK(qt_st_writer_write(w, e[second].data, second == 1 ? 8 : 6));
    CHECK_OK(qt_st_writer_commit(w));
    char *x, *y;
    size_t nx, ny;
    CHECK_OK(qt_read_file(ref, &x, &nx));
    CHECK_OK(qt_read_file(out, &y, &ny));
    CHECK(nx == ny && !memcmp(x, y, nx));
    free(x);
    free(y);
    /* a staging file whose header is another's, and a boundary inside the header */
    char foreign[158];
    memset(foreign, 'x', sizeof foreign);
    memcpy(foreign, "01234567", 8);
    CHECK(fx_write_file(part, foreign, sizeof foreign) == 0);
    CHECK_ERR_HAS(qt_st_writer_open_staged(out, e, 2, NULL, 0, &st, &w), QT_ERR_FORMAT, "header differs");
    st.resume_at = 3;
    CHECK_ERR_HAS(qt_st_writer_open_staged(out, e, 2, NULL, 0, &st, &w), QT_ERR_FORMAT, "outside this file's");
}

/* ---- sharded checkpoints ---------------------------------------------------------- */

static const char *mkdir_tmp(const char *name) {
    const char *d = tmp_path(name);
    mkdir(d, 0755);
    return d;
}

static void write_shard(const char *dir, const char *file, const char *const *names, int n) {
    static const float v[4] = {1, 2, 3, 4};
    qt_st_entry e[8];
    for (int i = 0; i < n; i++) e[i] = (qt_st_entry){.name = names[i], .dtype = QT_ST_F32, .n_dims = 1, .shape = {4}, .data = v};
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    CHECK_OK(qt_st_write(p, e, n, NULL, 0));
}

static void write_text(const char *dir, const char *file, const char *text) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    CHECK(fx_write_file(p, text, strlen(text)) == 0);
}

static const char *index_ab =
    "{\"metadata\":{\"total_size\":48},\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s1.safetensors\",\"c\":\"s2.safetensors\"}}";

static void make_two_shards(const char *dir) {
    write_shard(dir, "s1.safetensors", (const char *[]){"a", "b"}, 2);
    write_shard(dir, "s2.safetensors", (const char *[]){"c"}, 1);
    write_text(dir, QT_ST_INDEX_NAME, index_ab);
}

static void test_sharded_ok(void) {
    const char *dir = mkdir_tmp("sh_ok");
    make_two_shards(dir);
    qt_st_checkpoint *c;
    CHECK_OK(qt_st_checkpoint_open(dir, &c));
    if (!c) return;
    CHECK(qt_st_checkpoint_sharded(c));
    CHECK_EQ_INT(qt_st_checkpoint_n_files(c), 2);
    CHECK_EQ_INT(qt_st_checkpoint_n_tensors(c), 3);
    int32_t f = -1;
    const qt_st_tensor *t = qt_st_checkpoint_find(c, "c", &f);
    CHECK(t && f == 1 && ((const float *)t->data)[3] == 4.0f);
    CHECK(qt_st_checkpoint_find(c, "zz", NULL) == NULL);
    CHECK_EQ_STR(qt_st_checkpoint_tensor(c, 0, &f)->name, "a");
    qt_st_checkpoint_close(c);
    /* A directory with both prefers the single file, like transformers. */
    write_shard(dir, QT_ST_SINGLE_NAME, (const char *[]){"only"}, 1);
    CHECK_OK(qt_st_checkpoint_open(dir, &c));
    if (c) {
        CHECK(!qt_st_checkpoint_sharded(c));
        CHECK_EQ_INT(qt_st_checkpoint_n_tensors(c), 1);
        qt_st_checkpoint_close(c);
    }
}

static void test_sharded_missing_shard(void) {
    const char *dir = mkdir_tmp("sh_missing");
    make_two_shards(dir);
    char p[1024];
    snprintf(p, sizeof p, "%s/s2.safetensors", dir);
    unlink(p);
    qt_st_checkpoint *c;
    CHECK_ERR_HAS(qt_st_checkpoint_open(dir, &c), QT_ERR_NOT_FOUND, "field 'weight_map.c': shard");
    CHECK(strstr(qt_last_error(), "s2.safetensors' is missing"));
}

static void test_sharded_tensor_not_in_shard(void) {
    const char *dir = mkdir_tmp("sh_notin");
    make_two_shards(dir);
    write_text(dir, QT_ST_INDEX_NAME,
               "{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s1.safetensors\",\"c\":\"s2.safetensors\",\"d\":\"s2.safetensors\"}}");
    qt_st_checkpoint *c;
    CHECK_ERR_HAS(qt_st_checkpoint_open(dir, &c), QT_ERR_FORMAT,
                  "field 'weight_map.d': tensor is listed in shard");
    CHECK(strstr(qt_last_error(), "s2.safetensors' but that file does not contain it"));
}

static void test_sharded_duplicate(void) {
    const char *dir = mkdir_tmp("sh_dup");
    write_shard(dir, "s1.safetensors", (const char *[]){"a", "b"}, 2);
    write_shard(dir, "s2.safetensors", (const char *[]){"b", "c"}, 2);
    write_text(dir, QT_ST_INDEX_NAME, index_ab);
    qt_st_checkpoint *c;
    CHECK_ERR_HAS(qt_st_checkpoint_open(dir, &c), QT_ERR_FORMAT, "duplicate tensor 'b': present in shard");
}

static void test_sharded_unlisted_and_bad_index(void) {
    const char *dir = mkdir_tmp("sh_bad");
    write_shard(dir, "s1.safetensors", (const char *[]){"a", "b"}, 2);
    write_shard(dir, "s2.safetensors", (const char *[]){"c", "extra"}, 2);
    write_text(dir, QT_ST_INDEX_NAME, index_ab);
    qt_st_checkpoint *c;
    CHECK_ERR_HAS(qt_st_checkpoint_open(dir, &c), QT_ERR_FORMAT, "tensor 'extra' of shard");
    write_text(dir, QT_ST_INDEX_NAME, "{\"weight_map\":{\"a\":\"../s1.safetensors\"}}");
    CHECK_ERR_HAS(qt_st_checkpoint_open(dir, &c), QT_ERR_FORMAT, "not a plain file name");
    write_text(dir, QT_ST_INDEX_NAME, "{\"weight_map\":{\"a\":1}}");
    CHECK_ERR_HAS(qt_st_checkpoint_open(dir, &c), QT_ERR_FORMAT, "field 'weight_map.a': shard file name must be a string");
    write_text(dir, QT_ST_INDEX_NAME, "{\"metadata\":{}}");
    CHECK_ERR_HAS(qt_st_checkpoint_open(dir, &c), QT_ERR_FORMAT, "field 'weight_map' missing");
    write_text(dir, QT_ST_INDEX_NAME, "{\"weight_map\":{}}");
    CHECK_ERR_HAS(qt_st_checkpoint_open(dir, &c), QT_ERR_FORMAT, "field 'weight_map' is empty");
    write_text(dir, QT_ST_INDEX_NAME, "{\"weight_map\":{\"a\":\"s1.safetensors\",}");
    CHECK_ERR_HAS(qt_st_checkpoint_open(dir, &c), QT_ERR_FORMAT, "invalid JSON");
    /* A corrupt shard reports the shard's own file name. */
    write_text(dir, QT_ST_INDEX_NAME, index_ab);
    write_text(dir, "s2.safetensors", "short");
    CHECK_ERR_HAS(qt_st_checkpoint_open(dir, &c), QT_ERR_FORMAT, "s2.safetensors: field 'header length'");
    const char *empty = mkdir_tmp("sh_empty");
    CHECK_ERR_HAS(qt_st_checkpoint_open(empty, &c), QT_ERR_NOT_FOUND, "no model.safetensors or model.safetensors.index.json");
}

int main(void) {
    QT_RUN(test_worked_example_write);
    QT_RUN(test_worked_example_read);
    QT_RUN(test_writer_order_and_header);
    QT_RUN(test_round_trip_all_dtypes);
    QT_RUN(test_dtype_mapping);
    QT_RUN(test_every_truncation);
    QT_RUN(test_header_length_extremes);
    QT_RUN(test_offsets_rules);
    QT_RUN(test_schema_errors);
    QT_RUN(test_metadata_read);
    QT_RUN(test_random_byte_flips);
    QT_RUN(test_writer_refuses);
    QT_RUN(test_writer_staged_resume);
    QT_RUN(test_sharded_ok);
    QT_RUN(test_sharded_missing_shard);
    QT_RUN(test_sharded_tensor_not_in_shard);
    QT_RUN(test_sharded_duplicate);
    QT_RUN(test_sharded_unlisted_and_bad_index);
    return qt_test_finish("test_safetensors");
}
