#!/usr/bin/env bash
# (heavy under sanitizers: minutes of calibration passes; the release run has it, and the unit tests
# test_imatrix_calc / test_quantize_calib run the same code under ASan)
# CLI tests for `quanta quantize --calib FILE [--nsamples N] [--seqlen L] [--seed S]`:
# - GGUF schemes compute the importance matrix on the fly: the tensors written
#   are byte for byte those of `quanta imatrix --calib ...` then
#   `quanta quantize --imatrix` (and the imatrix's SHA-256 is the same file's);
# - the provenance (quanta.calibration.*: file, SHA-256, tokens, N, L, S, the
#   shingle fingerprint) is in the file, `quanta inspect` prints it, and
#   `quanta eval --strict` on the calibration text fails the held-out check
#   while held-out text passes it;
# - fp8-static (llm-compressor's FP8 preset) stores calibrated per-tensor
#   input_scale values, shared across q/k/v and gate/up, records the
#   calibration in quantization_config, and `quanta run` runs the directory;
#   without --calib it is one clear error.
# usage: quantize_calib.sh QUANTA SHARED_DIR
. "$(dirname "$0")/lib/harness.sh"
model=$shared/models/stories260K.gguf
expect() { local want=$1; shift; check "$* -> $want" "$want" "$@"; }
has() { if grep -qF -- "$2" "$tmp/$1"; then pass=$((pass + 1)); else
    echo "FAIL $1 lacks '$2': $(head -c 300 "$tmp/$1")"; fail=$((fail + 1)); fi; }
lacks() { if grep -qF -- "$2" "$tmp/$1"; then echo "FAIL $1 has '$2'"; fail=$((fail + 1)); else pass=$((pass + 1)); fi; }
# the tensor data of a GGUF file: everything from the data offset inspect reports
data_of() { tail -c +$(($("$q" inspect "$1" --json | sed -n 's/^ *"data_offset": \([0-9]*\),*/\1/p') + 1)) "$1"; }
# calibration text: the reference README's slice; held-out text: the lines before it
tail -n +4331 "$shared/data/tinystories-valid-first1000.txt" >"$tmp/cal.txt"
head -n 4330 "$shared/data/tinystories-valid-first1000.txt" >"$tmp/heldout.txt"
cal=cal.txt
C=(--calib $cal --seqlen 128 --nsamples 20)
cd "$tmp" || exit 1

# ---- usage and bad input ----
expect 0 "$q" quantize --help
has out "--calib FILE"; has out "--nsamples"; has out "--seqlen"; has out "--seed"
expect 2 "$q" quantize "$model" x.gguf --scheme q4_0 --nsamples 4
has err "apply to --calib"
expect 2 "$q" quantize "$model" x.gguf --scheme q4_0 --calib $cal --imatrix x.dat
has err "use one of them"
expect 2 "$q" quantize "$model" x.gguf --scheme q4_0 --calib $cal --seqlen 1
expect 2 "$q" quantize "$model" xd --scheme w4a16 --calib $cal
has err "takes no calibration"
expect 1 "$q" quantize "$model" x.gguf --scheme q4_0 --calib missing.txt
has err "missing.txt"
printf 'Once upon a time.\n' >short.txt
expect 1 "$q" quantize "$model" x.gguf --scheme q4_0 --calib short.txt
has err "no window of 512 fits"
ok test ! -e x.gguf
expect 1 "$q" quantize "$model" f8 --scheme fp8-static
has err "calibration"
ok test ! -e f8

# ---- GGUF: the imatrix on the fly = quanta imatrix, then --imatrix ----
expect 0 "$q" imatrix -m "$model" "${C[@]}" -o im.gguf -q
expect 0 "$q" quantize "$model" via-file.gguf --scheme iq2_xs --imatrix im.gguf -q
expect 0 "$q" quantize "$model" calib.gguf --scheme iq2_xs "${C[@]}" -q --json=calib.json
ok cmp <(data_of via-file.gguf) <(data_of calib.gguf)
ok grep -qF "\"imatrix_sha256\": \"$(sha256sum im.gguf | cut -c1-64)\"" calib.json
ok grep -qF "\"sha256\": \"$(sha256sum $cal | cut -c1-64)\"" calib.json
# provenance, printed by inspect
expect 0 "$q" inspect calib.gguf
has out "quanta.calibration.sha256"
has out "$(sha256sum $cal | cut -c1-40)"
has out "quanta.calibration.file              \"cal.txt\""
has out "quanta.calibration.nsamples          20"
has out "quanta.calibration.seqlen            128"
has out "quanta.calibration.seed              0"
has out "quanta.calibration.tokens"
has out "quanta.calibration.shingles"
has out "quantize.imatrix.chunks_count        20"
# a dry run predicts the file to the byte; threads do not change a byte
expect 0 "$q" quantize "$model" q8.gguf --scheme q8_0 "${C[@]}" --dry-run --json -q
bytes=$(sed -n 's/^ *"output_bytes": \([0-9]*\),*/\1/p' "$tmp/out")
expect 0 "$q" quantize "$model" q8.gguf --scheme q8_0 "${C[@]}" --threads 1 -q
ok test "$(stat -c %s q8.gguf)" = "$bytes"
mv q8.gguf q8-t1.gguf # (OUT is in the recorded command line: the same name for both)
expect 0 "$q" quantize "$model" q8.gguf --scheme q8_0 "${C[@]}" --threads 2 -q
ok cmp q8.gguf q8-t1.gguf
# --seed draws other windows: another imatrix, recorded
expect 0 "$q" quantize "$model" s5.gguf --scheme q4_k_m "${C[@]}" --seed 5 -q
expect 0 "$q" inspect s5.gguf
has out "quanta.calibration.seed              5"

# ---- the held-out check: quanta eval --strict ----
expect 1 "$q" eval --base "$model" --candidate q8.gguf -f $cal -c 128 --chunks 4 --strict -q
has out "overlaps the candidate's calibration text"
expect 0 "$q" eval --base "$model" --candidate q8.gguf -f heldout.txt -c 128 --chunks 4 --strict -q
lacks out "overlaps"

# ---- fp8-static: calibrated input_scale ----
expect 0 "$q" quantize "$model" f8 --scheme fp8-static "${C[@]}" --json=f8.json -q
ok test -s f8/model.safetensors
ok grep -qF '"preset": "FP8"' f8.json
cfg=f8/config.json
ok grep -qF '"observer": "static_minmax"' $cfg
ok grep -qF '"dynamic": false' $cfg
ok grep -qF "\"sha256\": \"$(sha256sum $cal | cut -c1-64)\"" $cfg
ok grep -qF '"nsamples": 20' $cfg
ok grep -qF '"seqlen": 128' $cfg
for m in self_attn.q_proj self_attn.k_proj self_attn.v_proj self_attn.o_proj mlp.gate_proj mlp.up_proj mlp.down_proj; do
    ok grep -qF "model.layers.4.$m.input_scale" f8/model.safetensors
done
expect 0 "$q" inspect f8
has out "compressed-tensors  format float-quantized, preset FP8"
has out "quanta.calibration.sha256            \"$(sha256sum $cal | cut -c1-64)\""
has out "quanta.calibration.nsamples          20"
expect 0 "$q" run -m f8 -p "Once upon a time" -n 16 --temp 0 -q
has out "Once upon a time"
# the same bytes at any thread count
expect 0 "$q" quantize "$model" f8-t1 --scheme fp8-static "${C[@]}" --threads 1 -q
ok cmp f8/model.safetensors f8-t1/model.safetensors
# a checkpoint whose config says static activations but that has no input_scale is refused on load
expect 0 "$q" quantize "$model" f8-broken --scheme fp8-dynamic -q
sed -i -e 's/"strategy": "token"/"strategy": "tensor"/' -e 's/"dynamic": true/"dynamic": false/' f8-broken/config.json
expect 1 "$q" run -m f8-broken -p "Once" -n 2 -q
has err "q_proj.input_scale' missing"
# nvfp4 with --calib: NVFP4 (W4A4) with input_global_scale (ffn_down's 172 columns are kept: groups of 16)
expect 0 "$q" quantize "$model" nv --scheme nvfp4 "${C[@]}" --keep ffn_down -q
ok grep -qF '"dynamic": "local"' nv/config.json
ok grep -qF 'model.layers.2.self_attn.k_proj.input_global_scale' nv/model.safetensors
expect 0 "$q" run -m nv -p "Once upon a time" -n 4 --temp 0 -q
# eval --strict reads the calibration record of a compressed-tensors directory too
expect 1 "$q" eval --base "$model" --candidate f8 -f $cal -c 128 --chunks 4 --strict -q
has out "overlaps the candidate's calibration text"

echo "quantize_calib.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
