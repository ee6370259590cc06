// web/drape-client.js's decoders and web/msgpack.js on hand-made frames:
// half floats (zero, subnormals, negatives, the largest, Inf), q16 with a
// flat axis and the bbox corners, meshopt from meshoptimizer's own encoder,
// JSON data arrays, output buffers reused, and bad frames as DrapeError
// 'bad_frame'; msgpack round trips of what the stream carries.
//   node tests/js/decoders_unit.mjs
// Prints "ok N checks"; exit 1 with a message on failure.
import { decodeFrame, halfToFloat, errorBound, DrapeError, ready } from '../../web/drape-client.js';
import { encode, decode } from '../../web/msgpack.js';

const { MeshoptEncoder } = await import(new URL('../../web/node_modules/meshoptimizer/meshopt_encoder.module.js', import.meta.url).href);
await ready;
await MeshoptEncoder.ready;

let checks = 0;
function check(cond, what) {
  checks++;
  if (!cond) {
    console.error(`decoders_unit: ${what}`);
    process.exit(1);
  }
}
const bytesOf = (typed) => new Uint8Array(typed.buffer, typed.byteOffset, typed.byteLength);

// halves: exact values
const halves = [[0x0000, 0], [0x8000, -0], [0x0001, 2 ** -24], [0x03ff, 1023 * 2 ** -24], [0x0400, 2 ** -14],
  [0x3c00, 1], [0xbc00, -1], [0x3555, 0.333251953125], [0x7bff, 65504], [0x7c00, Infinity], [0xfc00, -Infinity]];
for (const [h, v] of halves) check(Object.is(halfToFloat(h), v), `half 0x${h.toString(16)} → ${halfToFloat(h)}, want ${v}`);
check(Number.isNaN(halfToFloat(0x7e00)), 'half NaN');

// f16 frame, binary and JSON, into a reused buffer
const f16 = new Uint16Array([0x3c00, 0xbc00, 0x0001, 0x3555, 0x7bff, 0x0000]);
const out = new Float32Array(6);
let got = decodeFrame({ format: 'f16', count: 2, bbox: [0, 0, 0, 0, 0, 0], data: bytesOf(f16) }, out);
check(got === out && got[0] === 1 && got[1] === -1 && got[2] === Math.fround(2 ** -24) && got[4] === 65504, `f16 bin ${got}`);
got = decodeFrame({ format: 'f16', count: 2, data: Array.from(f16) }, out);
check(got === out && got[3] === Math.fround(0.333251953125), `f16 json ${got}`);

// f32 from an unaligned bin
const f32 = new Float32Array([1.5, -2.25, 3, 0.1, 0.2, 0.3]);
const unaligned = new Uint8Array(25);
unaligned.set(bytesOf(f32), 1);
got = decodeFrame({ format: 'f32', count: 2, data: unaligned.subarray(1) });
check(got.length === 6 && got.every((x, i) => x === f32[i]), `f32 unaligned ${got}`);

// q16: corners, the middle, a flat axis (max = min packs as 0)
const bbox = [-1, 2, 0.5, 1, 2, 1.5];
const q = new Uint16Array([0, 0, 0, 65535, 0, 65535, 32768, 0, 16384]);
got = decodeFrame({ format: 'q16', count: 3, bbox, data: bytesOf(q) });
const want = [-1, 2, 0.5, 1, 2, 1.5, -1 + (32768 / 65535) * 2, 2, 0.5 + 16384 / 65535];
check(want.every((w, i) => Math.abs(got[i] - w) <= 1e-6), `q16 ${got}`);
check(Math.abs(errorBound('q16', bbox) - (2 / 131070 + 2 * 2 ** -23)) < 1e-12, 'q16 bound');
check(errorBound('f32', bbox) === 0 && errorBound('f16', [0, 0, 0, 7e4, 0, 0]) === Infinity, 'f32/f16 bounds');

// meshopt: q16 padded to 8-byte vertices through meshoptimizer's encoder
const n = 50;
const padded = new Uint16Array(4 * n);
for (let v = 0; v < n; v++) for (let k = 0; k < 3; k++) padded[4 * v + k] = (v * 1311 + k * 7919) % 65536;
const enc = MeshoptEncoder.encodeVertexBuffer(bytesOf(padded), n, 8);
const scratch = new Uint8Array(8 * n);
const mo = new Float32Array(3 * n);
const qbox = [0, 0, 0, 65535, 65535, 65535]; // decodes q itself
got = decodeFrame({ format: 'meshopt', count: n, bbox: qbox, data: enc }, mo, scratch);
check(got === mo && Array.from({ length: n * 3 }, (_, i) => padded[4 * Math.floor(i / 3) + (i % 3)]).every((x, i) => Math.abs(got[i] - x) < 1e-3), 'meshopt bin');
got = decodeFrame({ format: 'meshopt', count: n, bbox: qbox, data: Array.from(enc) }, mo, scratch);
check(Math.abs(got[3 * 7 + 2] - padded[4 * 7 + 2]) < 1e-3, 'meshopt json');

// bad frames
const bad = [
  { format: 'f32', count: 2, data: new Uint8Array(20) },
  { format: 'f16', count: 2, data: [1, 2, 3] },
  { format: 'q16', count: 1, data: new Uint8Array(6) },
  { format: 'meshopt', count: 4, bbox: qbox, data: new Uint8Array([1, 2, 3]) },
  { format: 'png', count: 1, bbox: qbox, data: new Uint8Array(6) },
];
for (const f of bad) {
  let e = null;
  try {
    decodeFrame(f);
  } catch (x) {
    e = x;
  }
  check(e instanceof DrapeError && e.code === 'bad_frame', `bad ${f.format} frame: ${e}`);
}

// msgpack: what the stream carries
const msg = { op: 'frame', avatar: 'a', seq: 2 ** 40 + 3, count: 2, bbox: [0.5, -1, 1e-3, 2, 3, 4], data: new Uint8Array([1, 2, 255]),
  timing: { queue: 100, compute: 70000, pack: 0 }, dropped: 0, neg: -5, big: -40000, flag: true, nil: null, s: 'é'.repeat(40) };
const back = decode(encode(msg));
check(JSON.stringify({ ...back, data: Array.from(back.data) }) === JSON.stringify({ ...msg, data: [1, 2, 255] }), `msgpack ${JSON.stringify(back)}`);
const longArr = Array.from({ length: 70000 }, (_, i) => i % 300);
check(decode(encode(longArr)).length === 70000, 'msgpack long array');
let e = null;
try {
  decode(new Uint8Array([0x92, 0x01]));
} catch (x) {
  e = x;
}
check(e && /truncated/.test(e.message), 'msgpack truncated');
console.log(`ok ${checks} checks`);
