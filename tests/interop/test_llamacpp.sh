#!/usr/bin/env bash
# Interop proof: GGUF files written by `quanta convert` load in real llama.cpp
# (npm node-llama-cpp@3.21.1, prebuilt CPU binaries) and generate the
# reference greedy continuation of stories260K (../shared/reference/llamacpp/greedy.tsv):
#   1. stories260K.gguf -> HF directory -> GGUF   (Q/K un-permuted, then re-permuted)
#   2. stories260K.bin + tok512.bin (llama2.c) -> GGUF
#   3. stories260K.gguf -> GGUF (metadata verbatim)
#   4. stories260K.gguf -> GGUF --outtype f16      (loads; continuation compared as well)
#   5. an F16 and a BF16 HF checkpoint (stories260K written --to hf --outtype f16/bf16, so
#      its norms are F16/BF16 too) -> GGUF keeping types: the writer must widen norms to
#      F32 (docs/formats.md §2.9) or llama.cpp stops with "binary_op: unsupported types"
# Run twice: with the CPU library node-llama-cpp picks for this machine and with
# its AVX2 library (node_env.sh); each prints which library it loaded. The
# packages come from the npm_packages setup fixture (npm_setup.sh). Without
# node >= 20 or the packages this test is skipped (exit 77) -- except under
# CI=true, where a skip would hide a broken setup.
# usage: test_llamacpp.sh QUANTA SHARED_DIR
set -u
Q=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SHARED=$2
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(dirname "$Q")
source "$HERE/node_env.sh"
require_npm_packages

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
set -e
"$Q" convert -q "$SHARED/models/stories260K.gguf" "$TMP/hf" --to hf
"$Q" convert -q "$TMP/hf" "$TMP/via_hf.gguf"
"$Q" convert -q "$SHARED/models/stories260K.bin" "$TMP/from_llama2c.gguf"
"$Q" convert -q "$SHARED/models/stories260K.gguf" "$TMP/rewritten.gguf"
"$Q" convert -q "$SHARED/models/stories260K.gguf" "$TMP/f16.gguf" --outtype f16
for t in f16 bf16; do
    "$Q" convert -q "$SHARED/models/stories260K.gguf" "$TMP/hf_$t" --to hf --outtype $t
    "$Q" convert -q "$TMP/hf_$t" "$TMP/hf_$t.gguf"
done
set +e

# Reference: prompt ids | greedy ids of the F32 model, first 32 generated tokens.
line=$(grep -P '^stories260K\.gguf\tOnce upon a time\t' "$SHARED/reference/llamacpp/greedy.tsv")
want_prompt=$(echo "$line" | cut -f3 | cut -d'|' -f1 | xargs | tr ' ' ',')
want_gen=$(echo "$line" | cut -f3 | cut -d'|' -f2 | xargs | tr ' ' '\n' | head -32 | paste -sd, -)
[ -n "$want_gen" ] || { echo "FAIL: no reference line in greedy.tsv"; exit 1; }

fails=0
for modules in "$NODE_MODULES" "$NODE_MODULES_AVX2"; do
    out=$(node "$HERE/llamacpp_greedy.mjs" "$modules" "Once upon a time" 32 \
          "$TMP/via_hf.gguf" "$TMP/from_llama2c.gguf" "$TMP/rewritten.gguf" "$TMP/f16.gguf" \
          "$TMP/hf_f16.gguf" "$TMP/hf_bf16.gguf" 2>"$TMP/node.err")
    rc=$?
    if [ $rc -ne 0 ]; then
        tail -30 "$TMP/node.err"
        echo "FAIL: llama.cpp could not load or run the converted files (exit $rc)"
        exit 1
    fi
    grep -F "llama.cpp CPU library" "$TMP/node.err"
    for name in via_hf from_llama2c rewritten f16 hf_f16 hf_bf16; do
        rec=$(echo "$out" | grep -F "\"model\":\"$TMP/$name.gguf\"")
        got_prompt=$(echo "$rec" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).prompt.join(",")))')
        got_gen=$(echo "$rec" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).gen.join(",")))')
        text=$(echo "$rec" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).text))')
        if [ "$got_prompt" = "$want_prompt" ] && [ "$got_gen" = "$want_gen" ]; then
            echo "  ok   $name.gguf: $text"
        else
            echo "  FAIL $name.gguf: prompt $got_prompt (want $want_prompt), generated $got_gen (want $want_gen)"
            fails=$((fails + 1))
        fi
    done
done
[ $fails -eq 0 ] || exit 1
echo "test_llamacpp: llama.cpp reproduces the reference continuation from every converted file, with its native and its AVX2 CPU library"
