/* quanta/llama2c.h — Karpathy's llama2.c checkpoints (docs/formats.md §6).
 *
 * qt_model_open() reads a llama2.c .bin (legacy version 0 or version 1) and
 * looks for its tokenizer beside it: `<dir>/tok<vocab_size>.bin` first
 * (llama2.c's name for custom vocabularies, e.g. tok512.bin), then
 * `<dir>/tokenizer.bin`. With neither, the model has no vocabulary
 * (vocab.kind == QT_VOCAB_NONE). To name the tokenizer explicitly: */
#ifndef QUANTA_LLAMA2C_H
#define QUANTA_LLAMA2C_H

#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* tokenizer_path NULL: the lookup rule above. The tokenizer must hold exactly
 * vocab_size tokens (a tokenizer.bin of another vocabulary is refused). */
QT_API qt_status qt_model_open_llama2c(const char *path, const char *tokenizer_path, qt_model **out);

#ifdef __cplusplus
}
#endif
#endif
