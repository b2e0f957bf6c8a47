/* quanta's GGUF quantization against llama-quantize's own outputs
 * (../shared/reference/llamacpp-quantize, llama.cpp 3f545bec).
 *
 * For EVERY file of MANIFEST.tsv (model x file type x imatrix|none): quantize
 * the model with the same file type and importance matrix, then compare each
 * tensor's type and the SHA-256 of its bytes with llama-quantize's. For every
 * run of RUNS.tsv that llama-quantize refused: quanta refuses the same
 * (a tensor needing an importance matrix without one), or, where
 * llama-quantize throws for want of a row-length fallback, quanta writes the
 * documented F16 fallback and records it (quanta.fallbacks).
 * Prints the per-file-type match counts.
 *
 * (heavy under sanitizers: minutes under ASan, so `make test-asan` leaves it out; test-release
 * runs it; test-avx2 too leaves the heavy ones out, to keep CI under 30 min. CMakeLists.txt reads this line.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qtest.h"
#include "quanta.h"

#define REF "reference/llamacpp-quantize/"

typedef struct row { char file[64], tensor[64], type[16], sha[65]; long bytes; } row;

static row *rows;
static int n_rows;

static void load_manifest(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s", qt_test_shared(REF "MANIFEST.tsv"));
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[512];
    int cap = 0;
    if (!fgets(line, sizeof line, f)) { fclose(f); return; } /* header */
    while (fgets(line, sizeof line, f)) {
        if (n_rows == cap) rows = realloc(rows, (size_t)(cap = cap ? 2 * cap : 1024) * sizeof *rows);
        row *r = &rows[n_rows];
        if (sscanf(line, "%63s %63s %15s %ld %64s", r->file, r->tensor, r->type, &r->bytes, r->sha) == 5) n_rows++;
    }
    fclose(f);
}

static const char *model_path(const char *model, char *buf, size_t cap) {
    snprintf(buf, cap, "%s", qt_test_shared(!strcmp(model, "tiny256") ? "models/tiny256-random.gguf" : "models/stories260K.gguf"));
    return buf;
}

static const char *imatrix_path(const char *model, char *buf, size_t cap) {
    char rel[128];
    snprintf(rel, sizeof rel, REF "imatrix-%s.gguf", model);
    snprintf(buf, cap, "%s", qt_test_shared(rel));
    return buf;
}

/* Quantize model/ftype/imatrix to a temporary file; NULL when refused. */
static qt_gguf *quantize(const char *model, const char *ftype, bool with_im, qt_status *st, qt_quantize_plan **plan_out) {
    char mp[4096], ip[4096], out[256];
    qt_model *m = NULL;
    *st = qt_model_open(model_path(model, mp, sizeof mp), &m);
    if (*st != QT_OK) return NULL;
    qt_quantize_opts o = qt_quantize_opts_default();
    o.scheme = ftype;
    o.imatrix = with_im ? imatrix_path(model, ip, sizeof ip) : NULL;
    o.threads = 2;
    qt_quantize_plan *p = NULL;
    *st = qt_quantize_plan_make(m, &o, &p);
    snprintf(out, sizeof out, "/tmp/qt_golden_quant_%d.gguf", (int)getpid());
    if (*st == QT_OK) *st = qt_quantize_run(m, out, &o, p);
    qt_model_free(m);
    qt_gguf *g = NULL;
    if (*st == QT_OK) *st = qt_gguf_open(out, &g);
    unlink(out); /* the mapping stays valid */
    if (plan_out) *plan_out = p;
    else qt_quantize_plan_free(p);
    return g;
}

typedef struct tally { char ftype[16]; int rows, type_ok, bytes_ok; } tally;

static void test_manifest(void) {
    load_manifest();
    if (n_rows == 0) SKIP("no %s", qt_test_shared(REF "MANIFEST.tsv"));
    tally tl[64];
    memset(tl, 0, sizeof tl);
    int n_tl = 0, total = 0, total_ok = 0;
    for (int i = 0; i < n_rows;) {
        int j = i;
        while (j < n_rows && !strcmp(rows[j].file, rows[i].file)) j++;
        char model[64], ftype[64], im[64];
        char tmp[64];
        snprintf(tmp, sizeof tmp, "%s", rows[i].file);
        char *a = strchr(tmp, '-'), *b = strrchr(tmp, '-');
        *a = '\0';
        *b = '\0';
        snprintf(model, sizeof model, "%s", tmp);
        snprintf(ftype, sizeof ftype, "%.15s", a + 1);
        snprintf(im, sizeof im, "%s", b + 1);
        int k = 0;
        while (k < n_tl && strcmp(tl[k].ftype, ftype)) k++;
        if (k == n_tl) snprintf(tl[n_tl++].ftype, sizeof tl[0].ftype, "%.15s", ftype);
        qt_status st;
        qt_gguf *g = quantize(model, ftype, !strcmp(im, "imatrix"), &st, NULL);
        CHECK_MSG(g, "%s: quanta refused: %s", rows[i].file, qt_last_error());
        for (int r = i; r < j; r++) {
            tl[k].rows++;
            total++;
            const qt_gguf_tensor *t = g ? qt_gguf_find_tensor(g, rows[r].tensor) : NULL;
            if (!t) continue;
            const qt_type_traits *want = qt_type_by_name(rows[r].type);
            const bool type_ok = want && want->type == t->type;
            char hex[65];
            qt_sha256_hex(t->data, t->nbytes, hex);
            const bool bytes_ok = type_ok && (long)t->nbytes == rows[r].bytes && !strcmp(hex, rows[r].sha);
            tl[k].type_ok += type_ok;
            tl[k].bytes_ok += bytes_ok;
            total_ok += bytes_ok;
            CHECK_MSG(type_ok, "%s %s: quanta %s, llama-quantize %s", rows[r].file, rows[r].tensor,
                      qt_type_get(t->type)->name, rows[r].type);
            CHECK_MSG(!type_ok || bytes_ok, "%s %s (%s): bytes differ", rows[r].file, rows[r].tensor, rows[r].type);
        }
        qt_gguf_close(g);
        i = j;
    }
    fprintf(stderr, "  MANIFEST rows matching (type and sha256), per file type:\n");
    for (int k = 0; k < n_tl; k++)
        fprintf(stderr, "    %-10s %4d / %4d (types %d)\n", tl[k].ftype, tl[k].bytes_ok, tl[k].rows, tl[k].type_ok);
    fprintf(stderr, "  total %d / %d\n", total_ok, total);
    CHECK(total > 6000);
}

/* RUNS.tsv: llama-quantize's refusals. */
static void test_runs(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s", qt_test_shared(REF "RUNS.tsv"));
    FILE *f = fopen(path, "r");
    if (!f) SKIP("no %s", path);
    char line[1024];
    int refused = 0, fell_back = 0;
    if (!fgets(line, sizeof line, f)) { fclose(f); return; }
    while (fgets(line, sizeof line, f)) {
        char model[64], ftype[64], im[64];
        int rc;
        if (sscanf(line, "%31s %15s %15s %d", model, ftype, im, &rc) != 4 || rc == 0) continue;
        qt_status st;
        qt_quantize_plan *p = NULL;
        qt_gguf *g = quantize(model, ftype, !strcmp(im, "imatrix"), &st, &p);
        if (strstr(line, "requires an importance matrix")) {
            CHECK_MSG(!g && st == QT_ERR_ARG && strstr(qt_last_error(), "needs an importance matrix"),
                      "%s %s %s: llama-quantize refuses (no imatrix), quanta: %s", model, ftype, im,
                      g ? "wrote a file" : qt_last_error());
            refused += !g;
        } else {
            /* The first message is the first warning; the run then threw "no tensor type fallback is
             * defined" (stories260K: 172-wide ffn_down, 64-wide rows for Q1_0). */
            CHECK_MSG(strstr(line, "not divisible"), "RUNS.tsv row not understood: %s", line);
            /* quanta writes F16 for the tensors llama-quantize has no fallback for, and records it. */
            CHECK_MSG(g && p, "%s %s %s: %s", model, ftype, im, qt_last_error());
            int n_q = 0;
            for (int32_t i = 0; p && i < p->n_tensors; i++)
                if (p->tensors[i].quanta_fallback) {
                    n_q++;
                    CHECK_EQ_INT(p->tensors[i].type, QT_TYPE_F16);
                    const qt_gguf_tensor *t = g ? qt_gguf_find_tensor(g, p->tensors[i].name) : NULL;
                    CHECK_MSG(t && t->type == QT_TYPE_F16, "%s %s %s: %s is %s", model, ftype, im, p->tensors[i].name, t ? qt_type_get(t->type)->name : "absent");
                }
            CHECK_MSG(n_q > 0, "%s %s %s: no quanta fallback recorded", model, ftype, im);
            const qt_gguf_value *v = g ? qt_gguf_find(g, "quanta.fallbacks") : NULL;
            CHECK(v && v->type == QT_GGUF_ARRAY && v->arr.n >= (uint64_t)n_q);
            fell_back += n_q > 0;
        }
        qt_gguf_close(g);
        qt_quantize_plan_free(p);
    }
    fclose(f);
    fprintf(stderr, "  RUNS.tsv refusals: %d reproduced, %d replaced by a recorded F16 fallback\n", refused, fell_back);
    CHECK(refused >= 9 && fell_back >= 4);
}

int main(void) {
    QT_RUN(test_manifest);
    QT_RUN(test_runs);
    return qt_test_finish("test_quantize_llamacpp");
}
