/* `quanta plan`: rank the schemes that run on a target, refuse the others
 * with the reason, separate weight advice from KV-cache advice, print the
 * commands, and draw the memory figure. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "plan_cli.h"

static void help(void) {
    printf("usage: quanta plan --model M --gpu G[xN] [--goal fit|throughput|concurrency|long-context|quality]\n"
           "                   [--context L] [--concurrency C] [--json] [--svg FILE] [--html FILE]\n"
           "       quanta plan --list-models [--json[=FILE]]\n\n"
           "Ranks every scheme that runs on the hardware for the goal, says why the others do not,\n"
           "whether the constraint is the weights or the KV cache, what an 8-bit cache buys, the commands\n"
           "to get there (quanta quantize, vllm serve, llama-server), and the memory of the quantization\n"
           "job itself. GB = 1e9 bytes.\n\n"
           "  --goal G           fit (default: least lossy scheme that serves the load), throughput (decode\n"
           "                     roofline), concurrency, long-context, quality (least lossy that fits one sequence)\n"
           "  --svg FILE         the memory figure: one bar per scheme against the budget line\n"
           "  --html FILE        a self-contained report page\n"
           "  --nsamples N, --seqlen L  the calibration of the quanta job line: a local checkpoint's\n"
           "                     `quanta quantize --algo gptq` peak (default 128 x 512)\n"
           "  --list-models      the built-in model presets and their sources\n");
    plan_opts_help(stdout);
}

static int list_models_json(const cli_json *j) {
    json_t *a = json_array();
    for (int i = 0; i < qt_plan_preset_count(); i++) {
        const qt_model_spec *m = qt_plan_preset_get(i);
        qt_param_counts pc;
        if (qt_plan_param_counts(m, &pc)) pc.total = 0;
        json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:I, s:s}", "key", m->key, "name", m->display, "kind",
                                           m->kind == QT_SPEC_LLM ? "llm" : "diffusion", "parameters",
                                           (json_int_t)pc.total, "source", m->source));
    }
    return cli_json_emit_tree(j, a, 0, "plan");
}

static void list_models(void) {
    char a[32];
    printf("%-16s %-26s %16s  %s\n", "preset", "name", "parameters", "source");
    for (int i = 0; i < qt_plan_preset_count(); i++) {
        const qt_model_spec *m = qt_plan_preset_get(i);
        qt_param_counts pc;
        if (qt_plan_param_counts(m, &pc)) pc.total = 0;
        printf("%-16s %-26s %16s  %s\n", m->key, m->display, fmt_count((double)pc.total, a, sizeof a), m->source);
    }
}

static const char *runtime_name(qt_runtime e) {
    return e == QT_RUNTIME_LLAMACPP ? "llama.cpp" : (e == QT_RUNTIME_BNB ? "vllm+bnb" : "vllm");
}

static void print_header(const qt_plan *p) {
    const qt_estimate_req *r = &p->req;
    const qt_model_spec *m = r->model;
    char a[48], b[48], c[48];
    const qt_estimate *e0 = &p->rows[0].est;
    if (r->hw) {
        char cc[64] = "";
        if (r->hw->cc) snprintf(cc, sizeof cc, ", compute capability %d.%d", r->hw->cc / 10, r->hw->cc % 10);
        printf("quanta plan: %s on %s%s%s (%s%s, %s %s%s%s)\n", m->display, r->n_gpus > 1 ? fmt_count(r->n_gpus, a, sizeof a) : "",
               r->n_gpus > 1 ? " x " : "", r->hw->name, qt_hw_class_name(r->hw->cls), cc,
               fmt_gb(r->hw->mem_gb * 1e9, b, sizeof b), r->hw->mem_type, r->hw->bw_gbs > 0 ? ", " : "",
               r->hw->bw_gbs > 0 ? (snprintf(c, sizeof c, "%.0f GB/s", r->hw->bw_gbs), c) : "");
    } else {
        printf("quanta plan: %s on a %s device (no hardware named: support not checked)\n", m->display,
               fmt_gb(e0->device_bytes, a, sizeof a));
    }
    qt_param_counts pc;
    if (qt_plan_param_counts(m, &pc)) pc.total = 0;
    if (m->kind == QT_SPEC_LLM) {
        printf("model       %s (%s): %s parameters", m->display, m->arch, fmt_count((double)pc.total, a, sizeof a));
        if (m->n_expert) printf(" (%s active)", fmt_count((double)pc.active, b, sizeof b));
        if (m->kv_lora_rank > 0)
            printf(", %lld layers, %lld heads, MLA latent %lld + rope %lld\n", (long long)m->n_layer, (long long)m->n_head,
                   (long long)m->kv_lora_rank, (long long)m->qk_rope_dim);
        else
            printf(", %lld layers, %lld heads, %lld KV heads x %lld\n", (long long)m->n_layer, (long long)m->n_head,
                   (long long)m->n_head_kv, (long long)m->head_dim);
    } else {
        printf("pipeline    %s: %s parameters in %d components\n", m->display, fmt_count((double)pc.total, a, sizeof a),
               m->n_components);
    }
    printf("            source: %s\n", m->source);
    if (m->measured)
        printf("            checkpoint: %s parameters, %s as stored (%s)\n", fmt_count((double)m->measured_params, a, sizeof a),
               fmt_size((double)m->measured_bytes, b, sizeof b), m->measured_format);
    printf("budget      %s x %.2f = %s per %s (GB = 1e9 bytes)", fmt_gb(e0->device_bytes, a, sizeof a),
           e0->budget_bytes / e0->device_bytes, fmt_gb(e0->budget_bytes, b, sizeof b),
           r->hw && (r->hw->cls == QT_HW_CPU || r->hw->cls == QT_HW_APPLE) ? "host" : "GPU");
    if (m->kind == QT_SPEC_LLM) {
        printf(", context %s tokens", fmt_count((double)r->context, a, sizeof a));
        if (r->concurrency) printf(" x %lld sequence%s", (long long)r->concurrency, plural(r->concurrency));
    }
    printf(", goal %s\n", qt_goal_name(p->goal));
    if (m->kind == QT_SPEC_LLM) {
        const double tok = qt_plan_kv_bytes_per_token(m, 2.0, 1);
        printf("KV cache    %s bytes/token at 16-bit = %s per %s-token sequence", fmt_count(tok, a, sizeof a),
               fmt_size(qt_plan_kv_bytes_per_seq(m, 2.0, r->context, 1), b, sizeof b),
               fmt_count((double)r->context, c, sizeof c));
        if (r->n_gpus > 1)
            printf(" (%s per GPU over %d)", fmt_size(qt_plan_kv_bytes_per_seq(m, 2.0, r->context, r->n_gpus), a, sizeof a),
                   r->n_gpus);
        printf("\n");
        printf("accounting  %s\n", r->accounting == QT_ACCOUNTING_SIMPLE
                                       ? "simple (the seed's flat bytes per parameter, 1.0 GB overhead)"
                                       : "realistic (per tensor: 16-bit parts and scales counted; overheads are allowances)");
    }
}

static void print_rows(const qt_plan *p) {
    char a[32], b[32];
    const bool llm = p->req.model->kind == QT_SPEC_LLM;
    if (llm)
        printf("\nrank scheme      engine      weights  overhead   KV left  sequences      max ctx   tok/s bound  verdict\n");
    else
        printf("\nrank denoiser    weights  activations  spare     text encoders  verdict\n");
    for (int i = 0; i < p->n_rows; i++) {
        const qt_plan_row *r = &p->rows[i];
        const qt_estimate *e = &r->est;
        if (!r->rank) continue;
        char verdict[64];
        if (e->fits) snprintf(verdict, sizeof verdict, "fits%s", i == p->best ? "  <- recommended" : "");
        else snprintf(verdict, sizeof verdict, "DOES NOT FIT (%s short)", fmt_gb(e->shortfall_bytes, a, sizeof a));
        if (llm) {
            char seqs[32];
            char fr[32];
            if (e->concurrency_frac > 0)
                snprintf(seqs, sizeof seqs, "%lld (%s)", (long long)e->concurrency, fmt_frac(e->concurrency_frac, fr, sizeof fr));
            else snprintf(seqs, sizeof seqs, "-");
            char tps[32] = "-";
            if (e->tok_s_batch > 0) snprintf(tps, sizeof tps, "%.0f", e->tok_s_batch);
            printf("%4d %-11s %-9s %6.2f GB %6.2f GB %6.2f GB  %-13s %9s %10s %s  %s\n", r->rank, r->scheme->key,
                   runtime_name(r->scheme->runtime), e->weights_bytes / 1e9, e->overhead_bytes / 1e9, e->kv_budget_bytes / 1e9,
                   seqs, fmt_count((double)e->max_context, b, sizeof b), tps, e->compute_bound ? "c" : " ", verdict);
        } else {
            /* the plan keeps the text encoders 16-bit unless that alone breaks the fit */
            if (e->fits && e->support == QT_SUPPORT_PARTIAL) snprintf(verdict, sizeof verdict, "fits, memory only%s",
                                                                      i == p->best ? "  <- recommended" : "");
            printf("%4d %-11s %6.2f GB %8.2f GB %6.2f GB  %-13s  %s\n", r->rank, r->scheme->key, e->weights_bytes / 1e9,
                   e->overhead_bytes / 1e9, e->kv_budget_bytes / 1e9, r->encoders_8bit ? "8-bit" : "16-bit", verdict);
        }
    }
    const qt_hw_info *hw = p->req.hw;
    if (!llm) {
        /* the hardware rules behind each row (fp8 without FP8 matmuls is memory only) */
        printf("\nhardware\n");
        for (int i = 0; i < p->n_rows; i++)
            printf("   %c %-11s %s\n", p->rows[i].est.support == QT_SUPPORT_YES ? 'Y' : p->rows[i].est.support == QT_SUPPORT_NO ? '-' : '~',
                   p->rows[i].scheme->key, p->rows[i].est.reason);
        return;
    }
    if (hw && (hw->cls == QT_HW_CPU || hw->cls == QT_HW_APPLE)) {
        /* on hosts only GGUF types are planned: one line instead of a refusal per vLLM scheme */
        printf("\nnot planned on %s targets (vLLM schemes; quanta plans llama.cpp GGUF types here):", qt_hw_class_name(hw->cls));
        for (int i = 0; i < p->n_rows; i++)
            if (!p->rows[i].rank) printf(" %s", p->rows[i].scheme->key);
        printf("\n");
    } else {
        bool any = false;
        for (int i = 0; i < p->n_rows; i++) {
            if (p->rows[i].rank) continue;
            if (!any) printf("\nrefused on this hardware:\n");
            any = true;
            printf("   - %-11s %s\n", p->rows[i].scheme->key, p->rows[i].est.reason);
        }
    }
    if (llm) printf("(tok/s bound: decode roofline at min(sequences, 256) at half-full caches; c = compute-bound)\n");
}

/* quanta's own job on this machine (plan_job.c): NULL when the model is no local checkpoint. */
typedef struct quanta_job {
    const char *scheme;
    int32_t n_seq, n_tok;
    qt_gptq_memory mem;
} quanta_job;

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

static void print_quanta_job(const quanta_job *q) {
    if (!q) return;
    const qt_gptq_memory *x = &q->mem;
    printf("quanta job         quanta quantize --algo gptq --scheme %s on this CPU, %d x %d calibration tokens:\n"
           "                   peak %.1f MiB (model %.1f, engine %.1f, hidden states %.1f, Hessians %.1f, largest linear %.1f,\n"
           "                   output %.1f, BLAS %.1f; final write %.1f) over the process's own memory at start, as\n"
           "                   quantize --dry-run estimates it (docs/gptq.md \"Memory\")\n",
           q->scheme, q->n_seq, q->n_tok, mib(x->total), mib(x->model), mib(x->engine), mib(x->hidden), mib(x->hessians),
           mib(x->linear), mib(x->output), mib(x->blas), mib(x->write));
}

/* The plan's JSON with "quanta_job" added (the text unchanged when that fails). */
static char *with_quanta_job(char *text, const quanta_job *q) {
    json_t *root = json_loads(text, 0, NULL);
    const qt_gptq_memory *x = &q->mem;
    json_t *j = json_pack("{s:s, s:s, s:i, s:i, s:I, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}}", "command",
                          "quanta quantize --algo gptq", "scheme", q->scheme, "nsamples", q->n_seq, "seqlen", q->n_tok,
                          "peak_bytes", (json_int_t)x->total, "terms", "model", (json_int_t)x->model, "engine",
                          (json_int_t)x->engine, "hidden", (json_int_t)x->hidden, "hessians", (json_int_t)x->hessians,
                          "linear", (json_int_t)x->linear, "output", (json_int_t)x->output, "write", (json_int_t)x->write,
                          "blas", (json_int_t)x->blas);
    char *out = root && j && !json_object_set_new(root, "quanta_job", j) ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER)
                                                                         : NULL;
    if (!root) json_decref(j);
    json_decref(root);
    if (!out) return text;
    free(text);
    return out;
}

static void print_advice(const qt_plan *p, const quanta_job *qj) {
    char a[32], b[32], c[32], d[32];
    const qt_estimate_req *r = &p->req;
    const qt_model_spec *m = r->model;
    printf("\n");
    if (m->kind == QT_SPEC_DIFFUSION) {
        const qt_plan_row *bst = p->best >= 0 ? &p->rows[p->best] : NULL;
        printf("components  %-16s %-36s %12s %10s %10s %10s  %s\n", "", "", "parameters", "16-bit", "8-bit", "4-bit",
               "recommended");
        for (int i = 0; i < p->n_components; i++)
            printf("            %-16s %-36s %12s %7.2f GB %7.2f GB %7.2f GB  %s\n", m->comp[i].name, m->comp[i].what,
                   fmt_count((double)m->comp[i].n_params, a, sizeof a), p->comp_bytes[i][0] / 1e9,
                   p->comp_bytes[i][1] / 1e9, p->comp_bytes[i][2] / 1e9, qt_plan_component_precision(p, bst, i));
    }
    const qt_plan_row *r16 = NULL;
    for (int i = 0; i < p->n_rows; i++)
        if (p->rows[i].scheme->kind == QT_SCHEME_FLOAT16 && (!r16 || (p->rows[i].rank && !r16->rank))) r16 = &p->rows[i];
    if (r16 && m->kind == QT_SPEC_LLM) {
        const qt_estimate *e = &r16->est;
        if (!strcmp(p->constraint, "weights"))
            printf("weights or cache?  the WEIGHTS: at 16-bit (%s) they and the overhead (%s + %s) exceed the %s budget by %s:\n"
                   "                   quantize the weights\n",
                   r16->scheme->key, fmt_gb(e->weights_bytes, a, sizeof a), fmt_gb(e->overhead_bytes, b, sizeof b),
                   fmt_gb(e->budget_bytes, c, sizeof c), fmt_gb(e->weights_shortfall_bytes, d, sizeof d));
        else if (!strcmp(p->constraint, "cache"))
            printf("weights or cache?  the CACHE: 16-bit weights fit (%s), but %lld sequence(s) of %s tokens need %s more:\n"
                   "                   quantize the KV cache or shorten the context before quantizing weights\n",
                   fmt_gb(e->weights_bytes, a, sizeof a), (long long)(r->concurrency ? r->concurrency : 1),
                   fmt_count((double)r->context, b, sizeof b), fmt_gb(e->shortfall_bytes, c, sizeof c));
        else
            printf("weights or cache?  neither: it fits at 16-bit (%lld sequence%s of %s tokens); quantize only for more\n"
                   "                   sequences, longer contexts or throughput\n",
                   (long long)e->concurrency, plural(e->concurrency), fmt_count((double)r->context, a, sizeof a));
    }
    if (p->best >= 0) {
        const qt_plan_row *bst = &p->rows[p->best];
        if (m->kind == QT_SPEC_LLM)
            printf("recommended        %s: %s, %lld sequence%s of %s tokens\n", bst->scheme->key, bst->scheme->title,
                   (long long)bst->est.concurrency, plural(bst->est.concurrency),
                   fmt_count((double)r->context, a, sizeof a));
        else
            printf("recommended        denoiser in %s: %s of weights, %s spare\n", bst->scheme->key,
                   fmt_gb(bst->est.weights_bytes, a, sizeof a), fmt_gb(bst->est.kv_budget_bytes, b, sizeof b));
    } else {
        printf("recommended        nothing fits this target at this load\n");
    }
    if (p->kv_alt_dtype != QT_KV_TYPE_AUTO && p->best >= 0) {
        const qt_estimate *base = &p->rows[p->best].est, *alt = &p->kv_alt;
        printf("KV cache           an 8-bit cache (%s) halves KV bytes per token (%s -> %s): %lld -> %lld sequences,\n"
               "                   max context %s -> %s tokens. %s%s\n",
               p->kv_alt_dtype == QT_KV_TYPE_FP8_E4M3 ? "fp8" : "q8_0", fmt_count(base->kv_bytes_per_token, a, sizeof a),
               fmt_count(alt->kv_bytes_per_token, b, sizeof b), (long long)base->concurrency, (long long)alt->concurrency,
               fmt_count((double)base->max_context, c, sizeof c), fmt_count((double)alt->max_context, d, sizeof d),
               p->kv_alt_support == QT_SUPPORT_NO ? "NOT AVAILABLE: " : "", p->kv_alt_reason);
    }
    if (p->n_commands) {
        printf("commands\n");
        for (int i = 0; i < p->n_commands; i++) printf("  %s\n", p->commands[i]);
    }
    const qt_quant_job *j = &p->job;
    if (j->method && strcmp(j->method, "none")) {
        printf("quantization job   %s, layer by layer: peak %s = one layer %s + f32 work copy %s", j->method,
               fmt_gb(j->total_bytes, a, sizeof a), fmt_gb(j->layer_bytes, b, sizeof b), fmt_gb(j->work_bytes, c, sizeof c));
        if (j->hessian_bytes > 0) printf(" + Hessians %s", fmt_gb(j->hessian_bytes, d, sizeof d));
        if (j->activation_bytes > 0)
            printf(" + activations %s (%lld x %lld tokens)", fmt_gb(j->activation_bytes, a, sizeof a),
                   (long long)j->n_samples, (long long)j->seq_len);
        printf("\n                   the whole model is %s in bf16 on disk/host (streamed layer by layer)\n",
               fmt_gb(j->host_bytes, b, sizeof b));
    }
    print_quanta_job(qj);
    if (p->n_warnings) {
        printf("notes\n");
        for (int i = 0; i < p->n_warnings; i++) printf("  - %s\n", p->warnings[i]);
    }
}

static int write_output(const qt_plan *p, const char *path, qt_status (*render)(const qt_plan *, char **)) {
    char *text;
    qt_status st = render(p, &text);
    if (st) return cli_fail(st);
    int rc = write_text_file(path, text);
    free(text);
    return rc;
}

int cmd_plan(int argc, char **argv) {
    plan_opts o;
    plan_opts_init(&o);
    bool list = false;
    int32_t n_seq = 128, n_tok = 512; /* quanta quantize's calibration defaults */
    for (int i = 1; i < argc; i++) {
        int rc;
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { help(); return CLI_OK; }
        if (!strcmp(a, "--list-models")) { list = true; continue; }
        int took = plan_opt("plan", argc, argv, &i, &o, &rc);
        if (took < 0) return rc;
        if (took) continue;
        if (!strcmp(a, "--nsamples") || !strcmp(a, "--seqlen")) {
            char *end;
            const long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
            if (i + 1 >= argc || *end || v < 1 || v > (1L << 20))
                return cli_usage("plan", "%s needs a positive count", a);
            *(!strcmp(a, "--nsamples") ? &n_seq : &n_tok) = (int32_t)v;
            i++;
            continue;
        }
        if (!strcmp(a, "--goal") || !strcmp(a, "--svg") || !strcmp(a, "--html")) {
            if (i + 1 >= argc) return cli_usage("plan", "%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--svg")) o.svg = v;
            else if (!strcmp(a, "--html")) o.html = v;
            else if (qt_goal_parse(v, &o.goal)) return cli_usage("plan", "%s", qt_last_error());
            continue;
        }
        return cli_usage("plan", "unknown option '%s'", a);
    }
    if (list) {
        if (o.json.on) return list_models_json(&o.json);
        list_models();
        return CLI_OK;
    }
    int rc = plan_resolve("plan", &o, true);
    if (rc) return rc;
    qt_plan *p = malloc(sizeof *p);
    if (!p) return cli_fail(qt_error(QT_ERR_NOMEM, "plan: out of memory"));
    qt_status st = qt_plan_make(&o.req, o.goal, p);
    if (st) {
        free(p);
        return st == QT_ERR_ARG ? cli_usage("plan", "%s", qt_last_error()) : cli_fail(st);
    }
    quanta_job qj = {.n_seq = n_seq, .n_tok = n_tok};
    const bool have_job = p->best >= 0 && p->req.model->kind == QT_SPEC_LLM &&
                          plan_gptq_job(o.model, qj.scheme = p->rows[p->best].scheme->key, n_seq, n_tok, &qj.mem);
    if (o.json.on) {
        char *text;
        if ((st = qt_plan_json(p, &text))) { free(p); return cli_fail(st); }
        if (have_job) text = with_quanta_job(text, &qj);
        size_t n = strlen(text);
        char *nl = realloc(text, n + 2);
        if (nl) { memcpy(nl + n, "\n", 2); text = nl; }
        rc = cli_json_emit(&o.json, text);
        free(text);
    }
    if (!o.json.on || o.json.file) {
        print_header(p);
        print_rows(p);
        print_advice(p, have_job ? &qj : NULL);
    }
    if (!rc && o.svg) {
        rc = write_output(p, o.svg, qt_plan_svg);
        if (!rc && !o.quiet) fprintf(stderr, "quanta plan: wrote %s\n", o.svg);
    }
    if (!rc && o.html) {
        rc = write_output(p, o.html, qt_plan_html);
        if (!rc && !o.quiet) fprintf(stderr, "quanta plan: wrote %s\n", o.html);
    }
    free(p);
    return rc;
}
