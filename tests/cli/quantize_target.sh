#!/bin/bash
# tests/cli/quantize_target.sh QUANTA SHARED_DIR — `quanta quantize --target-size / --target-bpw`
# (docs/quantize.md "Target size"): the whole file within the budget (the dry run's size is the
# written file's), every tensor a candidate whose block fits its row, the choice in --json and in
# the file's quanta.mix.* keys, the same bytes at any thread count, and the refusals.
# (heavy under sanitizers: about 2 CPU-minutes of searches in release; test_mix and test_mix_table
# check the search under ASan.)
source "$(dirname "$0")/lib/harness.sh"
stories="$shared/models/stories260K.gguf"
tiny="$shared/models/tiny256-random.gguf"
im="$shared/reference/llamacpp-quantize/imatrix-stories260K.gguf"
json_int() { sed -n "s/^  \"$1\": \([0-9]*\).*/\1/p" "$2" | head -1; }

expect "--help" 0 "out:--target-size SIZE" "$q" quantize --help
ok has out "--candidates T,T,..."
expect "no unit" 2 "needs a unit" "$q" quantize "$stories" "$tmp/x.gguf" --target-size 300000
expect "scheme and target" 2 "give one of them" "$q" quantize "$stories" "$tmp/x.gguf" --scheme q4_0 --target-size 300KB
expect "size and bpw" 2 "give one of them" "$q" quantize "$stories" "$tmp/x.gguf" --target-size 300KB --target-bpw 5
expect "--candidates alone" 2 "goes with --target-size" "$q" quantize "$stories" "$tmp/x.gguf" --scheme q4_0 --candidates q4_0
expect "bad candidate" 2 "q9_z" "$q" quantize "$stories" "$tmp/x.gguf" --target-size 300KB --candidates q4_0,q9_z
expect "--tensor-type with a target" 1 "do not apply" "$q" quantize "$stories" "$tmp/x.gguf" \
    --target-size 300KB --tensor-type attn_q=q8_0
# stories260K: 172-wide ffn_down rows fit f16 only, the rest at least Q4_0-sized blocks: 120 KB cannot be met
expect "too small" 1 "more than the" "$q" quantize "$stories" "$tmp/x.gguf" --target-size 120KB --imatrix "$im"
ok test ! -e "$tmp/x.gguf"

# 300000 bytes: the whole file within it, the dry run's size the written file's
expect "dry run" 0 "" "$q" quantize "$stories" "$tmp/m.gguf" --target-size 300000B --imatrix "$im" --dry-run --json -q
dry=$(json_int output_bytes "$tmp/out")
ok test -n "$dry"
ok test "$dry" -le 300000
ok test "$dry" -gt 290000 # the budget is spent, not left over
ok has out '"target": {'
ok has out '"sensitivity": "proxy"'
ok has out '"exact": true'
# 64-wide rows fit no 256 block: no K- or i-quant of 256 anywhere
ok test -z "$(grep -oE '"type": "(q[2-6]_K|iq[1-3]_[a-z]+|iq4_xs)"' "$tmp/out" | head -1)"
expect "write" 0 "" "$q" quantize "$stories" "$tmp/m.gguf" --target-size 300000B --imatrix "$im" --threads 1 -q
ok test "$(stat -c %s "$tmp/m.gguf")" = "$dry"
mv "$tmp/m.gguf" "$tmp/m1.gguf"
expect "write, 2 threads" 0 "" "$q" quantize "$stories" "$tmp/m.gguf" --target-size 300000B --imatrix "$im" --threads 2 -q
ok cmp -s "$tmp/m.gguf" "$tmp/m1.gguf"
expect "inspect" 0 "" "$q" inspect "$tmp/m.gguf" --json
ok has out "quanta.mix.types"
ok grep -qa ",f16," "$tmp/m.gguf" # the chosen types, one string (172-wide ffn_down: f16)
ok has out "quanta.mix.budget_bytes"
expect "runs" 0 "" "$q" run -m "$tmp/m.gguf" -p "Once upon a time" -n 4 --temp 0

# a bigger budget buys a lower predicted cost
expect "dry run, 340000B" 0 "" "$q" quantize "$stories" --target-size 340000B --imatrix "$im" --dry-run --json -q
pred() { sed -n 's/^    "predicted_cost": \([0-9.e+-]*\).*/\1/p' "$1" | head -1; }
cp "$tmp/out" "$tmp/big.json"
"$q" quantize "$stories" --target-size 300000B --imatrix "$im" --dry-run --json -q >"$tmp/small.json" 2>/dev/null
ok awk -v a="$(pred "$tmp/big.json")" -v b="$(pred "$tmp/small.json")" 'BEGIN { exit !(a + 0 < b + 0) }'

# --target-bpw on tiny256 (every row 256 wide: the K- and i-quants apply); the i-quants that need
# an imatrix are left out without one
expect "bpw" 0 "" "$q" quantize "$tiny" --target-bpw 4.5 --dry-run --json -q
bpw=$(sed -n 's/^  "bits_per_weight": \([0-9.]*\).*/\1/p' "$tmp/out")
ok awk -v b="$bpw" 'BEGIN { exit !(b <= 4.5 && b > 4.0) }'
ok test -z "$(grep -oE '"type": "(iq2_xxs|iq2_xs|iq1_s)"' "$tmp/out" | head -1)"
expect "candidates" 0 "" "$q" quantize "$tiny" --target-bpw 5 --candidates q4_K,q6_K --dry-run --json -q
ok test -z "$(sed -n '/"tensors": \[/,$p' "$tmp/out" | grep -oE '"type": "[a-z0-9_A-Z]+"' | grep -vE '"(q4_K|q6_K|f32)"' | head -1)"

calib="$tmp/calib.txt"
tail -n +4331 "$shared/data/tinystories-valid-first1000.txt" >"$calib"
expect "measured without --calib" 2 "needs --calib FILE" "$q" quantize "$stories" "$tmp/x.gguf" --target-size 300KB --sensitivity measured
expect "--sensitivity alone" 2 "goes with --target-size" "$q" quantize "$stories" "$tmp/x.gguf" --scheme q4_0 --sensitivity proxy
expect "measured" 0 "" "$q" quantize "$stories" "$tmp/ms.gguf" --target-size 300000B --imatrix "$im" --calib "$calib" \
    --nsamples 4 --seqlen 64 --sensitivity measured --dry-run --json -q
ok has out '"sensitivity": "measured"'
ok test "$(json_int output_bytes "$tmp/out")" -le 300000
cp "$tmp/out" "$tmp/ms1.json"
expect "measured, 1 thread" 0 "" "$q" quantize "$stories" "$tmp/ms.gguf" --target-size 300000B --imatrix "$im" \
    --calib "$calib" --nsamples 4 --seqlen 64 --sensitivity measured --dry-run --json -q --threads 1
ok cmp -s "$tmp/out" "$tmp/ms1.json"

# --refine (lib/quantize/mix_refine.c): measured on the calibration tokens, so it needs them
expect "--refine without --calib" 2 "needs --calib FILE" "$q" quantize "$stories" "$tmp/x.gguf" --target-size 300KB --refine 2
expect "--refine alone" 2 "goes with --target-size" "$q" quantize "$stories" "$tmp/x.gguf" --scheme q4_0 --refine 1
expect "bad --refine" 2 "expected rounds" "$q" quantize "$stories" "$tmp/x.gguf" --target-size 300KB --refine x
expect "refined" 0 "" "$q" quantize "$stories" --target-size 300000B --imatrix "$im" --calib "$calib" --nsamples 2 \
    --seqlen 64 --refine 1 --dry-run --json -q
ok has out '"refine": {'
ok grep -q '"kld_before": [0-9.e-]*[1-9]' "$tmp/out" # a measured, non-zero KL divergence

# --proxy-sample: tiny256's tensors (262,144 weights at most) are under the default, so "all" is the
# default's plan; scored on every 4th row or so (--proxy-sample 20000) the costs differ, and stay the
# same at any thread count (jobs are taken one at a time, largest first, by whichever thread is free)
expect "--proxy-sample alone" 2 "goes with --target-size" "$q" quantize "$tiny" "$tmp/x.gguf" --scheme q4_0 --proxy-sample all
expect "bad --proxy-sample" 2 "expected a number of weights" "$q" quantize "$tiny" --target-bpw 4.5 --proxy-sample 0
"$q" quantize "$tiny" --target-bpw 4.5 --dry-run --json -q >"$tmp/p_def.json" 2>/dev/null
expect "--proxy-sample all" 0 "" "$q" quantize "$tiny" --target-bpw 4.5 --proxy-sample all --dry-run --json -q
ok cmp -s <(grep '"cost"' "$tmp/out") <(grep '"cost"' "$tmp/p_def.json") # (the recorded command line differs)
expect "sampled, 1 thread" 0 "" "$q" quantize "$tiny" --target-bpw 4.5 --proxy-sample 20000 --threads 1 --dry-run --json -q
cp "$tmp/out" "$tmp/p_s1.json"
expect "sampled, 3 threads" 0 "" "$q" quantize "$tiny" --target-bpw 4.5 --proxy-sample 20000 --threads 3 --dry-run --json -q
ok cmp -s "$tmp/out" "$tmp/p_s1.json"
ok test "$(grep -c '"cost"' "$tmp/p_s1.json")" -gt 20
ok test -n "$(diff <(grep '"cost"' "$tmp/p_s1.json") <(grep '"cost"' "$tmp/p_def.json") | head -1)"
bpw=$(sed -n 's/^  "bits_per_weight": \([0-9.]*\).*/\1/p' "$tmp/p_s1.json")
ok awk -v b="$bpw" 'BEGIN { exit !(b <= 4.5 && b > 4.0) }'

echo "quantize_target: $pass passed, $fail failed"
[ $fail -eq 0 ]
