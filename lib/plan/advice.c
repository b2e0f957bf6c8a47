/* lib/plan/advice.c — rank the schemes that run on a target, say why the
 * others do not, separate weight advice from KV-cache advice, apply the
 * seeds' warnings, and write the commands for the chosen plan.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>

#include "plan_internal.h"

static const char *const goal_names[QT_GOAL_COUNT] = {"fit", "throughput", "concurrency", "long-context", "quality"};

const char *qt_goal_name(qt_goal g) { return (g >= 0 && g < QT_GOAL_COUNT) ? goal_names[g] : "?"; }

qt_status qt_goal_parse(const char *s, qt_goal *out) {
    for (int g = 0; g < QT_GOAL_COUNT; g++)
        if (s && !strcasecmp(s, goal_names[g])) {
            *out = (qt_goal)g;
            return QT_OK;
        }
    return qt_error(QT_ERR_ARG, "--goal: '%s' is not one of fit, throughput, concurrency, long-context, quality", s ? s : "");
}

static void note(qt_plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(qt_plan *p, const char *fmt, ...) {
    if (p->n_warnings >= QT_PLAN_MAX_NOTES) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->warnings[p->n_warnings++], QT_PLAN_NOTE, fmt, ap);
    va_end(ap);
}

static void command(qt_plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void command(qt_plan *p, const char *fmt, ...) {
    if (p->n_commands >= 4) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->commands[p->n_commands++], QT_PLAN_NOTE, fmt, ap);
    va_end(ap);
}

enum { LLAMA_SERVER_GPU_SLOTS = 32, LLAMA_SERVER_HOST_SLOTS = 8 };

static bool host_target(const qt_hw_info *hw) { return hw && (hw->cls == QT_HW_CPU || hw->cls == QT_HW_APPLE); }
static bool no_bf16(const qt_hw_info *hw) { return hw && hw->cc > 0 && hw->cc < 80; }

/* ---- ranking ------------------------------------------------------------------ */

typedef struct sort_ctx {
    qt_goal goal;
    bool gpu;
} sort_ctx;
static _Thread_local sort_ctx g_sort; /* qsort has no context argument */

static bool row_fits(const qt_plan_row *r, qt_goal g) {
    if (g == QT_GOAL_QUALITY) return r->est.kv_budget_bytes >= r->est.kv_bytes_per_seq && r->est.kv_bytes_per_seq > 0;
    return r->est.fits;
}

static double goal_score(const qt_plan_row *r, qt_goal g) {
    switch (g) {
    case QT_GOAL_THROUGHPUT: return r->est.tok_s_batch;
    case QT_GOAL_CONCURRENCY: return (double)r->est.concurrency;
    case QT_GOAL_LONG_CONTEXT: return (double)r->est.max_context;
    default: return -(double)r->scheme->quality;
    }
}

static int cmp_rows(const void *a, const void *b) {
    const qt_plan_row *x = a, *y = b;
    /* refused rows last */
    if ((x->rank == 0) != (y->rank == 0)) return x->rank == 0 ? 1 : -1;
    const bool fx = row_fits(x, g_sort.goal), fy = row_fits(y, g_sort.goal);
    if (fx != fy) return fx ? -1 : 1;
    /* On GPUs the plan is a serving plan: vLLM (continuous batching, paged KV) first, the
     * llama.cpp route after it; on CPUs and Macs only GGUF types are ranked at all. */
    if (fx && g_sort.gpu && (x->scheme->runtime == QT_RUNTIME_LLAMACPP) != (y->scheme->runtime == QT_RUNTIME_LLAMACPP))
        return x->scheme->runtime == QT_RUNTIME_LLAMACPP ? 1 : -1;
    if (!fx) { /* neither fits: least missing first */
        if (x->est.shortfall_bytes != y->est.shortfall_bytes) return x->est.shortfall_bytes < y->est.shortfall_bytes ? -1 : 1;
    } else if (x->score != y->score) {
        return x->score > y->score ? -1 : 1;
    }
    if (x->scheme->quality != y->scheme->quality) return x->scheme->quality < y->scheme->quality ? -1 : 1;
    /* same quality: on GPUs prefer vLLM's batching engine; then fewer bytes */
    if (g_sort.gpu && x->scheme->runtime != y->scheme->runtime) {
        if (x->scheme->runtime == QT_RUNTIME_VLLM) return -1;
        if (y->scheme->runtime == QT_RUNTIME_VLLM) return 1;
    }
    if (x->est.weights_bytes != y->est.weights_bytes) return x->est.weights_bytes < y->est.weights_bytes ? -1 : 1;
    return strcmp(x->scheme->key, y->scheme->key);
}

/* ---- diffusion pipelines --------------------------------------------------------- */

/* Activations of one 1024x1024 image step at batch 1: an allowance. */
#define DIFFUSION_ACT_BYTES (2.0 * QT_GB)

static double comp_bytes(uint64_t n, int bits) {
    if (bits == 16) return 2.0 * (double)n;
    if (bits == 8) return (double)n;
    return 0.5 * (double)n + ceil((double)n / 64.0) * 4.0; /* NF4: + f32 absmax per 64 */
}

/* Diffusion pipelines run in diffusers/PyTorch, not vLLM: their own rules per denoiser
 * precision (k: 0 16-bit, 1 fp8, 2 int8, 3 nf4). */
static void diffusion_support(int k, const qt_hw_info *hw, qt_estimate *e) {
    const bool nvidia = hw && hw->cls <= QT_HW_BLACKWELL, host = host_target(hw);
    const char *name = hw ? hw->name : "this device";
    e->support = QT_SUPPORT_YES;
    switch (k) {
    case 0:
        snprintf(e->reason, sizeof e->reason, "%s on %s", no_bf16(hw) ? "fp16 (no bf16 below compute capability 8.0)" : "bf16",
                 name);
        break;
    case 1:
        if (hw && (hw->cc >= 89 || hw->cls == QT_HW_CDNA3)) {
            snprintf(e->reason, sizeof e->reason, "FP8 matmuls on %s", name);
        } else if (!host && hw) {
            e->support = QT_SUPPORT_PARTIAL;
            snprintf(e->reason, sizeof e->reason, "%s has no FP8 matmuls: weights stored in fp8 and upcast layer by layer "
                     "(diffusers layerwise casting): memory only", name);
        } else {
            e->support = hw ? QT_SUPPORT_NO : QT_SUPPORT_YES;
            snprintf(e->reason, sizeof e->reason, "fp8 weights need a GPU");
        }
        break;
    default:
        if (nvidia || !hw) {
            snprintf(e->reason, sizeof e->reason, "bitsandbytes %s (diffusers quantization config) on %s",
                     k == 2 ? "LLM.int8" : "NF4", name);
        } else {
            e->support = QT_SUPPORT_NO;
            snprintf(e->reason, sizeof e->reason, "bitsandbytes needs an NVIDIA GPU; %s is %s", name, hw->arch_name);
        }
        break;
    }
}

static qt_status plan_diffusion(qt_plan *p) {
    const qt_model_spec *m = p->req.model;
    const qt_hw_info *hw = p->req.hw;
    const double device = p->req.memory_bytes > 0 ? p->req.memory_bytes : (hw ? hw->mem_gb * QT_GB : 0);
    if (device <= 0) return qt_error(QT_ERR_ARG, "no memory size: give --gpu NAME or --memory SIZE");
    const double util = p->req.util > 0 ? p->req.util : (hw ? hw->default_util : 0.90);
    p->n_components = m->n_components;
    double enc16 = 0, enc8 = 0, vae = 0;
    for (int i = 0; i < m->n_components; i++) {
        const qt_plan_component *c = &m->comp[i];
        p->comp_bytes[i][0] = comp_bytes(c->n_params, 16);
        p->comp_bytes[i][1] = comp_bytes(c->n_params, 8);
        p->comp_bytes[i][2] = comp_bytes(c->n_params, 4);
        if (c->role == QT_COMPONENT_TEXT_ENCODER) enc16 += p->comp_bytes[i][0], enc8 += p->comp_bytes[i][1];
        if (c->role == QT_COMPONENT_VAE) vae += p->comp_bytes[i][0];
    }
    /* One row per denoiser precision; the text encoders stay 16-bit unless that alone breaks
     * the fit, then 8-bit; the VAE always 16-bit (seeds: quantize the denoiser first). */
    const char *const keys[] = {no_bf16(hw) ? "fp16" : "bf16", "fp8", "int8", "nf4"};
    for (int k = 0; k < 4; k++) {
        qt_plan_row *r = &p->rows[p->n_rows++];
        r->scheme = qt_scheme_find(keys[k]);
        qt_estimate *e = &r->est;
        e->device_bytes = device;
        e->budget_bytes = util * device;
        double den = 0;
        for (int i = 0; i < m->n_components; i++)
            if (m->comp[i].role == QT_COMPONENT_DENOISER) den += p->comp_bytes[i][k == 0 ? 0 : (k == 3 ? 2 : 1)];
        double enc = enc16;
        if (den + enc16 + vae + DIFFUSION_ACT_BYTES > e->budget_bytes) enc = enc8;
        r->encoders_8bit = enc != enc16;
        e->weights_bytes = e->weights_total_bytes = den + enc + vae;
        e->weights_16bit_bytes = vae + (enc == enc16 ? enc16 : 0);
        e->overhead_bytes = e->workspace_bytes = DIFFUSION_ACT_BYTES;
        e->kv_budget_bytes = e->budget_bytes - e->weights_bytes - e->overhead_bytes;
        e->fits = e->kv_budget_bytes >= 0;
        e->shortfall_bytes = e->fits ? 0 : -e->kv_budget_bytes;
        e->weights_shortfall_bytes = e->shortfall_bytes;
        diffusion_support(k, hw, e);
        r->rank = e->support == QT_SUPPORT_NO ? 0 : 1;
        r->score = -(double)r->scheme->quality;
    }
    g_sort.goal = QT_GOAL_FIT;
    g_sort.gpu = !host_target(hw);
    qsort(p->rows, (size_t)p->n_rows, sizeof p->rows[0], cmp_rows);
    p->best = -1;
    for (int i = 0, rank = 1; i < p->n_rows; i++)
        if (p->rows[i].rank) {
            p->rows[i].rank = rank++;
            if (p->best < 0 && p->rows[i].est.fits) p->best = i;
        }
    char a[32], b[32], c[32];
    double den16 = 0;
    for (int i = 0; i < m->n_components; i++)
        if (m->comp[i].role == QT_COMPONENT_DENOISER) den16 += p->comp_bytes[i][0];
    note(p, "Quantize the denoiser first: it is %s of the %s pipeline at 16-bit and runs every step; fp8 halves it "
            "(needs compute capability 8.9 for FP8 matmuls, weight-only otherwise)",
         qt__fmt_gb(den16, a, sizeof a), qt__fmt_gb(den16 + enc16 + vae, b, sizeof b));
    note(p, "Keep the VAE in 16-bit: it is %s and decodes once; quantizing it shows as colour banding and artifacts",
         qt__fmt_gb(vae, c, sizeof c));
    note(p, "Treat the text encoders separately: %s at 16-bit (%s at 8-bit); they run once per prompt, so they can be "
            "offloaded after encoding (diffusers enable_model_cpu_offload) or quantized to 8-bit with little effect",
         qt__fmt_gb(enc16, a, sizeof a), qt__fmt_gb(enc8, b, sizeof b));
    note(p, "Activations: an allowance of %s for one 1024x1024 image at batch 1 (not computed from the model)",
         qt__fmt_gb(DIFFUSION_ACT_BYTES, a, sizeof a));
    p->constraint = p->rows[0].est.fits && p->rows[0].scheme->kind == QT_SCHEME_FLOAT16 ? "none" : "weights";
    p->job.method = "none";
    return QT_OK;
}

const char *qt_plan_component_precision(const qt_plan *p, const qt_plan_row *r, int c) {
    if (!r || c < 0 || c >= p->n_components) return "-";
    switch (p->req.model->comp[c].role) {
    case QT_COMPONENT_DENOISER: return r->scheme->kind == QT_SCHEME_FLOAT16 ? "16-bit" : r->scheme->key;
    case QT_COMPONENT_TEXT_ENCODER: return r->encoders_8bit ? "8-bit" : "16-bit";
    default: return "16-bit";
    }
}

/* ---- language models -------------------------------------------------------------- */

/* The quantization job's own peak, against the target (where it runs: the GPU, or
 * the host for CPU/Apple targets) and against this machine's RAM (the whole model
 * in bf16 is read from there). */
/* Some row could hold more than the trained context (its max ctx shows the cap). */
static bool context_capped(const qt_plan *p) {
    for (int i = 0; i < p->n_rows; i++)
        if (p->rows[i].est.max_context_memory > p->rows[i].est.max_context) return true;
    return false;
}

static void job_notes(qt_plan *p) {
    const qt_quant_job *j = &p->job;
    if (!strcmp(j->method, "none") || p->n_rows == 0) return;
    const qt_hw_info *hw = p->req.hw;
    const double device = p->rows[0].est.device_bytes;
    char a[32], b[32];
    if (j->total_bytes > device)
        note(p, "The quantization job does NOT fit on %s: its peak (%s, layer by layer) exceeds the %s %s; run it on a "
                "larger GPU or a machine with more memory, then serve the result here",
             hw ? hw->name : "this device", qt__fmt_gb(j->total_bytes, a, sizeof a), qt__fmt_gb(device, b, sizeof b),
             host_target(hw) ? "of memory" : "of the GPU");
    qt_hw_info local;
    char name[160];
    if (qt_hw_local_cpu(&local, name, sizeof name) == QT_OK && local.mem_gb > 0 && j->host_bytes > local.mem_gb * 1e9)
        note(p, "The quantization job reads the whole model (%s in bf16); this machine has %s of RAM, so it streams the "
                "layers from disk (slower, but it fits)",
             qt__fmt_gb(j->host_bytes, a, sizeof a), qt__fmt_gb(local.mem_gb * 1e9, b, sizeof b));
}

static void quant_job(qt_plan *p, const qt_scheme_info *s) {
    qt_quant_job *j = &p->job;
    memset(j, 0, sizeof *j);
    const qt_model_spec *m = p->req.model;
    j->method = s->method ? s->method : "none";
    if (s->kind == QT_SCHEME_FLOAT16) { j->method = "none"; return; }
    qt__ptensor *t;
    int n;
    if (qt__plan_tensors(m, &t, &n)) { j->method = "none"; return; }
    const bool gptq = strstr(j->method, "gptq") != NULL;
    const bool calib = gptq || strstr(j->method, "awq") || strstr(j->method, "calibration") || strstr(j->method, "smoothquant");
    double layer = 0, hess = 0, total_params = 0;
    int32_t cur = -2;
    double cur_layer = 0, cur_hess = 0;
    for (int i = 0; i <= n; i++) {
        if (i == n || t[i].layer != cur) {
            if (cur_layer > layer) layer = cur_layer;
            if (cur_hess > hess) hess = cur_hess;
            if (i == n) break;
            cur = t[i].layer;
            cur_layer = cur_hess = 0;
        }
        const double e = (double)t[i].in * (double)t[i].out * (double)t[i].n_mat;
        total_params += e;
        if (t[i].layer < 0) continue;
        cur_layer += 2.0 * e;
        if (t[i].role == QT__ROLE_LINEAR) {
            const double one = 4.0 * (double)t[i].in * (double)t[i].out; /* f32 copy of one matrix */
            if (one > j->work_bytes) j->work_bytes = one;
            /* GPTQ keeps one in x in f32 Hessian per Linear (per expert) of the layer */
            if (gptq) cur_hess += 4.0 * (double)t[i].in * (double)t[i].in * (double)t[i].n_mat;
        }
    }
    free(t);
    j->layer_bytes = layer;
    j->hessian_bytes = hess;
    if (calib) {
        /* llm-compressor's examples: 512 samples of 2048 tokens; the layer's inputs and outputs
         * are kept for every calibration token (bf16) as the pipeline walks layer by layer. */
        j->n_samples = 512;
        j->seq_len = 2048;
        j->activation_bytes = 2.0 * 2.0 * (double)j->n_samples * (double)j->seq_len * (double)m->n_embd;
    } else if (!strcmp(j->method, "imatrix")) {
        /* llama.cpp's imatrix: forward passes over 512-token chunks, one at a time */
        j->n_samples = 128;
        j->seq_len = 512;
        j->activation_bytes = 4.0 * (double)j->seq_len * ((double)m->n_embd * 4 + (double)m->n_vocab);
    }
    j->total_bytes = j->layer_bytes + j->work_bytes + j->hessian_bytes + j->activation_bytes;
    j->host_bytes = 2.0 * total_params;
}

static void slug(const char *s, char *out, size_t n) {
    size_t k = 0;
    const char *slash = strrchr(s, '/');
    for (s = slash ? slash + 1 : s; *s && k + 1 < n; s++) {
        char c = *s;
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        out[k++] = (c == ' ') ? '-' : c;
    }
    out[k] = 0;
}

/* `quanta quantize` reads a local checkpoint: a hub id is downloaded first (the
 * Hugging Face CLI) into a directory named after the model. Returns the path. */
static const char *local_source(qt_plan *p, const qt_model_spec *m, const char *name, char *buf, size_t cap) {
    if (access(m->hf_repo, F_OK) == 0) return m->hf_repo;
    snprintf(buf, cap, "%s", name);
    command(p, "hf download %s --local-dir %s", m->hf_repo, buf);
    return buf;
}

/* The --scheme quantize takes for a plan row: AWQ and GPTQ are W4A16 checkpoints whose
 * calibrated algorithms (--algo) are not in quanta yet, so the command is W4A16 by
 * round-to-nearest and a note says so. */
static const char *quantize_scheme(qt_plan *p, const qt_scheme_info *s) {
    if (!strcmp(s->key, "awq") || !strcmp(s->key, "gptq")) {
        note(p, "quanta quantize --scheme w4a16 rounds to nearest; %s calibration (--algo %s) is not in quanta yet: "
                "use llm-compressor for a %s checkpoint", s->key, s->key, s->key);
        return "w4a16";
    }
    return s->key;
}

static void commands_for(qt_plan *p, const qt_plan_row *best) {
    const qt_model_spec *m = p->req.model;
    const qt_scheme_info *s = best->scheme;
    const qt_estimate *e = &best->est;
    char name[96], src[160];
    slug(m->key, name, sizeof name);
    char *dot = strstr(name, ".gguf");
    if (dot && !dot[5]) *dot = 0;
    int64_t seqs = p->req.concurrency > 0 ? p->req.concurrency : e->concurrency;
    if (seqs < 1) seqs = 1;
    if (s->runtime == QT_RUNTIME_LLAMACPP) {
        char out[160];
        snprintf(out, sizeof out, "%s-%s.gguf", name, s->gguf_ftype);
        command(p, "quanta quantize %s %s --scheme %s", local_source(p, m, name, src, sizeof src), out, s->key);
        const bool q8kv = p->req.kv_dtype == QT_KV_TYPE_INT8;
        /* llama-server splits -c among -np slots; slots beyond a few dozen (a handful on a
         * host) add little, as decoding batches them. Each slot holds the context. */
        const int64_t max_slots = host_target(p->req.hw) ? LLAMA_SERVER_HOST_SLOTS : LLAMA_SERVER_GPU_SLOTS;
        if (p->req.concurrency == 0 && seqs > max_slots) {
            note(p, "Memory holds %lld sequences of %lld tokens; the llama-server command uses -np %lld slots (more add "
                    "little: decoding batches them), raise -np and -c together for more concurrent users",
                 (long long)seqs, (long long)p->req.context, (long long)max_slots);
            seqs = max_slots;
        }
        command(p, "llama-server -m %s -c %lld -np %lld -ngl 99%s%s", out, (long long)(p->req.context * seqs),
                (long long)seqs, q8kv ? " -fa on --cache-type-k q8_0 --cache-type-v q8_0" : "",
                p->req.n_gpus > 1 ? " --split-mode layer" : "");
        return;
    }
    if (seqs > 256) seqs = 256;
    char flags[256];
    int k = snprintf(flags, sizeof flags, " --max-model-len %lld --gpu-memory-utilization %.2f --max-num-seqs %lld",
                     (long long)p->req.context, e->budget_bytes / e->device_bytes, (long long)seqs);
    if (no_bf16(p->req.hw)) k += snprintf(flags + k, sizeof flags - (size_t)k, " --dtype half");
    if (p->req.n_gpus > 1) k += snprintf(flags + k, sizeof flags - (size_t)k, " --tensor-parallel-size %d", p->req.n_gpus);
    if (p->req.kv_dtype == QT_KV_TYPE_FP8_E4M3) snprintf(flags + k, sizeof flags - (size_t)k, " --kv-cache-dtype fp8");
    if (s->kind == QT_SCHEME_FLOAT16) {
        command(p, "vllm serve %s%s", m->hf_repo, flags);
    } else if (s->runtime == QT_RUNTIME_BNB) {
        command(p, "vllm serve %s --quantization bitsandbytes%s", m->hf_repo, flags);
    } else {
        const char *qs = quantize_scheme(p, s);
        command(p, "quanta quantize %s %s-%s --scheme %s", local_source(p, m, name, src, sizeof src), name, qs, qs);
        command(p, "vllm serve %s-%s%s", name, qs, flags);
    }
}

static void warnings_for(qt_plan *p) {
    const qt_estimate_req *r = &p->req;
    const qt_model_spec *m = r->model;
    const qt_hw_info *hw = r->hw;
    char a[32], b[32];
    if (no_bf16(hw))
        note(p, "%s is %s (compute capability %d.%d): no bf16 fast path. vLLM refuses bfloat16 below 8.0, so every plan here "
                "runs in fp16 (--dtype half); a bf16-trained model can overflow fp16 on rare large activations",
             hw->name, qt_hw_class_name(hw->cls), hw->cc / 10, hw->cc % 10);
    /* The bf16 row (or fp16 where bf16 cannot run) says how big the model is at 16-bit. */
    const qt_plan_row *r16 = NULL;
    for (int i = 0; i < p->n_rows; i++)
        if (p->rows[i].scheme->kind == QT_SCHEME_FLOAT16 && (!r16 || p->rows[i].rank)) r16 = &p->rows[i];
    if (r16) {
        const double share = r16->est.weights_bytes / r16->est.budget_bytes;
        if ((r16->est.n_params < 2000000000ull || share < 0.25) && p->goal != QT_GOAL_THROUGHPUT)
            note(p, "%s is small for this target: its 16-bit weights are %s, %.0f%% of the %s budget. Quantizing them buys "
                    "little memory and small models lose the most quality per bit; the KV cache is what grows with load: "
                    "quantize the cache first",
                 m->display, qt__fmt_gb(r16->est.weights_bytes, a, sizeof a), 100 * share,
                 qt__fmt_gb(r16->est.budget_bytes, b, sizeof b));
    }
    if (m->sliding_window && m->swa_period) {
        const double full = qt_plan_kv_bytes_per_token(m, 2.0, r->n_gpus) * (double)r->context;
        const double win = qt_plan_kv_bytes_per_seq(m, 2.0, r->context, r->n_gpus);
        if (full > win)
            note(p, "%s: %s layers use a %lld-token sliding window; the KV figures assume the runtime stores only the window "
                    "there (vLLM's hybrid KV-cache manager, llama.cpp's SWA cache): %s per sequence instead of %s at 16-bit",
                 m->display, m->swa_period == 2 ? "half the" : "all", (long long)m->sliding_window,
                 qt__fmt_gb(win, a, sizeof a), qt__fmt_gb(full, b, sizeof b));
    }
    if (m->kv_lora_rank > 0)
        note(p, "%s uses multi-head latent attention: the cache holds one %lld-wide latent per token and layer, and every "
                "tensor-parallel rank keeps all of it (more GPUs do not divide it)",
             m->display, (long long)(m->kv_lora_rank + m->qk_rope_dim));
    if (m->n_ctx_train > 0 && r->context > m->n_ctx_train)
        note(p, "context %lld is beyond the %lld tokens %s was trained for (config max_position_embeddings): it needs RoPE "
                "scaling (YaRN or linear: rope_scaling in config.json for vLLM, llama-server --rope-scaling yarn "
                "--yarn-orig-ctx %lld), and quality there is not guaranteed; measure it with quanta eval",
             (long long)r->context, (long long)m->n_ctx_train, m->display, (long long)m->n_ctx_train);
    else if (m->n_ctx_train > 0 && m->kind == QT_SPEC_LLM && context_capped(p))
        note(p, "max ctx is capped at the %lld tokens %s was trained for; ask for more with -c (it then needs RoPE scaling)",
             (long long)m->n_ctx_train, m->display);
    if (p->kv_alt_dtype == QT_KV_TYPE_FP8_E4M3)
        note(p, "An FP8 KV cache needs calibrated k/v scales: without them vLLM uses 1.0 (and says so), which can cost accuracy "
                "on models with large key/value ranges; calibrate them (llm-compressor kv_cache_scheme) and measure with quanta eval");
    if (p->goal == QT_GOAL_THROUGHPUT && !host_target(hw))
        note(p, "tok/s is a roofline (bytes / bandwidth, FLOPs / dense tensor peak), an upper bound that ignores kernel "
                "efficiency: above ~64 sequences weight-only kernels (W4A16, Marlin) lose much of their edge and W8A8 "
                "(8-bit tensor cores) often serves more tokens/s; at long contexts the KV reads dominate, which an 8-bit "
                "cache halves. Measure before committing");
    if (p->best >= 0) {
        const qt_plan_row *bst = &p->rows[p->best];
        if (bst->scheme->runtime == QT_RUNTIME_LLAMACPP && !host_target(hw) && bst->est.concurrency > 8)
            note(p, "llama.cpp serves %lld parallel slots, but batches them less efficiently than vLLM; for heavy concurrent "
                    "load prefer the best vLLM row",
                 (long long)bst->est.concurrency);
    }
}

static int best_index(const qt_plan *p) {
    for (int i = 0; i < p->n_rows; i++)
        if (p->rows[i].rank && row_fits(&p->rows[i], p->goal)) return i;
    return -1;
}

/* Nothing fits on one card: the fewest GPUs (tensor parallel) on which the least lossy
 * runnable scheme serves the load. */
static void suggest_more_gpus(qt_plan *p) {
    if (p->req.n_gpus > 1 || host_target(p->req.hw)) return;
    for (int i = 0; i < p->n_rows; i++) {
        if (!p->rows[i].rank) continue;
        for (int tp = 2; tp <= 8; tp *= 2) {
            qt_estimate_req r = p->req;
            r.scheme = p->rows[i].scheme;
            r.n_gpus = tp;
            qt_estimate e;
            if (qt_plan_estimate(&r, &e) != QT_OK) {
                qt_clear_error();
                continue;
            }
            if (e.fits) {
                char a[32];
                note(p, "Nothing fits on one %s: %s fits on %d of them with tensor parallelism (--gpu %sx%d): "
                        "%lld sequences of %lld tokens, %s of weights per GPU",
                     p->req.hw ? p->req.hw->name : "device", p->rows[i].scheme->key, tp,
                     p->req.hw ? p->req.hw->key : "G", tp, (long long)e.concurrency, (long long)r.context,
                     qt__fmt_gb(e.weights_bytes, a, sizeof a));
                return;
            }
        }
    }
}

qt_status qt_plan_make(const qt_estimate_req *req, qt_goal goal, qt_plan *p) {
    memset(p, 0, sizeof *p);
    p->req = *req;
    p->goal = goal;
    p->best = -1;
    p->constraint = "none";
    if (!req->model) return qt_error(QT_ERR_ARG, "plan: no model");
    if (goal < 0 || goal >= QT_GOAL_COUNT) return qt_error(QT_ERR_ARG, "plan: bad goal");
    if (p->req.n_gpus == 0) p->req.n_gpus = 1;
    if (p->req.util == 0) p->req.util = req->hw ? req->hw->default_util : 0.90;
    if (req->model->kind == QT_SPEC_DIFFUSION) return plan_diffusion(p);

    const qt_hw_info *hw = p->req.hw;
    for (int i = 0; i < qt_scheme_count() && p->n_rows < QT_PLAN_MAX_ROWS; i++) {
        const qt_scheme_info *s = qt_scheme_get(i);
        qt_estimate_req r = p->req;
        r.scheme = s;
        qt_plan_row *row = &p->rows[p->n_rows];
        qt_status st = qt_plan_estimate(&r, &row->est);
        if (st) return st;
        row->scheme = s;
        row->rank = row->est.support == QT_SUPPORT_NO ? 0 : 1;
        /* On CPUs and Macs the planner targets llama.cpp: rank the GGUF types by RAM fit. */
        if (row->rank && host_target(hw) && s->runtime != QT_RUNTIME_LLAMACPP) {
            row->rank = 0;
            snprintf(row->est.reason, sizeof row->est.reason, "%s: on %s targets quanta plans GGUF types for llama.cpp%s",
                     s->key, qt_hw_class_name(hw->cls),
                     row->est.support == QT_SUPPORT_NO ? "" : " (vLLM's CPU backend can run it: quanta estimate --scheme ...)");
            row->est.support = QT_SUPPORT_NO;
        }
        row->score = goal_score(row, goal);
        p->n_rows++;
    }
    g_sort.goal = goal;
    g_sort.gpu = !host_target(hw);
    qsort(p->rows, (size_t)p->n_rows, sizeof p->rows[0], cmp_rows);
    for (int i = 0, rank = 1; i < p->n_rows; i++)
        if (p->rows[i].rank) p->rows[i].rank = rank++;
    p->best = best_index(p);

    /* Is the constraint the weights or the cache? Judge the model at 16-bit. */
    const qt_plan_row *r16 = NULL;
    for (int i = 0; i < p->n_rows; i++)
        if (p->rows[i].scheme->kind == QT_SCHEME_FLOAT16 && (!r16 || (p->rows[i].rank && !r16->rank))) r16 = &p->rows[i];
    if (r16) p->constraint = r16->est.weights_shortfall_bytes > 0 ? "weights" : (r16->est.fits ? "none" : "cache");

    /* KV-cache advice, separate from the weights: the best plan with an 8-bit cache. */
    if (p->best >= 0) {
        const qt_plan_row *bst = &p->rows[p->best];
        const bool llama = bst->scheme->runtime == QT_RUNTIME_LLAMACPP;
        qt_kv_type alt = llama ? QT_KV_TYPE_INT8 : QT_KV_TYPE_FP8_E4M3;
        if (p->req.kv_dtype == QT_KV_TYPE_AUTO || p->req.kv_dtype == QT_KV_TYPE_BF16 || p->req.kv_dtype == QT_KV_TYPE_F16) {
            qt_estimate_req r = p->req;
            r.scheme = bst->scheme;
            r.kv_dtype = alt;
            if (qt_plan_estimate(&r, &p->kv_alt) == QT_OK) {
                p->kv_alt_dtype = alt;
                qt_scheme_info kv_row = *bst->scheme;
                kv_row.support_row = llama ? "q8-kv" : "fp8-kv";
                p->kv_alt_support = qt_support_check(&kv_row, hw, p->kv_alt_reason, sizeof p->kv_alt_reason);
            }
        }
        quant_job(p, bst->scheme);
        job_notes(p);
        commands_for(p, bst);
    } else {
        p->job.method = "none";
        suggest_more_gpus(p);
    }
    warnings_for(p);
    return QT_OK;
}
