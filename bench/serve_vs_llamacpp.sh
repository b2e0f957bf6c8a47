#!/bin/bash
# bench/serve_vs_llamacpp.sh — `quanta serve` against llama.cpp's `llama-server` on the
# same GGUF file, both load-tested by `quanta loadtest` with the same sweep, seed and SLOs
# (issue 16's target: the sustainable concurrency of each under TTFT <= 2 s and TPOT <= 200
# ms, 128-token prompts, 64-token outputs, 2 threads), and `quanta serve --parallel 1`
# against `--parallel N` (what continuous batching buys). Prints ONE JSON object on stdout;
# progress on stderr. Everything runs on 127.0.0.1 and is bounded by --time-limit.
#
# llama.cpp is never built or downloaded here: build it yourself outside this repository
# and point LLAMA_CPP_BIN at the directory holding llama-server.
#
# usage: LLAMA_CPP_BIN=/path/to/llama.cpp/build/bin bench/serve_vs_llamacpp.sh > serve.json
# settings (environment):
#   QUANTA    quanta binary (default: build/quanta beside this script)
#   MODEL     a GGUF file (default: a Llama-3.2-1B-shaped synth model in Q4_0, made here)
#   THREADS (2)  PARALLEL (4)  SWEEP (1,2,4)  NUM_PROMPTS (per level, 8)  IN (128)  OUT (64)
#   SLO (ttft:2000,tpot:200)   TIME_LIMIT (seconds per level, 120)   WORK (scratch; default temporary)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
QUANTA=${QUANTA:-$HERE/../build/quanta}
THREADS=${THREADS:-2}
PARALLEL=${PARALLEL:-4}
SWEEP=${SWEEP:-1,2,4}
NUM_PROMPTS=${NUM_PROMPTS:-8}
IN=${IN:-128}
OUT=${OUT:-64}
SLO=${SLO:-ttft:2000,tpot:200}
TIME_LIMIT=${TIME_LIMIT:-120}

die() { echo "serve_vs_llamacpp: $*" >&2; exit 1; }
log() { echo "serve_vs_llamacpp: $*" >&2; }
[ -n "${LLAMA_CPP_BIN:-}" ] || die "set LLAMA_CPP_BIN to a directory holding llama-server (built outside this repository)"
LS="$LLAMA_CPP_BIN/llama-server"
[ -x "$LS" ] || die "$LS: not an executable"
[ -x "$QUANTA" ] || die "$QUANTA: not an executable (build quanta first, or set QUANTA)"
command -v curl >/dev/null || die "curl is needed to wait for the servers"
command -v node >/dev/null || die "node is needed to write the JSON"
own_work=
if [ -z "${WORK:-}" ]; then
    WORK=$(mktemp -d)
    own_work=1
fi
mkdir -p "$WORK"
pid=
stop() {
    if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; fi
    pid=
}
trap 'stop; if [ -n "$own_work" ]; then rm -rf "$WORK"; fi' EXIT

if [ -z "${MODEL:-}" ]; then
    MODEL="$WORK/synth-q4_0.gguf"
    log "synth: llama-3.2-1b as Q4_0 -> $MODEL"
    "$QUANTA" synth --like llama-3.2-1b --format q4_0 -t "$THREADS" -o "$MODEL" -q
fi
port=$((20000 + RANDOM % 20000))
url="http://127.0.0.1:$port"
ctx=$((IN + OUT + 16))

wait_up() {
    for _ in $(seq 600); do curl -sf --max-time 2 "$url/health" >/dev/null 2>&1 && return 0; sleep 0.5; done
    die "the server on $url did not come up (see $WORK/*.log)"
}
# sweep NAME: quanta loadtest's sweep against the server on $url
sweep() {
    log "loadtest $1: --sweep $SWEEP, $NUM_PROMPTS prompts per level of $IN tokens, $OUT out, --slo $SLO"
    "$QUANTA" loadtest --url "$url" --model "$(basename "$MODEL")" --tokenizer "$MODEL" --input-len "$IN" \
        --output-len "$OUT" --num-prompts "$NUM_PROMPTS" --sweep "$SWEEP" --slo "$SLO" --ignore-eos --seed 1 \
        --warmup 1 --time-limit "$TIME_LIMIT" --json="$WORK/$1.json" -q >&2
}

"$QUANTA" serve -m "$MODEL" --port "$port" -t "$THREADS" --parallel "$PARALLEL" -c "$ctx" -q >"$WORK/quanta.log" 2>&1 &
pid=$!
wait_up
sweep quanta
stop

"$QUANTA" serve -m "$MODEL" --port "$port" -t "$THREADS" --parallel 1 -c "$ctx" -q >"$WORK/quanta1.log" 2>&1 &
pid=$!
wait_up
SWEEP=$PARALLEL sweep quanta_parallel1
stop

# llama-server: the same slots, each with the same context (-c is shared among its slots)
"$LS" -m "$MODEL" --host 127.0.0.1 --port "$port" -t "$THREADS" -np "$PARALLEL" -c $((ctx * PARALLEL)) \
    --alias "$(basename "$MODEL")" --metrics >"$WORK/llama-server.log" 2>&1 &
pid=$!
wait_up
sweep llama_server
stop

node - "$WORK" "$MODEL" "$THREADS" "$PARALLEL" "$SWEEP" "$SLO" <<'JS'
const fs = require("fs");
const [work, model, threads, parallel, sweep, slo] = process.argv.slice(2);
const read = (n) => JSON.parse(fs.readFileSync(`${work}/${n}.json`, "utf8"));
const brief = (r) => ({
    sustainable_concurrency: r.sustainable_concurrency, knee_concurrency: r.knee_concurrency,
    levels: (r.levels || []).map((l) => ({concurrency: l.concurrency, completed: l.completed, failed: l.failed,
        output_throughput: l.output_throughput, goodput: l.goodput, ttft_p99_ms: l.ttft_ms.p99,
        tpot_p99_ms: l.tpot_ms.p99, itl_median_ms: l.itl_ms.median})),
});
const q = read("quanta"), q1 = read("quanta_parallel1"), l = read("llama_server");
const at = (r, c) => (r.levels || []).find((x) => x.concurrency === c);
const qN = at(q, Number(parallel)), q1N = at(q1, Number(parallel)), lN = at(l, Number(parallel));
console.log(JSON.stringify({
    model, threads: Number(threads), parallel: Number(parallel), sweep, slo,
    quanta_serve: brief(q), llama_server: brief(l), quanta_serve_parallel1: brief(q1),
    ratio: {
        sustainable_concurrency: l.sustainable_concurrency ? q.sustainable_concurrency / l.sustainable_concurrency : null,
        output_throughput_at_parallel: qN && lN ? qN.output_throughput / lN.output_throughput : null,
        continuous_batching_gain: qN && q1N ? qN.output_throughput / q1N.output_throughput : null,
    },
    note: "ratios are quanta / llama-server; continuous_batching_gain = quanta --parallel N / --parallel 1 at N in flight",
}, null, 2));
JS
