/* lib/serve/request.c — OpenAI-style request bodies (quanta/serve.h): parsed
 * with jansson, every field checked, every refusal naming its field with the
 * HTTP status to answer. Fields that only change presentation or that no
 * engine here implements are handled as follows: "n" must be 1, "stop" must be
 * absent, null or empty (stop strings are not implemented, and ignoring them
 * would return text the client asked not to get), "logprobs" and "echo" are
 * read on completions only (chat's logprobs are not implemented and a request
 * for them is refused), anything unknown is ignored.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quanta/serve.h"
#include "quanta/template.h"

/* A refusal: message in qt_last_error(), status for the client. */
static qt_status refuse(int *http, int status, const char *fmt, const char *a, const char *b) {
    *http = status;
    return qt_error(QT_ERR_ARG, fmt, a, b);
}

static qt_status get_number(json_t *o, const char *key, double lo, double hi, double *out, int *http) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return QT_OK;
    if (!json_is_number(v)) return refuse(http, 400, "'%s' must be a number%s", key, "");
    const double d = json_number_value(v);
    if (!(d >= lo && d <= hi)) {
        char range[96];
        snprintf(range, sizeof range, " in [%g, %g]", lo, hi);
        return refuse(http, 400, "'%s' must be a number%s", key, range);
    }
    *out = d;
    return QT_OK;
}

static qt_status get_int(json_t *o, const char *key, long long lo, long long hi, long long *out, int *http) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return QT_OK;
    if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) && fabs(json_real_value(v)) < 1e15)
        v = json_integer((json_int_t)json_real_value(v)); /* 16.0 is 16 */
    else
        json_incref(v);
    qt_status s = QT_OK;
    if (!json_is_integer(v)) s = refuse(http, 400, "'%s' must be an integer%s", key, "");
    else if (json_integer_value(v) < lo || json_integer_value(v) > hi) {
        char range[96];
        snprintf(range, sizeof range, " in [%lld, %lld]", lo, hi);
        s = refuse(http, 400, "'%s' must be an integer%s", key, range);
    } else {
        *out = json_integer_value(v);
    }
    json_decref(v);
    return s;
}

static qt_status get_bool(json_t *o, const char *key, bool *out, int *http) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return QT_OK;
    if (!json_is_boolean(v)) return refuse(http, 400, "'%s' must be true or false%s", key, "");
    *out = json_is_true(v);
    return QT_OK;
}

static qt_status parse_sampling(json_t *o, qt_serve_request *r, int *http) {
    double temp = 1.0, top_p = 1.0;
    long long top_k = 0, seed = 42, max_tokens = -1, n = 1;
    qt_status s = get_number(o, "temperature", 0.0, 100.0, &temp, http);
    if (!s) s = get_number(o, "top_p", 1e-6, 1.0, &top_p, http);
    if (!s) s = get_int(o, "top_k", -1, 1 << 30, &top_k, http);
    if (!s) s = get_int(o, "seed", -0x7fffffffffffffffLL, 0x7fffffffffffffffLL, &seed, http);
    if (!s) s = get_int(o, "max_tokens", 0, 1 << 30, &max_tokens, http);
    if (!s && r->kind == QT_SERVE_CHAT) s = get_int(o, "max_completion_tokens", 0, 1 << 30, &max_tokens, http);
    if (!s) s = get_int(o, "n", 1, 1, &n, http);
    if (!s) s = get_bool(o, "stream", &r->stream, http);
    if (!s) s = get_bool(o, "ignore_eos", &r->ignore_eos, http);
    long long logprobs = -1;
    r->logprobs = -1;
    if (!s && r->kind == QT_SERVE_COMPLETION) s = get_bool(o, "echo", &r->echo, http);
    if (!s && r->kind == QT_SERVE_COMPLETION) s = get_int(o, "logprobs", 0, QT_SERVE_MAX_LOGPROBS, &logprobs, http);
    if (!s && r->kind == QT_SERVE_CHAT && json_is_true(json_object_get(o, "logprobs")))
        s = refuse(http, 400, "'%s': log-probabilities are not supported on chat completions by quanta serve "
                              "(use /v1/completions)%s", "logprobs", "");
    if (s) return s;
    r->logprobs = (int32_t)logprobs;
    if (r->stream && r->logprobs >= 0)
        return refuse(http, 400, "'%s': log-probabilities are not supported on a streamed answer by quanta serve%s", "logprobs", "");
    r->temperature = (float)temp;
    r->top_p = (float)top_p;
    r->top_k = (int32_t)(top_k < 0 ? 0 : top_k);
    r->seed = (uint64_t)seed;
    r->max_tokens = (int32_t)max_tokens;

    json_t *so = json_object_get(o, "stream_options");
    if (so && !json_is_null(so)) {
        if (!json_is_object(so)) return refuse(http, 400, "'%s' must be an object%s", "stream_options", "");
        if ((s = get_bool(so, "include_usage", &r->include_usage, http))) return s;
    }
    json_t *stop = json_object_get(o, "stop");
    if (stop && !json_is_null(stop) && !(json_is_array(stop) && json_array_size(stop) == 0) &&
        !(json_is_string(stop) && json_string_length(stop) == 0))
        return refuse(http, 400, "'%s': stop sequences are not supported by quanta serve%s", "stop", "");
    return QT_OK;
}

static qt_status parse_prompt(json_t *o, qt_serve_request *r, int *http) {
    json_t *p = json_object_get(o, "prompt");
    if (p && json_is_array(p) && json_array_size(p) == 1 && json_is_string(json_array_get(p, 0))) p = json_array_get(p, 0);
    if (json_is_string(p)) {
        r->prompt = strndup(json_string_value(p), json_string_length(p));
        if (!r->prompt) return qt_error(QT_ERR_NOMEM, "out of memory");
        if (strlen(r->prompt) != json_string_length(p)) return refuse(http, 400, "'%s' contains a NUL character%s", "prompt", "");
        return QT_OK;
    }
    if (!json_is_array(p) || json_array_size(p) == 0)
        return refuse(http, 400, "'%s' must be a string, a list of one string or a list of token ids%s", "prompt", "");
    const size_t n = json_array_size(p);
    if (n > (1u << 24)) return refuse(http, 400, "'%s': too many token ids%s", "prompt", "");
    r->prompt_ids = malloc(n * sizeof *r->prompt_ids);
    if (!r->prompt_ids) return qt_error(QT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_array_get(p, i);
        if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) > 0x7fffffff)
            return refuse(http, 400, "'%s' must be a string, a list of one string or a list of token ids%s"
                                     " (one prompt per request)", "prompt", "");
        r->prompt_ids[i] = (int32_t)json_integer_value(t);
    }
    r->n_prompt_ids = (int32_t)n;
    return QT_OK;
}

/* A message's content: a string, or a list of {"type": "text", "text": ...} parts, joined. */
static qt_status message_content(json_t *m, size_t i, char **out, int *http) {
    char where[64];
    snprintf(where, sizeof where, "messages[%zu].content", i);
    json_t *c = json_object_get(m, "content");
    if (json_is_string(c)) {
        *out = strdup(json_string_value(c));
        if (!*out) return qt_error(QT_ERR_NOMEM, "out of memory");
        if (strlen(*out) != json_string_length(c)) return refuse(http, 400, "'%s' contains a NUL character%s", where, "");
        return QT_OK;
    }
    if (!json_is_array(c)) return refuse(http, 400, "'%s' must be a string or a list of text parts%s", where, "");
    size_t total = 1;
    for (size_t k = 0; k < json_array_size(c); k++) {
        json_t *part = json_array_get(c, k), *ty = json_object_get(part, "type"), *tx = json_object_get(part, "text");
        if (!json_is_string(ty) || strcmp(json_string_value(ty), "text") || !json_is_string(tx) ||
            strlen(json_string_value(tx)) != json_string_length(tx))
            return refuse(http, 400, "'%s': only text parts ({\"type\": \"text\", \"text\": ...}) are supported%s", where, "");
        total += json_string_length(tx);
    }
    *out = malloc(total);
    if (!*out) return qt_error(QT_ERR_NOMEM, "out of memory");
    (*out)[0] = 0;
    for (size_t k = 0; k < json_array_size(c); k++) strcat(*out, json_string_value(json_object_get(json_array_get(c, k), "text")));
    return QT_OK;
}

/* The messages as the model's own template sees them: each object as sent,
 * with its content flattened to one string. */
static qt_status render_model(json_t *o, json_t *ms, char **contents, const qt_vocab *vocab, char **out, int *http) {
    json_t *kw = json_object_get(o, "chat_template_kwargs");
    if (kw && !json_is_null(kw) && !json_is_object(kw))
        return refuse(http, 400, "'%s' must be an object%s", "chat_template_kwargs", "");
    json_t *list = json_array();
    for (size_t i = 0; list && i < json_array_size(ms); i++) {
        json_t *m = json_copy(json_array_get(ms, i));
        if (!m || json_object_set_new(m, "content", json_string(contents[i])) || json_array_append_new(list, m)) {
            json_decref(list);
            list = NULL;
        }
    }
    char *msgs = list ? json_dumps(list, JSON_COMPACT) : NULL, *extra = kw && json_is_object(kw) ? json_dumps(kw, JSON_COMPACT) : NULL;
    json_decref(list);
    qt_status s = msgs && (extra || !kw || json_is_null(kw)) ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
    if (s == QT_OK) {
        qt_chat_opts co = {.add_generation_prompt = true, .extra_json = extra, .now = (int64_t)time(NULL)};
        s = qt_chat_apply_vocab(vocab, msgs, &co, out);
        if (s != QT_OK && s != QT_ERR_NOMEM) {
            char why[512];
            snprintf(why, sizeof why, "%s", qt_last_error());
            *http = 400;
            s = qt_error(s, "'messages': the model's chat template: %s", why);
        }
    }
    free(msgs);
    free(extra);
    return s;
}

static qt_status parse_messages(json_t *o, qt_chat_template tpl, const qt_vocab *vocab, qt_serve_request *r, int *http) {
    json_t *ms = json_object_get(o, "messages");
    if (!json_is_array(ms) || json_array_size(ms) == 0)
        return refuse(http, 400, "'%s' must be a non-empty list of {\"role\", \"content\"} objects%s", "messages", "");
    const size_t n = json_array_size(ms);
    if (n > 100000) return refuse(http, 400, "'%s': too many messages%s", "messages", "");
    const char **roles = calloc(n, sizeof *roles);
    char **contents = calloc(n, sizeof *contents);
    qt_status s = roles && contents ? QT_OK : qt_error(QT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n && s == QT_OK; i++) {
        json_t *m = json_array_get(ms, i), *role = json_object_get(m, "role");
        char where[48];
        snprintf(where, sizeof where, "messages[%zu].role", i);
        if (!json_is_object(m) || !json_is_string(role)) s = refuse(http, 400, "'%s' must be a string%s", where, "");
        else roles[i] = json_string_value(role);
        if (s == QT_OK) s = message_content(m, i, &contents[i], http);
    }
    if (s == QT_OK && tpl == QT_CHAT_MODEL) {
        s = render_model(o, ms, contents, vocab, &r->prompt, http);
    } else if (s == QT_OK) {
        s = qt_chat_render(tpl, roles, (const char *const *)contents, (int32_t)n, &r->prompt);
        if (s != QT_OK) *http = 400;
    }
    for (size_t i = 0; contents && i < n; i++) free(contents[i]);
    free(contents);
    free(roles);
    return s;
}

qt_status qt_serve_request_parse(const char *body, size_t len, qt_serve_kind kind, qt_chat_template tpl,
                                 const qt_vocab *vocab, qt_serve_request *out, int *http_status) {
    memset(out, 0, sizeof *out);
    out->kind = kind;
    *http_status = 500;
    json_error_t jerr;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!o) {
        *http_status = 400;
        return qt_error(QT_ERR_ARG, "the body is not valid JSON: %s (line %d, column %d)", jerr.text, jerr.line, jerr.column);
    }
    qt_status s = QT_OK;
    if (!json_is_object(o)) s = refuse(http_status, 400, "the body must be a JSON object%s%s", "", "");
    json_t *model = s ? NULL : json_object_get(o, "model");
    if (!s && model && !json_is_null(model)) {
        if (!json_is_string(model)) s = refuse(http_status, 400, "'%s' must be a string%s", "model", "");
        else if (!(out->model = strdup(json_string_value(model)))) s = qt_error(QT_ERR_NOMEM, "out of memory");
    }
    if (!s) s = parse_sampling(o, out, http_status);
    if (!s) s = kind == QT_SERVE_CHAT ? parse_messages(o, tpl, vocab, out, http_status) : parse_prompt(o, out, http_status);
    json_decref(o);
    if (s != QT_OK) {
        if (s == QT_ERR_NOMEM) *http_status = 500;
        qt_serve_request_free(out);
        out->kind = kind;
    }
    return s;
}

void qt_serve_request_free(qt_serve_request *r) {
    if (!r) return;
    free(r->model);
    free(r->prompt);
    free(r->prompt_ids);
    memset(r, 0, sizeof *r);
}
