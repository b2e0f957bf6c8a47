/* lib/model/tok_pretok.c — the pieces of byte-level BPE that are data or pure
 * text handling: the pre-tokenizer table (docs/formats.md §8.1), the GPT-2
 * byte-level alphabet, UTF-8 decoding and repair. */
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

/* The HF Split patterns exactly as tokenizer.json carries them (unescaped),
 * used to recognise a tokenizer.json's pre-tokenizer. */
#define RE_LLAMA3_HF \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_QWEN2_HF \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* HF ByteLevel(use_regex = true): the GPT-2 pattern. */
#define RE_GPT2_HF "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"

/* What we compile with PCRE2 (UTF + UCP). \s is spelled out as the Unicode
 * White_Space property, which is what the reference engines use (Oniguruma in
 * HF tokenizers, the Rust regex crate in tiktoken): PCRE2's own \s also
 * matches U+180E (and JavaScript's matches U+FEFF but not U+0085). The
 * case-insensitive contraction group stays as it is: like Oniguruma, PCRE2
 * folds 's' to U+017F LONG S as well. docs/tokenizers.md, "Whitespace". */
#define WS "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define RE_LLAMA3 \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*|[" WS "]*[\\r\\n]+" \
    "|[" WS "]+(?![^" WS "])|[" WS "]+"
#define RE_QWEN2 \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*|[" WS "]*[\\r\\n]+" \
    "|[" WS "]+(?![^" WS "])|[" WS "]+"
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+|[" WS "]+(?![^" WS "])|[" WS "]+"

typedef struct pretok_row {
    qt__pretok p;
    const char *hf_regex;
    const char *aliases[3];
} pretok_row;

/* llama.cpp's names (tokenizer.ggml.pre) and its per-name flags (docs/formats.md §2.8):
 * llama-bpe sets ignore_merges; HF's Qwen2 tokenizer.json asks for NFC. */
static const pretok_row pretoks[] = {
    {{"llama-bpe", RE_LLAMA3, RE_LLAMA3_HF, false, true}, RE_LLAMA3_HF, {"llama3", "llama-v3", NULL}},
    {{"qwen2", RE_QWEN2, RE_QWEN2_HF, true, false}, RE_QWEN2_HF, {NULL}},
    {{"gpt-2", RE_GPT2, NULL, false, false}, RE_GPT2_HF, {"gpt2", NULL}},
};

const qt__pretok *qt__pretok_by_name(const char *name) {
    for (size_t i = 0; i < sizeof pretoks / sizeof pretoks[0]; i++) {
        if (!strcmp(name, pretoks[i].p.name)) return &pretoks[i].p;
        for (int a = 0; a < 3 && pretoks[i].aliases[a]; a++)
            if (!strcmp(name, pretoks[i].aliases[a])) return &pretoks[i].p;
    }
    return NULL;
}

const qt__pretok *qt__pretok_by_regex(const char *regex) {
    for (size_t i = 0; i < sizeof pretoks / sizeof pretoks[0]; i++)
        if (!strcmp(regex, pretoks[i].hf_regex)) return &pretoks[i].p;
    return NULL;
}

/* GPT-2 bytes_to_unicode (docs/formats.md §8.1): printable Latin-1 bytes stand for
 * themselves; the other 68, in increasing order, become U+0100 ... U+0143. */
static bool byte_is_printable(unsigned b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

uint32_t qt__byte_to_cp(uint8_t b) {
    if (byte_is_printable(b)) return b;
    uint32_t n = 0;
    for (unsigned x = 0; x < b; x++) n += !byte_is_printable(x);
    return 0x100 + n;
}

int qt__cp_to_byte(uint32_t cp) {
    if (cp < 0x100) return byte_is_printable(cp) ? (int)cp : -1;
    if (cp > 0x143) return -1;
    uint32_t n = cp - 0x100;
    for (unsigned x = 0; x < 256; x++)
        if (!byte_is_printable(x) && n-- == 0) return (int)x;
    return -1;
}

size_t qt__utf8_encode(uint32_t cp, char *out) {
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) { o[0] = (unsigned char)(0xC0 | cp >> 6); o[1] = (unsigned char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | cp >> 12);
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | cp >> 18);
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of the well-formed prefix of a UTF-8 sequence starting at s
 * (Unicode Table 3-7), and the whole sequence's expected length. A return
 * equal to *need means well-formed; less is a maximal subpart. */
static size_t utf8_wellformed(const uint8_t *s, size_t n, size_t *need) {
    uint8_t b = s[0];
    uint8_t lo = 0x80, hi = 0xBF;
    if (b < 0x80) { *need = 1; return 1; }
    if (b >= 0xC2 && b <= 0xDF) *need = 2;
    else if (b >= 0xE0 && b <= 0xEF) { *need = 3; if (b == 0xE0) lo = 0xA0; if (b == 0xED) hi = 0x9F; }
    else if (b >= 0xF0 && b <= 0xF4) { *need = 4; if (b == 0xF0) lo = 0x90; if (b == 0xF4) hi = 0x8F; }
    else { *need = 2; return 0; } /* 80..C1, F5..FF never start a sequence */
    size_t k = 1;
    while (k < *need && k < n) {
        uint8_t c = s[k];
        if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) break;
        k++;
    }
    return k;
}

size_t qt__utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
    size_t need, k = utf8_wellformed(s, n, &need);
    if (k != need) { *cp = 0xFFFD; return k ? k : 1; }
    switch (need) {
    case 1: *cp = s[0]; break;
    case 2: *cp = (uint32_t)(s[0] & 0x1F) << 6 | (s[1] & 0x3F); break;
    case 3: *cp = (uint32_t)(s[0] & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F); break;
    default: *cp = (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 | (uint32_t)(s[2] & 0x3F) << 6 | (s[3] & 0x3F); break;
    }
    return need;
}

char *qt__utf8_repair(const char *s, size_t n, size_t *out_n, bool *oom) {
    const uint8_t *u = (const uint8_t *)s;
    *oom = false;
    size_t i = 0, need;
    while (i < n) {
        if (u[i] < 0x80) { i++; continue; }
        size_t k = utf8_wellformed(u + i, n - i, &need);
        if (k != need) break;
        i += k;
    }
    if (i == n) return NULL;
    /* Worst case: every byte becomes the 3-byte U+FFFD. */
    char *out = malloc(n * 3 + 1);
    if (!out) { *oom = true; return NULL; }
    memcpy(out, s, i);
    size_t o = i;
    while (i < n) {
        size_t k = utf8_wellformed(u + i, n - i, &need);
        if (k == need) {
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        } else {
            o += qt__utf8_encode(0xFFFD, out + o);
            i += k ? k : 1;
        }
    }
    out[o] = 0;
    *out_n = o;
    return out;
}
