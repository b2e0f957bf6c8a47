#!/bin/bash
# tests/interop/test_iquants_ggml.sh QUANTA SHARED_DIR
#
# The i-quants below 4 bits against ggml itself: test_ggml_iquants --ggml
# loads the libggml-base.so of node-llama-cpp@3.21.1's prebuilt CPU binaries
# and compares ggml_quantize_chunk / dequantize_row_* with our codecs, byte
# for byte and bit for bit, on rows made to hit the corners (ties, zeros,
# outliers, tiny and huge values, zero importance weights), with and without
# an imatrix. Then llama.cpp itself runs llama-quantize's i-quant files of
# tiny256 and test_iquants_ggml.mjs compares its next-token distributions with
# our engine's (test_ggml_iquants --logits). node-llama-cpp is installed once into <build>/node-llama
# (gitignored), as test_engine_llamacpp.sh does. Exit 77 = skipped (no node
# >= 20 / no npm registry), except under CI=true where that is a failure.
set -u
QUANTA=$1
SHARED=$2
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "$(dirname "$QUANTA")" && pwd)

skip() {
    if [ "${CI:-}" = "true" ]; then
        echo "FAIL (CI=true, so no skipping): $*" >&2
        exit 1
    fi
    echo "SKIP: $*" >&2
    exit 77
}

command -v node >/dev/null 2>&1 || skip "node is not installed (need node >= 20)"
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
[ "$major" -ge 20 ] 2>/dev/null || skip "node $(node --version 2>/dev/null) is older than 20"
[ -x "$BUILD/test_ggml_iquants" ] || { echo "FAIL: $BUILD/test_ggml_iquants not built" >&2; exit 1; }

CACHE="$BUILD/node-llama"
have() { node -e "process.exit(require('$CACHE/node_modules/node-llama-cpp/package.json').version === '3.21.1' ? 0 : 1)" 2>/dev/null; }
if ! have; then
    command -v npm >/dev/null 2>&1 || skip "npm is not installed"
    mkdir -p "$CACHE"
    [ -f "$CACHE/package.json" ] || echo '{"private": true}' > "$CACHE/package.json"
    echo "installing node-llama-cpp@3.21.1 into $CACHE" >&2
    (cd "$CACHE" && npm i -E --no-audit --no-fund node-llama-cpp@3.21.1 >&2) ||
        skip "npm install of node-llama-cpp failed (no registry?)"
fi
LIB=$(ls "$CACHE"/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so 2>/dev/null | head -n 1)
[ -n "$LIB" ] || { echo "FAIL: no libggml-base.so under $CACHE (node-llama-cpp's linux-x64 binaries)" >&2; exit 1; }
"$BUILD/test_ggml_iquants" --ggml "$LIB" || exit 1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$BUILD/test_ggml_iquants" --logits "$tmp" || { echo "FAIL: our logits could not be exported" >&2; exit 1; }
node "$HERE/test_iquants_ggml.mjs" "$CACHE/node_modules" "$tmp" "$SHARED/reference/llamacpp-quantize/files"
