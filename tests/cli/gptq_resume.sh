#!/bin/bash
# (heavy under sanitizers: minutes of runs under ASan; the release run has it, and the fuzz
# targets and unit tests cover its parsers and code under the sanitizers)
# tests/cli/gptq_resume.sh QUANTA SHARED_DIR — `quanta quantize --algo gptq
# --resumable / --resume` (docs/gptq.md "--resume"): a run stopped after its
# second layer (QUANTA_TEST_STOP_AFTER_LAYERS, the test hook) keeps the
# finished layers in OUT.partial.layers and continues from there; a run stopped
# in the final write (QUANTA_TEST_STOP_AFTER_TENSORS) continues from its last
# tensor; both give the uninterrupted run's bytes (KV scales included, at
# another thread count); other options or another calibration text are refused;
# a fresh run removes what an interrupted one left, and a run without --resumable
# leaves nothing (its layers spill to OUT.partial.layers all the same).
source "$(dirname "$0")/lib/harness.sh"
stories="$shared/models/stories260K.gguf"
text="$shared/data/tinystories-valid-first1000.txt"
for d in a b c d; do mkdir -p "$tmp/$d" && tail -n +4331 "$text" >"$tmp/$d/calib.txt"; done
# run DIR [options]: the same command in each directory (OUT's name is in the recorded command line)
run() { (cd "$tmp/$1" && "$q" quantize "$stories" g.gguf --scheme q4_0 --tensor-type ffn_down=f16 --algo gptq \
    --calib calib.txt --nsamples 8 --seqlen 128 --kv-dtype int8 --kv-scale-gran head "${@:2}"); }

check "uninterrupted" 0 run a -q --threads 1
expect "nothing to resume" 1 "no state file, so nothing to resume" run b --resume

# stopped after two layers
QUANTA_TEST_STOP_AFTER_LAYERS=2 check "stopped after layer 2" 1 run b --resumable
ok has err "kept 2 finished GPTQ layers in g.gguf.partial.layers"
ok has err "--resume"
ok test -f "$tmp/b/g.gguf.partial.layers" -a -f "$tmp/b/g.gguf.partial.layers.state" -a ! -e "$tmp/b/g.gguf"
expect "other options refused" 1 "was" run b --resume --act-order
ok test -f "$tmp/b/g.gguf.partial.layers.state"
check "resumed" 0 run b --resume --threads 2
ok has err "resumed: layers 1-2 from the interrupted run"
ok has err "layer 3/5 quantized"
lacks() { ! grep -qF -- "$2" "$tmp/$1"; }
ok lacks err "layer 2/5 quantized"
ok cmp "$tmp/a/g.gguf" "$tmp/b/g.gguf"
ok test ! -e "$tmp/b/g.gguf.partial.layers" -a ! -e "$tmp/b/g.gguf.partial.layers.state"

# stopped in the final write: the layers and OUT.partial are kept
QUANTA_TEST_STOP_AFTER_TENSORS=5 check "stopped in the write" 1 run c --resumable -q
ok test -f "$tmp/c/g.gguf.partial" -a -f "$tmp/c/g.gguf.partial.state" -a -f "$tmp/c/g.gguf.partial.layers.state"
check "resumed write" 0 run c --resume -q
ok cmp "$tmp/a/g.gguf" "$tmp/c/g.gguf"
ok test ! -e "$tmp/c/g.gguf.partial" -a ! -e "$tmp/c/g.gguf.partial.layers"

# another calibration text under the same name
QUANTA_TEST_STOP_AFTER_LAYERS=1 check "stopped after layer 1" 1 run d --resumable -q
echo "one more line" >>"$tmp/d/calib.txt"
expect "changed calibration refused" 1 "calibration text is not the interrupted run's" run d --resume -q
check "a fresh run clears it" 0 run d -q
ok has err "removed g.gguf.partial left by an interrupted run"
ok test ! -e "$tmp/d/g.gguf.partial.layers"

# without --resumable the finished layers also go to OUT.partial.layers (GPTQ's output is not held
# in memory: docs/gptq.md "Memory"), and an interrupted run removes them with the rest
mkdir -p "$tmp/e" && cp "$tmp/a/calib.txt" "$tmp/e/"
QUANTA_TEST_STOP_AFTER_LAYERS=3 check "stopped after layer 3, not resumable" 1 run e -q
ok test -z "$(ls "$tmp/e" | grep -v '^calib.txt$')"
QUANTA_TEST_STOP_AFTER_TENSORS=5 check "stopped in the write, not resumable" 1 run e -q
ok test -z "$(ls "$tmp/e" | grep -v '^calib.txt$')"

echo "gptq_resume.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
