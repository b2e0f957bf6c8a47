#!/bin/bash
# tests/cli/eval_tasks_serve.sh QUANTA SHARED_DIR — `quanta eval --tasks`
# through `quanta serve` on stories260K over 127.0.0.1 (an ephemeral port):
# the same task file gives the same per-item pass/fail and outputs as the
# local engine (`quanta eval` with the model file), one request at a time and
# with --max-concurrency 4; choice checks (a --mc file) are scored from the
# server's echo logprobs and pick what the engine picks; a local model beside
# a URL (both ways) gives the same results in one report. Items expect the
# model's own greedy text (pass), another text (fail), or stop at a string. A
# URL where nothing listens gives infrastructure failures (exit 1, counted
# apart), not model failures. (The 503 backoff and a server without logprobs:
# tests/interop/test_eval_tasks_stub.sh.)
source "$(dirname "$0")/lib/harness.sh"
command -v curl >/dev/null && command -v jq >/dev/null || { echo "FAIL: curl and jq are needed (scripts/deps.sh installs them)"; exit 1; }
model="$shared/models/stories260K.gguf"
text="$shared/data/tinystories-valid-first1000.txt"
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

# 12 openings: the expected value is the greedy text of `quanta run` for even
# items, a wrong one for odd items; every fourth item also has a stop string
mapfile -t openings < <(awk 'NF >= 10 { print $1, $2, $3, $4 }' "$text" | head -n 12)
: >"$tmp/tasks.jsonl"
i=0
for p in "${openings[@]}"; do
    t=$("$q" run -m "$model" -p "$p" -n 12 --temp 0 -c 256 --json --quiet | jq -r .text) || { echo "FAIL: quanta run"; exit 1; }
    [ $((i % 2)) = 0 ] || t="not $t"
    jq -cn --arg id "s$i" --arg p "$p" --arg v "$t" '{id: $id, prompt: $p, max_tokens: 12, checks: [{type: "exact", value: $v}]}' \
        >>"$tmp/tasks.jsonl"
    i=$((i + 1))
done
jq -cn '{id: "stop", prompt: "Once upon a time", max_tokens: 24, stop: ["."], checks: [{type: "regex", pattern: "^[^.]*$"}]}' \
    >>"$tmp/tasks.jsonl"
jq -cn '{id: "stops", prompt: "One day", max_tokens: 24, stop: [".", " big", " park"], checks: [{type: "contains", value: "Lily"}, {type: "regex", pattern: "^[^.]*$"}]}' \
    >>"$tmp/tasks.jsonl"

expect local 0 '' "$q" eval --base "$model" --candidate "$model" -f "$text" --chunks 1 -c 256 --tasks "$tmp/tasks.jsonl" \
    --json="$tmp/local.json" --quiet
ok [ "$(jq .base.tasks.passed "$tmp/local.json")" = "8" ]

"$q" serve -m "$model" --host 127.0.0.1 --port 0 -t 2 --parallel 2 -c 256 --json >"$tmp/serve.json" 2>"$tmp/serve.log" &
pid=$!
for _ in $(seq 100); do grep -q '"port":' "$tmp/serve.json" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$tmp/serve.json")
ok [ -n "$port" ]
url="http://127.0.0.1:$port"

expect served 0 '' "$q" eval --base "$url" --candidate "$url" --model stories260K.gguf --tasks "$tmp/tasks.jsonl" --timeout 60 --json="$tmp/srv.json" --quiet
ok grep -q "^base  *8/14" "$tmp/out"
pick='[.[] | {id, pass, output}]'
pick1='{id, pass, output}'
# same LABEL JQ1 FILE1 JQ2 FILE2: the two selections are equal
same() {
    if [ "$(jq -c "$2" "$3")" = "$(jq -c "$4" "$5")" ]; then pass=$((pass + 1)); else
        echo "FAIL: $1"
        diff <(jq "$2" "$3") <(jq "$4" "$5") | head -20
        fail=$((fail + 1))
    fi
}
jq "[.base.tasks.results[]] | $pick" "$tmp/local.json" >"$tmp/want"
jq "[.base.results[]] | $pick" "$tmp/srv.json" >"$tmp/got"
jq "[.candidates[0].results[]] | $pick" "$tmp/srv.json" >"$tmp/got2"
if cmp -s "$tmp/want" "$tmp/got" && cmp -s "$tmp/want" "$tmp/got2"; then pass=$((pass + 1)); else
    echo "FAIL: per-item results through the server differ from the local engine's"
    diff "$tmp/want" "$tmp/got"
    fail=$((fail + 1))
fi
ok [ "$(jq '[.base.results[] | select(.infra)] | length' "$tmp/srv.json")" = "0" ]
ok [ "$(jq -r '.base.results[] | select(.id == "stop") | .pass' "$tmp/srv.json")" = "true" ]
ok [ "$(jq -r '.base.results[] | select(.id == "stops") | .pass' "$tmp/srv.json")" = "true" ] # contains Lily, cut before a stop

# an echo with logprobs (OpenAI's legacy shape): the prompt back, one logprob per prompt token (null
# for the first), text_offset in characters of the text
curl -s --max-time 30 "$url/v1/completions" -d '{"prompt": "Once upon a time", "max_tokens": 0, "echo": true, "logprobs": 1, "temperature": 0}' >"$tmp/echo.json"
ok [ "$(jq -r '.choices[0].text' "$tmp/echo.json")" = "Once upon a time" ]
ok [ "$(jq '.choices[0].logprobs.token_logprobs | length' "$tmp/echo.json")" = "$(jq .usage.prompt_tokens "$tmp/echo.json")" ]
ok [ "$(jq -c '.choices[0].logprobs | [.token_logprobs[0], ([.token_logprobs[1:][] | select(. < 0)] | length) == (.tokens | length) - 1]' "$tmp/echo.json")" = '[null,true]' ]
ok [ "$(jq -c '.choices[0].logprobs | [.tokens[-1], .text_offset[-1]]' "$tmp/echo.json")" = '[" time",11]' ]

# a --mc file through the server: its choice checks are scored from those logprobs and pick what the local
# engine picks, item for item (36 of 64 right, as --mc on the engine)
mc="$(dirname "$0")/../data/mc_tinystories.jsonl"
expect mc-local 0 '' "$q" eval --base "$model" --candidate "$model" -f "$text" --chunks 1 -c 256 --tasks "$mc" --json="$tmp/mcl.json" --quiet
expect mc-served 0 '' "$q" eval --base "$url" --candidate "$url" --model stories260K.gguf --tasks "$mc" --json="$tmp/mcs.json" --quiet
ok [ "$(jq .base.passed "$tmp/mcs.json")" = "$(jq .base.tasks.passed "$tmp/mcl.json")" ]
ok [ "$(jq '[.base.results[] | select(.choice_skipped)] | length' "$tmp/mcs.json")" = "0" ]
same "choice results through the server = the engine's" "[.base.tasks.results[] | {id, pass}]" "$tmp/mcl.json" \
    "[.base.results[] | {id, pass}]" "$tmp/mcs.json"

# a local model beside a URL, both ways: each side on its own engine, one report, the same per-item results
expect mix-local-base 0 '' "$q" eval --base "$model" --candidate "$url" -c 256 --model stories260K.gguf --tasks "$tmp/tasks.jsonl" \
    --json="$tmp/mix1.json" --quiet
expect mix-url-base 0 '' "$q" eval --base "$url" --candidate "$model" -c 256 --model stories260K.gguf --tasks "$tmp/tasks.jsonl" \
    --json="$tmp/mix2.json" --quiet
ok [ "$(jq -r '[.base.model, .candidates[0].url, (.base | has("url"))] | @tsv' "$tmp/mix1.json")" = "$model	$url	false" ]
ok [ "$(jq -r '[.base.url, .candidates[0].model] | @tsv' "$tmp/mix2.json")" = "$url	$model" ]
for f in mix1 mix2; do
    same "$f base = local" "[.base.tasks.results[] | $pick1]" "$tmp/local.json" "[.base.results[] | $pick1]" "$tmp/$f.json"
    same "$f candidate = local" "[.base.tasks.results[] | $pick1]" "$tmp/local.json" "[.candidates[0].results[] | $pick1]" "$tmp/$f.json"
done
expect mix-mc 0 '' "$q" eval --base "$model" --candidate "$url" -c 256 --model stories260K.gguf --tasks "$mc" --json="$tmp/mix3.json" --quiet
same "mixed choice results" "[.base.results[] | {id, pass}]" "$tmp/mix3.json" "[.candidates[0].results[] | {id, pass}]" "$tmp/mix3.json"

# up to 4 requests at once (the server has 2 slots): the same per-item results, in file order
for f in tasks.jsonl mc; do
    file="$tmp/$f"
    [ "$f" = mc ] && file="$mc"
    expect "concurrency-$f" 0 '' "$q" eval --base "$url" --candidate "$url" --model stories260K.gguf --tasks "$file" --max-concurrency 4 \
        --json="$tmp/c4.json" --quiet
    expect "serial-$f" 0 '' "$q" eval --base "$url" --candidate "$url" --model stories260K.gguf --tasks "$file" --json="$tmp/c1.json" --quiet
    same "--max-concurrency 4 = 1 ($f)" "[.base.results[], .candidates[0].results[]]" "$tmp/c1.json" \
        "[.base.results[], .candidates[0].results[]]" "$tmp/c4.json"
done
expect bad-concurrency 2 "max-concurrency" "$q" eval --base "$url" --candidate "$url" --tasks "$tmp/tasks.jsonl" --max-concurrency 0

# a model the server does not serve: HTTP 404, an infrastructure failure with the server's message
expect wrong-model 1 '' "$q" eval --base "$url" --candidate "$url" --model nope --tasks "$tmp/tasks.jsonl" --json="$tmp/404.json" --quiet
ok [ "$(jq '[.base.results[] | select(.infra and (.why | startswith("infrastructure: HTTP 404: the model \u0027nope\u0027")))] | length' "$tmp/404.json")" = "14" ]

# a server that stops answering: the first request times out (--timeout), and after --time-limit no
# request starts; all are infrastructure failures
kill -STOP "$pid"
expect stalled 1 '' "$q" eval --base "$url" --candidate "$url" --model stories260K.gguf --tasks "$tmp/tasks.jsonl" \
    --timeout 0.3 --time-limit 0.2 --retries 0 --json="$tmp/stall.json" --quiet
kill -CONT "$pid"
ok [ "$(jq .base.infra_failures "$tmp/stall.json")" = "14" ]
ok [ "$(jq '[.base.results[1:][] | select(.why == "infrastructure: time limit of 0.2 s reached")] | length' "$tmp/stall.json")" = "13" ]
ok [ "$(jq -r '.base.results[0].why' "$tmp/stall.json" | grep -ci timeout)" = "1" ]

# nothing listens: every item is an infrastructure failure, reported apart
kill -TERM "$pid"
wait "$pid" 2>/dev/null
pid=
expect dead 1 '' "$q" eval --base "$url" --candidate "$url" --model stories260K.gguf --tasks "$tmp/tasks.jsonl" --timeout 5 --retries 0 \
    --json="$tmp/dead.json" --quiet
ok [ "$(jq .base.infra_failures "$tmp/dead.json")" = "14" ]
ok [ "$(jq '[.base.results[] | select(.infra and (.why | startswith("infrastructure: ")))] | length' "$tmp/dead.json")" = "14" ]

# usage: a URL needs --tasks
expect no-tasks 2 "needs --tasks" "$q" eval --base "$url" --candidate "$url" -f "$text"
expect mixed-bad-spec 2 "kv" "$q" eval --base "$model@kv=nope" --candidate "$url" --tasks "$tmp/tasks.jsonl"

echo "eval_tasks_serve: $pass passed, $fail failed"
[ "$fail" = 0 ]
