/* eval: multiple-choice parsing and scoring, the TinyStories item file,
 * needle-in-a-haystack prompts and scoring, with synthetic scorers whose
 * right answers are known. */
#include "qtest.h"
#include "quanta.h"

static qt_mc_set *parse_ok(const char *text) {
    qt_mc_set *s = NULL;
    CHECK_OK(qt_mc_parse(text, strlen(text), "t.jsonl", &s));
    return s;
}

static void expect_error(const char *text, const char *want) {
    qt_mc_set *s = (qt_mc_set *)1;
    CHECK_STATUS(qt_mc_parse(text, strlen(text), "t.jsonl", &s), QT_ERR_FORMAT);
    CHECK(s == NULL);
    CHECK_MSG(strstr(qt_last_error(), want) != NULL, "message \"%s\" lacks \"%s\"", qt_last_error(), want);
}

static void test_mc_parse(void) {
    qt_mc_set *s = parse_ok("{\"context\": \"A cat\", \"endings\": [\"sat.\", \"flew.\"], \"label\": 0}\n"
                            "\n   \n"
                            "{\"ctx\": \"B\", \"endings\": [\"x\", \"y\", \"z\"], \"label\": \"2\"}\r\n"
                            "{\"context\": \"\\u00e9t\\u00e9\", \"endings\": [\"a\", \"b\"], \"label\": 1, \"extra\": true}");
    if (!s) return;
    CHECK_EQ_INT(s->n_items, 3);
    CHECK_EQ_STR(s->items[0].context, "A cat");
    CHECK_EQ_STR(s->items[0].endings[1], "flew.");
    CHECK_EQ_INT(s->items[0].label, 0);
    CHECK_EQ_INT(s->items[0].line, 1);
    CHECK_EQ_STR(s->items[1].context, "B");
    CHECK_EQ_INT(s->items[1].n_endings, 3);
    CHECK_EQ_INT(s->items[1].label, 2);
    CHECK_EQ_INT(s->items[1].line, 4);
    CHECK_EQ_STR(s->items[2].context, "\xc3\xa9t\xc3\xa9");
    qt_mc_free(s);

    expect_error("", "no items");
    expect_error("{\"context\": \"a\", \"endings\": [\"x\", \"y\"], \"label\": 0}\n{\"context\": ", "t.jsonl:2: column");
    expect_error("[1, 2]", "t.jsonl:1: expected a JSON object");
    expect_error("{\"endings\": [\"x\", \"y\"], \"label\": 0}", "field 'context': missing");
    expect_error("{\"context\": 3, \"endings\": [\"x\", \"y\"], \"label\": 0}", "field 'context': must be a string");
    expect_error("{\"context\": \"a\", \"label\": 0}", "field 'endings': missing");
    expect_error("{\"context\": \"a\", \"endings\": \"x\", \"label\": 0}", "field 'endings': must be an array");
    expect_error("{\"context\": \"a\", \"endings\": [\"x\"], \"label\": 0}", "1 ending(s), need at least 2");
    expect_error("{\"context\": \"a\", \"endings\": [\"x\", 5], \"label\": 0}", "field 'endings[1]': must be a string");
    expect_error("{\"context\": \"a\", \"endings\": [\"x\", \"\"], \"label\": 0}", "field 'endings[1]': empty ending");
    expect_error("{\"context\": \"a\", \"endings\": [\"x\", \"y\"]}", "field 'label': missing");
    expect_error("{\"context\": \"a\", \"endings\": [\"x\", \"y\", \"z\"], \"label\": 3}",
                 "t.jsonl:1: field 'label': 3 is out of range for 3 endings (0..2)");
    expect_error("{\"context\": \"a\", \"endings\": [\"x\", \"y\"], \"label\": -1}", "-1 is out of range");
    expect_error("{\"context\": \"a\", \"endings\": [\"x\", \"y\"], \"label\": \"one\"}", "\"one\" is not an integer");
    expect_error("{\"context\": \"a\", \"endings\": [\"x\", \"y\"], \"label\": 1.5}", "must be an integer index");
    expect_error("{\"context\": \"a\", \"context\": \"b\", \"endings\": [\"x\", \"y\"], \"label\": 0}", "invalid JSON");

    CHECK_STATUS(qt_mc_load("/nonexistent/items.jsonl", &s), QT_ERR_IO);
    CHECK(strstr(qt_last_error(), "/nonexistent/items.jsonl") != NULL);
}

/* A scorer with a known preference: endings starting with "RIGHT" cost 0.5
 * nats per byte, all others 1 nat per byte. Per byte the right one always
 * wins; summed, a long right ending loses to a short wrong one. */
static int scorer_calls;
static qt_status known_scorer(void *user, const char *context, const char *cont, qt_eval_score *out) {
    (void)user; (void)context;
    scorer_calls++;
    if (cont[0] != ' ') return qt_error(QT_ERR_INTERNAL, "continuation without its leading space");
    cont++;
    double rate = strncmp(cont, "RIGHT", 5) == 0 ? 0.5 : 1.0;
    out->logprob = -rate * (double)strlen(cont);
    out->n_tokens = (int32_t)strlen(cont);
    out->greedy = false;
    return QT_OK;
}

static qt_status failing_scorer(void *user, const char *context, const char *cont, qt_eval_score *out) {
    (void)user; (void)context; (void)cont; (void)out;
    return qt_error(QT_ERR_IO, "scorer broke");
}

static void test_mc_run(void) {
    qt_mc_set *s = parse_ok(
        "{\"context\": \"c\", \"endings\": [\"short\", \"RIGHT one\"], \"label\": 1}\n"                  /* sum: -5 vs -4.5: right */
        "{\"context\": \"c\", \"endings\": [\"RIGHT but very very long\", \"no\"], \"label\": 0}\n"      /* sum: -11.5 vs -2: wrong */
        "{\"context\": \"c\", \"endings\": [\"a\", \"b\", \"RIGHT\"], \"label\": 2}\n"                   /* sum: -1 vs -2.5: wrong */
        "{\"context\": \"c\", \"endings\": [\"RIGHT\", \"bbbbbbbbbbbbbbbbbb\"], \"label\": 1}\n");       /* per byte picks 0: wrong */
    if (!s) return;
    qt_mc_result r;
    scorer_calls = 0;
    CHECK_OK(qt_mc_run(s, known_scorer, NULL, NULL, &r));
    CHECK_EQ_INT(scorer_calls, 9);
    CHECK_EQ_INT(r.n_items, 4);
    CHECK_EQ_INT(r.n_correct, 3);
    CHECK_EQ_INT(r.n_correct_sum, 1);
    CHECK_NEAR(r.acc, 0.75, 0);
    CHECK_NEAR(r.acc_sum, 0.25, 0);
    double lo, hi;
    qt_eval_wilson(3, 4, QT_EVAL_Z95, &lo, &hi);
    CHECK_NEAR(r.acc_lo, lo, 0);
    CHECK_NEAR(r.acc_hi, hi, 0);
    CHECK_EQ_INT(r.choice[0], 1);
    CHECK_EQ_INT(r.choice[3], 0);
    qt_mc_result r2;
    CHECK_OK(qt_mc_run(s, known_scorer, NULL, NULL, &r2));
    CHECK_EQ_INT(qt_mc_n_disagree(&r, &r2), 0);
    r2.choice[2] = 0;
    CHECK_EQ_INT(qt_mc_n_disagree(&r, &r2), 1);
    qt_mc_result_free(&r);
    qt_mc_result_free(&r2);
    CHECK_STATUS(qt_mc_run(s, failing_scorer, NULL, NULL, &r), QT_ERR_IO);
    CHECK(r.choice == NULL);
    qt_mc_free(s);
}

/* Collapse every whitespace run to one space. */
static char *squeeze(const char *t, size_t n) {
    char *o = malloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool ws = t[i] == ' ' || t[i] == '\n' || t[i] == '\t' || t[i] == '\r';
        if (ws) { if (k && o[k - 1] != ' ') o[k++] = ' '; }
        else o[k++] = t[i];
    }
    o[k] = '\0';
    return o;
}

/* The committed item file: well formed, labels spread, and every right
 * ending really is the next sentence of its context in TinyStories while no
 * distractor is. */
static void test_mc_tinystories_items(void) {
    qt_mc_set *s = NULL;
    CHECK_OK(qt_mc_load(QT_SOURCE_DIR "/tests/data/mc_tinystories.jsonl", &s));
    if (!s) return;
    CHECK_EQ_INT(s->n_items, 64);
    int per_label[4] = {0};
    size_t n;
    char *raw = qt_test_read(qt_test_shared("data/tinystories-valid-first1000.txt"), &n);
    char *text = squeeze(raw, n);
    free(raw);
    for (int i = 0; i < s->n_items; i++) {
        const qt_mc_item *it = &s->items[i];
        CHECK_EQ_INT(it->n_endings, 4);
        per_label[it->label]++;
        for (int j = 0; j < it->n_endings; j++) {
            size_t need = strlen(it->context) + strlen(it->endings[j]) + 2;
            char *joined = malloc(need);
            snprintf(joined, need, "%s %s", it->context, it->endings[j]);
            bool found = strstr(text, joined) != NULL;
            CHECK_MSG(found == (j == it->label), "item %d ending %d: in text %d, label %d", i, j, found, it->label);
            free(joined);
        }
    }
    for (int l = 0; l < 4; l++) CHECK_EQ_INT(per_label[l], 16);
    free(text);
    qt_mc_free(s);
}

/* ---- needle ---------------------------------------------------------------- */

/* "Tokens" = whitespace-separated words. */
static qt_status count_words(void *user, const char *text, int32_t *n) {
    (void)user;
    int32_t k = 0;
    bool in = false;
    for (const char *p = text; *p; p++) {
        bool ws = *p == ' ' || *p == '\n';
        if (!ws && !in) k++;
        in = !ws;
    }
    *n = k;
    return QT_OK;
}

static char *haystack(void) {
    char *t = malloc(200 * 64);
    size_t k = 0;
    for (int i = 0; i < 200; i++) k += (size_t)sprintf(t + k, "Sentence %d is here and %s.%s", i, i % 3 ? "short" : "a bit longer than others",
                                               i % 10 == 9 ? "\n\n" : " ");
    return t;
}

static int word_index(const char *text, const char *at) {
    int32_t n;
    size_t len = (size_t)(at - text);
    char *pre = malloc(len + 1);
    memcpy(pre, text, len);
    pre[len] = '\0';
    count_words(NULL, pre, &n);
    free(pre);
    return n;
}

static void test_needle_build(void) {
    char *t = haystack();
    size_t len = strlen(t);
    const char *needle = "The secret number is {KEY}.", *query = "The secret number is";
    char *p;
    int32_t n;
    CHECK_OK(qt_needle_build(t, len, 0, 100, 0.0, needle, "4721", query, count_words, NULL, &p, &n));
    CHECK(strncmp(p, "The secret number is 4721. Sentence 0 is", 40) == 0);
    int32_t m;
    count_words(NULL, p, &m);
    CHECK_EQ_INT(n, m);
    CHECK(n <= 100 && n > 85);
    size_t pl = strlen(p);
    CHECK(pl > strlen(query) && strcmp(p + pl - strlen(query) - 1, " The secret number is") == 0);
    free(p);

    CHECK_OK(qt_needle_build(t, len, 0, 100, 1.0, needle, "4721", query, count_words, NULL, &p, &n));
    pl = strlen(p);
    const char *tail = "The secret number is 4721. The secret number is";
    CHECK(pl > strlen(tail) && strcmp(p + pl - strlen(tail), tail) == 0);
    CHECK(p[pl - strlen(tail) - 1] == ' ' && p[pl - strlen(tail) - 2] == '.'); /* after a whole sentence */
    free(p);

    /* depth 0.5 from the middle of the text: the needle sits near the middle,
     * and the haystack starts at a sentence boundary after byte 5000 */
    CHECK_OK(qt_needle_build(t, len, 5000, 200, 0.5, needle, "1234", query, count_words, NULL, &p, &n));
    const char *at = strstr(p, "The secret number is 1234.");
    CHECK(at != NULL);
    if (at) {
        double share = (double)word_index(p, at) / (n - 5 - 4);
        CHECK_MSG(fabs(share - 0.5) < 0.1, "needle at %.2f of the haystack", share);
    }
    CHECK(strncmp(p, "Sentence ", 9) == 0);
    CHECK(strchr(p, '\n') == NULL); /* sentences are joined by single spaces */
    free(p);

    /* a haystack longer than the text wraps around to its start */
    CHECK_OK(qt_needle_build(t, len, len - 10, 3000, 0.3, needle, "1234", query, count_words, NULL, &p, &n));
    CHECK(n > 2900 && n <= 3000);
    free(p);

    CHECK_STATUS(qt_needle_build(t, len, 0, 100, 0.5, "no placeholder", "1", query, count_words, NULL, &p, &n), QT_ERR_ARG);
    CHECK(strstr(qt_last_error(), "{KEY}") != NULL);
    CHECK_STATUS(qt_needle_build(t, len, 0, 8, 0.5, needle, "1", query, count_words, NULL, &p, &n), QT_ERR_ARG);
    CHECK_STATUS(qt_needle_build(t, len, 0, 100, 1.5, needle, "1", query, count_words, NULL, &p, &n), QT_ERR_ARG);
    free(t);
}

/* Scorers with a known memory: `window` = how many trailing words of the
 * prompt they can see (0 = all). Greedy success iff the needle with exactly
 * the asked key is visible. */
typedef struct memory { int window; int calls; char last_keys[64][8]; } memory;

static qt_status memory_scorer(void *user, const char *context, const char *cont, qt_eval_score *out) {
    memory *m = user;
    const char *vis = context;
    if (m->window > 0) {
        int32_t n;
        count_words(NULL, context, &n);
        int skip = n - m->window;
        for (const char *p = context; *p && skip > 0; p++)
            if (*p == ' ' && p[1] != ' ') { skip--; vis = p + 1; }
    }
    char want[64];
    snprintf(want, sizeof want, "The secret number is%s.", cont);
    if (m->calls < 64) snprintf(m->last_keys[m->calls], 8, "%s", cont + 1);
    m->calls++;
    out->greedy = strstr(vis, want) != NULL;
    out->logprob = out->greedy ? -0.5 : -9.0;
    out->n_tokens = 1;
    return QT_OK;
}

static void test_needle_run(void) {
    char *t = haystack();
    size_t len = strlen(t);
    qt_needle_opts o;
    qt_needle_opts_default(&o);
    CHECK_EQ_INT(o.n_lengths, 3);
    CHECK_EQ_INT(o.n_depths, 5);
    int32_t lengths[2] = {60, 200};
    double depths[3] = {0.0, 0.5, 1.0};
    o.lengths = lengths; o.n_lengths = 2;
    o.depths = depths; o.n_depths = 3;
    o.n_trials = 3;

    memory perfect = {0};
    qt_needle_result r;
    CHECK_OK(qt_needle_run(t, len, &o, count_words, memory_scorer, &perfect, NULL, &r));
    CHECK_EQ_INT(perfect.calls, 18);
    CHECK_EQ_INT(r.n_cells, 6);
    CHECK_EQ_INT(r.n_trials, 18);
    CHECK_EQ_INT(r.n_success, 18);
    CHECK_EQ_INT(r.cells[4].length, 200);
    CHECK_NEAR(r.cells[4].depth, 0.5, 0);
    CHECK(r.cells[4].mean_tokens > 180 && r.cells[4].mean_tokens <= 200);
    CHECK_NEAR(r.cells[0].mean_key_logprob, -0.5, 0);
    /* keys: 4 digits, differ between trials, same for every cell of a trial */
    CHECK(strlen(perfect.last_keys[0]) == 4);
    CHECK(strcmp(perfect.last_keys[0], perfect.last_keys[1]) != 0);
    CHECK_EQ_STR(perfect.last_keys[0], perfect.last_keys[3]);
    qt_needle_result_free(&r);

    /* a 30-word memory finds the needle only when it is at the end */
    memory shortm = {.window = 30};
    CHECK_OK(qt_needle_run(t, len, &o, count_words, memory_scorer, &shortm, NULL, &r));
    for (int c = 0; c < r.n_cells; c++) {
        int want = r.cells[c].depth == 1.0 ? 3 : 0;
        CHECK_MSG(r.cells[c].n_success == want, "cell length %d depth %.1f: %d successes, want %d", r.cells[c].length,
                  r.cells[c].depth, r.cells[c].n_success, want);
    }
    CHECK_EQ_INT(r.n_success, 6);
    CHECK_NEAR(r.cells[0].mean_key_logprob, -9.0, 0);
    qt_needle_result_free(&r);

    /* same seed, same keys; another seed, other keys */
    memory again = {0}, other = {0};
    CHECK_OK(qt_needle_run(t, len, &o, count_words, memory_scorer, &again, NULL, &r));
    qt_needle_result_free(&r);
    CHECK_EQ_STR(again.last_keys[0], perfect.last_keys[0]);
    o.seed = 7;
    CHECK_OK(qt_needle_run(t, len, &o, count_words, memory_scorer, &other, NULL, &r));
    qt_needle_result_free(&r);
    CHECK(strcmp(other.last_keys[0], perfect.last_keys[0]) != 0 || strcmp(other.last_keys[1], perfect.last_keys[1]) != 0);

    o.n_trials = 0;
    CHECK_STATUS(qt_needle_run(t, len, &o, count_words, memory_scorer, &other, NULL, &r), QT_ERR_ARG);
    o.n_trials = 1;
    CHECK_STATUS(qt_needle_run(t, len, &o, count_words, failing_scorer, NULL, NULL, &r), QT_ERR_IO);
    CHECK(r.cells == NULL);
    free(t);
}

int main(void) {
    QT_RUN(test_mc_parse);
    QT_RUN(test_mc_run);
    QT_RUN(test_mc_tinystories_items);
    QT_RUN(test_needle_build);
    QT_RUN(test_needle_run);
    return qt_test_finish("test_eval_mc");
}
