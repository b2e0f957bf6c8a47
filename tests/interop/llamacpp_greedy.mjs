// Load GGUF files in real llama.cpp (node-llama-cpp, prebuilt CPU binaries,
// never built here) and generate greedily: argmax at every step, BOS
// prepended, the way ../shared/reference/llamacpp/greedy.tsv was made.
// One process for all models: starting llama.cpp's backend is the slow part.
// usage: node llamacpp_greedy.mjs NODE_MODULES PROMPT N_TOKENS MODEL.gguf...
// prints the llama.cpp CPU library it loaded on stderr, then one JSON line
// per model: {"model": path, "prompt": [ids], "gen": [ids], "text": "..."}
import path from "node:path";
import {pathToFileURL} from "node:url";
import {cpuLibrary} from "./llamacpp_logprobs.mjs";

const [modulesDir, prompt, nArg, ...models] = process.argv.slice(2);
const n = Number(nArg);
const {getLlama} = await import(pathToFileURL(path.join(modulesDir, "node-llama-cpp", "dist", "index.js")).href);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
console.error(`llama.cpp CPU library: ${cpuLibrary()}`);
for (const modelPath of models) {
    const model = await llama.loadModel({modelPath});
    // One thread: llama.cpp's worker threads spin-wait, and on a small shared
    // machine several of them make 32 tokens of a 260K model take minutes.
    const context = await model.createContext({contextSize: 256, threads: 1});
    const sequence = context.getSequence();
    const promptIds = [model.tokens.bos, ...model.tokenize(prompt)];
    const gen = [];
    for await (const token of sequence.evaluate(promptIds, {temperature: 0})) {
        gen.push(token);
        if (gen.length >= n) break;
    }
    console.log(JSON.stringify({model: modelPath, prompt: promptIds, gen, text: model.detokenize(gen)}));
    await context.dispose();
    await model.dispose();
}
await llama.dispose();
