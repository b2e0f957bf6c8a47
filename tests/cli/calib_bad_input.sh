#!/bin/bash
# tests/cli/calib_bad_input.sh QUANTA SHARED_DIR — bad input to the calibrated
# paths (issue 15, "Bad input"): an input channel that never saw a non-zero
# activation is named by GPTQ (never a NaN); a KV head whose K is always zero
# is refused naming layer and head (no zero scale); a mixture-of-experts
# checkpoint is refused naming what the engine lacks. The models are stories260K
# as a Hugging Face directory (quanta convert) with bytes changed in place: the
# safetensors header (8-byte length, then JSON) gives each tensor's offsets.
source "$(dirname "$0")/lib/harness.sh"
stories="$shared/models/stories260K.gguf"
tail -n +4331 "$shared/data/tinystories-valid-first1000.txt" >"$tmp/calib.txt"
check "to HF" 0 "$q" convert -q "$stories" "$tmp/hf"
# zero DIR TENSOR FIRST COUNT: F32 elements [FIRST, FIRST + COUNT) of TENSOR set to 0
zero() {
    local st=$1/model.safetensors n start
    n=$(od -An -t u8 -N 8 "$st" | tr -d ' ')
    start=$(head -c $((8 + n)) "$st" | tail -c "$n" | grep -o "\"$2\":{[^}]*}" | sed 's/.*"data_offsets":\[\([0-9]*\),.*/\1/')
    head -c $((4 * $4)) /dev/zero | dd of="$st" bs=1 seek=$((8 + n + start + 4 * $3)) conv=notrunc status=none
}
gptq=(--scheme q4_0 --tensor-type ffn_down=f16 --algo gptq --calib "$tmp/calib.txt" --nsamples 4 --seqlen 64)

# input channel 5 of layer 0's attention never non-zero: its norm weight is 0
cp -r "$tmp/hf" "$tmp/dead"
zero "$tmp/dead" model.layers.0.input_layernorm.weight 5 1
expect "dead channel named" 0 "blk.0.attn_q.weight and the linears sharing its input: 1 of 64 input channels never saw a non-zero activation (channel 5)" \
    "$q" quantize "$tmp/dead" "$tmp/dead.gguf" "${gptq[@]}"
ok has err "3 dead columns"
check "the result runs" 0 "$q" run -m "$tmp/dead.gguf" -p "Once upon a time" -n 4 --temp 0
ok test -s "$tmp/out"

# KV head 1 of layer 0: its k_proj rows (8 per head, 64 wide) are 0, so is its K
cp -r "$tmp/hf" "$tmp/deadk"
zero "$tmp/deadk" model.layers.0.self_attn.k_proj.weight $((8 * 64)) $((8 * 64))
expect "zero KV scale refused" 1 "KV scales: layer 0 head 1 K: amax 0" "$q" quantize "$tmp/deadk" "$tmp/k.gguf" \
    --scheme q8_0 --kv-dtype int8 --kv-scale-gran head --calib "$tmp/calib.txt" --nsamples 4 --seqlen 64
ok has err "never saw a non-zero activation"
ok test ! -e "$tmp/k.gguf"
check "per tensor: the other heads give it a scale" 0 "$q" quantize "$tmp/deadk" "$tmp/k.gguf" --scheme q8_0 \
    --kv-dtype int8 --calib "$tmp/calib.txt" --nsamples 4 --seqlen 64 -q

# mixture of experts
cp -r "$tmp/hf" "$tmp/moe"
sed -i 's/"model_type": "llama"/"model_type": "mixtral", "num_local_experts": 8, "num_experts_per_tok": 2/; s/"LlamaForCausalLM"/"MixtralForCausalLM"/' "$tmp/moe/config.json"
expect "MoE refused" 1 "field 'num_local_experts': 8 routed experts: a mixture-of-experts model; quanta's engine has no expert routing" \
    "$q" quantize "$tmp/moe" "$tmp/m.gguf" "${gptq[@]}"
ok test ! -e "$tmp/m.gguf"

echo "calib_bad_input.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
