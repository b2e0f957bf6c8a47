/* tools/quanta/engine_opts.c — parsing of the shared engine options. */
#include <string.h>

#include "engine_opts.h"

void engine_cli_defaults(engine_cli_opts *o) {
    memset(o, 0, sizeof *o);
    o->kv_dtype = "f16";
    o->kv_scale = "auto";
    o->numerics = "fast";
}

int engine_cli_parse(const char *verb, int argc, char **argv, int *i, engine_cli_opts *o) {
    const char *opt = argv[*i];
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!strcmp(opt, "-c") || !strcmp(opt, "--ctx-size")) {
        if (cli_parse_int(verb, opt, v, 4, 1 << 24, &o->n_ctx)) return -1;
    } else if (!strcmp(opt, "-b") || !strcmp(opt, "--batch")) {
        if (cli_parse_int(verb, opt, v, 1, 1 << 24, &o->n_batch)) return -1;
    } else if (!strcmp(opt, "-t") || !strcmp(opt, "--threads")) {
        if (cli_parse_int(verb, opt, v, 1, 1024, &o->threads)) return -1;
    } else if (!strcmp(opt, "--kv-dtype")) {
        if (!v) { cli_usage(verb, "%s needs a value", opt); return -1; }
        if (cli_kv_engine(verb, opt, v)) return -1;
        o->kv_dtype = v;
    } else if (!strcmp(opt, "--kv-scale")) {
        qt_kv_scale_source src;
        if (!v) { cli_usage(verb, "%s needs a value", opt); return -1; }
        if (qt_kv_scale_source_parse(v, &src) != QT_OK) { cli_usage(verb, "%s: %s", opt, qt_last_error()); return -1; }
        o->kv_scale = v;
    } else if (!strcmp(opt, "--kv-scale-gran")) {
        if (!v || (strcmp(v, "tensor") && strcmp(v, "head"))) {
            cli_usage(verb, "%s takes 'tensor' or 'head'", opt);
            return -1;
        }
        o->kv_per_head = !strcmp(v, "head");
    } else if (!strcmp(opt, "--act-quant")) {
        if (!v || (strcmp(v, "auto") && strcmp(v, "off"))) {
            cli_usage(verb, "%s takes 'auto' or 'off'", opt);
            return -1;
        }
        o->act_quant_off = !strcmp(v, "off");
    } else if (!strcmp(opt, "--numerics")) {
        qt_numerics nm;
        if (!v) { cli_usage(verb, "%s needs a value", opt); return -1; }
        if (qt_numerics_parse(v, &nm) != QT_OK) { cli_usage(verb, "%s: %s", opt, qt_last_error()); return -1; }
        o->numerics = v;
    } else {
        return 0;
    }
    (*i)++;
    return 1;
}

qt_status engine_cli_to_opts(const engine_cli_opts *o, qt_engine_opts *eo) {
    qt_engine_opts_default(eo);
    qt_status s = qt_kv_type_parse(o->kv_dtype, &eo->kv_type);
    if (s == QT_OK) s = qt_kv_scale_source_parse(o->kv_scale, &eo->kv_scale_source);
    if (s == QT_OK) s = qt_numerics_parse(o->numerics, &eo->numerics);
    eo->n_ctx = (int32_t)o->n_ctx;
    eo->n_batch = (int32_t)o->n_batch;
    eo->n_threads = (int)o->threads;
    eo->kv_scale_gran = o->kv_per_head ? QT_KV_SCALE_PER_HEAD : QT_KV_SCALE_PER_TENSOR;
    eo->act_quant_off = o->act_quant_off;
    return s;
}

qt_status engine_cli_create(const qt_model *m, const engine_cli_opts *o, qt_engine_ctx **out) {
    return engine_cli_create_seqs(m, o, 1, out);
}

qt_status engine_cli_create_seqs(const qt_model *m, const engine_cli_opts *o, int32_t n_seq, qt_engine_ctx **out) {
    qt_engine_opts eo;
    const qt_status s = engine_cli_to_opts(o, &eo);
    eo.n_seq = n_seq;
    return s != QT_OK ? s : qt_engine_new(m, &eo, out);
}
