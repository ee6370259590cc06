// Shared by the browser tests: a minimal PNG reader (8-bit RGB or RGBA, not
// interlaced: what Chromium writes) and a mask of the page's DOM overlays.
import { inflateSync } from 'node:zlib';

export function readPng(buf) {
  if (buf.readUInt32BE(0) !== 0x89504e47) throw new Error('not a PNG');
  let pos = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat = [];
  while (pos < buf.length) {
    const len = buf.readUInt32BE(pos);
    const type = buf.toString('latin1', pos + 4, pos + 8);
    const data = buf.subarray(pos + 8, pos + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const depth = data[8];
      const color = data[9];
      if (depth !== 8 || (color !== 2 && color !== 6) || data[12] !== 0) {
        throw new Error(`unsupported PNG: depth ${depth}, color type ${color}, interlace ${data[12]}`);
      }
      channels = color === 6 ? 4 : 3;
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    pos += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const px = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const out = px.subarray(y * stride, (y + 1) * stride);
    const prev = y ? px.subarray((y - 1) * stride, y * stride) : new Uint8Array(stride);
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? out[i - channels] : 0;
      const b = prev[i];
      const c = i >= channels ? prev[i - channels] : 0;
      let pred = 0;
      if (filter === 1) pred = a;
      else if (filter === 2) pred = b;
      else if (filter === 3) pred = (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      } else if (filter !== 0) throw new Error(`bad PNG filter ${filter}`);
      out[i] = (line[i] + pred) & 0xff;
    }
  }
  return { width, height, channels, px };
}

// The page's rectangles drawn over the canvas (the control panel, the
// overlay, the banner, the avatars' labels), as [x0, y0, x1, y1] in CSS
// pixels: pixels there are not the scene's (the panel's sliders are blue).
export async function domMask(page) {
  return page.evaluate(() => [...document.querySelectorAll('#panel, #overlay, #message, .avatar-label, #drop-hint')]
    .filter((el) => !el.hidden && el.offsetParent !== null)
    .map((el) => {
      const r = el.getBoundingClientRect();
      return [Math.floor(r.left), Math.floor(r.top), Math.ceil(r.right), Math.ceil(r.bottom)];
    }));
}

// Counts the pixels of a PNG outside the mask that classify(r, g, b) accepts;
// returns {count, scene} (scene: the pixels outside the mask).
export function countPixels(png, mask, classify) {
  let count = 0;
  let scene = 0;
  for (let y = 0; y < png.height; y++) {
    for (let x = 0; x < png.width; x++) {
      if (mask.some((m) => x >= m[0] && x < m[2] && y >= m[1] && y < m[3])) continue;
      scene++;
      const i = (y * png.width + x) * png.channels;
      if (classify(png.px[i], png.px[i + 1], png.px[i + 2])) count++;
    }
  }
  return { count, scene };
}

// the garment's blue (0x2f6fe0, lit) and the body's skin (0xc9b8a6, lit)
export const isGarment = (r, g, b) => b > 90 && b > r + 50 && b > g + 20;
export const isBody = (r, g, b) => r > 70 && r >= g && g >= b - 4 && r - b > 8 && r - b < 90;
