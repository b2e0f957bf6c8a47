#!/bin/bash
# tests/interop/test_quantize_llamacpp.sh QUANTA SHARED_DIR
#
# GGUF files made by `quanta quantize` from stories260K (Q8_0, Q4_0, Q4_K_M,
# IQ4_XS, IQ2_XS with llama-imatrix's importance matrix, IQ2_XS with the
# importance matrix `--calib` computes, Q4_0 with AWQ's scales folded into
# its norms, `--algo awq`, and two `--target-size` mixes of types per tensor,
# one with llama-imatrix's importance matrix, one by GPTQ) load in real llama.cpp (node-llama-cpp's
# prebuilt CPU library) and
# - generate, greedily, the same 32 tokens as quanta's own engine on the same file;
# - give the same perplexity as `quanta perplexity` on the same tokens (8 chunks
#   of 128 of held-out text, llama-perplexity's scoring), within the spread of
#   llama.cpp's own CPU libraries (bounds and measurements: test_quantize_ppl.mjs),
#   against the library node-llama-cpp picks here and against its AVX2 one.
#   QT_LLAMACPP_ALL=1 also prints the spread over every library this CPU runs.
# The npm packages
# come from the npm_packages setup fixture (tests/interop/node_env.sh). Exit 77
# = skipped (no node >= 20 / no npm registry), except under CI=true.
set -u
Q=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SHARED=$2
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(dirname "$Q")
source "$HERE/node_env.sh"
require_npm_packages

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
M="$SHARED/models/stories260K.gguf"
IM="$SHARED/reference/llamacpp-quantize/imatrix-stories260K.gguf"
# the calibration slice llama-imatrix's reference run used (its README)
tail -n +4331 "$SHARED/data/tinystories-valid-first1000.txt" >"$TMP/calib.txt"
names=(q8_0 q4_0 q4_k_m iq4_xs iq2_xs-imatrix iq2_xs-calib q4_0-awq mix-rtn mix-gptq)
for n in "${names[@]}"; do
    how=(--scheme "${n%-*}")
    case $n in
    *-imatrix) how+=(--imatrix "$IM") ;;
    *-calib) how+=(--calib "$TMP/calib.txt" --seqlen 128 --nsamples 100) ;;
    *-awq) how+=(--algo awq --calib "$TMP/calib.txt" --seqlen 128 --nsamples 16) ;;
    esac
    # --target-size mixes (docs/quantize.md "Target size") at Q4_K_M's file size, measured and refined
    mix=(--target-size 306304B --calib "$TMP/calib.txt" --seqlen 128 --nsamples 8 --sensitivity measured)
    case $n in
    mix-rtn) how=("${mix[@]}" --imatrix "$IM") ;;
    mix-gptq) how=("${mix[@]}" --algo gptq) ;;
    esac
    "$Q" quantize "$M" "$TMP/$n.gguf" "${how[@]}" -q || { echo "FAIL: quanta quantize ${how[*]}"; exit 1; }
done
files=()
for n in "${names[@]}"; do files+=("$TMP/$n.gguf"); done
out=$(node "$HERE/llamacpp_greedy.mjs" "$NODE_MODULES" "Once upon a time" 32 "${files[@]}" 2>"$TMP/node.err")
rc=$?
if [ $rc -ne 0 ]; then
    tail -30 "$TMP/node.err"
    echo "FAIL: llama.cpp could not load or run quanta's quantized files (exit $rc)"
    exit 1
fi
grep -F "llama.cpp CPU library" "$TMP/node.err"
field() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=JSON.parse(s)[process.argv[1]];console.log(Array.isArray(v)?v.join(","):v)})' "$1"; }
fails=0
for n in "${names[@]}"; do
    rec=$(echo "$out" | grep -F "\"model\":\"$TMP/$n.gguf\"")
    theirs=$(echo "$rec" | field text)
    "$Q" run -m "$TMP/$n.gguf" -p "Once upon a time" -n 32 --temp 0 -t 1 --numerics llama --json="$TMP/$n.json" -q >/dev/null 2>"$TMP/run.err" ||
        { cat "$TMP/run.err"; echo "FAIL: quanta run $n"; fails=$((fails + 1)); continue; }
    ours=$(field text <"$TMP/$n.json")
    if [ -n "$theirs" ] && [ "$ours" = "$theirs" ]; then
        echo "  ok   $n: $theirs"
    else
        echo "  FAIL $n: llama.cpp '$theirs', quanta '$ours'"
        fails=$((fails + 1))
    fi
done
[ $fails -eq 0 ] || exit 1

# perplexity: quanta's tokens of held-out text, scored by llama.cpp and by quanta
head -n 300 "$SHARED/data/tinystories-valid-first1000.txt" >"$TMP/ppl.txt"
"$Q" tokenize -m "$M" -f "$TMP/ppl.txt" >"$TMP/tokens.txt" || { echo "FAIL: quanta tokenize"; exit 1; }
bos=$(cut -d' ' -f1 "$TMP/tokens.txt")
for n in "${names[@]}"; do
    "$Q" perplexity -m "$TMP/$n.gguf" -f "$TMP/ppl.txt" -c 128 --chunks 8 -t 1 -q --json="$TMP/$n.ppl.json" >/dev/null ||
        { echo "FAIL: quanta perplexity $n"; exit 1; }
done
runs=()
ppl() { # ROLE NODE_MODULES
    node "$HERE/llamacpp_ppl.mjs" "$2" "$TMP/tokens.txt" 128 8 "$bos" "${files[@]}" >"$TMP/ppl-$1.jsonl" 2>"$TMP/node.err" ||
        { tail -20 "$TMP/node.err"; echo "FAIL: llama.cpp ($1) could not score quanta's files"; exit 1; }
    echo "  $1: $(cat "$TMP/node.err")"
    runs+=("$1=$TMP/ppl-$1.jsonl")
}
ppl native "$NODE_MODULES"
ppl avx2 "$NODE_MODULES_AVX2"
if [ "${QT_LLAMACPP_ALL:-}" = 1 ]; then
    for lib in "$NODE_MODULES/$LLAMACPP_BINS"/libggml-cpu-*.so; do
        cpu=${lib##*/libggml-cpu-}
        cpu=${cpu%.so}
        llamacpp_variant "$TMP/$cpu/node_modules" "$cpu" || exit 1
        if node "$HERE/llamacpp_ppl.mjs" "$TMP/$cpu/node_modules" "$TMP/tokens.txt" 128 8 "$bos" "${files[@]}" \
            >"$TMP/all-$cpu.jsonl" 2>/dev/null; then
            runs+=("spread=$TMP/all-$cpu.jsonl")
        else
            echo "note: llama.cpp's $cpu library does not run on this CPU"
        fi
    done
fi
node "$HERE/test_quantize_ppl.mjs" "$TMP" "${runs[@]}" || { echo "FAIL: perplexity differs from llama.cpp's"; exit 1; }
echo "test_quantize_llamacpp: llama.cpp loads every file quanta quantize wrote, continues greedily as quanta's engine does, and measures the same perplexity"
