/* lib/model/jinja_internal.h — the chat-template engine's tree, values and
 * arena, shared by the parser (jinja_parse.c) and the evaluator (jinja_eval.c).
 * Internal. Every node and value lives in an arena: a parse or a render frees
 * all of its memory at once, and an error can unwind with longjmp. */
#ifndef QT_MODEL_JINJA_INTERNAL_H
#define QT_MODEL_JINJA_INTERNAL_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quanta/template.h"

/* ---- arena ---------------------------------------------------------------- */
typedef struct qt__jarena {
    struct qt__jchunk *head;
    size_t used, limit;     /* bytes handed out, and the most allowed */
    jmp_buf *fail;          /* where an exhausted arena jumps (st set) */
    qt_status st;           /* why the last jump was taken */
} qt__jarena;

void *qt__ja_alloc(qt__jarena *a, size_t n); /* zeroed; longjmps on exhaustion */
char *qt__ja_strndup(qt__jarena *a, const char *s, size_t n);
void qt__ja_free(qt__jarena *a);

/* ---- values (Python's: what Jinja computes with) ------------------------- */
typedef enum {
    JV_UNDEF = 0, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_LIST, JV_DICT, JV_FUNC,
} qt__jv_kind;

typedef struct qt__jv qt__jv;
struct qt__jv {
    uint8_t k;       /* qt__jv_kind */
    bool ns;         /* a namespace(): a dict whose attributes `set` may assign */
    bool b;
    int64_t i;       /* JV_INT; JV_FUNC: which builtin */
    double f;
    const char *s;   /* JV_STR: bytes (UTF-8), n of them; JV_DICT keys are strings too */
    size_t n;        /* JV_STR: bytes; JV_LIST / JV_DICT: items */
    size_t cap;
    qt__jv **items;  /* JV_LIST: the items; JV_DICT: values */
    qt__jv **keys;   /* JV_DICT: the keys (JV_STR), in insertion order */
    qt__jv *self;    /* JV_FUNC: a bound method's object */
    const struct qt__jnode *macro; /* JV_FUNC: a {% macro %}'s definition */
};

/* ---- the tree ---------------------------------------------------------------- */
typedef enum {
    /* statements */
    JN_TEXT, JN_OUT, JN_IF, JN_FOR, JN_SET, JN_SET_BLOCK, JN_BREAK, JN_CONTINUE, JN_MACRO,
    /* expressions */
    JN_LIT, JN_NAME, JN_ATTR, JN_INDEX, JN_SLICE, JN_CALL, JN_FILTER, JN_TEST,
    JN_NOT, JN_NEG, JN_POS, JN_BIN, JN_AND, JN_OR, JN_COND, JN_LIST, JN_DICT,
} qt__jn_kind;

typedef struct qt__jnode qt__jnode;
typedef struct qt__jlist {
    qt__jnode **v;
    size_t n, cap;
} qt__jlist;

struct qt__jnode {
    uint8_t k;          /* qt__jn_kind */
    int line, col;      /* where it starts in the template (1-based) */
    const char *name;   /* NAME, ATTR, FILTER/TEST/CALL-kwarg names, SET target; BIN: the operator */
    const char *attr;   /* SET ns.attr */
    bool neg;           /* TEST: "is not"; FOR: has a filter */
    qt__jv *lit;        /* LIT */
    qt__jnode *a, *b, *c; /* operands; IF: a cond; FOR: a iterable, b filter; SLICE a obj, b/c/d bounds */
    qt__jnode *d;
    qt__jlist body, orelse; /* IF/FOR bodies; TEXT-free lists of statements */
    qt__jlist args;     /* CALL/FILTER/TEST positional args; LIST items; DICT keys; FOR targets; MACRO parameters */
    qt__jlist kwargs;   /* CALL/FILTER kwargs (their names in kwnames); DICT values; MACRO defaults (NULL: none) */
    const char **kwnames;
};

struct qt_template {
    qt__jarena arena;
    qt__jlist body;
};

void qt__jl_push(qt__jarena *a, qt__jlist *l, qt__jnode *n);

/* The filters and tests the evaluator implements (the parser refuses others). */
bool qt__jinja_has_filter(const char *name);
bool qt__jinja_has_test(const char *name);

#endif
