#!/bin/sh
# Installs the Debian 12 packages quanta's build and tests need. Idempotent and
# silent when everything is already present. Why each one is here:
#   build-essential, cmake, pkg-config   the C toolchain and build system
#   clang, libclang-rt-dev                libFuzzer targets (tests/fuzz) and their sanitizer runtimes
#   libjansson-dev                        JSON: config.json, tokenizer.json, safetensors headers, --json output
#   libpcre2-dev                          Unicode regex for the Llama-3 / Qwen2 BPE pre-tokenizers
#   libutf8proc-dev                       Unicode NFC normalisation and categories for tokenizers
#   libcurl4-openssl-dev                  HTTP client of `quanta loadtest` (libcurl's multi interface, streaming)
#   libmicrohttpd-dev                     the HTTP server under `quanta serve` (GNU libmicrohttpd), and the load test's scripted test server
#   curl                                  the HTTP client tests/cli/serve.sh drives `quanta serve` with
#   jq                                    reads and writes JSON in CLI tests (tests/cli/eval_tasks.sh builds a task file from `quanta run --json`)
#   libxml2-utils                         xmllint: tests/cli/quantize_budget.sh checks the --svg picture is well-formed XML
#   libopenblas-dev, liblapacke-dev       GPTQ: BLAS syrk for Hessians, LAPACKE Cholesky for their inverse factors
set -e
PKGS="build-essential cmake pkg-config clang libclang-rt-dev libjansson-dev libpcre2-dev libutf8proc-dev libcurl4-openssl-dev libmicrohttpd-dev curl jq libxml2-utils libopenblas-dev liblapacke-dev"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "scripts/deps.sh: installing:$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
