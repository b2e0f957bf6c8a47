/* `quanta estimate`: the memory arithmetic of one model, one scheme, one target. */
#include <stdlib.h>
#include <string.h>

#include "plan_cli.h"

static void help(void) {
    printf("usage: quanta estimate --model M --scheme S [--gpu G[xN] | --memory SIZE] [--util 0.90]\n"
           "                      [--overhead SIZE] [--context L] [--concurrency C] [--kv-dtype D]\n"
           "                      [--accounting realistic|simple] [--json[=FILE]] [-q]\n\n"
           "Weights (with the parts that stay 16-bit and the scheme's scales), overhead (stated\n"
           "allowances), KV bytes per token, what is left for the KV cache, how many sequences of the\n"
           "context length that buys, vLLM blocks of 16 tokens, and whether it fits. GB = 1e9 bytes,\n"
           "GiB = 2^30 bytes.\n\n"
           "  --scheme S         one of: ");
    for (int i = 0; i < qt_scheme_count(); i++) printf("%s%s", i ? ", " : "", qt_scheme_get(i)->key);
    printf("\n");
    plan_opts_help(stdout);
    printf("\nexample (the seed's worked example):\n"
           "  quanta estimate --model qwen2.5-7b --scheme int8 --memory 16GB --util 0.90 --overhead 1.0GB \\\n"
           "                  --context 4096 --accounting simple\n");
}

static void kv_formula(const qt_model_spec *m, const qt_estimate *e, char *buf, size_t n) {
    char a[32];
    if (m->kv_lora_rank > 0)
        snprintf(buf, n, "%s bytes/token (MLA: %lld layers x (%lld latent + %lld rope) x %g bytes)",
                 fmt_count(e->kv_bytes_per_token, a, sizeof a), (long long)m->n_layer, (long long)m->kv_lora_rank,
                 (long long)m->qk_rope_dim, e->kv_elt_bytes);
    else
        snprintf(buf, n, "%s bytes/token (2 x %lld layers x %lld KV heads x %lld head_dim x %g bytes)",
                 fmt_count(e->kv_bytes_per_token, a, sizeof a), (long long)m->n_layer, (long long)m->n_head_kv,
                 (long long)m->head_dim, e->kv_elt_bytes);
}

static void print_text(const plan_opts *o, const qt_estimate *e, const qt_estimate *simple) {
    const qt_estimate_req *r = &o->req;
    const qt_model_spec *m = r->model;
    const qt_scheme_info *s = r->scheme;
    char a[48], b[48], c[48], d[48], line[256];
    qt_param_counts pc;
    if (qt_plan_param_counts(m, &pc)) pc.total = e->n_params;
    const int tp = r->n_gpus;
    if (r->hw)
        snprintf(line, sizeof line, "%s", r->hw->name);
    else
        snprintf(line, sizeof line, "a %s device", fmt_gb(e->device_bytes, a, sizeof a));
    printf("quanta estimate: %s, %s, on %s\n", m->display, s->title, line);
    if (tp > 1) printf("  tensor parallel   %d GPUs: per-GPU figures below\n", tp);
    printf("  accounting        %s\n", r->accounting == QT_ACCOUNTING_SIMPLE
                                           ? "simple (the seed's flat bytes per parameter and overhead)"
                                           : "realistic (per tensor; overheads are allowances)");
    printf("  memory            %s x %.2f = %s budget per GPU (GB = 1e9 bytes)\n", fmt_gb(e->device_bytes, a, sizeof a),
           e->budget_bytes / e->device_bytes, fmt_gb(e->budget_bytes, b, sizeof b));
    if (r->accounting == QT_ACCOUNTING_SIMPLE) {
        printf("  weights           %s (%s params x %g bytes%s)\n", fmt_gb(e->weights_bytes, a, sizeof a),
               fmt_count((double)pc.total, b, sizeof b), s->simple_bytes, tp > 1 ? ", split over the GPUs" : "");
    } else if (s->kind == QT_SCHEME_FLOAT16) {
        printf("  weights           %s per GPU (%s params x 2 bytes)\n", fmt_gb(e->weights_bytes, a, sizeof a),
               fmt_count((double)pc.total, b, sizeof b));
    } else if (s->kind == QT_SCHEME_GGUF) {
        printf("  weights           %s per GPU (%s params in llama.cpp's %s mix: its per-tensor types, norms f32)\n",
               fmt_gb(e->weights_bytes, a, sizeof a), fmt_count((double)pc.total, b, sizeof b), s->gguf_ftype);
    } else {
        const double payload = e->weights_total_bytes - e->weights_scale_bytes - e->weights_16bit_bytes;
        printf("  weights           %s per GPU (%s params: %s %s + %s scales/zero points + %s kept 16-bit:\n"
               "                    embeddings, lm_head, norms, biases, routers)\n",
               fmt_gb(e->weights_bytes, a, sizeof a), fmt_count((double)pc.total, b, sizeof b),
               fmt_gb(payload, c, sizeof c), s->kind == QT_SCHEME_FLOAT16 ? "16-bit" : "quantized",
               fmt_gb(e->weights_scale_bytes, d, sizeof d), fmt_gb(e->weights_16bit_bytes, line, sizeof line));
    }
    if (m->measured)
        printf("  checkpoint        %s params, %s as stored (%s)\n", fmt_count((double)m->measured_params, a, sizeof a),
               fmt_size((double)m->measured_bytes, b, sizeof b), m->measured_format);
    if (r->overhead_bytes >= 0)
        printf("  overhead          %s (given)\n", fmt_gb(e->overhead_bytes, a, sizeof a));
    else if (r->accounting == QT_ACCOUNTING_SIMPLE)
        printf("  overhead          %s (the seed's flat allowance)\n", fmt_gb(e->overhead_bytes, a, sizeof a));
    else
        printf("  overhead          %s = %s runtime allowance (%s)\n"
               "                    + %s activation allowance (one forward pass + sampled logits)\n",
               fmt_gb(e->overhead_bytes, a, sizeof a), fmt_gb(e->runtime_bytes, b, sizeof b),
               s->runtime == QT_RUNTIME_LLAMACPP || (r->hw && (r->hw->cls == QT_HW_CPU || r->hw->cls == QT_HW_APPLE))
                   ? "runtime context"
                   : "CUDA context and workspaces 0.5 GiB, CUDA graphs 0.5 GiB",
               fmt_gb(e->workspace_bytes, c, sizeof c));
    kv_formula(m, e, line, sizeof line);
    printf("  KV cache          %s, --kv-dtype %s\n", line, qt_kv_dtype_name(r->kv_dtype));
    printf("                    %s per %s-token sequence%s\n", fmt_size(e->kv_bytes_per_seq, a, sizeof a),
           fmt_count((double)r->context, b, sizeof b),
           m->sliding_window && m->swa_period ? " (sliding-window layers hold at most the window)" : "");
    printf("  left for KV       %s\n", fmt_gb(e->kv_budget_bytes, a, sizeof a));
    if (e->concurrency_frac > 0)
        printf("  concurrency       %s sequences of %s tokens -> %lld whole sequences\n",
               fmt_frac(e->concurrency_frac, c, sizeof c), fmt_count((double)r->context, a, sizeof a),
               (long long)e->concurrency);
    else
        printf("  concurrency       none: no room for a KV cache\n");
    printf("  vLLM blocks       %s blocks of 16 tokens; one sequence could hold %s tokens\n",
           fmt_count((double)e->gpu_blocks, a, sizeof a), fmt_count((double)e->max_context, b, sizeof b));
    if (r->concurrency > 0)
        printf("  requested         %lld x %s tokens: KV needs %s (%.2f GiB) per GPU\n", (long long)r->concurrency,
               fmt_count((double)r->context, a, sizeof a), fmt_gb(e->kv_required_bytes, b, sizeof b),
               e->kv_required_bytes / QT_GIB);
    if (e->tok_s_single > 0)
        printf("  decode bound      %.0f tok/s for one sequence, %.0f tok/s for %lld together (%s roofline, upper bound)\n",
               e->tok_s_single, e->tok_s_batch, (long long)e->batch, e->compute_bound ? "compute" : "bandwidth");
    if (r->hw) printf("  hardware          %s%s\n", e->support == QT_SUPPORT_NO ? "CANNOT RUN: " : "", e->reason);
    if (e->support == QT_SUPPORT_NO) {
        /* a scheme the hardware cannot run has no fit verdict */
        printf("  verdict           CANNOT RUN on %s (the memory above is what it would take on hardware that runs %s)\n",
               r->hw->name, s->key);
    } else if (e->fits) {
        printf("  verdict           FITS: %lld sequence%s of %s tokens\n", (long long)e->concurrency, plural(e->concurrency),
               fmt_count((double)r->context, a, sizeof a));
    } else if (e->weights_shortfall_bytes > 0) {
        printf("  verdict           DOES NOT FIT: weights + overhead exceed the budget by %s; %s short for %lld sequence%s\n",
               fmt_gb(e->weights_shortfall_bytes, a, sizeof a), fmt_gb(e->shortfall_bytes, b, sizeof b),
               (long long)(r->concurrency > 0 ? r->concurrency : 1), r->concurrency > 1 ? "s" : "");
    } else {
        printf("  verdict           DOES NOT FIT: %s short for %lld sequences of %s tokens\n",
               fmt_gb(e->shortfall_bytes, a, sizeof a), (long long)(r->concurrency > 0 ? r->concurrency : 1),
               fmt_count((double)r->context, b, sizeof b));
    }
    if (simple)
        printf("  simple accounting %s weights, %s overhead, %s for KV, %s sequences: realistic differs by the\n"
               "                    16-bit parts and scales the flat %g bytes/param ignores, and the computed overhead\n",
               fmt_gb(simple->weights_bytes, a, sizeof a), fmt_gb(simple->overhead_bytes, b, sizeof b),
               fmt_gb(simple->kv_budget_bytes, c, sizeof c), fmt_frac(simple->concurrency_frac, d, sizeof d),
               s->simple_bytes);
}

int cmd_estimate(int argc, char **argv) {
    plan_opts o;
    plan_opts_init(&o);
    for (int i = 1; i < argc; i++) {
        int rc;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { help(); return CLI_OK; }
        int took = plan_opt("estimate", argc, argv, &i, &o, &rc);
        if (took < 0) return rc;
        if (took) continue;
        if (!strcmp(argv[i], "--scheme") || !strcmp(argv[i], "-s")) {
            if (i + 1 >= argc) return cli_usage("estimate", "--scheme needs a value");
            o.scheme = argv[++i];
            continue;
        }
        return cli_usage("estimate", "unknown option '%s'", argv[i]);
    }
    if (!o.scheme) return cli_usage("estimate", "--scheme is required (quanta estimate --help lists them)");
    const qt_scheme_info *s;
    int rc = cli_scheme("estimate", o.scheme, &s);
    if (rc) return rc;
    rc = plan_resolve("estimate", &o, true);
    if (rc) return rc;
    o.req.scheme = s;
    qt_estimate e, simple;
    qt_status st = qt_plan_estimate(&o.req, &e);
    if (st == QT_ERR_ARG) return cli_usage("estimate", "%s", qt_last_error());
    if (st) return cli_fail(st);
    if (o.json.on) {
        char *text;
        if ((st = qt_plan_estimate_json(&o.req, &e, &text))) return cli_fail(st);
        size_t n = strlen(text);
        char *nl = realloc(text, n + 2);
        if (nl) { memcpy(nl + n, "\n", 2); text = nl; }
        rc = cli_json_emit(&o.json, text);
        free(text);
        if (rc || !o.json.file) return rc;
    }
    const qt_estimate *cmp = NULL;
    if (o.req.accounting == QT_ACCOUNTING_REALISTIC) {
        qt_estimate_req r = o.req;
        r.accounting = QT_ACCOUNTING_SIMPLE;
        if (qt_plan_estimate(&r, &simple) == QT_OK) cmp = &simple;
    }
    print_text(&o, &e, cmp);
    return CLI_OK;
}
