/* lib/io/ct_read.h — compressed-tensors checkpoints for the HF reader (ct_read.c). */
#ifndef QT_IO_CT_READ_H
#define QT_IO_CT_READ_H

#include <jansson.h>

#include "quanta/ct.h"
#include "quanta/model.h"
#include "quanta/safetensors.h"

/* The weights' QuantizationArgs of the one config group. */
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
} qt__ct_layout;

/* quantization_config (qc) -> layout; inactive for KV-cache-only configs. */
qt_status qt__ct_layout_parse(const char *cfg_path, const json_t *qc, qt__ct_layout *out);
/* "<module>.weight_scale" etc. -> "<module>.weight"; false for other names. */
bool qt__ct_piece_base(const char *name, char *base, size_t cap);
/* If weight_name ("<module>.weight", [rows, cols]) is stored quantized, load it
 * into an owned tensor (*found true; out's name is left to the caller): W8A8 and
 * FP8 weights packed in the engine's compressed-tensors rows (lib/quant/ct_rows.h,
 * no f32 copy), other schemes dequantized to f32. */
qt_status qt__ct_load_module(qt_model *m, const qt__ct_layout *L, const qt_st_checkpoint *ck, const char *weight_name,
                             int64_t rows, int64_t cols, qt_tensor *out, bool *found);

#endif
