// web/drape-client.js without a draped: reconnection with exponential backoff
// (avatars re-opened on the new connection), typed errors for an unreachable
// server, and a server error rejecting openAvatar. The server here is a few
// lines on the `ws` package speaking msgpack like draped.
//   node tests/js/client_reconnect.mjs
// Prints one JSON line; exit 1 with a message on failure.
const { WebSocketServer } = await import(new URL('../../web/node_modules/ws/wrapper.mjs', import.meta.url).href);
import { connect, DrapeError } from '../../web/drape-client.js';
import { encode, decode } from '../../web/msgpack.js';

const die = (msg) => {
  console.error(`client_reconnect: ${msg}`);
  process.exit(1);
};
setTimeout(() => die('timed out'), 20000).unref();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, cond, ms = 5000) {
  for (const t0 = Date.now(); !cond(); await sleep(10)) if (Date.now() - t0 > ms) die(`waiting for ${what}`);
}

// A fake stream server: answers open with opened (1 vertex), pose with an f32
// frame at (seq, 2, 3); drops the first connection right after its first open.
const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
await new Promise((r) => wss.on('listening', r));
const port = wss.address().port;
let connections = 0;
const opens = [];
wss.on('connection', (sock) => {
  const n = ++connections;
  sock.on('message', (data) => {
    const m = decode(new Uint8Array(data));
    if (m.op === 'open') {
      opens.push({ connection: n, avatar: m.avatar, garment: m.garment, format: m.format });
      if (m.garment === 'ballgown') {
        sock.send(encode({ op: 'error', code: 'unknown_garment', message: "unknown garment 'ballgown'", avatar: m.avatar }));
        return;
      }
      sock.send(encode({ op: 'opened', avatar: m.avatar, identity: 'beef', garment: m.garment, vertices: 1, format: 'f32', mode: 'neural' }));
      if (n === 1) setTimeout(() => sock.close(1001, 'going away'), 20);
    } else if (m.op === 'pose') {
      const data = new Uint8Array(new Float32Array([m.seq, 2, 3]).buffer);
      sock.send(encode({ op: 'frame', avatar: m.avatar, seq: m.seq, format: 'f32', count: 1, bbox: [m.seq, 2, 3, m.seq, 2, 3], data, timing: { queue: 100, compute: 200, pack: 50 }, dropped: 0 }));
    }
  });
});

const states = [];
const errors = [];
const frames = [];
let openedCount = 0;
const client = connect(`ws://127.0.0.1:${port}/v1/stream`, {
  backoffMs: 40,
  maxBackoffMs: 200,
  onStatus: (s, info) => states.push(info && info.delayMs !== undefined ? `${s}:${info.delayMs}` : s),
  onError: (e) => errors.push(e),
  onOpened: () => openedCount++,
  onFrame: (f) => frames.push({ seq: f.seq, x: f.positions[0], serverMs: f.serverMs, rtt: f.rtt }),
});
const opened = await client.openAvatar({ avatar: 'a', garment: 'skirt', format: 'f32' });
if (opened.vertices !== 1) die(`opened: ${JSON.stringify(opened)}`);
// the server drops the connection; the client reconnects and re-opens 'a'
await until('the re-open', () => openedCount === 2);
if (!errors.some((e) => e instanceof DrapeError && e.code === 'closed' && e.closeCode === 1001)) {
  die(`no 'closed' error with code 1001: ${errors.map((e) => e.code)}`);
}
if (opens.length !== 2 || opens[1].connection !== 2 || opens[1].avatar !== 'a') die(`opens: ${JSON.stringify(opens)}`);
client.sendPose('a', 5, new Array(72).fill(0), [0, 0, 0]);
await until('a frame', () => frames.length === 1);
if (frames[0].seq !== 5 || frames[0].x !== 5 || Math.abs(frames[0].serverMs - 0.35) > 1e-9 || !(frames[0].rtt >= 0)) {
  die(`frame: ${JSON.stringify(frames[0])}`);
}
// a server error rejects openAvatar with its code
let e = null;
await client.openAvatar({ avatar: 'b', garment: 'ballgown' }).catch((x) => { e = x; });
if (!(e instanceof DrapeError) || e.code !== 'unknown_garment') die(`unknown garment: ${e}`);

// the server goes away: retries back off 40, 80, 160, 200 (capped) ms
for (const s of wss.clients) s.terminate();
await new Promise((r) => wss.close(r));
await until('four retries', () => states.filter((s) => s.startsWith('reconnecting')).length >= 5);
client.close();
const delays = states.filter((s) => s.startsWith('reconnecting')).map((s) => Number(s.split(':')[1]));
// the first entry is the drop after open (attempt 0, 40 ms); then the failed dials
if (delays.slice(0, 5).join(',') !== '40,40,80,160,200') die(`backoff delays ${delays}`);
if (!errors.some((x) => x.code === 'unreachable')) die('no unreachable error while the server was gone');
if (states[states.length - 1] !== 'closed') die(`last state ${states[states.length - 1]}`);

// unreachable without reconnecting: connected() rejects with 'unreachable'
const c2 = connect(`ws://127.0.0.1:${port}/v1/stream`, { reconnect: false });
let e3 = null;
await c2.connected().catch((x) => { e3 = x; });
if (!(e3 instanceof DrapeError) || e3.code !== 'unreachable') die(`unreachable: ${e3}`);
console.log(JSON.stringify({ states, delays: delays.slice(0, 5), opens: opens.length }));
process.exit(0);
