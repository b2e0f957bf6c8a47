/* lib/engine/sampler.c — next-token choice: greedy, or top-k / temperature /
 * top-p and a draw from a seeded generator (splitmix64), so a run is
 * reproducible from its seed. */
#include <math.h>
#include <stdlib.h>

#include "quanta/engine.h"

typedef struct cand { float logit; int32_t id; float p; } cand;

struct qt_sampler {
    qt_sampler_opts o;
    int32_t n_vocab;
    uint64_t state;
    cand *c;                    /* (n_vocab) candidates, reused every call */
};

qt_status qt_sampler_new(const qt_sampler_opts *o, int32_t n_vocab, qt_sampler **out) {
    *out = NULL;
    if (n_vocab <= 0) return qt_error(QT_ERR_ARG, "sampler: vocabulary size %d", n_vocab);
    if (!(o->temp >= 0.0f) || isinf(o->temp)) return qt_error(QT_ERR_ARG, "sampler: temperature %g must be >= 0", (double)o->temp);
    if (!(o->top_p > 0.0f)) return qt_error(QT_ERR_ARG, "sampler: top-p %g must be > 0", (double)o->top_p);
    qt_sampler *s = calloc(1, sizeof *s);
    if (!s || !(s->c = malloc((size_t)n_vocab * sizeof *s->c))) {
        free(s);
        return qt_error(QT_ERR_NOMEM, "sampler: out of memory");
    }
    s->o = *o;
    s->n_vocab = n_vocab;
    s->state = o->seed;
    *out = s;
    return QT_OK;
}

void qt_sampler_free(qt_sampler *s) {
    if (!s) return;
    free(s->c);
    free(s);
}

/* splitmix64 (Steele, Lea, Flood 2014): a full-period 64-bit generator. */
static uint64_t next_u64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int32_t argmax(const float *logits, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

/* Descending logit; ties by ascending id so the order never depends on qsort. */
static int cmp_cand(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

int32_t qt_sampler_sample(qt_sampler *s, const float *logits) {
    const int32_t n = s->n_vocab;
    if (s->o.temp == 0.0f) return argmax(logits, n);
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++)
        if (!isnan(logits[i])) s->c[k++] = (cand){logits[i], i, 0.0f};
    if (k == 0) return 0;
    qsort(s->c, (size_t)k, sizeof *s->c, cmp_cand);
    if (s->o.top_k > 0 && s->o.top_k < k) k = s->o.top_k;

    double total = 0.0;
    for (int32_t i = 0; i < k; i++) {
        s->c[i].p = expf((s->c[i].logit - s->c[0].logit) / s->o.temp);
        total += s->c[i].p;
    }
    if (s->o.top_p < 1.0f) { /* smallest prefix whose probability reaches top_p */
        double cum = 0.0;
        int32_t keep = k;
        for (int32_t i = 0; i < k; i++) {
            cum += s->c[i].p / total;
            if (cum >= s->o.top_p) { keep = i + 1; break; }
        }
        k = keep;
        total = 0.0;
        for (int32_t i = 0; i < k; i++) total += s->c[i].p;
    }
    const double r = (double)(next_u64(&s->state) >> 11) * 0x1.0p-53 * total;
    double cum = 0.0;
    for (int32_t i = 0; i < k; i++) {
        cum += s->c[i].p;
        if (r < cum) return s->c[i].id;
    }
    return s->c[k - 1].id;
}
