/* quanta/tokenizer.h — text <-> token ids for the model's vocabulary.
 *
 * SentencePiece-style vocabularies (GGUF tokenizer.ggml.model = "llama") and
 * byte-level BPE (HF tokenizer.json; GGUF "gpt2" with the Llama-3 / Qwen2
 * pre-tokenizers), docs/formats.md §8. Matches llama.cpp's llama-tokenize (SPM)
 * and HF tokenizers (BPE) id for id. docs/tokenizers.md has the exact rules.
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
QT_API qt_status qt_tokenizer_new(const qt_vocab *vocab, qt_tokenizer **out);
QT_API void qt_tokenizer_free(qt_tokenizer *tok);

/* Encode UTF-8 text. add_bos prepends BOS when the vocabulary has one.
 * Control tokens written in the text are NOT parsed (like llama-tokenize
 * without --parse-special); user-defined added tokens are (as llama.cpp and
 * HF tokenizers both do). *ids is malloc'd; free() it. */
QT_API qt_status qt_tokenize(const qt_tokenizer *tok, const char *text, size_t len, bool add_bos,
                      int32_t **ids, int32_t *n_ids);

/* Flags for qt_tokenize_ex. */
enum {
    QT_TOKENIZE_ADD_BOS = 1u << 0,       /* prepend BOS when the vocabulary has one */
    QT_TOKENIZE_ADD_EOS = 1u << 1,       /* append EOS when the vocabulary has one */
    QT_TOKENIZE_PARSE_SPECIAL = 1u << 2, /* also split control tokens ("<|im_start|>", "<s>") out of
                                            the text, as HF tokenizers always do */
};
QT_API qt_status qt_tokenize_ex(const qt_tokenizer *tok, const char *text, size_t len, unsigned flags,
                         int32_t **ids, int32_t *n_ids);

/* The bytes token `id` stands for when decoded (SPM: U+2581 -> space, <0xNN> -> byte;
 * BPE: byte-level unicode mapped back to bytes). Writes up to cap bytes, returns
 * the piece length (which may exceed cap), or -1 for an invalid id. Control
 * and unknown tokens (BOS/EOS/<unk>) decode to "". */
QT_API int32_t qt_token_to_piece(const qt_tokenizer *tok, int32_t id, char *buf, int32_t cap);

/* Decode a sequence: the pieces concatenated. SPM with add_space_prefix: the
 * space the encoder prefixed is dropped again (one leading space of the first
 * piece after any leading control tokens such as BOS), so
 * decode(encode(s)) == s for text without special tokens.
 * *text is malloc'd and NUL-terminated; len (may be NULL) excludes the NUL. */
QT_API qt_status qt_detokenize(const qt_tokenizer *tok, const int32_t *ids, int32_t n_ids, char **text, size_t *len);

/* Text as JSON and HTTP need it: ill-formed UTF-8 (a generation cut inside a
 * character, byte tokens that never form one) replaced by U+FFFD, one per
 * maximal subpart (Unicode §3.9, as the WHATWG decoder and llama-server do).
 * *out is malloc'd and NUL-terminated (a copy even when nothing changed);
 * out_len (may be NULL) excludes the NUL. */
QT_API qt_status qt_utf8_repair(const char *text, size_t len, char **out, size_t *out_len);

/* Opens a bare Hugging Face tokenizer.json (with the tokenizer_config.json
 * next to it, when present, for BOS/EOS/add_bos_token) as a model that has a
 * vocabulary and no tensors: for `quanta tokenize -m tokenizer.json`. */
QT_API qt_status qt_model_open_tokenizer_json(const char *path, qt_model **out);

#ifdef __cplusplus
}
#endif
#endif
