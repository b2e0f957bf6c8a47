/* lib/eval/run.c — the engine glue behind `quanta eval`: open the models,
 * tokenize the text once, run base and candidates over identical tokens chunk
 * by chunk (llama-perplexity's chunks), stream every scored position into
 * the comparisons, then the optional tasks (multiple choice, needle, held-out
 * check, speed) and the verdicts. Nothing is written to disk here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"
#include "quanta/bench.h"
#include "quanta/gguf.h"
#include "quanta/tokenizer.h"

/* ---- model specs -------------------------------------------------------------- */

static bool is_key_char(char c) { return (c >= 'a' && c <= 'z') || c == '-'; }

/* Does s start with "key=" for a plausible key? Then it is a settings list. */
static bool looks_like_settings(const char *s) {
    const char *p = s;
    while (is_key_char(*p)) p++;
    return p > s && *p == '=';
}

static bool kv_scaled(qt_kv_type d) { return d == QT_KV_TYPE_FP8_E4M3 || d == QT_KV_TYPE_FP8_E5M2 || d == QT_KV_TYPE_INT8; }

static qt_status spec_error(const char *spec, const char *fmt, const char *a, const char *b) {
    char why[256];
    snprintf(why, sizeof why, fmt, a, b);
    return qt_error(QT_ERR_ARG, "model '%s': %s", spec, why);
}

static qt_status apply_setting(const char *spec, const char *key, const char *val, qt_eval_model *out) {
    qt_status s;
    if (!strcmp(key, "kv")) {
        if ((s = qt_kv_type_parse(val, &out->engine.kv_type))) return spec_error(spec, "kv=%s: %s", val, qt_last_error());
    } else if (!strcmp(key, "kv-scale")) {
        if ((s = qt_kv_scale_source_parse(val, &out->engine.kv_scale_source)))
            return spec_error(spec, "kv-scale=%s: %s", val, qt_last_error());
    } else if (!strcmp(key, "kv-gran")) {
        if (!strcmp(val, "tensor")) out->engine.kv_scale_gran = QT_KV_SCALE_PER_TENSOR;
        else if (!strcmp(val, "head")) out->engine.kv_scale_gran = QT_KV_SCALE_PER_HEAD;
        else return spec_error(spec, "kv-gran=%s: expected 'tensor' or 'head'%s", val, "");
    } else if (!strcmp(key, "name")) {
        if (!*val) return spec_error(spec, "name=%s: empty name%s", val, "");
        snprintf(out->label, sizeof out->label, "%s", val);
    } else {
        return spec_error(spec, "unknown setting '%s' (known: kv, kv-scale, kv-gran, name)%s", key, "");
    }
    return QT_OK;
}

qt_status qt_eval_parse_model(const char *spec, const qt_engine_opts *defaults, qt_eval_model *out) {
    memset(out, 0, sizeof *out);
    out->engine = *defaults;
    if (!spec || !*spec) return qt_error(QT_ERR_ARG, "model: empty path");
    if (strlen(spec) >= sizeof out->path) return qt_error(QT_ERR_ARG, "model '%.40s...': path too long", spec);
    snprintf(out->label, sizeof out->label, "%s", spec);
    const char *at = NULL;
    for (const char *p = spec; (p = strchr(p, '@')); p++)
        if (looks_like_settings(p + 1)) at = p;
    size_t plen = at ? (size_t)(at - spec) : strlen(spec);
    if (plen == 0) return qt_error(QT_ERR_ARG, "model '%s': no path before '@'", spec);
    memcpy(out->path, spec, plen);
    out->path[plen] = '\0';
    if (!at) return QT_OK;
    char settings[1024];
    snprintf(settings, sizeof settings, "%s", at + 1);
    char *save = NULL;
    for (char *item = strtok_r(settings, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) return spec_error(spec, "setting '%s' is not key=value%s", item, "");
        *eq = '\0';
        qt_status s = apply_setting(spec, item, eq + 1, out);
        if (s) return s;
    }
    return QT_OK;
}

void qt_eval_opts_default(qt_eval_opts *o) {
    memset(o, 0, sizeof *o);
    o->n_ctx = 512;
    qt_eval_thresholds_default(&o->thresholds);
    qt_needle_opts_default(&o->needle_opts);
    o->task_samples = 1;
    o->task_temp = 0.8f;
}

/* ---- runners ------------------------------------------------------------------ */

typedef struct runner {
    const qt_eval_model *spec;
    qt_model *model;
    bool owns_model;       /* false: shares another runner's model (same path) */
    qt_engine_ctx *engine;
    char kv[160];
    uint64_t size_bytes;
    double bpw;
    double decode_tps, prefill_tps;
} runner;

#define MAX_WARNINGS 4

struct qt_eval_result {
    qt_eval_report report;
    qt_eval_model base_spec;
    qt_eval_model *cand_specs;     /* (n) */
    runner *runners;               /* (n + 1): base first */
    int32_t n;
    qt_eval_candidate *cands;      /* (n) */
    qt_mc_result base_mc, *mc;     /* mc: (n) */
    qt_needle_result base_needle, *needle;
    qt_heldout_result *heldout;    /* (n) */
    qt_task_set *tasks;            /* --tasks, or NULL */
    qt_task_result base_tasks, *task_res; /* task_res: (n) */
    char tasks_path[4096];
    char (*warn)[MAX_WARNINGS][QT_EVAL_REASON_LEN];
    const char *(*warn_ptr)[MAX_WARNINGS];
    char text_path[4096], mc_path[4096];
    int32_t needle_lengths[16];
    /* run state */
    qt_tokenizer *tok;
    char *text;
    size_t text_len;
    int32_t *ids;
    int32_t n_ids, n_vocab;
};

static void kv_describe(const qt_engine_opts *e, char *buf, size_t cap) {
    const char *d = qt_kv_type_name(e->kv_type);
    if (kv_scaled(e->kv_type))
        snprintf(buf, cap, "%s, scale=%s%s", d, qt_kv_scale_source_name(e->kv_scale_source),
                 e->kv_scale_gran == QT_KV_SCALE_PER_HEAD ? "/head" : "");
    else
        snprintf(buf, cap, "%s", d);
}

static void weight_size(const qt_model *m, uint64_t *bytes, double *bpw) {
    uint64_t b = 0, n = 0;
    for (int32_t i = 0; i < qt_model_n_tensors(m); i++) {
        const qt_tensor *t = qt_model_tensor(m, i);
        b += t->nbytes;
        uint64_t e = 1;
        for (int d = 0; d < QT_MAX_DIMS; d++) e *= (uint64_t)t->ne[d];
        n += e;
    }
    *bytes = b;
    *bpw = n ? 8.0 * (double)b / (double)n : NAN;
}

static bool same_vocab(const qt_vocab *a, const qt_vocab *b) {
    if (a->n_tokens != b->n_tokens || a->kind != b->kind) return false;
    for (int32_t i = 0; i < a->n_tokens; i++)
        if (strcmp(a->tokens[i], b->tokens[i]) != 0) return false;
    return true;
}

/* The last error, prefixed with the runner's label unless it already names the
 * model (the engine's messages start with the path: no "x.gguf: x.gguf: ..."). */
static qt_status labelled(qt_status s, const runner *r) {
    char why[512];
    snprintf(why, sizeof why, "%s", qt_last_error());
    const char *path = r->spec->path, *label = r->spec->label;
    const size_t np = strlen(path);
    if (!strncmp(why, label, strlen(label))) return s;
    if (!strncmp(why, path, np) && !strncmp(why + np, ": ", 2)) /* "x.gguf@kv=fp8: what", not "x.gguf@kv=fp8: x.gguf: what" */
        return qt_error(s, "%s: %s", label, why + np + 2);
    return qt_error(s, "%s: %s", label, why);
}

static qt_status open_runner(qt_eval_result *R, int32_t i, int32_t n_ctx) {
    runner *r = &R->runners[i];
    for (int32_t j = 0; j < i; j++)
        if (!strcmp(R->runners[j].spec->path, r->spec->path)) { r->model = R->runners[j].model; break; }
    if (!r->model) {
        qt_status s = qt_model_open(r->spec->path, &r->model);
        if (s) return s;
        r->owns_model = true;
    }
    if (i > 0 && !same_vocab(qt_model_vocab(R->runners[0].model), qt_model_vocab(r->model)))
        return qt_error(QT_ERR_UNSUPPORTED, "%s: its vocabulary differs from the base's (%s); models must share one to be "
                        "compared token by token", r->spec->path, R->runners[0].spec->path);
    qt_engine_opts eo = r->spec->engine;
    eo.n_ctx = n_ctx;
    qt_status s = qt_engine_new(r->model, &eo, &r->engine);
    if (s) return labelled(s, r);
    kv_describe(&eo, r->kv, sizeof r->kv);
    weight_size(r->model, &r->size_bytes, &r->bpw);
    r->decode_tps = r->prefill_tps = NAN;
    return QT_OK;
}

/* ---- perplexity and the per-token comparison -------------------------------- */

/* One chunk through one model: the first n_ctx-1 tokens (the last token's
 * logits score nothing), logits of positions first .. n_ctx-2 into rows. */
static qt_status eval_chunk(runner *r, const int32_t *chunk, int32_t n_ctx, int32_t first, float *rows) {
    qt_engine_reset(r->engine);
    qt_status s = qt_engine_eval(r->engine, chunk, n_ctx - 1, first, rows);
    return s ? labelled(s, r) : QT_OK;
}

static qt_status run_comparison(qt_eval_result *R, const qt_eval_opts *o, qt_eval_cmp **cmp, int32_t n_chunks) {
    const int32_t c = o->n_ctx, first = c / 2, n_rows = c - 1 - first, V = R->n_vocab;
    const qt_vocab *voc = qt_model_vocab(R->runners[0].model);
    const int32_t bos = voc->add_bos ? voc->bos_id : -1;
    float *base_rows = malloc(sizeof(float) * (size_t)n_rows * (size_t)V);
    float *cand_rows = malloc(sizeof(float) * (size_t)n_rows * (size_t)V);
    int32_t *chunk = malloc(sizeof(int32_t) * (size_t)c);
    qt_status s = QT_OK;
    if (!base_rows || !cand_rows || !chunk) s = qt_error(QT_ERR_NOMEM, "eval: out of memory for %d x %d logits", (int)n_rows, (int)V);
    for (int32_t k = 0; k < R->n && !s; k++) s = qt_eval_cmp_reserve(cmp[k], (int64_t)n_chunks * n_rows);
    for (int32_t ch = 0; ch < n_chunks && !s; ch++) {
        if (qt_cancelled()) { s = qt_error(QT_ERR_INTERRUPTED, "eval: interrupted"); break; }
        memcpy(chunk, R->ids + (int64_t)ch * c, sizeof(int32_t) * (size_t)c);
        if (bos >= 0) chunk[0] = bos; /* llama-perplexity: every chunk starts with BOS */
        if ((s = eval_chunk(&R->runners[0], chunk, c, first, base_rows))) break;
        for (int32_t k = 0; k < R->n && !s; k++) {
            if ((s = eval_chunk(&R->runners[k + 1], chunk, c, first, cand_rows))) break;
            for (int32_t j = 0; j < n_rows && !s; j++)
                s = qt_eval_cmp_add(cmp[k], base_rows + (size_t)j * V, cand_rows + (size_t)j * V, chunk[first + j + 1]);
            qt_eval_cmp_end_chunk(cmp[k]);
        }
        qt_progress_report(&o->progress, "eval", ch + 1, n_chunks);
    }
    free(base_rows);
    free(cand_rows);
    free(chunk);
    return s;
}

/* ---- scoring continuations (multiple choice, needle) ------------------------- */

typedef struct scorer {
    runner *r;
    const qt_tokenizer *tok;
    int32_t n_ctx, n_vocab;
    bool add_bos;      /* as the vocabulary asks (and llama-perplexity does) */
    float *rows;       /* (n_ctx, n_vocab) */
    double *logp;      /* (n_vocab) */
} scorer;

static qt_status count_tokens(void *user, const char *text, int32_t *n) {
    scorer *sc = user;
    int32_t *ids;
    qt_status s = qt_tokenize(sc->tok, text, strlen(text), false, &ids, n);
    if (s) return s;
    free(ids);
    return QT_OK;
}

static qt_status score_continuation(void *user, const char *context, const char *cont, qt_eval_score *out) {
    scorer *sc = user;
    memset(out, 0, sizeof *out);
    size_t lc = strlen(context), lk = strlen(cont);
    char *full = malloc(lc + lk + 1);
    if (!full) return qt_error(QT_ERR_NOMEM, "eval: out of memory");
    memcpy(full, context, lc);
    memcpy(full + lc, cont, lk + 1);
    int32_t *a = NULL, *b = NULL, na = 0, nb = 0;
    qt_status s = qt_tokenize(sc->tok, context, lc, sc->add_bos, &a, &na);
    if (!s) s = qt_tokenize(sc->tok, full, lc + lk, sc->add_bos, &b, &nb);
    free(full);
    /* the continuation's tokens: those after the longest common prefix with the context's own */
    int32_t p = 0;
    if (!s) {
        while (p < na && p < nb && a[p] == b[p]) p++;
        if (p < 1) p = 1; /* never score the first token: nothing predicts it */
        if (p >= nb) s = qt_error(QT_ERR_ARG, "eval: continuation \"%.40s\" adds no tokens to its context", cont);
        else if (nb > sc->n_ctx)
            s = qt_error(QT_ERR_ARG, "eval: context and continuation take %d tokens, more than the context of %d "
                         "(\"%.40s...\")", (int)nb, (int)sc->n_ctx, context);
    }
    if (!s) {
        qt_engine_reset(sc->r->engine);
        s = qt_engine_eval(sc->r->engine, b, nb - 1, p - 1, sc->rows);
    }
    if (!s) {
        out->greedy = true;
        out->n_tokens = nb - p;
        for (int32_t i = 0; i < nb - p && !s; i++) {
            const float *row = sc->rows + (size_t)i * sc->n_vocab;
            int32_t target = b[p + i];
            if ((s = qt_eval_log_softmax(row, sc->n_vocab, sc->logp))) break;
            out->logprob += sc->logp[target];
            if (qt_eval_argmax(row, sc->n_vocab) != target) out->greedy = false;
        }
    }
    free(a);
    free(b);
    return s;
}

static qt_status scorer_init(scorer *sc, qt_eval_result *R, runner *r, int32_t n_ctx) {
    sc->r = r;
    sc->tok = R->tok;
    sc->n_ctx = n_ctx;
    sc->n_vocab = R->n_vocab;
    sc->add_bos = qt_model_vocab(R->runners[0].model)->add_bos;
    sc->rows = malloc(sizeof(float) * (size_t)n_ctx * (size_t)R->n_vocab);
    sc->logp = malloc(sizeof(double) * (size_t)R->n_vocab);
    if (!sc->rows || !sc->logp) return qt_error(QT_ERR_NOMEM, "eval: out of memory for scoring");
    return QT_OK;
}

static void scorer_free(scorer *sc) {
    free(sc->rows);
    free(sc->logp);
}

/* The task runner's context: the scorer first, so score_continuation reads it as one. */
typedef struct task_gen {
    scorer sc;
    const qt_task_set *set;
    const qt_eval_opts *o;
    const qt_vocab *voc;
} task_gen;

/* Greedy for one sample; else sample k of item i from seed + the item's index and k,
 * so an item's outputs do not depend on the items before it. */
static qt_status gen_item(void *user, const qt_task_item *it, int32_t k, char **text, bool *infra) {
    task_gen *g = user;
    *infra = false;
    const int64_t i = it - g->set->items;
    qt_sampler_opts so = {.temp = g->o->task_samples > 1 ? g->o->task_temp : 0.0f, .top_p = 1.0f,
                          .seed = g->o->task_seed + (uint64_t)i * 1000003u + (uint64_t)k};
    qt_sampler *smp;
    qt_status s = qt_sampler_new(&so, g->sc.n_vocab, &smp);
    if (s) return s;
    s = qt__task_generate(g->sc.r->engine, g->sc.tok, g->voc, smp, it, g->sc.rows, text);
    qt_sampler_free(smp);
    return s ? labelled(s, g->sc.r) : QT_OK;
}

/* Choice checks on the engine: always scored (a failure is an error, never a miss). */
static qt_status score_task(void *user, const char *context, const char *cont, qt_eval_score *out, qt_task_miss *miss) {
    (void)miss;
    return score_continuation(user, context, cont, out);
}

static qt_status run_task_file(qt_eval_result *R, const qt_eval_opts *o, int32_t i, scorer *sc) {
    task_gen g = {.sc = *sc, .set = R->tasks, .o = o, .voc = qt_model_vocab(R->runners[i].model)};
    return qt_tasks_run(R->tasks, o->task_samples > 0 ? o->task_samples : 1, gen_item, score_task, &g, &o->progress,
                        i == 0 ? &R->base_tasks : &R->task_res[i - 1]);
}

/* The verdict on a candidate's tasks: a pass-rate fall beyond the threshold fails;
 * items lost to infrastructure need review. */
static void judge_tasks(qt_eval_result *R, const qt_eval_opts *o, int32_t k) {
    const qt_task_result *b = &R->base_tasks, *c = &R->task_res[k];
    double drop = 100.0 * (b->pass_rate - c->pass_rate);
    qt_eval_verdict *v = &R->cands[k].verdict;
    if (!isnan(o->thresholds.max_pass_drop_pct) && drop > o->thresholds.max_pass_drop_pct)
        qt_eval_verdict_note(v, QT_VERDICT_FAIL, "tasks: pass rate %.1f %% vs base %.1f %%, a drop of %.1f points exceeds "
                             "--max-pass-drop-pct %g", 100 * c->pass_rate, 100 * b->pass_rate, drop, o->thresholds.max_pass_drop_pct);
    if (b->n_infra || c->n_infra)
        qt_eval_verdict_note(v, QT_VERDICT_REVIEW, "tasks: %d item(s) failed by infrastructure (base %d)", (int)c->n_infra,
                             (int)b->n_infra);
}

static qt_status run_tasks(qt_eval_result *R, const qt_eval_opts *o, const qt_mc_set *mc) {
    qt_needle_opts no = o->needle_opts;
    if (o->needle) {
        /* lengths must leave room for BOS and the key's tokens */
        int32_t k = 0;
        for (int32_t i = 0; i < no.n_lengths && k < 16; i++)
            if (no.lengths[i] + 8 <= o->n_ctx) R->needle_lengths[k++] = no.lengths[i];
        if (k == 0) R->needle_lengths[k++] = o->n_ctx - 8;
        no.lengths = R->needle_lengths;
        no.n_lengths = k;
    }
    qt_status s = QT_OK;
    for (int32_t i = 0; i <= R->n && !s; i++) {
        scorer sc;
        memset(&sc, 0, sizeof sc);
        s = scorer_init(&sc, R, &R->runners[i], o->n_ctx);
        if (!s && mc) s = qt_mc_run(mc, score_continuation, &sc, &o->progress, i == 0 ? &R->base_mc : &R->mc[i - 1]);
        if (!s && o->needle)
            s = qt_needle_run(R->text, R->text_len, &no, count_tokens, score_continuation, &sc, &o->progress,
                              i == 0 ? &R->base_needle : &R->needle[i - 1]);
        if (!s && R->tasks) s = run_task_file(R, o, i, &sc);
        scorer_free(&sc);
    }
    return s;
}

/* ---- held-out check ------------------------------------------------------------ */


/* Bytes of the text the scored chunks cover (the pieces of their tokens, BOS excluded). */
static uint64_t evaluated_bytes(const qt_eval_result *R, int64_t n_tokens) {
    uint64_t n = 0;
    char buf[256];
    for (int64_t i = 0; i < n_tokens && i < R->n_ids; i++) {
        int32_t k = qt_token_to_piece(R->tok, R->ids[i], buf, sizeof buf);
        if (k > 0) n += (uint64_t)k;
    }
    return n < R->text_len ? n : R->text_len;
}

/* Every task prompt (a chat's contents) joined by blank lines: the tasks' text for the held-out check. */
static qt_status tasks_text(const qt_task_set *set, char **out, size_t *len) {
    qt__sbuf b = {0};
    for (int32_t i = 0; i < set->n_items; i++) {
        const qt_task_item *it = &set->items[i];
        if (it->prompt) { qt__sb_puts(&b, it->prompt); qt__sb_puts(&b, "\n\n"); continue; }
        json_t *msgs = json_loads(it->messages, 0, NULL), *m;
        size_t j;
        json_array_foreach(msgs, j, m) {
            qt__sb_puts(&b, json_string_value(json_object_get(m, "content")));
            qt__sb_puts(&b, "\n\n");
        }
        json_decref(msgs);
    }
    *len = b.n;
    return qt__sb_finish(&b, out, "tasks");
}

/* The held-out rule for task prompts: as for the evaluation text, a warning, a failure with --strict. */
/* A held-out overlap: a failure with --strict, else one of the candidate's warnings. */
static void heldout_note(qt_eval_result *R, const qt_eval_opts *o, int32_t k, const char *msg) {
    qt_eval_candidate *c = &R->cands[k];
    if (o->strict) {
        qt_eval_verdict_note(&c->verdict, QT_VERDICT_FAIL, "%s; --strict", msg);
    } else if (c->n_warnings < MAX_WARNINGS) {
        snprintf(R->warn[k][c->n_warnings], QT_EVAL_REASON_LEN, "%s", msg);
        R->warn_ptr[k][c->n_warnings] = R->warn[k][c->n_warnings];
        c->n_warnings++;
    }
}

static qt_status check_tasks_heldout(qt_eval_result *R, const qt_eval_opts *o, int32_t k, const qt_calib_fingerprint *fp) {
    char *text;
    size_t len;
    qt_heldout_result h;
    qt_status s = tasks_text(R->tasks, &text, &len);
    if (!s) s = qt_heldout_check(fp, text, len, len, &h);
    free(text);
    if (s || !h.overlaps) return s;
    char msg[QT_EVAL_REASON_LEN];
    snprintf(msg, sizeof msg, "the task prompts overlap the candidate's calibration text (%.1f %% of their 13-word shingles)",
             100.0 * h.overlap);
    heldout_note(R, o, k, msg);
    return QT_OK;
}

static qt_status check_heldout(qt_eval_result *R, const qt_eval_opts *o, int32_t k, uint64_t used) {
    runner *r = &R->runners[k + 1];
    qt_eval_candidate *c = &R->cands[k];
    qt_calib_fingerprint fp;
    bool has;
    qt_status s = qt_calib_from_model(r->model, &fp, &has);
    if (s || !has) return s;
    s = qt_heldout_check(&fp, R->text, R->text_len, used, &R->heldout[k]);
    if (!s && R->tasks) s = check_tasks_heldout(R, o, k, &fp);
    qt_calib_fingerprint_free(&fp);
    if (s) return s;
    c->heldout = &R->heldout[k];
    if (!R->heldout[k].overlaps) return QT_OK;
    char msg[QT_EVAL_REASON_LEN];
    snprintf(msg, sizeof msg, "the evaluation text overlaps the candidate's calibration text (%.1f %% of the evaluated %s)",
             100.0 * R->heldout[k].overlap, R->heldout[k].same_file ? "bytes" : "13-word shingles");
    heldout_note(R, o, k, msg);
    return QT_OK;
}

/* ---- speed: the bench's timed run (lib/bench/bench.c) on the evaluation text ---- */

static qt_status bench_one(qt_eval_result *R, runner *r, int32_t n_ctx) {
    int32_t n_pre = n_ctx > 128 ? n_ctx - 64 : n_ctx / 2, n_dec = n_ctx - n_pre;
    if (n_dec > 64) n_dec = 64;
    if (n_pre > R->n_ids) n_pre = R->n_ids;
    double *itl = malloc(sizeof(double) * (size_t)(n_dec > 0 ? n_dec : 1)), pre = 0, dec = 0;
    if (!itl) return qt_error(QT_ERR_NOMEM, "bench: out of memory");
    qt_status s = qt_bench_engine_run(r->engine, R->ids, n_pre, n_dec, &pre, itl);
    for (int32_t i = 0; i < n_dec; i++) dec += itl[i];
    if (!s) r->prefill_tps = n_pre / fmax(pre, 1e-9);
    if (!s && n_dec > 0) r->decode_tps = n_dec / fmax(dec, 1e-9);
    free(itl);
    return s;
}

/* ---- the whole run ------------------------------------------------------------- */

static qt_status alloc_result(qt_eval_result **out, int32_t n) {
    qt_eval_result *R = calloc(1, sizeof *R);
    if (!R) return qt_error(QT_ERR_NOMEM, "eval: out of memory");
    *out = R;
    R->n = n;
    R->cand_specs = calloc((size_t)n, sizeof *R->cand_specs);
    R->runners = calloc((size_t)n + 1, sizeof *R->runners);
    R->cands = calloc((size_t)n, sizeof *R->cands);
    R->mc = calloc((size_t)n, sizeof *R->mc);
    R->needle = calloc((size_t)n, sizeof *R->needle);
    R->heldout = calloc((size_t)n, sizeof *R->heldout);
    R->task_res = calloc((size_t)n, sizeof *R->task_res);
    R->warn = calloc((size_t)n, sizeof *R->warn);
    R->warn_ptr = calloc((size_t)n, sizeof *R->warn_ptr);
    if (!R->cand_specs || !R->runners || !R->cands || !R->mc || !R->needle || !R->heldout || !R->task_res || !R->warn || !R->warn_ptr)
        return qt_error(QT_ERR_NOMEM, "eval: out of memory");
    return QT_OK;
}

static qt_status tokenize_text(qt_eval_result *R) {
    qt_status s;
    const qt_vocab *v = qt_model_vocab(R->runners[0].model);
    s = qt_tokenizer_new(v, &R->tok);
    if (s) return s;
    /* as llama-perplexity: BOS first when the vocabulary asks for it */
    return qt_tokenize(R->tok, R->text, R->text_len, v->add_bos, &R->ids, &R->n_ids);
}

/* A task file with chat items needs every model's chat template. */
static qt_status tasks_need_template(const qt_eval_result *R) {
    int32_t chat = -1;
    for (int32_t i = 0; R->tasks && i < R->tasks->n_items && chat < 0; i++)
        if (R->tasks->items[i].messages) chat = i;
    for (int32_t i = 0; chat >= 0 && i <= R->n; i++)
        if (!qt_model_vocab(R->runners[i].model)->chat_template)
            return qt_error(QT_ERR_UNSUPPORTED, "%s: no chat template, and %s:%lld (item '%s') has messages", R->runners[i].spec->label,
                            R->tasks_path, (long long)R->tasks->items[chat].line, R->tasks->items[chat].id);
    return QT_OK;
}

static void fill_info(qt_eval_model_info *info, const runner *r) {
    info->label = r->spec->label;
    info->path = r->spec->path;
    info->kv = r->kv;
    info->size_bytes = r->size_bytes;
    info->bpw = r->bpw;
    info->decode_tps = r->decode_tps;
    info->prefill_tps = r->prefill_tps;
}

qt_status qt_eval_run(const qt_eval_model *base, const qt_eval_model *cands, int32_t n_cands, const char *text_path,
                      const qt_eval_opts *o, qt_eval_result **out) {
    *out = NULL;
    if (n_cands < 1) return qt_error(QT_ERR_ARG, "eval: no candidate to compare with the base");
    if (o->n_ctx < 8) return qt_error(QT_ERR_ARG, "eval: context %d is too short (at least 8)", (int)o->n_ctx);
    qt_eval_result *R = NULL;
    qt_status s = alloc_result(&R, n_cands);
    qt_mc_set *mc = NULL;
    qt_eval_cmp **cmp = NULL;
    if (s) goto done;
    R->base_spec = *base;
    memcpy(R->cand_specs, cands, sizeof *cands * (size_t)n_cands);
    snprintf(R->text_path, sizeof R->text_path, "%s", text_path);
    if (o->mc_path) {
        snprintf(R->mc_path, sizeof R->mc_path, "%s", o->mc_path);
        if ((s = qt_mc_load(o->mc_path, &mc))) goto done; /* a bad item file fails before any model runs */
    }
    if (o->tasks_path) {
        snprintf(R->tasks_path, sizeof R->tasks_path, "%s", o->tasks_path);
        if ((s = qt_tasks_load(o->tasks_path, &R->tasks))) goto done; /* a bad task file fails before any model runs */
    }
    if ((s = qt_read_file(text_path, &R->text, &R->text_len))) goto done; /* before the (slow) model loading */
    R->runners[0].spec = &R->base_spec;
    for (int32_t i = 0; i < n_cands; i++) R->runners[i + 1].spec = &R->cand_specs[i];
    for (int32_t i = 0; i <= n_cands && !s; i++) s = open_runner(R, i, o->n_ctx);
    if (s) goto done;
    R->n_vocab = qt_engine_n_vocab(R->runners[0].engine);
    if ((s = tasks_need_template(R))) goto done; /* before any generation */
    if ((s = tokenize_text(R))) goto done;

    int32_t total = R->n_ids / o->n_ctx;
    if (total == 0) {
        s = qt_error(QT_ERR_ARG, "%s: %d tokens, fewer than one chunk of %d (-c)", text_path, (int)R->n_ids, (int)o->n_ctx);
        goto done;
    }
    int32_t n_chunks = o->n_chunks > 0 && o->n_chunks < total ? o->n_chunks : total;
    cmp = calloc((size_t)n_cands, sizeof *cmp);
    if (!cmp) { s = qt_error(QT_ERR_NOMEM, "eval: out of memory"); goto done; }
    for (int32_t k = 0; k < n_cands && !s; k++) s = qt_eval_cmp_new(R->n_vocab, &cmp[k]);
    if (!s) s = run_comparison(R, o, cmp, n_chunks);
    for (int32_t k = 0; k < n_cands && !s; k++) {
        if ((s = qt_eval_cmp_summary(cmp[k], &R->cands[k].summary))) break;
        qt_eval_judge(&R->cands[k].summary, &o->thresholds, &R->cands[k].verdict);
    }
    if (s) goto done;
    uint64_t used = evaluated_bytes(R, (int64_t)n_chunks * o->n_ctx);
    for (int32_t k = 0; k < n_cands && !s; k++) {
        R->cands[k].warnings = R->warn_ptr[k];
        s = check_heldout(R, o, k, used);
    }
    if (!s && (mc || o->needle || R->tasks)) s = run_tasks(R, o, mc);
    for (int32_t k = 0; k < n_cands && !s && R->tasks; k++) judge_tasks(R, o, k);
    for (int32_t i = 0; i <= n_cands && !s && o->bench; i++) s = bench_one(R, &R->runners[i], o->n_ctx);
    if (s) goto done;

    qt_eval_report *rep = &R->report;
    fill_info(&rep->base, &R->runners[0]);
    for (int32_t k = 0; k < n_cands; k++) {
        fill_info(&R->cands[k].info, &R->runners[k + 1]);
        if (mc) R->cands[k].mc = &R->mc[k];
        if (o->needle) R->cands[k].needle = &R->needle[k];
        if (R->tasks) R->cands[k].tasks = &R->task_res[k];
    }
    rep->task_set = R->tasks;
    rep->base_tasks = R->tasks ? &R->base_tasks : NULL;
    rep->tasks_path = R->tasks ? R->tasks_path : NULL;
    rep->base_mc = mc ? &R->base_mc : NULL;
    rep->base_needle = o->needle ? &R->base_needle : NULL;
    rep->text_path = R->text_path;
    rep->n_ctx = o->n_ctx;
    rep->n_chunks = n_chunks;
    rep->mc_path = mc ? R->mc_path : NULL;
    rep->thresholds = o->thresholds;
    rep->strict = o->strict;
    rep->n_candidates = n_cands;
    rep->candidates = R->cands;

done:
    if (cmp) for (int32_t k = 0; k < n_cands; k++) qt_eval_cmp_free(cmp[k]);
    free(cmp);
    qt_mc_free(mc);
    if (s) { qt_eval_result_free(R); return s; }
    *out = R;
    return QT_OK;
}

const qt_eval_report *qt_eval_result_report(const qt_eval_result *r) { return &r->report; }

void qt_eval_result_free(qt_eval_result *R) {
    if (!R) return;
    if (R->runners) {
        for (int32_t i = 0; i <= R->n; i++) qt_engine_free(R->runners[i].engine); /* engines before the models they use */
        for (int32_t i = 0; i <= R->n; i++)
            if (R->runners[i].owns_model) qt_model_free(R->runners[i].model);
    }
    qt_mc_result_free(&R->base_mc);
    qt_needle_result_free(&R->base_needle);
    qt_task_result_free(&R->base_tasks);
    for (int32_t k = 0; k < R->n && R->task_res; k++) qt_task_result_free(&R->task_res[k]);
    free(R->task_res);
    qt_tasks_free(R->tasks);
    for (int32_t k = 0; k < R->n && R->mc; k++) qt_mc_result_free(&R->mc[k]);
    for (int32_t k = 0; k < R->n && R->needle; k++) qt_needle_result_free(&R->needle[k]);
    qt_tokenizer_free(R->tok);
    free(R->text);
    free(R->ids);
    free(R->cand_specs);
    free(R->runners);
    free(R->cands);
    free(R->mc);
    free(R->needle);
    free(R->heldout);
    free(R->warn);
    free(R->warn_ptr);
    free(R);
}

/* ---- one local model's task run (a mix of local models and servers) ------------ */

qt_status qt_tasks_run_model(const qt_eval_model *m, const qt_task_set *set, const qt_eval_opts *o, qt_task_result *out) {
    memset(out, 0, sizeof *out);
    if (o->n_ctx < 8) return qt_error(QT_ERR_ARG, "eval: context %d is too short (at least 8)", (int)o->n_ctx);
    runner r = {.spec = m};
    scorer sc = {.r = &r, .n_ctx = o->n_ctx};
    qt_tokenizer *tok = NULL;
    qt_status s = qt_model_open(m->path, &r.model);
    const qt_vocab *v = s ? NULL : qt_model_vocab(r.model);
    for (int32_t i = 0; !s && i < set->n_items; i++)
        if (set->items[i].messages && !v->chat_template)
            s = qt_error(QT_ERR_UNSUPPORTED, "%s: no chat template, and item '%s' (line %lld) has messages", m->label,
                         set->items[i].id, (long long)set->items[i].line);
    if (!s) s = qt_tokenizer_new(v, &tok);
    if (!s) {
        qt_engine_opts eo = m->engine;
        eo.n_ctx = o->n_ctx;
        if ((s = qt_engine_new(r.model, &eo, &r.engine))) s = labelled(s, &r);
    }
    if (!s) {
        sc.tok = tok, sc.n_vocab = qt_engine_n_vocab(r.engine), sc.add_bos = v->add_bos;
        sc.rows = malloc(sizeof(float) * (size_t)sc.n_ctx * (size_t)sc.n_vocab);
        sc.logp = malloc(sizeof(double) * (size_t)sc.n_vocab);
        if (!sc.rows || !sc.logp) s = qt_error(QT_ERR_NOMEM, "eval: out of memory for scoring");
    }
    if (!s) {
        task_gen g = {.sc = sc, .set = set, .o = o, .voc = v};
        s = qt_tasks_run(set, o->task_samples > 0 ? o->task_samples : 1, gen_item, score_task, &g, &o->progress, out);
    }
    scorer_free(&sc);
    qt_tokenizer_free(tok);
    qt_engine_free(r.engine);
    qt_model_free(r.model);
    return s;
}
