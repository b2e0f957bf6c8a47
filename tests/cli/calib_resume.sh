#!/bin/bash
# (heavy under sanitizers: minutes of runs under ASan; the release run has it, and the fuzz
# targets and unit tests cover its parsers and code under the sanitizers)
# tests/cli/calib_resume.sh QUANTA SHARED_DIR — `--resumable / --resume` for the calibrated
# runs gptq_resume.sh does not cover (docs/gptq.md "--resume", docs/awq.md): GPTQ, AWQ and
# SmoothQuant+GPTQ onto compressed-tensors schemes (the codes, the f32 values the engine ran
# on and the smoothed norms kept in OUT.partial.layers), and AWQ / AWQ+GPTQ onto GGUF (the
# smoothed norms kept with the layer's tensors). Each is stopped after its second layer
# (QUANTA_TEST_STOP_AFTER_LAYERS) or in its final write (QUANTA_TEST_STOP_AFTER_TENSORS),
# resumed with the printed command at another thread count, and compared with an
# uninterrupted run file by file (sha256 of every file); other options are refused, and a
# run without --resumable leaves nothing behind.
source "$(dirname "$0")/lib/harness.sh"
source "$(dirname "$0")/lib/resume.sh"
stories="$shared/models/stories260K.gguf"
text="$shared/data/tinystories-valid-first1000.txt"
tail -n +4331 "$text" >"$tmp/calib.txt" # the calibration slice
listing() { (cd "$1" && find . -type f | LC_ALL=C sort | xargs sha256sum); }
same() { if [ -d "$1" ]; then [ "$(listing "$1")" = "$(listing "$2")" ] && [ -n "$(listing "$1")" ]; else cmp "$1" "$2"; fi; }

# case NAME HOOK OUT options...: uninterrupted (1 thread) in NAME.a; stopped by HOOK in NAME.b,
# resumed there with the printed command (2 threads, its messages in resumed.err); the two outputs compared
case_() {
    local name="$1" hook="$2" out="$3"
    shift 3
    local a="$tmp/$name.a" b="$tmp/$name.b"
    mkdir -p "$a" "$b" && cp "$tmp/calib.txt" "$a/" && cp "$tmp/calib.txt" "$b/"
    local cmd=("$q" quantize "${model:-$stories}" "$out" --calib calib.txt --nsamples 8 --seqlen 128 "$@")
    check "$name: uninterrupted" 0 run_in "$a" "${cmd[@]}" --threads 1 -q
    (cd "$b" && env "$hook" "${cmd[@]}" --threads 1 --resumable) >"$tmp/$name.err" 2>&1
    ok test $? = 1
    ok grep -q "to continue:" "$tmp/$name.err"
    ok test -f "$b/$out.partial.layers.state"
    local resume
    resume=$(printed_resume "$tmp/$name.err")
    check "$name: resumed" 0 bash -c "cd '$b' && $resume --threads 2"
    cp "$tmp/err" "$tmp/resumed.err"
    ok same "$a/$out" "$b/$out"
    ok test ! -e "$b/$out.partial.layers" -a ! -e "$b/$out.partial.layers.state" -a ! -e "$b/$out.partial"
}

case_ gptq-w4a16 QUANTA_TEST_STOP_AFTER_LAYERS=2 w --scheme w4a16 --group-size 64 --algo gptq
ok grep -q "resumed: layers 1-2 from the interrupted run" "$tmp/resumed.err"
ok grep -q "35 linears by GPTQ" "$tmp/resumed.err" # the report counts the whole run
# tiny256-random's 256-wide rows in groups of 128: the live layers run on the bound 4-bit rows, the
# replayed ones on their f32 values, both through the calibration's sgemm path (lib/engine/matmul_blas.c)
model="$shared/models/tiny256-random.gguf" case_ gptq-w4a16-g128 QUANTA_TEST_STOP_AFTER_LAYERS=2 w --scheme w4a16 --algo gptq
case_ gptq-w4a16-write QUANTA_TEST_STOP_AFTER_TENSORS=5 w --scheme w4a16 --group-size 64 --algo gptq
ok grep -q "resumed: 5 of" "$tmp/resumed.err"
case_ gptq-fp8-kv QUANTA_TEST_STOP_AFTER_LAYERS=3 w --scheme fp8-dynamic --algo gptq --kv-dtype fp8-e4m3 --kv-calib data
case_ awq-w4a16 QUANTA_TEST_STOP_AFTER_LAYERS=2 w --scheme w4a16 --group-size 64 --algo awq
ok grep -q "folding pairs smoothed" "$tmp/resumed.err"
case_ sq-w8a8 QUANTA_TEST_STOP_AFTER_LAYERS=2 w --scheme w8a8-int8 --algo smoothquant+gptq
case_ awq-q4_0 QUANTA_TEST_STOP_AFTER_LAYERS=2 g.gguf --scheme q4_0 --tensor-type ffn_down=f16 --algo awq
case_ awq-gptq-q4_0 QUANTA_TEST_STOP_AFTER_LAYERS=4 g.gguf --scheme q4_0 --tensor-type ffn_down=f16 --algo awq+gptq

# refused: other options, touching nothing; a fresh run clears what was kept
d="$tmp/refuse" && mkdir -p "$d" && cp "$tmp/calib.txt" "$d/"
rcmd=("$q" quantize "$stories" w --scheme w4a16 --group-size 64 --algo gptq --calib calib.txt --nsamples 8 --seqlen 128 -q)
QUANTA_TEST_STOP_AFTER_LAYERS=1 check "stopped after layer 1" 1 run_in "$d" "${rcmd[@]}" --resumable
kept() { sha256sum "$d/w.partial.layers" "$d/w.partial.layers.state"; }
before=$(kept)
expect "other options refused" 1 "was" run_in "$d" "${rcmd[@]}" --resume --act-order
ok test "$(kept)" = "$before"
echo "one more line" >>"$d/calib.txt"
expect "another calibration text refused" 1 "in the interrupted run" run_in "$d" "${rcmd[@]}" --resume
ok test "$(kept)" = "$before"
check "a fresh run clears it" 0 run_in "$d" "${rcmd[@]}"
ok test ! -e "$d/w.partial.layers" -a ! -e "$d/w.partial.layers.state" -a -d "$d/w"
expect "nothing to resume" 1 "nothing to resume" run_in "$d" "$q" quantize "$stories" w2 --scheme w4a16 --algo gptq \
    --calib calib.txt --nsamples 8 --seqlen 128 --resume

# without --resumable nothing is left (the spill file is unlinked at once)
d="$tmp/plain" && mkdir -p "$d" && cp "$tmp/calib.txt" "$d/"
QUANTA_TEST_STOP_AFTER_LAYERS=3 check "stopped, not resumable" 1 run_in "$d" "${rcmd[@]}"
ok test -z "$(ls "$d" | grep -v '^calib.txt$')"

echo "calib_resume.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
