/* lib/model/tokenizer.c — the tokenizer object: token lookup, special-token
 * splitting, dispatch to the SPM / BPE encoders, decoding.
 *
 * Special tokens follow llama.cpp's tokenizer_st_partition (llama-vocab.cpp):
 * candidates are the control, unknown and user-defined tokens, longest text
 * first; each one splits every remaining text fragment at all of its
 * occurrences. User-defined tokens are always split out; control/unknown
 * ones only when asked (--parse-special), as llama-tokenize does. */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

/* ---- token text -> id ---------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a, 64-bit */
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

int32_t qt__tok_find(const qt_tokenizer *t, const char *s, size_t n) {
    uint32_t i = (uint32_t)hash_bytes(s, n) & t->map_mask;
    for (;;) {
        int32_t id = t->map[i];
        if (id < 0) return -1;
        if (t->len[id] == n && !memcmp(t->vocab->tokens[id], s, n)) return id;
        i = (i + 1) & t->map_mask;
    }
}

static qt_status build_map(qt_tokenizer *t) {
    uint32_t cap = 16;
    while (cap < (uint32_t)t->n_tokens * 2u) cap <<= 1;
    t->map = malloc(cap * sizeof *t->map);
    if (!t->map) return qt_error(QT_ERR_NOMEM, "tokenizer: out of memory");
    memset(t->map, 0xff, cap * sizeof *t->map);
    t->map_mask = cap - 1;
    for (int32_t id = 0; id < t->n_tokens; id++) {
        const char *s = t->vocab->tokens[id];
        /* Duplicate texts (invalid in GGUF) keep the lowest id. */
        if (qt__tok_find(t, s, t->len[id]) >= 0) continue;
        uint32_t i = (uint32_t)hash_bytes(s, t->len[id]) & t->map_mask;
        while (t->map[i] >= 0) i = (i + 1) & t->map_mask;
        t->map[i] = id;
    }
    return QT_OK;
}

qt_status qt__tok_push(qt__tok_ids *ids, int32_t id) {
    if (ids->n == ids->cap) {
        size_t cap = ids->cap ? ids->cap * 2 : 256;
        int32_t *v = realloc(ids->v, cap * sizeof *v);
        if (!v) return qt_error(QT_ERR_NOMEM, "tokenize: out of memory");
        ids->v = v;
        ids->cap = cap;
    }
    ids->v[ids->n++] = id;
    return QT_OK;
}

/* ---- decoding table -------------------------------------------------------- */

static int token_type(const qt_vocab *v, int32_t id) {
    int ty = v->token_types ? v->token_types[id] : QT_TOKEN_NORMAL;
    return ty == 0 ? QT_TOKEN_NORMAL : ty; /* 0 = undefined: treat as text */
}

/* "<0xNN>" -> NN, else -1. */
static int parse_byte_token(const char *s, size_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char c = s[i];
        int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Writes the decoded bytes of token id into out (room for len[id] bytes:
 * decoding never lengthens a token) and returns the length. */
static size_t decode_token(const qt_tokenizer *t, int32_t id, char *out) {
    const qt_vocab *v = t->vocab;
    const char *s = v->tokens[id];
    size_t n = t->len[id], o = 0;
    int ty = token_type(v, id);
    if (ty == QT_TOKEN_CONTROL || ty == QT_TOKEN_UNKNOWN || ty == QT_TOKEN_UNUSED) return 0;
    if (ty == QT_TOKEN_USER_DEFINED) { memcpy(out, s, n); return n; }
    if (v->kind == QT_VOCAB_SPM) {
        if (ty == QT_TOKEN_BYTE) {
            int b = parse_byte_token(s, n);
            if (b >= 0) { out[0] = (char)b; return 1; }
        }
        for (size_t i = 0; i < n;) { /* U+2581 (E2 96 81) -> ' ' */
            if (i + 3 <= n && !memcmp(s + i, "\xE2\x96\x81", 3)) { out[o++] = ' '; i += 3; }
            else out[o++] = s[i++];
        }
        return o;
    }
    for (size_t i = 0; i < n;) { /* byte-level alphabet back to bytes */
        uint32_t cp;
        size_t k = qt__utf8_decode((const uint8_t *)s + i, n - i, &cp);
        int b = qt__cp_to_byte(cp);
        if (b >= 0) out[o++] = (char)b;
        else { memcpy(out + o, s + i, k); o += k; } /* not in the alphabet: keep as is */
        i += k;
    }
    return o;
}

static qt_status build_pieces(qt_tokenizer *t) {
    size_t total = 0;
    for (int32_t id = 0; id < t->n_tokens; id++) total += t->len[id];
    t->pieces = malloc(total + 1);
    t->piece_off = malloc(((size_t)t->n_tokens + 1) * sizeof *t->piece_off);
    if (!t->pieces || !t->piece_off) return qt_error(QT_ERR_NOMEM, "tokenizer: out of memory");
    if (total > UINT32_MAX) return qt_error(QT_ERR_UNSUPPORTED, "tokenizer: vocabulary text over 4 GiB");
    uint32_t o = 0;
    for (int32_t id = 0; id < t->n_tokens; id++) {
        t->piece_off[id] = o;
        o += (uint32_t)decode_token(t, id, t->pieces + o);
    }
    t->piece_off[t->n_tokens] = o;
    return QT_OK;
}

/* ---- special tokens ------------------------------------------------------------ */

typedef struct special_sort { uint32_t len; int32_t id; } special_sort;

static int cmp_special(const void *a, const void *b) {
    const special_sort *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static qt_status build_specials(qt_tokenizer *t) {
    const qt_vocab *v = t->vocab;
    if (!v->token_types) return QT_OK;
    int32_t n = 0;
    for (int32_t id = 0; id < t->n_tokens; id++) {
        int ty = v->token_types[id];
        n += (ty == QT_TOKEN_CONTROL || ty == QT_TOKEN_UNKNOWN || ty == QT_TOKEN_USER_DEFINED) && t->len[id] > 0;
    }
    special_sort *s = malloc(((size_t)n + 1) * sizeof *s);
    t->special = malloc(((size_t)n + 1) * sizeof *t->special);
    t->special_is_control = malloc((size_t)n + 1);
    if (!s || !t->special || !t->special_is_control) { free(s); return qt_error(QT_ERR_NOMEM, "tokenizer: out of memory"); }
    n = 0;
    for (int32_t id = 0; id < t->n_tokens; id++) {
        int ty = v->token_types[id];
        if ((ty == QT_TOKEN_CONTROL || ty == QT_TOKEN_UNKNOWN || ty == QT_TOKEN_USER_DEFINED) && t->len[id] > 0)
            s[n++] = (special_sort){t->len[id], id};
    }
    qsort(s, (size_t)n, sizeof *s, cmp_special);
    for (int32_t i = 0; i < n; i++) {
        t->special[i] = s[i].id;
        t->special_is_control[i] = v->token_types[s[i].id] != QT_TOKEN_USER_DEFINED;
    }
    t->n_special = n;
    free(s);
    return QT_OK;
}

typedef struct fragment { size_t off, len; int32_t id; /* -1: text */ } fragment;
typedef struct fragments { fragment *v; size_t n, cap; } fragments;

static bool frag_push(fragments *f, fragment x) {
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        fragment *v = realloc(f->v, cap * sizeof *v);
        if (!v) return false;
        f->v = v;
        f->cap = cap;
    }
    f->v[f->n++] = x;
    return true;
}

/* Split text into text fragments and special-token fragments (llama.cpp order:
 * longest token first, every occurrence, left to right). */
static qt_status split_specials(const qt_tokenizer *t, const char *text, size_t len, bool parse_special, fragments *out) {
    fragments cur = {0}, next = {0};
    if (len > 0 && !frag_push(&cur, (fragment){0, len, -1})) goto oom;
    for (int32_t s = 0; s < t->n_special && cur.n > 0; s++) {
        if (t->special_is_control[s] && !parse_special) continue;
        int32_t id = t->special[s];
        const char *tok = t->vocab->tokens[id];
        size_t tl = t->len[id];
        next.n = 0;
        for (size_t i = 0; i < cur.n; i++) {
            fragment f = cur.v[i];
            if (f.id >= 0 || f.len < tl) { if (!frag_push(&next, f)) goto oom; continue; }
            size_t pos = f.off, end = f.off + f.len;
            const char *hit;
            while (pos < end && (hit = memmem(text + pos, end - pos, tok, tl)) != NULL) {
                size_t at = (size_t)(hit - text);
                if (at > pos && !frag_push(&next, (fragment){pos, at - pos, -1})) goto oom;
                if (!frag_push(&next, (fragment){at, tl, id})) goto oom;
                pos = at + tl;
            }
            if (pos < end && !frag_push(&next, (fragment){pos, end - pos, -1})) goto oom;
        }
        fragments tmp = cur;
        cur = next;
        next = tmp;
    }
    free(next.v);
    *out = cur;
    return QT_OK;
oom:
    free(cur.v);
    free(next.v);
    return qt_error(QT_ERR_NOMEM, "tokenize: out of memory");
}

/* ---- public API ------------------------------------------------------------------ */

qt_status qt_tokenizer_new(const qt_vocab *vocab, qt_tokenizer **out) {
    *out = NULL;
    if (!vocab || vocab->kind == QT_VOCAB_NONE)
        return qt_error(QT_ERR_UNSUPPORTED, "tokenizer: the model has no vocabulary");
    if (vocab->kind != QT_VOCAB_SPM && vocab->kind != QT_VOCAB_BPE)
        return qt_error(QT_ERR_UNSUPPORTED, "tokenizer: vocabulary kind %d is not supported", (int)vocab->kind);
    if (vocab->n_tokens <= 0 || !vocab->tokens)
        return qt_error(QT_ERR_FORMAT, "tokenizer: vocabulary has no tokens");
    qt_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return qt_error(QT_ERR_NOMEM, "tokenizer: out of memory");
    t->vocab = vocab;
    t->n_tokens = vocab->n_tokens;
    qt_status st = QT_OK;
    t->len = malloc((size_t)t->n_tokens * sizeof *t->len);
    if (!t->len) { st = qt_error(QT_ERR_NOMEM, "tokenizer: out of memory"); goto fail; }
    for (int32_t id = 0; id < t->n_tokens; id++) {
        if (!vocab->tokens[id]) { st = qt_error(QT_ERR_FORMAT, "tokenizer: token %d has no text", id); goto fail; }
        size_t n = strlen(vocab->tokens[id]);
        if (n > UINT32_MAX / 4) { st = qt_error(QT_ERR_FORMAT, "tokenizer: token %d is too long", id); goto fail; }
        t->len[id] = (uint32_t)n;
    }
    if ((st = build_map(t)) != QT_OK || (st = build_pieces(t)) != QT_OK || (st = build_specials(t)) != QT_OK) goto fail;
    if (vocab->kind == QT_VOCAB_SPM) {
        for (int b = 0; b < 256; b++) {
            char hex[8], one = (char)b;
            snprintf(hex, sizeof hex, "<0x%02X>", b);
            int32_t id = qt__tok_find(t, hex, 6);
            /* llama.cpp byte_to_token: fall back to the 1-byte token. */
            t->byte_token[b] = id >= 0 ? id : qt__tok_find(t, &one, 1);
        }
    } else if ((st = qt__bpe_init(t)) != QT_OK) {
        goto fail;
    }
    *out = t;
    return QT_OK;
fail:
    qt_tokenizer_free(t);
    return st;
}

void qt_tokenizer_free(qt_tokenizer *t) {
    if (!t) return;
    qt__bpe_free(t);
    free(t->len);
    free(t->map);
    free(t->pieces);
    free(t->piece_off);
    free(t->special);
    free(t->special_is_control);
    free(t);
}

qt_status qt_tokenize_ex(const qt_tokenizer *t, const char *text, size_t len, unsigned flags, int32_t **ids, int32_t *n_ids) {
    *ids = NULL;
    *n_ids = 0;
    if (!text && len) return qt_error(QT_ERR_ARG, "tokenize: NULL text");
    const qt_vocab *v = t->vocab;
    qt__tok_ids out = {0};
    fragments frags = {0};
    qt_status st = QT_OK;
    if ((flags & QT_TOKENIZE_ADD_BOS) && v->bos_id >= 0 && (st = qt__tok_push(&out, v->bos_id)) != QT_OK) goto done;
    if ((st = split_specials(t, text, len, (flags & QT_TOKENIZE_PARSE_SPECIAL) != 0, &frags)) != QT_OK) goto done;
    /* llama.cpp SPM: the space prefix goes at the start and after each special token. */
    bool prev_special = true;
    for (size_t i = 0; i < frags.n; i++) {
        const fragment *f = &frags.v[i];
        if (f->id >= 0) {
            st = qt__tok_push(&out, f->id);
            prev_special = true;
        } else if (v->kind == QT_VOCAB_SPM) {
            st = qt__spm_encode(t, text + f->off, f->len, v->add_space_prefix && prev_special, &out);
            prev_special = false;
        } else {
            st = qt__bpe_encode(t, text + f->off, f->len, &out);
        }
        if (st != QT_OK) goto done;
        if (qt_cancelled()) { st = qt_error(QT_ERR_INTERRUPTED, "tokenize: interrupted"); goto done; }
    }
    if ((flags & QT_TOKENIZE_ADD_EOS) && v->eos_id >= 0 && (st = qt__tok_push(&out, v->eos_id)) != QT_OK) goto done;
    if (out.n > INT32_MAX) { st = qt_error(QT_ERR_RANGE, "tokenize: more than 2^31 tokens"); goto done; }
    if (!out.v && (out.v = malloc(sizeof *out.v)) == NULL) { st = qt_error(QT_ERR_NOMEM, "tokenize: out of memory"); goto done; }
    *ids = out.v;
    *n_ids = (int32_t)out.n;
    out.v = NULL;
done:
    free(out.v);
    free(frags.v);
    return st;
}

qt_status qt_tokenize(const qt_tokenizer *t, const char *text, size_t len, bool add_bos, int32_t **ids, int32_t *n_ids) {
    return qt_tokenize_ex(t, text, len, add_bos ? QT_TOKENIZE_ADD_BOS : 0u, ids, n_ids);
}

int32_t qt_token_to_piece(const qt_tokenizer *t, int32_t id, char *buf, int32_t cap) {
    if (id < 0 || id >= t->n_tokens) return -1;
    uint32_t n = t->piece_off[id + 1] - t->piece_off[id];
    if (buf && cap > 0) memcpy(buf, t->pieces + t->piece_off[id], n < (uint32_t)cap ? n : (size_t)cap);
    return (int32_t)n;
}

qt_status qt_detokenize(const qt_tokenizer *t, const int32_t *ids, int32_t n_ids, char **text, size_t *len) {
    *text = NULL;
    if (len) *len = 0;
    size_t total = 0;
    for (int32_t i = 0; i < n_ids; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_tokens)
            return qt_error(QT_ERR_RANGE, "detokenize: token id %d at position %d is outside the vocabulary (%d tokens)",
                            ids[i], i, t->n_tokens);
        total += t->piece_off[ids[i] + 1] - t->piece_off[ids[i]];
    }
    char *s = malloc(total + 1);
    if (!s) return qt_error(QT_ERR_NOMEM, "detokenize: out of memory");
    bool strip = t->vocab->kind == QT_VOCAB_SPM && t->vocab->add_space_prefix;
    size_t o = 0;
    for (int32_t i = 0; i < n_ids; i++) {
        const char *p = t->pieces + t->piece_off[ids[i]];
        size_t n = t->piece_off[ids[i] + 1] - t->piece_off[ids[i]];
        if (strip && n > 0) { /* the first non-empty piece loses the prefix space */
            if (p[0] == ' ') { p++; n--; }
            strip = false;
        }
        memcpy(s + o, p, n);
        o += n;
    }
    s[o] = 0;
    *text = s;
    if (len) *len = o;
    return QT_OK;
}

qt_status qt_utf8_repair(const char *text, size_t len, char **out, size_t *out_len) {
    *out = NULL;
    if (out_len) *out_len = 0;
    bool oom = false;
    size_t n = len;
    char *s = qt__utf8_repair(text, len, &n, &oom);
    if (oom) return qt_error(QT_ERR_NOMEM, "utf8 repair: out of memory (%zu bytes)", len * 3 + 1);
    if (!s) { /* well-formed already: the caller still gets its own copy */
        s = malloc(len + 1);
        if (!s) return qt_error(QT_ERR_NOMEM, "utf8 repair: out of memory (%zu bytes)", len + 1);
        memcpy(s, text, len);
        s[len] = 0;
    }
    *out = s;
    if (out_len) *out_len = n;
    return QT_OK;
}
