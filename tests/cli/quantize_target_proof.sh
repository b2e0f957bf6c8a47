#!/bin/bash
# tests/cli/quantize_target_proof.sh QUANTA SHARED_DIR — issue 17's proof (docs/quantize.md
# "Target size", "Proof"): on stories260K, at the file size of each of llama.cpp's presets
# Q3_K_M, Q4_K_S, Q4_K_M, Q5_K_M and Q6_K (quanta's byte-identical reproduction of llama-quantize's
# file, tests/golden/test_quantize_llamacpp.c; the size within 1 % of llama.cpp's, the header's
# imatrix path aside), `--target-size` with `--sensitivity measured` and the refinement has a held-out
# KL divergence at most the preset's, with RTN (llama-imatrix's importance matrix, as the preset) and
# with GPTQ (the preset by GPTQ onto the same types; the mix by GPTQ onto its own). Held-out: the
# evaluation slice of ../shared/reference/llamacpp-quantize/README.md, `quanta eval --numerics llama`
# (the result does not depend on the CPU), 100 chunks of 128 tokens; calibration: the calibration
# slice. Where a mix's types are the preset's (the KLD then equal) the test says so.
# NOT yet met (docs/quantize.md "Proof"): GPTQ at Q4_K_S and Q4_K_M, where the mix, allocated on
# round-to-nearest costs, loses to GPTQ onto the preset's types (0.01212 vs 0.01146, 0.01211 vs 0.01082
# on 2026-12-02); and RTN at Q4_K_M, a knife edge: a few header bytes decide it (with this
# checkout's path recorded in the files, 0.01264 vs 0.01280 in one clone and 0.0128047 vs 0.0128009,
# a loss, in another). Those three are printed as known gaps, not counted; one that starts to hold says so.
# Release only: heavy under sanitizers (4.6 CPU-minutes in a release build, 2026-12-02).
source "$(dirname "$0")/lib/harness.sh"
stories="$shared/models/stories260K.gguf"
im="$shared/reference/llamacpp-quantize/imatrix-stories260K.gguf"
data="$shared/data/tinystories-valid-first1000.txt"
# Every path quanta sees is short and fixed (links in $tmp): the files record their command line,
# so a checkout path of another length would change the header and with it the mix's budget.
cd "$tmp" || exit 1
ln -s "$stories" stories260K.gguf && ln -s "$im" imatrix.gguf || exit 1
stories=stories260K.gguf im=imatrix.gguf
tail -n +4331 "$data" >"calib.txt"
head -n 4330 "$data" >"eval.txt"
calib=(--calib "calib.txt" --nsamples 8 --seqlen 128)
presets=(q3_k_m q4_k_s q4_k_m q5_k_m q6_k)
known_gap=" q4_k_s-gptq q4_k_m-gptq q4_k_m-rtn "
cands=()
for p in "${presets[@]}"; do
    expect "preset $p" 0 "" "$q" quantize "$stories" "$p-rtn.gguf" --scheme "$p" --imatrix "$im" -q
    expect "preset $p, gptq" 0 "" "$q" quantize "$stories" "$p-gptq.gguf" --scheme "$p" --algo gptq "${calib[@]}" -q
    for a in rtn gptq; do
        size=$(stat -c %s "$p-$a.gguf")
        algo=(--imatrix "$im")
        [ $a = gptq ] && algo=(--algo gptq)
        expect "mix at $p ($a, ${size}B)" 0 "" "$q" quantize "$stories" "mix-$p-$a.gguf" --target-size "${size}B" \
            "${algo[@]}" "${calib[@]}" --sensitivity measured -q
        ok test "$(stat -c %s "mix-$p-$a.gguf")" -le "$size"
        # within 1 %: the budget is spent, not left over
        ok test "$(stat -c %s "mix-$p-$a.gguf")" -ge $((size - size / 100))
        cands+=(--candidate "$p-$a.gguf" --candidate "mix-$p-$a.gguf")
    done
done
expect "eval" 0 "" "$q" eval --base "$stories" "${cands[@]}" -f "eval.txt" -c 128 --chunks 100 --numerics llama \
    --max-ppl-delta-pct 100 --json="eval.json" -q
# "model": path, then later "kld_mean": value, per candidate
kld() { awk -v m="\"model\": \"$1\"," 'index($0, m) { on = 1 } on && /"kld_mean":/ { gsub(/[ ,]/, ""); split($0, f, ":"); print f[2]; exit }' "eval.json"; }
types() { "$q" inspect "$1" 2>/dev/null | awk '/\.weight/ && NF >= 4 { print $1, $(NF - 2) }'; }
for p in "${presets[@]}"; do
    for a in rtn gptq; do
        kp=$(kld "$p-$a.gguf")
        km=$(kld "mix-$p-$a.gguf")
        ok test -n "$kp" -a -n "$km"
        same=""
        [ "$(types "$p-$a.gguf")" = "$(types "mix-$p-$a.gguf")" ] && same=" (the same types as the preset)"
        if [ -z "${known_gap##* $p-$a *}" ]; then
            awk -v a="$km" -v b="$kp" 'BEGIN { exit !(a + 0 <= b + 0) }' && r="now holds: remove it from known_gap" || r="still open"
            echo "  GAP  $p $a: held-out KLD mix $km, preset $kp$same (known gap, $r)"
        elif awk -v a="$km" -v b="$kp" 'BEGIN { exit !(a + 0 <= b + 0) }'; then
            pass=$((pass + 1))
            echo "  ok   $p $a: held-out KLD mix $km <= preset $kp$same"
        else
            fail=$((fail + 1))
            echo "  FAIL $p $a: held-out KLD mix $km > preset $kp$same"
        fi
    done
done

echo "quantize_target_proof: $pass passed, $fail failed"
[ $fail -eq 0 ]
