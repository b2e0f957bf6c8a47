#!/bin/bash
# tests/interop/test_engine_llamacpp.sh QUANTA SHARED_DIR
#
# Our engine against llama.cpp itself (npm node-llama-cpp@3.21.1, prebuilt CPU
# build) on tiny random-weight fixtures of the architectures stories260K does
# not cover: llama with GQA, llama3 rope scaling + tied embeddings, qwen2 q/k/v
# biases, qwen3 q/k norms with head_dim != hidden/heads, mistral. The fixtures
# are written as HF directories and converted to GGUF by test_engine_fixtures
# --export (which also stores our logits); test_engine_llamacpp.mjs compares
# next-token log-probabilities. node-llama-cpp is installed once into
# <build>/node-llama (gitignored). Exit 77 = skipped (no node >= 20 / no npm
# registry), except under CI=true where that is a failure.
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
[ -x "$BUILD/test_engine_fixtures" ] || { echo "FAIL: $BUILD/test_engine_fixtures not built" >&2; exit 1; }

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

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$BUILD/test_engine_fixtures" --export "$tmp/fx" || { echo "FAIL: fixtures could not be exported" >&2; exit 1; }
node "$HERE/test_engine_llamacpp.mjs" "$CACHE/node_modules" "$tmp/fx"
