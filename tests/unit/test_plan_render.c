/* The pictures and documents a plan produces: the SVG is well-formed and
 * carries one bar per runnable scheme, the budget line, the overflow and the
 * concurrency labels; the HTML is self-contained; the JSON carries the
 * documented fields with the same numbers as the structs. */
#include <jansson.h>

#include "qtest.h"
#include "quanta.h"

static int count(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* Tags balance: every <x ...> has its </x>, self-closing <x .../> stand alone, no stray '<'
 * inside text (the renderer escapes &, <, >, "). Returns the number of elements. */
static int check_xml(const char *s) {
    char stack[64][32];
    int depth = 0, elements = 0;
    for (const char *p = s; (p = strchr(p, '<'));) {
        const char *end = strchr(p, '>');
        if (!end) { QT_FAIL_AT("unterminated tag at %.20s", p); return -1; }
        if (p[1] == '!' || p[1] == '?') { p = end + 1; continue; }
        bool closing = p[1] == '/', selfclose = end[-1] == '/';
        const char *name = p + (closing ? 2 : 1);
        size_t len = strcspn(name, " />\n");
        if (len == 0 || len >= 32) { QT_FAIL_AT("bad tag name at %.20s", p); return -1; }
        for (const char *q = p + 1; q < end; q++)
            if (*q == '<') { QT_FAIL_AT("'<' inside a tag at %.30s", p); return -1; }
        if (closing) {
            if (depth == 0 || strncmp(stack[depth - 1], name, len) || stack[depth - 1][len]) {
                QT_FAIL_AT("mismatched </%.*s> (open: %s)", (int)len, name, depth ? stack[depth - 1] : "none");
                return -1;
            }
            depth--;
        } else {
            elements++;
            if (!selfclose) {
                if (depth == 64) { QT_FAIL_AT("too deep"); return -1; }
                memcpy(stack[depth], name, len);
                stack[depth++][len] = 0;
            }
        }
        p = end + 1;
    }
    if (depth) QT_FAIL_AT("%d unclosed tags, innermost <%s>", depth, stack[depth - 1]);
    return elements;
}

static qt_plan plan;

static void make_t4_plan(void) {
    qt_estimate_req r = {0};
    r.model = qt_plan_preset_find("qwen2.5-7b");
    r.hw = qt_hw_find("t4");
    r.context = 4096;
    r.overhead_bytes = -1;
    CHECK_OK(qt_plan_make(&r, QT_GOAL_FIT, &plan));
}

static void test_svg_is_the_memory_figure(void) {
    make_t4_plan();
    char *svg;
    CHECK_OK(qt_plan_svg(&plan, &svg));
    CHECK(!strncmp(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\"", 39));
    CHECK(check_xml(svg) > 20);
    int ranked = 0, refused = 0;
    for (int i = 0; i < plan.n_rows; i++) plan.rows[i].rank ? ranked++ : refused++;
    /* one weights bar per runnable scheme (the legend adds one swatch) */
    CHECK_EQ_INT(count(svg, "fill=\"#3b6fb6\""), ranked + 1);
    /* the budget line and its label */
    CHECK_EQ_INT(count(svg, "stroke-dasharray"), 1);
    CHECK(strstr(svg, "budget 14.40 GB") != NULL);
    /* fp16 overflows a T4: marked and labelled with how much is missing */
    CHECK(count(svg, "url(#hatch)") >= 2);
    CHECK(strstr(svg, "DOES NOT FIT: 2.") != NULL);
    /* every runnable row annotated with its concurrency, every refused row with its reason */
    CHECK_EQ_INT(count(svg, " seqs x 4096 ("), ranked - 1);
    CHECK(strstr(svg, "needs compute capability 8.9") != NULL);
    CHECK(refused >= 3);
    free(svg);
}

static void test_html_is_self_contained(void) {
    make_t4_plan();
    char *html;
    CHECK_OK(qt_plan_html(&plan, &html));
    CHECK(!strncmp(html, "<!DOCTYPE html>", 15));
    CHECK(check_xml(strchr(html, '\n') + 1) > 50);
    CHECK_EQ_INT(count(html, "<svg"), 1);
    CHECK(strstr(html, "src=") == NULL && strstr(html, "href=") == NULL); /* nothing external */
    CHECK(strstr(html, "quanta quantize") != NULL);
    free(html);
}

static void test_plan_json_round_trips(void) {
    make_t4_plan();
    char *text;
    CHECK_OK(qt_plan_json(&plan, &text));
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    CHECK(j != NULL);
    free(text);
    if (!j) return;
    json_t *rows = json_object_get(j, "rows");
    CHECK_EQ_INT(json_array_size(rows), plan.n_rows);
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *r = json_array_get(rows, i);
        const qt_estimate *e = &plan.rows[i].est;
        CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(r, "scheme"), "key")), plan.rows[i].scheme->key);
        CHECK_NEAR(json_number_value(json_object_get(r, "weights_bytes")), e->weights_bytes, 0);
        CHECK_NEAR(json_number_value(json_object_get(r, "kv_budget_bytes")), e->kv_budget_bytes, 0);
        CHECK_EQ_INT(json_integer_value(json_object_get(r, "concurrency")), e->concurrency);
        CHECK_EQ_INT(json_integer_value(json_object_get(r, "gpu_blocks")), e->gpu_blocks);
        /* "fits" only where the hardware runs the scheme; "memory_fits" is the arithmetic alone */
        CHECK(json_is_boolean(json_object_get(r, "fits")) &&
              json_is_true(json_object_get(r, "fits")) == (e->fits && e->support != QT_SUPPORT_NO));
        CHECK(json_is_true(json_object_get(r, "memory_fits")) == e->fits);
    }
    CHECK_EQ_STR(json_string_value(json_object_get(j, "constraint")), "weights");
    CHECK(json_is_string(json_object_get(j, "best")));
    CHECK(json_array_size(json_object_get(j, "commands")) == 3); /* download, quantize, serve */
    json_decref(j);
}

static void test_estimate_json_fields(void) {
    qt_estimate_req r = {0};
    r.model = qt_plan_preset_find("qwen2.5-7b");
    r.scheme = qt_scheme_find("int8");
    r.n_gpus = 1;
    r.memory_bytes = 16e9;
    r.util = 0.9;
    r.overhead_bytes = 1e9;
    r.context = 4096;
    r.accounting = QT_ACCOUNTING_SIMPLE;
    qt_estimate e;
    CHECK_OK(qt_plan_estimate(&r, &e));
    char *text;
    CHECK_OK(qt_plan_estimate_json(&r, &e, &text));
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    CHECK(j != NULL);
    if (!j) return;
    /* the documented minimum, in bytes and counts, unrounded */
    CHECK_EQ_INT(json_integer_value(json_object_get(j, "weights_bytes")), 7615616512LL);
    CHECK_EQ_INT(json_integer_value(json_object_get(j, "kv_bytes_per_token")), 57344);
    CHECK_EQ_INT(json_integer_value(json_object_get(j, "kv_budget_bytes")), 5784383488LL);
    CHECK_EQ_INT(json_integer_value(json_object_get(j, "concurrency")), 24);
    CHECK(json_is_true(json_object_get(j, "fits")));
    CHECK_EQ_INT(json_integer_value(json_object_get(j, "gpu_blocks")), 6304);
    CHECK_NEAR(json_real_value(json_object_get(j, "concurrency_frac")), 5784383488.0 / 234881024.0, 0);
    json_decref(j);
}

static void test_diffusion_svg(void) {
    qt_estimate_req r = {0};
    r.model = qt_plan_preset_find("sdxl");
    r.hw = qt_hw_find("t4");
    static qt_plan p;
    CHECK_OK(qt_plan_make(&r, QT_GOAL_FIT, &p));
    char *svg;
    CHECK_OK(qt_plan_svg(&p, &svg));
    CHECK(check_xml(svg) > 10);
    CHECK(strstr(svg, "activations (allowance)") != NULL);
    free(svg);
}

int main(void) {
    QT_RUN(test_svg_is_the_memory_figure);
    QT_RUN(test_html_is_self_contained);
    QT_RUN(test_plan_json_round_trips);
    QT_RUN(test_estimate_json_fields);
    QT_RUN(test_diffusion_svg);
    return qt_test_finish("test_plan_render");
}
