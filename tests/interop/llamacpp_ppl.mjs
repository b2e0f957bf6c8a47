// tests/interop/llamacpp_ppl.mjs NODE_MODULES TOKENS.txt N_CTX N_CHUNKS BOS MODEL.gguf...
//
// llama-perplexity's measurement in real llama.cpp (node-llama-cpp 3.21.1,
// prebuilt CPU library, never built here), on token ids given (quanta's, so
// both sides score the same tokens): chunk c is tokens [c*N_CTX, (c+1)*N_CTX)
// with its first token replaced by BOS, evaluated in one batch on an empty
// cache (default context: f16 KV cache, flash attention, one thread); the
// log-probability of the next token at positions N_CTX/2 .. N_CTX-2 is scored
// (what lib/engine/perplexity.c and llama-perplexity score).
// Prints the CPU library on stderr, then per model one JSON line:
//   {"model", "n_scored", "nll_mean", "ppl", "nll": [per scored token]}
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";
import {cpuLibrary} from "./llamacpp_logprobs.mjs";

const [modulesDir, tokensFile, ctxArg, chunksArg, bosArg, ...models] = process.argv.slice(2);
const nCtx = Number(ctxArg), nChunks = Number(chunksArg), bos = Number(bosArg);
const ids = fs.readFileSync(tokensFile, "utf8").trim().split(/\s+/).map(Number);
if (ids.length < nCtx * nChunks) throw new Error(`${tokensFile}: ${ids.length} tokens, ${nCtx * nChunks} needed`);
const {getLlama} = await import(pathToFileURL(path.join(modulesDir, "node-llama-cpp", "dist", "index.js")).href);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
console.error(`llama.cpp CPU library: ${cpuLibrary()}`);
const first = Math.floor(nCtx / 2);
for (const modelPath of models) {
    const model = await llama.loadModel({modelPath});
    const ctx = await model.createContext({contextSize: nCtx, batchSize: nCtx, threads: 1});
    const seq = ctx.getSequence();
    const nll = [];
    for (let c = 0; c < nChunks; c++) {
        const chunk = ids.slice(c * nCtx, (c + 1) * nCtx);
        chunk[0] = bos;
        const res = await seq.controlledEvaluate(chunk.map((t, i) =>
            i >= first && i < nCtx - 1 ? [t, {generateNext: {probabilities: true}}] : t));
        for (let i = first; i < nCtx - 1; i++) {
            const p = res[i].next.probabilities.get(chunk[i + 1]);
            if (!(p > 0)) throw new Error(`${modelPath}: chunk ${c} position ${i}: no probability for token ${chunk[i + 1]}`);
            nll.push(-Math.log(p));
        }
        await seq.clearHistory();
    }
    const mean = nll.reduce((a, b) => a + b, 0) / nll.length;
    console.log(JSON.stringify({model: modelPath, n_scored: nll.length, nll_mean: mean, ppl: Math.exp(mean), nll}));
    await ctx.dispose();
    await model.dispose();
}
await llama.dispose();
