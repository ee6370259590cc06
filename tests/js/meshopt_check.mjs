// Decodes a meshopt vertex stream (as drape_pack writes it: q16 padded to
// 8-byte vertices) with meshoptimizer's JavaScript decoder from npm, the one
// the viewer uses, and prints the uint16 values as one JSON array.
//   node tests/js/meshopt_check.mjs FILE COUNT
import { readFileSync } from 'node:fs';

const [file, countArg] = process.argv.slice(2);
const count = Number(countArg);
if (!file || !Number.isInteger(count) || count < 0) {
  console.error('usage: node tests/js/meshopt_check.mjs FILE COUNT');
  process.exit(2);
}
const url = new URL('../../web/node_modules/meshoptimizer/meshopt_decoder.module.js', import.meta.url);
const { MeshoptDecoder } = await import(url.href);
await MeshoptDecoder.ready;
const source = new Uint8Array(readFileSync(file));
const target = new Uint8Array(count * 8);
try {
  MeshoptDecoder.decodeVertexBuffer(target, count, 8, source);
} catch (e) {
  console.error(`meshopt_check: ${file}: ${e.message}`);
  process.exit(1);
}
const q = new Uint16Array(target.buffer);
console.log(JSON.stringify(Array.from(q)));
