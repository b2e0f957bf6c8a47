/* The planner at its edges (issue 12): absurd sizes, schemes the hardware
 * cannot run, contexts beyond the trained length, llama-server slots on tiny
 * models, the quantization job against the GPU, diffusion plans in their own
 * terms, and the scheme vocabulary every verb shares. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qtest.h"
#include "quanta.h"

static const qt_model_spec *preset(const char *name) {
    const qt_model_spec *m = qt_plan_preset_find(name);
    if (!m) QT_FAIL_AT("preset '%s' missing", name);
    return m;
}

static bool has_note(const qt_plan *p, const char *needle) {
    for (int i = 0; i < p->n_warnings; i++)
        if (strstr(p->warnings[i], needle)) return true;
    return false;
}

/* defect 7: "--memory 1e30GB" gave concurrency -9.22e18 (a double cast past int64) */
static void test_huge_memory_refused_and_counts_saturate(void) {
    double bytes = 0;
    CHECK_STATUS(qt_plan_parse_size("1e30GB", &bytes), QT_ERR_ARG);
    CHECK(strstr(qt_last_error(), "more than any device holds") != NULL);
    CHECK_OK(qt_plan_parse_size("1e18B", &bytes));
    qt_estimate_req r = {0};
    r.model = preset("qwen2.5-7b");
    r.scheme = qt_scheme_find("int8");
    r.n_gpus = 1;
    r.memory_bytes = 1e39; /* past the parser, straight into the library */
    r.context = 4096;
    r.overhead_bytes = -1;
    qt_estimate e;
    CHECK_OK(qt_plan_estimate(&r, &e));
    CHECK(e.concurrency > 0 && e.gpu_blocks > 0 && e.max_context > 0);
    CHECK_EQ_INT(e.concurrency, INT64_MAX);
}

/* defect 8: "hardware CANNOT RUN" and then "verdict FITS" */
static void test_cannot_run_has_no_fit_verdict(void) {
    qt_estimate_req r = {0};
    r.model = preset("qwen2.5-7b");
    r.scheme = qt_scheme_find("fp8");
    r.hw = qt_hw_find("t4");
    r.n_gpus = 1;
    r.context = 4096;
    r.overhead_bytes = -1;
    qt_estimate e;
    CHECK_OK(qt_plan_estimate(&r, &e));
    CHECK_EQ_INT(e.support, QT_SUPPORT_NO);
    CHECK(e.fits); /* the memory arithmetic alone would fit ... */
    char *text;
    CHECK_OK(qt_plan_estimate_json(&r, &e, &text));
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    CHECK(j != NULL);
    if (!j) return;
    CHECK(json_is_false(json_object_get(j, "fits"))); /* ... but there is no fit verdict */
    CHECK(json_is_true(json_object_get(j, "memory_fits")));
    CHECK_EQ_STR(json_string_value(json_object_get(j, "verdict")), "cannot_run");
    json_decref(j);
}

static void test_context_capped_at_trained_length(void) {
    qt_estimate_req r = {0};
    r.model = preset("qwen2.5-0.5b");
    r.scheme = qt_scheme_find("q8_0");
    r.hw = qt_hw_find("a100-80gb");
    r.n_gpus = 1;
    r.context = 4096;
    r.overhead_bytes = -1;
    qt_estimate e;
    CHECK_OK(qt_plan_estimate(&r, &e));
    CHECK(e.max_context_memory > r.model->n_ctx_train);
    CHECK_EQ_INT(e.max_context, r.model->n_ctx_train);
    /* asked beyond it: memory decides, and the plan names RoPE scaling */
    r.context = 4 * r.model->n_ctx_train;
    CHECK_OK(qt_plan_estimate(&r, &e));
    CHECK_EQ_INT(e.max_context, e.max_context_memory);
    static qt_plan p;
    CHECK_OK(qt_plan_make(&r, QT_GOAL_FIT, &p));
    CHECK(has_note(&p, "RoPE scaling"));
}

/* llama-server -np 8472 for stories260K on a CPU, -np 925 for Qwen2.5-0.5B on an M4 Pro */
static void test_llama_server_slots_are_sensible(void) {
    qt_estimate_req r = {0};
    r.model = preset("qwen2.5-0.5b");
    r.hw = qt_hw_find("m4-pro");
    r.n_gpus = 1;
    r.context = 4096;
    r.overhead_bytes = -1;
    static qt_plan p;
    CHECK_OK(qt_plan_make(&r, QT_GOAL_FIT, &p));
    const char *cmd = NULL;
    for (int i = 0; i < p.n_commands; i++)
        if (strstr(p.commands[i], "llama-server")) cmd = p.commands[i];
    CHECK(cmd != NULL);
    if (!cmd) return;
    const char *np = strstr(cmd, "-np ");
    long long slots = np ? atoll(np + 4) : -1, ctx = atoll(strstr(cmd, " -c ") + 4);
    CHECK(slots >= 1 && slots <= 8);
    CHECK_EQ_INT(ctx, slots * 4096);
    CHECK(p.rows[p.best].est.concurrency > slots && has_note(&p, "-np"));
}

/* a 17.5 GB quantization-job peak on a 16 GB T4 with no "does not fit" note */
static void test_quant_job_checked_against_gpu(void) {
    qt_estimate_req r = {0};
    r.model = preset("qwen2.5-7b");
    r.hw = qt_hw_find("t4");
    r.n_gpus = 1;
    r.context = 4096;
    r.overhead_bytes = -1;
    static qt_plan p;
    CHECK_OK(qt_plan_make(&r, QT_GOAL_FIT, &p));
    CHECK(p.job.total_bytes > 16e9);
    CHECK(has_note(&p, "quantization job does NOT fit on NVIDIA T4"));
    r.hw = qt_hw_find("a100-80gb");
    CHECK_OK(qt_plan_make(&r, QT_GOAL_FIT, &p));
    CHECK(!has_note(&p, "does NOT fit"));
}

/* diffusion plans reused the LLM columns (KV budget, sequences, context) */
static void test_diffusion_plan_in_its_own_terms(void) {
    qt_estimate_req r = {0};
    r.model = preset("sdxl");
    r.hw = qt_hw_find("t4");
    r.n_gpus = 1;
    r.context = 4096;
    r.overhead_bytes = -1;
    static qt_plan p;
    CHECK_OK(qt_plan_make(&r, QT_GOAL_FIT, &p));
    char *text;
    CHECK_OK(qt_plan_json(&p, &text));
    CHECK(strstr(text, "kv_budget_bytes") == NULL && strstr(text, "\"context\"") == NULL &&
          strstr(text, "concurrency") == NULL && strstr(text, "max_context") == NULL);
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    CHECK(j != NULL);
    if (!j) return;
    json_t *rows = json_object_get(j, "rows");
    bool saw_fp8 = false;
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *row = json_array_get(rows, i);
        const char *key = json_string_value(json_object_get(json_object_get(row, "scheme"), "key"));
        json_t *prec = json_object_get(row, "precision");
        CHECK(json_is_number(json_object_get(row, "spare_bytes")));
        CHECK_EQ_STR(json_string_value(json_object_get(prec, "vae")), "16-bit"); /* the seeds' advice */
        if (key && !strcmp(key, "fp8")) {
            saw_fp8 = true; /* a T4 has no FP8 matmuls: memory only, said so */
            CHECK_EQ_STR(json_string_value(json_object_get(row, "support")), "partial");
            CHECK_EQ_STR(json_string_value(json_object_get(prec, "unet")), "fp8");
        }
    }
    CHECK(saw_fp8);
    json_decref(j);
    char *html;
    CHECK_OK(qt_plan_html(&p, &html));
    CHECK(strstr(html, "<h2>Components</h2>") && strstr(html, "text_encoder_2") && !strstr(html, "KV budget"));
    free(html);
}

/* formats printed names (q4_K, w4a16-g128, w8a8-int8) that estimate/hw rejected */
static void test_every_format_name_resolves_or_suggests(void) {
    for (int i = 0; i < qt_format_count(); i++) {
        const char *name = qt_format_at(i)->name;
        if (qt_scheme_resolve(name)) continue;
        const char *near[4], *note;
        int k = qt_scheme_suggest(name, near, 4, &note);
        CHECK_MSG(k > 0 || note, "format '%s': neither a scheme nor a suggestion", name);
    }
    CHECK_EQ_STR(qt_scheme_resolve("w4a16-g128")->key, "w4a16");
    CHECK_EQ_STR(qt_scheme_resolve("w8a8-int8")->key, "int8");
    CHECK_EQ_STR(qt_scheme_resolve("f16")->key, "fp16");
    CHECK_EQ_STR(qt_scheme_resolve("Q6_K")->key, "q6_k");
    CHECK(qt_scheme_resolve("q4_K") == NULL);
    const char *near[4], *note;
    CHECK(qt_scheme_suggest("q4_K", near, 4, &note) >= 1);
    CHECK_EQ_STR(near[0], "q4_k_m");
}

int main(void) {
    QT_RUN(test_huge_memory_refused_and_counts_saturate);
    QT_RUN(test_cannot_run_has_no_fit_verdict);
    QT_RUN(test_context_capped_at_trained_length);
    QT_RUN(test_llama_server_slots_are_sensible);
    QT_RUN(test_quant_job_checked_against_gpu);
    QT_RUN(test_diffusion_plan_in_its_own_terms);
    QT_RUN(test_every_format_name_resolves_or_suggests);
    return qt_test_finish("test_plan_edges");
}
