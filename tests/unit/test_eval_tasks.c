/* eval: task files (`quanta eval --tasks`) — the parser and its messages, and
 * every check type on passing and failing outputs; the JSON Schema subset
 * against a table of (schema, document, expected). */
#include "qtest.h"
#include "quanta.h"

static qt_task_set *parse_ok(const char *text) {
    qt_task_set *s = NULL;
    CHECK_OK(qt_tasks_parse(text, strlen(text), "t.jsonl", &s));
    return s;
}

static void expect_error(const char *text, const char *want) {
    qt_task_set *s = (qt_task_set *)1;
    CHECK_STATUS(qt_tasks_parse(text, strlen(text), "t.jsonl", &s), QT_ERR_FORMAT);
    CHECK(s == NULL);
    CHECK_MSG(strstr(qt_last_error(), want) != NULL, "message \"%s\" lacks \"%s\"", qt_last_error(), want);
}

static void test_parse(void) {
    qt_task_set *s = parse_ok(
        "{\"id\": \"a\", \"prompt\": \"Once\", \"max_tokens\": 8, \"stop\": \"\\n\", \"checks\": [{\"type\": \"exact\", \"value\": \"x\", \"normalize\": true}, {\"type\": \"regex\", \"pattern\": \"^\\\\w+\"}]}\n"
        "\n"
        "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"stop\": [\"a\", \"b\"], \"checks\": [{\"type\": \"refusal\", \"expect\": false}]}\n"
        "{\"id\": 7, \"prompt\": \"Q\", \"checks\": [{\"type\": \"choice\", \"choices\": [\"x\", \"y\"], \"answer\": 1}]}\n"
        "{\"context\": \"A cat\", \"endings\": [\"sat.\", \"flew.\"], \"label\": \"0\"}\n");
    if (!s) return;
    CHECK_EQ_INT(s->n_items, 4);
    const qt_task_item *a = &s->items[0], *b = &s->items[1], *c = &s->items[2], *d = &s->items[3];
    CHECK_EQ_STR(a->id, "a");
    CHECK_EQ_STR(a->prompt, "Once");
    CHECK_EQ_INT(a->max_tokens, 8);
    CHECK_EQ_INT(a->n_stop, 1);
    CHECK_EQ_STR(a->stop[0], "\n");
    CHECK_EQ_INT(a->n_checks, 2);
    CHECK(a->checks[0].type == QT_CHECK_EXACT && a->checks[0].normalize);
    CHECK_EQ_STR(a->checks[1].pattern, "^\\w+");
    CHECK(a->generates);
    CHECK_EQ_STR(b->id, "line 3");
    CHECK(b->prompt == NULL);
    CHECK_EQ_STR(b->messages, "[{\"role\":\"user\",\"content\":\"hi\"}]");
    CHECK_EQ_INT(b->max_tokens, 64);
    CHECK_EQ_INT(b->n_stop, 2);
    CHECK(!b->checks[0].expect);
    CHECK_EQ_STR(c->id, "7");
    CHECK(!c->generates);
    CHECK_EQ_INT(c->checks[0].answer, 1);
    /* a --mc line is a prompt with one choice check */
    CHECK_EQ_STR(d->prompt, "A cat");
    CHECK(d->checks[0].type == QT_CHECK_CHOICE);
    CHECK_EQ_INT(d->checks[0].n_choices, 2);
    CHECK_EQ_STR(d->checks[0].choices[1], "flew.");
    CHECK_EQ_INT(d->checks[0].answer, 0);
    CHECK_EQ_INT(d->line, 5);
    CHECK_EQ_INT(s->n_by_type[QT_CHECK_CHOICE], 2);
    CHECK_EQ_INT(s->n_by_type[QT_CHECK_EXACT], 1);
    qt_tasks_free(s);
}

static void test_parse_errors(void) {
    expect_error("", "t.jsonl: no items");
    expect_error("{\"prompt\": \"a\", \"checks\": [{\"type\": \"json\"}]}\n{\"prompt\": ", "t.jsonl:2: column");
    expect_error("[1]", "t.jsonl:1: expected a JSON object");
    expect_error("{\"checks\": [{\"type\": \"json\"}]}", "t.jsonl:1: field 'prompt': missing");
    expect_error("{\"prompt\": 1, \"checks\": [{\"type\": \"json\"}]}", "field 'prompt': must be a string");
    expect_error("{\"prompt\": \"a\", \"messages\": [], \"checks\": [{\"type\": \"json\"}]}", "not both");
    expect_error("{\"messages\": [{\"role\": \"user\"}], \"checks\": [{\"type\": \"json\"}]}", "field 'messages': item 0");
    expect_error("{\"prompt\": \"a\"}", "field 'checks': must be a non-empty list");
    expect_error("{\"prompt\": \"a\", \"checks\": []}", "field 'checks': must be a non-empty list");
    expect_error("{\"prompt\": \"a\", \"checks\": [{\"type\": \"json\"}], \"temp\": 1}", "field 'temp': unknown field");
    expect_error("{\"prompt\": \"a\", \"max_tokens\": 0, \"checks\": [{\"type\": \"json\"}]}", "field 'max_tokens': must be an integer");
    expect_error("{\"prompt\": \"a\", \"stop\": [\"\"], \"checks\": [{\"type\": \"json\"}]}", "field 'stop': item 0");
    expect_error("{\"prompt\": \"a\", \"stop\": 3, \"checks\": [{\"type\": \"json\"}]}", "field 'stop': must be");
    expect_error("{\"id\": \"x\", \"prompt\": \"a\", \"checks\": [{\"type\": \"json\"}]}\n"
                 "{\"id\": \"x\", \"prompt\": \"b\", \"checks\": [{\"type\": \"json\"}]}", "t.jsonl:2: field 'id': 'x' is also the id of line 1");
    expect_error("{\"prompt\": \"a\", \"checks\": [{\"type\": \"bleu\"}]}", "t.jsonl:1: field 'checks[0].type': unknown check type 'bleu'");
    expect_error("{\"prompt\": \"a\", \"checks\": [{\"value\": \"x\"}]}", "field 'checks[0].type': missing");
    expect_error("{\"prompt\": \"a\", \"checks\": [{\"type\": \"json\"}, {\"type\": \"exact\"}]}", "field 'checks[1].value': missing");
    expect_error("{\"prompt\": \"a\", \"checks\": [{\"type\": \"contains\", \"value\": 3}]}", "field 'checks[0].value': must be a string");
    expect_error("{\"prompt\": \"a\", \"checks\": [{\"type\": \"contains\", \"value\": \"x\", \"pattern\": \"y\"}]}",
                 "'pattern' is not a field of a contains check");
    expect_error("{\"prompt\": \"a\", \"checks\": [{\"type\": \"regex\", \"pattern\": \"(ab\"}]}",
                 "field 'checks[0].pattern': invalid regex at offset 3");
    expect_error("{\"prompt\": \"a\", \"checks\": [{\"type\": \"json_schema\", \"schema\": {\"type\": \"thing\"}}]}",
                 "field 'checks[0].schema': schema $: 'type' names an unknown type");
    expect_error("{\"prompt\": \"a\", \"checks\": [{\"type\": \"json_schema\", \"schema\": {\"properties\": {\"x\": {\"pattern\": \"a\"}}}}]}",
                 "schema $.properties.x: 'pattern' is outside the supported subset");
    expect_error("{\"prompt\": \"a\", \"checks\": [{\"type\": \"json_schema\"}]}", "field 'checks[0].schema': missing");
    expect_error("{\"prompt\": \"a\", \"checks\": [{\"type\": \"tool_call\", \"tools\": []}]}", "field 'checks[0].tools': tools: must be a non-empty list");
    expect_error("{\"prompt\": \"a\", \"checks\": [{\"type\": \"tool_call\", \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"minimum\": \"1\"}}}]}]}",
                 "schema tools[0].function.parameters: 'minimum' must be a number");
    expect_error("{\"prompt\": \"a\", \"checks\": [{\"type\": \"refusal\"}]}", "field 'checks[0].expect': missing");
    expect_error("{\"prompt\": \"a\", \"checks\": [{\"type\": \"choice\", \"choices\": [\"x\"], \"answer\": 0}]}", "field 'checks[0].choices'");
    expect_error("{\"prompt\": \"a\", \"checks\": [{\"type\": \"choice\", \"choices\": [\"x\", \"y\"], \"answer\": 2}]}",
                 "field 'checks[0].answer': 2 is out of range for 2 choices");
    expect_error("{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}], \"checks\": [{\"type\": \"choice\", \"choices\": [\"x\", \"y\"], \"answer\": 0}]}",
                 "a choice check needs a 'prompt'");
    expect_error("{\"context\": \"a\", \"endings\": [\"x\", \"y\"], \"label\": 5}", "t.jsonl:1: field 'label': 5 is out of range");
    qt_task_set *s;
    CHECK_STATUS(qt_tasks_load("/nonexistent/tasks.jsonl", &s), QT_ERR_IO);
    CHECK(strstr(qt_last_error(), "/nonexistent/tasks.jsonl") != NULL);
}

static void test_text_checks(void) {
    CHECK(qt_check_exact("Tom ran.", "Tom ran.", false));
    CHECK(!qt_check_exact("Tom ran. ", "Tom ran.", false));
    CHECK(qt_check_exact("  Tom\n  RAN. ", "tom ran.", true));
    CHECK(!qt_check_exact("Tom ran", "tom ran.", true));
    CHECK(qt_check_contains("Once upon a time", "upon a"));
    CHECK(!qt_check_contains("Once upon a time", "Upon"));
    bool pass;
    CHECK_OK(qt_check_regex("The answer is 42.", "answer is \\d+", &pass));
    CHECK(pass);
    CHECK_OK(qt_check_regex("The answer is forty-two.", "answer is \\d+", &pass));
    CHECK(!pass);
    CHECK_OK(qt_check_regex("\xc3\xa9t\xc3\xa9", "^\\w\\w\\w$", &pass)); /* UTF + UCP: "été" is three word characters */
    CHECK(pass);
    CHECK_OK(qt_check_regex("\xff\xfe", "x", &pass)); /* invalid UTF-8 output: no match, no error */
    CHECK(!pass);
    CHECK_STATUS(qt_check_regex("x", "[a-", &pass), QT_ERR_FORMAT);
    CHECK(qt_check_json(" {\"a\": [1, 2]}\n"));
    CHECK(qt_check_json("```json\n{\"a\": 1}\n```"));
    CHECK(qt_check_json("3"));
    CHECK(!qt_check_json("{\"a\": 1"));
    CHECK(!qt_check_json("Sure! {\"a\": 1}"));
    CHECK(qt_check_is_refusal("I'm sorry, but I can't help with that."));
    CHECK(qt_check_is_refusal("I\xe2\x80\x99m unable to do this."));
    CHECK(qt_check_is_refusal("AS AN AI language model"));
    CHECK(!qt_check_is_refusal("Sure, here is a poem about the sea."));
    CHECK(!qt_check_is_refusal(""));
}

/* The schema subset: (schema, document, expected match). */
static const struct { const char *schema, *doc; bool match; } schema_table[] = {
    {"{\"type\": \"object\"}", "{}", true},
    {"{\"type\": \"object\"}", "[]", false},
    {"{\"type\": \"integer\"}", "3", true},
    {"{\"type\": \"integer\"}", "3.0", true},
    {"{\"type\": \"integer\"}", "3.5", false},
    {"{\"type\": \"number\"}", "3", true},
    {"{\"type\": \"string\"}", "3", false},
    {"{\"type\": \"boolean\"}", "false", true},
    {"{\"type\": \"null\"}", "null", true},
    {"{\"type\": [\"string\", \"null\"]}", "null", true},
    {"{\"type\": [\"string\", \"null\"]}", "1", false},
    {"{\"enum\": [\"red\", \"green\"]}", "\"green\"", true},
    {"{\"enum\": [\"red\", \"green\"]}", "\"blue\"", false},
    {"{\"enum\": [1, 2]}", "2.0", true},
    {"{\"minimum\": 0, \"maximum\": 10}", "10", true},
    {"{\"minimum\": 0, \"maximum\": 10}", "-0.5", false},
    {"{\"minimum\": 0, \"maximum\": 10}", "10.01", false},
    {"{\"minimum\": 0}", "\"text\"", true}, /* bounds apply to numbers only */
    {"{\"minLength\": 2, \"maxLength\": 3}", "\"\xc3\xa9t\xc3\xa9\"", true}, /* 3 code points, 5 bytes */
    {"{\"maxLength\": 3}", "\"abcd\"", false},
    {"{\"minLength\": 1}", "\"\"", false},
    {"{\"type\": \"array\", \"items\": {\"type\": \"integer\"}, \"minItems\": 1, \"maxItems\": 3}", "[1, 2]", true},
    {"{\"type\": \"array\", \"items\": {\"type\": \"integer\"}}", "[1, \"2\"]", false},
    {"{\"type\": \"array\", \"minItems\": 1}", "[]", false},
    {"{\"type\": \"array\", \"maxItems\": 1}", "[1, 2]", false},
    {"{\"required\": [\"name\"]}", "{\"name\": \"x\"}", true},
    {"{\"required\": [\"name\"]}", "{\"nom\": \"x\"}", false},
    {"{\"properties\": {\"age\": {\"type\": \"integer\", \"maximum\": 120}}}", "{\"age\": 30}", true},
    {"{\"properties\": {\"age\": {\"type\": \"integer\", \"maximum\": 120}}}", "{\"age\": 130}", false},
    {"{\"properties\": {\"age\": {\"type\": \"integer\"}}}", "{\"other\": \"x\"}", true},
    {"{\"properties\": {\"a\": {}}, \"additionalProperties\": false}", "{\"a\": 1}", true},
    {"{\"properties\": {\"a\": {}}, \"additionalProperties\": false}", "{\"a\": 1, \"b\": 2}", false},
    {"{\"properties\": {\"p\": {\"properties\": {\"q\": {\"enum\": [true]}}}}}", "{\"p\": {\"q\": false}}", false},
    {"{\"items\": {\"required\": [\"k\"]}}", "[{\"k\": 1}, {}]", false},
    {"{\"title\": \"T\", \"description\": \"D\", \"$schema\": \"x\"}", "1", true},
    {"true", "[1]", true},
    {"false", "[1]", false},
    {"{\"type\": \"object\"}", "not json", false},
};

static void test_schema_table(void) {
    for (size_t i = 0; i < sizeof schema_table / sizeof *schema_table; i++) {
        bool pass = !schema_table[i].match;
        char why[QT_CHECK_WHY_LEN] = "";
        CHECK_OK(qt_check_json_schema(schema_table[i].doc, schema_table[i].schema, &pass, why));
        CHECK_MSG(pass == schema_table[i].match, "row %zu: %s on %s gave %d (%s)", i, schema_table[i].schema,
                  schema_table[i].doc, pass, why);
        if (!pass) CHECK_MSG(why[0] != '\0', "row %zu: a failure without a reason", i);
    }
    bool pass;
    char why[QT_CHECK_WHY_LEN];
    CHECK_OK(qt_check_json_schema("{\"age\": 130}", "{\"properties\": {\"age\": {\"maximum\": 120}}}", &pass, why));
    CHECK_EQ_STR(why, "$.age: 130 is above maximum 120");
    static const char *const invalid[] = {
        "{\"type\": 3}", "{\"type\": []}", "{\"required\": \"a\"}", "{\"enum\": []}", "{\"minItems\": -1}",
        "{\"maxLength\": 1.5}", "{\"additionalProperties\": {}}", "{\"oneOf\": []}", "{\"items\": 3}", "[]", "{",
    };
    for (size_t i = 0; i < sizeof invalid / sizeof *invalid; i++)
        CHECK_MSG(qt_check_json_schema("1", invalid[i], &pass, why) == QT_ERR_FORMAT, "schema %s accepted", invalid[i]);
}

#define WEATHER "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\", " \
                "\"properties\": {\"city\": {\"type\": \"string\"}, \"unit\": {\"enum\": [\"c\", \"f\"]}}, \"required\": [\"city\"]}}}," \
                "{\"type\": \"function\", \"function\": {\"name\": \"now\"}}]"

static void test_tool_call(void) {
    static const struct { const char *out; bool pass; } rows[] = {
        {"{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}", true},
        {"{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Oslo\\\", \\\"unit\\\": \\\"c\\\"}\"}", true},
        {"{\"type\": \"function\", \"function\": {\"name\": \"now\", \"arguments\": {}}}", true},
        {"{\"tool_calls\": [{\"type\": \"function\", \"function\": {\"name\": \"now\", \"arguments\": \"{}\"}},"
         " {\"function\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}}]}", true},
        {"{\"name\": \"get_weather\", \"arguments\": {\"unit\": \"c\"}}", false},            /* required city */
        {"{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"k\"}}", false}, /* enum */
        {"{\"name\": \"get_time\", \"arguments\": {}}", false},                              /* not a tool */
        {"{\"name\": \"now\", \"arguments\": \"not json\"}", false},
        {"{\"name\": \"now\"}", false},
        {"{\"tool_calls\": []}", false},
        {"{\"tool_calls\": [{\"function\": {\"name\": \"now\", \"arguments\": {}}}, {\"function\": {\"name\": \"x\", \"arguments\": {}}}]}", false},
        {"I would call get_weather.", false},
        {"[1]", false},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        bool pass = !rows[i].pass;
        char why[QT_CHECK_WHY_LEN] = "";
        CHECK_OK(qt_check_tool_call(rows[i].out, WEATHER, &pass, why));
        CHECK_MSG(pass == rows[i].pass, "row %zu: %s gave %d (%s)", i, rows[i].out, pass, why);
    }
    bool pass;
    CHECK_STATUS(qt_check_tool_call("{}", "[{\"type\": \"function\"}]", &pass, NULL), QT_ERR_FORMAT);
}

/* qt_task_check_run on the checks a parsed file carries, with reasons for failures. */
static void test_check_run(void) {
    qt_task_set *s = parse_ok(
        "{\"prompt\": \"p\", \"checks\": [{\"type\": \"exact\", \"value\": \"A b\", \"normalize\": true}, {\"type\": \"contains\", \"value\": \"b\"},"
        " {\"type\": \"regex\", \"pattern\": \"^a\\\\s\"}, {\"type\": \"json\"}, {\"type\": \"json_schema\", \"schema\": {\"type\": \"string\"}},"
        " {\"type\": \"tool_call\", \"tools\": " WEATHER "}, {\"type\": \"refusal\", \"expect\": true}]}");
    if (!s) return;
    const qt_task_item *it = &s->items[0];
    static const bool want_ab[] = {true, true, true, false, false, false, false};
    static const bool want_json[] = {false, false, false, true, true, false, false};
    char why[QT_CHECK_WHY_LEN];
    for (int32_t j = 0; j < it->n_checks; j++) {
        bool pass;
        CHECK_OK(qt_task_check_run(&it->checks[j], "a b", &pass, why));
        CHECK_MSG(pass == want_ab[j], "check %d on 'a b': %d", (int)j, pass);
        if (!pass) CHECK_MSG(why[0], "check %d: no reason", (int)j);
        CHECK_OK(qt_task_check_run(&it->checks[j], "\"x\"", &pass, why));
        CHECK_MSG(pass == want_json[j], "check %d on '\"x\"': %d", (int)j, pass);
    }
    bool pass;
    CHECK_OK(qt_task_check_run(&it->checks[6], "I cannot help with that", &pass, why));
    CHECK(pass);
    CHECK_OK(qt_task_check_run(&it->checks[2], "b", &pass, why));
    CHECK_EQ_STR(why, "no match for /^a\\s/");
    CHECK_EQ_STR(qt_check_type_name(QT_CHECK_JSON_SCHEMA), "json_schema");
    qt_tasks_free(s);
    s = parse_ok("{\"prompt\": \"p\", \"checks\": [{\"type\": \"choice\", \"choices\": [\"a\", \"b\"], \"answer\": 0}]}");
    if (s) CHECK_STATUS(qt_task_check_run(&s->items[0].checks[0], "a", &pass, why), QT_ERR_ARG);
    qt_tasks_free(s);
}

/* A generator with known outputs: item "a" says "yes" on sample 1 only, "b" always
 * "no", "c" is an infrastructure failure; choices: the scorer prefers "right". */
static qt_status fake_gen(void *user, const qt_task_item *it, int32_t k, char **text, bool *infra) {
    (void)user;
    *infra = !strcmp(it->id, "c");
    const char *t = *infra ? "HTTP 500" : !strcmp(it->id, "a") && k == 1 ? "yes" : "no";
    *text = strdup(t);
    return QT_OK;
}

static qt_status fake_score(void *user, const char *context, const char *cont, qt_eval_score *out, qt_task_miss *miss) {
    (void)user;
    (void)context;
    (void)miss;
    memset(out, 0, sizeof *out);
    out->logprob = strstr(cont, "right") ? -1.0 : -5.0;
    return QT_OK;
}

static qt_status nologprob_score(void *user, const char *context, const char *cont, qt_eval_score *out, qt_task_miss *miss) {
    (void)user, (void)context, (void)cont, (void)out;
    miss->no_logprobs = true;
    return QT_OK;
}

static qt_status infra_score(void *user, const char *context, const char *cont, qt_eval_score *out, qt_task_miss *miss) {
    (void)user, (void)context, (void)cont, (void)out;
    miss->infra = true;
    snprintf(miss->why, sizeof miss->why, "HTTP 502: bad gateway");
    return QT_OK;
}

static void test_run(void) {
    qt_task_set *s = parse_ok(
        "{\"id\": \"a\", \"prompt\": \"p\", \"checks\": [{\"type\": \"exact\", \"value\": \"yes\"}, {\"type\": \"contains\", \"value\": \"y\"}]}\n"
        "{\"id\": \"b\", \"prompt\": \"p\", \"checks\": [{\"type\": \"exact\", \"value\": \"yes\"}]}\n"
        "{\"id\": \"c\", \"prompt\": \"p\", \"checks\": [{\"type\": \"json\"}]}\n"
        "{\"id\": \"d\", \"prompt\": \"p\", \"checks\": [{\"type\": \"choice\", \"choices\": [\"wrong\", \"right\"], \"answer\": 1}]}\n");
    if (!s) return;
    qt_task_result g1, g2, noscore;
    CHECK_OK(qt_tasks_run(s, 1, fake_gen, fake_score, NULL, NULL, &g1));
    CHECK_OK(qt_tasks_run(s, 2, fake_gen, fake_score, NULL, NULL, &g2));
    CHECK_OK(qt_tasks_run(s, 1, fake_gen, NULL, NULL, NULL, &noscore));
    /* one sample: only the choice item passes; two: "a" passes on its second sample (pass@2) */
    CHECK_EQ_INT(g1.n_pass, 1);
    CHECK_EQ_INT(g2.n_pass, 2);
    CHECK(!g1.items[0].pass && g2.items[0].pass);
    CHECK_EQ_STR(g1.items[0].text, "no");
    CHECK_EQ_STR(g2.items[0].text, "yes");
    CHECK_EQ_STR(g1.items[0].why, "checks[0] exact: exact \"yes\" not matched");
    CHECK(g1.items[3].pass);
    CHECK_EQ_INT(g1.n_infra, 1);
    CHECK(g1.items[2].infra && !g1.items[2].pass);
    CHECK_EQ_STR(g1.items[2].why, "infrastructure: HTTP 500");
    /* per check type: infrastructure failures are not counted as checked */
    CHECK_EQ_INT(g1.n_checks[QT_CHECK_EXACT], 2);
    CHECK_EQ_INT(g1.n_checks_pass[QT_CHECK_EXACT], 0);
    CHECK_EQ_INT(g2.n_checks_pass[QT_CHECK_EXACT], 1);
    CHECK_EQ_INT(g1.n_checks[QT_CHECK_JSON], 0);
    CHECK_NEAR(g1.pass_rate, 0.25, 1e-12);
    double lo, hi;
    qt_eval_wilson(1, 4, QT_EVAL_Z95, &lo, &hi);
    CHECK_NEAR(g1.pass_lo, lo, 1e-12);
    CHECK_NEAR(g1.pass_hi, hi, 1e-12);
    CHECK_EQ_INT(qt_tasks_n_flipped(&g1, &g2), 1);
    /* no scorer (a server without logprobs): the choice is skipped, not passed */
    CHECK(noscore.items[3].choice_skipped && !noscore.items[3].pass);
    CHECK_EQ_INT(noscore.n_checks[QT_CHECK_CHOICE], 0);
    qt_task_result_free(&noscore);
    CHECK_STATUS(qt_tasks_run(s, 0, fake_gen, fake_score, NULL, NULL, &noscore), QT_ERR_ARG);
    /* a scorer whose server gives no logprobs: skipped as without one; whose server fails: infrastructure */
    qt_task_result miss;
    CHECK_OK(qt_tasks_run(s, 1, fake_gen, nologprob_score, NULL, NULL, &miss));
    CHECK(miss.items[3].choice_skipped && !miss.items[3].pass && !miss.items[3].infra);
    qt_task_result_free(&miss);
    CHECK_OK(qt_tasks_run(s, 1, fake_gen, infra_score, NULL, NULL, &miss));
    CHECK(miss.items[3].infra && !miss.items[3].pass && !miss.items[3].choice_skipped);
    CHECK_EQ_STR(miss.items[3].why, "infrastructure: HTTP 502: bad gateway");
    CHECK_EQ_INT(miss.n_infra, 2);
    qt_task_result_free(&miss);
    /* several workers: the same outcomes, in file order */
    for (int w = 2; w <= 5; w++) {
        qt_task_result par;
        CHECK_OK(qt_tasks_run_parallel(s, 2, w, fake_gen, fake_score, NULL, NULL, &par));
        CHECK_EQ_INT(par.n_pass, g2.n_pass);
        CHECK_EQ_INT(par.n_infra, g2.n_infra);
        for (int32_t i = 0; i < s->n_items; i++) {
            CHECK(par.items[i].pass == g2.items[i].pass && par.items[i].infra == g2.items[i].infra);
            const char *a = par.items[i].text, *b = g2.items[i].text; /* NULL for an infrastructure failure */
            CHECK_MSG((!a && !b) || (a && b && !strcmp(a, b)), "item %d: \"%s\" vs \"%s\"", (int)i, a ? a : "(null)", b ? b : "(null)");
            CHECK_EQ_STR(par.items[i].why, g2.items[i].why);
        }
        qt_task_result_free(&par);
    }
    CHECK_STATUS(qt_tasks_run_parallel(s, 1, 0, fake_gen, fake_score, NULL, NULL, &miss), QT_ERR_ARG);
    qt_task_result_free(&g1);
    qt_task_result_free(&g2);
    qt_tasks_free(s);
}

/* A server that is not there (nothing listens on 127.0.0.1 port 1): every item
 * is an infrastructure failure naming the cause, none a model failure. */
static void test_http_refused(void) {
    qt_task_set *s = parse_ok(
        "{\"id\": \"a\", \"prompt\": \"p\", \"checks\": [{\"type\": \"contains\", \"value\": \"\"}]}\n"
        "{\"id\": \"b\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"checks\": [{\"type\": \"json\"}]}\n");
    if (!s) return;
    qt_task_http h;
    qt_task_http_default(&h);
    CHECK_NEAR(h.timeout_s, 120, 0);
    CHECK_EQ_INT(h.max_retries, 4);
    h.url = "http://127.0.0.1:1/";
    h.timeout_s = 10;
    h.set = s;
    qt_task_result r;
    CHECK_OK(qt_tasks_run(s, 1, qt_task_http_gen, NULL, &h, NULL, &r));
    CHECK_EQ_INT(r.n_infra, 2);
    CHECK_EQ_INT(r.n_pass, 0);
    CHECK_EQ_INT(r.n_checks[QT_CHECK_CONTAINS], 0);
    CHECK_MSG(strstr(r.items[0].why, "infrastructure: http://127.0.0.1:1/v1/completions: ") == r.items[0].why, "why: %s", r.items[0].why);
    CHECK_MSG(strstr(r.items[1].why, "/v1/chat/completions: ") != NULL, "why: %s", r.items[1].why);
    qt_task_result_free(&r);
    qt_tasks_free(s);
}

int main(void) {
    QT_RUN(test_parse);
    QT_RUN(test_parse_errors);
    QT_RUN(test_text_checks);
    QT_RUN(test_schema_table);
    QT_RUN(test_tool_call);
    QT_RUN(test_check_run);
    QT_RUN(test_run);
    QT_RUN(test_http_refused);
    return qt_test_finish("test_eval_tasks");
}
