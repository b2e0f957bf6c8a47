#!/bin/bash
# tests/interop/test_quantize_llamacpp.sh QUANTA SHARED_DIR
#
# GGUF files made by `quanta quantize` from stories260K (Q8_0, Q4_0, Q4_K_M,
# IQ4_XS, and IQ2_XS with llama-imatrix's importance matrix) load in real
# llama.cpp (node-llama-cpp's prebuilt CPU library) and generate, greedily,
# the same 32 tokens as quanta's own engine on the same file. The npm packages
# come from the npm_packages setup fixture (tests/interop/node_env.sh). Exit 77
# = skipped (no node >= 20 / no npm registry), except under CI=true.
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
names=(q8_0 q4_0 q4_k_m iq4_xs iq2_xs-imatrix)
for n in "${names[@]}"; do
    s=${n%-imatrix}
    extra=()
    [ "$n" != "$s" ] && extra=(--imatrix "$IM")
    "$Q" quantize "$M" "$TMP/$n.gguf" --scheme "$s" "${extra[@]}" -q || { echo "FAIL: quanta quantize --scheme $s"; exit 1; }
done
files=()
for n in "${names[@]}"; do files+=("$TMP/$n.gguf"); done
out=$(node "$HERE/llamacpp_greedy.mjs" "$NODE_MODULES" "Once upon a time" 32 "${files[@]}" 2>"$TMP/node.err")
rc=$?
if [ $rc -ne 0 ]; then
    tail -30 "$TMP/node.err"
    echo "FAIL: llama.cpp could not load or run quanta's quantized files (exit $rc)"
    exit 1
fi
grep -F "llama.cpp CPU library" "$TMP/node.err"
field() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=JSON.parse(s)[process.argv[1]];console.log(Array.isArray(v)?v.join(","):v)})' "$1"; }
fails=0
for n in "${names[@]}"; do
    rec=$(echo "$out" | grep -F "\"model\":\"$TMP/$n.gguf\"")
    theirs=$(echo "$rec" | field text)
    "$Q" run -m "$TMP/$n.gguf" -p "Once upon a time" -n 32 --temp 0 -t 1 --numerics llama --json="$TMP/$n.json" -q >/dev/null 2>"$TMP/run.err" ||
        { cat "$TMP/run.err"; echo "FAIL: quanta run $n"; fails=$((fails + 1)); continue; }
    ours=$(field text <"$TMP/$n.json")
    if [ -n "$theirs" ] && [ "$ours" = "$theirs" ]; then
        echo "  ok   $n: $theirs"
    else
        echo "  FAIL $n: llama.cpp '$theirs', quanta '$ours'"
        fails=$((fails + 1))
    fi
done
[ $fails -eq 0 ] || exit 1
echo "test_quantize_llamacpp: llama.cpp loads every file quanta quantize wrote and continues greedily as quanta's engine does"
