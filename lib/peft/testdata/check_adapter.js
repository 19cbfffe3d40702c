// Independent check of a PEFT adapter directory, written without any
// safetensors library: parse the 8-byte little-endian header length, the
// JSON header, and verify offsets, dtypes and byte sizes; print one line per
// tensor ("name dtype d0xd1") sorted by name, then the config's r and alpha.
'use strict';
const fs = require('fs');
const path = require('path');
const dir = process.argv[2];
const buf = fs.readFileSync(path.join(dir, 'adapter_model.safetensors'));
const n = Number(buf.readBigUInt64LE(0));
const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
const dataLen = buf.length - 8 - n;
const sizes = { F32: 4, BF16: 2, F16: 2 };
let covered = 0;
const lines = [];
for (const [name, t] of Object.entries(header)) {
  if (name === '__metadata__') continue;
  const [b, e] = t.data_offsets;
  const elems = t.shape.reduce((a, d) => a * d, 1);
  if (!(t.dtype in sizes)) throw new Error(`${name}: dtype ${t.dtype}`);
  if (e - b !== elems * sizes[t.dtype]) throw new Error(`${name}: ${e - b} bytes for shape ${t.shape}`);
  if (e > dataLen) throw new Error(`${name}: past end`);
  covered += e - b;
  lines.push(`${name} ${t.dtype} ${t.shape.join('x')}`);
}
if (covered !== dataLen) throw new Error(`tensors cover ${covered} of ${dataLen} data bytes`);
lines.sort();
const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'adapter_config.json'), 'utf8'));
if (!fs.existsSync(path.join(dir, 'checkpoint_complete'))) throw new Error('no checkpoint_complete');
lines.push(`r=${cfg.r} alpha=${cfg.lora_alpha} peft_type=${cfg.peft_type} task_type=${cfg.task_type}`);
process.stdout.write(lines.join('\n') + '\n');
