/* lib/model/tok_spm.c — SentencePiece-style encoding exactly as llama.cpp's
 * llm_tokenizer_spm_session does it (docs/formats.md §8.2):
 *   1. optional prefix space, then every ' ' becomes U+2581;
 *   2. start from UTF-8 characters (lengths from the lead byte only, no validation);
 *   3. a max-heap of adjacent pairs whose concatenation is a vocabulary token,
 *      keyed by that token's score, ties to the smaller left index; pop, skip
 *      stale entries, merge, push the two new neighbour pairs;
 *   4. each final symbol is its token, or one byte token per byte ("<0xNN>",
 *      falling back to the 1-byte token).
 * Every merged symbol is a token (a pair is only queued when it is), so
 * llama.cpp's rev_merge re-segmentation never has work to do and is omitted. */
#include <stdlib.h>
#include <string.h>

#include "core/heap.h"
#include "tok_internal.h"

typedef struct spm_sym {
    int32_t prev, next;  /* neighbours in the live chain, -1 at the ends */
    uint32_t off, n;     /* bytes of the escaped text; n = 0 once merged away */
} spm_sym;

typedef struct spm_bigram {
    float score;         /* score of the merged token */
    int32_t left, right;
    uint32_t size;       /* byte length of the merged text (detects stale entries) */
} spm_bigram;

/* llama.cpp's comparator: higher score first, then smaller left index. */
static bool before(const void *pa, const void *pb) {
    const spm_bigram *a = pa, *b = pb;
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

typedef struct spm_session {
    const qt_tokenizer *t;
    const char *buf;
    spm_sym *sym;
    qt__heap heap;              /* of spm_bigram, best first */
} spm_session;

static bool try_add_bigram(spm_session *s, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return true;
    const spm_sym *l = &s->sym[left], *r = &s->sym[right];
    int32_t id = qt__tok_find(s->t, s->buf + l->off, (size_t)l->n + r->n);
    if (id < 0) return true;
    const float *scores = s->t->vocab->scores;
    spm_bigram b = {scores ? scores[id] : 0.0f, left, right, l->n + r->n};
    return qt__heap_push(&s->heap, &b);
}

/* llama.cpp unicode_len_utf8: sequence length from the lead byte's high nibble. */
static uint32_t utf8_len(uint8_t lead) {
    static const uint8_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lookup[lead >> 4];
}

static qt_status emit_symbol(const spm_session *s, const spm_sym *y, qt__tok_ids *out) {
    int32_t id = qt__tok_find(s->t, s->buf + y->off, y->n);
    if (id >= 0) return qt__tok_push(out, id);
    for (uint32_t j = 0; j < y->n; j++) {
        uint8_t b = (uint8_t)s->buf[y->off + j];
        int32_t bt = s->t->byte_token[b];
        if (bt < 0) bt = s->t->vocab->unk_id;
        if (bt < 0)
            return qt_error(QT_ERR_UNSUPPORTED, "tokenize: byte 0x%02X has no token in this vocabulary (no <0x%02X>, no <unk>)", b, b);
        qt_status st = qt__tok_push(out, bt);
        if (st != QT_OK) return st;
    }
    return QT_OK;
}

qt_status qt__spm_encode(const qt_tokenizer *t, const char *text, size_t len, bool add_prefix, qt__tok_ids *out) {
    size_t n_space = add_prefix;
    for (size_t i = 0; i < len; i++) n_space += text[i] == ' ';
    size_t blen = len + add_prefix + 2 * n_space;
    if (blen >= UINT32_MAX / 2) return qt_error(QT_ERR_UNSUPPORTED, "tokenize: text fragment of %zu bytes is too long", len);
    if (blen == 0) return QT_OK;

    char *buf = malloc(blen);
    spm_session s = {t, buf, NULL, {0}};
    qt__heap_init(&s.heap, sizeof(spm_bigram), before);
    qt_status st = QT_OK;
    if (!buf) return qt_error(QT_ERR_NOMEM, "tokenize: out of memory");
    size_t o = 0;
    if (add_prefix) { memcpy(buf, "\xE2\x96\x81", 3); o = 3; }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') { memcpy(buf + o, "\xE2\x96\x81", 3); o += 3; }
        else buf[o++] = text[i];
    }

    size_t n_sym = 0;
    for (size_t off = 0; off < blen; n_sym++) off += utf8_len((uint8_t)buf[off]);
    s.sym = malloc(n_sym * sizeof *s.sym);
    if (!s.sym) { st = qt_error(QT_ERR_NOMEM, "tokenize: out of memory"); goto done; }
    size_t off = 0;
    for (size_t i = 0; i < n_sym; i++) {
        uint32_t n = utf8_len((uint8_t)buf[off]);
        if (n > blen - off) n = (uint32_t)(blen - off);
        s.sym[i] = (spm_sym){(int32_t)i - 1, off + n == blen ? -1 : (int32_t)i + 1, (uint32_t)off, n};
        off += n;
    }

    for (size_t i = 1; i < n_sym; i++)
        if (!try_add_bigram(&s, (int32_t)i - 1, (int32_t)i)) goto oom;
    while (s.heap.n > 0) {
        spm_bigram b;
        qt__heap_pop(&s.heap, &b);
        spm_sym *l = &s.sym[b.left], *r = &s.sym[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size) continue; /* stale */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) s.sym[r->next].prev = b.left;
        if (!try_add_bigram(&s, l->prev, b.left) || !try_add_bigram(&s, b.left, l->next)) goto oom;
    }
    for (int32_t i = 0; i != -1; i = s.sym[i].next)
        if ((st = emit_symbol(&s, &s.sym[i], out)) != QT_OK) goto done;
    goto done;
oom:
    st = qt_error(QT_ERR_NOMEM, "tokenize: out of memory");
done:
    qt__heap_free(&s.heap);
    free(s.sym);
    free(buf);
    return st;
}
