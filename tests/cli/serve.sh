#!/bin/bash
# tests/cli/serve.sh QUANTA SHARED_DIR — `quanta serve` on stories260K over
# 127.0.0.1 (an ephemeral port), with curl: usage errors; greedy completions
# equal `quanta run`; streaming (one chunk per token, usage = streamed tokens,
# [DONE]); chat; the API key (401); every 4xx (malformed JSON, unknown model,
# prompt over the context, negative max_tokens, body over the limit, unknown
# endpoint or method) with the server still serving; a client leaving mid-
# stream cancels its own request only; 200 concurrent connections against
# --parallel 4 (each gets 200 or 503 + Retry-After); /metrics; SIGTERM during
# load (running requests finish, exit 0). Bounded: every curl has --max-time.
source "$(dirname "$0")/lib/harness.sh"
model="$shared/models/stories260K.gguf"
command -v curl >/dev/null || { echo "FAIL: curl is needed (scripts/deps.sh installs it)"; exit 1; }
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT

expect "serve --help" 0 "out:--parallel" "$q" serve --help
expect "serve without -m" 2 "missing -m MODEL" "$q" serve --port 0
expect "serve bad port" 2 "--port" "$q" serve -m "$model" --port 70000
expect "serve bad template" 2 "known templates are" "$q" serve -m "$model" --chat-template jinja
expect "serve bad file" 1 "error" "$q" serve -m "$tmp/missing.gguf" --port 0
expect "serve --check" 0 "out:\"port\":" "$q" serve -m "$model" --port 0 --check --json -q

# start: prints its one-line JSON report (with the chosen port) once listening
start() { # name, extra options...
    local name="$1"
    shift
    "$q" serve -m "$model" --host 127.0.0.1 --port 0 -t 2 --json "$@" >"$tmp/$name.json" 2>"$tmp/$name.log" &
    pids+=($!)
    eval "${name}_pid=$!"
    for _ in $(seq 100); do grep -q '"port":' "$tmp/$name.json" 2>/dev/null && break; sleep 0.1; done
    eval "${name}_url=http://127.0.0.1:$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$tmp/$name.json")"
}
start main --parallel 4 --max-queue 8 -c 512 --api-key sekrit --chat-template chatml --max-body 4096
url="$main_url"
auth=(-H "Authorization: Bearer sekrit")
# post PATH BODY [curl options]: body of the answer in $tmp/body, status in $tmp/code
post() {
    local path="$1" body="$2"
    shift 2
    curl -s --max-time 30 -o "$tmp/body" -w '%{http_code}' "${auth[@]}" -H 'Content-Type: application/json' \
        -d "$body" "$@" "$url$path" >"$tmp/code"
}
status_is() { [ "$(cat "$tmp/code")" = "$1" ] || { echo "  got HTTP $(cat "$tmp/code"): $(head -c 300 "$tmp/body")"; false; }; }
body_has() { grep -qF -- "$1" "$tmp/body" || { echo "  body lacks '$1': $(head -c 300 "$tmp/body")"; false; }; }

ok curl -sf --max-time 10 "$url/health" -o /dev/null # no key needed
curl -s --max-time 10 "${auth[@]}" "$url/v1/models" >"$tmp/body"
ok body_has '"id":"stories260K.gguf"'

# greedy: the same text as `quanta run`, alone and by name or path
"$q" run -m "$model" -p "Once upon a time" -n 32 --temp 0 -c 512 -q --json >"$tmp/run.json"
want=$(sed -n 's/^  "text": "\(.*\)",$/\1/p' "$tmp/run.json")
ok [ -n "$want" ]
post /v1/completions '{"model":"stories260K.gguf","prompt":"Once upon a time","max_tokens":32,"temperature":0}'
ok status_is 200
ok body_has "\"text\":\"$want\""
ok body_has '"usage":{"prompt_tokens":5,"completion_tokens":32,"total_tokens":37}'
ok body_has '"finish_reason":"length"'
post /v1/completions "{\"model\":\"$model\",\"prompt\":\"Once upon a time\",\"max_tokens\":32,\"temperature\":0}"
ok body_has "\"text\":\"$want\""

# streaming: one chunk per token (the max_tokens-th carries finish_reason "length", as vLLM's
# stream does; a stop by EOS gets a chunk of its own); their texts make the same text; usage
# counts them; [DONE] last
token_chunks() { grep -E '"finish_reason":(null|"length")' "$1"; }
post /v1/completions '{"prompt":"Once upon a time","max_tokens":32,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}' -N
ok status_is 200
n_chunks=$(token_chunks "$tmp/body" | wc -l)
ok [ "$n_chunks" = 32 ]
ok body_has '"usage":{"prompt_tokens":5,"completion_tokens":32,"total_tokens":37}'
streamed=$(token_chunks "$tmp/body" | sed 's/.*"text":"\(.*\)","logprobs".*/\1/' | tr -d '\n')
ok [ "$streamed" = "$want" ]
ok [ "$(grep -v '^$' "$tmp/body" | tail -1)" = "data: [DONE]" ]
# EOS: the usage of a request that stops by itself equals its streamed tokens too
post /v1/completions '{"prompt":"The end.","max_tokens":400,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}' -N
n_chunks=$(token_chunks "$tmp/body" | wc -l)
ok body_has "\"completion_tokens\":$n_chunks,"

# chat (chatml, as --chat-template asked), streamed and not
post /v1/chat/completions '{"messages":[{"role":"system","content":"Tell a story."},{"role":"user","content":"Once upon a time"}],"max_tokens":8,"temperature":0}'
ok status_is 200
ok body_has '"object":"chat.completion"'
ok body_has '"role":"assistant","content":"'
post /v1/chat/completions '{"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"max_tokens":4,"temperature":0,"stream":true}' -N
ok [ "$(grep -c '"delta":{' "$tmp/body")" = 4 ] # 4 tokens, the last with finish_reason

# the API key
auth=()
post /v1/completions '{"prompt":"Hi","max_tokens":2}'
ok status_is 401
ok body_has '"type":"authentication_error"'
auth=(-H "Authorization: Bearer wrong")
post /v1/completions '{"prompt":"Hi","max_tokens":2}'
ok status_is 401
curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$url/metrics" >"$tmp/code"
ok status_is 401
auth=(-H "Authorization: Bearer sekrit")

# bad requests: OpenAI-style errors, 4xx
post /v1/completions '{"prompt": "Hi", '
ok status_is 400
ok body_has '"error":{"message":"the body is not valid JSON'
post /v1/completions '{"model":"gpt-4","prompt":"Hi"}'
ok status_is 404
ok body_has '"code":"model_not_found"'
long=$(printf 'Once upon a time there was a dog. %.0s' $(seq 60))
post /v1/completions "{\"prompt\":\"$long\",\"max_tokens\":2}"
ok status_is 400
ok body_has 'context_length_exceeded'
post /v1/completions '{"prompt":"Hi","max_tokens":-1}'
ok status_is 400
ok body_has "'max_tokens' must be an integer in [0,"
post /v1/completions "{\"prompt\":\"$long$long$long\"}"
ok status_is 413
post /v1/completions '{"prompt":"Hi","stop":["."]}'
ok status_is 400
post /v1/chat/completions '{"messages":[{"role":"wizard","content":"Hi"}]}'
ok status_is 400
ok body_has "messages[0].role"
post /v1/nothing '{}'
ok status_is 404
curl -s --max-time 10 "${auth[@]}" -o "$tmp/body" -w '%{http_code}' "$url/v1/completions" >"$tmp/code"
ok status_is 405
post /v1/completions '{"prompt":"Once upon a time","max_tokens":32,"temperature":0}'
ok body_has "\"text\":\"$want\"" # still serving, and still exact

# a client leaving mid-stream cancels its own request, not the others
curl -sN --max-time 60 "${auth[@]}" -d '{"prompt":"Once upon a time","max_tokens":450,"ignore_eos":true,"stream":true}' \
    "$url/v1/completions" >"$tmp/long" &
long_pid=$!
curl -sN --max-time 30 "${auth[@]}" -d '{"prompt":"Once upon a time","max_tokens":450,"ignore_eos":true,"stream":true}' \
    "$url/v1/completions" | head -c 3000 >/dev/null
wait $long_pid
curl -s --max-time 10 "${auth[@]}" "$url/metrics" >"$tmp/metrics"
ok grep -q '^quanta_requests_finished_total{reason="cancelled"} 1$' "$tmp/metrics"
ok [ "$(token_chunks "$tmp/long" | wc -l)" = 450 ] # the other one, beside it, ran to its end

# 200 connections at once against 4 slots and a queue of 8: every one gets 200 or 503 + Retry-After
mkdir "$tmp/load"
for i in $(seq 200); do
    curl -s --max-time 60 -D "$tmp/load/h$i" -o /dev/null -w '%{http_code}\n' "${auth[@]}" \
        -d '{"prompt":"Once upon a time","max_tokens":4}' "$url/v1/completions" >"$tmp/load/c$i" &
    cpids+=($!)
done
wait "${cpids[@]}"
cat "$tmp"/load/c* | sort | uniq -c | sed 's/^/  serve.sh: 200 connections: /'
ok [ "$(cat "$tmp"/load/c* | grep -cvE '^(200|503)$')" = 0 ]
ok [ "$(cat "$tmp"/load/c* | grep -c '^200$')" -ge 1 ]
n503=$(cat "$tmp"/load/c* | grep -c '^503$')
ok [ "$(grep -lE '^HTTP/1.1 503' "$tmp"/load/h* 2>/dev/null | xargs -r grep -li '^Retry-After: 1' | wc -l)" = "$n503" ]
ok curl -sf --max-time 10 "$url/health" -o /dev/null
curl -s --max-time 10 "${auth[@]}" "$url/metrics" >"$tmp/metrics"
for m in quanta_peak_rss_bytes quanta_kv_cache_usage_ratio quanta_time_to_first_token_seconds_count \
         quanta_http_requests_total quanta_generation_tokens_total quanta_requests_running; do
    ok grep -q "^$m" "$tmp/metrics"
done
ok grep -q '^quanta_requests_running 0$' "$tmp/metrics"
ok grep -qE '^quanta_peak_rss_bytes [1-9][0-9]{6,}$' "$tmp/metrics"

# SIGTERM while requests run: they finish, new ones are refused, exit 0
for i in 1 2 3; do
    curl -sN --max-time 60 "${auth[@]}" -d '{"prompt":"Once upon a time","max_tokens":300,"ignore_eos":true,"stream":true}' \
        "$url/v1/completions" >"$tmp/s$i" &
    spids+=($!)
done
for _ in $(seq 100); do [ -s "$tmp/s3" ] && [ -s "$tmp/s1" ] && break; sleep 0.05; done
kill -TERM "$main_pid"
wait "${spids[@]}"
wait "$main_pid"
ok [ $? = 0 ]
for i in 1 2 3; do
    ok grep -q '"finish_reason":"length"' "$tmp/s$i"
    ok [ "$(token_chunks "$tmp/s$i" | wc -l)" = 300 ]
done
ok grep -qE 'draining \([1-9] requests in flight\)' "$tmp/main.log"
curl -s --max-time 5 "$url/health" >/dev/null
ok [ $? != 0 ] # gone

echo "serve.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
