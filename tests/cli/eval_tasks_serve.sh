#!/bin/bash
# tests/cli/eval_tasks_serve.sh QUANTA SHARED_DIR — `quanta eval --tasks`
# through `quanta serve` on stories260K over 127.0.0.1 (an ephemeral port),
# requests one at a time: the same task file gives the same per-item pass/fail
# and outputs as the local engine (`quanta eval` with the model file). Items
# expect the model's own greedy text (pass), another text (fail), or stop at
# a string. A URL where nothing listens gives infrastructure failures (exit 1,
# counted apart), not model failures; choice checks are skipped with a note.
source "$(dirname "$0")/lib/harness.sh"
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

"$q" serve -m "$model" --host 127.0.0.1 --port 0 -t 2 --parallel 1 -c 256 --json >"$tmp/serve.json" 2>"$tmp/serve.log" &
pid=$!
for _ in $(seq 100); do grep -q '"port":' "$tmp/serve.json" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$tmp/serve.json")
ok [ -n "$port" ]
url="http://127.0.0.1:$port"

expect served 0 '' "$q" eval --base "$url" --candidate "$url" --model stories260K.gguf --tasks "$tmp/tasks.jsonl" --timeout 60 --json="$tmp/srv.json" --quiet
ok grep -q "^base  *8/14" "$tmp/out"
pick='[.[] | {id, pass, output}]'
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

# a --mc file through a server: no log-likelihoods, so its choice checks are skipped with a note
expect mc-skipped 0 "out:the choice checks of 64 item(s) were skipped" "$q" eval --base "$url" --candidate "$url" \
    --model stories260K.gguf --tasks "$(dirname "$0")/../data/mc_tinystories.jsonl" --quiet

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

# usage: a URL needs --tasks; local models and URLs are not mixed yet
expect no-tasks 2 "needs --tasks" "$q" eval --base "$url" --candidate "$url" -f "$text"
expect mixed 2 "not supported yet" "$q" eval --base "$model" --candidate "$url" --tasks "$tmp/tasks.jsonl"

echo "eval_tasks_serve: $pass passed, $fail failed"
[ "$fail" = 0 ]
