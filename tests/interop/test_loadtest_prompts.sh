#!/bin/bash
# tests/interop/test_loadtest_prompts.sh QUANTA SHARED_DIR
#
# `quanta loadtest`'s random prompts, as a server sees them (a node stand-in
# server that logs every request, tests/interop/loadtest_mock.mjs): a sweep's
# levels and their warm-ups each send prompts of their own, so no server-side
# prompt cache can answer a level with what an earlier one sent; and the same
# --seed sends the same prompts again. Exit 77 = skipped (no node >= 20),
# except under CI=true where that is a failure.
set -u
QUANTA=$1
SHARED=$2
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "$(dirname "$QUANTA")" && pwd)
source "$HERE/node_env.sh"
require_node

tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
check() { # label, condition result (0 = ok)
    if [ "$2" -eq 0 ]; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi
}

node "$HERE/loadtest_mock.mjs" "$tmp/port" "$tmp/log" &
pid=$!
disown "$pid" # no "Killed" line when the trap stops it
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
[ -s "$tmp/port" ] || { echo "FAIL: the stand-in server did not start"; exit 1; }
lt=("$QUANTA" loadtest --url "http://127.0.0.1:$(cat "$tmp/port")" --model mock --tokenizer "$SHARED/models/stories260K.gguf"
    --input-len 8 --output-len 4 --num-prompts 4 --warmup 2 --sweep 1,2,4 --seed 5 --timeout 30 --time-limit 60 -q)

"${lt[@]}" --json="$tmp/a.json" >"$tmp/out" 2>&1
check "loadtest sweep against the stand-in (exit $?)" $?
n=$(wc -l <"$tmp/log")
check "3 levels x (2 warm-up + 4 measured) requests reached the server (got $n)" $([ "$n" = 18 ]; echo $?)
dups=$(sort "$tmp/log" | uniq -d | wc -l)
check "every request's prompt is new to the server ($dups repeated)" $([ "$dups" = 0 ]; echo $?)
mv "$tmp/log" "$tmp/log1"
"${lt[@]}" >"$tmp/out" 2>&1
check "the same --seed again (exit $?)" $?
cmp -s <(sort "$tmp/log1") <(sort "$tmp/log")
check "the same --seed sends the same prompts" $?
[ $fail = 0 ] || { cat "$tmp/out"; exit 1; }
