/* lib/plan/estimate.c — weights, overhead, KV cache, what fits.
 *
 * The arithmetic of vLLM's memory profile (gpu_memory_utilization x total
 * memory, minus weights, minus peak activations and non-torch memory, is the
 * KV cache, cut into blocks of 16 tokens) with every term shown. The seed's
 * worked example is the same arithmetic with flat bytes per parameter and a
 * flat 1.0 GB overhead (--accounting simple).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

#define VLLM_BLOCK_TOKENS 16
#define DEFAULT_BATCH_TOKENS 2048
#define DEFAULT_MAX_SEQS 256
/* Allowances (stated as such in every report): CUDA context + cuBLAS/NCCL workspaces,
 * and CUDA graphs, as vLLM logs them for 7B-70B models: about half a GiB each. */
#define RUNTIME_CONTEXT_BYTES (0.5 * QT_GIB)
#define RUNTIME_GRAPHS_BYTES (0.5 * QT_GIB)
/* llama.cpp processes prompts in micro-batches of 512 tokens (n_ubatch). */
#define LLAMACPP_UBATCH 512

const char *qt_kv_dtype_name(qt_kv_type k) {
    switch (k) {
    case QT_KV_TYPE_AUTO: return "auto";
    case QT_KV_TYPE_BF16: return "bf16";
    case QT_KV_TYPE_F16: return "fp16";
    case QT_KV_TYPE_FP8_E4M3: return "fp8";
    case QT_KV_TYPE_INT8: return "int8";
    default: return "?";
    }
}

/* KV heads one GPU holds: vLLM splits them over the tensor-parallel ranks and
 * replicates them when there are fewer heads than ranks. */
static double kv_heads_per_gpu(const qt_model_spec *m, int tp) {
    if (tp <= 1) return (double)m->n_head_kv;
    return m->n_head_kv >= tp ? (double)m->n_head_kv / tp : 1.0;
}

/* Cache bytes per token for one layer on one GPU. */
static double layer_token_bytes(const qt_model_spec *m, double elt, int tp) {
    if (m->kv_lora_rank > 0) /* MLA: one latent + rope key per token, replicated on every rank */
        return (double)(m->kv_lora_rank + m->qk_rope_dim) * elt;
    return 2.0 * kv_heads_per_gpu(m, tp) * (double)m->head_dim * elt;
}

static bool layer_is_sliding(const qt_model_spec *m, int64_t l) {
    if (!m->sliding_window || !m->swa_period) return false;
    return m->swa_period == 1 || l % m->swa_period == 0;
}

double qt_plan_kv_bytes_per_token(const qt_model_spec *m, double elt_bytes, int tp) {
    if (m->kind != QT_SPEC_LLM) return 0;
    return (double)m->n_layer * layer_token_bytes(m, elt_bytes, tp < 1 ? 1 : tp);
}

double qt_plan_kv_bytes_per_seq(const qt_model_spec *m, double elt_bytes, int64_t ctx, int tp) {
    if (m->kind != QT_SPEC_LLM || ctx <= 0) return 0;
    const double per = layer_token_bytes(m, elt_bytes, tp < 1 ? 1 : tp);
    double total = 0;
    for (int64_t l = 0; l < m->n_layer; l++) {
        int64_t held = ctx;
        if (layer_is_sliding(m, l) && held > m->sliding_window) held = m->sliding_window;
        total += per * (double)held;
    }
    return total;
}

/* Longest context whose cache fits in `bytes` per sequence (sliding layers make the cost
 * piecewise linear, so search). */
static int64_t max_context_for(const qt_model_spec *m, double elt, int tp, double bytes) {
    if (bytes <= 0) return 0;
    int64_t lo = 0, hi = 1;
    while (hi < ((int64_t)1 << 40) && qt_plan_kv_bytes_per_seq(m, elt, hi, tp) <= bytes) {
        lo = hi;
        hi *= 2;
    }
    if (hi >= ((int64_t)1 << 40)) return hi; /* every layer is windowed: unbounded */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (qt_plan_kv_bytes_per_seq(m, elt, mid, tp) <= bytes) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* Cache element size: "auto" is the model's 16-bit dtype; llama.cpp's 8-bit cache is q8_0
 * (34 bytes per 32 values). */
static double kv_elt_bytes(qt_kv_type k, const qt_scheme_info *s) {
    switch (k) {
    case QT_KV_TYPE_F32: return 4.0;
    case QT_KV_TYPE_FP8_E4M3: case QT_KV_TYPE_FP8_E5M2: return 1.0;
    case QT_KV_TYPE_INT8: return (s && s->runtime == QT_RUNTIME_LLAMACPP) ? 34.0 / 32.0 : 1.0;
    default: return 2.0;
    }
}

/* A non-negative whole count of x, saturating: a double beyond int64's range
 * (or NaN) must never reach a cast, which is undefined behaviour. */
static int64_t floor_count(double x) {
    if (!(x > 0)) return 0;
    if (x >= 9.2e18) return INT64_MAX;
    return (int64_t)floor(x);
}

/* Weights of the whole model and of one GPU, by the chosen accounting. */
typedef struct weights {
    double total, per_gpu, kept16, scale, read_single, read_all;
    uint64_t n_params, n_params16;
} weights;

static qt_status weigh(const qt_estimate_req *r, weights *w) {
    memset(w, 0, sizeof *w);
    const qt_model_spec *m = r->model;
    const int tp = r->n_gpus;
    qt_param_counts pc;
    qt_status st = qt_plan_param_counts(m, &pc);
    if (st) return st;
    w->n_params = pc.total;
    if (r->accounting == QT_ACCOUNTING_SIMPLE) {
        /* The seed: every parameter at the scheme's flat size. */
        w->total = (double)pc.total * r->scheme->simple_bytes;
        w->per_gpu = w->total / tp;
        w->read_all = w->per_gpu;
        w->read_single = (double)pc.active * r->scheme->simple_bytes / tp;
        w->n_params16 = r->scheme->kind == QT_SCHEME_FLOAT16 ? pc.total : 0;
        w->kept16 = r->scheme->kind == QT_SCHEME_FLOAT16 ? w->total : 0;
        return QT_OK;
    }
    qt__ptensor *t;
    int n;
    st = qt__plan_tensors(m, &t, &n);
    if (st) return st;
    for (int i = 0; i < n; i++) {
        double sc;
        bool k16;
        double b = qt__tensor_bytes(r->scheme, m, &t[i], &sc, &k16);
        double gpu = t[i].replicated ? b : b / tp;
        w->total += b;
        w->per_gpu += gpu;
        w->scale += sc;
        if (k16) {
            w->kept16 += b;
            w->n_params16 += (uint64_t)t[i].in * (uint64_t)t[i].out * (uint64_t)t[i].n_mat;
        }
        /* A decode step reads every matrix it multiplies: not the (untied) embedding table,
         * only the routed experts in use (one token: n_used of n_expert; a large batch
         * touches them all). */
        if (t[i].role == QT__ROLE_EMBED && !m->tie_embeddings) continue;
        w->read_all += gpu;
        w->read_single += t[i].expert ? gpu * (double)m->n_expert_used / (double)t[i].n_mat : gpu;
    }
    free(t);
    return QT_OK;
}

/* Activations of one forward pass over `tokens` tokens on one GPU, in the activation
 * dtype: the residual stream and its normed copy, q/k/v, and the MLP's gate/up outputs
 * with their product (the peak), plus f32 logits of the sampled rows (vLLM: x2 for the
 * sampler's softmax copy; llama.cpp reserves one logits row per token of a micro-batch).
 * An allowance: real peaks depend on the kernels. */
static double workspace(const qt_model_spec *m, int tp, int64_t tokens, int64_t logit_rows, double act_bytes,
                        double logit_copies) {
    const double q = (double)m->n_head * (double)(m->kv_lora_rank ? m->qk_nope_dim + m->qk_rope_dim : m->head_dim);
    const double kv = m->kv_lora_rank ? (double)(m->kv_lora_rank + m->qk_rope_dim)
                                      : 2.0 * (double)m->n_head_kv * (double)m->head_dim;
    double ff = (double)m->n_ff;
    if (m->n_expert > 0) {
        double moe = (double)m->n_ff_expert * (double)(m->n_expert_used + m->n_expert_shared);
        if (m->n_dense_lead == 0 || moe > ff) ff = moe;
    }
    double attn = (q + kv) / tp, mlp = 3.0 * ff / tp;
    double per_token = 2.0 * (double)m->n_embd + (attn > mlp ? attn : mlp);
    return (double)tokens * per_token * act_bytes + (double)logit_rows * (double)m->n_vocab * 4.0 * logit_copies;
}

static qt_status check_req(const qt_estimate_req *r) {
    if (!r->model) return qt_error(QT_ERR_ARG, "estimate: no model");
    if (!r->scheme) return qt_error(QT_ERR_ARG, "estimate: no scheme");
    if (r->model->kind != QT_SPEC_LLM)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: a diffusion pipeline has no KV cache; use 'quanta plan' for its per-component memory",
                        r->model->key);
    if (r->n_gpus < 1 || r->n_gpus > 1024) return qt_error(QT_ERR_ARG, "--gpu: GPU count %d must be 1..1024", r->n_gpus);
    if (!(r->util > 0 && r->util <= 1)) return qt_error(QT_ERR_ARG, "--util: %g must be in (0, 1]", r->util);
    if (r->context < 1) return qt_error(QT_ERR_ARG, "--context: %lld must be at least 1 token", (long long)r->context);
    if (r->concurrency < 0) return qt_error(QT_ERR_ARG, "--concurrency: %lld must be positive", (long long)r->concurrency);
    if (r->memory_bytes < 0 || !isfinite(r->memory_bytes)) return qt_error(QT_ERR_ARG, "--memory: must be positive");
    if (!isfinite(r->overhead_bytes)) return qt_error(QT_ERR_ARG, "--overhead: not a number");
    const qt_model_spec *m = r->model;
    if (m->n_layer < 1 || m->n_embd < 1 || m->n_vocab < 1 || m->n_head < 1 || m->n_head_kv < 1 || m->head_dim < 1)
        return qt_error(QT_ERR_ARG, "%s: incomplete model shape", m->key);
    const int tp = r->n_gpus;
    if (tp > 1 && m->n_head % tp != 0)
        return qt_error(QT_ERR_ARG, "--gpu ...x%d: %lld attention heads do not split over %d GPUs (tensor parallelism needs heads %% GPUs == 0)",
                        tp, (long long)m->n_head, tp);
    if (tp > 1 && !m->kv_lora_rank && m->n_head_kv % tp != 0 && tp % m->n_head_kv != 0)
        return qt_error(QT_ERR_ARG, "--gpu ...x%d: %lld KV heads neither split over nor replicate onto %d GPUs",
                        tp, (long long)m->n_head_kv, tp);
    return QT_OK;
}

qt_status qt_plan_estimate(const qt_estimate_req *req, qt_estimate *e) {
    memset(e, 0, sizeof *e);
    qt_estimate_req r = *req;
    if (r.n_gpus == 0) r.n_gpus = 1;
    if (r.util == 0) r.util = r.hw ? r.hw->default_util : 0.90;
    qt_status st = check_req(&r);
    if (st) return st;
    if (r.memory_bytes == 0) {
        if (!r.hw || r.hw->mem_gb <= 0)
            return qt_error(QT_ERR_ARG, "no memory size: give --gpu NAME or --memory SIZE (e.g. 16GB)");
        r.memory_bytes = r.hw->mem_gb * QT_GB;
    }
    const qt_model_spec *m = r.model;
    const qt_scheme_info *s = r.scheme;
    const int tp = r.n_gpus;
    const int64_t batch_tokens = r.batch_tokens > 0 ? r.batch_tokens : DEFAULT_BATCH_TOKENS;
    const int64_t max_seqs = r.max_num_seqs > 0 ? r.max_num_seqs : DEFAULT_MAX_SEQS;

    e->device_bytes = r.memory_bytes;
    e->budget_bytes = r.util * r.memory_bytes;

    weights w;
    st = weigh(&r, &w);
    if (st) return st;
    e->weights_bytes = w.per_gpu;
    e->weights_total_bytes = w.total;
    e->weights_16bit_bytes = w.kept16;
    e->weights_scale_bytes = w.scale;
    e->n_params = w.n_params;
    e->n_params_16bit = w.n_params16;

    /* Overhead: given, the seed's flat 1.0 GB, or the stated allowances. */
    const bool host = r.hw && (r.hw->cls == QT_HW_CPU || r.hw->cls == QT_HW_APPLE);
    if (r.overhead_bytes >= 0) {
        e->runtime_bytes = r.overhead_bytes;
    } else if (r.accounting == QT_ACCOUNTING_SIMPLE) {
        e->runtime_bytes = 1.0 * QT_GB;
    } else if (s->runtime == QT_RUNTIME_LLAMACPP || host) {
        e->runtime_bytes = RUNTIME_CONTEXT_BYTES;
        e->workspace_bytes = workspace(m, tp, LLAMACPP_UBATCH, LLAMACPP_UBATCH, 4.0, 1.0);
    } else {
        e->runtime_bytes = RUNTIME_CONTEXT_BYTES + RUNTIME_GRAPHS_BYTES;
        e->workspace_bytes = workspace(m, tp, batch_tokens, max_seqs, 2.0, 2.0);
    }
    e->overhead_bytes = e->runtime_bytes + e->workspace_bytes;

    /* KV cache. */
    e->kv_elt_bytes = kv_elt_bytes(r.kv_dtype, s);
    e->kv_bytes_per_token = qt_plan_kv_bytes_per_token(m, e->kv_elt_bytes, 1);
    e->kv_bytes_per_token_gpu = qt_plan_kv_bytes_per_token(m, e->kv_elt_bytes, tp);
    e->kv_bytes_per_seq = qt_plan_kv_bytes_per_seq(m, e->kv_elt_bytes, r.context, tp);
    e->kv_budget_bytes = e->budget_bytes - e->weights_bytes - e->overhead_bytes;
    const int64_t need = r.concurrency > 0 ? r.concurrency : 1;
    e->kv_required_bytes = (double)need * e->kv_bytes_per_seq;
    e->concurrency_frac = e->kv_budget_bytes / e->kv_bytes_per_seq;
    e->concurrency = floor_count(e->concurrency_frac);
    e->gpu_blocks = floor_count(e->kv_budget_bytes / (VLLM_BLOCK_TOKENS * e->kv_bytes_per_token_gpu));
    e->max_context_memory = max_context_for(m, e->kv_elt_bytes, tp, e->kv_budget_bytes / (double)need);
    /* what memory allows, capped at the trained length unless the request itself goes beyond it */
    e->max_context = m->n_ctx_train > 0 && r.context <= m->n_ctx_train && e->max_context_memory > m->n_ctx_train
                         ? m->n_ctx_train
                         : e->max_context_memory;
    e->weights_shortfall_bytes = fmax(0, e->weights_bytes + e->overhead_bytes - e->budget_bytes);
    e->fits = e->kv_budget_bytes >= e->kv_required_bytes;
    e->shortfall_bytes = e->fits ? 0 : e->kv_required_bytes - e->kv_budget_bytes;

    e->support = qt_support_check(s, r.hw, e->reason, sizeof e->reason);

    /* Decode roofline per GPU: a step reads the weights it multiplies and every running
     * sequence's cache (at a mean occupancy of half the context), and does 2 FLOPs per
     * active weight per sequence; time = max(bytes / bandwidth, flops / peak). */
    const double bw = r.hw ? r.hw->bw_gbs * 1e9 : 0;
    if (bw > 0 && e->support != QT_SUPPORT_NO) {
        qt_param_counts pc;
        st = qt_plan_param_counts(m, &pc);
        if (st) return st;
        double peak = r.hw->tflops_16;
        if (e->support == QT_SUPPORT_YES) {
            if (s->act_bits == 8) peak = s->act_float ? r.hw->tflops_fp8 : r.hw->tops_int8;
            else if (s->act_bits == 4) peak = r.hw->tflops_fp4;
        }
        peak *= 1e12;
        const double kv_mean = qt_plan_kv_bytes_per_seq(m, e->kv_elt_bytes, (r.context + 1) / 2, tp);
        const double flops_tok = 2.0 * (double)pc.active / tp;
        e->batch = e->concurrency < max_seqs ? e->concurrency : max_seqs;
        if (r.concurrency > 0 && r.concurrency < e->batch) e->batch = r.concurrency;
        if (e->concurrency >= 1) {
            double t1 = (w.read_single + kv_mean) / bw;
            if (peak > 0 && flops_tok / peak > t1) t1 = flops_tok / peak;
            e->tok_s_single = 1.0 / t1;
            const double b = (double)e->batch;
            /* distinct routed experts a batch touches: at most all of them */
            double touched = w.read_single + (w.read_all - w.read_single) * fmin(1.0, (b - 1.0) * (double)m->n_expert_used /
                                                                                           (m->n_expert ? (double)m->n_expert : 1.0));
            double tb = (touched + b * kv_mean) / bw;
            double tc = peak > 0 ? b * flops_tok / peak : 0;
            e->compute_bound = tc > tb;
            e->tok_s_batch = b / (tc > tb ? tc : tb);
        }
    }
    return QT_OK;
}
