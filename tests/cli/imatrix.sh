#!/usr/bin/env bash
# CLI tests for `quanta inspect` on importance matrices: llama-imatrix's GGUF
# and legacy .dat files of ../shared/reference/llamacpp-quantize (entries,
# chunks, datasets, columns and counts, text and --json), and one clear error
# (file and field, exit 1) for a truncated or damaged file.
# usage: imatrix.sh QUANTA SHARED_DIR
. "$(dirname "$0")/lib/harness.sh"
REF=$shared/reference/llamacpp-quantize
# expect CODE CMD...: check with a generated name; output in $tmp/out, $tmp/err
expect() { local want=$1; shift; check "$* -> $want" "$want" "$@"; }
has() { if grep -qF -- "$2" "$tmp/$1"; then pass=$((pass + 1)); else
    echo "FAIL $1 lacks '$2': $(head -c 300 "$tmp/$1")"; fail=$((fail + 1)); fi; }
row() { if grep -qE -- "$1" "$tmp/out"; then pass=$((pass + 1)); else
    echo "FAIL no line matches '$1'"; fail=$((fail + 1)); fi; }
# JSON checks without a JSON tool: the output with all blanks removed must
# contain STRING (jsonhas), or contain it exactly N times (jsoncount N STRING).
flat() { tr -d ' \n\t' <"$tmp/out"; }
jsonhas() { if flat | grep -qF -- "$1"; then pass=$((pass + 1)); else echo "FAIL json lacks $1"; fail=$((fail + 1)); fi; }
jsoncount() { local n
    n=$(flat | grep -oF -- "$2" | wc -l)
    if [ "$n" = "$1" ]; then pass=$((pass + 1)); else echo "FAIL json has $2 $n times, want $1"; fail=$((fail + 1)); fi; }

expect 0 "$q" inspect "$REF/imatrix-tiny256.gguf"
has out "importance matrix, llama.cpp GGUF"
has out 'datasets      "ts-calib.txt"'
has out "chunks        100 of 128 tokens"
has out "entries       56"
row '^  blk\.7\.ffn_down\.weight +256 +256 +1  12800$'

expect 0 "$q" inspect "$REF/imatrix-stories260K.dat"
has out "llama.cpp legacy .dat"
has out "chunks        100 (chunk size not recorded in this format)"
has out "entries       35"
row '^  blk\.4\.ffn_down\.weight +172 +- +-  100$'

expect 0 "$q" inspect --json "$REF/imatrix-stories260K.gguf"
jsonhas '"source_format":"imatrix-gguf"'; jsonhas '"n_entries":35,'; jsonhas '"chunk_count":100,'
jsonhas '"chunk_size":128,'; jsonhas '"datasets":["ts-calib.txt"]'; jsonhas '"count_unit":"tokens"'
jsonhas '"name":"blk.0.ffn_down.weight","n_values":172,"n_cols":172,'
jsoncount 35 '"name":'; jsoncount 35 '"n_experts":1,"counts":[12800]}'
expect 0 "$q" inspect --json "$REF/imatrix-tiny256.dat"
jsonhas '"source_format":"imatrix-dat"'; jsonhas '"chunk_size":null,'; jsonhas '"n_entries":56,'
jsoncount 56 '"name":'; jsoncount 56 '"n_values":256,"n_cols":null,"n_experts":null,"counts":[100]}'

# a model GGUF is still a model
expect 0 "$q" inspect "$shared/models/tiny256-random.gguf"; has out "architecture  llama"

# damaged files: exit 1, file and field named
head -c 5000 "$REF/imatrix-tiny256.dat" >"$tmp/trunc.dat"
expect 1 "$q" inspect "$tmp/trunc.dat"; has err "quanta: error: $tmp/trunc.dat: entry 4 ('blk.0.ffn_down.weight'): values: truncated (needs 1024 bytes at offset 4262"
head -c 40000 "$REF/imatrix-tiny256.gguf" >"$tmp/trunc.gguf"
expect 1 "$q" inspect "$tmp/trunc.gguf"; has err "$tmp/trunc.gguf: "
printf '\0\0\0\0' >"$tmp/empty.dat"
expect 1 "$q" inspect "$tmp/empty.dat"; has err "$tmp/empty.dat: entry count: 0"

echo "imatrix: $pass passed, $fail failed"
[ $fail -eq 0 ]
