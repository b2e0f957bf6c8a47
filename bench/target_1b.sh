#!/bin/bash
# bench/target_1b.sh — issue 17's time target for `quanta quantize --target-size` at
# Llama-3.2-1B size on a CPU (docs/quantize.md "Target size: time on the 1B"). On the
# 1B-shaped synth model in F16 (docs/synth.md; made here unless MODEL is given), each
# phase under /usr/bin/time -v:
#   imatrix   quanta imatrix on NSAMPLES x SEQLEN calibration tokens (the proxy's a_j;
#             what quantize --calib computes first); skipped when NSAMPLES=0 (unweighted proxy)
#   plan      quantize --target-size TARGET --dry-run: the proxy scan (every tensor in every
#             candidate that fits it, quantized and scored) and the allocation
#   type:T    (BREAKDOWN=1) the scan of one default candidate T beside f16 (--candidates T,f16, a
#             target everything fits; f16 so that every tensor has a candidate, the token
#             embedding having no imatrix entry for the i-quants that need one): where the
#             plan's time goes, type by type (type:f16 alone is the f16 share to take off)
#   write     the same without --dry-run (scan and allocation again, then the file); its wall
#             time less the plan's is the writing; skipped when WRITE=0
# and prints ONE JSON object on stdout: per phase wall, user, sys and CPU seconds and peak
# RSS, the file's bytes against the target, the predicted cost, the bits per weight and
# how many tensors took each type. On a shared machine only the CPU seconds mean anything
# (a quiet machine with THREADS cores needs at least cpu_s / THREADS of wall time).
#
# usage: bench/target_1b.sh > target_1b.json
# settings (environment):
#   QUANTA    quanta binary (default: build/quanta beside this script)
#   MODEL     an F16 1B-shaped GGUF (default: synth --like llama-3.2-1b into WORK)
#   LAYERS, VOCAB  a smaller synth model for a quick look (the 1B's layer shapes; --layers,
#             --vocab): TARGET then defaults to 700MB times its share of the 1B's parameters
#   TARGET    the size (default 700MB)     THREADS (default 2)     WRITE (default 1)     BREAKDOWN (0)
#   PLAN      (default 1) 0: skip the plan phase (a WORK kept from a run that has plan.json)
#   NSAMPLES, SEQLEN  calibration windows and their length (64, 512; NSAMPLES=0: none)
#   CALIB     calibration text (default ../shared/data/wiki.test.raw beside the repository)
#   WORK      scratch directory (default: a new temporary one)     KEEP=1  keep WORK afterwards
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
QUANTA=${QUANTA:-$HERE/../build/quanta}
THREADS=${THREADS:-2}
WRITE=${WRITE:-1}
NSAMPLES=${NSAMPLES:-64}
SEQLEN=${SEQLEN:-512}
CALIB=${CALIB:-$HERE/../../shared/data/wiki.test.raw}

die() { echo "target_1b: $*" >&2; exit 1; }
log() { echo "target_1b: $*" >&2; }
[ -x "$QUANTA" ] || die "no quanta binary at $QUANTA (build first, or set QUANTA)"
[ "$NSAMPLES" = 0 ] || [ -r "$CALIB" ] || die "no calibration text at $CALIB (set CALIB, or NSAMPLES=0)"
[ -x /usr/bin/time ] || die "/usr/bin/time is needed (Debian package 'time')"
WORK=${WORK:-$(mktemp -d /tmp/target_1b.XXXXXX)}
mkdir -p "$WORK"
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$WORK"' EXIT

LAYERS=${LAYERS:-}
VOCAB=${VOCAB:-}
model=${MODEL:-$WORK/llama1b${LAYERS:+-l$LAYERS}${VOCAB:+-v$VOCAB}-f16.gguf}
if [ ! -s "$model" ]; then
    log "synth $model"
    "$QUANTA" synth --like llama-3.2-1b ${LAYERS:+--layers "$LAYERS"} ${VOCAB:+--vocab "$VOCAB"} --format f16 \
        -o "$model" --json="$WORK/synth.json" >&2
fi
share=1
if [ -z "${TARGET:-}" ] && [ -n "$LAYERS$VOCAB" ]; then
    # the same share of the parameters as 700MB is of the 1B's (quanta estimate counts them)
    full=$("$QUANTA" estimate --model llama-3.2-1b --scheme q4_k_m --memory 80GB --json 2>/dev/null |
           sed -n 's/^ *"n_params": \([0-9]*\).*/\1/p' | head -1)
    small=$(sed -n 's/.*"params": \([0-9]*\).*/\1/p' "$WORK/synth.json" | head -1)
    [ -n "$full" ] && [ -n "$small" ] || die "cannot count the parameters to scale the target"
    share=$(awk -v s="$small" -v f="$full" 'BEGIN { printf "%.6f", s / f }')
    TARGET=$(awk -v s="$share" 'BEGIN { printf "%dB", 700e6 * s }')
fi
TARGET=${TARGET:-700MB}

# one phase: NAME then the quanta command line; prints its JSON object's fields (no braces)
timed() {
    local name=$1; shift
    local tlog=$WORK/$name.time qlog=$WORK/$name.log rc=0
    log "$name: quanta $*"
    /usr/bin/time -v -o "$tlog" "$QUANTA" "$@" >"$qlog" 2>"$qlog.err" || rc=$?
    [ $rc = 0 ] || { tail -5 "$qlog.err" >&2; die "$name failed (exit $rc; log $qlog.err)"; }
    awk -v n="$name" '
        /User time \(seconds\)/ { u = $NF } /System time \(seconds\)/ { s = $NF }
        /Maximum resident set size/ { r = $NF }
        /Elapsed \(wall clock\)/ { k = split($NF, p, ":"); w = 0; for (i = 1; i <= k; i++) w = w * 60 + p[i] }
        END { printf "\"%s\": {\"wall_s\": %.1f, \"user_s\": %.1f, \"sys_s\": %.1f, \"cpu_s\": %.1f, \"peak_rss_mib\": %.1f}", n, w, u, s, u + s, r / 1024 }' "$tlog"
}

phases=()
weights=()
if [ "$NSAMPLES" != 0 ]; then
    phases+=("$(timed imatrix imatrix -m "$model" --calib "$CALIB" --nsamples "$NSAMPLES" --seqlen "$SEQLEN" \
        --threads "$THREADS" -o "$WORK/imatrix.gguf" -q)")
    weights=(--imatrix "$WORK/imatrix.gguf")
fi
[ "${PLAN:-1}" = 0 ] || phases+=("$(timed plan quantize "$model" --target-size "$TARGET" "${weights[@]}" --threads "$THREADS" --dry-run \
    --json="$WORK/plan.json" -q)")
if [ "${BREAKDOWN:-0}" = 1 ]; then
    # the default candidates (docs/quantize.md "Target size")
    for t in iq1_s iq1_m iq2_xxs iq2_xs iq2_s q2_K iq3_xxs iq3_s q3_K iq4_xs iq4_nl q4_0 q4_1 q4_K q5_0 q5_1 q5_K \
             q6_K q8_0 f16; do
        c=$t,f16
        [ "$t" = f16 ] && c=f16
        phases+=("$(timed "type:$t" quantize "$model" --target-size 1000GB --candidates "$c" "${weights[@]}" \
            --threads "$THREADS" --dry-run -q)")
    done
fi
if [ "$WRITE" = 1 ]; then
    phases+=("$(timed write quantize "$model" "$WORK/out.gguf" --target-size "$TARGET" "${weights[@]}" \
        --threads "$THREADS" --force -q)")
    written=$(stat -c %s "$WORK/out.gguf")
fi

pj=$WORK/plan.json
target_bytes=$(sed -n 's/^    "file_bytes": \([0-9]*\).*/\1/p' "$pj" | head -1)
bytes=$(sed -n 's/^  "output_bytes": \([0-9]*\).*/\1/p' "$pj" | head -1)
bpw=$(sed -n 's/^  "bits_per_weight": \([0-9.]*\).*/\1/p' "$pj" | head -1)
cost=$(sed -n 's/^    "predicted_cost": \([0-9.e+-]*\).*/\1/p' "$pj" | head -1)
exact=$(sed -n 's/^    "exact": \([a-z]*\).*/\1/p' "$pj" | head -1)
# the chosen type of each mixed tensor: the "type" right after its "name" in "target"
types=$(sed -n '/"target": {/,/^  }/p' "$pj" | grep -A1 '"name":' | sed -n 's/^ *"type": "\([^"]*\)".*/\1/p' |
        sort | uniq -c | awk '{ printf "%s\"%s\": %d", NR > 1 ? ", " : "", $2, $1 }')
printf '{"model": "%s", "layers": "%s", "vocab": "%s", "share_of_1b_params": %s, "target": "%s", "target_bytes": %s, ' \
    "$model" "${LAYERS:-16}" "${VOCAB:-128256}" "$share" "$TARGET" "${target_bytes:-0}"
printf '"threads": %s, "calibration": "%s", ' "$THREADS" "$([ "$NSAMPLES" = 0 ] && echo none || echo "${NSAMPLES}x${SEQLEN}")"
printf '"plan_bytes": %s, "written_bytes": %s, "within_target": %s, "bits_per_weight": %s, "predicted_cost": %s, ' \
    "${bytes:-0}" "${written:-null}" "$([ "${bytes:-0}" -le "${target_bytes:-0}" ] && echo true || echo false)" \
    "${bpw:-0}" "${cost:-0}"
printf '"exact": %s, "types": {%s}, "phases": {' "${exact:-null}" "$types"
(IFS=,; printf '%s' "${phases[*]}")
printf '}}\n'
