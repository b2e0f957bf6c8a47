#!/bin/bash
# bench/vs_llamacpp.sh — quanta side by side with a llama.cpp build, on a
# random-weight model with a real model's exact shapes (quanta synth; default
# Llama-3.2-1B: 1.24 B parameters, tied 128,256-token embeddings), in one run
# on one machine (docs/performance.md):
#   (a) speed: `quanta bench` against `llama-bench -p 512 -n 128`, for F16,
#       Q8_0, Q4_0 and Q4_K_M, with the decode limit (measured read bandwidth
#       / weight bytes per token);
#   (b) quantization: `quanta quantize` against `llama-quantize` from the same
#       F16 file, wall time and peak RSS (/usr/bin/time -v, else VmHWM polled);
# and prints ONE JSON object on stdout: medians, ratios quanta / llama.cpp,
# and both against the bandwidth. Progress goes to stderr.
#
# llama.cpp is never built or downloaded here: build it yourself outside this
# repository and point LLAMA_CPP_BIN at the directory holding llama-bench and
# llama-quantize.
#
# usage: LLAMA_CPP_BIN=/path/to/llama.cpp/build/bin bench/vs_llamacpp.sh > result.json
# settings (environment):
#   QUANTA    quanta binary (default: build/quanta beside this script)
#   PRESET    the synth shape (default llama-3.2-1b)    LAYERS   override its depth (default: the model's)
#   THREADS   threads for every program (default 2)     REPS     bench repetitions (default 3)
#   P, N      prompt and generated tokens (512, 128)   QREPS    quantize repetitions (default 1)
#   FORMATS   default "f16 q8_0 q4_0 q4_k_m"            WORK     scratch directory (default: a new temporary one)
#   KEEP=1    keep WORK (the models) afterwards
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
QUANTA=${QUANTA:-$HERE/../build/quanta}
PRESET=${PRESET:-llama-3.2-1b}
LAYERS=${LAYERS:-}
THREADS=${THREADS:-2}
REPS=${REPS:-3}
QREPS=${QREPS:-1}
P=${P:-512}
N=${N:-128}
FORMATS=${FORMATS:-f16 q8_0 q4_0 q4_k_m}

die() { echo "vs_llamacpp: $*" >&2; exit 1; }
log() { echo "vs_llamacpp: $*" >&2; }
[ -n "${LLAMA_CPP_BIN:-}" ] || die "set LLAMA_CPP_BIN to a directory holding llama-bench and llama-quantize (built outside this repository; this script never builds or downloads llama.cpp)"
LB="$LLAMA_CPP_BIN/llama-bench"
LQ="$LLAMA_CPP_BIN/llama-quantize"
for b in "$LB" "$LQ"; do [ -x "$b" ] || die "$b: not an executable"; done
[ -x "$QUANTA" ] || die "$QUANTA: not an executable (build quanta first, or set QUANTA)"
command -v node >/dev/null || die "node is needed to read and write the JSON"
if [ -z "${WORK:-}" ]; then
    WORK=$(mktemp -d)
    [ "${KEEP:-}" = 1 ] || trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK"

# measure NAME CMD... -> $WORK/NAME.time: "wall_s peak_rss_bytes" of one run
measure() {
    local name=$1
    shift
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -v -o "$WORK/$name.tv" "$@" >"$WORK/$name.log" 2>&1 || { tail -20 "$WORK/$name.log" >&2; die "failed: $*"; }
        awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; w = s}
                    /Maximum resident set size/ {r = $2 * 1024} END {printf "%.3f %.0f\n", w, r}' "$WORK/$name.tv" >"$WORK/$name.time"
    else # poll the child's VmHWM until it exits
        local t0 t1 pid hwm=0 h
        t0=$(date +%s.%N)
        "$@" >"$WORK/$name.log" 2>&1 &
        pid=$!
        while kill -0 "$pid" 2>/dev/null; do
            h=$(awk '/^VmHWM/ {print $2 * 1024}' "/proc/$pid/status" 2>/dev/null || true)
            [ -n "$h" ] && [ "$h" -gt "$hwm" ] && hwm=$h
            sleep 0.05
        done
        wait "$pid" || { tail -20 "$WORK/$name.log" >&2; die "failed: $*"; }
        t1=$(date +%s.%N)
        echo "$(echo "$t1 - $t0" | bc -l) $hwm" >"$WORK/$name.time"
    fi
}

layers_arg=()
[ -n "$LAYERS" ] && layers_arg=(--layers "$LAYERS")
F16="$WORK/synth-f16.gguf"
log "synth: $PRESET ${LAYERS:+($LAYERS layers) }as F16 -> $F16"
"$QUANTA" synth --like "$PRESET" "${layers_arg[@]}" --format f16 -t "$THREADS" -o "$F16" -q

# (b) quantization, from the same F16 file: quanta's outputs are what quanta bench runs, llama.cpp's what llama-bench runs
declare -A qfile lfile
for f in $FORMATS; do
    [ "$f" = f16 ] && { qfile[$f]=$F16; lfile[$f]=$F16; continue; }
    qfile[$f]="$WORK/quanta-$f.gguf"
    lfile[$f]="$WORK/llamacpp-$f.gguf"
    F=$(echo "$f" | tr '[:lower:]' '[:upper:]')
    for r in $(seq 1 "$QREPS"); do
        log "quantize $f ($r/$QREPS): quanta, then llama-quantize"
        measure "q-quanta-$f-$r" "$QUANTA" quantize "$F16" "${qfile[$f]}" --scheme "$f" --threads "$THREADS" --force -q
        measure "q-llamacpp-$f-$r" "$LQ" "$F16" "${lfile[$f]}" "$F" "$THREADS"
    done
done

# (a) speed: one quanta bench over every file (one bandwidth measurement), llama-bench per file
qargs=()
for f in $FORMATS; do qargs+=(-m "${qfile[$f]}"); done
log "quanta bench -p $P -n $N -t $THREADS -r $REPS on: $FORMATS"
"$QUANTA" bench "${qargs[@]}" -p "$P" -n "$N" -t "$THREADS" -r "$REPS" --json="$WORK/quanta-bench.json" -q >"$WORK/quanta-bench.txt"
cat "$WORK/quanta-bench.txt" >&2
for f in $FORMATS; do
    log "llama-bench -p $P -n $N -t $THREADS -r $REPS on $f"
    # a crash is recorded in the JSON (llama_cpp.error) and the other formats still run
    rc=0
    "$LB" -m "${lfile[$f]}" -p "$P" -n "$N" -t "$THREADS" -r "$REPS" -o json >"$WORK/llamacpp-bench-$f.json" 2>"$WORK/llamacpp-bench-$f.log" || rc=$?
    if [ $rc -ne 0 ]; then
        tail -5 "$WORK/llamacpp-bench-$f.log" >&2
        log "llama-bench failed on $f (exit $rc)"
        echo "llama-bench exited with status $rc$([ $rc -gt 128 ] && echo " (signal $((rc - 128)))")" >"$WORK/llamacpp-bench-$f.error"
    fi
done

node - "$WORK" "$PRESET" "${LAYERS:-0}" "$THREADS" "$P" "$N" "$REPS" "$QREPS" "$LLAMA_CPP_BIN" $FORMATS <<'JS'
const fs = require("fs");
const [work, preset, layers, threads, p, n, reps, qreps, lbin, ...formats] = process.argv.slice(2);
const median = (v) => { const s = [...v].sort((a, b) => a - b), k = s.length; return k ? (k % 2 ? s[(k - 1) / 2] : (s[k / 2 - 1] + s[k / 2]) / 2) : null; };
const ratio = (a, b) => (a != null && b ? a / b : null);
const qb = JSON.parse(fs.readFileSync(`${work}/quanta-bench.json`, "utf8"));
const bw = qb.machine.read_gbps;
let commit = null;
const speed = formats.map((f, i) => {
    const q = qb.models[i];
    const errFile = `${work}/llamacpp-bench-${f}.error`;
    const error = fs.existsSync(errFile) ? fs.readFileSync(errFile, "utf8").trim() : null;
    const rows = error ? [{}] : JSON.parse(fs.readFileSync(`${work}/llamacpp-bench-${f}.json`, "utf8"));
    commit = commit || rows[0].build_commit || null;
    const pp = rows.find((r) => r.n_prompt > 0 && r.n_gen === 0), tg = rows.find((r) => r.n_gen > 0 && r.n_prompt === 0);
    const l = {prefill_tps: pp ? median(pp.samples_ts) : null, decode_tps: tg ? median(tg.samples_ts) : null};
    l.read_gbps = l.decode_tps != null ? (q.weight_bytes * l.decode_tps) / 1e9 : null;
    l.bandwidth_ratio = ratio(l.read_gbps, bw);
    if (error) l.error = error;
    return {
        format: f, weight_bytes: q.weight_bytes, model_bytes: q.model_bytes,
        decode_limit_tps: (bw * 1e9) / q.weight_bytes,
        quanta: {prefill_tps: q.prefill_tps, decode_tps: q.decode_tps, ttft_ms: q.ttft_ms, itl_p50_ms: q.itl_p50_ms,
                 itl_p99_ms: q.itl_p99_ms, peak_rss_bytes: q.peak_rss_bytes, read_gbps: q.read_gbps,
                 bandwidth_ratio: q.bandwidth_ratio, rss_over_model: ratio(q.peak_rss_bytes, q.model_bytes)},
        llama_cpp: l,
        ratio: {prefill: ratio(q.prefill_tps, l.prefill_tps), decode: ratio(q.decode_tps, l.decode_tps)},
    };
});
const times = (who, f) => {
    const w = [], r = [];
    for (let k = 1; k <= Number(qreps); k++) {
        const [a, b] = fs.readFileSync(`${work}/q-${who}-${f}-${k}.time`, "utf8").trim().split(/\s+/).map(Number);
        w.push(a);
        r.push(b);
    }
    return {wall_s: median(w), peak_rss_bytes: median(r) || null};
};
const quantize = formats.filter((f) => f !== "f16").map((f) => {
    const q = times("quanta", f), l = times("llamacpp", f);
    return {format: f, quanta: q, llama_cpp: l,
            ratio: {wall_s: ratio(q.wall_s, l.wall_s), peak_rss: ratio(q.peak_rss_bytes, l.peak_rss_bytes)}};
});
const out = {
    preset, layers: Number(layers) || null, threads: Number(threads), n_prompt: Number(p), n_gen: Number(n),
    reps: Number(reps), quantize_reps: Number(qreps), machine: qb.machine,
    llama_cpp: {bin: lbin, build_commit: commit}, speed, quantize,
    note: "ratios are quanta / llama.cpp; decode_limit_tps = machine read bandwidth / weight bytes per token",
};
console.log(JSON.stringify(out, null, 2));
JS
