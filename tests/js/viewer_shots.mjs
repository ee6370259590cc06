// The viewer as a user sees it, in headless Chromium (Debian's, through
// playwright-core, WebGL in software) against a draped serving the default
// model: screenshots over one loop of the shipped walk (a clip that travels
// 5 m and jumps back) at 1280×800 and at 800×600, the side-by-side view, the
// server's capture motions (draped run with --motions-dir of a clip this
// script writes with --motions-dir DIR) listed and one played, a BVH file
// dropped on the page and a file the server refuses, and the server's count
// of the cuts the page declared. docs/viewer.md ("Seeing it,
// tested") states the thresholds:
// - each avatar's body and garment, projected with the page's camera
//   (drapeStats.avatars[i].screen), lie inside the canvas and inside the part
//   the control panel leaves free;
// - the garment's blue covers ≥ 0.5 % and the body's skin ≥ 1 % of the
//   scene's pixels (outside the panel and overlays) in every screenshot;
// - each garment's world box lies inside its body's grown by 0.25 m;
// - the same in every frame the page renders over the loop and its cut
//   (drapeStats.track), not just in the screenshots.
//   node tests/js/viewer_shots.mjs BASE_URL ARTIFACT_DIR
// Prints one JSON line; exits 1 with a message on failure. The pictures are
// kept in ARTIFACT_DIR (shots-*.png).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { readPng, domMask, countPixels, isGarment, isBody } from './png.mjs';
import { REST_JOINTS } from '../../web/rig.js';

// --motions-dir DIR: writes a clip for draped's --motions-dir (the shipped
// turn as NAME.npy, float32 [T, 75], and index.json titling it) and exits.
if (process.argv[2] === '--motions-dir') {
  const out = process.argv[3];
  mkdirSync(out, { recursive: true });
  const clip = JSON.parse(readFileSync(new URL('../../web/clips/turn.json', import.meta.url)));
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${clip.frames}, 75), }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head.writeUInt16LE(header.length, 8);
  const data = Buffer.from(Float32Array.from(clip.data).buffer);
  writeFileSync(`${out}/turn_test.npy`, Buffer.concat([head, Buffer.from(header, 'latin1'), data]));
  writeFileSync(`${out}/index.json`, JSON.stringify({ turn_test: { title: 'Turn (test clip)', fps: clip.fps } }));
  process.exit(0);
}
const [base, dir] = process.argv.slice(2);
if (!base || !dir) {
  console.error('usage: node tests/js/viewer_shots.mjs BASE_URL ARTIFACT_DIR | --motions-dir DIR');
  process.exit(2);
}
mkdirSync(dir, { recursive: true });
import { launchChromium } from './browser.mjs';

const GARMENT_SHARE = 0.005;
const BODY_SHARE = 0.01;
const GROW = 0.25; // m
const TIME_SCALE = Math.max(1, Number(process.env.DRAPE_TEST_TIME_SCALE) || 1);

const die = (msg) => {
  console.error(`viewer_shots: ${msg} (timings ${JSON.stringify(result.ms)}, shots ${JSON.stringify(result.shots.map((r) => [r.name, r.ms]))})`);
  process.exit(1);
};

// A small BVH: Mixamo's bone names, SMPL's rest (T-pose) offsets in
// centimetres, 45 frames at 30 fps of a stride forward (hips swinging,
// knees bending, arms down and swinging).
function walkBvh(frames = 45) {
  const J = REST_JOINTS.map((p) => p.map((v) => v * 100));
  const tree = [
    ['Hips', 0, -1], ['LeftUpLeg', 1, 0], ['LeftLeg', 4, 1], ['LeftFoot', 7, 4], ['LeftToeBase', 10, 7],
    ['RightUpLeg', 2, 0], ['RightLeg', 5, 2], ['RightFoot', 8, 5], ['RightToeBase', 11, 8],
    ['Spine', 3, 0], ['Spine1', 6, 3], ['Spine2', 9, 6], ['Neck', 12, 9], ['Head', 15, 12],
    ['LeftShoulder', 13, 9], ['LeftArm', 16, 13], ['LeftForeArm', 18, 16], ['LeftHand', 20, 18],
    ['RightShoulder', 14, 9], ['RightArm', 17, 14], ['RightForeArm', 19, 17], ['RightHand', 21, 19],
  ];
  const order = [];
  const f = (v) => v.toFixed(4);
  const emit = (k, depth) => {
    const [name, j, p] = tree[k];
    const pad = '  '.repeat(depth);
    const off = p < 0 ? [0, 0, 0] : J[j].map((v, i) => v - J[p][i]);
    let s = `${pad}${p < 0 ? 'ROOT' : 'JOINT'} ${name}\n${pad}{\n${pad}  OFFSET ${off.map(f).join(' ')}\n`;
    s += `${pad}  CHANNELS ${p < 0 ? '6 Xposition Yposition Zposition' : '3'} Zrotation Xrotation Yrotation\n`;
    order.push(name);
    const kids = tree.map((t, i) => [t, i]).filter(([t]) => t[2] === j);
    if (!kids.length) s += `${pad}  End Site\n${pad}  {\n${pad}    OFFSET 0.0000 5.0000 0.0000\n${pad}  }\n`;
    for (const [, i] of kids) s += emit(i, depth + 1);
    return `${s}${pad}}\n`;
  };
  let text = `HIERARCHY\n${emit(0, 0)}MOTION\nFrames: ${frames}\nFrame Time: 0.0333333\n`;
  for (let t = 0; t < frames; t++) {
    const s = Math.sin((2 * Math.PI * t) / 30);
    const rot = {
      LeftUpLeg: [0, -25 * s, 0], RightUpLeg: [0, 25 * s, 0], LeftLeg: [0, 30 * Math.max(0, Math.cos((2 * Math.PI * t) / 30)), 0],
      RightLeg: [0, 30 * Math.max(0, -Math.cos((2 * Math.PI * t) / 30)), 0], LeftArm: [-70, 15 * s, 0], RightArm: [70, 15 * s, 0],
    };
    const row = [0, 93, 1.3 * t];
    for (const name of order) row.push(...(rot[name] || [0, 0, 0]));
    text += `${row.map(f).join(' ')}\n`;
  }
  return text;
}

const browser = await launchChromium();
const result = { shots: [] };
const T0 = Date.now();
const phase = (name) => {
  (result.ms ||= {})[name] = Date.now() - T0;
};
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const problems = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && !expectRefusal) problems.push(`console error: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
  let expectRefusal = false; // while a refused file's 400 is logged
  const stats = () => page.evaluate(() => JSON.parse(JSON.stringify(window.drapeStats)));
  // DRAPE_TEST_TIME_SCALE: `make check` runs draped under ASan, several
  // times slower, beside other tests; the waits stretch, the checks do not
  const until = (f, arg, ms, what) =>
    page.waitForFunction(f, arg, { timeout: ms * TIME_SCALE, polling: 50 })
      .catch(async () => die(`${what}: ${JSON.stringify(await stats())}`));
  const renders = (n) => page.evaluate((k) => new Promise((resolve) => {
    const step = () => (k-- > 0 ? requestAnimationFrame(step) : resolve());
    step();
  }), n);

  // Pauses the clip in the page as soon as when(drapeStats, arg) holds (the
  // last pose sent stays on screen; a click from here would come frames late).
  const pauseWhen = (when, arg, what) => until(new Function('arg', `
    const s = window.drapeStats;
    if (!(${when})) return false;
    if (document.getElementById('play').textContent === 'pause') document.getElementById('play').click();
    return true;`), arg, 20000, what);
  const pauseNow = () => pauseWhen('true', null, 'pause');

  // With the clip paused: waits for the last pose's frame, takes the
  // screenshot and checks it; plays again.
  async function shot(name, { play = true } = {}) {
    const t0 = Date.now();
    await pauseNow();
    await until(() => window.drapeStats.avatars.every((a) => a.seq === window.drapeStats.seq_sent), null, 10000, `${name}: the last pose's frame`);
    await renders(1);
    const tWait = Date.now() - t0;
    const file = `${dir}/shots-${name}.png`;
    await page.screenshot({ path: file });
    const tShot = Date.now() - t0;
    const st = await stats();
    const png = readPng(readFileSync(file));
    const mask = await domMask(page);
    const garment = countPixels(png, mask, isGarment);
    const body = countPixels(png, mask, isBody);
    const { width: w, height: h, free } = st.screen;
    const r = {
      name, clip: st.clip, clip_frame: st.clip_frame, loops: st.loops, size: [w, h],
      garment_share: +(garment.count / garment.scene).toFixed(4), body_share: +(body.count / body.scene).toFixed(4),
      avatars: st.avatars.map((a) => ({ mode: a.mode, frames: a.frames, screen: a.screen })),
      ms: [tWait, tShot],
    };
    result.shots.push(r);
    const bad = (why) => die(`${name} (${file}): ${why}: ${JSON.stringify(r)}`);
    if (png.width !== w || png.height !== h) bad(`the picture is ${png.width}×${png.height}`);
    if (r.garment_share < GARMENT_SHARE) bad(`the garment covers ${r.garment_share} of the scene (want ≥ ${GARMENT_SHARE})`);
    if (r.body_share < BODY_SHARE) bad(`the body covers ${r.body_share} of the scene (want ≥ ${BODY_SHARE})`);
    for (const a of st.avatars) {
      for (const part of ['body', 'garment']) {
        const b = a.screen[part];
        if (!b) bad(`avatar ${a.mode} has no ${part} drawn`);
        if (!(b[0] >= 0 && b[1] >= 0 && b[2] <= w && b[3] <= h)) bad(`avatar ${a.mode}'s ${part} [${b}] is not inside the ${w}×${h} canvas`);
        if (!(b[0] >= free[0] && b[2] <= free[2])) bad(`avatar ${a.mode}'s ${part} [${b}] is under the panel (free: ${free})`);
      }
      const g = a.world.garment;
      const bb = a.world.body;
      for (let k = 0; k < 3; k++) {
        if (g[k] < bb[k] - GROW || g[k + 3] > bb[k + 3] + GROW) bad(`avatar ${a.mode}'s garment box [${g}] is not inside its body's [${bb}] grown by ${GROW} m`);
      }
    }
    if (play) await page.evaluate(() => document.getElementById('play').click());
    r.ms.push(Date.now() - t0);
    return r;
  }

  // Five screenshots over one loop of the clip, then one right after its
  // cut; and every rendered frame of that loop checked through drapeStats.track.
  async function loopShots(label) {
    let st = await stats();
    const n = st.clip_frames;
    const targets = [0.1, 0.3, 0.5, 0.7, 0.9].map((f) => Math.round(f * n));
    // start with a loop: wait for the next cut if this one is past its first
    // target (the poses sent lead the frames shown by the round trip: the
    // shots pause on the pose sent, and show it once its frame is in)
    let loop = st.sent.loops;
    if (st.sent.clip_frame > targets[0]) {
      loop++;
      await until((l) => window.drapeStats.sent.loops >= l, loop, 20000, `${label}: the clip did not loop`);
    }
    await page.evaluate(() => {
      window.drapeStats.track = { renders: 0, outside: 0, garment_excess: 0 };
    });
    const frames = [];
    for (let k = 0; k < targets.length; k++) {
      await pauseWhen('s.sent.loops > arg[0] || s.sent.clip_frame >= arg[1]', [loop, targets[k]], `${label}: clip frame ${targets[k]}`);
      // (on a machine too busy to render twice a second the clip may jump
      // past the wrap: a stall, sent as a cut; the shot is then in the next pass)
      const r = await shot(`${label}-${k + 1}`);
      frames.push([r.loops, r.clip_frame]);
    }
    // the loop's cut: the first frames after it, the avatar back at the start, nothing flying
    loop = frames[frames.length - 1][0];
    await pauseWhen('s.sent.loops > arg', loop, `${label}: the clip did not loop`);
    const after = await shot(`${label}-after-loop`);
    if (after.loops !== loop + 1) die(`${label}: the shot after the loop shows loop ${after.loops}, not ${loop + 1}`);
    if (!(after.clip_frame < 0.25 * n)) die(`${label}: the shot after the loop is at clip frame ${after.clip_frame} of ${n}`);
    st = await stats();
    const t = st.track;
    if (!(t.renders > 20)) die(`${label}: only ${t.renders} frames rendered over the loop`);
    if (t.outside) die(`${label}: in ${t.outside} of ${t.renders} rendered frames a body or garment left the canvas`);
    if (!(t.garment_excess <= GROW)) die(`${label}: a garment stuck out of its body's box by ${t.garment_excess} m`);
    return { frames, after: [after.loops, after.clip_frame], track: t };
  }

  await page.goto(`${base}/?clip=shipped-walk`, { waitUntil: 'load' });
  await until(() => window.drapeStats && window.drapeStats.state === 'open' && window.drapeStats.clip_frame >= 0, null, 40000, 'no frame');
  const st0 = await stats();
  if (st0.clip !== 'shipped-walk' || st0.body !== 'server') die(`not the shipped walk on the server's body: ${JSON.stringify(st0)}`);
  phase('loaded');
  result.loop_1280x800 = await loopShots('1280x800');
  phase('1280x800');
  await page.setViewportSize({ width: 800, height: 600 });
  await renders(2);
  result.loop_800x600 = await loopShots('800x600');
  phase('800x600');

  // side by side: one avatar per mode the server offers, frames in each, all in the picture
  const model = await (await page.request.get(`${base}/v1/model`)).json();
  const modes = ['neural', 'lbs', 'physics'].filter((m) => model.modes.includes(m));
  if (await page.$eval('#compare-row', (el) => el.hidden)) die('no side-by-side switch');
  await page.check('#compare');
  await until((n) => window.drapeStats.avatars.length === n && window.drapeStats.avatars.every((a) => a.frames > 3), modes.length, 30000, 'side by side: frames in every avatar');
  const before = (await stats()).avatars.map((a) => a.frames);
  await until((b) => window.drapeStats.avatars.every((a, i) => a.frames >= b[i] + 5), before, 20000, 'side by side: frames stopped');
  const sbs = await shot('side-by-side');
  if (sbs.avatars.map((a) => a.mode).join() !== modes.join()) die(`side by side shows ${sbs.avatars.map((a) => a.mode)}, want ${modes}`);
  const labels = await page.$$eval('.avatar-label', (els) => els.filter((e) => !e.hidden).map((e) => e.textContent));
  if (labels.length !== modes.length) die(`side by side: labels ${JSON.stringify(labels)}`);
  result.side_by_side = { modes, labels };
  phase('side_by_side');

  // the server's capture motions, listed in the menu; the first one played
  const listed = await page.request.get(`${base}/v1/motions`);
  if (!listed.ok()) die(`GET /v1/motions: HTTP ${listed.status()}`);
  const captured = (await listed.json()).motions;
  if (!captured.length) die('draped lists no motions (run it with --motions-dir, see --motions-dir here)');
  {
    const menu = await page.$$eval('#clip optgroup[label="motion capture"] option', (os) => os.map((o) => [o.value, o.textContent]));
    const want = captured.map((m) => [`motion-${m.name}`, `${m.title || m.name} (capture)`]);
    if (JSON.stringify(menu) !== JSON.stringify(want)) die(`the menu lists ${JSON.stringify(menu)}, the server ${JSON.stringify(want)}`);
    const m = captured[0];
    const at = (await stats()).avatars.map((a) => a.frames);
    await page.selectOption('#clip', `motion-${m.name}`);
    await until((k) => window.drapeStats.clip === k, `motion-${m.name}`, 20000, `capture motion ${m.name} not playing`);
    await until((b) => window.drapeStats.avatars.every((a, i) => a.frames >= b[i] + 10), at, 20000, `no frames from capture motion ${m.name}`);
    const r = await shot('capture');
    result.capture = { listed: captured.length, played: m.name, clip_frames: (await stats()).clip_frames, shot: r.name };
  }

  // a BVH dropped on the page: converted by the server, named in the menu, frames flowing
  {
    const bvh = walkBvh();
    await page.evaluate(({ name, text }) => {
      const dt = new DataTransfer();
      dt.items.add(new File([text], name, { type: 'application/octet-stream' }));
      window.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    }, { name: 'stride_test.bvh', text: bvh });
    await until(() => window.drapeStats.clip_label.includes('stride_test.bvh'), null, 20000, 'the dropped BVH is not playing');
    const at = (await stats()).avatars.map((a) => a.frames);
    await until((b) => window.drapeStats.avatars.every((a, i) => a.frames >= b[i] + 10), at, 20000, 'no frames from the dropped BVH');
    const menu = await page.$eval('#clip', (el) => el.selectedOptions[0].textContent);
    if (!menu.includes('stride_test.bvh')) die(`the menu shows '${menu}'`);
    const r = await shot('bvh');
    result.bvh = { clip_frames: (await stats()).clip_frames, menu, shot: r.name };
    // a file the server refuses: its message in the banner, the clip playing on
    const junk = Buffer.from('this is not a motion\n');
    const refusal = await (await page.request.post(`${base}/v1/motions/convert`, { data: junk, headers: { 'Content-Type': 'application/octet-stream' } })).json();
    expectRefusal = true;
    await page.setInputFiles('#motion-input', { name: 'notes.bvh', mimeType: 'application/octet-stream', buffer: junk });
    await until((m) => {
      const el = document.getElementById('message');
      return !el.hidden && el.textContent.includes(m);
    }, refusal.error.message, 10000, `no banner with '${refusal.error.message}'`);
    expectRefusal = false;
    const still = (await stats()).avatars.map((a) => a.frames);
    await until((b) => window.drapeStats.avatars.every((a, i) => a.frames >= b[i] + 5), still, 20000, 'frames stopped after a refused file');
    result.refused = refusal.error;
  }

  phase('files');
  // the cuts the page declared, as the server counted them: the loops arrived
  // with reset, none had to be guessed from the root's speed
  const metrics = await (await page.request.get(`${base}/metrics`)).text();
  const cuts = (reason) => Number((metrics.match(new RegExp(`drape_stream_cuts_total\\{reason="${reason}"\\} (\\d+)`)) || [])[1]);
  const st = await stats();
  result.cuts = { reset: cuts('reset'), speed: cuts('speed'), seq_gap: cuts('seq_gap'), spin: cuts('spin'), loops_shown: st.loops, resets_sent: st.resets_sent };
  if (!(result.cuts.reset >= st.loops && st.loops >= 2)) die(`the server counted ${result.cuts.reset} reset cuts for ${st.loops} loops shown: ${JSON.stringify(result.cuts)}`);
  if (result.cuts.speed !== 0) die(`the server found ${result.cuts.speed} cuts by speed: a loop went without reset: ${JSON.stringify(result.cuts)}`);
  if (st.errors && st.last_error && !st.last_error.startsWith('motion file:')) die(`drapeStats.errors: ${st.last_error}`);
  if (problems.length) die(problems.join('; '));
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(0);
