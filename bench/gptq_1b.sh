#!/bin/bash
# bench/gptq_1b.sh — issue 15's time targets: GPTQ and AWQ at Llama-3.2-1B size
# on a CPU (docs/gptq.md "Where the time goes"). Makes the 1B-shaped synth
# model in F16 (docs/synth.md), then runs, each under /usr/bin/time -v:
#   gptq-w4a16    quantize --scheme w4a16  --algo gptq  (compressed-tensors)
#   gptq-q4_k_m   quantize --scheme q4_k_m --algo gptq  (GGUF)
#   awq-w4a16     quantize --scheme w4a16  --algo awq
# with NSAMPLES x SEQLEN calibration tokens, and prints ONE JSON object on
# stdout: per job wall, user and sys seconds, CPU seconds (user + sys), peak
# RSS (VmHWM) and quanta's own estimate of it, and the targets (30 min and
# 3 GB for GPTQ, 20 min for AWQ) against the wall time. On a shared machine
# only the CPU seconds mean anything: a quiet machine with THREADS cores needs
# at least cpu_s / THREADS of wall time. Progress goes to stderr.
#
# usage: bench/gptq_1b.sh > gptq_1b.json
# settings (environment):
#   QUANTA    quanta binary (default: build/quanta beside this script)
#   LAYERS    the synth model's depth (default: the model's 16; 1 or 2 for a quick look,
#             then the per-layer numbers say what 16 would take)
#   NSAMPLES, SEQLEN  calibration windows and their length (128, 512)
#   THREADS   (default 2)       JOBS   default "gptq-w4a16 gptq-q4_k_m awq-w4a16"
#   CALIB     calibration text (default ../shared/data/wiki.test.raw beside the repository)
#   WORK      scratch directory (default: a new temporary one)     KEEP=1  keep WORK afterwards
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
QUANTA=${QUANTA:-$HERE/../build/quanta}
LAYERS=${LAYERS:-}
NSAMPLES=${NSAMPLES:-128}
SEQLEN=${SEQLEN:-512}
THREADS=${THREADS:-2}
JOBS=${JOBS:-gptq-w4a16 gptq-q4_k_m awq-w4a16}
CALIB=${CALIB:-$HERE/../../shared/data/wiki.test.raw}

die() { echo "gptq_1b: $*" >&2; exit 1; }
log() { echo "gptq_1b: $*" >&2; }
[ -x "$QUANTA" ] || die "no quanta binary at $QUANTA (build first, or set QUANTA)"
[ -r "$CALIB" ] || die "no calibration text at $CALIB (set CALIB)"
[ -x /usr/bin/time ] || die "/usr/bin/time is needed (Debian package 'time')"
WORK=${WORK:-$(mktemp -d /tmp/gptq_1b.XXXXXX)}
mkdir -p "$WORK"
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$WORK"' EXIT

model=$WORK/llama1b${LAYERS:+-$LAYERS}-f16.gguf
if [ ! -s "$model" ]; then
    log "synth $model"
    "$QUANTA" synth --like llama-3.2-1b ${LAYERS:+--layers "$LAYERS"} --format f16 -o "$model" >&2
fi

# one job: its quanta arguments after IN OUT; prints its JSON object
run_job() {
    local name=$1 out=$2; shift 2
    local tlog=$WORK/$name.time qlog=$WORK/$name.log
    rm -rf "$out" "$out".partial*
    log "$name: quanta quantize $model $out $*"
    local est
    est=$("$QUANTA" quantize "$model" "$out" "$@" --dry-run --json 2>/dev/null |
          sed -n 's/.*"peak_rss_estimate_bytes": *\([0-9]*\).*/\1/p' | head -1)
    local rc=0
    /usr/bin/time -v -o "$tlog" "$QUANTA" quantize "$model" "$out" "$@" >"$qlog" 2>&1 || rc=$?
    [ $rc = 0 ] || { tail -5 "$qlog" >&2; die "$name failed (exit $rc; log $qlog)"; }
    local user sys wall rss
    user=$(sed -n 's/^\s*User time (seconds): //p' "$tlog")
    sys=$(sed -n 's/^\s*System time (seconds): //p' "$tlog")
    wall=$(sed -n 's/^\s*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tlog" |
           awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
    rss=$(sed -n 's/^\s*Maximum resident set size (kbytes): //p' "$tlog")
    local target=1800
    case $name in awq-*) target=1200 ;; esac
    awk -v n="$name" -v u="$user" -v s="$sys" -v w="$wall" -v r="$rss" -v e="${est:-0}" -v t="$target" \
        -v th="$THREADS" -v args="$*" 'BEGIN {
        cpu = u + s
        printf "{\"job\": \"%s\", \"args\": \"%s\", \"wall_s\": %.1f, \"user_s\": %.1f, \"sys_s\": %.1f, \"cpu_s\": %.1f, ", n, args, w, u, s, cpu
        printf "\"quiet_wall_lower_bound_s\": %.1f, \"peak_rss_mib\": %.1f, \"peak_rss_estimate_mib\": %.1f, ", cpu / th, r / 1024, e / 1048576
        printf "\"target_wall_s\": %d, \"wall_within_target\": %s, \"rss_within_3gb\": %s}", t, w <= t ? "true" : "false", r * 1024 <= 3e9 ? "true" : "false"
    }'
}

calib=(--calib "$CALIB" --nsamples "$NSAMPLES" --seqlen "$SEQLEN" --threads "$THREADS")
results=()
for job in $JOBS; do
    case $job in
    gptq-w4a16)  results+=("$(run_job "$job" "$WORK/$job" --scheme w4a16 --algo gptq "${calib[@]}")") ;;
    gptq-q4_k_m) results+=("$(run_job "$job" "$WORK/$job.gguf" --scheme q4_k_m --algo gptq "${calib[@]}")") ;;
    awq-w4a16)   results+=("$(run_job "$job" "$WORK/$job" --scheme w4a16 --algo awq "${calib[@]}")") ;;
    *) die "unknown job '$job'" ;;
    esac
done
n_layer=${LAYERS:-16}
printf '{"model": "llama-3.2-1b synth f16", "layers": %s, "nsamples": %s, "seqlen": %s, "threads": %s, "cpu": "%s", "jobs": [' \
    "$n_layer" "$NSAMPLES" "$SEQLEN" "$THREADS" "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
sep=""
for r in "${results[@]}"; do printf '%s%s' "$sep" "$r"; sep=", "; done
printf ']}\n'
