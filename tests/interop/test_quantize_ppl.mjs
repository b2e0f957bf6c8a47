// tests/interop/test_quantize_ppl.mjs QUANTA_DIR ROLE=LLAMACPP.jsonl...
//
// The perplexity half of test_quantize_llamacpp.sh: for every file quanta
// quantize wrote, the mean negative log-likelihood (nats per token) that
// `quanta perplexity` measured (QUANTA_DIR/<name>.ppl.json) against the one
// llama.cpp measured on the same tokens (llamacpp_ppl.mjs, one JSON line per
// file). ROLE native / avx2 is asserted within SPREAD; ROLE spread (only with
// QT_LLAMACPP_ALL=1) is printed, to measure SPREAD again.
//
// Why the bounds are what they are. llama.cpp's 14 x86-64 CPU libraries
// (node-llama-cpp 3.21.1) disagree with one another on these files: they
// quantize activations and accumulate dot products in different orders (AVX2
// vs AVX-512 vs SSE, and AMX for q8_0 / iq4_xs on sapphirerapids), and
// llama.cpp's f16 rounding of K, V and Q then moves log-probabilities. Measured
// on a Sapphire Rapids, which runs all 14 (2026-12-01, one thread, 8 chunks of
// 128 tokens of the held-out head of tinystories-valid-first1000.txt, 504
// scored tokens; reproduce with QT_LLAMACPP_ALL=1 ctest -R quantize_llamacpp -V),
// max - min of the mean NLL over the 14 libraries:
//   q8_0           2.94e-3   (1.3547273 .. 1.3576683)
//   q4_0           2.13e-3   (1.4481505 .. 1.4502772)
//   q4_k_m         2.60e-3   (1.3315909 .. 1.3341866)
//   iq4_xs         2.13e-3   (1.3996802 .. 1.4018137)
//   iq2_xs-imatrix 3.11e-3   (1.4002672 .. 1.4033803)
//   iq2_xs-calib   1.04e-3   (1.4014447 .. 1.4024878)
// quanta's engine measured 1.3547279, 1.4481764, 1.3337251, 1.4005718,
// 1.4017039 and 1.4024240: inside every range; 6e-7 / 2.6e-5 / 3.0e-5 / 7e-5
// from the AVX-512 (skylakex) library for q8_0 / q4_0 / q4_k_m / iq2_xs-calib,
// 1.2e-3 and 1.7e-3 for iq4_xs and iq2_xs-imatrix (their IQ4_NL/IQ4_XS dot
// products are not in ggml's AVX-512 order; within llama.cpp's own spread).
// SPREAD = twice the measured spread, rounded up to one significant digit (the
// factor 2 is room for other libm versions; pinned versions, one thread, the
// numbers are otherwise deterministic). Choosing the wrong type for one tensor
// moves the mean NLL by ~1e-2 to 1e-1 (q8_0 vs q4_0: 9.3e-2), so the bound
// still tells the files apart.
import fs from "node:fs";
import path from "node:path";

const SPREAD = {
    "q8_0": 6e-3,
    "q4_0": 5e-3,
    "q4_k_m": 6e-3,
    "iq4_xs": 5e-3,
    "iq2_xs-imatrix": 7e-3,
    "iq2_xs-calib": 3e-3,
    "q4_0-awq": 5e-3, /* q4_0's types and kernels (AWQ only changes values): q4_0's bound, its spread not measured */
    /* test_quantize_llamacpp.sh's --target-size mixes (q5_0, q5_1, q8_0, iq4_nl, f16 per tensor): the
     * largest bound of their types' files (q8_0's), their own spread not measured */
    "mix-rtn": 6e-3,
    "mix-gptq": 6e-3,
};

const [dir, ...runs] = process.argv.slice(2);
const name = p => path.basename(p, ".gguf");
const ours = n => JSON.parse(fs.readFileSync(path.join(dir, `${n}.ppl.json`), "utf8"));
let fails = 0;
const spread = {};
for (const run of runs) {
    const [role, file] = run.split("=");
    for (const line of fs.readFileSync(file, "utf8").trim().split("\n")) {
        const r = JSON.parse(line), n = name(r.model), q = ours(n);
        if (!(n in SPREAD)) throw new Error(`no bound for ${n}`);
        if (role === "spread") {
            (spread[n] ??= []).push(r.nll_mean);
            continue;
        }
        const d = Math.abs(q.nll_mean - r.nll_mean);
        const ok = q.n_scored === r.n_scored && d <= SPREAD[n];
        if (!ok) fails++;
        console.log(`  ${ok ? "ok  " : "FAIL"} ${role.padEnd(6)} ${n.padEnd(15)} mean NLL llama.cpp ${r.nll_mean.toFixed(7)}, ` +
            `quanta ${q.nll_mean.toFixed(7)} (ppl ${r.ppl.toFixed(4)} / ${q.ppl.toFixed(4)}): |diff| ${d.toExponential(2)} ` +
            `<= ${SPREAD[n]} over ${r.n_scored} / ${q.n_scored} tokens`);
    }
}
for (const [n, v] of Object.entries(spread))
    console.log(`  spread ${n.padEnd(15)} ${(Math.max(...v) - Math.min(...v)).toExponential(2)} over ${v.length} libraries ` +
        `(${Math.min(...v).toFixed(7)} .. ${Math.max(...v).toFixed(7)}), quanta ${ours(n).nll_mean.toFixed(7)}`);
process.exit(fails ? 1 : 0);
