#!/bin/bash
# tests/cli/synth_bench.sh QUANTA SHARED_DIR — `quanta synth` and `quanta bench`
# at the CLI: files are deterministic at any thread count, the summary and the
# bench JSON carry every key with sane values (never a time threshold), and bad
# input is a clear usage error. Models are kept small (--layers 1, --vocab).
source "$(dirname "$0")/lib/harness.sh"
model="$shared/models/stories260K.gguf"

# synth: same seed at 1 and 2 threads -> same bytes; another seed -> other bytes
expect "synth -t 1" 0 "" "$q" synth --like qwen2.5-0.5b --layers 1 --vocab 512 --format q4_0 -t 1 -o "$tmp/a.gguf" -q
expect "synth -t 2" 0 "" "$q" synth --like qwen2.5-0.5b --layers 1 --vocab 512 --format q4_0 -t 2 -o "$tmp/b.gguf" -q
ok cmp -s "$tmp/a.gguf" "$tmp/b.gguf"
expect "synth --seed 2" 0 "" "$q" synth --like qwen2.5-0.5b --layers 1 --vocab 512 --format q4_0 --seed 2 -o "$tmp/c.gguf" -q
ok bash -c "! cmp -s '$tmp/a.gguf' '$tmp/c.gguf'"
expect "synth inspect" 0 "out:q4_0" "$q" inspect "$tmp/a.gguf"
ok has out "layers 1, heads 14 (kv 2"
expect "synth --json" 0 "" "$q" synth --like llama-3.2-1b --layers 1 --vocab 400 --format q8_0 -o "$tmp/l.gguf" --json -q
for k in '"like": "llama-3.2-1b"' '"format": "Q8_0"' '"layers": 1' '"n_vocab": 400' '"params":' '"bytes":' '"tensors": 11'; do
    ok has out "$k"
done
# HF output: a directory that reads back
expect "synth hf" 0 "hf directory" "$q" synth --like qwen3-0.6b --layers 1 --vocab 400 --format bf16 -o "$tmp/hf"
ok test -s "$tmp/hf/config.json"
ok test -s "$tmp/hf/model.safetensors"
expect "synth hf inspect" 0 "out:qwen3" "$q" inspect "$tmp/hf"
expect "synth hf non-empty" 1 "not empty" "$q" synth --like qwen3-0.6b --layers 1 --vocab 400 -o "$tmp/hf" -q
expect "synth hf quantized" 1 "f32, f16 or bf16" "$q" synth --like qwen3-0.6b --layers 1 --vocab 400 --format q4_0 --to hf -o "$tmp/hf2" -q
ok test ! -e "$tmp/hf2"
# usage errors (exit 2) and failures (exit 1) with clear messages
expect "synth no --like" 2 "--like" "$q" synth -o "$tmp/x.gguf"
expect "synth no -o" 2 "-o OUT" "$q" synth --like qwen3-0.6b
expect "synth bad format" 2 "not f32, f16, bf16 or a GGUF file type" "$q" synth --like qwen3-0.6b --format q9 -o "$tmp/x.gguf"
expect "synth bad layers" 2 "out of range" "$q" synth --like qwen3-0.6b --layers 0 -o "$tmp/x.gguf"
expect "synth bad seed" 2 "--seed" "$q" synth --like qwen3-0.6b --seed -1 -o "$tmp/x.gguf"
expect "synth typo preset" 1 "qwen3-0.6b" "$q" synth --like qwen3-0.6 -o "$tmp/x.gguf"
expect "synth moe preset" 1 "not an architecture" "$q" synth --like mixtral-8x7b --layers 1 -o "$tmp/x.gguf"
ok test ! -e "$tmp/x.gguf"
# --like config.json
cat >"$tmp/config.json" <<'JSON'
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 600, "hidden_size": 256,
 "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
 "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": false}
JSON
expect "synth config.json" 0 "" "$q" synth --like "$tmp/config.json" -o "$tmp/cfg.gguf" --format f32 --json -q
ok has out '"params": 1488128'   # 2 x 600 x 256 + 2 x (2 x 256 x 256 + 2 x 256 x 128 + 3 x 256 x 512 + 2 x 256) + 256
expect "synth config inspect" 0 "out:rope base 500000" "$q" inspect "$tmp/cfg.gguf"

# bench: JSON structure and sanity (positive values, counts), never a time threshold
expect "bench --json" 0 "" "$q" bench -m "$model" -m "$tmp/a.gguf" -p 16 -n 4 -r 2 -t 2 --bw-size 64MiB --json -q
for k in '"machine"' '"read_gbps"' '"threads": 2' '"cpu_level"' '"models"' '"model":' '"file_type": "Q4_0"' '"file_type": null' '"prefill_tps"' '"prefill_tps_cpu"' '"decode_tps"' '"decode_tps_cpu"' '"read_gb_per_cpu_s"' \
         '"ttft_ms"' '"itl_p50_ms"' '"itl_p99_ms"' '"peak_rss_bytes"' '"peak_rss_is_model"' '"weight_bytes"' '"bandwidth_ratio"' '"n_prompt": 16' \
         '"n_gen": 4' '"reps": 2'; do
    ok has out "$k"
done
ok test "$(grep -c '"prefill_tps":' "$tmp/out")" = 2
ok bash -c "! grep -qE '\"(prefill_tps|prefill_tps_cpu|decode_tps|decode_tps_cpu|ttft_ms|itl_p50_ms|read_gbps|read_gb_per_cpu_s|bandwidth_ratio)\": (null|0\\.0*,|-)' '$tmp/out'"
# stories260K (untied) reads every weight each token but one row of the embedding
ok has out "\"weight_bytes\": $((1171200 - 512 * 64 * 4 + 64 * 4))"
expect "bench tables" 0 "out:| model | file type | params | prefill tok/s" "$q" bench -m "$model" -p 8 -n 2 -r 1 --bw-size 16MiB
ok has out "pp8"
ok has out "tg2"
ok has out "machine: read bandwidth"
ok has err "bench"
expect "bench no model" 2 "-m PATH" "$q" bench -p 8
expect "bench bad -p" 2 "out of range" "$q" bench -m "$model" -p 0
expect "bench bad bw" 2 "--bw-size" "$q" bench -m "$model" --bw-size 1K
expect "bench bw unit" 2 "unknown unit 'M'" "$q" bench -m "$model" --bw-size 256M
expect "bench bw small" 2 "must be at least 1 MiB" "$q" bench -m "$model" --bw-size 1KiB
expect "bench kv q8_0" 2 "int8" "$q" bench -m "$model" --kv-dtype q8_0
expect "bench missing" 1 "nope.gguf" "$q" bench -m "$tmp/nope.gguf" -p 8 -n 1 -r 1 --bw-size 16MiB -q

echo "synth_bench: $pass passed, $fail failed"
[ $fail -eq 0 ]
