// web/drape-client.js without a draped: reconnection with exponential backoff
// (avatars re-opened on the new connection), typed errors for an unreachable
// server, a server error rejecting openAvatar, and a re-open that fails
// after a reconnect forgetting its avatar (it once stayed, was re-opened on
// every reconnect, and its poses flooded the server with not_open), as an
// open that timed out does; an identity sent with its recipe; an avatar key
// the server would not take refused at once. The server here is a few
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
let flakyOpens = 0;
wss.on('connection', (sock) => {
  const n = ++connections;
  sock.on('message', (data) => {
    const m = decode(new Uint8Array(data));
    if (m.op === 'open') {
      opens.push({ connection: n, avatar: m.avatar, garment: m.garment, identity: m.identity, betas: m.betas, format: m.format });
      if (m.garment === 'silent') return; // no answer: the client's open times out
      // 'flaky' opens once; its re-open on the next connection fails (another replica, say)
      if (m.garment === 'flaky' && ++flakyOpens > 1) {
        sock.send(encode({ op: 'error', code: 'unknown_identity', message: 'unknown identity', avatar: m.avatar }));
        return;
      }
      if (m.garment === 'ballgown') {
        sock.send(encode({ op: 'error', code: 'unknown_garment', message: "unknown garment 'ballgown'", avatar: m.avatar }));
        return;
      }
      sock.send(encode({ op: 'opened', avatar: m.avatar, identity: 'beef', garment: m.garment, vertices: 1, format: 'f32', mode: 'neural' }));
      if (n === 1) setTimeout(() => sock.close(1001, 'going away'), 20);
    } else if (m.op === 'pose' && m.seq === 99) {
      sock.close(1001, 'going away'); // a reconnect on demand
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
let openedA = 0;
const client = connect(`ws://127.0.0.1:${port}/v1/stream`, {
  backoffMs: 40,
  maxBackoffMs: 200,
  openTimeoutMs: 300,
  onStatus: (s, info) => states.push(info && info.delayMs !== undefined ? `${s}:${info.delayMs}` : s),
  onError: (e) => errors.push(e),
  onOpened: (m) => {
    openedCount++;
    if (m.avatar === 'a') openedA++;
  },
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

// an avatar key the server would not take: refused here, not left to time out
for (const bad of [1.5, -1, 2 ** 53, '', 'x'.repeat(65), 'a\0b']) {
  let eb = null;
  await client.openAvatar({ avatar: bad, garment: 'skirt' }).catch((x) => { eb = x; });
  if (!(eb instanceof DrapeError) || eb.code !== 'bad_field') die(`avatar ${JSON.stringify(bad)}: ${eb}`);
}
// an identity with its recipe: both go, as the protocol allows
await client.openAvatar({ avatar: 'r', identity: 'beef', garment: 'skirt', betas: [0.5] });
const r = opens.find((o) => o.avatar === 'r');
if (r.identity !== 'beef' || r.garment !== 'skirt' || r.betas?.[0] !== 0.5) die(`identity with its recipe: ${JSON.stringify(r)}`);
// an open that times out is forgotten (not re-opened below)
let et = null;
await client.openAvatar({ avatar: 's', garment: 'silent' }).catch((x) => { et = x; });
if (!(et instanceof DrapeError) || et.code !== 'timeout') die(`silent open: ${et}`);

// a re-open that fails after a reconnect: the error says which avatar and
// that its open failed, and the avatar is not re-opened on the next one
await client.openAvatar({ avatar: 'c', garment: 'flaky' });
let opened0 = openedA;
client.sendPose('a', 99, new Array(72).fill(0), [0, 0, 0]);
await until('the failed re-open', () => errors.some((x) => x.code === 'unknown_identity'));
const failed = errors.find((x) => x.code === 'unknown_identity');
if (failed.avatar !== 'c' || !failed.openFailed) die(`the failed re-open's error: ${JSON.stringify(failed)}`);
await until("'a' re-opened", () => openedA === opened0 + 1);
opened0 = openedA;
client.sendPose('a', 99, new Array(72).fill(0), [0, 0, 0]);
await until("'a' re-opened again", () => openedA === opened0 + 1);
await sleep(50);
if (flakyOpens !== 2) die(`'c' was opened ${flakyOpens} times, not twice (its failed re-open was retried)`);
const silent = opens.filter((o) => o.avatar === 's').length;
if (silent !== 1) die(`'s' (its open timed out) was sent ${silent} opens`);

// the server goes away: retries back off 40, 80, 160, 200 (capped) ms
const reconnects = () => states.filter((s) => s.startsWith('reconnecting'));
const drops = reconnects().length; // the drops after an open so far, each at 40 ms
for (const s of wss.clients) s.terminate();
await new Promise((r) => wss.close(r));
await until('four retries', () => reconnects().length >= drops + 4);
client.close();
const delays = reconnects().slice(drops - 1).map((s) => Number(s.split(':')[1]));
// the first entry is the last drop after an open (attempt 0, 40 ms); then the failed dials
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
