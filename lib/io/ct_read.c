/* lib/io/ct_read.c — reading compressed-tensors checkpoints (formats.md §4):
 * quantization_config's weight and activation arguments, and each quantized
 * Linear's stored tensors (weight_packed / weight + weight_scale [+
 * weight_zero_point, weight_global_scale, input_scale]).
 *
 * W8A8 and FP8 linears (int8 per channel with int8 per-token activations; e4m3
 * per channel or per tensor with per-token or static activations; e4m3 128x128
 * blocks with 128-groups) are kept packed, one code byte per weight, in the
 * engine's compressed-tensors rows (lib/quant/ct_rows.h), which the engine runs
 * as vLLM does (docs/w8a8.md). The weight-only 4-bit schemes (int4 groups of
 * 32, 64 or 128, symmetric or with zero points; NVFP4; MXFP4) are kept packed
 * too, in the 4-bit rows of lib/quant/ct4.h, whose f32 dots give the bits of
 * the f32 path; the weight-only 8-bit ones (int8 per channel, per tensor, or
 * in groups of 128, symmetric or with zero points) in the 8-bit rows of
 * lib/quant/ct8.h, one code byte per weight, the same f32 bits. Other schemes
 * (int8 groups other than 128, int4 with other groups, rows not a multiple of
 * 32) are dequantized on load into an f32 "<module>.weight" with the
 * compressed-tensors dequantizers of ct.h.
 */
#define _GNU_SOURCE
#define PCRE2_CODE_UNIT_WIDTH 8
#include <jansson.h>
#include <math.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_read.h"
#include "io_internal.h"
#include "model/model_internal.h"
#include "quant/ct4.h"
#include "quant/ct8.h"
#include "quant/ct_rows.h"
#include "quanta/num.h"

static const char *const suffixes[] = {".weight_packed", ".weight_scale", ".weight_zero_point", ".weight_shape",
                                       ".weight_global_scale", ".input_scale", ".input_global_scale", ".input_zero_point",
                                       ".weight_g_idx"};

bool qt__ct_piece_base(const char *name, char *base, size_t cap) {
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t k = strlen(suffixes[i]);
        if (n > k && !strcmp(name + n - k, suffixes[i])) {
            snprintf(base, cap, "%.*s.weight", (int)(n - k), name);
            return true;
        }
    }
    return false;
}

static qt_ct_strategy strategy_of(const char *s) {
    return !s ? QT_CT_TENSOR : !strcmp(s, "channel") ? QT_CT_CHANNEL : !strcmp(s, "group") || !strcmp(s, "tensor_group")
           ? QT_CT_GROUP : QT_CT_TENSOR;
}

/* One config group's arguments into out (its targets aside). */
static qt_status parse_group(const char *cfg_path, const json_t *qc, const char *key, const json_t *g, qt__ct_layout *out) {
    memset(out, 0, sizeof *out);
    json_t *w = json_object_get(g, "weights"), *ia = json_object_get(g, "input_activations");
    const char *ia_st = json_string_value(json_object_get(ia, "strategy"));
    out->static_input = json_is_object(ia) && json_is_false(json_object_get(ia, "dynamic")) && ia_st &&
                        !strcmp(ia_st, "tensor");
    const char *ia_ty = json_string_value(json_object_get(ia, "type"));
    const bool fl = ia_ty && !strcmp(ia_ty, "float");
    out->act_fp8_static = out->static_input && fl && json_integer_value(json_object_get(ia, "num_bits")) == 8;
    if (json_is_object(ia) && ia_st && json_is_true(json_object_get(ia, "dynamic")) &&
        json_integer_value(json_object_get(ia, "num_bits")) == 8) {
        out->act_int8_token = !fl && !strcmp(ia_st, "token");
        out->act_fp8_token = fl && !strcmp(ia_st, "token");
        out->act_fp8_group128 = fl && !strcmp(ia_st, "group") &&
                                json_integer_value(json_object_get(ia, "group_size")) == QT_CT_FP8_GROUP;
    }
    const char *fmt = json_string_value(json_object_get(g, "format"));
    if (!fmt) fmt = json_string_value(json_object_get(qc, "format"));
    if (!json_is_object(w) || !fmt)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'quantization_config.config_groups.%s': no weights arguments or "
                        "format (only weight-quantized compressed-tensors checkpoints are read)", cfg_path, key);
    snprintf(out->format, sizeof out->format, "%s", fmt);
    out->bits = (int)json_integer_value(json_object_get(w, "num_bits"));
    const char *type = json_string_value(json_object_get(w, "type"));
    out->is_float = type && !strcmp(type, "float");
    out->symmetric = !json_is_false(json_object_get(w, "symmetric"));
    const char *st = json_string_value(json_object_get(w, "strategy"));
    out->block = st && !strcmp(st, "block");
    out->strategy = strategy_of(st);
    out->group_size = json_integer_value(json_object_get(w, "group_size"));
    json_t *bs = json_object_get(w, "block_structure");
    out->bh = json_integer_value(json_array_get(bs, 0));
    out->bw = json_integer_value(json_array_get(bs, 1));
    static const char *const known[] = {"pack-quantized", "int-quantized", "naive-quantized", "float-quantized",
                                        "nvfp4-pack-quantized", "mxfp4-pack-quantized"};
    bool ok = false;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) ok |= !strcmp(fmt, known[i]);
    if (!ok) return qt_error(QT_ERR_UNSUPPORTED, "%s: compressed-tensors format '%s' is not read (pack-quantized, "
                             "int-quantized, float-quantized, nvfp4-pack-quantized, mxfp4-pack-quantized)", cfg_path, fmt);
    if (out->bits < 1 || out->bits > 8 || (out->block && (out->bh <= 0 || out->bw <= 0)) ||
        (out->strategy == QT_CT_GROUP && out->group_size <= 0))
        return qt_error(QT_ERR_FORMAT, "%s: group '%s': weights num_bits %d / strategy %s / group_size %lld are not valid",
                        cfg_path, key, out->bits, st ? st : "?", (long long)out->group_size);
    return QT_OK;
}

/* Whether two groups' arguments agree beyond the weights' strategy and group size. */
static bool same_but_grouping(const qt__ct_layout *a, const qt__ct_layout *b) {
    return !strcmp(a->format, b->format) && a->bits == b->bits && a->is_float == b->is_float && a->symmetric == b->symmetric &&
           a->block == b->block && a->bh == b->bh && a->bw == b->bw && a->static_input == b->static_input &&
           a->act_int8_token == b->act_int8_token && a->act_fp8_token == b->act_fp8_token &&
           a->act_fp8_group128 == b->act_fp8_group128 && a->act_fp8_static == b->act_fp8_static;
}

static qt_status add_targets(const char *cfg_path, const char *key, const json_t *g, const qt__ct_layout *gl, qt__ct_layout *out) {
    const json_t *t = json_object_get(g, "targets");
    if (!json_is_array(t) || json_array_size(t) == 0)
        return qt_error(QT_ERR_FORMAT, "%s: field 'quantization_config.config_groups.%s.targets': expected a non-empty list of "
                        "strings", cfg_path, key);
    for (size_t i = 0; i < json_array_size(t); i++) {
        const char *v = json_string_value(json_array_get(t, i));
        if (!v || strlen(v) >= sizeof out->targets[0].target)
            return qt_error(QT_ERR_FORMAT, "%s: field 'quantization_config.config_groups.%s.targets[%zu]': expected a string "
                            "of at most %zu bytes", cfg_path, key, i, sizeof out->targets[0].target - 1);
        if (out->n_targets == QT__CT_MAX_TARGETS)
            return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'quantization_config.config_groups': more than %d targets", cfg_path,
                            QT__CT_MAX_TARGETS);
        qt__ct_target *d = &out->targets[out->n_targets++];
        snprintf(d->target, sizeof d->target, "%s", v);
        d->strategy = gl->strategy;
        d->group_size = gl->group_size;
    }
    return QT_OK;
}

qt_status qt__ct_layout_parse(const char *cfg_path, const json_t *qc, qt__ct_layout *out) {
    memset(out, 0, sizeof *out);
    json_t *groups = json_object_get(qc, "config_groups");
    if (!json_is_object(groups) || json_object_size(groups) == 0) return QT_OK; /* KV-cache only */
    const char *key;
    json_t *g;
    qt__ct_layout gl;
    json_object_foreach(groups, key, g) {
        qt_status s = parse_group(cfg_path, qc, key, g, &gl);
        if (s != QT_OK) return s;
        if (out->n_groups == 0) *out = gl;
        else if (!same_but_grouping(out, &gl))
            return qt_error(QT_ERR_UNSUPPORTED, "%s: field 'quantization_config.config_groups.%s': config groups that differ "
                            "beyond the weights' strategy and group size are not read", cfg_path, key);
        out->n_groups++;
        if (json_object_size(groups) > 1 && (s = add_targets(cfg_path, key, g, &gl, out)) != QT_OK) return s;
    }
    out->active = true;
    return QT_OK;
}

/* compressed-tensors' target matching: "re:" + a regex matched at the start of the name
 * (Python's re.match), "Linear" (the class of every layer read here), or the name itself. */
static bool target_matches(const char *target, const char *module) {
    if (!strcmp(target, "Linear")) return true;
    if (strncmp(target, "re:", 3)) return !strcmp(target, module);
    int err;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)(target + 3), PCRE2_ZERO_TERMINATED, PCRE2_ANCHORED, &err, &off, NULL);
    if (!re) return false;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    const bool hit = md && pcre2_match(re, (PCRE2_SPTR)module, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL) >= 0;
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    return hit;
}

qt_status qt__ct_layout_for(const char *cfg_path, const qt__ct_layout *L, const char *module, qt__ct_layout *out) {
    *out = *L;
    if (L->n_groups <= 1) return QT_OK;
    /* names and regexes before the class name, as vLLM's find_matched_target */
    for (int pass = 0; pass < 2; pass++)
        for (int32_t i = 0; i < L->n_targets; i++) {
            const qt__ct_target *t = &L->targets[i];
            if ((pass == 0) == !strcmp(t->target, "Linear") || !target_matches(t->target, module)) continue;
            out->strategy = t->strategy;
            out->group_size = t->group_size;
            return QT_OK;
        }
    return qt_error(QT_ERR_FORMAT, "%s: quantized module '%s' matches no target of quantization_config.config_groups",
                    cfg_path, module);
}

/* A scale tensor of any float dtype -> f32 (n values expected). */
static qt_status scales_f32(const char *fp, const qt_st_tensor *t, int64_t n, float *out, qt_ct_dtype *dt) {
    int64_t have = 1;
    for (int32_t d = 0; d < t->n_dims; d++) have *= t->shape[d];
    if (have != n)
        return qt_error(QT_ERR_SHAPE, "%s: tensor '%s': %lld scales, expected %lld", fp, t->name, (long long)have, (long long)n);
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *p = (const uint8_t *)t->data;
        switch (t->dtype) {
        case QT_ST_BF16: { uint16_t v; memcpy(&v, p + 2 * i, 2); out[i] = qt_bf16_to_f32(v); *dt = QT_CT_BF16; break; }
        case QT_ST_F16: { uint16_t v; memcpy(&v, p + 2 * i, 2); out[i] = qt_fp16_to_f32(v); *dt = QT_CT_F16; break; }
        case QT_ST_F32: memcpy(&out[i], p + 4 * i, 4); *dt = QT_CT_F32; break;
        default: return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': scale dtype %s (BF16, F16 or F32 expected)", fp, t->name,
                                 qt_st_dtype_name(t->dtype));
        }
    }
    return QT_OK;
}

static const qt_st_tensor *piece(const qt_st_checkpoint *ck, const char *module, const char *suffix) {
    char name[QT_MAX_NAME + 64];
    snprintf(name, sizeof name, "%s%s", module, suffix);
    return qt_st_checkpoint_find(ck, name, NULL);
}

static qt_status expect(const char *fp, const qt_st_tensor *t, const char *module, const char *suffix, qt_st_dtype dt,
                        int64_t bytes) {
    if (!t) return qt_error(QT_ERR_FORMAT, "%s: tensor '%s%s' missing", fp, module, suffix);
    if (t->dtype != dt)
        return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': dtype %s, expected %s", fp, t->name, qt_st_dtype_name(t->dtype),
                        qt_st_dtype_name(dt));
    if (bytes >= 0 && (int64_t)(t->end - t->begin) != bytes)
        return qt_error(QT_ERR_SHAPE, "%s: tensor '%s': %llu bytes, expected %lld", fp, t->name,
                        (unsigned long long)(t->end - t->begin), (long long)bytes);
    return QT_OK;
}

/* An integer layout's codes (R x C, into q) and, when asymmetric, its n_scales zero points (*zp,
 * malloc'd; NULL when symmetric): pack-quantized words or int-quantized bytes. */
static qt_status int_codes(const qt__ct_layout *L, const char *fp, const qt_st_checkpoint *ck, const char *module,
                           int64_t R, int64_t C, int64_t n_scales, int8_t *q, int8_t **zp) {
    const bool packed = !strcmp(L->format, "pack-quantized");
    const qt_st_tensor *w = piece(ck, module, packed ? ".weight_packed" : ".weight");
    qt_status s = expect(fp, w, module, packed ? ".weight_packed" : ".weight", packed ? QT_ST_I32 : QT_ST_I8,
                         packed ? R * qt_ct_packed_len(C, L->bits) * 4 : R * C);
    if (s == QT_OK) s = packed ? qt_ct_unpack_rows(w->data, R, C, L->bits, q) : (memcpy(q, w->data, (size_t)(R * C)), QT_OK);
    if (s == QT_OK && !L->symmetric) {
        const qt_st_tensor *z = piece(ck, module, ".weight_zero_point");
        const int64_t per_row = n_scales / R;
        if (!(*zp = malloc((size_t)n_scales))) s = qt_error(QT_ERR_NOMEM, "%s: out of memory", fp);
        if (s == QT_OK) s = expect(fp, z, module, ".weight_zero_point", packed ? QT_ST_I32 : QT_ST_I8,
                                   packed ? qt_ct_packed_len(R, L->bits) * per_row * 4 : n_scales);
        if (s == QT_OK) s = packed ? qt_ct_unpack_cols(z->data, R, per_row, L->bits, *zp) : (memcpy(*zp, z->data, (size_t)n_scales), QT_OK);
    }
    return s;
}

static qt_status dequant(const qt__ct_layout *L, const char *fp, const qt_st_checkpoint *ck, const char *module,
                         int64_t R, int64_t C, float *out) {
    const qt_st_tensor *ws = piece(ck, module, ".weight_scale");
    qt_status s = QT_OK;
    qt_ct_dtype dt = QT_CT_BF16;
    if (!strcmp(L->format, "nvfp4-pack-quantized") || !strcmp(L->format, "mxfp4-pack-quantized")) {
        const bool nv = L->format[0] == 'n';
        const int64_t g = nv ? QT_CT_NVFP4_GROUP : QT_CT_MXFP4_GROUP;
        if (C % g) return qt_error(QT_ERR_SHAPE, "%s: %s: %lld columns are not whole groups of %lld", fp, module, (long long)C, (long long)g);
        const qt_st_tensor *wp = piece(ck, module, ".weight_packed"), *gs = piece(ck, module, ".weight_global_scale");
        if ((s = expect(fp, wp, module, ".weight_packed", QT_ST_U8, R * C / 2)) != QT_OK) return s;
        if ((s = expect(fp, ws, module, ".weight_scale", nv ? QT_ST_F8_E4M3 : QT_ST_U8, R * C / g)) != QT_OK) return s;
        if (!nv) return qt_ct_mxfp4_dequantize(wp->data, ws->data, R, C, out);
        if ((s = expect(fp, gs, module, ".weight_global_scale", QT_ST_F32, 4)) != QT_OK) return s;
        float gsv;
        memcpy(&gsv, gs->data, 4);
        return qt_ct_nvfp4_dequantize(wp->data, ws->data, gsv, R, C, out);
    }
    int64_t n_scales = L->block ? ((R + L->bh - 1) / L->bh) * ((C + L->bw - 1) / L->bw)
                       : L->strategy == QT_CT_TENSOR ? 1 : L->strategy == QT_CT_CHANNEL ? R
                       : (C % L->group_size ? -1 : R * (C / L->group_size));
    if (n_scales < 0) return qt_error(QT_ERR_SHAPE, "%s: %s: %lld columns are not whole groups of %lld", fp, module, (long long)C, (long long)L->group_size);
    if (!ws) return qt_error(QT_ERR_FORMAT, "%s: tensor '%s.weight_scale' missing", fp, module);
    float *sc = malloc((size_t)n_scales * sizeof *sc);
    int8_t *q = malloc((size_t)(R * C)), *zp = NULL;
    if (!sc || !q) { free(sc); free(q); return qt_error(QT_ERR_NOMEM, "%s: out of memory", fp); }
    s = scales_f32(fp, ws, n_scales, sc, &dt);
    const qt_ct_int_args a = {.bits = L->bits, .symmetric = L->symmetric, .strategy = L->strategy,
                              .group_size = L->group_size, .dtype = dt};
    if (s == QT_OK && L->is_float) {
        const qt_st_tensor *w = piece(ck, module, ".weight");
        if ((s = expect(fp, w, module, ".weight", QT_ST_F8_E4M3, R * C)) == QT_OK)
            s = L->block ? qt_ct_fp8_block_dequantize(w->data, sc, R, C, L->bh, L->bw, dt, out)
                         : qt_ct_fp8_dequantize(w->data, sc, R, C, L->strategy, dt, out);
    } else if (s == QT_OK) {
        s = int_codes(L, fp, ck, module, R, C, n_scales, q, &zp);
        if (s == QT_OK) s = qt_ct_int_dequantize(q, sc, zp, R, C, &a, out);
    }
    free(sc);
    free(q);
    free(zp);
    return s;
}

/* ---- W8A8 / FP8 kept packed (lib/quant/ct_rows.h) --------------------------------- */

static bool is_w8a8_int8(const qt__ct_layout *L) {
    return !L->is_float && L->bits == 8 && L->symmetric && !L->block && L->strategy == QT_CT_CHANNEL &&
           !strcmp(L->format, "int-quantized") && L->act_int8_token;
}
static bool is_fp8_token_or_static(const qt__ct_layout *L) {
    return L->is_float && L->bits == 8 && !L->block && (L->strategy == QT_CT_CHANNEL || L->strategy == QT_CT_TENSOR) &&
           (L->act_fp8_token || L->act_fp8_static);
}
static bool is_fp8_block(const qt__ct_layout *L) {
    return L->is_float && L->bits == 8 && L->block && L->bw == QT_CT_FP8_GROUP && L->act_fp8_group128;
}

/* Which weight + activation arguments the engine runs packed, and as which row format. */
static const struct packed_form {
    bool (*matches)(const qt__ct_layout *L);
    qt_type type;
    qt_st_dtype codes;
} packed_forms[] = {
    {is_w8a8_int8, QT_TYPE_CT_I8, QT_ST_I8},
    {is_fp8_token_or_static, QT_TYPE_CT_F8, QT_ST_F8_E4M3},
    {is_fp8_block, QT_TYPE_CT_F8_BLOCK, QT_ST_F8_E4M3},
};

static const struct packed_form *packed_form_of(const qt__ct_layout *L, int64_t cols) {
    if (cols > QT_CT_ROW_MAX_N) return NULL; /* beyond the exact sums: dequantized instead */
    for (size_t i = 0; i < sizeof packed_forms / sizeof packed_forms[0]; i++)
        if (packed_forms[i].matches(L)) return &packed_forms[i];
    return NULL;
}

static qt_status input_scale_of(const char *fp, const qt_st_checkpoint *ck, const char *module, float *v);

/* The stored codes and scales -> R rows of the packed format (header scales, then the codes). */
static qt_status pack(const qt__ct_layout *L, const struct packed_form *pf, const char *fp, const qt_st_checkpoint *ck,
                      const char *module, int64_t R, int64_t C, uint8_t *dst) {
    const qt_st_tensor *w = piece(ck, module, ".weight"), *ws = piece(ck, module, ".weight_scale");
    qt_status s = expect(fp, w, module, ".weight", pf->codes, R * C);
    if (s != QT_OK) return s;
    if (!ws) return qt_error(QT_ERR_FORMAT, "%s: tensor '%s.weight_scale' missing", fp, module);
    const int64_t nbc = (C + L->bw - 1) / (L->bw > 0 ? L->bw : 1);
    const int64_t n_scales = L->block ? ((R + L->bh - 1) / L->bh) * nbc : L->strategy == QT_CT_TENSOR ? 1 : R;
    float *sc = malloc((size_t)n_scales * sizeof *sc), in_scale = 0.0f;
    if (!sc) return qt_error(QT_ERR_NOMEM, "%s: out of memory", fp);
    qt_ct_dtype dt;
    s = scales_f32(fp, ws, n_scales, sc, &dt);
    if (s == QT_OK && pf->type == QT_TYPE_CT_F8 && L->act_fp8_static) s = input_scale_of(fp, ck, module, &in_scale);
    const size_t hdr = qt__ct_header_bytes(pf->type, C), row_bytes = qt_row_size(pf->type, C);
    for (int64_t r = 0; s == QT_OK && r < R; r++) {
        uint8_t *row = dst + (size_t)r * row_bytes;
        if (pf->type == QT_TYPE_CT_F8_BLOCK) {
            for (int64_t g = 0; g < nbc; g++) qt__ct_hdr_set(row, (int)g, sc[(r / L->bh) * nbc + g]);
        } else {
            qt__ct_hdr_set(row, 0, sc[n_scales == 1 ? 0 : r]);
            if (pf->type == QT_TYPE_CT_F8) qt__ct_hdr_set(row, 1, in_scale);
        }
        memcpy(row + hdr, (const uint8_t *)w->data + (size_t)(r * C), (size_t)C);
    }
    free(sc);
    return s;
}

/* ---- weight-only 4-bit kept packed (lib/quant/ct4.h) ------------------------------- */

/* The ct4 row type of a weight-only 4-bit layout, QT_TYPE_COUNT: dequantized instead. */
static qt_type ct4_type_of(const qt__ct_layout *L, int64_t cols) {
    if (cols % QT_CT4_CHUNK || cols > QT_CT_ROW_MAX_N) return QT_TYPE_COUNT;
    if (!strcmp(L->format, "nvfp4-pack-quantized")) return QT_TYPE_CT_NVFP4;
    if (!strcmp(L->format, "mxfp4-pack-quantized")) return QT_TYPE_CT_MXFP4;
    if (!strcmp(L->format, "pack-quantized") && !L->is_float && L->bits == 4 && !L->block && L->strategy == QT_CT_GROUP &&
        cols % L->group_size == 0)
        return qt__ct4_int4_type(L->group_size);
    return QT_TYPE_COUNT;
}

/* int4 groups: codes q + 8, per group the f32 scale and the zero point (0 when symmetric). */
static qt_status pack_int4(const qt__ct_layout *L, const char *fp, const qt_st_checkpoint *ck, const char *module,
                           int64_t R, int64_t C, qt_type type, uint8_t *dst) {
    const qt_st_tensor *wp = piece(ck, module, ".weight_packed"), *ws = piece(ck, module, ".weight_scale");
    const int64_t per_row = C / L->group_size, n_scales = R * per_row;
    qt_status s = expect(fp, wp, module, ".weight_packed", QT_ST_I32, R * qt_ct_packed_len(C, 4) * 4);
    if (s != QT_OK) return s;
    if (!ws) return qt_error(QT_ERR_FORMAT, "%s: tensor '%s.weight_scale' missing", fp, module);
    float *sc = malloc((size_t)n_scales * sizeof *sc);
    int8_t *q = malloc((size_t)(R * C)), *zp = calloc((size_t)n_scales, 1);
    uint8_t *codes = malloc((size_t)C);
    qt_ct_dtype dt = QT_CT_BF16;
    if (!sc || !q || !zp || !codes) s = qt_error(QT_ERR_NOMEM, "%s: out of memory", fp);
    if (s == QT_OK) s = scales_f32(fp, ws, n_scales, sc, &dt);
    if (s == QT_OK) s = qt_ct_unpack_rows(wp->data, R, C, 4, q);
    if (s == QT_OK && !L->symmetric) {
        const qt_st_tensor *z = piece(ck, module, ".weight_zero_point");
        s = expect(fp, z, module, ".weight_zero_point", QT_ST_I32, qt_ct_packed_len(R, 4) * per_row * 4);
        if (s == QT_OK) s = qt_ct_unpack_cols(z->data, R, per_row, 4, zp);
    }
    if (s == QT_OK) qt__ct4_pack_int4(type, dt, q, sc, zp, R, C, dst, codes);
    free(sc);
    free(q);
    free(zp);
    free(codes);
    return s;
}

/* NVFP4 / MXFP4: the stored codes and scale bytes as they are (nvfp4: the global scale in the header). */
static qt_status pack_fp4(const char *fp, const qt_st_checkpoint *ck, const char *module, int64_t R, int64_t C,
                          qt_type type, uint8_t *dst) {
    qt__ct4_form f;
    qt__ct4_form_of(type, &f);
    const bool nv = f.kind == QT_CT4_NVFP4;
    const qt_st_tensor *wp = piece(ck, module, ".weight_packed"), *ws = piece(ck, module, ".weight_scale");
    qt_status s = expect(fp, wp, module, ".weight_packed", QT_ST_U8, R * C / 2);
    if (s == QT_OK) s = expect(fp, ws, module, ".weight_scale", nv ? QT_ST_F8_E4M3 : QT_ST_U8, R * C / f.group);
    float gsv = 0.0f;
    if (s == QT_OK && nv) {
        const qt_st_tensor *gs = piece(ck, module, ".weight_global_scale");
        if ((s = expect(fp, gs, module, ".weight_global_scale", QT_ST_F32, 4)) != QT_OK) return s;
        memcpy(&gsv, gs->data, 4);
        if (!(gsv > 0.0f) || !isfinite(gsv))
            return qt_error(QT_ERR_RANGE, "%s: tensor '%s': weight_global_scale %g must be positive and finite", fp,
                            gs->name, gsv);
    }
    if (s != QT_OK) return s;
    uint8_t *codes = malloc((size_t)C);
    if (!codes) return qt_error(QT_ERR_NOMEM, "%s: out of memory", fp);
    const size_t row_bytes = qt_row_size(type, C);
    const int64_t ng = C / f.group;
    uint32_t word = 0;
    memcpy(&word, &gsv, 4);
    for (int64_t r = 0; r < R; r++) {
        uint8_t *row = dst + (size_t)r * row_bytes;
        qt__ct4_set_header(row, word);
        for (int64_t g = 0; g < ng; g++) qt__ct4_set_param(row, &f, g, 0.0f, 0, ((const uint8_t *)ws->data)[r * ng + g]);
        qt_ct_unpack_fp4((const uint8_t *)wp->data + (size_t)(r * C / 2), C, codes);
        qt__ct4_set_codes(row, C, &f, codes);
    }
    free(codes);
    return QT_OK;
}

static qt_status pack4(const qt__ct_layout *L, const char *fp, const qt_st_checkpoint *ck, const char *module,
                       int64_t R, int64_t C, qt_type type, uint8_t *dst) {
    qt__ct4_form f;
    qt__ct4_form_of(type, &f);
    return f.kind == QT_CT4_INT4 ? pack_int4(L, fp, ck, module, R, C, type, dst) : pack_fp4(fp, ck, module, R, C, type, dst);
}

/* ---- weight-only 8-bit kept packed (lib/quant/ct8.h) ------------------------------- */

/* The ct8 row type of an int8 layout without W8A8 activations, QT_TYPE_COUNT: dequantized instead
 * (int8 groups other than 128; an asymmetric per-tensor scale). */
static qt_type ct8_type_of(const qt__ct_layout *L, int64_t cols) {
    if (L->is_float || L->bits != 8 || L->block || cols > QT_CT_ROW_MAX_N) return QT_TYPE_COUNT;
    if (strcmp(L->format, "pack-quantized") && strcmp(L->format, "int-quantized")) return QT_TYPE_COUNT;
    if (L->strategy == QT_CT_CHANNEL || (L->strategy == QT_CT_TENSOR && L->symmetric)) return QT_TYPE_CT_W8_CH;
    if (L->strategy == QT_CT_GROUP && L->group_size == QT_CT8_GROUP && cols % QT_CT8_GROUP == 0)
        return QT_TYPE_CT_W8_G128;
    return QT_TYPE_COUNT;
}

/* int8 codes as stored, per group (or row) the f32 scale and the zero point (0 when symmetric). */
static qt_status pack8(const qt__ct_layout *L, const char *fp, const qt_st_checkpoint *ck, const char *module,
                       int64_t R, int64_t C, qt_type type, uint8_t *dst) {
    const qt_st_tensor *ws = piece(ck, module, ".weight_scale");
    if (!ws) return qt_error(QT_ERR_FORMAT, "%s: tensor '%s.weight_scale' missing", fp, module);
    const int64_t n_scales = L->strategy == QT_CT_TENSOR ? 1 : type == QT_TYPE_CT_W8_CH ? R : R * (C / QT_CT8_GROUP);
    float *sc = malloc((size_t)n_scales * sizeof *sc);
    int8_t *q = malloc((size_t)(R * C)), *zp = NULL;
    qt_ct_dtype dt = QT_CT_BF16;
    qt_status s = sc && q ? scales_f32(fp, ws, n_scales, sc, &dt) : qt_error(QT_ERR_NOMEM, "%s: out of memory", fp);
    if (s == QT_OK) s = int_codes(L, fp, ck, module, R, C, n_scales, q, &zp);
    if (s == QT_OK) qt__ct8_pack(type, dt, q, sc, zp, n_scales, R, C, dst);
    free(sc);
    free(q);
    free(zp);
    return s;
}

/* Static per-tensor activations: one positive finite input_scale per quantized Linear. */
static qt_status input_scale_of(const char *fp, const qt_st_checkpoint *ck, const char *module, float *v) {
    const qt_st_tensor *t = piece(ck, module, ".input_scale");
    if (!t)
        return qt_error(QT_ERR_FORMAT, "%s: tensor '%s.input_scale' missing (quantization_config says static per-tensor "
                        "input activations)", fp, module);
    qt_ct_dtype dt;
    qt_status s = scales_f32(fp, t, 1, v, &dt);
    if (s == QT_OK && !(*v > 0.0f && *v < INFINITY))
        s = qt_error(QT_ERR_FORMAT, "%s: tensor '%s': input scale %g is not a positive finite number", fp, t->name, *v);
    return s;
}

static qt_status check_input_scale(const char *fp, const qt_st_checkpoint *ck, const char *module) {
    float v;
    return input_scale_of(fp, ck, module, &v);
}

qt_status qt__ct_load_module(qt_model *m, const qt__ct_layout *L0, const qt_st_checkpoint *ck, const char *weight_name,
                             int64_t rows, int64_t cols, qt_tensor *out, bool *found) {
    *found = false;
    char module[QT_MAX_NAME + 32];
    snprintf(module, sizeof module, "%s", weight_name);
    char *dot = strrchr(module, '.');
    if (dot) *dot = 0;
    const qt_st_tensor *w = qt_st_checkpoint_find(ck, weight_name, NULL);
    const qt_st_tensor *ws = piece(ck, module, ".weight_scale");
    if (!ws || (w && w->dtype != QT_ST_I8 && w->dtype != QT_ST_F8_E4M3)) return QT_OK; /* a dense tensor */
    *found = true;
    const char *fp = m->path;
    const qt_st_tensor *shape = piece(ck, module, ".weight_shape");
    if (shape) {
        int64_t sh[2];
        if (shape->dtype != QT_ST_I64 || shape->end - shape->begin != 16)
            return qt_error(QT_ERR_FORMAT, "%s: tensor '%s': weight_shape must be I64 [2]", fp, shape->name);
        memcpy(sh, shape->data, sizeof sh);
        if (sh[0] != rows || sh[1] != cols)
            return qt_error(QT_ERR_SHAPE, "%s: tensor '%s': [%lld, %lld] but config.json implies [%lld, %lld]", fp, shape->name,
                            (long long)sh[0], (long long)sh[1], (long long)rows, (long long)cols);
    }
    qt__ct_layout own;
    qt_status s = qt__ct_layout_for(fp, L0, module, &own);
    const qt__ct_layout *L = &own;
    if (s == QT_OK && L->static_input) s = check_input_scale(fp, ck, module);
    if (s != QT_OK) return s;
    const struct packed_form *pf = packed_form_of(L, cols);
    const qt_type t4 = pf ? QT_TYPE_COUNT : ct4_type_of(L, cols), t8 = pf ? QT_TYPE_COUNT : ct8_type_of(L, cols);
    const qt_type type = pf ? pf->type : t4 != QT_TYPE_COUNT ? t4 : t8 != QT_TYPE_COUNT ? t8 : QT_TYPE_F32;
    const size_t nbytes = (size_t)rows * qt_row_size(type, cols);
    void *buf = qt__model_alloc(m, nbytes);
    if (!buf) return QT_ERR_NOMEM;
    s = pf ? pack(L, pf, fp, ck, module, rows, cols, buf)
           : t4 != QT_TYPE_COUNT ? pack4(L, fp, ck, module, rows, cols, t4, buf)
           : t8 != QT_TYPE_COUNT ? pack8(L, fp, ck, module, rows, cols, t8, buf) : dequant(L, fp, ck, module, rows, cols, buf);
    if (s != QT_OK) return s;
    /* converted into buf: the checkpoint's pages of this module need not stay resident beside it */
    static const char *const pieces[] = {".weight", ".weight_packed", ".weight_scale", ".weight_zero_point",
                                         ".weight_global_scale"};
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) qt__st_checkpoint_drop_pages(ck, piece(ck, module, pieces[i]));
    out->type = type;
    out->n_dims = 2;
    out->ne[0] = cols;
    out->ne[1] = rows;
    out->ne[2] = out->ne[3] = 1;
    out->nbytes = nbytes;
    out->data = buf;
    out->source = -1;
    out->offset = 0;
    return QT_OK;
}
