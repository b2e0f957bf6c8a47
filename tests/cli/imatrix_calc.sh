#!/usr/bin/env bash
# (heavy under sanitizers: minutes of calibration passes; the release run has it, and the unit tests
# test_imatrix_calc / test_quantize_calib run the same code under ASan)
# CLI tests for `quanta imatrix` (computing an importance matrix): options,
# bad inputs (exit 2 for usage, 1 with one message for bad files), the output
# rule (atomic, nothing left on failure or Ctrl-C), byte-identical output at 1
# and 2 threads, and llama-imatrix's file layout: with the dataset named as
# llama-imatrix's run named it, the header and metadata equal its file byte
# for byte (the values are checked in tests/golden/test_imatrix_llamacpp.c).
# usage: imatrix_calc.sh QUANTA SHARED_DIR
. "$(dirname "$0")/lib/harness.sh"
model=$shared/models/stories260K.gguf
REF=$shared/reference/llamacpp-quantize
expect() { local want=$1; shift; check "$* -> $want" "$want" "$@"; }
has() { if grep -qF -- "$2" "$tmp/$1"; then pass=$((pass + 1)); else
    echo "FAIL $1 lacks '$2': $(head -c 300 "$tmp/$1")"; fail=$((fail + 1)); fi; }
ok() { if "$@"; then pass=$((pass + 1)); else echo "FAIL: $*"; fail=$((fail + 1)); fi; }
# the calibration slice of the reference README, under the name its run used
tail -n +4331 "$shared/data/tinystories-valid-first1000.txt" >"$tmp/ts-calib.txt"
cal=ts-calib.txt
cd "$tmp" || exit 1

expect 0 "$q" imatrix --help
has out "--process-output"; has out "--chunks"; has out "--json"; has out "-q"
expect 2 "$q" imatrix -f $cal -o a.gguf
has err "missing -m MODEL"
expect 2 "$q" imatrix -m "$model" -o a.gguf
has err "missing --calib TEXT"
expect 2 "$q" imatrix -m "$model" -f $cal --chunks 0
expect 2 "$q" imatrix -m "$model" -f $cal --chunks x
expect 2 "$q" imatrix -m "$model" -f $cal -c 0
expect 2 "$q" imatrix -m "$model" -f $cal -o -
expect 2 "$q" imatrix -m "$model" -f $cal --bogus
has err "unknown option"
expect 1 "$q" imatrix -m "$model" -f missing.txt -o a.gguf
has err "missing.txt"
expect 1 "$q" imatrix -m missing.gguf -f $cal -o a.gguf
has err "missing.gguf"
# too little text: no window fits; llama-imatrix needs 2 chunks
printf 'Once upon a time.\n' >short.txt
expect 1 "$q" imatrix -m "$model" -f short.txt -c 128 -o a.gguf
has err "no window of 128 fits"
expect 1 "$q" imatrix -m "$model" -f short.txt -c 4 -o a.gguf
has err "needs at least 8"
ok test ! -e a.gguf
expect 1 "$q" imatrix -m "$model" --calib $cal --seqlen 128 --nsamples 100000 -o a.gguf
has err "100000 samples asked for"
ok test ! -e a.gguf
expect 2 "$q" imatrix -m "$model" --calib $cal --seed -1
expect 2 "$q" imatrix -m "$model" --calib $cal --nsamples 0
expect 2 "$q" imatrix -m "$model" --calib
# an output in a directory that does not exist
expect 1 "$q" imatrix -m "$model" -f $cal -c 64 --chunks 2 -o no/such/dir/a.gguf
ok test ! -e no

# the reference run's command: same layout and metadata as llama-imatrix's file
expect 0 "$q" imatrix -m "$model" -f $cal -c 128 --chunks 100 -t 2 -o imx2.gguf -q
has out "35 entries from 100 chunks of 128 tokens (12800 tokens)"
ok test "$(stat -c %s imx2.gguf)" = "$(stat -c %s "$REF/imatrix-stories260K.gguf")"
ok cmp -n 4672 imx2.gguf "$REF/imatrix-stories260K.gguf"
# deterministic at any thread count
expect 0 "$q" imatrix -m "$model" -f $cal -c 128 --chunks 100 -t 1 -o imx1.gguf --json
has out '"chunks": 100'; has out '"chunk_size": 128'; has out '"tokens": 12800'; has out '"entries": 35'
ok cmp imx1.gguf imx2.gguf
# quanta reads it back
expect 0 "$q" inspect imx1.gguf
has out "100 of 128 tokens"
# --json=FILE: summary in FILE, the line on stdout
expect 0 "$q" imatrix -m "$model" -f $cal -c 64 --chunks 2 -o j.gguf --json=sum.json -q
ok grep -qF '"entries": 35' sum.json
has out "35 entries from 2 chunks of 64 tokens"
# --calib/--nsamples/--seqlen: the options every calibrating verb shares, llama-imatrix's as synonyms
expect 0 "$q" imatrix -m "$model" --calib $cal --seqlen 64 --nsamples 2 -o cal.gguf -q
ok cmp cal.gguf j.gguf
# JSONL {"text": ...} is the same text (a JSONL copy under the same name: same dataset string)
cp $cal plain.txt
{ printf '{"text": "'; sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' plain.txt | awk '{printf "%s\\n", $0}'; printf '"}\n'; } >$cal
ok test "$(head -c 9 $cal)" = '{"text": '
expect 0 "$q" imatrix -m "$model" --calib $cal --seqlen 64 --nsamples 2 -o cal-jsonl.gguf -q
ok cmp cal-jsonl.gguf j.gguf
cp plain.txt $cal
printf '{"messages": [{"role": "user", "content": "hi"}]}\n' >chat.jsonl
expect 1 "$q" imatrix -m "$model" --calib chat.jsonl -o chat.gguf
has err "chat template"
printf '{"text": "a"}\nnot json\n' >bad.jsonl
expect 1 "$q" imatrix -m "$model" --calib bad.jsonl -o bad.gguf
has err "bad.jsonl: line 2"
# --seed S > 0 draws other windows: another matrix, the same one every time
expect 0 "$q" imatrix -m "$model" --calib $cal --seqlen 64 --nsamples 2 --seed 7 -o s7a.gguf -q
expect 0 "$q" imatrix -m "$model" --calib $cal --seqlen 64 --nsamples 2 --seed 7 -o s7b.gguf -q
ok cmp s7a.gguf s7b.gguf
ok test "$(cmp s7a.gguf j.gguf >/dev/null 2>&1; echo $?)" = 1
# --process-output: stories260K has its own output.weight; tiny256's is tied
expect 0 "$q" imatrix -m "$model" -f $cal -c 64 --chunks 2 -o po.gguf --process-output -q
has out "36 entries"
expect 0 "$q" inspect po.gguf
has out "output.weight"
expect 0 "$q" imatrix -m "$shared/models/tiny256-random.gguf" -f $cal -c 64 --chunks 2 -o po2.gguf --process-output -q
has out "56 entries"
# a scaled KV cache cannot run layer by layer: one message
expect 1 "$q" imatrix -m "$model" -f $cal -c 64 --chunks 2 -o kv.gguf --kv-dtype fp8
has err "fp8"
ok test ! -e kv.gguf

# Ctrl-C: no file, no temporary left
"$q" imatrix -m "$shared/models/tiny256-random.gguf" -f $cal -c 128 -o int.gguf -q >/dev/null 2>"$tmp/err" &
pid=$!
sleep 1
kill -INT $pid
wait $pid
rc=$?
ok test "$rc" -ne 0
ok test ! -e int.gguf
ok test -z "$(ls -A | grep -F int.gguf)"

echo "imatrix_calc.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
