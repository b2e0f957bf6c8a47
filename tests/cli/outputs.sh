#!/bin/bash
# tests/cli/outputs.sh QUANTA SHARED_DIR — the numbered findings of issue 12,
# each as the user met it on the command line (the library-level cases and the
# double SIGINT in the middle of a 220 MB write are in tests/unit/test_outputs.c):
#   1 --svg to a device node, a FIFO, a symlink: written in place / through, never replaced
#   2 convert IN IN: refused, the input untouched (also through a symlink)
#   3 HF output into a non-empty directory: refused without --force; one rule for parents
#   4 a temporary file is never left behind (SIGTERM, and SIGINT twice)
#   5 convert IN "": a clear error (was an ASan heap-buffer-overflow)
#   6 an HF directory without tokenizer.json: no vocabulary-less GGUF
#   7 --memory 1e30GB: refused, not a negative concurrency
#   8 a scheme the hardware cannot run has no FITS verdict
source "$(dirname "$0")/lib/harness.sh"
model="$shared/models/stories260K.gguf"

no_temps() { [ -z "$(find "$1" -maxdepth 1 -name '.*' ! -name '.' ! -name '..' | head -1)" ]; }

# ---- 1: the output rule through --svg -------------------------------------------------
d="$tmp/f1"
mkdir "$d"
echo keep >"$d/real"
ln -s real "$d/link"
mkfifo "$d/fifo"
plan=(plan --model qwen2.5-7b --gpu t4)
expect "svg through a symlink" 0 "" "$q" "${plan[@]}" --svg "$d/link"
ok test -L "$d/link"
ok grep -q "<svg" "$d/real"
expect "svg to stdout" 0 "" "$q" "${plan[@]}" --svg -
ok grep -q "<svg" "$tmp/out"
ok test ! -e ./-
timeout 60 cat "$d/fifo" >"$d/fifo.out" & # bounded: a writer that replaces the FIFO never opens it
reader=$!
expect "svg into a FIFO" 0 "" "$q" "${plan[@]}" --svg "$d/fifo"
wait $reader
ok test -p "$d/fifo"
ok grep -q "</svg>" "$d/fifo.out"
# As root a writer that replaces devices would destroy the real /dev/null (the report's
# repro): then only a private null device is used. Without root, /dev/null cannot be replaced.
if mknod "$d/fakenull" c 1 3 2>/dev/null; then
    expect "svg to a device node" 0 "" "$q" "${plan[@]}" --svg "$d/fakenull"
    ok test -c "$d/fakenull"
else
    echo "note: not root, mknod unavailable: the device case runs on /dev/null"
    expect "svg to /dev/null" 0 "" "$q" "${plan[@]}" --svg /dev/null
    ok test -c /dev/null
fi
expect "svg to a directory" 1 "is a directory" "$q" "${plan[@]}" --svg "$d"
ok no_temps "$d"

# ---- 2: IN == OUT ----------------------------------------------------------------------
cp "$model" "$tmp/c.gguf"
ln -s c.gguf "$tmp/c-link.gguf"
expect "convert IN IN --outtype f16" 1 "is the input" "$q" convert "$tmp/c.gguf" "$tmp/c.gguf" --outtype f16 -q
expect "convert IN IN" 1 "is the input" "$q" convert "$tmp/c.gguf" "$tmp/c.gguf" -q
expect "convert IN link-to-IN" 1 "is the input" "$q" convert "$tmp/c.gguf" "$tmp/c-link.gguf" -q
ok cmp -s "$model" "$tmp/c.gguf"
ok no_temps "$tmp"

# ---- 3: HF output directories ------------------------------------------------------------
mkdir "$tmp/full"
echo mine >"$tmp/full/notes.txt"
expect "HF into a non-empty dir" 1 "pass --force" "$q" convert "$model" "$tmp/full" -q
ok test ! -e "$tmp/full/config.json"
expect "HF into a non-empty dir, --force" 0 "" "$q" convert "$model" "$tmp/full" --force -q
ok test -s "$tmp/full/config.json" -a -s "$tmp/full/notes.txt"
expect "HF with a missing parent" 1 "cannot create directory" "$q" convert "$model" "$tmp/no/such/dir" -q
ok test ! -e "$tmp/no"
expect "GGUF with a missing parent" 1 "" "$q" convert "$model" "$tmp/no/such/x.gguf" -q
ok test ! -e "$tmp/no"
expect "HF into its own input dir" 1 "is the input" "$q" convert "$tmp/full" "$tmp/full" --force -q
expect "GGUF over the HF input's weights" 1 "is the input" "$q" convert "$tmp/full" "$tmp/full/model.safetensors" --to gguf -q
expect "HF dir -> GGUF" 0 "" "$q" convert "$tmp/full" "$tmp/from-hf.gguf" -q

# ---- 4: no temporary file after a signal --------------------------------------------------
# (deterministic double SIGINT mid-write: tests/unit/test_outputs.c; here the real process)
for sig in TERM INT; do
    mkdir "$tmp/sig$sig"
    "$q" convert "$tmp/full" "$tmp/sig$sig/out.gguf" -q 2>/dev/null &
    pid=$!
    # signal the quanta process itself, not the shell's child before it has exec'd
    for _ in $(seq 500); do
        case "$(readlink /proc/$pid/exe 2>/dev/null)" in */quanta | "") break ;; esac
        sleep 0.01
    done
    kill -$sig $pid 2>/dev/null
    kill -$sig $pid 2>/dev/null
    wait $pid
    rc=$?
    # finished before the signal (0), or cancelled by it (128 + signal): never a partial file
    if [ $rc = 0 ]; then ok test -s "$tmp/sig$sig/out.gguf"; else ok test ! -e "$tmp/sig$sig/out.gguf"; fi
    ok no_temps "$tmp/sig$sig"
done

# ---- 5: an empty output name ---------------------------------------------------------------
expect 'convert IN ""' 1 "output directory name is empty" "$q" convert "$model" "" -q
expect 'convert IN "" --to gguf' 1 "output path is empty" "$q" convert "$model" "" --to gguf -q

# ---- 6: an HF directory without tokenizer.json -----------------------------------------------
cp -r "$tmp/full" "$tmp/notok"
rm -f "$tmp/notok/tokenizer.json" "$tmp/notok/tokenizer_config.json"
expect "HF without tokenizer -> GGUF" 1 "no tokenizer.json" "$q" convert "$tmp/notok" "$tmp/notok.gguf" -q
ok test ! -e "$tmp/notok.gguf"

# ---- 7 and 8: the planner -------------------------------------------------------------------------
expect "--memory 1e30GB" 2 "more than any device holds" "$q" estimate --model qwen2.5-7b --scheme int8 --memory 1e30GB --json
ok test ! -s "$tmp/out"
expect "fp8 on a T4" 0 "" "$q" estimate --model qwen2.5-7b --scheme fp8 --gpu t4
ok grep -q "verdict           CANNOT RUN" "$tmp/out"
if grep -q "FITS" "$tmp/out"; then echo "FAIL: CANNOT RUN and FITS together"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
expect "fp8 on a T4, JSON" 0 "" "$q" estimate --model qwen2.5-7b --scheme fp8 --gpu t4 --json
ok grep -q '"verdict": "cannot_run"' "$tmp/out"
ok grep -q '"fits": false' "$tmp/out"

# ---- the planner's edge cases ---------------------------------------------------------------------
expect "stories260K on cpu" 0 "trained length" "$q" plan --model "$model" --gpu cpu
np=$(grep "llama-server -m" "$tmp/out" | grep -o -- '-np [0-9]*' | awk '{print $2}')
ok test -n "$np" -a "${np:-0}" -le 8
ok grep -q "context 2,048 tokens" "$tmp/out"
expect "a100 said out loud" 0 "'a100' means the NVIDIA A100 40GB (a100-40gb); say a100-80gb" "$q" plan --model qwen2.5-7b --gpu a100
expect "quantization job on a T4" 0 "" "$q" plan --model qwen2.5-7b --gpu t4
ok grep -q "quantization job does NOT fit on NVIDIA T4" "$tmp/out"
expect "SDXL on a T4" 0 "" "$q" plan --model sdxl --gpu t4 --html "$tmp/sdxl.html"
ok grep -q "fits, memory only" "$tmp/out"
ok grep -q "<h2>Components</h2>" "$tmp/sdxl.html"
if grep -q "weights or cache\|max ctx\|sequences" "$tmp/out"; then echo "FAIL: diffusion plan shows LLM columns"; fail=$((fail + 1)); else pass=$((pass + 1)); fi

# ---- smaller: messages -------------------------------------------------------------------------------
text="$shared/data/tinystories-valid-first1000.txt"
expect "eval error names the model once" 1 "@kv=fp8-e4m3,kv-scale=file: tensor 'blk.0.attn_k_scale'" \
    "$q" eval --base "$model" --candidate "$model@kv=fp8-e4m3,kv-scale=file" -f "$text" --chunks 1 -c 64 -q
ok test "$(grep -o "stories260K.gguf" "$tmp/err" | wc -l)" = 1
expect "perplexity: 1 chunk" 0 "" "$q" perplexity -m "$model" -f "$text" -c 64 --chunks 1 -q
ok grep -q "(1 chunk of 64 tokens" "$tmp/out"
expect "plan: 1 sequence" 0 "" "$q" plan --model qwen2.5-7b --gpu t4 --concurrency 1 -q
if grep -q "1 sequences" "$tmp/out"; then echo "FAIL: '1 sequences'"; fail=$((fail + 1)); else pass=$((pass + 1)); fi

echo "outputs: $pass passed, $fail failed"
[ $fail -eq 0 ]
