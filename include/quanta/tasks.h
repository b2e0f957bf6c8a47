/* quanta/tasks.h — the user's own prompts with checks (`quanta eval --tasks FILE`).
 *
 * A task file is JSONL: one item per non-blank line, a `prompt` (or chat
 * `messages`), optional `max_tokens`, `stop`, `id`, and `checks`. Every check
 * is a pure function of the generated text (choice: of log-likelihoods), so
 * each is tested without a model. docs/eval.md ("Task files") states the
 * format, the check semantics and the JSON Schema subset.
 */
#ifndef QUANTA_TASKS_H
#define QUANTA_TASKS_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qt_check_type {
    QT_CHECK_EXACT = 0,   /* "value"; "normalize": true trims, folds ASCII case and collapses whitespace */
    QT_CHECK_CONTAINS,    /* "value" occurs in the output */
    QT_CHECK_REGEX,       /* "pattern" (PCRE2, UTF) matches somewhere in the output */
    QT_CHECK_JSON,        /* the output (trimmed, a ``` fence removed) parses as JSON */
    QT_CHECK_JSON_SCHEMA, /* ... and matches "schema" (the subset of docs/eval.md) */
    QT_CHECK_TOOL_CALL,   /* an OpenAI-shaped tool call to one of "tools", arguments matching its parameters */
    QT_CHECK_REFUSAL,     /* "expect": true -> the output refuses; false -> it does not */
    QT_CHECK_CHOICE,      /* "choices" and "answer": multiple choice by log-likelihood (as --mc) */
    QT_CHECK__COUNT
} qt_check_type;

QT_API const char *qt_check_type_name(qt_check_type t); /* "exact", "contains", ... */

typedef struct qt_task_check {
    qt_check_type type;
    char *value;         /* exact, contains */
    bool normalize;      /* exact */
    char *pattern;       /* regex */
    char *schema;        /* json_schema: the schema as compact JSON text (checked when parsed) */
    char *tools;         /* tool_call: OpenAI's tools list as compact JSON text (checked when parsed) */
    bool expect;         /* refusal: true = the output must refuse */
    int32_t n_choices;
    char **choices;      /* choice: (n_choices) endings, scored after the prompt and one space */
    int32_t answer;      /* choice: index of the right ending */
} qt_task_check;

typedef struct qt_task_item {
    char *id;            /* "id" as written (an integer is printed), else "line N" */
    char *prompt;        /* NULL when the item has messages */
    char *messages;      /* compact JSON list of {"role","content"} objects, or NULL */
    int32_t max_tokens;  /* tokens to generate; default 64 */
    int32_t n_stop;
    char **stop;         /* (n_stop) generation ends before the first of these strings */
    int32_t n_checks;
    qt_task_check *checks; /* (n_checks) the item passes when every check passes */
    bool generates;      /* has a check other than choice: text is generated */
    int64_t line;        /* 1-based line in the file */
} qt_task_item;

typedef struct qt_task_set {
    int32_t n_items;
    qt_task_item *items; /* (n_items) */
    int32_t n_by_type[QT_CHECK__COUNT]; /* checks of each type over all items */
} qt_task_set;

/* Parses JSONL text. A line shaped as a --mc item ({"context", "endings",
 * "label"}) is read as that prompt with one choice check, so existing
 * multiple-choice files are task files. Every regex is compiled and every
 * schema and tools list checked here, before anything runs. Errors are
 * QT_ERR_FORMAT "NAME:LINE: field 'F': problem". */
QT_API qt_status qt_tasks_parse(const char *text, size_t len, const char *name, qt_task_set **out);
QT_API qt_status qt_tasks_load(const char *path, qt_task_set **out);
QT_API void qt_tasks_free(qt_task_set *s);

/* ---- the checks, pure functions of the output text ------------------------------ */

#define QT_CHECK_WHY_LEN 160

/* One non-choice check on `output` (NUL-terminated). *pass is the outcome and
 * why (QT_CHECK_WHY_LEN bytes, may be NULL) says why a failure failed
 * ("no match for /.../", "$.age: 130 is above maximum 120"). A status other
 * than QT_OK is an invalid check (which qt_tasks_parse refuses) or no memory. */
QT_API qt_status qt_task_check_run(const qt_task_check *c, const char *output, bool *pass, char *why);

/* The same checks on their own arguments (the check struct's fields). */
QT_API bool qt_check_exact(const char *output, const char *value, bool normalize);
QT_API bool qt_check_contains(const char *output, const char *value);
QT_API qt_status qt_check_regex(const char *output, const char *pattern, bool *pass);
QT_API bool qt_check_json(const char *output);
/* QT_ERR_FORMAT for a schema outside the subset (the message names the keyword). */
QT_API qt_status qt_check_json_schema(const char *output, const char *schema_json, bool *pass, char *why);
QT_API qt_status qt_check_tool_call(const char *output, const char *tools_json, bool *pass, char *why);
/* Does the output refuse? Case-insensitive phrases of a fixed list (docs/eval.md). */
QT_API bool qt_check_is_refusal(const char *output);

#ifdef __cplusplus
}
#endif
#endif
