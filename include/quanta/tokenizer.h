/* quanta/tokenizer.h — text <-> token ids for the model's vocabulary.
 *
 * SentencePiece-style vocabularies (GGUF tokenizer.ggml.model = "llama") and
 * byte-level BPE (HF tokenizer.json; GGUF "gpt2" with the Llama-3 / Qwen2
 * pre-tokenizers), formats.md §8. Matches llama.cpp's llama-tokenize (SPM)
 * and HF tokenizers (BPE) id for id.
 */
#ifndef QUANTA_TOKENIZER_H
#define QUANTA_TOKENIZER_H

#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qt_tokenizer qt_tokenizer;

/* Builds lookup structures from the vocabulary (which must outlive the tokenizer).
 * QT_ERR_UNSUPPORTED for vocabularies it cannot handle (named in the message). */
qt_status qt_tokenizer_new(const qt_vocab *vocab, qt_tokenizer **out);
void qt_tokenizer_free(qt_tokenizer *tok);

/* Encode UTF-8 text. add_bos prepends BOS when the vocabulary has one.
 * Special tokens written in the text are NOT parsed (like llama-tokenize
 * without --parse-special). *ids is malloc'd; free() it. */
qt_status qt_tokenize(const qt_tokenizer *tok, const char *text, size_t len, bool add_bos,
                      int32_t **ids, int32_t *n_ids);

/* The bytes token `id` stands for when decoded (SPM: U+2581 -> space, <0xNN> -> byte;
 * BPE: byte-level unicode mapped back to bytes). Writes up to cap bytes, returns
 * the piece length (which may exceed cap), or -1 for an invalid id. Control
 * tokens (BOS/EOS) decode to "". */
int32_t qt_token_to_piece(const qt_tokenizer *tok, int32_t id, char *buf, int32_t cap);

/* Decode a sequence (SPM: drops the leading space after BOS as llama.cpp does).
 * *text is malloc'd and NUL-terminated. */
qt_status qt_detokenize(const qt_tokenizer *tok, const int32_t *ids, int32_t n_ids, char **text, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
