// tests/interop/loadtest_mock.mjs PORTFILE LOGFILE — a stand-in OpenAI-compatible
// server for `quanta loadtest`: /v1/completions streams max_tokens one-word
// chunks and a usage event, and every request's prompt is appended to LOGFILE
// (one JSON string per line), so a test can see exactly what the client sent.
import http from "node:http";
import fs from "node:fs";
const [portFile, logFile] = process.argv.slice(2);
const server = http.createServer((req, res) => {
    if (req.method !== "POST" || req.url !== "/v1/completions") {
        res.writeHead(404).end();
        return;
    }
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
        const r = JSON.parse(body);
        fs.appendFileSync(logFile, JSON.stringify(r.prompt) + "\n");
        res.writeHead(200, {"Content-Type": "text/event-stream"});
        const n = r.max_tokens || 1;
        for (let i = 0; i < n; i++) res.write(`data: ${JSON.stringify({choices: [{index: 0, text: " w"}]})}\n\n`);
        res.write(`data: ${JSON.stringify({choices: [], usage: {prompt_tokens: 8, completion_tokens: n}})}\n\n`);
        res.end("data: [DONE]\n\n");
    });
});
server.listen(0, "127.0.0.1", () => fs.writeFileSync(portFile, String(server.address().port)));
