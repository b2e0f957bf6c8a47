/* llama-quantize's per-tensor rules (lib/quant/recipe.c) seen from both sides:
 * the roles recipe.c derives from GGUF names agree with the planner's tensor
 * lists for every preset, and the planner's GGUF types are recipe.c's. */
#include "qtest.h"
#include "quanta.h"
#include "plan/plan_internal.h"
#include "quant/recipe.h"
#include "model/arch.h"

static int n_dims_of(const qt__ptensor *t) { return t->out > 1 ? 2 : 1; }

static void test_roles_match_planner(void) {
    int checked = 0;
    for (int i = 0; i < qt_plan_preset_count(); i++) {
        const qt_model_spec *m = qt_plan_preset_get(i);
        if (m->kind != QT_SPEC_LLM) continue;
        qt__ptensor *t;
        int n;
        CHECK_OK(qt__plan_tensors(m, &t, &n));
        for (int k = 0; k < n; k++) {
            const qt__role r = qt__recipe_role(t[k].name, n_dims_of(&t[k]));
            CHECK_MSG(r == t[k].role, "%s: %s: recipe role %d, planner role %d", m->key, t[k].name, (int)r, (int)t[k].role);
            checked++;
        }
        free(t);
    }
    CHECK(checked > 1000);
}

static void test_q4_k_m_rules(void) {
    const qt_gguf_ftype_info *ft = qt_gguf_ftype_find("q4_k_m");
    CHECK(ft && ft->has_rules && ft->mix && ft->base == QT_TYPE_Q4_K && ft->id == 15);
    const qt__recipe_model m = {"llama", 32, 0, false, 1, false};
    qt__recipe_tensor t = {"attn_v", 0, QT__ROLE_LINEAR, 4096, 1};
    CHECK_EQ_INT(qt__recipe_gguf_type(ft, &m, &t), QT_TYPE_Q6_K); /* first eighth: more bits */
    t.layer = 5;
    CHECK_EQ_INT(qt__recipe_gguf_type(ft, &m, &t), QT_TYPE_Q4_K);
    t.layer = 6; /* (6 - 4) % 3 == 2 */
    CHECK_EQ_INT(qt__recipe_gguf_type(ft, &m, &t), QT_TYPE_Q6_K);
    const qt__recipe_model big = {"llama", 80, 0, false, 1, false};
    t.layer = 20; /* not a more-bits layer: 70B rule */
    CHECK_EQ_INT(qt__recipe_gguf_type(ft, &big, &t), QT_TYPE_Q5_K);
    t = (qt__recipe_tensor){"ffn_down", 31, QT__ROLE_LINEAR, 11008, 1};
    CHECK_EQ_INT(qt__recipe_gguf_type(ft, &m, &t), QT_TYPE_Q6_K); /* last eighth */
    t = (qt__recipe_tensor){"ffn_gate", 10, QT__ROLE_LINEAR, 4128, 1}; /* 4128 % 256 != 0 -> q5_0 */
    CHECK_EQ_INT(qt__recipe_gguf_type(ft, &m, &t), QT_TYPE_Q5_0);
    t.row_len = 4104; /* not even whole 32-blocks -> f16 */
    CHECK_EQ_INT(qt__recipe_gguf_type(ft, &m, &t), QT_TYPE_F16);
    t.row_len = 4128;
    CHECK_EQ_INT(qt__recipe_gguf_type(ft, &m, &t), QT_TYPE_Q5_0);
    t = (qt__recipe_tensor){"output", -1, QT__ROLE_OUTPUT, 4096, 1};
    CHECK_EQ_INT(qt__recipe_gguf_type(ft, &m, &t), QT_TYPE_Q6_K);
    t = (qt__recipe_tensor){"attn_norm", 3, QT__ROLE_SMALL, 4096, 1};
    CHECK_EQ_INT(qt__recipe_gguf_type(ft, &m, &t), QT_TYPE_F32);
    const qt__recipe_model moe8 = {"llama", 32, 8, false, 1, false};
    t = (qt__recipe_tensor){"attn_k", 9, QT__ROLE_LINEAR, 4096, 1};
    CHECK_EQ_INT(qt__recipe_gguf_type(ft, &moe8, &t), QT_TYPE_Q8_0);
    /* Q8_0: output stays q8_0; other K types give the output Q6_K */
    t = (qt__recipe_tensor){"output", -1, QT__ROLE_OUTPUT, 4096, 1};
    CHECK_EQ_INT(qt__recipe_gguf_type(qt_gguf_ftype_find("Q8_0"), &m, &t), QT_TYPE_Q8_0);
    CHECK_EQ_INT(qt__recipe_gguf_type(qt_gguf_ftype_find("Q3_K_S"), &m, &t), QT_TYPE_Q6_K);
}

/* The AWQ/SmoothQuant folding pairs of every engine architecture name tensors a
 * model of that layout has (the planner's list for a dense preset). */
static void test_smooth_pairs_name_real_tensors(void) {
    const qt_model_spec *m = NULL;
    for (int i = 0; i < qt_plan_preset_count() && !m; i++) {
        const qt_model_spec *p = qt_plan_preset_get(i);
        if (p->kind == QT_SPEC_LLM && !strcmp(p->arch, "llama") && p->n_expert == 0) m = p;
    }
    CHECK(m != NULL);
    if (!m) return;
    qt__ptensor *t;
    int n;
    CHECK_OK(qt__plan_tensors(m, &t, &n));
    for (int a = QT_ARCH_LLAMA; a < QT_ARCH_COUNT; a++) {
        const qt_arch_info *ai = qt__arch_info((qt_arch)a);
        CHECK(ai && ai->smooth);
        int pairs = 0;
        for (const qt__smooth_pair *p = ai->smooth; p->from; p++, pairs++)
            for (int k = -1; k < 3; k++) {
                const char *name = k < 0 ? p->from : p->to[k];
                if (!name) continue;
                bool found = false;
                for (int j = 0; j < n && !found; j++) found = !strcmp(t[j].name, name);
                CHECK_MSG(found, "%s: folding pair names '%s', which a llama model does not have", ai->hf_class, name);
            }
        CHECK_EQ_INT(pairs, 4);
    }
    free(t);
}

int main(void) {
    QT_RUN(test_smooth_pairs_name_real_tensors);
    QT_RUN(test_roles_match_planner);
    QT_RUN(test_q4_k_m_rules);
    return qt_test_finish("test_recipe");
}
