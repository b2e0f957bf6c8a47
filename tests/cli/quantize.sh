#!/bin/bash
# tests/cli/quantize.sh QUANTA SHARED_DIR — `quanta quantize` as a user meets it:
# options, bad inputs (unknown scheme, wrong imatrix, missing output directory,
# IN == OUT, an existing OUT without --force, a refusal llama-quantize makes),
# SIGINT / SIGTERM mid-run (no OUT, no temporary file), --dry-run bytes == the
# written file's, the same bytes with --threads 1 and 2, provenance metadata.
source "$(dirname "$0")/lib/harness.sh"
stories="$shared/models/stories260K.gguf"
tiny="$shared/models/tiny256-random.gguf"
ref="$shared/reference/llamacpp-quantize"

no_temps() { [ -z "$(find "$1" -maxdepth 1 -name '.*' ! -name '.' ! -name '..' | head -1)" ]; }
json_int() { sed -n "s/^  \"$1\": \([0-9]*\).*/\1/p" "$2" | head -1; }

# ---- help and usage ------------------------------------------------------------------------
expect "--help" 0 "" "$q" quantize --help
ok has out "--tensor-type REGEX=TYPE"
ok has out "blk.3.ffn_down.weight"
expect "no scheme" 2 "need --scheme" "$q" quantize "$stories" "$tmp/x.gguf"
expect "unknown scheme" 2 "unknown scheme 'q9_z'" "$q" quantize "$stories" "$tmp/x.gguf" --scheme q9_z
ok test ! -e "$tmp/x.gguf"
# vLLM schemes write a compressed-tensors directory (tests/unit/test_ct_export.c checks its contents)
# rows no group of 128 divides (stories260K's 64 and 172): one scale per output channel, said per tensor
expect "vLLM scheme, rows no group divides" 0 "model.layers.0.mlp.down_proj: input width 172 is not a multiple of the group size 128" \
    "$q" quantize "$stories" "$tmp/ct" --scheme w4a16 --dry-run
ok has err "strategy 35 of 35 linears per channel"
ok test ! -e "$tmp/ct"
expect "--group-size on a GGUF scheme" 2 "--group-size applies to the compressed-tensors integer schemes" \
    "$q" quantize "$stories" "$tmp/x.gguf" --scheme q4_0 --group-size 64
expect "--group-size not a multiple of 8" 2 "multiple of 8" "$q" quantize "$stories" "$tmp/ct" --scheme w4a16 --group-size 60
expect "--group-size on fp8" 1 "--group-size applies to the per-group" "$q" quantize "$stories" "$tmp/ct" \
    --scheme fp8-dynamic --group-size 64 --dry-run
ok test ! -e "$tmp/ct"
expect "vLLM scheme, GGUF-only option" 2 "applies to GGUF schemes only" "$q" quantize "$tiny" "$tmp/ct" --scheme w4a16 --pure
expect "vLLM scheme, dry run" 0 "" "$q" quantize "$tiny" "$tmp/ct" --scheme w4a16 --dry-run --json
ok test ! -e "$tmp/ct"
ct_dry=$(json_int output_bytes "$tmp/out")
expect "vLLM scheme" 0 "" "$q" quantize "$tiny" "$tmp/ct" --scheme w4a16 --json -q
ok test "$(json_int output_bytes "$tmp/out")" = "$ct_dry"
ok grep -q '"quant_method": "compressed-tensors"' "$tmp/ct/config.json"
ok test -s "$tmp/ct/model.safetensors"
expect "vLLM scheme, non-empty OUT" 1 "" "$q" quantize "$tiny" "$tmp/ct" --scheme fp8 -q
# --imatrix without --calib records the imatrix's SHA-256 and no calibration text: eval reads the
# directory as a candidate with no fingerprint (it once refused it as a malformed record)
expect "vLLM scheme, --imatrix" 0 "" "$q" quantize "$stories" "$tmp/ct-im" --scheme w4a16 --group-size 64 --imatrix "$ref/imatrix-stories260K.gguf" -q
ok grep -q '"quanta.imatrix.sha256"' "$tmp/ct-im/config.json"
expect "eval of an --imatrix compressed-tensors candidate" 0 "" "$q" eval --base "$stories" --candidate "$tmp/ct-im" -f "$shared/data/tinystories-valid-first1000.txt" -c 64 --chunks 1 --max-ppl-delta-pct 100 -q
expect "vLLM scheme, --force" 0 "" "$q" quantize "$tiny" "$tmp/ct" --scheme fp8 -q --force
ok grep -q '"format": "float-quantized"' "$tmp/ct/config.json"
expect "vLLM checkpoint runs" 0 "" "$q" run -m "$tmp/ct" -p "Once upon a time" -n 4 --temp 0
ok test ! -e "$tmp/ct.partial"       # staged at OUT.partial, renamed into place
ok test ! -e "$tmp/ct.partial.lock"  # the one-run-per-OUT lock goes with the run
# an error mid-write (a file-size limit: SIGXFSZ is ignored) removes OUT.partial; no OUT appears
(ulimit -f 64 && exec "$q" quantize "$tiny" "$tmp/ct2" --scheme w8a16 -q) 2>"$tmp/ct2.err"
ok test $? = 1
ok grep -q "ct2.partial/.*File too large" "$tmp/ct2.err"
ok test ! -e "$tmp/ct2"
ok test ! -e "$tmp/ct2.partial"
# an OUT.partial directory left by an interrupted run is removed, with a message
mkdir "$tmp/ct2.partial" && echo x >"$tmp/ct2.partial/model.safetensors"
expect "vLLM scheme, stale OUT.partial" 0 "ct2.partial left by an interrupted run" \
    "$q" quantize "$tiny" "$tmp/ct2" --scheme w8a16 -q
ok test -s "$tmp/ct2/config.json"
ok test ! -e "$tmp/ct2.partial"
# ... but not one that holds something quanta never stages there
mkdir -p "$tmp/ct3.partial/sub"
expect "vLLM scheme, foreign OUT.partial" 1 "not a file quanta stages" "$q" quantize "$tiny" "$tmp/ct3" --scheme w8a16 -q
ok test -d "$tmp/ct3.partial/sub"
ok test ! -e "$tmp/ct3"
expect "bad --tensor-type" 2 "expected REGEX=TYPE" "$q" quantize "$stories" "$tmp/x.gguf" --scheme q8_0 --tensor-type attn_v
expect "bad type" 2 "not a ggml type" "$q" quantize "$stories" "$tmp/x.gguf" --scheme q8_0 --tensor-type attn_v=q9
expect "bad regex" 1 "bad regular expression" "$q" quantize "$stories" "$tmp/x.gguf" --scheme q8_0 --tensor-type '(=q8_0'
expect "bad threads" 2 "" "$q" quantize "$stories" "$tmp/x.gguf" --scheme q8_0 --threads 0

# ---- bad inputs --------------------------------------------------------------------------
expect "missing output dir" 1 "" "$q" quantize "$stories" "$tmp/no/such/x.gguf" --scheme q4_k_m -q
ok test ! -e "$tmp/no"
cp "$stories" "$tmp/in.gguf"
sum_in=$(sha256sum <"$tmp/in.gguf")
expect "IN == OUT" 1 "" "$q" quantize "$tmp/in.gguf" "$tmp/in.gguf" --scheme q4_k_m --force -q
ok test "$(sha256sum <"$tmp/in.gguf")" = "$sum_in"
expect "wrong imatrix" 1 "is the imatrix for another model" "$q" quantize "$tiny" "$tmp/x.gguf" --scheme iq4_xs \
    --imatrix "$ref/imatrix-stories260K.gguf" -q
ok test ! -e "$tmp/x.gguf"
expect "not an imatrix" 1 "" "$q" quantize "$tiny" "$tmp/x.gguf" --scheme iq4_xs --imatrix "$stories" -q
expect "needs an imatrix" 1 "needs an importance matrix" "$q" quantize "$tiny" "$tmp/x.gguf" --scheme iq2_xxs -q
ok test ! -e "$tmp/x.gguf"
expect "IQ3_S without imatrix (llama-quantize makes it)" 0 "" "$q" quantize "$tiny" "$tmp/iq3s.gguf" --scheme IQ3_S -q
expect "existing OUT" 1 "pass --force" "$q" quantize "$tiny" "$tmp/iq3s.gguf" --scheme q8_0 -q
"$q" quantize "$tiny" "$tmp/q4.gguf" --scheme q4_0 -q
expect "requantize refused" 1 "--allow-requantize" "$q" quantize "$tmp/q4.gguf" "$tmp/rq.gguf" --scheme q8_0 -q
expect "requantize allowed" 0 "requantizing loses quality" "$q" quantize "$tmp/q4.gguf" "$tmp/rq.gguf" --scheme q8_0 --allow-requantize

# ---- dry run == real bytes; JSON ---------------------------------------------------------
for s in q4_k_m q8_0 iq4_xs; do
    expect "dry run $s" 0 "" "$q" quantize "$stories" "$tmp/$s.gguf" --dry-run --scheme $s --json="$tmp/dry.json"
    ok test ! -e "$tmp/$s.gguf"
    expect "run $s" 0 "" "$q" quantize "$stories" "$tmp/$s.gguf" --scheme $s --json="$tmp/run.json" -q
    ok test "$(json_int output_bytes "$tmp/dry.json")" = "$(stat -c %s "$tmp/$s.gguf")"
    ok test "$(json_int output_bytes "$tmp/run.json")" = "$(stat -c %s "$tmp/$s.gguf")"
    ok grep -q '"snr_db"' "$tmp/run.json"
    ok grep -q '"peak_rss_measured": true' "$tmp/run.json"
done
expect "dry run table" 0 "blk.0.ffn_down.weight" "$q" quantize "$stories" --dry-run --scheme q4_0
ok has err "fallback: llama-quantize refuses"
ok has err "peak memory (estimated)"

# ---- the planner's weight bytes == the bytes quantize writes (one copy of the rules) ------
for m in "$stories" "$tiny"; do
    for s in q8_0 q6_k q5_k_m q4_k_m q4_0; do
        "$q" estimate --model "$m" --scheme $s --memory 16GB --json >"$tmp/est.json" 2>/dev/null
        "$q" quantize "$m" --dry-run --scheme $s --json="$tmp/dq.json" -q
        ok test "$(sed -n 's/^ *"weights_bytes": \([0-9]*\).*/\1/p' "$tmp/est.json" | head -1)" = "$(json_int tensor_bytes "$tmp/dq.json")"
    done
done

# ---- options -----------------------------------------------------------------------------
expect "--tensor-type" 0 "" "$q" quantize "$tiny" "$tmp/tt.gguf" --scheme q4_k_m --tensor-type 'ffn_down=q8_0' \
    --tensor-type 'blk\.[0-3]\.attn_q=q6_K' --output-tensor-type q8_0 --json="$tmp/tt.json" -q
ok grep -A1 '"blk.5.ffn_down.weight"' "$tmp/tt.json" | grep -q '"q8_0"'
ok grep -A1 '"blk.2.attn_q.weight"' "$tmp/tt.json" | grep -q '"q6_K"'
ok grep -A1 '"blk.5.attn_q.weight"' "$tmp/tt.json" | grep -q '"q4_K"'
ok grep -A1 '"token_embd.weight"' "$tmp/tt.json" | grep -q '"q8_0"'  # tied: the output's type
expect "--keep --pure" 0 "" "$q" quantize "$tiny" "$tmp/kp.gguf" --scheme q4_k_m --pure --keep 'attn_v' --json="$tmp/kp.json" -q
ok grep -A1 '"blk.0.attn_v.weight"' "$tmp/kp.json" | grep -q '"f16"'
ok grep -A1 '"blk.0.ffn_down.weight"' "$tmp/kp.json" | grep -q '"q4_K"'
expect "--leave-output-tensor" 0 "" "$q" quantize "$stories" "$tmp/lo.gguf" --scheme q8_0 --leave-output-tensor --json="$tmp/lo.json" -q
ok grep -A1 '"output.weight"' "$tmp/lo.json" | grep -q '"f32"'
expect "--token-embedding-type" 0 "" "$q" quantize "$stories" "$tmp/te.gguf" --scheme q8_0 --token-embedding-type f16 --json="$tmp/te.json" -q
ok grep -A1 '"token_embd.weight"' "$tmp/te.json" | grep -q '"f16"'
expect "imatrix lacks output" 0 "has no entry for output.weight" "$q" quantize "$stories" "$tmp/im.gguf" --scheme iq4_xs \
    --imatrix "$ref/imatrix-stories260K.gguf"

# ---- provenance --------------------------------------------------------------------------
expect "inspect provenance" 0 "" "$q" inspect "$tmp/im.gguf"
for k in general.file_type quanta.version quanta.command_line quanta.scheme quanta.imatrix.sha256 \
    quantize.imatrix.file quantize.imatrix.entries_count quantize.imatrix.chunks_count quanta.fallbacks; do
    ok grep -q "$k" "$tmp/out"
done

# ---- determinism across thread counts ------------------------------------------------------
for s in q4_k_m iq4_xs; do
    # the same OUT both times: the command line (minus --threads) is recorded in the file
    "$q" quantize "$tiny" "$tmp/t.gguf" --scheme $s --imatrix "$ref/imatrix-tiny256.gguf" --threads 1 -q --force
    mv "$tmp/t.gguf" "$tmp/t1.gguf"
    "$q" quantize "$tiny" "$tmp/t.gguf" --scheme $s --imatrix "$ref/imatrix-tiny256.gguf" --threads 2 -q --force
    mv "$tmp/t.gguf" "$tmp/t2.gguf"
    ok cmp -s "$tmp/t1.gguf" "$tmp/t2.gguf"
done

# ---- a signal mid-run: no OUT, no temporary file -------------------------------------------
for sig in INT TERM; do
    d="$tmp/sig$sig"
    mkdir "$d"
    "$q" quantize "$tiny" "$d/out.gguf" --scheme iq1_m --imatrix "$ref/imatrix-tiny256.gguf" --threads 1 -q 2>"$d.err" &
    pid=$!
    for _ in $(seq 500); do
        case "$(readlink /proc/$pid/exe 2>/dev/null)" in */quanta | "") break ;; esac
        sleep 0.01
    done
    sleep 1
    kill -$sig $pid 2>/dev/null
    wait $pid
    rc=$?
    if [ $rc = 0 ]; then echo "note: the run finished before SIG$sig"; ok test -s "$d/out.gguf"; else
        ok test $rc -gt 128
        ok test ! -e "$d/out.gguf"
        ok test ! -e "$d/out.gguf.partial"
    fi
    ok no_temps "$d"
done

# ---- the planner prints a command that runs ----------------------------------------------
expect "plan a CPU target" 0 "" "$q" plan --model "$stories" --gpu cpu -q
cmd=$(grep -m1 "^  quanta quantize " "$tmp/out" | sed "s/^  quanta //")
ok test -n "$cmd"
if [ -n "$cmd" ]; then
    (cd "$tmp" && eval "\"$q\" $cmd -q") && pass=$((pass + 1)) || { echo "FAIL: printed command: quanta $cmd"; fail=$((fail + 1)); }
    out=$(echo "$cmd" | awk "{print \$3}")
    ok test -s "$tmp/$out"
fi

echo "quantize: $pass passed, $fail failed"
[ $fail -eq 0 ]
