/* tools/quanta/quantize_kv.c — `quanta quantize --kv-dtype/--kv-calib/
 * --kv-scale-gran` (quantize_kv.h), through the library only. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "quantize_kv.h"

#define RANDOM_SEQS 16

int qkv_arg(const char *verb, const char *opt, const char *v, qkv *k) {
    if (!strcmp(opt, "--kv-dtype")) {
        if (qt_kv_type_parse(v, &k->type) != QT_OK) { cli_usage(verb, "%s: %s", opt, qt_last_error()); return -1; }
        if (!qt_kv_type_max(k->type)) {
            cli_usage(verb, "--kv-dtype %s stores K and V without scales; quantize fits scales for fp8-e4m3, fp8-e5m2 "
                      "and int8", v);
            return -1;
        }
        k->dtype = v;
        k->on = true;
        return 1;
    }
    if (!strcmp(opt, "--kv-calib")) {
        if (qt_kv_calib_mode_parse(v, &k->mode) != QT_OK) { cli_usage(verb, "%s: %s", opt, qt_last_error()); return -1; }
        k->calib = v;
        return 1;
    }
    if (!strcmp(opt, "--kv-scale-gran")) {
        if (strcmp(v, "tensor") && strcmp(v, "head")) {
            cli_usage(verb, "--kv-scale-gran '%s': expected tensor or head", v);
            return -1;
        }
        k->gran = v;
        k->g = !strcmp(v, "head") ? QT_KV_SCALE_PER_HEAD : QT_KV_SCALE_PER_TENSOR;
        return 1;
    }
    return 0;
}

int qkv_check(const char *verb, qkv *k, bool have_calib) {
    if (!k->on && (k->calib || k->gran))
        return cli_usage(verb, "%s needs --kv-dtype (the cache format the scales are for)",
                         k->calib ? "--kv-calib" : "--kv-scale-gran");
    if (!k->on) return CLI_OK;
    if (!k->calib && !have_calib)
        return cli_usage(verb, "--kv-dtype %s: say how to fit its scales: --calib FILE (then --kv-calib data), or "
                         "--kv-calib random|none", k->dtype);
    if (!k->calib) k->mode = QT_KV_CALIB_DATA;
    if (k->mode == QT_KV_CALIB_DATA && !have_calib)
        return cli_usage(verb, "--kv-calib data needs --calib FILE (the text K and V are observed on)");
    return CLI_OK;
}

int qkv_init(qkv *k, const qt_model *m) {
    if (!k->on) return CLI_OK;
    qt_status s = qt_kv_scales_init(&k->s, m, k->type, k->g, k->mode);
    return s == QT_OK ? CLI_OK : cli_fail(s);
}

int qkv_fit(qkv *k, const qt_model *m, const qt_calib_set *set, const cli_calib *c, bool gptq, int threads, int quiet) {
    if (!k->on) return CLI_OK;
    if (k->mode == QT_KV_CALIB_NONE) {
        fprintf(stderr, "quanta: warning: --kv-calib none: every KV-cache scale is 1.0; nothing was fitted (a %s cache "
                        "with these scales clips values above %g and loses small ones)\n",
                qt_kv_type_name(k->type), (double)qt_kv_type_max(k->type));
        return CLI_OK;
    }
    if (k->mode == QT_KV_CALIB_DATA && gptq) return CLI_OK; /* GPTQ's observe passes fill them */
    qt_status s;
    if (k->mode == QT_KV_CALIB_DATA) {
        s = qt_kv_scales_calibrate(&k->s, m, set->tokens, set->n_samples, set->seq_len, threads, cli_progress(quiet));
    } else {
        const int32_t ctx = qt_model_hparams(m)->n_ctx_train;
        const int32_t n_seq = c->n_samples > 0 ? (int32_t)c->n_samples : RANDOM_SEQS;
        int32_t n_tok = c->seq_len > 0 ? (int32_t)c->seq_len : QT_CALIB_DEFAULT_SEQLEN;
        if (ctx > 0 && n_tok > ctx) n_tok = ctx;
        int32_t *tok = malloc((size_t)n_seq * n_tok * sizeof *tok);
        if (!tok) return cli_fail(qt_error(QT_ERR_NOMEM, "out of memory"));
        qt_kv_random_tokens(m, n_seq, n_tok, c->seed, tok);
        s = qt_kv_scales_calibrate(&k->s, m, tok, n_seq, n_tok, threads, cli_progress(quiet));
        free(tok);
    }
    cli_progress_end();
    return s == QT_OK ? CLI_OK : cli_fail(s);
}

static void range(const float *x, int64_t n, float *lo, float *hi) {
    *lo = FLT_MAX;
    *hi = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        if (x[i] < *lo) *lo = x[i];
        if (x[i] > *hi) *hi = x[i];
    }
}

void qkv_report(const qkv *k) {
    if (!k->on) return;
    const int64_t n = (int64_t)k->s.n_layer * k->s.n_per_layer;
    float klo, khi, vlo, vhi;
    range(k->s.k, n, &klo, &khi);
    range(k->s.v, n, &vlo, &vhi);
    fprintf(stderr, "  KV cache %s, %s scales (%s", qt_kv_type_name(k->type),
            k->g == QT_KV_SCALE_PER_HEAD ? "per-head" : "per-tensor", qt_kv_calib_mode_name(k->mode));
    if (k->s.n_tokens) fprintf(stderr, ", %lld tokens", (long long)k->s.n_tokens);
    fprintf(stderr, "): K %.4g..%.4g, V %.4g..%.4g\n", (double)klo, (double)khi, (double)vlo, (double)vhi);
}

json_t *qkv_json(const qkv *k) {
    json_t *ks = json_array(), *vs = json_array();
    const int64_t n = (int64_t)k->s.n_layer * k->s.n_per_layer;
    for (int64_t i = 0; i < n; i++) {
        json_array_append_new(ks, json_real(k->s.k[i]));
        json_array_append_new(vs, json_real(k->s.v[i]));
    }
    return json_pack("{s:s, s:s, s:s, s:I, s:o, s:o}", "dtype", qt_kv_type_name(k->type), "scale_gran",
                     k->g == QT_KV_SCALE_PER_HEAD ? "head" : "tensor", "calib", qt_kv_calib_mode_name(k->mode), "tokens",
                     (json_int_t)k->s.n_tokens, "k_scale", ks, "v_scale", vs);
}

int qkv_ct(const char *verb, qkv *k, qt_ct_export_opts *o) {
    if (!k->on) return CLI_OK;
    if (k->type == QT_KV_TYPE_FP8_E5M2)
        return cli_usage(verb, "--kv-dtype fp8-e5m2: compressed-tensors' kv_cache_scheme is FP8 E4M3 or int8 (vLLM's "
                         "fp8_e5m2 cache takes no scales); use fp8-e4m3, or a GGUF scheme");
    if (!o) return CLI_OK;
    o->kv_k_scale = k->s.k;
    o->kv_v_scale = k->s.v;
    o->kv_per_layer = k->s.n_per_layer;
    o->kv_type = k->type == QT_KV_TYPE_INT8 ? "int" : "float";
    o->kv_calib = qt_kv_calib_mode_name(k->mode);
    return CLI_OK;
}

void qkv_free(qkv *k) { qt_kv_scales_free(&k->s); }
