/* lib/eval/tasks.c — the task file of `quanta eval --tasks`: JSONL, one item
 * per line, each a prompt (or chat messages) and its checks (checks.c). Every
 * check is validated here, so a bad regex or schema fails before any model
 * runs. Format: docs/eval.md "Task files".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"

#define MAX_TOKENS_DEFAULT 64
#define MAX_TOKENS_LIMIT 8192
#define MAX_STOPS 16
#define MAX_CHECKS 64

static void check_free(qt_task_check *c) {
    free(c->value);
    free(c->pattern);
    free(c->schema);
    free(c->tools);
    for (int32_t j = 0; j < c->n_choices; j++) free(c->choices[j]);
    free(c->choices);
}

static void item_free(qt_task_item *it) {
    free(it->id);
    free(it->prompt);
    free(it->messages);
    for (int32_t j = 0; j < it->n_stop; j++) free(it->stop[j]);
    free(it->stop);
    for (int32_t j = 0; j < it->n_checks; j++) check_free(&it->checks[j]);
    free(it->checks);
}

void qt_tasks_free(qt_task_set *s) {
    if (!s) return;
    for (int32_t i = 0; i < s->n_items; i++) item_free(&s->items[i]);
    free(s->items);
    free(s);
}

/* Where a message points: "NAME:LINE: field 'F': " is built by the callers. */
typedef struct where {
    const char *name;
    long long line;
} where;

#define FAIL(w, field, ...) field_error(w, field, __VA_ARGS__)

static qt_status field_error(const where *w, const char *field, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static qt_status field_error(const where *w, const char *field, const char *fmt, ...) {
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return qt_error(QT_ERR_FORMAT, "%s:%lld: field '%s': %s", w->name, w->line, field, why);
}

static char *dup_str(const char *s) {
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

static qt_status nomem(const where *w) { return qt_error(QT_ERR_NOMEM, "%s: out of memory", w->name); }

/* A string field that must be there: *out malloc'd. */
static qt_status need_string(const where *w, json_t *obj, const char *key, const char *field, char **out) {
    json_t *v = json_object_get(obj, key);
    if (!v) return FAIL(w, field, "missing");
    if (!json_is_string(v)) return FAIL(w, field, "must be a string");
    return (*out = dup_str(json_string_value(v))) ? QT_OK : nomem(w);
}

static char *compact(json_t *v) { return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS); }

/* Keys each check type may carry besides "type". */
static const char *const check_keys[QT_CHECK__COUNT][4] = {
    [QT_CHECK_EXACT] = {"value", "normalize"},
    [QT_CHECK_CONTAINS] = {"value"},
    [QT_CHECK_REGEX] = {"pattern"},
    [QT_CHECK_JSON] = {NULL},
    [QT_CHECK_JSON_SCHEMA] = {"schema"},
    [QT_CHECK_TOOL_CALL] = {"tools"},
    [QT_CHECK_REFUSAL] = {"expect"},
    [QT_CHECK_CHOICE] = {"choices", "answer"},
};

static qt_status check_unknown_keys(const where *w, json_t *obj, qt_check_type t, const char *field) {
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        bool ok = !strcmp(k, "type");
        for (int i = 0; i < 4 && check_keys[t][i]; i++) ok |= !strcmp(k, check_keys[t][i]);
        if (!ok) return FAIL(w, field, "'%s' is not a field of a %s check", k, qt_check_type_name(t));
    }
    return QT_OK;
}

static qt_status parse_choice(const where *w, json_t *obj, const char *field, qt_task_check *c) {
    char f[96];
    json_t *ch = json_object_get(obj, "choices"), *ans = json_object_get(obj, "answer");
    snprintf(f, sizeof f, "%s.choices", field);
    if (!json_is_array(ch) || json_array_size(ch) < 2 || json_array_size(ch) > 1000)
        return FAIL(w, f, "must be a list of 2 to 1000 strings");
    size_t n = json_array_size(ch);
    if (!(c->choices = calloc(n, sizeof(char *)))) return nomem(w);
    for (size_t j = 0; j < n; j++) {
        json_t *e = json_array_get(ch, j);
        if (!json_is_string(e) || json_string_length(e) == 0) return FAIL(w, f, "item %zu: must be a non-empty string", j);
        if (!(c->choices[j] = dup_str(json_string_value(e)))) return nomem(w);
        c->n_choices++;
    }
    snprintf(f, sizeof f, "%s.answer", field);
    if (!json_is_integer(ans)) return FAIL(w, f, "must be the integer index of the right choice");
    if (json_integer_value(ans) < 0 || json_integer_value(ans) >= (json_int_t)n)
        return FAIL(w, f, "%lld is out of range for %zu choices", (long long)json_integer_value(ans), n);
    c->answer = (int32_t)json_integer_value(ans);
    return QT_OK;
}

static qt_status parse_check(const where *w, json_t *obj, int32_t k, qt_task_check *c) {
    char field[64], f[96];
    snprintf(field, sizeof field, "checks[%d]", (int)k);
    if (!json_is_object(obj)) return FAIL(w, field, "must be an object {\"type\": ...}");
    json_t *tv = json_object_get(obj, "type");
    snprintf(f, sizeof f, "%s.type", field);
    if (!json_is_string(tv)) return FAIL(w, f, "missing or not a string");
    int t = qt__check_type_parse(json_string_value(tv));
    if (t < 0)
        return FAIL(w, f, "unknown check type '%s' (known: exact, contains, regex, json, json_schema, tool_call, refusal, choice)",
                    json_string_value(tv));
    c->type = (qt_check_type)t;
    qt_status s = check_unknown_keys(w, obj, c->type, field);
    if (s) return s;
    json_t *v;
    switch (c->type) {
    case QT_CHECK_EXACT:
        v = json_object_get(obj, "normalize");
        snprintf(f, sizeof f, "%s.normalize", field);
        if (v && !json_is_boolean(v)) return FAIL(w, f, "must be true or false");
        c->normalize = json_is_true(v);
        /* fall through */
    case QT_CHECK_CONTAINS:
        snprintf(f, sizeof f, "%s.value", field);
        return need_string(w, obj, "value", f, &c->value);
    case QT_CHECK_REGEX: {
        snprintf(f, sizeof f, "%s.pattern", field);
        if ((s = need_string(w, obj, "pattern", f, &c->pattern))) return s;
        void *re;
        if ((s = qt__regex_compile(c->pattern, &re))) return FAIL(w, f, "%s", qt_last_error());
        qt__regex_free(re);
        return QT_OK;
    }
    case QT_CHECK_JSON_SCHEMA:
        snprintf(f, sizeof f, "%s.schema", field);
        if (!(v = json_object_get(obj, "schema"))) return FAIL(w, f, "missing");
        if ((s = qt__schema_validate(v, "$"))) return FAIL(w, f, "%s", qt_last_error());
        return (c->schema = compact(v)) ? QT_OK : nomem(w);
    case QT_CHECK_TOOL_CALL:
        snprintf(f, sizeof f, "%s.tools", field);
        if (!(v = json_object_get(obj, "tools"))) return FAIL(w, f, "missing");
        if ((s = qt__tools_validate(v))) return FAIL(w, f, "%s", qt_last_error());
        return (c->tools = compact(v)) ? QT_OK : nomem(w);
    case QT_CHECK_REFUSAL:
        snprintf(f, sizeof f, "%s.expect", field);
        v = json_object_get(obj, "expect");
        if (!json_is_boolean(v)) return FAIL(w, f, "missing or not true/false");
        c->expect = json_is_true(v);
        return QT_OK;
    case QT_CHECK_CHOICE: return parse_choice(w, obj, field, c);
    default: return QT_OK; /* json: nothing more */
    }
}

static qt_status parse_stop(const where *w, json_t *v, qt_task_item *it) {
    if (!v) return QT_OK;
    size_t n = json_is_string(v) ? 1 : json_is_array(v) ? json_array_size(v) : 0;
    if (!json_is_string(v) && !json_is_array(v)) return FAIL(w, "stop", "must be a string or a list of strings");
    if (n > MAX_STOPS) return FAIL(w, "stop", "%zu strings, at most %d", n, MAX_STOPS);
    if (n && !(it->stop = calloc(n, sizeof(char *)))) return nomem(w);
    for (size_t j = 0; j < n; j++) {
        json_t *e = json_is_string(v) ? v : json_array_get(v, j);
        if (!json_is_string(e) || json_string_length(e) == 0) return FAIL(w, "stop", "item %zu: must be a non-empty string", j);
        if (!(it->stop[j] = dup_str(json_string_value(e)))) return nomem(w);
        it->n_stop++;
    }
    return QT_OK;
}

static qt_status parse_messages(const where *w, json_t *v, qt_task_item *it) {
    if (!json_is_array(v) || json_array_size(v) == 0) return FAIL(w, "messages", "must be a non-empty list of {\"role\", \"content\"}");
    size_t j;
    json_t *m;
    json_array_foreach(v, j, m) {
        if (!json_is_object(m) || !json_is_string(json_object_get(m, "role")) || !json_is_string(json_object_get(m, "content")))
            return FAIL(w, "messages", "item %zu: needs \"role\" and \"content\" strings", j);
    }
    return (it->messages = json_dumps(v, JSON_COMPACT)) ? QT_OK : nomem(w);
}

static qt_status parse_id(const where *w, json_t *v, qt_task_item *it) {
    char buf[64];
    if (!v) snprintf(buf, sizeof buf, "line %lld", w->line);
    else if (json_is_integer(v)) snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
    else if (!json_is_string(v) || json_string_length(v) == 0) return FAIL(w, "id", "must be a non-empty string or an integer");
    it->id = dup_str(v && json_is_string(v) ? json_string_value(v) : buf);
    return it->id ? QT_OK : nomem(w);
}

/* A --mc line: its context is the prompt, its endings and label one choice check. */
static qt_status from_mc(const where *w, json_t *obj, qt_task_item *it) {
    qt_mc_item mc;
    qt_status s = qt__mc_parse_item(obj, w->name, w->line, &mc);
    it->prompt = mc.context;
    if (!(it->checks = calloc(1, sizeof *it->checks))) s = s ? s : nomem(w);
    if (it->checks) {
        it->n_checks = 1;
        it->checks[0] = (qt_task_check){.type = QT_CHECK_CHOICE, .n_choices = mc.n_endings, .choices = mc.endings,
                                         .answer = mc.label};
    } else {
        for (int32_t j = 0; j < mc.n_endings; j++) free(mc.endings[j]);
        free(mc.endings);
    }
    if (!s) s = parse_id(w, json_object_get(obj, "id"), it);
    return s;
}

static const char *const item_keys[] = {"id", "prompt", "messages", "max_tokens", "stop", "checks"};

static qt_status parse_item(const where *w, json_t *obj, qt_task_item *it) {
    memset(it, 0, sizeof *it);
    it->line = w->line;
    it->max_tokens = MAX_TOKENS_DEFAULT;
    if (!json_is_object(obj)) return qt_error(QT_ERR_FORMAT, "%s:%lld: expected a JSON object per line", w->name, w->line);
    json_t *prompt = json_object_get(obj, "prompt"), *msgs = json_object_get(obj, "messages");
    if (!prompt && !msgs && (json_object_get(obj, "endings") || json_object_get(obj, "context") || json_object_get(obj, "ctx")))
        return from_mc(w, obj, it);
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        bool ok = false;
        for (size_t i = 0; i < sizeof item_keys / sizeof *item_keys; i++) ok |= !strcmp(k, item_keys[i]);
        if (!ok) return FAIL(w, k, "unknown field (known: id, prompt, messages, max_tokens, stop, checks)");
    }
    qt_status s = parse_id(w, json_object_get(obj, "id"), it);
    if (s) return s;
    if (prompt && msgs) return FAIL(w, "prompt", "give either 'prompt' or 'messages', not both");
    if (!prompt && !msgs) return FAIL(w, "prompt", "missing (or 'messages')");
    if (prompt && (s = need_string(w, obj, "prompt", "prompt", &it->prompt))) return s;
    if (msgs && (s = parse_messages(w, msgs, it))) return s;
    if ((v = json_object_get(obj, "max_tokens"))) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > MAX_TOKENS_LIMIT)
            return FAIL(w, "max_tokens", "must be an integer in 1..%d", MAX_TOKENS_LIMIT);
        it->max_tokens = (int32_t)json_integer_value(v);
    }
    if ((s = parse_stop(w, json_object_get(obj, "stop"), it))) return s;
    json_t *checks = json_object_get(obj, "checks");
    if (!json_is_array(checks) || json_array_size(checks) == 0) return FAIL(w, "checks", "must be a non-empty list of checks");
    size_t n = json_array_size(checks);
    if (n > MAX_CHECKS) return FAIL(w, "checks", "%zu checks, at most %d", n, MAX_CHECKS);
    if (!(it->checks = calloc(n, sizeof *it->checks))) return nomem(w);
    for (size_t j = 0; j < n && !s; j++) {
        s = parse_check(w, json_array_get(checks, j), (int32_t)j, &it->checks[j]);
        it->n_checks++; /* counted even on failure so item_free releases it */
        if (!s && it->checks[j].type == QT_CHECK_CHOICE && it->messages)
            s = FAIL(w, "checks", "a choice check needs a 'prompt' (it scores the choices after the prompt's text)");
    }
    return s;
}

static bool blank(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r') return false;
    return true;
}

static qt_status add_line(qt_task_set *set, int32_t *cap, const where *w, const char *p, size_t n) {
    json_error_t jerr;
    json_t *obj = json_loadb(p, n, JSON_REJECT_DUPLICATES, &jerr);
    if (!obj) return qt_error(QT_ERR_FORMAT, "%s:%lld: column %d: invalid JSON: %s", w->name, w->line, jerr.column, jerr.text);
    if (set->n_items == *cap) {
        int32_t nc = *cap ? *cap * 2 : 64;
        qt_task_item *ni = realloc(set->items, sizeof *ni * (size_t)nc);
        if (!ni) { json_decref(obj); return nomem(w); }
        set->items = ni;
        *cap = nc;
    }
    qt_task_item *it = &set->items[set->n_items++]; /* counted even on failure so qt_tasks_free releases it */
    qt_status s = parse_item(w, obj, it);
    json_decref(obj);
    for (int32_t i = 0; i + 1 < set->n_items && !s; i++)
        if (!strcmp(set->items[i].id, it->id))
            s = FAIL(w, "id", "'%s' is also the id of line %lld", it->id, (long long)set->items[i].line);
    for (int32_t j = 0; j < it->n_checks && !s; j++) {
        set->n_by_type[it->checks[j].type]++;
        it->generates |= it->checks[j].type != QT_CHECK_CHOICE;
    }
    return s;
}

qt_status qt_tasks_parse(const char *text, size_t len, const char *name, qt_task_set **out) {
    *out = NULL;
    qt_task_set *set = calloc(1, sizeof *set);
    if (!set) return qt_error(QT_ERR_NOMEM, "%s: out of memory", name);
    int32_t cap = 0;
    qt_status s = QT_OK;
    where w = {name, 0};
    for (size_t pos = 0; pos < len && s == QT_OK;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        w.line++;
        if (!blank(text + pos, end - pos)) s = add_line(set, &cap, &w, text + pos, end - pos);
        pos = end + 1;
    }
    if (s == QT_OK && set->n_items == 0) s = qt_error(QT_ERR_FORMAT, "%s: no items (expected one JSON object per line)", name);
    if (s) { qt_tasks_free(set); return s; }
    *out = set;
    return QT_OK;
}

qt_status qt_tasks_load(const char *path, qt_task_set **out) {
    char *text;
    size_t size;
    *out = NULL;
    qt_status s = qt_read_file(path, &text, &size);
    if (s) return s;
    s = qt_tasks_parse(text, size, path, out);
    free(text);
    return s;
}
