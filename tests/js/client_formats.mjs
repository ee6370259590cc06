// The JavaScript client's decoders against the C packers, through a real
// draped: opens one avatar per vertex format (in msgpack, and again in JSON
// text frames), sends each the same poses one at a time, and checks that the
// f16, q16 and meshopt positions decoded by web/drape-client.js agree with
// the f32 frame within the bounds of docs/protocol.md section 3, and that a
// quantized frame decodes to the same floats from JSON as from msgpack (the
// box read from JSON's digits rounded to the server's floats). Also: a pose
// before open and an unknown garment give the server's error codes.
//   node tests/js/client_formats.mjs ws://127.0.0.1:PORT/v1/stream [GARMENT]
// Prints one JSON line with what it checked; exit 1 with a message on failure.
import { connect, errorBound, DrapeError, FORMATS, ready } from '../../web/drape-client.js';

const [url, garment = 'skirt'] = process.argv.slice(2);
if (!url) {
  console.error('usage: node tests/js/client_formats.mjs WS_URL [GARMENT]');
  process.exit(2);
}
const die = (msg) => {
  console.error(`client_formats: ${msg}`);
  process.exit(1);
};
setTimeout(() => die('timed out'), 30000).unref();
await ready;

// a deterministic, clearly non-rest pose
function poseFor(seq) {
  const p = new Float32Array(72);
  for (let i = 0; i < 72; i++) p[i] = 0.25 * Math.sin(0.7 * i + 0.9 * seq);
  return p;
}

async function run(encoding) {
  let waiting = null;
  const errors = [];
  const client = connect(url, {
    encoding,
    reconnect: false,
    onFrame: (f) => {
      if (waiting && f.avatar === waiting.avatar && f.seq === waiting.seq) {
        const w = waiting;
        waiting = null;
        w.resolve({ ...f, positions: Float32Array.from(f.positions) });
      }
    },
    onError: (e) => {
      errors.push(e);
      if (waiting && e.avatar === waiting.avatar) waiting.reject(e);
    },
  });
  await client.connected();
  const opened = [];
  for (let i = 0; i < FORMATS.length; i++) {
    opened.push(await client.openAvatar({ avatar: i + 1, garment, betas: [0.5, -0.5], format: FORMATS[i] }));
  }
  const V = opened[0].vertices;
  if (!(V > 0) || opened.some((o, i) => o.vertices !== V || o.format !== FORMATS[i])) {
    die(`${encoding}: opened messages disagree: ${JSON.stringify(opened)}`);
  }
  let worst = {};
  for (let seq = 1; seq <= 3; seq++) {
    const pose = poseFor(seq);
    const trans = [0.01 * seq, 0, -0.02];
    const frames = [];
    // one avatar at a time: every frame is computed alone, so the four are the same computation
    for (let i = 0; i < FORMATS.length; i++) {
      const got = new Promise((resolve, reject) => {
        waiting = { avatar: i + 1, seq, resolve, reject };
      });
      if (!client.sendPose(i + 1, seq, pose, trans)) die(`${encoding}: socket not open`);
      frames.push(await got);
    }
    const ref = frames[0];
    if (ref.count !== V || ref.format !== 'f32') die(`${encoding}: bad f32 frame ${ref.count} ${ref.format}`);
    for (let i = 1; i < FORMATS.length; i++) {
      const f = frames[i];
      if (f.format !== FORMATS[i] || f.count !== V) die(`${encoding}: ${FORMATS[i]} frame says ${f.format}/${f.count}`);
      const bound = errorBound(f.format, f.bbox);
      let maxErr = 0;
      for (let j = 0; j < V * 3; j++) {
        const e = Math.abs(f.positions[j] - ref.positions[j]);
        if (!(e <= bound)) die(`${encoding} ${f.format} seq ${seq}: coordinate ${j}: ${f.positions[j]} vs f32 ${ref.positions[j]}, error ${e} > bound ${bound}`);
        maxErr = Math.max(maxErr, e);
      }
      worst[f.format] = Math.max(worst[f.format] || 0, maxErr / (bound || 1));
      const k = `${f.format}:${seq}`;
      if (!decoded.has(k)) decoded.set(k, Float32Array.from(f.positions));
      else {
        const a = decoded.get(k);
        for (let j = 0; j < V * 3; j++) {
          if (a[j] !== f.positions[j]) die(`${f.format} seq ${seq}: coordinate ${j} decodes to ${f.positions[j]} from ${encoding}, ${a[j]} from msgpack`);
        }
      }
      if (f.bytes >= ref.bytes && f.format !== 'f16') die(`${encoding}: ${f.format} frame (${f.bytes} B) not smaller than f32 (${ref.bytes} B)`);
    }
  }
  if (errors.length) die(`${encoding}: unexpected errors: ${errors.map((e) => `${e.code}: ${e.message}`).join('; ')}`);

  // error paths: a pose for an avatar that is not open; an unknown garment
  const notOpen = new Promise((resolve) => {
    waiting = { avatar: 99, seq: 1, resolve, reject: resolve };
  });
  client.sendPose(99, 1, poseFor(1));
  const e1 = await notOpen;
  if (!(e1 instanceof DrapeError) || e1.code !== 'not_open') die(`${encoding}: pose before open gave ${e1.code}: ${e1.message}`);
  let e2 = null;
  try {
    await client.openAvatar({ avatar: 100, garment: 'ballgown' });
  } catch (e) {
    e2 = e;
  }
  if (!(e2 instanceof DrapeError) || e2.code !== 'unknown_garment') die(`${encoding}: unknown garment gave ${e2 && e2.code}`);
  client.close();
  return { vertices: V, worst_error_over_bound: worst };
}

const decoded = new Map(); // format:seq → the msgpack run's positions
const out = { msgpack: await run('msgpack'), json: await run('json') };
console.log(JSON.stringify(out));
process.exit(0);
