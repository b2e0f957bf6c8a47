#!/bin/bash
# tests/cli/quantize_budget.sh QUANTA SHARED_DIR — `quanta quantize` with a target: the size left
# after a KV cache (--budget-for-kv with the planner's --memory/--gpu arithmetic), the picture of
# the budget sweep (--svg), and the 1B-shaped synth model planned to its share of 700MB
# (docs/quantize.md "Target size"). The 1B part quantizes a 65M-parameter model: heavy under sanitizers.
source "$(dirname "$0")/lib/harness.sh"
stories="$shared/models/stories260K.gguf"
im="$shared/reference/llamacpp-quantize/imatrix-stories260K.gguf"
json_int() { sed -n "s/^ *\"$1\": \([0-9]*\).*/\1/p" "$2" | head -1; }
json_num() { sed -n "s/^ *\"$1\": \([0-9.e+-]*\).*/\1/p" "$2" | head -1; }
# inside one object of the JSON: the lines from its key to its closing brace at that indent
section() { sed -n "/^  \"$1\": {/,/^  }/p" "$2"; }
same_num() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = a < 0 ? -a : a; exit !(a != "" && d <= 1e-12 * m + 1e-300) }'; }

expect "--help" 0 "out:--budget-for-kv CTX[xSEQ]" "$q" quantize --help
ok has out "--svg FILE"

# ---- --budget-for-kv: refusals ----
expect "no memory" 2 "needs the device's memory" "$q" quantize "$stories" --budget-for-kv 256 --dry-run
expect "--memory alone" 2 "--memory goes with --budget-for-kv" "$q" quantize "$stories" --target-size 300KB --memory 1GB --dry-run
expect "with --target-size" 2 "--budget-for-kv sets the target size" "$q" quantize "$stories" --target-size 300KB \
    --budget-for-kv 256 --memory 1GB --dry-run
expect "bad CTXxSEQ" 2 "expected CTX or CTXxSEQ" "$q" quantize "$stories" --budget-for-kv 256x --memory 1GB --dry-run
expect "bad CTX" 2 "expected CTX or CTXxSEQ" "$q" quantize "$stories" --budget-for-kv many --memory 1GB --dry-run
expect "memory without a unit" 2 "--memory" "$q" quantize "$stories" --budget-for-kv 256 --memory 1000000 --dry-run
expect "tensor parallel" 2 "one device" "$q" quantize "$stories" --budget-for-kv 256 --gpu t4x2 --dry-run
# stories260K: 5 layers x 4 KV heads x 8 dims x 2 (K and V) x 2 bytes = 640 bytes a token; 100000 x 4 tokens: 256 MB
expect "KV alone exceeds" 1 "leave nothing" "$q" quantize "$stories" --budget-for-kv 100000x4 --memory 100MB --dry-run

# ---- the arithmetic: 640000 x 1.0 - 12000 overhead - 2 x 256 x 640 KV = 300320 bytes for the file ----
kv=(--budget-for-kv 256x2 --memory 640000B --util 1 --overhead 12000B)
expect "budget for KV" 0 "budget for KV" "$q" quantize "$stories" "${kv[@]}" --imatrix "$im" --dry-run --json
section budget_for_kv "$tmp/out" >"$tmp/kv.json"
ok test "$(json_int kv_bytes_per_token "$tmp/kv.json")" = 640
ok test "$(json_int kv_bytes "$tmp/kv.json")" = 327680
ok test "$(json_int file_bytes "$tmp/kv.json")" = 300320
ok test "$(section target "$tmp/out" | json_int file_bytes /dev/stdin)" = 300320
kvbytes=$(json_int output_bytes "$tmp/out")
ok test "$kvbytes" -le 300320
ok test "$kvbytes" -gt 290000 # the budget is spent
# --target-size 300320B is the same target (the plans differ by the recorded command line's length)
expect "the same target as --target-size" 0 "" "$q" quantize "$stories" --target-size 300320B --imatrix "$im" --dry-run --json -q
ok test "$(section target "$tmp/out" | json_int file_bytes /dev/stdin)" = 300320
# a named card: the budget is the planner's (util 0.90 of 16 GB less llama.cpp's allowances); everything fits in f16
expect "--gpu t4" 0 "budget for KV: 0.90 x 16.00 GB" "$q" quantize "$stories" --budget-for-kv 4096x2 --gpu t4 --dry-run --json
ok has out '"hardware": "t4"'

# ---- --svg: the budget sweep ----
expect "--svg without a target" 2 "--svg draws a target's budget sweep" "$q" quantize "$stories" "$tmp/x.gguf" \
    --scheme q4_0 --svg "$tmp/x.svg"
ok test ! -e "$tmp/x.svg"
expect "svg" 0 "" "$q" quantize "$stories" --target-size 300000B --imatrix "$im" --svg "$tmp/a.svg" --threads 1 \
    --dry-run --json -q
cp "$tmp/out" "$tmp/a.json"
svg="$tmp/a.svg"
ok test -s "$svg"
if command -v xmllint >/dev/null; then ok xmllint --noout "$svg"; else
    ok test "$(head -c 5 "$svg")" = "<?xml"
    ok test "$(tail -n 1 "$svg")" = "</svg>"
    ok test "$(grep -c '<svg' "$svg")" = 1
fi
count() { grep -o "$1" "$2" | wc -l; }
# 33 sweep points, non-increasing cost as the budget grows (a bigger budget never costs more)
ok test "$(count 'class="sweep-point"' "$svg")" = 33
ok test "$(sed -n '/"points": \[/,/\]/p' "$tmp/a.json" | grep -c '"file_bytes"')" = 33
sed -n '/"points": \[/,/\]/p' "$tmp/a.json" | sed -n 's/^ *"cost": \([0-9.e+-]*\).*/\1/p' >"$tmp/costs"
ok awk 'NR > 1 && $1 > prev * (1 + 1e-12) { bad = 1 } { prev = $1 } END { exit bad }' "$tmp/costs"
# ten presets (Q3_K_M, Q4_K_S, Q4_K_M, Q5_K_M, Q6_K, with and without the imatrix), every one scored here
ok test "$(count 'class="preset"' "$svg")" = 10
ok test "$(grep -c '"scored": true' "$tmp/a.json")" = 10
ok test "$(count 'data-imatrix="yes"' "$svg")" = 5
# the chosen point is the plan's: its file size and predicted cost
chosen=$(grep -o 'class="chosen"[^>]*' "$svg")
ok test "$(echo "$chosen" | sed -n 's/.*data-bytes="\([0-9]*\)".*/\1/p')" = "$(json_int output_bytes "$tmp/a.json")"
ok same_num "$(echo "$chosen" | sed -n 's/.*data-cost="\([0-9.e+-]*\)".*/\1/p')" \
    "$(section target "$tmp/a.json" | json_num predicted_cost /dev/stdin)"
# Q4_K_M with the imatrix: the file quantize --scheme q4_k_m --imatrix writes, less its quanta.command_line
# key (the preset's point records no command; the key, its length and the string, then the 32-byte alignment)
"$q" quantize "$stories" --scheme q4_k_m --imatrix "$im" --dry-run --json -q >"$tmp/q4km.json" 2>/dev/null
pre=$(grep -o 'data-name="Q4_K_M" data-imatrix="yes" data-bytes="[0-9]*"' "$svg" | grep -o '[0-9]*"$' | tr -d '"')
real=$(json_int output_bytes "$tmp/q4km.json")
cmdline="quanta quantize $stories --scheme q4_k_m --imatrix $im"
ok awk -v p="$pre" -v r="$real" -v n="${#cmdline}" 'BEGIN { exit !(p != "" && p <= r && r - p <= 8 + 19 + 4 + 8 + n + 32) }'
# without the imatrix each preset's error is larger (same types, scored with the same weights)
# (Q6_K on 64-wide rows is Q8_0 everywhere, which ggml quantizes without weights: the same cost)
for p in Q3_K_M:"<" Q4_K_M:"<" Q6_K:"=="; do
    op=${p#*:} p=${p%%:*}
    with=$(grep -o "data-name=\"$p\" data-imatrix=\"yes\"[^>]*data-cost=\"[^\"]*\"" "$svg" | sed 's/.*data-cost="\([^"]*\)"/\1/')
    without=$(grep -o "data-name=\"$p\" data-imatrix=\"no\"[^>]*data-cost=\"[^\"]*\"" "$svg" | sed 's/.*data-cost="\([^"]*\)"/\1/')
    ok awk -v a="$with" -v b="$without" "BEGIN { exit !(a != \"\" && b != \"\" && a + 0 $op b + 0) }"
done
# one heat cell per tensor the mix chose for
ok test "$(count 'class="heat"' "$svg")" = "$(section target "$tmp/a.json" | grep -c '"candidates"')"
ok has out '"sweep": {'
# the same bytes at another thread count
expect "svg, 2 threads" 0 "" "$q" quantize "$stories" --target-size 300000B --imatrix "$im" --svg "$tmp/b.svg" --threads 2 \
    --dry-run -q
ok cmp -s "$tmp/a.svg" "$tmp/b.svg"

# measured costs: a preset quantized without the imatrix has no measured cost, and says so
calib="$tmp/calib.txt"
tail -n +4331 "$shared/data/tinystories-valid-first1000.txt" >"$calib"
expect "svg, measured" 0 "" "$q" quantize "$stories" --target-size 300000B --imatrix "$im" --calib "$calib" \
    --nsamples 4 --seqlen 64 --sensitivity measured --svg "$tmp/m.svg" --dry-run --json -q
ok has out '"scored": false'
ok has out 'not among the measured costs'
ok test "$(count 'class="preset"' "$tmp/m.svg")" = "$(grep -c '"scored": true' "$tmp/out")"
ok grep -q 'data-sensitivity="measured"' "$tmp/m.svg"

# ---- the 1B target: Llama-3.2-1B's shapes (2048-wide, 8192-wide FFN, 8 KV heads) at 1 layer and a
# 2048-token vocabulary, planned to the share of 700MB its parameters are of the full model's ----
"$q" estimate --model llama-3.2-1b --scheme q4_k_m --memory 80GB --json >"$tmp/est.json" 2>/dev/null
full=$(json_int n_params "$tmp/est.json")
expect "synth 1B shape" 0 "" "$q" synth --like llama-3.2-1b --layers 1 --vocab 2048 --format f16 -o "$tmp/l1.gguf" --json
small=$(json_int params "$tmp/out")
ok test -n "$full" -a -n "$small"
target=$(awk -v f="$full" -v s="$small" 'BEGIN { printf "%d", 700e6 * s / f }')
cand=(--candidates q2_K,q3_K,q4_K,q5_K,q6_K,q8_0)
expect "1B-shaped target" 0 "" "$q" quantize "$tmp/l1.gguf" "$tmp/l1q.gguf" --target-size "${target}B" "${cand[@]}" --dry-run --json -q
b1=$(json_int output_bytes "$tmp/out")
ok test "$b1" -le "$target"
ok awk -v b="$b1" -v t="$target" 'BEGIN { exit !(b > 0.99 * t) }' # the budget is spent
ok grep -qE '"type": "q[2-6]_K"' "$tmp/out"                     # 2048-wide rows take the K-quants
expect "1B-shaped write" 0 "" "$q" quantize "$tmp/l1.gguf" "$tmp/l1q.gguf" --target-size "${target}B" "${cand[@]}" -q
ok test "$(stat -c %s "$tmp/l1q.gguf")" = "$b1"
expect "1B-shaped runs" 0 "" "$q" run -m "$tmp/l1q.gguf" -p "a b" -n 2 --temp 0

echo "quantize_budget: $pass passed, $fail failed"
[ $fail -eq 0 ]
