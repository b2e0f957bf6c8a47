/* The planner's arithmetic: the seeds' worked numbers reproduced exactly, the
 * realistic accounting beside them (and why it differs), KV cache sizes, the
 * support matrix, ranking and advice. Expected values are derived by hand in
 * the comments from the model configs and the formats' layouts, never read
 * back from the code under test. */
#include "qtest.h"
#include "quanta.h"

static const qt_model_spec *preset(const char *name) {
    const qt_model_spec *m = qt_plan_preset_find(name);
    if (!m) QT_FAIL_AT("preset '%s' missing", name);
    return m;
}

static qt_estimate_req seed_req(const char *scheme) {
    /* The seed: Qwen2.5-7B on a 16 GB card at 0.90 utilisation, 1.0 GB overhead, 4096 tokens,
     * flat bytes per parameter. */
    qt_estimate_req r = {0};
    r.model = preset("qwen2.5-7b");
    r.scheme = qt_scheme_find(scheme);
    r.n_gpus = 1;
    r.memory_bytes = 16e9;
    r.util = 0.90;
    r.overhead_bytes = 1.0e9;
    r.context = 4096;
    r.accounting = QT_ACCOUNTING_SIMPLE;
    return r;
}

static void test_seed_worked_example_bf16(void) {
    qt_estimate_req r = seed_req("bf16");
    qt_estimate e;
    CHECK_OK(qt_plan_estimate(&r, &e));
    /* 7,615,616,512 params x 2 bytes */
    CHECK_EQ_INT(e.n_params, 7615616512LL);
    CHECK_EQ_INT((long long)e.weights_bytes, 15231233024LL);
    CHECK_EQ_INT((long long)e.budget_bytes, 14400000000LL);
    /* 14.4e9 - 15,231,233,024 - 1e9 = -1,831,233,024: "-1.83 GB for KV" */
    CHECK_EQ_INT((long long)e.kv_budget_bytes, -1831233024LL);
    CHECK(!e.fits);
    CHECK_EQ_INT(e.concurrency, 0);
    CHECK_EQ_INT(e.gpu_blocks, 0);
    CHECK_EQ_INT((long long)e.weights_shortfall_bytes, 1831233024LL);
    /* one 4096-token sequence (234,881,024 bytes) on top */
    CHECK_EQ_INT((long long)e.shortfall_bytes, 1831233024LL + 234881024LL);
}

static void test_seed_worked_example_int8_and_4bit(void) {
    qt_estimate e;
    qt_estimate_req r = seed_req("int8");
    CHECK_OK(qt_plan_estimate(&r, &e));
    CHECK_EQ_INT((long long)e.weights_bytes, 7615616512LL);          /* "7.62 GB" */
    CHECK_EQ_INT((long long)e.kv_budget_bytes, 5784383488LL);        /* "5.78 GB for KV" */
    CHECK_EQ_INT((long long)e.kv_bytes_per_token, 57344);             /* 2 x 28 x 4 x 128 x 2 */
    CHECK_EQ_INT((long long)e.kv_bytes_per_seq, 234881024LL);         /* x 4096 */
    CHECK_NEAR(e.concurrency_frac, 5784383488.0 / 234881024.0, 1e-12); /* 24.63: the seed prints 25 */
    CHECK_NEAR(e.concurrency_frac, 24.6, 0.05);
    CHECK_EQ_INT(e.concurrency, 24);                                  /* only 24 whole sequences fit */
    CHECK_EQ_INT(e.gpu_blocks, 5784383488LL / (16 * 57344));          /* 6304 blocks of 16 tokens */
    CHECK(e.fits);

    r = seed_req("w4a16");
    CHECK_OK(qt_plan_estimate(&r, &e));
    CHECK_EQ_INT((long long)e.weights_bytes, 3807808256LL);  /* "3.81" */
    CHECK_EQ_INT((long long)e.kv_budget_bytes, 9592191744LL); /* "9.59" */
    CHECK_NEAR(e.concurrency_frac, 40.8, 0.05);              /* "40.8"; the seed prints 41 */
    CHECK_EQ_INT(e.concurrency, 40);
}

static void test_halving_kv_doubles_concurrency(void) {
    qt_estimate a, b;
    qt_estimate_req r = seed_req("int8");
    CHECK_OK(qt_plan_estimate(&r, &a));
    r.kv_dtype = QT_KV_TYPE_FP8_E4M3;
    CHECK_OK(qt_plan_estimate(&r, &b));
    CHECK_EQ_INT((long long)b.kv_bytes_per_token, 28672);
    CHECK_NEAR(b.concurrency_frac, 2 * a.concurrency_frac, 1e-9);
    CHECK_EQ_INT(b.concurrency, 49);
}

static void test_llama70b_kv_for_eight_long_requests(void) {
    /* 8 requests of 32,768 tokens: 2 x 80 layers x 8 KV heads x 128 x 2 bytes = 327,680 B/token */
    qt_estimate_req r = {0};
    r.model = preset("llama-3.1-70b");
    r.scheme = qt_scheme_find("bf16");
    r.n_gpus = 1;
    r.memory_bytes = 400e9;
    r.util = 0.9;
    r.context = 32768;
    r.concurrency = 8;
    qt_estimate e;
    CHECK_OK(qt_plan_estimate(&r, &e));
    CHECK_EQ_INT((long long)e.kv_bytes_per_token, 327680);
    CHECK_EQ_INT((long long)e.kv_required_bytes, 85899345920LL); /* "85.9 GB" (= 80 GiB) */
    r.kv_dtype = QT_KV_TYPE_FP8_E4M3;
    CHECK_OK(qt_plan_estimate(&r, &e));
    CHECK_EQ_INT((long long)e.kv_required_bytes, 42949672960LL); /* "42.9 GB" */
}

static void test_qwen3_kv_head_dim(void) {
    /* Qwen3-8B at 4096 x 4: 2 x 36 x 8 x 128 x 2 = 147,456 B/token -> 2.25 GiB exactly */
    const qt_model_spec *q8 = preset("qwen3-8b");
    CHECK_EQ_INT((long long)qt_plan_kv_bytes_per_token(q8, 2.0, 1), 147456);
    CHECK_NEAR(4 * qt_plan_kv_bytes_per_seq(q8, 2.0, 4096, 1) / QT_GIB, 2.25, 0);
    /* Qwen3-0.6B: head_dim 128 although hidden/heads = 1024/16 = 64. The seeds' companion tool
     * computes 64 and gets half the cache: 57,344 instead of 114,688 B/token. */
    const qt_model_spec *q06 = preset("qwen3-0.6b");
    CHECK_EQ_INT(q06->head_dim, 128);
    CHECK_EQ_INT(q06->n_embd / q06->n_head, 64);
    CHECK_EQ_INT((long long)qt_plan_kv_bytes_per_token(q06, 2.0, 1), 114688);
}

static void test_sliding_window_and_mla(void) {
    /* Gemma-2-9B: 42 layers, 8 KV heads x 256 -> 8,192 B per token per layer; every even layer
     * keeps at most 4096 tokens. At 8192 tokens: 21 x 8192 + 21 x 4096 tokens x 8192 B. */
    const qt_model_spec *g = preset("gemma-2-9b");
    CHECK_EQ_INT((long long)qt_plan_kv_bytes_per_token(g, 2.0, 1), 42 * 8192);
    CHECK_EQ_INT((long long)qt_plan_kv_bytes_per_seq(g, 2.0, 8192, 1), (21LL * 8192 + 21LL * 4096) * 8192);
    CHECK_EQ_INT((long long)qt_plan_kv_bytes_per_seq(g, 2.0, 4096, 1), 42LL * 4096 * 8192); /* below the window */
    /* DeepSeek-V3 MLA: 61 layers x (512 latent + 64 rope) x 2 bytes, the same on every TP rank */
    const qt_model_spec *d = preset("deepseek-v3");
    CHECK_EQ_INT((long long)qt_plan_kv_bytes_per_token(d, 2.0, 1), 61 * 576 * 2);
    CHECK_EQ_INT((long long)qt_plan_kv_bytes_per_token(d, 2.0, 8), 61 * 576 * 2);
    /* GQA under tensor parallelism: Llama-3.1-70B's 8 KV heads split over 8 GPUs, replicate over 16 */
    const qt_model_spec *l = preset("llama-3.1-70b");
    CHECK_EQ_INT((long long)qt_plan_kv_bytes_per_token(l, 2.0, 8), 327680 / 8);
    CHECK_EQ_INT((long long)qt_plan_kv_bytes_per_token(l, 2.0, 16), 327680 / 8);
}

static void test_realistic_w4a16_differs_by_16bit_parts_and_scales(void) {
    /* Qwen2.5-7B, compressed-tensors W4A16 group 128 symmetric:
     *   Linear weights 28 x (29,360,128 attention + 203,685,888 MLP) = 6,525,288,448 params
     *   packed int4: 6,525,288,448 / 2                                     = 3,262,644,224 B
     *   bf16 scales: one per 128 inputs per row: 6,525,288,448 / 128 x 2   =   101,957,632 B
     *   kept 16-bit: embeddings + lm_head 1,089,994,752, biases 28 x 4,608,
     *                norms 28 x 7,168 + 3,584 -> 1,090,328,064 params x 2  = 2,180,656,128 B
     *   total                                                              = 5,545,257,984 B */
    qt_estimate_req r = seed_req("w4a16");
    r.accounting = QT_ACCOUNTING_REALISTIC;
    qt_estimate e;
    CHECK_OK(qt_plan_estimate(&r, &e));
    CHECK_EQ_INT((long long)e.weights_bytes, 5545257984LL);
    CHECK_EQ_INT((long long)e.weights_scale_bytes, 101957632LL);
    CHECK_EQ_INT((long long)e.weights_16bit_bytes, 2180656128LL);
    CHECK_EQ_INT(e.n_params_16bit, 1090328064LL);
    /* the flat 0.5 B/param of the seed misses 1.74 GB: mostly the 16-bit embeddings and lm_head */
    CHECK_EQ_INT((long long)e.weights_bytes - 3807808256LL, 1737449728LL);
    /* with the overhead given, KV left = 14.4e9 - 5,545,257,984 - 1e9 */
    CHECK_EQ_INT((long long)e.kv_budget_bytes, 7854742016LL);
    CHECK_EQ_INT(e.concurrency, 33);
    /* AWQ stores 4-bit zero points too: + ceil(out x 4 / 32) x 4 bytes per group row,
     * i.e. out / 2 bytes per group = linear / 256 bytes */
    r.scheme = qt_scheme_find("awq");
    CHECK_OK(qt_plan_estimate(&r, &e));
    CHECK_EQ_INT((long long)e.weights_bytes, 5545257984LL + 6525288448LL / 256);
}

static void test_realistic_gguf_q4_k_m_follows_llama_cpp(void) {
    /* llama.cpp Q4_K_M for Qwen2.5-7B (docs/formats.md §3.6): token_embd Q4_K (144 B / 256),
     * output Q6_K (210 B / 256), attn_v and ffn_down Q6_K in the 14 use_more_bits layers of 28,
     * the rest Q4_K; norms and biases f32.
     *   token_embd 544,997,376 x 144/256 =   306,561,024
     *   output     544,997,376 x 210/256 =   447,068,160
     *   layers 28 x 233,046,016 x 144/256 + 14 x 69,730,304 x 66/256 = 3,922,157,568
     *   f32: biases 28 x 4,608 x 4 + norms (28 x 7,168 + 3,584) x 4 = 1,333,248
     *   total 4,677,120,000 (the published Q4_K_M file is 4.68 GB: this plus metadata) */
    qt_estimate_req r = seed_req("q4_k_m");
    r.accounting = QT_ACCOUNTING_REALISTIC;
    qt_estimate e;
    CHECK_OK(qt_plan_estimate(&r, &e));
    CHECK_EQ_INT((long long)e.weights_bytes, 4677120000LL);
    /* Q8_0 everywhere: 34 bytes per 32 weights, f32 norms/biases */
    r.scheme = qt_scheme_find("q8_0");
    CHECK_OK(qt_plan_estimate(&r, &e));
    CHECK_EQ_INT((long long)e.weights_bytes, (7615616512LL - 333312) / 32 * 34 + 333312LL * 4);
}

static void test_realistic_overhead_is_an_allowance(void) {
    qt_estimate_req r = seed_req("bf16");
    r.accounting = QT_ACCOUNTING_REALISTIC;
    r.overhead_bytes = -1;
    qt_estimate e;
    CHECK_OK(qt_plan_estimate(&r, &e));
    /* runtime allowance 1 GiB; activations of a 2048-token forward in bf16:
     * 2048 x (2 x 3584 + max(q+k+v 4608, 3 x 18944)) x 2 + 256 sampled rows x 152,064 x 4 x 2 */
    CHECK_EQ_INT((long long)e.runtime_bytes, 1073741824LL);
    CHECK_EQ_INT((long long)e.workspace_bytes, 2048LL * (2 * 3584 + 3 * 18944) * 2 + 256LL * 152064 * 4 * 2);
    CHECK_NEAR(e.overhead_bytes, e.runtime_bytes + e.workspace_bytes, 0);
}

static void test_param_counts_of_presets(void) {
    /* Totals the publishers state (safetensors index total_size / 2 for bf16 checkpoints). */
    static const struct { const char *key; long long params; } known[] = {
        {"qwen2.5-7b", 7615616512LL},    {"llama-3.1-8b", 8030261248LL}, {"llama-3.1-70b", 70553706496LL},
        {"llama-3.2-1b", 1235814400LL},  {"mixtral-8x7b", 46702792704LL}, {"gemma-2-9b", 9241705984LL},
        {"gemma-2-27b", 27227128320LL},  {"phi-4", 14659507200LL},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        qt_param_counts pc;
        CHECK_OK(qt_plan_param_counts(preset(known[i].key), &pc));
        CHECK_MSG((long long)pc.total == known[i].params, "%s: %llu params, expected %lld", known[i].key,
                  (unsigned long long)pc.total, known[i].params);
    }
    qt_param_counts pc;
    /* Qwen3-0.6B: "0.44B non-embedding" (model card): total minus the tied 151,936 x 1024 table */
    CHECK_OK(qt_plan_param_counts(preset("qwen3-0.6b"), &pc));
    CHECK_EQ_INT((long long)(pc.total - pc.embed), 440467456LL);
    /* DeepSeek-V3 "671B total, 37B activated"; Qwen3-30B-A3B "30.5B total, 3.3B activated" */
    CHECK_OK(qt_plan_param_counts(preset("deepseek-v3"), &pc));
    CHECK_NEAR(pc.total / 1e9, 671.0, 0.5);
    CHECK_NEAR((pc.active + pc.embed) / 1e9, 37.5, 1.0);
    CHECK_OK(qt_plan_param_counts(preset("qwen3-30b-a3b"), &pc));
    CHECK_NEAR(pc.total / 1e9, 30.5, 0.05);
    CHECK_NEAR((pc.active + pc.embed) / 1e9, 3.3, 0.1);
    /* every preset has a shape that adds up and a source */
    for (int i = 0; i < qt_plan_preset_count(); i++) {
        const qt_model_spec *m = qt_plan_preset_get(i);
        CHECK_OK(qt_plan_param_counts(m, &pc));
        CHECK_MSG(pc.total > 100000000ull, "%s: %llu params", m->key, (unsigned long long)pc.total);
        CHECK_MSG(m->source[0] && m->hf_repo[0], "%s: no source", m->key);
        if (m->kind == QT_SPEC_LLM) CHECK_EQ_INT(pc.total, pc.embed + pc.lm_head + pc.linear + pc.router + pc.small);
    }
}

static void test_support_matrix(void) {
    char why[400];
    const qt_hw_info *a100 = qt_hw_find("a100-80gb"), *h100 = qt_hw_find("h100"), *t4 = qt_hw_find("t4");
    const qt_hw_info *v100 = qt_hw_find("v100"), *mi250 = qt_hw_find("mi250x"), *mi300 = qt_hw_find("mi300x");
    CHECK(a100 && h100 && t4 && v100 && mi250 && mi300);
    /* FP8 W8A8 needs 8.9: refused on the A100 with the reason and the alternatives */
    CHECK_EQ_INT(qt_support_check(qt_scheme_find("fp8"), a100, why, sizeof why), QT_SUPPORT_NO);
    CHECK(strstr(why, "compute capability 8.9") && strstr(why, "is 8.0") && strstr(why, "use INT8 W8A8 or W4A16"));
    CHECK_EQ_INT(qt_support_check(qt_scheme_find("fp8"), h100, why, sizeof why), QT_SUPPORT_YES);
    CHECK_EQ_INT(qt_support_check(qt_scheme_find("fp8"), qt_hw_find("l4"), why, sizeof why), QT_SUPPORT_YES);
    CHECK_EQ_INT(qt_support_check(qt_scheme_find("fp8"), mi300, why, sizeof why), QT_SUPPORT_YES);
    CHECK_EQ_INT(qt_support_check(qt_scheme_find("fp8"), mi250, why, sizeof why), QT_SUPPORT_NO);
    /* vLLM's table: INT8 W8A8 from Turing, AWQ not on Volta, GPTQ on Volta, Marlin from Ampere */
    CHECK_EQ_INT(qt_support_check(qt_scheme_find("int8"), v100, why, sizeof why), QT_SUPPORT_NO);
    CHECK_EQ_INT(qt_support_check(qt_scheme_find("int8"), t4, why, sizeof why), QT_SUPPORT_YES);
    CHECK_EQ_INT(qt_support_check(qt_scheme_find("awq"), v100, why, sizeof why), QT_SUPPORT_NO);
    CHECK_EQ_INT(qt_support_check(qt_scheme_find("gptq"), v100, why, sizeof why), QT_SUPPORT_YES);
    CHECK_EQ_INT(qt_support_check(qt_scheme_find("w4a16"), t4, why, sizeof why), QT_SUPPORT_NO);
    CHECK_EQ_INT(qt_support_check(qt_scheme_find("w4a16"), a100, why, sizeof why), QT_SUPPORT_YES);
    /* bf16 below SM 8.0: no */
    CHECK_EQ_INT(qt_support_check(qt_scheme_find("bf16"), t4, why, sizeof why), QT_SUPPORT_NO);
    CHECK(strstr(why, "fp16"));
    CHECK_EQ_INT(qt_support_check(qt_scheme_find("fp16"), t4, why, sizeof why), QT_SUPPORT_YES);
    /* NVFP4 natively on Blackwell only; weight-only before */
    CHECK_EQ_INT(qt_support_check(qt_scheme_find("nvfp4"), qt_hw_find("b200"), why, sizeof why), QT_SUPPORT_YES);
    CHECK_EQ_INT(qt_support_check(qt_scheme_find("nvfp4"), h100, why, sizeof why), QT_SUPPORT_PARTIAL);
    /* GGUF runs everywhere; the FP8 KV cache is keyed to CUDA, so even Volta has it */
    for (int i = 0; i < qt_hw_count(); i++)
        CHECK_EQ_INT(qt_support_check(qt_scheme_find("q4_k_m"), qt_hw_get(i), why, sizeof why), QT_SUPPORT_YES);
    const qt_support_row *kv = qt_support_row_find("fp8-kv");
    CHECK(kv && kv->cell[QT_HW_VOLTA].s == QT_SUPPORT_YES && strstr(kv->cell[QT_HW_VOLTA].note, "CUDA"));
    CHECK(kv->cell[QT_HW_APPLE].s == QT_SUPPORT_NO);
    /* every refusal says why */
    for (int i = 0; i < qt_support_row_count(); i++) {
        const qt_support_row *r = qt_support_row_get(i);
        for (int c = 0; c < QT_HW_CLASS_COUNT; c++)
            if (r->cell[c].s != QT_SUPPORT_YES) CHECK_MSG(r->cell[c].note != NULL, "%s/%d has no reason", r->key, c);
    }
}

static void test_plan_t4_weights_are_the_constraint(void) {
    qt_estimate_req r = {0};
    r.model = preset("qwen2.5-7b");
    r.hw = qt_hw_find("t4");
    r.context = 4096;
    r.overhead_bytes = -1;
    static qt_plan p;
    CHECK_OK(qt_plan_make(&r, QT_GOAL_FIT, &p));
    CHECK_EQ_STR(p.constraint, "weights");
    CHECK(p.best >= 0);
    const qt_plan_row *b = &p.rows[p.best];
    CHECK(b->rank == 1 && b->est.fits && b->est.support != QT_SUPPORT_NO);
    CHECK_EQ_INT(b->scheme->runtime, QT_RUNTIME_VLLM); /* a GPU plan serves with vLLM when it can */
    int refused_fp8 = 0, refused_bf16 = 0, fp16_nofit = 0;
    for (int i = 0; i < p.n_rows; i++) {
        const qt_plan_row *x = &p.rows[i];
        if (!strcmp(x->scheme->key, "fp8")) refused_fp8 = x->rank == 0 && strstr(x->est.reason, "8.9") != NULL;
        if (!strcmp(x->scheme->key, "bf16")) refused_bf16 = x->rank == 0;
        if (!strcmp(x->scheme->key, "fp16")) fp16_nofit = x->rank > 0 && !x->est.fits;
        if (i > 0 && x->rank && p.rows[i - 1].rank) CHECK(x->rank == p.rows[i - 1].rank + 1);
    }
    CHECK(refused_fp8 && refused_bf16 && fp16_nofit);
    /* the Turing bf16 warning, the fp16 flag in the serve command */
    int turing = 0;
    for (int i = 0; i < p.n_warnings; i++) turing |= strstr(p.warnings[i], "no bf16 fast path") != NULL;
    CHECK(turing);
    /* a hub id: download first, then the one quantize form on the local copy, then serve */
    CHECK(p.n_commands == 3 && strstr(p.commands[0], "hf download") && strstr(p.commands[1], "quanta quantize ") &&
          !strstr(p.commands[1], " -m ") && strstr(p.commands[2], "--dtype half"));
    /* KV advice: an 8-bit cache roughly doubles the sequences */
    CHECK_EQ_INT(p.kv_alt_dtype, QT_KV_TYPE_FP8_E4M3);
    CHECK(p.kv_alt.concurrency >= 2 * b->est.concurrency - 1);
}

static void test_plan_goals_and_small_models(void) {
    qt_estimate_req r = {0};
    r.model = preset("qwen2.5-7b");
    r.hw = qt_hw_find("a100-80gb");
    r.context = 4096;
    r.overhead_bytes = -1;
    static qt_plan p;
    CHECK_OK(qt_plan_make(&r, QT_GOAL_THROUGHPUT, &p));
    CHECK_EQ_STR(p.constraint, "none");
    CHECK(p.best >= 0 && p.rows[p.best].est.tok_s_batch > 0);
    for (int i = 1; i < p.n_rows; i++) /* fitting vLLM rows in throughput order */
        if (p.rows[i].rank && p.rows[i].est.fits && p.rows[i].scheme->runtime == p.rows[i - 1].scheme->runtime)
            CHECK(p.rows[i].est.tok_s_batch <= p.rows[i - 1].est.tok_s_batch);
    CHECK_OK(qt_plan_make(&r, QT_GOAL_CONCURRENCY, &p));
    CHECK(p.best >= 0);
    for (int i = 0; i < p.n_rows; i++)
        if (p.rows[i].rank && p.rows[i].scheme->runtime == QT_RUNTIME_VLLM && p.rows[i].est.fits)
            CHECK(p.rows[p.best].est.concurrency >= p.rows[i].est.concurrency);
    /* a 0.5B model on an 80 GB card: quantizing weights buys little */
    r.model = preset("qwen2.5-0.5b");
    CHECK_OK(qt_plan_make(&r, QT_GOAL_FIT, &p));
    int small = 0;
    for (int i = 0; i < p.n_warnings; i++) small |= strstr(p.warnings[i], "buys little") != NULL;
    CHECK(small);
    CHECK_EQ_STR(p.rows[p.best].scheme->key, "bf16");
}

static void test_plan_nothing_fits_suggests_gpus(void) {
    qt_estimate_req r = {0};
    r.model = preset("llama-3.1-405b");
    r.hw = qt_hw_find("h100");
    r.context = 8192;
    r.overhead_bytes = -1;
    static qt_plan p;
    CHECK_OK(qt_plan_make(&r, QT_GOAL_FIT, &p));
    CHECK_EQ_INT(p.best, -1);
    int more = 0;
    for (int i = 0; i < p.n_warnings; i++) more |= strstr(p.warnings[i], "tensor parallelism") != NULL;
    CHECK(more);
    r.n_gpus = 8; /* 405B in FP8 over 8 x 80 GB */
    CHECK_OK(qt_plan_make(&r, QT_GOAL_FIT, &p));
    CHECK(p.best >= 0);
}

static void test_host_targets_rank_gguf(void) {
    qt_estimate_req r = {0};
    r.model = preset("llama-3.1-8b");
    r.hw = qt_hw_find("m2-max");
    r.context = 8192;
    r.overhead_bytes = -1;
    static qt_plan p;
    CHECK_OK(qt_plan_make(&r, QT_GOAL_FIT, &p));
    for (int i = 0; i < p.n_rows; i++)
        if (p.rows[i].rank) CHECK_EQ_INT(p.rows[i].scheme->runtime, QT_RUNTIME_LLAMACPP);
    CHECK(p.best >= 0 && !strcmp(p.rows[p.best].scheme->key, "q8_0"));
    /* Metal's working-set allowance */
    CHECK_NEAR(p.rows[0].est.budget_bytes, 0.75 * 96e9, 1);
    /* a 12 GB host, one 32k sequence (4.29 GB of f16 cache): Q8_0 (8.53 GB), Q6_K and Q5_K_M
     * leave too little, Q4_K_M (4.91 GB) fits */
    r.hw = qt_hw_find("cpu");
    r.memory_bytes = 12e9;
    r.context = 32768;
    CHECK_OK(qt_plan_make(&r, QT_GOAL_FIT, &p));
    CHECK(p.best >= 0 && !strcmp(p.rows[p.best].scheme->key, "q4_k_m"));
}

static void test_diffusion_components(void) {
    qt_estimate_req r = {0};
    r.model = preset("flux.1-dev");
    r.hw = qt_hw_find("rtx-4090");
    static qt_plan p;
    CHECK_OK(qt_plan_make(&r, QT_GOAL_FIT, &p));
    CHECK_EQ_INT(p.n_components, 4);
    CHECK_NEAR(p.comp_bytes[0][0], 2.0 * 11.9e9, 1);  /* transformer at 16-bit */
    CHECK_NEAR(p.comp_bytes[0][1], 11.9e9, 1);        /* at 8-bit */
    CHECK(p.best >= 0 && strcmp(p.rows[p.best].scheme->key, "bf16") != 0);
    int vae = 0;
    for (int i = 0; i < p.n_warnings; i++) vae |= strstr(p.warnings[i], "VAE in 16-bit") != NULL;
    CHECK(vae);
    /* SDXL fits a T4 in 16-bit: fp16 there (Turing has no bf16), nothing to quantize */
    r.model = preset("sdxl");
    r.hw = qt_hw_find("t4");
    CHECK_OK(qt_plan_make(&r, QT_GOAL_FIT, &p));
    CHECK(p.best >= 0 && !strcmp(p.rows[p.best].scheme->key, "fp16"));
    /* estimate refuses a pipeline: no KV cache to plan */
    r.scheme = qt_scheme_find("bf16");
    qt_estimate e;
    CHECK_STATUS(qt_plan_estimate(&r, &e), QT_ERR_UNSUPPORTED);
}

static void test_quantization_job_memory(void) {
    /* GPTQ on Qwen2.5-7B, one layer at a time:
     *   Hessians in^2 x 4: q,k,v,gate,up 5 x 3584^2 x 4 + o 3584^2 x 4 + down 18944^2 x 4
     *   activations: 512 samples x 2048 tokens x 3584 x 2 bytes, inputs and outputs */
    qt_estimate_req r = {0};
    r.model = preset("qwen2.5-7b");
    r.hw = qt_hw_find("a100-40gb");
    r.context = 4096;
    r.concurrency = 115; /* more than INT8 leaves room for (109), fewer than W4A16 (122) */
    r.overhead_bytes = -1;
    static qt_plan p;
    CHECK_OK(qt_plan_make(&r, QT_GOAL_FIT, &p));
    CHECK(p.best >= 0);
    CHECK_EQ_STR(p.job.method, "gptq");
    CHECK_EQ_INT((long long)p.job.hessian_bytes, 6LL * 3584 * 3584 * 4 + 18944LL * 18944 * 4);
    CHECK_EQ_INT((long long)p.job.activation_bytes, 4LL * 512 * 2048 * 3584);
    CHECK_EQ_INT((long long)p.job.layer_bytes, 233057792LL * 2);
    CHECK_EQ_INT((long long)p.job.work_bytes, 18944LL * 3584 * 4);
}

static void test_bad_inputs(void) {
    qt_estimate e;
    qt_estimate_req r = seed_req("bf16");
    r.util = 1.2;
    CHECK_STATUS(qt_plan_estimate(&r, &e), QT_ERR_ARG);
    r = seed_req("bf16");
    r.context = -5;
    CHECK_STATUS(qt_plan_estimate(&r, &e), QT_ERR_ARG);
    r = seed_req("bf16");
    r.n_gpus = 3; /* 28 heads do not split over 3 */
    CHECK_STATUS(qt_plan_estimate(&r, &e), QT_ERR_ARG);
    CHECK(strstr(qt_last_error(), "28 attention heads"));
    r.n_gpus = 2;
    CHECK_OK(qt_plan_estimate(&r, &e));
    CHECK_EQ_INT((long long)e.kv_bytes_per_token_gpu, 57344 / 2);
    r = seed_req("bf16");
    r.memory_bytes = 0;
    CHECK_STATUS(qt_plan_estimate(&r, &e), QT_ERR_ARG);
}

static void test_units_and_names(void) {
    double b;
    CHECK_OK(qt_plan_parse_size("16GB", &b));
    CHECK_EQ_INT((long long)b, 16000000000LL);
    CHECK_OK(qt_plan_parse_size("15360MiB", &b));
    CHECK_EQ_INT((long long)b, 15360LL * 1048576);
    CHECK_OK(qt_plan_parse_size("1.5 tb", &b));
    CHECK_EQ_INT((long long)b, 1500000000000LL);
    CHECK_OK(qt_plan_parse_size("2GiB", &b));
    CHECK_EQ_INT((long long)b, 2147483648LL);
    CHECK_STATUS(qt_plan_parse_size("16", &b), QT_ERR_ARG); /* GB or GiB? say it */
    CHECK(strstr(qt_last_error(), "GiB"));
    CHECK_STATUS(qt_plan_parse_size("-1GB", &b), QT_ERR_ARG);
    CHECK_STATUS(qt_plan_parse_size("16 parsecs", &b), QT_ERR_ARG);
    CHECK_STATUS(qt_plan_parse_size("nanGB", &b), QT_ERR_ARG);
    /* names: repo ids, spacing and case do not matter */
    CHECK(qt_plan_preset_find("Qwen/Qwen2.5-7B-Instruct") == qt_plan_preset_find("qwen2.5-7b"));
    CHECK(qt_plan_preset_find("QWEN2.5 7B") != NULL);
    CHECK(qt_plan_preset_find("qwen2.5-8b") == NULL);
    CHECK(qt_hw_find("A100 80GB") == qt_hw_find("a100-80gb"));
    CHECK_EQ_INT(qt_plan_name_distance("kitten", "sitting"), 3);
    const char *near[3];
    int k = qt_plan_suggest("qwen2.5-7", 1, near, 3);
    CHECK(k >= 1 && !strcmp(near[0], "qwen2.5-7b"));
    k = qt_plan_suggest("qwen2.5-8b", 1, near, 3); /* 3b and 7b are one edit away */
    CHECK(k >= 2 && (!strcmp(near[0], "qwen2.5-7b") || !strcmp(near[1], "qwen2.5-7b")));
    k = qt_plan_suggest("h1000", 0, near, 3);
    CHECK(k >= 1 && !strncmp(near[0], "h100", 4));
    CHECK_EQ_INT(qt_plan_suggest("zzzzzzzzzzzzzzzz", 1, near, 3), 0);
    qt_goal g;
    CHECK_OK(qt_goal_parse("long-context", &g));
    CHECK_EQ_INT(g, QT_GOAL_LONG_CONTEXT);
    CHECK_STATUS(qt_goal_parse("speed", &g), QT_ERR_ARG);
}

int main(void) {
    QT_RUN(test_seed_worked_example_bf16);
    QT_RUN(test_seed_worked_example_int8_and_4bit);
    QT_RUN(test_halving_kv_doubles_concurrency);
    QT_RUN(test_llama70b_kv_for_eight_long_requests);
    QT_RUN(test_qwen3_kv_head_dim);
    QT_RUN(test_sliding_window_and_mla);
    QT_RUN(test_realistic_w4a16_differs_by_16bit_parts_and_scales);
    QT_RUN(test_realistic_gguf_q4_k_m_follows_llama_cpp);
    QT_RUN(test_realistic_overhead_is_an_allowance);
    QT_RUN(test_param_counts_of_presets);
    QT_RUN(test_support_matrix);
    QT_RUN(test_plan_t4_weights_are_the_constraint);
    QT_RUN(test_plan_goals_and_small_models);
    QT_RUN(test_plan_nothing_fits_suggests_gpus);
    QT_RUN(test_host_targets_rank_gguf);
    QT_RUN(test_diffusion_components);
    QT_RUN(test_quantization_job_memory);
    QT_RUN(test_bad_inputs);
    QT_RUN(test_units_and_names);
    return qt_test_finish("test_plan");
}
