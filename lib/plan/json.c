/* lib/plan/json.c — `estimate --json` and `plan --json` (schema: docs/plan.md).
 * Bytes and counts are plain numbers, never rounded: integers when the value
 * is integral, full-precision reals otherwise. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "plan_internal.h"

static json_t *num(double v) {
    if (isfinite(v) && v == floor(v) && fabs(v) < 9007199254740992.0) return json_integer((json_int_t)v);
    return json_real(isfinite(v) ? v : 0);
}

static const char *support_name(qt_support s) {
    return s == QT_SUPPORT_YES ? "yes" : (s == QT_SUPPORT_PARTIAL ? "partial" : "no");
}

static const char *runtime_name(qt_runtime e) {
    return e == QT_RUNTIME_LLAMACPP ? "llama.cpp" : (e == QT_RUNTIME_BNB ? "vllm+bitsandbytes" : "vllm");
}

static json_t *model_json(const qt_model_spec *m) {
    qt_param_counts pc;
    json_t *o = json_object();
    json_object_set_new(o, "key", json_string(m->key));
    json_object_set_new(o, "name", json_string(m->display));
    json_object_set_new(o, "arch", json_string(m->arch));
    json_object_set_new(o, "source", json_string(m->source));
    if (qt_plan_param_counts(m, &pc) == QT_OK) {
        json_object_set_new(o, "n_params", num((double)pc.total));
        json_object_set_new(o, "n_params_active", num((double)pc.active));
        json_object_set_new(o, "n_params_embed", num((double)pc.embed));
        json_object_set_new(o, "n_params_lm_head", num((double)pc.lm_head));
        json_object_set_new(o, "n_params_linear", num((double)pc.linear));
    } else {
        qt_clear_error();
    }
    if (m->kind == QT_SPEC_LLM) {
        json_object_set_new(o, "n_layer", num((double)m->n_layer));
        json_object_set_new(o, "n_head", num((double)m->n_head));
        json_object_set_new(o, "n_head_kv", num((double)m->n_head_kv));
        json_object_set_new(o, "head_dim", num((double)m->head_dim));
        json_object_set_new(o, "sliding_window", num((double)m->sliding_window));
        json_object_set_new(o, "kv_lora_rank", num((double)m->kv_lora_rank));
        json_object_set_new(o, "n_expert", num((double)m->n_expert));
    }
    if (m->measured) {
        json_t *ms = json_object();
        json_object_set_new(ms, "n_params", num((double)m->measured_params));
        json_object_set_new(ms, "bytes", num((double)m->measured_bytes));
        json_object_set_new(ms, "format", json_string(m->measured_format));
        json_object_set_new(o, "measured", ms);
    } else {
        json_object_set_new(o, "measured", json_null());
    }
    return o;
}

static json_t *hw_json(const qt_hw_info *hw, int n_gpus) {
    if (!hw) return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "key", json_string(hw->key));
    json_object_set_new(o, "name", json_string(hw->name));
    json_object_set_new(o, "class", json_string(qt_hw_class_name(hw->cls)));
    json_object_set_new(o, "compute_capability", hw->cc ? json_real(hw->cc / 10.0) : json_null());
    json_object_set_new(o, "memory_bytes", num(hw->mem_gb * QT_GB));
    json_object_set_new(o, "bandwidth_bytes_per_s", num(hw->bw_gbs * 1e9));
    json_object_set_new(o, "count", num(n_gpus));
    return o;
}

/* The numbers of one estimate, shared by both documents. */
static void put_estimate(json_t *o, const qt_estimate *e) {
    json_object_set_new(o, "device_bytes", num(e->device_bytes));
    json_object_set_new(o, "budget_bytes", num(e->budget_bytes));
    json_object_set_new(o, "weights_bytes", num(e->weights_bytes));
    json_object_set_new(o, "weights_total_bytes", num(e->weights_total_bytes));
    json_object_set_new(o, "weights_16bit_bytes", num(e->weights_16bit_bytes));
    json_object_set_new(o, "weights_scale_bytes", num(e->weights_scale_bytes));
    json_object_set_new(o, "n_params", num((double)e->n_params));
    json_object_set_new(o, "n_params_16bit", num((double)e->n_params_16bit));
    json_object_set_new(o, "runtime_bytes", num(e->runtime_bytes));
    json_object_set_new(o, "workspace_bytes", num(e->workspace_bytes));
    json_object_set_new(o, "overhead_bytes", num(e->overhead_bytes));
    json_object_set_new(o, "kv_element_bytes", num(e->kv_elt_bytes));
    json_object_set_new(o, "kv_bytes_per_token", num(e->kv_bytes_per_token));
    json_object_set_new(o, "kv_bytes_per_token_gpu", num(e->kv_bytes_per_token_gpu));
    json_object_set_new(o, "kv_bytes_per_seq", num(e->kv_bytes_per_seq));
    json_object_set_new(o, "kv_budget_bytes", num(e->kv_budget_bytes));
    json_object_set_new(o, "kv_required_bytes", num(e->kv_required_bytes));
    json_object_set_new(o, "concurrency_frac", num(e->concurrency_frac));
    json_object_set_new(o, "concurrency", num((double)e->concurrency));
    json_object_set_new(o, "gpu_blocks", num((double)e->gpu_blocks));
    json_object_set_new(o, "block_tokens", num(16));
    json_object_set_new(o, "max_context", num((double)e->max_context));
    json_object_set_new(o, "max_context_memory", num((double)e->max_context_memory));
    /* a scheme the hardware cannot run has no fit verdict: "fits" is false, "memory_fits" the arithmetic */
    const bool runs = e->support != QT_SUPPORT_NO;
    json_object_set_new(o, "fits", json_boolean(e->fits && runs));
    json_object_set_new(o, "memory_fits", json_boolean(e->fits));
    json_object_set_new(o, "verdict", json_string(!runs ? "cannot_run" : e->fits ? "fits" : "does_not_fit"));
    json_object_set_new(o, "shortfall_bytes", num(e->shortfall_bytes));
    json_object_set_new(o, "weights_shortfall_bytes", num(e->weights_shortfall_bytes));
    json_object_set_new(o, "support", json_string(support_name(e->support)));
    json_object_set_new(o, "reason", json_string(e->reason));
    json_t *d = json_object();
    json_object_set_new(d, "batch", num((double)e->batch));
    json_object_set_new(d, "tok_s_single", num(e->tok_s_single));
    json_object_set_new(d, "tok_s_batch", num(e->tok_s_batch));
    json_object_set_new(d, "compute_bound", json_boolean(e->compute_bound));
    json_object_set_new(o, "decode_roofline", d);
}

static void put_request(json_t *o, const qt_estimate_req *r) {
    json_object_set_new(o, "model", model_json(r->model));
    json_object_set_new(o, "hardware", hw_json(r->hw, r->n_gpus ? r->n_gpus : 1));
    json_object_set_new(o, "gpus", num(r->n_gpus ? r->n_gpus : 1));
    json_object_set_new(o, "accounting", json_string(r->accounting == QT_ACCOUNTING_SIMPLE ? "simple" : "realistic"));
    if (r->model->kind != QT_SPEC_LLM) return; /* a diffusion pipeline has no context or cache */
    json_object_set_new(o, "context", num((double)r->context));
    json_object_set_new(o, "concurrency_requested", r->concurrency > 0 ? num((double)r->concurrency) : json_null());
    json_object_set_new(o, "kv_dtype", json_string(qt_kv_dtype_name(r->kv_dtype)));
}

static qt_status dump(json_t *o, char **out) {
    *out = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    json_decref(o);
    if (!*out) return qt_error(QT_ERR_NOMEM, "json: out of memory");
    return QT_OK;
}

static json_t *scheme_json(const qt_scheme_info *s) {
    json_t *o = json_object();
    json_object_set_new(o, "key", json_string(s->key));
    json_object_set_new(o, "title", json_string(s->title));
    json_object_set_new(o, "engine", json_string(runtime_name(s->runtime)));
    json_object_set_new(o, "weight_bits", num(s->bits));
    json_object_set_new(o, "simple_bytes_per_param", num(s->simple_bytes));
    json_object_set_new(o, "quality_rank", num(s->quality));
    return o;
}

qt_status qt_plan_estimate_json(const qt_estimate_req *req, const qt_estimate *e, char **out) {
    json_t *o = json_object();
    put_request(o, req);
    json_object_set_new(o, "scheme", scheme_json(req->scheme));
    put_estimate(o, e);
    return dump(o, out);
}

/* A diffusion row has no KV cache, sequences or context: its own fields. */
static void put_diffusion_row(json_t *o, const qt_plan *p, const qt_plan_row *row) {
    const qt_estimate *e = &row->est;
    const bool runs = e->support != QT_SUPPORT_NO;
    json_object_set_new(o, "device_bytes", num(e->device_bytes));
    json_object_set_new(o, "budget_bytes", num(e->budget_bytes));
    json_object_set_new(o, "weights_bytes", num(e->weights_bytes));
    json_object_set_new(o, "activation_bytes", num(e->overhead_bytes));
    json_object_set_new(o, "spare_bytes", num(e->kv_budget_bytes));
    json_object_set_new(o, "fits", json_boolean(e->fits && runs));
    json_object_set_new(o, "memory_fits", json_boolean(e->fits));
    json_object_set_new(o, "verdict", json_string(!runs ? "cannot_run" : e->fits ? "fits" : "does_not_fit"));
    json_object_set_new(o, "shortfall_bytes", num(e->shortfall_bytes));
    json_object_set_new(o, "support", json_string(support_name(e->support)));
    json_object_set_new(o, "reason", json_string(e->reason));
    json_t *prec = json_object();
    for (int c = 0; c < p->n_components; c++)
        json_object_set_new(prec, p->req.model->comp[c].name, json_string(qt_plan_component_precision(p, row, c)));
    json_object_set_new(o, "precision", prec);
}

qt_status qt_plan_json(const qt_plan *p, char **out) {
    json_t *o = json_object();
    put_request(o, &p->req);
    json_object_set_new(o, "goal", json_string(qt_goal_name(p->goal)));
    json_object_set_new(o, "constraint", json_string(p->constraint));
    json_object_set_new(o, "best", p->best >= 0 ? json_string(p->rows[p->best].scheme->key) : json_null());
    json_t *rows = json_array();
    for (int i = 0; i < p->n_rows; i++) {
        json_t *r = json_object();
        json_object_set_new(r, "rank", num(p->rows[i].rank));
        json_object_set_new(r, "scheme", scheme_json(p->rows[i].scheme));
        json_object_set_new(r, "score", num(p->rows[i].score));
        if (p->n_components) put_diffusion_row(r, p, &p->rows[i]);
        else put_estimate(r, &p->rows[i].est);
        json_array_append_new(rows, r);
    }
    json_object_set_new(o, "rows", rows);
    if (p->kv_alt_dtype != QT_KV_TYPE_AUTO) {
        json_t *k = json_object();
        json_object_set_new(k, "kv_dtype", json_string(qt_kv_dtype_name(p->kv_alt_dtype)));
        json_object_set_new(k, "support", json_string(support_name(p->kv_alt_support)));
        json_object_set_new(k, "reason", json_string(p->kv_alt_reason));
        put_estimate(k, &p->kv_alt);
        json_object_set_new(o, "kv_advice", k);
    } else {
        json_object_set_new(o, "kv_advice", json_null());
    }
    json_t *w = json_array();
    for (int i = 0; i < p->n_warnings; i++) json_array_append_new(w, json_string(p->warnings[i]));
    json_object_set_new(o, "warnings", w);
    json_t *c = json_array();
    for (int i = 0; i < p->n_commands; i++) json_array_append_new(c, json_string(p->commands[i]));
    json_object_set_new(o, "commands", c);
    json_t *j = json_object();
    json_object_set_new(j, "method", json_string(p->job.method ? p->job.method : "none"));
    json_object_set_new(j, "n_samples", num((double)p->job.n_samples));
    json_object_set_new(j, "seq_len", num((double)p->job.seq_len));
    json_object_set_new(j, "layer_bytes", num(p->job.layer_bytes));
    json_object_set_new(j, "work_bytes", num(p->job.work_bytes));
    json_object_set_new(j, "hessian_bytes", num(p->job.hessian_bytes));
    json_object_set_new(j, "activation_bytes", num(p->job.activation_bytes));
    json_object_set_new(j, "total_bytes", num(p->job.total_bytes));
    json_object_set_new(j, "host_bytes", num(p->job.host_bytes));
    json_object_set_new(o, "quant_job", j);
    if (p->n_components) {
        json_t *cs = json_array();
        for (int i = 0; i < p->n_components; i++) {
            const qt_plan_component *cp = &p->req.model->comp[i];
            json_t *x = json_object();
            json_object_set_new(x, "name", json_string(cp->name));
            json_object_set_new(x, "what", json_string(cp->what));
            json_object_set_new(x, "role", json_string(cp->role == QT_COMPONENT_DENOISER ? "denoiser"
                                                       : cp->role == QT_COMPONENT_VAE   ? "vae"
                                                                                        : "text-encoder"));
            json_object_set_new(x, "n_params", num((double)cp->n_params));
            json_object_set_new(x, "bytes_16bit", num(p->comp_bytes[i][0]));
            json_object_set_new(x, "bytes_8bit", num(p->comp_bytes[i][1]));
            json_object_set_new(x, "bytes_4bit", num(p->comp_bytes[i][2]));
            json_array_append_new(cs, x);
        }
        json_object_set_new(o, "components", cs);
    }
    return dump(o, out);
}
