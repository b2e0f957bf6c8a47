/* The measured sensitivity table of --target-size (lib/quantize/mix_table.c):
 * groups, Spearman's rank correlation against hand-computed values, the split
 * of a group's measured cost over its members by proxy share, and the cache
 * file's text form (round trip, key differences, corrupt files refused with
 * the file and line named). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qtest.h"
#include "quanta.h"
#include "quantize/mix_table.h"

static void test_groups(void) {
    char g[QT_MAX_NAME];
    CHECK(qt__mix_group_of("blk.3.attn_q.weight", true, g, sizeof g) && !strcmp(g, "blk.3.attn"));
    CHECK(qt__mix_group_of("blk.3.attn_q.weight", false, g, sizeof g) && !strcmp(g, "blk.3.attn_q.weight"));
    CHECK(qt__mix_group_of("blk.3.attn_output.weight", true, g, sizeof g) && !strcmp(g, "blk.3.attn"));
    CHECK(qt__mix_group_of("blk.12.ffn_down.weight", true, g, sizeof g) && !strcmp(g, "blk.12.ffn"));
    CHECK(qt__mix_group_of("output.weight", true, g, sizeof g) && !strcmp(g, "output"));
    CHECK(qt__mix_group_of("output.weight", false, g, sizeof g) && !strcmp(g, "output"));
    CHECK(!qt__mix_group_of("blk.3.ffn_norm.weight", false, g, sizeof g));
    CHECK(qt__mix_group_of("token_embd.weight", true, g, sizeof g) && !strcmp(g, "token_embd"));
    CHECK(!qt__mix_group_of("blk.3.attn_norm.weight", true, g, sizeof g));
    CHECK(!qt__mix_group_of("blk.3.ffn_gate_exps.weight", true, g, sizeof g));
    CHECK(!qt__mix_group_of("blk.3.attn_q.bias", true, g, sizeof g));
}

static void test_spearman(void) {
    const double x[5] = {1, 2, 3, 4, 5}, up[5] = {10, 20, 30, 40, 50}, down[5] = {9, 7, 5, 3, 1};
    CHECK_NEAR(qt__mix_spearman(x, up, 5), 1.0, 1e-12);
    CHECK_NEAR(qt__mix_spearman(x, down, 5), -1.0, 1e-12);
    /* ties: y ranks 1, 2, 3.5, 5, 3.5; sum dx dy = 8, sum dx^2 = 10, sum dy^2 = 9.5 */
    const double y[5] = {5, 6, 7, 8, 7};
    CHECK_NEAR(qt__mix_spearman(x, y, 5), 8.0 / sqrt(95.0), 1e-12);
    /* monotone transforms do not change it */
    const double ex[5] = {exp(1), exp(2), exp(3), exp(4), exp(5)};
    CHECK_NEAR(qt__mix_spearman(ex, y, 5), 8.0 / sqrt(95.0), 1e-12);
    const double flat[5] = {2, 2, 2, 2, 2};
    CHECK(isnan(qt__mix_spearman(x, flat, 5)));
    CHECK(isnan(qt__mix_spearman(x, up, 1)));
}

static void test_apply(void) {
    /* group 0 = tensors 0 and 1; tensor 2 in none */
    qt__mix_group g = {.name = "blk.0.attn", .n_types = 3, .types = {QT_TYPE_Q4_0, QT_TYPE_Q8_0, QT_TYPE_F16},
                       .cost = {0.3, 0.01, 0.002}};
    qt__mix_table t = {.n = 1, .g = &g};
    enum { S = 4 };
    const int32_t grp[3] = {0, 0, -1}, n_opt[3] = {2, 2, 1};
    const qt_type types[3 * S] = {QT_TYPE_Q4_0, QT_TYPE_Q8_0, 0, 0, QT_TYPE_Q4_0, QT_TYPE_F16, 0, 0, QT_TYPE_Q4_0};
    const double proxy[3 * S] = {1, 0.1, 0, 0, 2, 0.5, 0, 0, 4};
    double cost[3 * S], rho;
    int32_t np;
    qt__mix_table_apply(&t, 3, grp, n_opt, types, proxy, S, cost, &rho, &np);
    CHECK_NEAR(cost[0], 0.1, 1e-15);           /* 0.3 x 1/3 */
    CHECK_NEAR(cost[4], 0.2, 1e-15);           /* 0.3 x 2/3 */
    CHECK_NEAR(cost[1], 0.01, 1e-15);          /* the only member in q8_0 */
    CHECK_NEAR(cost[5], 0.002, 1e-15);
    CHECK_NEAR(cost[8], 4 * 0.1, 1e-15);       /* median of 0.1, 0.1, 0.004 */
    CHECK_EQ_INT(np, 3);
    CHECK_NEAR(rho, 0.5, 1e-12);               /* proxy ranks 3,1,2; measured 3,2,1 */
    /* a zero proxy sum: equal shares */
    const double zero[3 * S] = {0, 0.1, 0, 0, 0, 0.5, 0, 0, 4};
    qt__mix_table_apply(&t, 3, grp, n_opt, types, zero, S, cost, &rho, &np);
    CHECK_NEAR(cost[0], 0.15, 1e-15);
    CHECK_NEAR(cost[4], 0.15, 1e-15);
}

#define H64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_round_trip(void) {
    qt__mix_group g[2] = {{.name = "blk.0.ffn", .n_types = 2, .types = {QT_TYPE_Q4_K, QT_TYPE_IQ4_XS}, .cost = {0.1 / 3, 1e-300}},
                          {.name = "output", .n_types = 1, .types = {QT_TYPE_Q6_K}, .cost = {0}}};
    qt__mix_table t = {.model = H64, .calib = H64, .imatrix = "none", .numerics = "fast/avx2", .candidates = "default",
                       .n_seq = 4, .n_tok = 64, .n = 2, .g = g}, u;
    char *text;
    CHECK_OK(qt__mix_table_format(&t, &text));
    CHECK_OK(qt__mix_table_parse(text, strlen(text), "c.txt", &u));
    CHECK_EQ_INT(u.n, 2);
    CHECK(!*qt__mix_table_key_diff(&t, &u));
    CHECK(!strcmp(u.g[0].name, "blk.0.ffn") && u.g[0].types[1] == QT_TYPE_IQ4_XS);
    CHECK(u.g[0].cost[0] == 0.1 / 3 && u.g[0].cost[1] == 1e-300 && u.g[1].cost[0] == 0); /* bit for bit */
    u.n_tok = 128;
    CHECK(!strcmp(qt__mix_table_key_diff(&t, &u), "other calibration tokens"));
    u.n_tok = 64;
    snprintf(u.numerics, sizeof u.numerics, "fast/scalar");
    CHECK(!strcmp(qt__mix_table_key_diff(&t, &u), "other numerics"));
    qt__mix_table_free(&u);
    /* corruptions: each refused, naming the file and the line */
    const struct { const char *from, *to, *says; } bad[] = {
        {"quanta sensitivity table 1", "quanta sensitivity table 2", "c.txt: line 1: not a quanta sensitivity table"},
        {"model 0123", "model X123", "c.txt: line 2: expected 'model SHA256'"},
        {" 4 64", " 0 64", "c.txt: line 3:"},
        {"groups 2", "groups 3", "c.txt: line 10: group end: expected a count"},
        {"q6_K=0", "q6_K=-1", "c.txt: line 9: group output: q6_K: cost '-1'"},
        {"q6_K=0", "q9_9=0", "unknown type 'q9_9'"},
        {"output 1", "output 2", "c.txt: line 9: group output: expected 2 TYPE=COST pairs"},
        {"output 1", "blk.0.ffn 1", "group blk.0.ffn twice"},
        {"end\n", "end\nmore\n", "text after 'end'"},
        {"end\n", "", "ends before 'end'"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char buf[4096];
        const char *at = strstr(text, bad[k].from);
        CHECK(at != NULL);
        if (!at) continue;
        snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - text), text, bad[k].to, at + strlen(bad[k].from));
        CHECK_STATUS(qt__mix_table_parse(buf, strlen(buf), "c.txt", &u), QT_ERR_FORMAT);
        CHECK_MSG(strstr(qt_last_error(), bad[k].says) != NULL, "case %zu: %s", k, qt_last_error());
        CHECK(u.g == NULL && u.n == 0);
    }
    free(text);
    /* the shortest group lines round-trip (the fuzzer found a lower bound that refused them) */
    qt__mix_group s[2] = {{.name = "a", .n_types = 1, .types = {QT_TYPE_F16}}, {.name = "b", .n_types = 1, .types = {QT_TYPE_F16}}};
    t.g = s;
    CHECK_OK(qt__mix_table_format(&t, &text));
    CHECK(strstr(text, "\na 1 f16=0\nb 1 f16=0\nend\n") != NULL);
    CHECK_OK(qt__mix_table_parse(text, strlen(text), "c.txt", &u));
    CHECK(u.n == 2 && !strcmp(u.g[1].name, "b"));
    qt__mix_table_free(&u);
    free(text);
}

int main(void) {
    QT_RUN(test_groups);
    QT_RUN(test_spearman);
    QT_RUN(test_apply);
    QT_RUN(test_round_trip);
    return qt_test_finish("test_mix_table");
}
