#!/bin/bash
# tests/cli/serve_loadtest.sh QUANTA SHARED_DIR — `quanta loadtest` against
# `quanta serve` on stories260K over 127.0.0.1 (an ephemeral port): the counts
# are consistent (every request completes, tokens streamed = what usage says =
# requests x --output-len with --ignore-eos, prompt tokens = requests x
# --input-len), the server's /metrics is read (peak RSS), a sweep picks a level
# and the report's levels match what was asked, and the server still answers
# alone with `quanta run`'s greedy text afterwards; then the same counts on a
# synth model (quanta synth: Qwen3-0.6B's layer shapes, one layer, a small
# vocabulary, Q8_0). Bounded in requests and by
# --timeout / --time-limit; never asserts a duration.
source "$(dirname "$0")/lib/harness.sh"
model="$shared/models/stories260K.gguf"
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

"$q" serve -m "$model" --host 127.0.0.1 --port 0 -t 2 --parallel 4 -c 256 --json >"$tmp/serve.json" 2>"$tmp/serve.log" &
pid=$!
for _ in $(seq 100); do grep -q '"port":' "$tmp/serve.json" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$tmp/serve.json")
ok [ -n "$port" ]
url="http://127.0.0.1:$port"
lt=("$q" loadtest --url "$url" --model stories260K.gguf --tokenizer "$model" --ignore-eos --timeout 60 --time-limit 60 -q)

# one run: 12 requests of 16 prompt tokens and 16 output tokens, 4 at a time
expect "loadtest run" 0 "" "${lt[@]}" --input-len 16 --output-len 16 --num-prompts 12 --max-concurrency 4 --seed 3 \
    --json="$tmp/run.json"
num() { sed -n "s/^  \"$1\": \([-0-9.e+]*\),*$/\1/p" "$2"; }
file_has() { grep -qF -- "$2" "$1" || { echo "  $1 lacks '$2'"; false; }; }
ok [ "$(num completed "$tmp/run.json")" = 12 ]
ok [ "$(num failed "$tmp/run.json")" = 0 ]
ok [ "$(num total_input_tokens "$tmp/run.json")" = 192 ]
ok [ "$(num total_output_tokens "$tmp/run.json")" = 192 ]
# one ITL per streamed chunk after the first: 12 x (16 - 1)
ok [ "$(sed -n '/"itl_ms": {/{n;s/.*"n": \([0-9]*\).*/\1/p}' "$tmp/run.json")" = 180 ]
ok [ "$(num peak_concurrency "$tmp/run.json")" -le 4 ]
rss=$(num server_peak_rss_bytes "$tmp/run.json")
ok awk -v r="$rss" 'BEGIN { exit !(r > 1e6) }'

# a sweep over 1 and 2 in flight: two levels, each with its own full report
expect "loadtest sweep" 0 "" "${lt[@]}" --input-len 8 --output-len 8 --num-prompts 8 --sweep 1,2 --json="$tmp/sweep.json"
ok [ "$(grep -c '^      "concurrency": [12],$' "$tmp/sweep.json")" = 2 ]
ok [ "$(grep -c '^      "completed": 8,$' "$tmp/sweep.json")" = 2 ]
ok file_has "$tmp/sweep.json" '"sustainable_concurrency": 2'

# the server is still right afterwards: a lone greedy request equals `quanta run`
"$q" run -m "$model" -p "Once upon a time" -n 24 --temp 0 -c 256 -q --json >"$tmp/r.json"
want=$(sed -n 's/^  "text": "\(.*\)",$/\1/p' "$tmp/r.json")
curl -s --max-time 30 -H 'Content-Type: application/json' \
    -d '{"model":"stories260K.gguf","prompt":"Once upon a time","max_tokens":24,"temperature":0}' \
    "$url/v1/completions" >"$tmp/body"
ok [ -n "$want" ]
ok file_has "$tmp/body" "\"text\":\"$want\""

kill -TERM "$pid"
wait "$pid"
ok [ $? = 0 ]
pid=

# a synth model: random weights with a real model's layer shapes
expect "synth" 0 "" "$q" synth --like qwen3-0.6b --layers 1 --vocab 512 --format q8_0 -o "$tmp/synth.gguf" -q
"$q" serve -m "$tmp/synth.gguf" --host 127.0.0.1 --port 0 -t 2 --parallel 2 -c 128 --json >"$tmp/serve2.json" 2>"$tmp/serve2.log" &
pid=$!
for _ in $(seq 100); do grep -q '"port":' "$tmp/serve2.json" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$tmp/serve2.json")
ok [ -n "$port" ]
expect "loadtest synth" 0 "" "$q" loadtest --url "http://127.0.0.1:$port" --model synth.gguf --tokenizer "$tmp/synth.gguf" \
    --ignore-eos --timeout 60 --time-limit 60 -q --input-len 12 --output-len 8 --num-prompts 6 --max-concurrency 2 \
    --json="$tmp/synth.json"
ok [ "$(num completed "$tmp/synth.json")" = 6 ]
ok [ "$(num failed "$tmp/synth.json")" = 0 ]
ok [ "$(num total_input_tokens "$tmp/synth.json")" = 72 ]
ok [ "$(num total_output_tokens "$tmp/synth.json")" = 48 ]
ok [ "$(sed -n '/"itl_ms": {/{n;s/.*"n": \([0-9]*\).*/\1/p}' "$tmp/synth.json")" = 42 ]
kill -TERM "$pid"
wait "$pid"
ok [ $? = 0 ]
pid=
echo "serve_loadtest.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
