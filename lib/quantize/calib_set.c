/* lib/quantize/calib_set.c — calibration samples: --calib FILE --nsamples N
 * --seqlen L --seed S, one rule for every verb (quanta/quantize.h, "calibration
 * samples"), and the metadata that records them.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quanta/quantize.h"
#include "quanta/template.h"
#include "quanta/tokenizer.h"
#include "quantize_internal.h"

/* splitmix64 (Steele, Lea, Flood 2014): a seed -> a well-mixed 64-bit stream. */
static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

qt_status qt_calib_windows(int64_t n_tokens, int32_t seq_len, int32_t n_samples, uint64_t seed, int64_t **starts,
                           int32_t *n_out) {
    *starts = NULL;
    *n_out = 0;
    if (seq_len < 1) return qt_error(QT_ERR_ARG, "calibration: sequence length %d (need at least 1)", seq_len);
    const int64_t w = n_tokens / seq_len;
    if (w > INT32_MAX / 2) return qt_error(QT_ERR_ARG, "calibration: %lld windows is too many", (long long)w);
    const int32_t n = n_samples > 0 ? n_samples : (int32_t)w;
    if (w < 1)
        return qt_error(QT_ERR_ARG, "calibration: the text has %lld tokens; no window of %d fits", (long long)n_tokens, seq_len);
    if (n > w)
        return qt_error(QT_ERR_ARG, "calibration: the text has %lld tokens, %lld window%s of %d; %d samples asked for "
                        "(%d x %d = %lld tokens; --allow-short-calib uses the %lld there are)", (long long)n_tokens,
                        (long long)w, w == 1 ? "" : "s", seq_len, n, n, seq_len, (long long)n * seq_len, (long long)w);
    int64_t *idx = malloc((size_t)w * sizeof *idx);
    if (!idx) return qt_error(QT_ERR_NOMEM, "calibration: out of memory for %lld windows", (long long)w);
    for (int64_t i = 0; i < w; i++) idx[i] = i;
    if (seed != 0) {
        /* Fisher-Yates from the top; the modulo bias is below 2^-32 for any window count here */
        uint64_t st = seed;
        for (int64_t i = w - 1; i > 0; i--) {
            const int64_t j = (int64_t)(splitmix64(&st) % (uint64_t)(i + 1));
            const int64_t t = idx[i];
            idx[i] = idx[j];
            idx[j] = t;
        }
        qsort(idx, (size_t)n, sizeof *idx, cmp_i64);
    }
    for (int32_t i = 0; i < n; i++) idx[i] *= seq_len;
    *starts = idx;
    *n_out = n;
    return QT_OK;
}

/* ---- the text: plain, or JSONL with "text" or "messages" ------------------------------------------------ */

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static qt_status append(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
    if (*len + n + 1 > *cap) {
        size_t c = (*cap ? *cap : 4096);
        while (c < *len + n + 1) c *= 2;
        char *b = realloc(*buf, c);
        if (!b) return qt_error(QT_ERR_NOMEM, "calibration: out of memory");
        *buf = b;
        *cap = c;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = '\0';
    return QT_OK;
}

typedef struct text_out {
    char *buf;
    size_t len, cap;
    qt__calib_span *spans;
    size_t n_spans, cap_spans;
} text_out;

/* A "messages" line through the model's chat template, as one span of the text. */
static qt_status chat_line(const char *path, int64_t line, json_t *msgs, const qt_vocab *chat, text_out *t) {
    if (!chat || !chat->chat_template)
        return qt_error(QT_ERR_UNSUPPORTED, "%s: line %lld: field 'messages': the model has no chat template to render it "
                        "with (tokenizer.chat_template / tokenizer_config.json's chat_template); give {\"text\": ...} lines",
                        path, (long long)line);
    if (!json_is_array(msgs))
        return qt_error(QT_ERR_FORMAT, "%s: line %lld: field 'messages': not a list", path, (long long)line);
    char *m = json_dumps(msgs, JSON_COMPACT), *text = NULL;
    if (!m) return qt_error(QT_ERR_NOMEM, "calibration: out of memory");
    const qt_chat_opts o = {.now = QT__CALIB_CHAT_NOW};
    qt_status s = qt_chat_apply_vocab(chat, m, &o, &text);
    free(m);
    if (s != QT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", qt_last_error());
        return qt_error(s, "%s: line %lld: field 'messages': the chat template: %s", path, (long long)line, why);
    }
    if (t->n_spans == t->cap_spans) {
        size_t cap = t->cap_spans ? 2 * t->cap_spans : 16;
        qt__calib_span *sp = realloc(t->spans, cap * sizeof *sp);
        if (!sp) s = qt_error(QT_ERR_NOMEM, "calibration: out of memory");
        else t->spans = sp, t->cap_spans = cap;
    }
    const size_t b = t->len;
    if (s == QT_OK) s = append(&t->buf, &t->len, &t->cap, text, strlen(text));
    if (s == QT_OK) t->spans[t->n_spans++] = (qt__calib_span){b, t->len};
    free(text);
    return s;
}

static qt_status jsonl_line(const char *path, int64_t line, const char *p, size_t n, const qt_vocab *chat, text_out *t) {
    json_error_t err;
    json_t *o = json_loadb(p, n, 0, &err);
    qt_status s = QT_OK;
    json_t *text = json_object_get(o, "text"), *msgs = text ? NULL : json_object_get(o, "messages");
    if (!o)
        s = qt_error(QT_ERR_FORMAT, "%s: line %lld: not JSON (%s)", path, (long long)line, err.text);
    else if (!json_is_object(o))
        s = qt_error(QT_ERR_FORMAT, "%s: line %lld: not a JSON object", path, (long long)line);
    else if (!msgs && !json_is_string(text))
        s = qt_error(QT_ERR_FORMAT, "%s: line %lld: field 'text': missing or not a string", path, (long long)line);
    if (s == QT_OK && t->len) s = append(&t->buf, &t->len, &t->cap, "\n\n", 2);
    if (s == QT_OK && msgs) s = chat_line(path, line, msgs, chat, t);
    else if (s == QT_OK) s = append(&t->buf, &t->len, &t->cap, json_string_value(text), json_string_length(text));
    json_decref(o);
    return s;
}

qt_status qt__calib_text(const char *path, const char *data, size_t size, const qt_vocab *chat, char **out,
                         size_t *out_len, qt__calib_span **spans, size_t *n_spans) {
    size_t i = 0;
    while (i < size && is_blank(data[i])) i++;
    *out = NULL;
    *out_len = 0;
    if (spans) *spans = NULL, *n_spans = 0;
    if (i == size || data[i] != '{') {
        *out = malloc(size + 1);
        if (!*out) return qt_error(QT_ERR_NOMEM, "calibration: out of memory");
        memcpy(*out, data, size);
        (*out)[size] = '\0';
        *out_len = size;
        return QT_OK;
    }
    qt_status s = QT_OK;
    text_out t = {0};
    int64_t line = 1;
    for (size_t b = 0; s == QT_OK && b < size; line++) {
        const char *nl = memchr(data + b, '\n', size - b);
        const size_t e = nl ? (size_t)(nl - data) : size;
        size_t k = b;
        while (k < e && is_blank(data[k])) k++;
        if (k < e) s = jsonl_line(path, line, data + b, e - b, chat, &t);
        b = e + 1;
    }
    if (s == QT_OK && !t.buf) s = append(&t.buf, &t.len, &t.cap, "", 0);
    if (s != QT_OK || !spans) free(t.spans), t.spans = NULL, t.n_spans = 0;
    if (s != QT_OK) {
        free(t.buf);
        return s;
    }
    *out = t.buf, *out_len = t.len;
    if (spans) *spans = t.spans, *n_spans = t.n_spans;
    return QT_OK;
}

/* ---- loading ---------------------------------------------------------------------------------- */

void qt_calib_set_free(qt_calib_set *s) {
    if (!s) return;
    free(s->tokens);
    qt_calib_fingerprint_free(&s->fp);
    memset(s, 0, sizeof *s);
}

/* Appends the tokens of text[b, e) (flags) to *ids. */
static qt_status tokenize_part(qt_tokenizer *tok, const char *text, size_t b, size_t e, unsigned flags, int32_t **ids,
                               int32_t *n) {
    int32_t *part = NULL, k = 0;
    qt_status s = qt_tokenize_ex(tok, text + b, e - b, flags, &part, &k);
    if (s == QT_OK && (int64_t)*n + k > INT32_MAX) s = qt_error(QT_ERR_RANGE, "more than 2^31 tokens");
    int32_t *all = s == QT_OK ? realloc(*ids, ((size_t)*n + (size_t)k + 1) * sizeof *all) : NULL;
    if (s == QT_OK && !all) s = qt_error(QT_ERR_NOMEM, "out of memory");
    if (s == QT_OK) {
        if (k) memcpy(all + *n, part, (size_t)k * sizeof *part);
        *ids = all, *n += k;
    }
    free(part);
    return s;
}

/* Rule step 2: the plain parts as text, the rendered conversations (spans) with their control tokens parsed. */
static qt_status tokenize(const qt_model *m, const char *text, size_t len, const qt__calib_span *spans, size_t n_spans,
                          int32_t **ids, int32_t *n) {
    const qt_vocab *v = qt_model_vocab(m);
    qt_tokenizer *tok = NULL;
    qt_status s = qt_tokenizer_new(v, &tok);
    *ids = NULL, *n = 0;
    const char *bos = v->bos_id >= 0 && v->bos_id < v->n_tokens ? v->tokens[v->bos_id] : NULL;
    bool first = true;
    size_t at = 0;
    for (size_t k = 0; s == QT_OK && k <= n_spans; k++) {
        const size_t pe = k < n_spans ? spans[k].b : len; /* the plain text before span k (or the end) */
        if (pe < at) {
            s = qt_error(QT_ERR_INTERNAL, "calibration spans out of order");
            break;
        }
        if (pe > at || (first && k == n_spans)) {
            s = tokenize_part(tok, text, at, pe, first && v->add_bos ? QT_TOKENIZE_ADD_BOS : 0u, ids, n);
            first = false;
        }
        if (k == n_spans || s != QT_OK) break;
        const qt__calib_span sp = spans[k];
        const bool has_bos = bos && *bos && !strncmp(text + sp.b, bos, strlen(bos)); /* the template wrote it */
        s = tokenize_part(tok, text, sp.b, sp.e, (first && v->add_bos && !has_bos ? QT_TOKENIZE_ADD_BOS : 0u) | QT_TOKENIZE_PARSE_SPECIAL,
                          ids, n);
        first = false;
        at = sp.e;
    }
    qt_tokenizer_free(tok);
    if (s != QT_OK) free(*ids), *ids = NULL, *n = 0;
    return s;
}

static qt_status cut(const qt_vocab *v, const int32_t *ids, int32_t n_ids, qt_calib_set *out) {
    int64_t *starts;
    int32_t n;
    qt_status s = qt_calib_windows(n_ids, out->seq_len, out->n_samples, out->seed, &starts, &n);
    if (s != QT_OK) return qt_error(s, "%s: %s", out->path, qt_last_error());
    const size_t L = (size_t)out->seq_len;
    out->tokens = malloc((size_t)n * L * sizeof *out->tokens);
    if (!out->tokens) { free(starts); return qt_error(QT_ERR_NOMEM, "%s: out of memory for the samples", out->path); }
    for (int32_t i = 0; i < n; i++) {
        memcpy(out->tokens + i * L, ids + starts[i], L * sizeof *ids);
        if (v->bos_id >= 0 && v->add_bos) out->tokens[i * L] = v->bos_id;
    }
    out->n_samples = n;
    free(starts);
    return QT_OK;
}

qt_status qt_calib_load(const qt_model *m, const qt_calib_opts *o, qt_calib_set *out) {
    memset(out, 0, sizeof *out);
    if (!o || !o->path) return qt_error(QT_ERR_ARG, "calibration: no file");
    *out = (qt_calib_set){.path = o->path, .n_samples = o->n_samples > 0 ? o->n_samples : 0,
                          .seq_len = o->seq_len > 0 ? o->seq_len : QT_CALIB_DEFAULT_SEQLEN, .seed = o->seed};
    char *data = NULL, *text = NULL;
    size_t size = 0, len = 0;
    int32_t *ids = NULL, n_ids = 0;
    qt_status s = qt_read_file(o->path, &data, &size);
    qt__calib_span *spans = NULL;
    size_t n_spans = 0;
    if (s == QT_OK) s = qt__calib_text(o->path, data, size, qt_model_vocab(m), &text, &len, &spans, &n_spans);
    if (s == QT_OK && (s = tokenize(m, text, len, spans, n_spans, &ids, &n_ids)) != QT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", qt_last_error());
        s = qt_error(s, "%s: %s", o->path, why);
    }
    free(spans);
    out->n_requested = out->n_samples;
    if (s == QT_OK && o->allow_short && out->seq_len > 0 && n_ids / out->seq_len < out->n_samples)
        out->n_samples = (int32_t)(n_ids / out->seq_len); /* 0 windows is still refused by cut */
    if (s == QT_OK) s = cut(qt_model_vocab(m), ids, n_ids, out);
    if (s == QT_OK) s = qt_calib_fingerprint_make(data, size, NULL, 0, &out->fp);
    out->file_bytes = (int64_t)size;
    out->file_tokens = n_ids;
    free(ids);
    free(text);
    free(data);
    if (s != QT_OK) qt_calib_set_free(out);
    return s;
}

/* ---- metadata ----------------------------------------------------------------------------------- */

static qt_gguf_kv kv_u64(const char *key, uint64_t v, qt_gguf_type t) {
    qt_gguf_kv kv = {.key = key};
    kv.value.type = t;
    kv.value.u64 = v;
    return kv;
}

int32_t qt_calib_set_gguf_kv(const qt_calib_set *s, qt_gguf_kv out[QT_CALIB_MAX_KV]) {
    int32_t n = 0;
    memset(out, 0, sizeof(qt_gguf_kv) * QT_CALIB_MAX_KV);
    out[n].key = QT_CALIB_KEY_FILE;
    out[n].value.type = QT_GGUF_STRING;
    out[n].value.str.ptr = s->path;
    out[n++].value.str.len = strlen(s->path);
    out[n++] = kv_u64(QT_CALIB_KEY_TOKENS, (uint64_t)s->file_tokens, QT_GGUF_UINT64);
    out[n++] = kv_u64(QT_CALIB_KEY_NSAMPLES, (uint64_t)s->n_samples, QT_GGUF_UINT32);
    out[n++] = kv_u64(QT_CALIB_KEY_SEQLEN, (uint64_t)s->seq_len, QT_GGUF_UINT32);
    out[n++] = kv_u64(QT_CALIB_KEY_SEED, s->seed, QT_GGUF_UINT64);
    qt_gguf_kv fp[4];
    const int32_t k = qt_calib_gguf_kv(&s->fp, NULL, 0, fp); /* whole file: no ranges buffer needed */
    for (int32_t i = 0; i < k; i++) out[n++] = fp[i];
    return n;
}
