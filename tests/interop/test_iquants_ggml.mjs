// tests/interop/test_iquants_ggml.mjs NODE_MODULES_DIR EXPORT_DIR
//
// llama.cpp (node-llama-cpp, prebuilt CPU binaries) running llama-quantize's
// own i-quant files of tiny256-random (../shared/reference/llamacpp-quantize/
// files/tiny256-<FTYPE>-imatrix.gguf) against quanta's engine on the same
// files: the same 16 tokens in one batch, full next-token distributions
// compared as log-probabilities (bounds of test_engine_llamacpp.mjs; seen:
// about 1e-6). Weights meet q8_K activations in both engines; the integer
// sums are exact, only the float order of the per-block products differs.
// Why 16 tokens: test_ggml_iquants.c, LG_TOKENS.
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const [modulesDir, dir, filesDir] = process.argv.slice(2);
const {getLlama} = await import(pathToFileURL(path.join(modulesDir, "node-llama-cpp", "dist", "index.js")).href);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const tokens = fs.readFileSync(path.join(dir, "tokens.txt"), "utf8").trim().split(/\s+/).map(Number);
const V = 512;
let failed = 0;

for (const ftype of ["IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S"]) {
    const model = await llama.loadModel({modelPath: path.join(filesDir, `tiny256-${ftype}-imatrix.gguf`)});
    const ctx = await model.createContext({contextSize: 64, batchSize: 64, threads: 1});
    const seq = ctx.getSequence();
    const res = await seq.controlledEvaluate(tokens.map(t => [t, {generateNext: {probabilities: true}}]));
    const buf = fs.readFileSync(path.join(dir, `${ftype}.logits.f32`));
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
    console.log(`${ok ? "ok  " : "FAIL"} ${ftype.padEnd(8)} next-token log-prob max |diff| ${maxNext.toExponential(2)}, ` +
                `all tokens (p > 1e-6, ${nCompared}) ${maxAll.toExponential(2)}`);
    if (!ok) failed++;
    await ctx.dispose();
    await model.dispose();
}
process.exit(failed ? 1 : 0);
