/* lib/model/jinja_eval.c — chat templates (quanta/template.h): the evaluator.
 *
 * Values are Python's, as Jinja2 computes with them (transformers renders chat
 * templates with Jinja2): truthiness, "and"/"or" returning an operand, str()
 * of None / True / lists, integer versus float arithmetic, floor division and
 * modulo with the divisor's sign, slicing by code point with negative bounds
 * and steps, str.strip() and split() on Unicode whitespace. Scoping is
 * Jinja2's: a for loop's body is a scope of its own (a {% set %} there is gone
 * after the loop, which is why templates use namespace()), an if's is not.
 * Everything is allocated in one arena per render; an error unwinds with
 * longjmp after recording "template line L, column C: ...".
 *
 * Limits (a hostile template ends in QT_ERR_RANGE, never a hang): 20 million
 * evaluation steps, 256 MiB of values, 64 MiB of output, range() of at most
 * one million items.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <utf8proc.h>

#include "jinja_internal.h"

enum { MAX_STEPS = 20000000, MAX_RANGE = 1000000, MAX_CALLS = 64 };
#define MAX_OUTPUT ((size_t)64 << 20)
#define MAX_VALUES ((size_t)256 << 20)

typedef struct frame {
    const char **names;
    qt__jv **vals;
    size_t n, cap;
    struct frame *up;
} frame;

typedef struct sb {
    char *p;
    size_t n, cap;
} sb;

typedef struct ctx {
    qt__jarena a;
    jmp_buf jb;
    frame *top;
    sb *out;
    int64_t now;
    uint64_t steps;
    int loopctl; /* 1: break, 2: continue, pending */
    frame *root; /* the template's own scope: what a macro's body sees besides its parameters */
    int calls;   /* macro calls open (bounded: a macro may call itself) */
} ctx;

static qt__jv V_UNDEF = {.k = JV_UNDEF}, V_NONE = {.k = JV_NONE}, V_TRUE = {.k = JV_BOOL, .b = true},
              V_FALSE = {.k = JV_BOOL, .b = false};

#define EFAIL(c, nd, code, ...)                                                                  \
    do {                                                                                       \
        char m_[320];                                                                          \
        snprintf(m_, sizeof m_, __VA_ARGS__);                                                  \
        (c)->a.st = qt_error(code, "template line %d, column %d: %s", (nd)->line, (nd)->col, m_); \
        longjmp((c)->jb, 1);                                                                   \
    } while (0)

/* ---- builders ---------------------------------------------------------------------- */
static void sb_add(ctx *c, sb *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        if (cap > MAX_OUTPUT + 1) {
            c->a.st = qt_error(QT_ERR_RANGE, "template: the output passed %zu MiB", MAX_OUTPUT >> 20);
            longjmp(c->jb, 1);
        }
        char *p = qt__ja_alloc(&c->a, cap);
        if (b->n) memcpy(p, b->p, b->n);
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void sb_puts(ctx *c, sb *b, const char *s) { sb_add(c, b, s, strlen(s)); }

static qt__jv *mk(ctx *c, qt__jv_kind k) {
    qt__jv *v = qt__ja_alloc(&c->a, sizeof *v);
    v->k = k;
    return v;
}
static qt__jv *mk_str(ctx *c, const char *s, size_t n) {
    qt__jv *v = mk(c, JV_STR);
    v->s = qt__ja_strndup(&c->a, s, n), v->n = n;
    return v;
}
static qt__jv *mk_sb(ctx *c, const sb *b) {
    qt__jv *v = mk(c, JV_STR);
    v->s = b->p ? b->p : "", v->n = b->n;
    return v;
}
static qt__jv *mk_int(ctx *c, int64_t i) {
    qt__jv *v = mk(c, JV_INT);
    v->i = i;
    return v;
}
static qt__jv *mk_float(ctx *c, double f) {
    qt__jv *v = mk(c, JV_FLOAT);
    v->f = f;
    return v;
}
static qt__jv *mk_bool(bool b) { return b ? &V_TRUE : &V_FALSE; }
static qt__jv *mk_func(ctx *c, int id, qt__jv *self) {
    qt__jv *v = mk(c, JV_FUNC);
    v->i = id, v->self = self;
    return v;
}

static void grow(ctx *c, qt__jv *v) {
    if (v->n < v->cap) return;
    size_t cap = v->cap ? 2 * v->cap : 4;
    qt__jv **items = qt__ja_alloc(&c->a, cap * sizeof *items);
    if (v->n) memcpy(items, v->items, v->n * sizeof *items);
    v->items = items;
    if (v->k == JV_DICT) {
        qt__jv **keys = qt__ja_alloc(&c->a, cap * sizeof *keys);
        if (v->n) memcpy(keys, v->keys, v->n * sizeof *keys);
        v->keys = keys;
    }
    v->cap = cap;
}
static void list_push(ctx *c, qt__jv *l, qt__jv *x) {
    grow(c, l);
    l->items[l->n++] = x;
}
static qt__jv **dict_slot(qt__jv *d, const char *k, size_t kn) {
    for (size_t i = 0; i < d->n; i++)
        if (d->keys[i]->n == kn && !memcmp(d->keys[i]->s, k, kn)) return &d->items[i];
    return NULL;
}
static void dict_set(ctx *c, qt__jv *d, qt__jv *key, qt__jv *val) {
    qt__jv **slot = dict_slot(d, key->s, key->n);
    if (slot) {
        *slot = val;
        return;
    }
    grow(c, d);
    d->keys[d->n] = key;
    d->items[d->n++] = val;
}
static void dict_setc(ctx *c, qt__jv *d, const char *k, qt__jv *val) { dict_set(c, d, mk_str(c, k, strlen(k)), val); }

/* ---- JSON in ------------------------------------------------------------------------- */
static qt__jv *from_json(ctx *c, json_t *j, int depth) {
    if (depth > 200) {
        c->a.st = qt_error(QT_ERR_RANGE, "template variables: nested deeper than 200 levels");
        longjmp(c->jb, 1);
    }
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        qt__jv *d = mk(c, JV_DICT);
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v) dict_set(c, d, mk_str(c, k, strlen(k)), from_json(c, v, depth + 1));
        return d;
    }
    case JSON_ARRAY: {
        qt__jv *l = mk(c, JV_LIST);
        for (size_t i = 0; i < json_array_size(j); i++) list_push(c, l, from_json(c, json_array_get(j, i), depth + 1));
        return l;
    }
    case JSON_STRING: return mk_str(c, json_string_value(j), json_string_length(j));
    case JSON_INTEGER: return mk_int(c, (int64_t)json_integer_value(j));
    case JSON_REAL: return mk_float(c, json_real_value(j));
    case JSON_TRUE: return &V_TRUE;
    case JSON_FALSE: return &V_FALSE;
    default: return &V_NONE;
    }
}

/* ---- UTF-8 and Python's string rules ------------------------------------------------------ */
/* The code point at s[*i] (n bytes), advancing *i; an invalid byte is itself. */
static int32_t cp_next(const char *s, size_t n, size_t *i) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t r = utf8proc_iterate((const utf8proc_uint8_t *)s + *i, (utf8proc_ssize_t)(n - *i), &cp);
    if (r <= 0) {
        cp = (unsigned char)s[*i];
        r = 1;
    }
    *i += (size_t)r;
    return cp;
}
static size_t cp_count(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; k++) cp_next(s, n, &i);
    return k;
}
/* Python's str.isspace() */
static bool py_space(int32_t c) {
    return (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

static const char *kind_name(const qt__jv *v) {
    static const char *const names[] = {"undefined", "NoneType", "bool", "int", "float", "str", "list", "dict", "function"};
    return v->ns ? "namespace" : names[v->k];
}

/* ---- str() and repr() ------------------------------------------------------------------ */
static void put_float(ctx *c, sb *b, double f) {
    char buf[40];
    if (isnan(f)) snprintf(buf, sizeof buf, "nan");
    else if (isinf(f)) snprintf(buf, sizeof buf, f > 0 ? "inf" : "-inf");
    else {
        for (int prec = 1; prec <= 17; prec++) { /* the shortest that reads back, as Python's repr */
            snprintf(buf, sizeof buf, "%.*g", prec, f);
            if (strtod(buf, NULL) == f) break;
        }
        if (!strpbrk(buf, ".e")) strcat(buf, ".0");
    }
    sb_puts(c, b, buf);
}

static void put_value(ctx *c, sb *b, const qt__jv *v, bool repr);

static void put_repr_str(ctx *c, sb *b, const qt__jv *v) {
    const bool dq = memchr(v->s, '\'', v->n) && !memchr(v->s, '"', v->n);
    const char q = dq ? '"' : '\'';
    sb_add(c, b, &q, 1);
    for (size_t i = 0; i < v->n; i++) {
        const char ch = v->s[i];
        if (ch == q || ch == '\\') sb_add(c, b, "\\", 1), sb_add(c, b, &ch, 1);
        else if (ch == '\n') sb_puts(c, b, "\\n");
        else if (ch == '\t') sb_puts(c, b, "\\t");
        else if (ch == '\r') sb_puts(c, b, "\\r");
        else sb_add(c, b, &ch, 1);
    }
    sb_add(c, b, &q, 1);
}

static void put_value(ctx *c, sb *b, const qt__jv *v, bool repr) {
    char buf[32];
    switch (v->k) {
    case JV_UNDEF: break;
    case JV_NONE: sb_puts(c, b, "None"); break;
    case JV_BOOL: sb_puts(c, b, v->b ? "True" : "False"); break;
    case JV_INT: snprintf(buf, sizeof buf, "%lld", (long long)v->i); sb_puts(c, b, buf); break;
    case JV_FLOAT: put_float(c, b, v->f); break;
    case JV_STR: if (repr) put_repr_str(c, b, v); else sb_add(c, b, v->s, v->n); break;
    case JV_LIST:
        sb_puts(c, b, "[");
        for (size_t i = 0; i < v->n; i++) {
            if (i) sb_puts(c, b, ", ");
            put_value(c, b, v->items[i], true);
        }
        sb_puts(c, b, "]");
        break;
    case JV_DICT:
        sb_puts(c, b, v->ns ? "<Namespace {" : "{");
        for (size_t i = 0; i < v->n; i++) {
            if (i) sb_puts(c, b, ", ");
            put_repr_str(c, b, v->keys[i]);
            sb_puts(c, b, ": ");
            put_value(c, b, v->items[i], true);
        }
        sb_puts(c, b, v->ns ? "}>" : "}");
        break;
    case JV_FUNC: sb_puts(c, b, "<function>"); break;
    }
}

static qt__jv *to_str(ctx *c, qt__jv *v) {
    if (v->k == JV_STR) return v;
    sb b = {0};
    put_value(c, &b, v, false);
    return mk_sb(c, &b);
}

/* tojson: JSON.stringify's / json.dumps(ensure_ascii=False)'s text; indent > 0
 * puts each item on its own line (item separator ",", key separator ": "). */
static void put_json_str(ctx *c, sb *b, const char *s, size_t n) {
    sb_add(c, b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        const unsigned char ch = (unsigned char)s[i];
        char esc[8];
        switch (ch) {
        case '"': sb_puts(c, b, "\\\""); break;
        case '\\': sb_puts(c, b, "\\\\"); break;
        case '\n': sb_puts(c, b, "\\n"); break;
        case '\r': sb_puts(c, b, "\\r"); break;
        case '\t': sb_puts(c, b, "\\t"); break;
        case '\b': sb_puts(c, b, "\\b"); break;
        case '\f': sb_puts(c, b, "\\f"); break;
        default:
            if (ch < 0x20) snprintf(esc, sizeof esc, "\\u%04x", ch), sb_puts(c, b, esc);
            else sb_add(c, b, (const char *)&ch, 1);
        }
    }
    sb_add(c, b, "\"", 1);
}

static void put_json(ctx *c, sb *b, const qt__jnode *at, const qt__jv *v, int indent, int depth) {
    char buf[32];
    if (depth > 200) EFAIL(c, at, QT_ERR_RANGE, "tojson: nested deeper than 200 levels");
    switch (v->k) {
    case JV_UNDEF: case JV_NONE: sb_puts(c, b, "null"); return;
    case JV_BOOL: sb_puts(c, b, v->b ? "true" : "false"); return;
    case JV_INT: snprintf(buf, sizeof buf, "%lld", (long long)v->i); sb_puts(c, b, buf); return;
    case JV_FLOAT:
        if (!isfinite(v->f)) EFAIL(c, at, QT_ERR_ARG, "tojson: %s is not JSON", isnan(v->f) ? "NaN" : "Infinity");
        put_float(c, b, v->f);
        return;
    case JV_STR: put_json_str(c, b, v->s, v->n); return;
    case JV_FUNC: EFAIL(c, at, QT_ERR_ARG, "tojson: a function is not JSON");
    default: break;
    }
    const bool dict = v->k == JV_DICT;
    sb_puts(c, b, dict ? "{" : "[");
    for (size_t i = 0; i < v->n; i++) {
        if (i) sb_puts(c, b, indent > 0 ? "," : ", ");
        if (indent > 0) {
            sb_puts(c, b, "\n");
            for (int k = 0; k < indent * (depth + 1); k++) sb_puts(c, b, " ");
        }
        if (dict) {
            put_json_str(c, b, v->keys[i]->s, v->keys[i]->n);
            sb_puts(c, b, ": ");
        }
        put_json(c, b, at, v->items[i], indent, depth + 1);
    }
    if (indent > 0 && v->n) {
        sb_puts(c, b, "\n");
        for (int k = 0; k < indent * depth; k++) sb_puts(c, b, " ");
    }
    sb_puts(c, b, dict ? "}" : "]");
}

/* ---- comparisons ------------------------------------------------------------------------ */
static bool truthy(const qt__jv *v) {
    switch (v->k) {
    case JV_UNDEF: case JV_NONE: return false;
    case JV_BOOL: return v->b;
    case JV_INT: return v->i != 0;
    case JV_FLOAT: return v->f != 0;
    case JV_STR: case JV_LIST: case JV_DICT: return v->n != 0;
    default: return true;
    }
}
static bool is_num(const qt__jv *v) { return v->k == JV_BOOL || v->k == JV_INT || v->k == JV_FLOAT; }
static double num(const qt__jv *v) { return v->k == JV_FLOAT ? v->f : v->k == JV_INT ? (double)v->i : v->b; }
static int64_t inum(const qt__jv *v) { return v->k == JV_INT ? v->i : v->b; }

static bool equal(const qt__jv *a, const qt__jv *b) {
    if (is_num(a) && is_num(b)) return (a->k == JV_FLOAT || b->k == JV_FLOAT) ? num(a) == num(b) : inum(a) == inum(b);
    if (a->k != b->k) return false;
    switch (a->k) {
    case JV_STR: return a->n == b->n && !memcmp(a->s, b->s, a->n);
    case JV_LIST:
        if (a->n != b->n) return false;
        for (size_t i = 0; i < a->n; i++)
            if (!equal(a->items[i], b->items[i])) return false;
        return true;
    case JV_DICT:
        if (a->n != b->n) return false;
        for (size_t i = 0; i < a->n; i++) {
            qt__jv **o = dict_slot((qt__jv *)b, a->keys[i]->s, a->keys[i]->n);
            if (!o || !equal(a->items[i], *o)) return false;
        }
        return true;
    case JV_FUNC: return a->i == b->i && a->self == b->self;
    default: return true; /* undefined, none */
    }
}

/* <0, 0, >0; numbers with numbers, strings with strings (by code point, which
 * UTF-8's byte order is) */
static int order(ctx *c, const qt__jnode *at, const qt__jv *a, const qt__jv *b, const char *op) {
    if (is_num(a) && is_num(b)) return num(a) < num(b) ? -1 : num(a) > num(b);
    if (a->k == JV_STR && b->k == JV_STR) {
        int r = memcmp(a->s, b->s, a->n < b->n ? a->n : b->n);
        return r ? r : (a->n > b->n) - (a->n < b->n);
    }
    EFAIL(c, at, QT_ERR_ARG, "'%s' is not supported between '%s' and '%s'", op, kind_name(a), kind_name(b));
}

static bool contains(ctx *c, const qt__jnode *at, qt__jv *hay, qt__jv *x) {
    if (hay->k == JV_STR) {
        if (x->k != JV_STR) EFAIL(c, at, QT_ERR_ARG, "'in <string>' needs a string on the left, not '%s'", kind_name(x));
        if (!x->n) return true;
        for (size_t i = 0; i + x->n <= hay->n; i++)
            if (!memcmp(hay->s + i, x->s, x->n)) return true;
        return false;
    }
    if (hay->k == JV_LIST) {
        for (size_t i = 0; i < hay->n; i++)
            if (equal(hay->items[i], x)) return true;
        return false;
    }
    if (hay->k == JV_DICT) return x->k == JV_STR && dict_slot(hay, x->s, x->n);
    if (hay->k == JV_UNDEF) return false; /* Jinja2's Undefined iterates as empty */
    EFAIL(c, at, QT_ERR_ARG, "'in': a '%s' is not a container", kind_name(hay));
}

/* ---- the scope -------------------------------------------------------------------------- */
static qt__jv **lookup(ctx *c, const char *name) {
    for (frame *f = c->top; f; f = f->up)
        for (size_t i = f->n; i-- > 0;)
            if (!strcmp(f->names[i], name)) return &f->vals[i];
    return NULL;
}

static void assign(ctx *c, const char *name, qt__jv *v) {
    frame *f = c->top;
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->names[i], name)) {
            f->vals[i] = v;
            return;
        }
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 8;
        const char **names = qt__ja_alloc(&c->a, cap * sizeof *names);
        qt__jv **vals = qt__ja_alloc(&c->a, cap * sizeof *vals);
        if (f->n) memcpy(names, f->names, f->n * sizeof *names), memcpy(vals, f->vals, f->n * sizeof *vals);
        f->names = names, f->vals = vals, f->cap = cap;
    }
    f->names[f->n] = name;
    f->vals[f->n++] = v;
}

/* ---- functions, methods --------------------------------------------------------------------- */
enum {
    F_RAISE = 1, F_NAMESPACE, F_RANGE, F_STRFTIME, F_MACRO,
    M_STARTSWITH, M_ENDSWITH, M_STRIP, M_LSTRIP, M_RSTRIP, M_SPLIT, M_UPPER, M_LOWER, M_TITLE, M_CAPITALIZE,
    M_REPLACE, M_FIND, M_JOIN, M_ITEMS, M_KEYS, M_VALUES, M_GET,
};
static const struct { const char *name; int id; } globals[] = {
    {"raise_exception", F_RAISE}, {"namespace", F_NAMESPACE}, {"range", F_RANGE}, {"strftime_now", F_STRFTIME},
};
static const struct { const char *name; int id; } str_methods[] = {
    {"startswith", M_STARTSWITH}, {"endswith", M_ENDSWITH}, {"strip", M_STRIP}, {"lstrip", M_LSTRIP},
    {"rstrip", M_RSTRIP}, {"split", M_SPLIT}, {"upper", M_UPPER}, {"lower", M_LOWER}, {"title", M_TITLE},
    {"capitalize", M_CAPITALIZE}, {"replace", M_REPLACE}, {"find", M_FIND}, {"join", M_JOIN},
}, dict_methods[] = {{"items", M_ITEMS}, {"keys", M_KEYS}, {"values", M_VALUES}, {"get", M_GET}};

typedef struct args {
    const qt__jnode *at;
    qt__jv **pos;
    size_t npos;
    const char **kwn;
    qt__jv **kw;
    size_t nkw;
} args;

/* argument i by position, or by keyword */
static qt__jv *arg(const args *a, size_t i, const char *name) {
    if (i < a->npos) return a->pos[i];
    for (size_t k = 0; name && k < a->nkw; k++)
        if (!strcmp(a->kwn[k], name)) return a->kw[k];
    return NULL;
}
static qt__jv *arg_str(ctx *c, const args *a, size_t i, const char *name, const char *what) {
    qt__jv *v = arg(a, i, name);
    if (v && v->k != JV_STR && v->k != JV_NONE) EFAIL(c, a->at, QT_ERR_ARG, "%s: argument '%s' must be a string, not '%s'", what, name, kind_name(v));
    return v && v->k == JV_STR ? v : NULL;
}

/* strip(chars): chars NULL is Unicode whitespace */
static qt__jv *strip(ctx *c, qt__jv *s, const qt__jv *chars, bool left, bool right) {
    size_t b = 0, e = s->n;
    for (size_t i = b; left && i < e;) {
        size_t j = i;
        const int32_t cp = cp_next(s->s, e, &j);
        bool drop = chars ? false : py_space(cp);
        for (size_t k = 0; chars && k < chars->n && !drop;) drop = cp_next(chars->s, chars->n, &k) == cp;
        if (!drop) break;
        b = i = j;
    }
    while (right && e > b) {
        size_t i = e - 1;
        while (i > b && ((unsigned char)s->s[i] & 0xC0) == 0x80) i--;
        size_t j = i;
        const int32_t cp = cp_next(s->s, e, &j);
        bool drop = chars ? false : py_space(cp);
        for (size_t k = 0; chars && k < chars->n && !drop;) drop = cp_next(chars->s, chars->n, &k) == cp;
        if (!drop) break;
        e = i;
    }
    return b == 0 && e == s->n ? s : mk_str(c, s->s + b, e - b);
}

static qt__jv *split(ctx *c, qt__jv *s, const qt__jv *sep, int64_t maxsplit) {
    qt__jv *l = mk(c, JV_LIST);
    if (sep && !sep->n) EFAIL(c, &(qt__jnode){0}, QT_ERR_ARG, "split: empty separator");
    if (sep) {
        size_t b = 0;
        for (size_t i = 0; i + sep->n <= s->n && (maxsplit < 0 || (int64_t)l->n < maxsplit);) {
            if (!memcmp(s->s + i, sep->s, sep->n)) {
                list_push(c, l, mk_str(c, s->s + b, i - b));
                b = i += sep->n;
            } else i++;
        }
        list_push(c, l, mk_str(c, s->s + b, s->n - b));
        return l;
    }
    size_t i = 0;
    for (;;) { /* runs of whitespace, no empty pieces */
        size_t j = i;
        while (j < s->n) {
            size_t k = j;
            if (!py_space(cp_next(s->s, s->n, &k))) break;
            j = k;
        }
        if (j >= s->n) break;
        if (maxsplit >= 0 && (int64_t)l->n == maxsplit) {
            qt__jv rest = {.k = JV_STR, .s = s->s + j, .n = s->n - j};
            list_push(c, l, strip(c, &rest, NULL, false, true));
            break;
        }
        size_t e = j;
        while (e < s->n) {
            size_t k = e;
            if (py_space(cp_next(s->s, s->n, &k))) break;
            e = k;
        }
        list_push(c, l, mk_str(c, s->s + j, e - j));
        i = e;
    }
    return l;
}

/* upper / lower / title / capitalize by code point (utf8proc's simple case mapping) */
static qt__jv *recase(ctx *c, qt__jv *s, int how) {
    sb b = {0};
    bool word_start = true;
    for (size_t i = 0, k = 0; i < s->n; k++) {
        int32_t cp = cp_next(s->s, s->n, &i);
        const bool letter = utf8proc_category(cp) >= UTF8PROC_CATEGORY_LU && utf8proc_category(cp) <= UTF8PROC_CATEGORY_LO;
        if (how == M_UPPER) cp = utf8proc_toupper(cp);
        else if (how == M_LOWER) cp = utf8proc_tolower(cp);
        else if (how == M_CAPITALIZE) cp = k == 0 ? utf8proc_toupper(cp) : utf8proc_tolower(cp);
        else cp = word_start ? utf8proc_toupper(cp) : utf8proc_tolower(cp);
        if (how == M_TITLE) word_start = !letter;
        utf8proc_uint8_t buf[4];
        sb_add(c, &b, (const char *)buf, (size_t)utf8proc_encode_char(cp, buf));
    }
    return mk_sb(c, &b);
}

static qt__jv *replace(ctx *c, const qt__jnode *at, qt__jv *s, qt__jv *old, qt__jv *new, int64_t count) {
    if (!old || !new) EFAIL(c, at, QT_ERR_ARG, "replace needs two strings");
    sb b = {0};
    int64_t done = 0;
    size_t i = 0;
    if (!old->n) { /* Python: the new text between every character */
        for (; i < s->n && (count < 0 || done < count); done++) {
            sb_add(c, &b, new->s, new->n);
            size_t j = i;
            cp_next(s->s, s->n, &j);
            sb_add(c, &b, s->s + i, j - i);
            i = j;
        }
        if (i == s->n && (count < 0 || done < count)) sb_add(c, &b, new->s, new->n);
        sb_add(c, &b, s->s + i, s->n - i);
        return mk_sb(c, &b);
    }
    while (i < s->n) {
        if ((count < 0 || done < count) && i + old->n <= s->n && !memcmp(s->s + i, old->s, old->n)) {
            sb_add(c, &b, new->s, new->n);
            i += old->n, done++;
        } else sb_add(c, &b, s->s + i++, 1);
    }
    return mk_sb(c, &b);
}

static bool starts_or_ends(ctx *c, const args *a, qt__jv *s, bool ends) {
    qt__jv *p = arg(a, 0, NULL);
    if (!p) EFAIL(c, a->at, QT_ERR_ARG, "%s needs an argument", ends ? "endswith" : "startswith");
    const size_t n = p->k == JV_LIST ? p->n : 1;
    for (size_t i = 0; i < n; i++) {
        qt__jv *x = p->k == JV_LIST ? p->items[i] : p;
        if (x->k != JV_STR) EFAIL(c, a->at, QT_ERR_ARG, "%s: the prefix must be a string", ends ? "endswith" : "startswith");
        if (x->n <= s->n && !memcmp(s->s + (ends ? s->n - x->n : 0), x->s, x->n)) return true;
    }
    return false;
}

static qt__jv *strftime_now(ctx *c, const args *a) {
    qt__jv *fmt = arg_str(c, a, 0, "format", "strftime_now");
    if (!fmt) EFAIL(c, a->at, QT_ERR_ARG, "strftime_now needs a format string");
    const time_t t = (time_t)c->now;
    struct tm tm;
    if (!gmtime_r(&t, &tm)) EFAIL(c, a->at, QT_ERR_RANGE, "strftime_now: the time is out of range");
    char buf[256];
    const size_t n = strftime(buf, sizeof buf, fmt->s, &tm);
    if (!n && fmt->n) EFAIL(c, a->at, QT_ERR_ARG, "strftime_now: the format gives an empty or too long text");
    return mk_str(c, buf, n);
}

static qt__jv *list_items(ctx *c, qt__jv *d, int which) {
    qt__jv *l = mk(c, JV_LIST);
    for (size_t i = 0; i < d->n; i++) {
        if (which == M_KEYS) list_push(c, l, d->keys[i]);
        else if (which == M_VALUES) list_push(c, l, d->items[i]);
        else {
            qt__jv *pair = mk(c, JV_LIST);
            list_push(c, pair, d->keys[i]);
            list_push(c, pair, d->items[i]);
            list_push(c, l, pair);
        }
    }
    return l;
}

static qt__jv *join(ctx *c, const qt__jnode *at, qt__jv *seq, qt__jv *sep, const qt__jv *attr);

static void exec_list(ctx *c, const qt__jlist *l);
static qt__jv *eval(ctx *c, const qt__jnode *n);

/* A macro call: its parameters bound in a scope over the template's own, its body's output returned. */
static qt__jv *call_macro(ctx *c, const qt__jnode *at, const qt__jnode *m, const args *a) {
    if (a->npos > m->args.n) EFAIL(c, at, QT_ERR_ARG, "macro '%s' takes %zu arguments, %zu given", m->name, m->args.n, a->npos);
    if (++c->calls > MAX_CALLS) EFAIL(c, at, QT_ERR_RANGE, "macro calls nested deeper than %d", MAX_CALLS);
    for (size_t k = 0; k < a->nkw; k++) {
        bool known = false;
        for (size_t i = 0; i < m->args.n; i++) known = known || !strcmp(a->kwn[k], m->args.v[i]->name);
        if (!known) EFAIL(c, at, QT_ERR_ARG, "macro '%s' has no parameter '%s'", m->name, a->kwn[k]);
    }
    frame f = {.up = c->root}, *saved_top = c->top;
    sb b = {0}, *saved_out = c->out;
    const int saved_ctl = c->loopctl;
    c->top = &f;
    for (size_t i = 0; i < m->args.n; i++) {
        qt__jv *v = i < a->npos ? a->pos[i] : arg(a, SIZE_MAX, m->args.v[i]->name);
        if (!v) v = m->kwargs.v[i] ? eval(c, m->kwargs.v[i]) : &V_UNDEF;
        assign(c, m->args.v[i]->name, v);
    }
    c->out = &b;
    c->loopctl = 0;
    exec_list(c, &m->body);
    c->out = saved_out, c->top = saved_top, c->loopctl = saved_ctl;
    c->calls--;
    return mk_sb(c, &b);
}

static qt__jv *call(ctx *c, const qt__jnode *at, qt__jv *f, const args *a) {
    qt__jv *self = f->self;
    switch ((int)f->i) {
    case F_MACRO: return call_macro(c, at, f->macro, a);
    case F_RAISE: {
        qt__jv *m = arg(a, 0, NULL);
        EFAIL(c, at, QT_ERR_ARG, "raise_exception: %s", m ? to_str(c, m)->s : "");
    }
    case F_NAMESPACE: {
        qt__jv *d = mk(c, JV_DICT);
        d->ns = true;
        for (size_t k = 0; k < a->nkw; k++) dict_setc(c, d, a->kwn[k], a->kw[k]);
        if (a->npos && a->pos[0]->k == JV_DICT)
            for (size_t k = 0; k < a->pos[0]->n; k++) dict_set(c, d, a->pos[0]->keys[k], a->pos[0]->items[k]);
        return d;
    }
    case F_RANGE: {
        int64_t v[3] = {0, 0, 1};
        if (a->npos < 1 || a->npos > 3) EFAIL(c, at, QT_ERR_ARG, "range takes 1 to 3 integers");
        for (size_t k = 0; k < a->npos; k++) {
            if (a->pos[k]->k != JV_INT && a->pos[k]->k != JV_BOOL) EFAIL(c, at, QT_ERR_ARG, "range takes integers");
            v[a->npos == 1 ? 1 : k] = inum(a->pos[k]);
        }
        if (!v[2]) EFAIL(c, at, QT_ERR_ARG, "range: the step is 0");
        /* exactly: the distance as an unsigned number, whatever the bounds */
        const bool up = v[2] > 0, any = up ? v[0] < v[1] : v[0] > v[1];
        const uint64_t dist = !any ? 0 : up ? (uint64_t)v[1] - (uint64_t)v[0] : (uint64_t)v[0] - (uint64_t)v[1];
        const uint64_t st = up ? (uint64_t)v[2] : (uint64_t)0 - (uint64_t)v[2];
        const uint64_t count = dist ? (dist - 1) / st + 1 : 0;
        if (count > MAX_RANGE) EFAIL(c, at, QT_ERR_RANGE, "range of more than %d items", MAX_RANGE);
        qt__jv *l = mk(c, JV_LIST);
        for (uint64_t k = 0; k < count; k++) list_push(c, l, mk_int(c, (int64_t)((uint64_t)v[0] + k * (uint64_t)v[2])));
        return l;
    }
    case F_STRFTIME: return strftime_now(c, a);
    case M_STARTSWITH: case M_ENDSWITH: return mk_bool(starts_or_ends(c, a, self, f->i == M_ENDSWITH));
    case M_STRIP: case M_LSTRIP: case M_RSTRIP:
        return strip(c, self, arg_str(c, a, 0, "chars", "strip"), f->i != M_RSTRIP, f->i != M_LSTRIP);
    case M_SPLIT: {
        qt__jv *ms = arg(a, 1, "maxsplit");
        return split(c, self, arg_str(c, a, 0, "sep", "split"), ms && ms->k == JV_INT ? ms->i : -1);
    }
    case M_UPPER: case M_LOWER: case M_TITLE: case M_CAPITALIZE: return recase(c, self, (int)f->i);
    case M_REPLACE: {
        qt__jv *cnt = arg(a, 2, "count");
        return replace(c, at, self, arg_str(c, a, 0, "old", "replace"), arg_str(c, a, 1, "new", "replace"),
                       cnt && cnt->k == JV_INT ? cnt->i : -1);
    }
    case M_FIND: {
        qt__jv *x = arg_str(c, a, 0, "sub", "find");
        if (!x) EFAIL(c, at, QT_ERR_ARG, "find needs a string");
        for (size_t i = 0; i + x->n <= self->n; i++)
            if (!memcmp(self->s + i, x->s, x->n)) return mk_int(c, (int64_t)cp_count(self->s, i));
        return mk_int(c, -1);
    }
    case M_JOIN: {
        qt__jv *seq = arg(a, 0, NULL);
        if (!seq) EFAIL(c, at, QT_ERR_ARG, "join needs a list");
        return join(c, at, seq, self, NULL);
    }
    case M_ITEMS: case M_KEYS: case M_VALUES: return list_items(c, self, (int)f->i);
    case M_GET: {
        qt__jv *k = arg(a, 0, "key"), *d = arg(a, 1, "default");
        qt__jv **slot = k && k->k == JV_STR ? dict_slot(self, k->s, k->n) : NULL;
        return slot ? *slot : d ? d : &V_NONE;
    }
    default: EFAIL(c, at, QT_ERR_INTERNAL, "unknown function");
    }
}

/* ---- attributes, subscripts ------------------------------------------------------------------ */
static qt__jv *method(ctx *c, qt__jv *obj, const char *name) {
    if (obj->k == JV_STR)
        for (size_t k = 0; k < sizeof str_methods / sizeof *str_methods; k++)
            if (!strcmp(name, str_methods[k].name)) return mk_func(c, str_methods[k].id, obj);
    if (obj->k == JV_DICT && !obj->ns)
        for (size_t k = 0; k < sizeof dict_methods / sizeof *dict_methods; k++)
            if (!strcmp(name, dict_methods[k].name)) return mk_func(c, dict_methods[k].id, obj);
    return &V_UNDEF;
}

static const char *describe(const qt__jnode *n) { return n->k == JN_NAME ? n->name : n->k == JN_ATTR ? n->name : "the value"; }

static qt__jv *getattr(ctx *c, const qt__jnode *at, qt__jv *obj, const char *name) {
    if (obj->k == JV_UNDEF) EFAIL(c, at, QT_ERR_ARG, "'%s' is undefined (reading its attribute '%s')", describe(at->a), name);
    if (obj->k == JV_DICT) {
        qt__jv **slot = dict_slot(obj, name, strlen(name));
        if (slot) return *slot;
    }
    return method(c, obj, name);
}

/* Python's index: negative counts from the end; false when out of range */
static bool py_index(int64_t i, size_t n, size_t *out) {
    if (i < 0) i += (int64_t)n;
    if (i < 0 || (uint64_t)i >= n) return false;
    *out = (size_t)i;
    return true;
}

/* the code point offsets of a string: offs[k] is where code point k starts, offs[n] = bytes */
static size_t *cp_offsets(ctx *c, const qt__jv *s, size_t *n) {
    size_t cnt = cp_count(s->s, s->n), *offs = qt__ja_alloc(&c->a, (cnt + 1) * sizeof *offs);
    for (size_t i = 0, k = 0; i < s->n; k++) {
        offs[k] = i;
        cp_next(s->s, s->n, &i);
    }
    offs[cnt] = s->n;
    *n = cnt;
    return offs;
}

static qt__jv *getitem(ctx *c, const qt__jnode *at, qt__jv *obj, qt__jv *key) {
    if (obj->k == JV_UNDEF) EFAIL(c, at, QT_ERR_ARG, "'%s' is undefined (reading an item)", describe(at->a));
    size_t i;
    if (obj->k == JV_DICT) {
        if (key->k != JV_STR) return &V_UNDEF;
        qt__jv **slot = dict_slot(obj, key->s, key->n);
        return slot ? *slot : &V_UNDEF;
    }
    if ((obj->k == JV_LIST || obj->k == JV_STR) && (key->k == JV_INT || key->k == JV_BOOL)) {
        if (obj->k == JV_LIST) return py_index(inum(key), obj->n, &i) ? obj->items[i] : &V_UNDEF;
        size_t n, *offs = cp_offsets(c, obj, &n);
        return py_index(inum(key), n, &i) ? mk_str(c, obj->s + offs[i], offs[i + 1] - offs[i]) : &V_UNDEF;
    }
    if (key->k == JV_STR) return getattr(c, at, obj, key->s); /* x['upper'] is x.upper, as Jinja2's subscript falls back */
    return &V_UNDEF;
}

/* Python's slice.indices() */
static void slice_bounds(ctx *c, const qt__jnode *at, qt__jv *lo, qt__jv *hi, qt__jv *st, size_t n, int64_t *b,
                         int64_t *e, int64_t *step) {
    const qt__jv *v[3] = {lo, hi, st};
    for (int k = 0; k < 3; k++)
        if (v[k] && v[k]->k != JV_NONE && v[k]->k != JV_INT && v[k]->k != JV_BOOL)
            EFAIL(c, at, QT_ERR_ARG, "slice bounds must be integers, not '%s'", kind_name(v[k]));
    *step = st && st->k != JV_NONE ? inum(st) : 1;
    if (!*step) EFAIL(c, at, QT_ERR_ARG, "slice step cannot be zero");
    const int64_t len = (int64_t)n;
    const int64_t lower = *step < 0 ? -1 : 0, upper = *step < 0 ? len - 1 : len;
    int64_t x[2];
    for (int k = 0; k < 2; k++) {
        const qt__jv *bv = k ? hi : lo;
        if (!bv || bv->k == JV_NONE) {
            x[k] = (*step < 0) == (k == 0) ? upper : lower;
            continue;
        }
        int64_t t = inum(bv);
        if (t < 0) t += len;
        x[k] = t < lower ? lower : t > upper ? upper : t;
    }
    *b = x[0], *e = x[1];
}

static qt__jv *slice(ctx *c, const qt__jnode *at, qt__jv *obj, qt__jv *lo, qt__jv *hi, qt__jv *st) {
    if (obj->k != JV_LIST && obj->k != JV_STR) EFAIL(c, at, QT_ERR_ARG, "a '%s' cannot be sliced", kind_name(obj));
    size_t n = obj->n, *offs = NULL;
    if (obj->k == JV_STR) offs = cp_offsets(c, obj, &n);
    int64_t b, e, step;
    slice_bounds(c, at, lo, hi, st, n, &b, &e, &step);
    if (obj->k == JV_STR && step == 1) return mk_str(c, obj->s + offs[b], b < e ? offs[e] - offs[b] : 0);
    qt__jv *l = mk(c, JV_LIST);
    sb s = {0};
    for (int64_t i = b; step > 0 ? i < e : i > e; i += step) {
        if (obj->k == JV_LIST) list_push(c, l, obj->items[i]);
        else sb_add(c, &s, obj->s + offs[i], offs[i + 1] - offs[i]);
    }
    return obj->k == JV_LIST ? l : mk_sb(c, &s);
}

/* ---- iteration -------------------------------------------------------------------------------- */
/* the items a for loop (or a filter) walks: list items, dict keys, string characters */
static qt__jv *iter_list(ctx *c, const qt__jnode *at, qt__jv *v) {
    if (v->k == JV_LIST) return v;
    if (v->k == JV_UNDEF) return mk(c, JV_LIST);
    if (v->k == JV_DICT) return list_items(c, v, M_KEYS);
    if (v->k == JV_STR) {
        size_t n, *offs = cp_offsets(c, v, &n);
        qt__jv *l = mk(c, JV_LIST);
        for (size_t i = 0; i < n; i++) list_push(c, l, mk_str(c, v->s + offs[i], offs[i + 1] - offs[i]));
        return l;
    }
    EFAIL(c, at, QT_ERR_ARG, "a '%s' is not iterable", kind_name(v));
}

/* ---- tests and filters --------------------------------------------------------------------------- */
static qt__jv *eval(ctx *c, const qt__jnode *n);

static bool run_test(ctx *c, const qt__jnode *at, const char *name, qt__jv *v, qt__jv *x) {
    if (!strcmp(name, "defined")) return v->k != JV_UNDEF;
    if (!strcmp(name, "undefined")) return v->k == JV_UNDEF;
    if (!strcmp(name, "none")) return v->k == JV_NONE;
    if (!strcmp(name, "string")) return v->k == JV_STR;
    if (!strcmp(name, "number")) return v->k == JV_INT || v->k == JV_FLOAT;
    if (!strcmp(name, "integer")) return v->k == JV_INT;
    if (!strcmp(name, "float")) return v->k == JV_FLOAT;
    if (!strcmp(name, "boolean")) return v->k == JV_BOOL;
    if (!strcmp(name, "true")) return v->k == JV_BOOL && v->b;
    if (!strcmp(name, "false")) return v->k == JV_BOOL && !v->b;
    if (!strcmp(name, "mapping")) return v->k == JV_DICT;
    if (!strcmp(name, "iterable")) return v->k == JV_LIST || v->k == JV_DICT || v->k == JV_STR;
    if (!strcmp(name, "sequence")) return v->k == JV_LIST || v->k == JV_DICT || v->k == JV_STR;
    if (!strcmp(name, "callable")) return v->k == JV_FUNC;
    if (!strcmp(name, "lower") || !strcmp(name, "upper")) {
        if (v->k != JV_STR) return false;
        qt__jv *r = recase(c, v, name[0] == 'l' ? M_LOWER : M_UPPER);
        return equal(r, v);
    }
    if (!strcmp(name, "odd") || !strcmp(name, "even") || !strcmp(name, "divisibleby")) {
        if (v->k != JV_INT && v->k != JV_BOOL) EFAIL(c, at, QT_ERR_ARG, "the test '%s' needs an integer", name);
        int64_t d = name[0] == 'd' ? (x && (x->k == JV_INT || x->k == JV_BOOL) ? inum(x) : 0) : 2;
        if (!d) EFAIL(c, at, QT_ERR_ARG, "divisibleby needs a non-zero integer");
        const int64_t r = d == -1 ? 0 : inum(v) % d;
        return name[0] == 'o' ? r != 0 : r == 0;
    }
    if (!x) EFAIL(c, at, QT_ERR_ARG, "the test '%s' needs an argument", name);
    if (!strcmp(name, "in")) return contains(c, at, x, v);
    if (!strcmp(name, "equalto") || !strcmp(name, "eq") || !strcmp(name, "==") || !strcmp(name, "sameas")) return equal(v, x);
    if (!strcmp(name, "ne") || !strcmp(name, "!=")) return !equal(v, x);
    const int o = order(c, at, v, x, name);
    if (!strcmp(name, "lt") || !strcmp(name, "<") || !strcmp(name, "lessthan")) return o < 0;
    if (!strcmp(name, "le") || !strcmp(name, "<=")) return o <= 0;
    if (!strcmp(name, "gt") || !strcmp(name, ">") || !strcmp(name, "greaterthan")) return o > 0;
    return o >= 0; /* ge >= */
}

static const char *const test_names[] = {
    "defined", "undefined", "none", "string", "number", "integer", "float", "boolean", "true", "false", "mapping",
    "iterable", "sequence", "callable", "lower", "upper", "odd", "even", "divisibleby", "in", "equalto", "eq", "==",
    "sameas", "ne", "!=", "lt", "<", "lessthan", "le", "<=", "gt", ">", "greaterthan", "ge", ">=", NULL};

bool qt__jinja_has_test(const char *name) {
    for (size_t k = 0; test_names[k]; k++)
        if (!strcmp(name, test_names[k])) return true;
    return false;
}

static qt__jv *join(ctx *c, const qt__jnode *at, qt__jv *seq, qt__jv *sep, const qt__jv *attr) {
    qt__jv *l = iter_list(c, at, seq);
    sb b = {0};
    for (size_t i = 0; i < l->n; i++) {
        if (i && sep) sb_add(c, &b, sep->s, sep->n);
        qt__jv *x = attr ? getattr(c, at, l->items[i], attr->s) : l->items[i];
        put_value(c, &b, x, false);
    }
    return mk_sb(c, &b);
}

static qt__jv *apply_filter(ctx *c, const qt__jnode *at, const char *name, qt__jv *v, const args *a);

/* selectattr / rejectattr / select / reject */
static qt__jv *select_items(ctx *c, const qt__jnode *at, qt__jv *v, const args *a, bool attr, bool keep) {
    qt__jv *l = iter_list(c, at, v), *out = mk(c, JV_LIST);
    qt__jv *an = attr ? arg_str(c, a, 0, "attribute", "selectattr") : NULL;
    if (attr && !an) EFAIL(c, at, QT_ERR_ARG, "selectattr needs an attribute name");
    qt__jv *tn = arg_str(c, a, attr, NULL, "select");
    if (tn && !qt__jinja_has_test(tn->s)) EFAIL(c, at, QT_ERR_UNSUPPORTED, "the test '%s' is not supported", tn->s);
    qt__jv *x = arg(a, attr + 1, NULL);
    for (size_t i = 0; i < l->n; i++) {
        qt__jv *item = attr ? getattr(c, at, l->items[i], an->s) : l->items[i];
        const bool ok = tn ? run_test(c, at, tn->s, item, x) : truthy(item);
        if (ok == keep) list_push(c, out, l->items[i]);
    }
    return out;
}

typedef struct sort_item { qt__jv *key, *v; size_t i; } sort_item;


/* sort(reverse, case_sensitive, attribute) and dictsort(case_sensitive, by, reverse): Jinja2's, stable,
 * strings compared lower-cased unless case_sensitive */
static qt__jv *sort_list(ctx *c, const qt__jnode *at, qt__jv *v, const args *a, bool dict) {
    qt__jv *l = dict ? list_items(c, v, M_ITEMS) : iter_list(c, at, v);
    qt__jv *rev = dict ? arg(a, 2, "reverse") : arg(a, 0, "reverse"), *cs = dict ? arg(a, 0, "case_sensitive") : arg(a, 1, "case_sensitive");
    qt__jv *attr = dict ? NULL : arg_str(c, a, 2, "attribute", "sort"), *by = dict ? arg_str(c, a, 1, "by", "dictsort") : NULL;
    const bool by_value = by && by->n == 5 && !memcmp(by->s, "value", 5);
    const size_t n = l->n;
    sort_item *it = qt__ja_alloc(&c->a, (n + 1) * sizeof *it);
    for (size_t i = 0; i < n; i++) {
        qt__jv *key = dict ? l->items[i]->items[by_value] : attr ? getattr(c, at, l->items[i], attr->s) : l->items[i];
        if (key->k == JV_STR && !(cs && truthy(cs))) key = recase(c, key, M_LOWER);
        it[i] = (sort_item){key, l->items[i], i};
    }
    const bool r = rev && truthy(rev);
    for (size_t i = 1; i < n; i++) { /* insertion sort: stable, and templates sort a handful of items */
        sort_item x = it[i];
        size_t j = i;
        while (j > 0) {
            int o = order(c, at, it[j - 1].key, x.key, "sort");
            if (r ? o >= 0 : o <= 0) break;
            it[j] = it[j - 1], j--;
        }
        it[j] = x;
    }
    qt__jv *out = mk(c, JV_LIST);
    for (size_t i = 0; i < n; i++) list_push(c, out, it[i].v);
    return out;
}

static const char *const filter_names[] = {
    "trim", "tojson", "length", "count", "default", "d", "upper", "lower", "capitalize", "title", "replace",
    "string", "int", "float", "list", "first", "last", "join", "selectattr", "rejectattr", "select", "reject",
    "map", "items", "reverse", "sort", "dictsort", "abs", "safe", "unique", NULL};

bool qt__jinja_has_filter(const char *name) {
    for (size_t k = 0; filter_names[k]; k++)
        if (!strcmp(name, filter_names[k])) return true;
    return false;
}

static qt__jv *need_str(ctx *c, const qt__jnode *at, qt__jv *v, const char *filter) {
    if (v->k != JV_STR) EFAIL(c, at, QT_ERR_ARG, "the filter '%s' needs a string, not '%s'", filter, kind_name(v));
    return v;
}

static qt__jv *apply_filter(ctx *c, const qt__jnode *at, const char *name, qt__jv *v, const args *a) {
    if (!strcmp(name, "trim")) return strip(c, need_str(c, at, v, name), arg_str(c, a, 0, "chars", "trim"), true, true);
    if (!strcmp(name, "tojson")) {
        qt__jv *ind = arg(a, 0, "indent");
        sb b = {0};
        put_json(c, &b, at, v, ind && ind->k == JV_INT ? (int)(ind->i > 64 ? 64 : ind->i) : 0, 0);
        return mk_sb(c, &b);
    }
    if (!strcmp(name, "length") || !strcmp(name, "count")) {
        if (v->k == JV_STR) return mk_int(c, (int64_t)cp_count(v->s, v->n));
        if (v->k == JV_LIST || v->k == JV_DICT) return mk_int(c, (int64_t)v->n);
        if (v->k == JV_UNDEF) return mk_int(c, 0);
        EFAIL(c, at, QT_ERR_ARG, "a '%s' has no length", kind_name(v));
    }
    if (!strcmp(name, "default") || !strcmp(name, "d")) {
        qt__jv *dv = arg(a, 0, "default_value"), *boolean = arg(a, 1, "boolean");
        const bool use = v->k == JV_UNDEF || (boolean && truthy(boolean) && !truthy(v));
        return use ? (dv ? dv : mk_str(c, "", 0)) : v;
    }
    if (!strcmp(name, "upper") || !strcmp(name, "lower") || !strcmp(name, "capitalize") || !strcmp(name, "title")) {
        const int how = name[0] == 'u' ? M_UPPER : name[0] == 'l' ? M_LOWER : name[0] == 'c' ? M_CAPITALIZE : M_TITLE;
        return recase(c, to_str(c, v), how);
    }
    if (!strcmp(name, "replace")) {
        qt__jv *cnt = arg(a, 2, "count");
        return replace(c, at, to_str(c, v), arg_str(c, a, 0, "old", name), arg_str(c, a, 1, "new", name),
                       cnt && cnt->k == JV_INT ? cnt->i : -1);
    }
    if (!strcmp(name, "string")) return to_str(c, v);
    if (!strcmp(name, "safe")) return v;
    if (!strcmp(name, "int") || !strcmp(name, "float")) {
        double d = 0;
        if (is_num(v)) d = num(v);
        else if (v->k == JV_STR) {
            char *end;
            const char *s = qt__ja_strndup(&c->a, v->s, v->n);
            d = strtod(s, &end);
            if (end == s) d = 0;
        }
        if (name[0] == 'f') return mk_float(c, d);
        return v->k == JV_INT ? v : mk_int(c, isfinite(d) && fabs(d) < 9.2e18 ? (int64_t)d : 0);
    }
    if (!strcmp(name, "list")) return iter_list(c, at, v);
    if (!strcmp(name, "first") || !strcmp(name, "last")) {
        qt__jv *l = iter_list(c, at, v);
        return l->n ? l->items[name[0] == 'f' ? 0 : l->n - 1] : &V_UNDEF;
    }
    if (!strcmp(name, "join")) return join(c, at, v, arg_str(c, a, 0, "d", name), arg_str(c, a, 1, "attribute", name));
    if (!strcmp(name, "selectattr") || !strcmp(name, "rejectattr")) return select_items(c, at, v, a, true, name[0] == 's');
    if (!strcmp(name, "select") || !strcmp(name, "reject")) return select_items(c, at, v, a, false, name[2] == 'l');
    if (!strcmp(name, "map")) {
        qt__jv *l = iter_list(c, at, v), *out = mk(c, JV_LIST), *attr = arg_str(c, a, SIZE_MAX, "attribute", name);
        qt__jv *fn = attr ? NULL : arg_str(c, a, 0, NULL, name);
        if (!attr && !fn) EFAIL(c, at, QT_ERR_ARG, "map needs attribute= or a filter name");
        if (fn && !qt__jinja_has_filter(fn->s)) EFAIL(c, at, QT_ERR_UNSUPPORTED, "the filter '%s' is not supported", fn->s);
        args rest = {at, a->pos + (a->npos > 0), a->npos ? a->npos - 1 : 0, NULL, NULL, 0};
        for (size_t i = 0; i < l->n; i++)
            list_push(c, out, attr ? getattr(c, at, l->items[i], attr->s) : apply_filter(c, at, fn->s, l->items[i], &rest));
        return out;
    }
    if (!strcmp(name, "items")) {
        if (v->k != JV_DICT) EFAIL(c, at, QT_ERR_ARG, "items needs a mapping, not '%s'", kind_name(v));
        return list_items(c, v, M_ITEMS);
    }
    if (!strcmp(name, "reverse")) {
        qt__jv none = {.k = JV_NONE}, step = {.k = JV_INT, .i = -1};
        return slice(c, at, v->k == JV_STR ? v : iter_list(c, at, v), &none, &none, &step);
    }
    if (!strcmp(name, "sort")) return sort_list(c, at, v, a, false);
    if (!strcmp(name, "dictsort")) {
        if (v->k != JV_DICT) EFAIL(c, at, QT_ERR_ARG, "dictsort needs a mapping, not '%s'", kind_name(v));
        return sort_list(c, at, v, a, true);
    }
    if (!strcmp(name, "unique")) {
        qt__jv *l = iter_list(c, at, v), *out = mk(c, JV_LIST);
        for (size_t i = 0; i < l->n; i++)
            if (!contains(c, at, out, l->items[i])) list_push(c, out, l->items[i]);
        return out;
    }
    /* abs */
    if (v->k == JV_INT) return mk_int(c, v->i < 0 ? -v->i : v->i);
    if (v->k == JV_FLOAT) return mk_float(c, fabs(v->f));
    EFAIL(c, at, QT_ERR_ARG, "abs needs a number, not '%s'", kind_name(v));
}

/* ---- expressions ---------------------------------------------------------------------------------- */
static void step(ctx *c, const qt__jnode *n) {
    if (++c->steps > MAX_STEPS) EFAIL(c, n, QT_ERR_RANGE, "the limit of %d evaluation steps was reached (a runaway template?)", MAX_STEPS);
}

static args eval_args(ctx *c, const qt__jnode *n) {
    args a = {.at = n, .npos = n->args.n, .nkw = n->kwargs.n, .kwn = n->kwnames};
    a.pos = qt__ja_alloc(&c->a, (a.npos + 1) * sizeof *a.pos);
    a.kw = qt__ja_alloc(&c->a, (a.nkw + 1) * sizeof *a.kw);
    for (size_t i = 0; i < a.npos; i++) a.pos[i] = eval(c, n->args.v[i]);
    for (size_t i = 0; i < a.nkw; i++) a.kw[i] = eval(c, n->kwargs.v[i]);
    return a;
}

static qt__jv *arith(ctx *c, const qt__jnode *n, const char *op, qt__jv *l, qt__jv *r) {
    if (!strcmp(op, "~")) {
        sb b = {0};
        put_value(c, &b, l, false);
        put_value(c, &b, r, false);
        return mk_sb(c, &b);
    }
    if (op[0] == '+' && l->k == r->k && (l->k == JV_STR || l->k == JV_LIST)) {
        if (l->k == JV_STR) {
            sb b = {0};
            sb_add(c, &b, l->s, l->n);
            sb_add(c, &b, r->s, r->n);
            return mk_sb(c, &b);
        }
        qt__jv *out = mk(c, JV_LIST);
        for (size_t i = 0; i < l->n; i++) list_push(c, out, l->items[i]);
        for (size_t i = 0; i < r->n; i++) list_push(c, out, r->items[i]);
        return out;
    }
    if (op[0] == '*' && !op[1] && (l->k == JV_STR || l->k == JV_LIST) && (r->k == JV_INT || r->k == JV_BOOL)) {
        const int64_t times = inum(r);
        if (times > 0 && (double)times * (double)(l->n + 1) > (double)MAX_OUTPUT) EFAIL(c, n, QT_ERR_RANGE, "'*' makes too large a value");
        sb b = {0};
        qt__jv *out = mk(c, JV_LIST);
        for (int64_t k = 0; k < times; k++) {
            if (l->k == JV_STR) sb_add(c, &b, l->s, l->n);
            else for (size_t i = 0; i < l->n; i++) list_push(c, out, l->items[i]);
        }
        return l->k == JV_STR ? mk_sb(c, &b) : out;
    }
    if (!is_num(l) || !is_num(r))
        EFAIL(c, n, QT_ERR_ARG, "unsupported operand types for %s: '%s' and '%s'", op, kind_name(l), kind_name(r));
    const bool ints = l->k != JV_FLOAT && r->k != JV_FLOAT;
    const double x = num(l), y = num(r);
    if (op[0] == '/' || op[0] == '%') {
        if (y == 0) EFAIL(c, n, QT_ERR_ARG, "division by zero");
        if (op[0] == '/' && !op[1]) return mk_float(c, x / y);
        if (ints) {
            const int64_t a = inum(l), b = inum(r);
            if (a == INT64_MIN && b == -1) EFAIL(c, n, QT_ERR_RANGE, "integer overflow in '%s'", op);
            int64_t q = a / b, m = a % b;
            if (m && ((m < 0) != (b < 0))) q--, m += b; /* Python floors */
            return mk_int(c, op[0] == '%' ? m : q);
        }
        const double m = fmod(x, y), fm = m && ((m < 0) != (y < 0)) ? m + y : m;
        return mk_float(c, op[0] == '%' ? fm : floor(x / y));
    }
    if (op[0] == '*' && op[1]) {
        if (ints && inum(r) >= 0) {
            const int64_t base = inum(l), e = inum(r);
            if (base == 0 || base == 1) return mk_int(c, e == 0 ? 1 : base);
            if (base == -1) return mk_int(c, e % 2 ? -1 : 1);
            int64_t res = 1; /* |base| >= 2: at most 63 steps before an overflow */
            for (int64_t k = 0; k < e; k++)
                if (__builtin_mul_overflow(res, base, &res)) EFAIL(c, n, QT_ERR_RANGE, "integer overflow in '**'");
            return mk_int(c, res);
        }
        return mk_float(c, pow(x, y));
    }
    if (ints) { /* Python's integers are unbounded; quanta's are 64-bit and say so when that is not enough */
        const int64_t a = inum(l), b = inum(r);
        int64_t res;
        const bool over = op[0] == '+' ? __builtin_add_overflow(a, b, &res) : op[0] == '-' ? __builtin_sub_overflow(a, b, &res)
                                                                                         : __builtin_mul_overflow(a, b, &res);
        if (over) EFAIL(c, n, QT_ERR_RANGE, "integer overflow in '%s'", op);
        return mk_int(c, res);
    }
    return mk_float(c, op[0] == '+' ? x + y : op[0] == '-' ? x - y : x * y);
}

static qt__jv *binary(ctx *c, const qt__jnode *n) {
    qt__jv *l = eval(c, n->a), *r = eval(c, n->b);
    const char *op = n->name;
    if (!strcmp(op, "==")) return mk_bool(equal(l, r));
    if (!strcmp(op, "!=")) return mk_bool(!equal(l, r));
    if (!strcmp(op, "in")) return mk_bool(contains(c, n, r, l));
    if (!strcmp(op, "not in")) return mk_bool(!contains(c, n, r, l));
    if (op[0] == '<' || op[0] == '>') {
        const int o = order(c, n, l, r, op);
        return mk_bool(op[0] == '<' ? (op[1] ? o <= 0 : o < 0) : (op[1] ? o >= 0 : o > 0));
    }
    return arith(c, n, op, l, r);
}

static qt__jv *eval(ctx *c, const qt__jnode *n) {
    step(c, n);
    switch ((qt__jn_kind)n->k) {
    case JN_LIT: return n->lit;
    case JN_NAME: {
        qt__jv **slot = lookup(c, n->name);
        if (slot) return *slot;
        for (size_t k = 0; k < sizeof globals / sizeof *globals; k++)
            if (!strcmp(n->name, globals[k].name)) return mk_func(c, globals[k].id, NULL);
        return &V_UNDEF;
    }
    case JN_ATTR: return getattr(c, n, eval(c, n->a), n->name);
    case JN_INDEX: return getitem(c, n, eval(c, n->a), eval(c, n->b));
    case JN_SLICE: {
        qt__jv *obj = eval(c, n->a);
        return slice(c, n, obj, n->b ? eval(c, n->b) : NULL, n->c ? eval(c, n->c) : NULL, n->d ? eval(c, n->d) : NULL);
    }
    case JN_CALL: {
        qt__jv *f = eval(c, n->a);
        if (f->k != JV_FUNC) EFAIL(c, n, QT_ERR_ARG, "'%s' is not callable (%s)", describe(n->a), kind_name(f));
        args a = eval_args(c, n);
        return call(c, n, f, &a);
    }
    case JN_FILTER: {
        qt__jv *v = eval(c, n->a);
        args a = eval_args(c, n);
        return apply_filter(c, n, n->name, v, &a);
    }
    case JN_TEST: {
        qt__jv *v = eval(c, n->a);
        args a = eval_args(c, n);
        return mk_bool(run_test(c, n, n->name, v, arg(&a, 0, NULL)) != n->neg);
    }
    case JN_NOT: return mk_bool(!truthy(eval(c, n->a)));
    case JN_NEG: case JN_POS: {
        qt__jv *v = eval(c, n->a);
        if (!is_num(v)) EFAIL(c, n, QT_ERR_ARG, "bad operand type for unary %c: '%s'", n->k == JN_NEG ? '-' : '+', kind_name(v));
        if (n->k == JN_POS) return v->k == JV_BOOL ? mk_int(c, v->b) : v;
        if (v->k != JV_FLOAT && inum(v) == INT64_MIN) EFAIL(c, n, QT_ERR_RANGE, "integer overflow in unary '-'");
        return v->k == JV_FLOAT ? mk_float(c, -v->f) : mk_int(c, -inum(v));
    }
    case JN_BIN: return binary(c, n);
    case JN_AND: {
        qt__jv *l = eval(c, n->a);
        return truthy(l) ? eval(c, n->b) : l;
    }
    case JN_OR: {
        qt__jv *l = eval(c, n->a);
        return truthy(l) ? l : eval(c, n->b);
    }
    case JN_COND: return truthy(eval(c, n->a)) ? eval(c, n->b) : n->c ? eval(c, n->c) : &V_UNDEF;
    case JN_LIST: {
        qt__jv *l = mk(c, JV_LIST);
        for (size_t i = 0; i < n->args.n; i++) list_push(c, l, eval(c, n->args.v[i]));
        return l;
    }
    case JN_DICT: {
        qt__jv *d = mk(c, JV_DICT);
        for (size_t i = 0; i < n->args.n; i++) {
            qt__jv *k = eval(c, n->args.v[i]);
            if (k->k != JV_STR) EFAIL(c, n->args.v[i], QT_ERR_UNSUPPORTED, "dict keys other than strings are not supported");
            dict_set(c, d, k, eval(c, n->kwargs.v[i]));
        }
        return d;
    }
    default: EFAIL(c, n, QT_ERR_INTERNAL, "a statement where an expression belongs");
    }
}

/* ---- statements ------------------------------------------------------------------------------------ */
static void exec_list(ctx *c, const qt__jlist *l);

static void bind_targets(ctx *c, const qt__jnode *n, qt__jv *item) {
    if (n->args.n == 1) {
        assign(c, n->args.v[0]->name, item);
        return;
    }
    if (item->k != JV_LIST || item->n != n->args.n)
        EFAIL(c, n, QT_ERR_ARG, "cannot unpack a '%s' into %zu loop variables", kind_name(item), n->args.n);
    for (size_t k = 0; k < n->args.n; k++) assign(c, n->args.v[k]->name, item->items[k]);
}

static void exec_for(ctx *c, const qt__jnode *n) {
    qt__jv *all = iter_list(c, n, eval(c, n->a)), *items = all;
    frame f = {.up = c->top};
    c->top = &f;
    if (n->b) { /* {% for x in xs if cond %}: filtered first, so loop.length counts what is kept */
        items = mk(c, JV_LIST);
        for (size_t i = 0; i < all->n; i++) {
            bind_targets(c, n, all->items[i]);
            if (truthy(eval(c, n->b))) list_push(c, items, all->items[i]);
        }
    }
    const size_t len = items->n;
    for (size_t i = 0; i < len; i++) {
        step(c, n);
        qt__jv *loop = mk(c, JV_DICT);
        dict_setc(c, loop, "index0", mk_int(c, (int64_t)i));
        dict_setc(c, loop, "index", mk_int(c, (int64_t)i + 1));
        dict_setc(c, loop, "revindex0", mk_int(c, (int64_t)(len - i - 1)));
        dict_setc(c, loop, "revindex", mk_int(c, (int64_t)(len - i)));
        dict_setc(c, loop, "first", mk_bool(i == 0));
        dict_setc(c, loop, "last", mk_bool(i + 1 == len));
        dict_setc(c, loop, "length", mk_int(c, (int64_t)len));
        dict_setc(c, loop, "previtem", i ? items->items[i - 1] : &V_UNDEF);
        dict_setc(c, loop, "nextitem", i + 1 < len ? items->items[i + 1] : &V_UNDEF);
        assign(c, "loop", loop);
        bind_targets(c, n, items->items[i]);
        exec_list(c, &n->body);
        const int ctl = c->loopctl;
        c->loopctl = 0;
        if (ctl == 1) break;
    }
    c->top = f.up;
    if (!len) exec_list(c, &n->orelse);
}

static void exec_stmt(ctx *c, const qt__jnode *n) {
    step(c, n);
    switch ((qt__jn_kind)n->k) {
    case JN_TEXT: sb_add(c, c->out, n->lit->s, n->lit->n); return;
    case JN_OUT: put_value(c, c->out, eval(c, n->a), false); return;
    case JN_IF: exec_list(c, truthy(eval(c, n->a)) ? &n->body : &n->orelse); return;
    case JN_FOR: exec_for(c, n); return;
    case JN_SET: {
        qt__jv *v = eval(c, n->a);
        if (!n->attr) {
            assign(c, n->name, v);
            return;
        }
        qt__jv **slot = lookup(c, n->name);
        if (!slot || (*slot)->k != JV_DICT || !(*slot)->ns)
            EFAIL(c, n, QT_ERR_ARG, "'%s' is not a namespace (only namespace() attributes can be set)", n->name);
        dict_setc(c, *slot, n->attr, v);
        return;
    }
    case JN_SET_BLOCK: {
        sb b = {0}, *saved = c->out;
        c->out = &b;
        exec_list(c, &n->body);
        c->out = saved;
        assign(c, n->name, mk_sb(c, &b));
        return;
    }
    case JN_MACRO: {
        qt__jv *f = mk_func(c, F_MACRO, NULL);
        f->macro = n;
        assign(c, n->name, f);
        return;
    }
    case JN_BREAK: c->loopctl = 1; return;
    case JN_CONTINUE: c->loopctl = 2; return;
    default: EFAIL(c, n, QT_ERR_INTERNAL, "an expression where a statement belongs");
    }
}

static void exec_list(ctx *c, const qt__jlist *l) {
    for (size_t i = 0; i < l->n && !c->loopctl; i++) exec_stmt(c, l->v[i]);
}

/* The render itself; every error longjmps back here. */
static qt_status run(ctx *c, const qt_template *t, json_t *vars, char **out) {
    frame top = {0};
    sb result = {0};
    if (setjmp(c->jb)) return c->a.st ? c->a.st : QT_ERR_INTERNAL;
    c->top = c->root = &top;
    c->out = &result;
    if (vars) {
        const char *k;
        json_t *v;
        json_object_foreach(vars, k, v) assign(c, qt__ja_strndup(&c->a, k, strlen(k)), from_json(c, v, 0));
    }
    exec_list(c, &t->body);
    if (!(*out = malloc(result.n + 1))) return qt_error(QT_ERR_NOMEM, "template: out of memory");
    if (result.n) memcpy(*out, result.p, result.n);
    (*out)[result.n] = 0;
    return QT_OK;
}

qt_status qt_template_render(const qt_template *t, const char *vars_json, int64_t now, char **out) {
    *out = NULL;
    if (!t) return qt_error(QT_ERR_ARG, "template: none given");
    json_t *vars = NULL;
    if (vars_json) {
        json_error_t e;
        vars = json_loads(vars_json, JSON_ALLOW_NUL, &e);
        if (!vars) return qt_error(QT_ERR_ARG, "template variables: not valid JSON: %s (line %d, column %d)", e.text, e.line, e.column);
        if (!json_is_object(vars)) {
            json_decref(vars);
            return qt_error(QT_ERR_ARG, "template variables: must be a JSON object");
        }
    }
    ctx *c = calloc(1, sizeof *c);
    if (!c) {
        json_decref(vars);
        return qt_error(QT_ERR_NOMEM, "template: out of memory");
    }
    c->a.limit = MAX_VALUES;
    c->a.fail = &c->jb;
    c->now = now;
    const qt_status s = run(c, t, vars, out);
    json_decref(vars);
    qt__ja_free(&c->a);
    free(c);
    return s;
}
