/* lib/model/tok_bpe.c — byte-level BPE as HF tokenizers does it (docs/formats.md §8.1):
 *   1. ill-formed UTF-8 becomes U+FFFD (docs/tokenizers.md), then NFC where the
 *      pre-tokenizer asks (Qwen2);
 *   2. the Split regex (PCRE2, UTF + UCP) cuts the text into words; text
 *      between matches is a word too ("Isolated" behaviour);
 *   3. each byte of a word becomes its byte-level character's token;
 *   4. with ignore_merges (Llama 3) a word that is itself a token is emitted whole;
 *      otherwise adjacent pairs merge lowest rank first, leftmost on ties
 *      (HF Word::merge_all: a min-heap of (rank, position), stale entries skipped).
 * Symbols are token ids throughout and merges are looked up by id pairs, so
 * the inner loop never builds strings. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/heap.h"
#include "tok_internal.h"

/* ---- merge table: (left id, right id) -> (rank, merged id) --------------------- */

static uint32_t hash_pair(uint64_t key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ull;
    key ^= key >> 33;
    return (uint32_t)key;
}

static uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t)(uint32_t)a << 32 | (uint32_t)b; }

static const qt__tok_merge *merge_find(const qt_tokenizer *t, int32_t a, int32_t b) {
    uint64_t key = pair_key(a, b);
    uint32_t i = hash_pair(key) & t->merge_mask;
    for (;;) {
        const qt__tok_merge *m = &t->merges[i];
        if (m->key == key) return m;
        if (m->key == UINT64_MAX) return NULL;
        i = (i + 1) & t->merge_mask;
    }
}

/* Later duplicates of a pair overwrite earlier ones, as HF tokenizers' and
 * transformers.js' merge maps do. */
static void merge_put(qt_tokenizer *t, int32_t a, int32_t b, int32_t rank, int32_t id) {
    uint64_t key = pair_key(a, b);
    uint32_t i = hash_pair(key) & t->merge_mask;
    while (t->merges[i].key != UINT64_MAX && t->merges[i].key != key) i = (i + 1) & t->merge_mask;
    t->merges[i] = (qt__tok_merge){key, rank, id};
}

static qt_status build_merges(qt_tokenizer *t) {
    const qt_vocab *v = t->vocab;
    uint32_t cap = 16;
    while (cap < (uint32_t)v->n_merges * 2u) cap <<= 1;
    t->merges = malloc(cap * sizeof *t->merges);
    if (!t->merges) return qt_error(QT_ERR_NOMEM, "tokenizer: out of memory");
    memset(t->merges, 0xff, cap * sizeof *t->merges);
    t->merge_mask = cap - 1;
    char *cat = NULL;
    size_t cat_cap = 0;
    for (int32_t r = 0; r < v->n_merges; r++) {
        const char *s = v->merges[r];
        if (!s) { free(cat); return qt_error(QT_ERR_FORMAT, "tokenizer: merge %d is missing", r); }
        /* llama.cpp: split at the first space after position 0. */
        const char *sp = s[0] ? strchr(s + 1, ' ') : NULL;
        if (!sp) { free(cat); return qt_error(QT_ERR_FORMAT, "tokenizer: merge %d ('%s') is not 'left right'", r, s); }
        size_t nl = (size_t)(sp - s), nr = strlen(sp + 1);
        int32_t a = qt__tok_find(t, s, nl), b = qt__tok_find(t, sp + 1, nr);
        if (nl + nr > cat_cap) {
            cat_cap = (nl + nr) * 2;
            char *c = realloc(cat, cat_cap);
            if (!c) { free(cat); return qt_error(QT_ERR_NOMEM, "tokenizer: out of memory"); }
            cat = c;
        }
        memcpy(cat, s, nl);
        memcpy(cat + nl, sp + 1, nr);
        int32_t m = qt__tok_find(t, cat, nl + nr);
        /* A merge whose parts or result are not tokens can never apply (HF refuses
         * such files; llama.cpp ignores the merge in effect): skip it. */
        if (a >= 0 && b >= 0 && m >= 0) merge_put(t, a, b, r, m);
    }
    free(cat);
    return QT_OK;
}

qt_status qt__bpe_init(qt_tokenizer *t) {
    const qt_vocab *v = t->vocab;
    t->pre = qt__pretok_by_name(v->pre);
    if (!t->pre)
        return qt_error(QT_ERR_UNSUPPORTED,
                        "tokenizer: BPE pre-tokenizer '%s' (tokenizer.ggml.pre) is not supported; supported: llama-bpe, qwen2, gpt-2",
                        v->pre[0] ? v->pre : "(none)");
    for (int b = 0; b < 256; b++) {
        char u[4];
        size_t n = qt__utf8_encode(qt__byte_to_cp((uint8_t)b), u);
        memcpy(t->byte_char[b], u, n);
        t->byte_char_len[b] = (uint8_t)n;
        t->byte_char_token[b] = qt__tok_find(t, u, n);
        if (t->byte_char_token[b] < 0)
            return qt_error(QT_ERR_UNSUPPORTED, "tokenizer: byte-level vocabulary has no token for byte 0x%02X ('%.*s')", b,
                            (int)n, u);
    }
    int err;
    PCRE2_SIZE erroff;
    t->re = pcre2_compile((PCRE2_SPTR)t->pre->regex, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &erroff, NULL);
    if (!t->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        return qt_error(QT_ERR_INTERNAL, "tokenizer: pre-tokenizer '%s': regex error at %zu: %s", t->pre->name, (size_t)erroff,
                        (const char *)msg);
    }
    (void)pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE); /* optional speed-up; the interpreter is the fallback */
    return build_merges(t);
}

void qt__bpe_free(qt_tokenizer *t) {
    if (t->re) pcre2_code_free(t->re);
    t->re = NULL;
    free(t->merges);
    t->merges = NULL;
}

/* ---- encoding ------------------------------------------------------------------------ */

typedef struct bpe_sym { int32_t id, prev, next; } bpe_sym;
typedef struct bpe_entry { int32_t rank, pos, id; } bpe_entry;

typedef struct bpe_work {
    bpe_sym *sym;
    size_t sym_cap;
    qt__heap heap;           /* of bpe_entry, lowest (rank, pos) first */
    char *mapped;            /* the word in the byte-level alphabet (ignore_merges lookup) */
    size_t mapped_cap;
} bpe_work;

static bool less(const void *pa, const void *pb) {
    const bpe_entry *a = pa, *b = pb;
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static bool push_pair(const qt_tokenizer *t, bpe_work *w, int32_t pos) {
    if (pos < 0) return true;
    int32_t nx = w->sym[pos].next;
    if (nx < 0) return true;
    const qt__tok_merge *m = merge_find(t, w->sym[pos].id, w->sym[nx].id);
    if (!m) return true;
    const bpe_entry e = {m->rank, pos, m->id};
    return qt__heap_push(&w->heap, &e);
}

static qt_status oom(void) { return qt_error(QT_ERR_NOMEM, "tokenize: out of memory"); }

static qt_status bpe_word(const qt_tokenizer *t, bpe_work *w, const uint8_t *s, size_t n, qt__tok_ids *out) {
    if (n == 0) return QT_OK;
    if (n == 1) return qt__tok_push(out, t->byte_char_token[s[0]]);
    if (t->pre->ignore_merges) {
        if (n * 2 > w->mapped_cap) {
            char *m = realloc(w->mapped, n * 2);
            if (!m) return oom();
            w->mapped = m;
            w->mapped_cap = n * 2;
        }
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
            memcpy(w->mapped + o, t->byte_char[s[i]], t->byte_char_len[s[i]]);
            o += t->byte_char_len[s[i]];
        }
        int32_t id = qt__tok_find(t, w->mapped, o);
        if (id >= 0) return qt__tok_push(out, id);
    }
    if (n > w->sym_cap) {
        bpe_sym *y = realloc(w->sym, n * sizeof *y);
        if (!y) return oom();
        w->sym = y;
        w->sym_cap = n;
    }
    if (n > INT32_MAX / 2) return qt_error(QT_ERR_UNSUPPORTED, "tokenize: a single pre-token of %zu bytes is too long", n);
    bpe_sym *y = w->sym;
    for (size_t i = 0; i < n; i++)
        y[i] = (bpe_sym){t->byte_char_token[s[i]], (int32_t)i - 1, i + 1 < n ? (int32_t)i + 1 : -1};
    w->heap.n = 0;
    for (size_t i = 0; i + 1 < n; i++)
        if (!push_pair(t, w, (int32_t)i)) return oom();
    while (w->heap.n > 0) {
        bpe_entry e;
        qt__heap_pop(&w->heap, &e);
        bpe_sym *l = &y[e.pos];
        if (l->id < 0 || l->next < 0) continue;
        const qt__tok_merge *m = merge_find(t, l->id, y[l->next].id);
        if (!m || m->id != e.id) continue; /* stale: the pair changed since it was queued */
        int32_t r = l->next;
        l->id = e.id;
        l->next = y[r].next;
        y[r].id = -1;
        if (l->next >= 0) y[l->next].prev = e.pos;
        if (!push_pair(t, w, l->prev) || !push_pair(t, w, e.pos)) return oom();
    }
    for (int32_t i = 0; i != -1; i = y[i].next) {
        qt_status st = qt__tok_push(out, y[i].id);
        if (st != QT_OK) return st;
    }
    return QT_OK;
}

static bool has_non_ascii(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((uint8_t)s[i] >= 0x80) return true;
    return false;
}

qt_status qt__bpe_encode(const qt_tokenizer *t, const char *text, size_t len, qt__tok_ids *out) {
    bool no_mem;
    size_t n = len;
    char *repaired = qt__utf8_repair(text, len, &n, &no_mem);
    if (no_mem) return oom();
    const char *s = repaired ? repaired : text;
    uint8_t *nfc = NULL;
    if (t->pre->nfc && has_non_ascii(s, n)) {
        utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &nfc,
                                          UTF8PROC_STABLE | UTF8PROC_COMPOSE);
        if (r < 0) {
            free(repaired);
            return qt_error(QT_ERR_INTERNAL, "tokenize: NFC normalisation failed: %s", utf8proc_errmsg(r));
        }
        s = (const char *)nfc;
        n = (size_t)r;
    }
    qt_status st = QT_OK;
    bpe_work w = {0};
    qt__heap_init(&w.heap, sizeof(bpe_entry), less);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(t->re, NULL);
    if (!md) { st = oom(); goto done; }
    const uint8_t *u = (const uint8_t *)s;
    size_t gap = 0, pos = 0;
    while (pos < n) {
        int rc = pcre2_match(t->re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            st = qt_error(QT_ERR_INTERNAL, "tokenize: pre-tokenizer regex failed at byte %zu: %s", pos, (const char *)msg);
            goto done;
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        if (me == ms) { /* empty match (none of our patterns has one): the character stays in the gap */
            uint32_t cp;
            pos = ms + qt__utf8_decode(u + ms, n - ms, &cp);
            continue;
        }
        if (ms > gap && (st = bpe_word(t, &w, u + gap, ms - gap, out)) != QT_OK) goto done;
        if ((st = bpe_word(t, &w, u + ms, me - ms, out)) != QT_OK) goto done;
        gap = pos = me;
    }
    if (gap < n) st = bpe_word(t, &w, u + gap, n - gap, out);
done:
    if (md) pcre2_match_data_free(md);
    free(w.sym);
    qt__heap_free(&w.heap);
    free(w.mapped);
    free(nfc);
    free(repaired);
    return st;
}
