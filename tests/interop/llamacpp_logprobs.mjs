// tests/interop/llamacpp_logprobs.mjs NODE_MODULES EXPORT_DIR OUT.json
//
// llama.cpp (node-llama-cpp 3.21.1, prebuilt CPU library, never built here) on
// the fixture GGUFs written by test_engine_fixtures --export: the same tokens
// in one batch (default context: f16 KV cache, flash attention, one thread),
// and at every position the log-probability of every token with p > 1e-6.
// OUT.json: {"library": the libggml-cpu-*.so node-llama-cpp loaded,
//            "<fixture>": [{token: logprob, ...} per position]}.
// One process per CPU library: ggml loads its CPU backend once per process.
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

export const FIXTURES = ["llama", "llama3_rope", "qwen2_bias", "qwen3_qknorm", "mistral", "llama_mlp_bias"];
export const MIN_P = 1e-6;

// The llama.cpp CPU library this process loaded (ggml's backend loader picks
// it at run time): the libggml-cpu-*.so mapped into the process, from
// /proc/self/maps (ggml's own "loaded CPU backend" log line reaches node
// asynchronously, so it may come after the question is asked).
export function cpuLibrary() {
    const libs = new Set(fs.readFileSync("/proc/self/maps", "utf8").split("\n")
        .map(line => /\/(libggml-cpu-[^/\s]+\.so)$/.exec(line)).filter(Boolean).map(m => m[1]));
    if (libs.size !== 1) throw new Error(`expected one llama.cpp CPU library in this process, found: ${[...libs].join(", ") || "none"}`);
    return [...libs][0];
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
    const [modulesDir, dir, out] = process.argv.slice(2);
    const {getLlama} = await import(pathToFileURL(path.join(modulesDir, "node-llama-cpp", "dist", "index.js")).href);
    const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
    const library = cpuLibrary();
    const tokens = fs.readFileSync(path.join(dir, "tokens.txt"), "utf8").trim().split(/\s+/).map(Number);
    const result = {library};
    for (const name of FIXTURES) {
        const model = await llama.loadModel({modelPath: path.join(dir, `${name}.gguf`)});
        const ctx = await model.createContext({contextSize: 64, batchSize: 64, threads: 1});
        const res = await ctx.getSequence().controlledEvaluate(tokens.map(t => [t, {generateNext: {probabilities: true}}]));
        result[name] = res.map(r => Object.fromEntries([...r.next.probabilities]
            .filter(([, p]) => p > MIN_P).map(([t, p]) => [t, Math.log(p)])));
        await ctx.dispose();
        await model.dispose();
    }
    await llama.dispose();
    fs.writeFileSync(out, JSON.stringify(result));
}
