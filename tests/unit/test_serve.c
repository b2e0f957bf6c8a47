/* lib/serve: request bodies (every field and every refusal, with its HTTP
 * status), the chat templates (layout, detection from a model's Jinja text,
 * refusals), and the scheduler on stories260K: jobs run concurrently on 3
 * slots, with prompts admitted while others decode, each get exactly the
 * greedy tokens qt_engine_eval gives them alone; a queue beyond its limit
 * refuses; a cancelled job ends as cancelled and the others go on. */
#include <pthread.h>
#include <unistd.h>

#include "qtest.h"
#include "quanta.h"

static qt_status parse(const char *body, qt_serve_kind kind, qt_serve_request *r, int *http) {
    return qt_serve_request_parse(body, strlen(body), kind, QT_CHAT_CHATML, NULL, r, http);
}

static void test_request_fields(void) {
    qt_serve_request r;
    int http = 0;
    CHECK_OK(parse("{\"model\":\"m\",\"prompt\":\"Hello\",\"max_tokens\":7,\"temperature\":0,\"top_p\":0.5,\"top_k\":3,"
                   "\"seed\":9,\"stream\":true,\"stream_options\":{\"include_usage\":true},\"ignore_eos\":true,"
                   "\"logprobs\":null,\"frequency_penalty\":0}", QT_SERVE_COMPLETION, &r, &http));
    CHECK_EQ_STR(r.model, "m");
    CHECK_EQ_STR(r.prompt, "Hello");
    CHECK_EQ_INT(r.max_tokens, 7);
    CHECK(r.temperature == 0.0f && r.top_p == 0.5f && r.top_k == 3 && r.seed == 9);
    CHECK(r.stream && r.include_usage && r.ignore_eos);
    qt_serve_request_free(&r);
    /* defaults: OpenAI's temperature and top_p, seed 42, max_tokens unset */
    CHECK_OK(parse("{\"prompt\":[\"Hi\"],\"max_tokens\":16.0}", QT_SERVE_COMPLETION, &r, &http));
    CHECK(r.model == NULL && r.temperature == 1.0f && r.top_p == 1.0f && r.seed == 42 && !r.stream);
    CHECK_EQ_INT(r.max_tokens, 16);
    qt_serve_request_free(&r);
    CHECK_OK(parse("{\"prompt\":[1,2,3]}", QT_SERVE_COMPLETION, &r, &http));
    CHECK(r.prompt == NULL && r.n_prompt_ids == 3 && r.prompt_ids[2] == 3 && r.max_tokens == -1);
    CHECK(!r.echo && r.logprobs == -1);
    qt_serve_request_free(&r);
    /* an echo with logprobs and no new token: how `quanta eval` scores a choice */
    CHECK_OK(parse("{\"prompt\":\"a b\",\"echo\":true,\"logprobs\":1,\"max_tokens\":0}", QT_SERVE_COMPLETION, &r, &http));
    CHECK(r.echo && r.logprobs == 1 && r.max_tokens == 0);
    qt_serve_request_free(&r);
    CHECK_OK(parse("{\"prompt\":\"a\",\"logprobs\":0}", QT_SERVE_COMPLETION, &r, &http));
    CHECK(!r.echo && r.logprobs == 0);
    qt_serve_request_free(&r);
    /* chat: logprobs false is no request for them */
    CHECK_OK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"logprobs\":false}", QT_SERVE_CHAT, &r, &http));
    CHECK_EQ_INT(r.logprobs, -1);
    qt_serve_request_free(&r);
}

static void test_request_refusals(void) {
    static const struct { const char *body; qt_serve_kind kind; const char *needle; } bad[] = {
        {"{\"prompt\": ", QT_SERVE_COMPLETION, "not valid JSON"},
        {"[1]", QT_SERVE_COMPLETION, "JSON object"},
        {"{\"prompt\":\"a\",\"prompt\":\"b\"}", QT_SERVE_COMPLETION, "not valid JSON"},
        {"{}", QT_SERVE_COMPLETION, "'prompt'"},
        {"{\"prompt\":[\"a\",\"b\"]}", QT_SERVE_COMPLETION, "'prompt'"},
        {"{\"prompt\":[1,-2]}", QT_SERVE_COMPLETION, "'prompt'"},
        {"{\"prompt\":\"a\",\"max_tokens\":-1}", QT_SERVE_COMPLETION, "'max_tokens' must be an integer in [0,"},
        {"{\"prompt\":\"a\",\"max_tokens\":\"8\"}", QT_SERVE_COMPLETION, "'max_tokens' must be an integer"},
        {"{\"prompt\":\"a\",\"max_tokens\":1.5}", QT_SERVE_COMPLETION, "'max_tokens'"},
        {"{\"prompt\":\"a\",\"temperature\":-1}", QT_SERVE_COMPLETION, "'temperature'"},
        {"{\"prompt\":\"a\",\"top_p\":0}", QT_SERVE_COMPLETION, "'top_p'"},
        {"{\"prompt\":\"a\",\"n\":2}", QT_SERVE_COMPLETION, "'n'"},
        {"{\"prompt\":\"a\",\"stream\":1}", QT_SERVE_COMPLETION, "'stream'"},
        {"{\"prompt\":\"a\",\"stop\":\"x\"}", QT_SERVE_COMPLETION, "'stop'"},
        {"{\"prompt\":\"a\",\"logprobs\":6}", QT_SERVE_COMPLETION, "'logprobs' must be an integer in [0, 5]"},
        {"{\"prompt\":\"a\",\"logprobs\":true}", QT_SERVE_COMPLETION, "'logprobs' must be an integer"},
        {"{\"prompt\":\"a\",\"echo\":1}", QT_SERVE_COMPLETION, "'echo'"},
        {"{\"prompt\":\"a\",\"logprobs\":1,\"stream\":true}", QT_SERVE_COMPLETION, "streamed"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logprobs\":true}", QT_SERVE_CHAT, "chat completions"},
        {"{\"prompt\":\"a\",\"model\":3}", QT_SERVE_COMPLETION, "'model'"},
        {"{\"prompt\":\"a\",\"stream_options\":[]}", QT_SERVE_COMPLETION, "'stream_options'"},
        {"{\"prompt\":\"a\\u0000b\"}", QT_SERVE_COMPLETION, "NUL"},
        {"{\"messages\":[]}", QT_SERVE_CHAT, "'messages'"},
        {"{\"messages\":[{\"content\":\"x\"}]}", QT_SERVE_CHAT, "messages[0].role"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":3}]}", QT_SERVE_CHAT, "messages[0].content"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}", QT_SERVE_CHAT, "text parts"},
        {"{\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}", QT_SERVE_CHAT, "not system, user or assistant"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        qt_serve_request r;
        int http = 0;
        CHECK_STATUS(parse(bad[i].body, bad[i].kind, &r, &http), QT_ERR_ARG);
        CHECK_MSG(http == 400, "%s: HTTP %d", bad[i].body, http);
        CHECK_MSG(strstr(qt_last_error(), bad[i].needle) != NULL, "%s: '%s' lacks '%s'", bad[i].body, qt_last_error(),
                  bad[i].needle);
        CHECK(r.prompt == NULL && r.model == NULL);
    }
    /* chat without a template the server can render: refused, never guessed */
    qt_serve_request r;
    int http = 0;
    const char *chat = "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}";
    CHECK_STATUS(qt_serve_request_parse(chat, strlen(chat), QT_SERVE_CHAT, QT_CHAT_NONE, NULL, &r, &http), QT_ERR_UNSUPPORTED);
    CHECK_EQ_INT(http, 400);
    CHECK(strstr(qt_last_error(), "--chat-template") != NULL);
}

static void test_chat_templates(void) {
    const char *roles[] = {"system", "user", "assistant", "user"}, *text[] = {"Be brief.", "Hi", "Hello!", "Bye"};
    char *out = NULL;
    CHECK_OK(qt_chat_render(QT_CHAT_CHATML, roles, text, 4, &out));
    CHECK_EQ_STR(out, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
                      "Hello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
    free(out);
    CHECK_OK(qt_chat_render(QT_CHAT_LLAMA3, roles + 1, text + 1, 1, &out));
    CHECK_EQ_STR(out, "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
    free(out);
    CHECK_OK(qt_chat_render(QT_CHAT_LLAMA2, roles, text, 4, &out));
    CHECK_EQ_STR(out, "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] Bye [/INST]");
    free(out);
    CHECK_STATUS(qt_chat_render(QT_CHAT_NONE, roles, text, 4, &out), QT_ERR_UNSUPPORTED);
    CHECK(qt_chat_template_detect("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}") ==
          QT_CHAT_CHATML);
    CHECK(qt_chat_template_detect("<|start_header_id|>{{ role }}<|end_header_id|>{{ content }}<|eot_id|>") == QT_CHAT_LLAMA3);
    CHECK(qt_chat_template_detect("{{ bos_token }}[INST] {{ content }} [/INST]") == QT_CHAT_LLAMA2);
    CHECK(qt_chat_template_detect("{{ '<start_of_turn>' + role }}") == QT_CHAT_NONE);
    CHECK(qt_chat_template_detect(NULL) == QT_CHAT_NONE);
    qt_chat_template t;
    CHECK_OK(qt_chat_template_parse("llama3", &t));
    CHECK(t == QT_CHAT_LLAMA3);
    CHECK_STATUS(qt_chat_template_parse("jinja", &t), QT_ERR_UNSUPPORTED);
}

/* QT_CHAT_MODEL: the model's own Jinja template, with its BOS/EOS texts, any role it accepts, text
 * parts joined, chat_template_kwargs as variables; its raise_exception is a 400 naming the template */
static void test_chat_model_template(void) {
    char *tokens[] = {"<unk>", "<s>", "</s>"};
    qt_vocab v = {.n_tokens = 3, .tokens = tokens, .bos_id = 1, .eos_id = 2,
                  .chat_template = "{{ bos_token }}{% for m in messages %}{% if m.role == 'wizard' %}"
                                   "{{ raise_exception('no wizards') }}{% endif %}[{{ m.role }}|{{ m.content }}|{{ m.name }}]"
                                   "{{ eos_token }}{% endfor %}{% if add_generation_prompt %}[assistant|{% endif %}"
                                   "{% if enable_thinking is defined %}{{ enable_thinking }}{% endif %}"};
    qt_serve_request r;
    int http = 0;
    const char *body = "{\"messages\":[{\"role\":\"tool\",\"content\":\"42\",\"name\":\"calc\"},"
                       "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]}],"
                       "\"chat_template_kwargs\":{\"enable_thinking\":false}}";
    CHECK_OK(qt_serve_request_parse(body, strlen(body), QT_SERVE_CHAT, QT_CHAT_MODEL, &v, &r, &http));
    CHECK_EQ_STR(r.prompt, "<s>[tool|42|calc]</s>[user|ab|]</s>[assistant|False");
    qt_serve_request_free(&r);
    const char *wizard = "{\"messages\":[{\"role\":\"wizard\",\"content\":\"Hi\"}]}";
    CHECK_STATUS(qt_serve_request_parse(wizard, strlen(wizard), QT_SERVE_CHAT, QT_CHAT_MODEL, &v, &r, &http), QT_ERR_ARG);
    CHECK_EQ_INT(http, 400);
    CHECK(strstr(qt_last_error(), "chat template: template line 1, column") && strstr(qt_last_error(), "no wizards"));
    const char *kw = "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"chat_template_kwargs\":[1]}";
    CHECK_STATUS(qt_serve_request_parse(kw, strlen(kw), QT_SERVE_CHAT, QT_CHAT_MODEL, &v, &r, &http), QT_ERR_ARG);
    CHECK(strstr(qt_last_error(), "chat_template_kwargs") != NULL);
    v.chat_template = NULL; /* no template: refused, saying so */
    CHECK_STATUS(qt_serve_request_parse(wizard, strlen(wizard), QT_SERVE_CHAT, QT_CHAT_MODEL, &v, &r, &http), QT_ERR_UNSUPPORTED);
    CHECK(strstr(qt_last_error(), "no chat template") != NULL);
    qt_chat_template t;
    CHECK_OK(qt_chat_template_parse("model", &t));
    CHECK(t == QT_CHAT_MODEL);
}

/* ---- the scheduler ---- */

enum { N_JOBS = 5, N_GEN = 12 };

typedef struct sink {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int32_t toks[N_GEN + 1], n;
    bool done;
    qt_sched_finish why;
    int32_t n_prompt, n_gen;
} sink;

static void on_token(void *u, int32_t t) {
    sink *k = u;
    pthread_mutex_lock(&k->mu);
    if (k->n <= N_GEN) k->toks[k->n++] = t;
    pthread_mutex_unlock(&k->mu);
}

static void on_done(void *u, qt_sched_finish why, int32_t n_prompt, int32_t n_gen, const char *error) {
    sink *k = u;
    if (error) fprintf(stderr, "  job error: %s\n", error);
    pthread_mutex_lock(&k->mu);
    k->done = true, k->why = why, k->n_prompt = n_prompt, k->n_gen = n_gen;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

static void wait_done(sink *k) {
    pthread_mutex_lock(&k->mu);
    while (!k->done) pthread_cond_wait(&k->cv, &k->mu);
    pthread_mutex_unlock(&k->mu);
}

static int32_t prompt_len(int j) { return 2 + 3 * j; }
static int32_t prompt_tok(int j, int i) { return 1 + (int32_t)((j * 131 + i * 17 + 3) % 500); }

/* Greedy tokens of each job alone, through qt_engine_eval (as `quanta run` does). */
static void reference(const qt_model *m, int32_t want[N_JOBS][N_GEN], int32_t eos) {
    qt_engine_opts o;
    qt_engine_opts_default(&o);
    o.n_ctx = 64;
    o.n_threads = 2;
    o.n_batch = 4; /* the scheduler's engine's: qt_engine_eval cuts prompts into the same chunks */
    qt_engine_ctx *e;
    CHECK_OK(qt_engine_new(m, &o, &e));
    const int32_t nv = qt_engine_n_vocab(e);
    float *l = malloc((size_t)nv * sizeof *l);
    for (int j = 0; j < N_JOBS; j++) {
        int32_t p[32];
        for (int i = 0; i < prompt_len(j); i++) p[i] = prompt_tok(j, i);
        qt_engine_reset(e);
        CHECK_OK(qt_engine_eval(e, p, prompt_len(j), prompt_len(j) - 1, l));
        for (int g = 0; g < N_GEN; g++) {
            int32_t best = 0;
            for (int32_t v = 1; v < nv; v++) best = l[v] > l[best] ? v : best;
            want[j][g] = best;
            if (best == eos) break;
            CHECK_OK(qt_engine_eval(e, &best, 1, 0, l));
        }
    }
    free(l);
    qt_engine_free(e);
}

static void test_scheduler(void) {
    qt_model *m;
    CHECK_OK(qt_model_open(qt_test_shared("models/stories260K.gguf"), &m));
    if (!m) return;
    const int32_t eos = qt_model_vocab(m)->eos_id;
    int32_t want[N_JOBS][N_GEN];
    reference(m, want, eos);

    qt_engine_opts o;
    qt_engine_opts_default(&o);
    o.n_ctx = 64;
    o.n_seq = 3;
    o.n_threads = 2;
    o.n_batch = 4; /* prompts longer than 4 are read in chunks, beside the others' decodes */
    qt_engine_ctx *e;
    CHECK_OK(qt_engine_new(m, &o, &e));
    qt_sched *s;
    qt_sched_opts so = {.max_queue = N_JOBS};
    CHECK_OK(qt_sched_new(e, eos, &so, &s));
    sink sinks[N_JOBS + 2];
    uint64_t ids[N_JOBS + 2];
    for (int j = 0; j < N_JOBS + 2; j++) {
        memset(&sinks[j], 0, sizeof sinks[j]);
        pthread_mutex_init(&sinks[j].mu, NULL);
        pthread_cond_init(&sinks[j].cv, NULL);
    }
    for (int j = 0; j < N_JOBS; j++) {
        int32_t p[32];
        for (int i = 0; i < prompt_len(j); i++) p[i] = prompt_tok(j, i);
        qt_sched_job job = {.prompt = p, .n_prompt = prompt_len(j), .max_tokens = N_GEN, .sampling = {.temp = 0, .top_p = 1},
                            .on_token = on_token, .on_done = on_done, .user = &sinks[j]};
        CHECK_OK(qt_sched_submit(s, &job, &ids[j]));
    }
    for (int j = 0; j < N_JOBS; j++) wait_done(&sinks[j]);
    int mismatches = 0;
    for (int j = 0; j < N_JOBS; j++) {
        CHECK_EQ_INT(sinks[j].n_prompt, prompt_len(j));
        CHECK_MSG(sinks[j].why == QT_FINISH_LENGTH || sinks[j].why == QT_FINISH_STOP, "job %d ended %d", j, (int)sinks[j].why);
        CHECK_EQ_INT(sinks[j].n_gen, sinks[j].n);
        for (int g = 0; g < sinks[j].n; g++) mismatches += sinks[j].toks[g] != want[j][g];
    }
    CHECK_EQ_INT(mismatches, 0);

    /* a full queue refuses; a cancelled job ends as cancelled; the rest finish */
    qt_sched_stats st;
    int32_t p[4] = {1, 2, 3, 4};
    int refused = 0;
    bool was_refused[16] = {0};
    sink many[16];
    uint64_t mid[16];
    for (int j = 0; j < 16; j++) {
        memset(&many[j], 0, sizeof many[j]);
        pthread_mutex_init(&many[j].mu, NULL);
        pthread_cond_init(&many[j].cv, NULL);
        qt_sched_job job = {.prompt = p, .n_prompt = 4, .max_tokens = 40, .ignore_eos = true, .sampling = {.temp = 0, .top_p = 1},
                            .on_token = on_token, .on_done = on_done, .user = &many[j]};
        qt_status r = qt_sched_submit(s, &job, &mid[j]);
        if (r != QT_OK) {
            refused++, was_refused[j] = true;
            CHECK(r == QT_ERR_RANGE);
            many[j].done = true;
        }
    }
    CHECK(refused >= 16 - 3 - N_JOBS); /* at most 3 running + 5 queued */
    qt_sched_cancel(s, mid[0]);
    for (int j = 0; j < 16; j++) wait_done(&many[j]);
    CHECK(!was_refused[0] && many[0].why == QT_FINISH_CANCELLED);
    for (int j = 1; j < 16; j++)
        if (!was_refused[j]) CHECK_MSG(many[j].why == QT_FINISH_LENGTH && many[j].n_gen == 40, "job %d", j);
    qt_sched_get_stats(s, &st);
    CHECK_EQ_INT(st.finished[QT_FINISH_CANCELLED], 1);
    CHECK_EQ_INT(st.refused, (uint64_t)refused);
    CHECK_EQ_INT(st.running, 0);
    CHECK(st.kv_usage_max > 0.0 && st.kv_usage_max <= 1.0);
    qt_sched_drain(s);
    qt_sched_job job = {.prompt = p, .n_prompt = 4, .max_tokens = 1, .on_token = on_token, .on_done = on_done, .user = &many[0]};
    CHECK_STATUS(qt_sched_submit(s, &job, &mid[0]), QT_ERR_INTERRUPTED);
    qt_sched_free(s);
    qt_engine_free(e);
    qt_model_free(m);
}

/* ---- logprobs: an echo's prompt logprobs equal the engine's own ---------------------- */

#define LP_PROMPT 11
#define LP_GEN 3

typedef struct lp_sink {
    sink k;
    double lp[LP_PROMPT + LP_GEN];
    int32_t tok[LP_PROMPT + LP_GEN], top[LP_PROMPT + LP_GEN][3], n_top[LP_PROMPT + LP_GEN];
    double top_lp[LP_PROMPT + LP_GEN][3];
    bool set[LP_PROMPT + LP_GEN];
} lp_sink;

static void on_logprob(void *u, int32_t pos, int32_t token, double lp, const int32_t *top, const double *top_lp, int32_t n_top) {
    lp_sink *k = u; /* called on the scheduler thread before on_done, read after it */
    if (pos < 0 || pos >= LP_PROMPT + LP_GEN || n_top > 3) return;
    k->set[pos] = true, k->lp[pos] = lp, k->tok[pos] = token, k->n_top[pos] = n_top;
    for (int32_t i = 0; i < n_top; i++) k->top[pos][i] = top[i], k->top_lp[pos][i] = top_lp[i];
}

static void test_scheduler_logprobs(void) {
    qt_model *m;
    CHECK_OK(qt_model_open(qt_test_shared("models/stories260K.gguf"), &m));
    if (!m) return;
    const int32_t eos = qt_model_vocab(m)->eos_id;
    int32_t p[LP_PROMPT];
    for (int i = 0; i < LP_PROMPT; i++) p[i] = prompt_tok(1, i);
    /* the reference: qt_engine_eval over the prompt in chunks of 4, every row's log-softmax */
    qt_engine_opts o;
    qt_engine_opts_default(&o);
    o.n_ctx = 64, o.n_threads = 2, o.n_batch = 4;
    qt_engine_ctx *e;
    CHECK_OK(qt_engine_new(m, &o, &e));
    const int32_t nv = qt_engine_n_vocab(e);
    float *rows = malloc(sizeof *rows * (size_t)nv * LP_PROMPT);
    double *ref = malloc(sizeof *ref * (size_t)nv);
    CHECK_OK(qt_engine_eval(e, p, LP_PROMPT, 0, rows));
    qt_engine_free(e);

    o.n_seq = 3;
    CHECK_OK(qt_engine_new(m, &o, &e));
    qt_sched *s;
    CHECK_OK(qt_sched_new(e, eos, NULL, &s));
    /* an echo of the prompt (max_tokens 0) beside a plain job and one that also generates with logprobs */
    lp_sink echo = {0}, gen = {0};
    sink plain = {0};
    lp_sink *ls[2] = {&echo, &gen};
    for (int j = 0; j < 2; j++) pthread_mutex_init(&ls[j]->k.mu, NULL), pthread_cond_init(&ls[j]->k.cv, NULL);
    pthread_mutex_init(&plain.mu, NULL), pthread_cond_init(&plain.cv, NULL);
    uint64_t id;
    int32_t q[6] = {1, 2, 3, 4, 5, 6};
    qt_sched_job pj = {.prompt = q, .n_prompt = 6, .max_tokens = 8, .ignore_eos = true, .sampling = {.temp = 0, .top_p = 1},
                       .on_token = on_token, .on_done = on_done, .user = &plain};
    CHECK_OK(qt_sched_submit(s, &pj, &id));
    qt_sched_job ej = {.prompt = p, .n_prompt = LP_PROMPT, .max_tokens = 0, .sampling = {.temp = 0, .top_p = 1},
                       .prompt_logprobs = true, .top_logprobs = 3, .on_logprob = on_logprob,
                       .on_token = on_token, .on_done = on_done, .user = &echo};
    CHECK_OK(qt_sched_submit(s, &ej, &id));
    qt_sched_job gj = ej;
    gj.max_tokens = LP_GEN, gj.logprobs = true, gj.ignore_eos = true, gj.user = &gen;
    CHECK_OK(qt_sched_submit(s, &gj, &id));
    qt_sched_job bad = ej;
    bad.on_logprob = NULL;
    CHECK_STATUS(qt_sched_submit(s, &bad, &id), QT_ERR_ARG);
    wait_done(&echo.k), wait_done(&gen.k), wait_done(&plain);
    CHECK(echo.k.why == QT_FINISH_LENGTH && echo.k.n_gen == 0 && echo.k.n == 0);
    CHECK(gen.k.why == QT_FINISH_LENGTH && gen.k.n_gen == LP_GEN);
    CHECK(!echo.set[0] && !gen.set[0]); /* nothing predicts the first token */
    int diff = 0;
    for (int32_t pos = 1; pos < LP_PROMPT; pos++) {
        CHECK_OK(qt_eval_log_softmax(rows + (size_t)(pos - 1) * nv, nv, ref));
        for (int j = 0; j < 2; j++) {
            const lp_sink *k = ls[j];
            CHECK(k->set[pos] && k->tok[pos] == p[pos] && k->n_top[pos] == 3);
            diff += k->lp[pos] != ref[p[pos]]; /* bit for bit: the same chunks as qt_engine_eval */
            int32_t best = 0;
            for (int32_t v = 1; v < nv; v++) best = ref[v] > ref[best] ? v : best;
            diff += k->top[pos][0] != best || k->top_lp[pos][0] != ref[best];
            diff += !(k->top_lp[pos][0] >= k->top_lp[pos][1] && k->top_lp[pos][1] >= k->top_lp[pos][2]);
        }
    }
    CHECK_EQ_INT(diff, 0);
    /* generated with logprobs: each greedy token is its row's most likely, reported before on_token */
    for (int32_t g = 0; g < LP_GEN; g++) {
        const int32_t pos = LP_PROMPT + g;
        CHECK(gen.set[pos] && gen.tok[pos] == gen.k.toks[g] && gen.top[pos][0] == gen.k.toks[g] && gen.top_lp[pos][0] == gen.lp[pos]);
        CHECK(gen.lp[pos] <= 0);
    }
    CHECK(!echo.set[LP_PROMPT]);
    qt_sched_free(s);
    qt_engine_free(e);
    free(rows);
    free(ref);
    qt_model_free(m);
}

int main(void) {
    QT_RUN(test_request_fields);
    QT_RUN(test_request_refusals);
    QT_RUN(test_chat_templates);
    QT_RUN(test_chat_model_template);
    QT_RUN(test_scheduler);
    QT_RUN(test_scheduler_logprobs);
    return qt_test_finish("test_serve");
}
