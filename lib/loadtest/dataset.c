/* lib/loadtest/dataset.c — the requests of a load test: random prompts of
 * exact token lengths (vLLM's random dataset: lengths uniform in
 * [floor(L(1-R)), ceil(L(1+R))], the special tokens the tokenizer adds counted
 * in L), or prompts and chats from a JSONL file.
 *
 * Decoding random ids and encoding the text again rarely gives the same ids
 * (pieces merge or split), so the id list is corrected until the text encodes
 * to exactly the drawn length; vLLM re-encodes and truncates the same way.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "loadtest_internal.h"

void qt_lt_prompts_free(qt_lt_prompt *p, int32_t n) {
    if (!p) return;
    for (int32_t i = 0; i < n; i++) free(p[i].prompt), free(p[i].messages_json);
    free(p);
}

/* Ids a random prompt may use: normal tokens (SPM byte tokens could decode to invalid UTF-8). */
static int32_t *pool_of(const qt_vocab *v, int32_t *n_pool) {
    int32_t *pool = malloc(sizeof *pool * (size_t)(v->n_tokens > 0 ? v->n_tokens : 1)), k = 0;
    if (!pool) return NULL;
    for (int32_t i = 0; i < v->n_tokens; i++) {
        if (v->token_types ? v->token_types[i] != QT_TOKEN_NORMAL
                           : (i == v->bos_id || i == v->eos_id || i == v->unk_id || i == v->pad_id))
            continue;
        pool[k++] = i;
    }
    *n_pool = k;
    return pool;
}

static qt_status count_tokens(const qt_tokenizer *tok, const char *text, size_t len, int32_t *n) {
    int32_t *ids = NULL;
    qt_status s = qt_tokenize_ex(tok, text, len, 0, &ids, n);
    free(ids);
    return s;
}

/* Corrects ids[0..*n) (room for cap) until its text encodes to `target` tokens; the text is *out. */
static qt_status exact_text(const qt_tokenizer *tok, qt__rng *r, const int32_t *pool, int32_t n_pool, int32_t *ids,
                            int32_t *n, int32_t cap, int32_t target, char **out) {
    for (int iter = 0; iter < 96; iter++) {
        char *text = NULL;
        size_t len = 0;
        int32_t m = 0;
        qt_status s = qt_detokenize(tok, ids, *n, &text, &len);
        if (!s) s = count_tokens(tok, text, len, &m);
        if (s) {
            free(text);
            return s;
        }
        if (m == target) {
            *out = text;
            return QT_OK;
        }
        free(text);
        /* the first rounds move by the whole difference, later ones by one token */
        int32_t step = iter < 32 ? (m > target ? m - target : target - m) : 1;
        if (m > target) *n = *n > step ? *n - step : 1;
        else
            for (int32_t k = 0; k < step && *n < cap; k++) ids[(*n)++] = pool[qt__rng_range(r, 0, n_pool - 1)];
    }
    return qt_error(QT_ERR_INTERNAL, "random dataset: no text of exactly %d tokens found from random ids", target);
}

qt_status qt_lt_random_prompts(const qt_vocab *vocab, const qt_tokenizer *tok, int32_t n, int32_t input_len,
                               int32_t output_len, double range_ratio, uint64_t seed, qt_lt_prompt **out) {
    if (!(range_ratio >= 0 && range_ratio < 1))
        return qt_error(QT_ERR_ARG, "--range-ratio: %g is not in [0, 1)", range_ratio);
    if (n < 1 || input_len < 1 || output_len < 1)
        return qt_error(QT_ERR_ARG, "random dataset: prompts, input and output lengths must be positive");
    int32_t n_special = (vocab->add_bos && vocab->bos_id >= 0) + (vocab->add_eos && vocab->eos_id >= 0);
    int32_t real = input_len - n_special > 1 ? input_len - n_special : 1;
    int64_t in_lo = (int64_t)floor(real * (1 - range_ratio)), in_hi = (int64_t)ceil(real * (1 + range_ratio));
    int64_t out_lo = (int64_t)floor(output_len * (1 - range_ratio)), out_hi = (int64_t)ceil(output_len * (1 + range_ratio));
    if (in_lo < 1) in_lo = 1;
    if (out_lo < 1) out_lo = 1;
    int32_t n_pool = 0, cap = (int32_t)in_hi * 2 + 64;
    int32_t *pool = pool_of(vocab, &n_pool), *ids = malloc(sizeof *ids * (size_t)cap);
    qt_lt_prompt *p = calloc((size_t)n, sizeof *p);
    qt_status s = QT_OK;
    if (!pool || !ids || !p) s = qt_error(QT_ERR_NOMEM, "random dataset: out of memory");
    else if (n_pool < 2) s = qt_error(QT_ERR_UNSUPPORTED, "random dataset: the vocabulary has no normal tokens to draw");
    qt__rng r = {seed};
    for (int32_t i = 0; i < n && !s; i++) {
        int32_t target = (int32_t)qt__rng_range(&r, in_lo, in_hi), k = target;
        p[i].max_tokens = (int32_t)qt__rng_range(&r, out_lo, out_hi);
        for (int32_t j = 0; j < k; j++) ids[j] = pool[qt__rng_range(&r, 0, n_pool - 1)];
        s = exact_text(tok, &r, pool, n_pool, ids, &k, cap, target, &p[i].prompt);
        p[i].prompt_len = target + n_special;
    }
    free(pool);
    free(ids);
    if (s) {
        qt_lt_prompts_free(p, n);
        return s;
    }
    *out = p;
    return QT_OK;
}

/* ---- JSONL ------------------------------------------------------------------------ */

static qt_status messages_ok(json_t *msgs, const char *path, int line) {
    size_t i;
    json_t *m;
    if (!json_is_array(msgs) || json_array_size(msgs) == 0)
        return qt_error(QT_ERR_FORMAT, "%s:%d: field 'messages': expected a non-empty array", path, line);
    json_array_foreach(msgs, i, m) {
        if (!json_is_string(json_object_get(m, "role")) || !json_is_string(json_object_get(m, "content")))
            return qt_error(QT_ERR_FORMAT, "%s:%d: field 'messages[%zu]': expected {\"role\": string, \"content\": string}",
                            path, line, i);
    }
    return QT_OK;
}

static qt_status parse_line(const char *path, int line, const char *text, size_t len, const qt_tokenizer *tok,
                            int32_t default_max, qt_lt_prompt *out) {
    json_error_t jerr;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    qt_status s = QT_OK;
    if (!json_is_object(o)) {
        s = qt_error(QT_ERR_FORMAT, "%s:%d: not a JSON object%s%s", path, line, o ? "" : ": ", o ? "" : jerr.text);
        goto done;
    }
    json_t *prompt = json_object_get(o, "prompt"), *msgs = json_object_get(o, "messages"), *mt = json_object_get(o, "max_tokens");
    out->max_tokens = default_max;
    out->prompt_len = -1;
    if (mt) {
        if (!json_is_integer(mt) || json_integer_value(mt) < 1 || json_integer_value(mt) > INT32_MAX) {
            s = qt_error(QT_ERR_FORMAT, "%s:%d: field 'max_tokens': expected a positive integer", path, line);
            goto done;
        }
        out->max_tokens = (int32_t)json_integer_value(mt);
    }
    if (prompt && msgs) {
        s = qt_error(QT_ERR_FORMAT, "%s:%d: both 'prompt' and 'messages' (one of them per line)", path, line);
    } else if (prompt) {
        if (!json_is_string(prompt)) {
            s = qt_error(QT_ERR_FORMAT, "%s:%d: field 'prompt': expected a string", path, line);
            goto done;
        }
        out->prompt = strdup(json_string_value(prompt));
        if (!out->prompt) s = qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
        int32_t *ids = NULL, n_ids = 0;
        if (!s && tok && !(s = qt_tokenize(tok, out->prompt, json_string_length(prompt), true, &ids, &n_ids)))
            out->prompt_len = n_ids;
        free(ids);
    } else if (msgs) {
        if ((s = messages_ok(msgs, path, line))) goto done;
        out->messages_json = json_dumps(msgs, JSON_COMPACT);
        if (!out->messages_json) s = qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
    } else {
        s = qt_error(QT_ERR_FORMAT, "%s:%d: needs a 'prompt' string or a 'messages' array", path, line);
    }
done:
    json_decref(o);
    return s;
}

qt_status qt_lt_dataset_load(const char *path, const qt_tokenizer *tok, int32_t n, int32_t default_max_tokens,
                             qt_lt_prompt **out) {
    qt_mmap map;
    qt_status s = qt_mmap_open(path, &map);
    if (s) return s;
    int32_t cap = 64, k = 0;
    qt_lt_prompt *p = calloc((size_t)cap, sizeof *p);
    if (!p) s = qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
    const char *t = (const char *)map.data, *end = t + map.size;
    for (int line = 1; !s && t && t < end; line++) {
        const char *eol = memchr(t, '\n', (size_t)(end - t));
        if (!eol) eol = end;
        const char *a = t;
        while (a < eol && (*a == ' ' || *a == '\t' || *a == '\r')) a++;
        if (a < eol) {
            if (k == cap) {
                qt_lt_prompt *np = realloc(p, sizeof *p * (size_t)cap * 2);
                if (!np) {
                    s = qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
                    break;
                }
                memset(np + cap, 0, sizeof *p * (size_t)cap);
                p = np, cap *= 2;
            }
            s = parse_line(path, line, a, (size_t)(eol - a), tok, default_max_tokens, &p[k]);
            k++;
        }
        t = eol + 1;
    }
    qt_mmap_close(&map);
    if (!s && k == 0) s = qt_error(QT_ERR_FORMAT, "%s: no requests (the file has no JSON lines)", path);
    qt_lt_prompt *res = NULL;
    if (!s && !(res = calloc((size_t)n, sizeof *res))) s = qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
    for (int32_t i = 0; !s && i < n; i++) { /* cycled to n requests */
        const qt_lt_prompt *src = &p[i % k];
        res[i] = *src;
        res[i].prompt = src->prompt ? strdup(src->prompt) : NULL;
        res[i].messages_json = src->messages_json ? strdup(src->messages_json) : NULL;
        if ((src->prompt && !res[i].prompt) || (src->messages_json && !res[i].messages_json))
            s = qt_error(QT_ERR_NOMEM, "%s: out of memory", path);
    }
    qt_lt_prompts_free(p, k);
    if (s) {
        qt_lt_prompts_free(res, n);
        return s;
    }
    *out = res;
    return QT_OK;
}
