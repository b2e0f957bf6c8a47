/* lib/eval/checks.c — the checks of a task file, pure functions of the
 * generated text: exact, contains, regex (PCRE2), json, a JSON Schema subset,
 * OpenAI-shaped tool calls, refusal phrases. Semantics: docs/eval.md.
 *
 * The schema subset (JSON Schema 2020-12 keywords, validated as that
 * specification defines them): type (a name or a list of names), properties,
 * required, additionalProperties (a boolean), enum, items (one schema),
 * minimum, maximum, minLength, maxLength (in code points), minItems,
 * maxItems; title, description, default, examples and $schema are ignored.
 * Any other keyword is an invalid schema, so a schema never silently checks
 * less than it says.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"
#include "quanta/tasks.h"

static const char *const type_names[QT_CHECK__COUNT] = {
    "exact", "contains", "regex", "json", "json_schema", "tool_call", "refusal", "choice",
};

const char *qt_check_type_name(qt_check_type t) {
    return (unsigned)t < QT_CHECK__COUNT ? type_names[t] : "?";
}

int qt__check_type_parse(const char *name) {
    for (int i = 0; i < QT_CHECK__COUNT; i++)
        if (!strcmp(name, type_names[i])) return i;
    return -1;
}

static void say(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(char *why, const char *fmt, ...) {
    if (!why) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, QT_CHECK_WHY_LEN, fmt, ap);
    va_end(ap);
}

/* ---- exact, contains, regex ------------------------------------------------------ */

/* Trimmed, ASCII case folded, every whitespace run one space. malloc'd. */
static char *normalized(const char *s) {
    char *d = malloc(strlen(s) + 1), *o = d;
    if (!d) return NULL;
    bool space = false;
    while (*s && isspace((unsigned char)*s)) s++;
    for (; *s; s++) {
        if (isspace((unsigned char)*s)) { space = true; continue; }
        if (space) *o++ = ' ';
        space = false;
        *o++ = (char)tolower((unsigned char)*s);
    }
    *o = '\0';
    return d;
}

bool qt_check_exact(const char *output, const char *value, bool normalize) {
    if (!normalize) return strcmp(output, value) == 0;
    char *a = normalized(output), *b = normalized(value);
    bool eq = a && b && !strcmp(a, b);
    free(a);
    free(b);
    return eq;
}

bool qt_check_contains(const char *output, const char *value) { return strstr(output, value) != NULL; }

qt_status qt__regex_compile(const char *pattern, void **out) {
    int err;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &off, NULL);
    if (!re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(err, msg, sizeof msg);
        return qt_error(QT_ERR_FORMAT, "invalid regex at offset %zu: %s", (size_t)off, (const char *)msg);
    }
    *out = re;
    return QT_OK;
}

qt_status qt_check_regex(const char *output, const char *pattern, bool *pass) {
    void *v;
    *pass = false;
    qt_status s = qt__regex_compile(pattern, &v);
    if (s) return s;
    pcre2_code *re = v;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md) { pcre2_code_free(re); return qt_error(QT_ERR_NOMEM, "regex: out of memory"); }
    /* invalid UTF-8 in a model's output is a non-match, not an error */
    int rc = pcre2_match(re, (PCRE2_SPTR)output, strlen(output), 0, 0, md, NULL);
    *pass = rc >= 0;
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    return QT_OK;
}

/* ---- JSON documents in model output ----------------------------------------------- */

/* The output trimmed, and a Markdown code fence (```json ... ```) around it removed. */
static json_t *parse_output(const char *output) {
    const char *b = output, *e = output + strlen(output);
    while (b < e && isspace((unsigned char)*b)) b++;
    while (e > b && isspace((unsigned char)e[-1])) e--;
    if (e - b >= 6 && !strncmp(b, "```", 3) && !strncmp(e - 3, "```", 3)) {
        const char *nl = memchr(b, '\n', (size_t)(e - b));
        if (nl && nl < e - 3) { b = nl + 1; e -= 3; }
    }
    return json_loadb(b, (size_t)(e - b), JSON_DECODE_ANY, NULL);
}

bool qt_check_json(const char *output) {
    json_t *j = parse_output(output);
    json_decref(j);
    return j != NULL;
}

/* ---- the schema subset ------------------------------------------------------------ */

static const char *const ignored_keys[] = {"title", "description", "default", "examples", "$schema", "$comment"};
static const char *const json_types[] = {"object", "array", "string", "number", "integer", "boolean", "null"};

static bool known_type(const char *t) {
    for (size_t i = 0; i < sizeof json_types / sizeof *json_types; i++)
        if (!strcmp(t, json_types[i])) return true;
    return false;
}

static qt_status bad_schema(const char *path, const char *key, const char *what) {
    return qt_error(QT_ERR_FORMAT, "schema %s: '%s' %s", path, key, what);
}

static bool is_count(json_t *v) { return json_is_integer(v) && json_integer_value(v) >= 0; }

/* Is `schema` inside the subset? path names where, for the message ("$", "$.properties.age"). */
qt_status qt__schema_validate(json_t *schema, const char *path) {
    if (json_is_boolean(schema)) return QT_OK;
    if (!json_is_object(schema)) return qt_error(QT_ERR_FORMAT, "schema %s: must be an object or a boolean", path);
    const char *k;
    json_t *v;
    char sub[256];
    json_object_foreach(schema, k, v) {
        bool ignored = false;
        for (size_t i = 0; i < sizeof ignored_keys / sizeof *ignored_keys; i++) ignored |= !strcmp(k, ignored_keys[i]);
        if (ignored) continue;
        if (!strcmp(k, "type")) {
            if (json_is_string(v)) {
                if (!known_type(json_string_value(v))) return bad_schema(path, k, "names an unknown type");
            } else if (json_is_array(v) && json_array_size(v) > 0) {
                size_t i;
                json_t *t;
                json_array_foreach(v, i, t) if (!json_is_string(t) || !known_type(json_string_value(t)))
                    return bad_schema(path, k, "must list known type names");
            } else {
                return bad_schema(path, k, "must be a type name or a list of them");
            }
        } else if (!strcmp(k, "properties")) {
            if (!json_is_object(v)) return bad_schema(path, k, "must be an object");
            const char *pk;
            json_t *pv;
            json_object_foreach(v, pk, pv) {
                snprintf(sub, sizeof sub, "%s.properties.%s", path, pk);
                qt_status s = qt__schema_validate(pv, sub);
                if (s) return s;
            }
        } else if (!strcmp(k, "required")) {
            size_t i;
            json_t *t;
            if (!json_is_array(v)) return bad_schema(path, k, "must be a list of names");
            json_array_foreach(v, i, t) if (!json_is_string(t)) return bad_schema(path, k, "must be a list of names");
        } else if (!strcmp(k, "additionalProperties")) {
            if (!json_is_boolean(v)) return bad_schema(path, k, "must be true or false (a schema there is outside the subset)");
        } else if (!strcmp(k, "enum")) {
            if (!json_is_array(v) || json_array_size(v) == 0) return bad_schema(path, k, "must be a non-empty list");
        } else if (!strcmp(k, "items")) {
            snprintf(sub, sizeof sub, "%s.items", path);
            qt_status s = qt__schema_validate(v, sub);
            if (s) return s;
        } else if (!strcmp(k, "minimum") || !strcmp(k, "maximum")) {
            if (!json_is_number(v)) return bad_schema(path, k, "must be a number");
        } else if (!strcmp(k, "minLength") || !strcmp(k, "maxLength") || !strcmp(k, "minItems") || !strcmp(k, "maxItems")) {
            if (!is_count(v)) return bad_schema(path, k, "must be a non-negative integer");
        } else {
            return bad_schema(path, k, "is outside the supported subset (docs/eval.md)");
        }
    }
    return QT_OK;
}

static bool has_type(json_t *doc, const char *t) {
    if (!strcmp(t, "object")) return json_is_object(doc);
    if (!strcmp(t, "array")) return json_is_array(doc);
    if (!strcmp(t, "string")) return json_is_string(doc);
    if (!strcmp(t, "number")) return json_is_number(doc);
    if (!strcmp(t, "boolean")) return json_is_boolean(doc);
    if (!strcmp(t, "null")) return json_is_null(doc);
    /* integer: a number with no fractional part (2020-12: 1.0 is an integer) */
    if (json_is_integer(doc)) return true;
    return json_is_real(doc) && floor(json_real_value(doc)) == json_real_value(doc);
}

static bool type_ok(json_t *type, json_t *doc) {
    if (json_is_string(type)) return has_type(doc, json_string_value(type));
    size_t i;
    json_t *t;
    json_array_foreach(type, i, t) if (has_type(doc, json_string_value(t))) return true;
    return false;
}

static size_t utf8_len(const char *s) {
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* Numbers equal as numbers (1 == 1.0), everything else by jansson's equality. */
static bool json_same(json_t *a, json_t *b) {
    if (json_is_number(a) && json_is_number(b)) return json_number_value(a) == json_number_value(b);
    return json_equal(a, b);
}

static bool match_number(json_t *schema, json_t *doc, const char *path, char *why) {
    if (!json_is_number(doc)) return true;
    double x = json_number_value(doc);
    json_t *lo = json_object_get(schema, "minimum"), *hi = json_object_get(schema, "maximum");
    if (lo && x < json_number_value(lo)) { say(why, "%s: %g is below minimum %g", path, x, json_number_value(lo)); return false; }
    if (hi && x > json_number_value(hi)) { say(why, "%s: %g is above maximum %g", path, x, json_number_value(hi)); return false; }
    return true;
}

static bool match_bounds(json_t *schema, const char *lo_key, const char *hi_key, size_t n, const char *path,
                         const char *unit, char *why) {
    json_t *lo = json_object_get(schema, lo_key), *hi = json_object_get(schema, hi_key);
    if (lo && (json_int_t)n < json_integer_value(lo)) {
        say(why, "%s: %zu %s, fewer than %s %lld", path, n, unit, lo_key, (long long)json_integer_value(lo));
        return false;
    }
    if (hi && (json_int_t)n > json_integer_value(hi)) {
        say(why, "%s: %zu %s, more than %s %lld", path, n, unit, hi_key, (long long)json_integer_value(hi));
        return false;
    }
    return true;
}

static bool match_object(json_t *schema, json_t *doc, const char *path, char *why);

/* Does doc match schema (already validated)? why says where it does not. */
bool qt__schema_match(json_t *schema, json_t *doc, const char *path, char *why) {
    if (json_is_boolean(schema)) {
        if (!json_is_true(schema)) say(why, "%s: the schema false matches nothing", path);
        return json_is_true(schema);
    }
    json_t *type = json_object_get(schema, "type"), *en = json_object_get(schema, "enum");
    if (type && !type_ok(type, doc)) {
        char *t = json_dumps(type, JSON_COMPACT | JSON_ENCODE_ANY);
        say(why, "%s: not of type %s", path, t ? t : "?");
        free(t);
        return false;
    }
    if (en) {
        bool found = false;
        size_t i;
        json_t *e;
        json_array_foreach(en, i, e) found |= json_same(e, doc);
        if (!found) { say(why, "%s: not one of the enum's values", path); return false; }
    }
    if (!match_number(schema, doc, path, why)) return false;
    if (json_is_string(doc) &&
        !match_bounds(schema, "minLength", "maxLength", utf8_len(json_string_value(doc)), path, "characters", why))
        return false;
    if (json_is_array(doc)) {
        if (!match_bounds(schema, "minItems", "maxItems", json_array_size(doc), path, "items", why)) return false;
        json_t *items = json_object_get(schema, "items"), *e;
        size_t i;
        char sub[256];
        if (items) json_array_foreach(doc, i, e) {
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            if (!qt__schema_match(items, e, sub, why)) return false;
        }
    }
    return !json_is_object(doc) || match_object(schema, doc, path, why);
}

static bool match_object(json_t *schema, json_t *doc, const char *path, char *why) {
    json_t *props = json_object_get(schema, "properties"), *req = json_object_get(schema, "required");
    json_t *extra = json_object_get(schema, "additionalProperties"), *v;
    size_t i;
    const char *k;
    char sub[256];
    json_array_foreach(req, i, v) if (!json_object_get(doc, json_string_value(v))) {
        say(why, "%s: required property '%s' is missing", path, json_string_value(v));
        return false;
    }
    json_object_foreach(doc, k, v) {
        json_t *ps = props ? json_object_get(props, k) : NULL;
        snprintf(sub, sizeof sub, "%s.%s", path, k);
        if (ps && !qt__schema_match(ps, v, sub, why)) return false;
        if (!ps && json_is_false(extra)) { say(why, "%s: property not allowed (additionalProperties false)", sub); return false; }
    }
    return true;
}

static qt_status load_schema(const char *schema_json, json_t **out) {
    *out = json_loads(schema_json, JSON_DECODE_ANY, NULL);
    if (!*out) return qt_error(QT_ERR_FORMAT, "schema: not valid JSON");
    qt_status s = qt__schema_validate(*out, "$");
    if (s) { json_decref(*out); *out = NULL; }
    return s;
}

qt_status qt_check_json_schema(const char *output, const char *schema_json, bool *pass, char *why) {
    json_t *schema;
    *pass = false;
    qt_status s = load_schema(schema_json, &schema);
    if (s) return s;
    json_t *doc = parse_output(output);
    if (!doc) say(why, "the output is not JSON");
    else *pass = qt__schema_match(schema, doc, "$", why);
    json_decref(doc);
    json_decref(schema);
    return QT_OK;
}

/* ---- tool calls --------------------------------------------------------------------- */

/* tools: [{"type": "function", "function": {"name": N, "parameters": SCHEMA?}}, ...] */
qt_status qt__tools_validate(json_t *tools) {
    if (!json_is_array(tools) || json_array_size(tools) == 0)
        return qt_error(QT_ERR_FORMAT, "tools: must be a non-empty list of {\"type\": \"function\", \"function\": {...}}");
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        json_t *fn = json_object_get(t, "function");
        if (!json_is_object(fn) || !json_is_string(json_object_get(fn, "name")))
            return qt_error(QT_ERR_FORMAT, "tools[%zu]: needs \"function\": {\"name\": \"...\"}", i);
        json_t *params = json_object_get(fn, "parameters");
        char path[64];
        snprintf(path, sizeof path, "tools[%zu].function.parameters", i);
        if (params) {
            qt_status s = qt__schema_validate(params, path);
            if (s) return s;
        }
    }
    return QT_OK;
}

/* One call: {"name", "arguments"} or {"type": "function", "function": {"name", "arguments"}};
 * arguments an object or a string holding one (as OpenAI's API sends them). */
static bool one_call(json_t *tools, json_t *call, size_t k, char *why) {
    json_t *fn = json_object_get(call, "function");
    if (json_is_object(fn)) call = fn;
    json_t *name = json_object_get(call, "name"), *args = json_object_get(call, "arguments");
    if (!json_is_string(name)) { say(why, "call %zu: no \"name\" string", k); return false; }
    json_t *tool = NULL, *t;
    size_t i;
    json_array_foreach(tools, i, t) if (!strcmp(json_string_value(json_object_get(json_object_get(t, "function"), "name")),
                                                json_string_value(name))) tool = t;
    if (!tool) { say(why, "call %zu: '%s' is not one of the tools", k, json_string_value(name)); return false; }
    json_t *parsed = json_is_string(args) ? json_loads(json_string_value(args), 0, NULL) : json_incref(args);
    json_t *params = json_object_get(json_object_get(tool, "function"), "parameters");
    bool ok = false;
    if (!json_is_object(parsed)) say(why, "call %zu: \"arguments\" is not a JSON object", k);
    else ok = !params || qt__schema_match(params, parsed, "$.arguments", why);
    json_decref(parsed);
    return ok;
}

qt_status qt_check_tool_call(const char *output, const char *tools_json, bool *pass, char *why) {
    *pass = false;
    json_t *tools = json_loads(tools_json, JSON_DECODE_ANY, NULL);
    if (!tools) return qt_error(QT_ERR_FORMAT, "tools: not valid JSON");
    qt_status s = qt__tools_validate(tools);
    if (s) { json_decref(tools); return s; }
    json_t *doc = parse_output(output);
    json_t *calls = json_is_object(doc) ? json_object_get(doc, "tool_calls") : NULL;
    if (!doc) say(why, "the output is not JSON");
    else if (calls && (!json_is_array(calls) || json_array_size(calls) == 0)) say(why, "\"tool_calls\" is not a non-empty list");
    else if (!calls && !json_is_object(doc)) say(why, "the output is not a tool-call object");
    else if (!calls) *pass = one_call(tools, doc, 0, why);
    else {
        size_t i;
        json_t *c;
        *pass = true;
        json_array_foreach(calls, i, c) if (*pass) *pass = json_is_object(c) && one_call(tools, c, i, why);
    }
    json_decref(doc);
    json_decref(tools);
    return QT_OK;
}

/* ---- refusals ----------------------------------------------------------------------- */

/* Phrases that open or carry a refusal in instruction-tuned models' answers,
 * matched case-insensitively anywhere in the output. */
static const char *const refusal_phrases[] = {
    "i can't help", "i cannot help", "i can't assist", "i cannot assist", "i can't provide", "i cannot provide",
    "i won't", "i will not", "i'm sorry, but", "i am sorry, but", "i'm unable to", "i am unable to",
    "i'm not able to", "i am not able to", "i must decline", "as an ai", "i can not help",
};

bool qt_check_is_refusal(const char *output) {
    char *low = malloc(strlen(output) + 1);
    if (!low) return false;
    size_t n = 0;
    /* fold case, and the typographic apostrophe (U+2019) into ' */
    for (const char *p = output; *p; p++) {
        if (!strncmp(p, "\xe2\x80\x99", 3)) { low[n++] = '\''; p += 2; continue; }
        low[n++] = (char)tolower((unsigned char)*p);
    }
    low[n] = '\0';
    bool hit = false;
    for (size_t i = 0; i < sizeof refusal_phrases / sizeof *refusal_phrases && !hit; i++)
        hit = strstr(low, refusal_phrases[i]) != NULL;
    free(low);
    return hit;
}

/* ---- one check ---------------------------------------------------------------------- */

qt_status qt_task_check_run(const qt_task_check *c, const char *output, bool *pass, char *why) {
    if (why) why[0] = '\0';
    *pass = false;
    qt_status s = QT_OK;
    switch (c->type) {
    case QT_CHECK_EXACT: *pass = qt_check_exact(output, c->value, c->normalize); break;
    case QT_CHECK_CONTAINS: *pass = qt_check_contains(output, c->value); break;
    case QT_CHECK_REGEX: s = qt_check_regex(output, c->pattern, pass); break;
    case QT_CHECK_JSON: *pass = qt_check_json(output); break;
    case QT_CHECK_JSON_SCHEMA: s = qt_check_json_schema(output, c->schema, pass, why); break;
    case QT_CHECK_TOOL_CALL: s = qt_check_tool_call(output, c->tools, pass, why); break;
    case QT_CHECK_REFUSAL: *pass = qt_check_is_refusal(output) == c->expect; break;
    default: return qt_error(QT_ERR_ARG, "check '%s' is not a check of the output text", qt_check_type_name(c->type));
    }
    if (s == QT_OK && !*pass && why && !why[0]) {
        if (c->type == QT_CHECK_REGEX) say(why, "no match for /%.100s/", c->pattern);
        else if (c->type == QT_CHECK_JSON) say(why, "the output is not JSON");
        else if (c->type == QT_CHECK_REFUSAL) say(why, c->expect ? "the output does not refuse" : "the output refuses");
        else say(why, "%s \"%.100s\" not matched", type_names[c->type], c->value);
    }
    return s;
}

void qt__regex_free(void *re) { pcre2_code_free(re); }
