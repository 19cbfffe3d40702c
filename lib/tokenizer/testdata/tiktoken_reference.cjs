// Reference for the tiktoken-format loader: js-tiktoken, a JavaScript port
// of tiktoken's rank merge, with the rank files it ships (OpenAI's o200k).
//
//   node tiktoken_reference.cjs ranks <out-file>
//       writes o200k_base as a tiktoken.model file ("base64 rank" lines)
//   node tiktoken_reference.cjs encode o200k|kimi <specials.json> <corpus.json>
//       one JSON array of ids per corpus string, special tokens allowed
//
// "kimi" splits with Moonshot's tokenization_kimi.py pattern, written for
// JavaScript: the Rust class intersection [X&&[^\p{Han}]] becomes
// (?:(?!\p{Script=Han})[X]) and (?i:'s|...) its spelled-out cases.
// Modules resolve from NODE_PATH (the Makefile's .cache/npm-tokenizers).
const fs = require("fs");
const { Tiktoken } = require("js-tiktoken/lite");
const o200k = require("js-tiktoken/ranks/o200k_base");

const contr = "(?:'s|'S|'t|'T|'re|'rE|'Re|'RE|'ve|'vE|'Ve|'VE|'m|'M|'ll|'lL|'Ll|'LL|'d|'D)?";
const notHan = (cls) => `(?:(?!\\p{Script=Han})[${cls}])`;
const upper = "\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}";
const lower = "\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}";
const kimiPattern = [
  "[\\p{Script=Han}]+",
  `[^\\r\\n\\p{L}\\p{N}]?${notHan(upper)}*${notHan(lower)}+${contr}`,
  `[^\\r\\n\\p{L}\\p{N}]?${notHan(upper)}+${notHan(lower)}*${contr}`,
  "\\p{N}{1,3}",
  " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*",
  "\\s*[\\r\\n]+",
  "\\s+(?!\\S)",
  "\\s+",
].join("|");

const [mode, a, b, c] = process.argv.slice(2);
if (mode === "ranks") {
  const lines = [];
  for (const row of o200k.bpe_ranks.split("\n")) {
    if (!row) continue;
    const [, offset, ...tokens] = row.split(" ");
    tokens.forEach((tok, i) => lines.push(`${tok} ${Number(offset) + i}`));
  }
  fs.writeFileSync(a, lines.join("\n") + "\n");
} else if (mode === "encode") {
  const specials = JSON.parse(fs.readFileSync(b, "utf8"));
  const pat_str = a === "kimi" ? kimiPattern : o200k.pat_str;
  const enc = new Tiktoken({ pat_str, special_tokens: {}, bpe_ranks: o200k.bpe_ranks }, specials);
  const out = [];
  for (const s of JSON.parse(fs.readFileSync(c, "utf8"))) {
    out.push(JSON.stringify(enc.encode(s, "all")));
  }
  fs.writeSync(1, out.join("\n") + "\n");
} else {
  console.error("usage: tiktoken_reference.cjs ranks <out> | encode o200k|kimi <specials.json> <corpus.json>");
  process.exit(2);
}
