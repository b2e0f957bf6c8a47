#!/bin/bash
# tests/cli/engine.sh QUANTA SHARED_DIR — `quanta run` and `quanta perplexity`:
# usage errors, llama.cpp's greedy text for stories260K, seeded determinism,
# --json fields, and one clear error (exit 1) for each kind of bad input.
q="$1"
shared="$2"
model="$shared/models/stories260K.gguf"
text="$shared/data/tinystories-valid-first1000.txt"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
pass=0
check() { # name, expected-exit, expected stderr substring ('' = any), command...
    local name="$1" want="$2" msg="$3"
    shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    local got=$?
    if [ "$got" = "$want" ] && { [ -z "$msg" ] || grep -qF -- "$msg" "$tmp/err"; }; then pass=$((pass + 1)); else
        echo "FAIL $name: exit $got (want $want), stderr should contain '$msg'"
        cat "$tmp/out" "$tmp/err"
        fail=$((fail + 1))
    fi
}

check "run --help" 0 "" "$q" run --help
check "perplexity --help" 0 "" "$q" perplexity --help
check "run without model" 2 "missing -m MODEL" "$q" run -p hi
check "run bad -n" 2 "is not an integer" "$q" run -m "$model" -p hi -n 12x
check "ppl without text" 2 "missing -f TEXT" "$q" perplexity -m "$model"
check "bad act-quant" 2 "takes 'auto' or 'off'" "$q" run -m "$model" -p hi --act-quant maybe
check "bad numerics" 2 "expected fast or llama" "$q" run -m "$model" -p hi --numerics exact
check "ppl numerics without value" 2 "--numerics needs a value" "$q" perplexity -m "$model" -f "$model" --numerics
check "numerics named" 0 "--numerics llama" "$q" run -m "$model" -p hi -n 2 --numerics llama

# llama.cpp's greedy continuation (../shared/models/README.md), 32 tokens
want="Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw"
check "greedy" 0 "stopped: reached -n" "$q" run -m "$model" -p "Once upon a time" -n 32 --temp 0 -t 2
if [ "$(head -1 "$tmp/out")" = "$want" ]; then pass=$((pass + 1)); else
    echo "FAIL greedy text: '$(head -1 "$tmp/out")'"; fail=$((fail + 1)); fi
grep -qF "KV cache: f16" "$tmp/err" && pass=$((pass + 1)) || { echo "FAIL: numerics not stated"; fail=$((fail + 1)); }

# sampling is a function of the seed
"$q" run -m "$model" -p "Lily" -n 40 --seed 7 -q > "$tmp/a" 2>/dev/null
"$q" run -m "$model" -p "Lily" -n 40 --seed 7 -q -t 1 > "$tmp/b" 2>/dev/null
"$q" run -m "$model" -p "Lily" -n 40 --seed 8 -q > "$tmp/c" 2>/dev/null
if cmp -s "$tmp/a" "$tmp/b" && ! cmp -s "$tmp/a" "$tmp/c"; then pass=$((pass + 1)); else
    echo "FAIL seeds: same seed must repeat, another seed must differ"; cat "$tmp/a" "$tmp/b" "$tmp/c"; fail=$((fail + 1)); fi

# every KV format runs
for kv in f32 bf16 fp8-e4m3 fp8-e5m2 int8; do
    check "run --kv-dtype $kv" 0 "KV cache: $kv" "$q" run -m "$model" -p "Once upon a time" -n 8 --kv-dtype $kv
done
check "int8 scales stated" 0 "computed on the fly" "$q" run -m "$model" -p "Once" -n 4 --kv-dtype int8 --kv-scale-gran head

# --json is UTF-8 whatever the bytes: an ill-formed prompt (and any generation
# cut inside a character) gets U+FFFD, as llama-server does, not an error
check "run --json, ill-formed UTF-8" 0 "" "$q" run -m "$model" -p "$(printf 'caf\303')" -n 24 --temp 1.5 --seed 3 --json -q
grep -qF "$(printf '"prompt": "caf\357\277\275"')" "$tmp/out" && grep -qF '"text": ' "$tmp/out" && pass=$((pass + 1)) ||
    { echo "FAIL run --json: the prompt's ill-formed byte should be U+FFFD"; cat "$tmp/out"; fail=$((fail + 1)); }

# bad input: one message, exit 1
check "prompt longer than context" 1 "the prompt is" "$q" run -m "$model" -p "$(head -c 3000 "$text")" -c 64 -n 2
check "unknown KV format" 2 "KV cache format 'q4_0' is not supported" "$q" run -m "$model" -p hi --kv-dtype q4_0 # a usage error
check "no KV scales in the file" 1 "attn_k_scale' (KV cache scale) is missing" "$q" run -m "$model" -p hi --kv-dtype fp8-e4m3 --kv-scale file
# the model with general.architecture = "gpt2x": the first "llama" after the
# key is its value (same length, so nothing else moves). If this copy cannot be
# made, that is a failure, never a silent copy of the original.
key=$(LC_ALL=C grep -obaF general.architecture "$model" | head -1 | cut -d: -f1)
val=$(LC_ALL=C grep -obaF llama "$model" | cut -d: -f1 | while read -r o; do [ "$o" -gt "${key:-0}" ] && { echo "$o"; break; }; done)
cp "$model" "$tmp/arch.gguf"
if [ -n "$key" ] && [ -n "$val" ] && [ $((val - key)) -le 40 ] &&
   printf gpt2x | dd of="$tmp/arch.gguf" bs=1 seek="$val" conv=notrunc status=none &&
   [ "$(LC_ALL=C grep -obaF gpt2x "$tmp/arch.gguf" | cut -d: -f1)" = "$val" ]; then pass=$((pass + 1)); else
    echo "FAIL: could not write the gpt2x copy of $model (key at '$key', value at '$val')"; fail=$((fail + 1)); fi
check "unknown architecture" 1 "architecture 'gpt2x' is not supported" "$q" run -m "$tmp/arch.gguf" -p hi
check "missing model file" 1 "" "$q" run -m "$tmp/nope.gguf" -p hi
head -c 300 "$text" > "$tmp/short.txt"
check "text too short" 1 "needs at least 256" "$q" perplexity -m "$model" -f "$tmp/short.txt" -c 128

# perplexity: --json fields, llama.cpp's counts
check "perplexity json" 0 "" "$q" perplexity -m "$model" -f "$text" -c 128 --chunks 3 --json
for f in '"ppl": ' '"ppl_stderr": ' '"n_ctx": 128' '"n_chunks": 3' '"n_scored": 189' '"kv_dtype": "f16"'; do
    grep -qF "$f" "$tmp/out" && pass=$((pass + 1)) || { echo "FAIL json field $f"; cat "$tmp/out"; fail=$((fail + 1)); }
done
check "perplexity text" 0 "running PPL" "$q" perplexity -m "$model" -f "$text" -c 128 --chunks 2
grep -q "^Final estimate: PPL = [0-9.]* +/- [0-9.]*$" "$tmp/out" && pass=$((pass + 1)) || { echo "FAIL final line"; cat "$tmp/out"; fail=$((fail + 1)); }

echo "engine.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
