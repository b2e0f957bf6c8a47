#!/usr/bin/env bash
# CLI tests for `quanta inspect` on importance matrices: llama-imatrix's GGUF
# and legacy .dat files of ../shared/reference/llamacpp-quantize (entries,
# chunks, datasets, columns and counts, text and --json), and one clear error
# (file and field, exit 1) for a truncated or damaged file.
# usage: imatrix.sh QUANTA SHARED_DIR
set -u
Q=$1
SHARED=$2
REF=$SHARED/reference/llamacpp-quantize
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect() {
    local want=$1; shift
    "$@" >"$TMP/out" 2>"$TMP/err"
    local got=$?
    [ "$got" -eq "$want" ] || fail "exit $got (want $want): $* -- $(head -c 300 "$TMP/err")"
}
has() { grep -qF -- "$2" "$TMP/$1" || fail "$1 lacks '$2': $(head -c 300 "$TMP/$1")"; }
# json EXPR: a python3 expression over j, the JSON on stdout
json() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$TMP/out" "$1" || fail "json: $1"; }

expect 0 "$Q" inspect "$REF/imatrix-tiny256.gguf"
has out "importance matrix, llama.cpp GGUF"
has out 'datasets      "ts-calib.txt"'
has out "chunks        100 of 128 tokens"
has out "entries       56"
grep -qE '^  blk\.7\.ffn_down\.weight +256 +256 +1  12800$' "$TMP/out" || fail "tiny256 ffn_down row: $(grep ffn_down "$TMP/out" | head -1)"

expect 0 "$Q" inspect "$REF/imatrix-stories260K.dat"
has out "llama.cpp legacy .dat"
has out "chunks        100 (chunk size not recorded in this format)"
has out "entries       35"
grep -qE '^  blk\.4\.ffn_down\.weight +172 +- +-  100$' "$TMP/out" || fail "stories260K .dat ffn_down row"

expect 0 "$Q" inspect --json "$REF/imatrix-stories260K.gguf"
json "j['source_format'] == 'imatrix-gguf' and j['n_entries'] == 35 and j['chunk_count'] == 100 and j['chunk_size'] == 128"
json "j['datasets'] == ['ts-calib.txt'] and j['count_unit'] == 'tokens'"
json "[e['n_cols'] for e in j['entries'] if e['name'] == 'blk.0.ffn_down.weight'] == [172]"
json "all(e['n_experts'] == 1 and e['counts'] == [12800] for e in j['entries'])"
expect 0 "$Q" inspect --json "$REF/imatrix-tiny256.dat"
json "j['source_format'] == 'imatrix-dat' and j['chunk_size'] is None and j['n_entries'] == 56"
json "all(e['n_cols'] is None and e['n_values'] == 256 and e['counts'] == [100] for e in j['entries'])"

# a model GGUF is still a model
expect 0 "$Q" inspect "$SHARED/models/tiny256-random.gguf"; has out "architecture  llama"

# damaged files: exit 1, file and field named
head -c 5000 "$REF/imatrix-tiny256.dat" >"$TMP/trunc.dat"
expect 1 "$Q" inspect "$TMP/trunc.dat"; has err "quanta: error: $TMP/trunc.dat: entry 4 ('blk.0.ffn_down.weight'): values: truncated (needs 1024 bytes at offset 4262"
head -c 40000 "$REF/imatrix-tiny256.gguf" >"$TMP/trunc.gguf"
expect 1 "$Q" inspect "$TMP/trunc.gguf"; has err "$TMP/trunc.gguf: "
printf '\0\0\0\0' >"$TMP/empty.dat"
expect 1 "$Q" inspect "$TMP/empty.dat"; has err "$TMP/empty.dat: entry count: 0"

[ "$fails" -eq 0 ] && echo "imatrix.sh: all passed" || echo "imatrix.sh: $fails failed"
[ "$fails" -eq 0 ]
