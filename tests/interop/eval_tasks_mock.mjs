// tests/interop/eval_tasks_mock.mjs PORTFILE — a stand-in OpenAI-compatible
// server for `quanta eval --tasks` through a server, whose first path segment
// picks a behaviour (so one server serves every case of the test):
//   /busyK-NAME/v1/...  503 (with Retry-After) for the first K requests under
//                       that prefix, then 200 with the text "ok"
//   /nolp/v1/...        200 with the text "ok" and "logprobs": null, also for
//                       an echo request (a server without log-likelihoods)
//   /vllm/v1/...        an echo's log-likelihoods in vLLM's prompt_logprobs
//                       shape only: one token per word (its leading space
//                       included), each of logprob -1, the first null
// GET /count/PREFIX answers how many requests PREFIX has had.
import http from "node:http";
import fs from "node:fs";
const [portFile] = process.argv.slice(2);
const seen = new Map();
const ok = (res) => {
    res.writeHead(200, {"Content-Type": "application/json"});
    res.end(JSON.stringify({id: "cmpl-mock", object: "text_completion", model: "mock",
                            choices: [{index: 0, text: "ok", logprobs: null, finish_reason: "stop"}]}));
};
const server = http.createServer((req, res) => {
    const parts = req.url.split("/");
    const prefix = parts[1] || "";
    if (req.method === "GET" && prefix === "count") {
        res.writeHead(200).end(String(seen.get(parts[2]) || 0));
        return;
    }
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
        const n = (seen.get(prefix) || 0) + 1;
        seen.set(prefix, n);
        const busy = /^busy(\d+)-/.exec(prefix);
        if (busy && n <= Number(busy[1])) {
            res.writeHead(503, {"Content-Type": "application/json", "Retry-After": "1"});
            res.end(JSON.stringify({error: {message: "overloaded", type: "server_error"}}));
            return;
        }
        if (busy || prefix === "nolp") return ok(res);
        if (prefix === "vllm") {
            const r = JSON.parse(body);
            const words = r.prompt.split(/(?=\s)/);
            const pl = words.map((w, i) => (i === 0 ? null : {[String(100 + i)]: {logprob: -1, rank: 1, decoded_token: w}}));
            res.writeHead(200, {"Content-Type": "application/json"});
            res.end(JSON.stringify({choices: [{index: 0, text: r.prompt, logprobs: null, prompt_logprobs: pl, finish_reason: "length"}]}));
            return;
        }
        res.writeHead(404).end();
    });
});
server.listen(0, "127.0.0.1", () => fs.writeFileSync(portFile, String(server.address().port)));
