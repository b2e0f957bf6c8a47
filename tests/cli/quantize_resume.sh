#!/bin/bash
# (heavy under sanitizers: minutes of runs under ASan; the release run has it, and the fuzz
# targets and unit tests cover its parsers and code under the sanitizers)
# tests/cli/quantize_resume.sh QUANTA SHARED_DIR — `quanta quantize` staging at
# OUT.partial, --resumable and --resume, on stories260K and tiny256:
# an interrupted run (the documented test hook, a real SIGINT / SIGTERM at a
# known tensor, kill -9, a file-size limit) keeps OUT.partial + state only with
# --resumable; --resume (the printed command, any --threads) gives the bytes of
# an uninterrupted run (cmp); a resume with other options or another input is
# refused; a stale OUT.partial is removed with a message; a full disk says so;
# a second run for the same OUT is refused while the first holds OUT.partial.lock.
# No step depends on time: a signal is sent while the process is stopped at a
# known tensor (QUANTA_TEST_PAUSE_AFTER_TENSORS, docs/quantize.md).
source "$(dirname "$0")/lib/harness.sh"
source "$(dirname "$0")/lib/resume.sh"
q=$(realpath "$q")  # runs below change directory
shared=$(realpath "$shared")
stories="$shared/models/stories260K.gguf"
tiny="$shared/models/tiny256-random.gguf"
imx="$shared/reference/llamacpp-quantize/imatrix-tiny256.gguf"

# OUT is always "out.gguf" inside a fresh directory: the command line (OUT
# included) is recorded in the file, so every run of a case must name it alike.

# ---- usage ----------------------------------------------------------------------------------
expect "--help" 0 "" "$q" quantize --help
ok has out "--resumable"
ok has out "--resume"
ok sh -c "! grep -q 'not written by this build' '$tmp/out'"
expect "resume: dry run" 2 "writes nothing to resume" "$q" quantize "$tiny" "$tmp/x.gguf" --scheme q8_0 --dry-run --resume
# (compressed-tensors OUT directories: tests/cli/ct_resume.sh)
expect "resumable: stdout" 1 "need OUT to be a file" "$q" quantize "$tiny" - --scheme q8_0 --resumable -q
expect "resume: nothing to resume" 1 "nothing to resume" "$q" quantize "$tiny" "$tmp/x.gguf" --scheme q8_0 --resume -q
ok test ! -e "$tmp/x.gguf"

# ---- reference files: uninterrupted runs -----------------------------------------------------
declare -A args=(
    [s_q4km]="$stories --scheme q4_k_m"
    [t_iq4xs]="$tiny --scheme iq4_xs --imatrix $imx"
    [t_q8]="$tiny --scheme q8_0"
    [t_q4k]="$tiny --scheme q4_k_m"
)
for c in "${!args[@]}"; do
    mkdir -p "$tmp/ref_$c"
    run_in "$tmp/ref_$c" "$q" quantize ${args[$c]} out.gguf -q
    ok test -s "$tmp/ref_$c/out.gguf"
    ok test ! -e "$tmp/ref_$c/out.gguf.partial"
done

# ---- the test hook: stop after N tensors, resume (the printed command), cmp ------------------
for c in s_q4km t_iq4xs t_q8; do
    d="$tmp/hook_$c"
    mkdir "$d"
    QUANTA_TEST_STOP_AFTER_TENSORS=5 run_in "$d" "$q" quantize ${args[$c]} out.gguf --resumable --threads 1 -q 2>"$d.err"
    ok test $? = 1
    ok grep -q "to continue:" "$d.err"
    ok test ! -e "$d/out.gguf"
    ok test -s "$d/out.gguf.partial"
    ok test "$(state_int tensors_done "$d/out.gguf.partial.state")" = 5
    ok test "$(stat -c %s "$d/out.gguf.partial")" = "$(state_int bytes_done "$d/out.gguf.partial.state")"
    cmd=$(printed_resume "$d.err")
    ok test -n "$cmd"
    (cd "$d" && eval "$cmd --threads 2 --json=resumed.json") >"$d.out" 2>&1
    ok test $? = 0
    ok grep -q '"resumed_tensors": 5' "$d/resumed.json"
    ok cmp "$d/out.gguf" "$tmp/ref_$c/out.gguf"
    ok test ! -e "$d/out.gguf.partial"
    ok test ! -e "$d/out.gguf.partial.state"
    # the earlier tensors' errors come from the state file: every converted tensor is measured
    ok test "$(grep -c '"snr_db"' "$d/resumed.json")" -gt 5
done

# ---- interrupted twice, then resumed to the end ------------------------------------------------
d="$tmp/twice"
mkdir "$d"
QUANTA_TEST_STOP_AFTER_TENSORS=2 run_in "$d" "$q" quantize ${args[t_q4k]} out.gguf --resumable -q 2>/dev/null
ok test "$(state_int tensors_done "$d/out.gguf.partial.state")" = 2
QUANTA_TEST_STOP_AFTER_TENSORS=9 run_in "$d" "$q" quantize ${args[t_q4k]} out.gguf --resume -q 2>"$d.err"
ok test $? = 1
ok grep -q "kept out.gguf.partial (9 tensors complete)" "$d.err"
ok test "$(state_int tensors_done "$d/out.gguf.partial.state")" = 9
expect "resumed twice" 0 "" run_in "$d" "$q" quantize ${args[t_q4k]} out.gguf --resume -q
ok cmp "$d/out.gguf" "$tmp/ref_t_q4k/out.gguf"

# ---- resumes that must be refused ----------------------------------------------------------------
d="$tmp/refuse"
mkdir "$d"
QUANTA_TEST_STOP_AFTER_TENSORS=4 run_in "$d" "$q" quantize ${args[t_q8]} out.gguf --resumable -q 2>/dev/null
cp "$d/out.gguf.partial" "$tmp/partial.saved"
expect "other scheme" 1 "scheme was \"Q8_0\" in the interrupted run, \"Q4_0\" now" \
    run_in "$d" "$q" quantize "$tiny" --scheme q4_0 out.gguf --resume -q
expect "an extra --tensor-type" 1 "tensor-type was [] in the interrupted run" \
    run_in "$d" "$q" quantize ${args[t_q8]} --tensor-type 'ffn_down=q6_K' out.gguf --resume -q
expect "another option order (the recorded command line)" 1 "the command line was" \
    run_in "$d" "$q" quantize --scheme q8_0 "$tiny" out.gguf --resume -q
cp "$tiny" "$tmp/tiny-copy.gguf"
expect "another input" 1 "the input is not the interrupted run's" \
    run_in "$d" "$q" quantize "$tmp/tiny-copy.gguf" --scheme q8_0 out.gguf --resume -q
ok cmp "$d/out.gguf.partial" "$tmp/partial.saved"  # refusals touch nothing
ok test ! -e "$d/out.gguf"
# a partial that is not the state's run (its header differs) is refused too
printf 'XXXX' | dd of="$d/out.gguf.partial" bs=1 seek=100 conv=notrunc status=none
expect "foreign partial" 1 "header differs" run_in "$d" "$q" quantize ${args[t_q8]} out.gguf --resume -q
ok test ! -e "$d/out.gguf"
ok test -e "$d/out.gguf.partial"
# a state claiming more than the partial holds
cp "$tmp/partial.saved" "$d/out.gguf.partial"
truncate -s 1000 "$d/out.gguf.partial"
expect "short partial" 1 "fewer than the" run_in "$d" "$q" quantize ${args[t_q8]} out.gguf --resume -q
echo '{"quanta_quantize_state": 99}' >"$d/out.gguf.partial.state"
expect "not a state file" 1 "not a quanta quantize state file" run_in "$d" "$q" quantize ${args[t_q8]} out.gguf --resume -q

# ---- a stale partial is removed, with one line, by a run without --resume ---------------------
expect "stale partial" 0 "removed out.gguf.partial left by an interrupted run" \
    run_in "$d" "$q" quantize ${args[t_q8]} out.gguf -q
ok test "$(grep -c . "$tmp/err")" = 1
ok cmp "$d/out.gguf" "$tmp/ref_t_q8/out.gguf"
ok test ! -e "$d/out.gguf.partial"
ok test ! -e "$d/out.gguf.partial.state"

# ---- without --resumable an interruption leaves nothing ---------------------------------------
d="$tmp/plain"
mkdir "$d"
QUANTA_TEST_STOP_AFTER_TENSORS=3 run_in "$d" "$q" quantize ${args[t_q8]} out.gguf -q 2>"$d.err"
ok test $? = 1
ok grep -q "interrupted" "$d.err"
ok test -z "$(ls -A "$d")"

# ---- real signals at a known tensor (the process is stopped there, then signalled) -------------
for sig in INT TERM; do
    for mode in resumable plain; do
        d="$tmp/sig_${sig}_$mode"
        mkdir "$d"
        flag=$([ $mode = resumable ] && echo --resumable)
        (cd "$d" && QUANTA_TEST_PAUSE_AFTER_TENSORS=6 exec "$q" quantize ${args[t_iq4xs]} out.gguf $flag -q 2>"$d.err") &
        pid=$!
        ok wait_stopped $pid
        kill -$sig $pid
        kill -CONT $pid
        wait $pid
        rc=$?
        [ $sig = INT ] && want=130 || want=143
        ok test $rc = $want
        ok test ! -e "$d/out.gguf"
        if [ $mode = resumable ]; then
            ok test "$(state_int tensors_done "$d/out.gguf.partial.state")" = 6
            expect "resume after SIG$sig" 0 "" run_in "$d" "$q" quantize ${args[t_iq4xs]} out.gguf --resume -q
            ok cmp "$d/out.gguf" "$tmp/ref_t_iq4xs/out.gguf"
        else
            ok test -z "$(ls -A "$d")"
        fi
    done
done

# ---- kill -9: OUT.partial and the state stay by nature; a tensor begun after the last
#      state update is redone (here: garbage appended beyond the state's byte count) -----------
d="$tmp/kill9"
mkdir "$d"
(cd "$d" && QUANTA_TEST_PAUSE_AFTER_TENSORS=7 exec "$q" quantize ${args[s_q4km]} out.gguf --resumable -q 2>/dev/null) &
pid=$!
ok wait_stopped $pid
kill -KILL $pid
{ wait $pid; } 2>/dev/null
ok test "$(state_int tensors_done "$d/out.gguf.partial.state")" = 7
head -c 5000 /dev/urandom >>"$d/out.gguf.partial"
expect "resume after kill -9" 0 "" run_in "$d" "$q" quantize ${args[s_q4km]} out.gguf --resume -q
ok cmp "$d/out.gguf" "$tmp/ref_s_q4km/out.gguf"

# ---- two runs for one OUT: the second is refused while the first holds OUT.partial.lock --------
d="$tmp/two_runs"
mkdir "$d"
(cd "$d" && QUANTA_TEST_PAUSE_AFTER_TENSORS=3 exec "$q" quantize ${args[t_q8]} out.gguf --resumable -q 2>"$d.err") &
pid=$!
ok wait_stopped $pid
expect "second run, same OUT" 1 "another quanta quantize is writing the same output" \
    run_in "$d" "$q" quantize ${args[t_q8]} out.gguf -q
expect "second run --resume, same OUT" 1 "out.gguf.partial.lock is locked" \
    run_in "$d" "$q" quantize ${args[t_q8]} out.gguf --resume -q
ok test "$(state_int tensors_done "$d/out.gguf.partial.state")" = 3  # the first run's staging is untouched
kill -CONT $pid
wait $pid
ok test $? = 0
ok cmp "$d/out.gguf" "$tmp/ref_t_q8/out.gguf"
ok test "$(ls -A "$d")" = out.gguf  # the lock file goes with the run
expect "after the first run, a run is allowed again" 0 "" run_in "$d" "$q" quantize ${args[t_q8]} out.gguf --force -q

# ---- a file-size limit (ulimit -f; SIGXFSZ is ignored, write fails with EFBIG) -----------------
d="$tmp/fsize"
mkdir "$d"
(cd "$d" && ulimit -f 1024 && exec "$q" quantize ${args[t_q8]} out.gguf -q) 2>"$d.err"
ok test $? = 1
ok grep -q "out.gguf.partial: write failed after [0-9]* bytes: File too large (a file-size limit" "$d.err"
ok test -z "$(ls -A "$d")"
(cd "$d" && ulimit -f 1024 && exec "$q" quantize ${args[t_q8]} out.gguf --resumable -q) 2>"$d.err"
ok test $? = 1
ok grep -q "to continue:" "$d.err"
expect "resume after the limit" 0 "" run_in "$d" "$q" quantize ${args[t_q8]} out.gguf --resume -q
ok cmp "$d/out.gguf" "$tmp/ref_t_q8/out.gguf"

# ---- a full disk names the problem ----------------------------------------------------------
if [ -w /dev/full ]; then
    expect "full disk" 1 "the file system is full" "$q" quantize "$tiny" /dev/full --scheme q8_0 -q
else
    echo "note: /dev/full is missing; full-disk message not checked"
fi

echo "quantize_resume: $pass passed, $fail failed"
[ $fail -eq 0 ]
