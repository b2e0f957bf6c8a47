/* lib/io/ct_read.h — compressed-tensors checkpoints for the HF reader (ct_read.c). */
#ifndef QT_IO_CT_READ_H
#define QT_IO_CT_READ_H

#include <jansson.h>

#include "quanta/ct.h"
#include "quanta/model.h"
#include "quanta/safetensors.h"

/* One target of a config group ("Linear", "re:REGEX" matched at the start of the module
 * name as Python's re.match, or a module name) and its weights' strategy and group. */
#define QT__CT_MAX_TARGETS 64
typedef struct qt__ct_target {
    char target[160];
    qt_ct_strategy strategy;
    int64_t group_size;
} qt__ct_target;

/* The weights' QuantizationArgs of the config groups: they may differ only in
 * the weights' strategy and group size (a per-group scheme with its
 * per-channel fallback, as quanta writes it); the fields below are the first
 * group's, and with more than one group each module takes its group's from
 * the first target it matches (qt__ct_layout_for). */
typedef struct qt__ct_layout {
    bool active;              /* quantized weights present */
    char format[32];          /* "pack-quantized", ... */
    int bits;
    bool is_float, symmetric, block;
    qt_ct_strategy strategy;
    int64_t group_size, bh, bw;
    bool static_input;        /* input_activations static per tensor (llm-compressor FP8, W8A8 static):
                                 every quantized Linear stores <module>.input_scale [1], checked on load */
    /* input_activations (all false: weight-only, A16) */
    bool act_int8_token;      /* int8, per token, dynamic (W8A8) */
    bool act_fp8_token;       /* e4m3, per token, dynamic (FP8_DYNAMIC) */
    bool act_fp8_group128;    /* e4m3, groups of 128, dynamic (FP8_BLOCK) */
    bool act_fp8_static;      /* e4m3, per tensor, static input_scale (FP8) */
    int32_t n_groups;
    int32_t n_targets;        /* with n_groups > 1: every group's targets */
    qt__ct_target targets[QT__CT_MAX_TARGETS];
} qt__ct_layout;

/* quantization_config (qc) -> layout; inactive for KV-cache-only configs. */
qt_status qt__ct_layout_parse(const char *cfg_path, const json_t *qc, qt__ct_layout *out);
/* The layout of one module (HF name, "model.layers.0.mlp.down_proj"): L itself
 * with one group, else with the strategy and group of the first target it
 * matches; QT_ERR_FORMAT naming cfg_path when it matches none. */
qt_status qt__ct_layout_for(const char *cfg_path, const qt__ct_layout *L, const char *module, qt__ct_layout *out);
/* "<module>.weight_scale" etc. -> "<module>.weight"; false for other names. */
bool qt__ct_piece_base(const char *name, char *base, size_t cap);
/* If weight_name ("<module>.weight", [rows, cols]) is stored quantized, load it
 * into an owned tensor (*found true; out's name is left to the caller): W8A8 and
 * FP8 weights packed in the engine's compressed-tensors rows (lib/quant/ct_rows.h,
 * no f32 copy), other schemes dequantized to f32. */
qt_status qt__ct_load_module(qt_model *m, const qt__ct_layout *L, const qt_st_checkpoint *ck, const char *weight_name,
                             int64_t rows, int64_t cols, qt_tensor *out, bool *found);

#endif
