#!/bin/bash
# (heavy under sanitizers: dozens of quantize runs; the release run has it, and the unit tests
# and fuzz targets cover the safetensors writer and the JSON parsing under the sanitizers)
# tests/cli/ct_resume.sh QUANTA SHARED_DIR — `quanta quantize --resumable / --resume` onto a
# compressed-tensors directory (OUT.partial/ + OUT.partial.state), for every RTN scheme:
# an interrupted run (the test hook, a real SIGINT / SIGTERM at a known stored tensor,
# kill -9) keeps OUT.partial and its state only with --resumable; --resume (the printed
# command, another --threads) gives a directory whose every file (shards, index,
# config.json, recipe.yaml, tokenizer files) has the sha256 of an uninterrupted run's;
# sharded outputs (--max-shard-size) resume inside a shard and across shards; a resume
# with other options or another input is refused, naming what changed, and touches
# nothing; a stale OUT.partial is removed with a message. No step depends on time: a
# signal is sent while the process is stopped at a known tensor
# (QUANTA_TEST_PAUSE_AFTER_TENSORS, docs/quantize.md).
source "$(dirname "$0")/lib/harness.sh"
source "$(dirname "$0")/lib/resume.sh"
q=$(realpath "$q")  # runs below change directory
shared=$(realpath "$shared")
stories="$shared/models/stories260K.gguf"
tiny="$shared/models/tiny256-random.gguf"
text="$shared/data/tinystories-valid-first1000.txt"
head -n 400 "$text" >"$tmp/calib.txt"

# OUT is always "out" inside a fresh directory: the command line (OUT included) is
# recorded in config.json, so every run of a case must name it alike.
# name and sha256 of every file of a directory, sorted: what "byte-identical" compares
listing() { (cd "$1" && find . -type f | LC_ALL=C sort | xargs sha256sum); }
same_dir() { [ "$(listing "$1")" = "$(listing "$2")" ] && [ -n "$(listing "$1")" ]; }

# ---- usage ----------------------------------------------------------------------------------
expect "--help" 0 "" "$q" quantize --help
ok has out "--max-shard-size"
expect "shard size for GGUF" 2 "applies to compressed-tensors schemes only" \
    "$q" quantize "$tiny" "$tmp/x.gguf" --scheme q8_0 --max-shard-size 1MB
expect "shard size not a size" 2 "expected a positive number of bytes" \
    "$q" quantize "$tiny" "$tmp/ct" --scheme w4a16 --max-shard-size 12XB
expect "resume: nothing to resume" 1 "nothing to resume" "$q" quantize "$tiny" "$tmp/ct" --scheme w4a16 --resume -q
ok test ! -e "$tmp/ct"
ok test ! -e "$tmp/ct.partial"

# ---- reference directories: uninterrupted runs ------------------------------------------------
declare -A args=(
    [w4a16]="$tiny --scheme w4a16"
    [w4a16asym]="$tiny --scheme w4a16-asym --max-shard-size 150KB"
    [w8a16]="$tiny --scheme w8a16"
    [w8a8]="$tiny --scheme w8a8-int8 --max-shard-size 200KB"
    [fp8dyn]="$stories --scheme fp8-dynamic"
    [fp8static]="$tiny --scheme fp8-static --calib $tmp/calib.txt --nsamples 4 --seqlen 64"
    [fp8block]="$tiny --scheme fp8-block --max-shard-size 100KB"
    [nvfp4]="$tiny --scheme nvfp4"
    [mxfp4]="$tiny --scheme mxfp4 --keep blk.0.ffn_down.weight"
)
for c in "${!args[@]}"; do
    mkdir -p "$tmp/ref_$c"
    expect "reference $c" 0 "" run_in "$tmp/ref_$c" "$q" quantize ${args[$c]} out -q
    ok test -s "$tmp/ref_$c/out/config.json"
    ok test ! -e "$tmp/ref_$c/out.partial"
done
for c in w4a16asym w8a8 fp8block; do  # the sharded cases are sharded
    ok test -s "$tmp/ref_$c/out/model.safetensors.index.json"
    ok test "$(ls "$tmp/ref_$c/out" | grep -c '^model-000[0-9][0-9]-of-000[0-9][0-9].safetensors$')" -ge 3
done

# ---- every scheme: stop after N stored tensors, resume with the printed command, compare -------
for c in "${!args[@]}"; do
    d="$tmp/hook_$c"
    mkdir "$d"
    QUANTA_TEST_STOP_AFTER_TENSORS=7 run_in "$d" "$q" quantize ${args[$c]} out --resumable --threads 1 -q 2>"$d.err"
    ok test $? = 1
    ok grep -q "kept out.partial (7 of [0-9]* stored tensors complete) and its state file; to continue:" "$d.err"
    ok test ! -e "$d/out"
    ok test -d "$d/out.partial"
    ok test "$(state_int tensors_done "$d/out.partial.state")" = 7
    cmd=$(printed_resume "$d.err")
    ok test -n "$cmd"
    (cd "$d" && eval "$cmd --threads 2 --json=resumed.json") >"$d.out" 2>&1
    ok test $? = 0
    ok grep -q '"resumed_tensors": 7' "$d/resumed.json"
    rm "$d/resumed.json"
    ok same_dir "$d/out" "$tmp/ref_$c/out" || { echo "  case $c"; diff <(listing "$d/out") <(listing "$tmp/ref_$c/out"); }
    ok test ! -e "$d/out.partial"
    ok test ! -e "$d/out.partial.state"
done

# ---- a sharded run stopped three times: inside the first shard, at a later one, at the end -------
c=fp8block
d="$tmp/thrice"
mkdir "$d"
QUANTA_TEST_STOP_AFTER_TENSORS=2 run_in "$d" "$q" quantize ${args[$c]} out --resumable -q 2>/dev/null
n=$(state_int stored_tensors "$d/out.partial.state")
ok test "$n" -gt 10
ok test "$(state_int tensors_done "$d/out.partial.state")" = 2
QUANTA_TEST_STOP_AFTER_TENSORS=$((n / 2 + 3)) run_in "$d" "$q" quantize ${args[$c]} out --resume -q 2>"$d.err"
ok test $? = 1
ok test "$(state_int tensors_done "$d/out.partial.state")" = $((n / 2 + 3))
ok test "$(state_int shards_done "$d/out.partial.state")" -ge 1
QUANTA_TEST_STOP_AFTER_TENSORS=$n run_in "$d" "$q" quantize ${args[$c]} out --resume -q 2>/dev/null
ok test "$(state_int tensors_done "$d/out.partial.state")" = $n  # every tensor written, the text files not yet
expect "resumed three times" 0 "resumed: $n of $n stored tensors were already complete in out.partial" \
    run_in "$d" "$q" quantize ${args[$c]} out --resume
ok same_dir "$d/out" "$tmp/ref_$c/out"

# ---- resumes that must be refused, touching nothing ----------------------------------------------
d="$tmp/refuse"
mkdir "$d"
QUANTA_TEST_STOP_AFTER_TENSORS=9 run_in "$d" "$q" quantize ${args[w8a8]} out --resumable -q 2>/dev/null
before=$(listing "$d/out.partial"; sha256sum <"$d/out.partial.state")
expect "other scheme" 1 "scheme was \"w8a8-int8\" in the interrupted run, \"w8a16\" now" \
    run_in "$d" "$q" quantize "$tiny" --scheme w8a16 --max-shard-size 200KB out --resume -q
expect "another --keep" 1 "keep was [] in the interrupted run" \
    run_in "$d" "$q" quantize ${args[w8a8]} --keep 'ffn_down' out --resume -q
expect "another shard size" 1 "max-shard-size was 200000 in the interrupted run, 300000 now" \
    run_in "$d" "$q" quantize "$tiny" --scheme w8a8-int8 --max-shard-size 300KB out --resume -q
expect "another option order (the recorded command line)" 1 "the command line was" \
    run_in "$d" "$q" quantize --scheme w8a8-int8 "$tiny" --max-shard-size 200KB out --resume -q
cp "$tiny" "$tmp/tiny-copy.gguf"
expect "another input" 1 "the input is not the interrupted run's" \
    run_in "$d" "$q" quantize "$tmp/tiny-copy.gguf" --scheme w8a8-int8 --max-shard-size 200KB out --resume -q
ok test "$before" = "$(listing "$d/out.partial"; sha256sum <"$d/out.partial.state")"
ok test ! -e "$d/out"
# a staging file that is not this run's (its header differs) is refused
part=$(ls "$d/out.partial/"*.partial | head -1)
cp "$part" "$tmp/part.saved"
printf 'XXXX' | dd of="$part" bs=1 seek=20 conv=notrunc status=none
expect "foreign partial" 1 "header differs" run_in "$d" "$q" quantize ${args[w8a8]} out --resume -q
cp "$tmp/part.saved" "$part"
cp "$d/out.partial.state" "$tmp/state.saved"
echo '{"quanta_quantize_state": 99}' >"$d/out.partial.state"
expect "not a state file" 1 "not the state file of a compressed-tensors" run_in "$d" "$q" quantize ${args[w8a8]} out --resume -q
cp "$tmp/state.saved" "$d/out.partial.state"
expect "resumed after the refusals" 0 "" run_in "$d" "$q" quantize ${args[w8a8]} out --resume -q
ok same_dir "$d/out" "$tmp/ref_w8a8/out"

# ---- a stale OUT.partial is removed, with one line, by a run without --resume ------------------
d="$tmp/stale"
mkdir "$d"
QUANTA_TEST_STOP_AFTER_TENSORS=4 run_in "$d" "$q" quantize ${args[w4a16]} out --resumable -q 2>/dev/null
expect "stale partial" 0 "removed out.partial left by an interrupted run" run_in "$d" "$q" quantize ${args[w4a16]} out -q
ok test "$(grep -c . "$tmp/err")" = 1
ok same_dir "$d/out" "$tmp/ref_w4a16/out"
ok test ! -e "$d/out.partial"
ok test ! -e "$d/out.partial.state"
# a fresh --resumable run removes one too
rm -rf "$d/out"
QUANTA_TEST_STOP_AFTER_TENSORS=4 run_in "$d" "$q" quantize ${args[w4a16]} out --resumable -q 2>/dev/null
expect "stale partial, --resumable" 0 "removed out.partial" run_in "$d" "$q" quantize ${args[w4a16]} out --resumable -q
ok same_dir "$d/out" "$tmp/ref_w4a16/out"
ok test ! -e "$d/out.partial.state"

# ---- without --resumable an interruption leaves nothing -----------------------------------------
d="$tmp/plain"
mkdir "$d"
QUANTA_TEST_STOP_AFTER_TENSORS=3 run_in "$d" "$q" quantize ${args[w8a16]} out -q 2>"$d.err"
ok test $? = 1
ok test -z "$(ls -A "$d")"

# ---- real signals at a known tensor (the process is stopped there, then signalled) ---------------
for sig in INT TERM; do
    for mode in resumable plain; do
        d="$tmp/sig_${sig}_$mode"
        mkdir "$d"
        flag=$([ $mode = resumable ] && echo --resumable)
        (cd "$d" && QUANTA_TEST_PAUSE_AFTER_TENSORS=11 exec "$q" quantize ${args[w4a16asym]} out $flag -q 2>"$d.err") &
        pid=$!
        ok wait_stopped $pid
        kill -$sig $pid
        kill -CONT $pid
        wait $pid
        rc=$?
        [ $sig = INT ] && want=130 || want=143
        ok test $rc = $want
        ok test ! -e "$d/out"
        if [ $mode = resumable ]; then
            ok test "$(state_int tensors_done "$d/out.partial.state")" = 11
            ok grep -q "to continue:" "$d.err"
            expect "resume after SIG$sig" 0 "" run_in "$d" "$q" quantize ${args[w4a16asym]} out --resume -q
            ok same_dir "$d/out" "$tmp/ref_w4a16asym/out"
        else
            ok test -z "$(ls -A "$d")"
        fi
    done
done

# ---- kill -9: OUT.partial and the state stay by nature; bytes written after the last state
#      update are cut, and a file a kill left in OUT.partial is not published ------------------
d="$tmp/kill9"
mkdir "$d"
(cd "$d" && QUANTA_TEST_PAUSE_AFTER_TENSORS=13 exec "$q" quantize ${args[nvfp4]} out --resumable -q 2>/dev/null) &
pid=$!
ok wait_stopped $pid
kill -KILL $pid
{ wait $pid; } 2>/dev/null
ok test "$(state_int tensors_done "$d/out.partial.state")" = 13
head -c 5000 /dev/urandom >>"$(ls "$d/out.partial/"*.partial)"
echo '{}' >"$d/out.partial/.config.json.tmp"
expect "resume after kill -9" 0 "" run_in "$d" "$q" quantize ${args[nvfp4]} out --resume -q
ok same_dir "$d/out" "$tmp/ref_nvfp4/out"

echo "ct_resume: $pass passed, $fail failed"
[ $fail -eq 0 ]
