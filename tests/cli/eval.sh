#!/bin/bash
# (heavy under sanitizers: minutes of runs under ASan; the release run has it, and the fuzz
# targets and unit tests cover its parsers and code under the sanitizers)
# tests/cli/eval.sh QUANTA SHARED_DIR — `quanta eval`: usage errors (exit 2),
# bad input (exit 1, one message, no report files), and real runs of
# stories260K against llama.cpp's Q8_0 / Q4_0 files: verdicts, exit status
# (0 all pass, 1 any fail or needs-review), table, JSON and HTML reports, a
# KV-cache candidate spec, multiple choice.
. "$(dirname "$0")/lib/harness.sh"
has() { # name, file, fixed string
    if grep -qF -- "$3" "$2"; then pass=$((pass + 1)); else
        echo "FAIL $1: '$3' not in $2:"
        cat "$2"
        fail=$((fail + 1))
    fi
}
count() { # name, file, fixed string, expected count
    local got
    got=$(grep -cF -- "$3" "$2")
    if [ "$got" = "$4" ]; then pass=$((pass + 1)); else
        echo "FAIL $1: '$3' found $got times in $2, want $4"
        fail=$((fail + 1))
    fi
}

base="$shared/models/stories260K.gguf"
q8="$shared/reference/llamacpp/stories260K-Q8_0.gguf"
q4="$shared/reference/llamacpp/stories260K-Q4_0.gguf"
text="$shared/data/tinystories-valid-first1000.txt"
fast=(-c 128 -t 1 --quiet)

# usage errors: exit 2, nothing run
check help 0 "$q" eval --help
has help-mentions-exit "$tmp/out" "exit status: 0 every candidate passes"
check no-base 2 "$q" eval --candidate "$q8" -f "$text"
check no-candidate 2 "$q" eval --base "$base" -f "$text"
check no-text 2 "$q" eval --base "$base" --candidate "$q8"
check bad-option 2 "$q" eval --base "$base" --candidate "$q8" -f "$text" --bogus
check odd-ctx 2 "$q" eval --base "$base" --candidate "$q8" -f "$text" -c 127
check bad-threshold 2 "$q" eval --base "$base" --candidate "$q8" -f "$text" --min-top1 1.5
check bad-number 2 "$q" eval --base "$base" --candidate "$q8" -f "$text" --max-kld 0.1x
check bad-kv 2 "$q" eval --base "$base" --candidate "$base@kv=fp7" -f "$text"
has bad-kv-msg "$tmp/err" "kv=fp7"
check bad-setting 2 "$q" eval --base "$base" --candidate "$base@colour=red" -f "$text"
has bad-setting-msg "$tmp/err" "unknown setting 'colour'"
check bad-kv-dtype 2 "$q" eval --base "$base" --candidate "$q8" -f "$text" --kv-dtype fp3

# bad input: exit 1, the path in the message, no report written
check missing-text 1 "$q" eval --base "$base" --candidate "$q8" -f "$tmp/none.txt" --json="$tmp/r.json" "${fast[@]}"
has missing-text-msg "$tmp/err" "quanta: error: $tmp/none.txt"
check missing-model 1 "$q" eval --base "$base" --candidate "$tmp/none.gguf" -f "$text" --json="$tmp/r.json" "${fast[@]}"
has missing-model-msg "$tmp/err" "none.gguf"
printf '{"context": "a", "endings": ["x", "y"], "label": 0}\n{"context": "a", "endings": ["x"], "label": 0}\n' >"$tmp/bad.jsonl"
check bad-mc 1 "$q" eval --base "$base" --candidate "$q8" -f "$text" --mc "$tmp/bad.jsonl" "${fast[@]}"
has bad-mc-msg "$tmp/err" "bad.jsonl:2: field 'endings': 1 ending(s), need at least 2"
check json-unwritable 1 "$q" eval --base "$base" --candidate "$q8" -f "$text" --chunks 1 --json="$tmp/no/dir/r.json" "${fast[@]}"
if [ -e "$tmp/r.json" ] || [ -e "$tmp/no" ]; then echo "FAIL: a report file was left behind"; fail=$((fail + 1)); else pass=$((pass + 1)); fi

# Q8_0 passes and Q4_0 fails at the default 5 %: exit 1, both reports written
check q8-q4 1 "$q" eval --base "$base" --candidate "$q8" --candidate "$q4" -f "$text" --chunks 16 \
    --json="$tmp/r.json" --html "$tmp/r.html" "${fast[@]}"
has table-q8 "$tmp/out" "stories260K-Q8_0.gguf: pass"
has table-q4 "$tmp/out" "stories260K-Q4_0.gguf: fail"
has table-reason "$tmp/out" "exceeds --max-ppl-delta-pct 5 by"
has table-tokens "$tmp/out" "1008 tokens scored in 16 chunks of 128"
has json-schema "$tmp/r.json" '"schema": "quanta.eval/1"'
count json-pass "$tmp/r.json" '"verdict": "pass"' 1
count json-fail "$tmp/r.json" '"verdict": "fail"' 1
has json-exit "$tmp/r.json" '"exit_status": 1'
has json-kld "$tmp/r.json" '"kld_mean": '
has json-base "$tmp/r.json" '"ppl": 3.'
has html-doc "$tmp/r.html" "<!DOCTYPE html>"
count html-charts "$tmp/r.html" "<figure><svg" 3

# Q8_0 alone: every candidate passes, exit 0
check q8-only 0 "$q" eval --base "$base" --candidate "$q8" -f "$text" --chunks 4 "${fast[@]}"
has q8-only-pass "$tmp/out" "stories260K-Q8_0.gguf: pass"

# a threshold inside Q4_0's interval: not a pass, not a fail -> needs-review, exit 1
check q4-review 1 "$q" eval --base "$base" --candidate "$q4" -f "$text" --chunks 16 --max-ppl-delta-pct 10 "${fast[@]}"
has q4-review-verdict "$tmp/out" "stories260K-Q4_0.gguf: needs-review"
# KL and top-1 thresholds name themselves
check q4-kld 1 "$q" eval --base "$base" --candidate "$q4" -f "$text" --chunks 4 --max-ppl-delta-pct 50 --max-kld 0.01 --min-top1 0.95 "${fast[@]}"
has q4-kld-reason "$tmp/out" "exceeds --max-kld 0.01"
has q4-top1-reason "$tmp/out" "is below --min-top1 0.95"

# the base itself with an FP8 KV cache, scales 1.0, named; multiple choice on 4 items
head -n 4 "$(dirname "$0")/../data/mc_tinystories.jsonl" >"$tmp/mc4.jsonl"
check kv-candidate 0 "$q" eval --base "$base" --candidate "$base@kv=fp8-e4m3,kv-scale=one,name=fp8-one" -f "$text" \
    --chunks 2 --mc "$tmp/mc4.jsonl" --max-ppl-delta-pct 50 --json="$tmp/kv.json" "${fast[@]}"
has kv-label "$tmp/out" "fp8-one: pass"
has kv-desc "$tmp/out" "fp8-e4m3, scale=one"
has kv-mc "$tmp/out" "multiple choice"
has kv-mc-json "$tmp/kv.json" '"n_items": 4'

echo "eval.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
