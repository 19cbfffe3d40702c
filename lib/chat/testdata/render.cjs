// Renders conversations with a tokenizer's own chat template through an
// independent Jinja implementation (@huggingface/jinja) and tokenizes the
// result with transformers.js, for the Go renderer tests.
//
//   node render.cjs <tokenizer-dir> <cases.json>  -> JSON lines {"text","ids"}
//
// cases.json: [{"messages":[...], "add_generation_prompt":bool,
//               "enable_thinking":bool|null}]
const fs = require("fs");
const path = require("path");
const { Template } = require("@huggingface/jinja");
const { TokenizerLoader } = require("@lenml/tokenizers");

const [dir, file] = process.argv.slice(2);
const load = (name) => JSON.parse(fs.readFileSync(path.join(dir, name), "utf8"));
const cfg = load("tokenizer_config.json");
const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON: load("tokenizer.json"), tokenizerConfig: cfg });
const tokenText = (t) => (t && typeof t === "object" ? t.content : t);
const template = new Template(cfg.chat_template);
const out = [];
for (const c of JSON.parse(fs.readFileSync(file, "utf8"))) {
  const ctx = {
    messages: c.messages,
    add_generation_prompt: c.add_generation_prompt,
    bos_token: tokenText(cfg.bos_token),
    eos_token: tokenText(cfg.eos_token),
  };
  if (c.enable_thinking !== null && c.enable_thinking !== undefined) ctx.enable_thinking = c.enable_thinking;
  const text = template.render(ctx);
  out.push(JSON.stringify({ text, ids: tok.encode(text, { add_special_tokens: false }) }));
}
fs.writeSync(1, out.join("\n") + "\n");
