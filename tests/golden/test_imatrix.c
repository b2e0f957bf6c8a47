/* Importance-matrix files (quanta/imatrix.h) against llama-imatrix's own
 * output in ../shared/reference/llamacpp-quantize: imatrix-{stories260K,
 * tiny256}.{gguf,dat} were written by the same llama-imatrix run (100 chunks
 * of 128 tokens), once per format.
 *
 * - both formats read, with the metadata llama-imatrix recorded;
 * - the two formats give bit-identical importance weights, and every legacy
 *   value is exactly what save_imatrix_legacy computes from the GGUF sums
 *   ((in_sum2 / count) * ncall, in float);
 * - entries name the model's weight tensors with its row lengths, and a
 *   column count that does not match is an error naming the tensor;
 * - qt_imatrix_write reproduces llama-imatrix's GGUF file byte for byte;
 * - MoE entries (per-expert counts, an expert that saw nothing) round-trip;
 * - truncated, corrupt and mismatched files each fail with one message
 *   naming the file and the field.
 */
#include <errno.h>
#include <sys/stat.h>

#include "io/io_internal.h"
#include "qtest.h"
#include "quanta.h"

#define REF "reference/llamacpp-quantize/"

typedef struct model_case {
    const char *name, *model;
    int64_t n_entries, n_cols, n_ff; /* ffn_down's rows are n_ff long */
} model_case;

static const model_case cases[] = {
    {"stories260K", "models/stories260K.gguf", 35, 64, 172},
    {"tiny256", "models/tiny256-random.gguf", 56, 256, 256},
};

static const char *ref_path(const char *model, const char *ext) {
    static char buf[4][512];
    static int k;
    char rel[128];
    snprintf(rel, sizeof rel, REF "imatrix-%s.%s", model, ext);
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s", qt_test_shared(rel));
    return buf[k];
}

static bool same_bits(float a, float b) { return memcmp(&a, &b, 4) == 0; }

static void test_both_formats_read_with_metadata(void) {
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        qt_imatrix *g = NULL, *d = NULL;
        CHECK_OK(qt_imatrix_open(ref_path(cases[c].name, "gguf"), &g));
        CHECK_OK(qt_imatrix_open(ref_path(cases[c].name, "dat"), &d));
        if (!g || !d) { qt_imatrix_close(g); qt_imatrix_close(d); continue; }
        CHECK_EQ_INT(qt_imatrix_format_of(g), QT_IMATRIX_GGUF);
        CHECK_EQ_INT(qt_imatrix_format_of(d), QT_IMATRIX_LEGACY);
        CHECK_EQ_INT(qt_imatrix_n_entries(g), cases[c].n_entries);
        CHECK_EQ_INT(qt_imatrix_n_entries(d), cases[c].n_entries);
        CHECK_EQ_INT(qt_imatrix_chunk_count(g), 100);
        CHECK_EQ_INT(qt_imatrix_chunk_count(d), 100);
        CHECK_EQ_INT(qt_imatrix_chunk_size(g), 128);
        CHECK_EQ_INT(qt_imatrix_chunk_size(d), 0); /* the legacy format does not record it */
        CHECK_EQ_INT(qt_imatrix_n_datasets(g), 1);
        CHECK_EQ_INT(qt_imatrix_n_datasets(d), 1);
        CHECK_EQ_STR(qt_imatrix_dataset(g, 0), qt_imatrix_dataset(d, 0));
        for (int64_t i = 0; i < qt_imatrix_n_entries(g); i++) {
            const qt_imatrix_entry *e = qt_imatrix_entry_at(g, i);
            CHECK_EQ_INT(e->n_cols, strstr(e->name, "ffn_down") ? cases[c].n_ff : cases[c].n_cols);
            CHECK_EQ_INT(e->n_counts, 1);
            CHECK_EQ_INT(e->counts[0], 100 * 128); /* every token of every chunk */
            const qt_imatrix_entry *l = qt_imatrix_find(d, e->name);
            CHECK_MSG(l != NULL, "%s: '%s' missing from the .dat", cases[c].name, e->name);
            if (!l) continue;
            CHECK_EQ_INT(l->n_values, e->n_values);
            CHECK_EQ_INT(l->n_cols, 0);
            CHECK_EQ_INT(l->counts[0], 100); /* ncall = ceil(12800 / 128) */
        }
        qt_imatrix_close(g);
        qt_imatrix_close(d);
    }
}

/* save_imatrix_legacy stores (value / count) * ncall with float operands and
 * llama-quantize divides that by ncall; the GGUF path divides by count. */
static void test_gguf_and_dat_give_the_same_weights(void) {
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        qt_imatrix *g = NULL, *d = NULL;
        CHECK_OK(qt_imatrix_open(ref_path(cases[c].name, "gguf"), &g));
        CHECK_OK(qt_imatrix_open(ref_path(cases[c].name, "dat"), &d));
        if (!g || !d) { qt_imatrix_close(g); qt_imatrix_close(d); continue; }
        int64_t n_checked = 0, stored_diff = 0, weight_diff = 0;
        for (int64_t i = 0; i < qt_imatrix_n_entries(g); i++) {
            const qt_imatrix_entry *e = qt_imatrix_entry_at(g, i), *l = qt_imatrix_find(d, e->name);
            if (!l || l->n_values != e->n_values) continue;
            float *sums = malloc(4 * e->n_values), *vals = malloc(4 * e->n_values);
            float *wg = malloc(4 * e->n_values), *wd = malloc(4 * e->n_values);
            qt_imatrix_values(g, e, sums);
            qt_imatrix_values(d, l, vals);
            CHECK_OK(qt_imatrix_get(g, e->name, e->n_cols, 1, wg));
            CHECK_OK(qt_imatrix_get(d, e->name, e->n_cols, 1, wd));
            const float count = (float)e->counts[0], ncall = (float)l->counts[0];
            for (int64_t k = 0; k < e->n_values; k++) {
                stored_diff += !same_bits(vals[k], (sums[k] / count) * ncall);
                weight_diff += !same_bits(wg[k], wd[k]);
                CHECK(same_bits(wg[k], sums[k] / count));
                CHECK(wg[k] > 0.0f);
            }
            n_checked += e->n_values;
            free(sums); free(vals); free(wg); free(wd);
        }
        printf("  %s: %lld values; legacy values != (in_sum2/count)*ncall: %lld; weights differing: %lld\n",
               cases[c].name, (long long)n_checked, (long long)stored_diff, (long long)weight_diff);
        CHECK_EQ_INT(n_checked, (cases[c].n_entries - cases[c].n_entries / 7) * cases[c].n_cols +
                                    cases[c].n_entries / 7 * cases[c].n_ff); /* 7 matrices per layer */
        CHECK_EQ_INT(stored_diff, 0);
        CHECK_EQ_INT(weight_diff, 0);
        qt_imatrix_close(g);
        qt_imatrix_close(d);
    }
}

/* Every entry is a 2-D weight of the model whose rows are n_cols long;
 * llama-imatrix collects nothing for token_embd. A wrong column count is an
 * error naming the file and the tensor. */
static void test_entries_match_the_model(void) {
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        qt_gguf *m = NULL;
        qt_imatrix *im = NULL;
        CHECK_OK(qt_gguf_open(qt_test_shared(cases[c].model), &m));
        CHECK_OK(qt_imatrix_open(ref_path(cases[c].name, "dat"), &im));
        if (!m || !im) { qt_gguf_close(m); qt_imatrix_close(im); continue; }
        for (int64_t i = 0; i < qt_imatrix_n_entries(im); i++) {
            const qt_imatrix_entry *e = qt_imatrix_entry_at(im, i);
            const qt_gguf_tensor *t = qt_gguf_find_tensor(m, e->name);
            CHECK_MSG(t && t->n_dims == 2, "%s: entry '%s' is not a matrix of the model", cases[c].name, e->name);
            if (!t) continue;
            float *w = malloc(4 * (size_t)t->ne[0]);
            CHECK_OK(qt_imatrix_get(im, e->name, t->ne[0], 1, w));
            free(w);
        }
        float w[1];
        CHECK_STATUS(qt_imatrix_get(im, "token_embd.weight", cases[c].n_cols, 1, w), QT_ERR_NOT_FOUND);
        qt_gguf_close(m);
        qt_imatrix_close(im);

        CHECK_OK(qt_imatrix_open(ref_path(cases[c].name, "gguf"), &im));
        if (!im) continue;
        float *w2 = malloc(4 * 2 * (size_t)cases[c].n_cols);
        CHECK_STATUS(qt_imatrix_get(im, "blk.0.ffn_down.weight", cases[c].n_cols / 2, 1, w2), QT_ERR_SHAPE);
        CHECK(strstr(qt_last_error(), "blk.0.ffn_down.weight") && strstr(qt_last_error(), "imatrix-"));
        CHECK_STATUS(qt_imatrix_get(im, "blk.0.ffn_down.weight", cases[c].n_cols, 2, w2), QT_ERR_SHAPE);
        free(w2);
        qt_imatrix_close(im);
    }
}

/* Read llama-imatrix's file, write it back through qt_imatrix_write (given
 * the entries in reverse order: the writer sorts), compare the bytes. */
static void test_write_reproduces_llama_imatrix_bytes(void) {
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *src = ref_path(cases[c].name, "gguf");
        qt_imatrix *im = NULL;
        CHECK_OK(qt_imatrix_open(src, &im));
        if (!im) continue;
        const int64_t n = qt_imatrix_n_entries(im);
        qt_imatrix_stat *st = calloc((size_t)n, sizeof *st);
        for (int64_t i = 0; i < n; i++) {
            const qt_imatrix_entry *e = qt_imatrix_entry_at(im, n - 1 - i);
            float *v = malloc(4 * e->n_values);
            qt_imatrix_values(im, e, v);
            st[i] = (qt_imatrix_stat){e->name, e->n_cols, e->n_counts, v, e->counts};
        }
        const char *ds[1] = {qt_imatrix_dataset(im, 0)};
        qt_imatrix_info info = {ds, 1, qt_imatrix_chunk_count(im), qt_imatrix_chunk_size(im)};
        char out[512];
        snprintf(out, sizeof out, "%s/rt-%s.gguf", qt_test_tmpdir(), cases[c].name);
        CHECK_OK(qt_imatrix_write(out, st, n, &info));
        size_t na, nb;
        uint8_t *a = qt_test_read(src, &na), *b = qt_test_read(out, &nb);
        CHECK_EQ_INT(nb, na);
        size_t first = 0;
        while (first < na && first < nb && a[first] == b[first]) first++;
        CHECK_MSG(na == nb && first == na, "%s: rewritten file differs from llama-imatrix's at byte %zu", cases[c].name, first);
        free(a); free(b);
        qt_imatrix *back = NULL;
        CHECK_OK(qt_imatrix_open(out, &back));
        if (back) CHECK_EQ_INT(qt_imatrix_n_entries(back), n);
        qt_imatrix_close(back);
        for (int64_t i = 0; i < n; i++) free((void *)st[i].sums);
        free(st);
        qt_imatrix_close(im);
    }
}

static void test_moe_round_trip(void) {
    enum { COLS = 8, EXP = 3 };
    float sums[EXP * COLS], dense[4] = {4, 8, 12, 0};
    for (int i = 0; i < EXP * COLS; i++) sums[i] = (float)(i + 1) * 0.5f;
    for (int i = 2 * COLS; i < 3 * COLS; i++) sums[i] = 0.0f; /* expert 2 saw no token */
    const int64_t counts[EXP] = {10, 4, 0}, dense_count[1] = {4};
    const qt_imatrix_stat st[2] = {
        {"blk.0.ffn_up_exps.weight", COLS, EXP, sums, counts},
        {"blk.0.attn_q.weight", 4, 1, dense, dense_count},
    };
    const char *ds[2] = {"a.txt", "b.txt"};
    qt_imatrix_info info = {ds, 2, 7, 512};
    char path[512];
    snprintf(path, sizeof path, "%s/moe.imatrix.gguf", qt_test_tmpdir());
    CHECK_OK(qt_imatrix_write(path, st, 2, &info));
    qt_imatrix *im = NULL;
    CHECK_OK(qt_imatrix_open(path, &im));
    if (!im) return;
    CHECK_EQ_INT(qt_imatrix_n_entries(im), 2);
    CHECK_EQ_STR(qt_imatrix_entry_at(im, 0)->name, "blk.0.attn_q.weight"); /* sorted */
    CHECK_EQ_INT(qt_imatrix_chunk_count(im), 7);
    CHECK_EQ_INT(qt_imatrix_chunk_size(im), 512);
    CHECK_EQ_INT(qt_imatrix_n_datasets(im), 2);
    CHECK_EQ_STR(qt_imatrix_dataset(im, 1), "b.txt");
    const qt_imatrix_entry *e = qt_imatrix_find(im, "blk.0.ffn_up_exps.weight");
    CHECK(e && e->n_cols == COLS && e->n_counts == EXP && e->counts[0] == 10 && e->counts[1] == 4 && e->counts[2] == 0);
    float w[EXP * COLS];
    CHECK_OK(qt_imatrix_get(im, "blk.0.ffn_up_exps.weight", COLS, EXP, w));
    for (int j = 0; j < EXP; j++)
        for (int i = 0; i < COLS; i++)
            CHECK(same_bits(w[j * COLS + i], counts[j] ? sums[j * COLS + i] / (float)counts[j] : 1.0f));
    CHECK_STATUS(qt_imatrix_get(im, "blk.0.ffn_up_exps.weight", COLS * EXP, 1, w), QT_ERR_SHAPE);
    CHECK(strstr(qt_last_error(), "blk.0.ffn_up_exps.weight") != NULL);
    /* the tensors llama.cpp's loader looks for */
    qt_gguf *g = NULL;
    CHECK_OK(qt_gguf_open(path, &g));
    if (g) {
        const qt_gguf_tensor *s2 = qt_gguf_find_tensor(g, "blk.0.ffn_up_exps.weight.in_sum2");
        const qt_gguf_tensor *c2 = qt_gguf_find_tensor(g, "blk.0.ffn_up_exps.weight.counts");
        CHECK(s2 && s2->n_dims == 2 && s2->ne[0] == COLS && s2->ne[1] == EXP && s2->type == QT_TYPE_F32);
        CHECK(c2 && c2->n_dims == 2 && c2->ne[0] == 1 && c2->ne[1] == EXP && c2->type == QT_TYPE_F32);
        const char *type = NULL;
        CHECK_OK(qt_gguf_get_str(g, "general.type", &type));
        CHECK_EQ_STR(type, "imatrix");
    }
    qt_gguf_close(g);
    qt_imatrix_close(im);
}

static void test_writer_refusals_leave_nothing(void) {
    float v[4] = {1, 2, 3, 4};
    const int64_t cnt[1] = {1}, neg[1] = {-1};
    qt_imatrix_info info = {NULL, 0, 1, 1};
    char path[512];
    snprintf(path, sizeof path, "%s/refused.gguf", qt_test_tmpdir());
    const qt_imatrix_stat dup[2] = {{"a.weight", 4, 1, v, cnt}, {"a.weight", 4, 1, v, cnt}};
    CHECK_STATUS(qt_imatrix_write(path, dup, 2, &info), QT_ERR_ARG);
    CHECK(strstr(qt_last_error(), "a.weight") != NULL);
    const qt_imatrix_stat bad[1] = {{"a.weight", 4, 1, v, neg}};
    CHECK_STATUS(qt_imatrix_write(path, bad, 1, &info), QT_ERR_ARG);
    const qt_imatrix_stat longname[1] = {{"blk.0.a_name_that_is_far_too_long_for_ggml_tensor_names.weight", 4, 1, v, cnt}};
    CHECK_STATUS(qt_imatrix_write(path, longname, 1, &info), QT_ERR_ARG);
    struct stat sb;
    CHECK(stat(path, &sb) != 0 && errno == ENOENT);
    char nodir[512];
    snprintf(nodir, sizeof nodir, "%s/no/such/dir/x.gguf", qt_test_tmpdir());
    CHECK_STATUS(qt_imatrix_write(nodir, dup, 1, &info), QT_ERR_IO);
}

/* ---- bad inputs --------------------------------------------------------------------- */

static qt_status parse_mem(const void *p, size_t n) {
    qt_imatrix *im = NULL;
    qt_status s = qt_imatrix_parse(p, n, "bad.imatrix", &im);
    qt_imatrix_close(im);
    if (s != QT_OK) CHECK_MSG(strncmp(qt_last_error(), "bad.imatrix: ", 13) == 0, "message without the file: %s", qt_last_error());
    return s;
}

/* Every prefix of a .dat fails, except the three lengths the format allows:
 * the entries alone, with the chunk count, and the whole file. */
static void test_dat_truncations(void) {
    size_t n;
    uint8_t *p = qt_test_read(ref_path("stories260K", "dat"), &n);
    /* trailer: int32 chunks, int32 len, len bytes */
    uint32_t ds_len;
    const char *ds = "ts-calib.txt";
    memcpy(&ds_len, p + n - strlen(ds) - 4, 4);
    CHECK_EQ_INT(ds_len, strlen(ds));
    const size_t entries_end = n - strlen(ds) - 8;
    int64_t ok = 0, bad = 0;
    for (size_t k = 0; k <= n; k++) {
        qt_status s = parse_mem(p, k);
        const bool allowed = k == entries_end || k == entries_end + 4 || k == n;
        CHECK_MSG((s == QT_OK) == allowed, "prefix of %zu bytes: %s", k, s == QT_OK ? "accepted" : qt_last_error());
        if (s == QT_OK) ok++; else { bad++; CHECK_EQ_INT(s, QT_ERR_FORMAT); }
    }
    printf("  .dat prefixes: %lld accepted, %lld refused\n", (long long)ok, (long long)bad);
    free(p);
}

static void test_dat_corrupt_fields(void) {
    size_t n;
    uint8_t *orig = qt_test_read(ref_path("stories260K", "dat"), &n);
    uint8_t *p = malloc(n + 8);
    int32_t v;
    /* field offsets of entry 0: count @0, len @4, name @8, ncall, nval, values */
    int32_t len0;
    memcpy(&len0, orig + 4, 4);
    const size_t ncall0 = 8 + (size_t)len0, nval0 = ncall0 + 4, vals0 = nval0 + 4;
    struct { size_t off; int32_t val; const char *needle; } cases_[] = {
        {0, 0, "entry count"},
        {0, -5, "entry count"},
        {4, 0, "name length"},
        {4, -1, "name length"},
        {4, 1 << 30, "name: truncated"},
        {ncall0, -3, "ncall"},
        {nval0, 0, "nval"},
        {nval0, 1 << 28, "values: truncated"},
    };
    for (size_t i = 0; i < sizeof cases_ / sizeof cases_[0]; i++) {
        memcpy(p, orig, n);
        v = cases_[i].val;
        memcpy(p + cases_[i].off, &v, 4);
        CHECK_STATUS(parse_mem(p, n), QT_ERR_FORMAT);
        CHECK_MSG(strstr(qt_last_error(), cases_[i].needle), "case %zu: '%s' lacks '%s'", i, qt_last_error(), cases_[i].needle);
    }
    memcpy(p, orig, n);
    p[9] = '\0'; /* a NUL inside the first name */
    CHECK_STATUS(parse_mem(p, n), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "NUL") != NULL);
    memcpy(p, orig, n);
    const float nan = NAN, negf = -1.0f;
    memcpy(p + vals0 + 8, &nan, 4);
    CHECK_STATUS(parse_mem(p, n), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "value 2") != NULL);
    memcpy(p, orig, n);
    memcpy(p + vals0, &negf, 4);
    CHECK_STATUS(parse_mem(p, n), QT_ERR_FORMAT);
    memcpy(p, orig, n);
    memcpy(p + n, "junk", 4);
    CHECK_STATUS(parse_mem(p, n + 4), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "after the dataset name") != NULL);
    /* the second entry renamed to the first: a duplicate */
    memcpy(p, orig, n);
    const size_t e1 = vals0 + 4 * (size_t)orig[nval0];
    int32_t len1;
    memcpy(&len1, p + e1, 4);
    if (len1 == len0) {
        memcpy(p + e1 + 4, orig + 8, (size_t)len0);
        CHECK_STATUS(parse_mem(p, n), QT_ERR_FORMAT);
        CHECK(strstr(qt_last_error(), "appears twice") != NULL);
    }
    free(p);
    free(orig);
}

/* Every prefix of the GGUF file fails (the container has no optional tail). */
static void test_gguf_truncations(void) {
    size_t n;
    uint8_t *p = qt_test_read(ref_path("stories260K", "gguf"), &n);
    int64_t bad = 0;
    for (size_t k = 0; k < n; k += (k < 4096 ? 1 : 61)) {
        qt_status s = parse_mem(p, k);
        CHECK_MSG(s == QT_ERR_FORMAT, "prefix of %zu bytes: %s", k, s == QT_OK ? "accepted" : qt_status_name(s));
        bad++;
    }
    CHECK_OK(parse_mem(p, n));
    printf("  GGUF prefixes refused: %lld\n", (long long)bad);
    free(p);
}

/* Hand-made GGUF imatrix files, one defect each. */
typedef struct gcase {
    const char *what, *general_type;
    bool no_chunk_count, no_datasets, counts_missing, sums_missing, counts_f16, bad_counts_len, neg_sum, neg_count;
    const char *needle;
} gcase;

static qt_status write_case(const char *path, const gcase *c) {
    static float sums[8] = {1, 2, 3, 4, 5, 6, 7, 8}, counts[2] = {3, 5};
    static uint16_t counts16[2] = {0x4200, 0x4500};
    float s2[8], c2[2];
    memcpy(s2, sums, sizeof s2);
    memcpy(c2, counts, sizeof c2);
    if (c->neg_sum) s2[5] = -0.5f;
    if (c->neg_count) c2[1] = -2.0f;
    qt__gguf_raw_tensor t[3];
    int nt = 0;
    if (!c->sums_missing) t[nt++] = (qt__gguf_raw_tensor){"w.in_sum2", {4, 2, 1, 1}, QT_TYPE_F32, s2};
    if (!c->counts_missing)
        t[nt++] = c->counts_f16 ? (qt__gguf_raw_tensor){"w.counts", {1, 2, 1, 1}, QT_TYPE_F16, counts16}
                                : (qt__gguf_raw_tensor){"w.counts", {1, c->bad_counts_len ? 1 : 2, 1, 1}, QT_TYPE_F32, c2};
    t[nt++] = (qt__gguf_raw_tensor){"unrelated.weight", {2, 1, 1, 1}, QT_TYPE_F32, sums}; /* ignored, as llama.cpp does */
    static qt_gguf_value ds_items[1] = {{.type = QT_GGUF_STRING, .str = {"calib.txt", 9}}};
    qt_gguf_kv kv[4];
    int nk = 0;
    kv[nk++] = (qt_gguf_kv){"general.type", {.type = QT_GGUF_STRING, .str = {c->general_type, strlen(c->general_type)}}};
    if (!c->no_datasets) {
        kv[nk] = (qt_gguf_kv){"imatrix.datasets", {.type = QT_GGUF_ARRAY}};
        kv[nk].value.arr.type = QT_GGUF_STRING;
        kv[nk].value.arr.n = 1;
        kv[nk++].value.arr.items = ds_items;
    }
    if (!c->no_chunk_count) kv[nk++] = (qt_gguf_kv){"imatrix.chunk_count", {.type = QT_GGUF_UINT32, .u64 = 2}};
    kv[nk++] = (qt_gguf_kv){"imatrix.chunk_size", {.type = QT_GGUF_UINT32, .u64 = 4}};
    return qt__gguf_write_raw(path, kv, nk, t, nt);
}

static void test_gguf_defects(void) {
    const gcase cs[] = {
        {"valid", "imatrix", .needle = NULL},
        {"a model", "model", .needle = "general.type"},
        {"no chunk count", "imatrix", .no_chunk_count = true, .needle = "imatrix.chunk_count"},
        {"no datasets", "imatrix", .no_datasets = true, .needle = "imatrix.datasets"},
        {"sums without counts", "imatrix", .counts_missing = true, .needle = "w.in_sum2"},
        {"counts without sums", "imatrix", .sums_missing = true, .needle = "w.counts"},
        {"f16 counts", "imatrix", .counts_f16 = true, .needle = "must be f32"},
        {"counts for 1 expert, sums for 2", "imatrix", .bad_counts_len = true, .needle = "1 counts"},
        {"negative sum", "imatrix", .neg_sum = true, .needle = "value 5"},
        {"negative count", "imatrix", .neg_count = true, .needle = "count 1"},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/case%zu.gguf", qt_test_tmpdir(), i);
        CHECK_OK(write_case(path, &cs[i]));
        qt_imatrix *im = NULL;
        qt_status s = qt_imatrix_open(path, &im);
        if (!cs[i].needle) {
            CHECK_MSG(s == QT_OK, "%s: %s", cs[i].what, qt_last_error());
            if (im) {
                CHECK_EQ_INT(qt_imatrix_n_entries(im), 1);
                float w[8];
                CHECK_OK(qt_imatrix_get(im, "w", 4, 2, w));
                CHECK(same_bits(w[0], 1.0f / 3.0f) && same_bits(w[7], 8.0f / 5.0f));
            }
        } else {
            CHECK_MSG(s == QT_ERR_FORMAT, "%s: %s", cs[i].what, s == QT_OK ? "accepted" : qt_status_name(s));
            CHECK_MSG(strstr(qt_last_error(), cs[i].needle) && strstr(qt_last_error(), path), "%s: '%s' lacks '%s'",
                      cs[i].what, qt_last_error(), cs[i].needle);
        }
        qt_imatrix_close(im);
    }
    /* a model file is not an imatrix */
    qt_imatrix *im = NULL;
    CHECK_STATUS(qt_imatrix_open(qt_test_shared("models/tiny256-random.gguf"), &im), QT_ERR_FORMAT);
    CHECK(strstr(qt_last_error(), "imatrix") != NULL);
}

int main(void) {
    QT_RUN(test_both_formats_read_with_metadata);
    QT_RUN(test_gguf_and_dat_give_the_same_weights);
    QT_RUN(test_entries_match_the_model);
    QT_RUN(test_write_reproduces_llama_imatrix_bytes);
    QT_RUN(test_moe_round_trip);
    QT_RUN(test_writer_refusals_leave_nothing);
    QT_RUN(test_dat_truncations);
    QT_RUN(test_dat_corrupt_fields);
    QT_RUN(test_gguf_truncations);
    QT_RUN(test_gguf_defects);
    return qt_test_finish("test_imatrix");
}
