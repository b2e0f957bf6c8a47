#!/bin/bash
# (heavy under sanitizers: 48 quanta run calls and five evals; checked once under ASan by hand, the unit and fuzz
# targets cover its parsers and checks under the sanitizers)
# tests/cli/eval_tasks.sh QUANTA SHARED_DIR — `quanta eval --tasks`: a task file
# built here from the F32 stories260K's own greedy continuations (quanta run
# --temp 0 --numerics llama, so every CPU gets the same text) of story
# openings, checked by exact, contains and regex. It passes 100 % on F32, and
# the flipped items against llama.cpp's Q4_0 are exactly those whose greedy
# text changes (computed here with quanta run). Also: a bad task file fails
# before any model runs; the --mc file run as tasks gives --mc's numbers.
. "$(dirname "$0")/lib/harness.sh"
base="$shared/models/stories260K.gguf"
q4="$shared/reference/llamacpp/stories260K-Q4_0.gguf"
text="$shared/data/tinystories-valid-first1000.txt"
mc="$(dirname "$0")/../data/mc_tinystories.jsonl"
eng=(-c 128 -t 1 --numerics llama)
n_tok=16

greedy() { "$q" run -m "$1" -p "$2" -n $n_tok --temp 0 "${eng[@]}" --json --quiet | jq -r .text; }

# 24 openings: the first five words of lines with at least ten
mapfile -t openings < <(awk 'NF >= 10 { print $1, $2, $3, $4, $5 }' "$text" | head -n 24)
: >"$tmp/tasks.jsonl"
: >"$tmp/changed"
i=0
for p in "${openings[@]}"; do
    t=$(greedy "$base" "$p") || { echo "FAIL: quanta run on '$p'"; exit 1; }
    t4=$(greedy "$q4" "$p") || { echo "FAIL: quanta run (Q4_0) on '$p'"; exit 1; }
    [ "$t" = "$t4" ] || echo "s$i" >>"$tmp/changed"
    # each check type passes exactly when the text equals the F32 one
    case $((i % 3)) in
    0) checks=$(jq -cn --arg v "$t" '[{type: "exact", value: $v}]') ;;
    1) checks=$(jq -cn --arg v "$t" --arg n "$(printf %s "$t" | wc -m)" \
                   '[{type: "contains", value: $v}, {type: "regex", pattern: ("(?s)^.{" + $n + "}$")}]') ;;
    2) checks=$(jq -cn --arg v "$t" '[{type: "regex", pattern: ("^\\Q" + $v + "\\E$")}]') ;;
    esac
    jq -cn --arg id "s$i" --arg p "$p" --argjson c "$checks" --argjson n $n_tok \
        '{id: $id, prompt: $p, max_tokens: $n, checks: $c}' >>"$tmp/tasks.jsonl"
    i=$((i + 1))
done

expect run 1 '' "$q" eval --base "$base" --candidate "$q4" -f "$text" --chunks 2 --tasks "$tmp/tasks.jsonl" \
    --max-pass-drop-pct 0 --json="$tmp/r.json" --html "$tmp/r.html" "${eng[@]}" --quiet
ok [ "$(jq ".base.tasks.pass_rate == 1" "$tmp/r.json")" = "true" ]
ok [ "$(jq .base.tasks.items "$tmp/r.json")" = "24" ]
jq -r '.candidates[0].tasks.flipped[].id' "$tmp/r.json" | sort >"$tmp/flipped"
sort -o "$tmp/changed" "$tmp/changed"
if cmp -s "$tmp/flipped" "$tmp/changed"; then pass=$((pass + 1)); else
    echo "FAIL: flipped items differ from those whose greedy text changed on Q4_0"
    diff "$tmp/flipped" "$tmp/changed"
    fail=$((fail + 1))
fi
n_changed=$(wc -l <"$tmp/changed")
echo "eval_tasks: $n_changed of 24 greedy continuations change on Q4_0"
# every flip is a pass on base and a fail on the candidate, with both outputs
ok [ "$(jq '[.candidates[0].tasks.flipped[] | select(.base_pass and (.candidate_pass | not) and .base_output != .candidate_output)] | length' "$tmp/r.json")" = "$n_changed" ]
ok [ "$(jq .candidates[0].tasks.passed "$tmp/r.json")" = "$((24 - n_changed))" ]
if [ "$n_changed" -gt 0 ]; then
    ok grep -q "tasks: pass rate" "$tmp/out"
    ok grep -qF "$(head -n 1 "$tmp/changed")" "$tmp/r.html"
    ok [ "$(jq -r '.candidates[0].verdict' "$tmp/r.json")" = "fail" ]
fi

# the --mc file as a task file: --mc's numbers
expect mc 0 '' "$q" eval --base "$base" --candidate "$base" -f "$text" --chunks 1 --mc "$mc" --tasks "$mc" \
    --json="$tmp/mc.json" "${eng[@]}" --quiet
ok [ "$(jq .base.tasks.passed "$tmp/mc.json")" = "$(jq .base.mc.n_correct "$tmp/mc.json")" ]
ok [ "$(jq .base.tasks.items "$tmp/mc.json")" = "$(jq .base.mc.n_items "$tmp/mc.json")" ]

# bad task files: one message naming file, line and field, before any model is opened
printf '{"prompt": "a", "checks": [{"type": "regex", "pattern": "(x"}]}\n' >"$tmp/bad.jsonl"
expect bad-regex 1 "bad.jsonl:1: field 'checks[0].pattern': invalid regex" "$q" eval --base /nonexistent.gguf \
    --candidate "$q4" -f "$text" --tasks "$tmp/bad.jsonl"
printf '{"prompt": "a", "checks": [{"type": "json"}]}\n{"prompt": "b", "checks": [{"type": "bleu"}]}\n' >"$tmp/bad2.jsonl"
expect bad-type 1 "bad2.jsonl:2: field 'checks[0].type': unknown check type 'bleu'" "$q" eval --base /nonexistent.gguf \
    --candidate "$q4" -f "$text" --tasks "$tmp/bad2.jsonl"
printf '{"id": "chat", "messages": [{"role": "user", "content": "hi"}], "checks": [{"type": "json"}]}\n' >"$tmp/chat.jsonl"
expect no-template 1 "chat.jsonl:1 (item 'chat') has messages" "$q" eval --base "$base" --candidate "$q4" -f "$text" \
    --chunks 1 --tasks "$tmp/chat.jsonl" "${eng[@]}" --quiet
expect bad-samples 2 "--samples" "$q" eval --base "$base" --candidate "$q4" -f "$text" --tasks "$tmp/tasks.jsonl" --samples 0

# the held-out rule: task prompts taken from a candidate's calibration text warn, and fail with --strict
tail -n +4331 "$text" >"$tmp/cal.txt"
head -n 4330 "$text" >"$tmp/heldout.txt"
expect quantize 0 '' "$q" quantize "$base" "$tmp/q8.gguf" --scheme q8_0 --calib "$tmp/cal.txt" --seqlen 128 --nsamples 20 -q
awk 'NF >= 20 && NF <= 35 { print }' "$tmp/cal.txt" | head -n 3 | jq -Rc '{prompt: ., max_tokens: 1, checks: [{type: "json"}]}' >"$tmp/seen.jsonl"
head -n 4330 "$text" | awk 'NF >= 20 && NF <= 35 { print }' | head -n 3 | jq -Rc '{prompt: ., max_tokens: 1, checks: [{type: "json"}]}' >"$tmp/unseen.jsonl"
expect seen-warns 0 "out:task prompts overlap the candidate's calibration text" "$q" eval --base "$base" --candidate "$tmp/q8.gguf" \
    -f "$tmp/heldout.txt" --chunks 1 --tasks "$tmp/seen.jsonl" "${eng[@]}" --quiet --max-ppl-delta-pct 100
expect seen-strict 1 "out:task prompts overlap the candidate's calibration text" "$q" eval --base "$base" \
    --candidate "$tmp/q8.gguf" -f "$tmp/heldout.txt" --chunks 1 --tasks "$tmp/seen.jsonl" "${eng[@]}" --quiet --strict --max-ppl-delta-pct 100
expect unseen 0 '' "$q" eval --base "$base" --candidate "$tmp/q8.gguf" -f "$tmp/heldout.txt" --chunks 1 \
    --tasks "$tmp/unseen.jsonl" "${eng[@]}" --quiet --strict --max-ppl-delta-pct 100
if grep -q "task prompts overlap" "$tmp/out"; then echo "FAIL unseen: warned"; fail=$((fail + 1)); else pass=$((pass + 1)); fi

echo "eval_tasks: $pass passed, $fail failed"
[ "$fail" = 0 ]
