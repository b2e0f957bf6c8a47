/* tools/quanta/plan_cli.c — options shared by `plan` and `estimate`. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan_cli.h"

void plan_opts_init(plan_opts *o) {
    memset(o, 0, sizeof *o);
    o->goal = QT_GOAL_FIT;
    o->req.n_gpus = 1;
    o->req.overhead_bytes = -1;
    o->req.context = 4096;
}

void plan_opts_help(FILE *out) {
    fprintf(out,
            "  --model M          a preset (quanta plan --list-models), a config.json, or a checkpoint\n"
            "  --gpu G[xN]        hardware (quanta hw --list); xN = tensor parallel over N GPUs; 'cpu' = this machine\n"
            "  --memory SIZE      memory per device with its unit: 16GB (1e9 bytes) or 15360MiB (2^20 bytes)\n"
            "  --util F           share of memory the runtime takes, (0, 1] (default 0.90; Apple 0.75)\n"
            "  --overhead SIZE    runtime overhead per GPU (default: simple 1.0GB; realistic: computed allowances)\n"
            "  --context L        tokens per sequence (default 4096)\n"
            "  --concurrency C    sequences that must fit at that context (default: report how many do)\n"
            "  --kv-dtype D       auto|bf16|fp16|fp8|int8 (default auto = the model's 16-bit dtype)\n"
            "  --accounting A     realistic (default: per tensor, 16-bit parts, scales) or simple (the seed's flat\n"
            "                     2/1/0.5 bytes per parameter and 1.0GB overhead)\n"
            "  --batch-tokens N   tokens per forward pass for the activation allowance (default 2048)\n"
            "  --json             machine-readable output (bytes and counts, unrounded; docs/plan.md)\n");
}

static int need_value(const char *verb, int argc, char **argv, int *i, const char **out) {
    if (*i + 1 >= argc) return cli_usage(verb, "%s needs a value", argv[*i]);
    *out = argv[++*i];
    return CLI_OK;
}

static int parse_size_opt(const char *verb, const char *opt, const char *s, double *out) {
    if (qt_plan_parse_size(s, out) != QT_OK) return cli_usage(verb, "%s: %s", opt, qt_last_error());
    return CLI_OK;
}

int plan_opt(const char *verb, int argc, char **argv, int *i, plan_opts *o, int *rc) {
    const char *a = argv[*i], *v = NULL;
    long long n;
    *rc = CLI_OK;
#define VALUE() do { if ((*rc = need_value(verb, argc, argv, i, &v))) return -1; } while (0)
    if (!strcmp(a, "--model") || !strcmp(a, "-m")) { VALUE(); o->model = v; return 1; }
    if (!strcmp(a, "--gpu")) { VALUE(); o->gpu = v; return 1; }
    if (!strcmp(a, "--json")) { o->json = true; return 1; }
    if (!strcmp(a, "--memory")) {
        VALUE();
        if ((*rc = parse_size_opt(verb, a, v, &o->req.memory_bytes))) return -1;
        if (o->req.memory_bytes <= 0) { *rc = cli_usage(verb, "--memory: must be more than 0"); return -1; }
        return 1;
    }
    if (!strcmp(a, "--overhead")) {
        VALUE();
        if ((*rc = parse_size_opt(verb, a, v, &o->req.overhead_bytes))) return -1;
        return 1;
    }
    if (!strcmp(a, "--util")) {
        VALUE();
        char *end;
        double u = strtod(v, &end);
        if (*end || end == v || !(u > 0 && u <= 1)) {
            *rc = cli_usage(verb, "--util: '%s' must be a share of memory in (0, 1], e.g. 0.90", v);
            return -1;
        }
        o->req.util = u;
        return 1;
    }
    if (!strcmp(a, "--context") || !strcmp(a, "-c")) {
        VALUE();
        if ((*rc = cli_parse_int(verb, "--context", v, 1, 100000000, &n))) return -1;
        o->req.context = n;
        return 1;
    }
    if (!strcmp(a, "--concurrency")) {
        VALUE();
        if ((*rc = cli_parse_int(verb, "--concurrency", v, 1, 10000000, &n))) return -1;
        o->req.concurrency = n;
        return 1;
    }
    if (!strcmp(a, "--batch-tokens")) {
        VALUE();
        if ((*rc = cli_parse_int(verb, "--batch-tokens", v, 1, 10000000, &n))) return -1;
        o->req.batch_tokens = n;
        return 1;
    }
    if (!strcmp(a, "--kv-dtype")) {
        VALUE();
        for (int k = 0; k < QT_KV_TYPE_COUNT; k++)
            if (!strcmp(v, qt_kv_dtype_name((qt_kv_type)k))) { o->req.kv_dtype = (qt_kv_type)k; return 1; }
        *rc = cli_usage(verb, "--kv-dtype: '%s' is not one of auto, bf16, fp16, fp8, int8", v);
        return -1;
    }
    if (!strcmp(a, "--accounting")) {
        VALUE();
        if (!strcmp(v, "realistic")) o->req.accounting = QT_ACCOUNTING_REALISTIC;
        else if (!strcmp(v, "simple")) o->req.accounting = QT_ACCOUNTING_SIMPLE;
        else { *rc = cli_usage(verb, "--accounting: '%s' is not realistic or simple", v); return -1; }
        return 1;
    }
#undef VALUE
    return 0;
}

/* "a100-80gbx4" -> ("a100-80gb", 4). A trailing "x<digits>" is the GPU count. */
static int split_gpu(const char *verb, const char *s, char *name, size_t n, int *count) {
    *count = 1;
    snprintf(name, n, "%s", s);
    char *x = strrchr(name, 'x');
    if (!x) x = strrchr(name, 'X');
    if (x && x[1] && x != name && strspn(x + 1, "0123456789") == strlen(x + 1)) {
        long long c = atoll(x + 1);
        if (c < 1 || c > 1024) return cli_usage(verb, "--gpu %s: GPU count %lld must be 1..1024", s, c);
        *count = (int)c;
        *x = 0;
    }
    return CLI_OK;
}

static int unknown_name(const char *verb, const char *what, const char *name, int models) {
    const char *near[3];
    int k = qt_plan_suggest(name, models, near, 3);
    if (!k)
        return cli_usage(verb, "unknown %s '%s' (%s lists them)", what, name,
                         models ? "quanta plan --list-models" : "quanta hw --list");
    char list[256] = "";
    for (int i = 0; i < k; i++) {
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, near[i], sizeof list - strlen(list) - 1);
    }
    return cli_usage(verb, "unknown %s '%s'; did you mean %s?", what, name, list);
}

int plan_resolve(const char *verb, plan_opts *o, bool need_target) {
    if (!o->model) return cli_usage(verb, "--model is required");
    qt_status st = qt_plan_spec_resolve(o->model, &o->spec);
    if (st == QT_ERR_NOT_FOUND) return unknown_name(verb, "model", o->model, 1);
    if (st) return cli_fail(st);
    o->req.model = &o->spec;
    if (o->gpu) {
        char name[96];
        int count, rc;
        if ((rc = split_gpu(verb, o->gpu, name, sizeof name, &count))) return rc;
        const qt_hw_info *hw = qt_hw_find(name);
        if (!hw) return unknown_name(verb, "GPU", name, 0);
        if (hw->cls == QT_HW_CPU) {
            if ((st = qt_hw_local_cpu(&o->local, o->local_name, sizeof o->local_name))) {
                if (!o->req.memory_bytes) return cli_fail(st);
                o->local = *hw;
            }
            hw = &o->local;
        }
        if (count > 1 && (hw->cls == QT_HW_CPU || hw->cls == QT_HW_APPLE))
            return cli_usage(verb, "--gpu %s: tensor parallelism needs GPUs, not %s", o->gpu, hw->key);
        o->req.hw = hw;
        o->req.n_gpus = count;
    } else if (need_target && !o->req.memory_bytes) {
        return cli_usage(verb, "give --gpu NAME or --memory SIZE");
    }
    return CLI_OK;
}

const char *fmt_count(double v, char *buf, size_t n) {
    char raw[64];
    snprintf(raw, sizeof raw, "%.0f", fabs(v));
    size_t len = strlen(raw), k = 0;
    if (v < 0 && k + 1 < n) buf[k++] = '-';
    for (size_t i = 0; i < len && k + 2 < n; i++) {
        buf[k++] = raw[i];
        if ((len - i - 1) % 3 == 0 && i + 1 < len) buf[k++] = ',';
    }
    buf[k] = 0;
    return buf;
}

const char *fmt_gb(double bytes, char *buf, size_t n) {
    snprintf(buf, n, "%.2f GB", bytes / 1e9);
    return buf;
}

const char *fmt_size(double bytes, char *buf, size_t n) {
    const double a = bytes < 0 ? -bytes : bytes;
    if (a >= 1e9) snprintf(buf, n, "%.2f GB", bytes / 1e9);
    else if (a >= 1e6) snprintf(buf, n, "%.1f MB", bytes / 1e6);
    else if (a >= 1e3) snprintf(buf, n, "%.1f KB", bytes / 1e3);
    else snprintf(buf, n, "%.0f bytes", bytes);
    return buf;
}

const char *fmt_frac(double x, char *buf, size_t n) {
    /* one decimal, unless rounding would show the next whole number (19.97 -> "19.97", not "20.0") */
    if (floor(x * 10 + 0.5) / 10 >= floor(x) + 1) snprintf(buf, n, "%.2f", floor(x * 100) / 100);
    else snprintf(buf, n, "%.1f", x);
    return buf;
}

int write_text_file(const char *path, const char *text) {
    qt_afile *f;
    qt_status st = qt_afile_open(path, &f);
    if (st) return cli_fail(st);
    if ((st = qt_afile_write(f, text, strlen(text)))) {
        qt_afile_abort(f);
        return cli_fail(st);
    }
    if ((st = qt_afile_commit(f))) return cli_fail(st);
    return CLI_OK;
}
