// Reference encoder for the Go tokenizer tests: transformers.js (via
// @lenml/tokenizers) run over a whole corpus in one process.
//
//   node reference.cjs encode <tokenizer-dir> <corpus.json>   -> JSON lines
//   node reference.cjs bench  <tokenizer-dir> <text-file>     -> MB/s
//
// encode writes one line per corpus string:
//   {"ids":[...], "special":[...], "decoded":"..."}
// where ids are without and special with add_special_tokens, and decoded is
// decode(ids) without clean-up of tokenization spaces.
// Modules resolve from NODE_PATH (the Makefile's .cache/npm-tokenizers).
const fs = require("fs");
const path = require("path");
const { TokenizerLoader } = require("@lenml/tokenizers");

const [mode, dir, file] = process.argv.slice(2);
const load = (name) => JSON.parse(fs.readFileSync(path.join(dir, name), "utf8"));
const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: load("tokenizer.json"),
  tokenizerConfig: load("tokenizer_config.json"),
});

if (mode === "encode") {
  const corpus = JSON.parse(fs.readFileSync(file, "utf8"));
  const out = [];
  for (const s of corpus) {
    const ids = tok.encode(s, { add_special_tokens: false });
    // add_special_tokens only changes the ends; checking short strings suffices
    const special = s.length < 2000 ? tok.encode(s, { add_special_tokens: true }) : null;
    const decoded = ids.length ? tok.decode(ids, { clean_up_tokenization_spaces: false }) : "";
    out.push(JSON.stringify({ ids, special, decoded }));
  }
  fs.writeSync(1, out.join("\n") + "\n");
} else if (mode === "bench") {
  // The corpus is encoded line by line, as the Go benchmark does.
  const text = fs.readFileSync(file, "utf8");
  const lines = text.split("\n");
  const bytes = Buffer.byteLength(text, "utf8");
  tok.encode(lines[0] || "", { add_special_tokens: false }); // warm up
  const t0 = process.hrtime.bigint();
  let n = 0;
  for (const l of lines) n += tok.encode(l, { add_special_tokens: false }).length;
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(JSON.stringify({ bytes, tokens: n, seconds: secs, mbps: bytes / 1e6 / secs }));
} else {
  console.error("usage: reference.cjs encode|bench <tokenizer-dir> <file>");
  process.exit(2);
}
