#!/bin/bash
# tests/cli/kv_calib.sh QUANTA SHARED_DIR — KV-cache scales fitted by `quanta
# quantize --kv-dtype D --kv-calib none|random|data --kv-scale-gran tensor|head`
# (docs/quantize.md "KV-cache scales"): the usage errors; stories260K Q8_0 with
# scales from the calibration slice, written as quanta.kv_cache.* metadata, the
# same bytes at any thread count, read by `quanta run` and by `quanta eval`,
# whose report compares the same file's cache at scale 1.0 and at the fitted
# scales (int8: calibrated far better than 1.0; fp8: the numbers are printed);
# random and none (its warning); GPTQ fitting them on its way; a
# compressed-tensors directory with k_scale / v_scale and kv_cache_scheme; the
# short-calibration rule (--allow-short-calib).
source "$(dirname "$0")/lib/harness.sh"
stories="$shared/models/stories260K.gguf"
tiny="$shared/models/tiny256-random.gguf"
text="$shared/data/tinystories-valid-first1000.txt"
tail -n +4331 "$text" >"$tmp/calib.txt" # the calibration slice (../shared/reference/llamacpp-quantize/README.md)
head -n 4330 "$text" >"$tmp/eval.txt"   # the evaluation slice
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }
# kld NAME: the mean KL divergence of candidate NAME in $tmp/eval.json
kld() { tr -d '\n ' <"$tmp/eval.json" | grep -o "\"model\":\"$1\"[^}]*\"kld_mean\":[-0-9.e+]*" | sed 's/.*"kld_mean"://' | head -1; }
calib=(--calib "$tmp/calib.txt" --nsamples 8 --seqlen 256)

# ---- usage ------------------------------------------------------------------------------------------
expect "--help" 0 "out:--kv-calib none|random|data" "$q" quantize --help
expect "calib without dtype" 2 "--kv-calib needs --kv-dtype" "$q" quantize "$stories" "$tmp/x.gguf" --scheme q8_0 --kv-calib random
expect "unscaled dtype" 2 "stores K and V without scales" "$q" quantize "$stories" "$tmp/x.gguf" --scheme q8_0 --kv-dtype f16 --kv-calib none
expect "no way to fit" 2 "say how to fit its scales" "$q" quantize "$stories" "$tmp/x.gguf" --scheme q8_0 --kv-dtype fp8
expect "data without text" 2 "--kv-calib data needs --calib" "$q" quantize "$stories" "$tmp/x.gguf" --scheme q8_0 \
    --kv-dtype int8 --kv-calib data
expect "bad gran" 2 "expected tensor or head" "$q" quantize "$stories" "$tmp/x.gguf" --scheme q8_0 --kv-dtype int8 \
    --kv-calib none --kv-scale-gran layer
expect "e5m2 to compressed-tensors" 2 "kv_cache_scheme is FP8 E4M3 or int8" "$q" quantize "$tiny" "$tmp/ct" \
    --scheme fp8-dynamic --kv-dtype fp8-e5m2 --kv-calib none
ok test ! -e "$tmp/x.gguf"

# ---- short calibration text ---------------------------------------------------------------------------
head -c 3000 "$tmp/calib.txt" >"$tmp/short.txt"
expect "short text refused" 1 "--allow-short-calib uses the" "$q" quantize "$stories" "$tmp/x.gguf" --scheme q8_0 \
    --kv-dtype int8 --calib "$tmp/short.txt" --nsamples 64 --seqlen 128
ok has err "64 samples asked for (64 x 128 = 8192 tokens"
expect "short text allowed" 0 "using those" "$q" quantize "$stories" "$tmp/short.gguf" --scheme q8_0 \
    --kv-dtype int8 --calib "$tmp/short.txt" --nsamples 64 --seqlen 128 --allow-short-calib --json="$tmp/short.json"
ok grep -q '"nsamples": [1-9]' "$tmp/short.json"

# ---- GGUF, data -------------------------------------------------------------------------------------------
mkdir -p "$tmp/t1" "$tmp/t2"
fit() { (cd "$1" && "$q" quantize "$stories" s8.gguf --scheme q8_0 --calib ../calib.txt --nsamples 8 --seqlen 256 \
    --kv-dtype fp8-e4m3 --threads "$2" "${@:3}"); }
check "fit, 1 thread" 0 fit "$tmp/t1" 1 --json=s8.json
ok has err "KV cache fp8-e4m3, per-tensor scales (data, 2048 tokens)"
check "fit, 2 threads" 0 fit "$tmp/t2" 2 -q
ok cmp "$tmp/t1/s8.gguf" "$tmp/t2/s8.gguf"
ok grep -q '"calib": "data"' "$tmp/t1/s8.json"
check "inspect" 0 "$q" inspect "$tmp/t1/s8.gguf"
ok has out "quanta.kv_cache.k_scale"
ok has out '"fp8-e4m3"'
check "run uses them" 0 "$q" run -m "$tmp/t1/s8.gguf" -p "Once upon a time" -n 4 --kv-dtype fp8-e4m3 --temp 0
ok has err "per-tensor scales from the model file (quanta.kv_cache.k_scale / v_scale)"
check "int8 cache: rescaled" 0 "$q" run -m "$tmp/t1/s8.gguf" -p "Once upon a time" -n 4 --kv-dtype int8 --temp 0
ok has err "KV cache: int8"
check "head cache from tensor scales" 0 "$q" run -m "$tmp/t1/s8.gguf" -p "Once" -n 2 --kv-dtype fp8 --kv-scale-gran head

# per head
check "fit per head" 0 "$q" quantize "$stories" "$tmp/h.gguf" --scheme q8_0 "${calib[@]}" --kv-dtype int8 \
    --kv-scale-gran head -q --json="$tmp/h.json"
expect "per-head scales, per-tensor cache" 1 "holds per-head KV scales" "$q" run -m "$tmp/h.gguf" -p "Once" -n 2 \
    --kv-dtype int8

# ---- eval: the same file at scale 1.0 and at the fitted scales (int8 and fp8) --------------------------------
# (a quality gate: the release build only, as the other gates)
asan=0
ldd "$q" 2>/dev/null | grep -q libasan && asan=1 && echo "kv_calib: sanitizer build: the eval gate runs in the release build only"
s8="$tmp/t1/s8.gguf"
[ $asan = 1 ] || check "eval one vs fitted" 0 "$q" eval --base "$stories@kv=f32" --candidate "$s8@kv=f32,name=f32kv" \
    --candidate "$s8@kv=fp8-e4m3,kv-scale=one,name=fp8-one" --candidate "$s8@kv=fp8-e4m3,kv-scale=file,name=fp8-fit" \
    --candidate "$s8@kv=int8,kv-scale=one,name=int8-one" --candidate "$s8@kv=int8,kv-scale=file,name=int8-fit" \
    -f "$tmp/eval.txt" -c 256 --chunks 8 --threads 2 --max-ppl-delta-pct 1000 --json="$tmp/eval.json"
if [ $asan = 0 ]; then
    for n in f32kv fp8-one fp8-fit int8-one int8-fit; do echo "kv_calib: KLD to F32 ($n): $(kld $n)"; done
    ok lt "$(kld int8-fit)" "$(kld int8-one)"
    ok lt "$(kld int8-fit)" 0.02
    ok lt "$(kld fp8-fit)" 0.1
    ok lt "$(kld fp8-one)" 0.1
fi

# ---- random, none ----------------------------------------------------------------------------------------------
check "random" 0 "$q" quantize "$stories" "$tmp/r.gguf" --scheme q8_0 --kv-dtype int8 --kv-calib random --nsamples 4 \
    --seqlen 64 --seed 3 --json="$tmp/r.json"
ok has err "(random, 256 tokens)"
ok grep -q '"calib": "random"' "$tmp/r.json"
check "none" 0 "$q" quantize "$stories" "$tmp/n.gguf" --scheme q8_0 --kv-dtype fp8-e4m3 --kv-calib none --json="$tmp/n.json"
ok has err "warning: --kv-calib none: every KV-cache scale is 1.0; nothing was fitted"
ok grep -q '"k_scale":\[1.0,1.0,1.0,1.0,1.0\]' <(tr -d ' \n' <"$tmp/n.json")
check "dry run sizes the keys" 0 "$q" quantize "$stories" "$tmp/n.gguf" --dry-run --scheme q8_0 --kv-dtype fp8-e4m3 --kv-calib none \
    --json="$tmp/d.json"
ok grep -q "\"output_bytes\": $(stat -c %s "$tmp/n.gguf")," "$tmp/d.json"

# ---- GPTQ fits them in its observe passes ----------------------------------------------------------------------
if [ $asan = 0 ]; then
    check "gptq + kv" 0 "$q" quantize "$stories" "$tmp/g.gguf" --scheme q4_0 --tensor-type ffn_down=f16 --algo gptq \
        "${calib[@]}" --kv-dtype int8 --kv-scale-gran head
    ok has err "KV cache int8, per-head scales (data, 2048 tokens)"
    check "gptq file runs" 0 "$q" run -m "$tmp/g.gguf" -p "Once" -n 2 --kv-dtype int8 --kv-scale-gran head
    ok has err "per-head scales from the model file (quanta.kv_cache"
    check "gptq w4a16 + kv" 0 "$q" quantize "$tiny" "$tmp/ctg" --scheme w4a16 --algo gptq --calib "$tmp/calib.txt" \
        --nsamples 2 --seqlen 32 --kv-dtype int8
    ok has err "KV cache int8, per-tensor scales (data, 64 tokens)"
    ok grep -q '"type": "int"' "$tmp/ctg/config.json"
fi

# ---- compressed-tensors ------------------------------------------------------------------------------------------
check "ct fp8 + kv" 0 "$q" quantize "$tiny" "$tmp/ct" --scheme fp8-dynamic --calib "$tmp/calib.txt" --nsamples 2 \
    --seqlen 64 --kv-dtype fp8-e4m3
ok grep -q '"kv_cache_scheme": {' "$tmp/ct/config.json"
ok grep -q '"kv_calib": "data"' "$tmp/ct/config.json"
check "ct inspect" 0 "$q" inspect "$tmp/ct"
ok has out "blk.0.attn_k_scale"
check "ct runs with them" 0 "$q" run -m "$tmp/ct" -p "Once" -n 2 --kv-dtype fp8-e4m3
ok has err "per-tensor scales from the model file (blk.N.attn_k_scale / attn_v_scale)"

echo "kv_calib.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
