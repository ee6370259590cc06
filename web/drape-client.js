// drape-client.js: the JavaScript client of Drape's stream (GET /v1/stream,
// docs/protocol.md). An ES module for browsers and node (node uses the `ws`
// package when there is no global WebSocket).
//
//   import { connect } from './drape-client.js';
//   const client = connect('ws://127.0.0.1:8080/v1/stream', {
//     onFrame: ({ avatar, seq, positions, rtt, serverMs }) => { ... },
//   });
//   const opened = await client.openAvatar({ avatar: 1, garment: 'skirt', betas: [0.5], format: 'meshopt' });
//   client.sendPose(1, seq, pose72, [0, 0, 0]);
//   client.sendPose(1, seq + 1, firstPose72, trans, { reset: true }); // a cut: a clip looped
//   const { pose, trans } = poseFromSkeleton(threeSkeleton); // your own rig (rig.js)
//
// In a browser the bare import below needs an import map entry
// "meshoptimizer/": "/node_modules/meshoptimizer/" (web/index.html has it).
// Errors are DrapeError with a `code`: the server's codes (unknown_garment,
// not_open, bad_betas, ...) or the client's own: unreachable, closed,
// protocol, bad_frame, timeout, shutdown.

import { MeshoptDecoder } from 'meshoptimizer/meshopt_decoder.module.js';
import { encode as mpEncode, decode as mpDecode } from './msgpack.js';

export { poseFromSkeleton, MIXAMO_MAP, SMPL_JOINTS } from './rig.js';

const WebSocketImpl = globalThis.WebSocket ?? (await import('ws')).default;

export const FORMATS = ['f32', 'f16', 'q16', 'meshopt'];
export const MODES = ['neural', 'lbs', 'physics'];

export class DrapeError extends Error {
  constructor(code, message, extra = {}) {
    super(message);
    this.name = 'DrapeError';
    this.code = code;
    if (extra.avatar !== undefined) this.avatar = extra.avatar;
    if (extra.seq !== undefined) this.seq = extra.seq;
    if (extra.closeCode !== undefined) this.closeCode = extra.closeCode;
  }
}

// ---- vertex decoding (shared with the viewer) ----

let halfTable = null;

// IEEE half (uint16 bit pattern) → number; exact (every half is a float32).
export function halfToFloat(h) {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

function halves() {
  if (!halfTable) {
    halfTable = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) halfTable[h] = halfToFloat(h);
  }
  return halfTable;
}

// Bytes per vertex of each format (meshopt: the decoded, padded q16 vertex).
export function formatBytes(format) {
  return { f32: 12, f16: 6, q16: 6, meshopt: 8 }[format];
}

function u16At(bytes, i) {
  return bytes[2 * i] | (bytes[2 * i + 1] << 8);
}

// One frame's `data` → positions (Float32Array, count*3), decoded in place
// into `out` (allocated when missing or too small). `scratch` is a
// Uint8Array of at least count*8 bytes for meshopt (allocated when missing);
// pass the same one every frame to avoid allocating. Returns out.
//   frame: {format, count, bbox[6], data}: data a Uint8Array (msgpack) or
//   an array of numbers (JSON: floats for f32, uint16 values for f16/q16,
//   bytes for meshopt).
export function decodeFrame(frame, out, scratch) {
  const { format, count, bbox, data } = frame;
  const n = count * 3;
  if (!out || out.length < n) out = new Float32Array(n);
  const bin = data instanceof Uint8Array;
  const fail = (why) => {
    throw new DrapeError('bad_frame', `${format} frame of ${count} vertices: ${why}`);
  };
  if (format === 'f32') {
    if (bin) {
      if (data.length !== n * 4) fail(`${data.length} bytes, expected ${n * 4}`);
      const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
      for (let i = 0; i < n; i++) out[i] = dv.getFloat32(4 * i, true);
    } else {
      if (data.length !== n) fail(`${data.length} numbers, expected ${n}`);
      for (let i = 0; i < n; i++) out[i] = data[i];
    }
    return out;
  }
  if (format === 'f16') {
    const t = halves();
    if ((bin ? data.length / 2 : data.length) !== n) fail(`data holds ${bin ? data.length / 2 : data.length} values, expected ${n}`);
    for (let i = 0; i < n; i++) out[i] = t[bin ? u16At(data, i) : data[i]];
    return out;
  }
  if (format !== 'q16' && format !== 'meshopt') fail('unknown format');
  if (!bbox || bbox.length !== 6) fail('no bbox');
  if (format === 'q16') {
    if ((bin ? data.length / 2 : data.length) !== n) fail(`data holds ${bin ? data.length / 2 : data.length} values, expected ${n}`);
    for (let i = 0; i < n; i++) out[i] = dequant(bin ? u16At(data, i) : data[i], bbox, i % 3);
    return out;
  }
  {
    if (!scratch || scratch.length < count * 8) scratch = new Uint8Array(count * 8);
    const src = bin ? data : Uint8Array.from(data);
    try {
      MeshoptDecoder.decodeVertexBuffer(scratch, count, 8, src);
    } catch (e) {
      fail(`meshopt decoder: ${e.message}`);
    }
    for (let v = 0; v < count; v++) {
      for (let k = 0; k < 3; k++) out[3 * v + k] = dequant(u16At(scratch, 4 * v + k), bbox, k);
    }
  }
  return out;
}

function dequant(q, bbox, k) {
  // the server's floats: JSON's 9 digits read back as doubles are not them
  const lo = Math.fround(bbox[k]);
  const hi = Math.fround(bbox[k + 3]);
  return hi > lo ? lo + (q / 65535) * (hi - lo) : lo;
}

// The worst absolute error per coordinate of a format (docs/protocol.md
// section 3), the same bound as the C drape_pack_error_bound.
export function errorBound(format, bbox) {
  let m = 0;
  let ext = 0;
  for (let k = 0; k < 3; k++) {
    m = Math.max(m, Math.abs(bbox[k]), Math.abs(bbox[k + 3]));
    ext = Math.max(ext, bbox[k + 3] - bbox[k]);
  }
  if (format === 'f32') return 0;
  if (format === 'f16') return m >= 65520 ? Infinity : m * 2 ** -11 + 2 ** -25;
  return ext / 131070 + m * 2 ** -23;
}

// ---- the client ----

const key = (a) => (typeof a === 'number' ? `n:${a}` : `s:${a}`);
// what the server takes as an avatar (docs/protocol.md): an error about any
// other names no avatar, so its open would only time out
const validAvatar = (a) =>
  (Number.isSafeInteger(a) && a >= 0) ||
  (typeof a === 'string' && a.length > 0 && !a.includes('\0') && new TextEncoder().encode(a).length <= 64);

export const ready = MeshoptDecoder.ready;

class DrapeClient {
  constructor(url, opts) {
    this.url = url;
    this.opts = {
      encoding: 'msgpack', // or 'json' (text frames)
      reconnect: true,
      backoffMs: 250, // first retry delay; doubles up to maxBackoffMs
      maxBackoffMs: 8000,
      openTimeoutMs: 30000,
      ...opts,
    };
    this.avatars = new Map(); // key → {spec, opened, out, scratch, sent: Map seq→time, pending}
    this.state = 'connecting';
    this.attempt = 0;
    this.ws = null;
    this.closedByUser = false;
    this.waiters = [];
    this.timer = null;
    this.dial();
  }

  emit(name, ...args) {
    const f = this.opts[name];
    if (f) f(...args);
  }

  setState(s, info) {
    this.state = s;
    this.emit('onStatus', s, info);
  }

  dial() {
    let ws;
    try {
      ws = new WebSocketImpl(this.url);
    } catch (e) {
      this.fail(new DrapeError('unreachable', `cannot open ${this.url}: ${e.message}`));
      return;
    }
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    let wasOpen = false;
    ws.onopen = () => {
      wasOpen = true;
      this.attempt = 0;
      this.setState('open');
      for (const a of this.avatars.values()) {
        a.opened = null;
        a.sent.clear();
        this.sendOpen(a);
      }
      const w = this.waiters;
      this.waiters = [];
      for (const f of w) f.resolve(this);
    };
    ws.onmessage = (ev) => this.receive(ev.data);
    ws.onerror = () => {}; // the close event that follows says what happened
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      const err = wasOpen
        ? new DrapeError('closed', `connection closed (code ${ev.code}${ev.reason ? `: ${ev.reason}` : ''})`, { closeCode: ev.code })
        : new DrapeError('unreachable', `cannot connect to ${this.url}`, { closeCode: ev.code });
      this.fail(err);
    };
  }

  fail(err) {
    if (this.closedByUser) {
      this.setState('closed');
      return;
    }
    this.emit('onError', err);
    // avatars waiting for `opened` on this connection fail now; their specs stay for the re-open
    for (const a of this.avatars.values()) {
      if (a.pending) {
        a.pending.reject(err);
        a.pending = null;
      }
    }
    if (!this.opts.reconnect) {
      this.setState('closed', err);
      this.rejectWaiters(err);
      return;
    }
    const delay = Math.min(this.opts.maxBackoffMs, this.opts.backoffMs * 2 ** this.attempt);
    this.attempt++;
    this.setState('reconnecting', { error: err, delayMs: delay, attempt: this.attempt });
    this.timer = setTimeout(() => {
      this.timer = null;
      if (!this.closedByUser) this.dial();
    }, delay);
  }

  rejectWaiters(err) {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f.reject(err);
  }

  // Resolves once the socket is open (now, or after the next (re)connect).
  connected() {
    if (this.state === 'open') return Promise.resolve(this);
    if (this.state === 'closed') return Promise.reject(new DrapeError('closed', 'client is closed'));
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  send(msg) {
    if (!this.ws || this.ws.readyState !== 1) return false;
    if (this.opts.encoding === 'json') this.ws.send(JSON.stringify(msg));
    else this.ws.send(mpEncode(msg));
    return true;
  }

  sendOpen(a) {
    const { avatar, garment, identity, betas, format, mode } = a.spec;
    const m = { op: 'open', avatar };
    // identity, garment (+ betas), or both: with both the recipe re-creates an
    // id that a replica the client reconnected to does not know
    if (identity) m.identity = identity;
    if (garment) m.garment = garment;
    if (betas && garment) m.betas = Array.from(betas);
    if (format) m.format = format;
    if (mode) m.mode = mode;
    this.send(m);
  }

  // Opens an avatar (kept and re-opened after a reconnect). Resolves with the
  // server's `opened` {avatar, identity, garment, vertices, format, mode};
  // rejects with a DrapeError (unknown_garment, bad_betas, already_open, ...).
  openAvatar(spec) {
    if (!validAvatar(spec.avatar)) {
      return Promise.reject(new DrapeError('bad_field', 'avatar: an integer 0 .. 2^53-1 or a string of 1-64 bytes'));
    }
    if (spec.format && !FORMATS.includes(spec.format)) {
      return Promise.reject(new DrapeError('bad_field', `format '${spec.format}' is not one of ${FORMATS.join(', ')}`));
    }
    const k = key(spec.avatar);
    if (this.avatars.has(k)) return Promise.reject(new DrapeError('already_open', `avatar ${spec.avatar} is already open`));
    const a = { spec: { ...spec }, opened: null, out: null, scratch: null, sent: new Map(), pending: null };
    this.avatars.set(k, a);
    const p = new Promise((resolve, reject) => {
      a.pending = { resolve, reject };
    });
    const t = setTimeout(() => {
      if (a.pending) {
        a.pending.reject(new DrapeError('timeout', `no answer to open of avatar ${spec.avatar}`));
        a.pending = null;
        // forgotten, as a failed open is (not re-opened on a reconnect); an
        // answer that comes late is closed
        if (this.avatars.get(k) === a) this.closeAvatar(spec.avatar);
      }
    }, this.opts.openTimeoutMs);
    p.finally(() => clearTimeout(t)).catch(() => {});
    if (this.state === 'open') this.sendOpen(a);
    return p;
  }

  // Sends one pose (72 axis-angle numbers, SMPL order) and translation (3, optional).
  // opts.reset: this pose is a cut (a clip looped or changed, a teleport): the
  // server starts the avatar's pose history again here (docs/protocol.md).
  // Returns false when the socket is not open (the pose is not sent).
  sendPose(avatar, seq, pose, trans, opts) {
    if (pose.length !== 72) throw new DrapeError('bad_field', `pose: expected 72 numbers, got ${pose.length}`);
    const m = { op: 'pose', avatar, seq, pose: Array.from(pose) };
    if (trans) m.trans = Array.from(trans);
    if (opts && opts.reset) m.reset = true;
    const ok = this.send(m);
    const a = this.avatars.get(key(avatar));
    if (ok && a) {
      a.sent.set(seq, now());
      if (a.sent.size > 1024) a.sent.delete(a.sent.keys().next().value);
    }
    return ok;
  }

  closeAvatar(avatar) {
    const a = this.avatars.get(key(avatar));
    if (a && a.pending) {
      a.pending.reject(new DrapeError('closed', `avatar ${avatar} was closed before it opened`));
      a.pending = null;
    }
    this.avatars.delete(key(avatar));
    this.send({ op: 'close', avatar });
  }

  // Closes the socket (code 1000) and stops reconnecting.
  close() {
    this.closedByUser = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const ws = this.ws;
    this.ws = null;
    if (ws) ws.close(1000);
    this.setState('closed');
    this.rejectWaiters(new DrapeError('closed', 'client closed'));
    for (const a of this.avatars.values()) {
      if (a.pending) a.pending.reject(new DrapeError('closed', 'client closed'));
      a.pending = null;
    }
  }

  receive(data) {
    const bytes = typeof data === 'string' ? data.length : data.byteLength;
    let m;
    try {
      m = typeof data === 'string' ? JSON.parse(data) : mpDecode(new Uint8Array(data));
    } catch (e) {
      this.emit('onError', new DrapeError('protocol', `unreadable server message: ${e.message}`));
      return;
    }
    if (!m || typeof m !== 'object') {
      this.emit('onError', new DrapeError('protocol', 'server message is not a map'));
      return;
    }
    const a = m.avatar !== undefined ? this.avatars.get(key(m.avatar)) : undefined;
    switch (m.op) {
      case 'opened':
        if (a) {
          a.opened = m;
          if (a.pending) a.pending.resolve(m);
          a.pending = null;
        }
        this.emit('onOpened', m);
        break;
      case 'frame':
        this.frame(m, a, bytes);
        break;
      case 'error': {
        const err = new DrapeError(m.code || 'internal', m.message || 'server error', m);
        if (a && !a.opened && m.seq === undefined) {
          // the open failed, the first or a re-open after a reconnect: forget
          // the avatar so it is not re-opened; err.openFailed tells the app
          err.openFailed = true;
          if (a.pending) a.pending.reject(err);
          a.pending = null;
          this.avatars.delete(key(m.avatar));
        }
        if (a && m.seq !== undefined) a.sent.delete(m.seq);
        this.emit('onError', err);
        break;
      }
      case 'closed':
        this.emit('onClosed', m);
        break;
      default:
        this.emit('onError', new DrapeError('protocol', `unknown server op '${m.op}'`));
    }
  }

  frame(m, a, bytes) {
    if (!a) return; // an avatar closed meanwhile
    if (m.format === 'meshopt' && (!a.scratch || a.scratch.length < m.count * 8)) a.scratch = new Uint8Array(m.count * 8);
    let positions;
    try {
      positions = decodeFrame(m, a.out, a.scratch);
    } catch (e) {
      this.emit('onError', e instanceof DrapeError ? e : new DrapeError('bad_frame', e.message));
      return;
    }
    a.out = positions;
    let rtt;
    const t = a.sent.get(m.seq);
    if (t !== undefined) rtt = now() - t;
    // this seq and every earlier one are accounted for (answered or dropped)
    for (const s of a.sent.keys()) {
      if (s <= m.seq) a.sent.delete(s);
      else break;
    }
    const tm = m.timing || {};
    const serverMs = ((tm.queue || 0) + (tm.compute || 0) + (tm.pack || 0)) / 1000;
    this.emit('onFrame', {
      avatar: m.avatar,
      seq: m.seq,
      count: m.count,
      format: m.format,
      bbox: m.bbox,
      positions: positions.length === m.count * 3 ? positions : positions.subarray(0, m.count * 3),
      rtt,
      serverMs,
      bytes,
      dropped: m.dropped || 0,
      timing: tm,
    });
  }
}

function now() {
  return globalThis.performance ? performance.now() : Date.now();
}

// Opens a client on url (ws://HOST:PORT/v1/stream). It connects in the
// background and reconnects with exponential backoff when the connection
// fails or closes (opts.reconnect, default true), re-opening its avatars.
// opts: encoding ('msgpack' | 'json'), reconnect, backoffMs, maxBackoffMs,
// openTimeoutMs, and callbacks onFrame(f), onOpened(m), onClosed(m),
// onError(DrapeError), onStatus(state, info) with state one of connecting,
// open, reconnecting, closed.
export function connect(url, opts = {}) {
  return new DrapeClient(url, opts);
}
