#!/bin/bash
# tests/cli/kv_scales.sh QUANTA SHARED_DIR — FP8 KV cache scales of a vLLM /
# llm-compressor checkpoint (model.layers.N.self_attn.k_scale / v_scale,
# docs/formats.md §4.3): `quanta run --kv-scale file` says it uses the file's,
# `quanta convert` to GGUF leaves them out with a notice (llama.cpp refuses
# unused tensors), to HF keeps them, and a bad shape is one clear error.
# The checkpoint: stories260K as an HF directory (quanta convert) plus scales
# and a KV-cache-only quantization_config, added with python3.
source "$(dirname "$0")/lib/harness.sh"
has() { grep -qF -- "$2" "$tmp/$1" && pass=$((pass + 1)) || { echo "FAIL: $1 lacks '$2'"; cat "$tmp/$1"; fail=$((fail + 1)); }; }
lacks() { ! grep -qF -- "$2" "$tmp/$1" && pass=$((pass + 1)) || { echo "FAIL: $1 has '$2'"; fail=$((fail + 1)); }; }

check "GGUF -> HF" 0 "$q" convert -q "$shared/models/stories260K.gguf" "$tmp/hf"
# add_scales DIR SHAPE: per layer k_scale / v_scale with SHAPE ([] , [1] or [n]) in f32
add_scales() {
    python3 - "$1" "$2" <<'PY'
import json, struct, sys
d, shape = sys.argv[1], json.loads(sys.argv[2])
p = d + "/model.safetensors"
b = open(p, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
hdr = json.loads(b[8:8 + n]); data = bytearray(b[8 + n:])
cnt = 1
for s in shape: cnt *= s
for l in range(5):
    for w, v in (("k", 0.5), ("v", 0.25)):
        off = len(data); data += struct.pack("<%df" % cnt, *([v] * cnt))
        hdr["model.layers.%d.self_attn.%s_scale" % (l, w)] = {"dtype": "F32", "shape": shape, "data_offsets": [off, len(data)]}
h = json.dumps(hdr, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
open(p, "wb").write(struct.pack("<Q", len(h)) + h + data)
c = json.load(open(d + "/config.json"))
c["quantization_config"] = {"quant_method": "compressed-tensors", "format": "dense", "config_groups": {},
                            "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False}}
json.dump(c, open(d + "/config.json", "w"), indent=2)
PY
}
cp -r "$tmp/hf" "$tmp/bad"
add_scales "$tmp/hf" "[1]"
add_scales "$tmp/bad" "[3]"

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
