#!/bin/bash
# tests/interop/test_engine_llamacpp.sh QUANTA SHARED_DIR
#
# Our engine against llama.cpp itself (npm node-llama-cpp@3.21.1, prebuilt CPU
# libraries) on tiny random-weight fixtures of the architectures stories260K
# does not cover: llama with GQA, llama3 rope scaling + tied embeddings, qwen2
# q/k/v biases, qwen3 q/k norms with head_dim != hidden/heads, mistral. The
# fixtures are written as HF directories and converted to GGUF by
# test_engine_fixtures --export (which also stores our logits).
# llama.cpp's float order depends on the CPU library node-llama-cpp loads, so
# the comparison runs against (bounds and their measurements in
# test_engine_llamacpp.mjs):
#   native  the library node-llama-cpp picks for this CPU
#   avx2    its AVX2 (haswell) library, on every machine (node_env.sh)
#   avx512  its AVX-512 (skylakex) library, where this CPU runs it: the order
#           the engine reproduces, so there the engine must match to 1e-5
# QT_LLAMACPP_ALL=1 also runs every other CPU library this machine can run and
# prints the spread between them (how the bounds were measured).
# The packages come from the npm_packages setup fixture (npm_setup.sh).
# Exit 77 = skipped (no node >= 20 / no packages), except under CI=true.
set -u
QUANTA=$1
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "$(dirname "$QUANTA")" && pwd)
source "$HERE/node_env.sh"

require_npm_packages
[ -x "$BUILD/test_engine_fixtures" ] || { echo "FAIL: $BUILD/test_engine_fixtures not built" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$BUILD/test_engine_fixtures" --export "$tmp/fx" >/dev/null || { echo "FAIL: fixtures could not be exported" >&2; exit 1; }

echo "CPU: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); $("$QUANTA" --version)"
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2-) "
runs=()
# dump ROLE NODE_MODULES: llama.cpp's log-probabilities with that library
dump() {
    node "$HERE/llamacpp_logprobs.mjs" "$2" "$tmp/fx" "$tmp/$1.json" ||
        { echo "FAIL: llama.cpp ($1) could not evaluate the fixtures" >&2; exit 1; }
    runs+=("$1=$tmp/$1.json")
}
dump native "$NODE_MODULES"
dump avx2 "$NODE_MODULES_AVX2"
avx512=yes
for f in avx512f avx512cd avx512bw avx512dq avx512vl; do
    case $flags in *" $f "*) ;; *) avx512=no ;; esac
done
if [ $avx512 = yes ]; then
    llamacpp_variant "$tmp/skylakex/node_modules" skylakex || exit 1
    dump avx512 "$tmp/skylakex/node_modules"
else
    echo "note: this CPU has no AVX-512, so the engine is not compared with llama.cpp's AVX-512 library here"
fi
if [ "${QT_LLAMACPP_ALL:-}" = 1 ]; then
    for lib in "$NODE_MODULES/$LLAMACPP_BINS"/libggml-cpu-*.so; do
        cpu=${lib##*/libggml-cpu-}
        cpu=${cpu%.so}
        llamacpp_variant "$tmp/$cpu/node_modules" "$cpu" || exit 1
        if node "$HERE/llamacpp_logprobs.mjs" "$tmp/$cpu/node_modules" "$tmp/fx" "$tmp/all-$cpu.json" 2>/dev/null; then
            runs+=("spread=$tmp/all-$cpu.json")
        else
            echo "note: llama.cpp's $cpu library does not run on this CPU"
        fi
    done
fi
node "$HERE/test_engine_llamacpp.mjs" "$tmp/fx" "${runs[@]}"
