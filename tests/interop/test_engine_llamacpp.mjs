// tests/interop/test_engine_llamacpp.mjs NODE_MODULES_DIR EXPORT_DIR
//
// llama.cpp (node-llama-cpp, prebuilt CPU binaries) as the oracle for the
// architectures stories260K does not cover. For each fixture GGUF written by
// test_engine_fixtures --export, llama.cpp evaluates the same tokens in one
// batch (default context: f16 KV cache, flash attention) and reports the full
// next-token distribution at every position; we compare its log-probabilities
// with the log-softmax of our logits.
//   next-token log-probability (the token that follows in the sequence): max |diff| <= 1e-3
//   every token with p > 1e-6:                                            max |diff| <= 5e-3
// The second bound is looser because both engines round K, V, Q and the
// attention accumulator to f16, and a last-bit float difference upstream can
// make one of those roundings go the other way at a few positions. There is
// one such difference: quanta fuses flash attention's softmax sum
// (S = fma(S, ms, vs)) as the llama.cpp build behind ../shared/reference does,
// node-llama-cpp 3.21.1's prebuilt does not (docs/engine.md).
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const [modulesDir, dir] = process.argv.slice(2);
const {getLlama} = await import(pathToFileURL(path.join(modulesDir, "node-llama-cpp", "dist", "index.js")).href);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const tokens = fs.readFileSync(path.join(dir, "tokens.txt"), "utf8").trim().split(/\s+/).map(Number);
const V = 512;
let failed = 0;

for (const name of ["llama", "llama3_rope", "qwen2_bias", "qwen3_qknorm", "mistral"]) {
    const model = await llama.loadModel({modelPath: path.join(dir, `${name}.gguf`)});
    const ctx = await model.createContext({contextSize: 64, batchSize: 64, threads: 1});
    const seq = ctx.getSequence();
    const res = await seq.controlledEvaluate(tokens.map(t => [t, {generateNext: {probabilities: true}}]));
    const buf = fs.readFileSync(path.join(dir, `${name}.logits.f32`));
    const ours = new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4);
    let maxNext = 0, maxAll = 0, nCompared = 0;
    for (let i = 0; i < tokens.length; i++) {
        const row = ours.subarray(i * V, (i + 1) * V);
        let m = -Infinity;
        for (const x of row) m = Math.max(m, x);
        let z = 0;
        for (const x of row) z += Math.exp(x - m);
        const lse = m + Math.log(z);
        for (const [tok, p] of res[i].next.probabilities) {
            if (p <= 1e-6) continue;
            const d = Math.abs(Math.log(p) - (row[tok] - lse));
            maxAll = Math.max(maxAll, d);
            nCompared++;
            if (i + 1 < tokens.length && tok === tokens[i + 1]) maxNext = Math.max(maxNext, d);
        }
    }
    const ok = maxNext <= 1e-3 && maxAll <= 5e-3 && nCompared > tokens.length;
    console.log(`${ok ? "ok  " : "FAIL"} ${name.padEnd(13)} next-token log-prob max |diff| ${maxNext.toExponential(2)}, ` +
                `all tokens (p > 1e-6, ${nCompared}) ${maxAll.toExponential(2)}`);
    if (!ok) failed++;
    await ctx.dispose();
    await model.dispose();
}
process.exit(failed ? 1 : 0);
