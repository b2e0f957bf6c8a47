/* lib/model/jinja*.c: the chat-template engine on small templates, one
 * construct at a time, with the outputs Jinja2 gives (Python semantics:
 * str(None), floor division, slicing, strip on Unicode whitespace), the
 * whitespace rules of transformers' environment (trim_blocks, lstrip_blocks,
 * "-"), scoping (a for loop's set is gone after the loop; namespace() is how
 * templates carry state out), the refusals (construct named, line and column),
 * and the limits that stop hostile templates. The real templates are rendered
 * against @huggingface/jinja in tests/interop/test_chat_template.sh. */
#include "qtest.h"
#include "quanta.h"
#include "quanta/template.h"

/* renders src with vars (JSON or NULL); NULL and the error kept on failure */
static char *render(const char *src, const char *vars, qt_status *st) {
    qt_template *t = NULL;
    char *out = NULL;
    qt_status s = qt_template_parse(src, strlen(src), &t);
    if (s == QT_OK) s = qt_template_render(t, vars, 1721952000 /* 2024-07-26 00:00 UTC */, &out);
    qt_template_free(t);
    if (st) *st = s;
    return out;
}

#define CHECK_RENDER(src, vars, want)                                                        \
    do {                                                                                     \
        qt_status s_;                                                                        \
        char *o_ = render(src, vars, &s_);                                                   \
        if (s_ != QT_OK) QT_FAIL_AT("%s: %s", src, qt_last_error());                         \
        else CHECK_EQ_STR(o_, want);                                                         \
        free(o_);                                                                            \
    } while (0)

/* fails with `want` and a message containing `needle` */
#define CHECK_REFUSED(src, vars, want, needle)                                               \
    do {                                                                                     \
        qt_status s_;                                                                        \
        char *o_ = render(src, vars, &s_);                                                   \
        CHECK_MSG(s_ == (want), "%s: status %s (want %s): %s", src, qt_status_name(s_), qt_status_name(want), \
                  qt_last_error());                                                          \
        CHECK_MSG(strstr(qt_last_error(), needle), "%s: message '%s' lacks '%s'", src, qt_last_error(), needle); \
        free(o_);                                                                            \
    } while (0)

static void test_text_and_output(void) {
    CHECK_RENDER("", NULL, "");
    CHECK_RENDER("plain { text } %}", NULL, "plain { text } %}");
    CHECK_RENDER("a{{ 'b' }}c{# note #}d", NULL, "abcd");
    CHECK_RENDER("{{ x }}|{{ y }}", "{\"x\": \"X\"}", "X|");            /* undefined prints nothing */
    CHECK_RENDER("{{ none }} {{ true }} {{ False }} {{ 3 }} {{ 2.5 }} {{ 1.0 }}", NULL, "None True False 3 2.5 1.0");
    CHECK_RENDER("{{ [1, 'a', none] }} {{ {'k': \"it's\"} }}", NULL, "[1, 'a', None] {'k': \"it's\"}");
    CHECK_RENDER("{{ 'a' 'b' }}{{ \"\\n\\t\\\\\" }}", NULL, "ab\n\t\\");
    CHECK_RENDER("line\n", NULL, "line");                               /* one trailing newline is dropped */
    CHECK_RENDER("line\n\n", NULL, "line\n");
}

static void test_whitespace(void) {
    /* trim_blocks: the newline after a block tag goes; lstrip_blocks: indentation before it */
    CHECK_RENDER("{% if true %}\n    yes\n    {% endif %}\nend", NULL, "    yes\nend");
    CHECK_RENDER("  {{ 'x' }}\n", NULL, "  x");                         /* not for {{ }} */
    CHECK_RENDER("a  {%- if true -%}  \n b \n {%- endif %}", NULL, "ab");
    CHECK_RENDER("a\n  {{- 'b' -}}\n  c", NULL, "abc");
    CHECK_RENDER("x {# c #}\ny", NULL, "x y");
    CHECK_RENDER("x\n  {#- c -#}\n  y", NULL, "xy");
}

static void test_operators(void) {
    CHECK_RENDER("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }}",
                 NULL, "7 9 3 -4 2 3.5 1024");
    CHECK_RENDER("{{ 'a' + 'b' }} {{ 'n' ~ 1 ~ none }} {{ 'ab' * 3 }} {{ [1] + [2] }}", NULL, "ab n1None ababab [1, 2]");
    CHECK_RENDER("{{ 1 == 1.0 }} {{ 'a' < 'b' }} {{ 2 >= 3 }} {{ [1, 2] == [1, 2] }} {{ {'a': 1} != {'a': 1} }}", NULL,
                 "True True False True False");
    CHECK_RENDER("{{ 'ell' in 'hello' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }}", NULL,
                 "True True True True");
    /* and / or give an operand, as Python */
    CHECK_RENDER("{{ '' or 'dflt' }} {{ 'a' and 'b' }} {{ 0 and 'b' }} {{ not 0 }}", NULL, "dflt b 0 True");
    CHECK_RENDER("{{ 'y' if 1 > 0 else 'n' }}{{ 'never' if false }}", NULL, "y");
    CHECK_RENDER("{{ x|length - 1 }}", "{\"x\": [1, 2, 3]}", "2");        /* filters bind tighter than - */
    CHECK_RENDER("{{ not x is defined }}", NULL, "True");
    CHECK_REFUSED("{{ 'a' + 1 }}", NULL, QT_ERR_ARG, "unsupported operand types for +: 'str' and 'int'");
    CHECK_REFUSED("{{ 1 // 0 }}", NULL, QT_ERR_ARG, "division by zero");
    /* 64-bit integers: an overflow is an error, never a wrong number */
    CHECK_RENDER("{{ 9223372036854775807 - 1 }} {{ -9223372036854775807 - 1 }} {{ 2 ** 62 }} {{ (-1) ** 3 }} {{ 0 ** 0 }} {{ 1 ** 99999999999 }} {{ range(9223372036854775804, 9223372036854775807)|list|length }}",
                 NULL, "9223372036854775806 -9223372036854775808 4611686018427387904 -1 1 1 3");
    CHECK_REFUSED("{{ 9223372036854775807 + 1 }}", NULL, QT_ERR_RANGE, "integer overflow in '+'");
    CHECK_REFUSED("{{ 3 ** 40 }}", NULL, QT_ERR_RANGE, "integer overflow in '**'");
    CHECK_REFUSED("{{ (-9223372036854775807 - 1) // -1 }}", NULL, QT_ERR_RANGE, "integer overflow");
}

static void test_subscripts(void) {
    const char *v = "{\"m\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"héllo\"}]}";
    CHECK_RENDER("{{ m[0].role }} {{ m[-1]['content'] }} {{ m[5] is defined }} {{ m[0].nope is defined }}", v,
                 "system héllo False False");
    CHECK_RENDER("{{ m[1:]|length }} {{ m[::-1][0].role }} {{ m[1].content[1:3] }} {{ m[1].content[-1] }}", v,
                 "1 user él o");
    CHECK_RENDER("{{ 'abcdef'[::2] }} {{ 'abcdef'[-2:] }} {{ 'abcdef'[:-1] }} {{ 'abc'[5:] }}|", NULL, "ace ef abcde |");
    CHECK_RENDER("{{ m.0.role }}", v, "system");
    CHECK_REFUSED("{{ nothing.attr }}", NULL, QT_ERR_ARG, "'nothing' is undefined");
    CHECK_REFUSED("{{ 5[1:] }}", NULL, QT_ERR_ARG, "cannot be sliced");
}

static void test_control(void) {
    const char *v = "{\"xs\": [\"a\", \"b\", \"c\"], \"d\": {\"k1\": 1, \"k2\": 2}}";
    CHECK_RENDER("{% for x in xs %}{{ loop.index0 }}{{ x }}{{ '|' if not loop.last }}{% endfor %}", v, "0a|1b|2c");
    CHECK_RENDER("{% for x in xs %}{{ loop.index }}/{{ loop.length }}{{ loop.first }}{{ loop.revindex0 }} {% endfor %}", v,
                 "1/3True2 2/3False1 3/3False0 ");
    CHECK_RENDER("{% for x in xs if x != 'b' %}{{ x }}{{ loop.length }}{% endfor %}", v, "a2c2");
    CHECK_RENDER("{% for k, val in d.items() %}{{ k }}={{ val }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}", v,
                 "k1=1;k2=2;k1k2");
    CHECK_RENDER("{% for x in [] %}x{% else %}empty{% endfor %}", NULL, "empty");
    CHECK_RENDER("{% for x in xs %}{% if x == 'b' %}{% continue %}{% endif %}{% if x == 'c' %}{% break %}{% endif %}{{ x }}{% endfor %}",
                 v, "a");
    CHECK_RENDER("{% if 0 %}a{% elif '' %}b{% elif [1] %}c{% else %}d{% endif %}", NULL, "c");
    CHECK_RENDER("{% for x in undefined_thing %}x{% endfor %}ok{{ 'a' in undefined_thing }}", NULL, "okFalse");
    CHECK_RENDER("{% for i in range(3) %}{{ i }}{% endfor %}{% for i in range(5, 1, -2) %}{{ i }}{% endfor %}", NULL, "01253");
}

static void test_scopes(void) {
    /* a set inside a loop is gone after it; inside an if it stays */
    CHECK_RENDER("{% set c = 0 %}{% for x in [1, 2] %}{% set c = c + x %}{% endfor %}{{ c }}", NULL, "0");
    CHECK_RENDER("{% if true %}{% set c = 5 %}{% endif %}{{ c }}", NULL, "5");
    CHECK_RENDER("{% set ns = namespace(c=0, found=false) %}{% for x in [1, 2] %}{% set ns.c = ns.c + x %}{% endfor %}"
                 "{{ ns.c }} {{ ns.found }}",
                 NULL, "3 False");
    CHECK_RENDER("{% set ns = namespace() %}{% set ns.i = 1 %}{{ ns.i }}", NULL, "1");
    CHECK_RENDER("{% set messages = messages[1:] %}{{ messages|length }}", "{\"messages\": [1, 2, 3]}", "2");
    CHECK_RENDER("{% set block %}a{{ 1 + 1 }}b{% endset %}[{{ block }}]", NULL, "[a2b]");
    CHECK_REFUSED("{% set x = 1 %}{% set x.y = 2 %}", NULL, QT_ERR_ARG, "'x' is not a namespace");
}

static void test_macros(void) {
    CHECK_RENDER("{% macro tag(name, body='-', close=true) %}<{{ name }}>{{ body }}{% if close %}</{{ name }}>{% endif %}{% endmacro %}"
                 "{{ tag('a') }}|{{ tag('b', 'x') }}|{{ tag('c', close=false) }}|{{ tag(body='y', name='d') }}",
                 NULL, "<a>-</a>|<b>x</b>|<c>-|<d>y</d>");
    /* the template's own variables are visible; a macro's sets stay inside it; it may call itself, boundedly */
    CHECK_RENDER("{% set g = 'G' %}{% macro m(x) %}{% set g = 'local' %}{{ g }}{{ x }}{% endmacro %}{{ m(1) }}{{ g }}", NULL,
                 "local1G");
    CHECK_RENDER("{% macro down(n) %}{{ n }}{% if n > 0 %}{{ down(n - 1) }}{% endif %}{% endmacro %}{{ down(3) }}", NULL, "3210");
    CHECK_RENDER("{%- macro render(m) -%}\n  [{{ m.role }}]\n{%- endmacro -%}\n{%- for m in messages %}{{ render(m) }}{% endfor %}",
                 "{\"messages\": [{\"role\": \"user\"}, {\"role\": \"assistant\"}]}", "[user][assistant]");
    CHECK_REFUSED("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", NULL, QT_ERR_RANGE, "macro calls nested deeper than 64");
    CHECK_REFUSED("{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}", NULL, QT_ERR_ARG, "macro 'f' takes 1 arguments, 2 given");
    CHECK_REFUSED("{% macro f(a) %}{% endmacro %}{{ f(b=1) }}", NULL, QT_ERR_ARG, "macro 'f' has no parameter 'b'");
    CHECK_REFUSED("{% for x in [1] %}{% macro f() %}{% break %}{% endmacro %}{% endfor %}", NULL, QT_ERR_FORMAT, "outside a for loop");
}

static void test_filters(void) {
    const char *v = "{\"ms\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"assistant\", \"content\": \"b\"},"
                    " {\"role\": \"user\", \"content\": \"c\"}]}";
    CHECK_RENDER("[{{ '  x \\n'|trim }}] [{{ '\u00a0y\u3000'|trim }}] {{ 'xxhixx'|trim('x') }}", NULL, "[x] [y] hi");
    CHECK_RENDER("{{ ms|selectattr('role', 'equalto', 'user')|list|length }} {{ ms|rejectattr('role', 'eq', 'user')|map(attribute='content')|join(',') }}",
                 v, "2 b");
    CHECK_RENDER("{{ ms|map(attribute='role')|unique|list }} {{ ms|last|tojson }}", v,
                 "['user', 'assistant'] {\"role\": \"user\", \"content\": \"c\"}");
    CHECK_RENDER("{{ x|default('d') }} {{ ''|default('e', true) }} {{ 'v'|d('no') }}", NULL, "d e v");
    CHECK_RENDER("{{ 'hEllo wOrld'|upper }} {{ 'ÉCOLE'|lower }} {{ 'hEllo wOrld'|title }} {{ 'hEllo'|capitalize }}", NULL,
                 "HELLO WORLD école Hello World Hello");
    CHECK_RENDER("{{ 'aaa'|replace('a', 'b', 2) }} {{ 3|string + '!' }} {{ '42'|int + 1 }} {{ '2.5'|float }} {{ -3|abs }}", NULL,
                 "bba 3! 43 2.5 3");
    CHECK_RENDER("{{ {'b': 1, 'A': 2, 'c': 0}|dictsort }} {{ {'b': 1, 'A': 2}|dictsort(true) }} {{ {'b': 1, 'a': 2}|dictsort(by='value', reverse=true) }} {{ ['b', 'A', 'c']|sort }}",
                 NULL, "[['A', 2], ['b', 1], ['c', 0]] [['A', 2], ['b', 1]] [['a', 2], ['b', 1]] ['A', 'b', 'c']");
    CHECK_RENDER("{{ [3, 1, 2]|sort }} {{ [3, 1, 2]|sort(reverse=true)|first }} {{ 'abc'|reverse }} {{ [1, 2]|reverse|list }}", NULL,
                 "[1, 2, 3] 3 cba [2, 1]");
    CHECK_RENDER("{{ 'héllo'|length }} {{ {'a': 1}|length }} {{ {'a': 1, 'b': [1, 'x']}|items|list }}", NULL,
                 "5 1 [['a', 1], ['b', [1, 'x']]]");
    /* tojson: json.dumps(ensure_ascii=False), with indent */
    CHECK_RENDER("{{ {'s': 'q\"\\\\\\n\\u0001é', 'n': none, 'b': true, 'f': 1.5, 'l': []}|tojson }}", NULL,
                 "{\"s\": \"q\\\"\\\\\\n\\u0001é\", \"n\": null, \"b\": true, \"f\": 1.5, \"l\": []}");
    CHECK_RENDER("{{ {'a': [1, {'b': 2}], 'e': {}}|tojson(indent=2) }}", NULL,
                 "{\n  \"a\": [\n    1,\n    {\n      \"b\": 2\n    }\n  ],\n  \"e\": {}\n}");
}

static void test_tests_and_methods(void) {
    CHECK_RENDER("{{ x is defined }} {{ none is none }} {{ 'a' is string }} {{ 3 is number }} {{ 3 is integer }} "
                 "{{ {} is mapping }} {{ 'a' is iterable }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} "
                 "{{ false is false }} {{ x is not none }} {{ 'ab' is lower }} {{ 2 is equalto 2 }} {{ 1 is in [1] }}",
                 NULL, "False True True True True True True True True True True True True True True");
    CHECK_RENDER("{{ 'hello'.startswith('he') }} {{ 'hello'.endswith(('x', 'lo')) }} [{{ '\\n a \\n'.strip() }}] "
                 "[{{ '\\n\\nx\\n'.lstrip('\\n') }}] [{{ 'x  '.rstrip() }}] {{ 'HeLLo'.lower() }} {{ 'hi'.upper() }}",
                 NULL, "True True [a] [x\n] [x] hello HI");
    CHECK_RENDER("{{ 'a</think>b</think>c'.split('</think>') }} {{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }} "
                 "{{ 'abc'.replace('b', 'X') }} {{ 'abc'.find('c') }} {{ '-'.join(['a', 'b']) }}",
                 NULL, "['a', 'b', 'c'] ['a', 'b'] ['a', 'b,c'] aXc 2 a-b");
    CHECK_RENDER("{{ d.get('a') }} {{ d.get('z', 'dflt') }} {{ d.keys()|list }} {{ d.values()|list }}", "{\"d\": {\"a\": 1}}",
                 "1 dflt ['a'] [1]");
    CHECK_RENDER("{{ strftime_now('%d %b %Y') }} {{ strftime_now is defined }}", NULL, "26 Jul 2024 True");
    CHECK_REFUSED("{{ raise_exception('roles must alternate') }}", NULL, QT_ERR_ARG, "raise_exception: roles must alternate");
}

static void test_refusals(void) {
    /* outside the subset: named, with line and column */
    CHECK_REFUSED("ok\n  {% call m() %}{% endcall %}", NULL, QT_ERR_UNSUPPORTED,
                  "template line 2, column 6: '{% call %}' is not supported");
    CHECK_REFUSED("{{ x|wordwrap }}", NULL, QT_ERR_UNSUPPORTED, "line 1, column 6: the filter 'wordwrap' is not supported");
    CHECK_REFUSED("{% if x is prime %}{% endif %}", NULL, QT_ERR_UNSUPPORTED, "the test 'prime' is not supported");
    CHECK_REFUSED("{% include 'x' %}", NULL, QT_ERR_UNSUPPORTED, "'{% include %}' is not supported");
    /* syntax errors */
    CHECK_REFUSED("{% if true %}never closed", NULL, QT_ERR_FORMAT, "line 1, column 4: this block is never closed ({% endif %}");
    CHECK_REFUSED("{% for x in xs %}", NULL, QT_ERR_FORMAT, "{% endfor %} is missing");
    CHECK_REFUSED("{{ 'abc }}", NULL, QT_ERR_FORMAT, "unterminated string");
    CHECK_REFUSED("{{ 1 + }}", NULL, QT_ERR_FORMAT, "expected an expression, found '}}'");
    CHECK_REFUSED("{{ a ? b }}", NULL, QT_ERR_FORMAT, "unexpected character '?'");
    CHECK_REFUSED("{% endif %}", NULL, QT_ERR_FORMAT, "unexpected '{% endif %}'");
    CHECK_REFUSED("{% break %}", NULL, QT_ERR_FORMAT, "outside a for loop");
    CHECK_REFUSED("{{ 1 }", NULL, QT_ERR_FORMAT, "ends inside");
    CHECK_REFUSED("{# open", NULL, QT_ERR_FORMAT, "unterminated comment");
    CHECK_REFUSED("{{ 3() }}", NULL, QT_ERR_ARG, "is not callable");
    qt_template *t = NULL;
    char *out = NULL;
    CHECK_OK(qt_template_parse("x", 1, &t));
    CHECK_STATUS(qt_template_render(t, "[1]", 0, &out), QT_ERR_ARG);
    CHECK_STATUS(qt_template_render(t, "{bad", 0, &out), QT_ERR_ARG);
    CHECK(out == NULL);
    qt_template_free(t);
}

static void test_limits(void) {
    /* hostile templates end in an error, never a hang or a crash */
    /* a loop of 10^10 iterations: the step or the memory limit ends it, whichever comes first */
    CHECK_REFUSED("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", NULL, QT_ERR_RANGE,
                  "template");
    CHECK_REFUSED("{% set ns = namespace(s='') %}{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(30) %}"
                  "{% if ns.s %}{% endif %}{% endfor %}{% endfor %}{% endfor %}", NULL, QT_ERR_RANGE, "limit");
    CHECK_REFUSED("{{ range(100000000) }}", NULL, QT_ERR_RANGE, "range of more than");
    CHECK_REFUSED("{% set s = 'x' * 1000000 %}{% for i in range(100) %}{{ s }}{% endfor %}", NULL, QT_ERR_RANGE, "the output passed");
    char deep[2048] = "{{ ";
    for (int i = 0; i < 500; i++) strcat(deep, "(");
    strcat(deep, "1");
    for (int i = 0; i < 500; i++) strcat(deep, ")");
    strcat(deep, " }}");
    CHECK_REFUSED(deep, NULL, QT_ERR_RANGE, "nested deeper than");
}

/* qt_chat_apply passes what apply_chat_template passes */
static void test_chat_apply(void) {
    const char *tmpl = "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{{ eos_token }}{% endfor %}"
                       "{% if add_generation_prompt %}<assistant>{% endif %}{{ enable_thinking is defined }}{{ tools is defined }}";
    qt_chat_opts o = {.bos_token = "<s>", .eos_token = "</s>", .add_generation_prompt = true};
    char *out = NULL;
    CHECK_OK(qt_chat_apply(tmpl, "[{\"role\": \"user\", \"content\": \"hi\"}]", &o, &out));
    CHECK_EQ_STR(out, "<s><user>hi</s><assistant>FalseFalse");
    free(out);
    o.add_generation_prompt = false;
    o.extra_json = "{\"enable_thinking\": false}";
    CHECK_OK(qt_chat_apply(tmpl, "[]", &o, &out));
    CHECK_EQ_STR(out, "<s>TrueFalse");
    free(out);
    CHECK_STATUS(qt_chat_apply(tmpl, "{}", &o, &out), QT_ERR_ARG);
}

int main(void) {
    QT_RUN(test_text_and_output);
    QT_RUN(test_whitespace);
    QT_RUN(test_operators);
    QT_RUN(test_subscripts);
    QT_RUN(test_control);
    QT_RUN(test_scopes);
    QT_RUN(test_macros);
    QT_RUN(test_filters);
    QT_RUN(test_tests_and_methods);
    QT_RUN(test_refusals);
    QT_RUN(test_limits);
    QT_RUN(test_chat_apply);
    return qt_test_finish("test_template");
}
