// A small MessagePack codec for the Drape stream (docs/protocol.md): what the
// client sends (maps, strings, non-negative integers, float arrays) and what
// the server answers (maps, strings, integers, floats, bin, arrays, nil,
// booleans). Integers beyond 2^53 are refused (avatar keys and seqs stay below
// it); ext types are not used by Drape and are refused.

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder('utf-8', { fatal: true });

export class MsgpackError extends Error {}

// ---- encoding ----

class Writer {
  constructor() {
    this.buf = new Uint8Array(1024);
    this.view = new DataView(this.buf.buffer);
    this.len = 0;
  }

  reserve(n) {
    if (this.len + n <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < this.len + n) cap *= 2;
    const b = new Uint8Array(cap);
    b.set(this.buf.subarray(0, this.len));
    this.buf = b;
    this.view = new DataView(b.buffer);
  }

  u8(v) {
    this.reserve(1);
    this.buf[this.len++] = v;
  }

  u16(v) {
    this.reserve(2);
    this.view.setUint16(this.len, v);
    this.len += 2;
  }

  u32(v) {
    this.reserve(4);
    this.view.setUint32(this.len, v);
    this.len += 4;
  }

  bytes(b) {
    this.reserve(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
  }

  lengthHeader(n, fix, fixMax, c8, c16, c32) {
    if (n <= fixMax) this.u8(fix | n);
    else if (c8 !== null && n < 0x100) { this.u8(c8); this.u8(n); }
    else if (n < 0x10000) { this.u8(c16); this.u16(n); }
    else { this.u8(c32); this.u32(n); }
  }

  value(v) {
    if (v === null || v === undefined) return this.u8(0xc0);
    if (v === false) return this.u8(0xc2);
    if (v === true) return this.u8(0xc3);
    if (typeof v === 'number') return this.number(v);
    if (typeof v === 'string') {
      const b = textEncoder.encode(v);
      this.lengthHeader(b.length, 0xa0, 31, 0xd9, 0xda, 0xdb);
      return this.bytes(b);
    }
    if (v instanceof Uint8Array) {
      this.lengthHeader(v.length, 0, -1, 0xc4, 0xc5, 0xc6);
      return this.bytes(v);
    }
    if (Array.isArray(v) || ArrayBuffer.isView(v)) {
      this.lengthHeader(v.length, 0x90, 15, null, 0xdc, 0xdd);
      for (let i = 0; i < v.length; i++) this.value(v[i]);
      return undefined;
    }
    if (typeof v === 'object') {
      const keys = Object.keys(v).filter((k) => v[k] !== undefined);
      this.lengthHeader(keys.length, 0x80, 15, null, 0xde, 0xdf);
      for (const k of keys) {
        this.value(k);
        this.value(v[k]);
      }
      return undefined;
    }
    throw new MsgpackError(`cannot encode a ${typeof v}`);
  }

  number(v) {
    if (Number.isInteger(v) && v >= 0 && v <= Number.MAX_SAFE_INTEGER) {
      if (v < 0x80) return this.u8(v);
      if (v < 0x100) { this.u8(0xcc); return this.u8(v); }
      if (v < 0x10000) { this.u8(0xcd); return this.u16(v); }
      if (v < 0x100000000) { this.u8(0xce); return this.u32(v); }
      this.u8(0xcf);
      this.u32(Math.floor(v / 0x100000000));
      return this.u32(v >>> 0);
    }
    if (Number.isInteger(v) && v < 0 && v >= -0x80000000) {
      if (v >= -32) return this.u8(v & 0xff);
      this.u8(0xd2);
      this.reserve(4);
      this.view.setInt32(this.len, v);
      this.len += 4;
      return undefined;
    }
    // Drape's numbers are float32 on the server; float64 keeps what the caller gave.
    this.u8(0xcb);
    this.reserve(8);
    this.view.setFloat64(this.len, v);
    this.len += 8;
    return undefined;
  }
}

// Encodes one value; returns a Uint8Array (a view of a fresh buffer).
export function encode(value) {
  const w = new Writer();
  w.value(value);
  return w.buf.subarray(0, w.len);
}

// ---- decoding ----

class Reader {
  constructor(bytes) {
    this.b = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.pos = 0;
  }

  need(n) {
    if (this.pos + n > this.b.length) throw new MsgpackError('truncated message');
  }

  u8() { this.need(1); return this.b[this.pos++]; }
  u16() { this.need(2); const v = this.view.getUint16(this.pos); this.pos += 2; return v; }
  u32() { this.need(4); const v = this.view.getUint32(this.pos); this.pos += 4; return v; }

  take(n) {
    this.need(n);
    const s = this.b.subarray(this.pos, this.pos + n);
    this.pos += n;
    return s;
  }

  str(n) { return textDecoder.decode(this.take(n)); }

  array(n) {
    const a = new Array(n);
    for (let i = 0; i < n; i++) a[i] = this.value();
    return a;
  }

  map(n) {
    const o = {};
    for (let i = 0; i < n; i++) {
      const k = this.value();
      if (typeof k !== 'string' && typeof k !== 'number') throw new MsgpackError('map key is not a string');
      o[k] = this.value();
    }
    return o;
  }

  u64() {
    const hi = this.u32();
    const lo = this.u32();
    if (hi >= 0x200000) throw new MsgpackError('integer beyond 2^53');
    return hi * 0x100000000 + lo;
  }

  value() {
    const c = this.u8();
    if (c < 0x80) return c;
    if (c >= 0xe0) return c - 0x100;
    if ((c & 0xf0) === 0x80) return this.map(c & 0x0f);
    if ((c & 0xf0) === 0x90) return this.array(c & 0x0f);
    if ((c & 0xe0) === 0xa0) return this.str(c & 0x1f);
    let v;
    switch (c) {
      case 0xc0: return null;
      case 0xc2: return false;
      case 0xc3: return true;
      case 0xc4: return this.take(this.u8());
      case 0xc5: return this.take(this.u16());
      case 0xc6: return this.take(this.u32());
      case 0xca: this.need(4); v = this.view.getFloat32(this.pos); this.pos += 4; return v;
      case 0xcb: this.need(8); v = this.view.getFloat64(this.pos); this.pos += 8; return v;
      case 0xcc: return this.u8();
      case 0xcd: return this.u16();
      case 0xce: return this.u32();
      case 0xcf: return this.u64();
      case 0xd0: this.need(1); return this.view.getInt8(this.pos++);
      case 0xd1: this.need(2); v = this.view.getInt16(this.pos); this.pos += 2; return v;
      case 0xd2: this.need(4); v = this.view.getInt32(this.pos); this.pos += 4; return v;
      case 0xd3: {
        this.need(8);
        const big = this.view.getBigInt64(this.pos);
        this.pos += 8;
        if (big > BigInt(Number.MAX_SAFE_INTEGER) || big < BigInt(-Number.MAX_SAFE_INTEGER)) {
          throw new MsgpackError('integer beyond 2^53');
        }
        return Number(big);
      }
      case 0xd9: return this.str(this.u8());
      case 0xda: return this.str(this.u16());
      case 0xdb: return this.str(this.u32());
      case 0xdc: return this.array(this.u16());
      case 0xdd: return this.array(this.u32());
      case 0xde: return this.map(this.u16());
      case 0xdf: return this.map(this.u32());
      default: throw new MsgpackError(`unsupported msgpack type 0x${c.toString(16)}`);
    }
  }
}

// Decodes exactly one value from bytes (Uint8Array or ArrayBuffer). bin
// values come back as Uint8Array views into bytes (no copy).
export function decode(bytes) {
  const b = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  const r = new Reader(b);
  const v = r.value();
  if (r.pos !== b.length) throw new MsgpackError('trailing bytes after the message');
  return v;
}
