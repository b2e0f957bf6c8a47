/* lib/model/tok_internal.h — the tokenizer object shared by tokenizer.c
 * (dispatch, special tokens, decoding), tok_spm.c (SentencePiece-style
 * merging), tok_bpe.c (byte-level BPE) and tok_pretok.c (regex
 * pre-tokenizers, UTF-8 repair, NFC, the byte-level alphabet). */
#ifndef QT_TOK_INTERNAL_H
#define QT_TOK_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "quanta/tokenizer.h"

/* One BPE merge, keyed by the ids of its two parts. */
typedef struct qt__tok_merge {
    uint64_t key;   /* (left id << 32) | right id; UINT64_MAX = empty slot */
    int32_t rank;   /* position in the merge list: lower merges first */
    int32_t id;     /* the merged token */
} qt__tok_merge;

/* A byte-level pre-tokenizer, by its GGUF tokenizer.ggml.pre name. */
typedef struct qt__pretok {
    const char *name;          /* "llama-bpe", "qwen2", "gpt-2" */
    const char *regex;         /* what PCRE2 compiles (docs/formats.md §8.1), unescaped */
    const char *hf_split;      /* the tokenizer.json Split pattern as HF writes it; NULL when
                                  ByteLevel(use_regex) carries the pattern (GPT-2) */
    bool nfc;                  /* HF normalizer NFC (Qwen2) */
    bool ignore_merges;        /* HF BPE ignore_merges (Llama 3) */
} qt__pretok;

struct qt_tokenizer {
    const qt_vocab *vocab;
    int32_t n_tokens;
    uint32_t *len;             /* (n_tokens) byte length of vocab->tokens[i] */
    uint32_t map_mask;         /* token text -> id: open addressing, capacity map_mask + 1 */
    int32_t *map;              /* (map_mask + 1) id, -1 = empty */

    char *pieces;              /* every token's decoded bytes, back to back */
    uint32_t *piece_off;       /* (n_tokens + 1) token i decodes to pieces[piece_off[i] .. piece_off[i+1]) */

    int32_t n_special;         /* tokens split out of the text before encoding, longest first */
    int32_t *special;          /* (n_special) ids */
    bool *special_is_control;  /* (n_special) true: only split with QT_TOKENIZE_PARSE_SPECIAL */

    /* SPM */
    int32_t byte_token[256];   /* byte fallback: id of "<0xNN>" (else the 1-byte token, else -1) */

    /* BPE */
    const qt__pretok *pre;
    pcre2_code *re;
    uint32_t merge_mask;
    qt__tok_merge *merges;     /* (merge_mask + 1) */
    int32_t byte_char_token[256]; /* id of the one-character token for each byte */
    uint8_t byte_char[256][2];    /* UTF-8 of the byte-level character standing for each byte */
    uint8_t byte_char_len[256];
};

/* A growable id list. */
typedef struct qt__tok_ids {
    int32_t *v;
    size_t n, cap;
} qt__tok_ids;
qt_status qt__tok_push(qt__tok_ids *ids, int32_t id);

/* Token text -> id, -1 when absent. */
int32_t qt__tok_find(const qt_tokenizer *t, const char *s, size_t n);

/* SPM: encode one text fragment (llama.cpp llm_tokenizer_spm_session). */
qt_status qt__spm_encode(const qt_tokenizer *t, const char *text, size_t len, bool add_prefix, qt__tok_ids *out);

/* BPE: build the merge table and regex; encode one text fragment. */
qt_status qt__bpe_init(qt_tokenizer *t);
void qt__bpe_free(qt_tokenizer *t);
qt_status qt__bpe_encode(const qt_tokenizer *t, const char *text, size_t len, qt__tok_ids *out);

/* Pre-tokenizer table lookup by GGUF name (aliases accepted); NULL if unknown. */
const qt__pretok *qt__pretok_by_name(const char *name);
/* ... and by the HF Split regex (exact text); NULL if unknown. */
const qt__pretok *qt__pretok_by_regex(const char *regex);

/* GPT-2 byte-level alphabet (docs/formats.md §8.1): byte -> code point, code point -> byte (-1). */
uint32_t qt__byte_to_cp(uint8_t b);
int qt__cp_to_byte(uint32_t cp);

/* Replace ill-formed UTF-8 by U+FFFD, one per maximal subpart (Unicode §3.9,
 * the WHATWG decoder's rule). Returns NULL (no copy needed) when the input is
 * well-formed; otherwise a malloc'd copy and its length. *oom set on failure. */
char *qt__utf8_repair(const char *s, size_t n, size_t *out_n, bool *oom);

/* Decode one UTF-8 sequence at s (n > 0 bytes left): returns its length and
 * sets *cp; an ill-formed lead returns 1 with *cp = 0xFFFD. */
size_t qt__utf8_decode(const uint8_t *s, size_t n, uint32_t *cp);
/* Encode cp as UTF-8 into out (4 bytes room); returns the length. */
size_t qt__utf8_encode(uint32_t cp, char *out);

#endif
