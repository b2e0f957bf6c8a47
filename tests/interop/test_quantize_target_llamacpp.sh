#!/bin/bash
# tests/interop/test_quantize_target_llamacpp.sh QUANTA SHARED_DIR
#
# Mixed-type GGUF files made by `quanta quantize --target-size` from stories260K (docs/quantize.md
# "Target size": measured sensitivity and the refinement, at the Q4_K_M preset's file size, 306,304 bytes; one with
# llama-imatrix's importance matrix, one by GPTQ) load in real llama.cpp (node-llama-cpp's prebuilt
# CPU library) and give the same perplexity as `quanta perplexity` on the same tokens (8 chunks of
# 128 of held-out text, llama-perplexity's scoring), within the bounds of test_quantize_ppl.mjs,
# against the library node-llama-cpp picks here and against its AVX2 one. The npm packages come from
# the npm_packages setup fixture (tests/interop/node_env.sh). Exit 77 = skipped, except under CI=true.
set -u
Q=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SHARED=$2
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(dirname "$Q")
source "$HERE/node_env.sh"
require_npm_packages

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
M="$SHARED/models/stories260K.gguf"
IM="$SHARED/reference/llamacpp-quantize/imatrix-stories260K.gguf"
tail -n +4331 "$SHARED/data/tinystories-valid-first1000.txt" >"$TMP/calib.txt"
calib=(--calib "$TMP/calib.txt" --nsamples 8 --seqlen 128 --sensitivity measured)
"$Q" quantize "$M" "$TMP/mix-rtn.gguf" --target-size 306304B --imatrix "$IM" "${calib[@]}" -q ||
    { echo "FAIL: quanta quantize --target-size (rtn)"; exit 1; }
"$Q" quantize "$M" "$TMP/mix-gptq.gguf" --target-size 306304B --algo gptq "${calib[@]}" -q ||
    { echo "FAIL: quanta quantize --target-size --algo gptq"; exit 1; }
names=(mix-rtn mix-gptq)
files=()
for n in "${names[@]}"; do files+=("$TMP/$n.gguf"); done
# mixed, not one type: the point of the test
"$Q" inspect "$TMP/mix-rtn.gguf" | grep -q "quanta.mix.types" || { echo "FAIL: mix-rtn.gguf has no quanta.mix.types"; exit 1; }

head -n 300 "$SHARED/data/tinystories-valid-first1000.txt" >"$TMP/ppl.txt"
"$Q" tokenize -m "$M" -f "$TMP/ppl.txt" >"$TMP/tokens.txt" || { echo "FAIL: quanta tokenize"; exit 1; }
bos=$(cut -d' ' -f1 "$TMP/tokens.txt")
for n in "${names[@]}"; do
    "$Q" perplexity -m "$TMP/$n.gguf" -f "$TMP/ppl.txt" -c 128 --chunks 8 -t 1 -q --json="$TMP/$n.ppl.json" >/dev/null ||
        { echo "FAIL: quanta perplexity $n"; exit 1; }
done
runs=()
ppl() { # ROLE NODE_MODULES
    node "$HERE/llamacpp_ppl.mjs" "$2" "$TMP/tokens.txt" 128 8 "$bos" "${files[@]}" >"$TMP/ppl-$1.jsonl" 2>"$TMP/node.err" ||
        { tail -20 "$TMP/node.err"; echo "FAIL: llama.cpp ($1) could not load or score quanta's mixed files"; exit 1; }
    echo "  $1: $(cat "$TMP/node.err")"
    runs+=("$1=$TMP/ppl-$1.jsonl")
}
ppl native "$NODE_MODULES"
ppl avx2 "$NODE_MODULES_AVX2"
node "$HERE/test_quantize_ppl.mjs" "$TMP" "${runs[@]}" || { echo "FAIL: perplexity differs from llama.cpp's"; exit 1; }
echo "test_quantize_target_llamacpp: llama.cpp loads quanta's mixed files and measures the same perplexity"
