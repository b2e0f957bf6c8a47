#!/usr/bin/env bash
# CLI tests for `quanta inspect` and `quanta convert`: exit codes (0 ok,
# 1 bad input, 2 usage), --help, errors that name the file, the stories260K
# numbers of ../shared/models/README.md, byte-identical GGUF round trips, and
# no output file (not even a temporary) after a failed conversion.
# usage: inspect_convert.sh QUANTA SHARED_DIR
set -u
Q=$1
SHARED=$2
GGUF=$SHARED/models/stories260K.gguf
BIN=$SHARED/models/stories260K.bin
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect CODE CMD... : run, keep stdout/stderr in $TMP/out, $TMP/err
expect() {
    local want=$1; shift
    "$@" >"$TMP/out" 2>"$TMP/err"
    local got=$?
    [ "$got" -eq "$want" ] || fail "exit $got (want $want): $* -- $(head -c 300 "$TMP/err")"
}
has() { grep -qF -- "$2" "$TMP/$1" || fail "$1 lacks '$2': $(head -c 300 "$TMP/$1")"; }

# --help and usage errors
expect 0 "$Q" inspect --help;  has out "usage: quanta inspect PATH [--json[=FILE]]"
expect 0 "$Q" convert --help;  has out "usage: quanta convert IN OUT"
expect 2 "$Q" inspect;         has err "missing PATH"
expect 2 "$Q" inspect --bogus "$GGUF"
expect 2 "$Q" convert "$GGUF"; has err "need IN and OUT"
expect 2 "$Q" convert "$GGUF" "$TMP/x.gguf" --outtype q4_0; has err "--outtype: 'q4_0' is not f32, f16 or bf16"
expect 2 "$Q" convert "$GGUF" "$TMP/x.gguf" --to safetensors
[ ! -e "$TMP/x.gguf" ] || fail "usage error left $TMP/x.gguf"

# bad paths and bad files: exit 1, the file named
expect 1 "$Q" inspect /nonexistent/dir/model.gguf; has err "quanta: error: /nonexistent/dir/model.gguf: cannot open"
head -c 3000 /dev/urandom >"$TMP/garbage.bin" 2>/dev/null || dd if=/dev/urandom of="$TMP/garbage.bin" bs=3000 count=1 2>/dev/null
expect 1 "$Q" inspect "$TMP/garbage.bin"; has err "$TMP/garbage.bin: unrecognized format"
head -c 20000 "$GGUF" >"$TMP/trunc.gguf"
expect 1 "$Q" inspect "$TMP/trunc.gguf"; has err "$TMP/trunc.gguf: tensor 'token_embd.weight': data (131072 bytes at file offset 14176) runs past the end of the file (20000 bytes)"
expect 1 "$Q" convert "$TMP/trunc.gguf" "$TMP/out.gguf"; has err "trunc.gguf"
[ ! -e "$TMP/out.gguf" ] || fail "failed convert left $TMP/out.gguf"

# inspect: the numbers of ../shared/models/README.md
expect 0 "$Q" inspect "$GGUF"
has out "48 tensors, 292,800 parameters stored, 260,032 unique"
has out "output.weight duplicates token_embd.weight byte for byte"
has out "vocab 512, embedding 64, layers 5, heads 8 (kv 4, head_dim 8), ffn 172"
has out "blk.0.ffn_down.weight"
expect 0 "$Q" inspect --json "$GGUF"
has out '"architecture": "llama"'
has out '"n_params": 292800'
has out '"n_params_unique": 260032'
has out '"n_tensors": 48'
has out '"bytes_total": 1171200'
has out '"name": "blk.4.ffn_norm.weight"'
if command -v node >/dev/null 2>&1; then
    node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        if (j.tensors.length !== 48 || j.tensors[0].shape.join("x") !== "64x512" || j.tensors[0].format !== "f32" ||
            j.tensors[0].bytes !== 131072) process.exit(1);' "$TMP/out" || fail "inspect --json is not the documented JSON"
fi

# convert: GGUF -> GGUF is byte-identical; llama2.c -> GGUF; GGUF -> HF -> GGUF
expect 0 "$Q" convert -q "$GGUF" "$TMP/same.gguf"
cmp -s "$GGUF" "$TMP/same.gguf" || fail "GGUF -> GGUF is not byte-identical"
expect 0 "$Q" convert -q "$BIN" "$TMP/l2c.gguf"
expect 0 "$Q" inspect "$TMP/l2c.gguf"; has out "292,800 parameters stored, 260,032 unique"
expect 0 "$Q" convert -q "$GGUF" "$TMP/hf"
for f in config.json model.safetensors tokenizer.json; do [ -f "$TMP/hf/$f" ] || fail "HF output lacks $f"; done
expect 0 "$Q" convert -q "$TMP/hf" "$TMP/back.gguf"
expect 0 "$Q" inspect "$TMP/back.gguf"; has out "48 tensors, 292,800 parameters stored"
expect 0 "$Q" convert -q "$GGUF" "$TMP/f16.gguf" --outtype f16
expect 0 "$Q" inspect "$TMP/f16.gguf"; has out "f32: 11 tensors, 704 params; f16: 37 tensors, 292,096 params;"
# F16/BF16 HF checkpoints (norms included) -> GGUF keeping types: the 11 norms are widened to F32
# as llama.cpp needs (docs/formats.md §2.9), and GGUF -> HF narrows them back: same safetensors bytes
for t in f16 bf16; do
    expect 0 "$Q" convert -q "$GGUF" "$TMP/hf_$t" --to hf --outtype $t
    expect 0 "$Q" convert -q "$TMP/hf_$t" "$TMP/hf_$t.gguf"
    expect 0 "$Q" inspect "$TMP/hf_$t.gguf"; has out "f32: 11 tensors, 704 params; $t: 37 tensors, 292,096 params;"
    expect 0 "$Q" convert -q "$TMP/hf_$t.gguf" "$TMP/hf_$t-back" --to hf
    cmp -s "$TMP/hf_$t/model.safetensors" "$TMP/hf_$t-back/model.safetensors" || fail "HF $t -> GGUF -> HF changed model.safetensors"
done

# llama2.c without a tokenizer beside it: refused, then given explicitly
cp "$BIN" "$TMP/alone.bin"
expect 1 "$Q" convert "$TMP/alone.bin" "$TMP/alone.gguf"; has err "no tokenizer found (looked for tok512.bin and tokenizer.bin beside it)"
[ ! -e "$TMP/alone.gguf" ] || fail "refused convert left a file"
expect 0 "$Q" convert -q "$TMP/alone.bin" "$TMP/alone.gguf" --tokenizer "$SHARED/models/tok512.bin"

# a write that fails half-way (file size limit) leaves neither the output nor a temporary
mkdir "$TMP/lim"
( trap '' XFSZ; ulimit -f 200; exec "$Q" convert -q "$GGUF" "$TMP/lim/out.gguf" ) >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 1 ] || fail "convert under a 200 KiB file-size limit exited $rc (want 1)"
has err "out.gguf: write failed"
[ -z "$(ls -A "$TMP/lim")" ] || fail "failed write left: $(ls -A "$TMP/lim")"

if [ "$fails" -ne 0 ]; then echo "inspect_convert: $fails failed"; exit 1; fi
echo "inspect_convert: all passed"
