/* lib/model/jinja_parse.c — chat templates (quanta/template.h): the lexer and
 * the recursive-descent parser of the Jinja subset, into the tree of
 * jinja_internal.h.
 *
 * Whitespace follows transformers' environment (trim_blocks, lstrip_blocks,
 * Jinja2's default of dropping one trailing newline): a newline right after a
 * block or comment tag is dropped, spaces and tabs between a line's start and
 * a block or comment tag are dropped, and "-" at a tag's edge strips all
 * whitespace on that side. Operator precedence is Jinja2's (parser.py), low to
 * high: "x if c else y", or, and, not, comparisons and in, + -, ~, * / // %,
 * **, unary - +, then postfix . [] () with filters | and tests "is" binding
 * tighter than any binary operator ("messages|length - 1").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_internal.h"

/* ---- arena ------------------------------------------------------------------ */
struct qt__jchunk {
    struct qt__jchunk *next;
    size_t size, used;
    _Alignas(16) unsigned char mem[];
};

void *qt__ja_alloc(qt__jarena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (a->used + n > a->limit) {
        a->st = qt_error(QT_ERR_RANGE, "template: memory limit of %zu MiB reached", a->limit >> 20);
        longjmp(*a->fail, 1);
    }
    struct qt__jchunk *c = a->head;
    if (!c || c->used + n > c->size) {
        size_t size = n > 65536 ? n : 65536;
        c = malloc(sizeof *c + size);
        if (!c) {
            a->st = qt_error(QT_ERR_NOMEM, "template: out of memory");
            longjmp(*a->fail, 1);
        }
        c->size = size, c->used = 0, c->next = a->head;
        a->head = c;
    }
    void *p = c->mem + c->used;
    c->used += n;
    a->used += n;
    memset(p, 0, n);
    return p;
}

char *qt__ja_strndup(qt__jarena *a, const char *s, size_t n) {
    char *p = qt__ja_alloc(a, n + 1);
    if (n) memcpy(p, s, n);
    return p;
}

void qt__ja_free(qt__jarena *a) {
    for (struct qt__jchunk *c = a->head, *next; c; c = next) next = c->next, free(c);
    a->head = NULL;
    a->used = 0;
}

void qt__jl_push(qt__jarena *a, qt__jlist *l, qt__jnode *n) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4;
        qt__jnode **v = qt__ja_alloc(a, cap * sizeof *v);
        if (l->n) memcpy(v, l->v, l->n * sizeof *v);
        l->v = v, l->cap = cap;
    }
    l->v[l->n++] = n;
}

/* ---- tokens ------------------------------------------------------------------ */
typedef enum { T_TEXT, T_OUT_OPEN, T_OUT_CLOSE, T_STMT_OPEN, T_STMT_CLOSE, T_NAME, T_STR, T_INT, T_FLOAT, T_OP, T_EOF } tkind;

typedef struct tok {
    tkind k;
    int line, col;
    const char *s; /* TEXT, NAME, STR (decoded), OP: arena copy */
    size_t n;
    int64_t i;
    double f;
} tok;

typedef struct parser {
    qt__jarena *a;
    jmp_buf jb;
    const char *src;
    size_t len;
    tok *t;
    size_t nt, cap, pos;
    int depth;
    int loops;    /* for loops open around the statement being parsed */
    size_t w_off; /* where(): the last position counted, and its line and column */
    int w_line, w_col;
} parser;

enum { MAX_DEPTH = 96, MAX_TEMPLATE = 1 << 20 };

/* Line and column (in characters) of src[off]. Tokens come in order, so the
 * count resumes from the last position asked for. */
static void where(parser *p, size_t off, int *line, int *col) {
    if (off < p->w_off) p->w_off = 0, p->w_line = 1, p->w_col = 1;
    for (size_t i = p->w_off; i < off && i < p->len; i++) {
        if (p->src[i] == '\n') p->w_line++, p->w_col = 1;
        else if (((unsigned char)p->src[i] & 0xC0) != 0x80) p->w_col++;
    }
    if (off > p->w_off) p->w_off = off;
    *line = p->w_line, *col = p->w_col;
}

#define PFAIL(p, code, line, col, ...)                                                           \
    do {                                                                                       \
        char m_[256];                                                                          \
        snprintf(m_, sizeof m_, __VA_ARGS__);                                                  \
        (p)->a->st = qt_error(code, "template line %d, column %d: %s", line, col, m_);           \
        longjmp((p)->jb, 1);                                                                   \
    } while (0)

static void push_tok(parser *p, tkind k, size_t off, const char *s, size_t n) {
    if (p->nt == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 256;
        tok *t = qt__ja_alloc(p->a, cap * sizeof *t);
        if (p->nt) memcpy(t, p->t, p->nt * sizeof *t);
        p->t = t, p->cap = cap;
    }
    tok *t = &p->t[p->nt++];
    memset(t, 0, sizeof *t);
    t->k = k;
    where(p, off, &t->line, &t->col);
    if (s) t->s = qt__ja_strndup(p->a, s, n), t->n = n;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
static bool is_ident(char c, bool first) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9');
}

/* A string literal from src[i] (the quote); returns the offset after it. */
static size_t lex_string(parser *p, size_t i) {
    const char q = p->src[i];
    const size_t start = i++;
    char *buf = qt__ja_alloc(p->a, p->len - i + 1);
    size_t n = 0;
    for (; i < p->len && p->src[i] != q; i++) {
        char c = p->src[i];
        if (c == '\\' && i + 1 < p->len) {
            const char e = p->src[++i];
            switch (e) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'v': c = '\v'; break;
            case '\\': case '\'': case '"': c = e; break;
            case 'x': case 'u': case 'U': { /* \xXX \uXXXX \UXXXXXXXX: a code point, written as UTF-8 */
                const int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                uint32_t cp = 0;
                int k = 0;
                for (; k < digits && i + 1 < p->len; k++) {
                    const char h = p->src[i + 1];
                    const int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                    if (d < 0) break;
                    cp = cp * 16 + (uint32_t)d, i++;
                }
                if (k < digits || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) {
                    int l, cc;
                    where(p, i, &l, &cc);
                    PFAIL(p, QT_ERR_FORMAT, l, cc, "a bad \\%c escape in a string", e);
                }
                if (cp < 0x80) buf[n++] = (char)cp;
                else if (cp < 0x800) buf[n++] = (char)(0xC0 | cp >> 6), buf[n++] = (char)(0x80 | (cp & 63));
                else if (cp < 0x10000)
                    buf[n++] = (char)(0xE0 | cp >> 12), buf[n++] = (char)(0x80 | (cp >> 6 & 63)), buf[n++] = (char)(0x80 | (cp & 63));
                else
                    buf[n++] = (char)(0xF0 | cp >> 18), buf[n++] = (char)(0x80 | (cp >> 12 & 63)),
                    buf[n++] = (char)(0x80 | (cp >> 6 & 63)), buf[n++] = (char)(0x80 | (cp & 63));
                continue;
            }
            default: buf[n++] = '\\'; c = e; /* Python keeps an unknown escape */
            }
        }
        buf[n++] = c;
    }
    if (i >= p->len) {
        int l, c;
        where(p, start, &l, &c);
        PFAIL(p, QT_ERR_FORMAT, l, c, "unterminated string");
    }
    push_tok(p, T_STR, start, NULL, 0);
    p->t[p->nt - 1].s = buf, p->t[p->nt - 1].n = n;
    return i + 1;
}

static const char *const two_char_ops[] = {"==", "!=", "<=", ">=", "//", "**"};

/* The inside of a {{ }} or {% %} tag from src[i]; returns the offset after
 * the closing tag and whether it ended with "-". */
static size_t lex_tag(parser *p, size_t i, bool stmt, bool *strip_after) {
    int braces = 0;
    const char close = stmt ? '%' : '}';
    for (;;) {
        while (i < p->len && is_space(p->src[i])) i++;
        if (i >= p->len) {
            int l, c;
            where(p, i, &l, &c);
            PFAIL(p, QT_ERR_FORMAT, l, c, "the template ends inside a %s tag", stmt ? "{% %}" : "{{ }}");
        }
        const char c = p->src[i], d = i + 1 < p->len ? p->src[i + 1] : 0, e = i + 2 < p->len ? p->src[i + 2] : 0;
        if (c == '-' && d == close && e == '}' && braces == 0) {
            *strip_after = true;
            push_tok(p, stmt ? T_STMT_CLOSE : T_OUT_CLOSE, i, NULL, 0);
            return i + 3;
        }
        if (c == close && d == '}' && braces == 0) {
            *strip_after = false;
            push_tok(p, stmt ? T_STMT_CLOSE : T_OUT_CLOSE, i, NULL, 0);
            return i + 2;
        }
        if (c == '"' || c == '\'') {
            i = lex_string(p, i);
        } else if (c >= '0' && c <= '9') {
            size_t j = i;
            while (j < p->len && p->src[j] >= '0' && p->src[j] <= '9') j++;
            bool fl = j + 1 < p->len && p->src[j] == '.' && p->src[j + 1] >= '0' && p->src[j + 1] <= '9';
            if (fl) {
                j++;
                while (j < p->len && p->src[j] >= '0' && p->src[j] <= '9') j++;
            }
            char num[64];
            const size_t n = j - i < sizeof num - 1 ? j - i : sizeof num - 1;
            memcpy(num, p->src + i, n);
            num[n] = 0;
            push_tok(p, fl ? T_FLOAT : T_INT, i, NULL, 0);
            if (fl) p->t[p->nt - 1].f = strtod(num, NULL);
            else p->t[p->nt - 1].i = strtoll(num, NULL, 10);
            i = j;
        } else if (is_ident(c, true)) {
            size_t j = i;
            while (j < p->len && is_ident(p->src[j], false)) j++;
            push_tok(p, T_NAME, i, p->src + i, j - i);
            i = j;
        } else {
            size_t n = 1;
            for (size_t k = 0; k < sizeof two_char_ops / sizeof *two_char_ops; k++)
                if (c == two_char_ops[k][0] && d == two_char_ops[k][1]) n = 2;
            if (n == 1 && !strchr("+-*/%~<>=()[]{}.,:|", c)) {
                int l, cc;
                where(p, i, &l, &cc);
                PFAIL(p, QT_ERR_FORMAT, l, cc, "unexpected character '%c'", c);
            }
            if (c == '{') braces++;
            if (c == '}') braces--;
            push_tok(p, T_OP, i, p->src + i, n);
            i += n;
        }
    }
}

/* Text from src[b..e): what is left after the whitespace rules. */
static void emit_text(parser *p, size_t b, size_t e, bool lstrip_all, bool rstrip_all, bool lstrip_block) {
    if (lstrip_all)
        while (b < e && is_space(p->src[b])) b++;
    if (rstrip_all) {
        while (e > b && is_space(p->src[e - 1])) e--;
    } else if (lstrip_block) {
        size_t k = e;
        while (k > 0 && (p->src[k - 1] == ' ' || p->src[k - 1] == '\t')) k--;
        if (k == 0 || p->src[k - 1] == '\n') e = k > b ? k : b;
    }
    if (e > b) push_tok(p, T_TEXT, b, p->src + b, e - b);
}

static void lex(parser *p) {
    size_t i = 0, text = 0;
    bool strip_next = false;
    while (i < p->len) {
        const char *o = memchr(p->src + i, '{', p->len - i);
        if (!o || o + 1 >= p->src + p->len) break;
        const size_t at = (size_t)(o - p->src);
        const char kind = o[1];
        if (kind != '{' && kind != '%' && kind != '#') {
            i = at + 1;
            continue;
        }
        const bool minus = at + 2 < p->len && p->src[at + 2] == '-';
        emit_text(p, text, at, strip_next, minus, kind != '{');
        size_t j = at + 2 + (minus || (at + 2 < p->len && p->src[at + 2] == '+'));
        bool strip_after = false;
        if (kind == '#') {
            const char *end = NULL;
            for (size_t k = j; k + 1 < p->len; k++)
                if (p->src[k] == '#' && p->src[k + 1] == '}') {
                    end = p->src + k;
                    break;
                }
            if (!end) {
                int l, c;
                where(p, at, &l, &c);
                PFAIL(p, QT_ERR_FORMAT, l, c, "unterminated comment");
            }
            strip_after = end > p->src + j && end[-1] == '-';
            j = (size_t)(end - p->src) + 2;
        } else {
            push_tok(p, kind == '%' ? T_STMT_OPEN : T_OUT_OPEN, at, NULL, 0);
            j = lex_tag(p, j, kind == '%', &strip_after);
        }
        if (kind != '{' && !strip_after && j < p->len && p->src[j] == '\n') j++; /* trim_blocks */
        strip_next = strip_after;
        i = text = j;
    }
    emit_text(p, text, p->len, strip_next, false, false);
    push_tok(p, T_EOF, p->len, NULL, 0);
}

/* ---- parser -------------------------------------------------------------------- */
static tok *peek(parser *p) { return &p->t[p->pos]; }
static tok *next(parser *p) { return p->pos + 1 < p->nt ? &p->t[p->pos++] : &p->t[p->pos]; }
static bool is_op(const tok *t, const char *op) { return t->k == T_OP && !strcmp(t->s, op); }
static bool is_name(const tok *t, const char *nm) { return t->k == T_NAME && !strcmp(t->s, nm); }

static const char *tok_desc(const tok *t, char *buf, size_t n) {
    switch (t->k) {
    case T_EOF: return "the end of the template";
    case T_TEXT: return "text";
    case T_OUT_OPEN: return "'{{'";
    case T_OUT_CLOSE: return "'}}'";
    case T_STMT_OPEN: return "'{%'";
    case T_STMT_CLOSE: return "'%}'";
    case T_STR: return "a string";
    case T_INT: case T_FLOAT: return "a number";
    default: snprintf(buf, n, "'%s'", t->s); return buf;
    }
}

static void expect_op(parser *p, const char *op) {
    tok *t = peek(p);
    char b[80];
    if (!is_op(t, op)) PFAIL(p, QT_ERR_FORMAT, t->line, t->col, "expected '%s', found %s", op, tok_desc(t, b, sizeof b));
    next(p);
}

static const char *expect_name(parser *p) {
    tok *t = peek(p);
    char b[80];
    if (t->k != T_NAME) PFAIL(p, QT_ERR_FORMAT, t->line, t->col, "expected a name, found %s", tok_desc(t, b, sizeof b));
    next(p);
    return t->s;
}

static qt__jnode *node(parser *p, qt__jn_kind k, const tok *at) {
    qt__jnode *n = qt__ja_alloc(p->a, sizeof *n);
    n->k = k, n->line = at->line, n->col = at->col;
    return n;
}

static qt__jv *lit_value(parser *p, qt__jv_kind k) {
    qt__jv *v = qt__ja_alloc(p->a, sizeof *v);
    v->k = k;
    return v;
}

static qt__jnode *expr(parser *p);
static qt__jnode *unary(parser *p, bool with_filter);

static void enter(parser *p, const tok *t) {
    if (++p->depth > MAX_DEPTH) PFAIL(p, QT_ERR_RANGE, t->line, t->col, "nested deeper than %d levels", MAX_DEPTH);
}

/* (args, name=kwargs) after the "(" */
static void call_args(parser *p, qt__jnode *n) {
    expect_op(p, "(");
    size_t nk = 0, cap = 0;
    while (!is_op(peek(p), ")")) {
        tok *t = peek(p);
        if (t->k == T_NAME && is_op(&p->t[p->pos + 1], "=")) {
            next(p), next(p);
            if (nk == cap) {
                cap = cap ? 2 * cap : 4;
                const char **kn = qt__ja_alloc(p->a, cap * sizeof *kn);
                if (nk) memcpy(kn, n->kwnames, nk * sizeof *kn);
                n->kwnames = kn;
            }
            n->kwnames[nk++] = t->s;
            qt__jl_push(p->a, &n->kwargs, expr(p));
        } else {
            if (n->kwargs.n) PFAIL(p, QT_ERR_FORMAT, t->line, t->col, "a positional argument after a keyword argument");
            qt__jl_push(p->a, &n->args, expr(p));
        }
        if (!is_op(peek(p), ",")) break;
        next(p);
    }
    expect_op(p, ")");
}

static qt__jnode *primary(parser *p) {
    tok *t = next(p);
    char b[80];
    qt__jnode *n;
    switch (t->k) {
    case T_STR: {
        n = node(p, JN_LIT, t);
        n->lit = lit_value(p, JV_STR);
        n->lit->s = t->s, n->lit->n = t->n;
        while (peek(p)->k == T_STR) { /* adjacent literals concatenate */
            tok *u = next(p);
            char *s = qt__ja_alloc(p->a, n->lit->n + u->n + 1);
            memcpy(s, n->lit->s, n->lit->n);
            memcpy(s + n->lit->n, u->s, u->n);
            n->lit->s = s, n->lit->n += u->n;
        }
        return n;
    }
    case T_INT: n = node(p, JN_LIT, t); n->lit = lit_value(p, JV_INT); n->lit->i = t->i; return n;
    case T_FLOAT: n = node(p, JN_LIT, t); n->lit = lit_value(p, JV_FLOAT); n->lit->f = t->f; return n;
    case T_NAME: {
        static const char *const t_names[] = {"true", "True"}, *const f_names[] = {"false", "False"};
        n = node(p, JN_LIT, t);
        for (int k = 0; k < 2; k++) {
            if (!strcmp(t->s, t_names[k]) || !strcmp(t->s, f_names[k])) {
                n->lit = lit_value(p, JV_BOOL);
                n->lit->b = !strcmp(t->s, t_names[k]);
                return n;
            }
        }
        if (!strcmp(t->s, "none") || !strcmp(t->s, "None")) {
            n->lit = lit_value(p, JV_NONE);
            return n;
        }
        n->k = JN_NAME;
        n->name = t->s;
        return n;
    }
    case T_OP:
        if (!strcmp(t->s, "(")) {
            enter(p, t);
            qt__jnode *first = expr(p);
            if (is_op(peek(p), ",")) { /* a tuple: a list here */
                n = node(p, JN_LIST, t);
                qt__jl_push(p->a, &n->args, first);
                while (is_op(peek(p), ",")) {
                    next(p);
                    if (is_op(peek(p), ")")) break;
                    qt__jl_push(p->a, &n->args, expr(p));
                }
                first = n;
            }
            expect_op(p, ")");
            p->depth--;
            return first;
        }
        if (!strcmp(t->s, "[") || !strcmp(t->s, "{")) {
            const bool dict = t->s[0] == '{';
            enter(p, t);
            n = node(p, dict ? JN_DICT : JN_LIST, t);
            while (!is_op(peek(p), dict ? "}" : "]")) {
                qt__jl_push(p->a, &n->args, expr(p));
                if (dict) {
                    expect_op(p, ":");
                    qt__jl_push(p->a, &n->kwargs, expr(p));
                }
                if (!is_op(peek(p), ",")) break;
                next(p);
            }
            expect_op(p, dict ? "}" : "]");
            p->depth--;
            return n;
        }
        break;
    default: break;
    }
    PFAIL(p, QT_ERR_FORMAT, t->line, t->col, "expected an expression, found %s", tok_desc(t, b, sizeof b));
}

static qt__jnode *subscript(parser *p, qt__jnode *obj, tok *t) {
    qt__jnode *parts[3] = {0};
    int k = 0;
    bool slice = false;
    while (!is_op(peek(p), "]")) {
        if (is_op(peek(p), ":")) {
            next(p);
            slice = true;
            if (++k > 2) PFAIL(p, QT_ERR_FORMAT, t->line, t->col, "a slice has at most three parts");
            continue;
        }
        if (parts[k]) PFAIL(p, QT_ERR_FORMAT, peek(p)->line, peek(p)->col, "expected ':' or ']' in a subscript");
        parts[k] = expr(p);
    }
    expect_op(p, "]");
    qt__jnode *n = node(p, slice ? JN_SLICE : JN_INDEX, t);
    n->a = obj;
    if (!slice && !parts[0]) PFAIL(p, QT_ERR_FORMAT, t->line, t->col, "an empty subscript");
    n->b = parts[0], n->c = parts[1], n->d = parts[2];
    return n;
}

static qt__jnode *postfix(parser *p, qt__jnode *n) {
    for (;;) {
        tok *t = peek(p);
        if (is_op(t, ".")) {
            next(p);
            tok *u = next(p);
            qt__jnode *a = node(p, JN_ATTR, t);
            a->a = n;
            if (u->k == T_NAME) a->name = u->s;
            else if (u->k == T_INT) { /* x.0 is x[0] */
                a->k = JN_INDEX;
                a->b = node(p, JN_LIT, u);
                a->b->lit = lit_value(p, JV_INT);
                a->b->lit->i = u->i;
            } else PFAIL(p, QT_ERR_FORMAT, u->line, u->col, "expected an attribute name after '.'");
            n = a;
        } else if (is_op(t, "[")) {
            next(p);
            enter(p, t);
            n = subscript(p, n, t);
            p->depth--;
        } else if (is_op(t, "(")) {
            qt__jnode *c = node(p, JN_CALL, t);
            c->a = n;
            enter(p, t);
            call_args(p, c);
            p->depth--;
            n = c;
        } else {
            return n;
        }
    }
}

/* Whether the token can start a test's bare argument ("is equalto 'x'"). */
static bool starts_operand(const tok *t) {
    static const char *const stop[] = {"and", "or", "else", "if", "in", "not", "is"};
    if (t->k == T_STR || t->k == T_INT || t->k == T_FLOAT || (t->k == T_OP && (!strcmp(t->s, "[") || !strcmp(t->s, "{"))))
        return true;
    if (t->k != T_NAME) return false;
    for (size_t k = 0; k < sizeof stop / sizeof *stop; k++)
        if (!strcmp(t->s, stop[k])) return false;
    return true;
}

static qt__jnode *filters_and_tests(parser *p, qt__jnode *n) {
    for (;;) {
        tok *t = peek(p);
        if (is_op(t, "|")) {
            next(p);
            tok *nt = peek(p);
            const char *name = expect_name(p);
            if (!qt__jinja_has_filter(name))
                PFAIL(p, QT_ERR_UNSUPPORTED, nt->line, nt->col, "the filter '%s' is not supported", name);
            qt__jnode *f = node(p, JN_FILTER, nt);
            f->a = n, f->name = name;
            if (is_op(peek(p), "(")) call_args(p, f);
            n = f;
        } else if (is_name(t, "is")) {
            next(p);
            qt__jnode *f = node(p, JN_TEST, t);
            f->a = n;
            if (is_name(peek(p), "not")) next(p), f->neg = true;
            tok *nt = peek(p);
            const char *name;
            if (nt->k == T_NAME) name = expect_name(p);
            else if (nt->k == T_OP && (!strcmp(nt->s, "==") || !strcmp(nt->s, "!=") || !strcmp(nt->s, "<") ||
                                       !strcmp(nt->s, ">") || !strcmp(nt->s, "<=") || !strcmp(nt->s, ">=")))
                name = next(p)->s;
            else PFAIL(p, QT_ERR_FORMAT, nt->line, nt->col, "expected a test name after 'is'");
            if (!strcmp(name, "none") || !strcmp(name, "None")) name = "none";
            if (!strcmp(name, "true") || !strcmp(name, "True")) name = "true";
            if (!strcmp(name, "false") || !strcmp(name, "False")) name = "false";
            if (!qt__jinja_has_test(name))
                PFAIL(p, QT_ERR_UNSUPPORTED, nt->line, nt->col, "the test '%s' is not supported", name);
            f->name = name;
            if (is_op(peek(p), "(")) call_args(p, f);
            else if (starts_operand(peek(p))) qt__jl_push(p->a, &f->args, postfix(p, primary(p)));
            n = f;
        } else {
            return n;
        }
    }
}

static qt__jnode *unary(parser *p, bool with_filter) {
    tok *t = peek(p);
    qt__jnode *n;
    enter(p, t);
    if (is_op(t, "-") || is_op(t, "+")) {
        next(p);
        n = node(p, t->s[0] == '-' ? JN_NEG : JN_POS, t);
        n->a = unary(p, false);
    } else {
        n = primary(p);
    }
    n = postfix(p, n);
    if (with_filter) n = filters_and_tests(p, n);
    p->depth--;
    return n;
}

static qt__jnode *binop(parser *p, tok *t, const char *op, qt__jnode *l, qt__jnode *r) {
    qt__jnode *n = node(p, JN_BIN, t);
    n->name = op, n->a = l, n->b = r;
    return n;
}

static qt__jnode *power(parser *p) {
    qt__jnode *l = unary(p, true);
    while (is_op(peek(p), "**")) {
        tok *t = next(p);
        l = binop(p, t, "**", l, unary(p, true));
    }
    return l;
}

static qt__jnode *math2(parser *p) {
    qt__jnode *l = power(p);
    for (tok *t; (t = peek(p))->k == T_OP && (!strcmp(t->s, "*") || !strcmp(t->s, "/") || !strcmp(t->s, "//") || !strcmp(t->s, "%"));) {
        next(p);
        l = binop(p, t, t->s, l, power(p));
    }
    return l;
}

static qt__jnode *concat(parser *p) {
    qt__jnode *l = math2(p);
    while (is_op(peek(p), "~")) {
        tok *t = next(p);
        l = binop(p, t, "~", l, math2(p));
    }
    return l;
}

static qt__jnode *math1(parser *p) {
    qt__jnode *l = concat(p);
    for (tok *t; (t = peek(p))->k == T_OP && (!strcmp(t->s, "+") || !strcmp(t->s, "-"));) {
        next(p);
        l = binop(p, t, t->s, l, concat(p));
    }
    return l;
}

static qt__jnode *compare(parser *p) {
    qt__jnode *l = math1(p);
    static const char *const ops[] = {"==", "!=", "<", ">", "<=", ">="};
    for (;;) {
        tok *t = peek(p);
        const char *op = NULL;
        for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
            if (is_op(t, ops[k])) op = ops[k];
        if (is_name(t, "in")) op = "in";
        if (is_name(t, "not") && is_name(&p->t[p->pos + 1], "in")) next(p), op = "not in";
        if (!op) return l;
        next(p);
        l = binop(p, t, op, l, math1(p));
    }
}

static qt__jnode *logic_not(parser *p) {
    tok *t = peek(p);
    if (is_name(t, "not")) {
        next(p);
        enter(p, t);
        qt__jnode *n = node(p, JN_NOT, t);
        n->a = logic_not(p);
        p->depth--;
        return n;
    }
    return compare(p);
}

/* "or" over "and" over "not": one loop for both binary levels */
static qt__jnode *logic(parser *p, bool is_or) {
    qt__jnode *l = is_or ? logic(p, false) : logic_not(p);
    while (is_name(peek(p), is_or ? "or" : "and")) {
        tok *t = next(p);
        qt__jnode *n = node(p, is_or ? JN_OR : JN_AND, t);
        n->a = l, n->b = is_or ? logic(p, false) : logic_not(p);
        l = n;
    }
    return l;
}
static qt__jnode *logic_or(parser *p) { return logic(p, true); }

static qt__jnode *expr(parser *p) {
    tok *t = peek(p);
    enter(p, t);
    qt__jnode *n = logic_or(p);
    while (is_name(peek(p), "if")) {
        tok *u = next(p);
        qt__jnode *c = node(p, JN_COND, u);
        c->a = logic_or(p), c->b = n;
        if (is_name(peek(p), "else")) next(p), c->c = expr(p);
        n = c;
    }
    p->depth--;
    return n;
}

/* ---- statements ------------------------------------------------------------------ */
static void end_tag(parser *p) {
    tok *t = peek(p);
    char b[80];
    if (t->k != T_STMT_CLOSE) PFAIL(p, QT_ERR_FORMAT, t->line, t->col, "expected '%%}', found %s", tok_desc(t, b, sizeof b));
    next(p);
}

/* Statements until a {% NAME %} among `ends` (returned, its name consumed). */
static const char *block(parser *p, qt__jlist *out, const char *const *ends, const tok *opener);

static qt__jnode *stmt_if(parser *p, tok *t) {
    qt__jnode *n = node(p, JN_IF, t);
    n->a = expr(p);
    end_tag(p);
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    const char *e = block(p, &n->body, ends, t);
    if (!strcmp(e, "elif")) {
        qt__jl_push(p->a, &n->orelse, stmt_if(p, &p->t[p->pos - 1]));
        return n;
    }
    if (!strcmp(e, "else")) {
        end_tag(p);
        static const char *const ends2[] = {"endif", NULL};
        block(p, &n->orelse, ends2, t);
    }
    end_tag(p);
    return n;
}

static qt__jnode *stmt_for(parser *p, tok *t) {
    qt__jnode *n = node(p, JN_FOR, t);
    do {
        tok *nt = peek(p);
        qt__jnode *target = node(p, JN_NAME, nt);
        target->name = expect_name(p);
        qt__jl_push(p->a, &n->args, target);
    } while (is_op(peek(p), ",") && next(p));
    if (!is_name(peek(p), "in")) PFAIL(p, QT_ERR_FORMAT, peek(p)->line, peek(p)->col, "expected 'in' in a for loop");
    next(p);
    n->a = logic_or(p); /* not expr(): a trailing "if" filters the loop */
    if (is_name(peek(p), "if")) next(p), n->b = logic_or(p);
    if (is_name(peek(p), "recursive"))
        PFAIL(p, QT_ERR_UNSUPPORTED, peek(p)->line, peek(p)->col, "recursive for loops are not supported");
    end_tag(p);
    static const char *const ends[] = {"else", "endfor", NULL};
    p->loops++;
    const char *e = block(p, &n->body, ends, t);
    p->loops--;
    if (!strcmp(e, "else")) {
        end_tag(p);
        static const char *const ends2[] = {"endfor", NULL};
        block(p, &n->orelse, ends2, t);
    }
    end_tag(p);
    return n;
}

static qt__jnode *stmt_set(parser *p, tok *t) {
    qt__jnode *n = node(p, JN_SET, t);
    n->name = expect_name(p);
    if (is_op(peek(p), ".")) next(p), n->attr = expect_name(p);
    if (is_op(peek(p), ",")) PFAIL(p, QT_ERR_UNSUPPORTED, peek(p)->line, peek(p)->col, "'set' with several targets is not supported");
    if (!is_op(peek(p), "=") && !n->attr) { /* {% set x %}...{% endset %} */
        end_tag(p);
        n->k = JN_SET_BLOCK;
        static const char *const ends[] = {"endset", NULL};
        block(p, &n->body, ends, t);
        end_tag(p);
        return n;
    }
    expect_op(p, "=");
    n->a = expr(p);
    end_tag(p);
    return n;
}

/* {% macro name(a, b=default) %}...{% endmacro %} */
static qt__jnode *stmt_macro(parser *p, tok *t) {
    qt__jnode *n = node(p, JN_MACRO, t);
    n->name = expect_name(p);
    expect_op(p, "(");
    while (!is_op(peek(p), ")")) {
        tok *pt = peek(p);
        qt__jnode *param = node(p, JN_NAME, pt);
        param->name = expect_name(p);
        qt__jl_push(p->a, &n->args, param);
        qt__jnode *dflt = NULL;
        if (is_op(peek(p), "=")) next(p), dflt = expr(p);
        else if (n->kwargs.n && n->kwargs.v[n->kwargs.n - 1])
            PFAIL(p, QT_ERR_FORMAT, pt->line, pt->col, "a parameter without a default after one with a default");
        qt__jl_push(p->a, &n->kwargs, dflt);
        if (!is_op(peek(p), ",")) break;
        next(p);
    }
    expect_op(p, ")");
    end_tag(p);
    static const char *const ends[] = {"endmacro", NULL};
    const int loops = p->loops;
    p->loops = 0; /* a macro's body is not inside the loop around its definition */
    block(p, &n->body, ends, t);
    p->loops = loops;
    end_tag(p);
    return n;
}

static const char *block(parser *p, qt__jlist *out, const char *const *ends, const tok *opener) {
    for (;;) {
        tok *t = next(p);
        if (t->k == T_EOF) {
            if (!ends) return NULL;
            PFAIL(p, QT_ERR_FORMAT, opener->line, opener->col, "this block is never closed ({%% %s %%} is missing)",
                  ends[0] && strcmp(ends[0], "elif") && strcmp(ends[0], "else") ? ends[0] : ends[1] && strcmp(ends[1], "else") ? ends[1] : ends[2]);
        }
        if (t->k == T_TEXT) {
            qt__jnode *n = node(p, JN_TEXT, t);
            n->lit = lit_value(p, JV_STR);
            n->lit->s = t->s, n->lit->n = t->n;
            qt__jl_push(p->a, out, n);
            continue;
        }
        if (t->k == T_OUT_OPEN) {
            qt__jnode *n = node(p, JN_OUT, t);
            n->a = expr(p);
            tok *c = peek(p);
            char b[80];
            if (c->k != T_OUT_CLOSE) PFAIL(p, QT_ERR_FORMAT, c->line, c->col, "expected '}}', found %s", tok_desc(c, b, sizeof b));
            next(p);
            qt__jl_push(p->a, out, n);
            continue;
        }
        /* {% ... %} */
        tok *kw = peek(p);
        const char *name = expect_name(p);
        for (size_t k = 0; ends && ends[k]; k++)
            if (!strcmp(name, ends[k])) return ends[k];
        enter(p, kw);
        qt__jnode *n = NULL;
        if (!strcmp(name, "if")) n = stmt_if(p, kw);
        else if (!strcmp(name, "for")) n = stmt_for(p, kw);
        else if (!strcmp(name, "set")) n = stmt_set(p, kw);
        else if (!strcmp(name, "macro")) n = stmt_macro(p, kw);
        else if (!strcmp(name, "break") || !strcmp(name, "continue")) {
            if (!p->loops) PFAIL(p, QT_ERR_FORMAT, kw->line, kw->col, "'{%% %s %%}' outside a for loop", name);
            n = node(p, name[0] == 'b' ? JN_BREAK : JN_CONTINUE, kw);
            end_tag(p);
        } else if (!strcmp(name, "generation") || !strcmp(name, "endgeneration")) {
            end_tag(p); /* transformers' marker for assistant masks: renders nothing */
        } else {
            static const char *const known[] = {"call", "filter", "include", "import", "from", "extends",
                                                "block", "with", "raw", "autoescape", "do"};
            for (size_t k = 0; k < sizeof known / sizeof *known; k++)
                if (!strcmp(name, known[k]))
                    PFAIL(p, QT_ERR_UNSUPPORTED, kw->line, kw->col, "'{%% %s %%}' is not supported (quanta renders a Jinja subset)", name);
            PFAIL(p, QT_ERR_FORMAT, kw->line, kw->col, "unexpected '{%% %s %%}'", name);
        }
        p->depth--;
        if (n) qt__jl_push(p->a, out, n);
    }
}

qt_status qt_template_parse(const char *src, size_t len, qt_template **out) {
    *out = NULL;
    if (!src) return qt_error(QT_ERR_ARG, "template: no source");
    if (len > MAX_TEMPLATE) return qt_error(QT_ERR_RANGE, "template: %zu bytes, more than the %d allowed", len, MAX_TEMPLATE);
    qt_template *t = calloc(1, sizeof *t);
    if (!t) return qt_error(QT_ERR_NOMEM, "template: out of memory");
    parser p = {.a = &t->arena, .src = src, .len = len, .w_line = 1, .w_col = 1};
    t->arena.limit = (size_t)64 << 20;
    t->arena.fail = &p.jb;
    if (len && src[len - 1] == '\n') p.len--; /* Jinja2 drops one trailing newline */
    if (setjmp(p.jb)) {
        qt_status s = t->arena.st;
        qt_template_free(t);
        return s == QT_OK ? QT_ERR_INTERNAL : s;
    }
    if (memchr(src, 0, len)) PFAIL(&p, QT_ERR_FORMAT, 1, 1, "the template contains a NUL byte");
    lex(&p);
    block(&p, &t->body, NULL, NULL);
    t->arena.fail = NULL;
    *out = t;
    return QT_OK;
}

void qt_template_free(qt_template *t) {
    if (!t) return;
    qt__ja_free(&t->arena);
    free(t);
}
