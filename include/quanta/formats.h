/* quanta/formats.h — the catalogue of weight formats quanta knows: every GGUF
 * block type from the traits table plus the compressed-tensors (vLLM) and
 * bitsandbytes formats. It is the planner's vocabulary: bits per weight here
 * include the scales/zero points each format stores. */
#ifndef QUANTA_FORMATS_H
#define QUANTA_FORMATS_H

#include "quant.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qt_format_family {
    QT_FAMILY_DENSE = 0,           /* f32/f16/bf16 */
    QT_FAMILY_GGUF,                /* ggml block types (llama.cpp) */
    QT_FAMILY_COMPRESSED_TENSORS,  /* vLLM / llm-compressor checkpoints */
    QT_FAMILY_BITSANDBYTES,
} qt_format_family;

typedef struct qt_format_info {
    const char *name;          /* "q4_K", "w4a16-g128", "fp8-e4m3-channel", "nvfp4", ... */
    qt_format_family family;
    int ggml_type;             /* qt_type for GGUF/dense rows, -1 otherwise */
    int64_t block_elems;       /* elements sharing one scale (1 = per element / per channel) */
    double bits_per_weight;    /* storage incl. scales and zero points; for per-channel/per-tensor
                                  formats the scale share of a 4096-wide row is included */
    const char *use;           /* what it is for */
    const char *engines;       /* which engines read it */
} qt_format_info;

QT_API int qt_format_count(void);
QT_API const qt_format_info *qt_format_at(int i);
QT_API const qt_format_info *qt_format_find(const char *name); /* case-insensitive; NULL if unknown */
QT_API const char *qt_format_family_name(qt_format_family f);

#ifdef __cplusplus
}
#endif
#endif
