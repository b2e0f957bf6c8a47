/* lib/eval/needle.c — long-context retrieval: a key fact ("The secret number
 * is 4721.") hidden at a chosen depth of a haystack of real text, queried at
 * the end ("The secret number is"), after Kamradt's "needle in a haystack"
 * test (2023) as RULER (Hsieh et al. 2024) formalises it.
 *
 * A trial succeeds when greedy decoding would write the key next: each of the
 * key's tokens is the model's argmax under teacher forcing after the prompt.
 * The log-probability of the key is kept as a graded signal, because a very
 * small model may never retrieve the key yet still assign it more or less
 * probability depending on its KV cache.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"

static const int32_t default_lengths[] = {128, 256, 448};
static const double default_depths[] = {0.0, 0.25, 0.5, 0.75, 1.0};

void qt_needle_opts_default(qt_needle_opts *o) {
    memset(o, 0, sizeof *o);
    o->n_lengths = 3;
    o->lengths = default_lengths;
    o->n_depths = 5;
    o->depths = default_depths;
    o->n_trials = 4;
    o->needle = "The secret number is {KEY}.";
    o->query = "The secret number is";
    o->seed = 0x9e3779b97f4a7c15ull;
}

/* splitmix64 (Steele, Lea, Flood 2014): a fixed, portable generator, so the
 * same seed gives the same keys and haystacks everywhere. */
static uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

/* The sentence starting at or after *pos (wrapping once at the end of the
 * text): [b, e) trimmed, ending after . ! or ? (and a closing quote) that is
 * followed by whitespace or the end. Returns false when the text holds no
 * non-space byte. */
static bool next_sentence(const char *t, size_t len, size_t *pos, size_t *b, size_t *e) {
    for (int wrap = 0; wrap < 2; wrap++) {
        size_t i = *pos;
        while (i < len && is_space(t[i])) i++;
        if (i < len) {
            size_t j = i;
            while (j < len) {
                char c = t[j++];
                if (c == '.' || c == '!' || c == '?') {
                    while (j < len && (t[j] == '"' || t[j] == '\'')) j++;
                    if (j >= len || is_space(t[j])) break;
                } else if (c == '\n' && j < len && t[j] == '\n') {
                    break; /* a paragraph break ends a sentence without punctuation */
                }
            }
            size_t k = j;
            while (k > i && is_space(t[k - 1])) k--;
            *b = i;
            *e = k;
            *pos = j;
            return true;
        }
        *pos = 0;
    }
    return false;
}

/* Start of the first sentence after byte `start` (so a haystack never begins mid-sentence). */
static size_t sentence_start_after(const char *t, size_t len, size_t start) {
    if (start == 0 || start >= len) return 0;
    for (size_t i = start; i + 1 < len; i++)
        if ((t[i] == '.' || t[i] == '!' || t[i] == '?' || t[i] == '\n') && is_space(t[i + 1])) return i + 1;
    return 0;
}

static qt_status substitute_key(const char *tmpl, const char *key, char **out) {
    const char *at = strstr(tmpl, "{KEY}");
    if (!at) return qt_error(QT_ERR_ARG, "needle: the needle sentence \"%s\" has no {KEY} placeholder", tmpl);
    qt__sbuf b = {0};
    qt__sb_add(&b, tmpl, (size_t)(at - tmpl));
    qt__sb_puts(&b, key);
    qt__sb_puts(&b, at + 5);
    return qt__sb_finish(&b, out, "eval");
}

/* Filler sentences as [begin, end) pairs with their token counts. */
typedef struct span { size_t b, e; int32_t n_tok; } span;

static qt_status assemble(const char *t, const span *sp, int32_t n_sp, int32_t at, const char *needle,
                          const char *query, char **out) {
    qt__sbuf b = {0};
    for (int32_t i = 0; i <= n_sp; i++) {
        if (i == at) {
            if (b.n) qt__sb_puts(&b, " ");
            qt__sb_puts(&b, needle);
        }
        if (i < n_sp) {
            if (b.n) qt__sb_puts(&b, " ");
            qt__sb_add(&b, t + sp[i].b, sp[i].e - sp[i].b);
        }
    }
    qt__sb_puts(&b, " ");
    qt__sb_puts(&b, query);
    return qt__sb_finish(&b, out, "eval");
}

static qt_status count_span(const char *t, const span *sp, qt_eval_count_fn count, void *user, int32_t *n) {
    size_t len = sp->e - sp->b;
    char stackbuf[512];
    char *buf = len < sizeof stackbuf ? stackbuf : malloc(len + 1);
    if (!buf) return qt_error(QT_ERR_NOMEM, "needle: out of memory");
    memcpy(buf, t + sp->b, len);
    buf[len] = '\0';
    qt_status s = count(user, buf, n);
    if (buf != stackbuf) free(buf);
    return s;
}

qt_status qt_needle_build(const char *text, size_t len, size_t start, int32_t target_tokens, double depth,
                          const char *needle_tmpl, const char *key, const char *query, qt_eval_count_fn count,
                          void *user, char **prompt, int32_t *n_tokens) {
    *prompt = NULL;
    if (!(depth >= 0.0 && depth <= 1.0)) return qt_error(QT_ERR_ARG, "needle: depth %g outside [0, 1]", depth);
    char *needle = NULL;
    qt_status s = substitute_key(needle_tmpl, key, &needle);
    if (s) return s;
    int32_t n_needle = 0, n_query = 0;
    if (!(s = count(user, needle, &n_needle))) s = count(user, query, &n_query);
    if (s) { free(needle); return s; }

    span *sp = NULL;
    int32_t n_sp = 0, cap = 0;
    int32_t budget = target_tokens - n_needle - n_query;
    char *out = NULL;
    int32_t n_out = 0;
    /* Fill, assemble, measure; if the joined text tokenizes longer than the
     * sum of its parts, shrink the budget by the excess and try again. */
    for (int attempt = 0; attempt < 16 && !s; attempt++) {
        if (budget <= 0) {
            s = qt_error(QT_ERR_ARG, "needle: %d tokens cannot hold the needle (%d) and the query (%d)",
                         (int)target_tokens, (int)n_needle, (int)n_query);
            break;
        }
        n_sp = 0;
        int32_t filled = 0;
        size_t pos = sentence_start_after(text, len, start), b, e;
        while (filled < budget && !s && next_sentence(text, len, &pos, &b, &e)) {
            if (n_sp == cap) {
                cap = cap ? cap * 2 : 64;
                span *ns = realloc(sp, sizeof *ns * (size_t)cap);
                if (!ns) { s = qt_error(QT_ERR_NOMEM, "needle: out of memory"); break; }
                sp = ns;
            }
            span x = {b, e, 0};
            if ((s = count_span(text, &x, count, user, &x.n_tok))) break;
            if (filled + x.n_tok > budget) break;
            sp[n_sp++] = x;
            filled += x.n_tok;
            if (n_sp > 1000000) break;
        }
        if (s) break;
        if (n_sp == 0) { s = qt_error(QT_ERR_ARG, "needle: the text has no sentence short enough for %d tokens", (int)target_tokens); break; }
        /* the sentence boundary whose preceding share of filler tokens is closest to depth */
        int32_t at = 0, acc = 0;
        double best = INFINITY;
        for (int32_t i = 0; i <= n_sp; i++) {
            double dist = fabs((double)acc / (double)filled - depth);
            if (dist < best) { best = dist; at = i; }
            if (i < n_sp) acc += sp[i].n_tok;
        }
        free(out);
        out = NULL;
        if ((s = assemble(text, sp, n_sp, at, needle, query, &out))) break;
        if ((s = count(user, out, &n_out))) break;
        if (n_out <= target_tokens) break;
        budget -= n_out - target_tokens;
        if (attempt == 15) s = qt_error(QT_ERR_INTERNAL, "needle: could not fit the haystack in %d tokens", (int)target_tokens);
    }
    free(sp);
    free(needle);
    if (s) { free(out); return s; }
    *prompt = out;
    if (n_tokens) *n_tokens = n_out;
    return QT_OK;
}

void qt_needle_result_free(qt_needle_result *r) {
    if (!r) return;
    free(r->cells);
    r->cells = NULL;
    r->n_cells = 0;
}

qt_status qt_needle_run(const char *text, size_t len, const qt_needle_opts *o, qt_eval_count_fn count,
                        qt_eval_score_fn score, void *user, const qt_progress *progress, qt_needle_result *out) {
    memset(out, 0, sizeof *out);
    if (o->n_lengths <= 0 || o->n_depths <= 0 || o->n_trials <= 0)
        return qt_error(QT_ERR_ARG, "needle: need at least one length, depth and trial");
    if (len == 0) return qt_error(QT_ERR_ARG, "needle: the haystack text is empty");
    out->n_cells = o->n_lengths * o->n_depths;
    out->cells = calloc((size_t)out->n_cells, sizeof *out->cells);
    if (!out->cells) return qt_error(QT_ERR_NOMEM, "needle: out of memory");
    int64_t total = (int64_t)out->n_cells * o->n_trials, done = 0;
    qt_status s = QT_OK;
    for (int32_t li = 0; li < o->n_lengths && !s; li++) {
        for (int32_t di = 0; di < o->n_depths && !s; di++) {
            qt_needle_cell *cell = &out->cells[li * o->n_depths + di];
            cell->length = o->lengths[li];
            cell->depth = o->depths[di];
            double sum_tok = 0, sum_lp = 0;
            for (int32_t t = 0; t < o->n_trials && !s; t++) {
                if (qt_cancelled()) { s = qt_error(QT_ERR_INTERRUPTED, "needle: interrupted"); break; }
                /* key and haystack depend on (seed, trial) only, so cells differ by length and depth alone */
                uint64_t r = splitmix64(o->seed ^ splitmix64((uint64_t)t + 1));
                char key[16], cont[20];
                snprintf(key, sizeof key, "%04u", (unsigned)(1000 + r % 9000));
                snprintf(cont, sizeof cont, " %s", key);
                size_t start = (size_t)(splitmix64(r) % len);
                char *prompt;
                int32_t n_tok;
                s = qt_needle_build(text, len, start, cell->length, cell->depth, o->needle, key, o->query, count, user,
                                    &prompt, &n_tok);
                if (s) break;
                qt_eval_score sc;
                s = score(user, prompt, cont, &sc);
                free(prompt);
                if (s) break;
                cell->n_trials++;
                cell->n_success += sc.greedy;
                sum_tok += n_tok;
                sum_lp += sc.logprob;
                qt_progress_report(progress, "needle", ++done, total);
            }
            if (cell->n_trials) {
                cell->mean_tokens = sum_tok / cell->n_trials;
                cell->mean_key_logprob = sum_lp / cell->n_trials;
            }
            out->n_trials += cell->n_trials;
            out->n_success += cell->n_success;
        }
    }
    if (s) qt_needle_result_free(out);
    return s;
}
