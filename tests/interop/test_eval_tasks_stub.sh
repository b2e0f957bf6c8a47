#!/bin/bash
# tests/interop/test_eval_tasks_stub.sh QUANTA SHARED_DIR
#
# `quanta eval --tasks` against a node stand-in server (eval_tasks_mock.mjs)
# for what `quanta serve` cannot be made to do honestly:
#   - 503 answered k = 2 times, then 200: with --retries 2 the item passes after
#     the retries (3 requests, 0.5 s + 1 s of backoff); with --retries 1 it fails
#     by infrastructure with the 503 as its reason (2 requests), not as a model
#     failure;
#   - a server whose answers carry no logprobs: choice checks are skipped with
#     a note, the text checks still run;
#   - vLLM's prompt_logprobs shape (one token per word, logprob -1 each): a
#     choice of 4 words after "The sky is" scores -4 over its 14 bytes, one of
#     1 word -1 over 3, so the per-byte rule picks the longer one.
# Exit 77 = skipped (no node >= 20), except under CI=true where that is a failure.
set -u
QUANTA=$1
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "$(dirname "$QUANTA")" && pwd)
source "$HERE/node_env.sh"
require_node
command -v jq >/dev/null || skip "jq is not installed"

interop_scratch

node "$HERE/eval_tasks_mock.mjs" "$tmp/port" &
pid=$!
disown "$pid" # no "Killed" line when the trap stops it
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
[ -s "$tmp/port" ] || { echo "FAIL: the mock server did not start"; exit 1; }
srv="http://127.0.0.1:$(cat "$tmp/port")"
count() { curl -s --max-time 5 "$srv/count/$1"; }

printf '%s\n' '{"id": "t", "prompt": "say ok", "max_tokens": 4, "checks": [{"type": "contains", "value": "ok"}]}' >"$tmp/one.jsonl"

# k = 2 busy answers, 2 retries: passes on the third request
"$QUANTA" eval --base "$srv/busy2-a" --candidate "$srv/busy2-b" --tasks "$tmp/one.jsonl" --retries 2 --timeout 10 \
    --json="$tmp/retry.json" --quiet >/dev/null
check "retries: exit 0" $?
check "retries: the base item passes" "$([ "$(jq -r '.base.results[0].pass' "$tmp/retry.json")" = true ]; echo $?)"
check "retries: no infrastructure failure" "$([ "$(jq '.base.infra_failures + .candidates[0].infra_failures' "$tmp/retry.json")" = 0 ]; echo $?)"
check "retries: 3 requests (2 refused)" "$([ "$(count busy2-a)" = 3 ] && [ "$(count busy2-b)" = 3 ]; echo $?)"

# the same with fewer retries than busy answers: an infrastructure failure naming the 503
"$QUANTA" eval --base "$srv/busy2-c" --candidate "$srv/busy2-d" --tasks "$tmp/one.jsonl" --retries 1 --timeout 10 \
    --json="$tmp/noretry.json" --quiet >/dev/null
check "too few retries: exit 1" "$([ $? = 1 ]; echo $?)"
check "too few retries: infrastructure, HTTP 503" \
    "$([ "$(jq -r '.base.results[0] | select(.infra and (.pass | not)) | .why' "$tmp/noretry.json")" = "infrastructure: HTTP 503: overloaded" ]; echo $?)"
check "too few retries: 2 requests" "$([ "$(count busy2-c)" = 2 ]; echo $?)"

# no logprobs: the choice check is skipped with a note; the contains check of another item passes
{
    cat "$tmp/one.jsonl"
    printf '%s\n' '{"id": "mc", "prompt": "The sky is", "checks": [{"type": "choice", "choices": ["blue", "green"], "answer": 0}]}'
} >"$tmp/mixed.jsonl"
"$QUANTA" eval --base "$srv/nolp" --candidate "$srv/nolp" --tasks "$tmp/mixed.jsonl" --json="$tmp/nolp.json" --quiet >"$tmp/nolp.out"
check "no logprobs: exit 0 (nothing lost)" $?
check "no logprobs: a note" "$(grep -q "the choice checks of 1 item(s) were skipped on $srv/nolp" "$tmp/nolp.out"; echo $?)"
check "no logprobs: choice skipped, not infrastructure" \
    "$([ "$(jq -c '[.base.results[] | [.id, .pass, .choice_skipped, .infra]]' "$tmp/nolp.json")" = '[["t",true,false,false],["mc",false,true,false]]' ]; echo $?)"

# vLLM's shape: "a big red ball" (-4/14 per byte) beats "cat" (-1/3), in either order
for c in '["a big red ball", "cat"], "answer": 0' '["cat", "a big red ball"], "answer": 1' '["cat", "a big red ball"], "answer": 0'; do
    printf '{"prompt": "The sky is", "checks": [{"type": "choice", "choices": %s}]}\n' "$c"
done >"$tmp/vllm.jsonl"
"$QUANTA" eval --base "$srv/vllm" --candidate "$srv/vllm" --tasks "$tmp/vllm.jsonl" --json="$tmp/vllm.json" --quiet >/dev/null
check "vllm prompt_logprobs: exit 0" $?
check "vllm prompt_logprobs: scored, the longer choice picked" \
    "$([ "$(jq -c '[.base.results[] | [.pass, .choice_skipped, .infra]]' "$tmp/vllm.json")" = '[[true,false,false],[true,false,false],[false,false,false]]' ]; echo $?)"

[ "$fail" = 0 ] && echo "test_eval_tasks_stub: ok"
exit "$fail"
