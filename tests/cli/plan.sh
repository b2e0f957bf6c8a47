#!/bin/bash
# CLI tests of `quanta plan`, `quanta estimate` and `quanta hw`.
# $1 = the quanta binary, $2 = the shared test-data directory.
set -u
Q="$1"
SHARED="${2:-}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
out="$tmp/out"

# run RC CMD...: runs quanta with the arguments, stdout+stderr into $out, checks the exit code.
run() {
    local want=$1
    shift
    "$Q" "$@" >"$out" 2>&1
    local rc=$?
    if [ "$rc" -ne "$want" ]; then
        echo "FAIL: quanta $* -> exit $rc, expected $want"
        sed 's/^/    /' "$out" | head -20
        failures=$((failures + 1))
    fi
}
# has TEXT...: every fixed string appears in the last output.
has() {
    for t in "$@"; do
        if ! grep -qF -- "$t" "$out"; then
            echo "FAIL: expected '$t' in the output of the last command"
            sed 's/^/    /' "$out" | head -30
            failures=$((failures + 1))
        fi
    done
}

SEED="--model qwen2.5-7b --memory 16GB --util 0.90 --overhead 1.0GB --context 4096 --accounting simple"

# ---- the seed's worked example, exactly ------------------------------------------
run 0 estimate $SEED --scheme bf16
has "15.23 GB (7,615,616,512 params x 2 bytes)" "left for KV       -1.83 GB" "DOES NOT FIT"
run 0 estimate $SEED --scheme int8
has "7.62 GB" "left for KV       5.78 GB" "24.6 sequences of 4,096 tokens -> 24 whole sequences" "FITS"
run 0 estimate $SEED --scheme w4a16
has "3.81 GB" "left for KV       9.59 GB" "40.8 sequences of 4,096 tokens -> 40 whole sequences"
# halving KV bytes per token roughly doubles concurrency
run 0 estimate $SEED --scheme int8 --kv-dtype fp8
has "28,672 bytes/token" "49.3 sequences"
# --json: bytes and counts, unrounded
run 0 estimate $SEED --scheme int8 --json
has '"weights_bytes": 7615616512' '"kv_bytes_per_token": 57344' '"kv_budget_bytes": 5784383488' \
    '"concurrency": 24,' '"fits": true' '"gpu_blocks": 6304' '"concurrency_frac": 24.62686'

# ---- KV for long requests ------------------------------------------------------------
run 0 estimate --model llama-3.1-70b --scheme bf16 --memory 400GB --context 32768 --concurrency 8
has "327,680 bytes/token" "KV needs 85.90 GB (80.00 GiB)"
run 0 estimate --model llama-3.1-70b --scheme bf16 --memory 400GB --context 32768 --concurrency 8 --kv-dtype fp8
has "KV needs 42.95 GB (40.00 GiB)"
run 0 estimate --model qwen3-8b --scheme bf16 --gpu h100 --context 4096 --concurrency 4
has "147,456 bytes/token" "(2.25 GiB)"
run 0 estimate --model qwen3-0.6b --scheme bf16 --gpu l4
has "114,688 bytes/token (2 x 28 layers x 8 KV heads x 128 head_dim x 2 bytes)"

# ---- realistic accounting (default) beside the simple one -----------------------------
run 0 estimate --model qwen2.5-7b --scheme w4a16 --memory 16GB --context 4096
has "accounting        realistic" "5.55 GB per GPU" "2.18 GB kept 16-bit" "simple accounting 3.81 GB weights"

# ---- plan ------------------------------------------------------------------------------
run 0 plan --model qwen2.5-7b --gpu t4 --svg "$tmp/t4.svg" --html "$tmp/t4.html"
has "NVIDIA T4 (Turing, compute capability 7.5" "the WEIGHTS" "recommended" "hf download Qwen/Qwen2.5-7B-Instruct --local-dir qwen2.5-7b" "quanta quantize qwen2.5-7b qwen2.5-7b-" \
    "vllm serve" "--dtype half" "FP8 W8A8 needs compute capability 8.9" "no bf16 fast path" "DOES NOT FIT"
head -c 5 "$tmp/t4.svg" | grep -q '<svg' || { echo "FAIL: t4.svg does not start with <svg"; failures=$((failures + 1)); }
tail -n 1 "$tmp/t4.svg" | grep -q '</svg>' || { echo "FAIL: t4.svg does not end with </svg>"; failures=$((failures + 1)); }
grep -q '</html>' "$tmp/t4.html" || { echo "FAIL: t4.html incomplete"; failures=$((failures + 1)); }
run 0 plan --model qwen2.5-7b --gpu a100-80gb --goal throughput
has "goal throughput" "NVIDIA A100 80GB is 8.0 (Ampere): use INT8 W8A8 or W4A16" "weights or cache?  neither" "roofline"
run 0 plan --model qwen2.5-7b --gpu a100-80gb --json
has '"best": "bf16"' '"constraint": "none"' '"kv_advice"' '"quant_job"'
run 0 plan --model llama-3.1-70b --gpu h100x4 --context 32768 --concurrency 8
has "4 x NVIDIA H100 SXM" "--tensor-parallel-size 4"
run 0 plan --model llama-3.1-405b --gpu h100
has "nothing fits" "tensor parallelism"
run 0 plan --model llama-3.1-8b --gpu m2-ultra
has "q8_0" "llama-server" "x 0.75"
run 0 plan --model flux.1-dev --gpu rtx-4090
has "transformer" "Keep the VAE in 16-bit" "Quantize the denoiser first" "text encoders separately"
run 0 plan --list-models
for k in qwen2.5-0.5b qwen2.5-72b qwen3-0.6b qwen3-32b qwen3-30b-a3b llama-3.1-405b llama-3.2-1b mistral-7b \
         mixtral-8x7b gemma-2-9b gemma-2-27b phi-3-mini phi-4 deepseek-v3 sdxl sd3.5-large flux.1-dev; do
    has "$k"
done

# a config.json and a directory holding one
mkdir -p "$tmp/MyModel"
cat >"$tmp/MyModel/config.json" <<'JSON'
{"model_type": "qwen3", "vocab_size": 151936, "hidden_size": 1024, "intermediate_size": 3072,
 "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
 "tie_word_embeddings": true}
JSON
run 0 plan --model "$tmp/MyModel" --gpu l4
has "MyModel (qwen3): 596,049,920 parameters"
run 0 estimate --model "$tmp/MyModel/config.json" --scheme fp8 --gpu l4
has "114,688 bytes/token"
echo '{"model_type": "llama"}' >"$tmp/bad.json"
run 1 plan --model "$tmp/bad.json" --gpu l4
has "quanta: error:" "bad.json" "'vocab_size'"

# a checkpoint: exact counts from its tensors and the bytes as stored
if [ -n "$SHARED" ] && [ -f "$SHARED/models/stories260K.gguf" ]; then
    run 0 estimate --model "$SHARED/models/stories260K.gguf" --scheme q8_0 --memory 1GB
    has "292,800 params" "checkpoint        292,800 params, 1.2 MB as stored (gguf f32 (mostly))"
    run 0 plan --model "$SHARED/models/stories260K.gguf" --gpu cpu --memory 1GB --context 512 --json
    has '"measured": {' '"bytes": 1171200'
    run 1 plan --model "$SHARED/data/wiki.test.raw" --gpu t4
    has "quanta: error:" "wiki.test.raw"
fi

# ---- hw ------------------------------------------------------------------------------------
run 0 hw
has "FP8 W8A8" "Volta" "Blackwell" "CUDA >= 11.8"
run 0 hw --gpu a100-80gb --scheme fp8
has "NO" "compute capability 8.9" "is 8.0 (Ampere)"
run 0 hw --gpu h100 --scheme fp8
has "yes"
run 0 hw --gpu v100 --scheme fp8-kv
has "yes" "CUDA >= 11.8"
run 0 hw --gpu t4
has "bf16" "compute capability 8.0" "Y int8"
run 0 hw --list
has "a100-80gb" "2039" "mi300x" "m2-ultra"
run 0 hw --json
has '"key": "fp8-w8a8"'

# ---- bad input: usage errors (exit 2) with the nearest names ---------------------------------
run 2 plan --model qwen2.5-7 --gpu t4
has "unknown model 'qwen2.5-7'; did you mean qwen2.5-7b"
run 2 plan --model qwen2.5-7b --gpu a100-80
has "unknown GPU 'a100-80'; did you mean a100-80gb"
run 2 hw --gpu h1000
has "did you mean h100"
run 2 estimate --model qwen2.5-7b --scheme int4x --gpu t4
has "unknown scheme 'int4x'"
run 2 estimate --model qwen2.5-7b --scheme int8 --gpu t4 --util 1.2
has "--util"
run 2 estimate --model qwen2.5-7b --scheme int8 --gpu t4 --context -5
has "--context"
run 2 estimate --model qwen2.5-7b --scheme int8 --memory 16
has "GiB"
run 2 estimate --model qwen2.5-7b --scheme int8 --gpu t4x3
has "28 attention heads"
run 2 plan --gpu t4
has "--model is required"
run 2 plan --model qwen2.5-7b
has "--gpu"
run 2 plan --model qwen2.5-7b --gpu t4 --goal speed
has "--goal"
run 2 plan --model qwen2.5-7b --gpu t4 --bogus
has "unknown option"
run 1 plan --model qwen2.5-7b --gpu t4 --svg "$tmp/no/such/dir/x.svg"
has "quanta: error:"
[ -e "$tmp/no/such/dir/x.svg" ] && { echo "FAIL: partial svg left"; failures=$((failures + 1)); }

for verb in plan estimate hw; do
    run 0 "$verb" --help
    has "usage: quanta $verb"
done

if [ "$failures" -ne 0 ]; then
    echo "plan.sh: $failures failures"
    exit 1
fi
echo "plan.sh: all passed"
