#!/bin/bash
# tests/cli/awq.sh QUANTA SHARED_DIR — `quanta quantize --algo awq|awq+gptq|smoothquant[+gptq]`
# end to end (docs/awq.md), calibrated on the calibration slice of ../shared/reference/llamacpp-quantize
# and judged on its evaluation slice: stories260K to Q4_0 (ffn_down f16) with AWQ, the same bytes at
# --threads 1 and 2, the algorithm and the calibration record in the file, perplexity below plain
# round-to-nearest's (AWQ and AWQ+GPTQ); tiny256-random to w4a16 (compressed-tensors, 256-wide rows:
# groups of 128) with a KL divergence to the base below round-to-nearest's; stories260K to w8a8-int8
# with SmoothQuant and SmoothQuant+GPTQ within 1 % of F32's perplexity as deployed (the engine runs
# w8a8-int8 as W8A8, docs/w8a8.md); w4a16 with groups of 64 on stories260K, AWQ below RTN; the usage
# errors and refusals.
# (heavy under sanitizers: a minute of calibration in release; test_awq checks the numeric core under ASan.)
source "$(dirname "$0")/lib/harness.sh"
stories="$shared/models/stories260K.gguf"
tiny="$shared/models/tiny256-random.gguf"
text="$shared/data/tinystories-valid-first1000.txt"
tail -n +4331 "$text" >"$tmp/calib.txt" # the calibration slice
head -n 4330 "$text" >"$tmp/eval.txt"   # the evaluation slice
ppl() { "$q" perplexity -m "$1" -f "$tmp/eval.txt" -c "$2" --chunks "$3" --threads 1 --json 2>/dev/null |
        sed -n 's/.*"ppl": \([0-9.]*\),.*/\1/p'; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }

# ---- usage -----------------------------------------------------------------------------------
expect "--help" 0 "" "$q" quantize --help
ok has out "smoothquant+gptq"
ok has out "--alpha A"
expect "awq without --calib" 2 "--algo awq needs --calib" "$q" quantize "$stories" "$tmp/x.gguf" --scheme q4_0 --algo awq
expect "alpha without smoothquant" 2 "--alpha goes with --algo smoothquant" "$q" quantize "$stories" "$tmp/x.gguf" \
    --scheme q4_0 --algo awq --calib "$tmp/calib.txt" --alpha 0.5
expect "alpha out of range" 2 "from 0 to 1" "$q" quantize "$stories" "$tmp/x" --scheme w8a8-int8 \
    --algo smoothquant --calib "$tmp/calib.txt" --alpha 1.5
expect "smoothquant with static input scales" 2 "static input scales are observed on the unsmoothed" "$q" quantize \
    "$stories" "$tmp/x" --scheme fp8-static --algo smoothquant --calib "$tmp/calib.txt"
expect "act order with awq" 2 "goes with --algo gptq" "$q" quantize "$stories" "$tmp/x.gguf" --scheme q4_0 \
    --algo awq --calib "$tmp/calib.txt" --act-order
expect "too little text" 1 "samples asked for" "$q" quantize "$stories" "$tmp/x.gguf" --scheme q4_0 --algo awq \
    --calib "$tmp/calib.txt" --nsamples 100000 --seqlen 256
ok test ! -e "$tmp/x.gguf"
expect "dry run names the algorithm" 0 "" "$q" quantize "$stories" "$tmp/x.gguf" --scheme q4_0 --algo awq \
    --calib "$tmp/calib.txt" --nsamples 4 --seqlen 64 --dry-run
ok has err "algorithm awq, calibrated on"
ok test ! -e "$tmp/x.gguf"

if ldd "$q" 2>/dev/null | grep -q libasan; then
    echo "awq: sanitizer build: the quality gates run in the release build only"
    check "asan awq q4_0" 0 "$q" quantize "$stories" "$tmp/a.gguf" --scheme q4_0 --tensor-type ffn_down=f16 \
        --algo awq --calib "$tmp/calib.txt" --nsamples 2 --seqlen 32 -q
    check "asan awq+gptq w4a16" 0 "$q" quantize "$tiny" "$tmp/ct" --scheme w4a16 --algo awq+gptq \
        --calib "$tmp/calib.txt" --nsamples 2 --seqlen 32 -q
    check "asan smoothquant w8a8" 0 "$q" quantize "$stories" "$tmp/sq" --scheme w8a8-int8 --algo smoothquant \
        --calib "$tmp/calib.txt" --nsamples 2 --seqlen 32 -q
    expect "asan run" 0 "" "$q" run -m "$tmp/a.gguf" -p "Once upon a time" -n 4 --temp 0
    echo "awq: $pass passed, $fail failed"
    [ $fail -eq 0 ]
    exit
fi

# ---- GGUF: Q4_0 with AWQ ----------------------------------------------------------------------------
mkdir -p "$tmp/t1" "$tmp/t2" "$tmp/t3"
awq_q4() { (cd "$1" && "$q" quantize "$stories" a.gguf --scheme q4_0 --tensor-type ffn_down=f16 --algo "$3" \
    --calib ../calib.txt --nsamples 16 --seqlen 256 --threads "$2" "${@:4}"); }
check "awq q4_0, 1 thread" 0 awq_q4 "$tmp/t1" 1 awq
ok has err "layer 5/5 quantized"
ok has err "15 folding pairs smoothed"
check "awq q4_0, 2 threads" 0 awq_q4 "$tmp/t2" 2 awq -q
ok cmp "$tmp/t1/a.gguf" "$tmp/t2/a.gguf"
ok grep -qa "quanta.algorithm" "$tmp/t1/a.gguf"
ok grep -qa "quanta.calibration" "$tmp/t1/a.gguf"
expect "inspect" 0 "" "$q" inspect "$tmp/t1/a.gguf"
ok has out '"awq"'

expect "run" 0 "" "$q" run -m "$tmp/t1/a.gguf" -p "Once upon a time" -n 16 --temp 0
ok test "$(wc -c <"$tmp/out")" -gt 20
check "awq+gptq q4_0" 0 awq_q4 "$tmp/t3" 1 awq+gptq -q
check "rtn q4_0" 0 "$q" quantize "$stories" "$tmp/rtn.gguf" --scheme q4_0 --tensor-type ffn_down=f16 -q
base=$(ppl "$stories" 256 8)
rtn=$(ppl "$tmp/rtn.gguf" 256 8)
awq=$(ppl "$tmp/t1/a.gguf" 256 8)
awqg=$(ppl "$tmp/t3/a.gguf" 256 8)
echo "stories260K, evaluation slice, ctx 256, 8 chunks: F32 $base, Q4_0 RTN $rtn, AWQ $awq, AWQ+GPTQ $awqg"
ok test -n "$base" -a -n "$rtn" -a -n "$awq" -a -n "$awqg"
ok lt "$base" "$awq"
ok lt "$awq" "$rtn"
ok lt "$awqg" "$awq"

# ---- compressed-tensors: w4a16 on tiny256-random (256-wide rows: groups of 128) -----------------------
check "awq w4a16" 0 "$q" quantize "$tiny" "$tmp/ct-awq" --scheme w4a16 --algo awq --calib "$tmp/calib.txt" \
    --nsamples 8 --seqlen 128 -q
ok grep -q '"calibration"' "$tmp/ct-awq/config.json"
ok grep -q '"method": "awq"' "$tmp/ct-awq/config.json"
check "rtn w4a16" 0 "$q" quantize "$tiny" "$tmp/ct-rtn" --scheme w4a16 -q
expect "run w4a16" 0 "" "$q" run -m "$tmp/ct-awq" -p "Once upon a time" -n 8 --temp 0
"$q" eval --base "$tiny" --candidate "$tmp/ct-rtn" --candidate "$tmp/ct-awq" -f "$tmp/eval.txt" -c 128 --chunks 4 \
    --json >"$tmp/eval.json" 2>/dev/null
kld=($(grep -o '"kld_mean": [0-9.e+-]*' "$tmp/eval.json" | awk '{print $2}'))
echo "tiny256-random, evaluation slice, ctx 128, 4 chunks: mean KLD to F16: w4a16 RTN ${kld[0]}, AWQ ${kld[1]}"
ok test "${#kld[@]}" = 2
ok lt "${kld[1]}" "${kld[0]}"

# ---- compressed-tensors: w4a16 on stories260K (groups of 64, ffn_down per channel) ------------------
check "awq w4a16 g64 (stories260K)" 0 "$q" quantize "$stories" "$tmp/w4-awq" --scheme w4a16 --group-size 64 --algo awq \
    --calib "$tmp/calib.txt" --nsamples 16 --seqlen 256 -q
check "rtn w4a16 g64 (stories260K)" 0 "$q" quantize "$stories" "$tmp/w4-rtn" --scheme w4a16 --group-size 64 -q
w_b=$(ppl "$stories" 256 20); w_r=$(ppl "$tmp/w4-rtn" 256 20); w_a=$(ppl "$tmp/w4-awq" 256 20)
echo "stories260K, evaluation slice, ctx 256, 20 chunks: F32 $w_b, w4a16 g64 RTN $w_r, AWQ $w_a"
ok test -n "$w_b" -a -n "$w_r" -a -n "$w_a"
ok lt "$w_a" "$w_r"

# ---- w8a8-int8 with SmoothQuant on stories260K: within 1 % of F32 -------------------------------------
check "smoothquant w8a8" 0 "$q" quantize "$stories" "$tmp/sq" --scheme w8a8-int8 --algo smoothquant \
    --calib "$tmp/calib.txt" --nsamples 16 --seqlen 256
ok has err "10 norms smoothed, 0 dead channels"
ok grep -q '"calibration"' "$tmp/sq/config.json"
check "smoothquant+gptq w8a8" 0 "$q" quantize "$stories" "$tmp/sqg" --scheme w8a8-int8 --algo smoothquant+gptq \
    --calib "$tmp/calib.txt" --nsamples 16 --seqlen 256 -q
sq=$(ppl "$tmp/sq" 256 8); sqg=$(ppl "$tmp/sqg" 256 8)
echo "stories260K, evaluation slice, ctx 256, 8 chunks, as deployed (W8A8): F32 $base, w8a8-int8 SmoothQuant $sq," \
     "SmoothQuant+GPTQ $sqg"
ok test -n "$sq" -a -n "$sqg"
ok lt "$sq" "$(awk -v b="$base" 'BEGIN { print b * 1.01 }')"
ok lt "$sqg" "$(awk -v b="$base" 'BEGIN { print b * 1.01 }')"

echo "awq: $pass passed, $fail failed"
[ $fail -eq 0 ]
