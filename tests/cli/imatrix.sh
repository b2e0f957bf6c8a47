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
# json EXPR: a python3 expression over j, the JSON on stdout
json() { if python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$tmp/out" "$1"; then
    pass=$((pass + 1)); else echo "FAIL json: $1"; fail=$((fail + 1)); fi; }

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
json "j['source_format'] == 'imatrix-gguf' and j['n_entries'] == 35 and j['chunk_count'] == 100 and j['chunk_size'] == 128"
json "j['datasets'] == ['ts-calib.txt'] and j['count_unit'] == 'tokens'"
json "[e['n_cols'] for e in j['entries'] if e['name'] == 'blk.0.ffn_down.weight'] == [172]"
json "all(e['n_experts'] == 1 and e['counts'] == [12800] for e in j['entries'])"
expect 0 "$q" inspect --json "$REF/imatrix-tiny256.dat"
json "j['source_format'] == 'imatrix-dat' and j['chunk_size'] is None and j['n_entries'] == 56"
json "all(e['n_cols'] is None and e['n_values'] == 256 and e['counts'] == [100] for e in j['entries'])"

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
