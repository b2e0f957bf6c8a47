#!/bin/bash
# tests/cli/kv_scales.sh QUANTA SHARED_DIR — FP8 KV cache scales of a vLLM /
# llm-compressor checkpoint (model.layers.N.self_attn.k_scale / v_scale,
# docs/formats.md §4.3): `quanta run --kv-scale file` says it uses the file's,
# `quanta convert` to GGUF leaves them out with a notice (llama.cpp refuses
# unused tensors), to HF keeps them, and a bad shape is one clear error.
# The checkpoint: stories260K as an HF directory (quanta convert) plus scales
# and a KV-cache-only quantization_config, added by add_scales below.
source "$(dirname "$0")/lib/harness.sh"
has() { grep -qF -- "$2" "$tmp/$1" && pass=$((pass + 1)) || { echo "FAIL: $1 lacks '$2'"; cat "$tmp/$1"; fail=$((fail + 1)); }; }
lacks() { ! grep -qF -- "$2" "$tmp/$1" && pass=$((pass + 1)) || { echo "FAIL: $1 has '$2'"; fail=$((fail + 1)); }; }

check "GGUF -> HF" 0 "$q" convert -q "$shared/models/stories260K.gguf" "$tmp/hf"
# u64le N: N as 8 little-endian bytes
u64le() { local i; for i in 0 1 2 3 4 5 6 7; do printf "\\$(printf %03o $(( ($1 >> (8 * i)) & 255 )))"; done; }
# add_scales DIR SHAPE COUNT: per layer k_scale = 0.5 and v_scale = 0.25, F32 of
# SHAPE ("[1]", "[3]"; COUNT elements), appended to DIR/model.safetensors (the
# header is 8 bytes of little-endian length, then JSON padded with spaces to a
# multiple of 8, then the data; formats.md), and a KV-cache-only
# quantization_config in DIR/config.json. Plain shell and coreutils: a test may
# use only what scripts/deps.sh installs.
add_scales() {
    local d=$1 shape=$2 cnt=$3 st=$1/model.safetensors l w v i n data off hdr LC_ALL=C  # lengths in bytes
    n=$(od -An -t u8 -N 8 "$st" | tr -d ' ')
    data=$(( $(stat -c %s "$st") - 8 - n ))
    hdr=$(head -c $((8 + n)) "$st" | tail -c "$n" | sed 's/ *$//')
    hdr=${hdr%\}}
    off=$data
    : > "$tmp/scales.bin"
    for l in 0 1 2 3 4; do
        for w in k v; do
            if [ $w = k ]; then v='\000\000\000\077'; else v='\000\000\200\076'; fi  # 0.5, 0.25 (f32 LE)
            for ((i = 0; i < cnt; i++)); do printf "$v" >> "$tmp/scales.bin"; done
            hdr="$hdr,\"model.layers.$l.self_attn.${w}_scale\":{\"dtype\":\"F32\",\"shape\":$shape,\"data_offsets\":[$off,$((off + 4 * cnt))]}"
            off=$((off + 4 * cnt))
        done
    done
    hdr="$hdr}"
    while [ $(( ${#hdr} % 8 )) -ne 0 ]; do hdr="$hdr "; done
    { u64le ${#hdr}; printf '%s' "$hdr"; tail -c "$data" "$st"; cat "$tmp/scales.bin"; } > "$st.new" && mv "$st.new" "$st"
    ! grep -q quantization_config "$d/config.json" || { echo "FAIL: $d/config.json already has a quantization_config"; exit 1; }
    sed -i '0,/{/s//{\n  "quantization_config": {"quant_method": "compressed-tensors", "format": "dense", "config_groups": {}, "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": false}},/' "$d/config.json"
}
cp -r "$tmp/hf" "$tmp/bad"
add_scales "$tmp/hf" "[1]" 1
add_scales "$tmp/bad" "[3]" 3

check "run with the file's scales" 0 "$q" run -m "$tmp/hf" -p "Once upon a time" -n 8 --kv-dtype fp8-e4m3 --kv-scale file
has err "KV cache: fp8-e4m3"
has err "per-tensor scales from the model file (blk.N.attn_k_scale / attn_v_scale)"

check "HF -> GGUF" 0 "$q" convert "$tmp/hf" "$tmp/out.gguf"
has err "quanta: note: leaving out 10 KV cache scale tensors (blk.N.attn_k_scale / attn_v_scale)"
check "inspect the GGUF" 0 "$q" inspect "$tmp/out.gguf"
lacks out "attn_k_scale"
check "GGUF has no scales" 1 "$q" run -m "$tmp/out.gguf" -p hi --kv-dtype fp8-e4m3 --kv-scale file
has err "blk.0.attn_k_scale' (KV cache scale) is missing"

check "HF -> HF" 0 "$q" convert -q "$tmp/hf" "$tmp/hf2" --to hf
lacks err "leaving out"
check "HF copy keeps the scales" 0 "$q" inspect "$tmp/hf2"
has out "blk.4.attn_v_scale"

check "bad scale shape" 1 "$q" inspect "$tmp/bad"
has err "quanta: error: $tmp/bad/model.safetensors: tensor 'model.layers.0.self_attn.k_scale': field 'shape': [3], but a KV cache scale must be [] or [1] (per tensor) or [4] (num_key_value_heads, per head)"

echo "kv_scales.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
