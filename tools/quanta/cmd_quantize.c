/* `quanta quantize IN OUT --scheme S [options]`: a GGUF file as
 * llama-quantize makes it (include/quanta/quantize.h, docs/quantize.md).
 * The scheme decides the output, in one place (run_scheme()): a GGUF file
 * type writes a .gguf file; a vLLM scheme writes a compressed-tensors
 * directory as llm-compressor does (include/quanta/quantize_ct.h). */
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <errno.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "quantize_calib.h"
#include "quantize_kv.h"
#include "quantize_target.h"

#define VERB "quantize"
#define MAX_PATTERNS 64

static void help(void) {
    printf("usage: quanta quantize IN OUT --scheme S | --target-size SIZE [options]\n\n"
           "Quantize a checkpoint (GGUF, Hugging Face directory or llama2.c file) into a GGUF\n"
           "file exactly as llama-quantize does: the same per-tensor types and the same bytes.\n\n"
           "  --scheme S                 a llama-quantize file type, any case: q8_0, q4_0, q4_1, q5_0,\n"
           "                             q5_1, q2_k, q2_k_s, q3_k_s/m/l, q4_k_s/m, q5_k_s/m, q6_k, iq1_s,\n"
           "                             iq1_m, iq2_xxs, iq2_xs, iq2_s, iq2_m, iq3_xxs, iq3_xs, iq3_s,\n"
           "                             iq3_m, iq4_nl, iq4_xs, tq1_0, tq2_0, mxfp4_moe, q1_0, q2_0,\n"
           "                             f16, bf16, f32; or a vLLM scheme, which writes OUT as a\n"
           "                             compressed-tensors directory (llm-compressor's layout): w4a16,\n"
           "                             w4a16-asym, w8a16, w8a8-int8, fp8-dynamic (fp8), fp8-static,\n"
           "                             fp8-block, nvfp4, mxfp4 (--keep, --force, --threads, --dry-run\n"
           "                             and --json apply; the GGUF type options do not)\n"
           "  --target-size SIZE         instead of --scheme: the best mix of GGUF types whose whole file\n"
           "                             (header included, the writer's exact size) is at most SIZE (a\n"
           "                             unit is needed: 304352B, 700MB, 6GiB); one type per tensor from\n"
           "                             the candidates, chosen to minimise the predicted error (the\n"
           "                             imatrix-weighted weight error: --imatrix or --calib, else\n"
           "                             unweighted); docs/quantize.md \"Target size\"\n"
           "  --target-bpw B             the same with at most B bits per weight of tensor data\n"
           QTGT_HELP
           "  --sensitivity proxy|measured|measured-groups\n"
           "                             what a tensor's type costs: proxy (default), the imatrix-\n"
           "                             weighted weight error; measured (needs --calib), the mean KL\n"
           "                             divergence per token of the next-token distribution on the\n"
           "                             calibration tokens with only that tensor in that type;\n"
           "                             measured-groups, with only that group (a layer's attention,\n"
           "                             a layer's FFN) in it, split over its members by proxy share\n"
           "                             (3.5x fewer runs, worse mixes on stories260K); with --algo\n"
           "                             gptq the linears' copies measured are GPTQ's\n"
           "  --sensitivity-cache FILE   with measured: read the measured table from FILE when it was\n"
           "                             made for this model, calibration tokens, imatrix, numerics and\n"
           "                             candidates (another budget then measures nothing), else\n"
           "                             measure and write it there\n"
           "  --refine N                 after the allocation, N rounds of single swaps (one tensor up, one\n"
           "                             down, within the budget), each kept only when the whole mix's\n"
           "                             measured KL divergence on the calibration tokens falls (default\n"
           "                             4 with --sensitivity measured, else 0)\n"
           "  --proxy-sample N|all       the proxy scores a tensor of more than N weights (default\n"
           "                             2097152) on every k-th row, k = ceil(weights / N), its error\n"
           "                             scaled to all rows; all: every row (the file has every row\n"
           "                             either way; docs/quantize.md \"Target size: time on the 1B\")\n"
           "  --candidates T,T,...       the types to choose from (default: iq1_s .. q8_0 and f16, those\n"
           "                             whose block divides each tensor's row length; the i-quants that\n"
           "                             need an imatrix only where it has the tensor)\n"
           "  --imatrix FILE             importance matrix (llama-imatrix's GGUF or legacy .dat);\n"
           "                             i-quants below 4 bits and Q2_K_S need one, per tensor, as in\n"
           "                             llama-quantize; a tensor the file lacks (token_embd, output)\n"
           "                             is quantized without weights, with a note\n"
           "                             (w4a16, w4a16-asym, w8a16, w8a8-int8: each scale's range is shrunk\n"
           "                             by the factor 1 .. 0.81 with the least importance-weighted error)\n"
           "  --calib FILE [--nsamples N] [--seqlen L] [--seed S]\n"
           "                             calibration text, cut by the rule every verb shares (N windows\n"
           "                             of L tokens, default all of 512, each starting with BOS; S > 0\n"
           "                             draws them at random; UTF-8 text or JSONL {\"text\": ...} /\n"
           "                             {\"messages\": [...]}, rendered with the model's chat template):\n"
           "                             GGUF schemes compute the importance matrix from it (exactly what\n"
           "                             quanta imatrix --calib ... then --imatrix gives); fp8-static (and\n"
           "                             nvfp4, which becomes W4A4) observe each linear's input absmax.\n"
           "                             The file's SHA-256, token count, N, L, S and its fingerprint are\n"
           "                             recorded (quanta.calibration.*; quanta inspect prints them)\n"
           "  --allow-short-calib        a --calib text with fewer than N windows of L tokens: use the ones\n"
           "                             there are, with a warning (without it: refused, saying how many)\n"
           "  --algo rtn|gptq|awq|awq+gptq|smoothquant|smoothquant+gptq\n"
           "                             rtn (default): round to nearest, as llama-quantize; gptq: GPTQ\n"
           "                             (Frantar et al. 2023) layer by layer on the --calib samples, onto\n"
           "                             the planned GGUF types (q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K\n"
           "                             q5_K q6_K iq4_nl iq4_xs; others round to nearest, named) or any\n"
           "                             compressed-tensors scheme (int groups, fp8, fp8-block, nvfp4,\n"
           "                             mxfp4); docs/gptq.md. awq: AWQ (Lin et al.\n"
           "                             2024) scales searched per layer and folded into the norms and\n"
           "                             linears before them, then round to nearest; smoothquant:\n"
           "                             SmoothQuant (Xiao et al. 2023) scales folded into the norms\n"
           "                             (for w8a8-int8), then round to nearest; +gptq: GPTQ instead of\n"
           "                             round to nearest after the scales; docs/awq.md\n"
           "  --act-order                GPTQ: columns by decreasing Hessian diagonal\n"
           "  --alpha A                  SmoothQuant's migration strength, 0..1 (default 0.5)\n"
           "  --group-size G             w4a16, w4a16-asym, w8a16: G input columns per scale (default\n"
           "                             128; vLLM's Marlin takes 32, 64, 128); a linear whose input\n"
           "                             width G does not divide gets one scale per output channel,\n"
           "                             named, as a second config group\n"
           QKV_HELP
           "  --tensor-type REGEX=TYPE   give tensors whose GGUF name (e.g. blk.3.ffn_down.weight)\n"
           "                             matches REGEX (PCRE2, searched, first match wins) the ggml\n"
           "                             type TYPE (q6_K, q8_0, f16, ...); repeatable\n"
           "  --keep REGEX               copy matching tensors as stored; repeatable\n"
           "  --output-tensor-type T     type of output.weight\n"
           "  --token-embedding-type T   type of token_embd.weight\n"
           "  --pure                     the file type's base type for every tensor (no mixes)\n"
           "  --leave-output-tensor      copy output.weight as stored\n"
           "  --allow-requantize         accept an already-quantized input (quality is lost twice)\n"
           "  --dry-run                  print types, bytes and bits per weight; write nothing\n"
           "  --threads N                quantizing threads (the bytes do not depend on N)\n"
           "  --force                    replace an existing OUT\n"
           "  --resumable                if the run is interrupted (Ctrl-C, SIGTERM, an error, kill -9),\n"
           "                             keep OUT.partial and OUT.partial.state and print the command\n"
           "                             that continues it (with --algo also each finished layer, in\n"
           "                             OUT.partial.layers and its .state); a compressed-tensors OUT\n"
           "                             keeps the directory OUT.partial\n"
           "  --resume                   continue an interrupted --resumable run from its last complete\n"
           "                             tensor, or the algorithm's last finished layer (same IN, OUT, options and\n"
           "                             calibration text, else refused); the bytes equal an\n"
           "                             uninterrupted run's (every file of a compressed-tensors OUT)\n"
           "  --max-shard-size BYTES     compressed-tensors: safetensors shards of at most BYTES (suffix\n"
           "                             KB, MB, GB: powers of 1000; default 5GB, as transformers), with\n"
           "                             model.safetensors.index.json when there is more than one\n"
           "  --json[=FILE]              a JSON report (output_bytes, bits_per_weight, peak_rss_bytes,\n"
           "                             tensors with name, type, bytes, and after a run rmse, snr_db)\n"
           "  -q, --quiet                no progress and no table on stderr\n"
           "  --help                     this text\n\n"
           "Where llama-quantize has no fallback for a row length (e.g. stories260K's 172-wide\n"
           "ffn_down in Q4_0) it refuses; quanta writes that tensor as F16 and records it in the\n"
           "file's quanta.fallbacks. A GGUF OUT is written as OUT.partial and renamed when complete:\n"
           "an error, Ctrl-C or SIGTERM leaves nothing (unless --resumable); an OUT.partial left by an\n"
           "interrupted run is removed (with a message) unless --resume. A compressed-tensors OUT\n"
           "directory is written as the directory OUT.partial and renamed when every file is complete\n"
           "(resumable as above). A second run for the same OUT is refused while one holds OUT.partial.lock.\n\n"
           "exit status: 0 ok, 1 failed (nothing written), 2 usage error\n");
}

typedef struct args {
    const char *in, *out, *scheme;
    qt_quantize_opts o;
    qt_quantize_override over[MAX_PATTERNS];
    const char *keep[MAX_PATTERNS];
    char *over_pat[MAX_PATTERNS];
    bool dry_run, force;
    int quiet;
    char *resume_cmd;      /* the command that continues this run (--resumable) */
    cli_json json;
    cli_calib calib;
    qcalib qc;
    const char *algo;           /* --algo other than rtn: a calibrated layer-by-layer run */
    qt_smoothing smoothing;     /* awq, smoothquant */
    bool then_rtn;              /* awq, smoothquant: round to nearest after the scales */
    bool act_order;             /* --act-order */
    double alpha;               /* --alpha; < 0: not given */
    int64_t group_size;         /* --group-size; 0: the scheme's */
    qkv kv;                     /* --kv-dtype, --kv-calib, --kv-scale-gran */
    qt_gptq_memory mem;         /* --algo: the GPTQ driver's peak estimated before the run */
    uint64_t max_shard;         /* --max-shard-size; 0: the default */
    qt_quantize_target target;  /* --target-size / --target-bpw (file_bytes or bpw non-zero: on) */
    qt_gptq_run_opts target_gptq; /* --algo gptq with a target: the options its costs are measured with */
    qt_type cand[64];           /* --candidates */
    qt_quantize_mix *mix;       /* the allocation's choice */
    bool sensitivity_given;     /* --sensitivity */
    int refine;                 /* --refine N; -1: not given (4 rounds with calibration text) */
    qtgt tg;                    /* --budget-for-kv (with --memory/--gpu), --svg */
    qt_quantize_sweep *sweep;   /* --svg: the budget sweep drawn (also in --json) */
} args;

static int parse_type(const char *opt, const char *v, qt_type *out) {
    const qt_type_traits *tr = qt_type_by_name(v);
    if (!tr || tr->runtime_only || !tr->from_float)
        return cli_usage(VERB, "%s: '%s' is not a ggml type quanta can write (q4_K, q6_K, q8_0, iq4_nl, f16, ...)", opt, v);
    *out = tr->type;
    return CLI_OK;
}

static int parse_override(args *a, const char *v) {
    const char *eq = strrchr(v, '=');
    if (!eq || eq == v || !eq[1]) return cli_usage(VERB, "--tensor-type '%s': expected REGEX=TYPE", v);
    if (a->o.n_overrides >= MAX_PATTERNS) return cli_usage(VERB, "at most %d --tensor-type options", MAX_PATTERNS);
    int rc = parse_type("--tensor-type", eq + 1, &a->over[a->o.n_overrides].type);
    if (rc != CLI_OK) return rc;
    char *pat = strndup(v, (size_t)(eq - v));
    if (!pat) return cli_fail(qt_error(QT_ERR_NOMEM, "out of memory"));
    a->over_pat[a->o.n_overrides] = pat;
    a->over[a->o.n_overrides++].pattern = pat;
    return CLI_OK;
}

/* --max-shard-size: bytes, or a number with KB / MB / GB (powers of 1000, as transformers' "5GB"). */
static int parse_shard_size(args *a, const char *v) {
    static const struct { const char *suffix; uint64_t mul; } units[] = {{"", 1}, {"KB", 1000}, {"MB", 1000000}, {"GB", 1000000000}};
    char *end;
    errno = 0;
    const unsigned long long n = strtoull(v, &end, 10);
    for (size_t k = 0; end != v && v[0] != '-' && !errno && k < sizeof units / sizeof units[0]; k++)
        if (!strcasecmp(end, units[k].suffix) && n > 0 && n <= UINT64_MAX / units[k].mul) {
            a->max_shard = n * units[k].mul;
            return CLI_OK;
        }
    return cli_usage(VERB, "--max-shard-size '%s': expected a positive number of bytes, optionally with KB, MB or GB", v);
}

/* --candidates T,T,...: GGUF types quanta writes. */
static int parse_candidates(args *a, const char *v) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", v);
    a->target.n_candidates = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (a->target.n_candidates >= 32) return cli_usage(VERB, "--candidates: at most 32 types");
        int rc = parse_type("--candidates", tok, &a->cand[a->target.n_candidates]);
        if (rc != CLI_OK) return rc;
        a->target.n_candidates++;
    }
    if (!a->target.n_candidates) return cli_usage(VERB, "--candidates '%s': expected TYPE,TYPE,... (q4_K,q6_K,q8_0)", v);
    a->target.candidates = a->cand;
    return CLI_OK;
}

/* --target-size SIZE (with a unit: 304352B, 700MB, 6GiB) or --target-bpw B. */
static int parse_target(args *a, const char *opt, const char *v) {
    if (!strcmp(opt, "--target-size")) {
        double b;
        if (qt_plan_parse_size(v, &b) != QT_OK) return cli_usage(VERB, "--target-size: %s", qt_last_error());
        if (b < 1) return cli_usage(VERB, "--target-size '%s': must be at least 1 byte", v);
        a->target.file_bytes = (uint64_t)b;
        return CLI_OK;
    }
    char *end;
    a->target.bpw = strtod(v, &end);
    if (*end || end == v || !(a->target.bpw > 0 && a->target.bpw <= 32))
        return cli_usage(VERB, "--target-bpw '%s': expected bits per weight, more than 0 and at most 32", v);
    return CLI_OK;
}

static int parse_value(args *a, const char *opt, const char *v) {
    const int kv = qkv_arg(VERB, opt, v, &a->kv);
    if (kv) return kv < 0 ? CLI_USAGE : CLI_OK;
    if (!strcmp(opt, "--scheme")) a->scheme = v;
    else if (!strcmp(opt, "--imatrix")) a->o.imatrix = v;
    else if (!strcmp(opt, "--target-size") || !strcmp(opt, "--target-bpw")) return parse_target(a, opt, v);
    else if (!strcmp(opt, "--candidates")) return parse_candidates(a, v);
    else if (!strcmp(opt, "--sensitivity")) {
        if (strcmp(v, "proxy") && strcmp(v, "measured") && strcmp(v, "measured-groups"))
            return cli_usage(VERB, "--sensitivity '%s': expected proxy, measured or measured-groups", v);
        a->target.measured = strcmp(v, "proxy") != 0;
        a->target.per_group = !strcmp(v, "measured-groups");
        a->sensitivity_given = true;
    } else if (!strcmp(opt, "--sensitivity-cache")) a->target.sensitivity_cache = v;
    else if (!strcmp(opt, "--refine")) {
        char *end;
        const long r = strtol(v, &end, 10);
        if (*end || end == v || r < 0 || r > 64) return cli_usage(VERB, "--refine '%s': expected rounds, 0 to 64", v);
        a->refine = (int)r;
    }
    else if (!strcmp(opt, "--proxy-sample")) {
        char *end = NULL;
        const long long r = strcmp(v, "all") ? strtoll(v, &end, 10) : -1;
        if (r != -1 && (*end || end == v || r < 1))
            return cli_usage(VERB, "--proxy-sample '%s': expected a number of weights (1 or more) or all", v);
        a->target.proxy_sample = r;
    }
    else if (!strcmp(opt, "--tensor-type")) return parse_override(a, v);
    else if (!strcmp(opt, "--keep")) {
        if (a->o.n_keep >= MAX_PATTERNS) return cli_usage(VERB, "at most %d --keep options", MAX_PATTERNS);
        a->keep[a->o.n_keep++] = v;
    } else if (!strcmp(opt, "--output-tensor-type")) return parse_type(opt, v, &a->o.output_type);
    else if (!strcmp(opt, "--token-embedding-type")) return parse_type(opt, v, &a->o.embd_type);
    else if (!strcmp(opt, "--threads")) {
        long long n;
        int rc = cli_parse_int(VERB, opt, v, 1, 1024, &n);
        if (rc != CLI_OK) return rc;
        a->o.threads = (int)n;
    } else if (!strcmp(opt, "--algo")) {
        static const struct { const char *name; qt_smoothing smoothing; bool then_rtn; } algos[] = {
            {"gptq", QT_SMOOTH_NONE, false},        {"awq", QT_SMOOTH_AWQ, true},
            {"awq+gptq", QT_SMOOTH_AWQ, false},     {"smoothquant", QT_SMOOTH_SMOOTHQUANT, true},
            {"smoothquant+gptq", QT_SMOOTH_SMOOTHQUANT, false},
        };
        a->algo = NULL;
        for (size_t k = 0; k < sizeof algos / sizeof algos[0]; k++)
            if (!strcmp(v, algos[k].name)) a->algo = algos[k].name, a->smoothing = algos[k].smoothing, a->then_rtn = algos[k].then_rtn;
        if (!a->algo && strcmp(v, "rtn"))
            return cli_usage(VERB, "--algo '%s': expected rtn, gptq, awq, awq+gptq, smoothquant or smoothquant+gptq", v);
    } else if (!strcmp(opt, "--max-shard-size")) {
        return parse_shard_size(a, v);
    } else if (!strcmp(opt, "--group-size")) {
        long long n;
        int rc = cli_parse_int(VERB, opt, v, 8, 1 << 20, &n);
        if (rc != CLI_OK) return rc;
        if (n % 8) return cli_usage(VERB, "--group-size %lld: expected a multiple of 8 (vLLM's Marlin takes 32, 64, 128)", n);
        a->group_size = n;
    } else if (!strcmp(opt, "--alpha")) {
        char *end;
        a->alpha = strtod(v, &end);
        if (*end || end == v || !(a->alpha >= 0 && a->alpha <= 1))
            return cli_usage(VERB, "--alpha '%s': expected a number from 0 to 1 (SmoothQuant's migration strength)", v);
    }
    return CLI_OK;
}

static int parse(int argc, char **argv, args *a) {
    static const char *with_value[] = {"--scheme", "--imatrix", "--tensor-type", "--keep", "--output-tensor-type",
                                       "--token-embedding-type", "--threads", "--algo", "--alpha", "--group-size",
                                       "--kv-dtype", "--kv-calib", "--kv-scale-gran", "--max-shard-size",
                                       "--target-size", "--target-bpw", "--candidates", "--sensitivity",
                                       "--sensitivity-cache", "--refine", "--proxy-sample"};
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int j = cli_json_arg(VERB, s, &a->json);
        if (j < 0) return CLI_USAGE;
        if (j) continue;
        if ((j = cli_calib_arg(VERB, argc, argv, &i, &a->calib)) < 0) return CLI_USAGE;
        if (j) continue;
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) { help(); return -1; }
        if (cli_is_quiet(s)) { a->quiet = 1; continue; }
        int trc;
        if ((j = qtgt_arg(VERB, argc, argv, &i, &a->tg, &trc)) < 0) return trc;
        if (j) continue;
        if (!strcmp(s, "--pure")) { a->o.pure = true; continue; }
        if (!strcmp(s, "--leave-output-tensor")) { a->o.leave_output = true; continue; }
        if (!strcmp(s, "--allow-requantize")) { a->o.allow_requantize = true; continue; }
        if (!strcmp(s, "--dry-run")) { a->dry_run = true; continue; }
        if (!strcmp(s, "--force")) { a->force = true; continue; }
        if (!strcmp(s, "--resumable")) { a->o.resumable = true; continue; }
        if (!strcmp(s, "--resume")) { a->o.resume = true; continue; }
        if (!strcmp(s, "--act-order")) { a->act_order = true; continue; }
        bool takes = false;
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++) takes |= !strcmp(s, with_value[k]);
        if (takes) {
            if (i + 1 >= argc) return cli_usage(VERB, "%s needs a value", s);
            int rc = parse_value(a, s, argv[++i]);
            if (rc != CLI_OK) return rc;
        } else if (s[0] == '-' && s[1]) return cli_usage(VERB, "unknown option '%s'", s);
        else if (!a->in) a->in = s;
        else if (!a->out) a->out = s;
        else return cli_usage(VERB, "too many arguments ('%s')", s);
    }
    if (!a->in || (!a->out && !a->dry_run)) return cli_usage(VERB, "need IN and OUT (OUT may be left out with --dry-run)");
    int trc = qtgt_resolve(VERB, a->in, a->target.file_bytes || a->target.bpw > 0, a->quiet, &a->tg);
    if (trc != CLI_OK) return trc;
    if (a->tg.kv) a->target.file_bytes = a->tg.file_bytes;
    const bool target = a->target.file_bytes || a->target.bpw > 0;
    if (a->tg.svg && !target) return cli_usage(VERB, "--svg draws a target's budget sweep: it goes with --target-size, "
                                                     "--target-bpw or --budget-for-kv");
    if (a->target.file_bytes && a->target.bpw > 0) return cli_usage(VERB, "--target-size and --target-bpw: give one of them");
    if (target && a->scheme)
        return cli_usage(VERB, "--scheme and --target-%s: the target chooses every tensor's GGUF type; give one of them",
                         a->target.file_bytes ? "size" : "bpw");
    if (a->target.candidates && !target) return cli_usage(VERB, "--candidates goes with --target-size or --target-bpw");
    if (a->sensitivity_given && !target) return cli_usage(VERB, "--sensitivity goes with --target-size or --target-bpw");
    if (a->refine >= 0 && !target) return cli_usage(VERB, "--refine goes with --target-size or --target-bpw");
    if (a->target.proxy_sample && !target) return cli_usage(VERB, "--proxy-sample goes with --target-size or --target-bpw");
    if (a->refine > 0 && !a->calib.file)
        return cli_usage(VERB, "--refine %d needs --calib FILE (the swaps are measured on its tokens)", a->refine);
    if (a->target.sensitivity_cache && !a->target.measured)
        return cli_usage(VERB, "--sensitivity-cache goes with --sensitivity measured");
    if (a->target.measured && !a->calib.file)
        return cli_usage(VERB, "--sensitivity measured needs --calib FILE (the KL divergence is measured on its tokens)");
    if (target) a->scheme = "f16"; /* a GGUF file; the allocation names its file type */
    if (!a->scheme) return cli_usage(VERB, "need --scheme (e.g. --scheme q4_k_m) or --target-size SIZE");
    if (a->dry_run && (a->o.resumable || a->o.resume))
        return cli_usage(VERB, "--%s: a dry run writes nothing to resume", a->o.resume ? "resume" : "resumable");
    if (a->calib.tuned && !a->calib.file && !(a->kv.on && a->kv.mode == QT_KV_CALIB_RANDOM))
        return cli_usage(VERB, "--nsamples, --seqlen, --seed and --allow-short-calib apply to --calib FILE (or to "
                               "--kv-calib random)");
    if (a->calib.file && a->o.imatrix && !target) /* with a target, the text gives the measured steps' tokens */
        return cli_usage(VERB, "--calib computes the importance matrix that --imatrix would give; use one of them");
    if (a->algo && !a->calib.file) return cli_usage(VERB, "--algo %s needs --calib FILE (calibration text)", a->algo);
    if (a->algo && a->o.imatrix)
        return cli_usage(VERB, "--imatrix is for --algo rtn; --algo %s uses the calibration text", a->algo);
    if (a->act_order && (!a->algo || a->then_rtn))
        return cli_usage(VERB, "--act-order goes with --algo gptq (or awq+gptq, smoothquant+gptq)");
    if (a->alpha >= 0 && a->smoothing != QT_SMOOTH_SMOOTHQUANT)
        return cli_usage(VERB, "--alpha goes with --algo smoothquant or smoothquant+gptq");
    a->o.algorithm = a->algo;
    int rc = qkv_check(VERB, &a->kv, a->calib.file != NULL);
    if (rc != CLI_OK) return rc;
    a->o.overrides = a->over;
    a->o.keep = a->keep;
    return CLI_OK;
}

/* The command as typed, for quanta.command_line, without the options that cannot
 * change the file (--dry-run, --json, -q, --force, --threads, --sensitivity-cache):
 * a dry run then predicts the file to the byte, every thread count writes the
 * same file, and a cached table chooses what a fresh measurement chooses. */
static bool no_effect(const char *a) {
    return !strcmp(a, "--dry-run") || !strncmp(a, "--json", 6) || cli_is_quiet(a) || !strcmp(a, "--force") ||
           !strcmp(a, "--resumable") || !strcmp(a, "--resume");
}

/* recorded: the command for quanta.command_line (no output-neutral options);
 * else the command that resumes this one (--resumable becomes --resume). */
static char *command_line(int argc, char **argv, bool recorded) {
    size_t n = strlen("quanta --resume") + 1;
    for (int i = 0; i < argc; i++) n += strlen(argv[i]) + 3;
    char *s = malloc(n);
    if (!s) return NULL;
    strcpy(s, "quanta");
    for (int i = 0; i < argc; i++) {
        if (recorded ? no_effect(argv[i]) : !strcmp(argv[i], "--resumable") || !strcmp(argv[i], "--resume")) continue;
        if (recorded && (!strcmp(argv[i], "--threads") || !strcmp(argv[i], "--svg") || !strcmp(argv[i], "--sensitivity-cache")) &&
            i + 1 < argc) { i++; continue; }
        strcat(s, " ");
        bool quote = strpbrk(argv[i], " \t'\"$\\*?[]|&;<>()") != NULL;
        if (quote) strcat(s, "'");
        strcat(s, argv[i]);
        if (quote) strcat(s, "'");
    }
    if (!recorded) strcat(s, " --resume");
    return s;
}

/* Test hooks, documented as such (docs/quantize.md): after N tensors,
 * QUANTA_TEST_STOP_AFTER_TENSORS=N cancels as SIGINT does, and
 * QUANTA_TEST_PAUSE_AFTER_TENSORS=N stops the process (SIGSTOP) so a test can
 * send a real signal at a known point without depending on time. */
static void test_hook(void *ctx, int32_t n_done) {
    (void)ctx;
    const char *stop = getenv("QUANTA_TEST_STOP_AFTER_TENSORS"), *pause = getenv("QUANTA_TEST_PAUSE_AFTER_TENSORS");
    if (stop && atoi(stop) == n_done) qt_request_cancel();
    if (pause && atoi(pause) == n_done) raise(SIGSTOP);
}

/* The same for GPTQ's layers: QUANTA_TEST_STOP_AFTER_LAYERS=N cancels once N layers are finished. */
static void test_hook_layers(void *ctx, int32_t n_done) {
    (void)ctx;
    const char *stop = getenv("QUANTA_TEST_STOP_AFTER_LAYERS");
    if (stop && atoi(stop) == n_done) qt_request_cancel();
}

/* Before a fresh run: what an interrupted one left is removed, and said so. */
static int clear_stale(const args *a) {
    bool removed = false;
    qt_status st = a->o.resume ? QT_OK : qt_quantize_clear_partial(a->out, &removed);
    if (st != QT_OK) return cli_fail(st);
    if (removed)
        fprintf(stderr, "quanta: removed %s%s left by an interrupted run%s\n", a->out, QT_QUANTIZE_PARTIAL_SUFFIX,
                qt_gguf_ftype_find(a->o.scheme ? a->o.scheme : "") ? " (--resume continues such a run instead)" : "");
    return CLI_OK;
}

/* VmHWM of this process in bytes (0 where /proc is missing). */
static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }
static json_t *gptq_memory_json(const qt_gptq_memory *x);

/* The allocation's choice per tensor: candidates considered, the chosen one's predicted cost. */
static void print_mix(const qt_quantize_mix *mx, const qt_quantize_plan *p) {
    fprintf(stderr, "\ntarget: %llu bytes of tensor data for %d tensors (%s), %llu used; predicted cost %.6g (%s, "
                    "sensitivity %s)\n", (unsigned long long)mx->budget_bytes, mx->n, "padded to the file's alignment",
            (unsigned long long)mx->used_bytes, mx->predicted_cost, mx->exact ? "exact knapsack" : "Lagrangian + repair",
            mx->sensitivity);
    if (mx->refine_kld_before > 0)
        fprintf(stderr, "refined: %d swaps kept; measured KL divergence on the calibration tokens %.6g -> %.6g\n",
                mx->refine_swaps, mx->refine_kld_before, mx->refine_kld_after);
    if (strcmp(mx->sensitivity, "proxy")) {
        fprintf(stderr, "measured: %d groups (%s); rank correlation with the proxy %.4f over %d (group, type) pairs\n",
                mx->n_groups, mx->cache_used ? "from the cache, nothing measured" : mx->cache_written ? "written to the cache" : "measured",
                mx->rank_correlation, mx->rank_pairs);
        fprintf(stderr, "additivity: predicted KLD %.6g, measured %.6g for the whole mix (ratio %.3f)\n", mx->predicted_cost,
                mx->measured_cost, mx->predicted_cost > 0 ? mx->measured_cost / mx->predicted_cost : NAN);
    }
    fprintf(stderr, "%-36s %-8s %12s %12s  %s\n", "tensor", "chosen", "bytes", "cost", "candidates");
    for (int32_t i = 0; i < mx->n; i++) {
        const qt_quantize_mix_tensor *t = &mx->t[i];
        fprintf(stderr, "%-36s %-8s %12llu %12.4g  %d\n", p->tensors[t->plan_index].name, qt_type_get(t->types[t->chosen])->name,
                (unsigned long long)t->bytes[t->chosen], t->cost[t->chosen], t->n_options);
    }
}

static void print_plan(const qt_quantize_plan *p) {
    fprintf(stderr, "%-36s %-8s %-8s %12s %7s\n", "tensor", "from", "to", "bytes", "bpw");
    for (int32_t i = 0; i < p->n_tensors; i++) {
        const qt_quantize_tensor *t = &p->tensors[i];
        fprintf(stderr, "%-36s %-8s %-8s %12llu %7.3f%s%s\n", t->name, qt_type_get(t->src_type)->name,
                qt_type_get(t->type)->name, (unsigned long long)t->bytes,
                t->n_elements ? 8.0 * (double)t->bytes / (double)t->n_elements : 0.0,
                t->fallback ? (t->quanta_fallback ? "  (fallback: llama-quantize refuses)" : "  (row-length fallback)") : "",
                t->kept ? "  (kept)" : "");
    }
}

static int cmp_snr(const void *a, const void *b) {
    const qt_quantize_tensor *x = *(const qt_quantize_tensor *const *)a, *y = *(const qt_quantize_tensor *const *)b;
    return x->snr_db < y->snr_db ? -1 : x->snr_db > y->snr_db;
}

static void print_summary(const args *a, const qt_quantize_plan *p, double seconds, uint64_t rss) {
    fprintf(stderr, "\n%s -> %s (%s)\n", a->in, a->dry_run ? "(dry run)" : a->out, p->ftype->name);
    fprintf(stderr, "  size     %10.2f MiB -> %10.2f MiB (file %llu bytes)\n", mib(p->input_bytes), mib(p->tensor_bytes),
            (unsigned long long)p->output_bytes);
    fprintf(stderr, "  bpw      %.4f\n", p->bits_per_weight);
    if (a->mix && strcmp(a->mix->sensitivity, "proxy"))
        fprintf(stderr, "  mix KLD  predicted %.6g, measured %.6g on the calibration tokens (all at once; ratio %.3f)\n",
                a->mix->predicted_cost, a->mix->measured_cost,
                a->mix->predicted_cost > 0 ? a->mix->measured_cost / a->mix->predicted_cost : NAN);
    if (a->algo)
        fprintf(stderr, "  algorithm %s, calibrated on %s (%d x %d tokens)\n", a->algo, a->qc.set.path, a->qc.set.n_samples,
                a->qc.set.seq_len);
    if (p->n_fallbacks) fprintf(stderr, "  fallbacks %d (recorded in quanta.fallbacks)\n", p->n_fallbacks);
    if (a->dry_run) {
        fprintf(stderr, "  peak memory (estimated) %.1f MiB\n", mib(p->peak_rss_estimate));
        return;
    }
    fprintf(stderr, "  time     %.2f s, peak RSS %.1f MiB\n", seconds, mib(rss));
    const qt_quantize_tensor **w = calloc((size_t)p->n_tensors + 1, sizeof *w);
    int n = 0;
    for (int32_t i = 0; w && i < p->n_tensors; i++)
        if (p->tensors[i].measured) w[n++] = &p->tensors[i];
    if (w) qsort(w, (size_t)n, sizeof *w, cmp_snr);
    if (n) fprintf(stderr, "  worst tensors by SNR:\n  %-36s %-8s %12s %9s\n", "tensor", "type", "rmse", "snr_db");
    for (int i = 0; i < n && i < 8; i++)
        fprintf(stderr, "  %-36s %-8s %12.4g %9.2f\n", w[i]->name, qt_type_get(w[i]->type)->name, w[i]->rmse, w[i]->snr_db);
    free(w);
}

static json_t *calib_json(const qt_calib_set *c) {
    return json_pack("{s:s, s:s, s:I, s:I, s:i, s:i, s:I}", "file", c->path, "sha256", c->fp.sha256, "file_bytes",
                     (json_int_t)c->file_bytes, "tokens", (json_int_t)c->file_tokens, "nsamples", c->n_samples, "seqlen",
                     c->seq_len, "seed", (json_int_t)c->seed);
}

/* "target": the budget, the choice, and every tensor's candidates with their bytes and predicted cost. */
static json_t *mix_json(const args *a, const qt_quantize_mix *mx, const qt_quantize_plan *p) {
    json_t *o = json_object(), *ts = json_array();
    if (a->target.file_bytes) json_object_set_new(o, "file_bytes", json_integer((json_int_t)a->target.file_bytes));
    else json_object_set_new(o, "bpw", json_real(a->target.bpw));
    json_object_set_new(o, "budget_bytes", json_integer((json_int_t)mx->budget_bytes));
    json_object_set_new(o, "used_bytes", json_integer((json_int_t)mx->used_bytes));
    json_object_set_new(o, "predicted_cost", json_real(mx->predicted_cost));
    json_object_set_new(o, "exact", json_boolean(mx->exact));
    json_object_set_new(o, "sensitivity", json_string(mx->sensitivity));
    if (mx->refine_kld_before > 0)
        json_object_set_new(o, "refine", json_pack("{s:i, s:f, s:f}", "swaps", mx->refine_swaps, "kld_before",
                                                   mx->refine_kld_before, "kld_after", mx->refine_kld_after));
    if (strcmp(mx->sensitivity, "proxy")) {
        json_object_set_new(o, "groups", json_integer(mx->n_groups));
        json_object_set_new(o, "rank_correlation", isfinite(mx->rank_correlation) ? json_real(mx->rank_correlation) : json_null());
        json_object_set_new(o, "rank_pairs", json_integer(mx->rank_pairs));
        json_object_set_new(o, "measured_cost", isfinite(mx->measured_cost) ? json_real(mx->measured_cost) : json_null());
        json_t *cache = json_object();
        json_object_set_new(cache, "file", a->target.sensitivity_cache ? json_string(a->target.sensitivity_cache) : json_null());
        json_object_set_new(cache, "used", json_boolean(mx->cache_used));
        json_object_set_new(cache, "written", json_boolean(mx->cache_written));
        json_object_set_new(cache, "note", json_string(mx->cache_note));
        json_object_set_new(o, "sensitivity_cache", cache);
    }
    for (int32_t i = 0; i < mx->n; i++) {
        const qt_quantize_mix_tensor *t = &mx->t[i];
        json_t *e = json_object(), *opts = json_array();
        json_object_set_new(e, "name", json_string(p->tensors[t->plan_index].name));
        json_object_set_new(e, "type", json_string(qt_type_get(t->types[t->chosen])->name));
        for (int32_t k = 0; k < t->n_options; k++)
            json_array_append_new(opts, json_pack("{s:s, s:I, s:f}", "type", qt_type_get(t->types[k])->name, "bytes",
                                                  (json_int_t)t->bytes[k], "cost", t->cost[k]));
        json_object_set_new(e, "candidates", opts);
        json_array_append_new(ts, e);
    }
    json_object_set_new(o, "tensors", ts);
    return o;
}

static int emit_json(const args *a, const qt_quantize_plan *p, uint64_t rss) {
    json_t *root = json_object(), *ts = json_array();
    json_object_set_new(root, "input", json_string(a->in));
    json_object_set_new(root, "output", a->out ? json_string(a->out) : json_null());
    json_object_set_new(root, "scheme", json_string(p->ftype->name));
    json_object_set_new(root, "algorithm", json_string(a->algo ? a->algo : "rtn"));
    json_object_set_new(root, "dry_run", json_boolean(a->dry_run));
    json_object_set_new(root, "input_bytes", json_integer((json_int_t)p->input_bytes));
    json_object_set_new(root, "tensor_bytes", json_integer((json_int_t)p->tensor_bytes));
    json_object_set_new(root, "output_bytes", json_integer((json_int_t)p->output_bytes));
    json_object_set_new(root, "bits_per_weight", json_real(p->bits_per_weight));
    json_object_set_new(root, "peak_rss_bytes", json_integer((json_int_t)(a->dry_run ? p->peak_rss_estimate : rss)));
    json_object_set_new(root, "peak_rss_measured", json_boolean(!a->dry_run));
    if (a->algo) json_object_set_new(root, "peak_rss_estimate_bytes", json_integer((json_int_t)a->mem.total));
    if (a->algo) json_object_set_new(root, "peak_rss_estimate_terms", gptq_memory_json(&a->mem));
    json_object_set_new(root, "fallbacks", json_integer(p->n_fallbacks));
    if (!a->dry_run) json_object_set_new(root, "resumed_tensors", json_integer(p->n_resumed));
    if (p->imatrix_sha256[0]) json_object_set_new(root, "imatrix_sha256", json_string(p->imatrix_sha256));
    if (a->o.calib) json_object_set_new(root, "calibration", calib_json(a->o.calib));
    if (a->kv.on) json_object_set_new(root, "kv_cache", qkv_json(&a->kv));
    for (int32_t i = 0; i < p->n_tensors; i++) {
        const qt_quantize_tensor *t = &p->tensors[i];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(t->name));
        json_object_set_new(o, "type", json_string(qt_type_get(t->type)->name));
        json_object_set_new(o, "bytes", json_integer((json_int_t)t->bytes));
        json_object_set_new(o, "bpw", json_real(t->n_elements ? 8.0 * (double)t->bytes / (double)t->n_elements : 0));
        if (t->fallback) json_object_set_new(o, "fallback_from", json_string(qt_type_get(t->wanted)->name));
        if (t->measured) {
            json_object_set_new(o, "rmse", json_real(t->rmse));
            json_object_set_new(o, "snr_db", isfinite(t->snr_db) ? json_real(t->snr_db) : json_null());
        }
        json_array_append_new(ts, o);
    }
    if (a->mix) json_object_set_new(root, "target", mix_json(a, a->mix, p));
    if (a->tg.kv) json_object_set_new(root, "budget_for_kv", qtgt_json(&a->tg));
    if (a->sweep) json_object_set_new(root, "sweep", qtgt_sweep_json(a->sweep));
    json_object_set_new(root, "tensors", ts);
    return cli_json_emit_tree(&a->json, root, 0, a->in);
}

static void notes(const args *a, const qt_quantize_plan *p) {
    if (a->quiet) return;
    for (int32_t i = 0; i < p->n_tensors; i++) {
        const qt_quantize_tensor *t = &p->tensors[i];
        if (t->imatrix_missing)
            fprintf(stderr, "quanta: note: %s has no entry for %s: quantized without importance weights, as llama-quantize does\n",
                    a->o.imatrix_label ? a->o.imatrix_label : a->o.imatrix, t->name);
        if (t->quanta_fallback)
            fprintf(stderr, "quanta: note: %s: row length does not fit %s and llama-quantize has no fallback (it refuses); "
                            "writing %s\n", t->name, qt_type_get(t->wanted)->name, qt_type_get(t->type)->name);
    }
    if (p->n_requantized)
        fprintf(stderr, "quanta: warning: %d tensors were already quantized; requantizing loses quality twice\n",
                p->n_requantized);
}

/* ---- --algo gptq ------------------------------------------------------------------------------------- */

static void gptq_note(void *ctx, const char *msg) {
    const args *a = ctx;
    if (!a->quiet) fprintf(stderr, "quanta: %s: %s\n", a->algo, msg);
}

static qt_gptq_run_opts gptq_opts(args *a) {
    qt_gptq_run_opts g = qt_gptq_run_opts_default();
    g.tokens = a->qc.set.tokens;
    g.n_seq = a->qc.set.n_samples;
    g.n_tok = a->qc.set.seq_len;
    g.gptq.act_order = a->act_order;
    g.smoothing = a->smoothing;
    g.rtn = a->then_rtn;
    if (a->alpha >= 0) g.alpha = a->alpha;
    g.threads = a->o.threads;
    g.note = gptq_note;
    g.note_ctx = a;
    if (a->kv.on && a->kv.mode == QT_KV_CALIB_DATA) g.kv_data = &a->kv.s;
    g.layer_written = test_hook_layers;
    const char *prof = getenv("QUANTA_GPTQ_PROFILE");
    g.profile = prof && !strcmp(prof, "1");
    return g;
}

/* VmRSS of this process in bytes (0 where /proc is missing). */
static uint64_t rss_now(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size = 0, res = 0;
    if (f && fscanf(f, "%llu %llu", &size, &res) != 2) res = 0;
    if (f) fclose(f);
    return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* The GPTQ peak estimate from the shapes and what is resident now (quanta/quantize.h). */
static qt_gptq_memory gptq_memory(const args *a, const qt_model *m, const qt_quantize_plan *p, int64_t ct_group) {
    qt_gptq_memory mem;
    qt_gptq_memory_estimate(m, p, ct_group, a->qc.set.tokens, a->qc.set.n_samples, a->qc.set.seq_len,
                            a->o.threads > 0 ? a->o.threads : qt_default_threads(), rss_now(), qt_bench_peak_rss(), &mem);
    return mem;
}

/* The estimate's terms (the same names `quanta plan --json` gives its quanta_job). */
static json_t *gptq_memory_json(const qt_gptq_memory *x) {
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "base", (json_int_t)x->base, "peak_before",
                     (json_int_t)x->peak_before, "model", (json_int_t)x->model, "engine", (json_int_t)x->engine, "hidden",
                     (json_int_t)x->hidden, "hessians", (json_int_t)x->hessians, "linear", (json_int_t)x->linear,
                     "output", (json_int_t)x->output, "write", (json_int_t)x->write, "blas", (json_int_t)x->blas);
}

static void gptq_memory_print(const qt_gptq_memory *x, uint64_t measured) {
    fprintf(stderr, "  gptq memory (estimated) %.1f MiB: resident before %.1f (peak so far %.1f), model %.1f, engine %.1f, hidden states "
                    "%.1f, Hessians %.1f, largest linear %.1f, output %.1f, write %.1f, BLAS %.1f\n", mib(x->total),
            mib(x->base), mib(x->peak_before), mib(x->model), mib(x->engine), mib(x->hidden), mib(x->hessians), mib(x->linear),
            mib(x->output), mib(x->write), mib(x->blas));
    if (measured)
        fprintf(stderr, "  gptq memory measured (VmHWM) %.1f MiB: %+.1f %% against the estimate\n", mib(measured),
                100.0 * ((double)measured / (double)x->total - 1.0));
}

static void gptq_summary(const args *a, const qt_gptq_report *r) {
    if (a->quiet) return;
    if (a->smoothing == QT_SMOOTH_AWQ)
        fprintf(stderr, "quanta: %s: %d folding pairs smoothed (%d kept s = 1), output error %.4g against RTN's %.4g "
                        "(%.3fx), %lld dead channels\n", a->algo, r->n_smoothed, r->n_awq_identity, r->awq_loss,
                r->awq_loss_rtn, r->awq_loss_rtn > 0 ? r->awq_loss / r->awq_loss_rtn : 1.0, (long long)r->n_dead_channels);
    if (a->smoothing == QT_SMOOTH_SMOOTHQUANT)
        fprintf(stderr, "quanta: %s: %d norms smoothed, %lld dead channels\n", a->algo, r->n_smoothed,
                (long long)r->n_dead_channels);
    if (!a->then_rtn)
        fprintf(stderr, "quanta: %s: %d linears by GPTQ, %d rounded to nearest (no grid), %d Cholesky retries, "
                        "%lld dead columns, %.1f s\n", a->algo, r->n_gptq, r->n_rtn, r->n_retries,
                (long long)r->n_dead_cols, r->seconds);
    else
        fprintf(stderr, "quanta: %s: layers done in %.1f s\n", a->algo, r->seconds);
}

static qt_status run_gptq(args *a, qt_model *m, qt_quantize_plan *p) {
    a->mem = gptq_memory(a, m, p, 0);
    qt_gptq_run_opts g = gptq_opts(a);
    qt_gptq_report r;
    qt_status st = qt_gptq_quantize_gguf(m, a->out, &a->o, p, &g, &r);
    if (st == QT_OK) gptq_summary(a, &r);
    if (st != QT_OK && r.n_layers_kept) {
        fprintf(stderr, "quanta: kept %d finished GPTQ layers in %s%s and its state file; to continue:\n  %s\n",
                r.n_layers_kept, a->out, QT_QUANTIZE_LAYERS_SUFFIX, a->resume_cmd ? a->resume_cmd : "(out of memory)");
        p->partial_kept = false; /* said here */
    }
    return st;
}

/* --calib for a GGUF scheme: the importance matrix, computed here, read by the plan;
 * with --algo gptq the samples themselves (GPTQ's Hessians replace the imatrix). */
static int gguf_calibrate(args *a, const qt_model *m) {
    if (!a->calib.file) return CLI_OK;
    if (a->o.imatrix) /* --sensitivity measured with --imatrix: the samples are the measurement's tokens only */
        return qcalib_samples(m, &a->calib, &a->qc);
    if (a->algo) { /* the samples, in a dry run too: their provenance keys are in the file's size */
        int rc = qcalib_samples(m, &a->calib, &a->qc);
        if (rc == CLI_OK) a->o.calib = &a->qc.set;
        return rc;
    }
    int rc = qcalib_imatrix(m, &a->calib, a->o.threads, a->quiet, &a->qc);
    if (rc != CLI_OK) return rc;
    a->o.imatrix = a->qc.imatrix_path;
    a->o.imatrix_label = a->calib.file;
    a->o.calib = &a->qc.set;
    return CLI_OK;
}

/* --kv-dtype: the scales, sized before the plan (they are in the file's size), fitted
 * now unless GPTQ fits them on its way or this is a dry run. */
static int kv_scales(args *a, const qt_model *m) {
    if (!a->kv.on) return CLI_OK;
    int rc = qkv_init(&a->kv, m);
    if (rc == CLI_OK && !a->dry_run) rc = qkv_fit(&a->kv, m, &a->qc.set, &a->calib, a->algo != NULL, a->o.threads, a->quiet);
    return rc;
}

static int run_gguf(args *a, qt_model *m) {
    qt_quantize_plan *p = NULL;
    if (a->group_size)
        return cli_usage(VERB, "--group-size applies to the compressed-tensors integer schemes (w4a16, w4a16-asym, w8a16); "
                               "a GGUF type's blocks are fixed (--scheme %s)", a->scheme);
    int rc = gguf_calibrate(a, m);
    if (rc == CLI_OK) rc = kv_scales(a, m);
    if (rc != CLI_OK) return rc;
    if (a->kv.on) a->o.kv_scales = &a->kv.s;
    const bool target = a->target.file_bytes || a->target.bpw > 0;
    if (target) a->o.scheme = NULL; /* named by the allocation */
    a->target.tokens = a->qc.set.tokens;
    a->target.n_seq = a->qc.set.n_samples;
    a->target.n_tok = a->qc.set.seq_len;
    /* refinement by default only where the user asked for measurement: a proxy run stays one cheap scan */
    a->target.refine_rounds = a->refine >= 0 ? a->refine : a->qc.set.tokens && a->target.measured ? 4 : 0;
    /* plain GPTQ: the measured costs and the refinement quantize the linears by GPTQ as the run will */
    if (target && a->algo && !strcmp(a->algo, "gptq")) a->target_gptq = gptq_opts(a), a->target.gptq = &a->target_gptq;
    qt_status st = target ? qt_quantize_plan_target(m, &a->o, &a->target, &p, &a->mix) : qt_quantize_plan_make(m, &a->o, &p);
    if (target && st == QT_OK) a->o.scheme = p->ftype->name;
    if (st == QT_OK && a->tg.svg) { /* before the computed imatrix goes: the presets quantize with it */
        char title[512];
        snprintf(title, sizeof title, "%s: target %llu bytes", a->in, (unsigned long long)a->target.file_bytes);
        if (!a->target.file_bytes) snprintf(title, sizeof title, "%s: target %g bits per weight", a->in, a->target.bpw);
        rc = qtgt_picture(&a->tg, m, &a->o, a->mix, p, title, &a->sweep);
        if (rc == CLI_OK && !a->quiet) fprintf(stderr, "quanta: wrote %s\n", a->tg.svg);
    }
    qcalib_drop_file(&a->qc); /* the plan has it mapped */
    if (st != QT_OK) return cli_fail(st);
    if (rc != CLI_OK) { qt_quantize_plan_free(p); qt_quantize_mix_free(a->mix); a->mix = NULL; return rc; }
    notes(a, p);
    if (!a->quiet && a->mix && a->mix->cache_note[0]) fprintf(stderr, "quanta: note: %s\n", a->mix->cache_note);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (a->dry_run) {
        if (!a->quiet) print_plan(p);
        if (!a->quiet && a->mix) print_mix(a->mix, p);
        if (a->algo) {
            a->mem = gptq_memory(a, m, p, 0);
            p->peak_rss_estimate = a->mem.total;
        }
    } else {
        a->o.progress = cli_progress(a->quiet);
        a->o.tensor_written = test_hook;
        st = a->algo ? run_gptq(a, m, p) : qt_quantize_run(m, a->out, &a->o, p);
        cli_progress_end();
        if (st != QT_OK) rc = cli_fail(st);
        if (st != QT_OK && p->partial_kept)
            fprintf(stderr, "quanta: kept %s%s (%d tensors complete) and its state file; to continue:\n  %s\n", a->out,
                    QT_QUANTIZE_PARTIAL_SUFFIX, p->n_done, a->resume_cmd ? a->resume_cmd : "(out of memory)");
        if (st == QT_OK && p->n_resumed && !a->quiet)
            fprintf(stderr, "quanta: resumed: %d tensors were already complete in %s%s\n", p->n_resumed, a->out,
                    QT_QUANTIZE_PARTIAL_SUFFIX);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const uint64_t rss = qt_bench_peak_rss(); /* VmHWM */
    if (rc == CLI_OK && !a->quiet)
        print_summary(a, p, (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), rss);
    if (rc == CLI_OK && !a->quiet && !a->dry_run) qkv_report(&a->kv);
    if (rc == CLI_OK && !a->quiet && a->algo) gptq_memory_print(&a->mem, a->dry_run ? 0 : rss);
    if (rc == CLI_OK && a->json.on) rc = emit_json(a, p, rss);
    qt_quantize_plan_free(p);
    qt_quantize_mix_free(a->mix);
    a->mix = NULL;
    qt_quantize_sweep_free(a->sweep);
    a->sweep = NULL;
    return rc;
}

/* ---- compressed-tensors (vLLM) output: qt_ct_export ---------------------------------------------- */

static void ct_warn(void *ctx, const char *msg) {
    if (!*(const int *)ctx) fprintf(stderr, "quanta: warning: %s\n", msg);
}

/* --imatrix on an integer scheme: the importance weights of each linear (qt_ct_export_opts.importance). */
typedef struct ct_imatrix {
    qt_imatrix *im;
    const char *label;
    float *buf;
    int64_t cap;
    int quiet;
} ct_imatrix;

static const float *ct_importance(void *ctx, const char *name, int64_t cols) {
    ct_imatrix *c = ctx;
    if (cols > c->cap) {
        float *b = realloc(c->buf, (size_t)cols * sizeof *b);
        if (!b) return NULL;
        c->buf = b;
        c->cap = cols;
    }
    const qt_status st = qt_imatrix_get(c->im, name, cols, 1, c->buf);
    if (st == QT_OK) return c->buf;
    if (!c->quiet)
        fprintf(stderr, "quanta: note: %s: %s: quantized without importance weights (minmax)\n", c->label,
                st == QT_ERR_NOT_FOUND ? "no entry for this tensor" : qt_last_error());
    return NULL;
}

/* GGUF-only options make no sense for a compressed-tensors directory: say so. */
static int ct_refuse_gguf_options(const args *a, bool int_scheme) {
    const char *opt = a->o.imatrix && !int_scheme ? "--imatrix" : a->o.n_overrides ? "--tensor-type"
                    : a->o.output_type != QT_TYPE_COUNT ? "--output-tensor-type"
                    : a->o.embd_type != QT_TYPE_COUNT ? "--token-embedding-type" : a->o.pure ? "--pure"
                    : a->o.leave_output ? "--leave-output-tensor" : NULL;
    return opt ? cli_usage(VERB, "%s applies to GGUF schemes only; --scheme %s writes a compressed-tensors directory", opt,
                           a->scheme)
               : CLI_OK;
}

/* A tensor's integer strategy for the dry-run listing: "g64", "channel", or "". */
static const char *strategy_label(const qt_ct_export_tensor *t) {
    static _Thread_local char buf[32];
    if (!t->strategy) return "";
    if (!t->group_size) return t->strategy;
    snprintf(buf, sizeof buf, "g%lld", (long long)t->group_size);
    return buf;
}

static int ct_emit_json(const args *a, const qt_ct_export_estimate *e, uint64_t rss) {
    json_t *root = json_object(), *ts = json_array();
    json_object_set_new(root, "input", json_string(a->in));
    json_object_set_new(root, "output", a->out ? json_string(a->out) : json_null());
    json_object_set_new(root, "scheme", json_string(e->scheme));
    json_object_set_new(root, "algorithm", json_string(a->algo ? a->algo : "rtn"));
    json_object_set_new(root, "preset", json_string(e->preset));
    json_object_set_new(root, "format", json_string(e->format));
    json_object_set_new(root, "dry_run", json_boolean(a->dry_run));
    json_object_set_new(root, "output_bytes", json_integer((json_int_t)e->tensor_bytes));
    json_object_set_new(root, "shards", json_integer(e->n_shards));
    json_object_set_new(root, "bits_per_weight", json_real(e->bits_per_weight));
    json_object_set_new(root, "peak_rss_bytes", a->dry_run ? json_null() : json_integer((json_int_t)rss));
    json_object_set_new(root, "kernel_warnings", json_integer(e->n_warnings));
    if (!a->dry_run) json_object_set_new(root, "resumed_tensors", json_integer(e->n_resumed));
    json_object_set_new(root, "per_channel_fallback", json_integer(e->n_fallback));
    if (a->algo) json_object_set_new(root, "peak_rss_estimate_bytes", json_integer((json_int_t)a->mem.total));
    if (a->algo) json_object_set_new(root, "peak_rss_estimate_terms", gptq_memory_json(&a->mem));
    if (a->calib.file) json_object_set_new(root, "calibration", calib_json(&a->qc.set));
    if (a->kv.on) json_object_set_new(root, "kv_cache", qkv_json(&a->kv));
    for (int32_t i = 0; i < e->n_tensors; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(e->tensors[i].name));
        json_object_set_new(o, "hf_name", json_string(e->tensors[i].hf_name));
        json_object_set_new(o, "type", json_string(e->tensors[i].kind));
        if (e->tensors[i].strategy) {
            json_object_set_new(o, "strategy", json_string(e->tensors[i].strategy));
            json_object_set_new(o, "group_size", e->tensors[i].group_size ? json_integer(e->tensors[i].group_size) : json_null());
        }
        json_object_set_new(o, "bytes", json_integer((json_int_t)e->tensors[i].bytes));
        json_array_append_new(ts, o);
    }
    json_object_set_new(root, "tensors", ts);
    return cli_json_emit_tree(&a->json, root, 0, a->in);
}

/* A resumable compressed-tensors run: what was kept and how to continue, or what a resume reused. */
static void ct_resume_notes(const args *a, const qt_ct_export_estimate *e, qt_status st) {
    if (st != QT_OK && e->partial_kept) {
        fprintf(stderr, "quanta: kept %s%s (%d of %d stored tensors complete) and its state file; to continue:\n  %s\n",
                a->out, QT_CT_PARTIAL_SUFFIX, e->n_stored_done, e->n_stored, a->resume_cmd ? a->resume_cmd : "(out of memory)");
    }
    if (st == QT_OK && e->n_resumed && !a->quiet)
        fprintf(stderr, "quanta: resumed: %d of %d stored tensors were already complete in %s%s\n", e->n_resumed,
                e->n_stored, a->out, QT_CT_PARTIAL_SUFFIX);
}

static int run_ct(args *a, const qt_model *m, const char *key) {
    qt_ct_int_args ia = {0};
    const bool int_scheme = qt_ct_int_scheme(m, key, &ia) == QT_OK;
    int rc = ct_refuse_gguf_options(a, int_scheme && !a->algo);
    if (rc == CLI_OK) rc = qkv_ct(VERB, &a->kv, NULL);
    if (rc != CLI_OK) return rc;
    const char *keep[MAX_PATTERNS + 1];
    for (int32_t i = 0; i < a->o.n_keep; i++) keep[i] = a->o.keep[i];
    keep[a->o.n_keep] = NULL;
    qt_ct_export_opts o = {.force = a->force, .n_threads = a->o.threads, .keep = keep, .command = a->o.command_line,
                           .warn = ct_warn, .warn_ctx = &a->quiet, .method = a->algo, .max_shard_bytes = a->max_shard,
                           .resumable = a->o.resumable, .resume = a->o.resume, .tensor_written = test_hook,
                           .group_size = a->group_size};
    qt_gguf_kv calib_kv[QT_CALIB_MAX_KV];
    if (a->calib.file && a->algo) {
        /* fp8-static and nvfp4 also take the activations' absmax (observed on the unquantized model, as for rtn) */
        const bool act = qt_ct_scheme_uses_act_stats(key);
        if (act && a->smoothing != QT_SMOOTH_NONE) /* the absmax would be the unsmoothed activations' */
            return cli_usage(VERB, "--algo %s with --scheme %s: the static input scales are observed on the unsmoothed "
                             "model, which the smoothing changes; not supported (fp8-dynamic takes no input scale)",
                             a->algo, key);
        if ((rc = act ? qcalib_amax(m, &a->calib, a->o.threads, a->quiet, &a->qc) : qcalib_samples(m, &a->calib, &a->qc)) !=
            CLI_OK)
            return rc;
        if (act) {
            o.input_amax = qcalib_amax_cb;
            o.input_amax_ctx = &a->qc;
        }
        o.calibration = calib_kv;
        o.n_calibration = qt_calib_set_gguf_kv(&a->qc.set, calib_kv);
    } else if (a->calib.file) {
        const bool kv_only = !qt_ct_scheme_uses_act_stats(key);
        if (kv_only && !(a->kv.on && a->kv.mode == QT_KV_CALIB_DATA))
            return cli_usage(VERB, "--calib: scheme %s quantizes weights by round-to-nearest and its activations dynamically "
                                   "or not at all; it takes no calibration (fp8-static and nvfp4 do, and --kv-calib data)", key);
        if ((rc = kv_only ? qcalib_samples(m, &a->calib, &a->qc)
                          : qcalib_amax(m, &a->calib, a->o.threads, a->quiet, &a->qc)) != CLI_OK)
            return rc;
        if (!kv_only) {
            o.input_amax = qcalib_amax_cb;
            o.input_amax_ctx = &a->qc;
        }
        o.calibration = calib_kv;
        o.n_calibration = qt_calib_set_gguf_kv(&a->qc.set, calib_kv);
    }
    if ((rc = kv_scales(a, m)) != CLI_OK || (rc = qkv_ct(VERB, &a->kv, &o)) != CLI_OK) return rc;
    ct_imatrix imx = {.label = a->o.imatrix, .quiet = a->quiet};
    char imx_sha[65];
    qt_gguf_kv imx_kv[1];
    if (a->o.imatrix) {
        qt_status ist = qt_imatrix_open(a->o.imatrix, &imx.im);
        char *buf = NULL;
        size_t len = 0;
        if (ist == QT_OK && (ist = qt_read_file(a->o.imatrix, &buf, &len)) != QT_OK) qt_imatrix_close(imx.im);
        if (ist != QT_OK) return cli_fail(ist);
        /* provenance (quantization_config.quanta.calibration), and so part of a resumed run's identity */
        qt_sha256_hex(buf, len, imx_sha);
        free(buf);
        imx_kv[0] = (qt_gguf_kv){QT_QUANTIZE_KEY_IMATRIX_SHA256,
                                 {.type = QT_GGUF_STRING, .str = {.ptr = imx_sha, .len = strlen(imx_sha)}}};
        o.calibration = imx_kv;
        o.n_calibration = 1;
        o.importance = ct_importance;
        o.importance_ctx = &imx;
        o.method = "imatrix-rtn";
    }
    qt_ct_export_estimate e = {0};
    qt_status st;
    if (int_scheme && a->algo)
        a->mem = gptq_memory(a, m, NULL, ia.strategy == QT_CT_GROUP ? (a->group_size ? a->group_size : ia.group_size) : 0);
    if (a->dry_run) {
        st = qt_ct_export_estimate_plan(m, key, &o, &e);
    } else if (a->algo) {
        qt_gptq_run_opts g = gptq_opts(a);
        qt_gptq_report r;
        o.progress = cli_progress(a->quiet);
        st = qt_gptq_quantize_ct(m, key, a->out, &o, &g, &e, &r);
        cli_progress_end();
        if (st == QT_OK) gptq_summary(a, &r);
        if (st != QT_OK && r.n_layers_kept && !e.partial_kept)
            fprintf(stderr, "quanta: kept %d finished %s layers in %s%s and its state file; to continue:\n  %s\n",
                    r.n_layers_kept, a->algo, a->out, QT_QUANTIZE_LAYERS_SUFFIX,
                    a->resume_cmd ? a->resume_cmd : "(out of memory)");
    } else {
        o.progress = cli_progress(a->quiet);
        st = qt_ct_export(m, key, a->out, &o, &e);
        cli_progress_end();
    }
    qt_imatrix_close(imx.im);
    free(imx.buf);
    if (st != QT_OK) {
        rc = cli_fail(st);
        ct_resume_notes(a, &e, st);
        return rc;
    }
    ct_resume_notes(a, &e, st);
    const uint64_t rss = qt_bench_peak_rss(); /* VmHWM */
    if (!a->quiet) {
        for (int32_t i = 0; a->dry_run && i < e.n_tensors; i++)
            fprintf(stderr, "%-36s %-18s %-10s %12llu\n", e.tensors[i].name, e.tensors[i].kind,
                    strategy_label(&e.tensors[i]), (unsigned long long)e.tensors[i].bytes);
        fprintf(stderr, "\n%s -> %s (%s, llm-compressor %s, format %s)\n", a->in, a->dry_run ? "(dry run)" : a->out, e.scheme,
                e.preset, e.format);
        fprintf(stderr, "  tensors  %d quantized, %d kept 16-bit; %.2f MiB in %d shard%s; %.4f bpw\n", e.n_quantized, e.n_kept,
                mib(e.tensor_bytes), e.n_shards, e.n_shards == 1 ? "" : "s", e.bits_per_weight);
        if (e.n_fallback)
            fprintf(stderr, "  strategy %d of %d linears per channel: no group of %lld divides their input width\n",
                    e.n_fallback, e.n_quantized, (long long)(a->group_size ? a->group_size : ia.group_size));
        if (a->algo)
            fprintf(stderr, "  algorithm %s, calibrated on %s (%d x %d tokens)\n", a->algo, a->qc.set.path,
                    a->qc.set.n_samples, a->qc.set.seq_len);
        if (!a->dry_run) fprintf(stderr, "  peak RSS %.1f MiB\n", mib(rss));
        if (!a->dry_run) qkv_report(&a->kv);
        if (a->algo) gptq_memory_print(&a->mem, a->dry_run ? 0 : rss);
    }
    if (a->json.on) rc = ct_emit_json(a, &e, rss);
    qt_ct_export_estimate_free(&e);
    return rc;
}

static int run_ct_open(args *a, const char *ct_key);
static int run_gguf_open(args *a, const qt_gguf_ftype_info *ft);

/* One run per OUT (qt_quantize_lock_take), taken before anything is staged. None for a
 * dry run, stdout, a device, or a parent directory that does not exist (the writer's own
 * message says so). */
static int lock_out(const args *a, bool ct, qt_quantize_lock **l) {
    *l = NULL;
    struct stat sb;
    if (a->dry_run || !strcmp(a->out, "-")) return CLI_OK;
    if (stat(a->out, &sb) == 0 && !(ct ? S_ISDIR(sb.st_mode) : S_ISREG(sb.st_mode))) return CLI_OK;
    char *dir = strdup(a->out);
    if (!dir) return cli_fail(qt_error(QT_ERR_NOMEM, "out of memory"));
    const bool parent = stat(dirname(dir), &sb) == 0 && S_ISDIR(sb.st_mode);
    free(dir);
    qt_status st = parent ? qt_quantize_lock_take(a->out, l) : QT_OK;
    return st == QT_OK ? CLI_OK : cli_fail(st);
}

/* The one place a scheme picks its output path. */
static int run_scheme(args *a) {
    const qt_gguf_ftype_info *ft = qt_gguf_ftype_find(a->scheme);
    const char *ct_key = ft ? NULL : qt_ct_scheme_canonical(a->scheme);
    if (!ft && !ct_key) {
        const qt_scheme_info *s = qt_scheme_resolve(a->scheme);
        if (s && s->gguf) ft = s->gguf;
        else if (s && s->runtime == QT_RUNTIME_VLLM) {
            fprintf(stderr, "quanta: error: --scheme %s: no compressed-tensors writer for this scheme; the vLLM schemes "
                            "quanta writes are w4a16, w4a16-asym, w8a16, w8a8-int8, fp8-dynamic, fp8-static, fp8-block, "
                            "nvfp4, mxfp4\n", a->scheme);
            return CLI_FAIL;
        } else if (s) {
            fprintf(stderr, "quanta: error: --scheme %s: %s checkpoints are not written by quanta quantize\n", a->scheme,
                    s->title);
            return CLI_FAIL;
        } else {
            return cli_usage(VERB, "unknown scheme '%s' (GGUF file types: q4_k_m, q8_0, iq4_xs, ... see --help)", a->scheme);
        }
    }
    qt_quantize_lock *lock;
    int rc = lock_out(a, ct_key != NULL, &lock);
    if (rc != CLI_OK) return rc;
    rc = ct_key ? run_ct_open(a, ct_key) : run_gguf_open(a, ft);
    qt_quantize_unlock(lock);
    return rc;
}

static int run_ct_open(args *a, const char *ct_key) {
    if (!a->dry_run && !a->o.resume) {
        int rc = clear_stale(a);
        if (rc != CLI_OK) return rc;
    }
    qt_model *m;
    qt_status st = qt_model_open(a->in, &m);
    if (st != QT_OK) return cli_fail(st);
    int rc = run_ct(a, m, ct_key);
    qt_model_free(m);
    return rc;
}

static int run_gguf_open(args *a, const qt_gguf_ftype_info *ft) {
    struct stat sb;
    if (a->max_shard)
        return cli_usage(VERB, "--max-shard-size applies to compressed-tensors schemes only; --scheme %s writes one GGUF file",
                         a->scheme);
    a->o.scheme = ft->name;
    if (!a->dry_run && !a->force && strcmp(a->out, "-") && stat(a->out, &sb) == 0 && S_ISREG(sb.st_mode)) {
        fprintf(stderr, "quanta: error: %s exists; pass --force to replace it\n", a->out);
        return CLI_FAIL;
    }
    if (!a->dry_run && strcmp(a->out, "-")) {
        int rc = clear_stale(a);
        if (rc != CLI_OK) return rc;
    }
    qt_model *m;
    qt_status st = qt_model_open(a->in, &m);
    if (st != QT_OK) return cli_fail(st);
    int rc = run_gguf(a, m);
    qt_model_free(m);
    return rc;
}

int cmd_quantize(int argc, char **argv) {
    args a;
    memset(&a, 0, sizeof a);
    a.o = qt_quantize_opts_default();
    a.alpha = -1;
    a.refine = -1;
    qtgt_init(&a.tg);
    int rc = parse(argc, argv, &a);
    if (rc == CLI_OK) {
        char *cmd = command_line(argc, argv, true);
        a.o.command_line = cmd;
        a.resume_cmd = command_line(argc, argv, false);
        rc = run_scheme(&a);
        if (rc == CLI_OK && !a.quiet && !a.dry_run) fprintf(stderr, "quanta: wrote %s\n", a.out);
        free(cmd);
        free(a.resume_cmd);
        qcalib_free(&a.qc);
        qkv_free(&a.kv);
    }
    for (int i = 0; i < a.o.n_overrides; i++) free(a.over_pat[i]);
    return rc < 0 ? CLI_OK : rc;
}
