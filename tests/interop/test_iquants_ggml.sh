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
# our engine's (test_ggml_iquants --logits). The npm packages come from the npm_packages setup
# fixture (tests/interop/node_env.sh). Exit 77 = skipped (no node
# >= 20 / no npm registry), except under CI=true where that is a failure.
set -u
QUANTA=$1
SHARED=$2
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "$(dirname "$QUANTA")" && pwd)

. "$HERE/node_env.sh"
require_npm_packages
[ -x "$BUILD/test_ggml_iquants" ] || { echo "FAIL: $BUILD/test_ggml_iquants not built" >&2; exit 1; }

LIB=$(ls "$NODE_MODULES/$LLAMACPP_BINS/libggml-base.so" 2>/dev/null | head -n 1)
[ -n "$LIB" ] || { echo "FAIL: no libggml-base.so under $NODE_MODULES (node-llama-cpp's linux-x64 binaries)" >&2; exit 1; }
"$BUILD/test_ggml_iquants" --ggml "$LIB" || exit 1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$BUILD/test_ggml_iquants" --logits "$tmp" || { echo "FAIL: our logits could not be exported" >&2; exit 1; }
node "$HERE/test_iquants_ggml.mjs" "$NODE_MODULES" "$tmp" "$SHARED/reference/llamacpp-quantize/files"
