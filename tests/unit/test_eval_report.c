/* eval: the terminal table, the JSON document (parsed back with jansson and
 * checked field by field against the report it came from) and the HTML page
 * (self-contained, escaped, one chart per figure). Set QT_EVAL_HTML_OUT to a
 * path to keep the page for a look in a browser, QT_EVAL_VERBOSE to see the table. */
#include <jansson.h>

#include "qtest.h"
#include "quanta.h"

typedef struct fixture {
    qt_eval_candidate cand[3];
    qt_mc_result base_mc, mc[3];
    int32_t choice[4][8];
    qt_needle_result base_needle, needle[3];
    qt_needle_cell cells[4][6];
    qt_heldout_result heldout;
    const char *warnings[1];
    qt_eval_report r;
} fixture;

static qt_eval_summary summary(double base_ppl, double ppl, double kld, double top1) {
    qt_eval_summary s;
    memset(&s, 0, sizeof s);
    s.n_tokens = 4000; s.n_chunks = 62;
    s.base_ppl = base_ppl; s.base_ppl_stderr = 0.05;
    s.ppl = ppl; s.ppl_stderr = 0.05;
    s.ln_ratio = log(ppl / base_ppl); s.ln_ratio_stderr = 0.002;
    s.ppl_delta_pct = 100 * (ppl / base_ppl - 1);
    s.ppl_delta_pct_lo = s.ppl_delta_pct - 0.4; s.ppl_delta_pct_hi = s.ppl_delta_pct + 0.4;
    s.kld_mean = kld; s.kld_stderr = kld / 50; s.kld_mean_hi = kld * 1.04;
    s.kld_median = kld / 3; s.kld_p99 = kld * 12; s.kld_max = kld * 40;
    s.top1 = top1; s.top1_lo = top1 - 0.01; s.top1_hi = top1 + 0.005;
    s.p_halved = (1 - top1) / 4;
    return s;
}

static void needle_fill(qt_needle_result *n, qt_needle_cell *cells, int base_success) {
    n->n_cells = 6; n->cells = cells; n->n_trials = 0; n->n_success = 0;
    for (int i = 0; i < 6; i++) {
        cells[i] = (qt_needle_cell){.length = i < 3 ? 128 : 448, .depth = (i % 3) * 0.5, .n_trials = 4,
                                    .n_success = (base_success + i) % 5, .mean_tokens = i < 3 ? 127 : 446,
                                    .mean_key_logprob = -1.5 - i};
        n->n_trials += 4;
        n->n_success += cells[i].n_success;
    }
}

static void mc_fill(qt_mc_result *m, int32_t *choice, int correct) {
    m->n_items = 8; m->n_correct = correct; m->n_correct_sum = correct - 1;
    m->acc = correct / 8.0; m->acc_sum = (correct - 1) / 8.0;
    qt_eval_wilson(correct, 8, QT_EVAL_Z95, &m->acc_lo, &m->acc_hi);
    m->choice = choice;
    for (int i = 0; i < 8; i++) choice[i] = i < correct ? 0 : 1;
}

static void make_fixture(fixture *f) {
    memset(f, 0, sizeof *f);
    qt_eval_thresholds t;
    qt_eval_thresholds_default(&t);
    t.max_kld = 0.05;
    const char *labels[3] = {"models/m-Q8_0.gguf", "models/m-Q4_0.gguf", "models/m.gguf@kv=fp8-e4m3:one"};
    const char *kvs[3] = {"f16", "f16", "fp8-e4m3, scale 1.0 <per tensor>"};
    double bpw[3] = {8.5, 4.5, 32}, ppl[3] = {4.9757, 5.2620, 5.02}, kld[3] = {0.0008, 0.062, 0.004}, top1[3] = {0.985, 0.90, 0.96};
    uint64_t size[3] = {379168, 277024, 1185376};
    mc_fill(&f->base_mc, f->choice[3], 6);
    needle_fill(&f->base_needle, f->cells[3], 0);
    for (int i = 0; i < 3; i++) {
        qt_eval_candidate *c = &f->cand[i];
        c->info = (qt_eval_model_info){labels[i], labels[i], kvs[i], size[i], bpw[i], NAN, NAN};
        c->summary = summary(4.9693, ppl[i], kld[i], top1[i]);
        qt_eval_judge(&c->summary, &t, &c->verdict);
        mc_fill(&f->mc[i], f->choice[i], 6 - i);
        c->mc = &f->mc[i];
        needle_fill(&f->needle[i], f->cells[i], i + 1);
        c->needle = &f->needle[i];
    }
    f->cand[0].info.decode_tps = 1234.5;
    f->heldout = (qt_heldout_result){.same_file = true, .overlap_bytes = 1000, .n_sampled = 50, .n_matched = 10,
                                     .overlap = 0.2, .overlaps = true};
    f->cand[1].heldout = &f->heldout;
    f->warnings[0] = "evaluation text overlaps the calibration text (20 %)";
    f->cand[1].warnings = f->warnings;
    f->cand[1].n_warnings = 1;
    f->r = (qt_eval_report){
        .base = {"models/m.gguf", "models/m.gguf", "f16", 1185376, 32.0, 2000.0, NAN},
        .base_mc = &f->base_mc, .base_needle = &f->base_needle,
        .text_path = "data/tiny <stories>.txt", .n_ctx = 128, .n_chunks = 62, .mc_path = "items.jsonl",
        .thresholds = t, .strict = false, .n_candidates = 3, .candidates = f->cand};
}

static void test_table(void) {
    fixture f;
    make_fixture(&f);
    char *s;
    CHECK_OK(qt_eval_report_table(&f.r, &s));
    if (!s) return;
    if (getenv("QT_EVAL_VERBOSE")) fputs(s, stderr);
    CHECK(strstr(s, "4000 tokens scored in 62 chunks of 128") != NULL);
    CHECK(strstr(s, "m-Q8_0.gguf") != NULL && strstr(s, "m-Q4_0.gguf") != NULL);
    CHECK(strstr(s, "m.gguf@kv=fp8-e4m3:one") != NULL);
    CHECK(strstr(s, "4.9693 +- 0.0500") != NULL);
    CHECK(strstr(s, "+5.89") != NULL);
    CHECK(strstr(s, "m-Q4_0.gguf: fail") != NULL);
    CHECK(strstr(s, "m-Q8_0.gguf: pass") != NULL);
    CHECK(strstr(s, "decode/s") != NULL && strstr(s, "1234.5") != NULL);
    CHECK(strstr(s, "warning      evaluation text overlaps") != NULL);
    CHECK(strstr(s, "multiple choice") != NULL && strstr(s, "needle in a haystack") != NULL);
    free(s);
}

static double jreal(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void test_json(void) {
    fixture f;
    make_fixture(&f);
    char path[600];
    snprintf(path, sizeof path, "%s/report.json", qt_test_tmpdir());
    CHECK_OK(qt_eval_report_write_json(&f.r, path));
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    CHECK_MSG(root != NULL, "JSON does not parse: %s line %d", err.text, err.line);
    if (!root) return;
    CHECK_EQ_STR(json_string_value(json_object_get(root, "schema")), "quanta.eval/1");
    json_t *base = json_object_get(root, "base");
    CHECK_NEAR(jreal(base, "ppl"), 4.9693, 1e-9);
    CHECK_EQ_STR(json_string_value(json_object_get(base, "model")), "models/m.gguf");
    CHECK_NEAR(jreal(json_object_get(base, "bench"), "decode_tps"), 2000.0, 0);
    CHECK(json_is_null(json_object_get(json_object_get(base, "bench"), "prefill_tps")));
    json_t *cands = json_object_get(root, "candidates");
    CHECK_EQ_INT(json_array_size(cands), 3);
    for (size_t i = 0; i < json_array_size(cands) && i < 3; i++) {
        json_t *c = json_array_get(cands, i);
        const qt_eval_candidate *src = &f.cand[i];
        CHECK_EQ_STR(json_string_value(json_object_get(c, "model")), src->info.label);
        CHECK_NEAR(jreal(c, "ppl"), src->summary.ppl, 1e-9);
        CHECK_NEAR(jreal(c, "ppl_delta_pct"), src->summary.ppl_delta_pct, 1e-9);
        CHECK_NEAR(jreal(c, "kld_mean"), src->summary.kld_mean, 1e-12);
        CHECK_NEAR(jreal(c, "top1"), src->summary.top1, 1e-12);
        CHECK_EQ_STR(json_string_value(json_object_get(c, "verdict")), qt_verdict_name(src->verdict.verdict));
        json_t *reasons = json_object_get(c, "reasons");
        CHECK_EQ_INT(json_array_size(reasons), src->verdict.n_reasons);
        CHECK_EQ_STR(json_string_value(json_array_get(reasons, 0)), src->verdict.reasons[0]);
        CHECK_NEAR(json_number_value(json_array_get(json_object_get(c, "ppl_delta_pct_ci95"), 1)),
                   src->summary.ppl_delta_pct_hi, 1e-9);
        json_t *mc = json_object_get(c, "mc");
        CHECK_EQ_INT(json_integer_value(json_object_get(mc, "changed_answers")), i);
        CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(c, "needle"), "n_success")), src->needle->n_success);
    }
    json_t *c1 = json_array_get(cands, 1);
    CHECK_EQ_STR(json_string_value(json_object_get(c1, "verdict")), "fail");
    CHECK(json_is_true(json_object_get(json_object_get(c1, "heldout"), "overlaps")));
    CHECK_EQ_INT(json_array_size(json_object_get(c1, "warnings")), 1);
    CHECK(json_is_null(json_object_get(json_array_get(cands, 0), "heldout")));
    CHECK(json_is_null(json_object_get(json_object_get(root, "thresholds"), "min_top1")));
    CHECK_NEAR(jreal(json_object_get(root, "thresholds"), "max_kld"), 0.05, 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(root, "exit_status")), 1);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(root, "text"), "n_tokens_scored")), 4000);
    json_decref(root);

    /* a failed write leaves nothing */
    CHECK_STATUS(qt_eval_report_write_json(&f.r, "/nonexistent/dir/r.json"), QT_ERR_IO);
}

static int count(const char *s, const char *sub) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, sub)); p += strlen(sub)) n++;
    return n;
}

static void test_html(void) {
    fixture f;
    make_fixture(&f);
    char *h;
    CHECK_OK(qt_eval_report_html(&f.r, &h));
    if (!h) return;
    CHECK(strncmp(h, "<!DOCTYPE html>", 15) == 0);
    CHECK(strstr(h, "</html>") != NULL);
    /* 3 trade-off charts + multiple choice + 4 needle maps */
    CHECK_EQ_INT(count(h, "<svg "), 8);
    CHECK_EQ_INT(count(h, "</svg>"), 8);
    CHECK(strstr(h, "Perplexity vs bits per weight") && strstr(h, "KL divergence vs bits per weight") &&
          strstr(h, "Memory vs quality"));
    /* self-contained: no scripts, no external resources (the SVG namespace is an identifier, not a fetch) */
    CHECK(strstr(h, "<script") == NULL);
    CHECK_EQ_INT(count(h, "http"), count(h, "xmlns=\"http://www.w3.org/2000/svg\""));
    CHECK(strstr(h, "src=") == NULL && strstr(h, "<link") == NULL);
    /* text from the user is escaped */
    CHECK(strstr(h, "tiny &lt;stories&gt;.txt") != NULL && strstr(h, "tiny <stories>") == NULL);
    CHECK(strstr(h, "&lt;per tensor&gt;") != NULL);
    CHECK(strstr(h, "needs-review") || strstr(h, "fail"));
    /* deterministic */
    char *h2;
    CHECK_OK(qt_eval_report_html(&f.r, &h2));
    CHECK(h2 && strcmp(h, h2) == 0);
    free(h2);
    const char *keep = getenv("QT_EVAL_HTML_OUT");
    if (keep && *keep) CHECK_OK(qt_eval_report_write_html(&f.r, keep));
    free(h);

    /* unknown sizes and bits per weight: the charts say so instead of drawing nothing */
    for (int i = 0; i < 3; i++) { f.cand[i].info.bpw = NAN; f.cand[i].info.size_bytes = 0; }
    f.r.base.bpw = NAN;
    f.r.base.size_bytes = 0;
    f.r.base_mc = NULL;
    f.r.base_needle = NULL;
    CHECK_OK(qt_eval_report_html(&f.r, &h));
    CHECK_EQ_INT(count(h, "no data"), 3);
    free(h);
}

int main(void) {
    QT_RUN(test_table);
    QT_RUN(test_json);
    QT_RUN(test_html);
    return qt_test_finish("test_eval_report");
}
