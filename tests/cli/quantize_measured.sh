#!/bin/bash
# tests/cli/quantize_measured.sh QUANTA SHARED_DIR — `quanta quantize --target-size ... --sensitivity
# measured|measured-groups` (docs/quantize.md "Target size"): each tensor measured alone, or by
# groups (a layer's attention, a layer's FFN, the output, the token embedding), the table cached (--sensitivity-cache: a second run with another
# budget measures nothing and chooses what a fresh run chooses; a stale table is measured again with
# a note, a corrupt one refused), the rank correlation of proxy and measured costs on stories260K and
# on tiny256-random for K- and I-quant candidates, the additivity check (the whole mix measured), and
# with --algo gptq a table of GPTQ copies keyed by its options (the same at any --threads), and the
# reference loop (QUANTA_MIX_MEASURE_FULL=1) measuring the same tables as the resumed runs.
# (heavy under sanitizers: a dozen measured scans, over 3 minutes on a loaded 2-core release build)
source "$(dirname "$0")/lib/harness.sh"
stories="$shared/models/stories260K.gguf"
tiny="$shared/models/tiny256-random.gguf"
im="$shared/reference/llamacpp-quantize/imatrix-stories260K.gguf"
calib="$tmp/calib.txt"
tail -n +4331 "$shared/data/tinystories-valid-first1000.txt" >"$calib"
# a number of the "target" object (4 spaces in), or of its sensitivity_cache (6)
tnum() { sed -n "s/^    \"$1\": \([-0-9.e+]*\).*/\1/p" "$2" | head -1; }
cbool() { sed -n "s/^      \"$1\": \([a-z]*\).*/\1/p" "$2" | head -1; }
# the choice: each target tensor's name and chosen type, in order
choice() { sed -n '/^  "target": {/,$p' "$1" | grep -E '^        "(name|type)": ' ; }
m=(--imatrix "$im" --calib "$calib" --nsamples 4 --seqlen 64 --sensitivity measured --dry-run --json -q)

expect "--help" 0 "out:--sensitivity-cache FILE" "$q" quantize --help
expect "cache without measured" 2 "goes with --sensitivity measured" "$q" quantize "$stories" --target-size 300KB \
    --sensitivity-cache "$tmp/t" --dry-run

table="$tmp/stories.table"
expect "measured, table written" 0 "" "$q" quantize "$stories" --target-size 300000B "${m[@]}" --sensitivity-cache "$table"
ok test "$(cbool written "$tmp/out")" = true
ok test "$(cbool used "$tmp/out")" = false
ok test "$(head -1 "$table")" = "quanta sensitivity table 1"
# stories260K: each of 5 layers' 7 linears, the output and the (untied) token embedding alone
ok test "$(tnum groups "$tmp/out")" = 37
ok test "$(grep -c '^blk\.[0-4]\.[a-z_]*\.weight ' "$table")" = 35
ok grep -q '^output ' "$table"
ok grep -q '^token_embd ' "$table"
# measured costs fall with the type's bits: q4_0 costs each tensor more than q8_0, and q8_0 more than f16
ok awk '/^(blk|output|token_embd)/ && / q4_0=/ { delete c; for (i = 3; i <= NF; i++) { split($i, a, "="); c[a[1]] = a[2] + 0 }
        n++; if (!(c["q4_0"] > c["q8_0"] && c["q8_0"] > c["f16"] && c["f16"] >= 0)) bad = 1 } END { exit bad || n != 32 }' "$table"
# the proxy agrees with the measurement in rank (0.82 measured; a random order gives ~0); 30 tensors x 7
# types, ffn_down (172 wide) f16 only, the output and the embedding 7 each
rho=$(tnum rank_correlation "$tmp/out")
ok awk -v r="$rho" 'BEGIN { exit !(r > 0.6 && r <= 1) }'
ok test "$(tnum rank_pairs "$tmp/out")" = 229
# additivity: the whole mix measured, the same order of magnitude as the sum it was predicted by
pred=$(tnum predicted_cost "$tmp/out")
meas=$(tnum measured_cost "$tmp/out")
ok awk -v p="$pred" -v x="$meas" 'BEGIN { exit !(p > 0 && x > 0 && x / p > 0.25 && x / p < 4) }'
cp "$tmp/out" "$tmp/first.json"

# another budget: the cached table, nothing measured, the choices and costs of a fresh run
expect "fresh, 320000B" 0 "" "$q" quantize "$stories" --target-size 320000B "${m[@]}"
cp "$tmp/out" "$tmp/fresh.json"
expect "cached, 320000B" 0 "" "$q" quantize "$stories" --target-size 320000B "${m[@]}" --sensitivity-cache "$table"
ok test "$(cbool used "$tmp/out")" = true
ok test "$(cbool written "$tmp/out")" = false
ok test -n "$(choice "$tmp/out")"
ok test "$(choice "$tmp/out")" = "$(choice "$tmp/fresh.json")"
ok test "$(tnum predicted_cost "$tmp/out")" = "$(tnum predicted_cost "$tmp/fresh.json")"
ok test "$(tnum rank_correlation "$tmp/out")" = "$(tnum rank_correlation "$tmp/fresh.json")"
ok test "$(choice "$tmp/out")" != "$(choice "$tmp/first.json")" # the budget did change the choice
# any --threads: the same table
expect "fresh, 1 thread" 0 "" "$q" quantize "$stories" --target-size 300000B "${m[@]}" --threads 1 \
    --sensitivity-cache "$tmp/t1.table"
ok cmp -s "$tmp/t1.table" "$table"

# the reference loop (QUANTA_MIX_MEASURE_FULL=1: every run from the tokens through every layer) measures
# the table the resumed runs do (each (tensor, type) run from its layer's input, lib/quantize/mix_measure.c)
QUANTA_MIX_MEASURE_FULL=1 expect "reference loop, 2 threads" 0 "" "$q" quantize "$stories" --target-size 300000B \
    "${m[@]}" --threads 2 --sensitivity-cache "$tmp/full.table"
ok cmp -s "$tmp/full.table" "$table"

# stale: other calibration tokens -> measured again, with a note, and the table rewritten
cp "$table" "$tmp/stale.table"
expect "stale table" 0 "other calibration tokens; measuring again" "$q" quantize "$stories" --target-size 300000B \
    --imatrix "$im" --calib "$calib" --nsamples 3 --seqlen 64 --sensitivity measured --sensitivity-cache "$tmp/stale.table" \
    --dry-run --json
ok test "$(cbool used "$tmp/out")" = false
ok test "$(cbool written "$tmp/out")" = true
ok grep -q "^calibration [0-9a-f]* 3 64$" "$tmp/stale.table"
# corrupt: refused, naming the file and line
sed 's/^output \([0-9]*\) /output \1 q4_0=-1 /' "$table" >"$tmp/bad.table"
expect "corrupt table" 1 "bad.table: line" "$q" quantize "$stories" --target-size 300000B "${m[@]}" \
    --sensitivity-cache "$tmp/bad.table"
printf 'not a table\n' >"$tmp/bad2.table"
expect "not a table" 1 "not a quanta sensitivity table" "$q" quantize "$stories" --target-size 300000B "${m[@]}" \
    --sensitivity-cache "$tmp/bad2.table"

# by groups: 5 layers x (attention, FFN), the output and the embedding
expect "measured-groups" 0 "" "$q" quantize "$stories" --target-size 300000B "${m[@]/#measured/measured-groups}" \
    --sensitivity-cache "$tmp/groups.table"
ok has out '"sensitivity": "measured-groups"'
ok test "$(tnum groups "$tmp/out")" = 12
ok test "$(grep -c '^blk\.[0-4]\.\(attn\|ffn\) ' "$tmp/groups.table")" = 10
ok test "$(tnum rank_pairs "$tmp/out")" = 84
for t in 1 2; do # the reference loop: the same table at 1 and 2 threads
    QUANTA_MIX_MEASURE_FULL=1 expect "groups, reference loop, $t threads" 0 "" "$q" quantize "$stories" \
        --target-size 300000B "${m[@]/#measured/measured-groups}" --threads $t --sensitivity-cache "$tmp/gfull$t.table"
    ok cmp -s "$tmp/gfull$t.table" "$tmp/groups.table"
done
rho=$(tnum rank_correlation "$tmp/out")
ok awk -v r="$rho" 'BEGIN { exit !(r > 0.6 && r <= 1) }'
# the per-tensor table is another table for a by-groups run: measured again, with a note
cp "$table" "$tmp/pt.table"
expect "groups vs per-tensor table" 0 "other groups or types; measuring again" "$q" quantize "$stories" \
    --target-size 300000B --imatrix "$im" --calib "$calib" --nsamples 4 --seqlen 64 --sensitivity measured-groups \
    --sensitivity-cache "$tmp/pt.table" --dry-run --json

# --algo gptq: the costs are measured on GPTQ's copies (lib/quantize/mix_gptq.c), keyed by GPTQ's options,
# the same table at any --threads; a table without them (round-to-nearest copies) is measured again
g=(--algo gptq --calib "$calib" --nsamples 2 --seqlen 64 --sensitivity measured --dry-run --json -q)
expect "gptq, 1 thread" 0 "" "$q" quantize "$stories" --target-size 330000B "${g[@]}" --threads 1 --sensitivity-cache "$tmp/g1.table"
ok grep -q '^numerics fast/[a-z0-9]*/gptq-d0.01-b128-hi$' "$tmp/g1.table"
expect "gptq, 3 threads" 0 "" "$q" quantize "$stories" --target-size 330000B "${g[@]}" --threads 3 --sensitivity-cache "$tmp/g3.table"
ok cmp -s "$tmp/g1.table" "$tmp/g3.table"
sed 's|^\(numerics fast/[a-z0-9]*\)/gptq.*|\1|' "$tmp/g1.table" >"$tmp/grtn.table"
expect "gptq vs an rtn table" 0 "other numerics; measuring again" "$q" quantize "$stories" --target-size 330000B \
    --algo gptq --calib "$calib" --nsamples 2 --seqlen 64 --sensitivity measured --sensitivity-cache "$tmp/grtn.table" --dry-run
ok cmp -s "$tmp/g1.table" "$tmp/grtn.table"

# a real run reports the additivity check in its text
expect "real run" 0 "mix KLD  predicted" "$q" quantize "$stories" "$tmp/ms.gguf" --target-size 300000B --imatrix "$im" \
    --calib "$calib" --nsamples 4 --seqlen 64 --sensitivity measured --sensitivity-cache "$table"
ok test -s "$tmp/ms.gguf"

# tiny256-random (every row 256 wide, tied embeddings) with K- and I-quant candidates: 8 layers x 7
# linears x 12 types (the tied embedding keeps its scaled proxy); the correlation is reported (0.10
# measured: random weights move the output distribution little, so the measured costs are close)
kq=q2_K,q3_K,q4_K,q5_K,q6_K,iq2_xxs,iq2_xs,iq2_s,iq3_xxs,iq3_s,iq4_xs,iq4_nl
expect "tiny256 K and I" 0 "" "$q" quantize "$tiny" --target-bpw 4.5 --candidates "$kq" --calib "$calib" --nsamples 2 \
    --seqlen 32 --sensitivity measured --dry-run --json -q
ok test "$(tnum groups "$tmp/out")" = 56
ok test "$(tnum rank_pairs "$tmp/out")" = 672
rho=$(tnum rank_correlation "$tmp/out")
ok test -n "$rho"
ok awk -v r="$rho" 'BEGIN { exit !(r >= -1 && r <= 1) }'

echo "quantize_measured: $pass passed, $fail failed"
[ $fail -eq 0 ]
